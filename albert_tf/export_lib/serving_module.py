"""The TF Serving SavedModel: raw text in, task outputs out, tokenized in-graph.

Signatures:
  serving_default  text [batch], text_b [batch] (optional: TF Serving fills in
                   the default, no second segments; "" in a row: that row has
                   none) -> outputs (below)
  serve_examples   examples [batch]: serialized tf.Example with bytes features
                   `text` and optional `text_b` -> outputs

Outputs by model kind:
  encoder / pretrainer  pooled_output [batch, H]; embedding [batch, H] (mean of
                        the token vectors, L2-normalized: for similarity search)
  classifier            probabilities [batch, labels], label_id, label (its name);
                        regression: score [batch]
  span_labeler          question = text, context = text_b: start, end (sequence
                        positions of the answer's first and last token), score
                        (start + end logit), answer (the context's own text of
                        that span, from the tokenizer's byte offsets). With no
                        context left: start = end = -1, answer "", score the
                        lowest float32.
"""

import tensorflow as tf

from albert_tf.text.tf_packing import (NO_SECOND_SEGMENTS, TEXT_B_SPEC, TEXT_SPEC, clean_text, encode_text, pack,
                                      second_segments, split_batch)
from albert_tf.export_lib.token_offsets import tokenize_with_offsets

# Longest answer considered, in tokens (the original run_squad's max_answer_length).
MAX_ANSWER_TOKENS = 30
SERVED_KINDS = ("encoder", "pretrainer", "classifier", "span_labeler")


def trim_padding(inputs):
    """The packed inputs cut to the batch's longest row.

    Padded keys add -10000 to the attention logits, so they get exactly zero weight (exp underflows in
    float32): the real tokens' outputs, the pooled [CLS] vector and the masked mean are those of the
    fully padded batch. Short requests then cost their own length, not --max_seq_length.
    """
    # At least one position: an empty batch (whose max is the lowest int32) still has a [CLS] column to pool.
    length = tf.maximum(tf.reduce_max(tf.reduce_sum(inputs["input_mask"], axis=1)), 1)
    return {name: value[:, :length] for name, value in inputs.items()}


class ServingModule(tf.Module):
    """Args:
      tokenizer: a `TFAlbertTokenizer`.
      max_seq_length: tokens per input row.
      model: the checkpoint's Keras model (an encoder, or a model with an `.encoder`).
      metadata: its albert_tf.json (`model` is the kind; classifiers add `label_names`, `is_regression`).
    """

    def __init__(self, tokenizer, max_seq_length, model, metadata):
        super().__init__(name="albert_serving")
        self.kind = metadata["model"]
        if self.kind not in SERVED_KINDS:
            raise ValueError(f"no serving outputs for a {self.kind!r} model; export one of {', '.join(SERVED_KINDS)}")
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        # An embedding model needs no heads: a pretrainer's stay out of the SavedModel.
        self.model = getattr(model, "encoder", model) if self.kind in ("encoder", "pretrainer") else model
        self.is_regression = bool(metadata.get("is_regression", False))
        if self.kind == "classifier" and not self.is_regression:
            names = metadata.get("label_names") or [str(i) for i in range(int(metadata["num_labels"]))]
            if len(names) != int(metadata["num_labels"]):
                raise ValueError(f"label_names has {len(names)} names for num_labels={metadata['num_labels']}")
            self.label_names = tf.constant(names)

    @tf.function(input_signature=[TEXT_SPEC, TEXT_B_SPEC])
    def serve(self, text, text_b=NO_SECOND_SEGMENTS):
        if self.kind == "span_labeler":
            return self._answer_spans(text, text_b)
        inputs = trim_padding(encode_text(self.tokenizer, text, text_b, self.max_seq_length))
        if self.kind == "classifier":
            return self._classes(inputs)
        return self._embeddings(inputs)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve_examples(self, examples):
        features = tf.io.parse_example(examples, {
            "text": tf.io.FixedLenFeature([], tf.string),
            "text_b": tf.io.FixedLenFeature([], tf.string, default_value=""),
        })
        return self.serve(features["text"], features["text_b"])

    def signatures(self):
        return {"serving_default": self.serve, "serve_examples": self.serve_examples}

    def _embeddings(self, inputs):
        outputs = self.model(inputs, training=False)
        mask = tf.cast(inputs["input_mask"], tf.float32)[:, :, None]
        mean = tf.reduce_sum(outputs["sequence_output"] * mask, 1) / tf.maximum(tf.reduce_sum(mask, 1), 1.0)
        return {"pooled_output": outputs["pooled_output"], "embedding": tf.math.l2_normalize(mean, axis=-1)}

    def _classes(self, inputs):
        logits = tf.cast(self.model(inputs, training=False)["logits"], tf.float32)
        if self.is_regression:
            return {"score": logits[:, 0]}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"probabilities": tf.nn.softmax(logits), "label_id": label_id,
                "label": tf.gather(self.label_names, label_id)}

    def _answer_spans(self, question, context):
        context, has_context = second_segments(question, context)
        texts = clean_text(tf.concat([question, context], axis=0))
        batch = tf.shape(question)[0]
        ids, starts, ends = tokenize_with_offsets(self.tokenizer, texts)
        ids_question, ids_context = split_batch(ids, batch)
        inputs = pack(ids_question, ids_context, has_context, self.max_seq_length)
        outputs = self.model(inputs, training=False)
        start_logits = tf.cast(outputs["start_logits"], tf.float32)
        end_logits = tf.cast(outputs["end_logits"], tf.float32)

        # Context tokens: segment B without its closing [SEP].
        positions = tf.range(self.max_seq_length)[None, :]
        length = tf.reduce_sum(inputs["input_mask"], axis=1, keepdims=True)
        context_start = length - tf.reduce_sum(inputs["input_type_ids"], axis=1, keepdims=True)
        in_context = (positions >= context_start) & (positions < length - 1) & has_context[:, None]
        scores = start_logits[:, :, None] + end_logits[:, None, :]
        valid = (in_context[:, :, None] & in_context[:, None, :]
                 & (positions[:, :, None] <= positions[:, None, :])
                 & (positions[:, None, :] - positions[:, :, None] < MAX_ANSWER_TOKENS))
        flat = tf.reshape(tf.where(valid, scores, tf.float32.min), [batch, -1])
        best = tf.argmax(flat, axis=-1, output_type=tf.int32)
        found = tf.reduce_any(in_context, axis=1)
        start = tf.where(found, best // self.max_seq_length, -1)
        end = tf.where(found, best % self.max_seq_length, -1)

        # Sequence positions -> context tokens -> bytes of the context.
        first_token = tf.maximum(start - context_start[:, 0], 0)[:, None]
        last_token = tf.maximum(end - context_start[:, 0], 0)[:, None]
        _, context_starts = split_batch(starts, batch)
        _, context_ends = split_batch(ends, batch)
        byte_start = tf.gather(context_starts.to_tensor(0, shape=[None, self.max_seq_length]), first_token,
                               batch_dims=1)[:, 0]
        byte_end = tf.gather(context_ends.to_tensor(0, shape=[None, self.max_seq_length]), last_token,
                             batch_dims=1)[:, 0]
        answer = tf.strings.substr(texts[batch:], byte_start, tf.maximum(byte_end - byte_start, 0))
        return {"start": start, "end": end, "score": tf.reduce_max(flat, axis=-1),
                "answer": tf.where(found, answer, "")}
