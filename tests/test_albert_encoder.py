import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.albert_config import AlbertConfig
from albert_tf.layers.feed_forward_block import FeedForwardBlock
from albert_tf.layers.self_attention_block import SelfAttentionBlock
from albert_tf.layers.transformer_block import TransformerBlock
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder

TINY = AlbertConfig(
    vocab_size=97, embedding_size=8, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
    intermediate_size=32, max_position_embeddings=32,
)


def random_inputs(batch=3, seq=10, vocab=97, seed=0, pad_from=None):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int32)
    if pad_from is not None:
        mask[:, pad_from:] = 0
    return {
        "input_word_ids": rng.integers(5, vocab, (batch, seq)).astype(np.int32) * mask,
        "input_mask": mask,
        "input_type_ids": (np.arange(seq)[None, :] >= seq // 2).astype(np.int32).repeat(batch, 0),
    }


def owned_blocks(encoder):
    seen = {}
    for layer in encoder._flatten_layers(include_self=False, recursive=True):
        if isinstance(layer, TransformerBlock):
            seen[id(layer)] = layer
    return list(seen.values())


@pytest.mark.parametrize("num_layers", [1, 12, 48])
def test_all_shared_encoder_owns_one_block_whatever_the_depth(num_layers):
    config = dataclasses.replace(TINY, num_hidden_layers=num_layers)
    encoder = AlbertEncoder(config)
    blocks = owned_blocks(encoder)
    assert len(blocks) == 1
    block = blocks[0]
    # Every trainable variable is an embedding, the projection, the pooler or
    # one of the one block's 16 variables.
    others = encoder.embeddings.weights + encoder.embedding_projection.weights + encoder.pooler.weights
    assert len(block.trainable_variables) == 16
    assert {id(v) for v in encoder.trainable_variables} == {id(v) for v in others + block.trainable_variables}
    # The one object is really applied L times.
    outputs = encoder(random_inputs())
    assert len(outputs["encoder_outputs"]) == num_layers


def test_the_shared_block_is_applied_at_every_layer():
    encoder = AlbertEncoder(TINY)
    inputs = random_inputs()
    outputs = encoder(inputs)
    block = encoder.transformer_blocks[0]
    embeddings = encoder.embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
    hidden = encoder.embedding_projection(embeddings)
    bias = (1.0 - tf.cast(inputs["input_mask"], tf.float32))[:, None, None, :] * -10000.0
    for layer_output in outputs["encoder_outputs"]:
        hidden = block(hidden, bias)
        np.testing.assert_allclose(layer_output, hidden, atol=1e-6)


def test_the_shared_blocks_query_key_value_kernels_are_joined_once_per_forward_pass():
    """Joining the three [H, H] kernels into one [H, 3H] matmul costs a copy; with one block applied L
    times it is made once per pass (graph and eager), and outputs and gradients are those of the
    block applied layer by layer on its own."""
    config = dataclasses.replace(TINY, num_hidden_layers=6)
    encoder = AlbertEncoder(config)
    inputs = {name: tf.constant(value) for name, value in random_inputs(pad_from=8).items()}
    traced = tf.function(lambda batch: encoder(batch)["sequence_output"]).get_concrete_function(inputs)
    joined = [op for op in traced.graph.get_operations()
              if op.type == "ConcatV2" and op.outputs[0].shape == (16, 48)]
    assert len(joined) == 1

    block = encoder.transformer_blocks[0]
    bias = (1.0 - tf.cast(inputs["input_mask"], tf.float32))[:, None, None, :] * -10000.0
    with tf.GradientTape(persistent=True) as tape:
        sequence_output = encoder(inputs)["sequence_output"]
        hidden = encoder.embedding_projection(encoder.embeddings(inputs["input_word_ids"], inputs["input_type_ids"]))
        for _ in range(config.num_hidden_layers):
            hidden = block(hidden, bias)  # outside any forward pass: joined anew on each call
        reused_loss, per_call_loss = (tf.reduce_sum(tf.sin(output)) for output in (sequence_output, hidden))
    np.testing.assert_allclose(sequence_output.numpy(), hidden.numpy(), atol=1e-6)
    for variable in block.trainable_variables:
        np.testing.assert_allclose(tape.gradient(reused_loss, variable).numpy(),
                                   tape.gradient(per_call_loss, variable).numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=variable.path)


@pytest.mark.parametrize(
    "sharing, shared_type, per_layer_type",
    [("attention", SelfAttentionBlock, FeedForwardBlock), ("ffn", FeedForwardBlock, SelfAttentionBlock)],
)
def test_partial_sharing_shares_exactly_one_sublayer(sharing, shared_type, per_layer_type):
    config = dataclasses.replace(TINY, sharing=sharing, num_hidden_layers=4)
    encoder = AlbertEncoder(config)
    sublayers = [layer for layer in encoder._flatten_layers(include_self=False, recursive=True)]
    shared = {id(layer) for layer in sublayers if isinstance(layer, shared_type)}
    per_layer = {id(layer) for layer in sublayers if isinstance(layer, per_layer_type)}
    assert len(shared) == 1 and len(per_layer) == 4
    attention_params = 4 * (16 * 16 + 16) + 2 * 16
    ffn_params = 16 * 32 + 32 + 32 * 16 + 16 + 2 * 16
    shared_params, per_layer_params = (
        (attention_params, ffn_params) if sharing == "attention" else (ffn_params, attention_params)
    )
    unique = {id(v): v for block in encoder.transformer_blocks for v in block.weights}
    assert sum(int(np.prod(v.shape)) for v in unique.values()) == shared_params + 4 * per_layer_params
    attribute = "attention_block" if sharing == "attention" else "feed_forward_block"
    assert len({id(getattr(block, attribute)) for block in encoder.transformer_blocks}) == 1


def test_not_shared_encoder_owns_one_block_per_layer():
    encoder = AlbertEncoder(dataclasses.replace(TINY, sharing="none"))
    assert len(owned_blocks(encoder)) == 3


def attention_bias(inputs):
    return (1.0 - tf.cast(inputs["input_mask"], tf.float32))[:, None, None, :] * -10000.0


def test_groups_and_inner_groups_build_g_times_r_blocks_and_output_every_block():
    config = dataclasses.replace(TINY, num_hidden_layers=4, num_hidden_groups=2, inner_group_num=3)
    encoder = AlbertEncoder(config)
    assert len(owned_blocks(encoder)) == 6
    inputs = random_inputs()
    outputs = encoder(inputs)["encoder_outputs"]
    # As the original's list of all layer outputs: one entry per inner block applied, L x R of them, layers 0-1
    # running group 0's three blocks and layers 2-3 group 1's.
    assert len(outputs) == 12
    hidden = encoder.embedding_projection(encoder.embeddings(inputs["input_word_ids"], inputs["input_type_ids"]))
    expected = []
    for layer in range(4):
        for inner in range(3):
            hidden = encoder.transformer_blocks[(layer * 2 // 4) * 3 + inner](hidden, attention_bias(inputs))
            expected.append(hidden)
    for output, want in zip(outputs, expected):
        np.testing.assert_allclose(output, want, atol=1e-6)


def original_group(layer, layers, groups):
    """The original modeling.py's group of a layer: the float quotient, truncated."""
    return int(layer / layers * groups)


@pytest.mark.parametrize("layers, groups", [(22, 22), (44, 22), (5, 2)])
def test_layer_groups_follow_the_originals_floating_point_rule(layers, groups):
    from albert_tf.checkpoints.original_names import encoder_variables

    config = dataclasses.replace(TINY, num_hidden_layers=layers, num_hidden_groups=groups)
    wanted = [original_group(layer, layers, groups) for layer in range(layers)]
    assert [config.group_of_layer(layer) for layer in range(layers)] == wanted
    encoder = AlbertEncoder(config)
    # Only the groups some layer uses exist (with L = G = 22, layers 14 and 15 share group 14 and there is no
    # group 15), under the original's names, and parameter_estimate counts what is built.
    assert len(owned_blocks(encoder)) == len(set(wanted))
    names = {name.split("/")[3] for name in encoder_variables(encoder) if "/transformer/" in name}
    assert names == {f"group_{group}" for group in wanted}
    assert config.parameter_estimate() == encoder.count_params()
    inputs = random_inputs(batch=1, seq=6)
    blocks = {group: block for group, block in zip(sorted(set(wanted)), encoder.transformer_blocks)}
    hidden = encoder.embedding_projection(encoder.embeddings(inputs["input_word_ids"], inputs["input_type_ids"]))
    for group in wanted:
        hidden = blocks[group](hidden, attention_bias(inputs))
    np.testing.assert_allclose(encoder(inputs)["sequence_output"], hidden, atol=1e-5)


def test_equal_embedding_and_hidden_sizes_have_no_projection():
    from albert_tf.checkpoints.original_names import encoder_variables

    config = dataclasses.replace(TINY, embedding_size=16)
    encoder = AlbertEncoder(config)
    # The original builds embedding_hidden_mapping_in only when E != H: the embeddings feed the first layer.
    assert encoder.embedding_projection is None
    assert not any("embedding_hidden_mapping_in" in name for name in encoder_variables(encoder))
    assert config.parameter_estimate() == encoder.count_params()
    inputs = random_inputs()
    hidden = encoder.embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
    for _ in range(3):
        hidden = encoder.transformer_blocks[0](hidden, attention_bias(inputs))
    np.testing.assert_allclose(encoder(inputs)["sequence_output"], hidden, atol=1e-6)
    assert AlbertEncoder(dataclasses.replace(TINY, embedding_size=8)).embedding_projection is not None


def test_outputs_shapes_and_dtypes():
    pretrainer = AlbertPretrainer(TINY)
    inputs = dict(random_inputs(batch=2, seq=12), masked_lm_positions=np.array([[1, 2, 3], [4, 5, 0]], np.int32))
    outputs = pretrainer(inputs)
    assert outputs["sequence_output"].shape == (2, 12, 16)
    assert outputs["pooled_output"].shape == (2, 16)
    assert outputs["mlm_logits"].shape == (2, 3, 97)
    assert outputs["sop_logits"].shape == (2, 2)
    assert all(value.dtype == tf.float32 for value in outputs.values())


def test_padding_does_not_change_the_real_tokens_outputs():
    encoder = AlbertEncoder(TINY)
    short = random_inputs(seq=6)
    padded = {name: np.pad(value, ((0, 0), (0, 4))) for name, value in short.items()}
    # Padded positions hold random ids and segment ids: only the mask may hide them.
    padded["input_word_ids"][:, 6:] = 42
    padded["input_type_ids"][:, 6:] = 1
    np.testing.assert_allclose(
        encoder(short)["sequence_output"], encoder(padded)["sequence_output"][:, :6], atol=1e-5
    )


def test_mlm_head_is_tied_to_the_e_wide_embedding_table():
    pretrainer = AlbertPretrainer(TINY)
    word_embeddings = pretrainer.encoder.embeddings.word_embeddings
    assert tuple(word_embeddings.shape) == (97, 8)
    head_own = [v for v in pretrainer.masked_lm_head.weights if v is not word_embeddings
                and all(v is not w for w in pretrainer.encoder.weights)]
    assert {tuple(v.shape) for v in head_own} == {(16, 8), (8,), (97,)}  # transform, LN, vocab bias: no V x E
    inputs = dict(random_inputs(), masked_lm_positions=np.zeros((3, 2), np.int32))
    with tf.GradientTape() as tape:
        logits = pretrainer(inputs)["mlm_logits"]
    # The table gets gradient through the output layer even for ids not in the input.
    gradient = tf.convert_to_tensor(tape.gradient(logits, word_embeddings))
    unused_ids = sorted(set(range(97)) - set(inputs["input_word_ids"].ravel().tolist()))
    assert np.abs(gradient.numpy()[unused_ids]).sum() > 0


def test_config_round_trips_through_keras_serialization():
    for model in (AlbertEncoder(TINY), AlbertPretrainer(dataclasses.replace(TINY, sharing="ffn"))):
        rebuilt = model.__class__.from_config(model.get_config())
        assert rebuilt.get_config() == model.get_config()
        assert rebuilt.albert_config == model.albert_config
    for layer in (
        TransformerBlock(hidden_size=16, num_attention_heads=2, intermediate_size=32, hidden_act="relu"),
        SelfAttentionBlock(hidden_size=16, num_attention_heads=4, dropout_rate=0.1),
        FeedForwardBlock(hidden_size=16, intermediate_size=8, hidden_act="gelu_exact"),
    ):
        rebuilt = layer.__class__.from_config(layer.get_config())
        assert rebuilt.get_config() == layer.get_config()


def test_keras_serialization_of_a_whole_model(tmp_path):
    encoder = AlbertEncoder(TINY)
    path = tmp_path / "encoder.keras"
    encoder.save(path)
    restored = keras.models.load_model(path)
    inputs = random_inputs()
    np.testing.assert_allclose(encoder(inputs)["pooled_output"], restored(inputs)["pooled_output"], atol=1e-6)


def test_mixed_bfloat16_keeps_layer_norm_and_outputs_in_float32():
    config = dataclasses.replace(TINY, num_hidden_layers=2)
    reference = AlbertPretrainer(config)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        mixed = AlbertPretrainer(config)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    mixed.set_weights(reference.get_weights())
    assert mixed.encoder.transformer_blocks[0].attention_block.query.compute_dtype == "bfloat16"
    assert mixed.encoder.transformer_blocks[0].attention_block.layer_norm.compute_dtype == "float32"
    inputs = dict(random_inputs(), masked_lm_positions=np.ones((3, 2), np.int32))
    mixed_outputs, reference_outputs = mixed(inputs), reference(inputs)
    for name in ("sequence_output", "mlm_logits", "sop_logits"):
        assert mixed_outputs[name].dtype == tf.float32
        np.testing.assert_allclose(mixed_outputs[name], reference_outputs[name], atol=0.1)


def test_sequences_longer_than_the_position_table_fail():
    encoder = AlbertEncoder(TINY)
    with pytest.raises(ValueError, match="Sequence length 40 exceeds max_position_embeddings 32"):
        encoder(random_inputs(seq=40))


@pytest.mark.parametrize("overrides", [
    {}, {"sharing": "none"}, {"sharing": "attention"}, {"sharing": "ffn"},
    {"num_hidden_groups": 1, "inner_group_num": 2},
])
def test_pretraining_logits_equal_the_full_models_outputs(overrides):
    """The last layer computed at [CLS] and the masked positions only gives the full model's logits, and
    the same loss gradients for every variable (padding, repeated positions and position 0 included)."""
    keras.utils.set_random_seed(3)
    pretrainer = AlbertPretrainer(dataclasses.replace(TINY, **overrides), max_predictions_per_seq=4)
    inputs = random_inputs(seq=10, pad_from=8)
    inputs["masked_lm_positions"] = np.array([[1, 4, 7, 0], [2, 2, 5, 9], [0, 3, 6, 8]], np.int32)
    full = pretrainer(inputs)
    fast = pretrainer.pretraining_logits(inputs)
    for name in ("mlm_logits", "sop_logits"):
        np.testing.assert_allclose(fast[name].numpy(), full[name].numpy(), rtol=1e-5, atol=1e-5)

    def gradients(forward):
        with tf.GradientTape() as tape:
            outputs = forward()
            loss = tf.reduce_sum(outputs["mlm_logits"] ** 2) + tf.reduce_sum(outputs["sop_logits"] ** 2)
        return tape.gradient(loss, pretrainer.trainable_variables)

    for fast_gradient, full_gradient, variable in zip(gradients(lambda: pretrainer.pretraining_logits(inputs)),
                                                      gradients(lambda: pretrainer(inputs)),
                                                      pretrainer.trainable_variables):
        if full_gradient is None:
            assert fast_gradient is None, variable.path
            continue
        np.testing.assert_allclose(tf.convert_to_tensor(fast_gradient).numpy(),
                                   tf.convert_to_tensor(full_gradient).numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=variable.path)


def test_last_layer_rows_are_the_sequence_outputs_rows():
    encoder = AlbertEncoder(TINY)
    inputs = random_inputs(seq=10)
    positions = np.array([[0, 9], [5, 5], [3, 1]], np.int32)
    rows = encoder.last_layer_rows(inputs, positions)
    expected = tf.gather(encoder(inputs)["sequence_output"], positions, batch_dims=1)
    np.testing.assert_allclose(rows.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("model_kind, sharing", [("classifier", "attention"), ("classifier", "all"),
                                                  ("multiple_choice", "attention")])
def test_first_token_heads_train_on_the_same_outputs_and_gradients(model_kind, sharing):
    """Classifier and multiple-choice training runs every layer on the unpadded positions alone and the last
    layer at [CLS] alone: same logits, same gradients as the full model (dropout off, so both are
    deterministic), with one shared block or one per layer."""
    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice

    keras.utils.set_random_seed(5)
    config = dataclasses.replace(TINY, sharing=sharing)
    if model_kind == "classifier":
        model = AlbertClassifier(config, num_labels=3, dropout=0.0)
        inputs = random_inputs(seq=10, pad_from=7)
        inputs["input_mask"][1, 4:] = inputs["input_word_ids"][1, 4:] = 0  # rows of different lengths
    else:
        model = AlbertMultipleChoice(config, num_choices=2, dropout=0.0).build_variables()
        inputs = {name: value.reshape(3, 1, 10).repeat(2, 1)
                  for name, value in random_inputs(seq=10, pad_from=6).items()}
        inputs["input_word_ids"][:, 1, 3] = 7  # the two choices differ
    inputs = {name: tf.constant(value) for name, value in inputs.items()}

    def loss_and_gradients(forward):
        with tf.GradientTape() as tape:
            logits = forward()["logits"]
            loss = tf.reduce_sum(tf.sin(logits))
        return logits, tape.gradient(loss, model.trainable_variables)

    flat_rows_calls = []
    flat_rows = model.encoder.last_layer_flat_rows
    model.encoder.last_layer_flat_rows = lambda *args, **kwargs: flat_rows_calls.append(1) or flat_rows(*args,
                                                                                                        **kwargs)
    fast_logits, fast_gradients = loss_and_gradients(lambda: model.head_outputs(inputs, training=True))
    assert flat_rows_calls  # the unpadded positions' path, not the padded one
    full_logits, full_gradients = loss_and_gradients(lambda: model(inputs, training=True))
    np.testing.assert_allclose(fast_logits.numpy(), full_logits.numpy(), rtol=1e-5, atol=1e-6)
    for fast, full, variable in zip(fast_gradients, full_gradients, model.trainable_variables):
        assert (fast is None) == (full is None), variable.path
        if full is not None:
            np.testing.assert_allclose(tf.convert_to_tensor(fast).numpy(), tf.convert_to_tensor(full).numpy(),
                                       rtol=1e-4, atol=1e-6, err_msg=variable.path)


@pytest.mark.parametrize("sharing", ["all", "attention"])
def test_tagger_trains_on_the_labelled_positions_outputs_and_gradients(sharing):
    """Token-classifier training runs every layer on the unpadded positions alone and the last layer's output at
    the labelled positions alone (scattered over the batch): the same logits there and the same loss gradients as
    the full model, with one shared block or one per layer."""
    from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
    from albert_tf.text.word_pieces import IGNORED_LABEL_ID

    keras.utils.set_random_seed(6)
    model = AlbertTokenClassifier(dataclasses.replace(TINY, sharing=sharing), labels=["O", "B-PER", "I-PER"],
                                  dropout=0.0)
    inputs = {name: tf.constant(value) for name, value in random_inputs(seq=10, pad_from=7).items()}
    label_ids = np.full((3, 10), IGNORED_LABEL_ID, np.int32)
    label_ids[0, [1, 2, 5]] = [1, 2, 0]
    label_ids[2, [1, 6]] = [0, 1]  # the second window labels nothing
    labelled = label_ids != IGNORED_LABEL_ID

    def loss_and_gradients(forward):
        with tf.GradientTape() as tape:
            logits = forward()
            loss = tf.reduce_sum(tf.sin(logits))
        return logits, tape.gradient(loss, model.trainable_variables)

    fast_logits, fast_gradients = loss_and_gradients(
        lambda: model.head_outputs({**inputs, "label_ids": tf.constant(label_ids)}, training=True)["labelled_logits"])
    full_logits, full_gradients = loss_and_gradients(
        lambda: tf.boolean_mask(model(inputs, training=True)["logits"], labelled))
    assert fast_logits.shape == (labelled.sum(), 3)
    np.testing.assert_allclose(fast_logits.numpy(), full_logits.numpy(), rtol=1e-5, atol=1e-6)
    outputs = model.head_outputs({**inputs, "label_ids": tf.constant(label_ids)}, training=True)
    np.testing.assert_array_equal(outputs["labelled_ids"].numpy(), label_ids[labelled])
    for fast, full, variable in zip(fast_gradients, full_gradients, model.trainable_variables):
        assert (fast is None) == (full is None), variable.path
        if full is not None:
            np.testing.assert_allclose(tf.convert_to_tensor(fast).numpy(), tf.convert_to_tensor(full).numpy(),
                                       rtol=1e-4, atol=1e-6, err_msg=variable.path)
