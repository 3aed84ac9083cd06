r"""The matrix products of one request, alone: each CPU runtime's kernels on albert_base's four projections.

  python -m benchmarks.speed.cpu_projections [--rows=12,40,128] [--threads=1,2] [--calls=40]
  python -m benchmarks.speed.cpu_projections --rows=12 --threads=1 --calls=4 --results_dir=/tmp/cpu_projections_check

What it isolates: at batch 1 an albert_base request is mostly the shared block's four weight products, applied
twelve times (once per layer) to the request's tokens: query/key/value joined [768, 2304], attention output
[768, 768], feed-forward in [768, 3072] and out [3072, 768], each with its bias. This script runs exactly that,
with no attention, LayerNorm or GELU between them: per layer, h -> h Wqkv + b -> (its first 768 columns) Wo + b
-> W1 + b -> W2 + b, the result the next layer's h, twelve layers over the same weights, on --rows rows (a text
of that many tokens). Weights are random with variance 1/fan-in, so the values neither vanish (denormals would
slow every kernel) nor grow. The same computation, in one process, by

  TensorFlow (oneDNN)          a tf.function of tf.matmul + tf.nn.bias_add over tf.Variables, as albert_tf's
                               SavedModel holds its weights
  TensorFlow, XLA              the same function with jit_compile=True (the --serving_xla export's path)
  ..., bfloat16                the same two with the weights stored in bfloat16 and the products computed in
                               bfloat16 (the request cast on the way in, the result on the way out), as
                               `albert_tf.export --serving_precision=bfloat16` computes them; compared with ONNX
                               Runtime fp32, the precision it replaces
  LiteRT float32 (XNNPack)     the function converted by TFLiteConverter (static shape), run by
                               ai-edge-litert's interpreter (FULLY_CONNECTED, XNNPack)
  ONNX Runtime (MLAS)          the same graph written as ONNX (MatMul, Add, Slice; opset 17), an
                               onnxruntime CPU session at its default level (ORT_ENABLE_ALL)
  LiteRT dynamic_int8          the converter with Optimize.DEFAULT: int8 weights, activations quantized at
                               run time (albert_tf's default LiteRT export)
  ONNX Runtime quantize_dynamic   onnxruntime.quantization.quantize_dynamic (QInt8 weights) of that graph

each at --threads threads (TensorFlow's intra- and inter-op pools, the interpreters' num_threads, ONNX Runtime's
intra_op_num_threads with inter-op 1). After --warmup untimed calls, the implementations' calls are
interleaved in two rounds; the median is reported. Every output is checked against numpy float64 before the
timing (relative error; int8 and bf16 rows carry theirs). Ratios: ONNX Runtime's median at the same precision
(bf16: fp32) over each implementation's (> 1: faster than ONNX Runtime). Writes
RESULTS_DIR/cpu_projections.{md,json}. Needs benchmarks/requirements.txt (onnx, onnxruntime) and ai-edge-litert.
"""

import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np

from benchmarks.common import (RESULTS, child_env, cpu_description, installed_versions, markdown_table,
                               module_command, write_results)
from benchmarks.speed.cpu_serving import int8_cpu_flags

HIDDEN, INTERMEDIATE, LAYERS = 768, 3072, 12  # albert_base
# (name, rows in, columns out) of the four products of a layer, in the order they are chained.
PROJECTIONS = (("qkv", HIDDEN, 3 * HIDDEN), ("attention_output", HIDDEN, HIDDEN),
               ("intermediate", HIDDEN, INTERMEDIATE), ("output", INTERMEDIATE, HIDDEN))
INT8_IMPLEMENTATIONS = ("LiteRT dynamic_int8 (XNNPack)", "ONNX Runtime quantize_dynamic")
BF16_IMPLEMENTATIONS = ("TensorFlow (oneDNN), bfloat16", "TensorFlow, XLA, bfloat16")
ONNX_FLOAT, ONNX_INT8 = "ONNX Runtime (MLAS)", "ONNX Runtime quantize_dynamic"
FLOPS_PER_ROW = 2 * LAYERS * sum(rows * columns for _, rows, columns in PROJECTIONS)


def random_weights(seed=0):
    """{name: (kernel [in, out], bias [out])} float32, kernels of variance 1/in."""
    rng = np.random.default_rng(seed)
    return {name: ((rng.standard_normal((rows, columns)) / np.sqrt(rows)).astype(np.float32),
                   (0.1 * rng.standard_normal(columns)).astype(np.float32))
            for name, rows, columns in PROJECTIONS}


def reference(weights, h):
    """The chain in numpy float64."""
    h = h.astype(np.float64)
    for _ in range(LAYERS):
        for name, _, _ in PROJECTIONS:
            kernel, bias = weights[name]
            h = (h[:, :HIDDEN] if name == "attention_output" else h) @ kernel.astype(np.float64) + bias
    return h


def tensorflow_function(weights, rows, jit_compile, dtype="float32"):
    """(the tf.function of float32 [rows, 768] -> float32, a numpy caller) with the weights held as `dtype`
    variables and the products computed in it."""
    import tensorflow as tf

    variables = {name: (tf.Variable(tf.cast(kernel, dtype)), tf.Variable(tf.cast(bias, dtype)))
                 for name, (kernel, bias) in weights.items()}

    def chain(h):
        h = tf.cast(h, dtype)
        for _ in range(LAYERS):
            for name, _, _ in PROJECTIONS:
                kernel, bias = variables[name]
                h = tf.nn.bias_add(tf.matmul(h[:, :HIDDEN] if name == "attention_output" else h, kernel), bias)
        return tf.cast(h, tf.float32)

    function = tf.function(chain, input_signature=[tf.TensorSpec([rows, HIDDEN], tf.float32)],
                           jit_compile=jit_compile)
    return function, lambda h: function(h).numpy()


def litert_model(weights, rows, quantized, threads):
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    function, _ = tensorflow_function(weights, rows, jit_compile=False)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function.get_concrete_function()])
    if quantized:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    interpreter = Interpreter(model_content=converter.convert(), num_threads=threads)
    interpreter.allocate_tensors()
    source, result = interpreter.get_input_details()[0]["index"], interpreter.get_output_details()[0]["index"]

    def run(h):
        interpreter.set_tensor(source, h)
        interpreter.invoke()
        return interpreter.get_tensor(result)

    return run


def onnx_file(weights, rows, directory):
    """The chain as an ONNX graph (fp32), written to DIRECTORY/chain.onnx."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    initializers = [numpy_helper.from_array(array, f"{name}_{part}") for name, (kernel, bias) in weights.items()
                    for part, array in (("kernel", kernel), ("bias", bias))]
    initializers += [numpy_helper.from_array(np.array(values, np.int64), name)
                     for name, values in (("starts", [0]), ("ends", [HIDDEN]), ("axes", [1]))]
    nodes, h = [], "h"
    for layer in range(LAYERS):
        for name, _, _ in PROJECTIONS:
            step = f"{layer}_{name}"
            if name == "attention_output":
                nodes.append(helper.make_node("Slice", [h, "starts", "ends", "axes"], [f"{step}_in"]))
                h = f"{step}_in"
            nodes += [helper.make_node("MatMul", [h, f"{name}_kernel"], [f"{step}_product"]),
                      helper.make_node("Add", [f"{step}_product", f"{name}_bias"], [f"{step}_out"])]
            h = f"{step}_out"
    graph = helper.make_graph(nodes, "projections", [helper.make_tensor_value_info("h", TensorProto.FLOAT,
                                                                                   [rows, HIDDEN])],
                              [helper.make_tensor_value_info(h, TensorProto.FLOAT, [rows, HIDDEN])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(directory, "chain.onnx")
    onnx.save(model, path)
    return path


def onnx_session(path, threads):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    output = session.get_outputs()[0].name
    return lambda h: session.run([output], {"h": h})[0]


def implementations(weights, rows, threads, directory):
    """{name: h -> the chain's output (numpy)}."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    float_onnx = onnx_file(weights, rows, directory)
    int8_onnx = os.path.join(directory, "chain_int8.onnx")
    quantize_dynamic(float_onnx, int8_onnx, weight_type=QuantType.QInt8)
    return {"TensorFlow (oneDNN)": tensorflow_function(weights, rows, jit_compile=False)[1],
            "TensorFlow, XLA": tensorflow_function(weights, rows, jit_compile=True)[1],
            BF16_IMPLEMENTATIONS[0]: tensorflow_function(weights, rows, jit_compile=False, dtype="bfloat16")[1],
            BF16_IMPLEMENTATIONS[1]: tensorflow_function(weights, rows, jit_compile=True, dtype="bfloat16")[1],
            "LiteRT float32 (XNNPack)": litert_model(weights, rows, quantized=False, threads=threads),
            ONNX_FLOAT: onnx_session(float_onnx, threads),
            "LiteRT dynamic_int8 (XNNPack)": litert_model(weights, rows, quantized=True, threads=threads),
            ONNX_INT8: onnx_session(int8_onnx, threads)}


def time_interleaved(functions, h, calls, warmup):
    """{name: [seconds]}: `calls` calls each in two interleaved rounds, after `warmup` untimed ones."""
    for function in functions.values():
        for _ in range(warmup):
            function(h)
    seconds = {name: [] for name in functions}
    for round_calls in (calls // 2, calls - calls // 2):
        for name, function in functions.items():
            for _ in range(round_calls):
                start = time.perf_counter()
                function(h)
                seconds[name].append(time.perf_counter() - start)
    return seconds


def worker(args):
    """Times every implementation at --worker_threads (one count); prints RESULT {"records", "tensorflow"}."""
    import tensorflow as tf

    threads = args.worker_threads
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    weights = random_weights()
    records = []
    for rows in args.row_counts:
        h = np.random.default_rng(rows).standard_normal((rows, HIDDEN)).astype(np.float32)
        expected = reference(weights, h)
        with tempfile.TemporaryDirectory(prefix="albert_cpu_projections-") as directory:
            functions = implementations(weights, rows, threads, directory)
            errors = {name: float(np.abs(function(h) - expected).max() / np.abs(expected).max())
                      for name, function in functions.items()}
            seconds = time_interleaved(functions, h, args.calls, args.warmup)
        medians = {name: float(np.median(values)) for name, values in seconds.items()}
        for name, median in medians.items():
            peer = ONNX_INT8 if name in INT8_IMPLEMENTATIONS else ONNX_FLOAT
            # bfloat16 is compared with ONNX Runtime fp32: the precision it replaces on a CPU that computes it.
            records.append({"rows": rows, "threads": threads, "implementation": name,
                            "precision": ("int8" if name in INT8_IMPLEMENTATIONS else
                                          "bf16" if name in BF16_IMPLEMENTATIONS else "fp32"),
                            "median_ms": median * 1e3, "gflops": FLOPS_PER_ROW * rows / median / 1e9,
                            "vs_onnxruntime": medians[peer] / median, "relative_error": errors[name],
                            "calls": len(seconds[name])})
        print(f"{threads} thread(s): {rows} rows done", flush=True)
    print("RESULT " + json.dumps({"records": records, "tensorflow": tf.__version__}))


def measure(args, threads):
    """The worker's records for one thread count, run in a fresh process (TensorFlow's pools are set once)."""
    command = [*module_command("benchmarks.speed.cpu_projections"), f"--worker_threads={threads}",
               f"--rows={args.rows}", f"--calls={args.calls}", f"--warmup={args.warmup}"]
    completed = subprocess.run(command, capture_output=True, text=True, env=child_env(TF_CPP_MIN_LOG_LEVEL="3"))
    results = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    if completed.returncode or not results:
        raise RuntimeError(f"{' '.join(command)} failed ({completed.returncode}):\n{completed.stderr[-3000:]}")
    print("\n".join(line for line in completed.stdout.splitlines() if not line.startswith("RESULT ")), flush=True)
    return json.loads(results[-1][len("RESULT "):])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="12,40,128", help="comma-separated token counts (default 12,40,128: "
                        "cpu_serving's short, medium and long texts)")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts of every runtime, each "
                        "measured in a fresh process (default 1,2)")
    parser.add_argument("--calls", type=int, default=40, help="timed calls per implementation, row count and "
                        "thread count (default 40)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls first (default 5)")
    parser.add_argument("--results_dir", default=RESULTS, help="where RESULTS_NAME.{md,json} go")
    parser.add_argument("--results_name", default="cpu_projections",
                        help="the results files' name (default cpu_projections; cpu_projections_amx on a CPU with AMX)")
    parser.add_argument("--worker_threads", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        args.row_counts = [int(value) for value in args.rows.split(",") if value]
        thread_counts = [int(value) for value in args.threads.split(",") if value]
    except ValueError:
        parser.error("--rows and --threads take comma-separated integers")
    if (not args.row_counts or min(args.row_counts) < 1 or not thread_counts or min(thread_counts) < 1
            or args.calls < 2):
        parser.error("--rows and --threads need positive counts, --calls at least 2")
    if args.worker_threads:
        return worker(args)

    measured = [measure(args, threads) for threads in thread_counts]
    records = [record for result in measured for record in result["records"]]
    table = markdown_table(
        ["threads", "rows (tokens)", "implementation", "precision", "ms for the 48 products", "GFLOP/s",
         "ONNX Runtime / it (same precision; bf16: ONNX Runtime fp32)", "max error / max |output|"],
        [[r["threads"], r["rows"], r["implementation"], r["precision"], f"{r['median_ms']:.2f}",
          f"{r['gflops']:.0f}", f"{r['vs_onnxruntime']:.2f}x", f"{r['relative_error']:.1e}"] for r in records])
    title = (f"albert_base's four projections with their biases, twelve layers over shared weights "
             f"({FLOPS_PER_ROW / 1e6:.0f} MFLOP per row), median of {args.calls} calls, interleaved; "
             f"{cpu_description()}; int8 flags: {int8_cpu_flags()}; tensorflow {measured[0]['tensorflow']}, "
             + ", ".join(f"{package} {found or 'not installed'}"
                         for package, found in installed_versions("onnxruntime", "ai-edge-litert").items()) + ".")
    write_results(args.results_dir, args.results_name, f"{title}\n\n{table}\n",
                  record={"args": {key: value for key, value in vars(args).items() if key != "worker_threads"},
                          "cpu": cpu_description(), "int8_cpu_flags": int8_cpu_flags(), "records": records})


if __name__ == "__main__":
    main()
