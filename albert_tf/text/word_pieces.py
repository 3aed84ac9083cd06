"""Texts to windows for tagging (token classification): each text's units (`albert_tf.text.entities`: a word,
a punctuation mark, or a piece of text without spaces) packed into the windows the encoder reads, and one
prediction per unit merged back from them.

  units = text_units(tokenizer, "John lives in Paris.")       # entities.TextUnits
  tags, _ = unit_tags(units, [("PER", 0, 4), ("LOC", 14, 19)], label_ids)
  windows = text_windows([units], [tags], max_seq_length=128, special_ids=tokenizer.special_ids)
  arrays = window_arrays(windows)                  # the encoder's inputs and label_ids, one row per window
  scores = merge_unit_scores(windows, logits, [5])  # per text [units, labels]: one row per unit

The rules, as Hugging Face's run_ner labels words:

- Pieces: the text is tokenized whole (the model's casing, accents and quote rule), as pretraining saw it
  and as serving reads it: no `▁` is added before a word that has none in the text.
- Labels: a unit's tag id sits at its reading piece (its first piece, or the one after a bare `▁`); the
  other pieces, [CLS], [SEP] and the padding get `IGNORED_LABEL_ID`, -100, the label Hugging Face's run_ner
  gives them (torch's cross-entropy `ignore_index`; Keras' `ignore_class`), so the loss is the mean over
  the units' pieces only.
- Windows: a text longer than max_seq_length - 2 pieces is cut into windows whose starts lie `doc_stride`
  pieces apart (default: half a window, so each piece is seen twice), each packed as `[CLS] pieces [SEP]`.
  In training every window labels every unit whose reading piece it holds, as run_ner's overflowing windows
  do. In prediction a unit is read from ONE window: the one where its reading piece has the most context on
  both sides (SQuAD's max-context rule, `sliding_windows`), so every unit gets exactly one tag; the served
  model picks the same window for every piece in-graph.
"""

import bisect
import dataclasses

import numpy as np

from albert_tf.settings import POSITIVE_INTEGER
from albert_tf.text.packing import ENCODER_INPUTS, check_sequence_length
from albert_tf.text.sliding_windows import doc_windows, max_context_window
from albert_tf.text.special_ids import PADDING_ID

# The label of the positions the loss skips: Hugging Face run_ner's (torch's cross-entropy ignore_index).
IGNORED_LABEL_ID = -100


@dataclasses.dataclass(frozen=True)
class TaggingWindow:
    """One window of one text, packed for the encoder.

    label_ids: each unit's tag id at its reading piece in this window, IGNORED_LABEL_ID elsewhere (all
      ignored when the text comes without tags).
    unit_positions: {unit index: sequence position of its reading piece} for the units this window tags
      (gives the most context), the positions `merge_unit_scores` reads.
    """

    sentence_index: int
    window_index: int
    input_word_ids: list
    input_mask: list
    input_type_ids: list
    label_ids: list
    unit_positions: dict


def default_doc_stride(max_seq_length):
    """Half a window's pieces (at least one): each piece of a long text is seen in two windows."""
    return max(1, (max_seq_length - 2) // 2)


def piece_windows(pieces, tagged_pieces, tag_ids=None, max_seq_length=128, doc_stride=None, sentence_index=0, *,
                  special_ids):
    """[TaggingWindow] of one text's piece ids, the units' tags at `tagged_pieces` (increasing indices into
    `pieces`, one per unit) and, to train on it, one tag id per unit; none for a text without pieces.
    `special_ids`: the tokenizer's ([CLS], [SEP])."""
    check_sequence_length(max_seq_length)
    doc_stride = default_doc_stride(max_seq_length) if doc_stride is None else POSITIVE_INTEGER.check(
        "doc_stride", doc_stride)
    if tag_ids is not None and len(tag_ids) != len(tagged_pieces):
        raise ValueError(f"text {sentence_index}: {len(tag_ids)} tags for {len(tagged_pieces)} units")
    if not pieces:
        return []
    windows = doc_windows(len(pieces), max_seq_length - 2, doc_stride)
    owners = [max_context_window(windows, piece) for piece in tagged_pieces]
    packed = []
    for window_index, (start, length) in enumerate(windows):
        input_word_ids = [special_ids.cls, *pieces[start : start + length], special_ids.sep]
        padding = max_seq_length - len(input_word_ids)
        label_ids = [IGNORED_LABEL_ID] * max_seq_length
        unit_positions = {}
        # [CLS] comes first: the piece at index i of the text sits at position i - start + 1.
        for unit in range(bisect.bisect_left(tagged_pieces, start), bisect.bisect_left(tagged_pieces, start + length)):
            position = tagged_pieces[unit] - start + 1
            if tag_ids is not None:
                label_ids[position] = int(tag_ids[unit])
            if owners[unit] == window_index:
                unit_positions[unit] = position
        packed.append(TaggingWindow(
            sentence_index=sentence_index,
            window_index=window_index,
            input_word_ids=input_word_ids + [PADDING_ID] * padding,
            input_mask=[1] * len(input_word_ids) + [0] * padding,
            input_type_ids=[0] * max_seq_length,
            label_ids=label_ids,
            unit_positions=unit_positions,
        ))
    return packed


def text_windows(units, tag_ids=None, max_seq_length=128, doc_stride=None, *, special_ids):
    """[TaggingWindow] of texts' `units` (`entities.TextUnits`, one per text), in order, with `tag_ids` (one
    list per text, a tag id per unit: `entities.unit_tags`) to train on them; `special_ids`: the tokenizer's."""
    if tag_ids is not None and len(tag_ids) != len(units):
        raise ValueError(f"{len(tag_ids)} tag lists for {len(units)} texts")
    windows = []
    for index, text_units in enumerate(units):
        windows.extend(piece_windows(list(text_units.aligned.ids), text_units.reading_pieces,
                                     None if tag_ids is None else tag_ids[index], max_seq_length, doc_stride,
                                     sentence_index=index, special_ids=special_ids))
    return windows


def window_arrays(windows):
    """{name: int32 array [num_windows, seq]}: the encoder inputs and label_ids."""
    return {name: np.asarray([getattr(window, name) for window in windows], np.int32).reshape(len(windows), -1)
            for name in (*ENCODER_INPUTS, "label_ids")}


def merge_unit_scores(windows, scores, units_per_text):
    """Per text, an array [units, ...] of `scores` (rows in the order of `windows`: [num_windows, seq, ...],
    a model's logits) read for each unit at its reading piece in the window that tags it."""
    scores = np.asarray(scores)
    if len(scores) != len(windows):
        raise ValueError(f"{len(scores)} rows of scores for {len(windows)} windows")
    merged = [np.zeros((count, *scores.shape[2:]), scores.dtype) for count in units_per_text]
    read = [np.zeros(count, bool) for count in units_per_text]
    for row, window in enumerate(windows):
        for unit, position in window.unit_positions.items():
            merged[window.sentence_index][unit] = scores[row, position]
            read[window.sentence_index][unit] = True
    for index, units_read in enumerate(read):
        if not units_read.all():
            raise ValueError(f"text {index}: no window tags unit {int(np.argmin(units_read))}; the windows were "
                             "made for other texts")
    return merged
