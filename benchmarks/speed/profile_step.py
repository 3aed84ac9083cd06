r"""Where a pretraining step spends its time, from the TensorFlow profiler.

  python -m benchmarks.speed.profile_step [--peer=albert_tf] [--precision=fp32] [--preset=albert_base_v2] \
      [--batch_size=8] [--seq_length=128] [--steps=3] [--jit_compile] [--top=15] [--logdir=/tmp/albert_profile]

Builds the training step of benchmarks/speed/train_step.py (albert_tf's Trainer, or
--peer=keras_hub for KerasHub's AlbertMaskedLM step, to see where the two differ; random
weights, one batch held in memory), warms it up, records --steps steps with
tf.profiler.experimental, and reads the trace (the .xplane.pb TensorBoard's
trace viewer shows, left in --logdir): every TensorFlow op's time on the
executor threads, summed by kind (matmuls, attention softmax and the MLM
cross-entropy, LayerNorm, GELU, gathers/scatters of the masked positions and
embeddings, the optimizer update, casts, the rest) and by op. Op times overlap
when ops run in parallel, so the shares are of the summed op time; the step's
wall time is printed beside them. With --jit_compile the forward and backward
pass run as one XLA cluster: its instructions (matmuls, fusions) are summed
from the intra-op threads that run them.
"""

import argparse
import collections
import glob
import os
import re
import sys
import time


MATMULS = {"MatMul", "BatchMatMulV2", "BatchMatMulV3", "_MklMatMul", "_FusedMatMul", "_MklBatchMatMulV2",
           "_MklFusedMatMul", "Einsum", "_MklEinsum"}
GATHER_SCATTER = {"GatherV2", "ResourceGather", "GatherNd", "UnsortedSegmentSum", "ScatterNd", "TensorScatterAdd",
                  "TensorScatterUpdate", "ResourceScatterAdd", "SparseSegmentSum", "Unique"}


def category(scope, op_type):
    """The kind of work an op does, from its type and name scope."""
    if op_type == "XLA":
        return xla_category(XLA_INSTRUCTION.match(scope).group(1))
    scopes = scope.lower().split("/")  # albert_tf's update runs under .../lamb/..., Keras's Lamb under lamb/...
    if {"lamb", "adamw", "adam_weight_decay"} & set(scopes) or any("global_norm" in part for part in scopes):
        return "optimizer update (incl. gradient clipping)"
    if op_type in MATMULS:
        return "matmul"
    if op_type in ("Softmax", "SoftmaxGrad") or "Softmax" in op_type:
        return "softmax / cross-entropy"
    if "layer_norm" in scope:
        return "LayerNorm"
    if "Gelu" in scope or "gelu" in scope or op_type in ("Tanh", "TanhGrad", "Erf", "Pow"):
        return "activations (GELU, tanh)"
    if op_type in GATHER_SCATTER or "Gather" in op_type or "Scatter" in op_type:
        return "gather / scatter"
    if op_type == "Cast":
        return "casts"
    if op_type in ("Transpose", "Reshape", "ConcatV2", "Pack", "Unpack", "Split", "StridedSlice", "Slice",
                   "StridedSliceGrad", "Tile", "Identity"):
        return "layout (transpose, concat, slice)"
    if op_type.startswith("_XlaRun") or op_type in ("XlaLaunch", "_XlaCompile"):
        return "XLA cluster (forward + backward)"
    return "other elementwise / reductions"


XLA_INSTRUCTION = re.compile(r"^([A-Za-z_\-]+)\.\d+$")


def xla_category(kind):
    """The kind of work of an XLA:CPU instruction (thunk), from its name."""
    kind = kind.lower()
    if kind in ("matmul", "dot", "convolution", "custom-call"):
        return "XLA: matmul"
    if "fusion" in kind:
        return "XLA: fused elementwise (GELU, softmax, LayerNorm, cross-entropy, ...)"
    if kind in ("gather", "scatter", "dynamic-slice", "dynamic-update-slice"):
        return "XLA: gather / scatter"
    return f"XLA: {kind}"


def op_times(xplane_path):
    """{(scope, op type): seconds} summed over the executor threads of the host plane; XLA:CPU
    instructions (run on the intra-op threads) as (instruction, "XLA")."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with open(xplane_path, "rb") as f:
        space.ParseFromString(f.read())
    times = collections.Counter()
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            if line.name.startswith("tf_numa") or line.name.startswith("tf_XLA"):
                for event in line.events:
                    match = XLA_INSTRUCTION.match(plane.event_metadata[event.metadata_id].name)
                    if match:
                        times[(plane.event_metadata[event.metadata_id].name, "XLA")] += event.duration_ps / 1e12
                continue
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if ":" not in name or "::" in name:  # executor and thread-pool bookkeeping, not ops
                    continue
                scope, op_type = name.rsplit(":", 1)
                times[(scope, op_type)] += event.duration_ps / 1e12
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer", default="albert_tf", choices=("albert_tf", "keras_hub"),
                        help="whose step: albert_tf's pretraining step, or KerasHub's AlbertMaskedLM step")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"),
                        help="fp32, or bf16 compute with fp32 variables (Keras mixed_bfloat16)")
    parser.add_argument("--preset", default="albert_base_v2", help="preset name or albert_config JSON")
    parser.add_argument("--vocab_size", type=int, default=None, help="override the preset's vocabulary size")
    parser.add_argument("--batch_size", type=int, default=8, help="sequences per step")
    parser.add_argument("--seq_length", type=int, default=128, help="tokens per sequence")
    parser.add_argument("--steps", type=int, default=3, help="profiled steps (after 2 warm-up steps)")
    parser.add_argument("--optimizer", default="lamb", choices=("lamb", "adamw"),
                        help="optimizer of albert_tf's step (KerasHub's step uses keras.optimizers.Lamb)")
    parser.add_argument("--jit_compile", action="store_true", help="XLA for the forward and backward pass")
    parser.add_argument("--top", type=int, default=15, help="ops listed individually")
    parser.add_argument("--logdir", default="/tmp/albert_profile", help="where the trace goes (TensorBoard)")
    args = parser.parse_args(argv)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    from albert_tf.albert_config import AlbertConfig
    from benchmarks.common import cpu_description
    from benchmarks.speed.train_step import albert_tf_step, keras_hub_step, random_batch, train_flops_per_sequence

    config = AlbertConfig.from_name_or_path(args.preset)
    if args.vocab_size:
        config = AlbertConfig.from_dict({**config.to_dict(), "vocab_size": args.vocab_size})
    batch = random_batch(config, args.batch_size, args.seq_length)
    if args.peer == "albert_tf":
        step = albert_tf_step(config, batch, args.precision, args.jit_compile, optimizer=args.optimizer)
    else:
        step = keras_hub_step(config, batch, args.precision, args.jit_compile)

    def run_steps():
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        return (time.perf_counter() - start) / args.steps

    step()
    step()
    unprofiled = run_steps()

    logdir = os.path.join(args.logdir, time.strftime("%Y%m%d-%H%M%S"))
    tf.profiler.experimental.start(logdir)
    profiled = run_steps()
    tf.profiler.experimental.stop()
    paths = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
    if not paths:
        sys.exit(f"the profiler wrote no trace under {logdir}")
    times = op_times(paths[0])
    total = sum(times.values())

    by_category = collections.Counter()
    for (scope, op_type), seconds in times.items():
        by_category[category(scope, op_type)] += seconds
    flops = train_flops_per_sequence(config, args.seq_length) * args.batch_size
    optimizer = args.optimizer if args.peer == "albert_tf" else "keras.optimizers.Lamb"
    print(f"\n{args.peer} {args.precision}, {args.preset} (vocab {config.vocab_size}), batch {args.batch_size}, "
          f"seq {args.seq_length}, {optimizer}, XLA {'on' if args.jit_compile else 'off'}, {cpu_description()}: "
          f"{unprofiled * 1e3:.0f} ms per step unprofiled ({flops / unprofiled / 1e9:.0f} GFLOP/s of model FLOPs), "
          f"{profiled * 1e3:.0f} ms profiled; summed op time {total / args.steps * 1e3:.0f} ms per step.\n")
    print("| kind of work | ms per step | share of op time |\n|---|---|---|")
    for name, seconds in by_category.most_common():
        print(f"| {name} | {seconds / args.steps * 1e3:.1f} | {100 * seconds / total:.1f}% |")
    print(f"\nTop {args.top} ops:\n\n| op | type | ms per step | share |\n|---|---|---|---|")
    for (scope, op_type), seconds in times.most_common(args.top):
        short = scope.split("StatefulPartitionedCall/")[-1].split("while/cond_1/")[-1]
        print(f"| {short[-90:]} | {op_type} | {seconds / args.steps * 1e3:.1f} | {100 * seconds / total:.1f}% |")
    print(f"\nTrace: {logdir} (tensorboard --logdir {args.logdir}, Profile tab)")


if __name__ == "__main__":
    main()
