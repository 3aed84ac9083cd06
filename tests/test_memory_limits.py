"""Configs and training steps beyond this machine's memory are refused before anything is allocated."""

import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.networks import memory_estimate
from albert_tf.networks.memory_estimate import InsufficientMemoryError, check_fits, training_bytes, weight_bytes


def test_an_encoder_beyond_the_machines_memory_is_refused_before_its_weights_exist(monkeypatch):
    import keras

    from albert_tf.networks.albert_encoder import AlbertEncoder

    # Inside the size limits, about 76 GB of distinct weights: beyond this machine (24 GB) and most others.
    huge = AlbertConfig.from_dict({**AlbertConfig.from_preset("albert_base_v2").to_dict(), "hidden_size": 16_384,
                                   "intermediate_size": 65_536, "num_attention_heads": 64, "num_hidden_layers": 6,
                                   "num_hidden_groups": 6})
    assert 70 * 2**30 < weight_bytes(huge)
    # What the machine has is set here, so the test means the same on a larger one.
    monkeypatch.setattr(memory_estimate, "available_bytes", lambda: 24 * 2**30)
    created = []
    monkeypatch.setattr(keras.layers.Layer, "add_weight", lambda *a, **k: created.append(a) or None)
    with pytest.raises(InsufficientMemoryError, match=r"An encoder of about [\d,]+ parameters needs at least "
                                                      r"[\d,.]+ GiB, and this machine has [\d,.]+ GiB available"):
        AlbertEncoder(huge)
    assert not created  # refused before the first weight
    # A model that fits is built as before.
    monkeypatch.undo()
    monkeypatch.setattr(memory_estimate, "available_bytes", lambda: 24 * 2**30)
    assert AlbertEncoder(AlbertConfig.from_preset("albert_tiny")).count_params() > 0


def test_the_estimates_are_lower_bounds_of_what_training_holds():
    config = AlbertConfig.from_preset("albert_base_v2")
    weights = weight_bytes(config)
    assert weights == config.parameter_estimate() * 4
    small = training_bytes(config, batch_size=8, seq_length=128)
    # Weights, gradients and two optimizer slots at least, and activations that grow with batch and length.
    assert small > 4 * weights
    assert training_bytes(config, 16, 128) > small and training_bytes(config, 8, 512) > small
    assert training_bytes(config, 8, 128, num_predictions=20) > small
    with pytest.raises(InsufficientMemoryError, match="training .*needs at least 1.0 GiB.*0.5 GiB available.*batch"):
        check_fits(2**30, "training step", available=2**29)
    check_fits(2**29, "training step", available=2**30)
    assert memory_estimate.available_bytes() > 0


def test_a_training_step_beyond_memory_is_refused_on_the_cpu_and_left_to_accelerators(monkeypatch):
    import tensorflow as tf

    from albert_tf.networks.memory_estimate import check_training_fits, uses_host_memory

    config = AlbertConfig.from_preset("albert_base_v2")
    strategy = tf.distribute.get_strategy()  # this machine's CPU
    assert uses_host_memory(strategy)
    monkeypatch.setattr(memory_estimate, "available_bytes", lambda: 2 * 2**30)
    check_training_fits(config, strategy, batch_size=2, seq_length=64)  # about 0.9 GB: fits in 2 GiB
    with pytest.raises(InsufficientMemoryError, match=r"A training step \(batch 512, seq 512, about [\d,]+ "
                                                      r"parameters\) needs at least [\d,.]+ GiB.*choose a smaller "
                                                      r"config or batch"):
        check_training_fits(config, strategy, batch_size=512, seq_length=512)
    # What already exists (the built model's weights) is not counted twice.
    needed = training_bytes(config, 2, 64)
    monkeypatch.setattr(memory_estimate, "available_bytes", lambda: needed - weight_bytes(config) + 1)
    check_training_fits(config, strategy, 2, 64, already_allocated=weight_bytes(config))
    with pytest.raises(InsufficientMemoryError):
        check_training_fits(config, strategy, 2, 64)

    class OnAccelerators:  # a strategy whose replicas have memory of their own: host RAM says nothing
        num_replicas_in_sync = 8
        extended = type("Extended", (), {"worker_devices": ["/job:worker/device:TPU:0"]})()

    assert not uses_host_memory(OnAccelerators())
    check_training_fits(config, OnAccelerators(), batch_size=4096, seq_length=512)
