"""All-or-nothing outputs: nothing half-written, and the usual permissions once in place."""

import json
import os
import stat

import pytest

from albert_tf.file_utils import staged_directory, write_json_atomically


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


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


def test_staged_directory_failure_leaves_target_untouched(tmp_path):
    target = tmp_path / "export"
    target.mkdir()
    (target / "old").write_text("kept")
    with pytest.raises(RuntimeError):
        with staged_directory(str(target), overwrite=True) as staging:
            open(os.path.join(staging, "new"), "w").close()
            raise RuntimeError("interrupted")
    assert sorted(os.listdir(tmp_path)) == ["export"]
    assert sorted(os.listdir(target)) == ["old"]
