"""Fine-tuning under the faults of a fault-injection round: a kill while best/ is written, a signal between
evaluation points, links planted at temporary names, many labels, a run inside another run, and what the
tools say. Each fault is made as it happens (a real signal, the on-disk state a kill leaves), on a one-layer
model of a few steps."""

import json
import os
import shutil
import signal

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.models.model_dir_format import read_metadata
from albert_tf.models.model_io import load_model
from albert_tf.training.finetuning import finetune
from albert_tf.training.finetuning_config import FinetuningConfig
from test_glue import tiny_classifier_and_rows


def example_losses(batch, outputs):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(batch["label_ids"], outputs["logits"])


def step_scores(checkpoints, scores, kernels):
    """An `evaluate` whose score is set by the step of the checkpoint just saved (or resumed from), whatever the
    weights, and that keeps the classifier's kernel of each step it evaluates."""
    def evaluate(model):
        step = int(tf.train.latest_checkpoint(str(checkpoints)).rsplit("-", 1)[1])
        kernels.setdefault(step, []).append(model.get_layer("classifier").kernel.numpy().copy())
        return {"accuracy": scores[step]}

    return evaluate


def settings(steps, every):
    return FinetuningConfig(num_train_steps=steps, train_batch_size=4, learning_rate=1e-3, num_warmup_steps=1,
                            save_checkpoints_steps=every, iterations_per_loop=1)


METADATA = {"num_labels": 2, "label_names": ["0", "1"], "is_regression": False}


def run(directory, steps, every, scores, kernels, log=lambda *args, **kwargs: None):
    """A run (or a resumed one) of a fresh one-layer classifier: the same start each time, as a rerun's."""
    model, _, arrays = tiny_classifier_and_rows()
    checkpoints = directory / "checkpoints"
    return finetune(model, arrays, example_losses, settings(steps, every),
                    str(checkpoints), "classifier", metadata=METADATA,
                    evaluate=step_scores(checkpoints, scores, kernels), best_metric="accuracy",
                    best_dir=str(directory / "best"), log=log)


def kept_kernel(best):
    return load_model(str(best))[0].get_layer("classifier").kernel.numpy()


# --- a signal between evaluation points -----------------------------------------------------------------------


def test_a_checkpoint_saved_at_a_signal_is_no_candidate_and_the_resumed_run_ships_the_uninterrupted_model(
        tmp_path):
    """SIGTERM after step 5 of 8 (evaluations at 4 and 8): its checkpoint scores best of all (0.9) but the
    uninterrupted run never has it; the stopped and resumed run must evaluate 4 and 8 alone and keep 8, as the
    uninterrupted one does, bit for bit."""
    scores = {4: 0.5, 5: 0.9, 8: 0.7}
    whole_kernels, kernels = {}, {}
    whole = run(tmp_path / "whole", 8, 4, scores, whole_kernels)
    assert [r["step"] for r in whole["evaluations"]] == [4, 8] and whole["best"]["step"] == 8

    def stop_after_step_5(message, **kwargs):
        if message.startswith("step 5/8"):
            os.kill(os.getpid(), signal.SIGTERM)

    stopped = run(tmp_path / "stopped", 8, 4, scores, kernels, log=stop_after_step_5)
    assert stopped["status"] == 143 and stopped["step"] == 5
    assert (tmp_path / "stopped" / "checkpoints" / "ckpt-5.index").exists()  # saved, not evaluated
    resumed = run(tmp_path / "stopped", 8, 4, scores, kernels)
    assert [r["step"] for r in resumed["evaluations"]] == [4, 8] and sorted(kernels) == [4, 8]
    assert resumed["best"] == whole["best"] == {"step": 8, "accuracy": 0.7}
    assert read_metadata(str(tmp_path / "stopped" / "best"))["best_step"] == 8
    np.testing.assert_array_equal(kept_kernel(tmp_path / "stopped" / "best"), kept_kernel(tmp_path / "whole" / "best"))


# --- a kill while best/ is written ----------------------------------------------------------------------------


class Killed(BaseException):
    """Stands for SIGKILL: raised at one point of the write, with every clean-up on the way out disabled."""


KILL_POINTS = {
    # Before any rename: best/ is still step 2's, the finished staging directory beside it.
    "while staging": lambda source, target: target.endswith(f"{os.sep}old"),
    # Between the swap's two renames: step 2's best/ set aside, step 4's not yet in its place.
    "between the renames": lambda source, target: target.endswith(f"{os.sep}best"),
    # best/ is step 4's, the history does not say so yet.
    "before the history": lambda source, target: target.endswith("evaluations.json"),
}


def kill_while_step_4_is_kept(point, kernels, monkeypatch, files_too=False):
    """Makes the run die (Killed) at `point` of writing step 4's best/, once step 4 is trained (`kernels` holds
    it); after that nothing is cleaned up, as after a real kill: no shutil.rmtree, and with `files_too` no
    os.remove either. Returns the list that records the kill."""
    real_replace, killed = os.replace, []

    def replace(source, target, **kwargs):
        if not killed and kernels.get(4) and KILL_POINTS[point](str(source), str(target)):
            killed.append(point)
            raise Killed
        return real_replace(source, target, **kwargs)

    def no_clean_up_once_killed(real):
        return lambda path, *args, **kwargs: None if killed else real(path, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(shutil, "rmtree", no_clean_up_once_killed(shutil.rmtree))
    if files_too:
        monkeypatch.setattr(os, "remove", no_clean_up_once_killed(os.remove))
    return killed


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_kill_while_best_is_written_leaves_best_as_the_resumed_run_says(point, tmp_path, monkeypatch):
    """Killed while step 4 (the best) replaced step 2 in best/: the resumed run once said 'step 4, kept in best'
    while best/ held step 2, its staging directory left beside it. Whatever the moment, the resumed run's best
    is what best/ holds, and nothing is left beside it."""
    scores, kernels = {2: 0.5, 4: 0.9, 6: 0.1}, {}
    killed = kill_while_step_4_is_kept(point, kernels, monkeypatch, files_too=True)
    with pytest.raises(Killed):
        run(tmp_path, 6, 2, scores, kernels)
    monkeypatch.undo()
    assert killed and sorted(kernels) == [2, 4]
    if point != "before the history":  # something of the write was left beside best/
        assert [name for name in os.listdir(tmp_path) if name.startswith(".best.")]
    resumed = run(tmp_path, 6, 2, scores, kernels)
    assert resumed["best"] == {"step": 4, "accuracy": 0.9}
    assert read_metadata(str(tmp_path / "best"))["best_step"] == 4
    np.testing.assert_array_equal(kept_kernel(tmp_path / "best"), kernels[4][0])
    assert sorted(os.listdir(tmp_path)) == ["best", "checkpoints"]
    assert [r["step"] for r in json.loads((tmp_path / "checkpoints" / "evaluations.json").read_text())] == [2, 4, 6]


# --- links planted at temporary names -------------------------------------------------------------------------


def test_a_link_planted_at_the_evaluation_historys_temporary_name_is_not_written_through(tmp_path):
    users_file = tmp_path / "users_file"
    users_file.write_text("the user's own text")
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    os.symlink(users_file, tmp_path / "run" / "checkpoints" / "evaluations.json.tmp")
    result = run(tmp_path / "run", 2, 2, {2: 0.5}, {})
    assert result["best"]["step"] == 2 and users_file.read_text() == "the user's own text"
    assert json.loads((tmp_path / "run" / "checkpoints" / "evaluations.json").read_text())[0]["step"] == 2


@pytest.mark.parametrize("point", ["while staging", "between the renames"])
def test_a_history_an_earlier_version_wrote_ahead_of_best_is_brought_back_in_line(point, tmp_path, monkeypatch):
    """The order an earlier version wrote in: the history named step 4 the best, then the kill came while best/
    was written. The resumed run evaluates step 4 again instead of saying 'step 4' over step 2's best/."""
    scores, kernels = {2: 0.5, 4: 0.9, 6: 0.1}, {}
    killed = kill_while_step_4_is_kept(point, kernels, monkeypatch)
    with pytest.raises(Killed):
        run(tmp_path, 6, 2, scores, kernels)
    monkeypatch.undo()
    history = tmp_path / "checkpoints" / "evaluations.json"
    history.write_text(json.dumps(json.loads(history.read_text()) + [{"step": 4, "accuracy": 0.9}]))
    resumed = run(tmp_path, 6, 2, scores, kernels)
    assert len(kernels[4]) == 2  # evaluated again
    assert resumed["best"]["step"] == 4 == read_metadata(str(tmp_path / "best"))["best_step"]
    assert sorted(os.listdir(tmp_path)) == ["best", "checkpoints"]


# --- the own-data tool: a fine-tuned classifier evaluated and predicting ----------------------------------------


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """A text classifier fine-tuned for 2 steps (an own-data run, evaluated), and its data files."""
    from albert_tf.tasks.text_classification_task import TextClassificationConfig, TextClassificationTask
    from albert_tf.training.finetuning_tool import run_finetuning
    from test_text_classifier import TINY, ticket_rows, write_csv
    from text_fixtures import tiny_pretrained_checkpoint

    directory = tmp_path_factory.mktemp("classifier")
    train = write_csv(directory / "train.csv", ticket_rows("train", 12))
    test = write_csv(directory / "test.csv", ticket_rows("test", 6))
    config = FinetuningConfig(output_dir=str(directory / "run"), init_checkpoint=tiny_pretrained_checkpoint(
        tmp_path_factory), do_train=True, do_eval=True, num_train_steps=2,
        task=TextClassificationConfig(train_file=train, eval_file=test), **TINY)
    assert run_finetuning(TextClassificationTask(), config) == 0
    return directory


def evaluate_with(classifier, output_dir, **settings):
    """Runs the own-data tool's library path: evaluating (and predicting with) the fine-tuned classifier."""
    from albert_tf.tasks.text_classification_task import TextClassificationConfig, TextClassificationTask
    from albert_tf.training.finetuning_tool import run_finetuning

    task = TextClassificationConfig(eval_file=str(classifier / "test.csv"), **settings)
    config = FinetuningConfig(output_dir=str(output_dir), init_checkpoint=str(classifier / "run" / "best"),
                              do_eval=True, do_predict=bool(task.predict_file), max_seq_length=24, task=task)
    return run_finetuning(TextClassificationTask(), config)


def test_links_planted_at_the_reports_temporary_names_are_not_written_through(classifier, tmp_path):
    """eval_report.txt.tmp, predictions.csv.tmp and the plot's temporary as links to a user's file: the file
    was overwritten. The tool's temporaries have unique names, created exclusively."""
    users_file = tmp_path / "users_file"
    users_file.write_text("the user's own text")
    output = tmp_path / "out"
    output.mkdir()
    for name in ("eval_report.txt.tmp", "predictions.csv.tmp", "confusion_matrix.png.tmp.png"):
        os.symlink(users_file, output / name)
    assert evaluate_with(classifier, output, predict_file=str(classifier / "test.csv")) == 0
    assert users_file.read_text() == "the user's own text"
    assert (output / "predictions.csv").read_text().startswith("id,label,")
    assert "accuracy" in (output / "eval_report.txt").read_text()
    assert (output / "confusion_matrix.png").read_bytes()[:4] == b"\x89PNG"
    assert not [name for name in os.listdir(output) if name.startswith(".") and name != ".lock"]


def test_the_metrics_are_written_before_the_plot_and_the_line_names_the_eval_file(classifier, tmp_path,
                                                                                  monkeypatch, capsys):
    """A plot that died (300 labels: a MemoryError) left no eval_results.json, and every rerun died alike; the
    evaluation's line said 'dev' for an eval file named test."""
    from albert_tf.tasks import text_classification_task

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(text_classification_task, "plot_confusion_matrix", out_of_memory)
    with pytest.raises(MemoryError):
        evaluate_with(classifier, tmp_path / "out")
    results = json.loads((tmp_path / "out" / "eval_results.json").read_text())
    assert results["examples"] == 6 and "accuracy" in results
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith(f"{classifier / 'test.csv'}: accuracy ") for line in lines), lines
    assert not any(line.startswith("dev:") for line in lines)


def test_predictions_on_a_full_disk_leave_no_partial_file_and_the_error_names_it(classifier, tmp_path, monkeypatch):
    """A full disk left a partial predictions.csv.tmp, and the message named no path."""
    import errno

    from albert_tf.file_utils import OutputWriteError
    from albert_tf.tasks import text_classification_task

    def full_disk(path, rows, kind):
        with open(path, "w") as f:
            f.write("id,label\n")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(text_classification_task, "write_rows", full_disk)
    output = tmp_path / "out"
    with pytest.raises(OutputWriteError) as failure:
        evaluate_with(classifier, output, predict_file=str(classifier / "test.csv"))
    assert str(failure.value) == (f"could not write {output / 'predictions.csv'} (No space left on device): free "
                                  "space on the disk, then rerun")
    assert sorted(os.listdir(output)) == [".lock", "run_config.json"]  # no partial predictions, under any name


def test_past_fifty_labels_the_report_lists_the_top_confusions_and_no_matrix_is_drawn(tmp_path, capsys):
    """300 labels died in a MemoryError drawing a 7.5 GB matrix, and every rerun alike."""
    from albert_tf.tasks.classification_metrics import single_label_metrics
    from albert_tf.tasks.text_classification_task import TextClassificationConfig, TextClassificationTask

    labels = tuple(f"label_{i:03d}" for i in range(300))
    rng = np.random.default_rng(0)
    evaluation = single_label_metrics(rng.integers(0, 300, 900), rng.integers(0, 300, 900), labels)
    config = FinetuningConfig(output_dir=str(tmp_path), task=TextClassificationConfig(problem_type="single_label",
                                                                                      labels=labels))
    written = TextClassificationTask().write_evaluation_report(evaluation, config, str(tmp_path))
    assert written == [str(tmp_path / "eval_report.txt")] and sorted(os.listdir(tmp_path)) == ["eval_report.txt"]
    assert "most frequent confusions" in (tmp_path / "eval_report.txt").read_text()
    assert "300 labels: no confusion_matrix.png past 50; eval_report.txt lists the most frequent confusions." in (
        capsys.readouterr().out.splitlines())


def test_the_evaluation_line_of_the_tagger_names_its_eval_file():
    from albert_tf.tasks.glue_task import GlueConfig
    from albert_tf.tasks.tagging_task import TaggingConfig
    from albert_tf.training.finetuning_tool import evaluated_data

    assert evaluated_data(FinetuningConfig(task=TaggingConfig(eval_file="data/test.conll"))) == "data/test.conll"
    assert evaluated_data(FinetuningConfig(task=GlueConfig(task_name="mrpc", data_dir="glue/MRPC"))) == "dev"


# --- a run inside another run ---------------------------------------------------------------------------------


def test_an_output_dir_inside_another_runs_outputs_is_refused_in_one_line(classifier, tmp_path):
    """A run written inside another run's best/ was accepted, then deleted by the outer run's --overwrite."""
    from albert_tf.settings import SettingError

    run_dir = classifier / "run"
    for inside in (run_dir / "best" / "inner", run_dir / "checkpoints" / "a" / "b", run_dir / ".overwrite-staging-x"):
        with pytest.raises(SettingError) as refused:
            evaluate_with(classifier, inside)
        message = str(refused.value.for_flags())
        entry = os.path.relpath(inside, run_dir).split(os.sep)[0]
        assert message == (f"--output_dir={inside} lies inside {run_dir / entry}, which a "
                           f"albert_tf.run_text_classifier run wrote ({run_dir / 'run_config.json'} says so) and "
                           "replaces whole with --overwrite: choose a --output_dir outside it")
        assert not inside.exists()
    from albert_tf.file_utils import refuse_inside_a_run

    refuse_inside_a_run(str(run_dir / "my_own" / "analysis"))  # the user's own directory beside the outputs: fine
    refuse_inside_a_run(str(tmp_path / "elsewhere"))


# --- --overwrite killed while it swaps the new run's outputs in ---------------------------------------------------


def test_an_overwrite_killed_in_the_middle_of_its_swap_is_finished_by_the_next_run(tmp_path, monkeypatch):
    """--overwrite moves the earlier outputs aside and the new ones in, an entry at a time: a kill in between
    left half of each, and the next run deleted the rest of both."""
    from albert_tf.training.run_directory import run_outputs

    output = tmp_path / "out"
    output.mkdir()
    record = {"tool": "albert_tf.run_text_classifier", "outputs": ["best", "checkpoints", "eval_results.json"]}
    for name in ("best", "checkpoints"):
        (output / name).mkdir()
        (output / name / "weights").write_text("earlier")
    (output / "eval_results.json").write_text("earlier")
    (output / "notes.txt").write_text("the user's own file")
    real_replace, real_rmtree = os.replace, shutil.rmtree
    killed = []

    def replace(source, target, **kwargs):
        if str(target) == str(output / "checkpoints") and ".overwrite-staging-" in str(source):
            killed.append(True)
            raise Killed
        return real_replace(source, target, **kwargs)

    with pytest.raises(Killed):
        with run_outputs(str(output), True, record) as staging:
            for name in ("best", "checkpoints"):
                os.mkdir(os.path.join(staging, name))
                with open(os.path.join(staging, name, "weights"), "w") as f:
                    f.write("new")
            with open(os.path.join(staging, "eval_results.json"), "w") as f:
                f.write("new")
            monkeypatch.setattr(os, "replace", replace)
            monkeypatch.setattr(shutil, "rmtree", lambda path, *a, **k: None if killed else real_rmtree(path, *a, **k))
    monkeypatch.undo()
    assert (output / "best" / "weights").read_text() == "new" and not (output / "checkpoints").exists()
    for owner in output.glob(".*/owner"):  # as a dead process left them (another start time)
        owner.write_text(json.dumps({"pid": os.getpid(), "create_time": 0}))
    with run_outputs(str(output), False, record):  # the next run in the directory
        pass
    assert sorted(os.listdir(output)) == ["best", "checkpoints", "eval_results.json", "notes.txt"]
    assert [(output / name / "weights").read_text() for name in ("best", "checkpoints")] == ["new", "new"]
    assert (output / "eval_results.json").read_text() == "new"
