"""`AlbertSpanLabeler`: the encoder with a start/end span head, for SQuAD."""

import keras
from keras import ops

from albert_tf.albert_config import AlbertConfig
from albert_tf.layers.initializers import truncated_normal
from albert_tf.models.task_model import AlbertTaskModel
from albert_tf.networks.albert_encoder import ENCODER_INPUTS, AlbertEncoder, encoder_for, encoder_inputs

MODEL_KIND = "span_labeler"


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSpanLabeler(AlbertTaskModel, keras.Model):
    """ALBERT for extractive question answering (BERT's SQuAD head).

    The original's SQuAD 1.1 model (run_squad_v1), and run_squad's SQuAD 2.0
    alternative to the original's v2 model (`AlbertSquadV2SpanLabeler`). The
    question is segment A and the context segment B, as in
    `[CLS] question [SEP] context [SEP]`. One dense layer maps each position of
    `sequence_output` to a start and an end logit. The [CLS] position (index 0)
    stands for "no answer": SQuAD 2.0 scores it as start_logits[0] + end_logits[0]
    and compares it with the best span's score (`null_score_diff_threshold`).

    Inputs (dict): `input_word_ids`, `input_mask`, `input_type_ids`, int32
    [batch, seq].

    Outputs (dict): `start_logits`, `end_logits`, float32 [batch, seq]. Padding
    positions are not masked: callers only read positions of the context.

    >>> labeler = AlbertSpanLabeler(AlbertEncoder(AlbertConfig.from_preset("albert_tiny")))
    >>> ids = ops.ones((2, 8), "int32")
    >>> outputs = labeler({"input_word_ids": ids, "input_mask": ids,
    ...                    "input_type_ids": ops.zeros((2, 8), "int32")})
    >>> tuple(outputs["start_logits"].shape), outputs["end_logits"].dtype
    ((2, 8), 'float32')
    """

    CONFIG_ATTRIBUTES = {"seq_length": "seq_length"}

    def __init__(self, encoder: AlbertEncoder | AlbertConfig | None = None, config: AlbertConfig | None = None,
                 seq_length: int | None = None, **kwargs):
        self.refuse_unknown_arguments(kwargs)  # keras.Model would drop a misspelt keyword silently
        encoder = encoder_for("AlbertSpanLabeler", encoder, config, seq_length)
        config = encoder.albert_config
        kwargs.setdefault("name", "albert_span_labeler")

        # === Layers ===
        self.encoder = encoder
        self.span_head = keras.layers.Dense(
            2,
            kernel_initializer=truncated_normal(config.initializer_range),
            dtype="float32",
            name="span_head",
        )

        # === Functional Model ===
        inputs = encoder_inputs(seq_length)
        sequence_output = encoder({name: inputs[name] for name in ENCODER_INPUTS})["sequence_output"]
        span_logits = self.span_head(sequence_output)
        super().__init__(
            inputs=inputs,
            outputs={
                "start_logits": ops.cast(span_logits[:, :, 0], "float32"),
                "end_logits": ops.cast(span_logits[:, :, 1], "float32"),
            },
            **kwargs,
        )

        # === Config ===
        self.seq_length = seq_length
