"""`MaskedLMHead`: masked-token logits through the E-wide, tied embedding table."""

import keras
import tensorflow as tf

from albert_tf.albert_config import LAYER_NORM_EPSILON
from albert_tf.layers.activations import get_activation
from albert_tf.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="albert_tf")
class MaskedLMHead(keras.layers.Layer):
    """LayerNorm(act(h[positions] W_t + b_t)) @ W_word^T + b_vocab.

    Only the masked positions are gathered before the transform, so the head costs
    P, not seq, rows per example. The output matrix is the encoder's word-embedding
    table (V x E), so this head adds no V x E weights of its own, only its bias.

    Args:
      embeddings: the encoder's `AlbertEmbeddings` layer, whose `word_embeddings`
        table is tied. It is not part of `get_config`: pass it when building.
      hidden_act, initializer_range: as in `AlbertConfig`.

    Call arguments:
      sequence_output: [batch, seq, hidden_size].
      masked_lm_positions: int32 [batch, P].

    Returns float32 logits [batch, P, vocab_size].
    """

    def __init__(self, embeddings, hidden_act="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.embeddings = embeddings
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.activation = get_activation(hidden_act)
        self.transform_dense = keras.layers.Dense(
            embeddings.embedding_size,
            kernel_initializer=truncated_normal(initializer_range),
            name="transform_dense",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, dtype="float32", name="layer_norm"
        )

    def build(self, sequence_output_shape, masked_lm_positions_shape=None):
        self.transform_dense.build((None, None, sequence_output_shape[-1]))
        self.layer_norm.build((None, None, self.embeddings.embedding_size))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.embeddings.vocab_size,), initializer="zeros"
        )
        super().build(sequence_output_shape)

    def call(self, sequence_output, masked_lm_positions):
        masked = tf.gather(sequence_output, tf.cast(masked_lm_positions, tf.int32), batch_dims=1)
        return self.logits_of_rows(masked)

    def logits_of_rows(self, masked):
        """Logits from hidden states already gathered at the masked positions ([batch, P, H])."""
        transformed = self.layer_norm(self.activation(self.transform_dense(masked)))
        table = tf.cast(self.embeddings.word_embeddings, self.compute_dtype)
        # One [batch*P, E] x [E, V] matmul: a batched matmul against the broadcast table ran as
        # `batch` small matmuls, and its table gradient as `batch` products plus a sum (~25% of
        # albert_small's training step on a 2-core CPU, against ~3% for the 2-D form).
        rows = tf.reshape(tf.cast(transformed, self.compute_dtype), [-1, self.embeddings.embedding_size])
        logits = tf.reshape(tf.matmul(rows, table, transpose_b=True),
                            tf.concat([tf.shape(transformed)[:-1], [self.embeddings.vocab_size]], axis=0))
        return tf.cast(logits, tf.float32) + tf.cast(self.output_bias, tf.float32)

    def compute_output_spec(self, sequence_output, masked_lm_positions):
        shape = (*masked_lm_positions.shape, self.embeddings.vocab_size)
        return keras.KerasTensor(shape, dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(hidden_act=self.hidden_act, initializer_range=self.initializer_range)
        return config
