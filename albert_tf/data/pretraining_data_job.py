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
     are renamed into place and the metadata file is written last. (The Beam
     pipeline spools each work unit's records sorted, one file per shard, and
     streams a merge of them into each shard: merge_spools.)

Two outputs per run, each a data set of its own (shards + metadata):
  - the training set: static instances (`output_format="instances"`, the
    original's format: every document made into pairs and masks `dupe_factor`
    times), or the tokenized documents once (`output_format="documents"`), from
    which run_pretraining makes new pairs and masks every epoch
    (albert_tf.data.dynamic_instances);
  - on request (`heldout_every=N`), a held-out set: every N-th document of each
    file (document index N-1, 2N-1, ...) kept out of training and made into
    static instances once, so that evaluations during and after training read
    the same records, of text the model never saw.

Memory: one work unit per worker (about `unit_bytes` of text, or one document
if larger) plus, at the end, one output shard: use more --num_output_shards for
bigger corpora.
"""

import dataclasses
import fnmatch
import glob
import heapq
import operator
import os
import struct

import numpy as np

from albert_tf.data.corpus_reader import (
    CorpusStats,
    DEFAULT_MAX_DOCUMENT_SENTENCES,
    DEFAULT_MAX_LINE_BYTES,
    iter_documents,
    open_local,
)
from albert_tf.data.masking import MaskingConfig
from albert_tf.data.pretraining_instances import (
    FLOAT_FEATURES,
    INT_FEATURES,
    InstanceBuilder,
    InstanceConfig,
    InstanceStats,
    tokenize_documents,
)
from albert_tf.data.data_set_files import METADATA_SUFFIX
from albert_tf.data.tfrecord_io import ExampleEncoder, TFRecordWriter
from albert_tf.settings import SettingError
from albert_tf.text.segmented_text import unsegmented_piece_table

FORMAT_VERSION = 1
INSTANCES_FORMAT = "albert_tf.pretraining_data"
DOCUMENTS_FORMAT = "albert_tf.pretraining_documents"
OUTPUT_FORMATS = ("instances", "documents")
# The features of a record of the documents format: the document's pieces, its
# sentences' starts in them (and the end), and (file index, document index),
# which seed the document's instances in every epoch.
DOCUMENT_FEATURES = ("token_ids", "sentence_offsets", "document_id")
TRAIN, HELDOUT = 0, 1  # the output sets of a run
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
    keep_accents: bool = False  # the original strips accents
    rewrite_quotes: bool = False  # the original keeps `` and '' (Hugging Face's tokenizer turns them into ")
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_document_sentences: int = DEFAULT_MAX_DOCUMENT_SENTENCES
    output_format: str = "instances"
    heldout_every: int = 0  # 0: no held-out set
    # Chinese or Japanese words separated by spaces (a segmenter's output): the spaces next to those scripts
    # mark word boundaries for whole-word masking and are removed (albert_tf.text.segmented_text).
    pre_segmented: bool = False

    def __post_init__(self):
        if self.output_format not in OUTPUT_FORMATS:
            raise SettingError(f"<output_format> must be one of {OUTPUT_FORMATS}, got {self.output_format!r}")
        if self.heldout_every == 1 or self.heldout_every < 0:
            raise SettingError(f"<heldout_every> must be 0 (no held-out set) or >= 2, got {self.heldout_every}")
        if self.output_format == "documents" and self.instances.uses_other_documents:
            raise SettingError("the documents format makes sentence-order pairs from one document at a time; NSP "
                               "(<random_next_sentence>) and <single_segment>=other_document need "
                               "<output_format>=instances")
        if self.num_output_shards < 1:
            raise SettingError(f"<num_output_shards> must be at least 1, got {self.num_output_shards}")
        if self.compression not in ("none", "gzip"):
            raise SettingError(f"<compression> must be 'none' or 'gzip', got {self.compression!r}")
        if self.pre_segmented and self.output_format == "documents":
            # The documents format records token ids alone; run_pretraining would take word starts from the
            # vocabulary and mask pieces, not the segmenter's words.
            raise SettingError("<pre_segmented> needs <output_format>=instances: the documents format does not "
                               "record the segmenter's word boundaries")

    def to_json(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, values):
        """The config a data set's metadata records (fields it predates take their defaults)."""
        values = dict(values)
        instances = dict(values.pop("instances"))
        masking = MaskingConfig(**instances.pop("masking"))
        known = {field.name for field in dataclasses.fields(cls)}
        return cls(instances=InstanceConfig(**instances, masking=masking),
                   **{name: value for name, value in values.items() if name in known})

    @property
    def heldout_config(self):
        """The held-out set's config: static instances, each document made into pairs once."""
        return dataclasses.replace(self, output_format="instances", heldout_every=0,
                                   instances=dataclasses.replace(self.instances, dupe_factor=1))


def is_heldout(document, every):
    """Whether `document` belongs to the held-out set: every `every`-th document of its file."""
    return every > 0 and document.document_index % every == every - 1


def heldout_prefix(output_prefix):
    """Where the held-out set of a run writing `output_prefix` goes."""
    return output_prefix + "-heldout"


def output_sets(config, output_prefix):
    """[(prefix, config)] of the data sets a run writes: the training set, then the held-out set if requested."""
    sets = [(output_prefix, config)]
    if config.heldout_every:
        sets.append((heldout_prefix(output_prefix), config.heldout_config))
    return sets


def output_patterns(output_prefix):
    """Globs of every file a run with this prefix writes (any shard count, any compression)."""
    return [f"{output_prefix}-?????-of-?????.tfrecord", f"{output_prefix}-?????-of-?????.tfrecord.gz",
            output_prefix + METADATA_SUFFIX]


def without_own_outputs(input_paths, config, output_prefix):
    """(inputs, skipped): `input_paths` less the files this run writes. An --input_file glob such as
    'data/*' can match the output of an earlier run with the same prefix, which is TFRecords, not text."""
    own = [os.path.abspath(pattern) for prefix, _ in output_sets(config, output_prefix)
           for pattern in output_patterns(glob.escape(prefix))]
    skipped = [path for path in input_paths if any(fnmatch.fnmatchcase(os.path.abspath(path), pattern)
                                                   for pattern in own)]
    if skipped and len(skipped) == len(input_paths):
        raise SettingError(f"<input_file> matches only this run's own outputs ({skipped[0]}, ...): "
                           "name the text files")
    return [path for path in input_paths if path not in skipped], skipped


def existing_outputs(output_prefix):
    """Files a previous run with this prefix left."""
    escaped = glob.escape(output_prefix)
    return sorted(path for pattern in output_patterns(escaped) for path in glob.glob(pattern))


# --- Work units -------------------------------------------------------------------


def iter_file(path, file_index, config, stats, opener=open_local):
    """Documents of one input file, with the reading limits of `config`; where `config` strips accents, the
    characters that rewrites in scripts whose marks carry meaning are counted into `stats`."""
    documents = iter_documents(path, file_index, stats, config.input_format, config.max_line_bytes,
                               config.max_document_sentences, opener, pre_segmented=config.pre_segmented)
    return documents if config.keep_accents else _counting_marked_text(documents, stats)


def _counting_marked_text(documents, stats):
    for document in documents:
        for sentence in document.sentences:
            stats.count_marked(sentence)
        yield document


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


# The metadata key of each vocabulary kind's sha256 (a SentencePiece data set's, as it always was).
VOCABULARY_HASH_KEYS = {"sentencepiece": "spm_model_sha256", "wordpiece": "vocab_file_sha256"}


def check_vocabulary_settings(config, vocabulary):
    """SettingError for settings a vocabulary of this kind cannot follow (checked by the local tool and the Beam
    pipeline alike, before any input is read)."""
    if vocabulary.kind == "wordpiece" and config.pre_segmented:
        raise SettingError("<pre_segmented> reads word boundaries through SentencePiece's pieces; with a WordPiece "
                           "<vocab_file> every Chinese character is a piece and a word of its own (the original's "
                           "rule): leave <pre_segmented> out")


class UnitProcessor:
    """Turns a work unit into (output set, shard, sort tuple, serialized Example) records.

    Created once per worker process (it holds the tokenizer and lookup tables).
    """

    def __init__(self, vocabulary, config):
        self.config = config
        self.tokenizer = vocabulary.tokenizer(config.lower_case, config.keep_accents, config.rewrite_quotes)
        tables = (self.tokenizer.word_start_table, self.tokenizer.random_replacement_ids, config.seed)
        special_ids = self.tokenizer.special_ids
        self.builder = InstanceBuilder(config.instances, *tables, special_ids=special_ids)
        self.heldout_builder = InstanceBuilder(config.heldout_config.instances, *tables, special_ids=special_ids)
        self.encoder = ExampleEncoder(INT_FEATURES, FLOAT_FEATURES)
        self.document_encoder = ExampleEncoder(DOCUMENT_FEATURES)
        self.segmented_pieces = unsegmented_piece_table(self.tokenizer) if config.pre_segmented else None

    def tokenize(self, unit):
        return tokenize_documents(self.tokenizer, unit, self.config.pre_segmented, self.segmented_pieces)

    def process(self, unit, stats, heldout_stats=None):
        """Yields (output set, shard, (sort key, file, document, ordinal), example bytes).

        Counts the training set into `stats` and the held-out set into `heldout_stats`.
        Held-out documents are no other document's pool: none of their text reaches training.
        """
        documents = self.tokenize(unit)
        every = self.config.heldout_every
        heldout = [document for document in documents if is_heldout(document, every)]
        kept = [document for document in documents if not is_heldout(document, every)] if heldout else documents
        for document in kept:
            if self.config.output_format == "documents":
                yield self._document_record(document, stats)
            else:
                yield from self._instance_records(TRAIN, self.builder, document, kept, stats)
        for document in heldout:
            yield from self._instance_records(HELDOUT, self.heldout_builder, document, heldout, heldout_stats)

    def _instance_records(self, output_set, builder, document, pool, stats):
        num_shards = self.config.num_output_shards
        ordinal = 0
        for sort_keys, int_features, float_features in builder.build(document, pool, stats):
            examples = self.encoder.encode_batch(int_features, float_features)
            for sort_key, example in zip(sort_keys.tolist(), examples):
                yield (output_set, sort_key % num_shards, (sort_key, document.file_index, document.document_index,
                                                           ordinal), example)
                ordinal += 1

    def _document_record(self, document, stats):
        """One document as a record; its sort key (shard and place) comes from its own seeded stream."""
        seed_sequence = np.random.SeedSequence([self.config.seed, document.file_index, document.document_index],
                                               spawn_key=(DOCUMENT_ORDER_STREAM,))
        sort_key = int(np.random.Generator(np.random.PCG64(seed_sequence)).integers(0, 1 << 63))
        [example] = self.document_encoder.encode_batch({
            "token_ids": document.tokens[None, :],
            "sentence_offsets": document.offsets[None, :],
            "document_id": np.array([[document.file_index, document.document_index]]),
        })
        stats.documents += 1
        stats.sentences += document.num_sentences
        stats.tokens += len(document.tokens)
        return (TRAIN, sort_key % self.config.num_output_shards,
                (sort_key, document.file_index, document.document_index, 0), example)


# A document record's sort key comes from a stream of its own (a SeedSequence spawn key no instance
# stream uses), so the order of documents in the files says nothing about their instances' draws.
DOCUMENT_ORDER_STREAM = 1


# --- Spooling and finalization ------------------------------------------------------


class RunStatistics:
    """What a run counted: the CorpusStats of the files read and the [training set, held-out set] InstanceStats
    of the instances made, merged pairwise. (Distributed runners pickle it between processes: it lives here,
    in a module every worker imports, not in a script that runs as __main__.)"""

    def __init__(self, corpus=None, sets=None):
        self.corpus = CorpusStats() if corpus is None else corpus
        self.sets = [InstanceStats(), InstanceStats()] if sets is None else sets

    def merge(self, other):
        self.corpus.merge(other.corpus)
        for mine, theirs in zip(self.sets, other.sets):
            mine.merge(theirs)


def spool_name(output_set, owner, shard):
    return f"spool-{output_set}-{owner}-{shard:05d}"


def spool_files_of(directory, output_set, shard):
    """Every process's spool file of one output set's shard, in a fixed order."""
    pattern = spool_name(output_set, "*", shard)
    return sorted(glob.glob(os.path.join(glob.escape(directory), pattern)))


class ShardSpool:
    """Per-process spool files, one per output set and shard, of (sort tuple, example) records."""

    def __init__(self, directory, num_shards, owner, num_sets=2):
        self._files = {(output_set, shard): open(os.path.join(directory, spool_name(output_set, owner, shard)), "ab")
                       for output_set in range(num_sets) for shard in range(num_shards)}

    def write(self, output_set, shard, sort_tuple, data):
        self._files[output_set, shard].write(spool_record(sort_tuple, data))

    def flush(self):
        for f in self._files.values():
            f.flush()

    def close(self):
        """Closes every file, then raises the first error (a full disk fails the flush inside close())."""
        errors = []
        for f in self._files.values():
            try:
                f.close()
            except OSError as error:
                errors.append(error)
        if errors:
            raise errors[0]


def spool_record(sort_tuple, data):
    """One (sort tuple, example bytes) record in the spool files' format."""
    return _SPOOL_HEADER.pack(*sort_tuple, len(data)) + data


def read_spool(path):
    """[(sort tuple, example bytes)] of one spool file."""
    with open(path, "rb") as f:
        return list(iter_spool(f))


def iter_spool(f):
    """The (sort tuple, example bytes) records of an open spool file, read as they are consumed."""
    while header := f.read(_SPOOL_HEADER.size):
        *sort_tuple, length = _SPOOL_HEADER.unpack(header)
        yield tuple(sort_tuple), f.read(length)


def merge_spools(files):
    """The records of spool files (open, binary), each in sort order, as one stream in sort order: one record
    of each file in memory at a time (heapq.merge)."""
    return heapq.merge(*(iter_spool(f) for f in files), key=operator.itemgetter(0))


def write_shard(records, path, compression, create=lambda path: open(path, "wb")):
    """Sorts (sort tuple, example) records and writes them as one TFRecord file; returns the count.

    `create(path)` opens the file for writing (Beam passes its FileSystems.create).
    """
    records.sort(key=operator.itemgetter(0))
    return write_sorted_shard(records, path, compression, create)


def write_sorted_shard(records, path, compression, create=lambda path: open(path, "wb")):
    """Writes (sort tuple, example) records, already in sort order, as one TFRecord file as they come (an
    iterator such as merge_spools' is never held whole); returns the count."""
    count = 0
    with TFRecordWriter(create(path), "gzip" if compression == "gzip" else None) as writer:
        for _, data in records:
            writer.write(data)
            count += 1
    return count


def build_metadata(config, vocabulary, vocab_size, special_ids, input_paths, corpus_stats, instance_stats,
                   shard_counts, paths, shard_bytes):
    """The data set's metadata; `shard_bytes` are the shards' final sizes, which readers check. The vocabulary's
    kind, hash and `special_ids` are recorded: readers of the data (its report, the held-out [MASK] accuracy)
    take [SEP] and [MASK] from there, and run_pretraining checks that it is given the same vocabulary."""
    return {
        "format": DOCUMENTS_FORMAT if config.output_format == "documents" else INSTANCES_FORMAT,
        "format_version": FORMAT_VERSION,
        "config": config.to_json(),
        "max_seq_length": config.instances.max_seq_length,
        "max_predictions_per_seq": config.instances.masking.max_predictions_per_seq,
        "vocab_size": vocab_size,
        "special_ids": special_ids.to_json(),
        "vocabulary": vocabulary.kind,
        VOCABULARY_HASH_KEYS[vocabulary.kind]: vocabulary.sha256,
        "inputs": list(input_paths),
        "corpus": corpus_stats.to_json(),
        "statistics": instance_stats.to_json(),
        "shards": [{"file": os.path.basename(path), ("documents" if config.output_format == "documents" else
                                                     "instances"): count, "bytes": size}
                   for path, count, size in zip(paths, shard_counts, shard_bytes)],
    }


def check_outputs_made(config, set_stats, input_paths, corpus_stats):
    """Fails, before anything is written, when the training set or a requested held-out set would be empty."""
    train, heldout = set_stats
    if train.instances == 0 and train.documents == 0:
        raise ValueError(f"no instances could be made from {', '.join(input_paths)}: "
                         + ("; ".join(corpus_stats.problems()) or "no text"))
    if config.heldout_every and heldout.instances == 0:
        raise SettingError(f"no document was held out: holding out every {config.heldout_every}th document of a file "
                           f"(<heldout_every>) needs files of at least {config.heldout_every} documents (blank-line "
                           f"separated); {corpus_stats.documents} document(s) in {corpus_stats.files} file(s)")


def link_heldout_set(written):
    """Names each set of a run in the other's metadata. `written`: [(prefix, paths, metadata)], training set first."""
    if len(written) < 2:
        return
    (train_prefix, _, train), (heldout_prefix_, _, heldout) = written
    every = train["config"]["heldout_every"]
    train["heldout"] = {"output_file": os.path.basename(heldout_prefix_), "every": every,
                        "rule": f"document index % {every} == {every - 1} within each input file"}
    heldout["heldout_of"] = os.path.basename(train_prefix)


def incomplete_marker(output_prefix):
    """The metadata a data set holds while its shards are being replaced: readers refuse it."""
    return {"format": INSTANCES_FORMAT, "format_version": FORMAT_VERSION, "complete": False,
            "note": f"{os.path.basename(output_prefix)} is being (re)written; a reader that sees this file "
                    "found a run that stopped while replacing the shards"}
