"""One-line notes for fine-tuning runs that learn nothing from the text, said where it shows.

A run can end with sensible-looking numbers and a model that answers every input alike: the majority class,
only O tags, one score. That happens when the steps or the learning rate are too few for the model (a tiny
model under a recipe tuned for albert_base), or when the starting checkpoint embeds every text alike (a short
pretraining can leave such an encoder). The fine-tuning tools print these notes beside their metrics.
"""

import numpy as np

# Texts whose pooled outputs are compared, and the mean cosine above which an encoder embeds them alike: a
# collapsed pretraining was measured at 0.9999; a working one lies well below.
ENCODER_SAMPLE_ROWS = 16
CONSTANT_ENCODER_COSINE = 0.999
_ADVICE = ("more steps or a larger learning rate (a small model learns faster at about 3e-4 over ~10 epochs), or "
           "a starting checkpoint that tells texts apart")


def single_class_note(predicted, targets, names, what):
    """The note for a single-label model that predicts one class for every row of `what` while the gold labels
    have several; None otherwise. `predicted`, `targets`: class ids; `names`: the label names."""
    predicted, targets = np.asarray(predicted), np.asarray(targets)
    if predicted.size < 2 or len(np.unique(predicted)) > 1 or len(np.unique(targets)) < 2:
        return None
    return (f"the model predicts one label, {names[int(predicted[0])]!r}, for all {predicted.size:,} examples of "
            f"{what}: it has learned how often each label occurs, not the texts; try {_ADVICE}")


def constant_label_set_note(predicted, targets, what):
    """The note for a multi-label model that predicts the same label set for every row (often none) while the
    gold sets differ; None otherwise. `predicted`, `targets`: [rows, labels] booleans."""
    predicted, targets = np.asarray(predicted, bool), np.asarray(targets, bool)
    if len(predicted) < 2 or (predicted != predicted[0]).any() or not (targets != targets[0]).any():
        return None
    chosen = "no label" if not predicted[0].any() else f"the same {int(predicted[0].sum())} label(s)"
    return (f"the model predicts {chosen} for all {len(predicted):,} examples of {what}: it has learned how often "
            f"each label occurs, not the texts; try {_ADVICE}")


def constant_score_note(predicted, targets, what):
    """The note for a regression model whose scores hardly vary (spread under 1% of the gold scores'); None
    otherwise."""
    predicted, targets = np.asarray(predicted, float), np.asarray(targets, float)
    if predicted.size < 2 or targets.std() == 0 or predicted.std() >= 0.01 * targets.std():
        return None
    return (f"the model gives nearly one score ({predicted.mean():.3g}, spread {predicted.std():.2g} where the gold "
            f"scores spread {targets.std():.2g}) to all {predicted.size:,} examples of {what}: it has learned their "
            f"mean, not the texts; try {_ADVICE}")


def only_outside_note(predicted_tags, gold_tags, what):
    """The note for a tagger that tags every word O while the gold tags hold entities; None otherwise.
    `predicted_tags`, `gold_tags`: per sentence, its tags."""
    predicted = [tag for tags in predicted_tags for tag in tags]
    if not predicted or any(tag != "O" for tag in predicted):
        return None
    if all(tag == "O" for tags in gold_tags for tag in tags):
        return None
    return (f"the model tags all {len(predicted):,} words of {what} O: it has learned that most words are no "
            f"entity, not the text; try {_ADVICE}")


def constant_encoder_note(pooled_outputs, source):
    """The note for a starting checkpoint whose pooled outputs of different texts are alike (mean pairwise cosine
    CONSTANT_ENCODER_COSINE or more); None otherwise. `pooled_outputs`: [texts, H]."""
    pooled = np.asarray(pooled_outputs, np.float64)
    if len(pooled) < 2:
        return None
    norms = np.linalg.norm(pooled, axis=1)
    if (norms == 0).any():
        return None
    unit = pooled / norms[:, None]
    cosines = unit @ unit.T
    mean = (cosines.sum() - len(pooled)) / (len(pooled) * (len(pooled) - 1))
    if mean < CONSTANT_ENCODER_COSINE:
        return None
    return (f"{source} embeds every text alike (mean cosine {mean:.4f} between the pooled outputs of "
            f"{len(pooled)} training texts): fine-tuning from it will likely learn only the most frequent answer; "
            "pretrain it longer, or start from another checkpoint")


def encoder_sample_note(model, arrays, source):
    """`constant_encoder_note` of `model`'s encoder on the first ENCODER_SAMPLE_ROWS distinct rows of a task's
    training `arrays` (input_word_ids, input_mask, input_type_ids; choices flattened)."""
    names = ("input_word_ids", "input_mask", "input_type_ids")
    if not all(name in arrays for name in names):
        return None
    length = arrays["input_word_ids"].shape[-1]
    # The first thousand rows hold enough distinct texts; the whole set would be sorted for nothing.
    flat = {name: np.asarray(arrays[name]).reshape(-1, length)[:1000] for name in names}
    _, first = np.unique(flat["input_word_ids"], axis=0, return_index=True)
    rows = np.sort(first)[:ENCODER_SAMPLE_ROWS]
    if len(rows) < 2:
        return None
    pooled = model.encoder({name: value[rows] for name, value in flat.items()}, training=False)["pooled_output"]
    return constant_encoder_note(np.asarray(pooled), source)
