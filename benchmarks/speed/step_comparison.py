"""What the step benchmarks share (train_step: pretraining, finetune_step: fine-tuning): the timing, the
matmul peak, the command line, and the driver that runs each configuration in its own fresh process over
interleaved rounds and writes the table of medians with ratios and model-FLOPs utilization.

A benchmark module supplies its configurations (peer, precision, XLA on/off), its FLOPs per sequence and
a `worker(args)` that measures one configuration and prints `RESULT {"sequences_per_second": ...}`.
"""

import json
import os
import statistics
import subprocess
import sys
import time

from benchmarks.common import RESULTS, child_env, cpu_description, module_command, write_results


def time_steps(step, steps, warmup):
    """Seconds for `steps` calls of `step` after `warmup` untimed ones."""
    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - start


def matmul_peak(precision, sizes=(1024, 2048, 3072), repeats=5):
    """FLOP/s of the fastest TensorFlow matmul among `sizes` (square, on all cores)."""
    import tensorflow as tf

    dtype = tf.bfloat16 if precision == "bf16" else tf.float32
    best = 0.0
    for n in sizes:
        a = tf.cast(tf.random.stateless_normal([n, n], seed=[1, 2]), dtype)
        b = tf.cast(tf.random.stateless_normal([n, n], seed=[3, 4]), dtype)
        matmul = tf.function(lambda x, y: tf.reduce_sum(tf.cast(tf.matmul(x, y)[:1, :1], tf.float32)))
        matmul(a, b).numpy()
        for _ in range(repeats):
            start = time.perf_counter()
            matmul(a, b).numpy()
            best = max(best, 2 * n ** 3 / (time.perf_counter() - start))
    return best


def add_arguments(parser, results_name):
    """The command line every step benchmark takes."""
    import argparse

    parser.add_argument("--preset", default="albert_base_v2", help="preset name or albert_config JSON")
    parser.add_argument("--batch_size", type=int, default=8, help="sequences per step")
    parser.add_argument("--seq_length", type=int, default=128, help="tokens per sequence")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per measurement (after 2 warm-up steps)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="interleaved rounds over all configurations; the table gives medians")
    parser.add_argument("--only", default="", help="comma-separated peers to run (default: all)")
    parser.add_argument("--skip", default="", help="comma-separated configurations to leave out, as "
                        "peer:precision:xla|noxla (e.g. huggingface:bf16:noxla)")
    parser.add_argument("--timeout_s", type=int, default=900,
                        help="a configuration taking longer (build + warm-up + timed steps) is reported as such")
    parser.add_argument("--json", help="where the per-round figures go (default: RESULTS_DIR/RESULTS_NAME.json, beside "
                        "the table, so a rerun never leaves the figures of an earlier run there)")
    parser.add_argument("--results_dir", default=RESULTS, help=f"writes {results_name}.md (the table) here")
    parser.add_argument("--results_name", default=results_name,
                        help=f"the table goes to RESULTS_DIR/RESULTS_NAME.md ({results_name}_amx for a CPU with AMX)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)


def spec_of(peer, precision, xla):
    return f"{peer}:{precision}:{'xla' if xla else 'noxla'}"


def compare(args, module_name, configs, flops, describe, parser):
    """Runs every configuration of `configs` (filtered by --only and --skip) in fresh processes of
    `module_name` over --rounds interleaved rounds, with the matmul peak measured in between, and writes
    the table. `flops`: training FLOPs per sequence; `describe`: what the table's first line says of the
    workload before the machine."""
    skipped = set(filter(None, args.skip.split(",")))
    unknown = skipped - {spec_of(*c) for c in configs}
    if unknown:
        parser.error(f"--skip: unknown configuration(s) {', '.join(sorted(unknown))}")
    configs = [c for c in configs if (not args.only or c[0] in args.only.split(",")) and spec_of(*c) not in skipped]
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3")
    rates = {c: [] for c in configs}
    timed_out, failed = set(), set()
    peaks = {precision: [] for precision in sorted({c[1] for c in configs})}

    def measure_peaks(round_index):
        for precision, values in peaks.items():
            result = subprocess.run([*module_command(module_name), f"--worker=peak:{precision}:noxla"],
                                    capture_output=True, text=True, env=env)
            line = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
            if result.returncode or not line:
                print(f"matmul peak {precision}: failed\n{result.stderr[-2000:]}", file=sys.stderr)
                continue
            values.append(json.loads(line[0][7:])["flops_per_second"])
            print(f"round {round_index + 1}: matmul peak {precision}: {values[-1] / 1e9:.0f} GFLOP/s", flush=True)

    for round_index in range(args.rounds):
        measure_peaks(round_index)
        for peer, precision, xla in configs:
            spec = spec_of(peer, precision, xla)
            if (peer, precision, xla) in timed_out:
                continue
            try:
                result = subprocess.run([*module_command(module_name), f"--worker={spec}", f"--preset={args.preset}",
                                         f"--batch_size={args.batch_size}", f"--seq_length={args.seq_length}",
                                         f"--steps={args.steps}"], capture_output=True, text=True, env=env,
                                        timeout=args.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out.add((peer, precision, xla))  # not retried in later rounds
                print(f"round {round_index + 1}: {spec}: did not finish in {args.timeout_s} s", flush=True)
                continue
            line = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
            if result.returncode or not line:
                print(f"{spec}: failed\n{result.stderr[-2000:]}", file=sys.stderr)
                failed.add(spec)
                continue
            rates[(peer, precision, xla)].append(json.loads(line[0][7:])["sequences_per_second"])
            print(f"round {round_index + 1}: {spec}: {rates[(peer, precision, xla)][-1]:.2f} seq/s", flush=True)

    baseline = statistics.median(rates[("albert_tf", "fp32", False)]) if rates.get(("albert_tf", "fp32", False)) else None
    rows, records = [], []
    for (peer, precision, xla), values in rates.items():
        if (peer, precision, xla) in timed_out and not values:
            rows.append(f"| {peer} | {precision} | {'on' if xla else 'off'} | did not finish in {args.timeout_s} s "
                        f"({2 + args.steps} steps) | | |")
            records.append({"peer": peer, "precision": precision, "xla": xla, "timed_out_s": args.timeout_s})
            continue
        if not values:
            continue
        median = statistics.median(values)
        ratio = f"{median / baseline:.2f}" if baseline else "n/a"
        # The best matmul of any precision: on a CPU without native bf16, TensorFlow's bf16 matmul is
        # slower than its fp32 one, and a bf16 step is held to what the machine can do, not to that.
        peak = max([max(values) for values in peaks.values() if values] or [0.0])
        mfu = f"{100 * median * flops / peak:.0f}%" if peak else "n/a"
        rows.append(f"| {peer} | {precision} | {'on' if xla else 'off'} | {median:.2f} | {ratio} | "
                    f"{median * flops / 1e9:.0f} | {mfu} |")
        records.append({"peer": peer, "precision": precision, "xla": xla, "sequences_per_second": values,
                        "mfu": median * flops / peak if peak else None})
    left_out = f"; left out (--skip): {', '.join(sorted(skipped))}" if skipped else ""
    # A configuration whose worker failed in some round is named, so a missing or thinner row is never read as
    # left out by choice.
    left_out += f"; failed (its error went to stderr): {', '.join(sorted(failed))}" if failed else ""
    # XLA:CPU's flags (oneDNN or XNNPACK dots, say) change what the XLA rows measure.
    xla_flags = f"; XLA_FLAGS={os.environ['XLA_FLAGS']}" if os.environ.get("XLA_FLAGS") else ""
    peak_text = ", ".join(f"{precision} {max(values) / 1e9:.0f}" for precision, values in peaks.items() if values)
    text = (f"{describe}, {cpu_description()}; median of {args.rounds} rounds x {args.steps} steps; "
            f"{flops / 1e9:.1f} GFLOP per training sequence; matmul peak measured in this run (GFLOP/s, best of "
            f"{args.rounds} rounds): {peak_text or 'n/a'}{left_out}{xla_flags}\n\n"
            "| implementation | precision | XLA | sequences/s | vs albert_tf fp32 | achieved GFLOP/s | MFU |\n"
            "|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    write_results(args.results_dir, args.results_name, text,
                  {"args": vars(args), "flops_per_sequence": flops, "matmul_peak_flops_per_second": peaks,
                   "results": records}, json_path=args.json)


def print_result(sequences_per_second):
    print("RESULT " + json.dumps({"sequences_per_second": sequences_per_second}))


def print_peak(precision):
    print("RESULT " + json.dumps({"flops_per_second": matmul_peak(precision)}))
