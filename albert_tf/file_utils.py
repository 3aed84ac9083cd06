"""Writing outputs all-or-nothing: stage beside the target, rename when complete."""

import contextlib
import json
import os
import shutil
import stat
import tempfile

from albert_tf.settings import SettingFileExists


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
    text = _json_text(value)  # fails before anything is written
    with tempfile.NamedTemporaryFile("w", dir=directory, suffix=".tmp", delete=False) as f:
        try:
            f.write(text)
            f.close()
            _permissions_as_if_created(f.name)
            os.replace(f.name, path)
        except BaseException:
            os.remove(f.name)
            raise


def write_json(path, value):
    """`write_json_atomically` for local paths; gs:// and other remote paths through tf.io.gfile (object
    stores replace a whole object at once, and have no rename to stage with)."""
    if "://" not in str(path):
        write_json_atomically(path, value)
        return
    import tensorflow as tf

    text = _json_text(value)
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(text)


def _json_text(value):
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def describe_json_value(value):
    """A JSON value in a message about a file that holds the wrong type: 'the string "768"', 'the number 2.5',
    'a list'. A list's or object's content is left out (it can be a whole file)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, str):
        return f"the string {json.dumps(value if len(value) <= 40 else value[:37] + '...')}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def read_utf8_text(path):
    """The text of a UTF-8 file, a byte-order mark dropped; ValueError naming the file and the line of a byte that
    is not UTF-8. The file is decoded whole: a decoding stream knows only its buffer's offset, not the line."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        # The mark is dropped after decoding: utf-8-sig would count the error's offset from after it.
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ValueError(f"{path}:{line}: not UTF-8 text (byte 0x{data[error.start]:02x}); convert the file to "
                         "UTF-8") from None


def check_file_replaceable(path, overwrite):
    """FileExistsError unless `path` may receive a new output file: absent, or (with `overwrite`) a file.
    Checked before any work, and again by `staged_file` when the file is put in place."""
    if os.path.isdir(path):
        raise FileExistsError(f"{path} is a directory, not a file")
    if os.path.lexists(path) and not overwrite:
        raise SettingFileExists(f"{path} exists; choose another path or pass <overwrite>")


@contextlib.contextmanager
def staged_file(path, overwrite=False):
    """Yields a binary file beside `path` that replaces `path` once the block completes: never half-written,
    and an existing `path` only with `overwrite` (`check_file_replaceable`). Its mode follows the umask."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    check_file_replaceable(path, overwrite)
    with tempfile.NamedTemporaryFile("wb", dir=directory, prefix=f".{os.path.basename(path)}.",
                                     suffix=".tmp", delete=False) as f:
        try:
            yield f
            f.close()
            _permissions_as_if_created(f.name)
            check_file_replaceable(path, overwrite)  # nothing arrived there while the output was made
            os.replace(f.name, path)
        except BaseException:
            os.remove(f.name)
            raise


# What a staged output directory lists of its own entries: `--overwrite` replaces a directory only
# when every entry in it is one that albert_tf wrote there, so a user's own files are never deleted.
MANIFEST_FILE = ".albert_tf_manifest.json"


def _apply_umask_modes(root):
    """Gives every file and directory under `root` the modes the umask gives new ones (some writers,
    mkstemp-based ones among them, create private 0600 files)."""
    for directory, subdirectories, files in os.walk(root):
        for name in subdirectories:
            _permissions_as_if_created(os.path.join(directory, name), directory=True)
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                _permissions_as_if_created(path)


def foreign_entries(directory):
    """The entries of an existing `directory` that albert_tf did not write there (its manifest's), or
    None when it has no manifest at all."""
    try:
        with open(os.path.join(directory, MANIFEST_FILE)) as f:
            owned = set(json.load(f)["entries"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
    return sorted(set(os.listdir(directory)) - owned - {MANIFEST_FILE})


def check_replaceable(directory, overwrite):
    """FileExistsError unless `directory` may receive a new output: absent, empty, or (with
    `overwrite`) an earlier albert_tf output that holds nothing else. Checked before any work."""
    directory = os.path.abspath(directory)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise FileExistsError(f"{directory} exists and is not a directory")
    if not os.path.isdir(directory) or not os.listdir(directory):
        return
    if not overwrite:
        raise SettingFileExists(f"{directory} exists and is not empty; choose another path or pass <overwrite>")
    foreign = foreign_entries(directory)
    if foreign is None:
        raise SettingFileExists(f"{directory} was not written by albert_tf (it has no {MANIFEST_FILE}); <overwrite> "
                              "replaces only albert_tf's own outputs: remove it yourself or choose another path")
    if foreign:
        raise SettingFileExists(f"{directory} holds files albert_tf did not write there ({', '.join(foreign[:5])}"
                                f"{', ...' if len(foreign) > 5 else ''}); <overwrite> would delete them: move them "
                                "out or choose another path")


@contextlib.contextmanager
def staged_directory(directory, overwrite=False):
    """Yields a fresh sibling directory that replaces `directory` on success.

    On any exception the staging directory is removed and `directory` is left
    as it was, so a failed or interrupted run never leaves a half-written output.
    The finished directory lists its entries in a manifest, and an existing
    `directory` is replaced only when `overwrite` is set and it holds nothing but
    an earlier such output (`check_replaceable`, checked again here). Modes
    follow the umask.
    """
    directory = os.path.abspath(directory)
    check_replaceable(directory, overwrite)
    parent = os.path.dirname(directory)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(directory)}.staging-", dir=parent)
    try:
        yield staging
        with open(os.path.join(staging, MANIFEST_FILE), "w") as f:
            json.dump({"entries": sorted(os.listdir(staging))}, f)
        _apply_umask_modes(staging)
        _permissions_as_if_created(staging, directory=True)
        check_replaceable(directory, overwrite)  # nothing foreign arrived while the output was made
        if os.path.exists(directory):
            # Renamed aside first, so the swap itself is two renames.
            retired = tempfile.mkdtemp(prefix=f".{os.path.basename(directory)}.replaced-", dir=parent)
            os.replace(directory, os.path.join(retired, "old"))
            os.replace(staging, directory)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


class DirectoryLockedError(OSError):
    """Another live process holds the directory's lock."""


@contextlib.contextmanager
def exclusive_directory_lock(directory, tool):
    """Holds an exclusive lock on `directory` (a `.lock` file in it) for the duration.

    Two runs writing checkpoints into one directory would replace each other's
    files; the second one fails here instead. The lock is an flock(2) on an open
    file, so the kernel drops it when its process dies, however it dies: a
    killed run never leaves the directory locked. Remote paths (gs://...) have
    no such lock and are not locked.
    """
    if "://" in directory:
        yield
        return
    import fcntl

    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, ".lock")
    try:
        # Not through a link (O_NOFOLLOW): the pid written below would otherwise land in whatever file the
        # link names, which this run does not own.
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError:
        if os.path.islink(path):
            raise OSError(f"{path} is a symbolic link ({os.readlink(path)}), not this directory's lock file: "
                          "remove it") from None
        raise
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise OSError(f"{path} is not a regular file, so not this directory's lock file: remove it")
    handle = os.fdopen(descriptor, "r+")
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            raise DirectoryLockedError(
                f"{directory} is in use by {owner}; wait for it to finish, stop it, or choose another "
                "directory") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{tool} (pid {os.getpid()})\n")
        handle.flush()
        lock_file = os.fstat(handle.fileno())
        _HELD_DIRECTORIES[directory] = (path, (lock_file.st_dev, lock_file.st_ino))
        yield
    finally:
        _HELD_DIRECTORIES.pop(directory, None)
        handle.close()  # releases the lock


class DirectoryVanishedError(OSError):
    """A directory this process holds locked was deleted or replaced while the run was writing it."""


# The directories this process holds locked: directory -> (its lock file, that file's (device, inode)).
_HELD_DIRECTORIES = {}


def check_held_directories():
    """DirectoryVanishedError when a directory this process holds locked (exclusive_directory_lock) is no longer
    the one it locked: deleted, or replaced by another. Writing on would recreate parts of it (a checkpoint
    manager makes its directory again) and end with exit 0 and a directory no tool can load."""
    for directory, (path, identity) in list(_HELD_DIRECTORIES.items()):
        try:
            now = os.stat(path, follow_symlinks=False)
            intact = (now.st_dev, now.st_ino) == identity
        except FileNotFoundError:
            intact = False
        if not intact:
            raise DirectoryVanishedError(
                f"{directory} was deleted or replaced while this run was writing it: stopped, so as not to leave "
                "a directory no tool can load. Rerun the command to start again in a directory that stays")


def remove_stale_staging(parent, prefix):
    """Removes `prefix*` staging directories in `parent` whose owning process is gone.

    Staging directories hold an `owner` file written by `make_owned_staging`; a
    run killed with SIGKILL (or by the OOM killer) cannot remove its own, so the
    next run does. Returns the removed paths.
    """
    removed = []
    try:
        names = os.listdir(parent)
    except FileNotFoundError:
        return removed
    for name in names:
        path = os.path.join(parent, name)
        if not name.startswith(prefix) or not os.path.isdir(path):
            continue
        if _owner_alive(os.path.join(path, "owner")):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def make_owned_staging(parent, prefix):
    """A new staging directory in `parent` that records its owner (pid and start time)."""
    staging = tempfile.mkdtemp(prefix=prefix, dir=parent)
    with open(os.path.join(staging, "owner"), "w") as f:
        json.dump(_process_identity(os.getpid()), f)
    return staging


def _process_identity(pid):
    import psutil

    return {"pid": pid, "create_time": psutil.Process(pid).create_time()}


def _owner_alive(owner_file):
    import time

    import psutil

    try:
        with open(owner_file) as f:
            owner = json.load(f)
    except (FileNotFoundError, ValueError):
        # No readable owner file: a directory being created this instant (mkdtemp, then the
        # owner file), or one from a run killed in between: only a minute-old one is abandoned.
        return time.time() - os.path.getmtime(os.path.dirname(owner_file)) < 60
    try:
        # The start time tells a live owner from a new process that reuses its pid.
        return psutil.Process(owner["pid"]).create_time() == owner["create_time"]
    except (psutil.NoSuchProcess, KeyError, TypeError):
        return False


def file_sha256(path):
    """Hex sha256 of a file's bytes (local or gs://), e.g. to tell one SentencePiece model from another."""
    import hashlib

    import tensorflow as tf

    digest = hashlib.sha256()
    with tf.io.gfile.GFile(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
