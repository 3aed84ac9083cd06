"""A run touches nothing outside its output directory: not through a `.lock` that links elsewhere, nor
through a run record whose `outputs` name a path out of the directory."""

import json

import pytest

from albert_tf.file_utils import exclusive_directory_lock
from albert_tf.training.run_directory import RUN_CONFIG_FILE, read_run_config


def test_the_lock_does_not_follow_a_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / ".lock").symlink_to(victim)
    with pytest.raises(OSError, match=r"\.lock is a symbolic link .*victim\.txt.*remove it"):
        with exclusive_directory_lock(str(run_dir), "a run"):
            pass
    assert victim.read_text() == "precious\n"

    (run_dir / ".lock").unlink()
    with exclusive_directory_lock(str(run_dir), "a run"):  # a plain lock file still works
        assert (run_dir / ".lock").read_text().startswith("a run (pid ")


@pytest.mark.parametrize("name", ["../../victim.txt", "../victim.txt", "/tmp/victim.txt", "..", "sub/entry"])
def test_a_record_naming_a_path_outside_is_refused(tmp_path, name):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run_dir = tmp_path / "a" / "run"
    run_dir.mkdir(parents=True)
    (run_dir / RUN_CONFIG_FILE).write_text(json.dumps({"tool": "run_classifier", "outputs": [name, "best"]}))
    with pytest.raises(ValueError, match="which is not an entry of"):
        read_run_config(str(run_dir))
    assert victim.read_text() == "precious\n"
