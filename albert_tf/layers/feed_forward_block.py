"""`FeedForwardBlock`: the position-wise FFN, residual and post-LayerNorm."""

import keras
import tensorflow as tf

from albert_tf.albert_config import LAYER_NORM_EPSILON
from albert_tf.layers.activations import get_activation
from albert_tf.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="albert_tf")
class FeedForwardBlock(keras.layers.Layer):
    """LayerNorm(x + Dropout(W2 act(W1 x + b1) + b2)), the second half of an ALBERT layer.

    Call arguments:
      hidden_states: [batch, seq, hidden_size].

    Returns float32 [batch, seq, hidden_size].
    """

    def __init__(
        self,
        hidden_size,
        intermediate_size,
        hidden_act="gelu",
        dropout_rate=0.0,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range

        self.activation = get_activation(hidden_act)
        self.intermediate_dense = keras.layers.Dense(
            intermediate_size, kernel_initializer=truncated_normal(initializer_range), name="intermediate_dense"
        )
        self.output_dense = keras.layers.Dense(
            hidden_size, kernel_initializer=truncated_normal(initializer_range), name="output_dense"
        )
        self.output_dropout = keras.layers.Dropout(dropout_rate, name="output_dropout")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, dtype="float32", name="layer_norm"
        )

    def build(self, input_shape):
        self.intermediate_dense.build((None, None, self.hidden_size))
        self.output_dense.build((None, None, self.intermediate_size))
        self.layer_norm.build((None, None, self.hidden_size))
        super().build(input_shape)

    def call(self, hidden_states, training=None):
        intermediate = self.activation(self.intermediate_dense(hidden_states))
        ffn_output = self.output_dropout(self.output_dense(intermediate), training=training)
        return self.layer_norm(tf.cast(hidden_states, tf.float32) + tf.cast(ffn_output, tf.float32))

    def compute_output_spec(self, hidden_states, training=None):
        return keras.KerasTensor(hidden_states.shape, dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            dropout_rate=self.dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config
