"""The functions a LiteRT (.tflite) export converts: one request of raw text, or of token ids, at a time.

  text model   text [1] (and text_b [1] for sentence pairs: "" = none) -> the task's outputs
  ids model    input_word_ids, input_mask, input_type_ids [1, n] int32 -> the same outputs,
               built-in ops only (for apps that tokenize themselves and cannot link
               tensorflow-text's TFLite kernel)

Outputs by model kind: classifier: logits and probabilities [1, labels] (regression: score
[1]); encoder and pretrainer: pooled_output [1, H] (a pretrainer's heads stay out).

One request is one row, so the packing below needs no ragged ops (TensorFlow Lite has no
built-in kernel for RaggedRange or RaggedTensorToTensor): the tokenizer's flat ids and row
splits are sliced directly. The sequence is as long as the text ([CLS] A [SEP] (B [SEP]),
pairs truncated longest-first as `albert_tf.text.packing`), capped at max_seq_length; with
`pad_to` it is padded to that static length for runtimes that need static shapes (padded
keys get exactly zero attention weight, so the outputs are the unpadded ones).
"""

import numpy as np
import tensorflow as tf

from albert_tf.text.packing import CLS_ID, SEP_ID
from albert_tf.text.tf_packing import truncated_lengths

# GLUE tasks whose examples are single sentences: their classifiers take no text_b.
SINGLE_SENTENCE_TASKS = frozenset({"cola", "sst-2"})
ENCODER_INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
# Full int8's gate on the calibration texts (litert_export): classifiers keep the float model's label on this
# share of them; encoders' pooled outputs and regression scores stay this close (mean cosine / relative error).
INT8_MIN_LABEL_AGREEMENT = 0.995
INT8_MIN_COSINE = 0.99
INT8_MAX_SCORE_ERROR = 0.05


def relative_error(outputs, reference):
    """max |outputs - reference| over the largest |reference| (at least 1e-3), over every output."""
    return max(float(np.abs(outputs[name] - reference[name]).max()) / max(float(np.abs(reference[name]).max()), 1e-3)
               for name in reference)


class EmbeddingRequests:
    """Encoders and pretrainers: pooled_output [1, H] of one text (a pretrainer's heads stay out)."""

    takes_pairs = False

    def __init__(self, model, metadata):
        self.model = getattr(model, "encoder", model)

    def output_names(self):
        return ["pooled_output"]

    def outputs(self, inputs):
        return {"pooled_output": tf.cast(self.model(inputs, training=False)["pooled_output"], tf.float32)}

    def int8_gate(self, quantized, reference):
        """(passed, what was measured) for full int8 on the calibration texts."""
        a, b = quantized["pooled_output"], reference["pooled_output"]
        norms = np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)
        cosine = float(np.mean((a * b).sum(-1) / norms))
        measured = f"mean cosine similarity of pooled_output {cosine:.4f} (needs {INT8_MIN_COSINE})"
        return cosine >= INT8_MIN_COSINE, measured


class ClassifierRequests:
    """Classifiers: logits and probabilities [1, labels] (regression: score [1]). Sentence-pair classifiers take
    text_b too: all but those fine-tuned on a single-sentence GLUE task."""

    def __init__(self, model, metadata):
        self.model = model
        self.is_regression = bool(metadata.get("is_regression", False))
        self.takes_pairs = str(metadata.get("task_name") or "").lower() not in SINGLE_SENTENCE_TASKS

    def output_names(self):
        return ["score"] if self.is_regression else ["logits", "probabilities"]

    def outputs(self, inputs):
        logits = tf.cast(self.model.classifier(self.model.encoder(inputs, training=False)["pooled_output"]), tf.float32)
        if self.is_regression:
            return {"score": logits[:, 0]}
        return {"logits": logits, "probabilities": tf.nn.softmax(logits)}

    def int8_gate(self, quantized, reference):
        """(passed, what was measured) for full int8 on the calibration texts."""
        if self.is_regression:
            error = relative_error(quantized, reference)
            return error <= INT8_MAX_SCORE_ERROR, (f"score error {error:.3g} of the largest score (at most "
                                                   f"{INT8_MAX_SCORE_ERROR:g})")
        agreement = float(np.mean(quantized["logits"].argmax(-1) == reference["logits"].argmax(-1)))
        return agreement >= INT8_MIN_LABEL_AGREEMENT, (f"label agreement with the float model {agreement:.2%} "
                                                       f"(needs {INT8_MIN_LABEL_AGREEMENT:.1%})")


# Every layer is computed at every position, the last one too: computing it at [CLS] alone (as the TF Serving
# model does) makes the converter fuse the shared layer's attention weights a second time for that layer, 1.8 MB
# more at albert_base for a twelfth of one request's work.
# What a request returns, per model kind a LiteRT export supports (span labelers answer with text spans,
# which the SavedModel export serves).
REQUESTS_BY_KIND = {"encoder": EmbeddingRequests, "pretrainer": EmbeddingRequests, "classifier": ClassifierRequests}
LITERT_KINDS = tuple(REQUESTS_BY_KIND)


def pack_one_request(ids_a, ids_b, has_b, max_seq_length, pad_to=None):
    """Token ids of one request -> the encoder's int32 inputs [1, length].

    `ids_a`, `ids_b`: the tokenizer's ids of the text and of the second text, one row each (ragged; `ids_b`
    None for single texts); `has_b`: scalar bool, whether the second text is a segment. The ids equal
    `tf_packing.pack`'s row without its padding. (Each text is tokenized on its own: TensorFlow Lite has no
    built-in kernel that concatenates strings.)
    """
    values_a = tf.cast(ids_a.flat_values, tf.int32)
    values_b = tf.zeros([0], tf.int32) if ids_b is None else tf.cast(ids_b.flat_values, tf.int32)
    length_a = tf.shape(values_a)[0]
    length_b = tf.where(has_b, tf.shape(values_b)[0], 0)
    budget = tf.where(has_b, max_seq_length - 3, max_seq_length - 2)
    keep_a, keep_b = truncated_lengths(length_a, length_b, budget)
    n_b = tf.cast(has_b, tf.int32)
    word_ids = tf.concat([[CLS_ID], values_a[:keep_a], [SEP_ID], values_b[:keep_b], tf.fill([n_b], SEP_ID)], axis=0)
    type_ids = tf.concat([tf.zeros([keep_a + 2], tf.int32), tf.ones([(keep_b + 1) * n_b], tf.int32)], axis=0)
    inputs = {"input_word_ids": word_ids, "input_mask": tf.ones_like(word_ids), "input_type_ids": type_ids}
    if pad_to is not None:
        padding = pad_to - tf.shape(word_ids)[0]
        inputs = {name: tf.reshape(tf.pad(value, [[0, padding]]), [pad_to]) for name, value in inputs.items()}
    return {name: value[None, :] for name, value in inputs.items()}


class LiteRTModule(tf.Module):
    """The converted functions (`text_function`, `ids_function`) of one checkpoint's model.

    Args:
      tokenizer: a `TFAlbertTokenizer` with the checkpoint's recorded preprocessing.
      model: the checkpoint's Keras model; metadata: its albert_tf.json.
      max_seq_length: tokens per request at most; pad_to: a static length (<= max_seq_length) or None.
    """

    def __init__(self, tokenizer, model, metadata, max_seq_length, pad_to=None):
        super().__init__(name="albert_litert")
        kind = metadata["model"]
        if kind not in REQUESTS_BY_KIND:
            raise ValueError(f"a LiteRT export takes a {', '.join(LITERT_KINDS)}; this checkpoint holds a {kind!r} "
                             "model (span labelers: export SavedModels, whose serving model returns answer text)")
        self.requests = REQUESTS_BY_KIND[kind](model, metadata)
        self.model = self.requests.model
        self.tokenizer = tokenizer
        self.pairs = self.requests.takes_pairs
        self.max_seq_length = max_seq_length
        self.pad_to = pad_to
        self.text_function = tf.function(
            self._respond_to_pair if self.pairs else self._respond_to_text,
            input_signature=[tf.TensorSpec([1], tf.string, name="text")]
            + ([tf.TensorSpec([1], tf.string, name="text_b")] if self.pairs else []))
        self.ids_function = tf.function(
            self._respond_to_ids,
            input_signature=[tf.TensorSpec([1, pad_to], tf.int32, name=name) for name in ENCODER_INPUT_NAMES])

    def output_names(self):
        return self.requests.output_names()

    def _respond_to_text(self, text):
        return self.requests.outputs(pack_one_request(self.tokenizer(text), None, tf.constant(False),
                                                      self.max_seq_length, self.pad_to))

    def _respond_to_pair(self, text, text_b):
        has_b = tf.not_equal(text_b[0], "")
        return self.requests.outputs(pack_one_request(self.tokenizer(text), self.tokenizer(text_b), has_b,
                                                      self.max_seq_length, self.pad_to))

    def _respond_to_ids(self, input_word_ids, input_mask, input_type_ids):
        return self.requests.outputs({"input_word_ids": input_word_ids, "input_mask": input_mask,
                                      "input_type_ids": input_type_ids})


class PackingModule(tf.Module):
    """model.tflite's tokenizer and packing alone: text [1] and text_b [1] ("" = none) -> the three int32 inputs
    [1, n]. Converted on its own, it shows in LiteRT which ids a text model sees (tests and benchmarks compare
    them with the Python tokenizer's)."""

    def __init__(self, tokenizer, max_seq_length):
        super().__init__(name="albert_litert_packing")
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length

    @tf.function(input_signature=[tf.TensorSpec([1], tf.string, name="text"),
                                  tf.TensorSpec([1], tf.string, name="text_b")])
    def text(self, text, text_b):
        return pack_one_request(self.tokenizer(text), self.tokenizer(text_b), tf.not_equal(text_b[0], ""),
                                self.max_seq_length)
