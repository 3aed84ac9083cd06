"""Metrics of a classifier on a user's own labels, from their definitions (numpy only): what a metrics JSON
holds and the table a person reads.

  - single_label: accuracy, macro and micro F1, each label's precision/recall/F1/support, and the confusion
    matrix (rows: the true label, columns: the predicted one);
  - multi_label: each label's precision/recall/F1/support over the rows, macro and micro F1, and the share of
    rows whose whole label set is right (`exact_match`);
  - regression: mean squared error, Pearson and Spearman correlation.
A label never predicted has precision 0, one never true recall 0, and F1 is 0 where both are (scikit-learn's
`zero_division=0`).
"""

import numpy as np

from albert_tf.tasks.glue_metrics import pearson, spearman

# The metric that picks the best checkpoint, by problem type (`--metric` chooses another of the same type).
DEFAULT_SELECTION_METRIC = {"single_label": "accuracy", "multi_label": "micro_f1", "regression": "pearson"}
SELECTION_METRICS = {
    "single_label": ("accuracy", "macro_f1", "micro_f1"),
    "multi_label": ("micro_f1", "macro_f1", "exact_match"),
    "regression": ("pearson", "spearman", "neg_mse"),
}


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


def single_label_metrics(true_ids, predicted_ids, labels):
    matrix = confusion_matrix(true_ids, predicted_ids, len(labels))
    true_positives = np.diag(matrix)
    per_label = _per_label(true_positives, matrix.sum(axis=0), matrix.sum(axis=1), labels)
    accuracy = _ratio(true_positives.sum(), matrix.sum())
    return {
        "accuracy": accuracy,
        "macro_f1": float(np.mean([row["f1"] for row in per_label.values()])),
        # With one label per row every wrong prediction is one false positive and one false negative, so
        # micro-averaged precision, recall and F1 all equal the accuracy.
        "micro_f1": accuracy,
        "per_label": per_label,
        "confusion_matrix": matrix.tolist(),
        "examples": int(matrix.sum()),
    }


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
    return "\n".join(lines) + "\n"


def plot_confusion_matrix(metrics, labels, path):
    """A PNG of the confusion matrix (matplotlib, drawn off-screen), counts in the cells."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matrix = np.asarray(metrics["confusion_matrix"])
    size = 1.5 + 0.6 * len(labels)
    figure, axes = plt.subplots(figsize=(size + 1.5, size))
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
    figure.savefig(path, dpi=100)
    plt.close(figure)
