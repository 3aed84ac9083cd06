"""The compiled trainer on the pretraining objective: distribution and accumulation change nothing but speed;
and a pretraining run around it, stopped and resumed: what it takes from the data and what TensorBoard gets."""

import collections
import dataclasses
import glob
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.albert_config import AlbertConfig
from albert_tf.data.pretraining_dataset import make_pretraining_dataset
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.optimization import create_optimizer
from albert_tf.settings import SettingError
from albert_tf.tasks.pretraining_losses import PretrainingObjective, metrics_from_sums
from albert_tf.text.special_ids import ALBERT_SPECIAL_IDS
from albert_tf.training import pretraining_run
from albert_tf.training.pretraining_config import PretrainingConfig
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
            trainer = Trainer(strategy, model, optimizer, PretrainingObjective(mask_id=ALBERT_SPECIAL_IDS.mask), BATCH, accumulation)
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
            Trainer(strategy, model, optimizer, PretrainingObjective(mask_id=ALBERT_SPECIAL_IDS.mask), global_batch_size=10,
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
                              PretrainingObjective(sentence_loss_weight=weight, mask_id=ALBERT_SPECIAL_IDS.mask), BATCH)
        gradients, _ = trainer._forward_backward(batch, {"masked_weight": masked_weight})
        by_layer = [(variable.path, gradient) for variable, gradient in zip(model.trainable_variables, gradients)]
        sop_norms[weight] = float(tf.linalg.global_norm([g for path, g in by_layer if "sentence_order_head" in path]))
        mlm_bias = [g for path, g in by_layer if "masked_lm_head" in path and "bias" in path]
        assert mlm_bias and float(tf.linalg.global_norm(mlm_bias)) > 0
    assert sop_norms[1.0] > 0 and sop_norms[0.0] == 0.0
    with pytest.raises(ValueError, match="sentence_loss_weight must be >= 0"):
        PretrainingObjective(sentence_loss_weight=-1, mask_id=ALBERT_SPECIAL_IDS.mask)


def summary_counts(directory):
    """{(tag, step): how many events hold it} over the TensorBoard event files in `directory`, read with
    TensorFlow's own event reader."""
    counts = collections.Counter()
    for path in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            counts.update((value.tag, event.step) for value in event.summary.value)
    return counts


@pytest.fixture(scope="module")
def heldout_data(tmp_path_factory):
    """Pretraining data with a held-out set (every 10th document) of some tens of instances."""
    return make_pretraining_data(tmp_path_factory, heldout_every=10)


def run_settings(data, output_dir, **changes):
    """A run of albert_tiny, the preset, on `data` without its SentencePiece model: evaluated every 4 steps
    and at the end, a checkpoint every 4 steps."""
    return PretrainingConfig(input_file=data.prefix, eval_input_file=data.prefix + "-heldout",
                             output_dir=str(output_dir), albert_config="albert_tiny", train_batch_size=8,
                             eval_batch_size=8, max_eval_steps=2, num_train_steps=8, num_warmup_steps=1,
                             learning_rate=1e-3, save_checkpoints_steps=4, iterations_per_loop=2, eval_every_steps=4,
                             do_eval=True, shuffle_buffer_size=100, **changes)


def test_a_preset_takes_the_datas_vocabulary_size_and_only_an_explicit_other_one_is_refused(heldout_data, tmp_path):
    from albert_tf.data.pretraining_dataset import data_set_format
    from albert_tf.training.pretraining_run import _model_config

    metadata = data_set_format(heldout_data.files())[1]
    pieces = metadata["vocab_size"]
    settings = run_settings(heldout_data, tmp_path)
    assert _model_config(settings, metadata).vocab_size == pieces != 30000
    assert _model_config(settings, None).vocab_size == 30000  # data without metadata: the preset's, checked later
    with pytest.raises(SettingError, match=rf"the data was tokenized with a {pieces}-piece vocabulary, but the "
                                           rf"model's vocab_size is {pieces + 1}; pass vocab_size={pieces}"):
        pretraining_run.run(dataclasses.replace(settings, vocab_size=pieces + 1))
    assert not tmp_path.joinpath("run_config.json").exists()


@pytest.mark.slow
def test_a_resumed_run_logs_each_step_once_and_says_what_it_took_from_the_data(heldout_data, tmp_path, capsys):
    """A run stopped after logging steps 6 and 8 but before saving ckpt-8, rerun: it resumes from ckpt-4, and
    TensorBoard holds each step's figures once (the phase as one number, its reason as text); both runs say, in
    one line each, the vocabulary size taken from the data and what a held-out set of tens of instances is worth."""
    settings = run_settings(heldout_data, tmp_path)
    assert pretraining_run.run(settings) == 0
    for path in tmp_path.glob("ckpt-8.*"):
        path.unlink()
    assert pretraining_run.run(settings) == 0
    output = capsys.readouterr().out
    assert f"Resuming from {tmp_path / 'ckpt-4'} at step 4." in output
    from albert_tf.data.data_set_files import read_metadata

    heldout_metadata = read_metadata(heldout_data.prefix + "-heldout")
    instances = heldout_metadata["statistics"]["instances"]
    assert 16 <= instances < 400
    vocabulary = (f"albert_config=albert_tiny with vocab_size {heldout_metadata['vocab_size']}, the vocabulary size "
                  f"{heldout_data.prefix} records (the preset has 30000).")
    heldout = (f"Warning: the held-out set {heldout_data.prefix}-heldout holds {instances} instances, 16 evaluated "
               "(full batches of 8): below about 400 its figures are noise (an accuracy over 16 sequences has a "
               "standard error of up to 0.12); hold out more documents (create_pretraining_data --heldout_every).")
    assert output.splitlines().count(vocabulary) == 2 and output.splitlines().count(heldout) == 2, output
    train, evaluation = summary_counts(tmp_path / "train"), summary_counts(tmp_path / "eval")
    assert {step for _, step in train} == {2, 4, 6, 8} and set(train.values()) == {1}, train
    assert {step for _, step in evaluation} == {4, 8} and set(evaluation.values()) == {1}, evaluation
    assert {("phase", 8), ("phase_reason", 8), ("masked_lm_loss", 8)} <= set(evaluation)
