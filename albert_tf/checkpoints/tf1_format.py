"""Original (google-research/albert) TF1 checkpoints: read and write by name."""

import os

import numpy as np
import tensorflow as tf

# Optimizer slots and bookkeeping the original training leaves in a checkpoint.
_IGNORED_SUFFIXES = ("/adam_m", "/adam_v")
_IGNORED_NAMES = ("global_step",)

ORIGINAL_CONFIG_FILE = "albert_config.json"


def resolve_tf1_checkpoint(path):
    """Checkpoint prefix for a prefix (`model.ckpt-best`) or a directory holding one."""
    if tf.io.gfile.exists(path + ".index"):
        return path
    if tf.io.gfile.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest:
            return latest
        indexes = sorted(tf.io.gfile.glob(os.path.join(path, "*.index")))
        if len(indexes) == 1:
            return indexes[0][: -len(".index")]
        if indexes:
            raise ValueError(f"{path}: holds several checkpoints; pass one prefix: {indexes}")
    raise FileNotFoundError(f"{path}: no TF1 checkpoint (expected PREFIX.index or a directory with one)")


def read_tf1_checkpoint(path):
    """{name: numpy array} of the model tensors in an original checkpoint."""
    prefix = resolve_tf1_checkpoint(path)
    try:
        reader = tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError) as error:
        raise ValueError(f"{prefix}: cannot read checkpoint ({error})") from None
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if name not in _IGNORED_NAMES and not name.endswith(_IGNORED_SUFFIXES)
    }


def write_tf1_checkpoint(tensors, prefix):
    """Writes {name: array} as a name-based (TF1-style) checkpoint at `prefix`."""
    names = sorted(tensors)
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(np.asarray(tensors[name])) for name in names],
    )
    return prefix


def write_original_config(config, path):
    """Writes `config` as an albert_config.json the original code reads as the same model.

    The original has no `sharing` key (it keeps unknown keys but never reads them): its not-shared model
    is one group per layer, so sharing="none" is written with num_hidden_groups = L, and refused where the
    original's int(l / L * G) would give some layer another group than its own (L = 22, 23, 26, ...).
    """
    import dataclasses

    if config.sharing == "none":
        layers = config.num_hidden_layers
        shared = [layer for layer in range(layers) if int(layer / layers * layers) != layer]
        if shared:
            raise ValueError(f'sharing="none" with num_hidden_layers={layers}: the original computes layer l\'s '
                             f"group as int(l / L * G) in floating point, which gives layer(s) {shared} the group "
                             "of the layer before; no original config holds this model")
        config = dataclasses.replace(config, num_hidden_groups=layers)
    config.to_json_file(path)

