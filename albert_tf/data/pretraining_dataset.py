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
import os

import tensorflow as tf

from albert_tf.data.pretraining_data_job import METADATA_SUFFIX, read_metadata

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
        files.extend(m for m in matches if not m.endswith(METADATA_SUFFIX))
    return sorted(set(files))


def compression_of(path):
    return "GZIP" if path.endswith(".gz") else ""


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


def shard_prefix(path):
    """PREFIX for PREFIX-00000-of-00004.tfrecord[.gz], else None."""
    name = os.path.basename(path)
    parts = name.rsplit("-", 3)
    if len(parts) == 4 and parts[2] == "of" and parts[1].isdigit():
        return os.path.join(os.path.dirname(path), parts[0])
    return None
