"""Documents -> SOP (or NSP) sentence pairs with n-gram masking (docs/reference.md, "Pretraining data").

The original algorithm, per document and per duplication round:
  - target length = max_seq_length - 3, or with probability short_seq_prob a
    random length in [2, target];
  - fill a chunk with consecutive sentences up to the target; A = the first k
    sentences (k random), B = the rest;
  - SOP: with probability 0.5 swap A and B (label 1 = swapped, 0 = in order);
  - truncate the longer side one token at a time, from the front or the back
    at random, until [CLS] A [SEP] B [SEP] fits.

Decisions of this project (docs/reference.md, "Pretraining data"):
  - A one-sentence chunk has no second segment. The original takes B from a
    random other document, which puts NSP negatives into SOP data. By default
    (`single_segment="split"`) the sentence is split at a random word boundary
    instead, keeping SOP pure; `single_segment="other_document"` is the
    original behaviour.
  - `random_next_sentence=True` is NSP mode: B comes from a random other
    document with probability 0.5 (label 1).
  - Random other documents are drawn from the same pool of
    `random_document_pool` consecutive documents of a file, so a document never
    needs the whole corpus in memory.
  - Every random draw comes from a generator seeded by (seed, file index,
    document index): a document's instances do not depend on which process
    makes them, nor on what else is being made. Instances made afresh for
    training epoch e > 0 (albert_tf.data.dynamic_instances) add e to that seed;
    epoch 0 draws exactly what the static tool draws at dupe_factor 1.
"""

import collections
import dataclasses

import numpy as np

from albert_tf.data.masking import MaskingConfig, mask_batch
from albert_tf.albert_config import SIZE_LIMITS
from albert_tf.settings import POSITIVE_INTEGER, PROBABILITY, NumberRange, raise_problems
from albert_tf.text.albert_tokenizer import CLS_ID, SEP_ID

SINGLE_SEGMENT_MODES = ("split", "other_document")
# From room for [CLS] A [SEP] B [SEP] to the most positions an AlbertConfig allows: a longer row fits no
# model, and one of 10**9 tokens would exhaust memory padding the first batch.
SEQUENCE_LENGTH = NumberRange(5, SIZE_LIMITS["max_position_embeddings"], integer=True)
LENGTH_BUCKET = 32


@dataclasses.dataclass(frozen=True)
class InstanceConfig:
    max_seq_length: int = 512
    short_seq_prob: float = 0.1
    dupe_factor: int = 40
    random_next_sentence: bool = False
    single_segment: str = "split"
    random_document_pool: int = 100
    masking: MaskingConfig = MaskingConfig()

    def __post_init__(self):
        """SettingError naming each setting that cannot make instances (the masking settings are
        MaskingConfig's to check)."""
        length_problem = SEQUENCE_LENGTH.problem("max_seq_length", self.max_seq_length)
        errors = [length_problem, PROBABILITY.problem("short_seq_prob", self.short_seq_prob),
                  POSITIVE_INTEGER.problem("dupe_factor", self.dupe_factor),
                  POSITIVE_INTEGER.problem("random_document_pool", self.random_document_pool)]
        if self.single_segment not in SINGLE_SEGMENT_MODES:
            errors.append(f"<single_segment> must be one of {SINGLE_SEGMENT_MODES}, got {self.single_segment!r}")
        if not length_problem and self.masking.max_predictions_per_seq > self.max_seq_length:
            errors.append(f"<max_predictions_per_seq> {self.masking.max_predictions_per_seq} exceeds <max_seq_length> "
                          f"{self.max_seq_length}")
        raise_problems(errors)

    @property
    def uses_other_documents(self):
        return self.random_next_sentence or self.single_segment == "other_document"


@dataclasses.dataclass
class TokenizedDocument:
    """A document's identity and its sentences' ids, flat with sentence offsets."""

    file_index: int
    document_index: int
    tokens: np.ndarray  # int32, all sentences concatenated
    offsets: np.ndarray  # int64 [num_sentences + 1]

    @property
    def num_sentences(self):
        return len(self.offsets) - 1

    def span(self, first_sentence, end_sentence):
        return self.tokens[self.offsets[first_sentence] : self.offsets[end_sentence]]

    @classmethod
    def from_sentences(cls, file_index, document_index, sentence_ids):
        sentence_ids = [ids for ids in sentence_ids if len(ids)]
        lengths = [len(ids) for ids in sentence_ids]
        tokens = np.fromiter((i for ids in sentence_ids for i in ids), dtype=np.int32, count=sum(lengths))
        return cls(file_index, document_index, tokens, np.concatenate(([0], np.cumsum(lengths))).astype(np.int64))


def tokenize_documents(tokenizer, documents):
    """The corpus reader's `documents` (file_index, document_index, sentences) as TokenizedDocuments, all
    their sentences encoded in one batch; documents left with no sentence are dropped."""
    sentences = [sentence for document in documents for sentence in document.sentences]
    ids = tokenizer.encode_batch(sentences)
    tokenized, start = [], 0
    for document in documents:
        end = start + len(document.sentences)
        tokenized.append(TokenizedDocument.from_sentences(document.file_index, document.document_index, ids[start:end]))
        start = end
    return [document for document in tokenized if document.num_sentences]


@dataclasses.dataclass
class InstanceStats:
    """Exact counts of what was generated (recorded in the output's metadata)."""

    instances: int = 0
    tokens: int = 0
    documents: int = 0  # document records written (the documents format)
    sentences: int = 0
    masked: int = 0
    short_targets: int = 0
    single_segment_splits: int = 0
    skipped_chunks: int = 0
    labels: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    ngram_lengths: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    replacements: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    length_buckets: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def merge(self, other):
        for field in dataclasses.fields(self):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            if isinstance(mine, collections.Counter):
                mine.update(theirs)
            else:
                setattr(self, field.name, mine + theirs)

    def to_json(self):
        def keyed(counter):
            return {str(key): counter[key] for key in sorted(counter)}

        if self.documents:
            return {"documents": self.documents, "sentences": self.sentences, "tokens": self.tokens}
        return {
            "instances": self.instances,
            "tokens": self.tokens,
            "masked_tokens": self.masked,
            "short_target_instances": self.short_targets,
            "single_segment_splits": self.single_segment_splits,
            "skipped_chunks": self.skipped_chunks,
            "labels": keyed(self.labels),
            "ngram_lengths": keyed(self.ngram_lengths),
            "replacements": {name: self.replacements[kind] for kind, name in enumerate(("mask", "keep", "random"))},
            "length_buckets": keyed(self.length_buckets),
        }


def truncation_counts(length_a, length_b, max_tokens):
    """Tokens removed from A and from B by the original's truncation loop.

    The loop removes one token at a time from the longer side (B on ties) until
    the pair fits. First the longer side is cut until it is no longer the
    longer one; after that the sides alternate. In closed form, a megabyte-long
    sentence costs nothing extra.
    """
    excess = length_a + length_b - max_tokens
    if excess <= 0:
        return 0, 0
    if length_a > length_b:
        first = min(excess, length_a - length_b)  # A down to B's length; then B, A, B, ...
        rest = excess - first
        return first + rest // 2, (rest + 1) // 2
    first = min(excess, length_b - length_a + 1)  # B down to one below A; then A, B, A, ...
    rest = excess - first
    return (rest + 1) // 2, first + rest // 2


def _truncate(tokens, removed, rng):
    """Removes `removed` tokens, each from the front or the back with p=0.5."""
    if not removed:
        return tokens
    front = int(rng.binomial(removed, 0.5))
    return tokens[front : len(tokens) - (removed - front)]


class InstanceBuilder:
    """Builds and masks the training instances of documents.

    Args:
      config: InstanceConfig.
      word_start_table: bool [V], whether a piece starts a word (whole-word masking).
      random_piece_ids: int32 ids a random replacement may take.
      seed: the run's seed.
    """

    # Pairs are masked and padded in batches of about this many; a batch never
    # mixes documents, so its draws come from that document's generator alone.
    batch_size = 256

    def __init__(self, config, word_start_table, random_piece_ids, seed):
        self.config = config
        self.word_start_table = word_start_table
        self.random_piece_ids = random_piece_ids
        self.seed = seed
        self.cumulative = config.masking.ngram_cumulative_probabilities()

    def document_rng(self, document, epoch=0):
        entropy = [self.seed, document.file_index, document.document_index] + ([epoch] if epoch else [])
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))

    def build(self, document, pool, stats, epoch=0):
        """Yields (sort keys [n], int features, float features) batches of `document`'s instances.

        All dupe rounds; `pool` holds the documents other-document segments come from.
        Features are padded arrays in the original names (see INT_FEATURES).
        `epoch` > 0 draws another set of pairs and masks (dynamic instances).
        """
        rng = self.document_rng(document, epoch)
        pairs = []
        for _ in range(self.config.dupe_factor):
            pairs.extend(self._one_round(document, pool, stats, rng))
            if len(pairs) >= self.batch_size:
                yield self._assemble(pairs, stats, rng)
                pairs = []
        if pairs:
            yield self._assemble(pairs, stats, rng)

    def _one_round(self, document, pool, stats, rng):
        """Yields (tokens_a, tokens_b, label, short_target) for one pass over the document."""
        config = self.config
        max_tokens = config.max_seq_length - 3
        target = max_tokens
        short = False
        if rng.random() < config.short_seq_prob:
            target = int(rng.integers(2, max_tokens + 1))
            short = True
        offsets = document.offsets
        chunk_start = 0
        sentence = 0
        while sentence < document.num_sentences:
            if sentence < document.num_sentences - 1 and offsets[sentence + 1] - offsets[chunk_start] < target:
                sentence += 1
                continue
            chunk_end = sentence + 1
            num_segments = chunk_end - chunk_start
            a_end = chunk_start + 1 if num_segments == 1 else int(rng.integers(chunk_start + 1, chunk_end))
            tokens_a = document.span(chunk_start, a_end)
            label = 0
            next_chunk_start = chunk_end
            use_other_document = (num_segments == 1 and config.single_segment == "other_document") or (
                config.random_next_sentence and (num_segments == 1 or rng.random() < 0.5)
            )
            if use_other_document:
                tokens_b = self._other_document_segment(document, pool, target - len(tokens_a), rng)
                label = 1
                next_chunk_start = a_end  # the unused sentences start the next chunk
            elif num_segments == 1:
                split = self._split_point(tokens_a, rng)
                if split is None:
                    stats.skipped_chunks += 1
                    chunk_start = sentence = next_chunk_start
                    continue
                stats.single_segment_splits += 1
                tokens_a, tokens_b = tokens_a[:split], tokens_a[split:]
                if rng.random() < 0.5:
                    tokens_a, tokens_b, label = tokens_b, tokens_a, 1
            else:
                tokens_b = document.span(a_end, chunk_end)
                if not config.random_next_sentence and rng.random() < 0.5:
                    tokens_a, tokens_b, label = tokens_b, tokens_a, 1
            removed_a, removed_b = truncation_counts(len(tokens_a), len(tokens_b), max_tokens)
            yield _truncate(tokens_a, removed_a, rng), _truncate(tokens_b, removed_b, rng), label, short
            chunk_start = sentence = next_chunk_start

    def _split_point(self, tokens, rng):
        """A random word boundary strictly inside `tokens`, or None if it has < 2 tokens."""
        if len(tokens) < 2:
            return None
        boundaries = np.flatnonzero(self.word_start_table[tokens[1:]]) + 1
        if len(boundaries):
            return int(boundaries[rng.integers(len(boundaries))])
        return int(rng.integers(1, len(tokens)))

    def _other_document_segment(self, document, pool, target_length, rng):
        """Sentences of a random other pool document, from a random start, up to `target_length`."""
        choice = document
        # As the original: up to 10 tries to draw a document other than this one.
        for _ in range(10):
            choice = pool[int(rng.integers(len(pool)))]
            if choice is not document:
                break
        start = int(rng.integers(choice.num_sentences))
        end = start + 1
        while end < choice.num_sentences and choice.offsets[end] - choice.offsets[start] < target_length:
            end += 1
        return choice.span(start, end)

    def _assemble(self, pairs, stats, rng):
        """[CLS] A [SEP] B [SEP] for every pair, padded, masked; updates `stats`."""
        width = self.config.max_seq_length
        count = len(pairs)
        tokens = np.zeros((count, width), np.int32)
        lengths_a = np.fromiter((len(a) for a, _, _, _ in pairs), dtype=np.int64, count=count)
        lengths = lengths_a + np.fromiter((len(b) for _, b, _, _ in pairs), dtype=np.int64, count=count) + 3
        for row, (tokens_a, tokens_b, _, _) in enumerate(pairs):
            length_a = len(tokens_a)
            tokens[row, 1 : 1 + length_a] = tokens_a
            tokens[row, 2 + length_a : 2 + length_a + len(tokens_b)] = tokens_b
        rows = np.arange(count)
        tokens[rows, 0] = CLS_ID
        tokens[rows, lengths_a + 1] = SEP_ID
        tokens[rows, lengths - 1] = SEP_ID
        is_special = np.zeros((count, width), dtype=bool)
        is_special[rows, 0] = is_special[rows, lengths_a + 1] = is_special[rows, lengths - 1] = True
        columns = np.arange(width)[None, :]
        in_row = columns < lengths[:, None]
        masked = mask_batch(
            tokens, lengths, is_special, self.word_start_table, self.config.masking, self.cumulative,
            self.random_piece_ids, rng,
        )
        labels = np.array([label for _, _, label, _ in pairs], dtype=np.int32)
        stats.instances += count
        stats.tokens += int(lengths.sum())
        stats.masked += int(masked.weights.sum())
        stats.short_targets += sum(short for _, _, _, short in pairs)
        stats.labels.update(labels.tolist())
        stats.ngram_lengths.update(masked.ngram_lengths)
        stats.replacements.update(dict(enumerate(masked.replacement_counts.tolist())))
        stats.length_buckets.update(((lengths - 1) // LENGTH_BUCKET * LENGTH_BUCKET).tolist())
        sort_keys = rng.integers(0, 1 << 63, count, dtype=np.int64)
        int_features = {
            "input_ids": masked.input_ids,
            "input_mask": in_row.astype(np.int32),
            "segment_ids": ((columns >= lengths_a[:, None] + 2) & in_row).astype(np.int32),
            "token_boundary": ((self.word_start_table[tokens] | is_special) & in_row).astype(np.int32),
            "masked_lm_positions": masked.positions,
            "masked_lm_ids": masked.labels,
            "next_sentence_labels": labels[:, None],
        }
        return sort_keys, int_features, {"masked_lm_weights": masked.weights}


# The original feature names (docs/reference.md, "Pretraining data").
INT_FEATURES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "token_boundary",
    "masked_lm_positions",
    "masked_lm_ids",
    "next_sentence_labels",
)
FLOAT_FEATURES = ("masked_lm_weights",)
