"""`AlbertPretrainer`: the encoder with its masked-LM and sentence-order heads."""

import keras
import tensorflow as tf

from albert_tf.albert_config import AlbertConfig

from albert_tf.layers.initializers import truncated_normal
from albert_tf.layers.masked_lm_head import MaskedLMHead
from albert_tf.models.task_model import AlbertTaskModel
from albert_tf.networks.albert_encoder import ENCODER_INPUTS, AlbertEncoder, encoder_for, encoder_inputs


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPretrainer(AlbertTaskModel, keras.Model):
    """ALBERT with the pretraining heads: MLM tied to the embeddings, and SOP.

    Inputs (dict): `input_word_ids`, `input_mask`, `input_type_ids` (int32
    [batch, seq]) and `masked_lm_positions` (int32 [batch, P]).

    Outputs (dict, float32): `sequence_output` [batch, seq, H], `pooled_output`
    [batch, H], `mlm_logits` [batch, P, V], `sop_logits` [batch, 2].

    The SOP head is a single dense layer on the pooled output, as in the
    original (no extra dense + tanh). `pretraining_logits` computes the two
    logits alone, faster (training uses it).

    >>> pretrainer = AlbertPretrainer(AlbertConfig.from_preset("albert_tiny"))
    >>> pretrainer.encoder.albert_config.num_hidden_layers
    4
    """

    CONFIG_ATTRIBUTES = {"seq_length": "seq_length", "max_predictions_per_seq": "max_predictions_per_seq"}

    def __init__(self, encoder: AlbertEncoder | AlbertConfig | None = None, config: AlbertConfig | None = None,
                 seq_length: int | None = None, max_predictions_per_seq: int | None = None, **kwargs):
        self.refuse_unknown_arguments(kwargs)  # keras.Model would drop a misspelt keyword silently
        encoder = encoder_for("AlbertPretrainer", encoder, config, seq_length)
        config = encoder.albert_config
        kwargs.setdefault("name", "albert_pretrainer")

        # === Layers ===
        self.encoder = encoder
        self.masked_lm_head = MaskedLMHead(
            encoder.embeddings,
            hidden_act=config.hidden_act,
            initializer_range=config.initializer_range,
            name="masked_lm_head",
        )
        self.sentence_order_head = keras.layers.Dense(
            2,
            kernel_initializer=truncated_normal(config.initializer_range),
            dtype="float32",
            name="sentence_order_head",
        )

        # === Functional Model ===
        inputs = encoder_inputs(seq_length)
        inputs["masked_lm_positions"] = keras.Input(
            shape=(max_predictions_per_seq,), dtype="int32", name="masked_lm_positions"
        )
        encoder_outputs = encoder({name: inputs[name] for name in ENCODER_INPUTS})
        sequence_output = encoder_outputs["sequence_output"]
        pooled_output = encoder_outputs["pooled_output"]
        super().__init__(
            inputs=inputs,
            outputs={
                "sequence_output": sequence_output,
                "pooled_output": pooled_output,
                "mlm_logits": self.masked_lm_head(sequence_output, inputs["masked_lm_positions"]),
                "sop_logits": self.sentence_order_head(pooled_output),
            },
            **kwargs,
        )

        # === Config ===
        self.seq_length = seq_length
        self.max_predictions_per_seq = max_predictions_per_seq

    def pretraining_logits(self, inputs, training=None):
        """{"mlm_logits", "sop_logits"} as the model's outputs, computing the last layer only at [CLS]
        and the masked positions (`AlbertEncoder.last_layer_rows`): what training and evaluation need,
        without the sequence output they never read."""
        positions = tf.cast(inputs["masked_lm_positions"], tf.int32)
        first_token = tf.zeros_like(positions[:, :1])
        rows = self.encoder.last_layer_rows({name: inputs[name] for name in ENCODER_INPUTS},
                                            tf.concat([first_token, positions], axis=1), training=training)
        pooled_output = self.encoder.pool(rows[:, 0, :])
        return {"mlm_logits": self.masked_lm_head.logits_of_rows(rows[:, 1:, :]),
                "sop_logits": self.sentence_order_head(pooled_output)}
