"""Words to pieces for tagging (token classification): each word's pieces, the windows a sentence's pieces
fill, and one prediction per word merged back from them.

  pieces = word_piece_ids(tokenizer, ["John", "lives", "in", "Paris"])
  windows = sentence_windows(pieces, tag_ids=[1, 0, 0, 3], max_seq_length=128)
  arrays = window_arrays(windows)                 # the encoder's inputs and label_ids, one row per window
  scores = merge_word_scores(windows, logits, [4])  # per sentence [words, labels]: one row per word

The rules, as the original aligns words to pieces and Hugging Face's run_ner labels them:

- Pieces: each word is tokenized on its own by the model's tokenizer (`AlbertTokenizer`, with the casing,
  accents and quote rule recorded for the model), so every word starts a piece of its own. A word that
  gives no piece (a control or zero-width character alone, `\\u200b`; a lone combining mark) gets the
  [UNK] piece: every word keeps a position that carries its tag.
- Labels: a word's tag id sits at its FIRST piece; its other pieces, [CLS], [SEP] and the padding get
  `IGNORED_LABEL_ID`, -100, the label Hugging Face's run_ner gives them (torch's cross-entropy
  `ignore_index`; Keras' `ignore_class`), so the loss is the mean over first pieces only.
- Windows: a sentence longer than max_seq_length - 2 pieces is cut into windows whose starts lie
  `doc_stride` pieces apart (default: half a window, so each piece is seen twice), each packed as
  `[CLS] pieces [SEP]`. In training every window labels every first piece it holds, as run_ner's
  overflowing windows do. In prediction a word is read from ONE window: the one where its first piece
  has the most context on both sides (SQuAD's max-context rule, `sliding_windows`), so every word gets
  exactly one tag.
- A word whose pieces alone exceed a window keeps all of them: it spans several windows like any run of
  pieces, and its first piece carries its tag in the window where it has the most context (a window may
  then hold only continuation pieces, and labels nothing). Nothing of the sentence is dropped.
"""

import bisect
import dataclasses

import numpy as np

from albert_tf.settings import POSITIVE_INTEGER
from albert_tf.text.albert_tokenizer import CLS_ID, PAD_ID, SEP_ID, UNK_ID
from albert_tf.text.packing import ENCODER_INPUTS, check_sequence_length
from albert_tf.text.sliding_windows import doc_windows, max_context_window

# The label of the positions the loss skips: Hugging Face run_ner's (torch's cross-entropy ignore_index).
IGNORED_LABEL_ID = -100


def word_piece_ids(tokenizer, words):
    """[[piece id]] per word: `tokenizer.encode(word)` (its preprocessing, per word), [UNK] for a word that
    gives no piece."""
    return [ids or [UNK_ID] for ids in tokenizer.encode_batch(list(words))]


@dataclasses.dataclass(frozen=True)
class TaggingWindow:
    """One window of one sentence, packed for the encoder.

    label_ids: each word's tag id at its first piece in this window, IGNORED_LABEL_ID elsewhere (all
      ignored when the sentence comes without tags).
    word_positions: {word index: sequence position of its first piece} for the words this window tags
      (gives the most context), the positions `merge_word_scores` reads.
    """

    sentence_index: int
    window_index: int
    input_word_ids: list
    input_mask: list
    input_type_ids: list
    label_ids: list
    word_positions: dict


def default_doc_stride(max_seq_length):
    """Half a window's pieces (at least one): each piece of a long sentence is seen in two windows."""
    return max(1, (max_seq_length - 2) // 2)


def sentence_windows(word_pieces, tag_ids=None, max_seq_length=128, doc_stride=None, sentence_index=0):
    """[TaggingWindow] of one sentence, given its words' piece ids (`word_piece_ids`) and, to train on it,
    one tag id per word; none for a sentence without words."""
    check_sequence_length(max_seq_length)
    doc_stride = default_doc_stride(max_seq_length) if doc_stride is None else POSITIVE_INTEGER.check(
        "doc_stride", doc_stride)
    if tag_ids is not None and len(tag_ids) != len(word_pieces):
        raise ValueError(f"sentence {sentence_index}: {len(tag_ids)} tags for {len(word_pieces)} words")
    if any(not ids for ids in word_pieces):
        raise ValueError(f"sentence {sentence_index}: a word without pieces; word_piece_ids gives each one at least "
                         "[UNK]")
    first_pieces, pieces = [], []  # each word's first piece, as an index into the sentence's pieces
    for ids in word_pieces:
        first_pieces.append(len(pieces))
        pieces.extend(ids)
    if not pieces:
        return []
    windows = doc_windows(len(pieces), max_seq_length - 2, doc_stride)
    owners = [max_context_window(windows, first) for first in first_pieces]
    packed = []
    for window_index, (start, length) in enumerate(windows):
        input_word_ids = [CLS_ID, *pieces[start : start + length], SEP_ID]
        padding = max_seq_length - len(input_word_ids)
        label_ids = [IGNORED_LABEL_ID] * max_seq_length
        word_positions = {}
        # [CLS] comes first: the piece at index i of the sentence sits at position i - start + 1.
        for word in range(bisect.bisect_left(first_pieces, start), bisect.bisect_left(first_pieces, start + length)):
            position = first_pieces[word] - start + 1
            if tag_ids is not None:
                label_ids[position] = int(tag_ids[word])
            if owners[word] == window_index:
                word_positions[word] = position
        packed.append(TaggingWindow(
            sentence_index=sentence_index,
            window_index=window_index,
            input_word_ids=input_word_ids + [PAD_ID] * padding,
            input_mask=[1] * len(input_word_ids) + [0] * padding,
            input_type_ids=[0] * max_seq_length,
            label_ids=label_ids,
            word_positions=word_positions,
        ))
    return packed


def tagging_windows(tokenizer, sentences, tag_ids=None, max_seq_length=128, doc_stride=None):
    """[TaggingWindow] of `sentences` (lists of words), in order, with `tag_ids` (one list per sentence) to
    train on them."""
    if tag_ids is not None and len(tag_ids) != len(sentences):
        raise ValueError(f"{len(tag_ids)} tag lists for {len(sentences)} sentences")
    windows = []
    for index, words in enumerate(sentences):
        windows.extend(sentence_windows(word_piece_ids(tokenizer, words), None if tag_ids is None else tag_ids[index],
                                        max_seq_length, doc_stride, sentence_index=index))
    return windows


def window_arrays(windows):
    """{name: int32 array [num_windows, seq]}: the encoder inputs and label_ids."""
    return {name: np.asarray([getattr(window, name) for window in windows], np.int32).reshape(len(windows), -1)
            for name in (*ENCODER_INPUTS, "label_ids")}


def merge_word_scores(windows, scores, words_per_sentence):
    """Per sentence, an array [words, ...] of `scores` (rows in the order of `windows`: [num_windows, seq, ...],
    a model's logits) read for each word at its first piece in the window that tags it."""
    scores = np.asarray(scores)
    if len(scores) != len(windows):
        raise ValueError(f"{len(scores)} rows of scores for {len(windows)} windows")
    merged = [np.zeros((count, *scores.shape[2:]), scores.dtype) for count in words_per_sentence]
    read = [np.zeros(count, bool) for count in words_per_sentence]
    for row, window in enumerate(windows):
        for word, position in window.word_positions.items():
            merged[window.sentence_index][word] = scores[row, position]
            read[window.sentence_index][word] = True
    for index, words_read in enumerate(read):
        if not words_read.all():
            raise ValueError(f"sentence {index}: no window tags word {int(np.argmin(words_read))}; the windows were "
                             "made for other sentences")
    return merged
