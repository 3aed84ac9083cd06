"""Writing outputs all-or-nothing: stage beside the target, rename when complete."""

import contextlib
import json
import os
import shutil
import tempfile


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _permissions_as_if_created(path, directory=False):
    # mkstemp/mkdtemp create private (0600/0700) entries; a model or data set handed to another
    # user (a serving container, a training job on shared storage) must get the usual umask modes.
    os.chmod(path, (0o777 if directory else 0o666) & ~_umask())


def write_json_atomically(path, value):
    """Writes `value` as indented JSON to `path` via a temp file + rename: never half-written."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    text = json.dumps(value, indent=2, sort_keys=True) + "\n"  # fails before anything is written
    with tempfile.NamedTemporaryFile("w", dir=directory, suffix=".tmp", delete=False) as f:
        try:
            f.write(text)
            f.close()
            _permissions_as_if_created(f.name)
            os.replace(f.name, path)
        except BaseException:
            os.remove(f.name)
            raise


@contextlib.contextmanager
def staged_directory(directory, overwrite=False):
    """Yields a fresh sibling directory that replaces `directory` on success.

    On any exception the staging directory is removed and `directory` is left
    as it was, so a failed or interrupted run never leaves a half-written output.
    """
    directory = os.path.abspath(directory)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise FileExistsError(f"{directory} exists and is not a directory")
    if os.path.isdir(directory) and os.listdir(directory) and not overwrite:
        raise FileExistsError(f"{directory} exists and is not empty; choose another path or pass --overwrite")
    parent = os.path.dirname(directory)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(directory)}.staging-", dir=parent)
    try:
        _permissions_as_if_created(staging, directory=True)
        yield staging
        if os.path.exists(directory):
            shutil.rmtree(directory)
        os.replace(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
