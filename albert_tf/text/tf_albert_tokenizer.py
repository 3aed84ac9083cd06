"""`TFAlbertTokenizer`: the Python tokenizer's ids, computed in-graph with tensorflow-text.

Exported serving and preprocessing SavedModels take raw strings; this layer
reproduces `AlbertTokenizer` exactly with TF and tensorflow-text ops only (no
Python functions in the graph), which TF Serving can run:

  1. whitespace collapsed on the characters `str.split()` splits on;
  2. ``` `` ``` and `''` -> `"`;
  3. NFKD, then the combining marks Python's unicodedata knows are dropped;
  4. `tf.strings.lower` (Unicode-aware, matches `str.lower`);
  5. SentencePiece;
  6. pieces ending in `<digit>,` re-encoded without the comma, comma appended.

The character classes of steps 1, 3 and 6 are generated from Python's Unicode
database by `albert_tf.text.preprocessing`, so both paths agree beyond ASCII.
"""

import base64

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.text.albert_tokenizer import SPIECE_UNDERLINE, AlbertTokenizer
from albert_tf.text.preprocessing import combining_codepoints, re2_class, whitespace_codepoints


def config_with_model_proto(config, model_proto):
    """A layer config with the SentencePiece model inside (base64), so the config alone rebuilds the layer."""
    return {**config, "model_proto": base64.b64encode(model_proto).decode("ascii")}


def constructor_arguments(config):
    """The inverse of `config_with_model_proto`, minus what Keras adds that the layer sets itself."""
    arguments = {**config, "model_proto": base64.b64decode(config["model_proto"])}
    arguments.pop("trainable", None)
    return arguments


class TFAlbertTokenizer(keras.layers.Layer):
    """Raw strings [batch] -> ragged int32 ids [batch, (tokens)].

    Args:
      model_proto: the serialized SentencePiece model (bytes).
      lower_case, keep_accents: as in `AlbertTokenizer`.
    """

    def __init__(self, model_proto: bytes, lower_case: bool = True, keep_accents: bool = False, **kwargs):
        super().__init__(trainable=False, **kwargs)
        python_tokenizer = AlbertTokenizer(model_proto=model_proto, lower_case=lower_case, keep_accents=keep_accents)
        self.lower_case = lower_case
        self.keep_accents = keep_accents
        self.vocab_size = python_tokenizer.vocab_size
        self.sentencepiece = tf_text.SentencepieceTokenizer(model=model_proto, out_type=tf.int32)
        self._needs_comma_split = tf.constant(python_tokenizer._needs_comma_split)
        self._comma_id = python_tokenizer.piece_to_id(",")
        self._whitespace_run = re2_class(whitespace_codepoints()) + "+"
        self._combining = re2_class(combining_codepoints())
        self._model_proto = model_proto

    def preprocess(self, texts):
        texts = tf.strings.regex_replace(texts, self._whitespace_run, " ")
        texts = tf.strings.regex_replace(texts, "^ | $", "")
        texts = tf.strings.regex_replace(texts, "``|''", '"')
        if not self.keep_accents:
            texts = tf.strings.regex_replace(tf_text.normalize_utf8(texts, "NFKD"), self._combining, "")
        if self.lower_case:
            texts = tf.strings.lower(texts, encoding="utf-8")
        return texts

    def call(self, texts):
        texts = tf.convert_to_tensor(texts, dtype=tf.string)
        ids = self.sentencepiece.tokenize(self.preprocess(texts))
        return self.split_digit_commas(ids)

    def split_digit_commas(self, ids):
        """The original's fix-up of SentencePiece ids, with ragged ops: `3.0,` -> `▁3.0`, `,`.

        Public for callers that tokenize with SentencePiece themselves (in-graph offsets)."""
        flat = ids.flat_values
        needs = tf.gather(self._needs_comma_split, flat)
        where = tf.where(needs)[:, 0]
        pieces = self.sentencepiece.id_to_string(tf.gather(flat, where))
        prefixes = tf.strings.regex_replace(pieces, ",$", "")  # every such piece ends in the comma
        sub_ids = self.sentencepiece.tokenize(tf.strings.regex_replace(prefixes, SPIECE_UNDERLINE, ""))
        sub_ids = self._fix_leading_underline(pieces, sub_ids)
        comma = tf.fill([tf.shape(where)[0], 1], self._comma_id)
        replacements = tf.concat([sub_ids, tf.RaggedTensor.from_tensor(comma)], axis=1)

        count = tf.shape(flat, out_type=tf.int64)[0]
        replacement_lengths = tf.scatter_nd(where[:, None], replacements.row_lengths(), [count])
        expanded = tf.RaggedTensor.from_row_lengths(replacements.flat_values, replacement_lengths)
        kept = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(flat, ~needs), tf.cast(~needs, tf.int64)
        )
        per_token = tf.concat([expanded, kept], axis=1)  # each token: its replacement, or itself
        return tf.RaggedTensor.from_row_splits(per_token, ids.row_splits).merge_dims(1, 2)

    def _fix_leading_underline(self, pieces, sub_ids):
        """If the piece did not start a word but its re-encoding does, drop that '▁'."""
        first_ids = sub_ids[:, :1].to_tensor(default_value=0, shape=[None, 1])[:, 0]
        first = self.sentencepiece.id_to_string(first_ids)
        has_first = sub_ids.row_lengths() > 0
        fix = (
            has_first
            & ~tf.strings.regex_full_match(pieces, SPIECE_UNDERLINE + ".*")
            & tf.strings.regex_full_match(first, SPIECE_UNDERLINE + ".*")
        )
        stripped = tf.strings.regex_replace(first, "^" + SPIECE_UNDERLINE, "")
        drop_first = fix & tf.equal(stripped, "")
        replaced_first = tf.where(fix & ~drop_first, self.sentencepiece.string_to_id(stripped), first_ids)
        rest = sub_ids[:, 1:]
        first_column = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(replaced_first, has_first & ~drop_first),
            tf.cast(has_first & ~drop_first, tf.int64),
        )
        return tf.concat([first_column, rest], axis=1)

    def get_config(self):
        config = {**super().get_config(), "lower_case": self.lower_case, "keep_accents": self.keep_accents}
        return config_with_model_proto(config, self._model_proto)

    @classmethod
    def from_config(cls, config):
        return cls(**constructor_arguments(config))
