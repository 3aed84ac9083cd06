"""Fine-tuning, export and conversion under real faults: nothing deleted before it is checked.

Each test is one fault a careful user runs into, made for real (real files, the
tools as processes, a real flock, a real exploding learning rate): --overwrite
with a typo, a run started from its own output, two runs on one directory, a
changed setting on resume, a divergence, a foreign vocabulary, paths that leave
their directory, configs with missing or absurd sizes, malformed task rows.
"""

import json
import os
import random
import stat
import subprocess
import sys

import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.models.model_io import load_model, write_model_dir
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.tasks import glue
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from albert_tf.training.training_loop import save_checkpoint
from test_glue import tiny_classifier_and_rows, write_task
from test_pretraining_trainer import summary_counts
from text_fixtures import SPECIAL_LINES, train_small_spm, write_corpus

TINY_TRAINING = ["--max_seq_length=32", "--train_step=6", "--warmup_step=1", "--train_batch_size=8",
                 "--save_checkpoints_steps=3", "--learning_rate=1e-4"]


def run_tool(tool, *flags, timeout=300):
    return subprocess.run([sys.executable, "-m", f"albert_tf.{tool}", *flags], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=timeout)


def last_error(result):
    return result.stderr.strip().splitlines()[-1]


def tree(directory):
    """{relative path: bytes} of every file under `directory`."""
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, directory)] = f.read()
    return files


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    spm = train_small_spm(tmp_path_factory)
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=AlbertTokenizer(str(spm)).vocab_size,
                                       num_hidden_layers=2)
    return write_model_dir(AlbertPretrainer(config), str(tmp_path_factory.mktemp("ckpt") / "pretrained"),
                           "pretrainer", files={"spm.model": str(spm)})


@pytest.fixture(scope="module")
def mrpc(tmp_path_factory):
    return write_task(tmp_path_factory.mktemp("glue") / "MRPC", "mrpc", random.Random("mrpc"))


@pytest.fixture(scope="module")
def finished_run(checkpoint, mrpc, tmp_path_factory):
    """A completed MRPC run (train + eval), copied afresh for each test that alters it."""
    output = tmp_path_factory.mktemp("finished") / "out"
    result = run_tool("run_classifier", "--task_name=mrpc", f"--data_dir={mrpc}", f"--init_checkpoint={checkpoint}",
                      f"--output_dir={output}", "--do_train", "--do_eval", *TINY_TRAINING)
    assert result.returncode == 0, result.stderr[-3000:]
    return output


@pytest.fixture
def run_dir(finished_run, tmp_path):
    import shutil

    copy = tmp_path / "out"
    shutil.copytree(finished_run, copy)
    (copy / "notes.txt").write_text("the user's own file")
    return copy


def classifier_flags(mrpc, output, *extra, init=None, checkpoint=None):
    return ["--task_name=mrpc", f"--data_dir={mrpc}", f"--init_checkpoint={init or checkpoint}",
            f"--output_dir={output}", *extra]


# --- 1. --overwrite deletes nothing before everything is checked --------------------------------------


def test_overwrite_with_a_typo_in_the_data_dir_keeps_the_earlier_run(run_dir, checkpoint, mrpc):
    before = tree(run_dir)
    result = run_tool("run_classifier", *classifier_flags(f"{mrpc}-typo", run_dir, "--do_train", "--do_eval",
                                                          "--overwrite", *TINY_TRAINING, checkpoint=checkpoint))
    assert result.returncode == 1 and "MRPC-typo" in last_error(result) and "no such file" in last_error(result)
    after = tree(run_dir)
    after.pop(".lock", None), before.pop(".lock", None)
    assert after == before  # checkpoints/, best/, eval_results.json, the user's notes: all as they were


def test_overwrite_starting_from_its_own_best_model_replaces_it_only_at_the_end(run_dir, mrpc):
    earlier_best = json.loads((run_dir / "best" / "albert_tf.json").read_text())
    result = run_tool("run_classifier", *classifier_flags(mrpc, run_dir, "--do_train", "--do_eval", "--overwrite",
                                                          *TINY_TRAINING, "--train_step=3", init=run_dir / "best"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Continuing to fine-tune the classifier" in result.stdout  # it read the model it was to replace
    history = json.loads((run_dir / "checkpoints" / "evaluations.json").read_text())
    assert [h["step"] for h in history] == [3]  # the new run's, not the earlier run's 3 and 6
    new_best = json.loads((run_dir / "best" / "albert_tf.json").read_text())
    assert new_best["train_steps"] == 3 and earlier_best["train_steps"] == 6
    assert (run_dir / "notes.txt").read_text() == "the user's own file"
    assert not [name for name in os.listdir(run_dir) if name.startswith(".overw")]  # no staging left


def test_evaluating_with_overwrite_keeps_the_model_it_evaluated(run_dir, mrpc):
    """--do_eval --overwrite without --do_train replaces the results it writes, not the run it evaluates."""
    kept = {path: data for path, data in tree(run_dir).items()
            if path.split(os.sep)[0] in ("best", "checkpoints", "train", "notes.txt")}
    result = run_tool("run_classifier", *classifier_flags(mrpc, run_dir, "--do_eval", "--overwrite",
                                                          init=run_dir / "best"))
    assert result.returncode == 0, result.stderr[-3000:]
    after = tree(run_dir)
    assert {path: after.get(path) for path in kept} == kept  # best/, checkpoints/, train/ and the user's file
    assert "eval_results.json" in after
    record = json.loads((run_dir / "run_config.json").read_text())
    assert {"best", "checkpoints"} <= set(record["outputs"]) and record["training"]  # still the run's own
    again = run_tool("run_classifier", *classifier_flags(mrpc, run_dir, "--do_eval", "--overwrite",
                                                         init=run_dir / "best"))
    assert again.returncode == 0, again.stderr[-3000:]  # and its outputs are not taken for a stranger's


def test_a_diverging_overwrite_run_leaves_the_earlier_run_in_place(run_dir, checkpoint, mrpc):
    before = tree(run_dir)
    result = run_tool("run_classifier", *classifier_flags(mrpc, run_dir, "--do_train", "--do_eval", "--overwrite",
                                                          *TINY_TRAINING, "--learning_rate=1e6",
                                                          "--save_checkpoints_steps=1", checkpoint=checkpoint))
    assert result.returncode == 2, result.stderr[-3000:]
    assert "is as it was (--overwrite replaces it only when a run finishes)" in last_error(result)
    after = tree(run_dir)
    after.pop(".lock", None), before.pop(".lock", None)
    assert after == before


def test_a_name_the_tool_writes_that_it_did_not_write_is_not_replaced(checkpoint, mrpc, tmp_path):
    output = tmp_path / "out"
    (output / "best").mkdir(parents=True)
    (output / "best" / "my_model.bin").write_text("not albert_tf's")
    result = run_tool("run_classifier", *classifier_flags(mrpc, output, "--do_train", "--overwrite", *TINY_TRAINING,
                                                          checkpoint=checkpoint))
    assert result.returncode == 1 and "holds best, which no earlier albert_tf.run_classifier run wrote" in \
        last_error(result)
    assert (output / "best" / "my_model.bin").read_text() == "not albert_tf's"


# --- 2. one run per directory, and a record of what may not change on resume ---------------------------


def test_a_second_run_on_a_busy_directory_is_refused(run_dir, checkpoint, mrpc):
    from albert_tf.file_utils import exclusive_directory_lock

    before = tree(run_dir / "checkpoints")
    with exclusive_directory_lock(str(run_dir), "a fine-tuning run in progress"):
        result = run_tool("run_classifier", *classifier_flags(mrpc, run_dir, "--do_train", "--do_eval",
                                                              *TINY_TRAINING, checkpoint=checkpoint))
    assert result.returncode == 1
    assert "is in use by a fine-tuning run in progress" in last_error(result)
    assert tree(run_dir / "checkpoints") == before


def test_a_rerun_with_other_settings_is_refused_naming_each(run_dir, checkpoint, tmp_path):
    mnli = write_task(tmp_path / "MNLI", "mnli", random.Random("other"))
    record = json.loads((run_dir / "run_config.json").read_text())
    assert record["training"]["learning_rate"] == 1e-4 and "checkpoints" in record["outputs"]
    flags = [f"--init_checkpoint={checkpoint}", f"--output_dir={run_dir}", "--do_train", *TINY_TRAINING]
    result = run_tool("run_classifier", "--task_name=mnli", f"--data_dir={mnli}", *flags, "--learning_rate=3e-4",
                      "--max_seq_length=24", "--train_batch_size=4")
    assert result.returncode == 1
    error = last_error(result)
    for phrase in ("holds checkpoints of another run", "the task (GLUE mnli; the checkpoints were made for GLUE mrpc)",
                   "the training data", "--learning_rate=0.0003 (the checkpoints were made with 0.0001)",
                   "--max_seq_length=24 (the checkpoints were made with 32)",
                   "--train_batch_size=4 (the checkpoints were made with 8)"):
        assert phrase in error, (phrase, error)
    assert json.loads((run_dir / "run_config.json").read_text()) == record


def test_a_rerun_with_another_precision_accumulation_or_dropout_is_refused(run_dir, checkpoint, mrpc):
    """Each changes the weights a resumed run computes: recorded with the run and compared, as the schedule is."""
    record = json.loads((run_dir / "run_config.json").read_text())
    result = run_tool("run_classifier", *classifier_flags(mrpc, run_dir, "--do_train", *TINY_TRAINING,
                                                          "--mixed_precision=bf16", "--gradient_accumulation_steps=2",
                                                          "--dropout=0.2", checkpoint=checkpoint))
    assert result.returncode == 1
    error = last_error(result)
    for phrase in ("--mixed_precision=bf16 (the checkpoints were made with none)",
                   "--gradient_accumulation_steps=2 (the checkpoints were made with 1)",
                   "--dropout=0.2 (the checkpoints were made with 0.1)"):
        assert phrase in error, (phrase, error)
    assert json.loads((run_dir / "run_config.json").read_text()) == record


def test_one_tools_directory_is_refused_by_the_others(run_dir, checkpoint, tmp_path):
    """A finished run_classifier directory is neither a SQuAD run's nor a pretraining run's output: nothing there
    changes, its record included."""
    before = tree(run_dir)
    squad = tmp_path / "train.json"
    squad.write_text(json.dumps({"version": "1.1", "data": []}))
    result = run_tool("run_squad", "--version=1.1", f"--train_file={squad}", f"--init_checkpoint={checkpoint}",
                      f"--output_dir={run_dir}", "--do_train", "--max_seq_length=32", "--max_query_length=8",
                      "--doc_stride=8", "--num_train_steps=2")
    assert result.returncode == 1
    assert "holds a albert_tf.run_classifier run" in last_error(result), last_error(result)
    # Refused before its data is even read.
    result = run_tool("run_pretraining", f"--input_file={tmp_path / 'no_data'}-*", f"--output_dir={run_dir}",
                      "--albert_config=albert_tiny", "--max_seq_length=32", "--train_batch_size=4",
                      "--num_train_steps=2")
    assert result.returncode == 1
    assert "holds a albert_tf.run_classifier run" in last_error(result), last_error(result)
    # Only the directory lock (which names the last tool that held it) may differ.
    assert {name: data for name, data in tree(run_dir).items() if name != ".lock"} == {
        name: data for name, data in before.items() if name != ".lock"}


def test_a_finetuning_output_dir_reads_as_its_best_model_else_its_last(run_dir, tmp_path, capsys):
    """A fine-tuning run's output directory given where a model directory is asked for (albert-export's
    --checkpoint, albert-convert's --input, --init_checkpoint, load_model): its best model, else, from a run without
    --do_eval, its last one, the one the tool named as "the last model"; a note says which."""
    import shutil

    import numpy as np

    from albert_tf.checkpoints.conversion import convert
    from albert_tf.models.model_dir_format import RUN_MODELS
    from albert_tf.training.finetuning_tool import BEST_SUBDIR, CHECKPOINT_SUBDIR

    assert [name for name, _ in RUN_MODELS] == [BEST_SUBDIR, CHECKPOINT_SUBDIR]
    model, _ = load_model(str(run_dir))
    for a, b in zip(model.weights, load_model(str(run_dir / "best"))[0].weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert (f"Note: {run_dir} is a training run's output directory; reading its best model, {run_dir / 'best'}."
            in capsys.readouterr().err.splitlines())
    shutil.rmtree(run_dir / "best")
    convert("albert_tf", "huggingface", str(run_dir), str(tmp_path / "hf"))
    assert (f"Note: {run_dir} is a training run's output directory; reading its last model (a run without do_eval "
            f"keeps no best one), {run_dir / 'checkpoints'}." in capsys.readouterr().err.splitlines())
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == (run_dir / "checkpoints" / "spm.model").read_bytes()


def test_the_vocabulary_is_compared_by_content_with_the_starting_models(checkpoint, mrpc, tmp_path):
    from albert_tf.data.vocabulary import train

    corpus = write_corpus(tmp_path / "other.txt", num_documents=80, seed=99)
    with open(corpus, "a", encoding="utf-8") as f:
        f.write("\n" + "\n".join(SPECIAL_LINES * 3) + "\n")
    stored = AlbertTokenizer(os.path.join(checkpoint, "spm.model"))
    train([str(corpus)], str(tmp_path / "other"), vocab_size=stored.vocab_size, num_threads=1)
    other_model = str(tmp_path / "other.model")
    assert AlbertTokenizer(other_model).vocab_size == stored.vocab_size  # the same size: only content tells
    output = tmp_path / "out"
    result = run_tool("run_classifier", *classifier_flags(mrpc, output, "--do_train", "--do_eval", *TINY_TRAINING,
                                                          f"--spm_model_file={other_model}", checkpoint=checkpoint))
    assert result.returncode == 1
    assert "is not the SentencePiece model of --init_checkpoint" in last_error(result)
    assert not (output / "best").exists() and not (output / "checkpoints").exists()


# --- 3. divergence: no exploded checkpoint is saved, kept as the best or named as good ---------------


def test_a_finetuning_divergence_keeps_no_exploded_model_and_exits_2(checkpoint, mrpc, tmp_path):
    import tensorflow as tf

    output = tmp_path / "out"
    # Warmup from 0: step 1 changes nothing (rate 0), step 2 at 1e6 blows the weights up while its loss,
    # measured before the update, is still fine.
    result = run_tool("run_classifier", *classifier_flags(mrpc, output, "--do_train", "--do_eval", *TINY_TRAINING,
                                                          "--learning_rate=1e6", "--save_checkpoints_steps=1",
                                                          checkpoint=checkpoint))
    assert result.returncode == 2, result.stderr[-3000:]
    error = last_error(result)
    assert "the weights' global norm grew to" in error and "stopped without saving" in error
    assert f"Last good checkpoint: {output}/checkpoints/ckpt-1;" in error
    assert sorted(p.name for p in (output / "checkpoints").glob("ckpt-*.index")) == ["ckpt-1.index"]
    model, metadata = load_model(str(output / "best"))
    assert metadata["best_step"] == 1
    started = load_model(checkpoint)[0].encoder.weights
    kept = float(tf.linalg.global_norm(model.encoder.weights))
    assert abs(kept - float(tf.linalg.global_norm(started))) < 1e-3 * kept  # the good model, not 4.7e8
    assert "stopped without saving" in json.loads((output / "run_config.json").read_text())["diverged"]
    # The advised rerun at a sane rate resumes from ckpt-1 (the rate may change after a divergence).
    rerun = run_tool("run_classifier", *classifier_flags(mrpc, output, "--do_train", "--do_eval", *TINY_TRAINING,
                                                         "--save_checkpoints_steps=1", checkpoint=checkpoint))
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "Resuming from" in rerun.stdout and "ckpt-1" in rerun.stdout
    record = json.loads((output / "run_config.json").read_text())
    assert record["schedule_changes"] == [{"learning_rate": {"from": 1e6, "to": 1e-4}}]


def test_finetune_names_the_last_checkpoint_whose_weights_passed(tmp_path):
    """In process: a loss that explodes at step 5 of 6 (the loss function itself scales up, a real
    runaway), checkpoints every 2 steps."""
    import tensorflow as tf

    from albert_tf.training import TrainingDivergedError
    from albert_tf.training.finetuning import finetune
    from albert_tf.training.finetuning_config import FinetuningConfig

    model, _, arrays = tiny_classifier_and_rows()
    calls = tf.Variable(0)

    def example_losses(batch, outputs):
        calls.assign_add(1)
        losses = tf.nn.sparse_softmax_cross_entropy_with_logits(batch["label_ids"], outputs["logits"])
        return losses * tf.where(calls >= 5, 1e3, 1.0)

    evaluated = []
    settings = FinetuningConfig(num_train_steps=6, train_batch_size=4, learning_rate=1e-3, num_warmup_steps=1,
                                save_checkpoints_steps=2, iterations_per_loop=1)
    with pytest.raises(TrainingDivergedError, match=r"the loss grew to .* in step 5; stopped without saving") as info:
        finetune(model, arrays, example_losses, settings, checkpoint_dir=str(tmp_path / "checkpoints"),
                 kind="classifier", metadata={"num_labels": 2, "label_names": ["0", "1"], "is_regression": False},
                 evaluate=lambda m: evaluated.append(1) or {"accuracy": 0.5},
                 best_metric="accuracy", best_dir=str(tmp_path / "best"))
    assert info.value.last_good.endswith("ckpt-4")
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("ckpt-*.index")) == ["ckpt-2.index", "ckpt-4.index"]
    assert len(evaluated) == 2 and load_model(str(tmp_path / "best"))[1]["best_step"] == 2


def test_an_exploding_update_is_caught_by_the_weights_before_its_checkpoint():
    from albert_tf.training.divergence import DivergenceGuard

    import tensorflow as tf

    weights = [tf.Variable(tf.fill([100], 0.02)), tf.Variable(tf.ones([10]))]
    guard = DivergenceGuard(weights)
    assert guard.loss_problem(0.7) is None and guard.weights_problem() is None
    weights[0].assign_add(tf.fill([100], 0.05))  # a sane step moves the norm by a fraction
    assert guard.weights_problem() is None
    weights[0].assign(tf.fill([100], 3.5e6))  # the loss of the step that did this was still fine
    assert "global norm grew to" in guard.weights_problem()
    weights[0].assign(tf.fill([100], float("nan")))
    assert "no longer finite" in guard.weights_problem()
    # Losses: noisy small values after a good run pass; 10x the starting level does not.
    for loss in (0.5, 0.01, 0.02, 2.0, 0.01):
        assert guard.loss_problem(loss) is None
    assert "more than 10x" in guard.loss_problem(7.5)
    assert "became inf" in guard.loss_problem(float("inf"))


def test_a_steady_climb_is_caught_at_ten_times_where_it_started():
    """A loss climbing 3% a step drags the median of its recent past along: the reference is the lowest median
    so far, so the climb stops at 10x the first loss instead of running to 15x and beyond."""
    from albert_tf.training.divergence import DivergenceGuard

    guard = DivergenceGuard([])
    loss, problem = 0.7, None
    while problem is None and loss < 20 * 0.7:
        problem = guard.loss_problem(loss)
        loss *= 1.03
    assert problem and "more than 10x its level (0.7:" in problem and "lowest median" in problem
    assert 7.0 < loss / 1.03 <= 7.0 * 1.03


def test_divergence_advice_names_fp16_only_for_fp16_runs():
    from albert_tf.training.pretraining_run import _diverged

    for precision in ("fp32", "bf16"):
        assert "fp16" not in str(_diverged("the loss became nan", "step 5", None, precision))
    assert "--mixed_precision=bf16 instead of fp16" in str(_diverged("the loss became nan", "step 5", None, "fp16"))


def test_run_record_lets_the_schedule_change_only_after_a_divergence(run_dir, checkpoint, mrpc):
    from albert_tf.training.run_directory import record_divergence

    flags = classifier_flags(mrpc, run_dir, "--do_train", *TINY_TRAINING, checkpoint=checkpoint)
    refused = run_tool("run_classifier", *flags, "--learning_rate=5e-5")
    assert refused.returncode == 1 and "--learning_rate=5e-05 (the checkpoints were made with 0.0001)" in \
        last_error(refused)
    record_divergence(str(run_dir), "the loss grew to 1e+12 at step 7; stopped without saving")
    accepted = run_tool("run_classifier", *flags, "--learning_rate=5e-5")
    assert accepted.returncode == 0, accepted.stderr[-3000:]
    record = json.loads((run_dir / "run_config.json").read_text())
    assert record["training"]["learning_rate"] == 5e-5 and "diverged" not in record
    assert record["schedule_changes"] == [{"learning_rate": {"from": 1e-4, "to": 5e-5}}]
    again = run_tool("run_classifier", *flags, "--learning_rate=1e-5")  # no divergence since: refused again
    assert again.returncode == 1 and "--learning_rate=1e-05 (the checkpoints were made with 5e-05)" in \
        last_error(again)


# --- 5. paths stay inside their directory; every copied vocabulary is one ----------------------------


def test_export_serving_names_cannot_leave_the_output_dir(checkpoint, tmp_path):
    outside = tmp_path / "x"
    for name in ("../../x", str(outside), "a/b", "..", ".hidden"):
        result = run_tool("export", f"--checkpoint={checkpoint}", f"--output_dir={tmp_path / 'export'}",
                          f"--serving_name={name}")
        assert result.returncode == 1 and "--serving_name=" in last_error(result), (name, result.stderr[-2000:])
    assert sorted(os.listdir(tmp_path)) == []


def test_export_overwrite_replaces_an_export_but_no_foreign_file(checkpoint, tmp_path):
    from albert_tf.export_lib.exporter import export

    output = tmp_path / "export"
    output.mkdir()
    (output / "README.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="was not written by albert_tf"):
        export(checkpoint, str(output), max_seq_length=16, overwrite=True, serving_warmup_batch_sizes=())
    assert sorted(os.listdir(output)) == ["README.txt"]
    os.remove(output / "README.txt")
    export(checkpoint, str(output), max_seq_length=16, serving_warmup_batch_sizes=())
    first = json.loads((output / "albert_tf.json").read_text())
    export(checkpoint, str(output), max_seq_length=24, overwrite=True, serving_warmup_batch_sizes=())
    assert json.loads((output / "albert_tf.json").read_text())["max_seq_length"] == 24 != first["max_seq_length"]
    (output / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"holds files albert_tf did not write there \(notes.txt\)"):
        export(checkpoint, str(output), max_seq_length=16, overwrite=True, serving_warmup_batch_sizes=())
    assert (output / "notes.txt").read_text() == "mine"


def test_convert_resolves_and_checks_a_linked_vocabulary(checkpoint, tmp_path, umask_022):
    from albert_tf.checkpoints.conversion import convert

    hf = tmp_path / "hf"
    convert("albert_tf", "huggingface", checkpoint, str(hf))
    assert stat.S_IMODE(os.stat(hf / "model.safetensors").st_mode) == 0o644  # not mkstemp's 0600
    secret = tmp_path / "secret.txt"
    secret.write_text("password: hunter2\n")
    os.chmod(secret, 0o600)
    os.remove(hf / "spiece.model")
    os.symlink(secret, hf / "spiece.model")
    with pytest.raises(ValueError, match=r"spiece.model \(a link to .*secret.txt\): not a SentencePiece model"):
        convert("huggingface", "albert_tf", str(hf), str(tmp_path / "back"))
    assert not (tmp_path / "back").exists()
    os.remove(hf / "spiece.model")
    os.symlink(tmp_path / "missing.model", hf / "spiece.model")  # dangling: named, not silently skipped
    with pytest.raises(FileNotFoundError, match="it links to .*missing.model"):
        convert("huggingface", "albert_tf", str(hf), str(tmp_path / "back"))
    os.remove(hf / "spiece.model")
    os.symlink(os.path.join(checkpoint, "spm.model"), hf / "spiece.model")  # a cache snapshot's link: fine
    convert("huggingface", "albert_tf", str(hf), str(tmp_path / "back"))
    copied = tmp_path / "back" / "spm.model"
    assert not copied.is_symlink() and stat.S_IMODE(os.stat(copied).st_mode) == 0o644
    assert copied.read_bytes() == open(os.path.join(checkpoint, "spm.model"), "rb").read()


# --- 6. configs: required fields, sizes bounded before any allocation -----------------------------------


def test_a_config_without_hidden_size_is_refused_naming_it(tmp_path):
    values = AlbertConfig.from_preset("albert_tiny").to_dict()
    del values["hidden_size"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(values))
    with pytest.raises(ValueError, match=r"config.json: missing hidden_size; a config must state"):
        AlbertConfig.from_json_file(path)


def test_absurd_sizes_fail_fast_in_a_config_and_in_a_checkpoint(checkpoint, tmp_path, monkeypatch):
    import shutil
    import time

    values = AlbertConfig.from_preset("albert_tiny").to_dict()
    for name, value, message in (("num_hidden_layers", 1_000_000_000, "num_hidden_layers 1,000,000,000 exceeds"),
                                 ("vocab_size", 10**8, "vocab_size 100,000,000 exceeds"),
                                 ("intermediate_size", 262_144, "parameters exceed the limit")):
        big = {**values, name: value, **({"hidden_size": 65_536, "num_attention_heads": 64, "sharing": "none",
                                          "num_hidden_layers": 64} if name == "intermediate_size" else {})}
        with pytest.raises(ValueError, match=message):
            AlbertConfig.from_dict(big)
    monkeypatch.setenv("ALBERT_TF_TRUST_CONFIG", "1")
    assert AlbertConfig.from_dict({**values, "num_hidden_layers": 2000}).num_hidden_layers == 2000
    monkeypatch.delenv("ALBERT_TF_TRUST_CONFIG")
    damaged = tmp_path / "damaged"
    shutil.copytree(checkpoint, damaged)
    metadata = json.loads((damaged / "albert_tf.json").read_text())
    metadata["albert_config"]["num_hidden_layers"] = 1_000_000_000
    (damaged / "albert_tf.json").write_text(json.dumps(metadata))
    start = time.monotonic()
    result = run_tool("export", f"--checkpoint={damaged}", f"--output_dir={tmp_path / 'export'}", timeout=120)
    assert result.returncode == 1 and "exceeds the limit 1,024" in last_error(result)
    assert "ALBERT_TF_TRUST_CONFIG=1" in last_error(result) and time.monotonic() - start < 60
    assert not (tmp_path / "export").exists()


# --- 7. task input that cannot be read as it is meant is refused --------------------------------------


def test_a_row_with_a_stray_tab_is_refused_with_its_file_and_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                    "1\t1\t2\tThe first\ttext.\tThe second text.\n")  # 6 columns: a tab inside sentence 1
    with pytest.raises(ValueError, match=r"train.tsv:2: 6 columns where the header has 5 \(a tab inside a text\?\)"):
        glue.read_examples("mrpc", str(path), "train")
    cola = tmp_path / "cola.tsv"
    cola.write_text("gj04\t1\t\tFine.\ngj04\t0\t*\tA stray\ttab.\n")
    with pytest.raises(ValueError, match=r"cola.tsv:2: 5 columns where cola has 4"):
        glue.read_examples("cola", str(cola), "train")


def test_a_sequence_length_that_cannot_hold_the_inputs_is_refused(checkpoint, mrpc, tmp_path):
    # A pair task says what its inputs need; a length below any input's is refused as such for every task.
    for task, data, length, message in (("mrpc", mrpc, 4, "--max_seq_length=4 cannot hold a mrpc input: [CLS] A [SEP] "
                                                          "B [SEP] with a token of each text needs at least 5"),
                                        ("sst-2", mrpc, 2, "--max_seq_length must be an integer >= 3 (room for [CLS], "
                                                           "a token and [SEP]), got 2")):
        result = run_tool("run_classifier", f"--task_name={task}", f"--data_dir={data}",
                          f"--init_checkpoint={checkpoint}", f"--output_dir={tmp_path / task}", "--do_train",
                          f"--max_seq_length={length}")
        assert result.returncode == 1 and message in last_error(result), last_error(result)
        assert not (tmp_path / task).exists()


def test_a_killed_overwrite_run_leaves_the_earlier_run_and_its_staging_goes_next_time(run_dir, checkpoint, mrpc):
    import signal
    import time

    before = tree(run_dir)
    process = subprocess.Popen(
        [sys.executable, "-m", "albert_tf.run_classifier",
         *classifier_flags(mrpc, run_dir, "--do_train", "--overwrite", *TINY_TRAINING, "--train_step=400",
                           checkpoint=checkpoint)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    deadline = time.monotonic() + 240
    while not list(run_dir.glob(".overwrite-staging-*/checkpoints/ckpt-3.index")):
        assert process.poll() is None, process.stderr.read().decode()[-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    staging = list(run_dir.glob(".overwrite-staging-*"))
    assert len(staging) == 1
    after = {path: data for path, data in tree(run_dir).items() if not path.startswith(".overwrite-staging-")}
    after.pop(".lock", None), before.pop(".lock", None)
    assert after == before  # the earlier run, as it was
    result = run_tool("run_classifier", *classifier_flags(mrpc, run_dir, "--do_eval", "--max_seq_length=32",
                                                          init=run_dir / "best"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert not staging[0].exists()


def test_finetune_resumes_from_the_newest_intact_checkpoint(tmp_path, capfd):
    """A damaged newest fine-tuning checkpoint (every tensor's CRC32C checked) falls back to the previous
    one, with a warning naming it, and the run goes on to the end."""
    import tensorflow as tf

    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.networks.albert_encoder import AlbertEncoder
    from albert_tf.training.finetuning import finetune
    from albert_tf.training.finetuning_config import FinetuningConfig

    def example_losses(batch, outputs):
        return tf.nn.sparse_softmax_cross_entropy_with_logits(batch["label_ids"], outputs["logits"])

    def settings(steps):
        return FinetuningConfig(num_train_steps=steps, train_batch_size=4, learning_rate=1e-3, num_warmup_steps=1,
                                save_checkpoints_steps=2, keep_checkpoint_max=5)

    checkpoints = tmp_path / "checkpoints"
    model, config, arrays = tiny_classifier_and_rows()
    common = dict(checkpoint_dir=str(checkpoints), kind="classifier", summary_dir=str(tmp_path / "summaries"),
                  metadata={"num_labels": 2, "label_names": ["0", "1"], "is_regression": False})
    finetune(model, arrays, example_losses, settings(4), **common)
    data_file = next(checkpoints.glob("ckpt-4.data-*"))
    content = bytearray(data_file.read_bytes())
    for offset in range(0, len(content), 512):
        content[offset] ^= 0xFF
    data_file.write_bytes(bytes(content))
    messages = []
    result = finetune(AlbertClassifier(AlbertEncoder(config), num_labels=2), arrays, example_losses, settings(6),
                      log=lambda *args, **kwargs: messages.append(" ".join(map(str, args))), **common)
    assert "ckpt-4 is unreadable" in capfd.readouterr().err
    assert any(m == f"Resuming from {checkpoints / 'ckpt-2'}" for m in messages), messages
    assert result["status"] == 0 and result["step"] == 6
    # The steps the resumed run did again (3 and 4) are in TensorBoard once, as the resumed run logged them.
    counts = summary_counts(tmp_path / "summaries" / "train")
    assert {step for _, step in counts} == {2, 4, 6} and set(counts.values()) == {1}, counts


# --- 8. a checkpoint save that fails says why in one line and leaves nothing half-written -------------


@pytest.fixture
def saving(tmp_path):
    """A CheckpointManager as the training loops make it, with ckpt-10 saved, and an output directory lock."""
    import tensorflow as tf

    from albert_tf.file_utils import exclusive_directory_lock

    directory = tmp_path / "run"
    checkpoint = tf.train.Checkpoint(weights=tf.Variable(tf.zeros([100_000])))  # 400 KB
    manager = tf.train.CheckpointManager(checkpoint, str(directory), max_to_keep=3, checkpoint_name="ckpt")
    with exclusive_directory_lock(str(directory), "test"):
        save_checkpoint(manager, 10)
        yield manager, directory


def test_a_save_beyond_the_file_size_limit_says_so_in_one_line_and_its_staging_goes(saving):
    """Under `ulimit -f` the save of ckpt-20 fails: one line naming the directory and the cause (not TensorFlow's
    op), ckpt-10 left as it was, no ckpt-20_temp/; a killed save's ckpt-N_temp/ goes when the next run starts."""
    import resource
    import types

    import tensorflow as tf

    from albert_tf.training.training_loop import run_training_loop

    manager, directory = saving
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, hard))  # Python ignores SIGXFSZ: the write gets EFBIG
    try:
        with pytest.raises(OSError) as failed:
            save_checkpoint(manager, 20)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert str(failed.value) == (
        f"could not save the checkpoint of step 20 in {directory} (File too large). The previous checkpoint "
        f"({directory / 'ckpt-10'}) is intact: raise the file-size limit (ulimit -f) above the checkpoint's size, "
        "then rerun the same command to resume from it")
    assert sorted(os.listdir(directory)) == [".lock", "checkpoint", "ckpt-10.data-00000-of-00001", "ckpt-10.index"]

    (directory / "ckpt-30_temp").mkdir()  # what a save killed halfway leaves
    (directory / "ckpt-30_temp" / "part-00000-of-00001.index").write_bytes(b"")
    (directory / "notes_temp").mkdir()  # not a save's
    trainer = types.SimpleNamespace(objective=None, step=tf.Variable(40))
    assert run_training_loop(trainer, None, manager, None, None, 40, save_checkpoints_steps=10, iterations_per_loop=1,
                             max_seconds_per_loop=0, format_metrics=str, diverged=None, log=lambda *a, **k: None) == 0
    assert not (directory / "ckpt-30_temp").exists() and (directory / "notes_temp").is_dir()


def test_an_input_process_failure_says_what_is_left_to_resume_from(saving):
    """The message once called the last checkpoint intact without looking: so it said of a deleted ckpt-10, and of
    a deleted output directory's."""
    import shutil

    from albert_tf.training.training_loop import input_process_error

    manager, directory = saving
    failure = "an instance builder process (pid 7) stopped with signal 9"
    advice = "with fewer input processes, or more memory, if the out-of-memory killer stopped the process"
    assert str(input_process_error(manager, failure)) == (
        f"{failure}: the input pipeline cannot go on. The last checkpoint ({directory / 'ckpt-10'}) is intact: rerun "
        f"the same command to resume from it ({advice})")
    (directory / "ckpt-10.index").unlink()
    assert str(input_process_error(manager, failure)) == (
        f"{failure}: the input pipeline cannot go on. No checkpoint of this run is there: rerun the same command to "
        f"start again ({advice})")
    shutil.rmtree(directory)
    assert str(input_process_error(manager, failure)) == (
        f"{failure}: the input pipeline cannot go on. {directory} is gone (deleted while the run was writing it), "
        f"and its checkpoints with it: rerun the command to start again in a directory that stays ({advice})")


def test_a_save_into_a_deleted_output_dir_says_it_is_gone_not_intact(saving, monkeypatch):
    """An output directory deleted while its checkpoint was being saved: the message says the directory and its
    checkpoints are gone, not that the previous checkpoint is intact; so too for a directory the run holds no lock
    on (fine-tuning's checkpoints/ inside the locked output directory)."""
    import shutil

    import tensorflow as tf

    def deleted_during_the_save(manager):
        def save(checkpoint_number):
            shutil.rmtree(manager.directory)
            raise tf.errors.NotFoundError(None, None, f"{manager.directory}/ckpt-{checkpoint_number}_temp/part-00000-"
                                                      "of-00001.index.tempstate1; No such file or directory")
        monkeypatch.setattr(manager, "save", save)

    manager, directory = saving
    unlocked = tf.train.CheckpointManager(tf.train.Checkpoint(step=tf.Variable(1)), str(directory / "checkpoints"),
                                          max_to_keep=3, checkpoint_name="ckpt")
    save_checkpoint(unlocked, 10)
    deleted_during_the_save(unlocked)
    with pytest.raises(OSError) as failed:
        save_checkpoint(unlocked, 20)
    assert str(failed.value) == (
        f"could not save the checkpoint of step 20: {directory / 'checkpoints'} is gone (deleted while the run was "
        "writing it), and its checkpoints with it; nothing of this run is saved. Rerun the command to start again in "
        "a directory that stays")

    deleted_during_the_save(manager)
    with pytest.raises(OSError, match=f"^{directory} was deleted or replaced while this run was writing it") as failed:
        save_checkpoint(manager, 20)
    assert "intact" not in str(failed.value)
