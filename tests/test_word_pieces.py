"""Words to pieces for tagging: each word's first piece labelled as Hugging Face's run_ner does, long sentences in
windows merged back to one tag per word from the window of most context, words without pieces."""

import numpy as np
import pytest

from albert_tf.text.albert_tokenizer import CLS_ID, SEP_ID, UNK_ID, AlbertTokenizer
from albert_tf.text.word_pieces import (IGNORED_LABEL_ID, merge_word_scores, sentence_windows, tagging_windows,
                                        window_arrays, word_piece_ids)
from text_fixtures import train_small_spm

# Words of several pieces, accents, digits with commas (split as the original does), CJK, quotes.
WORDS = ["Mary", "Smith", "visited", "Ångström's", "garden", "in", "東京", "1,000,", "(ok)", "2010,", "Straße",
         "the", "NAÏVE", "``quoted''"]


@pytest.fixture(scope="module")
def cased_spm(tmp_path_factory):
    return train_small_spm(tmp_path_factory, "cased_spm", lower_case=False)


def run_ner_labels(word_ids, tags):
    """Hugging Face run_ner's tokenize_and_align_labels (label_all_tokens=False): a word's tag at its first
    token, -100 at its other tokens and at the special tokens."""
    labels, previous = [], None
    for word in word_ids:
        labels.append(-100 if word is None or word == previous else tags[word])
        previous = word
    return labels


def test_the_first_piece_carries_the_tag_as_huggingface_run_ner_labels_it(cased_spm, tmp_path):
    import transformers

    from albert_tf.checkpoints.huggingface_tokenizer import write_tokenizer_files

    write_tokenizer_files(str(cased_spm), str(tmp_path), 64, lower_case=False)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    encoding = hf_tokenizer(WORDS, is_split_into_words=True)
    tags = [index % 5 for index in range(len(WORDS))]

    tokenizer = AlbertTokenizer(str(cased_spm), lower_case=False)
    pieces = word_piece_ids(tokenizer, WORDS)
    assert sum(len(ids) > 1 for ids in pieces) >= 8  # most words have pieces that must be ignored
    [window] = sentence_windows(pieces, tags, max_seq_length=64)
    length = len(encoding["input_ids"])
    assert window.input_word_ids[:length] == encoding["input_ids"]
    assert window.label_ids[:length] == run_ner_labels(encoding.word_ids(), tags)
    assert IGNORED_LABEL_ID == -100 and window.label_ids[length:] == [-100] * (64 - length)
    assert window.input_mask == [1] * length + [0] * (64 - length) and window.input_type_ids == [0] * 64
    assert sorted(window.word_positions) == list(range(len(WORDS)))


def test_windows_tag_each_word_once_from_the_window_of_most_context():
    # Eight one-piece words, windows of 4 pieces whose starts lie 2 apart: (0, 4), (2, 4), (4, 4). By hand, a
    # piece's context in a window is min(pieces left, pieces right): piece 2 has 1 in the first window and 0 in
    # the second, piece 3 has 0 and 1, piece 4 has 1 in the second and 0 in the third, piece 5 has 0 and 1.
    owners = [0, 0, 0, 1, 1, 2, 2, 2]
    pieces = [[10 + word] for word in range(8)]
    tags = [word % 3 for word in range(8)]
    windows = sentence_windows(pieces, tags, max_seq_length=6, doc_stride=2)
    assert [window.input_word_ids for window in windows] == [
        [CLS_ID, 10, 11, 12, 13, SEP_ID], [CLS_ID, 12, 13, 14, 15, SEP_ID], [CLS_ID, 14, 15, 16, 17, SEP_ID]]
    tagged = [word for window in windows for word in window.word_positions]
    assert sorted(tagged) == list(range(8))  # every word exactly once
    assert [next(w.window_index for w in windows if word in w.word_positions) for word in range(8)] == owners
    # Training labels every first piece each window holds, the overlap included.
    assert [window.label_ids[1:5] for window in windows] == [tags[0:4], tags[2:6], tags[4:8]]

    # Each window's logits vote for its own index: the merge reads every word from the window that owns it.
    logits = np.stack([np.eye(3, dtype=np.float32)[[window.window_index] * 6] for window in windows])
    [merged] = merge_word_scores(windows, logits, [8])
    assert merged.shape == (8, 3) and merged.argmax(-1).tolist() == owners


def test_a_sentence_longer_than_the_window_gets_one_tag_per_word(cased_spm):
    tokenizer = AlbertTokenizer(str(cased_spm), lower_case=False)
    sentences = [WORDS * 3, ["Mary"], []]
    windows = tagging_windows(tokenizer, sentences, max_seq_length=16, doc_stride=5)
    assert sum(window.sentence_index == 0 for window in windows) > 5
    assert not any(window.sentence_index == 2 for window in windows)  # no words, no window
    arrays = window_arrays(windows)
    assert {name: array.shape for name, array in arrays.items()} == dict.fromkeys(
        ("input_word_ids", "input_mask", "input_type_ids", "label_ids"), (len(windows), 16))
    assert (arrays["label_ids"] == IGNORED_LABEL_ID).all()  # no tags given
    merged = merge_word_scores(windows, np.random.default_rng(0).normal(size=(len(windows), 16, 4)), [42, 1, 0])
    assert [scores.shape for scores in merged] == [(42, 4), (1, 4), (0, 4)]


def test_a_word_longer_than_a_window_keeps_its_pieces_and_its_tag():
    # Ten pieces for word 1 with four per window: it spans several windows; nothing is cut.
    pieces = [[10], list(range(20, 30)), [11]]
    windows = sentence_windows(pieces, [1, 2, 3], max_seq_length=6, doc_stride=2)
    assert [window.input_word_ids[1:5] for window in windows] == [
        [10, 20, 21, 22], [21, 22, 23, 24], [23, 24, 25, 26], [25, 26, 27, 28], [27, 28, 29, 11]]
    assert [window.word_positions for window in windows] == [{0: 1, 1: 2}, {}, {}, {}, {2: 4}]
    assert windows[0].label_ids == [-100, 1, 2, -100, -100, -100]
    assert all(label == -100 for window in windows[1:4] for label in window.label_ids)  # continuation pieces only
    assert windows[4].label_ids == [-100, -100, -100, -100, 3, -100]


def test_a_word_without_pieces_gets_unk_and_a_tag(cased_spm):
    tokenizer = AlbertTokenizer(str(cased_spm), lower_case=False)
    words = ["Mary", "\u200b", "in", "\x07", "garden"]
    assert tokenizer.encode("\u200b") == [] and tokenizer.encode("\x07") == []  # no piece of their own
    pieces = word_piece_ids(tokenizer, words)
    assert pieces[1] == pieces[3] == [UNK_ID] and pieces[0] == tokenizer.encode("Mary")
    [window] = sentence_windows(pieces, [1, 2, 0, 3, 0], max_seq_length=32)
    unk_positions = [position for position, piece in enumerate(window.input_word_ids) if piece == UNK_ID]
    assert [window.label_ids[position] for position in unk_positions] == [2, 3]
    assert [window.word_positions[word] for word in (1, 3)] == unk_positions


def test_tags_and_windows_that_do_not_fit_the_sentences_are_refused():
    with pytest.raises(ValueError, match="sentence 4: 2 tags for 3 words"):
        sentence_windows([[10], [11], [12]], [0, 1], max_seq_length=8, sentence_index=4)
    windows = sentence_windows([[10], [11]], max_seq_length=8)
    with pytest.raises(ValueError, match="sentence 0: no window tags word 2"):
        merge_word_scores(windows, np.zeros((1, 8, 2)), [3])
