"""run_pretraining on a documents data set: fresh instances every epoch, held-out evaluation while training
with the learning phase, exact resume, and a time budget that fixes the schedule."""

import json
import os
import re
import shutil
import sys

import psutil
import pytest

from albert_tf.settings import SettingError
from albert_tf.training.learning_phase import (
    FREQUENT_PIECE,
    LEARNING,
    MEMORIZING,
    TREND_EVALUATIONS,
    learning_phase,
)
from albert_tf.training.train_budget import plan_budget
from pretraining_fixtures import PREDICTIONS, SEQ_LENGTH, assert_trained_alike, make_pretraining_data
from multi_worker import run_cluster
from test_run_pretraining import REPO_ROOT, environment, fingerprint, kill_then_resume, run

STEPS = 40
EVAL_EVERY = 10


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_pretraining_data(tmp_path_factory, output_format="documents", heldout_every=5)


def command(data, output_dir, *extra, steps=STEPS):
    return [sys.executable, "-m", "albert_tf.run_pretraining", f"--input_file={data.prefix}",
            f"--eval_input_file={data.prefix}-heldout", f"--eval_every_steps={EVAL_EVERY}", "--eval_batch_size=8",
            "--max_eval_steps=3", f"--albert_config={data.config_file}", f"--output_dir={output_dir}",
            f"--spm_model_file={data.spm_model}", "--train_batch_size=8", f"--max_seq_length={SEQ_LENGTH}",
            f"--max_predictions_per_seq={PREDICTIONS}", f"--num_train_steps={steps}", "--num_warmup_steps=4",
            "--learning_rate=2e-3", "--iterations_per_loop=3", "--save_checkpoints_steps=10",
            "--shuffle_buffer_size=50", *extra]


@pytest.fixture(scope="module")
def uninterrupted(data, tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("uninterrupted")
    result = run(command(data, output_dir))
    assert result.returncode == 0, result.stderr
    return output_dir, result.stdout


def history(output_dir):
    return [json.loads(line) for line in (output_dir / "eval_history.jsonl").read_text().splitlines()]


def assert_alike(mine, theirs, path="history"):
    """Equal JSON values, floats to a relative 1e-5 (a resumed run's figures may differ from an uninterrupted
    run's in the last bits: pretraining_fixtures.assert_trained_alike)."""
    if isinstance(theirs, float):
        assert abs(mine - theirs) <= 1e-5 * abs(theirs) + 1e-12, (path, mine, theirs)
    elif isinstance(theirs, dict):
        assert mine.keys() == theirs.keys(), (path, sorted(mine), sorted(theirs))
        for key in theirs:
            assert_alike(mine[key], theirs[key], f"{path}.{key}")
    elif isinstance(theirs, list):
        assert len(mine) == len(theirs), (path, mine, theirs)
        for index, (a, b) in enumerate(zip(mine, theirs)):
            assert_alike(a, b, f"{path}[{index}]")
    else:
        assert mine == theirs, (path, mine, theirs)


def test_held_out_figures_and_the_phase_come_during_training(uninterrupted):
    output_dir, stdout = uninterrupted
    records = history(output_dir)
    assert [record["step"] for record in records] == [10, 20, 30, 40]
    for record in records:
        assert 0 <= record["heldout"]["masked_lm_accuracy_at_mask"] <= 1
        assert record["training"]["sentence_order_accuracy"] >= 0
        assert record["phase"] in (FREQUENT_PIECE, LEARNING, MEMORIZING) and record["phase_reason"]
        assert 0 < record["frequent_piece_level"] < 1
    assert stdout.count("eval step ") == 4 and "frequent-piece level (MLM accuracy" in stdout
    # Progress lines after the first evaluation name the phase.
    after_first_eval = stdout.split("eval step 10", 1)[1].splitlines()[1:]
    progress = [line for line in after_first_eval if line.startswith("step ")]
    assert progress and all("  phase: " in line for line in progress), stdout
    assert list((output_dir / "eval").glob("events.out.tfevents.*"))
    run_config = json.loads((output_dir / "run_config.json").read_text())
    assert run_config["input_files"] and "train_budget" not in run_config


@pytest.mark.slow
def test_sigkill_then_restart_ends_with_the_uninterrupted_weights_and_one_history(data, uninterrupted, tmp_path):
    kill_then_resume(command(data, tmp_path), tmp_path, "ckpt-20.index", f"ckpt-{STEPS}.index", uninterrupted)
    # Steps redone after the restart replace their history lines instead of adding to them.
    assert [record["step"] for record in history(tmp_path)] == [10, 20, 30, 40]
    expected = [record["heldout"] for record in history(uninterrupted[0])]
    assert_alike([record["heldout"] for record in history(tmp_path)], expected)


def test_a_run_resumed_from_an_earlier_checkpoint_rewrites_the_history_of_the_steps_it_redoes(data, uninterrupted,
                                                                                              tmp_path):
    import shutil

    output_dir = tmp_path / "run"
    shutil.copytree(uninterrupted[0], output_dir)
    for path in list(output_dir.glob("ckpt-30.*")) + list(output_dir.glob("ckpt-40.*")):
        path.unlink()
    result = run(command(data, output_dir))
    assert result.returncode == 0, result.stderr
    assert "Resuming from" in result.stdout and "ckpt-20" in result.stdout
    def without_times(records):
        return [{key: value for key, value in record.items() if key != "elapsed_seconds"} for record in records]

    assert [record["step"] for record in history(output_dir)] == [10, 20, 30, 40]
    assert_alike(without_times(history(output_dir)), without_times(history(uninterrupted[0])))
    # The run's clock continues from ckpt-20's reading: the redone steps' times come after it, not from 0.
    clock = json.loads((uninterrupted[0] / "training_time.json").read_text())
    assert set(clock) == {"10", "20", "30", "40"} and 0 < clock["10"] < clock["20"] < clock["40"]
    redone = {record["step"]: record["elapsed_seconds"] for record in history(output_dir)}
    assert clock["20"] < redone[30] < redone[40]
    assert json.loads((output_dir / "training_time.json").read_text())["40"] > clock["20"]


def two_workers(data, tmp_path, *extra, steps):
    """Runs two MultiWorkerMirroredStrategy workers; returns their stdouts after checking they succeeded."""
    commands = [command(data, tmp_path / f"worker{index}", "--strategy=multi_worker", *extra, steps=steps)
                for index in range(2)]
    logs = [tmp_path / f"worker{index}.log" for index in range(2)]
    return run_cluster(commands, logs, environment, REPO_ROOT, timeout=600)  # 2 processes on 2 cores


def test_two_workers_read_their_own_documents_and_train_identically(data, tmp_path):
    chief, other = two_workers(data, tmp_path, steps=10)
    assert "2 replica(s)" in chief and "eval step 10" in chief
    assert fingerprint(chief) == fingerprint(other)
    assert [record["step"] for record in history(tmp_path / "worker0")] == [10]
    assert not (tmp_path / "worker1" / "eval_history.jsonl").exists()


@pytest.mark.slow
def test_two_workers_plan_the_same_budget(data, tmp_path):
    chief, other = two_workers(data, tmp_path, "--train_budget_hours=0.01", steps=100000)
    plans = [line for line in (chief + other).splitlines() if line.startswith("Time budget")]
    assert len(plans) == 2 and plans[0] == plans[1], plans
    assert fingerprint(chief) == fingerprint(other)


@pytest.mark.slow
def test_a_time_budget_fixes_the_step_count_records_it_and_a_resumed_run_keeps_it(data, tmp_path):
    # 43 seconds: the measuring (a compiling first loop, 20 steps, one evaluation) leaves most of it to plan.
    args = command(data, tmp_path, "--train_budget_hours=0.012", steps=100000)
    result = run(args)
    assert result.returncode == 0, result.stderr
    plan = json.loads((tmp_path / "run_config.json").read_text())["train_budget"]
    assert "Time budget 0.012 h" in result.stdout and plan["step_seconds"] > 0 and plan["eval_seconds"] > 0
    assert 20 <= plan["planned_at_step"] < plan["num_train_steps"] < 100000
    final = plan["num_train_steps"]
    assert (tmp_path / f"ckpt-{final}.index").exists()
    last = [line for line in result.stdout.splitlines() if line.startswith("step ")][-1]
    assert last.startswith(f"step {final}/{final} ")
    # The schedule decays to 0 at the planned step (the provisional one ended at step 100,000).
    assert float(re.search(r"  lr ([-\d.e]+)  ", last).group(1)) < 2e-3 * 3 / final
    again = run(args)
    assert again.returncode == 0 and f"Already trained for {final} steps" in again.stdout
    changed = run(command(data, tmp_path, "--train_budget_hours=5", steps=100000))
    assert changed.returncode != 0 and "--train_budget_hours=5" in changed.stderr


def test_a_resumed_run_keeps_its_document_mixing_and_a_run_from_before_the_setting_read_one_at_a_time(
        data, uninterrupted, tmp_path):
    """The mixing shapes the checkpointed input position: a resumed run must keep it."""
    copy = tmp_path / "run"
    shutil.copytree(uninterrupted[0], copy)
    changed = run(command(data, copy, "--input_mixed_documents=1"))
    assert changed.returncode == 1
    assert "--input_mixed_documents=1 (the checkpoints were made with 16)" in changed.stderr
    record = json.loads((copy / "run_config.json").read_text())
    del record["input_mixed_documents"]  # as a run_config.json written before the setting existed
    (copy / "run_config.json").write_text(json.dumps(record))
    older = run(command(data, copy))
    assert older.returncode == 1 and "--input_mixed_documents=16 (the checkpoints were made with 1)" in older.stderr


def test_budget_plan_counts_evaluations_and_refuses_a_budget_shorter_than_warmup():
    plan = plan_budget(1.0, elapsed_seconds=600, step=100, step_seconds=0.5, eval_seconds=30, eval_every_steps=300,
                       max_steps=10**6, num_warmup_steps=50)
    # 3000 s left at 0.5 s + 30 s / 300 = 0.6 s per step.
    assert plan.num_train_steps == 100 + 5000
    assert plan_budget(1.0, 600, 100, 0.5, 0, 0, max_steps=2000, num_warmup_steps=50).num_train_steps == 2000
    with pytest.raises(SettingError, match="^train_budget_hours=1 allows .* fewer than num_warmup_steps=9000") as info:
        plan_budget(1.0, 600, 100, 0.5, 0, 0, max_steps=10**6, num_warmup_steps=9000)
    assert "--train_budget_hours=1 allows" in str(info.value.for_flags())


def metrics(at_mask=0.3, sop=0.7, mlm_loss=4.0):
    return {"masked_lm_accuracy_at_mask": at_mask, "sentence_order_accuracy": sop, "masked_lm_loss": mlm_loss}


def test_the_phase_rule():
    assert learning_phase(metrics(at_mask=0.06), metrics(), 0.05).name == FREQUENT_PIECE
    assert learning_phase(metrics(at_mask=0.2), metrics(), 0.05).name == LEARNING
    assert learning_phase(metrics(at_mask=0.2), None, 0.05, [metrics()]).name == LEARNING
    # Training pulling away while the held-out loss no longer falls: memorizing.
    stalled = [metrics(at_mask=0.2, sop=0.6)]
    memorizing = learning_phase(metrics(at_mask=0.2, sop=0.6), metrics(sop=0.82), 0.05, stalled)
    assert memorizing.name == MEMORIZING and "0.820" in memorizing.reason
    assert learning_phase(metrics(mlm_loss=5.0), metrics(mlm_loss=4.0), 0.05, [metrics(mlm_loss=5.0)]).name == MEMORIZING
    # The same gaps while the held-out loss still falls, or at the first evaluation (no trend yet): learning.
    assert learning_phase(metrics(mlm_loss=5.0), metrics(mlm_loss=4.0), 0.05, [metrics(mlm_loss=5.1)]).name == LEARNING
    assert learning_phase(metrics(sop=0.6), metrics(sop=0.82), 0.05).name == LEARNING


def test_the_phase_reads_the_held_out_trend_over_the_last_evaluations_and_holds_memorizing():
    """Late in a run the held-out loss falls by about the threshold per evaluation, with noise as large: the
    trend is read over TREND_EVALUATIONS evaluations, and a memorizing run must beat twice the threshold to be
    called learning again, so that the phase does not change at every evaluation."""
    def phase(losses, previous=None):
        earlier = [metrics(sop=0.6, mlm_loss=loss) for loss in losses[:-1]]
        return learning_phase(metrics(sop=0.6, mlm_loss=losses[-1]), metrics(sop=0.82), 0.05, earlier, previous).name

    assert TREND_EVALUATIONS == 4
    noisy_last = [4.048, 4.036, 4.024, 4.002, 4.000]  # 0.012 per evaluation over four, 0.002 over the last
    assert phase(noisy_last) == LEARNING
    assert phase(noisy_last, previous=MEMORIZING) == MEMORIZING  # 0.012 < twice 0.01
    assert phase([4.1, 4.075, 4.05, 4.025, 4.0], previous=MEMORIZING) == LEARNING  # 0.025 per evaluation
    # Only the last four evaluations count: a steep start long ago does not hide a stall now.
    assert phase([4.2, 4.1, 4.004, 4.003, 4.002, 4.001, 4.0]) == MEMORIZING


def test_documents_need_the_vocabulary_and_evaluation_needs_instances(data, tmp_path):
    args = command(data, tmp_path / "a")
    without_spm = [arg for arg in args if not arg.startswith("--spm_model_file")]
    result = run(without_spm)
    assert result.returncode == 1 and "pass --spm_model_file" in result.stderr
    documents_as_eval = [arg if not arg.startswith("--eval_input_file") else f"--eval_input_file={data.prefix}"
                         for arg in args]
    result = run(documents_as_eval)
    assert result.returncode == 1 and "holds tokenized documents" in result.stderr


def test_builder_processes_train_the_weights_threads_do_and_leave_no_process_behind(data, uninterrupted, tmp_path):
    result = run(command(data, tmp_path, "--input_processes=2"))
    assert result.returncode == 0, result.stderr
    assert "document file(s), in 2 builder processes." in result.stdout
    assert "in 2 input threads." in uninterrupted[1]
    assert_trained_alike(tmp_path, result.stdout, *uninterrupted)  # the same batches as threads make
    # Builder processes of this test session's other tests (pytest-xdist runs two files at once) have a live
    # parent in the session; one the finished run left behind has been orphaned.
    session = psutil.Process(os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid())
    session_pids = {session.pid} | {child.pid for child in session.children(recursive=True)}
    lingering = [process.info for process in psutil.process_iter(["pid", "ppid", "cmdline"])
                 if "albert_tf.data.builder_processes" in " ".join(process.info["cmdline"] or [])
                 and process.info["ppid"] not in session_pids]
    assert lingering == []
    negative = run(command(data, tmp_path / "b", "--input_processes=-1"))
    assert negative.returncode == 1 and "--input_processes must be >= 0, got -1" in negative.stderr
