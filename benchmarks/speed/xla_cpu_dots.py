r"""What XLA:CPU does with a transformer layer's matmul, under each candidate XLA_FLAGS setting.

  python -m benchmarks.speed.xla_cpu_dots [--flags="--xla_cpu_use_onednn=true ..."] [--repeats=20]

On a CPU with AMX, albert_tf's and KerasHub's bf16 steps were slower with XLA than
without (benchmarks/README.md, "Training-step throughput on a CPU with AMX"): the
graph executor hands bf16 matmuls to oneDNN (its bf16 step was 1.8x its fp32 step
there), while XLA:CPU's default configuration, on the AVX2 development machine at
least, runs them as fp32 matmuls. This script says, for each setting of XLA_FLAGS,
in a fresh process each (XLA reads the variable once, at start-up):

  library fusion  which library, if any, XLA:CPU gave the matmul to (its optimized
                  HLO names the fusion kind: __onednn_fusion, __xnn_fusion,
                  __ynn_fusion), or "none" (XLA's own dot emitter);
  dot operands    the element type the matmul actually runs in: "bf16" where the
                  bfloat16 inputs reach the dot as they are, "f32 (upcast)" where
                  XLA converted them to float32 first, so a bf16 step pays the
                  conversions and gets an fp32 matmul;
  GFLOP/s         of the whole computation, best of --repeats calls, beside the
                  same computation without XLA (TensorFlow's graph executor,
                  which uses oneDNN where TensorFlow enables it).

The computation is ALBERT-base's FFN input projection at batch 8 x seq 128:
GELU([1024, 768] @ [768, 3072] + bias), fp32 and bf16. The script asserts nothing;
it is for choosing the flags to try on a machine before timing the full step with
`XLA_FLAGS=... python -m benchmarks.speed.train_step`.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time


from benchmarks.common import RESULTS, child_env, cpu_description, markdown_table, module_command, write_results

# The settings tried by default: XLA's own emitter, then each library XLA:CPU can hand dots to
# (TensorFlow 2.21 accepts all of these; whether a library takes a given dot depends on the CPU).
CANDIDATE_FLAGS = [
    "",
    "--xla_cpu_use_onednn=true",
    "--xla_cpu_use_onednn=true --xla_cpu_experimental_onednn_fusion_type=dot",
    "--xla_cpu_use_onednn=true --xla_cpu_experimental_onednn_fusion_type=dot,eltwise",
    "--xla_cpu_use_xnnpack=true --xla_cpu_experimental_xnn_fusion_type=dot",
    "--xla_cpu_experimental_ynn_fusion_type=dot",
]
M, K, N = 1024, 768, 3072
PRECISIONS = ("fp32", "bf16")


def dot_operand_types(hlo_text):
    """Element types of every dot's two operands in an optimized HLO module's text."""
    types = dict(re.findall(r"%([\w.\-]+) = (\w+)\[", hlo_text))
    return [(types.get(lhs), types.get(rhs)) for lhs, rhs in re.findall(r"\bdot\(%([\w.\-]+), %([\w.\-]+)\)",
                                                                        hlo_text)]


def library_fusions(hlo_text):
    """The library fusion kinds (e.g. __onednn_fusion) an optimized HLO module uses, sorted."""
    return sorted(set(re.findall(r'"kind":"(__\w+_fusion)"', hlo_text)))


def best_seconds(function, args, repeats):
    for _ in range(2):  # compile, then one more call outside the timing
        function(*args).numpy()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function(*args).numpy()
        best = min(best, time.perf_counter() - start)
    return best


def worker(repeats):
    """Times the layer with and without XLA in this process (XLA_FLAGS as inherited); prints one RESULT line."""
    import tensorflow as tf

    def layer(x, w, b):
        return tf.nn.gelu(tf.matmul(x, w) + b, approximate=True)

    results = {}
    for precision in PRECISIONS:
        dtype = tf.bfloat16 if precision == "bf16" else tf.float32
        args = [tf.cast(tf.random.stateless_normal(shape, seed=[i, 7]), dtype)
                for i, shape in enumerate([(M, K), (K, N), (N,)])]
        xla_seconds = best_seconds(tf.function(layer, jit_compile=True), args, repeats)
        graph_seconds = best_seconds(tf.function(layer), args, repeats)
        results[precision] = {"xla_flops_per_second": 2 * M * K * N / xla_seconds,
                              "graph_flops_per_second": 2 * M * K * N / graph_seconds}
    print("RESULT " + json.dumps(results), flush=True)


def analyse_dump(dump_dir):
    """{precision: (library fusions, dot operand types)} from the optimized modules XLA dumped."""
    found = {}
    for path in glob.glob(os.path.join(dump_dir, "*cpu_after_optimizations.txt")):
        with open(path) as f:
            text = f.read()
        layout = re.search(r"entry_computation_layout=\{\((\w+)\[", text)
        if not layout or layout.group(1) not in ("f32", "bf16"):
            continue
        precision = "bf16" if layout.group(1) == "bf16" else "fp32"
        found[precision] = (library_fusions(text), dot_operand_types(text))
    return found


def describe_operands(precision, operand_types):
    if not operand_types:
        return "no dot left (inside a library call)"
    kinds = sorted({f"{a}x{b}" if a != b else a for a, b in operand_types})
    text = ", ".join(kinds)
    if precision == "bf16" and all(a == b == "f32" for a, b in operand_types):
        text += " (upcast)"
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flags", action="append",
                        help="an XLA_FLAGS setting to try (repeatable; default: a built-in list of candidates, "
                             "starting with none); an XLA_FLAGS already set in the environment is not used")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per measurement (the best counts)")
    parser.add_argument("--results_dir", default=RESULTS,
                        help="writes RESULTS_NAME.md (the table) here")
    parser.add_argument("--results_name", default="xla_cpu_dots", help="file name of the table, without .md")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if args.worker:
        return worker(args.repeats)

    rows = []
    for flags in args.flags or CANDIDATE_FLAGS:
        with tempfile.TemporaryDirectory() as dump_dir:
            env = child_env(TF_CPP_MIN_LOG_LEVEL="3",
                            XLA_FLAGS=f"{flags} --xla_dump_to={dump_dir} --xla_dump_hlo_as_text".strip())
            result = subprocess.run([*module_command(__spec__.name), "--worker", f"--repeats={args.repeats}"],
                                    capture_output=True, text=True, env=env)
            line = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
            if result.returncode or not line:
                print(f"XLA_FLAGS={flags!r}: failed\n{result.stderr[-2000:]}", file=sys.stderr)
                rows.append([f"`{flags}`" if flags else "(none)", "", "failed (stderr printed)", "", "", ""])
                continue
            speeds = json.loads(line[0][7:])
            dumped = analyse_dump(dump_dir)
        for precision in PRECISIONS:
            fusions, operands = dumped.get(precision, ([], []))
            speed = speeds[precision]
            rows.append([f"`{flags}`" if flags else "(none)", precision, ", ".join(fusions) or "none",
                         describe_operands(precision, operands), f"{speed['xla_flops_per_second'] / 1e9:.0f}",
                         f"{speed['graph_flops_per_second'] / 1e9:.0f}"])
            print(" | ".join(rows[-1]), flush=True)
    text = (f"GELU([{M}, {K}] @ [{K}, {N}] + bias) (ALBERT-base's FFN input projection at batch 8 x seq 128); "
            f"{cpu_description()}; best of {args.repeats} calls; TF_ENABLE_ONEDNN_OPTS="
            f"{os.environ.get('TF_ENABLE_ONEDNN_OPTS', '(unset)')}\n\n"
            + markdown_table(["XLA_FLAGS", "precision", "library fusion", "dot operands", "XLA GFLOP/s",
                              "no XLA GFLOP/s"], rows) + "\n")
    write_results(args.results_dir, args.results_name, text)


if __name__ == "__main__":
    main()
