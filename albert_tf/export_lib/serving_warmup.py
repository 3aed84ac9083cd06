"""TF Serving's warm-up requests for the exported serving model.

TF Serving replays the PredictionLog records of
VERSION_DIR/assets.extra/tf_serving_warmup_requests while it loads a model, before
the model takes traffic. The first run of a graph pays for its lazy set-up, and
with --serving_xla the first request of every shape bucket pays for compiling an
XLA program (seconds at albert_base): replayed at load time, no client waits for it.

The records hold one request per (batch size, length bucket) for each raw-text
signature (every signature is a graph of its own): `serve_text` with the texts
alone and `serving_default` with them and empty second segments, or for a span
labeler `serving_default` with a context per question. The (batch size, length
bucket) pairs: for an XLA export every length bucket of the serving model (texts
whose packed length lands in it) at each of the chosen batch sizes, which then
fall into their batch buckets; for plain graphs, whose shapes need no compiling,
one short text per batch size. A span labeler packs every row to max_seq_length,
so its one length is that.
"""

import os

import tensorflow as tf

from albert_tf.export_lib.serving_module import MIN_LENGTH_BUCKET, length_buckets
from albert_tf.export_lib.serving_requests import grpc_predict_request
from albert_tf.text.tf_packing import NO_SECOND_SEGMENTS, encode_text

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
# TF Serving reads at most 1000 warm-up records.
MAX_RECORDS = 1000
# Any word will do: texts of n copies are tokenized to find the n whose packed length fills each bucket.
FILLER_WORD = "warm"


def check_batch_sizes(batch_sizes):
    """The batch sizes as positive ints, in order, without repeats; ValueError for anything else."""
    sizes = []
    for given in batch_sizes:
        try:
            size = int(given)
        except (TypeError, ValueError):
            size = 0
        if size < 1:
            raise ValueError(f"warm-up batch size {given!r}: must be a positive integer")
        if size not in sizes:
            sizes.append(size)
    return sizes


def bucket_filling_texts(tokenizer, max_seq_length, lengths):
    """For each packed length in `lengths`, the longest text of repeated FILLER_WORD whose packed length
    ([CLS] text [SEP], truncated to max_seq_length) is at most that length."""
    candidates = [" ".join([FILLER_WORD] * count) for count in range(1, max_seq_length + 1)]
    packed = encode_text(tokenizer, tf.constant(candidates), NO_SECOND_SEGMENTS, max_seq_length)
    packed_lengths = tf.reduce_sum(packed["input_mask"], axis=1).numpy()
    texts = []
    for length in lengths:
        fitting = [text for text, packed_length in zip(candidates, packed_lengths) if packed_length <= length]
        texts.append(fitting[-1] if fitting else "")
    return texts


def warmup_requests(serving_module, model_name, batch_sizes):
    """PredictRequests for every raw-text signature of `serving_module` (see the module docstring);
    none for no batch sizes."""
    batch_sizes = check_batch_sizes(batch_sizes or ())
    if not batch_sizes:
        return []
    max_seq_length = serving_module.max_seq_length
    if serving_module.takes_context:
        lengths = [max_seq_length]
    elif serving_module.xla:
        lengths = length_buckets(max_seq_length)
    else:
        lengths = [min(max_seq_length, MIN_LENGTH_BUCKET)]
    signatures = 1 if serving_module.takes_context else 2
    count = len(batch_sizes) * len(lengths) * signatures
    if count > MAX_RECORDS:
        raise ValueError(f"{count} warm-up requests ({len(batch_sizes)} batch sizes x {len(lengths)} lengths x "
                         f"{signatures} signatures): TF Serving reads at most {MAX_RECORDS}; pass fewer batch sizes")
    texts = bucket_filling_texts(serving_module.tokenizer, max_seq_length, lengths)
    requests = []
    for batch_size in batch_sizes:
        for text in texts:
            rows = [text] * batch_size
            if serving_module.takes_context:
                # A span labeler's question is `text`, its context `text_b`: both given, so the answer search runs.
                requests.append(grpc_predict_request(model_name, rows, rows))
            else:
                # "" is no second segment: the pair signature's rows fill the same length bucket.
                requests.append(grpc_predict_request(model_name, rows))
                requests.append(grpc_predict_request(model_name, rows, [""] * batch_size))
    return requests


def write_warmup_requests(saved_model_dir, requests):
    """Writes `requests` as TF Serving's warm-up file of `saved_model_dir`; returns its path."""
    from tensorflow_serving.apis import prediction_log_pb2

    path = os.path.join(saved_model_dir, WARMUP_FILE)
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.TFRecordWriter(path) as writer:
        for request in requests:
            log = prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(log.SerializeToString())
    return path
