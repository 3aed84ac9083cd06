"""The faults a long pretraining job meets, made real: each one is refused with a one-line error that
names the file and the fix, or recovered from, and nothing is lost or half-written.

Faults are real where they can be: kill -9 of a worker process, SIGTERM, a file-size limit
(RLIMIT_FSIZE) standing in for a full disk, a read-only mount, truncated and bit-flipped files,
two concurrent processes.
"""

import json
import os
import pathlib
import resource
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

from pretraining_fixtures import assert_trained_alike, make_pretraining_data
from test_run_pretraining import command, environment, run
from text_fixtures import train_small_spm, write_corpus

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_pretraining_data(tmp_path_factory)


def one_line_error(result, *fragments):
    """The tool failed with status 1 and a single `tool: error: ...` line holding every fragment."""
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def tool(module, *args, preexec_fn=None, timeout=300):
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=environment(),
                          cwd=REPO_ROOT, timeout=timeout, preexec_fn=preexec_fn)


def file_size_limit(limit_bytes):
    """A preexec_fn: writes past `limit_bytes` fail with EFBIG, as on a full disk (Python ignores SIGXFSZ)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))


def copy_data_set(data, directory):
    directory.mkdir()
    for path in data.directory.glob("train*"):
        shutil.copy(path, directory)
    return str(directory / "train")


# --- 1. vocabulary ---------------------------------------------------------------------------------


def another_vocabulary(data, directory):
    """A SentencePiece model of the same size as the data's, trained on other text."""
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.data.vocabulary import train

    directory.mkdir()
    corpus = write_corpus(directory / "corpus.txt", num_documents=80, seed=9)
    train([str(corpus)], str(directory / "spm"), vocab_size=AlbertTokenizer(str(data.spm_model)).vocab_size,
          num_threads=1)
    return directory / "spm.model"


def test_a_vocabulary_other_than_the_datas_is_refused(data, tmp_path):
    other = another_vocabulary(data, tmp_path / "other")
    assert other.read_bytes() != data.spm_model.read_bytes()
    args = command(data, tmp_path / "run", steps=4)
    args[args.index(f"--spm_model_file={data.spm_model}")] = f"--spm_model_file={other}"
    one_line_error(run(args), "train.metadata.json", "another SentencePiece model", str(other))
    assert not (tmp_path / "run" / "spm.model").exists()

    # Resuming a run with another model than the one it started with is refused too.
    first = run(command(data, tmp_path / "resumed", steps=4))
    assert first.returncode == 0, first.stderr
    (data.directory / "train.metadata.json").rename(data.directory / "saved.json")  # no data-side check now
    try:
        args = command(data, tmp_path / "resumed", steps=8)
        args[args.index(f"--spm_model_file={data.spm_model}")] = f"--spm_model_file={other}"
        one_line_error(run(args), "not the SentencePiece model this run started with")
    finally:
        (data.directory / "saved.json").rename(data.directory / "train.metadata.json")


class _Factory:
    """tmp_path_factory's mktemp over one test's tmp_path."""

    def __init__(self, root):
        self.root = root

    def mktemp(self, name):
        path = self.root / name
        path.mkdir()
        return path


def test_train_sentencepiece_refuses_to_replace_a_model_without_overwrite(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.txt", num_documents=10, seed=2)
    prefix = tmp_path / "spm"
    common = (f"--input={corpus}", f"--output_prefix={prefix}", "--vocab_size=200", "--nohard_vocab_limit")
    assert tool("albert_tf.train_sentencepiece", *common).returncode == 0
    before = (tmp_path / "spm.model").read_bytes()
    one_line_error(tool("albert_tf.train_sentencepiece", *common, "--seed=7"), "spm.model exists", "--overwrite")
    assert (tmp_path / "spm.model").read_bytes() == before
    result = tool("albert_tf.train_sentencepiece", *common, "--overwrite")
    assert result.returncode == 0, result.stderr

    # The hints point the right way: too small a vocabulary asks for a larger one; no text says so.
    one_line_error(tool("albert_tf.train_sentencepiece", f"--input={corpus}", f"--output_prefix={tmp_path}/small",
                        "--vocab_size=5"), "--vocab_size=5 is too small", "larger --vocab_size")
    (tmp_path / "empty.txt").write_text("\n\n")
    one_line_error(tool("albert_tf.train_sentencepiece", f"--input={tmp_path}/empty.txt",
                        f"--output_prefix={tmp_path}/empty", "--vocab_size=100"), "no text in")
    assert not list(tmp_path.glob(".*staging*"))


# --- 2. two runs, one directory --------------------------------------------------------------------


@pytest.mark.slow
def test_a_second_run_on_a_busy_output_dir_is_refused_and_a_dead_run_holds_no_lock(data, tmp_path):
    args = command(data, tmp_path, steps=100000)
    args[args.index("--save_checkpoints_steps=10")] = "--save_checkpoints_steps=100000"
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(),
                             cwd=REPO_ROOT)
    try:
        for line in first.stdout:
            if line.startswith("step "):
                break
        second = run(command(data, tmp_path, steps=4))
        one_line_error(second, str(tmp_path), "is in use by run_pretraining", f"pid {first.pid}")
        assert not list(tmp_path.glob("ckpt-*")), "the second run wrote nothing"
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()
    # The kernel dropped the dead run's lock: the next run proceeds.
    third = run(command(data, tmp_path, steps=4))
    assert third.returncode == 0, third.stderr


# --- 3. the config behind the flag -----------------------------------------------------------------


@pytest.mark.slow
def test_resume_compares_the_resolved_config_not_the_flag(data, tmp_path):
    config_file = tmp_path / "model.json"
    config_file.write_text(data.config_file.read_text())
    args = command(data, tmp_path / "run", steps=4)
    args[args.index(f"--albert_config={data.config_file}")] = f"--albert_config={config_file}"
    assert run(args).returncode == 0
    config = json.loads(config_file.read_text())
    config["num_hidden_layers"] = 12  # every variable keeps its shape: only the config can tell
    config_file.write_text(json.dumps(config))
    args[args.index("--num_train_steps=4")] = "--num_train_steps=8"
    one_line_error(run(args), "holds checkpoints of another run", "num_hidden_layers=12, was 4")
    assert sorted(p.name for p in (tmp_path / "run").glob("ckpt-*.index")) == ["ckpt-4.index"]

    # The same model under another name (the file copied elsewhere) resumes.
    config["num_hidden_layers"] = 4
    copy = tmp_path / "copy.json"
    copy.write_text(json.dumps(config))
    args[args.index(f"--albert_config={config_file}")] = f"--albert_config={copy}"
    result = run(args)
    assert result.returncode == 0 and "Resuming from" in result.stdout, result.stderr
    # A longer schedule is allowed, and said.
    assert "Note: resuming with num_train_steps=8; the checkpoints were made with 4" in result.stdout, result.stdout


# --- 4. incomplete data sets -----------------------------------------------------------------------


def test_an_incomplete_or_truncated_shard_set_is_refused_by_every_reader(data, tmp_path):
    prefix = copy_data_set(data, tmp_path / "missing")
    os.remove(prefix + "-00001-of-00002.tfrecord")
    args = command(data, tmp_path / "run", steps=4)
    args[args.index(f"--input_file={data.prefix}")] = f"--input_file={prefix}"
    for result in (tool("albert_tf.data_stats", prefix), run(args)):
        one_line_error(result, "incomplete data set: 1 of 2 shards present", "train-00001-of-00002.tfrecord is missing")
    assert not (tmp_path / "run").exists()

    prefix = copy_data_set(data, tmp_path / "truncated")
    shard = prefix + "-00000-of-00002.tfrecord"
    with open(shard, "r+b") as f:
        f.truncate(os.path.getsize(shard) // 2)
    one_line_error(tool("albert_tf.data_stats", prefix), shard, "truncated or was replaced")


def test_an_interrupted_replacement_leaves_a_set_readers_refuse(tmp_path, monkeypatch):
    from albert_tf.data.local_runner import create_pretraining_data
    from albert_tf.data import data_set_files
    from albert_tf.data.masking import MaskingConfig
    from albert_tf.data.pretraining_data_job import CreationConfig
    from albert_tf.data.pretraining_dataset import expand_data_files
    from albert_tf.data.pretraining_instances import InstanceConfig

    spm = train_small_spm(_Factory(tmp_path), vocab_size=300)
    corpus = write_corpus(tmp_path / "corpus.txt", num_documents=20, seed=4)
    prefix = str(tmp_path / "out" / "d")

    def config(seed):
        return CreationConfig(instances=InstanceConfig(max_seq_length=32, masking=MaskingConfig(max_predictions_per_seq=5)),
                              num_output_shards=3, seed=seed)

    create_pretraining_data([str(corpus)], prefix, str(spm), config(1), progress=False)
    old = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    assert len(expand_data_files(prefix)) == 3

    # A failed run (here: the corpus cannot be read) changes nothing.
    with pytest.raises(FileNotFoundError):
        create_pretraining_data([str(tmp_path / "gone.txt")], prefix, str(spm), config(2), overwrite=True, progress=False)
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == old

    # "Killed" after the first shard of the new set replaced the old one.
    renames = []
    real_replace = os.replace

    def dying_replace(source, target):
        if str(target).endswith(".tfrecord"):
            renames.append(target)
            if len(renames) == 2:
                raise KeyboardInterrupt("killed")
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", dying_replace)
    with pytest.raises(KeyboardInterrupt):
        create_pretraining_data([str(corpus)], prefix, str(spm), config(2), overwrite=True, progress=False)
    monkeypatch.setattr(os, "replace", real_replace)
    with pytest.raises(data_set_files.IncompleteDataSetError, match="being replaced when its writer stopped"):
        expand_data_files(prefix)
    assert not list((tmp_path / "out").glob(".create_pretraining_data-*"))

    # Rerunning finishes the job.
    create_pretraining_data([str(corpus)], prefix, str(spm), config(2), overwrite=True, progress=False)
    assert len(expand_data_files(prefix)) == 3


# --- 5, 6. dead workers, signals, full disks: no hang, no staging left -----------------------------


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory):
    directory = tmp_path_factory.mktemp("big_corpus")
    return write_corpus(directory / "corpus.txt", num_documents=3000, seed=5), train_small_spm(
        tmp_path_factory, name="big_corpus_spm")


def start_creation(corpus, spm, output, *extra, **popen):
    return subprocess.Popen(
        [sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={corpus}",
         f"--output_file={output}", f"--spm_model_file={spm}", "--max_seq_length=64", "--max_predictions_per_seq=10",
         "--dupe_factor=40", "--num_output_shards=2", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(), cwd=REPO_ROOT, **popen)


def wait_for_workers(process, count, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        children = [c for c in psutil.Process(process.pid).children() if "spawn_main" in " ".join(c.cmdline())]
        if len(children) >= count:
            time.sleep(1.0)  # let them start work
            return children
        time.sleep(0.1)
    raise AssertionError("the workers never started")


def test_a_killed_worker_fails_the_run_instead_of_hanging(big_corpus, tmp_path):
    corpus, spm = big_corpus
    process = start_creation(corpus, spm, tmp_path / "d", "--num_workers=2")
    victim = wait_for_workers(process, 2)[0]
    victim.send_signal(signal.SIGKILL)  # as the OOM killer would
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stdout + stderr
    assert "a worker process died" in stderr and "Traceback" not in stderr
    assert os.listdir(tmp_path) == [], "no staging, no partial output"


def test_sigterm_cleans_staging_and_a_sigkilled_runs_staging_is_removed_next_time(big_corpus, tmp_path):
    corpus, spm = big_corpus
    process = start_creation(corpus, spm, tmp_path / "d", "--num_workers=2")
    wait_for_workers(process, 2)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=120)
    assert process.returncode == 143
    assert os.listdir(tmp_path) == []

    process = start_creation(corpus, spm, tmp_path / "d", "--num_workers=1")
    deadline = time.monotonic() + 120
    while not any((tmp_path.glob(".create_pretraining_data-*/spool-*"))):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    process.send_signal(signal.SIGKILL)
    process.communicate()
    stale = list(tmp_path.glob(".create_pretraining_data-*"))
    assert stale, "SIGKILL leaves the staging directory behind"
    # A glob over the directory ignores it; the next run removes it and says so.
    from albert_tf.data.corpus_reader import expand_input_patterns

    (tmp_path / "notes.txt").write_text("x")
    assert expand_input_patterns(f"{tmp_path}/*") == [str(tmp_path / "notes.txt")]
    small = write_corpus(tmp_path / "small.txt", num_documents=5, seed=6)
    result = tool("albert_tf.create_pretraining_data", f"--input_file={small}", f"--output_file={tmp_path}/d",
                  f"--spm_model_file={spm}", "--max_seq_length=64", "--max_predictions_per_seq=10", "--num_workers=1")
    assert result.returncode == 0, result.stderr
    assert f"Removed {stale[0]}" in result.stdout
    assert not list(tmp_path.glob(".create_pretraining_data-*"))


def test_a_full_disk_fails_data_creation_cleanly(big_corpus, tmp_path):
    corpus, spm = big_corpus
    result = tool("albert_tf.create_pretraining_data", f"--input_file={corpus}", f"--output_file={tmp_path}/d",
                  f"--spm_model_file={spm}", "--max_seq_length=64", "--max_predictions_per_seq=10", "--num_workers=2",
                  "--dupe_factor=5", preexec_fn=file_size_limit(200_000))
    one_line_error(result, "File too large")
    assert os.listdir(tmp_path) == []


# --- 7. messages, not tracebacks; fall back to what is intact -------------------------------------


@pytest.mark.slow
def test_a_full_disk_during_a_checkpoint_save_keeps_the_previous_checkpoint(data, tmp_path):
    assert run(command(data, tmp_path, steps=10)).returncode == 0
    checkpoint_bytes = os.path.getsize(next(tmp_path.glob("ckpt-10.data-*")))
    limited = subprocess.run(command(data, tmp_path, steps=20), capture_output=True, text=True, env=environment(),
                             cwd=REPO_ROOT, timeout=300, preexec_fn=file_size_limit(checkpoint_bytes // 2))
    one_line_error(limited, "could not save the checkpoint of step 20", "ckpt-10) is intact")
    assert not (tmp_path / "ckpt-20.index").exists()
    result = run(command(data, tmp_path, steps=20))
    assert result.returncode == 0 and f"Resuming from {tmp_path}/ckpt-10 at step 10" in result.stdout, result.stderr


@pytest.mark.slow
def test_a_corrupt_latest_checkpoint_falls_back_to_the_previous_one(data, tmp_path):
    from albert_tf.models.model_io import load_pretrainer

    reference = run(command(data, tmp_path / "reference", steps=30))
    assert reference.returncode == 0, reference.stderr
    # The same run stopped after step 20, whose checkpoint then got damaged.
    shutil.copytree(tmp_path / "reference", tmp_path / "run")
    for path in (tmp_path / "run").glob("ckpt-30.*"):
        path.unlink()
    data_file = next((tmp_path / "run").glob("ckpt-20.data-*"))
    content = bytearray(data_file.read_bytes())
    for offset in range(0, len(content), 4096):  # model weights, optimizer slots, the input position
        content[offset] ^= 0xFF  # TF's per-tensor CRC32C catches it when the tensor is read
    data_file.write_bytes(bytes(content))
    (tmp_path / "run" / "checkpoint").write_text("garbage {")  # and a damaged state file

    model_10 = load_pretrainer(str(tmp_path / "run" / "ckpt-10"))
    model = load_pretrainer(str(tmp_path / "run"))  # what export and fine-tuning do with a directory
    for a, b in zip(model.weights, model_10.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())

    export = tool("albert_tf.export", f"--checkpoint={tmp_path / 'run'}", f"--output_dir={tmp_path / 'export'}",
                  "--max_seq_length=16")
    assert export.returncode == 0 and "ckpt-20 is unreadable" in export.stderr, export.stderr

    args = command(data, tmp_path / "run", steps=30)
    result = run(args)
    assert result.returncode == 0, result.stderr
    assert "ckpt-20 is unreadable" in result.stderr and "Resuming from" in result.stdout
    assert f"{tmp_path / 'run'}/ckpt-10 at step 10" in result.stdout
    # Going on from ckpt-10 ends exactly where an uninterrupted run does.
    assert_trained_alike(tmp_path / "run", result.stdout, tmp_path / "reference", reference.stdout)


@pytest.mark.slow
def test_changed_input_files_on_resume_are_refused(data, tmp_path):
    assert run(command(data, tmp_path / "run", steps=4)).returncode == 0
    (tmp_path / "other").mkdir()
    for path in data.directory.glob("train-*.tfrecord"):  # other shards (by name), same shapes
        shutil.copy(path, tmp_path / "other" / path.name.replace("train-", "more-"))
    other = str(tmp_path / "other" / "more")
    args = command(data, tmp_path / "run", steps=8)
    args[args.index(f"--input_file={data.prefix}")] = f"--input_file={other}"
    one_line_error(run(args), "the training files changed", f"--init_checkpoint={tmp_path / 'run'}")
    # The same shards at another path too: the checkpointed input iterator reads the paths it saved.
    args[args.index(f"--input_file={other}")] = f"--input_file={copy_data_set(data, tmp_path / 'moved')}"
    one_line_error(run(args), "the training files changed", "at the same path")
    args[args.index(f"--input_file={tmp_path / 'moved' / 'train'}")] = f"--input_file={data.prefix}"
    result = run(args)
    assert result.returncode == 0 and "Resuming from" in result.stdout, result.stderr


def test_corrupt_inputs_are_named(data, tmp_path):
    prefix = copy_data_set(data, tmp_path / "flipped")
    shard = pathlib.Path(prefix + "-00001-of-00002.tfrecord")
    content = bytearray(shard.read_bytes())
    content[100:110] = bytes(10)  # same size: only the record CRCs can tell
    shard.write_bytes(bytes(content))
    one_line_error(tool("albert_tf.data_stats", prefix), f"{shard}: corrupt or truncated TFRecord file")

    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({"model_type": "albert", "vocab_size": 100, "embedding_size": 8,
                                                "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                                                "intermediate_size": 32}))
    (hf / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\": 1" + bytes(50))
    one_line_error(tool("albert_tf.convert", "--from=huggingface", f"--input={hf}", f"--output={tmp_path}/out"),
                   "model.safetensors: corrupt or truncated safetensors file")


def read_only_mount(path):
    path.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(path)], capture_output=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here ({result.stderr.decode().strip()}); needs root")
    return path


def test_a_read_only_output_is_a_one_line_error(data, tmp_path):
    mount = read_only_mount(tmp_path / "ro")
    try:
        one_line_error(run(command(data, mount / "run", steps=4)), "Read-only file system")
        one_line_error(tool("albert_tf.create_pretraining_data", f"--input_file={data.directory / 'corpus.txt'}",
                            f"--output_file={mount}/d", f"--spm_model_file={data.spm_model}", "--num_workers=1"),
                       "Read-only file system")
    finally:
        subprocess.run(["umount", str(mount)], check=True)


# --- 8. SIGTERM between steps ------------------------------------------------------------------------


@pytest.mark.slow
def test_sigterm_stops_within_a_step_not_at_the_end_of_the_loop(data, tmp_path):
    args = command(data, tmp_path, steps=5000)
    args[args.index("--iterations_per_loop=2")] = "--iterations_per_loop=5000"
    args[args.index("--save_checkpoints_steps=10")] = "--save_checkpoints_steps=5000"
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(),
                               cwd=REPO_ROOT)
    for line in process.stdout:
        if line.startswith("Training from step"):
            break
    # Inside the 5000-step loop (about 30 steps/s) once tracing is done: wait for 25 s of the run's own
    # CPU time rather than of wall time, so a machine busy with other work does not signal it too early.
    watched = psutil.Process(process.pid)
    deadline = time.monotonic() + 600
    while sum(watched.cpu_times()[:2]) < 25 and time.monotonic() < deadline:
        time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    assert time.monotonic() - sent < 30, "a preemption notice gives about 30 s"
    saved = sorted(int(p.name[5:-6]) for p in tmp_path.glob("ckpt-*.index"))
    assert len(saved) == 1 and 0 < saved[0] < 5000, saved
    assert f"SIGTERM: saved a checkpoint at step {saved[0]}" in stdout
    args[args.index("--num_train_steps=5000")] = f"--num_train_steps={saved[0] + 2}"
    result = run(args)
    assert result.returncode == 0 and f"at step {saved[0]}" in result.stdout, result.stderr


# --- 9. Ctrl-C (SIGINT) as SIGTERM ------------------------------------------------------------------


class _StopVariable:
    """What the handler sets: the trainer's stop_requested (a tf.Variable) in a real run."""

    def __init__(self):
        self.value = False

    def assign(self, value):
        self.value = value


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_the_preemption_flag_takes_sigterm_and_ctrl_c_while_the_loop_runs_only(stop):
    from albert_tf.training.training_loop import PreemptionFlag

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    variable = _StopVariable()
    with PreemptionFlag(variable) as preemption:
        assert not preemption.raised and preemption.exit_code == 0
        os.kill(os.getpid(), stop)
        assert preemption.raised and variable.value
        assert preemption.signal_name == stop.name and preemption.exit_code == 128 + stop
    # Afterwards Ctrl-C interrupts as before (a final evaluation, a notebook's next cell).
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_second_ctrl_c_ends_the_process_at_once(monkeypatch, capfd):
    from albert_tf.training.training_loop import PreemptionFlag

    class Exited(Exception):
        pass

    def exit_now(status):
        raise Exited(status)

    monkeypatch.setattr(os, "_exit", exit_now)
    with PreemptionFlag() as preemption:
        os.kill(os.getpid(), signal.SIGINT)
        assert preemption.signal_name == "SIGINT"
        with pytest.raises(Exited, match="130"):
            os.kill(os.getpid(), signal.SIGINT)
    assert "SIGINT again: stopped at once, without saving" in capfd.readouterr().err


def test_ctrl_c_stops_data_creation_with_one_line_and_no_staging(big_corpus, tmp_path):
    """Ctrl-C in a terminal signals the whole process group: the tool and its worker processes."""
    corpus, spm = big_corpus
    # Far more work than the wait below takes, even on a loaded machine: the signal must land mid-run, not in
    # the last moments (where a finishing run could exit 0).
    # A terminal's shell starts the tool with Ctrl-C's default action; this test process may have inherited it
    # ignored (a process that starts with SIGINT ignored keeps ignoring it, as background jobs of a script do).
    process = start_creation(corpus, spm, tmp_path / "d", "--num_workers=2", "--dupe_factor=1000",
                             start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_for_workers(process, 2)
    deadline = time.monotonic() + 120
    # Both initialized (their spool files open): a worker still starting Python hears Ctrl-C itself.
    while len({path.name.split("-")[2] for path in tmp_path.glob(".create_pretraining_data-*/spool-*")}) < 2:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stdout + stderr
    assert stderr.strip() == "albert_tf.create_pretraining_data: interrupted (Ctrl-C)", stderr
    assert os.listdir(tmp_path) == [], "no staging, no partial output"


# --- 10. what a killed export or conversion leaves ----------------------------------------------------


def test_a_killed_writers_staging_directory_is_removed_by_the_next_run(tmp_path):
    from albert_tf.file_utils import MANIFEST_FILE, staged_directory

    killed = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / ".export.staging-killed"
    (stale / "encoder").mkdir(parents=True)
    (stale / "owner").write_text(json.dumps({"pid": int(killed.stdout), "create_time": 0.0}))
    with staged_directory(str(tmp_path / "export")) as staging:
        (pathlib.Path(staging) / "albert_tf.json").write_text("{}")
    assert sorted(os.listdir(tmp_path)) == ["export"]
    assert sorted(os.listdir(tmp_path / "export")) == [MANIFEST_FILE, "albert_tf.json"]
    assert "owner" not in json.loads((tmp_path / "export" / MANIFEST_FILE).read_text())["entries"]
