"""Writing outputs all-or-nothing: stage beside the target, rename when complete."""

import contextlib
import errno
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


class OutputWriteError(OSError):
    """Writing an output file failed (a full disk, a quota, a file-size limit, a read-only or locked directory);
    the message names the file and the fix in one line, and the errno stays the operating system's."""

    def __str__(self):
        return self.strerror


# What to do when an output cannot be written, by the operating system's reason.
_WRITE_ADVICE = {
    errno.ENOSPC: "free space on the disk",
    errno.EDQUOT: "free space within the quota, or raise it",
    errno.EFBIG: "raise the file-size limit (ulimit -f)",
    errno.EROFS: "choose a writable output directory",
    errno.EACCES: "make the directory writable",
    errno.EPERM: "make the directory writable",
    errno.EIO: "check the disk",
}


def _write_failure(path, error):
    """`error` (an OSError of writing `path`) as an OutputWriteError naming the file, for the reasons
    _WRITE_ADVICE knows; any other error as it is."""
    if isinstance(error, OutputWriteError) or error.errno not in _WRITE_ADVICE:
        return error
    reason = error.strerror or os.strerror(error.errno)
    return OutputWriteError(error.errno, f"could not write {path} ({reason}): {_WRITE_ADVICE[error.errno]}, then "
                                         "rerun")


@contextlib.contextmanager
def _exclusive_temporary(path, prefix=None):
    """Yields (an open descriptor, the path) of a new temporary file beside `path`, which replaces `path` when the
    block completes; on any failure it is removed and `path` stays as it was (`atomic_output_path`)."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
        # mkstemp: a unique name, created with O_CREAT | O_EXCL | O_NOFOLLOW.
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=prefix or f".{os.path.basename(path)}.",
                                                 suffix=".tmp")
    except OSError as error:
        raise _write_failure(path, error) from None
    try:
        yield descriptor, temporary
        _permissions_as_if_created(temporary)
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        failure = _write_failure(path, error) if isinstance(error, OSError) else error
        if failure is error:
            raise
        raise failure from None
    finally:
        with contextlib.suppress(OSError):
            os.close(descriptor)  # when the block did not take it over (atomic_output's file closes it)


@contextlib.contextmanager
def atomic_output_path(path, prefix=None):
    """Yields the path of a new, empty temporary file beside `path` that replaces `path` once the block
    completes (for writers that take a file name); on any failure it is removed and `path` stays as it was.

    The temporary is created exclusively under a unique name (mkstemp: O_CREAT | O_EXCL | O_NOFOLLOW), never at
    a fixed name such as PATH.tmp: a link planted there beforehand would have the write land in whatever it
    names. The rename replaces a link at `path` itself, not its target. A write that fails for lack of space,
    quota or permission is raised as an OutputWriteError naming `path`. The file's mode follows the umask.
    `prefix`: the temporary's name before its random part (default ".NAME."), for readers that take files by
    their name (TensorBoard reads any file whose name holds "tfevents")."""
    with _exclusive_temporary(path, prefix) as (_, temporary):
        yield temporary


@contextlib.contextmanager
def atomic_output(path, mode="w", encoding=None, newline=None):
    """Yields a file open for writing (`mode` "w" or "wb") that replaces `path` once the block completes:
    never half-written, never through a link, its temporary removed on any failure (`atomic_output_path`).
    Text is UTF-8 unless `encoding` says otherwise."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_output: mode must be 'w' or 'wb', got {mode!r}")
    with _exclusive_temporary(path) as (descriptor, _):
        # The descriptor mkstemp opened, not the name again: what is written goes to the file it created.
        text = {} if "b" in mode else {"encoding": encoding or "utf-8", "newline": newline}
        with os.fdopen(os.dup(descriptor), mode, **text) as f:
            yield f


def write_text_atomically(path, text, encoding="utf-8"):
    """Writes `text` to a local `path` through `atomic_output`; gs:// and other remote paths through
    tf.io.gfile (an object store replaces a whole object at once)."""
    if "://" in str(path):
        import tensorflow as tf

        with tf.io.gfile.GFile(path, "w") as f:
            f.write(text)
        return
    with atomic_output(path, encoding=encoding) as f:
        f.write(text)


def write_json_atomically(path, value):
    """Writes `value` as indented JSON to `path` via a temp file + rename: never half-written."""
    text = _json_text(value)  # fails before anything is written
    with atomic_output(path) as f:
        f.write(text)


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
    check_file_replaceable(path, overwrite)
    with atomic_output(path, "wb") as f:
        yield f
        check_file_replaceable(path, overwrite)  # nothing arrived there while the output was made


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
    a killed run's staging directory is removed by the next run for `directory`,
    and a swap it cut between its two renames is undone (`recover_replacement`).
    The finished directory lists its entries in a manifest, and an existing
    `directory` is replaced only when `overwrite` is set and it holds nothing but
    an earlier such output (`check_replaceable`, checked again here). Modes
    follow the umask.
    """
    directory = os.path.abspath(directory)
    parent = os.path.dirname(directory)
    # What a killed run left (SIGKILL, the OOM killer) goes first; what a live run is writing stays.
    recover_replacement(directory)
    check_replaceable(directory, overwrite)
    os.makedirs(parent, exist_ok=True)
    staging_prefix, replaced_prefix = _replacement_prefixes(directory)
    staging = make_owned_staging(parent, staging_prefix)
    try:
        yield staging
        os.remove(os.path.join(staging, "owner"))  # the staging's record, no entry of the output
        with open(os.path.join(staging, MANIFEST_FILE), "w") as f:
            json.dump({"entries": sorted(os.listdir(staging))}, f)
        _apply_umask_modes(staging)
        _permissions_as_if_created(staging, directory=True)
        check_replaceable(directory, overwrite)  # nothing foreign arrived while the output was made
        if os.path.exists(directory):
            # Renamed aside first, so the swap itself is two renames; a kill between them leaves the earlier output
            # in RETIRED/old, which `recover_replacement` puts back.
            retired = make_owned_staging(parent, replaced_prefix)
            os.replace(directory, os.path.join(retired, "old"))
            os.replace(staging, directory)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _replacement_prefixes(directory):
    """The name prefixes of `staged_directory`'s staging directory and of the one the replaced output waits in."""
    name = os.path.basename(os.path.abspath(directory))
    return f".{name}.staging-", f".{name}.replaced-"


def recover_replacement(directory, exclusive=False):
    """Undoes what a `staged_directory` for `directory` that was killed left beside it: a swap cut between its
    two renames (`directory` gone, the earlier output aside) gets the earlier output back, and the staging
    directory and the set-aside copy are removed. Either way `directory` is whole: the earlier output, or the
    new one when the swap was complete. `exclusive`: the caller holds the lock under which `directory` is written
    (a fine-tuning run's best/), so whatever is there is a dead process's; otherwise only what a process that
    is gone left is touched. Returns the paths removed."""
    directory = os.path.abspath(directory)
    parent = os.path.dirname(directory)
    staging_prefix, replaced_prefix = _replacement_prefixes(directory)
    try:
        names = sorted(os.listdir(parent))
    except FileNotFoundError:
        return []

    def leftovers(prefix):
        paths = [os.path.join(parent, name) for name in names if name.startswith(prefix)]
        return [path for path in paths if os.path.isdir(path) and not os.path.islink(path)
                and (exclusive or not _owner_alive(os.path.join(path, "owner")))]

    removed, cut = [], False
    for retired in leftovers(replaced_prefix):
        old = os.path.join(retired, "old")
        if not os.path.lexists(directory) and os.path.isdir(old):
            os.replace(old, directory)
            cut = True
        shutil.rmtree(retired, ignore_errors=True)
        removed.append(retired)
    stagings = leftovers(staging_prefix)
    if cut:
        # The cut swap's own staging: finished (its manifest written, its owner record removed), so it tells no
        # owner, and its process is the dead one whose set-aside copy was just put back.
        stagings += [path for path in (os.path.join(parent, name) for name in names if name.startswith(staging_prefix))
                     if path not in stagings and os.path.isfile(os.path.join(path, MANIFEST_FILE))
                     and not os.path.exists(os.path.join(path, "owner"))]
    for staging in stagings:
        shutil.rmtree(staging, ignore_errors=True)
        removed.append(staging)
    return removed


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


def staging_owner_alive(staging):
    """Whether the process that made the staging directory `staging` (`make_owned_staging`) is still running."""
    return _owner_alive(os.path.join(staging, "owner"))


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
# The directories a fine-tuning run with --overwrite stages its outputs in, and sets the earlier ones aside in
# (albert_tf.training.run_directory).
RUN_STAGING_PREFIXES = (".overwrite-staging-", ".overwritten-")
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
    refuse_inside_a_run(directory, setting)


def refuse_inside_a_run(directory, setting="output_dir"):
    """SettingError when `directory` lies inside what a fine-tuning run wrote (its best/, checkpoints/, ... as its
    run_config.json lists them, or a staging directory of its): that run's --overwrite replaces those entries
    whole, and would delete this output with them (a run written inside another's best/ was accepted, then
    deleted). A directory of the user's own beside a run's outputs is fine."""
    if "://" in str(directory):
        return
    path = _resolved(directory)
    ancestor = os.path.dirname(path)
    while ancestor != os.path.dirname(ancestor):
        try:
            record = _run_record(ancestor, setting)
        except (SettingError, OSError):  # another program's file of that name, or one unreadable: no run of ours
            record = None
        tool = recorded_tool(record)
        outputs = record.get("outputs") if tool else None
        if isinstance(outputs, list):
            entry = os.path.relpath(path, ancestor).split(os.sep)[0]
            staging = RUN_STAGING_PREFIXES + tuple(f".{name}." for name in outputs if isinstance(name, str))
            if entry in outputs or entry.startswith(staging):
                raise SettingError(f"<{setting}>={directory} lies inside {os.path.join(ancestor, entry)}, which "
                                   f"{run_kind(tool)} wrote ({os.path.join(ancestor, RUN_CONFIG_FILE)} says so) and "
                                   f"replaces whole with <overwrite>: choose a <{setting}> outside it")
        ancestor = os.path.dirname(ancestor)
