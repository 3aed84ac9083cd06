"""`Embedder`: sentence embeddings from an encoder, and their cosine similarities.

>>> embedder = Embedder("ckpt/albert_base")                                 # doctest: +SKIP
>>> cosine_similarities(embedder.embed(["A cat sat.", "A dog slept."]))     # doctest: +SKIP

The model is any albert_tf model directory (its encoder is used), or an
`albert_tf.export` directory: then its preprocessing and encoder SavedModels
compute the embeddings, the path TF Serving users take.
"""

import os

import numpy as np

from albert_tf.models.inference_model import open_for_inference
from albert_tf.text.packing import pack_batch

POOLINGS = ("mean", "pooled")


def mean_pool(sequence_output, input_mask):
    """The mean of each row's token vectors over its real (unmasked) tokens."""
    mask = np.asarray(input_mask, "float32")[..., None]
    return (np.asarray(sequence_output) * mask).sum(1) / np.maximum(mask.sum(1), 1.0)


def cosine_similarities(embeddings):
    """The [n, n] matrix of cosine similarities between the rows of `embeddings`."""
    unit = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
    return unit @ unit.T


class Embedder:
    """Embeds texts with the encoder of `model_path`; `max_seq_length`: default the recorded length
    (an export's is fixed), else 128."""

    def __init__(self, model_path: str | os.PathLike, spm_model_file: str | None = None,
                 max_seq_length: int | None = None, vocab_file: str | None = None):
        self.opened = open_for_inference(model_path, "encoder", spm_model_file, max_seq_length=max_seq_length,
                                         vocab_file=vocab_file)
        self.max_seq_length = self.opened.preprocessing.max_seq_length
        self.export = self.opened.is_export
        self._preprocessor = None  # an export's raw-text preprocessing SavedModel, beside its encoder
        preprocessing_dir = os.path.join(os.path.dirname(os.path.normpath(self.opened.export_dir or ".")),
                                         "preprocessing")
        if self.export and os.path.isdir(preprocessing_dir):
            import tensorflow as tf

            self._preprocessor = tf.saved_model.load(preprocessing_dir)

    @property
    def tokenizer(self):
        return self.opened.tokenizer

    def inputs(self, texts):
        """The encoder's int32 inputs for `texts`."""
        if self._preprocessor is not None:
            import tensorflow as tf

            return self._preprocessor(tf.constant(texts))
        return pack_batch(self.opened.tokenizer, texts, None, self.max_seq_length)

    def embed(self, texts: str | list[str], pooling: str = "mean") -> np.ndarray:
        """float32 [len(texts), H] for a list of texts, [H] for a single string (as sentence-transformers'
        `encode`): `pooling` "mean" (the token vectors' mean: better for similarity) or "pooled" (the
        pooler's tanh([CLS]) vector)."""
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r}: one of {', '.join(POOLINGS)}")
        if isinstance(texts, str):  # a string is one text, not a list of its characters
            return self.embed([texts], pooling)[0]
        inputs = self.inputs(texts)
        if self.export:
            outputs = self.opened.saved_model(inputs)
        else:
            outputs = self.opened.model(inputs, training=False)
        if pooling == "pooled":
            return np.asarray(outputs["pooled_output"])
        return mean_pool(outputs["sequence_output"], inputs["input_mask"])
