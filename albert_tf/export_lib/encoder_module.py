"""The TF Hub-style encoder SavedModel: the three int32 inputs -> pooled, sequence and per-layer outputs.

Reloaded with `tf.saved_model.load` (TensorFlow only), the object is callable
on the input dict and exposes `variables` and `trainable_variables`, so it
fine-tunes with a GradientTape:

  encoder = tf.saved_model.load("export/encoder")
  outputs = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}, training=True)
  outputs["pooled_output"], outputs["sequence_output"], outputs["encoder_outputs"]  # list, one per layer

Signatures (TF Serving, other languages): `serving_default` (pooled_output,
sequence_output), and for checkpoints with pretraining heads `mlm` (adds
masked_lm_positions [batch, P] -> mlm_logits [batch, P, vocab]) and `sop`
(sop_logits [batch, 2], and sop_log_probs, their log-softmax). The SentencePiece
model and albert_tf.json travel as assets (`albert_tf.models.model_io.load_encoder`
reads the latter).

For users of the original's TF Hub module, the names it serves too: `tokens`
(input_ids, input_mask, segment_ids -> sequence_output, pooled_output, the same
values as `serving_default`), `sop_log_probs` in `sop` (what the original's `sop`
returns), and `tokenization_info` (no inputs -> vocab_file, the path of the
SentencePiece model asset once loaded; do_lower_case; keep_accents; rewrite_quotes).
"""

import tensorflow as tf

from albert_tf.networks.albert_encoder import ENCODER_INPUTS


def input_specs():
    return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in ENCODER_INPUTS}


# The original hub module's names of the three inputs, in ENCODER_INPUTS' order.
ORIGINAL_INPUTS = ("input_ids", "input_mask", "segment_ids")


class EncoderModule(tf.__internal__.tracking.AutoTrackable):
    """An AutoTrackable rather than a tf.Module: the TF Hub convention sets `variables` and
    `trainable_variables` as attributes, which tf.Module reserves for its own properties.

    Args:
      encoder: the `AlbertEncoder`.
      pretrainer: its `AlbertPretrainer`, for the `mlm` and `sop` signatures (or None).
      spm_model_file, metadata_file: stored as assets.
      lower_case, keep_accents, rewrite_quotes: the preprocessing the model expects, served by `tokenization_info`
        (written when `spm_model_file` and `lower_case` are given).
    """

    def __init__(self, encoder, pretrainer=None, spm_model_file=None, metadata_file=None, lower_case=None,
                 keep_accents=False, rewrite_quotes=False):
        self.encoder = encoder
        # In the encoder's own order, so load_encoder maps them back onto a new AlbertEncoder.
        self.variables = list(encoder.weights)
        self.trainable_variables = list(encoder.trainable_weights)
        # Dropout (training=True) draws from Keras seed generators whose state variables are not
        # among the weights; the SavedModel must hold them too.
        self.dropout_seed_states = [layer.seed_generator.state for layer in encoder._flatten_layers()
                                    if getattr(layer, "seed_generator", None) is not None]
        self.pretrainer = pretrainer
        self.spm_model = tf.saved_model.Asset(spm_model_file) if spm_model_file else None
        self.metadata = tf.saved_model.Asset(metadata_file) if metadata_file else None
        self.lower_case = lower_case
        self.keep_accents = keep_accents
        self.rewrite_quotes = rewrite_quotes

    @tf.function
    def __call__(self, inputs, training=False):
        """TF Hub's encoder call: `training=True` runs dropout (for fine-tuning), False (default) does not."""
        outputs = self.encoder(inputs, training=training)
        return {"pooled_output": outputs["pooled_output"], "sequence_output": outputs["sequence_output"],
                "encoder_outputs": list(outputs["encoder_outputs"])}

    def trace(self):
        """Traces `__call__` for both values of `training`, so the SavedModel holds both."""
        for training in (False, True):
            self.__call__.get_concrete_function(input_specs(), training=training)

    def signatures(self):
        """Each calls the traced `__call__`, so the encoder's graph is built once."""

        @tf.function(input_signature=list(input_specs().values()))
        def serve(input_word_ids, input_mask, input_type_ids):
            outputs = self({"input_word_ids": input_word_ids, "input_mask": input_mask,
                            "input_type_ids": input_type_ids})
            return {"pooled_output": outputs["pooled_output"], "sequence_output": outputs["sequence_output"]}

        original_specs = [tf.TensorSpec([None, None], tf.int32, name=name) for name in ORIGINAL_INPUTS]

        @tf.function(input_signature=original_specs)
        def tokens(input_ids, input_mask, segment_ids):
            outputs = self({"input_word_ids": input_ids, "input_mask": input_mask, "input_type_ids": segment_ids})
            return {"sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"]}

        signatures = {"serving_default": serve, "tokens": tokens}
        if self.spm_model is not None and self.lower_case is not None:

            @tf.function(input_signature=[])
            def tokenization_info():
                return {"vocab_file": self.spm_model.asset_path, "do_lower_case": tf.constant(self.lower_case),
                        "keep_accents": tf.constant(self.keep_accents),
                        "rewrite_quotes": tf.constant(self.rewrite_quotes)}

            signatures["tokenization_info"] = tokenization_info
        if self.pretrainer is None:
            return signatures

        @tf.function(input_signature=[*input_specs().values(), tf.TensorSpec([None, None], tf.int32,
                                                                                name="masked_lm_positions")])
        def mlm(input_word_ids, input_mask, input_type_ids, masked_lm_positions):
            outputs = self({"input_word_ids": input_word_ids, "input_mask": input_mask,
                            "input_type_ids": input_type_ids})
            return {"mlm_logits": self.pretrainer.masked_lm_head(outputs["sequence_output"], masked_lm_positions)}

        @tf.function(input_signature=list(input_specs().values()))
        def sop(input_word_ids, input_mask, input_type_ids):
            outputs = self({"input_word_ids": input_word_ids, "input_mask": input_mask,
                            "input_type_ids": input_type_ids})
            sop_logits = self.pretrainer.sentence_order_head(outputs["pooled_output"])
            return {"sop_logits": sop_logits,
                    "sop_log_probs": tf.nn.log_softmax(tf.cast(sop_logits, tf.float32), axis=-1)}

        signatures.update(mlm=mlm, sop=sop)
        return signatures
