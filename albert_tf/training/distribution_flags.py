"""The flags that say where and how a training tool computes, with one meaning in every tool.

run_pretraining, run_classifier, run_squad and run_race define them through
`define_distribution_flags`; their values (`distribution_settings`) are the run config's
`DistributionConfig` fields (albert_tf.training.distribution_config), which go to
`strategies.create_strategy`, Keras's precision policy (`PRECISIONS`) and the `Trainer`.
"""

from absl import flags

# Defining the flags imports no TensorFlow (a tool's --help stays fast).
from albert_tf.settings import field_default
from albert_tf.training.distribution_config import PRECISIONS, STRATEGY_NAMES


def define_distribution_flags(config_class):
    """--strategy, --tpu, --mixed_precision, --jit_compile, --gradient_accumulation_steps, --iterations_per_loop
    and --max_seconds_per_loop, with the defaults of `config_class` (a DistributionConfig)."""

    def default(name):
        return field_default(config_class, name)

    flags.DEFINE_enum("strategy", default("strategy"), list(STRATEGY_NAMES),
                      "one_device; mirrored (all local GPUs, or the logical CPU devices configured); multi_worker "
                      "(MultiWorkerMirroredStrategy, cluster from TF_CONFIG; only the chief writes); tpu "
                      "(TPUStrategy).")
    flags.DEFINE_string("tpu", default("tpu"),
                        "TPU name or grpc:// address (Cloud TPU VM: local); implies --strategy=tpu.")
    flags.DEFINE_alias("tpu_name", "tpu")  # the original scripts' name
    flags.DEFINE_bool("use_tpu", False, "The original scripts' switch: run on the TPU of --tpu (--tpu_name), or "
                      "without one on this Cloud TPU VM's own (--tpu=local).")
    flags.DEFINE_enum("mixed_precision", default("mixed_precision"), list(PRECISIONS),
                      "bf16: bfloat16 compute, float32 variables (TPU, Ampere+ GPUs, CPUs with avx512_bf16 or AMX). "
                      "fp16: float16 with dynamic loss scaling (older GPUs). LayerNorm, softmax and losses stay "
                      "float32.")
    flags.DEFINE_bool("jit_compile", default("jit_compile"),
                      "XLA-compile the forward and backward pass (TPU steps are compiled whatever this says; usually "
                      "faster on GPU). Off by default because on CPUs it is slower for ALBERT: XLA:CPU computes bf16 "
                      "matmuls in float32 (measured on an avx512_bf16 CPU: fine-tuning albert_base 0.94x in float32, "
                      "0.55x in bf16).")
    flags.DEFINE_integer("gradient_accumulation_steps", default("gradient_accumulation_steps"),
                         "Micro-batches per step: the step's gradient is the exact gradient of the whole "
                         "--train_batch_size batch, with 1/N of the activation memory. --train_batch_size must "
                         "divide by replicas x N.")
    flags.DEFINE_integer("iterations_per_loop", default("iterations_per_loop"),
                         "Steps per compiled loop; the progress line, summaries and the divergence check come between "
                         "loops (and loops end at checkpoints).")
    flags.DEFINE_integer("max_seconds_per_loop", default("max_seconds_per_loop"),
                         "A compiled loop also ends after this many seconds, so the progress line, summaries and the "
                         "divergence check come at least this often whatever --iterations_per_loop is. 0: only "
                         "--iterations_per_loop ends a loop. Multi-worker runs end loops only by "
                         "--iterations_per_loop, since every worker must run the same steps.")


def create_strategy_for(config):
    """The tf.distribute strategy a run config names (`strategy`, `tpu`; see `strategies.create_strategy`)."""
    from albert_tf.training.strategies import create_strategy

    return create_strategy(config.strategy, tpu=config.tpu)


def distribution_settings(values):
    """The distribution flags' values by setting name; --use_tpu without --tpu means this VM's TPU."""
    return {"strategy": values.strategy, "tpu": values.tpu or ("local" if values.use_tpu else None),
            "mixed_precision": values.mixed_precision, "jit_compile": values.jit_compile,
            "gradient_accumulation_steps": values.gradient_accumulation_steps,
            "iterations_per_loop": values.iterations_per_loop, "max_seconds_per_loop": values.max_seconds_per_loop}
