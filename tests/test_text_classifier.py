"""Fine-tuning on a user's own labelled files: the tool end to end for each problem type, its refusals before
anything is written, and what the fine-tuned model records."""

import csv
import json
import random
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.models.model_io import load_model
from albert_tf.tasks.text_classification_task import TextClassificationConfig, TextClassificationTask
from albert_tf.training.finetuning_config import FinetuningConfig
from albert_tf.training.finetuning_tool import run_finetuning
from text_fixtures import random_sentence, tiny_pretrained_checkpoint

LABELS = ("billing", "bug", "other")
CUES = {"billing": "invoice", "bug": "crash", "other": ""}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return tiny_pretrained_checkpoint(tmp_path_factory)


def ticket_rows(seed, count=24):
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        label = LABELS[i % 3]
        rows.append({"id": f"{seed}-{i}", "text": f"{random_sentence(rng, 3, 8)} {CUES[label]}".strip(),
                     "label": label})
    return rows


def write_csv(path, rows, delimiter=","):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]), delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


TINY = dict(max_seq_length=24, train_batch_size=8, learning_rate=1e-3, iterations_per_loop=1, eval_batch_size=16)


@pytest.mark.slow
def test_own_labels_end_to_end_through_the_cli_and_served_with_their_names(checkpoint, tmp_path):
    train = write_csv(tmp_path / "train.csv", ticket_rows("train"))
    dev = write_csv(tmp_path / "dev.csv", ticket_rows("dev", 12))
    new = write_csv(tmp_path / "new.csv", [{"id": r["id"], "text": r["text"]} for r in ticket_rows("new", 5)])
    output = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.run_text_classifier", f"--train_file={train}", f"--eval_file={dev}",
         f"--predict_file={new}", f"--init_checkpoint={checkpoint}", f"--output_dir={output}", "--do_train",
         "--do_eval", "--do_predict", "--max_seq_length=24", "--num_train_epochs=5", "--train_batch_size=8",
         "--learning_rate=1e-3", "--iterations_per_loop=1"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    # Said up front: the rows, the labels and their counts, the steps and epochs.
    assert f"{train}: 24 texts, single-label, 3 labels: billing 8, bug 8, other 8" in result.stdout
    assert "Fine-tuning on 24 rows: 15 steps of batch 8 (5 epochs)" in result.stdout
    history = json.loads((output / "checkpoints" / "evaluations.json").read_text())
    assert [h["step"] for h in history] == [2, 4, 6, 8, 10, 12, 14, 15]  # a tenth of the steps, rounded up
    results = json.loads((output / "eval_results.json").read_text())
    assert set(results["per_label"]) == set(LABELS) and len(results["confusion_matrix"]) == 3
    assert sum(map(sum, results["confusion_matrix"])) == 12 == results["examples"]
    assert results["accuracy"] == max(h["accuracy"] for h in history)
    assert "macro_f1" in results and "micro_f1" in results
    report = (output / "eval_report.txt").read_text()
    assert "accuracy" in report and "true \\ predicted" in report
    assert (output / "confusion_matrix.png").read_bytes()[:4] == b"\x89PNG"
    predictions = list(csv.DictReader(open(output / "predictions.csv", encoding="utf-8")))
    assert [p["id"] for p in predictions] == [f"new-{i}" for i in range(5)]
    assert {p["label"] for p in predictions} <= set(LABELS)
    for p in predictions:
        probabilities = [float(p[f"p_{name}"]) for name in LABELS]
        assert sum(probabilities) == pytest.approx(1, abs=1e-5) and p["label"] == LABELS[np.argmax(probabilities)]
    _, metadata = load_model(str(output / "best"))
    assert metadata["label_names"] == list(LABELS) and metadata["problem_type"] == "single_label"
    assert metadata["takes_pairs"] is False  # single texts: the LiteRT export takes no text_b
    # The fine-tuned model predicts alone: its record gives the labels (no training file).
    again = tmp_path / "again"
    rerun = subprocess.run(
        [sys.executable, "-m", "albert_tf.run_text_classifier", f"--eval_file={dev}", f"--init_checkpoint={output}/best",
         f"--output_dir={again}", "--do_eval"], capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert json.loads((again / "eval_results.json").read_text())["accuracy"] == pytest.approx(results["accuracy"])
    # Served: raw text in, the label names out, the probabilities the tool wrote.
    from albert_tf import load_export
    from albert_tf.export_lib.exporter import export

    export(str(output / "best"), str(tmp_path / "export"))
    served = load_export(str(tmp_path / "export"))([p["text"] for p in ticket_rows("new", 5)])
    assert list(served["label"]) == [p["label"] for p in predictions]
    np.testing.assert_allclose(served["probabilities"],
                               [[float(p[f"p_{name}"]) for name in LABELS] for p in predictions], atol=1e-4)


def finetune(checkpoint, output_dir, **task):
    config = FinetuningConfig(output_dir=str(output_dir), init_checkpoint=checkpoint, do_train=True, do_eval=True,
                              num_train_steps=4, task=TextClassificationConfig(**task), **TINY)
    assert run_finetuning(TextClassificationTask(), config) == 0
    return json.loads((output_dir / "eval_results.json").read_text()), load_model(str(output_dir / "best"))[1]


def test_multi_label_pairs_from_json_lines(checkpoint, tmp_path):
    rows = [{"question": r["text"], "answer": "yes", "tags": [r["label"]] + (["urgent"] if i % 2 else [])}
            for i, r in enumerate(ticket_rows("m", 16))]
    train = write_jsonl(tmp_path / "train.jsonl", rows)
    results, metadata = finetune(checkpoint, tmp_path / "out", train_file=train, eval_file=train,
                                 text_column="question", text_b_column="answer", label_column="tags")
    assert metadata["problem_type"] == "multi_label" and metadata["multi_label_threshold"] == 0.5
    assert metadata["takes_pairs"] is True
    assert metadata["label_names"] == ["billing", "bug", "other", "urgent"]
    assert set(results["per_label"]) == set(metadata["label_names"]) and "exact_match" in results
    assert "confusion_matrix" not in results and not (tmp_path / "out" / "confusion_matrix.png").exists()
    # Hugging Face's AlbertForSequenceClassification gets problem_type multi-label (its loss: each label's
    # sigmoid), and the round trip brings the scheme back.
    from albert_tf.checkpoints.conversion import convert

    convert("albert_tf", "huggingface", str(tmp_path / "out" / "best"), str(tmp_path / "hf"))
    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf_config["problem_type"] == "multi_label_classification"
    assert list(hf_config["id2label"].values()) == metadata["label_names"]
    convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "back"))
    _, back = load_model(str(tmp_path / "back"))
    assert back["problem_type"] == "multi_label" and back["label_names"] == metadata["label_names"]


def test_regression_from_scores(checkpoint, tmp_path):
    rows = [{"text": r["text"], "label": f"{i % 5 + 0.5}"} for i, r in enumerate(ticket_rows("r", 16))]
    train = write_csv(tmp_path / "train.tsv", rows, delimiter="\t")
    results, metadata = finetune(checkpoint, tmp_path / "out", train_file=train, eval_file=train)
    assert metadata["problem_type"] == "regression" and metadata["is_regression"] and metadata["num_labels"] == 1
    assert metadata["takes_pairs"] is False
    assert {"mse", "pearson", "spearman"} <= set(results)


def test_bad_input_is_refused_before_anything_is_written(checkpoint, tmp_path):
    train = write_csv(tmp_path / "train.csv", ticket_rows("train", 6))
    dev = write_csv(tmp_path / "dev.csv", [{"id": "d", "text": "a refund", "label": "refund"}])
    output = tmp_path / "out"
    with pytest.raises(ValueError, match=r"dev.csv: labels not in the training file: 'refund' \(line 2\)"):
        finetune(checkpoint, output, train_file=train, eval_file=dev)
    # Only the directory's lock, taken before the data is read (it holds off a second run meanwhile).
    assert [path.name for path in output.iterdir()] == [".lock"]


def test_without_the_plots_extra_the_report_is_the_table_alone(tmp_path, monkeypatch, capsys):
    from albert_tf.tasks.classification_metrics import single_label_metrics

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # a plain install, without [plots]
    config = FinetuningConfig(output_dir=str(tmp_path), task=TextClassificationConfig(problem_type="single_label",
                                                                                      labels=LABELS))
    evaluation = single_label_metrics([0, 1, 2], [0, 2, 2], LABELS)
    written = TextClassificationTask().write_evaluation_report(evaluation, config, str(tmp_path))
    assert written == [str(tmp_path / "eval_report.txt")] and not (tmp_path / "confusion_matrix.png").exists()
    assert "pip install 'albert_tf[plots]'" in capsys.readouterr().out


def test_a_predict_file_label_unknown_to_the_model_is_refused_without_do_eval(checkpoint, tmp_path):
    train = write_csv(tmp_path / "train.csv", ticket_rows("train", 6))
    new = write_csv(tmp_path / "new.csv", [{"text": "a refund please", "label": "refund"}])
    config = FinetuningConfig(output_dir=str(tmp_path / "out"), init_checkpoint=checkpoint, do_train=True,
                              do_predict=True, num_train_steps=2, task=TextClassificationConfig(
                                  train_file=train, predict_file=new), **TINY)
    with pytest.raises(ValueError, match=r"new.csv: labels not in the training file: 'refund' \(line 2\)"):
        run_finetuning(TextClassificationTask(), config)
    assert not (tmp_path / "out").exists()
