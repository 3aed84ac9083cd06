"""run_pretraining end to end: runs that survive SIGKILL, SIGTERM and Ctrl-C, bad data, NaN, multi-worker, TPU flag."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from albert_tf.models.model_io import load_pretrainer
from pretraining_fixtures import PREDICTIONS, SEQ_LENGTH, assert_trained_alike, make_pretraining_data

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
STEPS = 40


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The data, and albert_tiny with dropout 0.1 (the v1 and BERT presets' rate): resumed runs must draw the
    dropout masks the uninterrupted run drew (the random state travels in the checkpoint)."""
    import dataclasses
    import json

    made = make_pretraining_data(tmp_path_factory)
    config = json.loads(made.config_file.read_text())
    config.update(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    with_dropout = made.config_file.with_name("albert_tiny_dropout.json")
    with_dropout.write_text(json.dumps(config))
    return dataclasses.replace(made, config_file=with_dropout)


def command(data, output_dir, *extra, steps=STEPS):
    return [sys.executable, "-m", "albert_tf.run_pretraining", f"--input_file={data.prefix}",
            f"--albert_config={data.config_file}", f"--output_dir={output_dir}", f"--spm_model_file={data.spm_model}",
            "--train_batch_size=8", f"--max_seq_length={SEQ_LENGTH}", f"--max_predictions_per_seq={PREDICTIONS}",
            f"--num_train_steps={steps}", "--num_warmup_steps=4", "--learning_rate=2e-3", "--iterations_per_loop=2",
            "--save_checkpoints_steps=10", "--shuffle_buffer_size=100", *extra]


def environment(**extra):
    env = dict(os.environ, TF_DETERMINISTIC_OPS="1", TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1", **extra)
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, env=kwargs.pop("env", environment()), cwd=REPO_ROOT,
                          timeout=300, **kwargs)


def fingerprint(stdout):
    lines = [line for line in stdout.splitlines() if line.startswith("Weights fingerprint:")]
    assert lines, stdout
    return lines[-1]


def weights(output_dir):
    return [w.numpy() for w in load_pretrainer(str(output_dir)).weights]


@pytest.fixture(scope="module")
def uninterrupted(data, tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("uninterrupted")
    result = run(command(data, output_dir))
    assert result.returncode == 0, result.stderr
    return output_dir, result.stdout


def test_uninterrupted_run_writes_a_loadable_checkpoint_dir(uninterrupted, data):
    output_dir, stdout = uninterrupted
    assert f"step {STEPS}/{STEPS}" in stdout and "seq/s" in stdout and "ETA" in stdout
    assert (output_dir / "spm.model").read_bytes() == data.spm_model.read_bytes()
    names = {p.name for p in output_dir.iterdir()}
    assert {"ckpt-30.index", "ckpt-40.index", "albert_tf.json", "run_config.json"} <= names
    # run_config.json holds the run's whole config, as resolved (the lengths read from the data).
    recorded = json.loads((output_dir / "run_config.json").read_text())["config"]
    assert recorded["train_batch_size"] == 8 and recorded["num_train_steps"] == STEPS
    assert recorded["max_seq_length"] == SEQ_LENGTH and recorded["strategy"] == "one_device"
    events = list((output_dir / "train").glob("events.out.tfevents.*"))
    assert events, "TensorBoard summaries"
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(output_dir / "train"), size_guidance={"tensors": 0})
    accumulator.Reload()
    tags = set(accumulator.Tags()["tensors"])
    assert {"loss", "masked_lm_accuracy", "sentence_order_accuracy", "learning_rate", "gradient_norm",
            "sequences_per_second"} <= tags
    assert len(accumulator.Tensors("loss")) == STEPS // 2


def wait_for(path, process, timeout=240):
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def kill_then_resume(args, output_dir, saved, final, uninterrupted):
    """SIGKILLs the run of `args` once it has saved `saved` (before `final`), reruns it, and checks that
    the resumed run ends as the uninterrupted run does (assert_trained_alike); returns the rerun's result."""
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(), cwd=REPO_ROOT)
    wait_for(output_dir / saved, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (output_dir / final).exists(), "killed before the end"
    result = run(args)
    assert result.returncode == 0, result.stderr
    assert "Resuming from" in result.stdout
    assert_trained_alike(output_dir, result.stdout, *uninterrupted)
    return result


def test_the_resume_check_tells_a_run_that_trained_differently(data, uninterrupted, tmp_path):
    # The same run with the input shuffled by another buffer: what resuming at another position gives.
    args = command(data, tmp_path)
    args[args.index("--shuffle_buffer_size=100")] = "--shuffle_buffer_size=99"
    result = run(args)
    assert result.returncode == 0, result.stderr
    with pytest.raises(AssertionError, match="losses that differ"):
        assert_trained_alike(tmp_path, result.stdout, *uninterrupted)


@pytest.mark.slow
def test_sigkill_then_restart_ends_with_the_uninterrupted_weights(data, uninterrupted, tmp_path):
    kill_then_resume(command(data, tmp_path), tmp_path, "ckpt-10.index", f"ckpt-{STEPS}.index", uninterrupted)


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_or_ctrl_c_saves_a_checkpoint_and_the_run_resumes_exactly(data, uninterrupted, tmp_path, stop):
    """A preemption notice (SIGTERM, 143) and Ctrl-C (SIGINT, 130) alike: the step saved, one line, no traceback
    (Ctrl-C used to print two, train on for 20 s and save nothing)."""
    args = command(data, tmp_path)
    args[args.index("--save_checkpoints_steps=10")] = "--save_checkpoints_steps=1000"
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(),
                               cwd=REPO_ROOT)
    for line in process.stdout:  # wait until training is under way
        if line.startswith("step "):
            break
    process.send_signal(stop)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + stop, stderr
    assert f"{stop.name}: saved a checkpoint" in stdout and "Traceback" not in stderr, stderr
    saved = [p.name for p in tmp_path.glob("ckpt-*.index")]
    assert saved and f"ckpt-{STEPS}.index" not in saved
    result = run(args)
    assert result.returncode == 0, result.stderr
    assert_trained_alike(tmp_path, result.stdout, *uninterrupted)


@pytest.mark.slow
def test_a_divergence_saves_nothing_names_the_good_checkpoint_and_a_lower_rate_resumes(data, tmp_path):
    def with_rate(rate, steps):
        args = command(data, tmp_path, steps=steps)
        args[args.index("--learning_rate=2e-3")] = f"--learning_rate={rate}"
        return args

    assert run(with_rate("2e-3", 10)).returncode == 0  # ckpt-10: good weights
    good = weights(tmp_path)
    # An exploding rate: the loss stays finite (1e12 is a number), the weights reach millions.
    result = run(with_rate("1e6", STEPS))
    assert result.returncode == 2, result.stdout + result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert "stopped without saving" in error and f"Last good checkpoint: {tmp_path}/ckpt-10;" in error
    assert sorted(int(p.name[5:-6]) for p in tmp_path.glob("ckpt-*.index")) == [10]
    assert all(np.array_equal(a, b) for a, b in zip(weights(tmp_path), good))
    resumed = run(with_rate("1e-3", 20))
    assert resumed.returncode == 0, resumed.stderr
    assert "Resuming from" in resumed.stdout and "ckpt-10 at step 10" in resumed.stdout
    assert all(np.isfinite(w).all() for w in weights(tmp_path))


def test_nan_loss_stops_with_status_2(data, tmp_path):
    args = command(data, tmp_path, "--optimizer=adamw", "--iterations_per_loop=1", "--save_checkpoints_steps=1",
                   steps=10)
    args[args.index("--learning_rate=2e-3")] = "--learning_rate=1e30"
    args[args.index("--num_warmup_steps=4")] = "--num_warmup_steps=0"
    result = run(args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "stopped without saving" in result.stderr and "Traceback" not in result.stderr
    # Step 1's loss is the initial weights' (fine); the weights it left are not, so nothing was saved.
    assert "No good checkpoint yet" in result.stderr and not list(tmp_path.glob("ckpt-*.index"))


def test_a_truncated_tfrecord_is_named(data, tmp_path):
    import shutil

    corrupt_dir = tmp_path / "data"
    corrupt_dir.mkdir()
    for path in data.files():
        shutil.copy(path, corrupt_dir)
    victim = sorted(corrupt_dir.iterdir())[1]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    args = command(data, tmp_path / "out", "--iterations_per_loop=50", steps=200)
    args[args.index(f"--input_file={data.prefix}")] = f"--input_file={corrupt_dir}/*.tfrecord"
    result = run(args)
    assert result.returncode == 1
    assert f"{victim}: corrupt or truncated TFRecord file" in result.stderr


def test_data_that_does_not_fit_the_settings_or_model_is_named(data, tmp_path):
    from albert_tf.data.pretraining_dataset import check_pretraining_files

    files = data.files()
    with pytest.raises(ValueError, match=r"metadata.json: the data has max_seq_length=32, but max_seq_length=64"):
        check_pretraining_files(files, 64, PREDICTIONS, 392)
    with pytest.raises(ValueError, match=r"vocabulary, but the model's vocab_size is 30000"):
        check_pretraining_files(files, SEQ_LENGTH, PREDICTIONS, 30000)
    # Without metadata (for example files of the original TF1 script): shapes from each file's first record.
    import shutil

    shutil.copy(files[0], tmp_path / "plain.tfrecord")
    with pytest.raises(ValueError, match=r"plain.tfrecord: input_ids has length 32, but max_seq_length=128"):
        check_pretraining_files([str(tmp_path / "plain.tfrecord")], 128, PREDICTIONS, 30000)
    with pytest.raises(ValueError, match=r"plain.tfrecord: holds token id \d+, but the model's vocab_size is 50"):
        check_pretraining_files([str(tmp_path / "plain.tfrecord")], SEQ_LENGTH, PREDICTIONS, 50)
    (tmp_path / "text.tfrecord").write_text("not a tfrecord at all\n" * 10)
    with pytest.raises(ValueError, match=r"text.tfrecord: not a readable TFRecord file"):
        check_pretraining_files([str(tmp_path / "text.tfrecord")], SEQ_LENGTH, PREDICTIONS, 392)


def test_warmup_is_the_papers_share_of_the_steps_unless_given():
    from albert_tf.training.pretraining_config import PretrainingConfig

    assert PretrainingConfig().warmup_steps() == 3125  # of the paper's 125k
    assert PretrainingConfig(num_train_steps=50).warmup_steps() == 1  # 2.5%, rounded down
    assert PretrainingConfig(num_train_steps=1000).warmup_steps() == 25
    assert PretrainingConfig(num_train_steps=50, num_warmup_steps=7).warmup_steps() == 7


def test_a_resumed_run_keeps_the_warmup_it_started_with(tmp_path):
    """Without num_warmup_steps, a run resuming from checkpoints keeps the warmup its run_config.json records (a
    run begun with the former default of 3125), instead of a share of a changed step count."""
    import dataclasses

    from albert_tf.training.pretraining_config import PretrainingConfig
    from albert_tf.training.pretraining_run import _with_warmup_steps

    (tmp_path / "run_config.json").write_text(json.dumps({"config": {"num_warmup_steps": 3125}}))
    settings = PretrainingConfig(input_file="data", output_dir=str(tmp_path), num_train_steps=10000)
    assert _with_warmup_steps(settings).num_warmup_steps == 250  # no checkpoint yet: a fresh start
    (tmp_path / "ckpt-40.index").write_bytes(b"")
    assert _with_warmup_steps(settings).num_warmup_steps == 3125
    assert _with_warmup_steps(dataclasses.replace(settings, num_warmup_steps=7)).num_warmup_steps == 7


def test_a_short_run_without_warmup_steps_warms_up_over_the_papers_share(data, tmp_path):
    """--num_train_steps alone (the paper's 3125 warmup steps would exceed it): 2.5% of the steps, said in
    one line and recorded as the run's setting."""
    args = command(data, tmp_path)
    args.remove("--num_warmup_steps=4")
    result = run(args)
    assert result.returncode == 0, result.stderr
    assert (f"Warmup: 1 of the {STEPS} steps, the paper's share (3,125 of 125,000); num_warmup_steps sets "
            "another.") in result.stdout.splitlines()
    assert json.loads((tmp_path / "run_config.json").read_text())["config"]["num_warmup_steps"] == 1


def test_bad_flags_and_changed_runs_fail_clearly(data, uninterrupted, tmp_path):
    result = run(command(data, tmp_path, "--max_seq_length=64"))
    assert result.returncode == 1 and "but --max_seq_length=64" in result.stderr
    # Resuming a directory with another batch size would silently change the run.
    args = command(data, uninterrupted[0], steps=STEPS + 2)
    args[args.index("--train_batch_size=8")] = "--train_batch_size=4"
    result = run(args)
    assert result.returncode == 1 and "holds checkpoints of another run: --train_batch_size=4" in result.stderr
    result = run(command(data, tmp_path, "--tpu=no-such-tpu"))
    assert result.returncode == 1
    assert "--tpu='no-such-tpu': no TPU could be reached" in result.stderr and "Traceback" not in result.stderr


def test_multi_worker_trains_identically_and_only_the_chief_writes(data, tmp_path):
    from multi_worker import run_cluster

    commands = [command(data, tmp_path / f"worker{index}", "--strategy=multi_worker", "--save_checkpoints_steps=4",
                        steps=8) for index in range(2)]
    outputs = run_cluster(commands, [tmp_path / f"worker{index}.log" for index in range(2)], environment, REPO_ROOT,
                          timeout=300)
    assert "2 replica(s)" in outputs[0]
    assert fingerprint(outputs[0]) == fingerprint(outputs[1])
    chief, other = tmp_path / "worker0", tmp_path / "worker1"
    assert (chief / "ckpt-8.index").exists() and list((chief / "train").glob("events.*"))
    assert not list(other.glob("ckpt-*")) and not (other / "train").exists()
