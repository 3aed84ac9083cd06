"""Reads pretraining TFRecords (ours or the original script's) into model inputs.

The files hold the original ALBERT features; `parse_pretraining_example` maps
them onto the names the model takes:

  input_ids            -> input_word_ids
  input_mask           -> input_mask
  segment_ids          -> input_type_ids
  masked_lm_positions  -> masked_lm_positions
  masked_lm_ids        -> masked_lm_ids (labels)
  masked_lm_weights    -> masked_lm_weights
  next_sentence_labels -> sentence_order_labels
"""

import glob
import re

import tensorflow as tf

from albert_tf.cli import tf_error_reason
from albert_tf.data.data_set_files import METADATA_SUFFIX, check_complete, read_metadata, shard_prefix
from albert_tf.settings import SettingError

_SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")


def feature_spec(max_seq_length, max_predictions_per_seq, with_token_boundary=False):
    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in _SEQUENCE_FEATURES}
    if with_token_boundary:
        spec["token_boundary"] = tf.io.FixedLenFeature([max_seq_length], tf.int64)
    spec.update(
        masked_lm_positions=tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        masked_lm_ids=tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        masked_lm_weights=tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        next_sentence_labels=tf.io.FixedLenFeature([1], tf.int64),
    )
    return spec


def to_model_inputs(features):
    """Original feature names -> model input names (int32 ids, as the model takes)."""
    as_int32 = {name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value for name, value in features.items()}
    return {
        "input_word_ids": as_int32["input_ids"],
        "input_mask": as_int32["input_mask"],
        "input_type_ids": as_int32["segment_ids"],
        "masked_lm_positions": as_int32["masked_lm_positions"],
        "masked_lm_ids": as_int32["masked_lm_ids"],
        "masked_lm_weights": as_int32["masked_lm_weights"],
        "sentence_order_labels": tf.reshape(as_int32["next_sentence_labels"], [-1]),
    }


def expand_data_files(pattern):
    """Files for a glob, a comma-separated list of globs, or an output prefix of create_pretraining_data."""
    files = []
    for part in [p for p in pattern.split(",") if p]:
        matches = tf.io.gfile.glob(part)
        if not matches and not any(ch in part for ch in "*?["):
            matches = tf.io.gfile.glob(glob.escape(part) + "-?????-of-?????.tfrecord*")
        if not matches:
            raise FileNotFoundError(f"{part}: no TFRecord files match")
        files.extend(m for m in matches if not m.endswith(METADATA_SUFFIX) and not tf.io.gfile.isdir(m))
    if not files:
        raise FileNotFoundError(f"{pattern}: matches no TFRecord files")
    files = sorted(set(files))
    check_complete(files)
    return files


def data_set_format(files):
    """(format, metadata) of the data set `files` belong to: the metadata's "format" (static instances or
    tokenized documents), or the instances format with metadata None for files without metadata (the
    original script's). Files of both formats together are refused."""
    from albert_tf.data.pretraining_data_job import INSTANCES_FORMAT

    found = {}
    for path in files:
        prefix = shard_prefix(path)
        metadata = read_metadata(prefix) if prefix else None
        found.setdefault(metadata["format"] if metadata else INSTANCES_FORMAT, (path, metadata))
    if len(found) > 1:
        examples = ", ".join(f"{path} ({name})" for name, (path, _) in sorted(found.items()))
        raise ValueError(f"the input files mix data set formats: {examples}; train on one kind at a time")
    [(data_format, (_, metadata))] = found.items()
    return data_format, metadata


def compression_of(path):
    return "GZIP" if path.endswith(".gz") else ""


def data_special_ids(files):
    """The special ids of the vocabulary the data set `files` was made with, as its metadata records them;
    ALBERT's SentencePiece layout for data without metadata (the original script's) or made before the
    record."""
    from albert_tf.text.special_ids import recorded_special_ids

    for path in files:
        prefix = shard_prefix(path)
        metadata = read_metadata(prefix) if prefix else None
        if metadata:
            return recorded_special_ids(metadata, prefix + METADATA_SUFFIX)
    return recorded_special_ids(None, files[0] if files else "data")


def infer_shapes(files):
    """(max_seq_length, max_predictions_per_seq) from the metadata beside the files or their first record."""
    for path in files:
        prefix = shard_prefix(path)
        metadata = read_metadata(prefix) if prefix else None
        if metadata:
            return metadata["max_seq_length"], metadata["max_predictions_per_seq"]
    dataset = tf.data.TFRecordDataset(files[:1], compression_type=compression_of(files[0]))
    for record in dataset.take(1):
        example = tf.train.Example.FromString(record.numpy())
        feature = example.features.feature
        if "input_ids" not in feature or "masked_lm_positions" not in feature:
            raise ValueError(f"{files[0]}: not pretraining data (no input_ids / masked_lm_positions features)")
        return len(feature["input_ids"].int64_list.value), len(feature["masked_lm_positions"].int64_list.value)
    raise ValueError(f"{files[0]}: empty file")


def check_pretraining_files(files, max_seq_length, max_predictions_per_seq, vocab_size, scan_records=1000,
                            vocabulary=None):
    """Fails with a message naming the file if the data does not fit the settings or the model.

    Uses the creation metadata when present (including the kind and sha256 of the
    vocabulary the data was made with, compared with `vocabulary`, a `vocabularies.Vocabulary`);
    otherwise reads each file's first record (shapes) and the first
    `scan_records` records of the first file (ids).
    """
    from albert_tf.data.pretraining_data_job import VOCABULARY_HASH_KEYS
    from albert_tf.text.vocabularies import DESCRIPTIONS, SENTENCEPIECE, SETTINGS
    checked_prefixes = set()
    for path in files:
        prefix = shard_prefix(path)
        metadata = read_metadata(prefix) if prefix else None
        if metadata and prefix not in checked_prefixes:
            checked_prefixes.add(prefix)
            source = prefix + METADATA_SUFFIX
            if vocabulary is not None:
                made_with = metadata.get("vocabulary", SENTENCEPIECE)
                if made_with != vocabulary.kind:
                    raise SettingError(f"{source}: the data was made with a {DESCRIPTIONS[made_with]}, but "
                                       f"<{SETTINGS[vocabulary.kind]}>={vocabulary.source} is a "
                                       f"{DESCRIPTIONS[vocabulary.kind]}; pass <{SETTINGS[made_with]}>, the "
                                       "vocabulary the data was made with")
                recorded = metadata.get(VOCABULARY_HASH_KEYS[made_with])
                if recorded and recorded != vocabulary.sha256:
                    raise SettingError(f"{source}: the data was made with another {DESCRIPTIONS[made_with]} (sha256 "
                                       f"{recorded[:12]}...) than <{SETTINGS[vocabulary.kind]}>={vocabulary.source} "
                                       f"({vocabulary.sha256[:12]}...); pass the one the data was made with")
            for name, expected in (("max_seq_length", max_seq_length),
                                   ("max_predictions_per_seq", max_predictions_per_seq)):
                if metadata[name] != expected:
                    raise SettingError(f"{source}: the data has {name}={metadata[name]}, but <{name}>={expected}")
            if metadata["vocab_size"] != vocab_size:
                raise SettingError(f"{source}: the data was tokenized with a {metadata['vocab_size']}-piece "
                                   f"vocabulary, but the model's vocab_size is {vocab_size}; pass <vocab_size>="
                                   f"{metadata['vocab_size']} (or the <spm_model_file> the data was made with)")
        elif not metadata:
            _check_first_record(path, max_seq_length, max_predictions_per_seq)
    if not checked_prefixes:
        largest = 0
        dataset = tf.data.TFRecordDataset(files[:1], compression_type=compression_of(files[0])).take(scan_records)
        spec = feature_spec(max_seq_length, max_predictions_per_seq)
        try:
            for batch in dataset.batch(256).map(lambda records: tf.io.parse_example(records, spec)):
                largest = max(largest, int(tf.reduce_max(batch["input_ids"])), int(tf.reduce_max(batch["masked_lm_ids"])))
        except tf.errors.OpError as error:
            raise ValueError(f"{files[0]}: cannot be read as pretraining data ({error.message})") from None
        if largest >= vocab_size:
            raise ValueError(f"{files[0]}: holds token id {largest}, but the model's vocab_size is {vocab_size}; "
                             "the data was made with another vocabulary")


def _check_first_record(path, max_seq_length, max_predictions_per_seq):
    try:
        record = next(iter(tf.data.TFRecordDataset(path, compression_type=compression_of(path)).take(1)), None)
    except tf.errors.OpError as error:
        raise ValueError(f"{path}: not a readable TFRecord file ({error.message})") from None
    if record is None:
        return  # an empty shard holds nothing to check
    feature = tf.train.Example.FromString(record.numpy()).features.feature
    for name, expected in (("input_ids", max_seq_length), ("masked_lm_positions", max_predictions_per_seq)):
        if name not in feature:
            raise ValueError(f"{path}: not pretraining data (no {name} feature)")
        found = len(feature[name].int64_list.value)
        if found != expected:
            setting = "max_seq_length" if name == "input_ids" else "max_predictions_per_seq"
            raise SettingError(f"{path}: {name} has length {found}, but <{setting}>={expected}")


def find_unreadable_file(files):
    """The first file that cannot be read to its end (corrupt or truncated), with the error; or None."""
    for path in files:
        try:
            for _ in tf.data.TFRecordDataset(path, compression_type=compression_of(path)).batch(4096):
                pass
        except tf.errors.OpError as error:
            return path, error.message
    return None


# What ParseExample says of a record beside its reason: its name and index in the batch, its bytes.
_PARSE_ERROR_NOISE = re.compile(r"Name: [^,]*, |, Index: \d+|, value: .*")


def find_unparsable_record(files, spec, batch_size=1024):
    """(file, record number counted from 0, reason) of the first record that does not parse as `spec`: a
    record whose frame is intact (its checksums hold) but whose content is no tf.train.Example, or one of
    other lengths. None when every record parses."""
    for path in files:
        batches = tf.data.TFRecordDataset(path, compression_type=compression_of(path)).batch(batch_size)
        for number, records in enumerate(batches):
            if _parse_error(records, spec) is None:
                continue
            for offset, record in enumerate(records):
                error = _parse_error(record[tf.newaxis], spec)
                if error is not None:
                    return path, number * batch_size + offset, _PARSE_ERROR_NOISE.sub("", tf_error_reason(error))
    return None


def _parse_error(records, spec):
    try:
        tf.io.parse_example(records, spec)
    except tf.errors.InvalidArgumentError as error:
        return error
    return None


def read_error(files, error, what="the records"):
    """A ValueError for a TF error met while reading `files`: it names the damaged file, and the record that
    does not parse, when there is one."""
    bad = find_unreadable_file(files)
    if bad:
        return ValueError(f"{bad[0]}: corrupt or truncated TFRecord file ({tf_error_reason(bad[1])})")
    from albert_tf.data.pretraining_data_job import INSTANCES_FORMAT

    try:
        unparsable = (find_unparsable_record(files, feature_spec(*infer_shapes(files)))
                      if data_set_format(files)[0] == INSTANCES_FORMAT else None)
    except ValueError as unreadable:  # not pretraining data at all, named by the check that read it
        return unreadable
    if unparsable:
        path, number, reason = unparsable
        return ValueError(f"{path}: record {number:,} (counted from 0) does not parse as a pretraining instance of "
                          f"the data's lengths ({reason}); recreate the file with create_pretraining_data")
    return ValueError(f"{what} could not be read ({_PARSE_ERROR_NOISE.sub('', tf_error_reason(error))})")


def count_records(files, limit):
    """The number of records in `files`, counted up to `limit`."""
    dataset = tf.data.TFRecordDataset(files, compression_type=compression_of(files[0])).take(limit)
    return int(dataset.reduce(0, lambda count, _: count + 1))


def make_pretraining_dataset(files, batch_size, max_seq_length, max_predictions_per_seq, seed=None,
                             is_training=True, input_context=None, shuffle_buffer=10_000):
    """A tf.data pipeline of model-input batches (static shapes, full batches only).

    Training: files shuffled and interleaved, records shuffled, repeated forever.
    With several input pipelines (multi-worker), each reads its own files, or
    its own records when there are fewer files than pipelines. The order is a
    function of `seed` alone, so runs (and resumed runs) are reproducible.
    """
    dataset = tf.data.Dataset.from_tensor_slices(files)
    pipelines = input_context.num_input_pipelines if input_context else 1
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    shard_files = pipelines > 1 and len(files) >= pipelines
    if shard_files:
        dataset = dataset.shard(pipelines, pipeline_id)
    compression = compression_of(files[0])
    if is_training:
        dataset = dataset.shuffle(len(files), seed=seed).repeat()
        dataset = dataset.interleave(
            lambda path: tf.data.TFRecordDataset(path, compression_type=compression),
            cycle_length=min(len(files), 8),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
    else:
        dataset = dataset.flat_map(lambda path: tf.data.TFRecordDataset(path, compression_type=compression))
    if pipelines > 1 and not shard_files:
        dataset = dataset.shard(pipelines, pipeline_id)
    if is_training:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed)
    spec = feature_spec(max_seq_length, max_predictions_per_seq)
    dataset = dataset.batch(batch_size, drop_remainder=True)
    dataset = dataset.map(lambda records: to_model_inputs(tf.io.parse_example(records, spec)),
                          num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)


def frequent_piece_level(data_files, batch_size=256, max_batches=None):
    """Masked-LM accuracy at [MASK] inputs of always answering the data's most frequent masked piece.

    The level a model reaches from word frequencies alone: accuracy above it needs the context.
    `data_files`: a list of files, or a pattern as for `expand_data_files`; the shapes come from
    the data's metadata or first record. `max_batches`: read only the first batches (those an
    evaluation of at most that many batches reads).
    """
    import collections

    import numpy as np

    files = list(data_files) if isinstance(data_files, (list, tuple)) else expand_data_files(data_files)
    mask_id = data_special_ids(files).mask
    counts = collections.Counter()
    dataset = make_pretraining_dataset(files, batch_size, *infer_shapes(files), is_training=False)
    if max_batches:
        dataset = dataset.take(max_batches)
    for batch in dataset.as_numpy_iterator():
        inputs = np.take_along_axis(batch["input_word_ids"], batch["masked_lm_positions"], axis=1)
        at_mask = (inputs == mask_id) & (batch["masked_lm_weights"] > 0)
        counts.update(batch["masked_lm_ids"][at_mask].tolist())
    if not counts:
        raise ValueError(f"{data_files}: no masked positions in full batches of {batch_size}")
    return counts.most_common(1)[0][1] / sum(counts.values())
