"""Whether a model fits this machine's memory, told before anything is allocated.

A config inside AlbertConfig's size limits can still ask for more memory than the machine has
(hidden_size 16,384 with 4,096 layers' worth of distinct weights: about 80 GB). Building it
would run until the operating system kills the process, with no message; training a model
whose weights fit but whose optimizer state and activations do not ends the same way hours
into a run. The estimates here are lower bounds (float32 weights; for training, the gradient,
two optimizer slots and the activations a backward pass must keep), so a refusal is never
wrong, only late for what they leave out.
"""

import psutil

from albert_tf.albert_config import AlbertConfig

FLOAT32_BYTES = 4
# Optimizer slots per weight: AdamW and LAMB keep two moments.
OPTIMIZER_SLOTS = 2


class InsufficientMemoryError(ValueError):
    """The model (or its training step) needs more memory than this machine has: nothing was allocated."""


def available_bytes():
    """Memory a new allocation can take: free and reclaimable RAM plus free swap."""
    return psutil.virtual_memory().available + psutil.swap_memory().free


def weight_bytes(config: AlbertConfig) -> int:
    """The encoder's float32 weights."""
    return config.parameter_estimate() * FLOAT32_BYTES


def training_bytes(config: AlbertConfig, batch_size: int, seq_length: int, num_predictions: int = 0) -> int:
    """A lower bound of a training step's memory: weights, gradients and optimizer slots, and per applied layer
    the activations the backward pass keeps (the block's input, attention probabilities, the FFN's intermediate
    and output, at least)."""
    state = weight_bytes(config) * (2 + OPTIMIZER_SLOTS)
    tokens = batch_size * seq_length
    per_layer = (tokens * (4 * config.hidden_size + config.intermediate_size)
                 + batch_size * config.num_attention_heads * seq_length * seq_length)
    layers = config.num_hidden_layers * config.inner_group_num
    logits = batch_size * num_predictions * config.vocab_size
    return state + (layers * per_layer + tokens * config.embedding_size + logits) * FLOAT32_BYTES


def uses_host_memory(strategy) -> bool:
    """Whether `strategy` computes on this machine's CPUs (its RAM is then what a step uses), not on
    accelerators with memory of their own."""
    try:
        devices = strategy.extended.worker_devices
    except RuntimeError:  # the default strategy has no device list: it runs where TensorFlow places ops
        import tensorflow as tf

        return not tf.config.list_logical_devices("GPU") and not tf.config.list_logical_devices("TPU")
    return all("CPU" in device.upper() for device in devices)


def check_training_fits(config: AlbertConfig, strategy, batch_size: int, seq_length: int, num_predictions: int = 0,
                        already_allocated: int = 0):
    """check_fits for a training step of `batch_size` sequences over the strategy's replicas, on the CPU only;
    `already_allocated`: bytes of it that exist already (a built model's weights)."""
    if not uses_host_memory(strategy):
        return
    per_replica = max(batch_size // strategy.num_replicas_in_sync, 1)
    needed = training_bytes(config, per_replica, seq_length, num_predictions) * strategy.num_replicas_in_sync
    check_fits(needed - already_allocated, f"A training step (batch {batch_size}, seq {seq_length}, about "
                                           f"{config.parameter_estimate():,} parameters)")


def check_fits(needed: int, what: str, available: int | None = None):
    """InsufficientMemoryError naming `what` (and the two sizes) when `needed` bytes exceed what is available."""
    available = available_bytes() if available is None else available
    if needed > available:
        raise InsufficientMemoryError(
            f"{what} needs at least {needed / 2**30:,.1f} GiB, and this machine has {available / 2**30:,.1f} GiB "
            "available (RAM and swap): nothing was allocated; choose a smaller config"
            + (" or batch" if "training" in what else ""))
