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


def test_past_fifty_labels_the_top_confusions_replace_the_matrix():
    """300 labels once died in a MemoryError drawing the matrix, 20,000 wrote a 20,000 x 20,000 list into the
    model's record: past MAX_MATRIX_LABELS the metrics hold the most frequent confusions instead."""
    import json

    from albert_tf.tasks.classification_metrics import MAX_MATRIX_LABELS, TOP_CONFUSIONS

    rng = np.random.default_rng(3)
    labels = [f"label_{i}" for i in range(300)]
    truth = rng.integers(0, 300, 3000)
    predicted = np.where(rng.random(3000) < 0.5, truth, rng.integers(0, 300, 3000))
    predicted[:40] = 7  # one frequent confusion: label_<truth> taken for label_7 ...
    truth[:40] = 3  # ... always label_3
    ours = single_label_metrics(truth, predicted, labels)
    assert "confusion_matrix" not in ours and len(ours["top_confusions"]) == TOP_CONFUSIONS
    matrix = sk.confusion_matrix(truth, predicted, labels=range(300))
    np.fill_diagonal(matrix, 0)
    assert ours["top_confusions"][0] == {"true": "label_3", "predicted": "label_7", "count": int(matrix[3, 7])}
    counts = [row["count"] for row in ours["top_confusions"]]
    assert counts == sorted(np.sort(matrix, axis=None)[::-1][:TOP_CONFUSIONS].tolist(), reverse=True)
    assert ours["accuracy"] == pytest.approx(sk.accuracy_score(truth, predicted))
    assert ours["per_label"]["label_3"]["support"] == int((truth == 3).sum())
    table = metrics_table(ours, labels)
    assert "The 20 most frequent confusions (no matrix past 50 labels; these are 300):" in table
    assert ["label_3", "label_7", str(matrix[3, 7])] in [line.split() for line in table.splitlines()]
    assert "true \\ predicted" not in table
    # 20,000 labels: no labels x labels array anywhere, and a record that grows with the labels, not their square.
    many = [f"l{i}" for i in range(20_000)]
    huge = single_label_metrics(rng.integers(0, 20_000, 500), rng.integers(0, 20_000, 500), many)
    assert "confusion_matrix" not in huge and len(json.dumps(huge)) < 200 * len(many)
    # Up to the limit the matrix stays.
    assert len(single_label_metrics([0], [1], labels[:MAX_MATRIX_LABELS])["confusion_matrix"]) == MAX_MATRIX_LABELS


def test_label_names_in_korean_or_japanese_get_a_font_that_has_them_or_one_line(tmp_path, recwarn):
    """The matrix drew Korean and Japanese names as empty boxes, and matplotlib warned once per glyph into the
    tool's output. A font that has the glyphs is used when one is installed; else one line says so."""
    from matplotlib import font_manager, ft2font

    from albert_tf.tasks.classification_metrics import label_fonts

    # A character the default font lacks that a font matplotlib ships has: the fallback in action.
    default = set(ft2font.FT2Font(font_manager.findfont(font_manager.FontProperties())).get_charmap())
    stix = next(entry.fname for entry in font_manager.fontManager.ttflist if entry.name == "STIXGeneral")
    only_stix = chr(min(set(ft2font.FT2Font(stix).get_charmap()) - default - set(range(0x20))))
    families, missing = label_fonts(["plain", f"sign {only_stix}"])
    assert missing == "" and families[0] == "DejaVu Sans" and "STIXGeneral" in families
    korean_japanese = ["한국어", "日本語", "english"]
    families, missing = label_fonts(korean_japanese)
    cjk_fonts = [entry for entry in font_manager.fontManager.ttflist if not entry.name.startswith("Last Resort")
                 and ord("한") in ft2font.FT2Font(entry.fname).get_charmap()]
    metrics = single_label_metrics([0, 1, 2], [0, 2, 2], korean_japanese)
    lines = []
    plot_confusion_matrix(metrics, korean_japanese, tmp_path / "matrix.png", log=lambda *a, **k: lines.append(a[0]))
    assert (tmp_path / "matrix.png").read_bytes()[:4] == b"\x89PNG"
    assert not [w for w in recwarn if "missing from" in str(w.message)]  # no warning per glyph
    if cjk_fonts:
        assert missing == "" and lines == [] and len(families) > 1
    else:
        assert sorted(missing) == sorted(set("한국어日本語"))
        [line] = lines
        assert line.startswith("Warning: no installed font has the characters ") and "fonts-noto-cjk" in line


def test_regression_keeps_the_checkpoint_with_the_smallest_squared_error():
    """Pearson picked a near-constant model (MSE 2.30) over later ones (1.92): a correlation ignores scale and
    offset, a squared error does not."""
    from albert_tf.tasks.text_classification_task import TextClassificationConfig, TextClassificationTask
    from albert_tf.training.finetuning_config import FinetuningConfig

    targets = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    near_constant = regression_metrics(targets, 3.0 + 0.01 * (targets - 3.0))  # perfectly correlated, flat
    tracking = regression_metrics(targets, targets + np.array([0.5, -0.6, 0.4, 0.7, -0.5]))
    assert near_constant["pearson"] > tracking["pearson"] and near_constant["mse"] > tracking["mse"]
    config = FinetuningConfig(task=TextClassificationConfig(problem_type="regression"))
    metric = TextClassificationTask().best_metric(config)
    assert metric == "neg_mse"
    assert max([{"step": 1, **near_constant}, {"step": 2, **tracking}], key=lambda r: r[metric])["step"] == 2
    # --metric still chooses another of the problem type's.
    chosen = FinetuningConfig(task=TextClassificationConfig(problem_type="regression", metric="pearson"))
    assert TextClassificationTask().best_metric(chosen) == "pearson"
