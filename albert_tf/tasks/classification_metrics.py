"""Metrics of a classifier on a user's own labels, from their definitions (numpy only): what a metrics JSON
holds and the table a person reads.

  - single_label: accuracy, macro and micro F1, each label's precision/recall/F1/support, and the confusion
    matrix (rows: the true label, columns: the predicted one) up to MAX_MATRIX_LABELS labels; past that,
    the TOP_CONFUSIONS most frequent (true, predicted) mistakes instead (a matrix grows with the square of
    the labels: 20,000 labels made a 3.2 GB array, a 20,000 x 20,000 list in every evaluation's record);
  - multi_label: each label's precision/recall/F1/support over the rows, macro and micro F1, and the share of
    rows whose whole label set is right (`exact_match`);
  - regression: mean squared error, Pearson and Spearman correlation.
A label never predicted has precision 0, one never true recall 0, and F1 is 0 where both are (scikit-learn's
`zero_division=0`).
"""

import numpy as np

from albert_tf.tasks.glue_metrics import pearson, spearman

# The metric that picks the best checkpoint, by problem type (`--metric` chooses another of the same type).
# Regression is judged by its squared error (negated, so that higher is better): a near-constant model can
# have the best Pearson correlation of a run (a correlation ignores scale and offset) while missing every
# target by far, but no constant beats a model that tracks the targets in squared error.
DEFAULT_SELECTION_METRIC = {"single_label": "accuracy", "multi_label": "micro_f1", "regression": "neg_mse"}
SELECTION_METRICS = {
    "single_label": ("accuracy", "macro_f1", "micro_f1"),
    "multi_label": ("micro_f1", "macro_f1", "exact_match"),
    "regression": ("neg_mse", "pearson", "spearman"),
}
# Up to this many labels a single-label evaluation holds its confusion matrix (and the tool draws it); past it,
# the TOP_CONFUSIONS most frequent confusions, a list that stays short whatever the number of labels.
MAX_MATRIX_LABELS = 50
TOP_CONFUSIONS = 20


def _ratio(numerator, denominator):
    return float(numerator / denominator) if denominator else 0.0


def _f1(precision, recall):
    return _ratio(2 * precision * recall, precision + recall)


def _per_label(true_positives, predicted, actual, labels):
    rows = {}
    for name, tp, p, a in zip(labels, true_positives, predicted, actual):
        precision, recall = _ratio(tp, p), _ratio(tp, a)
        rows[name] = {"precision": precision, "recall": recall, "f1": _f1(precision, recall), "support": int(a)}
    return rows


def confusion_matrix(true_ids, predicted_ids, num_labels):
    matrix = np.zeros((num_labels, num_labels), np.int64)
    np.add.at(matrix, (np.asarray(true_ids), np.asarray(predicted_ids)), 1)
    return matrix


def top_confusions(true_ids, predicted_ids, labels, count=TOP_CONFUSIONS):
    """The `count` most frequent mistakes, most frequent first (ties by label order): [{"true": name, "predicted":
    name, "count": n}]. Counted over the pairs that occur, never a labels x labels matrix."""
    true_ids, predicted_ids = np.asarray(true_ids, np.int64), np.asarray(predicted_ids, np.int64)
    wrong = true_ids != predicted_ids
    pairs, counts = np.unique(true_ids[wrong] * len(labels) + predicted_ids[wrong], return_counts=True)
    order = np.lexsort((pairs, -counts))[:count]
    return [{"true": labels[int(pairs[i]) // len(labels)], "predicted": labels[int(pairs[i]) % len(labels)],
             "count": int(counts[i])} for i in order]


def single_label_metrics(true_ids, predicted_ids, labels):
    true_ids, predicted_ids = np.asarray(true_ids, np.int64), np.asarray(predicted_ids, np.int64)
    size = len(labels)
    true_positives = np.bincount(true_ids[true_ids == predicted_ids], minlength=size)
    per_label = _per_label(true_positives, np.bincount(predicted_ids, minlength=size),
                           np.bincount(true_ids, minlength=size), labels)
    accuracy = _ratio(true_positives.sum(), len(true_ids))
    metrics = {
        "accuracy": accuracy,
        "macro_f1": float(np.mean([row["f1"] for row in per_label.values()])),
        # With one label per row every wrong prediction is one false positive and one false negative, so
        # micro-averaged precision, recall and F1 all equal the accuracy.
        "micro_f1": accuracy,
        "per_label": per_label,
        "examples": int(len(true_ids)),
    }
    if size <= MAX_MATRIX_LABELS:
        metrics["confusion_matrix"] = confusion_matrix(true_ids, predicted_ids, size).tolist()
    else:
        metrics["top_confusions"] = top_confusions(true_ids, predicted_ids, labels)
    return metrics


def multi_label_metrics(true_rows, predicted_rows, labels):
    """`true_rows`, `predicted_rows`: [examples, labels] arrays of 0/1."""
    truth, predicted = np.asarray(true_rows).astype(bool), np.asarray(predicted_rows).astype(bool)
    true_positives = (truth & predicted).sum(axis=0)
    per_label = _per_label(true_positives, predicted.sum(axis=0), truth.sum(axis=0), labels)
    micro_precision = _ratio(true_positives.sum(), predicted.sum())
    micro_recall = _ratio(true_positives.sum(), truth.sum())
    return {
        "exact_match": float(np.mean(np.all(truth == predicted, axis=1))),
        "macro_f1": float(np.mean([row["f1"] for row in per_label.values()])),
        "micro_f1": _f1(micro_precision, micro_recall),
        "per_label": per_label,
        "examples": int(len(truth)),
    }


def regression_metrics(targets, predictions):
    targets, predictions = np.asarray(targets, np.float64), np.asarray(predictions, np.float64)
    mse = float(np.mean((targets - predictions) ** 2))
    return {"mse": mse, "neg_mse": -mse, "pearson": pearson(predictions, targets),
            "spearman": spearman(predictions, targets), "examples": int(len(targets))}


_CORNER = "true \\ predicted"


def metrics_table(metrics, labels=()):
    """The metrics as lines a person reads: the overall figures, then a row per label and the confusion matrix."""
    overall = [name for name in ("accuracy", "exact_match", "macro_f1", "micro_f1", "mse", "pearson", "spearman")
               if name in metrics]
    lines = [f"{name:>12}: {metrics[name]:.4f}" for name in overall]
    lines.append(f"{'examples':>12}: {metrics['examples']}")
    if "per_label" in metrics:
        width = max(len("label"), *(len(name) for name in metrics["per_label"]))
        lines += ["", f"{'label':<{width}}  precision  recall      f1  support"]
        for name, row in metrics["per_label"].items():
            lines.append(f"{name:<{width}}  {row['precision']:>9.4f}  {row['recall']:>6.4f}  {row['f1']:>6.4f}  "
                         f"{row['support']:>7}")
    if "confusion_matrix" in metrics:
        names = list(labels) or list(metrics["per_label"])
        width = max(len(_CORNER), *(len(name) for name in names))
        cell = max(6, *(len(name) for name in names))
        lines += ["", f"{_CORNER:<{width}}" + "".join(f"  {name:>{cell}}" for name in names)]
        for name, row in zip(names, metrics["confusion_matrix"]):
            lines.append(f"{name:<{width}}" + "".join(f"  {count:>{cell}}" for count in row))
    if "top_confusions" in metrics:
        confusions = metrics["top_confusions"]
        lines += ["", f"The {len(confusions)} most frequent confusions (no matrix past {MAX_MATRIX_LABELS} labels; "
                      f"these are {len(metrics['per_label']):,}):"]
        if confusions:
            true_width = max(len("true"), *(len(row["true"]) for row in confusions))
            predicted_width = max(len("predicted"), *(len(row["predicted"]) for row in confusions))
            lines.append(f"{'true':<{true_width}}  {'predicted':<{predicted_width}}    count")
            lines += [f"{row['true']:<{true_width}}  {row['predicted']:<{predicted_width}}  {row['count']:>7}"
                      for row in confusions]
        else:
            lines.append("none: every example is right")
    return "\n".join(lines) + "\n"


# Names of fonts with CJK glyphs, tried first when a label needs glyphs the default font lacks (any installed font
# that has them serves; these are where they usually are).
_CJK_FONT_HINTS = ("cjk", "han sans", "han serif", "noto sans jp", "noto sans kr", "noto sans sc", "noto sans tc",
                   "wenquanyi", "droid sans fallback", "ipa", "takao", "nanum", "un dotum", "baekmuk", "ar pl",
                   "ms gothic", "yu gothic", "malgun", "simhei", "simsun", "microsoft yahei", "hiragino",
                   "apple sd gothic", "pingfang")
# matplotlib's own stand-in font: it has every code point, drawn as a box with the code's block in it.
_STAND_IN_FONTS = ("last resort",)


def label_fonts(labels):
    """(the font families to draw `labels` with, the characters of them no installed font has). The default font
    comes first; an installed font that has the characters it lacks (Korean, Japanese, Chinese names) is
    added after it, for matplotlib to fall back to glyph by glyph."""
    from matplotlib import font_manager, ft2font

    def charmap(path):
        try:
            return set(ft2font.FT2Font(path).get_charmap())
        except (OSError, RuntimeError, ValueError):  # an unreadable font file: no glyphs of it
            return set()

    default_path = font_manager.findfont(font_manager.FontProperties(), fallback_to_default=True)
    default = font_manager.get_font(default_path).family_name
    missing = {ord(c) for name in labels for c in str(name) if not c.isspace()} - charmap(default_path)
    if not missing:
        return [default], ""
    entries = {entry.fname: entry for entry in font_manager.fontManager.ttflist
               if not entry.name.lower().startswith(_STAND_IN_FONTS)}
    hinted = [e for e in entries.values() if any(hint in e.name.lower() for hint in _CJK_FONT_HINTS)]
    families = [default]
    for entry in hinted + [e for e in entries.values() if e not in hinted]:
        has = missing & charmap(entry.fname)
        if has:
            if entry.name not in families:
                families.append(entry.name)
            missing -= has
        if not missing:
            break
    return families, "".join(chr(code) for code in sorted(missing))


def plot_confusion_matrix(metrics, labels, path, log=print):
    """A PNG of the confusion matrix (matplotlib, drawn off-screen), counts in the cells, to `path` (a file name
    or a binary file). Label names in scripts the default font lacks are drawn with an installed font that has
    them (`label_fonts`); when none has, one line says so instead of a warning per glyph."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families, undrawable = label_fonts(labels)
    if undrawable:
        shown = undrawable if len(undrawable) <= 10 else undrawable[:10] + "..."
        log(f"Warning: no installed font has the characters {shown} of the label names: the confusion matrix draws "
            "them as empty boxes; install a font that has them (Noto Sans CJK: fonts-noto-cjk) to see them.",
            flush=True)
    matrix = np.asarray(metrics["confusion_matrix"])
    size = 1.5 + 0.6 * len(labels)
    with matplotlib.rc_context({"font.family": families}), warnings.catch_warnings():
        # Said above in one line; matplotlib's own warning comes once per missing glyph.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from")
        figure, axes = plt.subplots(figsize=(size + 1.5, size))
        try:
            image = axes.imshow(matrix, cmap="Blues")
            axes.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
            axes.set_yticks(range(len(labels)), labels)
            axes.set_xlabel("predicted")
            axes.set_ylabel("true")
            threshold = matrix.max() / 2 if matrix.size else 0
            for (row, column), count in np.ndenumerate(matrix):
                axes.text(column, row, str(count), ha="center", va="center",
                          color="white" if count > threshold else "black")
            figure.colorbar(image, ax=axes)
            figure.tight_layout()
            figure.savefig(path, dpi=100, format="png")
        finally:
            plt.close(figure)
