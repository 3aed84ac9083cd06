"""Fine-tuning under tf.distribute: replicas, accumulation, precision and XLA change nothing but speed.

In process, for each task's model and loss (GLUE's classifier, SQuAD's span labeler, RACE's multiple
choice): MirroredStrategy over the two logical CPU devices (conftest.py) and 2-step gradient
accumulation train to the weights one device reaches on the same global batches; evaluation spread
over the replicas returns the outputs one device computes, in row order, for a row count that does
not fill the last batch. Through the tools: two worker processes with TF_CONFIG fine-tune GLUE, SQuAD
and RACE to the one-device run's weights and predictions (SQuAD's n-best over all windows); bf16 and
XLA runs finish with metrics close to float32's; SIGTERM (Ctrl-C) saves, exits 143 (130) and the rerun resumes.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.albert_config import AlbertConfig
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
from albert_tf.models.model_io import load_model
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.tasks.finetuning_task import predict_outputs
from albert_tf.tasks.glue_task import GlueTask
from albert_tf.tasks.race_task import RaceTask
from albert_tf.tasks.squad_task import SquadTask
from albert_tf.training.finetuning import finetune
from albert_tf.training.finetuning_config import FinetuningConfig

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ, ROWS, BATCH, STEPS = 8, 16, 8, 4
CONFIG = AlbertConfig.from_preset("albert_tiny", vocab_size=60, num_hidden_layers=1)


def encoder_inputs(rng, shape):
    return {"input_word_ids": rng.integers(5, 60, shape).astype(np.int32), "input_mask": np.ones(shape, np.int32),
            "input_type_ids": np.zeros(shape, np.int32)}


def task_case(kind):
    """(model builder, rows, task) of one task kind; the same rows every call. Dropout is off (the
    config's and the heads'): its random masks are drawn per device, so with it no two layouts match."""
    rng = np.random.default_rng(0)
    if kind == "classifier":
        arrays = {**encoder_inputs(rng, (ROWS, SEQ)), "label_ids": rng.integers(0, 2, ROWS).astype(np.int32)}
        return (lambda: AlbertClassifier(AlbertEncoder(CONFIG), num_labels=2, dropout=0.0)), arrays, GlueTask()
    if kind == "span_labeler":
        starts = rng.integers(0, SEQ, ROWS).astype(np.int32)
        arrays = {**encoder_inputs(rng, (ROWS, SEQ)), "start_positions": starts,
                  "end_positions": np.minimum(starts + rng.integers(0, 3, ROWS), SEQ - 1).astype(np.int32)}
        return (lambda: AlbertSpanLabeler(AlbertEncoder(CONFIG))), arrays, SquadTask()
    if kind == "squad_v2_span_labeler":  # the original SQuAD 2.0 head: its gold start goes to every replica
        from albert_tf.models.albert_squad_v2_span_labeler import AlbertSquadV2SpanLabeler

        inputs = encoder_inputs(rng, (ROWS, SEQ))
        inputs["input_type_ids"][:, 3:] = 1  # [CLS] q [SEP] context (positions 3..SEQ-2) [SEP]
        impossible = rng.integers(0, 2, ROWS).astype(np.int32)
        starts = np.where(impossible, 0, rng.integers(3, SEQ - 2, ROWS)).astype(np.int32)
        ends = np.where(impossible, 0, starts + 1).astype(np.int32)
        arrays = {**inputs, "start_positions": starts, "end_positions": ends, "is_impossible": impossible}
        return (lambda: AlbertSquadV2SpanLabeler(AlbertEncoder(CONFIG), dropout=0.0)), arrays, SquadTask()
    arrays = {**encoder_inputs(rng, (ROWS, 4, SEQ)), "label_ids": rng.integers(0, 4, ROWS).astype(np.int32)}
    return (lambda: AlbertMultipleChoice(AlbertEncoder(CONFIG), 4, dropout=0.0).build_variables()), arrays, RaceTask()


def fine_tune(kind, strategy, directory, accumulation=1):
    """The weights after STEPS steps from the same starting weights and batches."""
    build, arrays, task = task_case(kind)
    keras.utils.set_random_seed(3)
    initial = [w.numpy() for w in build().weights]
    with strategy.scope():
        model = build()
        model.set_weights(initial)
    settings = FinetuningConfig(num_train_steps=STEPS, train_batch_size=BATCH, learning_rate=1e-3,
                                num_warmup_steps=1, save_checkpoints_steps=STEPS, iterations_per_loop=2,
                                gradient_accumulation_steps=accumulation)
    result = finetune(model, arrays, task.example_losses, settings, str(directory), kind, strategy=strategy,
                      variables=task.trainable_variables(model), log=lambda *a, **k: None)
    assert result["status"] == 0 and result["step"] == STEPS and np.isfinite(result["loss"])
    return [w.numpy() for w in model.weights], model


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["classifier", "span_labeler", "squad_v2_span_labeler", "multiple_choice"])
def test_two_replicas_and_accumulation_train_like_one_device(kind, tmp_path, two_cpu_strategy):
    one, _ = fine_tune(kind, tf.distribute.OneDeviceStrategy("/cpu:0"), tmp_path / "one")
    mirrored, _ = fine_tune(kind, two_cpu_strategy, tmp_path / "mirrored")
    accumulated, _ = fine_tune(kind, tf.distribute.OneDeviceStrategy("/cpu:0"), tmp_path / "accumulated",
                               accumulation=2)
    build, _, _ = task_case(kind)
    keras.utils.set_random_seed(3)
    initial = [w.numpy() for w in build().weights]
    moved = max(float(np.max(np.abs(a - b))) for a, b in zip(one, initial))
    assert moved > 1e-4  # trained: the comparison below is not between untouched weights
    for other in (mirrored, accumulated):
        for a, b in zip(one, other):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    # A shuffled order would train elsewhere: the check above can fail.
    _, arrays, _ = task_case(kind)
    assert len(arrays["input_word_ids"]) == ROWS


@pytest.mark.parametrize("kind", ["classifier", "span_labeler"])
def test_evaluation_over_replicas_returns_every_row_in_order(kind, two_cpu_strategy):
    build, arrays, _ = task_case(kind)
    names = ("logits",) if kind == "classifier" else ("start_logits", "end_logits")
    rows = {name: value[:13] for name, value in arrays.items()}  # 13 rows: the last batch of 4 is padded
    keras.utils.set_random_seed(5)
    reference = build()
    weights = [w.numpy() for w in reference.weights]
    expected = reference({name: rows[name] for name in ("input_word_ids", "input_mask", "input_type_ids")})
    with two_cpu_strategy.scope():
        model = build()
        model.set_weights(weights)
        outputs = predict_outputs(model, rows, batch_size=4, names=names)
    for name in names:
        assert outputs[name].shape == tuple(expected[name].shape)
        np.testing.assert_allclose(outputs[name], expected[name].numpy(), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------
# Through the tools: worker processes, precision, XLA, SIGTERM

TOOL_CONFIG = {**CONFIG.to_dict(), "num_hidden_layers": 1}


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """A 1-layer albert_tiny pretrainer with the test vocabulary and its spm.model."""
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from text_fixtures import train_small_spm

    spm = train_small_spm(tmp_path_factory, name="distributed_spm")
    config = AlbertConfig.from_dict({**TOOL_CONFIG, "vocab_size": AlbertTokenizer(str(spm)).vocab_size})
    keras.utils.set_random_seed(1)
    return write_model_dir(AlbertPretrainer(config), str(tmp_path_factory.mktemp("tiny") / "pretrained"),
                           "pretrainer", files={"spm.model": str(spm)})


def environment(**extra):
    env = dict(os.environ, TF_DETERMINISTIC_OPS="1", TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


def run_tool(module, *args):
    result = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                            env=environment(), cwd=REPO_ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def run_two_workers(module, *args):
    """Two MultiWorkerMirroredStrategy workers of `module` on one --output_dir (as on a shared file system)."""
    from multi_worker import run_cluster

    output_dir = next(arg.split("=", 1)[1] for arg in args if arg.startswith("--output_dir="))
    commands = [[sys.executable, "-m", module, *args, "--strategy=multi_worker"]] * 2
    return run_cluster(commands, [f"{output_dir}-worker{index}" for index in range(2)], environment, REPO_ROOT,
                       timeout=600)


def weights_of(directory):
    return [w.numpy() for w in load_model(str(directory))[0].weights]


def encoder_weights(directory):
    from albert_tf.models.model_io import load_encoder

    return [w.numpy() for w in load_encoder(str(directory)).weights]


def largest_change(before, after):
    return max(float(np.max(np.abs(a - b))) for a, b in zip(before, after))


def assert_same_weights(a, b, atol=1e-5):
    for x, y in zip(weights_of(a), weights_of(b)):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=atol)


GLUE_RUN = ["--task_name=mrpc", "--max_seq_length=32", "--train_step=8", "--warmup_step=1", "--train_batch_size=8",
            "--save_checkpoints_steps=4", "--iterations_per_loop=2", "--learning_rate=1e-3", "--dropout=0",
            "--do_train", "--do_eval", "--do_predict"]


@pytest.fixture(scope="module")
def glue_data(tmp_path_factory):
    from test_glue import write_task

    return write_task(tmp_path_factory.mktemp("glue") / "MRPC", "mrpc", random.Random("mrpc"))


@pytest.fixture(scope="module")
def glue_one_device(glue_data, tiny_checkpoint, tmp_path_factory):
    output = tmp_path_factory.mktemp("glue_one") / "out"
    run_tool("albert_tf.run_classifier", f"--data_dir={glue_data}", f"--init_checkpoint={tiny_checkpoint}",
             f"--output_dir={output}", *GLUE_RUN)
    return output


def test_two_workers_fine_tune_glue_like_one_device(glue_data, tiny_checkpoint, glue_one_device, tmp_path):
    output = tmp_path / "out"
    stdouts = run_two_workers("albert_tf.run_classifier", f"--data_dir={glue_data}",
                              f"--init_checkpoint={tiny_checkpoint}", f"--output_dir={output}", *GLUE_RUN)
    assert "GLUE mrpc: fine-tuned for 8 steps" in stdouts[0]
    assert_same_weights(glue_one_device / "checkpoints", output / "checkpoints")
    assert largest_change(encoder_weights(tiny_checkpoint), encoder_weights(glue_one_device / "checkpoints")) > 1e-4
    one = json.loads((glue_one_device / "eval_results.json").read_text())
    assert json.loads((output / "eval_results.json").read_text()) == pytest.approx(one, abs=1e-6)
    # Evaluated and predicted over both workers' replicas: every row, in order.
    assert (output / "MRPC.tsv").read_text() == (glue_one_device / "MRPC.tsv").read_text()
    history = json.loads((output / "checkpoints" / "evaluations.json").read_text())
    assert [h["step"] for h in history] == [4, 8]
    # Only the chief wrote: nothing but the run's own outputs in the shared directory.
    assert sorted(p.name for p in output.iterdir()) == sorted(p.name for p in glue_one_device.iterdir())


def test_bf16_and_xla_fine_tune_close_to_float32(glue_data, tiny_checkpoint, glue_one_device, tmp_path):
    def update(directory):  # what fine-tuning changed in the encoder, as one vector
        start = encoder_weights(tiny_checkpoint)
        return np.concatenate([(a - b).ravel() for a, b in zip(encoder_weights(directory), start)])

    reference = update(glue_one_device / "checkpoints")
    one = json.loads((glue_one_device / "eval_results.json").read_text())
    for name, flags in (("xla", ["--jit_compile"]), ("bf16", ["--mixed_precision=bf16"])):
        output = tmp_path / name
        run_tool("albert_tf.run_classifier", f"--data_dir={glue_data}", f"--init_checkpoint={tiny_checkpoint}",
                 f"--output_dir={output}", *GLUE_RUN, *flags)
        relative = float(np.linalg.norm(update(output / "checkpoints") - reference) / np.linalg.norm(reference))
        # XLA computes the same float32 math. bf16 rounds activations and gradients; AdamW's normalized steps
        # carry that into every weight, so its update differs by a part (measured: 16%; cosine 0.99).
        assert relative < (1e-3 if name == "xla" else 0.35), (name, relative)
        results = json.loads((output / "eval_results.json").read_text())
        assert results == pytest.approx(one, abs=0.1 if name == "bf16" else 1e-6)


SQUAD_RUN = ["--version=1.1", "--max_seq_length=64", "--max_query_length=16", "--doc_stride=16",
             "--train_batch_size=4", "--learning_rate=1e-3", "--num_train_steps=6", "--save_checkpoints_steps=6",
             "--iterations_per_loop=3", "--n_best_size=5", "--predict_batch_size=3", "--do_train", "--do_predict"]


def test_two_workers_fine_tune_squad_like_one_device(tiny_checkpoint, tmp_path):
    from test_squad import V1_QUESTIONS, squad_file

    train_file = squad_file(tmp_path, "train-v1.1.json", "1.1", V1_QUESTIONS)
    common = [f"--train_file={train_file}", f"--predict_file={train_file}", f"--init_checkpoint={tiny_checkpoint}",
              *SQUAD_RUN]
    run_tool("albert_tf.run_squad", f"--output_dir={tmp_path / 'one'}", *common)
    run_two_workers("albert_tf.run_squad", f"--output_dir={tmp_path / 'two'}", *common)
    assert_same_weights(tmp_path / "one" / "checkpoints", tmp_path / "two" / "checkpoints")
    # The n best answers of each question come from all its windows, whichever replica scored them.
    for name in ("predictions.json", "nbest_predictions.json"):
        one = json.loads((tmp_path / "one" / name).read_text(encoding="utf-8"))
        two = json.loads((tmp_path / "two" / name).read_text(encoding="utf-8"))
        assert set(one) == set(two) == {f"q{i}" for i in range(len(V1_QUESTIONS))}
        if name == "predictions.json":
            assert one == two
        else:
            for question in one:
                assert [e["text"] for e in one[question]] == [e["text"] for e in two[question]]
                assert [e["probability"] for e in one[question]] == pytest.approx(
                    [e["probability"] for e in two[question]], abs=1e-4)


def test_two_workers_fine_tune_race_like_one_device(tiny_checkpoint, tmp_path):
    from test_race import write_race

    root = write_race(tmp_path / "RACE", random.Random(1), files=2)
    common = [f"--data_dir={root}", f"--init_checkpoint={tiny_checkpoint}", "--max_seq_length=48",
              "--max_qa_length=16", "--train_step=4", "--warmup_step=1", "--train_batch_size=4",
              "--save_checkpoints_steps=2", "--iterations_per_loop=2", "--eval_batch_size=3", "--dropout=0",
              "--do_train", "--do_eval"]
    run_tool("albert_tf.run_race", f"--output_dir={tmp_path / 'one'}", *common)
    run_two_workers("albert_tf.run_race", f"--output_dir={tmp_path / 'two'}", *common)
    assert_same_weights(tmp_path / "one" / "checkpoints", tmp_path / "two" / "checkpoints")
    one = json.loads((tmp_path / "one" / "eval_results.json").read_text())["dev"]
    two = json.loads((tmp_path / "two" / "eval_results.json").read_text())["dev"]
    assert two == pytest.approx(one, abs=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_or_ctrl_c_saves_exits_143_or_130_and_the_rerun_resumes(glue_data, tiny_checkpoint, tmp_path, stop):
    # With the default --dropout=0.1: the resumed run draws the masks the uninterrupted one drew.
    run = ["--task_name=mrpc", "--max_seq_length=32", "--train_step=400", "--warmup_step=10",
           "--train_batch_size=8", "--save_checkpoints_steps=1000", "--iterations_per_loop=5",
           "--learning_rate=1e-4", "--do_train", f"--data_dir={glue_data}",
           f"--init_checkpoint={tiny_checkpoint}"]
    interrupted = tmp_path / "interrupted"
    process = subprocess.Popen([sys.executable, "-m", "albert_tf.run_classifier", *run,
                                f"--output_dir={interrupted}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=environment(), cwd=REPO_ROOT)
    for line in process.stdout:  # the first progress line: training has started
        if line.startswith("step "):
            break
    time.sleep(0.5)
    process.send_signal(stop)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 128 + stop, stderr[-3000:]
    assert f"stopped by {stop.name} after step" in stdout and "Traceback" not in stderr, stderr[-3000:]
    saved = sorted(int(p.name.split("-")[1].split(".")[0]) for p in (interrupted / "checkpoints").glob("ckpt-*.index"))
    assert len(saved) == 1 and 0 < saved[0] < 400
    resumed = run_tool("albert_tf.run_classifier", *run, f"--output_dir={interrupted}")
    assert f"Resuming from {interrupted / 'checkpoints' / f'ckpt-{saved[0]}'}" in resumed.stdout
    if stop == signal.SIGINT:
        return  # the resume's exactness does not depend on the signal: compared once, after SIGTERM
    whole = tmp_path / "whole"
    run_tool("albert_tf.run_classifier", *run, f"--output_dir={whole}")
    assert_same_weights(whole / "checkpoints", interrupted / "checkpoints", atol=1e-6)


def test_the_keras_classifier_fits_under_a_strategy_scope(two_cpu_strategy):
    """The Python API as docs/pipeline.md shows it: built in the scope, `fit` (compiling itself) splits each
    batch over the replicas and trains the mirrored weights."""
    from albert_tf.networks.albert_encoder import ENCODER_INPUTS

    _, arrays, _ = task_case("classifier")
    keras.utils.set_random_seed(0)  # deterministic ops want a seed for the initializers and the shuffle
    with two_cpu_strategy.scope():
        classifier = AlbertClassifier(AlbertEncoder(CONFIG), num_labels=2, dropout=0.0)
    assert classifier.distribute_strategy is two_cpu_strategy
    before = [w.numpy() for w in classifier.weights]
    history = classifier.fit(x={name: arrays[name] for name in ENCODER_INPUTS}, y=arrays["label_ids"], batch_size=8,
                             epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert max(float(np.max(np.abs(a - w.numpy()))) for a, w in zip(before, classifier.weights)) > 1e-6
    mirrored = classifier.weights[0].value  # Keras's variable around TensorFlow's
    assert isinstance(mirrored, tf.distribute.DistributedValues) and len(mirrored.values) == 2  # a copy per replica
