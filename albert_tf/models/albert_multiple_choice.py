"""`AlbertMultipleChoice`: one score per (passage, question + option) sequence, softmax over the options."""

import keras
from keras import ops

from albert_tf.albert_config import AlbertConfig
from albert_tf.layers.initializers import truncated_normal
from albert_tf.models.task_model import AlbertTaskModel
from albert_tf.networks.albert_encoder import ENCODER_INPUTS, AlbertEncoder, encoder_for
from albert_tf.settings import DROPOUT_RATE

MODEL_KIND = "multiple_choice"


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoice(AlbertTaskModel, keras.Model):
    """Inputs: the encoder's three tensors shaped [batch, num_choices, seq] (any num_choices at call time).
    Outputs: {"logits": float32 [batch, num_choices]} (pooled output -> dense(1) per choice, as the original RACE)."""

    CONFIG_ATTRIBUTES = {"num_choices": "num_choices", "dropout": "dropout_rate", "seq_length": "seq_length"}

    def __init__(self, encoder: AlbertEncoder | AlbertConfig | None = None, num_choices: int = 4, dropout: float = 0.1,
                 config: AlbertConfig | None = None, seq_length: int | None = None, **kwargs):
        self.refuse_unknown_arguments(kwargs)  # the TypeError every task model gives, before Keras's ValueError
        # No seq_length for the encoder: it sees [batch * choices, seq] whatever the model's inputs say.
        encoder = encoder_for("AlbertMultipleChoice", encoder, config)
        albert_config = encoder.albert_config
        kwargs.setdefault("name", "albert_multiple_choice")
        self.encoder = encoder
        DROPOUT_RATE.check("dropout", dropout)
        self.dropout = keras.layers.Dropout(dropout, name="choice_dropout")
        self.scorer = keras.layers.Dense(1, kernel_initializer=truncated_normal(albert_config.initializer_range),
                                         dtype="float32", name="choice_scorer")
        super().__init__(**kwargs)
        self.num_choices = num_choices
        self.dropout_rate = dropout
        self.seq_length = seq_length

    def call(self, inputs, training=False):
        return self._choice_logits(inputs, training, lambda flat: self.encoder(flat, training=training)["pooled_output"])

    def head_outputs(self, inputs, training=True):
        return self._choice_logits(inputs, training, lambda flat: self.encoder.first_token_pooled_output(
            flat, training=training, skip_padding=bool(training)))

    def _choice_logits(self, inputs, training, pooled_output):
        shape = ops.shape(inputs["input_word_ids"])
        flat = {name: ops.reshape(inputs[name], (-1, shape[-1])) for name in ENCODER_INPUTS}
        pooled = pooled_output(flat)
        return {"logits": ops.reshape(self.scorer(self.dropout(pooled, training=training)), (-1, shape[1]))}

    def build_variables(self):
        """Creates the head's variables (a subclassed model makes them on its first call)."""
        ones = ops.ones((1, self.num_choices, 4), "int32")
        self({"input_word_ids": ones, "input_mask": ones, "input_type_ids": ops.zeros_like(ones)})
        return self
