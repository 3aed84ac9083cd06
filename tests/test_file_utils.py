"""All-or-nothing outputs: nothing half-written, and the usual permissions once in place."""

import json
import os
import stat

import pytest

from albert_tf.file_utils import MANIFEST_FILE, staged_directory, write_json_atomically


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_json_written_atomically_with_umask_permissions(tmp_path, umask_022):
    path = tmp_path / "nested" / "meta.json"
    write_json_atomically(str(path), {"b": 1, "a": [1, 2]})
    assert json.loads(path.read_text()) == {"a": [1, 2], "b": 1}
    # Temp files are private (0600); the final file must be readable like any other output.
    assert mode(path) == 0o644
    assert sorted(os.listdir(path.parent)) == ["meta.json"]


def test_json_write_failure_keeps_previous_file(tmp_path):
    path = tmp_path / "meta.json"
    write_json_atomically(str(path), {"version": 1})
    with pytest.raises(TypeError):
        write_json_atomically(str(path), {"version": object()})
    assert json.loads(path.read_text()) == {"version": 1}
    assert sorted(os.listdir(tmp_path)) == ["meta.json"]


def test_staged_directory_has_umask_permissions(tmp_path, umask_022):
    target = tmp_path / "export"
    with staged_directory(str(target)) as staging:
        with open(os.path.join(staging, "weights"), "w") as f:
            f.write("x")
        assert not target.exists()
    # mkdtemp makes 0700 directories; a SavedModel served by another user must stay readable.
    assert mode(target) == 0o755
    assert (target / "weights").read_text() == "x"


def write_output(target, **files):
    with staged_directory(str(target), overwrite=True) as staging:
        for name, text in files.items():
            with open(os.path.join(staging, name), "w") as f:
                f.write(text)


def test_staged_directory_failure_leaves_target_untouched(tmp_path):
    target = tmp_path / "export"
    write_output(target, old="kept")
    with pytest.raises(RuntimeError):
        with staged_directory(str(target), overwrite=True) as staging:
            open(os.path.join(staging, "new"), "w").close()
            raise RuntimeError("interrupted")
    assert sorted(os.listdir(tmp_path)) == ["export"]
    assert sorted(os.listdir(target)) == [MANIFEST_FILE, "old"]


def test_overwrite_replaces_only_an_earlier_output_that_holds_nothing_else(tmp_path):
    target = tmp_path / "export"
    write_output(target, weights="1", config="a")
    write_output(target, weights="2")  # an earlier output of its own: replaced whole
    assert sorted(os.listdir(target)) == [MANIFEST_FILE, "weights"] and (target / "weights").read_text() == "2"
    (target / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"holds files albert_tf did not write there \(notes.txt\)"):
        write_output(target, weights="3")
    assert (target / "notes.txt").read_text() == "mine" and (target / "weights").read_text() == "2"
    hand_made = tmp_path / "hand_made"
    hand_made.mkdir()
    (hand_made / "model.bin").write_text("x")
    with pytest.raises(FileExistsError, match="was not written by albert_tf"):
        write_output(hand_made, weights="1")
    with pytest.raises(FileExistsError, match="not empty; choose another path or pass overwrite$") as refused:
        with staged_directory(str(target)):
            pass
    assert str(refused.value.for_flags()).endswith("choose another path or pass --overwrite")  # as a tool says it
    assert (hand_made / "model.bin").read_text() == "x"
    assert sorted(os.listdir(tmp_path)) == ["export", "hand_made"]  # no staging left behind


def test_a_file_arriving_while_the_output_is_made_stops_the_swap(tmp_path):
    target = tmp_path / "export"
    write_output(target, weights="1")
    with pytest.raises(FileExistsError, match=r"did not write there \(late.txt\)"):
        with staged_directory(str(target), overwrite=True) as staging:
            open(os.path.join(staging, "weights"), "w").close()
            (target / "late.txt").write_text("arrived meanwhile")
    assert (target / "late.txt").exists() and (target / "weights").read_text() == "1"


def test_private_files_get_the_umask_modes(tmp_path, umask_022):
    import tempfile

    target = tmp_path / "hf"
    with staged_directory(str(target)) as staging:
        handle, path = tempfile.mkstemp(dir=staging)  # 0600, as some writers create their files
        os.close(handle)
        os.rename(path, os.path.join(staging, "model.safetensors"))
    assert mode(target / "model.safetensors") == 0o644


def test_a_run_whose_output_directory_is_deleted_or_replaced_stops_at_its_next_checkpoint(tmp_path):
    """The output directory deleted mid-run once ended with exit 0 and a directory no tool could load (the
    checkpoint manager made its subdirectory again): the next save stops the run instead, naming the directory."""
    import shutil

    import tensorflow as tf

    from albert_tf.file_utils import DirectoryVanishedError, check_held_directories, exclusive_directory_lock
    from albert_tf.training.training_loop import save_checkpoint

    output = tmp_path / "run"
    step = tf.Variable(0)
    with exclusive_directory_lock(str(output), "test"):
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(output / "checkpoints"), 3)
        save_checkpoint(manager, 1)
        shutil.rmtree(output)
        with pytest.raises(DirectoryVanishedError, match=f"{output} was deleted or replaced while this run"):
            save_checkpoint(manager, 2)
        assert not output.exists()
        # Replaced by another directory of the same name: not the one this run locked either.
        output.mkdir()
        (output / ".lock").write_text("someone else")
        with pytest.raises(DirectoryVanishedError):
            check_held_directories()
    check_held_directories()  # the lock released, nothing is held any more


# --- temporaries: created exclusively, never through a link, gone after a failure ------------------------------


def test_a_link_planted_at_the_fixed_temporary_name_is_not_written_through(tmp_path, umask_022):
    """Writers once staged into PATH.tmp: a link planted there had the write overwrite the file it names."""
    from albert_tf.file_utils import atomic_output, atomic_output_path

    users_file = tmp_path / "users_file.txt"
    users_file.write_text("the user's own text")
    outputs = tmp_path / "out"
    outputs.mkdir()
    for name in ("report.txt", "rows.csv", "history.json"):
        os.symlink(users_file, outputs / f"{name}.tmp")
    with atomic_output(str(outputs / "report.txt")) as f:
        f.write("report")
    with atomic_output_path(str(outputs / "rows.csv")) as temporary:  # a writer that takes a file name
        with open(temporary, "w") as f:
            f.write("rows")
    write_json_atomically(str(outputs / "history.json"), [1])
    assert users_file.read_text() == "the user's own text"
    assert (outputs / "report.txt").read_text() == "report" and (outputs / "rows.csv").read_text() == "rows"
    assert json.loads((outputs / "history.json").read_text()) == [1]
    assert mode(outputs / "report.txt") == 0o644
    # A link at the output's own name is replaced, its target left alone.
    os.symlink(users_file, outputs / "linked.txt")
    with atomic_output(str(outputs / "linked.txt")) as f:
        f.write("new")
    assert not (outputs / "linked.txt").is_symlink() and users_file.read_text() == "the user's own text"


def test_a_full_disk_leaves_no_temporary_and_the_error_names_the_file(tmp_path, monkeypatch):
    import errno

    from albert_tf.file_utils import OutputWriteError, atomic_output, atomic_output_path

    path = tmp_path / "predictions.csv"
    path.write_text("the earlier predictions")

    def full_disk(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OutputWriteError) as failure:
        with atomic_output(str(path)) as f:
            f.write("id,label\n")
            f.flush()
            monkeypatch.setattr(f, "write", full_disk)
            f.write("1,bug\n")
    message = str(failure.value)
    assert message == (f"could not write {path} (No space left on device): free space on the disk, then rerun")
    assert failure.value.errno == errno.ENOSPC and "\n" not in message
    assert sorted(os.listdir(tmp_path)) == ["predictions.csv"] and path.read_text() == "the earlier predictions"
    # A writer given a file name, and JSON, alike.
    with pytest.raises(OutputWriteError, match=f"could not write {path} "):
        with atomic_output_path(str(path)) as temporary:
            with open(temporary, "w") as f:
                f.write("id,label\n")
            full_disk()
    monkeypatch.setattr(json, "dumps", lambda *a, **k: full_disk())
    with pytest.raises(OutputWriteError, match=f"could not write {tmp_path / 'meta.json'} "):
        with atomic_output(str(tmp_path / "meta.json")) as f:
            f.write(json.dumps({}))
    assert sorted(os.listdir(tmp_path)) == ["predictions.csv"]
    # Any other error passes as it is; the temporary goes all the same.
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(str(path)) as f:
            raise KeyboardInterrupt
    assert sorted(os.listdir(tmp_path)) == ["predictions.csv"]


# --- a swap that a kill cut between its renames ------------------------------------------------------------------


class Killed(BaseException):
    """Stands for SIGKILL: raised at one point, with every clean-up on the way out disabled."""


def cut_between_the_renames(target, monkeypatch, weights):
    """Replaces `target` through staged_directory, killed after the earlier output was set aside and before the
    new one took its place; what is left looks as a dead process left it."""
    import shutil

    real_replace, real_rmtree = os.replace, shutil.rmtree
    killed = []

    def replace(source, destination, **kwargs):
        if str(destination) == str(target):
            killed.append(True)
            raise Killed
        return real_replace(source, destination, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(shutil, "rmtree", lambda path, *a, **k: None if killed else real_rmtree(path, *a, **k))
    with pytest.raises(Killed):
        write_output(target, weights=weights)
    monkeypatch.undo()
    assert not target.exists()
    for owner in target.parent.glob(f".{target.name}.*/owner"):  # the owner is gone (another start time)
        owner.write_text(json.dumps({"pid": os.getpid(), "create_time": 0}))


def test_a_swap_cut_between_its_renames_gets_the_earlier_output_back(tmp_path, monkeypatch):
    from albert_tf.file_utils import recover_replacement

    target = tmp_path / "best"
    write_output(target, weights="1")
    cut_between_the_renames(target, monkeypatch, weights="2")
    assert sorted(name.split("-")[0] for name in os.listdir(tmp_path)) == [".best.replaced", ".best.staging"]
    # The next writer puts the earlier output back first, then replaces it as asked.
    write_output(target, weights="3")
    assert (target / "weights").read_text() == "3" and sorted(os.listdir(tmp_path)) == ["best"]
    # A caller holding the writer's lock (a fine-tuning run's best/) undoes it without waiting for owners to die.
    cut_between_the_renames(target, monkeypatch, weights="4")
    assert len(recover_replacement(str(target), exclusive=True)) == 2
    assert (target / "weights").read_text() == "3" and sorted(os.listdir(tmp_path)) == ["best"]
