"""GLUE: metrics on known answers, readers that name bad lines, and each kind of task end to end."""

import json
import random
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.models.model_io import load_model, write_model_dir
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.tasks import glue
from albert_tf.tasks.glue_metrics import average_ranks, f1, matthews_corrcoef, pearson, spearman, task_metrics
from text_fixtures import random_sentence, tiny_pretrained_checkpoint


def test_metrics_on_hand_computed_cases():
    predictions, labels = [1, 1, 0, 0, 1, 0], [1, 0, 0, 1, 1, 0]
    # tp 2, fp 1, fn 1, tn 2: precision = recall = 2/3; MCC = (4 - 1) / sqrt(3*3*3*3) = 1/3
    assert f1(predictions, labels) == pytest.approx(2 / 3)
    assert matthews_corrcoef(predictions, labels) == pytest.approx(1 / 3)
    assert matthews_corrcoef([1, 1, 1], [1, 0, 1]) == 0.0  # an empty marginal
    assert task_metrics("mrpc", predictions, labels) == pytest.approx({"accuracy": 4 / 6, "f1": 2 / 3})
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0) and pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1)
    np.testing.assert_array_equal(average_ranks([10, 20, 20, 5]), [2, 3.5, 3.5, 1])
    # Spearman with ties = Pearson of the average ranks: x ranks [1, 2.5, 2.5, 4], y ranks [1, 2, 3, 4]
    rx, ry = np.array([1, 2.5, 2.5, 4]), np.array([1, 2, 3, 4])
    dx, dy = rx - rx.mean(), ry - ry.mean()
    expected = (dx * dy).sum() / np.sqrt((dx**2).sum() * (dy**2).sum())
    assert spearman([1, 5, 5, 9], [0.1, 0.2, 0.3, 0.4]) == pytest.approx(expected)
    assert spearman([1, 2, 3, 4], [1, 4, 9, 16]) == pytest.approx(1.0)  # monotone, not linear
    assert set(task_metrics("sts-b", [1.0, 2.0], [1.0, 3.0])) == {"pearson", "spearman"}
    assert set(task_metrics("cola", [1, 0], [1, 0])) == {"matthews_corr"}


def test_metrics_agree_with_independent_formulas():
    rng = np.random.default_rng(7)
    for _ in range(20):
        labels, predictions = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
        # MCC is the Pearson correlation of the two 0/1 vectors.
        assert matthews_corrcoef(predictions, labels) == pytest.approx(np.corrcoef(predictions, labels)[0, 1])
        tp = np.sum((predictions == 1) & (labels == 1))
        assert f1(predictions, labels) == pytest.approx(2 * tp / (np.sum(predictions) + np.sum(labels)))
        x, y = rng.normal(size=30), rng.normal(size=30)
        assert pearson(x, y) == pytest.approx(np.corrcoef(x, y)[0, 1])
        # Without ties Spearman is 1 - 6 sum d^2 / (n (n^2 - 1)), d the rank differences.
        d = np.argsort(np.argsort(x)) - np.argsort(np.argsort(y))
        assert spearman(x, y) == pytest.approx(1 - 6 * np.sum(d**2) / (30 * (30**2 - 1)))
        # Ties: a brute-force average rank (1 + number smaller + (number equal - 1) / 2).
        z = rng.integers(0, 5, 30)
        brute = [1 + np.sum(z < v) + (np.sum(z == v) - 1) / 2 for v in z]
        np.testing.assert_allclose(average_ranks(z), brute)


# The official GLUE layouts: (header, row) of labelled files and of test files; None: no header (CoLA).
LAYOUTS = {
    "cola": ((None, "gj04\t{label}\t\t{a}"), ("index\tsentence", "{i}\t{a}")),
    "sts-b": (("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore",
               "{i}\tmain-news\tf\t2012\t{i}\tnone\tnone\t{a}\t{b}\t{score:.3f}"),
              ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2",
               "{i}\tmain-news\tf\t2012\t{i}\tnone\tnone\t{a}\t{b}")),
    "mnli": (("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
              "sentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label",
              "{i}\t0\t0\tfiction\tx\tx\tx\tx\t{a}\t{b}\t{gold}\t{gold}"),
             ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
              "sentence2_parse\tsentence1\tsentence2", "{i}\t0\t0\tfiction\tx\tx\tx\tx\t{a}\t{b}")),
    "mrpc": (("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String", "{label}\t1\t2\t{a}\t{b}"),
             ("index\t#1 ID\t#2 ID\t#1 String\t#2 String", "{i}\t1\t2\t{a}\t{b}")),
}


def write_task(directory, task, rng, count=24):
    """Files in the official layout with a learnable signal (label = whether 'garden' appears)."""
    directory.mkdir(parents=True, exist_ok=True)

    def write(name, split):
        header, row = LAYOUTS[task][split == "test"]
        rows = []
        for i in range(count):
            label = rng.random() < 0.5
            a, b = random_sentence(rng, 3, 10) + (" garden" if label else ""), random_sentence(rng, 3, 10)
            rows.append(row.format(i=i, a=a, b=b, label=int(label), score=4.5 if label else 0.5,
                                   gold="entailment" if label else "contradiction"))
        (directory / name).write_text("\n".join(([header] if header else []) + rows) + "\n", encoding="utf-8")

    write("train.tsv", "train")
    for split in ("dev", "test"):
        for name in glue.split_files(task, split).values():
            write(name, split)
    return directory


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return tiny_pretrained_checkpoint(tmp_path_factory)


def test_readers_name_the_file_and_line_of_bad_input(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("sentence\tlabel\ngood one\t1\nbad one\t7\n")
    with pytest.raises(ValueError, match=r"dev.tsv:3: label '7' is not one of \['0', '1'\]"):
        glue.read_examples("sst-2", str(path), "dev")
    path.write_text("index\tsentence1\tsentence2\tlabel\n0\tonly two columns\n")
    with pytest.raises(ValueError, match=r"dev.tsv:2: 2 columns, rte needs at least 4"):
        glue.read_examples("rte", str(path), "dev")
    path.write_text("index\tgenre\tfilename\tyear\told\ts1\ts2\ta\tb\tscore\n0\tg\tf\ty\to\tx\tx\ta\tb\thigh\n")
    with pytest.raises(ValueError, match=r"dev.tsv:2: score 'high' is not a number"):
        glue.read_examples("sts-b", str(path), "dev")
    with pytest.raises(FileNotFoundError, match="missing.tsv"):
        glue.read_examples("cola", str(tmp_path / "missing.tsv"), "dev")
    path.write_text('sentence\tlabel\nit \'s a "quoted\t1\n')  # stray quotes are text, as in GLUE
    assert glue.read_examples("sst-2", str(path), "dev")[0].text_a == 'it \'s a "quoted'
    path.write_text("index\tgenre\tfilename\tyear\told\ts1\ts2\ta\tb\tscore\n0\tg\tf\ty\to\tx\tx\ta\tb\tnan\n")
    with pytest.raises(ValueError, match=r"dev.tsv:2: score 'nan' is not a number"):
        glue.read_examples("sts-b", str(path), "dev")
    path.write_text("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n1\t2\t3\twhy?\thow?\t1\n4\t5\t6\twhy?\n")
    with pytest.raises(ValueError, match=r"dev.tsv:3: 4 columns, qqp needs at least 6"):
        glue.read_examples("qqp", str(path), "dev")
    path.write_text("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n")
    with pytest.raises(ValueError, match=r"dev.tsv: holds no examples"):
        glue.read_examples("qqp", str(path), "dev")
    mnli_gold = "\t".join(["i", "p", "q", "g", "b1", "b2", "p1", "p2", "a", "b", "neutral", "maybe"])
    path.write_text("\t".join(["h"] * 12) + "\n" + mnli_gold + "\n")
    with pytest.raises(ValueError, match=r"dev.tsv:2: label 'maybe' is not one of"):
        glue.read_examples("mnli", str(path), "dev")
    cola_file = tmp_path / "train.tsv"
    cola_file.write_text("gj04\t1\t\tThe sailors rode the breeze clear of the rocks.\n")
    cola = glue.read_examples("cola", str(cola_file), "train")
    assert (cola[0].text_a, cola[0].label) == ("The sailors rode the breeze clear of the rocks.", 1)  # no header
    assert glue.split_files("mnli", "dev") == {"matched": "dev_matched.tsv", "mismatched": "dev_mismatched.tsv"}


def test_pair_packing_truncates_the_longer_text_first():
    from albert_tf.text.special_ids import ALBERT_SPECIAL_IDS

    class Words:  # a tokenizer with one id per word, and SentencePiece ALBERT's special ids
        special_ids = ALBERT_SPECIAL_IDS

        def encode(self, text):
            return [10 + len(word) for word in text.split()]

        def encode_batch(self, texts):
            return [self.encode(t) for t in texts]

    examples = [glue.Example("0", "a " * 20, "bb " * 4, 1), glue.Example("1", "a", "", 0)]
    arrays = glue.encode_examples(examples, Words(), 16)
    assert arrays["input_word_ids"][0].tolist() == [2] + [11] * 9 + [3] + [12] * 4 + [3]
    assert arrays["input_type_ids"][0].tolist() == [0] * 11 + [1] * 5
    assert arrays["input_word_ids"][1].tolist()[:4] == [2, 11, 3, 0]  # an empty second text: one segment
    assert arrays["input_mask"][1].sum() == 3 and arrays["label_ids"].tolist() == [1, 0]


def test_task_models_round_trip_their_config_and_shapes():
    import keras

    config = AlbertConfig.from_preset("albert_tiny", vocab_size=60)
    classifier = AlbertClassifier(AlbertEncoder(config), num_labels=3, dropout=0.2)
    inputs = {"input_word_ids": np.full((2, 7), 5, np.int32), "input_mask": np.ones((2, 7), np.int32),
              "input_type_ids": np.zeros((2, 7), np.int32)}
    assert tuple(classifier(inputs)["logits"].shape) == (2, 3)
    again = AlbertClassifier.from_config(classifier.get_config())
    assert again.get_config() == classifier.get_config() and again.num_labels == 3
    kernel = classifier.get_layer("classifier").kernel.numpy()
    assert abs(kernel.std() - config.initializer_range) < 0.5 * config.initializer_range
    choice = AlbertMultipleChoice(AlbertEncoder(config), num_choices=4).build_variables()
    stacked = {name: np.stack([value] * 4, axis=1) for name, value in inputs.items()}
    assert tuple(choice(stacked)["logits"].shape) == (2, 4)
    assert AlbertMultipleChoice.from_config(choice.get_config()).get_config() == choice.get_config()
    assert isinstance(classifier, keras.Model) and classifier.encoder.albert_config == config


def tiny_classifier_and_rows():
    """A one-layer classifier (the loop is under test, and tracing a deeper model only costs time), its
    config, and 16 random labelled rows of 8 tokens."""
    import keras

    config = AlbertConfig.from_preset("albert_tiny", vocab_size=60, num_hidden_layers=1)
    keras.utils.set_random_seed(0)
    model = AlbertClassifier(AlbertEncoder(config), num_labels=2)
    rng = np.random.default_rng(0)
    arrays = {"input_word_ids": rng.integers(5, 60, (16, 8)).astype(np.int32),
              "input_mask": np.ones((16, 8), np.int32), "input_type_ids": np.zeros((16, 8), np.int32),
              "label_ids": rng.integers(0, 2, 16).astype(np.int32)}
    return model, config, arrays


def test_finetune_resumes_and_keeps_the_best_checkpoint(tmp_path):
    import tensorflow as tf

    from albert_tf.training.finetuning import finetune
    from albert_tf.training.finetuning_config import FinetuningConfig

    model, config, arrays = tiny_classifier_and_rows()
    scores, kernels = [0.5, 0.9, 0.1], []

    def evaluate(m):
        kernels.append(m.get_layer("classifier").kernel.numpy().copy())
        return {"accuracy": scores[len(kernels) - 1]}

    def example_losses(batch, outputs):
        return tf.nn.sparse_softmax_cross_entropy_with_logits(batch["label_ids"], outputs["logits"])

    def settings(steps):
        return FinetuningConfig(num_train_steps=steps, train_batch_size=4, learning_rate=1e-3, num_warmup_steps=1,
                                save_checkpoints_steps=2)

    checkpoints, best = str(tmp_path / "checkpoints"), str(tmp_path / "best")
    common = dict(checkpoint_dir=checkpoints, kind="classifier",
                  metadata={"num_labels": 2, "label_names": ["0", "1"], "is_regression": False},
                  evaluate=evaluate, best_metric="accuracy", best_dir=best)
    first = finetune(model, arrays, example_losses, settings(4), **common)
    assert [r["step"] for r in first["evaluations"]] == [2, 4] and first["best"]["step"] == 4
    messages = []
    second = finetune(AlbertClassifier(AlbertEncoder(config), num_labels=2), arrays, example_losses, settings(6),
                      log=lambda *args, **kwargs: messages.append(" ".join(map(str, args))), **common)
    assert any("Resuming from" in m and "ckpt-4" in m for m in messages)
    assert [r["step"] for r in second["evaluations"]] == [2, 4, 6]  # continued at step 4, not from 0
    assert second["best"] == {"step": 4, "accuracy": 0.9}
    kept, metadata = load_model(best)
    assert metadata["model"] == "classifier" and metadata["best_step"] == 4
    np.testing.assert_array_equal(kept.get_layer("classifier").kernel.numpy(), kernels[1])
    assert not np.array_equal(kernels[1], kernels[2])
    latest, _ = load_model(checkpoints)  # the training checkpoints read as a classifier too
    np.testing.assert_array_equal(latest.get_layer("classifier").kernel.numpy(), kernels[2])


def run_classifier(*flags):
    result = subprocess.run([sys.executable, "-m", "albert_tf.run_classifier", *flags], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


TINY_TRAINING = ["--max_seq_length=32", "--train_step=6", "--warmup_step=1", "--train_batch_size=8",
                 "--save_checkpoints_steps=3", "--learning_rate=1e-4", "--iterations_per_loop=2"]


def check_submission(path, task, count=24):
    lines = path.read_text().splitlines()
    assert lines[0] == "index\tprediction" and len(lines) == count + 1
    assert [line.split("\t")[0] for line in lines[1:]] == [str(i) for i in range(count)]  # the test files' index
    for line in lines[1:]:
        prediction = line.split("\t")[1]
        if task == "sts-b":
            assert 0.0 <= float(prediction) <= 5.0 and len(prediction.split(".")[1]) == 3
        else:
            assert prediction in glue.TASKS[task].labels


@pytest.mark.parametrize("task", ["cola", "sts-b", "mnli"])
def test_task_end_to_end_through_the_cli(task, checkpoint, tmp_path):
    data = write_task(tmp_path / "data", task, random.Random(task))
    output = tmp_path / "out"
    run_classifier(f"--task_name={task}", f"--data_dir={data}", f"--init_checkpoint={checkpoint}",
                   f"--output_dir={output}", "--do_train", "--do_eval", "--do_predict", *TINY_TRAINING)
    results = json.loads((output / "eval_results.json").read_text())
    expected = {"cola": {"matthews_corr"}, "sts-b": {"pearson", "spearman"},
                "mnli": {"matched_accuracy", "mismatched_accuracy"}}[task]
    assert set(results) == expected
    history = json.loads((output / "checkpoints" / "evaluations.json").read_text())
    assert [h["step"] for h in history] == [3, 6]  # every checkpoint evaluated
    best_key = {"cola": "matthews_corr", "sts-b": "pearson", "mnli": "matched_accuracy"}[task]
    best = max(history, key=lambda h: h[best_key])
    model, metadata = load_model(str(output / "best"))
    assert metadata["model"] == "classifier" and metadata["task_name"] == task
    assert metadata["takes_pairs"] == (task != "cola")  # what the LiteRT export reads
    assert metadata["best_step"] == best["step"] and metadata["is_regression"] == (task == "sts-b")
    assert metadata["num_labels"] == len(metadata["label_names"]) == {"cola": 2, "sts-b": 1, "mnli": 3}[task]
    assert results == pytest.approx({k: v for k, v in best.items() if k != "step"})  # the kept model was evaluated
    assert (output / "best" / "spm.model").exists()
    submissions = {"cola": ["CoLA.tsv"], "sts-b": ["STS-B.tsv"], "mnli": ["MNLI-m.tsv", "MNLI-mm.tsv"]}[task]
    for name in submissions:
        check_submission(output / name, task)
    # TensorBoard: the loss and learning rate of every compiled loop (2 steps, ending at the checkpoints
    # too), the metrics of every evaluated checkpoint.
    train_tags, eval_tags = summary_steps(output / "train"), summary_steps(output / "eval")
    assert train_tags["loss"] == train_tags["learning_rate"] == [2, 3, 5, 6]
    assert eval_tags[best_key] == [3, 6]


def summary_steps(directory):
    """{tag: [steps]} of the TensorBoard event files in `directory`."""
    import tensorflow as tf
    from tensorflow.core.util import event_pb2

    tags = {}
    for path in sorted(tf.io.gfile.glob(str(directory / "events.out.tfevents.*"))):
        for record in tf.data.TFRecordDataset(path):
            event = event_pb2.Event.FromString(record.numpy())
            for value in event.summary.value:
                tags.setdefault(value.tag, []).append(event.step)
    return tags


def test_train_and_predict_then_evaluate_the_saved_classifier(checkpoint, tmp_path):
    data = write_task(tmp_path / "data", "mrpc", random.Random("mrpc"))
    output = tmp_path / "out"
    # Without --do_eval there is no best/: predictions come from the model just trained.
    run_classifier("--task_name=MRPC", f"--data_dir={data}", f"--init_checkpoint={checkpoint}",
                   f"--output_dir={output}", "--do_train", "--do_predict", *TINY_TRAINING)
    assert not (output / "best").exists() and not (output / "eval_results.json").exists()
    check_submission(output / "MRPC.tsv", "mrpc")
    _, metadata = load_model(str(output / "checkpoints"))
    assert metadata["model"] == "classifier" and metadata["label_names"] == ["0", "1"]
    # The training checkpoints are a complete model directory (spm.model included) to evaluate later.
    evaluated = tmp_path / "eval"
    run_classifier("--task_name=mrpc", f"--data_dir={data}", f"--init_checkpoint={output / 'checkpoints'}",
                   f"--output_dir={evaluated}", "--do_eval", "--max_seq_length=32")
    results = json.loads((evaluated / "eval_results.json").read_text())
    assert set(results) == {"accuracy", "f1"} and 0.0 <= results["f1"] <= 1.0
    failed = subprocess.run([sys.executable, "-m", "albert_tf.run_classifier", "--task_name=mrpc",
                             f"--data_dir={data}", f"--init_checkpoint={checkpoint}", f"--output_dir={tmp_path / 'x'}",
                             "--do_eval", "--max_seq_length=32"], capture_output=True, text=True)
    assert failed.returncode == 1 and "evaluating needs a mrpc classifier" in failed.stderr


def test_the_sentencepiece_model_comes_with_the_checkpoint_or_export(checkpoint, tmp_path):
    from albert_tf.models.model_dir_format import find_spm_model as spm_model_for

    spm = str(tmp_path / "given.model")
    (tmp_path / "given.model").write_bytes(b"x")
    assert spm_model_for(checkpoint, spm) == spm
    assert spm_model_for(checkpoint) == f"{checkpoint}/spm.model"
    export = tmp_path / "export"
    (export / "encoder" / "assets").mkdir(parents=True)
    (export / "encoder" / "saved_model.pb").write_bytes(b"")
    (export / "encoder" / "assets" / "albert_tf.json").write_text("{}")
    (export / "encoder" / "assets" / "spm.model").write_bytes(b"x")
    assert spm_model_for(str(export)) == f"{export}/encoder/assets/spm.model"
    (export / "spm.model").write_bytes(b"x")
    assert spm_model_for(str(export)) == f"{export}/spm.model"
    with pytest.raises(FileNotFoundError, match="missing.model: no such SentencePiece model"):
        spm_model_for(checkpoint, str(tmp_path / "missing.model"))
    empty = tmp_path / "empty"
    write_model_dir(AlbertEncoder(AlbertConfig.from_preset("albert_tiny")), str(empty), "encoder")
    with pytest.raises(FileNotFoundError, match="holds no spm.model; pass spm_model_file$") as refused:
        spm_model_for(str(empty))
    assert str(refused.value.for_flags()).endswith("holds no spm.model; pass --spm_model_file")
