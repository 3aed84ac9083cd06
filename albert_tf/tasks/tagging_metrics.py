"""Metrics of a tagger, as conlleval (the CoNLL-2000/2003 shared tasks' evaluation script) computes them from
IOB2 tag sequences: entity-level precision, recall and F1, overall and per entity type, and token accuracy.

Entities (`entity_spans`) are read as conlleval reads them, malformed sequences included: an entity starts at
B-TYPE, at I-TYPE after O or at a sentence's start (an I- without B-), and at I-TYPE after a tag of another
type (a type change inside an entity ends it and starts another); it continues over I- tags of its type. An
entity is correct where a predicted entity has its type, first and last token. Sentences end entities.

  precision = correct / predicted entities, recall = correct / true entities, F1 their harmonic mean; each is 0
  where its denominator is (conlleval.pl's defaults, which the `conlleval` package on PyPI departs from by
  giving precision 1 where nothing is predicted). accuracy = tokens whose predicted tag equals the true one.
  Types hold everything after the first hyphen ("B-creative-work" is of type "creative-work"), as conlleval.pl
  has since 2004. conlleval prints percentages; these are fractions.

The metrics dict (`tagging_metrics`):
  {"precision", "recall", "f1": the overall entity-level figures, "accuracy": token accuracy,
   "per_type": {type: {"precision", "recall", "f1", "support": true entities, "predicted": predicted entities,
                       "correct": correct entities}}, types sorted, every type true or predicted listed,
   "entities": true entities, "predicted_entities", "correct_entities", "tokens", "sentences"}
"""

from albert_tf.text.entities import OUTSIDE, entity_spans


def _checked(tags, where):
    for index, tag in enumerate(tags):
        if tag != OUTSIDE and not (isinstance(tag, str) and len(tag) > 2 and tag[0] in "BI" and tag[1] == "-"):
            raise ValueError(f"{where}, token {index + 1}: {tag!r} is not an IOB2 tag (O, B-TYPE or I-TYPE)")


def _ratio(numerator, denominator):
    return numerator / denominator if denominator else 0.0


def _scores(correct, predicted, true):
    precision, recall = _ratio(correct, predicted), _ratio(correct, true)
    return {"precision": precision, "recall": recall, "f1": _ratio(2 * precision * recall, precision + recall)}


def tagging_metrics(true_tags, predicted_tags):
    """The metrics dict (the module's docstring) of `predicted_tags` against `true_tags`: per sentence, one
    IOB2 tag per token. ValueError where the two do not pair up or a tag is not IOB2."""
    true_tags, predicted_tags = list(true_tags), list(predicted_tags)
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"{len(true_tags)} true sentences but {len(predicted_tags)} predicted ones")
    true_counts, predicted_counts, correct_counts = {}, {}, {}
    tokens = correct_tokens = 0
    for number, (truth, predicted) in enumerate(zip(true_tags, predicted_tags), start=1):
        truth, predicted = list(truth), list(predicted)
        if len(truth) != len(predicted):
            raise ValueError(f"sentence {number}: {len(truth)} true tags but {len(predicted)} predicted")
        _checked(truth, f"sentence {number} (true)")
        _checked(predicted, f"sentence {number} (predicted)")
        true_spans, predicted_spans = entity_spans(truth), entity_spans(predicted)
        for spans, counts in ((true_spans, true_counts), (predicted_spans, predicted_counts),
                              (set(true_spans) & set(predicted_spans), correct_counts)):
            for entity_type, _, _ in spans:
                counts[entity_type] = counts.get(entity_type, 0) + 1
        tokens += len(truth)
        correct_tokens += sum(a == b for a, b in zip(truth, predicted))
    per_type = {}
    for entity_type in sorted(set(true_counts) | set(predicted_counts)):
        true, predicted = true_counts.get(entity_type, 0), predicted_counts.get(entity_type, 0)
        correct = correct_counts.get(entity_type, 0)
        per_type[entity_type] = {**_scores(correct, predicted, true), "support": true, "predicted": predicted,
                                 "correct": correct}
    true, predicted, correct = (sum(counts.values()) for counts in (true_counts, predicted_counts, correct_counts))
    return {**_scores(correct, predicted, true), "accuracy": _ratio(correct_tokens, tokens), "per_type": per_type,
            "entities": true, "predicted_entities": predicted, "correct_entities": correct, "tokens": tokens,
            "sentences": len(true_tags)}


def metrics_table(metrics):
    """The metrics as lines a person reads: the overall figures, then a row per entity type."""
    lines = [f"{name:>9}: {metrics[name]:.4f}" for name in ("precision", "recall", "f1", "accuracy")]
    lines.append(f"{'entities':>9}: {metrics['entities']} true, {metrics['predicted_entities']} predicted, "
                 f"{metrics['correct_entities']} correct")
    lines.append(f"{'tokens':>9}: {metrics['tokens']} in {metrics['sentences']} sentences")
    if metrics["per_type"]:
        width = max(len("type"), *(len(name) for name in metrics["per_type"]))
        lines += ["", f"{'type':<{width}}  precision  recall      f1  support  predicted"]
        for name, row in metrics["per_type"].items():
            lines.append(f"{name:<{width}}  {row['precision']:>9.4f}  {row['recall']:>6.4f}  {row['f1']:>6.4f}  "
                         f"{row['support']:>7}  {row['predicted']:>9}")
    return "\n".join(lines) + "\n"
