"""LAMB and AdamW against a NumPy transcription of the original ALBERT algorithm, step by step."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.optimization import AdamWeightDecay, Lamb, WarmupPolynomialDecay, create_optimizer

EXCLUDED = ("LayerNorm", "layer_norm", "bias")


def reference_step(params, grads, slots, lr, layer_adaptation, beta_1=0.9, beta_2=0.999, eps=1e-6, wd=0.01):
    """One step of the original lamb_optimizer.py / AdamWeightDecayOptimizer, in NumPy float64."""
    new_params = {}
    for name, w in params.items():
        g = grads[name]
        m, v = slots.setdefault(name, (np.zeros_like(w), np.zeros_like(w)))
        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        update = m / (np.sqrt(v) + eps)
        excluded = any(re.search(pattern, name) for pattern in EXCLUDED)
        if not excluded:
            update = update + wd * w
        ratio = 1.0
        if layer_adaptation and not excluded:
            w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(update)
            ratio = (w_norm / u_norm) if (w_norm > 0 and u_norm > 0) else 1.0
        new_params[name] = w - ratio * lr * update
        slots[name] = (m, v)
    return new_params


def reference_learning_rate(step, lr, total, warmup):
    decayed = lr * (1 - min(step, total) / total)
    return lr * step / warmup if step < warmup else decayed


class _Toy(keras.layers.Layer):
    """Variables whose paths exercise every exclusion: kernel, bias, layer_norm, a zero kernel."""

    def build(self, _):
        rng = np.random.default_rng(0)
        self.kernel = self.add_weight(shape=(4, 3), initializer=keras.initializers.Constant(rng.normal(size=(4, 3))), name="kernel")
        self.bias = self.add_weight(shape=(3,), initializer=keras.initializers.Constant(rng.normal(size=3)), name="bias")
        self.gamma = self.add_weight(shape=(3,), initializer=keras.initializers.Constant(1 + rng.normal(size=3)), name="layer_norm_gamma")
        self.zero = self.add_weight(shape=(2, 2), initializer="zeros", name="zero_kernel")


@pytest.mark.parametrize("optimizer_class,adaptation", [(Lamb, True), (AdamWeightDecay, False)])
def test_matches_original_algorithm_step_by_step(optimizer_class, adaptation):
    layer = _Toy(name="toy")
    layer.build(None)
    variables = layer.trainable_variables
    total, warmup, peak = 20, 3, 0.05
    optimizer = optimizer_class(learning_rate=WarmupPolynomialDecay(peak, total, warmup))
    params = {v.path: v.numpy().astype(np.float64) for v in variables}
    assert any("layer_norm" in name for name in params) and any(name.endswith("bias") for name in params)
    slots = {}
    rng = np.random.default_rng(1)
    for step in range(6):
        # Gradients of very different scales, and an all-zero one for the zero kernel at step 0.
        grads = {v.path: rng.normal(scale=10.0 ** rng.integers(-3, 2), size=v.shape) for v in variables}
        if step == 0:
            grads["toy/zero_kernel"] = np.zeros((2, 2))
        lr = reference_learning_rate(step, peak, total, warmup)
        params = reference_step(params, grads, slots, lr, adaptation)
        optimizer.apply([tf.constant(grads[v.path], tf.float32) for v in variables], variables)
        for v in variables:
            np.testing.assert_allclose(v.numpy(), params[v.path], rtol=2e-5, atol=1e-6, err_msg=f"{v.path} at step {step}")


def test_exclusions_follow_original_patterns():
    optimizer = Lamb()
    assert not optimizer.uses_weight_decay("transformer/attention_block/layer_norm/gamma")
    assert not optimizer.uses_weight_decay("bert/encoder/LayerNorm/beta")
    assert not optimizer.uses_weight_decay("pooler/bias")
    assert optimizer.uses_weight_decay("pooler/kernel")
    assert not optimizer._uses_layer_adaptation("masked_lm_head/output_bias")
    assert optimizer._uses_layer_adaptation("embeddings/word_embeddings")


def test_schedule_matches_original_and_round_trips():
    schedule = WarmupPolynomialDecay(1e-3, num_train_steps=100, num_warmup_steps=10)
    for step in (0, 1, 5, 9, 10, 11, 50, 99, 100, 150):
        np.testing.assert_allclose(float(schedule(step)), reference_learning_rate(step, 1e-3, 100, 10), rtol=1e-6, atol=1e-12)
    assert WarmupPolynomialDecay.from_config(schedule.get_config()).get_config() == schedule.get_config()
    with pytest.raises(ValueError, match="num_warmup_steps"):
        WarmupPolynomialDecay(1e-3, 10, 20)


def test_create_optimizer_and_config_round_trip():
    optimizer = create_optimizer(1e-3, 100, 10, optimizer="lamb")
    assert isinstance(optimizer, Lamb) and optimizer.global_clipnorm == 1.0 and optimizer.epsilon == 1e-6
    restored = Lamb.from_config(optimizer.get_config())
    assert restored.exclude_from_layer_adaptation == optimizer.exclude_from_layer_adaptation
    assert isinstance(create_optimizer(1e-5, 10, optimizer="adamw"), AdamWeightDecay)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        create_optimizer(1e-3, 10, optimizer="sgd")


def test_global_norm_clipping():
    variable = keras.Variable(np.zeros(2, np.float32), name="bias")  # excluded: a plain Adam step
    optimizer = AdamWeightDecay(learning_rate=1.0, global_clipnorm=1.0, beta_1=0.0, beta_2=0.0, epsilon=1.0)
    optimizer.apply([tf.constant([30.0, 40.0])], [variable])
    # beta 0, epsilon 1: the step is g / (|g| + 1), with g clipped to norm 1 first.
    np.testing.assert_allclose(variable.numpy(), [-0.6 / 1.6, -0.8 / 1.8], rtol=1e-6)


def test_global_norm_clipping_measures_an_embedding_gradient_with_repeated_rows_summed():
    """An embedding's gradient arrives as IndexedSlices, one row per lookup: row 0 looked up twice, with [3, 0]
    each time, has the gradient [6, 0], of norm 6, where the rows' own norm is 4.24. The clip to norm 1 scales
    it by 1 / 6, as PyTorch's clip_grad_norm_ and the original's one-hot embeddings (a dense gradient) do."""
    table = keras.Variable(np.zeros((3, 2), np.float32), name="word_embeddings")  # decayed, but w = 0
    optimizer = AdamWeightDecay(learning_rate=1.0, global_clipnorm=1.0, beta_1=0.0, beta_2=0.0, epsilon=1.0)
    optimizer.apply([tf.IndexedSlices(tf.constant([[3.0, 0.0], [3.0, 0.0]]), tf.constant([0, 0]),
                                      tf.constant([3, 2]))], [table])
    # beta 0, epsilon 1: the step is g / (|g| + 1) per element, g = [6, 0] / 6 = [1, 0] in row 0.
    np.testing.assert_allclose(table.numpy(), [[-0.5, 0.0], [0.0, 0.0], [0.0, 0.0]], rtol=1e-6)

    # Under the norm: no clipping, and the sparse gradient's rows still reach every moment (dense update).
    optimizer = AdamWeightDecay(learning_rate=1.0, global_clipnorm=100.0, beta_1=0.0, beta_2=0.0, epsilon=1.0)
    table.assign(np.zeros((3, 2), np.float32))
    optimizer.apply([tf.IndexedSlices(tf.constant([[3.0, 0.0], [0.0, 4.0]]), tf.constant([0, 2]),
                                      tf.constant([3, 2]))], [table])
    np.testing.assert_allclose(table.numpy(), [[-0.75, 0.0], [0.0, 0.0], [0.0, -0.8]], rtol=1e-6)

    # Without clipping too (Keras's clip used to be what made the rows dense, so this step failed).
    optimizer = AdamWeightDecay(learning_rate=1.0, beta_1=0.0, beta_2=0.0, epsilon=1.0)
    table.assign(np.zeros((3, 2), np.float32))
    optimizer.apply([tf.IndexedSlices(tf.constant([[3.0, 0.0], [1.0, 0.0]]), tf.constant([0, 0]),
                                      tf.constant([3, 2]))], [table])
    np.testing.assert_allclose(table.numpy(), [[-0.8, 0.0], [0.0, 0.0], [0.0, 0.0]], rtol=1e-6)


def test_schedule_length_can_be_a_variable_set_after_tracing():
    """run_pretraining --train_budget_hours sets T once the step time is measured, in a loop already compiled."""
    total = tf.Variable(1000, dtype=tf.int64)
    schedule = WarmupPolynomialDecay(1e-3, num_train_steps=total, num_warmup_steps=10)
    rate = tf.function(lambda step: schedule(step))
    np.testing.assert_allclose(float(rate(tf.constant(50))), 1e-3 * (1 - 50 / 1000), rtol=1e-6)
    total.assign(100)
    np.testing.assert_allclose(float(rate(tf.constant(50))), 1e-3 * (1 - 50 / 100), rtol=1e-6)
    assert float(rate(tf.constant(100))) == 0.0
    assert schedule.get_config()["num_train_steps"] == 100


def test_schedule_length_can_be_a_mirrored_variable(two_cpu_strategy):
    """Under MirroredStrategy (two logical CPUs, conftest.py) the variable is distributed; the plan assigns it."""
    strategy = two_cpu_strategy
    with strategy.scope():
        total = tf.Variable(1000, dtype=tf.int64, trainable=False)
        schedule = WarmupPolynomialDecay(1e-3, num_train_steps=total, num_warmup_steps=10)
    total.assign(100)  # cross-replica, as run_pretraining's budget plan does
    rates = strategy.run(tf.function(lambda: schedule(tf.constant(50))))
    for rate in strategy.experimental_local_results(rates):
        np.testing.assert_allclose(float(rate), 1e-3 * 0.5, rtol=1e-6)
    assert schedule.get_config()["num_train_steps"] == 100
