"""`AlbertEncoder`: embeddings, E -> H projection (when E != H), shared transformer layers, pooler."""

import keras
import tensorflow as tf
from keras import ops

from albert_tf.albert_config import ATTENTION_MASK_BIAS, AlbertConfig
from albert_tf.layers.albert_embeddings import AlbertEmbeddings
from albert_tf.layers.initializers import truncated_normal
from albert_tf.layers.self_attention_block import fused_projections_reused
from albert_tf.layers.transformer_block import TransformerBlock
from albert_tf.networks.memory_estimate import check_fits, weight_bytes
from albert_tf.settings import KERAS_ARGUMENTS, refuse_unknown_keywords
from albert_tf.text.packing import ENCODER_INPUTS  # the names live where the inputs are made


def encoder_inputs(seq_length=None):
    """The three int32 [batch, seq] inputs of the TF Hub encoder convention."""
    return {name: keras.Input(shape=(seq_length,), dtype="int32", name=name) for name in ENCODER_INPUTS}


def encoder_for(model_name, encoder=None, config=None, seq_length=None):
    """The encoder a model built on ALBERT wraps: `encoder`, or a new one of `config` (an
    AlbertConfig or its dict, as `from_config` and checkpoint loading pass it). An AlbertConfig
    in the encoder's place (the first argument of every model) stands for `config`."""
    if isinstance(encoder, (AlbertConfig, dict)):
        if config is not None:
            raise ValueError(f"{model_name}: two configs given; pass an AlbertEncoder or one AlbertConfig")
        encoder, config = None, encoder
    if encoder is None:
        if config is None:
            raise ValueError(f"{model_name} needs an AlbertEncoder or an AlbertConfig")
        return AlbertEncoder(AlbertConfig.from_dict(config) if isinstance(config, dict) else config,
                             seq_length=seq_length)
    if config is not None:
        config = AlbertConfig.from_dict(config) if isinstance(config, dict) else config
        if config != encoder.albert_config:
            raise ValueError(f"{model_name}: config differs from encoder.albert_config; pass one of them")
    return encoder


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertEncoder(keras.Model):
    """The ALBERT encoder network (TF Hub encoder inputs and outputs).

    In the default `sharing="all"` mode it holds ONE `TransformerBlock` per
    (group, inner group), and calls it for every layer of its group: with one
    group, one block serves all L layers. `sharing="none"` gives each layer its
    own block; `"attention"` and `"ffn"` give each layer its own block around a
    single shared attention or feed-forward sublayer (the paper's Table 4).

    Inputs (dict): `input_word_ids`, `input_mask`, `input_type_ids`, int32
    [batch, seq].

    Outputs (dict): `sequence_output` [batch, seq, H], `pooled_output` [batch, H]
    (tanh of a dense layer on the first token), and `encoder_outputs`, the output
    of every block applied, each [batch, seq, H]: L of them, or L * R with
    inner_group_num R > 1 (as the original's list of all layer outputs). All float32.

    With embedding_size == hidden_size the embeddings feed the first layer
    directly: `embedding_projection` is None, as the original builds no
    projection then.

    >>> encoder = AlbertEncoder(AlbertConfig.from_preset("albert_tiny"))
    >>> ids = ops.ones((2, 8), "int32")
    >>> outputs = encoder({"input_word_ids": ids, "input_mask": ids,
    ...                    "input_type_ids": ops.zeros((2, 8), "int32")})
    >>> outputs["pooled_output"].shape, len(outputs["encoder_outputs"])
    ((2, 128), 4)
    """

    def __init__(self, config: AlbertConfig, seq_length: int | None = None, **kwargs):
        if isinstance(config, dict):
            config = AlbertConfig.from_dict(config)
        # keras.Model would drop a misspelt keyword silently.
        refuse_unknown_keywords("AlbertEncoder", kwargs, {"config", "seq_length", *KERAS_ARGUMENTS})
        kwargs.setdefault("name", "albert_encoder")
        # Before any weight exists: a config beyond this machine's memory would otherwise allocate until the
        # operating system kills the process.
        check_fits(weight_bytes(config), f"An encoder of about {config.parameter_estimate():,} parameters")

        # === Layers ===
        self.embeddings = AlbertEmbeddings(
            vocab_size=config.vocab_size,
            embedding_size=config.embedding_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            initializer_range=config.initializer_range,
            dropout_rate=config.hidden_dropout_prob,
            name="embeddings",
        )
        self.embedding_projection = keras.layers.Dense(
            config.hidden_size,
            kernel_initializer=truncated_normal(config.initializer_range),
            name="embedding_projection",
        ) if config.has_embedding_projection else None
        self.transformer_blocks = _build_transformer_blocks(config)
        self.pooler = keras.layers.Dense(
            config.hidden_size,
            activation="tanh",
            kernel_initializer=truncated_normal(config.initializer_range),
            name="pooler",
        )

        # === Functional Model ===
        inputs = encoder_inputs(seq_length)
        hidden_states, attention_bias = self._embedded(inputs)
        encoder_outputs = []
        for blocks in _blocks_by_layer(config, self.transformer_blocks):
            for block in blocks:
                hidden_states = block(hidden_states, attention_bias)
                encoder_outputs.append(hidden_states)
        sequence_output = hidden_states
        pooled_output = self.pool(sequence_output[:, 0, :])
        super().__init__(
            inputs=inputs,
            outputs={
                "sequence_output": sequence_output,
                "pooled_output": pooled_output,
                "encoder_outputs": encoder_outputs,
            },
            **kwargs,
        )

        # === Config ===
        self.albert_config = config
        self.seq_length = seq_length

    def call(self, inputs, training=None, mask=None):
        # A shared block's query/key/value kernels are joined once per forward pass, not once per layer.
        with fused_projections_reused():
            return super().call(inputs, training=training, mask=mask)

    def last_layer_rows(self, inputs, positions, training=None):
        """The final hidden states at `positions` only (float32 [batch, n, H]).

        Equal to `sequence_output` gathered at `positions`, at less cost: every
        layer but the last runs on all positions, and the last block computes
        only the rows asked for (its keys and values still span every position).
        Pretraining needs just the masked positions and [CLS]; with 20 of 128
        positions that skips ~70% of the last layer's work.
        """
        hidden_states, attention_bias = self._embedded(inputs, training=training)
        applied = self._blocks_in_order()
        with fused_projections_reused():
            for block in applied[:-1]:
                hidden_states = block(hidden_states, attention_bias, training=training)
            return applied[-1](hidden_states, attention_bias, training=training, query_positions=positions)

    def last_layer_flat_rows(self, inputs, rows, training=None):
        """The final hidden states at `rows` only: float32 [n, H], equal to `sequence_output` reshaped to
        [batch * seq, H] and gathered at `rows` (int32 [n], positions of the flattened [batch * seq] sequence,
        each with input_mask 1).

        Every layer runs on the unpadded positions alone, as rows: attention still sees the whole window (in
        the padded layout, padding masked), but the projections, feed-forward blocks and LayerNorms skip the
        padding; the last layer's output projection and feed-forward block run at `rows` alone. A tagger's
        loss reads each unit's reading piece: in UNER English-EWT's windows of 64, 23 positions of a window are
        text on average and 13 of them words.
        """
        is_text = tf.reshape(inputs["input_mask"], [-1]) != 0
        unpadded = tf.cast(tf.where(is_text)[:, 0], tf.int32)
        # Where each position sits among the unpadded ones: `rows` as indices into the layers' rows.
        index_among_unpadded = tf.cumsum(tf.cast(is_text, tf.int32)) - 1
        embeddings = self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=training)
        hidden_states = self.project(tf.gather(tf.reshape(embeddings, [-1, embeddings.shape[-1]]), unpadded))
        attention_bias = _attention_bias(inputs["input_mask"])
        applied = self._blocks_in_order()
        with fused_projections_reused():
            for block in applied[:-1]:
                hidden_states = block(hidden_states, attention_bias, training=training, rows=unpadded)
            return applied[-1](hidden_states, attention_bias, training=training, rows=unpadded,
                               output_rows=tf.gather(index_among_unpadded, tf.cast(rows, tf.int32)))

    def _blocks_in_order(self):
        """The transformer block applied at each layer, first to last (one object L times when all is shared)."""
        return [block for blocks in _blocks_by_layer(self.albert_config, self.transformer_blocks) for block in blocks]

    def first_token_pooled_output(self, inputs, training=None, skip_padding=False):
        """`pooled_output` with the last layer computed at the first token alone (what a classifier
        head reads): the same values, ~(1 - 1/seq) of the last layer's query-side work skipped.

        `skip_padding`: also run every layer on the unpadded positions alone (`last_layer_flat_rows`), as
        fine-tuning does: a classifier's windows are mostly padding (SST-2 at 128: 13 tokens of 128 on
        average). Needs the first token unpadded in every row, as packed inputs have it ([CLS])."""
        if skip_padding:
            shape = tf.shape(inputs["input_word_ids"])
            first_tokens = tf.range(shape[0], dtype=tf.int32) * tf.cast(shape[1], tf.int32)
            return self.pool(self.last_layer_flat_rows(inputs, first_tokens, training=training))
        first_token = keras.ops.zeros_like(inputs["input_word_ids"][:, :1])
        return self.pool(self.last_layer_rows(inputs, first_token, training=training)[:, 0, :])

    def _embedded(self, inputs, training=None):
        """(the first layer's input [batch, seq, H], the attention bias) of the encoder's inputs."""
        return self.project(self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=training)), \
            _attention_bias(inputs["input_mask"])

    def project(self, embeddings):
        """The first layer's input [batch, seq, H] from the embeddings [batch, seq, E]: the E -> H
        projection, or the embeddings themselves when E == H."""
        return embeddings if self.embedding_projection is None else self.embedding_projection(embeddings)

    def pool(self, first_token_hidden_states):
        """`pooled_output` from the final hidden states of the first token ([batch, H])."""
        return ops.cast(self.pooler(first_token_hidden_states), "float32")

    @property
    def word_embeddings(self):
        """The V x E table the masked-LM head is tied to."""
        return self.embeddings.word_embeddings

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "config": self.albert_config.to_dict(),
            "seq_length": self.seq_length,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _attention_bias(input_mask):
    """[batch, seq] 1/0 mask -> float32 [batch, 1, 1, seq] additive bias."""
    padding = 1.0 - ops.cast(input_mask, "float32")
    return ops.expand_dims(ops.expand_dims(padding * ATTENTION_MASK_BIAS, 1), 1)


def _build_transformer_blocks(config):
    """The distinct blocks the encoder owns, as a flat list.

    "all"/"none": inner_group_num blocks for each group a layer uses (`used_groups`), group-major.
    "attention"/"ffn": num_hidden_layers blocks that all reference one sublayer.
    """

    def block(name, **shared):
        return TransformerBlock(
            hidden_size=config.hidden_size,
            num_attention_heads=config.num_attention_heads,
            intermediate_size=config.intermediate_size,
            hidden_act=config.hidden_act,
            dropout_rate=config.hidden_dropout_prob,
            attention_dropout_rate=config.attention_probs_dropout_prob,
            initializer_range=config.initializer_range,
            name=name,
            **shared,
        )

    if config.sharing in ("all", "none"):
        return [
            block(f"transformer_group_{group}_inner_{inner}")
            for group in config.used_groups
            for inner in range(config.inner_group_num)
        ]
    # One shared sublayer, created by the first block and handed to the others.
    first = block("transformer_layer_0")
    if config.sharing == "attention":
        shared = {"attention_block": first.attention_block}
    else:
        shared = {"feed_forward_block": first.feed_forward_block}
    return [first] + [block(f"transformer_layer_{layer}", **shared) for layer in range(1, config.num_hidden_layers)]


def _blocks_by_layer(config, blocks):
    """For each of the num_hidden_layers layers, the blocks applied, in order, as that layer."""
    if config.sharing in ("attention", "ffn"):
        return [[block] for block in blocks]
    position = {group: index for index, group in enumerate(config.used_groups)}
    return [blocks[start : start + config.inner_group_num]
            for start in (position[config.group_of_layer(layer)] * config.inner_group_num
                          for layer in range(config.num_hidden_layers))]
