r"""Does pretraining transfer? Fine-tuning from a pretrained checkpoint vs random init, several seeds.

  python -m benchmarks.downstream.transfer --pretrained=/tmp/albert_recipes/runs/smallA6k [--seeds=1,2,3] \
      [--tasks=sst-2,mrpc,squad] [--work_dir=/tmp/albert_transfer]

Real training data from ../shared/data:
  - SST-2: a 5,000-example subset of train.tsv (drawn with a fixed seed), the whole dev set;
  - MRPC: the whole train.tsv and dev.tsv;
  - SQuAD v1.1: the dev set split by article (every 5th article held out), as finetune_squad.py.

Each (task, seed) fine-tunes the pretrained checkpoint and an encoder of the same
config and vocabulary from random initialization with identical flags (the same
CLIs: run_classifier, run_squad); the seed sets the heads, the random init and
the data order. Sequences are --max_seq_length tokens (default 64, the recipe
benchmark's pretraining length: longer would use position embeddings that
pretraining never trained). Every finished run is kept (WORK_DIR/TASK/START/seedN)
and reused when the command is rerun with the same flags, so the grid can run in
the background across sessions.

Writes benchmarks/results/transfer.{json,md}: per task and start the mean,
standard deviation and range over seeds, and the gain of pretrained over random.
"""

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import types

from benchmarks.downstream import finetune_glue
from benchmarks.downstream import finetune_squad
from benchmarks.common import RESULTS, SHARED_DATA, child_env, markdown_table, portable

# The score each task is judged by.
METRIC = {"sst-2": "accuracy", "mrpc": "f1", "squad": "f1"}
STARTS = ("pretrained", "random init")


def sst2_subset(source_dir, directory, size, seed=0):
    """train.tsv: `size` rows of SST-2's train.tsv drawn with `seed`; dev.tsv: the whole dev set."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(source_dir, "train.tsv"), encoding="utf-8-sig") as f:
        lines = f.read().splitlines()
    header, rows = lines[0], [line for line in lines[1:] if line.strip()]
    chosen = sorted(random.Random(seed).sample(range(len(rows)), min(size, len(rows))))
    with open(os.path.join(directory, "train.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join([header] + [rows[i] for i in chosen]) + "\n")
    return len(chosen), finetune_glue.copy_split(source_dir, directory, "dev.tsv")


def cached(path, key, run):
    """The result stored at `path` for the same `key` (the run's settings), else run() and store it.

    With run=None only the stored result is looked up: None when there is none for this key."""
    if os.path.exists(path):
        with open(path) as f:
            stored = json.load(f)
        if stored.get("key") == key:
            return stored["result"]
    if run is None:
        return None
    result = run()
    with open(path, "w") as f:
        json.dump({"key": key, "result": result}, f, indent=1)
    return result


def glue_runs(task, args, seed, env, data, config_file, spm, starts, stored_only=False):
    """Fine-tunes from each start (cached per settings); stored_only=True runs nothing and returns only the
    stored results."""
    settings = types.SimpleNamespace(max_steps=args.glue_steps, max_seq_length=args.max_seq_length,
                                     learning_rate=args.learning_rate, batch_size=args.batch_size, seed=seed)
    inits = {"pretrained": [f"--init_checkpoint={args.pretrained}"],
             "random init": [f"--albert_config={config_file}", f"--spm_model_file={spm}"]}
    results = {}
    for start in starts:
        output = os.path.join(args.work_dir, task, start.replace(" ", "_"), f"seed{seed}")
        key = {"task": task, "start": start, "pretrained": os.path.abspath(args.pretrained), **vars(settings)}
        os.makedirs(os.path.dirname(output), exist_ok=True)
        result = cached(output + ".json", key, None if stored_only else lambda: finetune_glue.run_classifier(
            task, data, output, inits[start], settings, env))
        if result is not None:
            results[start] = result
    return results


def squad_window_settings(max_seq_length):
    """(doc_stride, max_query_length) of the grid's SQuAD windows at `max_seq_length` tokens."""
    return max_seq_length // 2, max_seq_length // 3


def answer_windows(train_file, spm_model_file, max_seq_length):
    """{questions, windows, with_answer}: the training windows the grid's SQuAD runs make of `train_file`, and
    how many hold the answer (the others teach the span head to point at [CLS])."""
    from albert_tf.tasks import squad
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    doc_stride, max_query_length = squad_window_settings(max_seq_length)
    examples = squad.read_squad(train_file, "1.1")[1]
    features = squad.convert_examples_to_features(examples, AlbertTokenizer(spm_model_file), max_seq_length,
                                                  doc_stride, max_query_length)
    return {"questions": len(examples), "windows": len(features),
            "with_answer": sum(feature.start_position not in (0, None) for feature in features)}


def squad_runs(args, seed, env, files, starts):
    doc_stride, max_query_length = squad_window_settings(args.max_seq_length)
    settings = types.SimpleNamespace(max_seq_length=args.max_seq_length, doc_stride=doc_stride,
                                     max_query_length=max_query_length, train_batch_size=args.batch_size,
                                     seed=seed, save_checkpoints_steps=100_000, max_steps=args.squad_steps,
                                     num_train_epochs=None, learning_rate=args.squad_learning_rate)
    results = {}
    for start in starts:
        output = os.path.join(args.work_dir, "squad", start.replace(" ", "_"), f"seed{seed}")
        key = {"task": "squad", "start": start, "pretrained": os.path.abspath(args.pretrained), **vars(settings)}

        def run(start=start, output=output):
            init = args.pretrained
            if start == "random init":
                init = output + "-init"
                finetune_squad.write_random_init(args.pretrained, init, seed)
            return finetune_squad.run_squad(init, output, *files, settings, env)

        results[start] = cached(output + ".json", key, run)
    return results


# The arguments that decide a fine-tuning run's result besides its start and seed.
FINETUNING_ARGS = ("glue_dir", "squad_file", "sst2_train_size", "max_seq_length", "batch_size", "glue_steps",
                   "learning_rate", "squad_steps", "squad_learning_rate")


def random_init_identity(config, spm_file):
    """What a random start depends on besides the fine-tuning settings and seed: the model config and vocabulary."""
    with open(spm_file, "rb") as f:
        return {"albert_config": config, "spm_sha256": hashlib.sha256(f.read()).hexdigest()}


def recorded_random_runs(path, args, identity):
    """{(task, seed): result} of the random-init runs in an earlier transfer.json.

    A random start depends on the model config, the vocabulary, the fine-tuning settings and the seed, not on
    the checkpoint, so a grid for another checkpoint of the same model can take them instead of rerunning them.
    Refuses (ValueError) a file made with other settings, another config or another vocabulary."""
    with open(path) as f:
        earlier = json.load(f)
    # The record names its paths as results do (`portable`): compared in that form.
    changed = [name for name in FINETUNING_ARGS if earlier["args"].get(name) != portable(getattr(args, name))]
    if changed:
        raise ValueError(f"{path}: made with other fine-tuning settings ({', '.join(changed)}); its random-init "
                         "runs do not apply")
    if earlier.get("random_init_identity") != identity:
        raise ValueError(f"{path}: its random-init runs were made for another model config or vocabulary")
    return {(r["task"], r["seed"]): r["random init"] for r in earlier["records"] if "random init" in r}


def summarize(records):
    """Rows per (task, start): mean, std, min, max of the task's metric; and the gain rows."""
    rows, summary = [], {}
    for task in dict.fromkeys(r["task"] for r in records):
        metric = METRIC[task]
        means = {}
        for start in STARTS:
            values = [r[start][metric] for r in records if r["task"] == task]
            scale = 100.0 if task != "squad" else 1.0  # run_squad reports percentages already
            values = [v * scale for v in values]
            mean = statistics.mean(values)
            std = statistics.stdev(values) if len(values) > 1 else 0.0
            means[start] = (mean, std)
            summary[f"{task}/{start}"] = {"metric": metric, "values": values, "mean": mean, "std": std}
            rows.append((task, metric, start, len(values), f"{mean:.2f}", f"{std:.2f}",
                         f"{min(values):.2f} - {max(values):.2f}"))
        gain = means["pretrained"][0] - means["random init"][0]
        spread = max(means["pretrained"][1], means["random init"][1])
        summary[f"{task}/gain"] = {"gain": gain, "largest_std": spread}
        rows.append((task, metric, "pretrained - random", "", f"{gain:+.2f}", f"(largest std {spread:.2f})", ""))
    return rows, summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pretrained", required=True, help="albert_tf checkpoint directory holding spm.model")
    parser.add_argument("--glue_dir", default=os.path.join(SHARED_DATA, "glue"), help="holds SST-2/ and MRPC/")
    parser.add_argument("--squad_file", default=os.path.join(SHARED_DATA, "squad", "dev-v1.1.json"),
                        help="SQuAD v1.1 file split by article")
    parser.add_argument("--work_dir", default="/tmp/albert_transfer", help="data, runs and per-run results (reused)")
    parser.add_argument("--tasks", default="sst-2,mrpc,squad", help="comma-separated: sst-2, mrpc, squad")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated fine-tuning seeds")
    parser.add_argument("--sst2_train_size", type=int, default=5000, help="SST-2 training subset size")
    parser.add_argument("--max_seq_length", type=int, default=64, help="tokens per example (default 64)")
    parser.add_argument("--batch_size", type=int, default=32, help="examples per step (default 32)")
    parser.add_argument("--glue_steps", type=int, default=500, help="GLUE training steps (default 500)")
    parser.add_argument("--learning_rate", type=float, default=1e-4, help="GLUE peak AdamW rate (default 1e-4)")
    parser.add_argument("--squad_steps", type=int, default=1865,
                        help="SQuAD training steps (default 1865: one pass over the 59,675 windows that the 8,595 "
                        "training questions make at seq 64, batch 32; ~15 minutes per run on 2 CPU cores). In steps, "
                        "because run_squad's epochs count questions, as the original's do")
    parser.add_argument("--squad_learning_rate", type=float, default=1e-4, help="SQuAD peak AdamW rate")
    parser.add_argument("--starts", default=",".join(STARTS),
                        help="comma-separated starts to run: 'pretrained', 'random init' (default both; the random "
                             "starts need only the checkpoint's config and spm.model, so they can run while it "
                             "pretrains); the table needs both")
    parser.add_argument("--random_init_from", default="",
                        help="an earlier transfer.json for the same model config, vocabulary and fine-tuning settings: "
                             "its random-init runs are taken instead of run again (they do not depend on the "
                             "checkpoint); the file is checked and refused if anything differs")
    parser.add_argument("--results_dir", default=RESULTS, help="where transfer.{json,md} go")
    args = parser.parse_args(argv)

    spm = os.path.join(args.pretrained, "spm.model")
    metadata_file = os.path.join(args.pretrained, "albert_tf.json")
    for path in (spm, metadata_file):
        if not os.path.isfile(path):
            sys.exit(f"{path}: missing; --pretrained must be an albert_tf checkpoint directory with spm.model")
    tasks = [t for t in args.tasks.split(",") if t]
    unknown = [t for t in tasks if t not in METRIC]
    if unknown:
        sys.exit(f"--tasks: unknown {unknown}; known: {sorted(METRIC)}")
    seeds = [int(s) for s in args.seeds.split(",") if s]
    starts = [s for s in args.starts.split(",") if s]
    if not starts or set(starts) - set(STARTS):
        sys.exit(f"--starts: {args.starts!r}; known: {', '.join(STARTS)}")
    os.makedirs(args.work_dir, exist_ok=True)
    with open(metadata_file) as f:
        config = json.load(f)["albert_config"]
    config_file = os.path.join(args.work_dir, "albert_config.json")
    with open(config_file, "w") as f:
        json.dump(config, f)
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    identity = random_init_identity(config, spm)
    recorded = {}
    if args.random_init_from:
        try:
            recorded = recorded_random_runs(args.random_init_from, args, identity)
        except (OSError, ValueError, KeyError) as error:
            sys.exit(f"--random_init_from: {error}")

    data, sizes = {}, {}
    if "sst-2" in tasks:
        data["sst-2"] = os.path.join(args.work_dir, "sst-2", "data")
        sizes["sst-2"] = sst2_subset(os.path.join(args.glue_dir, "SST-2"), data["sst-2"], args.sst2_train_size)
    if "mrpc" in tasks:
        data["mrpc"] = os.path.join(args.work_dir, "mrpc", "data")
        sizes["mrpc"] = finetune_glue.copy_splits(os.path.join(args.glue_dir, "MRPC"), data["mrpc"])
    if "squad" in tasks:
        squad_files = (os.path.join(args.work_dir, "squad_train.json"), os.path.join(args.work_dir, "squad_eval.json"))
        counts = finetune_squad.split_by_article(args.squad_file, *squad_files, eval_every=5)
        sizes["squad"] = (counts["train"][1], counts["eval"][1])

    records = []
    for seed in seeds:
        for task in tasks:
            reused = ({"random init": recorded[task, seed]}
                      if "random init" in starts and (task, seed) in recorded else {})
            to_run = [start for start in starts if start not in reused]
            if task == "squad":
                results = squad_runs(args, seed, env, squad_files, to_run)
            else:
                results = glue_runs(task, args, seed, env, data[task], config_file, spm, to_run)
            results.update(reused)
            records.append({"task": task, "seed": seed, **{start: results[start] for start in starts},
                            **({"random_init_from": args.random_init_from} if reused else {})})
            print(f"{task} seed {seed}: " + ", ".join(
                f"{start} {METRIC[task]} {results[start][METRIC[task]]:.4f}" for start in starts), flush=True)
    if len(starts) < len(STARTS):
        print(f"Ran {', '.join(starts)} only; rerun with both starts for the table (finished runs are reused).")
        return

    rows, summary = summarize(records)
    table = markdown_table(["task", "metric", "initialization", "seeds", "mean", "std", "range"], rows)
    title = (f"Fine-tuning from {args.pretrained} (hidden {config['hidden_size']}, {config['num_hidden_layers']} "
             f"layers, vocab {config['vocab_size']}) vs random init; seq {args.max_seq_length}, batch "
             f"{args.batch_size}; GLUE {args.glue_steps} steps at lr {args.learning_rate:g}"
             + (f", SQuAD {args.squad_steps} steps at lr {args.squad_learning_rate:g}" if "squad" in tasks else "")
             + f"; seeds {args.seeds}. Train / eval "
             "examples: " + ", ".join(f"{task} {a:,} / {b:,}" for task, (a, b) in sizes.items()) + "."
             + (f" Random-init runs taken from {args.random_init_from} (same config, vocabulary and settings)."
                if recorded else ""))
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "transfer.json"), "w") as f:
        json.dump(portable({"args": vars(args), "random_init_identity": identity, "sizes": sizes,
                            "records": records, "summary": summary}), f, indent=1)
    with open(os.path.join(args.results_dir, "transfer.md"), "w") as f:
        f.write(portable(f"{title}\n\n{table}\n"))
    print(f"\n{title}\n\n{table}")


if __name__ == "__main__":
    main()
