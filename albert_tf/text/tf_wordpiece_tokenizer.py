"""`TFWordPieceTokenizer`: `WordPieceTokenizer`'s ids and offsets computed in-graph, for SavedModels.

The original's steps (`albert_tf.text.wordpiece_tokenizer`) with TensorFlow's string ops, one character at a
time so that every normalized character knows the raw character it came from:

  1. the text's characters are classified by tables of code point ranges built from Python's own Unicode
     database (the one `WordPieceTokenizer` reads), not the regex engine's: removed (NUL, U+FFFD, controls),
     whitespace, CJK ideograph, punctuation;
  2. each character becomes its cleaned form ("" removed, " " whitespace, " c " an ideograph), the text is
     lowercased whole (`tf.strings.lower` gives Python's `str.lower`, final sigma included; where a letter
     lowercases to more than one character, the row is lowercased character by character instead), and each
     character's accents stripped (NFD, marks of category Mn dropped);
  3. words are the runs between whitespace, each punctuation mark a word of its own;
  4. tensorflow-text's FastWordpieceTokenizer (greedy longest match, as the original) makes the pieces; a word
     of more than max_input_chars_per_word characters is one [UNK].

Offsets are byte offsets into the raw text ([start, end) of the raw characters each piece came from), as
`albert_tf.export_lib.token_offsets.tokenize_with_offsets` gives them for SentencePiece.
"""

import functools
import sys
import unicodedata

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.text.wordpiece_tokenizer import (CONTINUATION_PREFIX, ORIGINAL_MAX_INPUT_CHARS_PER_WORD,
                                                WordPieceTokenizer, _is_control, _is_punctuation, _is_whitespace,
                                                is_cjk_character)
from albert_tf.text.preprocessing import re2_class

# Character classes (step 1).
_REMOVED, _WHITESPACE, _CJK, _PUNCTUATION, _OTHER = range(5)


@functools.cache
def _class_table():
    """(boundaries int32 [N], classes int32 [N]): code point c has class classes[searchsorted(boundaries, c,
    'right') - 1], from Python's Unicode database, run-length encoded over all of Unicode."""
    def character_class(codepoint):
        char = chr(codepoint)
        if codepoint in (0, 0xFFFD) or _is_control(char):
            return _REMOVED
        if _is_whitespace(char) or char.isspace():
            return _WHITESPACE
        if is_cjk_character(char):
            return _CJK
        if _is_punctuation(char):
            return _PUNCTUATION
        return _OTHER

    boundaries, classes = [], []
    for codepoint in range(sys.maxunicode + 1):
        value = character_class(codepoint)
        if not classes or classes[-1] != value:
            boundaries.append(codepoint)
            classes.append(value)
    return np.array(boundaries, np.int32), np.array(classes, np.int32)


@functools.cache
def _nonspacing_marks_class():
    """The RE2 class of the marks accent stripping drops (category Mn, by Python's Unicode database)."""
    return re2_class([c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Mn"])


def unique_pieces(pieces):
    """The vocabulary as tensorflow-text's WordPiece op takes it: a repeated line takes its last id, as the
    Python tokenizer's dict (and the original's); an earlier copy is given a name no text makes, so that the ids
    stay the lines' indices. (U+FFFF, a noncharacter, is cleaned out of every text; a NUL would end the op's key.)"""
    last = {piece: index for index, piece in enumerate(pieces)}
    return [piece if last[piece] == index else f"\uffffrepeated{index}" for index, piece in enumerate(pieces)]


class TFWordPieceTokenizer(keras.layers.Layer):
    """Raw strings [batch] -> ragged int32 ids [batch, (tokens)], row splits int64: `WordPieceTokenizer`'s.

    Args:
      pieces: the vocabulary's pieces in id order (a vocab.txt's lines).
      lower_case, strip_accents, tokenize_chinese_chars, max_input_chars_per_word: as in `WordPieceTokenizer`.
    """

    def __init__(self, pieces, lower_case=True, strip_accents=None, tokenize_chinese_chars=True,
                 max_input_chars_per_word=ORIGINAL_MAX_INPUT_CHARS_PER_WORD, **kwargs):
        super().__init__(trainable=False, **kwargs)
        python_tokenizer = WordPieceTokenizer(pieces=list(pieces), lower_case=lower_case, strip_accents=strip_accents,
                                              tokenize_chinese_chars=tokenize_chinese_chars,
                                              max_input_chars_per_word=max_input_chars_per_word)
        self.pieces = python_tokenizer.pieces
        self.lower_case = lower_case
        self.strip_accents = python_tokenizer.strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.max_input_chars_per_word = max_input_chars_per_word
        self.vocab_size = python_tokenizer.vocab_size
        self.special_ids = python_tokenizer.special_ids
        self.python_tokenizer = python_tokenizer  # the same ids in Python (its tables: entities.unit_tables)
        self.unk_id = self.special_ids.unk
        boundaries, classes = _class_table()
        if not tokenize_chinese_chars:
            classes = np.where(classes == _CJK, _OTHER, classes)
        self._boundaries = tf.constant(boundaries)
        self._classes = tf.constant(classes)
        # Each word is looked up whole (no splitting of its own); the character limit is applied here, so the
        # op's byte limit only has to let every such word through (4 bytes a character at most).
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=unique_pieces(self.pieces), suffix_indicator=CONTINUATION_PREFIX,
            max_bytes_per_word=4 * max_input_chars_per_word + len(CONTINUATION_PREFIX),
            token_out_type=tf.int64, unknown_token="[UNK]", no_pretokenization=True)
        self.built = True

    def call(self, texts):
        return self.tokenize_with_offsets(texts)[0]

    def tokenize_with_offsets(self, texts):
        """(ids, starts, ends), ragged [batch, (tokens)]: ids int32 and byte offsets int64 into `texts`."""
        texts = tf.convert_to_tensor(texts, tf.string)
        codepoints, raw_starts = tf.strings.unicode_decode_with_offsets(texts, "UTF-8", errors="replace")
        codepoints = codepoints.with_row_splits_dtype(tf.int64)
        raw_starts = raw_starts.with_row_splits_dtype(tf.int64)
        flat = codepoints.flat_values
        utf8_bytes = 1 + tf.cast(flat >= 0x80, tf.int64) + tf.cast(flat >= 0x800, tf.int64) + tf.cast(
            flat >= 0x10000, tf.int64)
        raw_ends = raw_starts.with_flat_values(raw_starts.flat_values + utf8_bytes)
        classes = tf.gather(self._classes, tf.searchsorted(self._boundaries, flat, side="right") - 1)
        chars = tf.strings.unicode_encode(tf.expand_dims(flat, 1), "UTF-8")
        cleaned = tf.where(tf.equal(classes, _REMOVED), "", tf.where(tf.equal(classes, _WHITESPACE), " ", chars))
        cleaned = tf.where(tf.equal(classes, _CJK), tf.strings.join([" ", chars, " "]), cleaned)
        # Every character from here on is a (string, raw character index) pair.
        owner = tf.range(tf.size(flat, out_type=tf.int64))
        strings, owner = self._expanded(codepoints.with_flat_values(cleaned), owner)
        if self.lower_case:
            strings, owner = self._lowered(strings, owner)
        if self.strip_accents:
            stripped = tf.strings.regex_replace(tf_text.normalize_utf8(strings.flat_values, "NFD"),
                                                _nonspacing_marks_class(), "")
            strings, owner = self._expanded(strings.with_flat_values(stripped), owner)
        return self._pieces(strings, owner, raw_starts.flat_values, raw_ends.flat_values)

    @staticmethod
    def _expanded(strings, owner):
        """`strings` ragged [batch, (characters)] of strings of any length, and per entry the raw character it
        came from (`owner`, flat) -> the same, one character per entry."""
        split = tf.strings.unicode_split(strings.flat_values, "UTF-8").with_row_splits_dtype(tf.int64)
        counts = tf.math.unsorted_segment_sum(split.row_lengths(), strings.value_rowids(), strings.nrows())
        return (tf.RaggedTensor.from_row_lengths(split.flat_values, counts, validate=False),
                tf.gather(owner, split.value_rowids()))

    def _lowered(self, strings, owner):
        """`str.lower` of each word (a run between spaces, lowered whole as the original lowers its words: a
        final sigma needs the word), one character per entry; a word that lowers to more characters (an İ) is
        lowered character by character instead, so that each keeps its raw character."""
        chars = strings.flat_values
        count = tf.size(chars, out_type=tf.int64)
        space = tf.equal(chars, " ")
        index = tf.range(count)
        first_in_row = tf.equal(index, tf.gather(strings.row_starts(), strings.value_rowids()))
        changes = tf.concat([[True], tf.not_equal(space[1:], space[:-1])], axis=0)[:count]
        run = tf.cumsum(tf.cast(first_in_row | changes, tf.int64)) - 1
        runs = tf.reduce_sum(tf.cast(first_in_row | changes, tf.int64))
        whole = tf.strings.lower(tf.strings.unsorted_segment_join(chars, run, runs), encoding="utf-8")
        whole = tf.strings.unicode_split(whole, "UTF-8").with_row_splits_dtype(tf.int64)
        run_start = tf.math.unsorted_segment_min(index, run, runs)
        run_length = tf.math.unsorted_segment_sum(tf.ones_like(run), run, runs)
        same = tf.gather(tf.equal(whole.row_lengths(), run_length), run)
        # A run that lowers to more characters is longer whole, so these indices stay within it either way.
        from_whole = tf.gather(whole.flat_values, tf.gather(whole.row_starts(), run) + index - tf.gather(run_start, run))
        each = tf.strings.lower(chars, encoding="utf-8")
        return self._expanded(strings.with_flat_values(tf.where(same, from_whole, each)), owner)

    def _pieces(self, strings, owner, raw_starts, raw_ends):
        """(ids, starts, ends) of the normalized characters `strings` (one per entry, `owner` their raw characters
        with their byte spans `raw_starts`, `raw_ends`): words, then WordPiece."""
        chars, rows = strings.flat_values, strings.value_rowids()
        codepoints = tf.strings.unicode_decode(chars, "UTF-8").flat_values
        classes = tf.gather(self._classes, tf.searchsorted(self._boundaries, codepoints, side="right") - 1)
        space = tf.equal(chars, " ")
        punctuation = tf.equal(classes, _PUNCTUATION)
        first_in_row = tf.equal(tf.range(tf.size(chars, out_type=tf.int64)), tf.gather(strings.row_starts(), rows))
        after_break = tf.concat([[True], (space | punctuation)[:-1]], axis=0)[:tf.size(chars)]
        starts_word = ~space & (punctuation | after_break | first_in_row)
        kept = tf.where(~space)[:, 0]
        word_of_char = tf.gather(tf.cumsum(tf.cast(starts_word, tf.int64)) - 1, kept)
        kept_chars, kept_owner = tf.gather(chars, kept), tf.gather(owner, kept)
        words_count = tf.reduce_sum(tf.cast(starts_word, tf.int64))
        words = tf.strings.unsorted_segment_join(kept_chars, word_of_char, words_count)
        word_rows = tf.gather(rows, tf.where(starts_word)[:, 0])
        word_lengths = tf.math.unsorted_segment_sum(tf.ones_like(word_of_char), word_of_char, words_count)
        # Every kept character's first byte in the words joined end to end, and each word's.
        char_bytes = tf.cast(tf.strings.length(kept_chars), tf.int64)
        char_start = tf.cumsum(char_bytes, exclusive=True)
        word_start = tf.math.unsorted_segment_min(char_start, word_of_char, words_count)
        word_end = tf.math.unsorted_segment_max(char_start + char_bytes, word_of_char, words_count)

        ids, begins, ends = self._wordpiece.tokenize_with_offsets(words)
        piece_word = ids.value_rowids()
        long_word = tf.gather(word_lengths > self.max_input_chars_per_word, piece_word)
        first_piece = tf.equal(tf.range(tf.size(ids.flat_values, out_type=tf.int64)),
                               tf.gather(ids.row_starts(), piece_word))
        # A word over the character limit is one [UNK] over the whole word, as in the original.
        keep = ~long_word | first_piece
        piece_word = tf.boolean_mask(piece_word, keep)
        piece_ids = tf.where(tf.boolean_mask(long_word, keep), tf.constant(self.unk_id, tf.int64),
                             tf.boolean_mask(ids.flat_values, keep))
        global_begin = tf.gather(word_start, piece_word) + tf.boolean_mask(begins.flat_values, keep)
        global_end = tf.where(tf.boolean_mask(long_word, keep), tf.gather(word_end, piece_word),
                              tf.gather(word_start, piece_word) + tf.boolean_mask(ends.flat_values, keep))
        first_char = tf.searchsorted(char_start, global_begin, side="right") - 1
        last_char = tf.searchsorted(char_start, global_end - 1, side="right") - 1
        starts = tf.gather(raw_starts, tf.gather(kept_owner, first_char))
        piece_ends = tf.gather(raw_ends, tf.gather(kept_owner, last_char))
        piece_rows = tf.gather(word_rows, piece_word)
        nrows = strings.nrows()

        def ragged(values):
            return tf.RaggedTensor.from_value_rowids(values, piece_rows, nrows=nrows, validate=False)

        return ragged(tf.cast(piece_ids, tf.int32)), ragged(starts), ragged(piece_ends)

    def get_config(self):
        return {**super().get_config(), "pieces": list(self.pieces), "lower_case": self.lower_case,
                "strip_accents": self.strip_accents, "tokenize_chinese_chars": self.tokenize_chinese_chars,
                "max_input_chars_per_word": self.max_input_chars_per_word}
