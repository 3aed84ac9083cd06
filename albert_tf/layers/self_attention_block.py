"""`SelfAttentionBlock`: multi-head self-attention, residual and post-LayerNorm."""

import contextlib
import threading

import keras
import tensorflow as tf

from albert_tf.albert_config import LAYER_NORM_EPSILON
from albert_tf.layers.initializers import truncated_normal


_reuse = threading.local()  # per thread: MirroredStrategy runs each replica's forward pass in its own thread


@contextlib.contextmanager
def fused_projections_reused():
    """Within this context each `SelfAttentionBlock` joins its query/key/value kernels into one
    [H, 3H] matrix once and reuses it on every later call in the same graph and dtype.

    ALBERT applies one shared block L times; without this, each application copies the three
    kernels again (12 x 7 MB at albert_base, ~27% of a 40-token request on one CPU thread). Enter
    it around ONE forward pass, where no weight can change between the calls: the encoder does.
    Nested entries share the outer one's matrices.
    """
    outer = getattr(_reuse, "fused", None)
    _reuse.fused = {} if outer is None else outer
    try:
        yield
    finally:
        _reuse.fused = outer


@keras.saving.register_keras_serializable(package="albert_tf")
class SelfAttentionBlock(keras.layers.Layer):
    """LayerNorm(x + Dropout(Attention(x))), the first half of an ALBERT layer.

    Query, key and value keep their own [H, H] kernels (the original checkpoint's
    `attention_1/self/{query,key,value}`), but are applied as one [H, 3H] matmul:
    one large matmul keeps oneDNN and the GPU busier than three small ones. Dense
    layers with plain matmuls, not einsum: einsum-based dense layers ran the same
    shapes ~30% slower on CPU (docs/reference.md, "CPU performance notes").

    Softmax and the residual LayerNorm run in float32 under mixed precision.

    Call arguments:
      hidden_states: [batch, seq, hidden_size].
      attention_bias: float32 [batch, 1, 1, seq], 0 for real keys and
        ATTENTION_MASK_BIAS for padding.
      query_positions: optional int32 [batch, n]: compute only these rows of the
        output (attending over every position), as pretraining's last layer
        needs only the masked positions and [CLS]. The rows equal the same rows
        of the full output.
      rows: optional int32 [n]: `hidden_states` are [n, hidden_size], the rows
        at these positions of the flattened [batch * seq] sequence; every other
        position is padding, which `attention_bias` masks as a key. Projections,
        residuals and LayerNorm run on the n rows alone (batch and seq come from
        `attention_bias`): with short sentences padded to a window, a fraction
        of the work. The rows equal the same rows of the full output.
      output_rows: optional int32 [m]: compute only these rows of the output,
        indices into `hidden_states` flattened to [-1, hidden_size] (every
        query still attends; the output projection and residual run at these
        rows alone), as a tagger's loss reads only each word's first piece.

    Returns float32 [batch, seq, hidden_size], [batch, n, hidden_size] with
    `query_positions`, [n, hidden_size] with `rows` and [m, hidden_size] with
    `output_rows`.
    """

    def __init__(
        self,
        hidden_size,
        num_attention_heads,
        attention_dropout_rate=0.0,
        dropout_rate=0.0,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads:
            raise ValueError(
                f"hidden_size {hidden_size} is not a multiple of num_attention_heads {num_attention_heads}"
            )
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.head_size = hidden_size // num_attention_heads
        self.attention_dropout_rate = attention_dropout_rate
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range

        def dense(name):
            return keras.layers.Dense(
                hidden_size, kernel_initializer=truncated_normal(initializer_range), name=name
            )

        self.query = dense("query")
        self.key = dense("key")
        self.value = dense("value")
        self.output_dense = dense("output_dense")
        self.attention_dropout = keras.layers.Dropout(attention_dropout_rate, name="attention_dropout")
        self.output_dropout = keras.layers.Dropout(dropout_rate, name="output_dropout")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, dtype="float32", name="layer_norm"
        )

    def build(self, input_shape):
        for dense in (self.query, self.key, self.value, self.output_dense):
            dense.build((None, None, self.hidden_size))
        self.layer_norm.build((None, None, self.hidden_size))
        super().build(input_shape)

    def call(self, hidden_states, attention_bias, training=None, query_positions=None, rows=None, output_rows=None):
        if query_positions is not None and (rows is not None or output_rows is not None):
            raise ValueError("SelfAttentionBlock takes query_positions, or rows and output_rows, not both")
        inputs = tf.cast(hidden_states, self.compute_dtype)

        if rows is not None:
            batch_size, seq_length = tf.shape(attention_bias)[0], tf.shape(attention_bias)[-1]
            rows = tf.cast(rows, tf.int32)
            kernel, bias = self._fused_weights((self.query, self.key, self.value))
            # The n rows' projections, placed at their positions of the padded [batch * seq] layout that
            # attention works in (zeros at padding: masked keys, queries nobody reads).
            projected = tf.scatter_nd(rows[:, None], tf.matmul(inputs, kernel) + bias,
                                      tf.stack([batch_size * seq_length, 3 * self.hidden_size]))
            query, key, value = self._split_heads(projected, batch_size, seq_length, 3)
            residual = hidden_states
            num_queries = seq_length
        elif query_positions is None:
            batch_size, seq_length = tf.shape(hidden_states)[0], tf.shape(hidden_states)[1]
            query, key, value = self._project_to_heads(inputs, (self.query, self.key, self.value))
            residual = hidden_states
            num_queries = seq_length
        else:
            batch_size, seq_length = tf.shape(hidden_states)[0], tf.shape(hidden_states)[1]
            # Only the rows at `query_positions` are asked for: keys and values still come from every
            # position, queries (and everything after attention) from those rows alone.
            residual = tf.gather(hidden_states, tf.cast(query_positions, tf.int32), batch_dims=1)
            num_queries = tf.shape(residual)[1]
            key, value = self._project_to_heads(inputs, (self.key, self.value))
            (query,) = self._project_to_heads(tf.cast(residual, self.compute_dtype), (self.query,))

        query = query * tf.cast(self.head_size**-0.5, query.dtype)
        scores = tf.matmul(query, key, transpose_b=True)
        # Keras autocasts float call arguments to the compute dtype; in bfloat16
        # the -10000 bias rounds to -9984, which masks just as completely.
        scores = tf.cast(scores, tf.float32) + tf.cast(attention_bias, tf.float32)
        probabilities = tf.nn.softmax(scores, axis=-1)
        probabilities = self.attention_dropout(probabilities, training=training)
        context = tf.matmul(tf.cast(probabilities, value.dtype), value)
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [batch_size, num_queries, self.hidden_size])
        if rows is not None or output_rows is not None:
            # Back to the block's rows (or only those asked for): the output projection, and the
            # feed-forward block after it, run on them alone.
            wanted = rows if output_rows is None else tf.cast(output_rows, tf.int32)
            if rows is not None and output_rows is not None:
                wanted = tf.gather(rows, wanted)
            context = tf.gather(tf.reshape(context, [-1, self.hidden_size]), wanted)
            if output_rows is not None:
                residual = tf.gather(tf.reshape(residual, [-1, self.hidden_size]), tf.cast(output_rows, tf.int32))

        attention_output = self.output_dropout(self.output_dense(context), training=training)
        return self.layer_norm(tf.cast(residual, tf.float32) + tf.cast(attention_output, tf.float32))

    def _project_to_heads(self, inputs, projections):
        """[batch, length, H] through each Dense of `projections` as one fused matmul -> one
        [batch, heads, length, head_size] tensor per projection."""
        batch_size, length = tf.shape(inputs)[0], tf.shape(inputs)[1]
        kernel, bias = self._fused_weights(projections)
        projected = tf.matmul(tf.reshape(inputs, [-1, self.hidden_size]), kernel) + bias
        return self._split_heads(projected, batch_size, length, len(projections))

    def _split_heads(self, projected, batch_size, length, count):
        """[batch * length, count * H] -> `count` tensors of [batch, heads, length, head_size]."""
        projected = tf.reshape(projected, [batch_size, length, count, self.num_attention_heads, self.head_size])
        return tf.unstack(tf.transpose(projected, [2, 0, 3, 1, 4]), num=count)

    def _fused_weights(self, projections):
        """(the [H, n*H] kernel, the [n*H] bias) of `projections` side by side, made once per
        `fused_projections_reused` context, graph and compute dtype (else on every call)."""
        fused = getattr(_reuse, "fused", None)
        # The graph, as a tensor of one tf.function trace cannot be used in another.
        key = (id(self), tuple(id(dense) for dense in projections), self.compute_dtype,
               None if tf.executing_eagerly() else tf.compat.v1.get_default_graph())
        if fused is not None and key in fused:
            return fused[key]
        # Variables read inside call are autocast to the compute dtype.
        weights = (tf.concat([dense.kernel for dense in projections], axis=1),
                   tf.concat([dense.bias for dense in projections], axis=0))
        if fused is not None:
            fused[key] = weights
        return weights

    def compute_output_spec(self, hidden_states, attention_bias, training=None, query_positions=None, rows=None,
                            output_rows=None):
        if output_rows is not None:
            return keras.KerasTensor((output_rows.shape[0], hidden_states.shape[-1]), dtype="float32")
        if query_positions is not None:
            return keras.KerasTensor((hidden_states.shape[0], query_positions.shape[1], hidden_states.shape[2]),
                                     dtype="float32")
        return keras.KerasTensor(hidden_states.shape, dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            attention_dropout_rate=self.attention_dropout_rate,
            dropout_rate=self.dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config
