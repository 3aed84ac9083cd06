"""Corpus -> sharded TFRecords of pretraining instances, reproducibly and in parallel.

How the same seed gives byte-identical output whatever the number of workers
(and in the Beam pipeline):
  1. Every instance is made from one document with a generator seeded by
     (seed, file index, document index); which process makes it is irrelevant.
  2. Each instance draws a 63-bit sort key from that generator. Its output
     shard is key % num_output_shards; inside a shard, instances are ordered by
     (key, file index, document index, ordinal). That is a uniform global
     shuffle (what the original did in memory) computed from the instances
     alone.
  3. Workers stream (key, example) records into per-worker spool files, so
     memory stays bounded by one work unit, not by the corpus. At the end each
     shard's records are sorted and written under a temporary name; all shards
     are renamed into place and the metadata file is written last.

Memory: one work unit per worker (about `unit_bytes` of text, or one document
if larger) plus, at the end, one output shard: use more --num_output_shards for
bigger corpora.
"""

import dataclasses
import glob
import hashlib
import os
import struct

from albert_tf.data.corpus_reader import (
    DEFAULT_MAX_DOCUMENT_SENTENCES,
    DEFAULT_MAX_LINE_BYTES,
    iter_documents,
    open_local,
)
from albert_tf.data.pretraining_instances import (
    FLOAT_FEATURES,
    INT_FEATURES,
    InstanceBuilder,
    InstanceConfig,
    TokenizedDocument,
)
from albert_tf.data.data_set_files import METADATA_SUFFIX
from albert_tf.data.tfrecord_io import ExampleEncoder, TFRecordWriter
from albert_tf.text.albert_tokenizer import AlbertTokenizer

FORMAT_VERSION = 1
_SPOOL_HEADER = struct.Struct("<QIIII")  # sort key, file, document, ordinal, data length


@dataclasses.dataclass(frozen=True)
class CreationConfig:
    """Everything that determines the output bytes (plus how to read the input)."""

    instances: InstanceConfig = InstanceConfig()
    seed: int = 12345
    num_output_shards: int = 1
    compression: str = "none"  # or "gzip"
    input_format: str = "sentences"
    lower_case: bool = True
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_document_sentences: int = DEFAULT_MAX_DOCUMENT_SENTENCES

    def __post_init__(self):
        if self.num_output_shards < 1:
            raise ValueError(f"num_output_shards must be at least 1, got {self.num_output_shards}")
        if self.compression not in ("none", "gzip"):
            raise ValueError(f"compression must be 'none' or 'gzip', got {self.compression!r}")

    def to_json(self):
        return dataclasses.asdict(self)


def output_patterns(output_prefix):
    """Globs of every file a run with this prefix writes (any shard count, any compression)."""
    return [f"{output_prefix}-?????-of-?????.tfrecord", f"{output_prefix}-?????-of-?????.tfrecord.gz",
            output_prefix + METADATA_SUFFIX]


def existing_outputs(output_prefix):
    """Files a previous run with this prefix left."""
    escaped = glob.escape(output_prefix)
    return sorted(path for pattern in output_patterns(escaped) for path in glob.glob(pattern))


# --- Work units -------------------------------------------------------------------


def iter_file(path, file_index, config, stats, opener=open_local):
    """Documents of one input file, with the reading limits of `config`."""
    return iter_documents(path, file_index, stats, config.input_format, config.max_line_bytes,
                          config.max_document_sentences, opener)


def iter_corpus(paths, config, stats):
    """Documents of all `paths` in order; file indexes follow the (sorted) list."""
    for file_index, path in enumerate(paths):
        yield from iter_file(path, file_index, config, stats)


def group_into_units(documents, instance_config, unit_bytes=1 << 20):
    """Groups a document stream into work units (lists of `Document`).

    Grouping never changes the output (instances depend on document identity
    only), except that other-document segments (NSP, `single_segment=
    "other_document"`) come from the same unit: units are then exactly the
    pools of `random_document_pool` consecutive documents of one file.
    """
    pooled = instance_config.uses_other_documents
    unit, size, unit_pool = [], 0, None
    for document in documents:
        pool = (document.file_index, document.document_index // instance_config.random_document_pool)
        if unit and ((pooled and pool != unit_pool) or (not pooled and size >= unit_bytes)):
            yield unit
            unit, size = [], 0
        unit.append(document)
        unit_pool = pool
        size += sum(len(sentence) for sentence in document.sentences)
    if unit:
        yield unit


class UnitProcessor:
    """Turns a work unit into (shard, sort tuple, serialized Example) records.

    Created once per worker process (it holds the tokenizer and lookup tables).
    """

    def __init__(self, model_proto, config):
        self.config = config
        self.tokenizer = AlbertTokenizer(model_proto=model_proto, lower_case=config.lower_case)
        self.builder = InstanceBuilder(
            config.instances, self.tokenizer.word_start_table, self.tokenizer.normal_piece_ids, config.seed
        )
        self.encoder = ExampleEncoder(INT_FEATURES, FLOAT_FEATURES)

    def tokenize(self, unit):
        sentences = [sentence for document in unit for sentence in document.sentences]
        ids = self.tokenizer.encode_batch(sentences)
        tokenized, start = [], 0
        for document in unit:
            end = start + len(document.sentences)
            tokenized.append(TokenizedDocument.from_sentences(document.file_index, document.document_index, ids[start:end]))
            start = end
        return [document for document in tokenized if document.num_sentences]

    def process(self, unit, stats):
        """Yields (shard, (sort key, file, document, ordinal), example bytes); counts into `stats`."""
        documents = self.tokenize(unit)
        num_shards = self.config.num_output_shards
        for document in documents:
            ordinal = 0
            for sort_keys, int_features, float_features in self.builder.build(document, documents, stats):
                examples = self.encoder.encode_batch(int_features, float_features)
                for sort_key, example in zip(sort_keys.tolist(), examples):
                    yield sort_key % num_shards, (sort_key, document.file_index, document.document_index, ordinal), example
                    ordinal += 1


# --- Spooling and finalization ------------------------------------------------------


class ShardSpool:
    """Per-process spool files, one per output shard, of (sort tuple, example) records."""

    def __init__(self, directory, num_shards, owner):
        self.paths = [os.path.join(directory, f"spool-{owner}-{shard:05d}") for shard in range(num_shards)]
        self._files = [open(path, "ab") for path in self.paths]

    def write(self, shard, sort_tuple, data):
        self._files[shard].write(_SPOOL_HEADER.pack(*sort_tuple, len(data)) + data)

    def close(self):
        for f in self._files:
            f.close()


def read_spool(path):
    """[(sort tuple, example bytes)] of one spool file."""
    records = []
    with open(path, "rb") as f:
        while header := f.read(_SPOOL_HEADER.size):
            *sort_tuple, length = _SPOOL_HEADER.unpack(header)
            records.append((tuple(sort_tuple), f.read(length)))
    return records


def write_shard(records, path, compression, create=lambda path: open(path, "wb")):
    """Sorts (sort tuple, example) records and writes them as one TFRecord file; returns the count.

    `create(path)` opens the file for writing (Beam passes its FileSystems.create).
    """
    records.sort(key=lambda record: record[0])
    with TFRecordWriter(create(path), "gzip" if compression == "gzip" else None) as writer:
        for _, data in records:
            writer.write(data)
    return len(records)


def build_metadata(config, model_proto, vocab_size, input_paths, corpus_stats, instance_stats, shard_counts, paths,
                   shard_bytes):
    """The data set's metadata; `shard_bytes` are the shards' final sizes, which readers check."""
    return {
        "format": "albert_tf.pretraining_data",
        "format_version": FORMAT_VERSION,
        "config": config.to_json(),
        "max_seq_length": config.instances.max_seq_length,
        "max_predictions_per_seq": config.instances.masking.max_predictions_per_seq,
        "vocab_size": vocab_size,
        "spm_model_sha256": hashlib.sha256(model_proto).hexdigest(),
        "inputs": list(input_paths),
        "corpus": {
            "files": corpus_stats.files,
            "bytes": corpus_stats.bytes,
            "documents": corpus_stats.documents,
            "sentences": corpus_stats.sentences,
            "documents_cut": corpus_stats.documents_cut,
            "skipped_files": dict(sorted(corpus_stats.skipped_files.items())),
            "skipped_lines": dict(sorted(corpus_stats.skipped_lines.items())),
        },
        "statistics": instance_stats.to_json(),
        "shards": [{"file": os.path.basename(path), "instances": count, "bytes": size}
                   for path, count, size in zip(paths, shard_counts, shard_bytes)],
    }


def incomplete_marker(output_prefix):
    """The metadata a data set holds while its shards are being replaced: readers refuse it."""
    return {"format": "albert_tf.pretraining_data", "format_version": FORMAT_VERSION, "complete": False,
            "note": f"{os.path.basename(output_prefix)} is being (re)written; a reader that sees this file "
                    "found a run that stopped while replacing the shards"}
