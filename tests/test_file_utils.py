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
