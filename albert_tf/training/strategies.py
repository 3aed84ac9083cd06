"""Distribution strategies by name: one_device, mirrored, multi_worker, tpu."""

import json
import os

import tensorflow as tf

from albert_tf.settings import SettingError
from albert_tf.training.distribution_config import STRATEGY_NAMES as STRATEGIES


def _local_devices():
    """GPUs if any, else the logical CPU devices (several only if configured)."""
    gpus = tf.config.list_logical_devices("GPU")
    return [device.name for device in gpus] or [device.name for device in tf.config.list_logical_devices("CPU")]


def create_strategy(name="one_device", tpu=None):
    """A tf.distribute.Strategy; `tpu` (a TPU name or grpc:// address) implies "tpu"."""
    if tpu:
        name = "tpu"
    if name not in STRATEGIES:
        raise SettingError(f"<strategy> must be one of {STRATEGIES}, got {name!r}")
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(_local_devices()[0])
    if name == "mirrored":
        return tf.distribute.MirroredStrategy(devices=_local_devices())
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise SettingError("<strategy>=multi_worker needs TF_CONFIG describing the cluster and this task "
                               "(see docs/pipeline.md: several machines)")
        try:
            json.loads(os.environ["TF_CONFIG"])
        except json.JSONDecodeError as error:
            raise ValueError(f"TF_CONFIG is not valid JSON: {error}") from None
        return tf.distribute.MultiWorkerMirroredStrategy()
    return _tpu_strategy(tpu or "")


def _tpu_strategy(tpu):
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, OSError, tf.errors.OpError) as error:
        # OSError: a TPU name is looked up through the Cloud metadata server, unreachable off Google Cloud.
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        if len(reason) > 160:
            reason = reason[:160] + "..."
        raise SettingError(
            f"<tpu>={tpu!r}: no TPU could be reached ({reason}). On a Cloud TPU VM pass <tpu>=local; "
            "elsewhere on Google Cloud the TPU's name or grpc://ADDRESS:8470. See BUILD.md: Cloud TPU."
        ) from None
    return tf.distribute.TPUStrategy(resolver)


def is_chief(strategy):
    """Whether this process writes checkpoints and summaries (task 0 of a multi-worker cluster)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    return task_type is None or task_type == "chief" or (task_type == "worker" and task_id == 0)


def worker_layout(strategy):
    """(number of workers, this worker's index): (1, 0) unless multi-worker. A chief counts as worker 0."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return 1, 0
    resolver = strategy.cluster_resolver
    cluster = resolver.cluster_spec().as_dict()
    chiefs = len(cluster.get("chief", []))
    index = resolver.task_id + (chiefs if resolver.task_type == "worker" else 0)
    return chiefs + len(cluster.get("worker", [])), index
