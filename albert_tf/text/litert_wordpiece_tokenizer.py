"""`LiteRTWordPieceTokenizer`: `WordPieceTokenizer`'s ids from two ops that LiteRT runs on a device.

`TFWordPieceTokenizer` (SavedModels) computes BERT's rules with TensorFlow's string, regex and ragged ops, which
LiteRT has no kernels for. tensorflow-text's FastBertNormalize and FastWordpieceTokenize have TFLite kernels
(its registrar's AddFastBertNormalize and AddFastWordpieceTokenize):

  1. FastBertNormalize maps each code point through a table: here `bert_normalizer_model`'s, built from the
     Python tokenizer's own rules (tensorflow-text's tables fold full-width forms into ASCII when lowercasing);
  2. FastWordpieceTokenize splits words at whitespace and punctuation, sets each CJK ideograph apart and
     matches pieces greedily, longest first, as the original.

The ids equal `WordPieceTokenizer`'s on every assigned code point alone and between letters, and on written
Chinese, Japanese and Korean (tests/test_litert_wordpiece.py), except:

  - a capital sigma at a word's end lowercases to σ, where `str.lower` gives ς;
  - unassigned and supplementary private-use code points are kept, where the Python tokenizer removes them
    (`bert_normalizer_model.left_to_the_kernel`): the word holding one becomes [UNK];
  - the word-length limit counts UTF-8 bytes, not characters: a word of more than 200 bytes is [UNK]. For ASCII
    words that is the original's 200-character limit; a word of other letters becomes [UNK] sooner (67 Hangul
    syllables without a space, where the original takes 200).
"""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.text.bert_normalizer_model import normalizer_model
from albert_tf.text.tf_wordpiece_tokenizer import unique_pieces
from albert_tf.text.wordpiece_tokenizer import (CONTINUATION_PREFIX, ORIGINAL_MAX_INPUT_CHARS_PER_WORD,
                                                WordPieceTokenizer)

# The TFLite custom ops a file tokenizing with this layer holds.
CUSTOM_OPS = ("FastBertNormalize", "FastWordpieceTokenizeWithOffsets")


class LiteRTWordPieceTokenizer(keras.layers.Layer):
    """Raw strings [batch] -> ragged int64 ids [batch, (tokens)], with ops that convert to TFLite kernels.

    Args:
      pieces: the vocabulary's pieces in id order (a vocab.txt's lines).
      lower_case, strip_accents: as in `WordPieceTokenizer`.
      tokenize_chinese_chars: must be true (the WordPiece op always sets CJK ideographs apart).
    """

    def __init__(self, pieces, lower_case=True, strip_accents=None, tokenize_chinese_chars=True, **kwargs):
        super().__init__(trainable=False, **kwargs)
        if not tokenize_chinese_chars:
            raise ValueError("tensorflow-text's WordPiece op sets every CJK ideograph apart; a vocabulary read with "
                             "tokenize_chinese_chars false cannot be tokenized by it")
        self.python_tokenizer = WordPieceTokenizer(pieces=list(pieces), lower_case=lower_case,
                                                   strip_accents=strip_accents)
        self.pieces = self.python_tokenizer.pieces
        self.lower_case = lower_case
        self.strip_accents = self.python_tokenizer.strip_accents
        self.special_ids = self.python_tokenizer.special_ids
        self.vocab_size = self.python_tokenizer.vocab_size
        # The two ops tensorflow-text's FastBertTokenizer chains, held apart so the normalizer's offsets can be
        # asked for too (pieces_with_offsets).
        self._normalizer = tf_text.FastBertNormalizer(model_buffer=normalizer_model(lower_case, self.strip_accents))
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=unique_pieces(self.pieces), suffix_indicator=CONTINUATION_PREFIX,
            max_bytes_per_word=ORIGINAL_MAX_INPUT_CHARS_PER_WORD, token_out_type=tf.int64,
            unknown_token=self.pieces[self.special_ids.unk], no_pretokenization=False)
        self.built = True

    def call(self, texts):
        return self._wordpiece.tokenize(self._normalizer.normalize(tf.convert_to_tensor(texts, tf.string)))

    def as_lowercased_here(self, text):
        """`text` with the one lowercasing difference applied: a capital sigma is σ wherever it stands, where
        `str.lower` makes a word-final one ς. The Python tokenizer's ids of this text are this layer's ids of
        `text` (but for the two rarer differences in the module docstring)."""
        return text.replace("Σ", "σ") if self.lower_case else text

    def pieces_with_offsets(self, texts):
        """(ids, starts, ends, mapping), ragged [batch, (pieces)] but `mapping`: the pieces' byte offsets into the
        NORMALIZED text, and `mapping` [batch, (normalized bytes + 1)] the raw text's byte offset of each
        normalized byte (so a piece's raw [start, end) is mapping[starts], mapping[ends]). The op pair's own
        `tokenize_with_offsets` does that lookup with ragged ops LiteRT has no kernels for; callers do it
        with gathers over dense positions (`litert_module.piece_offsets`)."""
        normalized, mapping = self._normalizer.normalize_with_offsets(tf.convert_to_tensor(texts, tf.string))
        ids, starts, ends = self._wordpiece.tokenize_with_offsets(normalized)
        return ids, starts, ends, mapping

    def get_config(self):
        return {**super().get_config(), "pieces": list(self.pieces), "lower_case": self.lower_case,
                "strip_accents": self.strip_accents}
