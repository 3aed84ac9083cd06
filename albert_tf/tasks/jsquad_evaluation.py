"""JSQuAD's official metrics: exact match and character F1, as JGLUE computes them.

JGLUE evaluates JSQuAD with Hugging Face's SQuAD metrics (transformers 4.9.2's squad_metrics) under its
patch, which changes the normalization and makes F1 count characters; written from those definitions and
checked against the figures that code gives (tests/test_cjk_qa.py):

- An answer is normalized by lowercasing it, removing the "。" at its end (any number of them: JGLUE puts
  this where SQuAD removed the articles; before whitespace is collapsed, so not those followed by a space),
  and collapsing whitespace runs to one space, stripped at the ends. Punctuation stays (JGLUE turned SQuAD's
  removal off).
- EM is 1 when the normalized prediction equals a normalized gold answer.
- F1 is over the bag of characters of the normalized texts (spaces included): the harmonic mean of the
  shared characters' precision and recall; when either text is empty, 1 if both are, else 0.
- Each takes the maximum over the question's gold answers, those that normalize to "" left out; a question
  left with none has the gold answer "" (a SQuAD 2.0 question, none in JSQuAD).
- EM and F1 are averages in percent over the questions; HasAns_* (and NoAns_*) over those with (without)
  answers, as the SQuAD 2.0 layout of those metrics reports them.

One departure: the official code fails on a question without a prediction; here it scores 0 and counts.
"""

from albert_tf.tasks import squad_evaluation
from albert_tf.tasks.squad_evaluation import AnswerMetrics, bag_f1


def normalize_answer(text):
    """Lowercased, without a final "。", whitespace collapsed."""
    return " ".join(text.lower().rstrip("。").split())


def exact_match(gold, prediction):
    return int(normalize_answer(gold) == normalize_answer(prediction))


def f1(gold, prediction):
    return bag_f1(list(normalize_answer(gold)), list(normalize_answer(prediction)))


JSQUAD_METRICS = AnswerMetrics(normalize_answer, exact_match, f1)


def evaluate(articles, predictions):
    """The official metrics, in percent: exact, f1, total, and HasAns_/NoAns_ exact, f1, total where
    there are such questions (SQuAD's layout of them, `squad_evaluation.evaluate`, with JSQuAD's scoring).
    articles: the `data` list of a JSQuAD (SQuAD-style) file; predictions: {id: text}."""
    return squad_evaluation.evaluate(articles, predictions, metrics=JSQUAD_METRICS)
