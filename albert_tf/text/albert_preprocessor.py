"""`AlbertPreprocessor`: raw strings -> the encoder's inputs, as a Keras layer for `tf.data`.

Keras fine-tuning on raw text maps the preprocessor over the dataset, as with
KerasHub's preprocessors; labels and sample weights pass through:

  preprocessor = AlbertPreprocessor.from_model_dir("ckpt/albert", seq_length=128)
  train = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(32).map(preprocessor)
  classifier.fit(train)                                   # an AlbertClassifier, compiled
  classifier.predict(preprocessor(["a new review"]))

Texts are a string, a list (or array, or tensor) of strings, or, for sentence
pairs, a tuple `(texts_a, texts_b)` of two such; an empty string in texts_b means
a single-segment row:

  preprocessor("a fine film")["input_word_ids"]             # [seq_length]
  preprocessor(["a fine film", "a dull one"])               # [2, seq_length] each
  preprocessor((["is it good?"], ["a fine film"]))          # one pair: [1, seq_length] each

The ids are those of `AlbertTokenizer` and `albert_tf.text.packing` (the original
tokenization and pair truncation), computed with TensorFlow and tensorflow-text ops only:
the tokenizer is `TFAlbertTokenizer`, the one the exported SavedModels use. A model with a
WordPiece vocab.txt (Google's Chinese ALBERTs) gets `TFWordPieceTokenizer` and its [CLS]
and [SEP] instead: `from_model_dir` reads whichever the directory holds, `from_vocab_file`
takes a vocab.txt.
"""

import os

import keras
import tensorflow as tf

from albert_tf.text.packing import check_sequence_length
from albert_tf.text.tf_albert_tokenizer import config_with_model_proto, constructor_arguments
from albert_tf.text.tf_packing import encode_text
from albert_tf.text.vocabularies import FILE_NAMES, KINDS, SENTENCEPIECE, WORDPIECE, Vocabulary, tf_tokenizer


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPreprocessor(keras.layers.Layer):
    """Raw strings [batch] (or a pair of them) -> dict of int32 [batch, seq_length] encoder inputs.

    Args:
      model_proto: the vocabulary file's bytes: a serialized SentencePiece model, or a vocab.txt's.
      seq_length: length of every output row; longer text is truncated.
      lower_case, keep_accents: the original preprocessing switches.
      rewrite_quotes: also turn `` and '' into " (Hugging Face's rule; see `AlbertTokenizer`; SentencePiece only).
      vocabulary: which kind `model_proto` is: "sentencepiece" or "wordpiece".

    `preprocessor(x, y=None, sample_weight=None)`: `x` is a string or a batch of them (a
    list, array or string tensor of rank 1), or a tuple of two such for sentence pairs;
    a single string gives unbatched [seq_length] rows. Returns the inputs dict, or
    `(inputs, y[, sample_weight])` when labels are given, so `dataset.map(preprocessor)`
    works on (text, label) pairs.
    """

    def __init__(self, model_proto: bytes, seq_length: int = 128, lower_case: bool = True,
                 keep_accents: bool = False, rewrite_quotes: bool = False, vocabulary: str = SENTENCEPIECE, **kwargs):
        super().__init__(trainable=False, **kwargs)
        if vocabulary not in KINDS:
            raise ValueError(f"vocabulary={vocabulary!r}: choose one of {', '.join(KINDS)}")
        self.seq_length = check_sequence_length(seq_length, "seq_length")
        self.model_proto = model_proto
        self.lower_case = lower_case
        self.keep_accents = keep_accents
        self.rewrite_quotes = rewrite_quotes
        self.vocabulary = vocabulary
        self.tokenizer = tf_tokenizer(Vocabulary(vocabulary, model_proto), lower_case=lower_case,
                                      keep_accents=keep_accents, rewrite_quotes=rewrite_quotes)
        self._encode_eagerly = tf.function(self._encode, reduce_retracing=True)

    @classmethod
    def from_spm_file(cls, spm_model_file: str, seq_length: int = 128, **kwargs) -> "AlbertPreprocessor":
        try:
            with open(spm_model_file, "rb") as f:
                model_proto = f.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"{spm_model_file}: SentencePiece model not found") from None
        return cls(model_proto, seq_length=seq_length, **kwargs)

    @classmethod
    def from_vocab_file(cls, vocab_file: str, seq_length: int = 128, **kwargs) -> "AlbertPreprocessor":
        """The preprocessor of a WordPiece vocab.txt (BERT's layout; lowercased unless lower_case=False)."""
        vocabulary = Vocabulary.read(vocab_file, WORDPIECE)
        return cls(vocabulary.content, seq_length=seq_length, vocabulary=WORDPIECE, **kwargs)

    @classmethod
    def from_model_dir(cls, directory: str, seq_length: int = 128, **kwargs) -> "AlbertPreprocessor":
        """The preprocessor for the vocabulary stored in a directory (an albert_tf checkpoint, or a SavedModel's
        assets): spm.model or a WordPiece vocab.txt."""
        for kind, name in FILE_NAMES.items():
            for path in (os.path.join(directory, name), os.path.join(directory, "assets", name)):
                if os.path.isfile(path):
                    vocabulary = Vocabulary.read(path, kind)
                    return cls(vocabulary.content, seq_length=seq_length, vocabulary=kind, **kwargs)
        raise FileNotFoundError(f"{directory}: holds no spm.model or vocab.txt; use AlbertPreprocessor.from_spm_file "
                                "or from_vocab_file")

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def _encode(self, text, text_b):
        return encode_text(self.tokenizer, text, text_b, self.seq_length)

    def __call__(self, x, y=None, sample_weight=None, **kwargs):
        # Keras refuses Python strings as a layer's positional input: they become string tensors first.
        if sample_weight is not None and y is None:
            raise ValueError("sample_weight without y: pass the labels too")
        labels = [part for part in (y, sample_weight) if part is not None]
        return super().__call__(_as_segments(x), *(
            {name: tf.convert_to_tensor(value) for name, value in part.items()} if isinstance(part, dict)
            else tf.convert_to_tensor(part) for part in labels), **kwargs)

    def call(self, x, y=None, sample_weight=None):
        if isinstance(x, (tuple, list)):  # segments (Keras may hand the tuple over as a list)
            text = tf.convert_to_tensor(x[0], dtype=tf.string)
            text_b = tf.convert_to_tensor(x[1], dtype=tf.string) if len(x) == 2 else None
        else:
            text, text_b = tf.convert_to_tensor(x, dtype=tf.string), None
        scalar = text.shape.rank == 0
        if scalar:
            text = text[None]
            text_b = None if text_b is None else text_b[None]
        elif text.shape.rank != 1:
            raise ValueError(f"texts of rank 0 or 1 expected, got shape {text.shape}; sentence pairs are a tuple "
                             "(texts_a, texts_b)")
        text_b = tf.fill(tf.shape(text), "") if text_b is None else text_b
        encode = self._encode_eagerly if tf.executing_eagerly() else self._encode
        inputs = encode(text, text_b)
        if scalar:
            inputs = {name: value[0] for name, value in inputs.items()}
        return keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)

    def get_config(self):
        config = {**super().get_config(), "seq_length": self.seq_length, "lower_case": self.lower_case,
                  "keep_accents": self.keep_accents, "rewrite_quotes": self.rewrite_quotes,
                  "vocabulary": self.vocabulary}
        return config_with_model_proto(config, self.model_proto)

    @classmethod
    def from_config(cls, config):
        return cls(**constructor_arguments(config))


def _as_segments(x):
    """`x` as a string tensor, or a tuple of one or two of them (the segments of sentence pairs)."""
    if isinstance(x, tuple):
        if len(x) not in (1, 2):
            raise ValueError(f"a tuple holds the segments of sentence pairs, (texts_a, texts_b); got {len(x)} parts")
        return tuple(_as_string_tensor(part) for part in x)
    return _as_string_tensor(x)


def _as_string_tensor(texts):
    if isinstance(texts, (tf.Tensor, tf.Variable)) or keras.backend.is_keras_tensor(texts):
        return texts
    if isinstance(texts, list) and any(isinstance(item, (list, tuple)) for item in texts):
        raise ValueError("texts: a list of lists; sentence pairs are a tuple of two lists, (texts_a, texts_b)")
    return tf.convert_to_tensor(texts, dtype=tf.string)
