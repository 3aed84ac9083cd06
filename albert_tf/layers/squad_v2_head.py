"""`SquadV2Head`: the original ALBERT's SQuAD 2.0 head: start, end given the start, and answerability."""

import keras
import tensorflow as tf
from keras import ops

from albert_tf.albert_config import LAYER_NORM_EPSILON
from albert_tf.layers.initializers import truncated_normal

# What the original subtracts from the logits of positions no answer may start or end at.
MASKED_LOGIT = 1e30


@keras.saving.register_keras_serializable(package="albert_tf")
class SquadV2Head(keras.layers.Layer):
    """The head of the original run_squad_v2 (XLNet's SQuAD 2.0 head), on the encoder's sequence output.

    - start logits: dense(1) per position; positions that cannot hold an answer (`impossible_positions`,
      the original's p_mask) get -1e30, then a log-softmax over the sequence.
    - end logits, given a start position s: dense_0(concat[h_i, h_s]) with tanh -> LayerNorm -> dense(1)
      per position i, masked as the start. Training reads the gold start; inference keeps the
      `start_n_top` best starts and, for each, the `end_n_top` best ends.
    - answerability: dense_0(concat[sum_i softmax(start)_i h_i, h_[CLS]]) with tanh -> dropout ->
      dense(1) without bias = `cls_logits`, high when the window holds no answer.

    Sublayers carry the original's variable scopes in their names (`start_logits_dense` for
    start_logits/dense, `end_logits_layer_norm` for end_logits/LayerNorm, ...), so the checkpoint
    converter maps them one to one. Everything is float32, also under mixed precision.

    Call arguments:
      sequence_output: [batch, seq, hidden_size].
      input_mask, input_type_ids: int [batch, seq], packed `[CLS] question [SEP] context [SEP]`.
      start_positions: int [batch], the gold starts (training), or None (inference).

    Returns, with start_positions: `start_log_probs`, `end_log_probs` float32 [batch, seq] and
    `cls_logits` float32 [batch]. Without: `start_top_log_probs`, `start_top_index` [batch, start_n_top],
    `end_top_log_probs`, `end_top_index` [batch, start_n_top * end_n_top] (the ends of start k at
    k * end_n_top ...), `cls_logits` [batch]; indices int32. The sequence must be at least
    max(start_n_top, end_n_top) long.
    """

    def __init__(self, hidden_size, initializer_range=0.02, start_n_top=5, end_n_top=5, dropout=0.1, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.start_n_top = start_n_top
        self.end_n_top = end_n_top
        self.dropout_rate = dropout

        def dense(units, name, activation=None, use_bias=True):
            return keras.layers.Dense(units, activation=activation, use_bias=use_bias, dtype="float32", name=name,
                                      kernel_initializer=truncated_normal(initializer_range))

        self.start_dense = dense(1, "start_logits_dense")
        self.end_dense_0 = dense(hidden_size, "end_logits_dense_0", activation="tanh")
        self.end_layer_norm = keras.layers.LayerNormalization(epsilon=LAYER_NORM_EPSILON, dtype="float32",
                                                              name="end_logits_layer_norm")
        self.end_dense_1 = dense(1, "end_logits_dense_1")
        self.answer_dense_0 = dense(hidden_size, "answer_class_dense_0", activation="tanh")
        self.answer_dropout = keras.layers.Dropout(dropout, name="answer_class_dropout")
        self.answer_dense_1 = dense(1, "answer_class_dense_1", use_bias=False)

    def build(self, sequence_output_shape, input_mask_shape=None, input_type_ids_shape=None,
              start_positions_shape=None):
        hidden = self.hidden_size
        self.start_dense.build((None, None, hidden))
        self.end_dense_0.build((None, None, 2 * hidden))
        self.end_layer_norm.build((None, None, hidden))
        self.end_dense_1.build((None, None, hidden))
        self.answer_dense_0.build((None, 2 * hidden))
        self.answer_dense_1.build((None, hidden))
        super().build(sequence_output_shape)

    @staticmethod
    def impossible_positions(input_mask, input_type_ids):
        """float32 [batch, seq]: 1 where no answer can start or end, 0 at [CLS] (no answer) and at the context
        tokens, segment B without its closing [SEP]. The original's p_mask, read off the packing."""
        positions = ops.cumsum(ops.ones_like(input_mask), axis=1) - 1
        length = ops.sum(input_mask, axis=1, keepdims=True)
        context = ops.logical_and(ops.equal(input_type_ids, 1), ops.less(positions, length - 1))
        return 1.0 - ops.cast(ops.logical_or(context, ops.equal(positions, 0)), "float32")

    def call(self, sequence_output, input_mask, input_type_ids, start_positions=None, training=False):
        hidden = ops.cast(sequence_output, "float32")
        impossible = self.impossible_positions(input_mask, input_type_ids)
        start_logits = self._masked(ops.squeeze(self.start_dense(hidden), -1), impossible)
        start_log_probs = ops.log_softmax(start_logits, axis=-1)
        cls_logits = self._cls_logits(hidden, start_logits, training)

        if start_positions is not None:
            start_features = tf.gather(hidden, ops.cast(ops.reshape(start_positions, (-1, 1)), "int32"),
                                       batch_dims=1)
            end_logits = self._end_logits(hidden, ops.broadcast_to(start_features, ops.shape(hidden)))
            return {"start_log_probs": start_log_probs,
                    "end_log_probs": ops.log_softmax(self._masked(end_logits, impossible), axis=-1),
                    "cls_logits": cls_logits}

        start_top_log_probs, start_top_index = ops.top_k(start_log_probs, k=self.start_n_top)
        start_features = tf.gather(hidden, start_top_index, batch_dims=1)  # [batch, start_n_top, H]
        each_start = ops.shape(start_features)[:2] + ops.shape(hidden)[1:]
        end_logits = self._end_logits(ops.broadcast_to(hidden[:, None], each_start),
                                      ops.broadcast_to(start_features[:, :, None], each_start))
        end_log_probs = ops.log_softmax(self._masked(end_logits, impossible[:, None]), axis=-1)
        end_top_log_probs, end_top_index = ops.top_k(end_log_probs, k=self.end_n_top)
        beam = self.start_n_top * self.end_n_top
        return {"start_top_log_probs": start_top_log_probs, "start_top_index": ops.cast(start_top_index, "int32"),
                "end_top_log_probs": ops.reshape(end_top_log_probs, (-1, beam)),
                "end_top_index": ops.cast(ops.reshape(end_top_index, (-1, beam)), "int32"),
                "cls_logits": cls_logits}

    @staticmethod
    def _masked(logits, impossible):
        return logits * (1.0 - impossible) - MASKED_LOGIT * impossible

    def _end_logits(self, hidden, start_features):
        """[..., seq] end logits from the hidden states and, at every position, the start's state ([..., seq, H])."""
        transformed = self.end_layer_norm(self.end_dense_0(ops.concatenate([hidden, start_features], axis=-1)))
        return ops.squeeze(self.end_dense_1(transformed), -1)

    def _cls_logits(self, hidden, start_logits, training):
        start_weighted = ops.einsum("bsh,bs->bh", hidden, ops.softmax(start_logits, axis=-1))
        features = self.answer_dense_0(ops.concatenate([start_weighted, hidden[:, 0]], axis=-1))
        return ops.squeeze(self.answer_dense_1(self.answer_dropout(features, training=training)), -1)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range,
                      start_n_top=self.start_n_top, end_n_top=self.end_n_top, dropout=self.dropout_rate)
        return config
