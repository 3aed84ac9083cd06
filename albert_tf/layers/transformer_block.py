"""`TransformerBlock`: one post-LN ALBERT layer, the object shared across layers."""

import keras

from albert_tf.layers.feed_forward_block import FeedForwardBlock
from albert_tf.layers.self_attention_block import SelfAttentionBlock


@keras.saving.register_keras_serializable(package="albert_tf")
class TransformerBlock(keras.layers.Layer):
    """Self-attention block followed by feed-forward block.

    In ALBERT's all-shared mode the encoder holds ONE of these and calls it L
    times. For the paper's partial-sharing ablations (shared attention only, or
    shared FFN only) the encoder builds one block per layer and passes the shared
    sublayer object in as `attention_block` or `feed_forward_block`; every block
    then calls that same object, so its weights exist once.

    Call arguments:
      hidden_states: [batch, seq, hidden_size].
      attention_bias: float32 [batch, 1, 1, seq] additive mask.
      query_positions: optional int32 [batch, n]: only these output rows (see
        `SelfAttentionBlock`).
      rows, output_rows: optional int32 [n] and [m]: `hidden_states` holds only
        the unpadded rows of the flattened [batch * seq] sequence, and only
        some rows of the output are wanted (see `SelfAttentionBlock`).

    Returns float32 [batch, seq, hidden_size] ([batch, n, hidden_size] with
    `query_positions`, [n, hidden_size] with `rows`, [m, hidden_size] with
    `output_rows`).

    >>> block = TransformerBlock(hidden_size=16, num_attention_heads=2, intermediate_size=32)
    >>> block(keras.ops.zeros((1, 4, 16)), keras.ops.zeros((1, 1, 1, 4))).shape
    (1, 4, 16)
    """

    def __init__(
        self,
        hidden_size: int,
        num_attention_heads: int,
        intermediate_size: int,
        hidden_act: str = "gelu",
        dropout_rate: float = 0.0,
        attention_dropout_rate: float = 0.0,
        initializer_range: float = 0.02,
        attention_block: SelfAttentionBlock | None = None,
        feed_forward_block: FeedForwardBlock | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.dropout_rate = dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range

        self.attention_block = attention_block or SelfAttentionBlock(
            hidden_size=hidden_size,
            num_attention_heads=num_attention_heads,
            attention_dropout_rate=attention_dropout_rate,
            dropout_rate=dropout_rate,
            initializer_range=initializer_range,
            name="attention_block",
        )
        self.feed_forward_block = feed_forward_block or FeedForwardBlock(
            hidden_size=hidden_size,
            intermediate_size=intermediate_size,
            hidden_act=hidden_act,
            dropout_rate=dropout_rate,
            initializer_range=initializer_range,
            name="feed_forward_block",
        )

    def build(self, input_shape):
        for sublayer in (self.attention_block, self.feed_forward_block):
            if not sublayer.built:
                sublayer.build(input_shape)
        super().build(input_shape)

    def call(self, hidden_states, attention_bias, training=None, query_positions=None, rows=None, output_rows=None):
        attention_output = self.attention_block(hidden_states, attention_bias, training=training,
                                                query_positions=query_positions, rows=rows, output_rows=output_rows)
        return self.feed_forward_block(attention_output, training=training)

    def compute_output_spec(self, hidden_states, attention_bias, training=None, query_positions=None, rows=None,
                            output_rows=None):
        return self.attention_block.compute_output_spec(hidden_states, attention_bias, query_positions=query_positions,
                                                        rows=rows, output_rows=output_rows)

    def get_config(self):
        # A shared sublayer is a reference to another layer's object, which a
        # config cannot express; `from_config` builds a block with its own.
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            dropout_rate=self.dropout_rate,
            attention_dropout_rate=self.attention_dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config
