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
from albert_tf.text.segmented_text import encode_segmented

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
    """A document's identity and its sentences' ids, flat with sentence offsets; and, for text whose words
    a segmenter marked (pre-segmented Chinese or Japanese), whether each token starts a word (without it, the
    vocabulary's word_start_table says, by piece)."""

    file_index: int
    document_index: int
    tokens: np.ndarray  # int32, all sentences concatenated
    offsets: np.ndarray  # int64 [num_sentences + 1]
    word_starts: np.ndarray | None = None  # bool, one per token

    @property
    def num_sentences(self):
        return len(self.offsets) - 1

    def span(self, first_sentence, end_sentence):
        return self.tokens[self.offsets[first_sentence] : self.offsets[end_sentence]]

    def starts_span(self, first_sentence, end_sentence):
        """`word_starts` of span(first_sentence, end_sentence), or None where the document has none."""
        if self.word_starts is None:
            return None
        return self.word_starts[self.offsets[first_sentence] : self.offsets[end_sentence]]

    @classmethod
    def from_sentences(cls, file_index, document_index, sentence_ids, sentence_starts=None):
        kept = [index for index, ids in enumerate(sentence_ids) if len(ids)]
        sentence_ids = [sentence_ids[index] for index in kept]
        lengths = [len(ids) for ids in sentence_ids]
        tokens = np.fromiter((i for ids in sentence_ids for i in ids), dtype=np.int32, count=sum(lengths))
        word_starts = None if sentence_starts is None else np.concatenate(
            [np.zeros(0, bool)] + [sentence_starts[index] for index in kept])
        return cls(file_index, document_index, tokens, np.concatenate(([0], np.cumsum(lengths))).astype(np.int64),
                   word_starts)


def tokenize_documents(tokenizer, documents, pre_segmented=False, segmented_pieces=None):
    """The corpus reader's `documents` (file_index, document_index, sentences) as TokenizedDocuments, all
    their sentences encoded in one batch; documents left with no sentence are dropped. `pre_segmented`: the
    sentences are Chinese or Japanese words separated by spaces (albert_tf.text.segmented_text), whose
    boundaries become the documents' word starts; `segmented_pieces` is that module's
    unsegmented_piece_table(tokenizer), computed once by the caller."""
    sentences = [sentence for document in documents for sentence in document.sentences]
    if pre_segmented:
        encoded = encode_segmented(tokenizer, sentences, segmented_pieces)
        ids, starts = [ids for ids, _ in encoded], [starts for _, starts in encoded]
    else:
        ids, starts = tokenizer.encode_batch(sentences), None
    tokenized, start = [], 0
    for document in documents:
        end = start + len(document.sentences)
        tokenized.append(TokenizedDocument.from_sentences(document.file_index, document.document_index, ids[start:end],
                                                          None if starts is None else starts[start:end]))
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


def _truncate(tokens, removed, rng, starts=None):
    """(tokens, starts) with `removed` tokens taken off, each from the front or the back with p=0.5, and the
    same taken off `starts` (a token's word start flags, or None)."""
    if not removed:
        return tokens, starts
    front = int(rng.binomial(removed, 0.5))
    end = len(tokens) - (removed - front)
    return tokens[front:end], None if starts is None else starts[front:end]


class InstanceBuilder:
    """Builds and masks the training instances of documents.

    Args:
      config: InstanceConfig.
      word_start_table: bool [V], whether a piece starts a word (whole-word masking).
      random_piece_ids: int32 ids a random replacement may take.
      seed: the run's seed.
      special_ids: the vocabulary's ([CLS], [SEP], [MASK]): `tokenizer.special_ids`.
    """

    # Pairs are masked and padded in batches of about this many; a batch never
    # mixes documents, so its draws come from that document's generator alone.
    batch_size = 256

    def __init__(self, config, word_start_table, random_piece_ids, seed, *, special_ids):
        self.config = config
        self.special_ids = special_ids
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
        """Yields (tokens_a, tokens_b, label, short_target, starts_a, starts_b) for one pass over the document;
        starts_* are the tokens' word starts where the document has its own (`word_starts`), else None."""
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
            tokens_a, starts_a = document.span(chunk_start, a_end), document.starts_span(chunk_start, a_end)
            label = 0
            next_chunk_start = chunk_end
            use_other_document = (num_segments == 1 and config.single_segment == "other_document") or (
                config.random_next_sentence and (num_segments == 1 or rng.random() < 0.5)
            )
            if use_other_document:
                tokens_b, starts_b = self._other_document_segment(document, pool, target - len(tokens_a), rng)
                label = 1
                next_chunk_start = a_end  # the unused sentences start the next chunk
            elif num_segments == 1:
                split = self._split_point(tokens_a, starts_a, rng)
                if split is None:
                    stats.skipped_chunks += 1
                    chunk_start = sentence = next_chunk_start
                    continue
                stats.single_segment_splits += 1
                tokens_a, tokens_b = tokens_a[:split], tokens_a[split:]
                starts_b = None if starts_a is None else starts_a[split:]
                starts_a = None if starts_a is None else starts_a[:split]
                if rng.random() < 0.5:
                    tokens_a, tokens_b, starts_a, starts_b, label = tokens_b, tokens_a, starts_b, starts_a, 1
            else:
                tokens_b, starts_b = document.span(a_end, chunk_end), document.starts_span(a_end, chunk_end)
                if not config.random_next_sentence and rng.random() < 0.5:
                    tokens_a, tokens_b, starts_a, starts_b, label = tokens_b, tokens_a, starts_b, starts_a, 1
            removed_a, removed_b = truncation_counts(len(tokens_a), len(tokens_b), max_tokens)
            tokens_a, starts_a = _truncate(tokens_a, removed_a, rng, starts_a)
            tokens_b, starts_b = _truncate(tokens_b, removed_b, rng, starts_b)
            yield tokens_a, tokens_b, label, short, starts_a, starts_b
            chunk_start = sentence = next_chunk_start

    def _split_point(self, tokens, starts, rng):
        """A random word boundary strictly inside `tokens` (`starts`: their word starts, or None for the
        table's), or None if it has < 2 tokens."""
        if len(tokens) < 2:
            return None
        boundaries = np.flatnonzero(self.word_start_table[tokens[1:]] if starts is None else starts[1:]) + 1
        if len(boundaries):
            return int(boundaries[rng.integers(len(boundaries))])
        return int(rng.integers(1, len(tokens)))

    def _other_document_segment(self, document, pool, target_length, rng):
        """(tokens, word starts or None) of sentences of a random other pool document, from a random start, up to
        `target_length`."""
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
        return choice.span(start, end), choice.starts_span(start, end)

    def _assemble(self, pairs, stats, rng):
        """[CLS] A [SEP] B [SEP] for every pair, padded, masked; updates `stats`."""
        width = self.config.max_seq_length
        count = len(pairs)
        tokens = np.zeros((count, width), np.int32)
        lengths_a = np.fromiter((len(pair[0]) for pair in pairs), dtype=np.int64, count=count)
        lengths = lengths_a + np.fromiter((len(pair[1]) for pair in pairs), dtype=np.int64, count=count) + 3
        for row, (tokens_a, tokens_b, *_) in enumerate(pairs):
            length_a = len(tokens_a)
            tokens[row, 1 : 1 + length_a] = tokens_a
            tokens[row, 2 + length_a : 2 + length_a + len(tokens_b)] = tokens_b
        rows = np.arange(count)
        tokens[rows, 0] = self.special_ids.cls
        tokens[rows, lengths_a + 1] = self.special_ids.sep
        tokens[rows, lengths - 1] = self.special_ids.sep
        is_special = np.zeros((count, width), dtype=bool)
        is_special[rows, 0] = is_special[rows, lengths_a + 1] = is_special[rows, lengths - 1] = True
        columns = np.arange(width)[None, :]
        in_row = columns < lengths[:, None]
        word_starts = self._word_starts(pairs, tokens)
        masked = mask_batch(
            tokens, lengths, is_special, self.word_start_table, self.config.masking, self.cumulative,
            self.random_piece_ids, rng, word_starts, mask_id=self.special_ids.mask,
        )
        labels = np.array([pair[2] for pair in pairs], dtype=np.int32)
        stats.instances += count
        stats.tokens += int(lengths.sum())
        stats.masked += int(masked.weights.sum())
        stats.short_targets += sum(pair[3] for pair in pairs)
        stats.labels.update(labels.tolist())
        stats.ngram_lengths.update(masked.ngram_lengths)
        stats.replacements.update(dict(enumerate(masked.replacement_counts.tolist())))
        stats.length_buckets.update(((lengths - 1) // LENGTH_BUCKET * LENGTH_BUCKET).tolist())
        sort_keys = rng.integers(0, 1 << 63, count, dtype=np.int64)
        int_features = {
            "input_ids": masked.input_ids,
            "input_mask": in_row.astype(np.int32),
            "segment_ids": ((columns >= lengths_a[:, None] + 2) & in_row).astype(np.int32),
            "token_boundary": (((self.word_start_table[tokens] if word_starts is None else word_starts) | is_special)
                               & in_row).astype(np.int32),
            "masked_lm_positions": masked.positions,
            "masked_lm_ids": masked.labels,
            "next_sentence_labels": labels[:, None],
        }
        return sort_keys, int_features, {"masked_lm_weights": masked.weights}

    def _word_starts(self, pairs, tokens):
        """bool [N, S]: whether each position's token starts a word, for pairs whose documents carry their own
        word starts (pre-segmented text; other positions: the table's); None where no pair does."""
        if all(pair[4] is None and pair[5] is None for pair in pairs):
            return None
        word_starts = self.word_start_table[tokens]
        for row, (tokens_a, tokens_b, _, _, starts_a, starts_b) in enumerate(pairs):
            length_a = len(tokens_a)
            if starts_a is not None:
                word_starts[row, 1 : 1 + length_a] = starts_a
            if starts_b is not None:
                word_starts[row, 2 + length_a : 2 + length_a + len(tokens_b)] = starts_b
        return word_starts


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
