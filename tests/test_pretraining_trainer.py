"""The compiled trainer on the pretraining objective: distribution and accumulation change nothing but speed."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.albert_config import AlbertConfig
from albert_tf.data.pretraining_dataset import make_pretraining_dataset
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.optimization import create_optimizer
from albert_tf.tasks.pretraining_losses import PretrainingObjective, metrics_from_sums
from albert_tf.training.trainer import Trainer
from pretraining_fixtures import PREDICTIONS, SEQ_LENGTH, make_pretraining_data

STEPS = 5
BATCH = 8


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_pretraining_data(tmp_path_factory)


@pytest.fixture(scope="module")
def initial_weights(data):
    keras.utils.set_random_seed(7)
    model = AlbertPretrainer(AlbertConfig.from_json_file(data.config_file), seq_length=SEQ_LENGTH,
                             max_predictions_per_seq=PREDICTIONS)
    return [w.numpy() for w in model.weights]


def train(strategy, data, initial_weights, accumulation=1, precision="float32"):
    """Per-step losses and final weights of STEPS steps from the same weights and input order."""
    keras.mixed_precision.set_global_policy(precision)
    try:
        with strategy.scope():
            model = AlbertPretrainer(AlbertConfig.from_json_file(data.config_file), seq_length=SEQ_LENGTH,
                                     max_predictions_per_seq=PREDICTIONS)
            model.set_weights(initial_weights)
            optimizer = create_optimizer(2e-3, 100, 2, gradients_are_aggregated=True)
            if precision == "mixed_float16":
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            trainer = Trainer(strategy, model, optimizer, PretrainingObjective(), BATCH, accumulation)
        iterator = iter(make_pretraining_dataset(data.files(), BATCH, SEQ_LENGTH, PREDICTIONS, seed=1))
        losses = []
        for _ in range(STEPS):
            totals, gradient_norm, _ = trainer.train_loop(iterator, tf.constant(1))
            metrics = metrics_from_sums({k: v.numpy() for k, v in totals.items()})
            losses.append(metrics["masked_lm_loss"] + metrics["sentence_order_loss"])
            assert np.isfinite(float(gradient_norm))
        assert int(trainer.step.numpy()) == STEPS
        return np.array(losses), [w.numpy() for w in model.weights], model
    finally:
        keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="module")
def one_device_run(data, initial_weights):
    return train(tf.distribute.OneDeviceStrategy("/cpu:0"), data, initial_weights)


def test_weights_change_and_loss_is_sane(one_device_run, initial_weights):
    losses, weights, _ = one_device_run
    assert np.all(np.isfinite(losses)) and losses[0] > 1.0
    assert max(np.abs(a - b).max() for a, b in zip(weights, initial_weights)) > 1e-4


def test_mirrored_over_two_devices_matches_one_device(data, initial_weights, one_device_run, two_cpu_strategy):
    losses, weights, _ = train(two_cpu_strategy, data, initial_weights)
    # Same global batch, same input order: only the summation order differs (float32 rounding).
    np.testing.assert_allclose(losses, one_device_run[0], rtol=1e-5)
    for a, b in zip(weights, one_device_run[1]):
        np.testing.assert_allclose(a, b, atol=2e-5)


def test_gradient_accumulation_is_exact(data, initial_weights, one_device_run):
    losses, weights, _ = train(tf.distribute.OneDeviceStrategy("/cpu:0"), data, initial_weights, accumulation=4)
    np.testing.assert_allclose(losses, one_device_run[0], rtol=1e-5)
    for a, b in zip(weights, one_device_run[1]):
        np.testing.assert_allclose(a, b, atol=2e-5)


@pytest.mark.parametrize("precision", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_trains_close_to_float32(data, initial_weights, one_device_run, precision):
    losses, weights, model = train(tf.distribute.OneDeviceStrategy("/cpu:0"), data, initial_weights, precision=precision)
    assert all(w.dtype == "float32" for w in model.weights), "variables stay float32"
    assert model.encoder.embeddings.compute_dtype == precision.split("_")[1]
    # Lower-precision compute, same trajectory within its rounding.
    np.testing.assert_allclose(losses, one_device_run[0], rtol=2e-2)


def test_batch_must_divide_over_replicas_and_micro_batches(data, initial_weights):
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = AlbertPretrainer(AlbertConfig.from_json_file(data.config_file))
        optimizer = create_optimizer(1e-3, 10, gradients_are_aggregated=True)
        with pytest.raises(ValueError, match="divisible"):
            Trainer(strategy, model, optimizer, PretrainingObjective(), global_batch_size=10,
                    gradient_accumulation_steps=4)


def test_sentence_loss_weight_zero_trains_mlm_only(data, initial_weights):
    """--sentence_loss_weight=0 (the paper's Table 5 "None" row): no gradient reaches the sentence-order head."""
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    batch = next(iter(make_pretraining_dataset(data.files(), BATCH, SEQ_LENGTH, PREDICTIONS, seed=1)))
    masked_weight = tf.reduce_sum(tf.cast(batch["masked_lm_weights"], tf.float32))
    sop_norms = {}
    for weight in (1.0, 0.0):
        with strategy.scope():
            model = AlbertPretrainer(AlbertConfig.from_json_file(data.config_file), seq_length=SEQ_LENGTH,
                                     max_predictions_per_seq=PREDICTIONS)
            model.set_weights(initial_weights)
            trainer = Trainer(strategy, model, create_optimizer(2e-3, 100, 2, gradients_are_aggregated=True),
                              PretrainingObjective(sentence_loss_weight=weight), BATCH)
        gradients, _ = trainer._forward_backward(batch, {"masked_weight": masked_weight})
        by_layer = [(variable.path, gradient) for variable, gradient in zip(model.trainable_variables, gradients)]
        sop_norms[weight] = float(tf.linalg.global_norm([g for path, g in by_layer if "sentence_order_head" in path]))
        mlm_bias = [g for path, g in by_layer if "masked_lm_head" in path and "bias" in path]
        assert mlm_bias and float(tf.linalg.global_norm(mlm_bias)) > 0
    assert sop_norms[1.0] > 0 and sop_norms[0.0] == 0.0
    with pytest.raises(ValueError, match="sentence_loss_weight must be >= 0"):
        PretrainingObjective(sentence_loss_weight=-1)
