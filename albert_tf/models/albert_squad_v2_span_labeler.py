"""`AlbertSquadV2SpanLabeler`: the encoder with the original ALBERT's SQuAD 2.0 head."""

import numbers

import keras
from keras import ops

from albert_tf.albert_config import AlbertConfig
from albert_tf.layers.squad_v2_head import SquadV2Head
from albert_tf.models.task_model import AlbertTaskModel
from albert_tf.networks.albert_encoder import ENCODER_INPUTS, AlbertEncoder, encoder_for, encoder_inputs

MODEL_KIND = "squad_v2_span_labeler"


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSquadV2SpanLabeler(AlbertTaskModel, keras.Model):
    """ALBERT for SQuAD 2.0 as the original run_squad_v2 builds it (`SquadV2Head`).

    The question is segment A and the context segment B, `[CLS] question [SEP] context [SEP]`.
    The end of an answer is scored given its start, and a separate answerability logit
    (`cls_logits`) says whether the window holds no answer. BERT's head (`AlbertSpanLabeler`,
    no answer = the [CLS] span) is the other SQuAD 2.0 model albert_tf trains.

    Inputs (dict): `input_word_ids`, `input_mask`, `input_type_ids`, int32 [batch, seq].

    Outputs (dict), a beam of `start_n_top` starts times `end_n_top` ends per window:
    `start_top_log_probs` float32 and `start_top_index` int32 [batch, start_n_top];
    `end_top_log_probs` float32 and `end_top_index` int32 [batch, start_n_top * end_n_top]
    (entry k * end_n_top + j: the j-th best end of the k-th best start); `cls_logits` float32
    [batch]. Fine-tuning reads `head_outputs`, which takes the gold `start_positions` too.

    >>> labeler = AlbertSquadV2SpanLabeler(AlbertEncoder(AlbertConfig.from_preset("albert_tiny")))
    >>> ids = ops.ones((2, 8), "int32")
    >>> outputs = labeler({"input_word_ids": ids, "input_mask": ids,
    ...                    "input_type_ids": ops.zeros((2, 8), "int32")})
    >>> tuple(outputs["end_top_index"].shape), tuple(outputs["cls_logits"].shape)
    ((2, 25), (2,))
    """

    CONFIG_ATTRIBUTES = {"start_n_top": "start_n_top", "end_n_top": "end_n_top", "dropout": "dropout_rate",
                         "seq_length": "seq_length"}
    TRAINING_INPUTS = (*ENCODER_INPUTS, "start_positions")

    def __init__(self, encoder: AlbertEncoder | AlbertConfig | None = None, start_n_top: int = 5, end_n_top: int = 5,
                 dropout: float = 0.1, config: AlbertConfig | None = None, seq_length: int | None = None, **kwargs):
        """`start_n_top`, `end_n_top`: the inference beam (the original's 5 and 5); `dropout`: before the
        answerability logit (the original's 0.1)."""
        self.refuse_unknown_arguments(kwargs)  # keras.Model would drop a misspelt keyword silently
        for name, value in (("start_n_top", start_n_top), ("end_n_top", end_n_top)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"AlbertSquadV2SpanLabeler: {name}={value!r} must be a positive integer")
        encoder = encoder_for("AlbertSquadV2SpanLabeler", encoder, config, seq_length)
        config = encoder.albert_config
        kwargs.setdefault("name", "albert_squad_v2_span_labeler")

        # === Layers ===
        self.encoder = encoder
        self.squad_v2_head = SquadV2Head(config.hidden_size, config.initializer_range, int(start_n_top),
                                         int(end_n_top), dropout, name="squad_v2_head")

        # === Functional Model ===
        inputs = encoder_inputs(seq_length)
        sequence_output = encoder({name: inputs[name] for name in ENCODER_INPUTS})["sequence_output"]
        outputs = self.squad_v2_head(sequence_output, inputs["input_mask"], inputs["input_type_ids"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.start_n_top = int(start_n_top)
        self.end_n_top = int(end_n_top)
        self.dropout_rate = dropout
        self.seq_length = seq_length

    def head_outputs(self, inputs, training=True):
        """The training outputs: `start_log_probs`, `end_log_probs` float32 [batch, seq] (the end given the
        gold start, `inputs["start_positions"]`, int [batch]) and `cls_logits` float32 [batch]."""
        if "start_positions" not in inputs:
            raise ValueError("AlbertSquadV2SpanLabeler.head_outputs needs the gold start_positions among its inputs "
                             "(the end logits are conditioned on the start)")
        sequence_output = self.encoder({name: inputs[name] for name in ENCODER_INPUTS},
                                       training=training)["sequence_output"]
        return self.squad_v2_head(sequence_output, inputs["input_mask"], inputs["input_type_ids"],
                                  start_positions=inputs["start_positions"], training=training)
