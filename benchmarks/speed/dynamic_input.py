r"""Does making instances while training keep the step fed? The documents format against static instances.

  python -m benchmarks.speed.dynamic_input [--work_dir=/tmp/albert_recipes] [--steps=40]

On the shared corpus (every 10th document held out, the recipes' 8,000-piece
vocabulary; both made by benchmarks/learning/pretraining_recipes.py's `prepare`):
  1. disk: the static recipe's data (seq 64, dupe factor 10) against the same
     text as documents (written once);
  2. the dynamic reader alone: instances/s of run_pretraining's documents
     pipeline, building instances in 1 and 2 input threads and in 2 builder
     processes (--input_processes), at seq 64 (albert_small's recipe) and
     seq 128 (albert_base);
  3. run_pretraining itself, albert_small (seq 64, batch 64, XLA) and albert_base
     (seq 128, batch 8), on static instances and on documents with 1 and 2 input
     threads and 2 builder processes: the median sequences/s of its progress
     lines after the first loop, the best of --repeats runs made in alternation.
     Equal rates mean the step does not wait on input (on 2 cores the reader's
     threads and the step share the same cores, so any cost shows);
  4. how batches mix documents (seq 64, batch 64, the default shuffle buffer):
     the documents stream with one document's instances after another
     (--input_mixed_documents=1, the reader before round-robin) and as run_pretraining
     reads it, against the static tool's shuffle over the whole corpus (batches
     drawn from the corpus's instances at random). Each instance of the stream
     is traced to its document by its bytes.
--parts picks some of them (disk, reader, training, mixing).

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


def reader_rate(prefix, spm, workers, batch, processes=0, batches=150):
    """Instances/s of the documents pipeline alone (after 10 warm-up batches), building in `workers` threads or
    in `processes` builder processes."""
    from albert_tf.data.dynamic_instances import make_dynamic_dataset

    files, maker = documents_maker(prefix, spm, processes=processes)
    try:
        iterator = iter(make_dynamic_dataset(files, batch, maker, seed=1, num_workers=workers))
        for _ in range(10):
            next(iterator)
        start = time.perf_counter()
        for _ in range(batches):
            next(iterator)
        return batches * batch / (time.perf_counter() - start)
    finally:
        maker.close()


def instance_owners(files, maker, epochs):
    """{instance bytes: document number} over `epochs` epochs, and each document's instances per epoch."""
    import tensorflow as tf

    from albert_tf.data.dynamic_instances import parse_document

    owners, counts = {}, []
    for path in files:
        for record in tf.data.TFRecordDataset(path):
            document = [tensor.numpy() for tensor in parse_document(record)]
            for epoch in range(epochs):
                made = maker.instances(epoch, *document)
                for row in range(len(made["input_ids"])):
                    owners[instance_key(made["input_ids"][row], made["masked_lm_positions"][row])] = len(counts)
                if epoch == 0:
                    count = len(made["input_ids"])
            counts.append(count)
    return owners, counts


def instance_key(input_ids, masked_lm_positions):
    import numpy as np

    return np.asarray(input_ids, np.int32).tobytes() + np.asarray(masked_lm_positions, np.int32).tobytes()


def mixing_figures(batches_of_documents, shares):
    """Per batch: distinct documents, the largest document's share, and the total variation distance
    between the batch's documents and the corpus's shares; summarized."""
    import collections

    import numpy as np

    distinct, largest, distance = [], [], []
    for documents in batches_of_documents:
        counts = collections.Counter(documents)
        distinct.append(len(counts))
        largest.append(max(counts.values()) / len(documents))
        observed = np.zeros(len(shares))
        for document, count in counts.items():
            observed[document] = count / len(documents)
        distance.append(0.5 * np.abs(observed - shares).sum())
    largest = np.array(largest)
    return {"distinct_documents": float(np.mean(distinct)), "largest_share_median": float(np.median(largest)),
            "largest_share_p95": float(np.percentile(largest, 95)),
            "batches_over_half_one_document": float(np.mean(largest > 0.5)),
            "total_variation": float(np.mean(distance))}


def batch_mixing(prefix, spm, batch=64, batches=1500, epochs=6):
    """How batches of the documents stream mix documents, with and without round-robin, against a
    shuffle over the whole corpus."""
    import numpy as np

    from albert_tf.data.dynamic_instances import MIXED_DOCUMENTS, make_dynamic_dataset

    files, maker = documents_maker(prefix, spm)
    owners, counts = instance_owners(files, maker, epochs)
    shares = np.array(counts) / sum(counts)
    rng = np.random.default_rng(0)
    rows = [{"input": "static tool's whole-corpus shuffle (instances drawn at random)",
             **mixing_figures(rng.choice(len(counts), (batches, batch), p=shares).tolist(), shares)}]
    for mixed, label in ((1, "documents, one document's instances after another"),
                         (MIXED_DOCUMENTS, f"documents, {MIXED_DOCUMENTS} documents in turn (run_pretraining)")):
        iterator = iter(make_dynamic_dataset(files, batch, maker, seed=1, mixed_documents=mixed))
        traced, unmatched = [], 0
        for _ in range(batches):
            inputs = next(iterator)
            documents = [owners.get(instance_key(ids, positions)) for ids, positions in
                         zip(inputs["input_word_ids"].numpy(), inputs["masked_lm_positions"].numpy())]
            unmatched += documents.count(None)
            traced.append([document for document in documents if document is not None])
        rows.append({"input": label, "unmatched_instances": unmatched, **mixing_figures(traced, shares)})
    return {"documents": len(counts), "instances_per_epoch": sum(counts), "largest_document_share": float(shares.max()),
            "batches": batches, "batch": batch, "rows": rows}


def documents_maker(prefix, spm, seed=1, processes=0):
    """The documents set's files and the instance maker run_pretraining would use on them."""
    from albert_tf.data.dynamic_instances import EpochInstanceMaker
    from albert_tf.data.pretraining_data_job import CreationConfig
    from albert_tf.data.pretraining_dataset import data_set_format, expand_data_files
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    files = expand_data_files(prefix)
    _, metadata = data_set_format(files)
    tokenizer = AlbertTokenizer(spm)
    return files, EpochInstanceMaker(CreationConfig.from_json(metadata["config"]), tokenizer.word_start_table,
                                     tokenizer.random_replacement_ids, seed=seed, processes=processes,
                                     special_ids=tokenizer.special_ids)


def training_rate(work, spm, prefix, model, steps, workers, processes=0):
    """Median seq/s of run_pretraining's progress lines after the first loop (which compiles)."""
    name, config, seq, predictions, batch, jit = model
    output_dir = os.path.join(work, "dynamic_input_runs", f"{name}-{os.path.basename(prefix)}-{workers}-{processes}")
    subprocess.run(["rm", "-rf", output_dir], check=True)
    command = [sys.executable, "-m", "albert_tf.run_pretraining", f"--input_file={prefix}",
               f"--albert_config={os.path.join(work, config + '.json')}", f"--output_dir={output_dir}",
               f"--spm_model_file={spm}", f"--max_seq_length={seq}", f"--max_predictions_per_seq={predictions}",
               f"--train_batch_size={batch}", "--optimizer=adamw", "--learning_rate=5e-4", "--num_warmup_steps=10",
               f"--num_train_steps={steps}", "--iterations_per_loop=5", "--save_checkpoints_steps=100000",
               f"--input_workers={workers}", f"--input_processes={processes}", *(["--jit_compile"] if jit else [])]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO,
                            env=child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1"))
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    rates = [float(m) for m in re.findall(r" ([\d.]+) seq/s", result.stdout)]
    return statistics.median(rates[1:])


PARTS = ("disk", "reader", "training", "mixing")
# How the documents reader builds instances: (input threads, builder processes; 0: build in the threads).
READERS = ((1, 0), (2, 0), (2, 2))


def builders(workers, processes):
    """'2 input threads' or '2 builder processes'."""
    if processes:
        return f"{processes} builder process{'es' if processes > 1 else ''}"
    return f"{workers} input thread{'s' if workers > 1 else ''}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=SHARED_CORPUS, help="paragraph-per-line corpus, blank-line documents")
    parser.add_argument("--work_dir", default="/tmp/albert_recipes", help="shared with pretraining_recipes.py")
    parser.add_argument("--steps", type=int, default=40, help="training steps per run_pretraining measurement")
    parser.add_argument("--repeats", type=int, default=2, help="measurements per input (alternating); the best counts")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated parts to measure ({', '.join(PARTS)}); the recorded figures of the "
                             "others are kept")
    args = parser.parse_args(argv)
    parts = [part for part in args.parts.split(",") if part]
    if not parts or set(parts) - set(PARTS):
        parser.error(f"--parts: choose from {', '.join(PARTS)}")
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
    record = recorded_figures()
    cpu = cpu_description()
    for part in parts:
        record["cpu"][part] = cpu
        record[part] = {} if part == "disk" else []
    for model in MODELS:
        name, _, seq, predictions, batch, _ = model
        if seq != 64 and parts == ["mixing"]:  # mixing is measured at seq 64 only
            continue
        sets = make_sets(work, train_text, spm, seq, predictions)
        if "disk" in parts:
            record["disk"][f"seq {seq}"] = {fmt: disk_bytes(prefix) for fmt, prefix in sets.items()}
        if "mixing" in parts and seq == 64:
            record["mixing"] = batch_mixing(sets["documents"], spm, batch=batch)
        for workers, processes in READERS if "reader" in parts else ():
            rate = reader_rate(sets["documents"], spm, workers, batch, processes)
            record["reader"].append({"seq": seq, "batch": batch, "input_workers": workers,
                                     "builder_processes": processes, "instances_per_second": rate})
            print(record["reader"][-1], flush=True)
        if "training" in parts:
            record["training"] += training_rates(work, spm, sets, model, args.steps, args.repeats)
    write_results(RESULTS, "dynamic_input", results_text(record), record)


def training_rates(work, spm, sets, model, steps, repeats):
    name, _, seq, _, batch, _ = model
    inputs = [("static instances", sets["instances"], 2, 0)]
    inputs += [(f"documents, {builders(workers, processes)}", sets["documents"], workers, processes)
               for workers, processes in READERS]
    rates = {label: [] for label, _, _, _ in inputs}
    for _ in range(repeats):  # alternating, so that drift in the machine's speed hits every input alike
        for label, prefix, workers, processes in inputs:
            rates[label].append(training_rate(work, spm, prefix, model, steps, workers, processes))
            print(name, label, rates[label][-1], flush=True)
    return [{"model": name, "seq": seq, "batch": batch, "input": label, "sequences_per_second": max(values),
             "all": values} for label, values in rates.items()]


def recorded_figures():
    """The recorded results, each part with the CPU it was measured on (an older file: one CPU for all)."""
    path = os.path.join(RESULTS, "dynamic_input.json")
    record = {"cpu": {}, "disk": {}, "reader": [], "training": [], "mixing": None}
    if os.path.exists(path):
        with open(path) as f:
            record.update(json.load(f))
    if isinstance(record["cpu"], str):
        record["cpu"] = {part: record["cpu"] for part in ("disk", "reader", "training")}
    return record


def results_text(record):
    cpu = record["cpu"]
    disk_rows = [[size, f"{sizes['instances'] / 2**20:,.1f} MiB", f"{sizes['documents'] / 2**20:,.1f} MiB",
                  f"{sizes['instances'] / sizes['documents']:.1f}x"] for size, sizes in record["disk"].items()]
    reader_rows = [[r["seq"], r["batch"], builders(r["input_workers"], r.get("builder_processes", 0)),
                    f"{r['instances_per_second']:,.0f}"] for r in record["reader"]]
    training_rows = [[r["model"], r["seq"], r["batch"], r["input"], f"{r['sequences_per_second']:.1f}"]
                     for r in record["training"]]
    blocks = []
    if disk_rows:
        blocks.append(markdown_table(["length", "static instances (dupe 10)", "documents", "ratio"], disk_rows))
    if reader_rows:
        blocks.append(f"CPU: {cpu.get('reader')}\n\n" + markdown_table(
            ["seq", "batch", "instances built in", "instances/s (reader alone)"], reader_rows))
    if training_rows:
        blocks.append(f"CPU: {cpu.get('training')}\n\n" + markdown_table(
            ["model", "seq", "batch", "input", "run_pretraining seq/s (best of the runs' medians)"], training_rows))
    mixing = record.get("mixing")
    if mixing:
        rows = [[r["input"], f"{r['distinct_documents']:.1f}",
                 f"{r['largest_share_median']:.2f} / {r['largest_share_p95']:.2f}",
                 f"{r['batches_over_half_one_document']:.1%}", f"{r['total_variation']:.2f}"] for r in mixing["rows"]]
        blocks.append(
            f"How batches mix documents: {mixing['batches']:,} batches of {mixing['batch']} (seq 64) of the "
            f"{mixing['documents']} training documents ({mixing['instances_per_epoch']:,} instances an epoch; the "
            f"largest document holds {mixing['largest_document_share']:.0%} of them)\n\n" + markdown_table(
                ["input", "documents per batch", "largest document's share of a batch (median / p95)",
                 "batches over half one document", "distance from the corpus's shares (total variation)"], rows))
    return "\n\n".join(blocks) + "\n"


if __name__ == "__main__":
    main()
