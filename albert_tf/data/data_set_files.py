"""How a pretraining data set lies on disk, and whether it is complete.

create_pretraining_data (and the Beam pipeline) write

  PREFIX-00000-of-0000N.tfrecord[.gz] ... PREFIX-0000(N-1)-of-0000N.tfrecord[.gz]
  PREFIX.metadata.json     written last: the config, statistics, and per shard
                           its file name, instance count and size in bytes

While a run replaces an existing data set, the metadata holds
`"complete": false` until every new shard is in place, so a run killed in the
middle of the swap leaves a set that readers refuse instead of a mix of old and
new shards that looks whole.

Readers (run_pretraining, data_stats, the benchmarks) call `check_complete`:
every shard of an `-of-N` set must be present, and where the metadata records
them, the shards' names and sizes must match it. Sizes are cheap to check on
any file system and catch a truncated or replaced shard without reading it.
A file whose name continues a shard's or the metadata's name (the Beam
pipeline's `PREFIX-00000-of-00004.tfrecord.beam-temp-*`, which a stopped run
leaves, or a copy such as `.tfrecord.orig`) matches a prefix's glob but is no
shard: it is refused, by name, instead of being read as more training data.
"""

import json
import os
import re

METADATA_SUFFIX = ".metadata.json"
_SHARD_NAME = re.compile(r"^(?P<base>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})(?P<extension>\.tfrecord(?:\.gz)?)?$")
# A shard's or the metadata's name with more after it (checked on names that are not shard names).
_CONTINUED_NAME = re.compile(r"^(?P<base>.+?)(?:-\d{5}-of-\d{5}\.tfrecord|" + re.escape(METADATA_SUFFIX) + r").")


def _gfile():
    # tf.io.gfile reads gs:// and other remote paths; imported on use so that the
    # data-creation tool, which needs no TensorFlow, does not pay for importing it.
    import tensorflow as tf

    return tf.io.gfile


class IncompleteDataSetError(ValueError):
    """A data set with missing, extra, truncated or half-replaced shards."""


def shard_paths(output_prefix, num_shards, compression):
    extension = ".tfrecord.gz" if compression == "gzip" else ".tfrecord"
    return [f"{output_prefix}-{index:05d}-of-{num_shards:05d}{extension}" for index in range(num_shards)]


def parse_shard_name(path):
    """(prefix, index, count, extension) for PREFIX-00001-of-00004.tfrecord[.gz]; None otherwise."""
    match = _SHARD_NAME.match(os.path.basename(path))
    if not match:
        return None
    prefix = os.path.join(os.path.dirname(path), match["base"])
    return prefix, int(match["index"]), int(match["count"]), match["extension"] or ""


def shard_prefix(path):
    """PREFIX for PREFIX-00000-of-00004.tfrecord[.gz], else None."""
    parsed = parse_shard_name(path)
    return parsed[0] if parsed else None


def read_metadata(output_prefix):
    """The data set's metadata dict, or None when PREFIX.metadata.json does not exist."""
    path = output_prefix + METADATA_SUFFIX
    gfile = _gfile() if "://" in path else None
    if not (gfile.exists(path) if gfile else os.path.isfile(path)):
        return None
    try:
        with (gfile.GFile(path) if gfile else open(path, encoding="utf-8")) as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise IncompleteDataSetError(f"{path}: unreadable metadata ({error}); recreate the data set") from None


def check_complete(files):
    """Raises IncompleteDataSetError unless every `-of-N` shard set among `files` is whole.

    Files that do not follow the shard naming (e.g. the original script's output)
    are taken as they are, except those whose name continues a shard's or the
    metadata's name: a stopped writer's temporary files and copies are no shards.
    """
    sets = {}
    for path in files:
        parsed = parse_shard_name(path)
        if parsed:
            prefix, index, count, extension = parsed
            sets.setdefault((prefix, count, extension), {})[index] = path
        else:
            _check_not_left_over(path)
    for (prefix, count, extension), present in sorted(sets.items()):
        missing = [i for i in range(count) if i not in present]
        if missing:
            name = f"{os.path.basename(prefix)}-{missing[0]:05d}-of-{count:05d}{extension}"
            raise IncompleteDataSetError(
                f"{prefix}: incomplete data set: {len(present)} of {count} shards present, {name} is missing"
                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                + "; restore it or recreate the data set with create_pretraining_data --overwrite")
        metadata = read_metadata(prefix)
        if metadata is not None:
            _check_against_metadata(prefix, metadata, present)


def _check_not_left_over(path):
    continued = _CONTINUED_NAME.match(os.path.basename(path))
    if continued:
        prefix = os.path.join(os.path.dirname(path), continued["base"])
        raise IncompleteDataSetError(
            f"{path}: not a shard of the data set {prefix} (the name continues a shard's or its metadata's: a "
            "temporary file of a writer that was stopped, such as the Beam pipeline's *.beam-temp-*, or a copy); "
            "remove it (rerunning the pipeline removes its own), or name only the shards")


def _check_against_metadata(prefix, metadata, present):
    source = prefix + METADATA_SUFFIX
    if metadata.get("complete") is False:
        raise IncompleteDataSetError(
            f"{source}: the data set was being replaced when its writer stopped; rerun create_pretraining_data "
            "with --overwrite to finish it")
    recorded = {entry["file"]: entry for entry in metadata.get("shards", [])}
    names = {os.path.basename(path): path for path in present.values()}
    if set(recorded) != set(names):
        unknown = sorted(set(names) - set(recorded)) or sorted(set(recorded) - set(names))
        raise IncompleteDataSetError(
            f"{source}: lists shards {sorted(recorded)[:2]}..., but the files are {sorted(names)[:2]}... "
            f"({unknown[0]} does not match); the data set was changed after it was written: recreate it")
    for name, path in sorted(names.items()):
        expected = recorded[name].get("bytes")
        if expected is None:
            continue  # metadata written before sizes were recorded
        size = _gfile().stat(path).length if "://" in path else os.path.getsize(path)
        if size != expected:
            raise IncompleteDataSetError(
                f"{path}: {size:,} bytes, but {source} records {expected:,}: the shard is truncated or was "
                "replaced; recreate the data set with create_pretraining_data --overwrite")
