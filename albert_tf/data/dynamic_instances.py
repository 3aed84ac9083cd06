"""Pretraining instances made afresh every epoch from a documents data set.

`create_pretraining_data --output_format=documents` writes each tokenized
document once. This module turns them into training batches inside the input
pipeline, with the data tool's own InstanceBuilder (same pair algorithm, same
n-gram masking, same distributions), so that every epoch brings new
sentence-order pairs, truncations and masks instead of the same `dupe_factor`
copies. Static copies are what a small corpus gets memorized by: the model
learns the fixed pairs and masks instead of the language.

Order and seeds, all functions of the run's seed and the epoch, never of time,
threads or the number of input workers:
  - epoch e reads the files in an order drawn from (seed, e) (a stateless
    shuffle), interleaving up to 8 of them;
  - document d of file f gives the pairs and masks of the generator seeded by
    (seed, f, d) in epoch 0, exactly what the static tool writes at
    --dupe_factor=1 with that seed, and by (seed, f, d, e) in epoch e > 0;
  - the instances of `mixed_documents` documents (16) are drawn round-robin, one
    from each in turn, then pass a seeded shuffle buffer and form batches.
Why the round-robin: the builder makes a document's instances together, and a
book-length document makes thousands. Through a shuffle buffer alone such a
document floods the buffer, and for a stretch of steps most of every batch
comes from it, where the static tool shuffles its instances over the whole
corpus (benchmarks/speed/dynamic_input.py measures both streams).
Everything but the instance builder is a tf.data op whose position a
tf.train.Checkpoint saves with the iterator. The builder is a pure function of
(epoch, document), so its Python state needs no saving (the dataset's external
state policy is IGNORE): a resumed run continues with the very instances the
uninterrupted run would have seen.

Input workers: documents are built `num_workers` at a time in tf.data's
threads. The builder's per-sequence loops hold Python's GIL, so threads stop
adding up at about two; with `processes` the maker hands each document to one of
that many builder processes instead (builder_processes), for hosts that must
feed an accelerator faster than that. Either way the instances are the same.
"""

import dataclasses

import tensorflow as tf

from albert_tf.data.builder_processes import BuilderProcesses, epoch_instances, feature_widths
from albert_tf.data.pretraining_dataset import compression_of, to_model_inputs
from albert_tf.data.pretraining_instances import FLOAT_FEATURES, INT_FEATURES, InstanceBuilder

# Documents whose instances are drawn from in turn (make_dynamic_dataset). Enough that no document dominates
# a batch beyond its share of the corpus; each costs memory (and iterator checkpoint bytes) for the rest
# of its instances, so not more.
MIXED_DOCUMENTS = 16

_DOCUMENT_SPEC = {
    "token_ids": tf.io.VarLenFeature(tf.int64),
    "sentence_offsets": tf.io.VarLenFeature(tf.int64),
    "document_id": tf.io.FixedLenFeature([2], tf.int64),
}


def parse_document(record):
    """A documents-format record -> (token ids, sentence offsets, [file index, document index])."""
    parsed = tf.io.parse_single_example(record, _DOCUMENT_SPEC)
    return parsed["token_ids"].values, parsed["sentence_offsets"].values, parsed["document_id"]


class EpochInstanceMaker:
    """(epoch, document) -> its instances for that epoch, as the data tool makes them at dupe_factor 1.

    Args:
      creation_config: the documents data set's CreationConfig (its metadata's "config"): pair and
        masking settings. Its seed is replaced by `seed`.
      word_start_table, random_piece_ids: from the vocabulary the data was made with.
      seed: the run's seed.
      special_ids: that vocabulary's (`tokenizer.special_ids`).
      processes: build in this many child processes (started on first use; `close` ends them);
        0: in the calling thread.
    """

    def __init__(self, creation_config, word_start_table, random_piece_ids, seed, processes=0, *, special_ids):
        instances = dataclasses.replace(creation_config.instances, dupe_factor=1)
        self.builder = InstanceBuilder(instances, word_start_table, random_piece_ids, seed, special_ids=special_ids)
        self.max_seq_length = instances.max_seq_length
        self.max_predictions_per_seq = instances.masking.max_predictions_per_seq
        self.widths = feature_widths(self.max_seq_length, self.max_predictions_per_seq)
        self.processes = BuilderProcesses(self.builder, self.widths, processes) if processes else None

    def instances(self, epoch, token_ids, sentence_offsets, document_id):
        """The document's instances: {original feature name: array [n, ...]} (int32 ids, float32 weights)."""
        if self.processes:
            return self.processes.instances(epoch, token_ids, sentence_offsets, document_id)
        return epoch_instances(self.builder, self.widths, epoch, token_ids, sentence_offsets, document_id)

    def close(self):
        """Ends the builder processes, if any."""
        if self.processes:
            self.processes.close()

    def _numpy_call(self, epoch, token_ids, sentence_offsets, document_id):
        features = self.instances(epoch, token_ids, sentence_offsets, document_id)
        return tuple(features[name] for name in INT_FEATURES + FLOAT_FEATURES)

    def tf_instances(self, epoch, record):
        """The instances of one serialized document, as a dict of tensors [n, ...] (for Dataset.map)."""
        token_ids, sentence_offsets, document_id = parse_document(record)
        names = INT_FEATURES + FLOAT_FEATURES
        outputs = tf.numpy_function(self._numpy_call, [epoch, token_ids, sentence_offsets, document_id],
                                    [tf.float32 if name in FLOAT_FEATURES else tf.int32 for name in names],
                                    stateful=False)
        features = {}
        for name, value in zip(names, outputs):
            features[name] = tf.ensure_shape(value, [None, self.widths[name]])
        return features


def make_dynamic_dataset(files, batch_size, maker, seed, input_context=None, shuffle_buffer=10_000, num_workers=2,
                         mixed_documents=MIXED_DOCUMENTS):
    """A repeating tf.data pipeline of model-input batches made from documents-format `files`.

    With several input pipelines (multi-worker), each reads its own files, or its
    own documents when there are fewer files than pipelines. `mixed_documents`:
    how many documents' instances are drawn from in turn (1: a document's
    instances one after another). Their instances are part of the iterator's
    saved position, as the shuffle buffer's are. `num_workers`: documents built
    at once (at least the maker's builder processes, if it has any).
    """
    if not files:
        raise ValueError("no document files")
    pipelines = input_context.num_input_pipelines if input_context else 1
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    shard_files = pipelines > 1 and len(files) >= pipelines
    paths = tf.constant(sorted(files))
    count = len(files)
    compression = compression_of(files[0])

    def epoch_records(epoch):
        order_seed = tf.stack([tf.constant(seed, tf.int64), epoch])
        order = tf.data.Dataset.range(count).map(
            lambda index: tf.gather(paths, tf.random.experimental.index_shuffle(index, order_seed, count - 1)))
        if shard_files:
            order = order.shard(pipelines, pipeline_id)
        records = order.interleave(lambda path: tf.data.TFRecordDataset(path, compression_type=compression),
                                   cycle_length=min(count, 8))
        if pipelines > 1 and not shard_files:
            records = records.shard(pipelines, pipeline_id)
        return records.map(lambda record: (epoch, record))

    documents = tf.data.Dataset.counter().flat_map(epoch_records)
    # With builder processes, one map thread per process hands documents over and waits.
    parallel = max(1, num_workers, maker.processes.count if maker.processes else 0)
    instance_sets = documents.map(maker.tf_instances, num_parallel_calls=parallel, deterministic=True)
    if mixed_documents == 1:  # (unbatch, not a 1-cycle interleave: the saved positions of earlier runs restore)
        instances = instance_sets.unbatch()
    else:  # one instance from each document in turn (across epoch ends too, as the static tool's copies mix)
        instances = instance_sets.interleave(tf.data.Dataset.from_tensor_slices, cycle_length=mixed_documents,
                                             block_length=1)  # sequential: deterministic
    dataset = instances.shuffle(shuffle_buffer, seed=seed)
    dataset = dataset.batch(batch_size, drop_remainder=True).map(to_model_inputs)
    options = tf.data.Options()
    # The instance builder is a pure function of its inputs: the iterator's saved position is complete without it.
    options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.IGNORE
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)
