"""Instance building and masking, on synthetic token ids whose values say where they came from."""

import collections

import numpy as np
import pytest

from albert_tf.data.masking import MaskingConfig, mask_batch
from albert_tf.data.pretraining_instances import (
    InstanceBuilder,
    InstanceConfig,
    InstanceStats,
    TokenizedDocument,
    truncation_counts,
)
from albert_tf.text.albert_tokenizer import CLS_ID, MASK_ID, SEP_ID
from albert_tf.text.special_ids import ALBERT_SPECIAL_IDS

# Token id = 10_000 * (document + 1) + 100 * sentence + position: every token
# tells its document, sentence and place. All ids start words, except odd ones.
VOCAB = 200_000
WORD_STARTS = np.ones(VOCAB, dtype=bool)
WORD_STARTS[1::2] = False
WORD_STARTS[:5] = True
ORDINARY_IDS = np.arange(5, VOCAB, dtype=np.int32)


def document(index, sentence_lengths):
    sentences = [[10_000 * (index + 1) + 100 * s + p for p in range(length)] for s, length in enumerate(sentence_lengths)]
    return TokenizedDocument.from_sentences(0, index, sentences)


def unmasked_instances(config, documents, seed=0):
    """(input_ids, segment_ids, length, label) rows of every instance, each masked token put back."""
    builder = InstanceBuilder(config, WORD_STARTS, ORDINARY_IDS, seed, special_ids=ALBERT_SPECIAL_IDS)
    stats = InstanceStats()
    rows = []
    for doc in documents:
        for _, ints, _ in builder.build(doc, documents, stats):
            for ids, segments, mask, label, positions, originals in zip(
                    ints["input_ids"], ints["segment_ids"], ints["input_mask"], ints["next_sentence_labels"][:, 0],
                    ints["masked_lm_positions"], ints["masked_lm_ids"]):
                ids = ids.copy()
                predicted = positions > 0  # padding slots hold position 0, [CLS], which is never masked
                ids[positions[predicted]] = originals[predicted]
                rows.append((ids, segments, int(mask.sum()), int(label)))
    return rows, stats


def segments_of(ids, segments, length):
    assert ids[0] == CLS_ID and ids[length - 1] == SEP_ID
    first_sep = int(np.flatnonzero(ids[:length] == SEP_ID)[0])
    assert (segments[: first_sep + 1] == 0).all() and (segments[first_sep + 1 : length] == 1).all()
    assert (ids[length:] == 0).all() and (segments[length:] == 0).all()
    return ids[1:first_sep], ids[first_sep + 1 : length - 1]


def is_contiguous(tokens):
    """Consecutive positions of consecutive sentences of one document."""
    keys = [(t // 10_000, (t % 10_000) // 100, t % 100) for t in tokens.tolist()]
    for (doc_a, sent_a, pos_a), (doc_b, sent_b, pos_b) in zip(keys, keys[1:]):
        if doc_a != doc_b or not ((sent_b == sent_a and pos_b == pos_a + 1) or (sent_b == sent_a + 1 and pos_b == 0)):
            return False
    return True


def test_sop_pairs_are_consecutive_segments_in_order_or_swapped():
    documents = [document(d, [7, 12, 5, 9, 20, 3, 8, 15, 6]) for d in range(4)]
    config = InstanceConfig(max_seq_length=32, dupe_factor=5, short_seq_prob=0.2)
    rows, stats = unmasked_instances(config, documents)
    labels = collections.Counter()
    for ids, segments, length, label in rows:
        a, b = segments_of(ids, segments, length)
        assert len(a) >= 1 and len(b) >= 1
        assert is_contiguous(a) and is_contiguous(b)
        assert a[0] // 10_000 == b[0] // 10_000  # SOP never mixes documents
        first, second = (a, b) if label == 0 else (b, a)
        # In order: the first segment ends before the second starts.
        assert (first[-1] % 10_000) < (second[0] % 10_000)
        labels[label] += 1
    assert abs(labels[1] / sum(labels.values()) - 0.5) < 0.1
    assert stats.instances == len(rows)


def test_one_sentence_chunks_are_split_not_taken_from_other_documents():
    documents = [document(d, [40]) for d in range(3)]  # each document: one long sentence
    config = InstanceConfig(max_seq_length=64, dupe_factor=4, short_seq_prob=0.0)
    rows, stats = unmasked_instances(config, documents)
    assert stats.single_segment_splits == len(rows) > 0
    for ids, segments, length, label in rows:
        a, b = segments_of(ids, segments, length)
        first, second = (a, b) if label == 0 else (b, a)
        assert is_contiguous(np.concatenate([first, second]))  # one sentence, cut in two
        assert WORD_STARTS[second[0]]  # at a word boundary


def test_original_single_segment_mode_takes_b_from_another_document():
    documents = [document(d, [40]) for d in range(3)]
    config = InstanceConfig(max_seq_length=64, dupe_factor=4, short_seq_prob=0.0, single_segment="other_document")
    rows, _ = unmasked_instances(config, documents)
    for ids, segments, length, label in rows:
        a, b = segments_of(ids, segments, length)
        assert label == 1 and a[0] // 10_000 != b[0] // 10_000


def test_nsp_mode_mixes_random_documents_with_label_one():
    # Long documents: a document's last, one-sentence chunk is always a random
    # next (as in the original), which would skew short documents toward label 1.
    documents = [document(d, [6, 8, 7, 9, 5, 6, 7] * 8) for d in range(5)]
    config = InstanceConfig(max_seq_length=32, dupe_factor=6, random_next_sentence=True)
    rows, _ = unmasked_instances(config, documents)
    random_next = 0
    for ids, segments, length, label in rows:
        a, b = segments_of(ids, segments, length)
        same_document = a[0] // 10_000 == b[0] // 10_000
        if label == 0:
            assert same_document and (a[-1] % 10_000) < (b[0] % 10_000)  # NSP positives are never swapped
        random_next += label
        if not same_document:
            assert label == 1
    assert 0.42 < random_next / len(rows) < 0.6


def test_truncation_counts_equal_the_original_loop():
    for length_a in range(0, 25):
        for length_b in range(0, 25):
            for max_tokens in range(1, 30):
                a, b = length_a, length_b
                while a + b > max_tokens:
                    if a > b:
                        a -= 1
                    else:
                        b -= 1
                assert truncation_counts(length_a, length_b, max_tokens) == (length_a - a, length_b - b)


def test_truncation_cuts_both_ends_and_fills_the_sequence():
    documents = [document(0, [60, 70])]
    config = InstanceConfig(max_seq_length=40, dupe_factor=30, short_seq_prob=0.0)
    rows, _ = unmasked_instances(config, documents)
    fronts_cut = backs_cut = 0
    for ids, segments, length, label in rows:
        assert length == 40
        a, b = segments_of(ids, segments, length)
        for segment in (a, b):
            fronts_cut += segment[0] % 100 != 0
            backs_cut += segment[-1] % 100 not in (59, 69)
    assert fronts_cut > 0 and backs_cut > 0


def test_short_targets_follow_short_seq_prob():
    documents = [document(d, [5] * 40) for d in range(10)]
    config = InstanceConfig(max_seq_length=64, dupe_factor=20, short_seq_prob=1.0)
    rows, stats = unmasked_instances(config, documents)
    assert stats.short_targets == stats.instances
    assert np.mean([length for _, _, length, _ in rows]) < 45  # targets uniform in [2, 61]


def test_same_document_identity_gives_the_same_instances_whatever_else_is_built():
    documents = [document(d, [6, 9, 4, 8, 7]) for d in range(3)]
    config = InstanceConfig(max_seq_length=24, dupe_factor=3)
    builder = InstanceBuilder(config, WORD_STARTS, ORDINARY_IDS, seed=5, special_ids=ALBERT_SPECIAL_IDS)
    alone = list(builder.build(documents[1], documents[1:2], InstanceStats()))
    builder.build(documents[0], documents, InstanceStats())
    again = list(builder.build(documents[1], documents[1:2], InstanceStats()))
    for (keys_a, ints_a, _), (keys_b, ints_b, _) in zip(alone, again, strict=True):
        np.testing.assert_array_equal(keys_a, keys_b)
        for name in ints_a:
            np.testing.assert_array_equal(ints_a[name], ints_b[name])


# --- Masking ---------------------------------------------------------------


def batch_of_sequences(count, length, seed=0):
    """[CLS] a [SEP] b [SEP] rows of random ordinary ids, with varied lengths."""
    rng = np.random.default_rng(seed)
    tokens = np.zeros((count, length), np.int32)
    lengths = rng.integers(length // 2, length + 1, count)
    is_special = np.zeros((count, length), bool)
    for row, row_length in enumerate(lengths):
        tokens[row, :row_length] = rng.integers(5, 1000, row_length)
        separator = rng.integers(2, row_length - 2)
        for position, token in ((0, CLS_ID), (separator, SEP_ID), (row_length - 1, SEP_ID)):
            tokens[row, position] = token
            is_special[row, position] = True
    return tokens, lengths, is_special


def run_masking(config, count=400, length=128, seed=0):
    tokens, lengths, is_special = batch_of_sequences(count, length, seed)
    word_starts = np.zeros(1000, bool)
    word_starts[::3] = True  # words of one to several pieces
    word_starts[:5] = True
    # The whole vocabulary as the replacement pool, special ids included, as the data tools pass it.
    masked = mask_batch(tokens, lengths, is_special, word_starts, config, config.ngram_cumulative_probabilities(),
                        np.arange(1000, dtype=np.int32), np.random.default_rng(seed), mask_id=MASK_ID)
    return tokens, lengths, is_special, word_starts, masked


def test_masking_respects_budget_specials_and_whole_words():
    config = MaskingConfig(max_predictions_per_seq=20)
    tokens, lengths, is_special, word_starts, masked = run_masking(config)
    words_across_separator = 0
    for row, length in enumerate(lengths):
        count = int(masked.weights[row].sum())
        positions = masked.positions[row, :count]
        budget = min(20, max(1, int(round(length * 0.15))))
        assert 0 < count <= budget
        assert count >= budget - 3  # the loop only stops short when no remaining word fits
        assert (np.diff(positions) > 0).all() and (positions < length).all()
        assert not is_special[row, positions].any()
        np.testing.assert_array_equal(masked.labels[row, :count], tokens[row, positions])
        assert (masked.weights[row, count:] == 0).all() and (masked.positions[row, count:] == 0).all()
        masked_set = set(positions.tolist())
        # Whole words, grouped over the pieces other than [CLS]/[SEP] as in the original: a continuation
        # piece is masked exactly when the piece before it is, across a [SEP] too (A's last word).
        pieces = [position for position in range(length) if not is_special[row, position]]
        for before, after in zip(pieces, pieces[1:]):
            if not word_starts[tokens[row, after]]:
                assert (before in masked_set) == (after in masked_set), (row, before, after)
                words_across_separator += after - before > 1 and after in masked_set
        unmasked = np.setdiff1d(np.arange(length), positions)
        np.testing.assert_array_equal(masked.input_ids[row, unmasked], tokens[row, unmasked])
    assert words_across_separator > 0  # the batch has words that continue after a [SEP], and masks some


def test_replacements_are_80_10_10():
    config = MaskingConfig(max_predictions_per_seq=40)
    tokens, lengths, _, _, masked = run_masking(config, count=2000)
    rows, slots = np.nonzero(masked.weights)
    shown = masked.input_ids[rows, masked.positions[rows, slots]]
    truth = masked.labels[rows, slots]
    total = len(shown)
    assert total > 25_000  # the 0.01 tolerances below are then > 4 standard deviations
    mask = (shown == MASK_ID).mean()
    keep = ((shown != MASK_ID) & (shown == truth)).mean()
    assert abs(mask - 0.8) < 0.01 and abs(keep - 0.1) < 0.01  # random = the rest, ~10%
    np.testing.assert_array_equal(masked.replacement_counts.sum(), total)
    # Random ids come uniformly from the whole pool, the special ids included (the original draws from its
    # whole vocabulary; a random [MASK] looks like any other here): the lower half gets half the draws.
    random_ids = shown[(shown != MASK_ID) & (shown != truth)]
    assert (random_ids < 4).any()
    assert abs((random_ids < 500).mean() - 0.5) < 0.04


def original_selection(tokens, length, is_special, word_starts, config, rng):
    """The original create_masked_lm_predictions' span selection, transcribed loop for loop.

    Returns the words of every accepted span and the number of masked tokens. [CLS]/[SEP] are skipped
    without ending a word: a continuation piece after [SEP] joins the word before it.
    """
    candidates = []
    for index in range(length):
        if is_special[index]:
            continue
        if candidates and not word_starts[tokens[index]]:
            candidates[-1].append(index)
        else:
            candidates.append([index])
    budget = min(config.max_predictions_per_seq, max(1, int(round(length * config.masked_lm_prob))))
    ngrams = list(range(1, config.ngram + 1))
    pvals = [1.0 / n for n in ngrams]
    if not config.favor_shorter_ngram:
        pvals = pvals[::-1]
    # For every start word, the slices for n = 1..ngram (shorter at the end of the sequence).
    ngram_indexes = [[candidates[i : i + n] for n in ngrams] for i in range(len(candidates))]
    rng.shuffle(ngram_indexes)
    covered, masked, accepted = set(), 0, []
    for candidate_set in ngram_indexes:
        if masked >= budget:
            break
        n = rng.choices(ngrams, weights=pvals)[0]
        index_set = sum(candidate_set[n - 1], [])
        n -= 1
        while masked + len(index_set) > budget:
            if n == 0:
                break
            index_set = sum(candidate_set[n - 1], [])
            n -= 1
        if masked + len(index_set) > budget or any(index in covered for index in index_set):
            continue
        covered.update(index_set)
        masked += len(index_set)
        accepted.append(len(candidate_set[n]))
    return accepted, masked


@pytest.mark.parametrize("config", [
    MaskingConfig(max_predictions_per_seq=20),
    MaskingConfig(max_predictions_per_seq=80),
    MaskingConfig(max_predictions_per_seq=80, favor_shorter_ngram=False),
], ids=["budget20", "budget80", "favor_longer"])
def test_accepted_spans_match_the_original_algorithm(config):
    import random

    # p(n) ∝ 1/n is the proposal; overlaps and the budget reject long spans more
    # often, in the original as here. So compare what is accepted.
    tokens, lengths, is_special, word_starts, masked = run_masking(config, count=1500, length=256)
    ours = collections.Counter(masked.ngram_lengths)
    reference, reference_masked = collections.Counter(), 0
    rng = random.Random(0)
    for row, length in enumerate(lengths):
        accepted, count = original_selection(tokens[row], length, is_special[row], word_starts, config, rng)
        reference.update(accepted)
        reference_masked += count
    ours_total, reference_total = sum(ours.values()), sum(reference.values())
    for n in (1, 2, 3):
        assert abs(ours[n] / ours_total - reference[n] / reference_total) < 0.02, (n, ours, reference)
    assert abs(masked.weights.sum() / reference_masked - 1) < 0.01


def test_proposed_ngram_lengths_are_one_over_n():
    np.testing.assert_allclose(MaskingConfig().ngram_probabilities(), [6 / 11, 3 / 11, 2 / 11])
    np.testing.assert_allclose(MaskingConfig(favor_shorter_ngram=False).ngram_probabilities(), [2 / 11, 3 / 11, 6 / 11])
    # With one-piece words, a tiny rate and a large budget, overlaps and the
    # budget rarely interfere: accepted lengths approach the proposal.
    config = MaskingConfig(masked_lm_prob=0.03, max_predictions_per_seq=100)
    tokens, lengths, is_special = batch_of_sequences(3000, 512, seed=4)
    masked = mask_batch(tokens, lengths, is_special, np.ones(1000, bool), config,
                        config.ngram_cumulative_probabilities(), np.arange(5, 1000, dtype=np.int32),
                        np.random.default_rng(4), mask_id=MASK_ID)
    counts = collections.Counter(masked.ngram_lengths)
    total = sum(counts.values())
    for n, expected in zip((1, 2, 3), (6 / 11, 3 / 11, 2 / 11)):
        assert abs(counts[n] / total - expected) < 0.04, (n, counts[n] / total)


def test_masking_is_deterministic_for_a_seed():
    config = MaskingConfig()
    first = run_masking(config, count=50, seed=3)[-1]
    second = run_masking(config, count=50, seed=3)[-1]
    np.testing.assert_array_equal(first.input_ids, second.input_ids)
    np.testing.assert_array_equal(first.positions, second.positions)


@pytest.mark.parametrize("bad, message", [
    ({"max_seq_length": 4}, r"max_seq_length must be an integer in \[5, 65536\], got 4"),
    ({"dupe_factor": 0}, "dupe_factor must be a positive integer, got 0"),
    ({"single_segment": "drop"}, "single_segment must be one of"),
    ({"masking": MaskingConfig(max_predictions_per_seq=600)}, "max_predictions_per_seq 600 exceeds max_seq_length 512"),
])
def test_invalid_instance_configs_are_explained(bad, message):
    with pytest.raises(ValueError, match=message):
        InstanceConfig(**bad)
