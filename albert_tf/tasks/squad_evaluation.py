"""The official SQuAD metrics: exact match and token F1, v1.1 and v2.0.

Written from the definitions of the official evaluation scripts
(evaluate-v1.1.py, evaluate-v2.0.py):

- An answer is normalized by lowercasing, removing ASCII punctuation, removing
  the articles a/an/the and collapsing whitespace.
- Exact match (EM) is 1 if the normalized prediction equals a normalized gold
  answer; F1 is the harmonic mean of precision and recall of the bag of
  normalized tokens. Each takes the maximum over a question's gold answers.
- A SQuAD 2.0 question without answers has the gold answer "": predicting ""
  scores 1 for both EM and F1, anything else 0. Gold answers that normalize to
  "" are dropped (v2.0's rule, used for both versions).
- With no-answer probabilities (`na_probs`, e.g. null_odds.json), a question
  whose value exceeds `na_prob_thresh` counts as answered "" (v2.0's
  --na-prob-thresh), and the best threshold is searched: best_exact / best_f1
  are the scores of the threshold that maximizes each, found by predicting ""
  for every question whose value is above it.

One departure: a question without a prediction scores 0 and counts in the
total (the v1.1 script's rule; the v2.0 script leaves it out of the total).
"""

import collections
import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
    """Lowercase, drop punctuation and the articles a/an/the, collapse whitespace."""
    text = text.lower()
    text = "".join(char for char in text if char not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text):
    return normalize_answer(text).split() if text else []


def exact_match(gold, prediction):
    return int(normalize_answer(gold) == normalize_answer(prediction))


def bag_f1(gold_units, predicted_units):
    """The harmonic mean of the precision and recall of the shared units (tokens, or JSQuAD's characters),
    counted as bags; when either is empty, 1 if both are, else 0."""
    if not gold_units or not predicted_units:
        # An empty answer matches only an empty answer.
        return float(list(gold_units) == list(predicted_units))
    shared = sum((collections.Counter(gold_units) & collections.Counter(predicted_units)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(predicted_units)
    recall = shared / len(gold_units)
    return 2 * precision * recall / (precision + recall)


def f1(gold, prediction):
    return bag_f1(answer_tokens(gold), answer_tokens(prediction))


# How one answer is scored against one gold answer: SQuAD's here, JSQuAD's in jsquad_evaluation. `normalize`
# also decides which gold answers count (those that normalize to "" do not).
AnswerMetrics = collections.namedtuple("AnswerMetrics", ["normalize", "exact_match", "f1"])
SQUAD_METRICS = AnswerMetrics(normalize_answer, exact_match, f1)


def gold_answers(articles, normalize=normalize_answer):
    """{question id: [gold answer texts]}: those that do not normalize to ""; [""] where none is left."""
    golds = {}
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                texts = [answer["text"] for answer in qa["answers"] if normalize(answer["text"])]
                golds[qa["id"]] = texts or [""]
    return golds


def raw_scores(articles, predictions, metrics=SQUAD_METRICS):
    """({id: EM}, {id: F1}), each the max over the question's gold answers; 0 when not predicted."""
    exact, f1_scores = {}, {}
    for qas_id, golds in gold_answers(articles, metrics.normalize).items():
        if qas_id not in predictions:
            exact[qas_id] = f1_scores[qas_id] = 0.0
            continue
        prediction = predictions[qas_id]
        exact[qas_id] = float(max(metrics.exact_match(gold, prediction) for gold in golds))
        f1_scores[qas_id] = max(metrics.f1(gold, prediction) for gold in golds)
    return exact, f1_scores


def _percent(scores, ids):
    return 100.0 * sum(scores[i] for i in ids) / len(ids) if ids else 0.0


def best_threshold(scores, na_probs, has_answer, predicted):
    """(best score in %, threshold): the score when "" is predicted wherever na_prob > threshold.

    The search starts from every question answered "" (the unanswerable ones
    score 1), then lets the predictions through in increasing na_prob, a group
    of equal values at a time. When none beats answering nothing, the threshold
    is 0.0, as the official script (and the original ALBERT's) reports it,
    though at 0.0 the questions with a na_prob at or below 0 are answered.
    """
    if not scores:
        return 0.0, 0.0
    by_probability = collections.defaultdict(list)
    for qas_id in scores:
        by_probability[na_probs.get(qas_id, 0.0)].append(qas_id)
    score = float(sum(not has_answer[qas_id] for qas_id in scores))
    best_score, best = score, 0.0
    for probability in sorted(by_probability):
        for qas_id in by_probability[probability]:
            if has_answer[qas_id]:
                score += scores[qas_id]
            elif predicted[qas_id]:
                score -= 1.0  # an unanswerable question now gets a non-empty answer
        if score > best_score:
            best_score, best = score, probability
    return 100.0 * best_score / len(scores), best


def _apply_no_answer_threshold(scores, na_probs, has_answer, na_prob_thresh):
    return {
        qas_id: float(not has_answer[qas_id]) if na_probs.get(qas_id, 0.0) > na_prob_thresh else score
        for qas_id, score in scores.items()
    }


def evaluate(articles, predictions, na_probs=None, na_prob_thresh=1.0, metrics=SQUAD_METRICS):
    """The official metrics, in percent, as a dict.

    articles: the `data` list of a SQuAD JSON file. predictions: {id: text}.
    na_probs: {id: no-answer score}, e.g. null_odds.json; pass
    na_prob_thresh=math.inf to score the predictions as they are and only
    search the best threshold.

    Keys: exact, f1, total; HasAns_exact/f1/total for the questions with
    answers and NoAns_exact/f1/total for those without, when there are any;
    with na_probs, also best_exact, best_exact_thresh, best_f1, best_f1_thresh.
    metrics: how an answer is scored (`AnswerMetrics`; SQuAD's by default).
    """
    exact, f1_scores = raw_scores(articles, predictions, metrics)
    has_answer = {
        qa["id"]: bool(qa["answers"])
        for article in articles
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    }
    exact_thresholded = _apply_no_answer_threshold(exact, na_probs or {}, has_answer, na_prob_thresh)
    f1_thresholded = _apply_no_answer_threshold(f1_scores, na_probs or {}, has_answer, na_prob_thresh)
    ids = list(exact)
    result = {"exact": _percent(exact_thresholded, ids), "f1": _percent(f1_thresholded, ids), "total": len(ids)}
    answerable = [qas_id for qas_id in ids if has_answer[qas_id]]
    unanswerable = [qas_id for qas_id in ids if not has_answer[qas_id]]
    for name, subset in (("HasAns", answerable), ("NoAns", unanswerable)):
        if subset:
            result[f"{name}_exact"] = _percent(exact_thresholded, subset)
            result[f"{name}_f1"] = _percent(f1_thresholded, subset)
            result[f"{name}_total"] = len(subset)
    if na_probs is not None:
        predicted = {qas_id: predictions.get(qas_id, "") for qas_id in ids}
        result["best_exact"], result["best_exact_thresh"] = best_threshold(exact, na_probs, has_answer, predicted)
        result["best_f1"], result["best_f1_thresh"] = best_threshold(f1_scores, na_probs, has_answer, predicted)
    return result
