"""The own-label classifier's metrics against scikit-learn's, on random predictions with labels never predicted
and never true (the zero-division cases)."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk

from albert_tf.tasks.classification_metrics import (metrics_table, multi_label_metrics, plot_confusion_matrix,
                                                    regression_metrics, single_label_metrics)

LABELS = ("billing", "bug", "other", "spam")


def test_single_label_metrics_equal_scikit_learns():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 200)  # 'spam' is never true
    predicted = np.where(rng.random(200) < 0.6, truth, rng.integers(0, 4, 200))
    predicted[predicted == 2] = 1  # 'other' is never predicted
    ours = single_label_metrics(truth, predicted, LABELS)
    ids = list(range(len(LABELS)))
    assert ours["accuracy"] == pytest.approx(sk.accuracy_score(truth, predicted))
    for average in ("macro", "micro"):
        assert ours[f"{average}_f1"] == pytest.approx(
            sk.f1_score(truth, predicted, labels=ids, average=average, zero_division=0))
    precision, recall, f1, support = sk.precision_recall_fscore_support(truth, predicted, labels=ids,
                                                                       zero_division=0)
    for i, name in enumerate(LABELS):
        row = ours["per_label"][name]
        assert (row["precision"], row["recall"], row["f1"], row["support"]) == pytest.approx(
            (precision[i], recall[i], f1[i], support[i]))
    assert ours["confusion_matrix"] == sk.confusion_matrix(truth, predicted, labels=ids).tolist()


def test_multi_label_metrics_equal_scikit_learns():
    rng = np.random.default_rng(1)
    truth = (rng.random((100, 4)) < 0.3).astype(int)
    predicted = np.where(rng.random((100, 4)) < 0.7, truth, 1 - truth)
    predicted[:, 3] = 0
    ours = multi_label_metrics(truth, predicted, LABELS)
    assert ours["exact_match"] == pytest.approx(sk.accuracy_score(truth, predicted))
    for average in ("macro", "micro"):
        assert ours[f"{average}_f1"] == pytest.approx(sk.f1_score(truth, predicted, average=average, zero_division=0))
    f1 = sk.f1_score(truth, predicted, average=None, zero_division=0)
    assert [ours["per_label"][name]["f1"] for name in LABELS] == pytest.approx(f1)


def test_regression_metrics_equal_scipys():
    rng = np.random.default_rng(2)
    targets = rng.integers(0, 5, 50).astype(float)  # ties, for Spearman's average ranks
    predictions = targets + rng.normal(0, 1, 50)
    ours = regression_metrics(targets, predictions)
    assert ours["mse"] == pytest.approx(sk.mean_squared_error(targets, predictions))
    assert ours["pearson"] == pytest.approx(stats.pearsonr(predictions, targets).statistic)
    assert ours["spearman"] == pytest.approx(stats.spearmanr(predictions, targets).statistic)


def test_the_table_and_the_plot_show_every_label(tmp_path):
    metrics = single_label_metrics([0, 1, 2, 2], [0, 2, 2, 2], LABELS[:3])
    table = metrics_table(metrics, LABELS[:3])
    assert "accuracy: 0.7500" in table
    assert [line.split()[0] for line in table.splitlines()[-3:]] == list(LABELS[:3])
    assert table.splitlines()[-2].split()[1:] == ["0", "0", "1"]  # bug: predicted other once
    plot_confusion_matrix(metrics, LABELS[:3], tmp_path / "confusion.png")
    assert (tmp_path / "confusion.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
