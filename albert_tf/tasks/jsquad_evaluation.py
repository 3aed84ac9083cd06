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


def normalize_answer(text):
    """Lowercased, without a final "。", whitespace collapsed."""
    return " ".join(text.lower().rstrip("。").split())


def exact_match(gold, prediction):
    return int(normalize_answer(gold) == normalize_answer(prediction))


def f1(gold, prediction):
    gold_chars, predicted_chars = list(normalize_answer(gold)), list(normalize_answer(prediction))
    if not gold_chars or not predicted_chars:
        return float(gold_chars == predicted_chars)
    remaining = {}
    for char in gold_chars:
        remaining[char] = remaining.get(char, 0) + 1
    shared = 0
    for char in predicted_chars:
        if remaining.get(char, 0) > 0:
            remaining[char] -= 1
            shared += 1
    if shared == 0:
        return 0.0
    precision = shared / len(predicted_chars)
    recall = shared / len(gold_chars)
    return 2 * precision * recall / (precision + recall)


def gold_answers(articles):
    """{question id: [gold answer texts]}: those that do not normalize to ""; [""] where none is left."""
    return {qa["id"]: [answer["text"] for answer in qa["answers"] if normalize_answer(answer["text"])] or [""]
            for article in articles for paragraph in article["paragraphs"] for qa in paragraph["qas"]}


def evaluate(articles, predictions):
    """The official metrics, in percent: exact, f1, total, and HasAns_/NoAns_ exact, f1, total where
    there are such questions. articles: the `data` list of a JSQuAD (SQuAD-style) file; predictions:
    {id: text}."""
    has_answer = {qa["id"]: bool(qa["answers"])
                  for article in articles for paragraph in article["paragraphs"] for qa in paragraph["qas"]}
    exact, f1_scores = {}, {}
    for qas_id, golds in gold_answers(articles).items():
        prediction = predictions.get(qas_id)
        exact[qas_id] = 0.0 if prediction is None else float(max(exact_match(gold, prediction) for gold in golds))
        f1_scores[qas_id] = 0.0 if prediction is None else max(f1(gold, prediction) for gold in golds)

    def percent(scores, ids):
        return 100.0 * sum(scores[i] for i in ids) / len(ids) if ids else 0.0

    ids = list(exact)
    result = {"exact": percent(exact, ids), "f1": percent(f1_scores, ids), "total": len(ids)}
    answerable = [qas_id for qas_id in ids if has_answer[qas_id]]
    unanswerable = [qas_id for qas_id in ids if not has_answer[qas_id]]
    for name, subset in (("HasAns", answerable), ("NoAns", unanswerable)):
        if subset:
            result.update({f"{name}_exact": percent(exact, subset), f"{name}_f1": percent(f1_scores, subset),
                           f"{name}_total": len(subset)})
    return result
