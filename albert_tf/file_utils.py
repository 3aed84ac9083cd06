"""Writing outputs all-or-nothing: stage beside the target, rename when complete."""

import contextlib
import os
import shutil
import tempfile


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
        yield staging
        if os.path.exists(directory):
            shutil.rmtree(directory)
        os.replace(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
