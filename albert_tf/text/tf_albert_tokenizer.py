"""`TFAlbertTokenizer`: the Python tokenizer's ids, computed in-graph with tensorflow-text.

Every raw-text entry point that runs in a graph (the exported preprocessing and
serving SavedModels, their warm-up requests, `AlbertPreprocessor` in `tf.data`)
tokenizes with this layer, in two steps:

  1. tensorflow-text's `FastSentencepieceTokenizer` on a copy of the model whose
     normalization is ALBERT's preprocessing followed by the model's own
     (`albert_tf.text.albert_normalization`): whitespace collapsed, quotes
     rewritten where the model's record says so, accents stripped unless
     keep_accents, lowercased unless cased, then the unigram search;
  2. the original's fix-up of pieces that end in `<digit>,` (`▁2010,` -> `▁2010`
     `,`), as a table of the pieces it changes and the ids each becomes.

The ids are `AlbertTokenizer`'s (tests compare them on every paragraph of the shared
corpus and on a Unicode fuzz set); the few contexts a character map cannot see (some
of a capital sigma's, a combining mark between two characters that compose) are
listed in `albert_normalization`. The tokenize op needs no resource and no Python:
TF Serving runs it (tensorflow-text registers it), and TensorFlow Lite converts it
as tensorflow-text's custom op, the table lookups as builtin ops.
"""

import base64

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.cli import quiet_native_logs
from albert_tf.text.albert_normalization import albert_model_proto
from albert_tf.text.albert_tokenizer import AlbertTokenizer


def config_with_model_proto(config, model_proto):
    """A layer config with the SentencePiece model inside (base64), so the config alone rebuilds the layer."""
    return {**config, "model_proto": base64.b64encode(model_proto).decode("ascii")}


def constructor_arguments(config):
    """The inverse of `config_with_model_proto`, minus what Keras adds that the layer sets itself."""
    arguments = {**config, "model_proto": base64.b64decode(config["model_proto"])}
    arguments.pop("trainable", None)
    return arguments


def digit_comma_table(python_tokenizer):
    """int32 [vocab_size, K]: row i holds the ids that piece i becomes, padded with -1 (K: the longest).

    A piece becomes itself but for the pieces the original re-encodes (`AlbertTokenizer._split_digit_commas`,
    which a piece's own text alone decides)."""
    replacements = [python_tokenizer._split_digit_commas([piece_id]) if needs else [piece_id]
                    for piece_id, needs in enumerate(python_tokenizer._needs_comma_split)]
    width = max(map(len, replacements))
    table = np.full([len(replacements), width], -1, np.int32)
    for piece_id, ids in enumerate(replacements):
        table[piece_id, :len(ids)] = ids
    return table


class TFAlbertTokenizer(keras.layers.Layer):
    """Raw strings [batch] -> ragged int32 ids [batch, (tokens)], row splits int64.

    Args:
      model_proto: the serialized SentencePiece model (bytes).
      lower_case, keep_accents, rewrite_quotes: as in `AlbertTokenizer`.

    Raises ValueError for a model that is not an ALBERT vocabulary (`AlbertTokenizer`'s check) or that the
    fast op cannot run (`albert_model_proto`).
    """

    def __init__(self, model_proto: bytes, lower_case: bool = True, keep_accents: bool = False,
                 rewrite_quotes: bool = False, **kwargs):
        super().__init__(trainable=False, **kwargs)
        python_tokenizer = AlbertTokenizer(model_proto=model_proto, lower_case=lower_case, keep_accents=keep_accents,
                                           rewrite_quotes=rewrite_quotes)
        self.lower_case = lower_case
        self.keep_accents = keep_accents
        self.rewrite_quotes = rewrite_quotes
        self.vocab_size = python_tokenizer.vocab_size
        self.special_ids = python_tokenizer.special_ids
        self.python_tokenizer = python_tokenizer  # the same ids in Python (its tables: entities.unit_tables)
        self.model_proto = model_proto
        with quiet_native_logs():  # tensorflow-text's model conversion logs each normalizer it builds
            self.sentencepiece = tf_text.FastSentencepieceTokenizer(
                albert_model_proto(model_proto, lower_case, keep_accents, rewrite_quotes))
        # The rows of the pieces the fix-up changes (141 of 30k-clean's 30,000) and, per piece, a small index
        # into them (0: unchanged): one gather per piece, as fast as a [vocab, K] int32 table and an eighth of
        # its size, which a LiteRT file carries.
        table = digit_comma_table(python_tokenizer)
        changed = np.flatnonzero((table[:, 1:] >= 0).any(axis=1))
        row_of_piece = np.zeros(len(table), np.int16 if len(changed) < 2**15 else np.int32)
        row_of_piece[changed] = np.arange(1, len(changed) + 1)
        self._split_row = tf.constant(row_of_piece)
        self._split_into = tf.constant(table[changed])
        self.built = True  # no weights: nothing to build

    def call(self, texts):
        ids = self.sentencepiece.tokenize(tf.convert_to_tensor(texts, dtype=tf.string))
        return self.split_digit_commas(ids.with_row_splits_dtype(tf.int64))

    def split_digit_commas(self, ids):
        """The original's fix-up of SentencePiece ids [batch, (pieces)], by the table: `3.0,` -> `▁3.0`, `,`.

        Public for callers that tokenize with SentencePiece themselves (in-graph offsets)."""
        if self._split_into.shape[0] == 0:  # a vocabulary without `<digit>,` pieces: nothing to split
            return ids
        flat = tf.cast(ids.flat_values, tf.int32)
        row = tf.cast(tf.gather(self._split_row, flat), tf.int32)
        width = self._split_into.shape[1]
        unchanged = tf.concat([flat[:, None], tf.fill([tf.shape(flat)[0], width - 1], -1)], axis=1)
        replacements = tf.where((row > 0)[:, None], tf.gather(self._split_into, tf.maximum(row - 1, 0)), unchanged)
        lengths = tf.reduce_sum(tf.cast(replacements >= 0, tf.int64), axis=1)
        kept = tf.boolean_mask(replacements, replacements >= 0)
        ends = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(lengths)], axis=0)
        return tf.RaggedTensor.from_row_splits(tf.cast(kept, ids.flat_values.dtype), tf.gather(ends, ids.row_splits),
                                               validate=False)

    def get_config(self):
        config = {**super().get_config(), "lower_case": self.lower_case, "keep_accents": self.keep_accents,
                  "rewrite_quotes": self.rewrite_quotes}
        return config_with_model_proto(config, self.model_proto)

    @classmethod
    def from_config(cls, config):
        return cls(**constructor_arguments(config))
