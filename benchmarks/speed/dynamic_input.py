r"""Does making instances while training keep the step fed? The documents format against static instances.

  python -m benchmarks.speed.dynamic_input [--work_dir=/tmp/albert_recipes] [--steps=40]

On the shared corpus (every 10th document held out, the recipes' 8,000-piece
vocabulary; both made by benchmarks/learning/pretraining_recipes.py's `prepare`):
  1. disk: the static recipe's data (seq 64, dupe factor 10) against the same
     text as documents (written once);
  2. the dynamic reader alone: instances/s of run_pretraining's documents
     pipeline, with 1 and 2 input workers, at seq 64 (albert_small's recipe) and
     seq 128 (albert_base);
  3. run_pretraining itself, albert_small (seq 64, batch 64, XLA) and albert_base
     (seq 128, batch 8), on static instances and on documents with 1 and 2 input
     workers: the median sequences/s of its progress lines after the first loop,
     the best of --repeats runs made in alternation.
     Equal rates mean the step does not wait on input (on 2 cores the reader's
     threads and the step share the same cores, so any cost shows).

Writes benchmarks/results/dynamic_input.{json,md}.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time


from benchmarks.common import SHARED_CORPUS, child_env, cpu_description, markdown_table, write_results
from benchmarks.learning.pretraining_recipes import REPO, RESULTS, prepare, tool

# (name, model config file stem, seq, predictions, batch, jit)
MODELS = (("albert_small", "small8k", 64, 10, 64, True), ("albert_base", "base8k", 128, 20, 8, False))


def make_sets(work, text, spm, seq, predictions):
    """{format: prefix} of the static (dupe 10) and documents sets at this length (made once)."""
    sets = {}
    for output_format, dupe in (("instances", 10), ("documents", 1)):
        prefix = os.path.join(work, f"d{seq}", "train10" if output_format == "instances" else "documents")
        if not os.path.exists(prefix + ".metadata.json"):
            tool("albert_tf.create_pretraining_data", f"--input_file={text}", "--input_format=paragraphs",
                 f"--output_file={prefix}", f"--spm_model_file={spm}", f"--dupe_factor={dupe}", "--num_workers=2",
                 "--num_output_shards=8", f"--max_seq_length={seq}", f"--max_predictions_per_seq={predictions}",
                 f"--output_format={output_format}")
        sets[output_format] = prefix
    return sets


def disk_bytes(prefix):
    with open(prefix + ".metadata.json") as f:
        return sum(shard["bytes"] for shard in json.load(f)["shards"])


def reader_rate(prefix, spm, workers, batch, batches=150):
    """Instances/s of the documents pipeline alone (after 10 warm-up batches)."""
    from albert_tf.data.dynamic_instances import EpochInstanceMaker, make_dynamic_dataset
    from albert_tf.data.pretraining_data_job import CreationConfig
    from albert_tf.data.pretraining_dataset import data_set_format, expand_data_files
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    files = expand_data_files(prefix)
    _, metadata = data_set_format(files)
    tokenizer = AlbertTokenizer(spm)
    maker = EpochInstanceMaker(CreationConfig.from_json(metadata["config"]), tokenizer.word_start_table,
                               tokenizer.normal_piece_ids, seed=1)
    iterator = iter(make_dynamic_dataset(files, batch, maker, seed=1, num_workers=workers))
    for _ in range(10):
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    return batches * batch / (time.perf_counter() - start)


def training_rate(work, spm, prefix, model, steps, workers):
    """Median seq/s of run_pretraining's progress lines after the first loop (which compiles)."""
    name, config, seq, predictions, batch, jit = model
    output_dir = os.path.join(work, "dynamic_input_runs", f"{name}-{os.path.basename(prefix)}-{workers}")
    subprocess.run(["rm", "-rf", output_dir], check=True)
    command = [sys.executable, "-m", "albert_tf.run_pretraining", f"--input_file={prefix}",
               f"--albert_config={os.path.join(work, config + '.json')}", f"--output_dir={output_dir}",
               f"--spm_model_file={spm}", f"--max_seq_length={seq}", f"--max_predictions_per_seq={predictions}",
               f"--train_batch_size={batch}", "--optimizer=adamw", "--learning_rate=5e-4", "--num_warmup_steps=10",
               f"--num_train_steps={steps}", "--iterations_per_loop=5", "--save_checkpoints_steps=100000",
               f"--input_workers={workers}", *(["--jit_compile"] if jit else [])]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO,
                            env=child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1"))
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    rates = [float(m) for m in re.findall(r" ([\d.]+) seq/s", result.stdout)]
    return statistics.median(rates[1:])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=SHARED_CORPUS, help="paragraph-per-line corpus, blank-line documents")
    parser.add_argument("--work_dir", default="/tmp/albert_recipes", help="shared with pretraining_recipes.py")
    parser.add_argument("--steps", type=int, default=40, help="training steps per run_pretraining measurement")
    parser.add_argument("--repeats", type=int, default=2, help="measurements per input (alternating); the best counts")
    args = parser.parse_args(argv)
    work = args.work_dir
    os.makedirs(work, exist_ok=True)
    train_text, _, spm = prepare(work, args.corpus)
    base_config = os.path.join(work, "base8k.json")
    if not os.path.exists(base_config):
        with open(os.path.join(REPO, "configs", "albert_base_v2.json")) as f:
            config = json.load(f)
        config["vocab_size"] = 8000
        with open(base_config, "w") as f:
            json.dump(config, f, indent=2)
    record = {"cpu": cpu_description(), "disk": {}, "reader": [], "training": []}
    for model in MODELS:
        name, _, seq, predictions, batch, _ = model
        sets = make_sets(work, train_text, spm, seq, predictions)
        record["disk"][f"seq {seq}"] = {fmt: disk_bytes(prefix) for fmt, prefix in sets.items()}
        for workers in (1, 2):
            record["reader"].append({"seq": seq, "batch": batch, "input_workers": workers,
                                     "instances_per_second": reader_rate(sets["documents"], spm, workers, batch)})
            print(record["reader"][-1], flush=True)
        inputs = (("static instances", sets["instances"], 2), ("documents, 1 input worker", sets["documents"], 1),
                  ("documents, 2 input workers", sets["documents"], 2))
        rates = {label: [] for label, _, _ in inputs}
        for _ in range(args.repeats):  # alternating, so that drift in the machine's speed hits every input alike
            for label, prefix, workers in inputs:
                rates[label].append(training_rate(work, spm, prefix, model, args.steps, workers))
                print(name, label, rates[label][-1], flush=True)
        for label, values in rates.items():
            record["training"].append({"model": name, "seq": seq, "batch": batch, "input": label,
                                       "sequences_per_second": max(values), "all": values})
    disk_rows = [[size, f"{sizes['instances'] / 2**20:,.1f} MiB", f"{sizes['documents'] / 2**20:,.1f} MiB",
                  f"{sizes['instances'] / sizes['documents']:.1f}x"] for size, sizes in record["disk"].items()]
    reader_rows = [[r["seq"], r["batch"], r["input_workers"], f"{r['instances_per_second']:,.0f}"]
                   for r in record["reader"]]
    training_rows = [[r["model"], r["seq"], r["batch"], r["input"], f"{r['sequences_per_second']:.1f}"]
                     for r in record["training"]]
    text = "\n".join([
        f"CPU: {record['cpu']}", "",
        markdown_table(["length", "static instances (dupe 10)", "documents", "ratio"], disk_rows), "",
        markdown_table(["seq", "batch", "input workers", "instances/s (reader alone)"], reader_rows), "",
        markdown_table(["model", "seq", "batch", "input", "run_pretraining seq/s (best of the runs' medians)"],
                       training_rows),
    ]) + "\n"
    write_results(RESULTS, "dynamic_input", text, record)


if __name__ == "__main__":
    main()
