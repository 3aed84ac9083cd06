r"""Small models: how much of run_pretraining's step time is spent outside the model.

  python -m benchmarks.speed.step_overhead [--presets=albert_tiny,albert_small] [--seq_length=64] \
      [--batch_size=64] [--jit_compile] [--rounds=2]

For each preset, two measurements of the same training step (same config, batch,
optimizer, XLA setting), each in a fresh process, interleaved over --rounds:

  model only   Trainer.train_loop over one batch held in memory, 100
               steps per call: forward, backward and the optimizer update, nothing else.
  end to end   `python -m albert_tf.run_pretraining` on TFRecords made from the
               built-in corpus (3 MB, seq 64, dupe factor 2), iterations_per_loop 100: the
               input pipeline (read, parse, shuffle, batch), the host loop, the
               progress line, TensorBoard summaries. Timed from the first progress
               line to the last, so compilation and the final checkpoint are left out.

The share outside the model is 1 - (model-only step time / end-to-end step time).
Data, vocabulary and configs are made once under --work_dir.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


from benchmarks.common import REPO, RESULTS, child_env, module_command, write_results

VOCAB_SIZE = 8000
PREDICTIONS = 10
LOOP = 100


def prepare(work, seq_length):
    """Built-in corpus -> vocabulary -> TFRecords; returns (data prefix, spm model)."""
    from albert_tf.data.builtin_corpus import write_corpus

    os.makedirs(work, exist_ok=True)
    corpus, spm, data = (os.path.join(work, name) for name in ("corpus.txt", "spm", f"train{seq_length}"))
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3")
    if not os.path.exists(corpus):
        write_corpus(corpus, max_bytes=3_000_000)
    if not os.path.exists(spm + ".model"):
        subprocess.run([sys.executable, "-m", "albert_tf.train_sentencepiece", f"--input={corpus}",
                        "--input_format=paragraphs", f"--vocab_size={VOCAB_SIZE}", "--nohard_vocab_limit",
                        f"--output_prefix={spm}"],
                       env=env, check=True)
    if not os.path.exists(data + ".metadata.json"):
        subprocess.run([sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={corpus}",
                        "--input_format=paragraphs", f"--output_file={data}", f"--spm_model_file={spm}.model",
                        "--dupe_factor=2", "--num_output_shards=4", f"--max_seq_length={seq_length}",
                        f"--max_predictions_per_seq={PREDICTIONS}"], env=env, check=True)
    return data, spm + ".model"


def config_file(work, preset, spm):
    """The preset with the vocabulary's size (up to VOCAB_SIZE: the corpus may hold fewer pieces)."""
    path = os.path.join(work, f"{preset}.json")
    if not os.path.exists(path):
        import sentencepiece

        with open(os.path.join(REPO, "configs", f"{preset}.json")) as f:
            config = json.load(f)
        config["vocab_size"] = sentencepiece.SentencePieceProcessor(model_file=spm).get_piece_size()
        with open(path, "w") as f:
            json.dump(config, f, indent=2)
    return path


def model_only(args):
    """Seconds per step of the trainer's loop on one in-memory batch."""
    import tensorflow as tf

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.optimization import create_optimizer
    from albert_tf.tasks.pretraining_losses import PretrainingObjective
    from albert_tf.text.special_ids import ALBERT_SPECIAL_IDS
    from albert_tf.training.trainer import Trainer
    from benchmarks.speed.train_step import random_batch

    config = AlbertConfig.from_json_file(args.config)
    b, s = args.batch_size, args.seq_length
    batch = random_batch(config, b, s, predictions=PREDICTIONS)
    strategy = tf.distribute.get_strategy()
    model = AlbertPretrainer(config, seq_length=s, max_predictions_per_seq=PREDICTIONS)
    optimizer = create_optimizer(5e-4, 100000, 1000, optimizer="adamw", gradients_are_aggregated=True)
    trainer = Trainer(strategy, model, optimizer, PretrainingObjective(mask_id=ALBERT_SPECIAL_IDS.mask), b, jit_compile=args.jit_compile)
    iterator = iter(tf.data.Dataset.from_tensors({k: tf.constant(v) for k, v in batch.items()}).repeat())
    loop = tf.constant(LOOP)
    trainer.train_loop(iterator, loop)[0]["sequences"].numpy()  # compile and warm up
    start = time.perf_counter()
    for _ in range(args.loops):
        trainer.train_loop(iterator, loop)[0]["sequences"].numpy()
    return (time.perf_counter() - start) / (args.loops * LOOP)


def end_to_end(args, output_dir):
    """Seconds per step of run_pretraining between its first and last progress line."""
    steps = LOOP * (args.loops + 1)
    command = [sys.executable, "-m", "albert_tf.run_pretraining", f"--input_file={args.data}",
               f"--albert_config={args.config}", f"--output_dir={output_dir}", f"--spm_model_file={args.spm}",
               f"--max_seq_length={args.seq_length}", f"--max_predictions_per_seq={PREDICTIONS}",
               f"--train_batch_size={args.batch_size}", "--optimizer=adamw", "--learning_rate=5e-4",
               "--num_warmup_steps=100", f"--num_train_steps={steps}", f"--iterations_per_loop={LOOP}",
               "--max_seconds_per_loop=0",  # one progress line per LOOP steps: the timing below counts on it
               f"--save_checkpoints_steps={steps}", *(["--jit_compile"] if args.jit_compile else [])]
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    times = []
    output = []
    for line in child.stdout:
        output.append(line)
        if line.startswith("step "):
            times.append(time.perf_counter())
    if child.wait() != 0 or len(times) < 2:
        raise RuntimeError("run_pretraining failed:\n" + "".join(output[-30:]))
    return (times[-1] - times[0]) / (LOOP * (len(times) - 1))


def worker(args):
    if args.worker == "model":
        seconds = model_only(args)
    else:
        import tempfile

        with tempfile.TemporaryDirectory() as output_dir:
            seconds = end_to_end(args, output_dir)
    print("RESULT " + json.dumps({"seconds_per_step": seconds}), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", default="albert_tiny,albert_small", help="comma-separated presets in configs/")
    parser.add_argument("--seq_length", type=int, default=64, help="tokens per sequence")
    parser.add_argument("--batch_size", type=int, default=64, help="sequences per step")
    parser.add_argument("--jit_compile", action="store_true", help="XLA for the forward and backward pass")
    parser.add_argument("--loops", type=int, default=5, help=f"timed loops of {LOOP} steps per measurement")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds; the table gives medians")
    parser.add_argument("--work_dir", default="/tmp/albert_step_overhead", help="corpus, vocabulary and TFRecords")
    parser.add_argument("--results_dir", default=RESULTS,
                        help="writes step_overhead.{md,json} here")
    parser.add_argument("--worker", choices=("model", "end_to_end"), help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--spm", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)

    data, spm = prepare(args.work_dir, args.seq_length)
    presets = [p for p in args.presets.split(",") if p]
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3")
    seconds = {(preset, kind): [] for preset in presets for kind in ("model", "end_to_end")}
    for round_index in range(args.rounds):
        for (preset, kind), values in seconds.items():
            command = [*module_command(__spec__.name), f"--worker={kind}", f"--config={config_file(args.work_dir, preset, spm)}",
                       f"--data={data}", f"--spm={spm}", f"--seq_length={args.seq_length}",
                       f"--batch_size={args.batch_size}", f"--loops={args.loops}",
                       *(["--jit_compile"] if args.jit_compile else [])]
            result = subprocess.run(command, capture_output=True, text=True, env=env)
            line = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
            if result.returncode or not line:
                sys.exit(f"{preset} {kind} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
            values.append(json.loads(line[0][7:])["seconds_per_step"])
            print(f"round {round_index + 1}: {preset} {kind}: {args.batch_size / values[-1]:.1f} seq/s", flush=True)

    rows, records = [], []
    for preset in presets:
        model = statistics.median(seconds[(preset, "model")])
        full = statistics.median(seconds[(preset, "end_to_end")])
        share = 1 - model / full
        rows.append(f"| {preset} | {args.batch_size / model:.1f} | {args.batch_size / full:.1f} | {100 * share:.1f}% |")
        records.append({"preset": preset, "model_only_seconds_per_step": seconds[(preset, "model")],
                        "end_to_end_seconds_per_step": seconds[(preset, "end_to_end")], "share_outside": share})
    text = (f"seq {args.seq_length}, batch {args.batch_size}, AdamW, XLA {'on' if args.jit_compile else 'off'}, "
            f"{os.cpu_count()} CPU cores; median of {args.rounds} rounds x {args.loops * LOOP} steps\n\n"
            "| preset | model only (seq/s) | run_pretraining end to end (seq/s) | step time outside the model |\n"
            "|---|---|---|---|\n" + "\n".join(rows) + "\n")
    write_results(args.results_dir, "step_overhead", text, {"args": vars(args), "results": records})


if __name__ == "__main__":
    main()
