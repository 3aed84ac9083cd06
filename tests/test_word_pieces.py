"""Texts to windows for tagging: each unit's reading piece labelled, the rest ignored as Hugging Face's run_ner
ignores them; long texts in windows merged back to one tag per unit from the window of most context."""

import numpy as np
import pytest

from albert_tf.text.albert_tokenizer import CLS_ID, SEP_ID, AlbertTokenizer
from albert_tf.text.entities import text_units, unit_tables
from albert_tf.text.special_ids import ALBERT_SPECIAL_IDS as SPM_IDS
from albert_tf.text.word_pieces import (IGNORED_LABEL_ID, merge_unit_scores, piece_windows, text_windows,
                                        window_arrays)
from text_fixtures import train_small_spm

# Words of several pieces, accents, digits with commas (split as the original does), CJK, quotes.
TEXT = "Mary Smith visited Ångström's garden in 東京と大阪 1,000, (ok) 2010, Straße the NAÏVE ``quoted''"


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return AlbertTokenizer(str(train_small_spm(tmp_path_factory, "cased_spm", lower_case=False)), lower_case=False)


def test_each_units_reading_piece_carries_its_tag_and_nothing_else_does(tokenizer):
    units = text_units(tokenizer, TEXT)
    assert units.aligned.ids == tokenizer.encode(TEXT)  # the text tokenized whole
    assert len(units.first_pieces) < len(units.aligned.ids)  # some units hold several pieces
    tags = [index % 5 for index in range(len(units.first_pieces))]
    [window] = text_windows([units], [tags], max_seq_length=128, special_ids=SPM_IDS)
    length = len(units.aligned.ids) + 2
    assert window.input_word_ids[:length] == [CLS_ID, *units.aligned.ids, SEP_ID]
    expected = [IGNORED_LABEL_ID] * 128
    for unit, piece in enumerate(units.reading_pieces):
        expected[piece + 1] = tags[unit]
    assert window.label_ids == expected and IGNORED_LABEL_ID == -100
    assert window.input_mask == [1] * length + [0] * (128 - length) and window.input_type_ids == [0] * 128
    assert window.unit_positions == {unit: piece + 1 for unit, piece in enumerate(units.reading_pieces)}


def test_windows_tag_each_unit_once_from_the_window_of_most_context():
    # Eight one-piece units, windows of 4 pieces whose starts lie 2 apart: (0, 4), (2, 4), (4, 4). By hand, a
    # piece's context in a window is min(pieces left, pieces right): piece 2 has 1 in the first window and 0 in
    # the second, piece 3 has 0 and 1, piece 4 has 1 in the second and 0 in the third, piece 5 has 0 and 1.
    owners = [0, 0, 0, 1, 1, 2, 2, 2]
    pieces = [10 + unit for unit in range(8)]
    tags = [unit % 3 for unit in range(8)]
    windows = piece_windows(pieces, list(range(8)), tags, max_seq_length=6, doc_stride=2, special_ids=SPM_IDS)
    assert [window.input_word_ids for window in windows] == [
        [CLS_ID, 10, 11, 12, 13, SEP_ID], [CLS_ID, 12, 13, 14, 15, SEP_ID], [CLS_ID, 14, 15, 16, 17, SEP_ID]]
    tagged = [unit for window in windows for unit in window.unit_positions]
    assert sorted(tagged) == list(range(8))  # every unit exactly once
    assert [next(w.window_index for w in windows if unit in w.unit_positions) for unit in range(8)] == owners
    # Training labels every reading piece each window holds, the overlap included.
    assert [window.label_ids[1:5] for window in windows] == [tags[0:4], tags[2:6], tags[4:8]]

    # Each window's logits vote for its own index: the merge reads every unit from the window that owns it.
    logits = np.stack([np.eye(3, dtype=np.float32)[[window.window_index] * 6] for window in windows])
    [merged] = merge_unit_scores(windows, logits, [8])
    assert merged.shape == (8, 3) and merged.argmax(-1).tolist() == owners


def test_a_text_longer_than_the_window_gets_one_tag_per_unit(tokenizer):
    tables = unit_tables(tokenizer)
    units = [text_units(tokenizer, text, tables) for text in (" ".join([TEXT] * 3), "Mary", "")]
    windows = text_windows(units, max_seq_length=16, doc_stride=5, special_ids=SPM_IDS)
    assert sum(window.sentence_index == 0 for window in windows) > 5
    assert not any(window.sentence_index == 2 for window in windows)  # no pieces, no window
    arrays = window_arrays(windows)
    assert {name: array.shape for name, array in arrays.items()} == dict.fromkeys(
        ("input_word_ids", "input_mask", "input_type_ids", "label_ids"), (len(windows), 16))
    assert (arrays["label_ids"] == IGNORED_LABEL_ID).all()  # no tags given
    counts = [len(text.first_pieces) for text in units]
    merged = merge_unit_scores(windows, np.random.default_rng(0).normal(size=(len(windows), 16, 4)), counts)
    assert [scores.shape for scores in merged] == [(count, 4) for count in counts] and counts[2] == 0


def test_a_unit_longer_than_a_window_keeps_its_pieces_and_its_tag():
    # Ten pieces for unit 1 with four per window: it spans several windows; nothing is cut.
    pieces = [10, *range(20, 30), 11]
    windows = piece_windows(pieces, [0, 1, 11], [1, 2, 3], max_seq_length=6, doc_stride=2, special_ids=SPM_IDS)
    assert [window.input_word_ids[1:5] for window in windows] == [
        [10, 20, 21, 22], [21, 22, 23, 24], [23, 24, 25, 26], [25, 26, 27, 28], [27, 28, 29, 11]]
    assert [window.unit_positions for window in windows] == [{0: 1, 1: 2}, {}, {}, {}, {2: 4}]
    assert windows[0].label_ids == [-100, 1, 2, -100, -100, -100]
    assert all(label == -100 for window in windows[1:4] for label in window.label_ids)  # continuation pieces only
    assert windows[4].label_ids == [-100, -100, -100, -100, 3, -100]


def test_tags_and_windows_that_do_not_fit_the_texts_are_refused():
    with pytest.raises(ValueError, match="text 4: 2 tags for 3 units"):
        piece_windows([10, 11, 12], [0, 1, 2], [0, 1], max_seq_length=8, sentence_index=4, special_ids=SPM_IDS)
    windows = piece_windows([10, 11], [0, 1], max_seq_length=8, special_ids=SPM_IDS)
    with pytest.raises(ValueError, match="text 0: no window tags unit 2"):
        merge_unit_scores(windows, np.zeros((1, 8, 2)), [3])
