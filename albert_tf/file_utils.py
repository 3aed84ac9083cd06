"""Writing outputs all-or-nothing: stage beside the target, rename when complete."""

import contextlib
import json
import os
import re
import shutil
import stat
import tempfile

from albert_tf.settings import SettingError, SettingFileExists


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
        return decode_utf8_text(f.read(), path)


def decode_utf8_text(data, path):
    """`data` (the bytes of file `path`, uncompressed) as text, as `read_utf8_text` reads a file."""
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
    as it was, so a failed or interrupted run never leaves a half-written output;
    a killed run's staging directory is removed by the next run for `directory`.
    The finished directory lists its entries in a manifest, and an existing
    `directory` is replaced only when `overwrite` is set and it holds nothing but
    an earlier such output (`check_replaceable`, checked again here). Modes
    follow the umask.
    """
    directory = os.path.abspath(directory)
    check_replaceable(directory, overwrite)
    parent = os.path.dirname(directory)
    os.makedirs(parent, exist_ok=True)
    # A staging directory a killed run left (SIGKILL, the OOM killer) goes first; one of a live run stays.
    prefix = f".{os.path.basename(directory)}.staging-"
    remove_stale_staging(parent, prefix)
    staging = make_owned_staging(parent, prefix)
    try:
        yield staging
        os.remove(os.path.join(staging, "owner"))  # the staging's record, no entry of the output
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


# --- Where a tool writes: apart from what it reads, and into no directory another tool wrote ---------------------


def _resolved(path):
    """`path` for comparing: local paths resolved (links, '..', '~'), remote ones (gs://...) as written."""
    path = str(path)
    return path.rstrip("/") if "://" in path else os.path.realpath(os.path.expanduser(path))


def _path_relation(output, source):
    """How path `output` lies against path `source`: "is", "lies inside", "contains", or None (apart)."""
    output, source = _resolved(output), _resolved(source)
    separator = "/" if "://" in output else os.sep
    if output == source:
        return "is"
    if output.startswith(source.rstrip(separator) + separator):
        return "lies inside"
    if source.startswith(output.rstrip(separator) + separator):
        return "contains"
    return None


def check_output_apart(outputs, inputs):
    """SettingError when an output path is, lies inside or contains an input path, whatever <overwrite> says:
    writing it would replace or mix with what the run reads (an export written onto its own checkpoint with
    --overwrite used to leave only the export). `outputs`, `inputs`: {setting: a path or a list of paths};
    None and empty values are skipped."""
    def paths(value):
        return [value] if isinstance(value, (str, os.PathLike)) else list(value or ())

    for output_setting, output_paths in outputs.items():
        for output in paths(output_paths):
            for input_setting, input_paths in inputs.items():
                for source in paths(input_paths):
                    relation = _path_relation(output, source)
                    if relation:
                        raise SettingError(f"<{output_setting}>={output} {relation} <{input_setting}>={source}, which "
                                           f"this run reads: writing there would replace it. Choose another "
                                           f"<{output_setting}>")


# A training run's record in its output directory (albert_tf.training.run_directory): whose run it is, and, for
# fine-tuning, the entries it wrote there.
RUN_CONFIG_FILE = "run_config.json"
PRETRAINING_TOOL = "albert_tf.run_pretraining"
# What the directories albert_tf writes whole are (`written_as`), by their manifest's entries.
SAVEDMODEL_EXPORT = "a SavedModel export"
LITERT_EXPORT = "a LiteRT export"
MODEL_DIRECTORY = "an albert_tf model directory"  # a conversion, a fine-tuned best/, a saved model
# And the directories the data tools write into, by their files.
DATA_SET = "a pretraining data set"
VOCABULARY = "a SentencePiece vocabulary"
_SHARD_SUFFIX = re.compile(r"-\d{5}-of-\d{5}(\.tfrecord(\.gz)?)?$")


def run_kind(tool):
    """What `written_as` calls a directory that holds a run of `tool` (its module: albert_tf.run_classifier)."""
    return f"a {tool} run"


def recorded_tool(record):
    """The tool whose run a run_config.json records: its `tool`; run_pretraining for a record that names
    none but holds pretraining's input files (written before pretraining named itself); else None."""
    if not isinstance(record, dict):
        return None
    if "tool" in record:
        return record["tool"]
    return PRETRAINING_TOOL if "input_files" in record else None


def _run_record(directory, setting):
    """The run_config.json in `directory` as read (None when there is none): SettingError when it is not JSON."""
    path = os.path.join(directory, RUN_CONFIG_FILE)
    if "://" in path:
        import tensorflow as tf

        exists, opener = tf.io.gfile.exists, tf.io.gfile.GFile
    else:
        exists, opener = os.path.isfile, open
    if not exists(path):
        return None
    try:
        with opener(path) as f:
            return json.load(f)
    except ValueError as error:
        raise SettingError(f"{path}: not valid JSON ({error}); it records what was written in {directory} and how: "
                           f"restore it, or choose another <{setting}>") from None


def written_as(directory, setting="output_dir"):
    """What an albert_tf tool wrote `directory` as, and the file that says so: (what, path), or None for a
    directory none wrote (or none at all). `what`: `run_kind(tool)` (its run_config.json), "part of" one (its
    parent's run_config.json lists it among the run's outputs), one of the kinds written whole (their manifest:
    SAVEDMODEL_EXPORT, LITERT_EXPORT, MODEL_DIRECTORY), DATA_SET (PREFIX.metadata.json beside PREFIX's
    shards) or VOCABULARY (PREFIX.model beside PREFIX.vocab). Remote directories are told by their run
    record only."""
    tool = recorded_tool(_run_record(directory, setting))
    if tool:
        return run_kind(tool), os.path.join(directory, RUN_CONFIG_FILE)
    if "://" in directory:
        return None
    directory = os.path.abspath(directory)
    parent = os.path.dirname(directory)
    parent_record = _run_record(parent, setting) if parent != directory else None
    if recorded_tool(parent_record) and os.path.basename(directory) in (parent_record.get("outputs") or ()):
        return f"part of {run_kind(recorded_tool(parent_record))}", os.path.join(parent, RUN_CONFIG_FILE)
    if not os.path.isdir(directory):
        return None
    names = set(os.listdir(directory))
    if MANIFEST_FILE in names:
        kind = (SAVEDMODEL_EXPORT if {"encoder", "preprocessing", "serving"} <= names
                else LITERT_EXPORT if "model.tflite" in names else MODEL_DIRECTORY)
        return kind, os.path.join(directory, MANIFEST_FILE)
    shards = {_SHARD_SUFFIX.sub("", name) for name in names if _SHARD_SUFFIX.search(name)}
    for name in sorted(names):
        if name.endswith(".metadata.json") and name[:-len(".metadata.json")] in shards:
            return DATA_SET, os.path.join(directory, name)
        if name.endswith(".model") and name[:-len(".model")] + ".vocab" in names:
            return VOCABULARY, os.path.join(directory, name)
    return None


def refuse_another_tools_directory(directory, tool, own_kinds, setting="output_dir"):
    """SettingError when `directory` holds what an albert_tf tool wrote (`written_as`) and it is none of
    `own_kinds`, what `tool` (its module, for the message) itself writes: one tool's outputs mean nothing to
    another, and writing there would replace or mix with them (a pretraining run used to replace an export's
    albert_tf.json and add its checkpoints beside it). Checked before anything is read or written."""
    found = written_as(directory, setting)
    if found and found[0] not in own_kinds:
        what, evidence = found
        raise SettingError(f"{directory} holds {what} ({evidence} says so); {tool} writes into a directory of its "
                           f"own: choose another <{setting}>, or move that away first")
