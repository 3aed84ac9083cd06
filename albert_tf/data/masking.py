"""ALBERT's n-gram masked-LM selection (docs/reference.md, "Pretraining data"), for a batch of sequences.

Spans are n consecutive whole words, n in 1..ngram with p(n) ∝ 1/n (6/11, 3/11,
2/11 for ngram=3; reversed with favor_shorter_ngram=False, as in the original).
Candidate start words are visited in random order; a span that would exceed the
budget is retried shorter (n-1, ..., 1) and skipped if even one word does not
fit; spans that touch an already-masked word are skipped. Near the end of a
sequence a span is clipped to the words that remain (n is still drawn from the
full distribution, as in the original). The budget is min(max_predictions_per_seq, max(1, round(len(tokens) *
masked_lm_prob))), with [CLS]/[SEP] counted in len(tokens), as in the original.
Each selected token becomes [MASK] with p=0.8, stays with p=0.1, or becomes a
random piece with p=0.1, drawn uniformly from the ids the caller passes (the
data tools pass the whole vocabulary, special pieces included, as the original).

Words are grouped over the row's tokens other than [CLS]/[SEP], as in the
original: those are never masked and do not end a word, so a continuation piece
right after [SEP] (left by front truncation of B) belongs to A's last word, and
a span of n words may reach across [SEP]. Only a row's first piece starts a word
whatever it is.

Unlike the original, every draw comes from the caller's seeded generator (the
original drew n from numpy's global, unseeded RNG). All sequences of a batch
are handled with one set of NumPy operations; only the span-selection loop
runs per sequence, on Python ints.
"""

import dataclasses

import numpy as np

from albert_tf.settings import POSITIVE_INTEGER, NumberRange, raise_problems


# The share of tokens to mask. 0 would write instances with no prediction at all: pretraining on them
# learns nothing from its masked-LM loss (a zero-weight average), without saying so.
MASKED_LM_PROB = NumberRange(low=0, high=1, low_open=True)


@dataclasses.dataclass(frozen=True)
class MaskingConfig:
    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    ngram: int = 3
    favor_shorter_ngram: bool = True
    do_whole_word_mask: bool = True

    def __post_init__(self):
        """SettingError naming each setting that cannot mask."""
        raise_problems([MASKED_LM_PROB.problem("masked_lm_prob", self.masked_lm_prob),
                        POSITIVE_INTEGER.problem("max_predictions_per_seq", self.max_predictions_per_seq),
                        POSITIVE_INTEGER.problem("ngram", self.ngram)])

    def ngram_probabilities(self):
        probabilities = 1.0 / np.arange(1, self.ngram + 1)
        if not self.favor_shorter_ngram:
            probabilities = probabilities[::-1]
        return probabilities / probabilities.sum()

    def ngram_cumulative_probabilities(self):
        """The CDF of n, for drawing by inverse transform."""
        return np.cumsum(self.ngram_probabilities())


@dataclasses.dataclass
class MaskedBatch:
    input_ids: np.ndarray  # int32 [N, S], replacements applied, zero padding
    positions: np.ndarray  # int32 [N, P], ascending per row, zero padding
    labels: np.ndarray  # int32 [N, P], the original ids
    weights: np.ndarray  # float32 [N, P], 1.0 for real predictions
    ngram_lengths: list  # n of every selected span (for statistics)
    replacement_counts: np.ndarray  # int64 [3]: [MASK], kept, random


def mask_batch(tokens, lengths, is_special, word_start_table, config, cumulative, random_piece_ids, rng,
               word_starts=None, *, mask_id):
    """Chooses and applies the masked-LM predictions of N sequences.

    Args:
      tokens: int32 [N, S] token ids, zero padded past `lengths`.
      lengths: int [N] real lengths.
      is_special: bool [N, S], True at [CLS]/[SEP].
      word_start_table: bool [V], whether a piece starts a word.
      word_starts: bool [N, S], whether the token at each position starts a word, where that depends on more
        than the piece (pre-segmented Chinese or Japanese: albert_tf.text.segmented_text); None: the table's.
      config: MaskingConfig; cumulative: config.ngram_cumulative_probabilities() (passed
        in so it is computed once, not per batch).
      random_piece_ids: ids a random replacement may take.
      rng: numpy Generator.
      mask_id: the vocabulary's [MASK] (`tokenizer.special_ids.mask`).
    """
    count, width = tokens.shape
    max_predictions = config.max_predictions_per_seq
    output = tokens.copy()
    positions = np.zeros((count, max_predictions), np.int32)
    labels = np.zeros((count, max_predictions), np.int32)
    weights = np.zeros((count, max_predictions), np.float32)
    lengths = np.asarray(lengths, dtype=np.int64)
    if count == 0:
        return MaskedBatch(output, positions, labels, weights, [], np.zeros(3, np.int64))

    # Words, over the candidates (the batch's tokens other than [CLS]/[SEP] and padding, in row order):
    # word w is candidates [word_starts[w], word_starts[w + 1]). A row's first candidate always starts a
    # word, so no word runs past its row.
    in_row = np.arange(width)[None, :] < lengths[:, None]
    candidate_positions = np.flatnonzero(in_row & ~is_special)  # flat positions, ascending
    candidate_rows = candidate_positions // width
    if not config.do_whole_word_mask:
        starts_word = np.ones(len(candidate_positions), bool)
    elif word_starts is not None:
        starts_word = word_starts.ravel()[candidate_positions]
    else:
        starts_word = word_start_table[tokens.ravel()[candidate_positions]]
    starts_word[np.flatnonzero(np.diff(candidate_rows, prepend=-1))] = True
    word_starts = np.flatnonzero(starts_word)
    word_row = candidate_rows[word_starts]
    words_per_row = np.bincount(word_row, minlength=count)
    first_word = np.concatenate(([0], np.cumsum(words_per_row)))

    # Random visiting order within each row, and each candidate's n.
    num_words = len(word_starts)
    uniforms = rng.random(2 * num_words)
    order = np.lexsort((uniforms[:num_words], word_row)).tolist()
    ngram_draws = np.searchsorted(cumulative, uniforms[num_words:], side="right") + 1
    remaining = first_word[word_row + 1] - np.arange(num_words)  # words left in the row from each word
    span_words = np.minimum(np.minimum(ngram_draws, config.ngram), remaining).tolist()
    token_prefix = np.append(word_starts, len(candidate_positions))  # tokens in words [0, w), batch-wide
    word_sizes = np.diff(token_prefix)
    token_prefix = token_prefix.tolist()
    # np.round rounds halves to even, like the original's Python round().
    budgets = np.minimum(max_predictions, np.maximum(1, np.round(lengths * config.masked_lm_prob))).astype(int).tolist()

    covered = [False] * num_words
    ngram_lengths = []
    for row in range(count):
        budget = budgets[row]
        masked = 0
        row_order = order[first_word[row] : first_word[row + 1]]
        for word in row_order:
            if masked >= budget:
                break
            n = span_words[word]
            while n > 0 and masked + token_prefix[word + n] - token_prefix[word] > budget:
                n -= 1
            if n == 0 or True in covered[word : word + n]:
                continue
            covered[word : word + n] = [True] * n
            ngram_lengths.append(n)
            masked += token_prefix[word + n] - token_prefix[word]

    # Masked tokens, in position order within each row.
    chosen_words = np.flatnonzero(covered)
    chosen_sizes = word_sizes[chosen_words]
    chosen_candidates = np.repeat(word_starts[chosen_words], chosen_sizes) + _ranges_within(chosen_sizes)
    flat_positions = candidate_positions[chosen_candidates]
    rows = flat_positions // width
    slots = np.arange(len(rows)) - np.searchsorted(rows, rows)  # index among the row's predictions
    columns = flat_positions % width
    original = tokens.ravel()[flat_positions]

    total = len(flat_positions)
    draws = rng.random(3 * total)
    # 80% [MASK]; otherwise keep or random with equal odds (10% / 10%).
    kinds = ((draws[:total] >= 0.8) * (1 + (draws[total : 2 * total] >= 0.5))).astype(np.int8)
    random_ids = random_piece_ids[(draws[2 * total :] * len(random_piece_ids)).astype(np.int64)]
    output.ravel()[flat_positions] = np.where(kinds == 0, mask_id, np.where(kinds == 1, original, random_ids))
    positions[rows, slots] = columns
    labels[rows, slots] = original
    weights[rows, slots] = 1.0
    return MaskedBatch(output, positions, labels, weights, ngram_lengths, np.bincount(kinds, minlength=3))


def _ranges_within(sizes):
    """[0..s0-1, 0..s1-1, ...] for sizes [s0, s1, ...]."""
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    return np.arange(total) - starts

