"""`AlbertEmbeddings`: the factorized (E-wide) token, position and segment embeddings."""

import keras
from keras import ops

from albert_tf.albert_config import LAYER_NORM_EPSILON
from albert_tf.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertEmbeddings(keras.layers.Layer):
    """Sums word, position and segment embeddings of width E, then LayerNorm and dropout.

    The E -> H projection is not part of this layer: it belongs to the encoder,
    and the masked-LM head reuses `word_embeddings` (E wide) as its output matrix.

    Call arguments:
      input_word_ids: int32 [batch, seq].
      input_type_ids: int32 [batch, seq].

    Returns float32 [batch, seq, embedding_size] (LayerNorm runs in float32 under
    mixed precision).

    >>> layer = AlbertEmbeddings(vocab_size=100, embedding_size=8,
    ...                          max_position_embeddings=16, type_vocab_size=2)
    >>> layer(ops.zeros((2, 5), "int32"), ops.zeros((2, 5), "int32")).shape
    (2, 5, 8)
    """

    def __init__(
        self,
        vocab_size,
        embedding_size,
        max_position_embeddings,
        type_vocab_size,
        initializer_range=0.02,
        dropout_rate=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate

        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, dtype="float32", name="layer_norm"
        )
        self.dropout = keras.layers.Dropout(dropout_rate, name="dropout")

    def build(self, input_shape=None):
        initializer = truncated_normal(self.initializer_range)

        # Tables stay float32 and are not autocast: a gather reads only the
        # rows it needs, and the MLM head casts the table itself when tied.
        def table(name, rows):
            return self.add_weight(
                name=name,
                shape=(rows, self.embedding_size),
                initializer=initializer,
                autocast=False,
            )

        self.word_embeddings = table("word_embeddings", self.vocab_size)
        self.position_embeddings = table("position_embeddings", self.max_position_embeddings)
        self.token_type_embeddings = table("token_type_embeddings", self.type_vocab_size)
        self.layer_norm.build((None, None, self.embedding_size))
        super().build(input_shape)

    def call(self, input_word_ids, input_type_ids, training=None):
        seq_length = ops.shape(input_word_ids)[1]
        if isinstance(seq_length, int) and seq_length > self.max_position_embeddings:
            raise ValueError(
                f"Sequence length {seq_length} exceeds max_position_embeddings "
                f"{self.max_position_embeddings}; truncate inputs to at most that many tokens"
            )
        word = ops.take(self.word_embeddings, input_word_ids, axis=0)
        segment = ops.take(self.token_type_embeddings, input_type_ids, axis=0)
        position = ops.slice(self.position_embeddings, (0, 0), (seq_length, self.embedding_size))
        embeddings = word + segment + ops.expand_dims(position, 0)
        embeddings = self.layer_norm(embeddings)
        return self.dropout(embeddings, training=training)

    def compute_output_shape(self, input_word_ids_shape, input_type_ids_shape=None):
        return (*input_word_ids_shape, self.embedding_size)

    def compute_output_spec(self, input_word_ids, input_type_ids, training=None):
        return keras.KerasTensor((*input_word_ids.shape, self.embedding_size), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            embedding_size=self.embedding_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            initializer_range=self.initializer_range,
            dropout_rate=self.dropout_rate,
        )
        return config
