r"""Your own labels, albert_tf beside Hugging Face: a 3-class task with label names made from STS-B, fine-tuned
by albert_tf's tool and by a run_glue-style PyTorch loop over AlbertForSequenceClassification converted from the
same checkpoint, each from the pretrained checkpoint and from random init, over several seeds.

  python -m benchmarks.downstream.own_labels --pretrained=/work/albert_large_cased/runs/smallA_large \
      [--seeds=1,2,3] [--work_dir=/tmp/albert_own_labels]

  # a check in a few minutes: a tiny checkpoint, 64 rows, one seed, one epoch
  python -m benchmarks.downstream.own_labels --pretrained=/tmp/albert_learning_curve/pretrain --seeds=1 \
      --max_train_rows=64 --max_eval_rows=64 --epochs=1 --work_dir=/tmp/own_check --results_dir=/tmp/own_check

The task: STS-B's train.tsv and dev.tsv (GLUE, ../shared/data) sentence pairs, their similarity scores bucketed
into "low" (< 2), "mid" (2 to < 3.5) and "high" (>= 3.5), written as CSV files with the columns id, text, text_b,
label (WORK_DIR/data), as a user's own labelled texts are.

albert_tf: `python -m albert_tf.run_text_classifier` on those files, from --pretrained (--init_checkpoint) and
from random init (--albert_config and --spm_model_file: the checkpoint's config and vocabulary, its casing).
Hugging Face: the checkpoint converted by `python -m albert_tf.convert --to=huggingface`, then
AlbertForSequenceClassification from it (or, for random init, built from its AlbertConfig with fresh weights)
and its tokenizer, trained as run_glue trains: AdamW (weight decay 0.01, LayerNorm weights and biases excluded;
epsilon 1e-8), gradients clipped to norm 1, transformers.get_linear_schedule_with_warmup, sequences padded to
max_seq_length. Both run the same recipe: the same steps (--epochs over the training rows at --batch_size),
10% warmup, --learning_rate, --max_seq_length, seed, and an evaluation on dev every tenth of the steps (the
tool's recipe); each reports its best evaluation by accuracy (the tool's choice) and its last. The metrics of
both come from albert_tf.tasks.classification_metrics (numpy): accuracy and macro-F1. What differs is each
library's own: albert_tf's AdamW is the original's (no bias correction, epsilon 1e-6), Hugging Face's
torch.optim.AdamW corrects the bias; the heads' initializations and the data orders are each library's; and a
pair longer than max_seq_length is cut by each library's rule, which differ on a tie (the original's, albert_tf's,
cuts the second text first, the tokenizers library the first), so such pairs may keep one token apart.

Time per training step, both in --threads threads (TF_NUM_INTRAOP_THREADS for the tool, torch.set_num_threads
for PyTorch; default: this machine's cores): albert_tf's from its progress lines (each loop's examples/s), the
first loop (graph tracing) left out; Hugging Face's from the same steps of its loop, the batch, forward,
backward and update of each, evaluation left out. Time it on an otherwise idle machine: PyTorch's threads wait
for each other far longer than TensorFlow's when other processes take the cores.

Every finished run is kept (WORK_DIR/IMPLEMENTATION/START/seedN.json) and reused when the command is rerun with
the same settings, so the grid can run across sessions. Writes RESULTS_DIR/own_labels.{json,md}: per
implementation and start the mean, standard deviation and range over seeds of accuracy and macro-F1, the time
per step, and the judged goals: equal metrics within the seeds' spread (the difference of the means no larger
than the larger standard deviation), albert_tf's time per step no more than Hugging Face's.
"""

import argparse
import csv
import hashlib
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
import types

from benchmarks.common import (REPO, RESULTS, SHARED_DATA, child_env, cpu_description, installed_versions,
                               markdown_table, write_results)
from benchmarks.downstream.transfer import cached

STARTS = ("pretrained", "random init")
IMPLEMENTATIONS = ("albert_tf", "Hugging Face")
# Score buckets: (name, lowest score) from the top; a score takes the first bucket it reaches.
BUCKETS = (("high", 3.5), ("mid", 2.0), ("low", float("-inf")))
LABELS = tuple(sorted(name for name, _ in BUCKETS))  # class-id order: the tool sorts the training file's names
EVALUATIONS = 10  # evaluations over a run: the tool's recipe evaluates every tenth of the steps
ITERATIONS_PER_LOOP = 100  # the tool's default: its first loop (tracing included) is left out of the timing
EVAL_BATCH_SIZE = 64
_PROGRESS = re.compile(r"^step (\d+)/\d+ .*?([\d.]+) examples/s", re.MULTILINE)


def bucket(score):
    return next(name for name, lowest in BUCKETS if score >= lowest)


def read_glue_tsv(path):
    """Rows of a GLUE TSV as {column: value}: unquoted, one row per line (its texts hold stray quotes)."""
    with open(path, encoding="utf-8-sig") as f:
        lines = [line for line in f.read().split("\n") if line.strip()]
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]


def write_labelled_split(source, path, max_rows):
    """Writes STS-B's `source` as a CSV of id,text,text_b,label with bucketed scores (at most `max_rows`, drawn
    with a fixed seed); returns {label: rows}."""
    rows = read_glue_tsv(source)
    if max_rows:
        rows = [rows[i] for i in sorted(random.Random(0).sample(range(len(rows)), min(max_rows, len(rows))))]
    counts = dict.fromkeys(LABELS, 0)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text", "text_b", "label"])
        for row in rows:
            label = bucket(float(row["score"]))
            counts[label] += 1
            writer.writerow([row["index"], row["sentence1"], row["sentence2"], label])
    return counts


def read_labelled_csv(path):
    """(texts, second texts, class ids) of a file write_labelled_split wrote."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return ([r["text"] for r in rows], [r["text_b"] for r in rows], [LABELS.index(r["label"]) for r in rows])


def checkpoint_identity(pretrained):
    """What a pretrained start depends on: the directory's record and its checkpoints (names, sizes, times), so
    a run made before the checkpoint moved on is made again."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(pretrained)):
        path = os.path.join(pretrained, name)
        if name in ("albert_tf.json", "checkpoint", "spm.model") or name.endswith(".index"):
            stat = os.stat(path)
            digest.update(f"{name} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def random_init_identity(metadata, spm):
    """What a random start depends on: the model config, the casing and the vocabulary."""
    with open(spm, "rb") as f:
        spm_sha256 = hashlib.sha256(f.read()).hexdigest()
    casing = {name: metadata.get(name) for name in ("lower_case", "keep_accents", "rewrite_quotes")}
    return {"albert_config": metadata["albert_config"], **casing, "spm_sha256": spm_sha256}


def recipe(train_rows, args):
    """The settings both implementations train with."""
    steps = max(1, math.ceil(train_rows * args.epochs / args.batch_size))
    return types.SimpleNamespace(epochs=args.epochs, steps=steps, warmup=int(steps * 0.1),
                                 eval_every=max(1, math.ceil(steps / EVALUATIONS)), learning_rate=args.learning_rate,
                                 batch_size=args.batch_size, max_seq_length=args.max_seq_length, threads=args.threads)


def timed_after_first_loop(settings):
    """The first step timed: the steps of the tool's first loop (tracing) are left out, on both sides, unless
    the run has no other."""
    first_loop = min(ITERATIONS_PER_LOOP, settings.eval_every, settings.steps)
    return first_loop + 1 if settings.steps > first_loop else 1


def progress_seconds_per_step(log, batch_size, first_timed_step):
    """Seconds per step from the tool's progress lines ("step N/T ... R examples/s"): each loop's steps over its
    rate, from `first_timed_step` on (the first line alone when there is no later one)."""
    loops, previous = [], 0
    for match in _PROGRESS.finditer(log):
        step, rate = int(match[1]), float(match[2])
        loops.append((previous + 1, step - previous, (step - previous) * batch_size / rate))
        previous = step
    timed = [loop for loop in loops if loop[0] >= first_timed_step] or loops[:1]
    if not timed:
        raise ValueError("the tool printed no progress line")
    return sum(seconds for _, _, seconds in timed) / sum(steps for _, steps, _ in timed), sum(s for _, s, _ in timed)


def run_finetuning_tool(module, file_flags, seed, init_flags, settings, output, labels, extra_flags=()):
    """Runs the fine-tuning tool `module` on `file_flags` (its data files) into `output` with the recipe of
    `settings`, its output echoed and kept in output/tool.log; checks that its best model records `labels`.
    Returns (seconds, seconds per training step, steps timed: those after the first loop)."""
    shutil.rmtree(output, ignore_errors=True)  # an unfinished run of other settings would be resumed
    os.makedirs(output)
    command = [sys.executable, "-m", module, *file_flags, "--do_train", "--do_eval", f"--output_dir={output}",
               f"--max_seq_length={settings.max_seq_length}", f"--train_batch_size={settings.batch_size}",
               f"--learning_rate={settings.learning_rate}", f"--num_train_steps={settings.steps}",
               f"--num_warmup_steps={settings.warmup}", f"--save_checkpoints_steps={settings.eval_every}",
               f"--iterations_per_loop={ITERATIONS_PER_LOOP}", f"--eval_batch_size={EVAL_BATCH_SIZE}",
               f"--seed={seed}", *extra_flags, *init_flags]
    print("+ " + " ".join(command[1:]), flush=True)
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1", TF_NUM_INTRAOP_THREADS=str(settings.threads))
    started = time.monotonic()
    log_path = os.path.join(output, "tool.log")
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                   cwd=REPO)
        for line in process.stdout:
            print(line, end="", flush=True)
            log.write(line)
    if process.wait():
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}); its output: {log_path}")
    seconds = time.monotonic() - started
    with open(os.path.join(output, "best", "albert_tf.json")) as f:
        recorded_labels = tuple(json.load(f)["label_names"])
    if recorded_labels != tuple(labels):
        raise RuntimeError(f"{output}/best: label names {recorded_labels}, expected {tuple(labels)}")
    with open(log_path) as f:
        seconds_per_step, timed_steps = progress_seconds_per_step(f.read(), settings.batch_size,
                                                                 timed_after_first_loop(settings))
    return seconds, seconds_per_step, timed_steps


def albert_tf_run(start, seed, data, init_flags, settings, output):
    """Fine-tunes with run_text_classifier; its best and last evaluations, and its time per step."""
    seconds, seconds_per_step, timed_steps = run_finetuning_tool(
        "albert_tf.run_text_classifier", [f"--train_file={data['train']}", f"--eval_file={data['dev']}"], seed,
        init_flags, settings, output, LABELS)
    with open(os.path.join(output, "eval_results.json")) as f:
        best = json.load(f)
    with open(os.path.join(output, "checkpoints", "evaluations.json")) as f:
        history = json.load(f)
    last = max(history, key=lambda r: r["step"])
    return {"accuracy": best["accuracy"], "macro_f1": best["macro_f1"],
            "best_step": max(history, key=lambda r: r["accuracy"])["step"],
            "last": {"accuracy": last["accuracy"], "macro_f1": last["macro_f1"]},
            "seconds_per_step": seconds_per_step, "timed_steps": timed_steps, "seconds": round(seconds, 1)}


def huggingface_checkpoint(pretrained, work_dir, identity, env):
    """The checkpoint converted to a Hugging Face directory (albert_tf.convert), made again when it moved on."""
    output = os.path.join(work_dir, "huggingface_checkpoint")

    def convert():
        shutil.rmtree(output, ignore_errors=True)
        command = [sys.executable, "-m", "albert_tf.convert", "--from=albert_tf", "--to=huggingface",
                   f"--input={pretrained}", f"--output={output}"]
        print("+ " + " ".join(command[1:]), flush=True)
        subprocess.run(command, check=True, env=env, cwd=REPO)
        return {"directory": output}

    return cached(output + ".json", {"pretrained": os.path.abspath(pretrained), "identity": identity},
                  convert)["directory"]


def encode(tokenizer, texts, texts_b, max_seq_length):
    """[CLS] A [SEP] B [SEP], the longer text cut first, padded to max_seq_length (the tool's fixed shapes)."""
    return dict(tokenizer(texts, texts_b, truncation="longest_first", max_length=max_seq_length,
                          padding="max_length", return_tensors="pt"))


def huggingface_evaluate(model, inputs, labels):
    import torch

    from albert_tf.tasks.classification_metrics import single_label_metrics

    model.eval()
    predicted = []
    with torch.no_grad():
        for begin in range(0, len(labels), EVAL_BATCH_SIZE):
            batch = {name: value[begin:begin + EVAL_BATCH_SIZE] for name, value in inputs.items()}
            predicted.extend(model(**batch).logits.argmax(-1).tolist())
    model.train()
    return single_label_metrics(labels, predicted, LABELS)


def huggingface_run(start, seed, data, hf_dir, settings):
    """Fine-tunes AlbertForSequenceClassification in a run_glue-style loop; its best and last evaluations, and
    its time per step."""
    import numpy as np
    import torch
    import transformers

    torch.set_num_threads(settings.threads)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    labels = {"id2label": dict(enumerate(LABELS)), "label2id": {name: i for i, name in enumerate(LABELS)}}
    if start == "pretrained":
        model = transformers.AlbertForSequenceClassification.from_pretrained(hf_dir, num_labels=len(LABELS),
                                                                             **labels)
    else:
        config = transformers.AlbertConfig.from_pretrained(hf_dir, num_labels=len(LABELS), **labels)
        model = transformers.AlbertForSequenceClassification(config)
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    texts, texts_b, train_labels = read_labelled_csv(data["train"])
    train_inputs = encode(tokenizer, texts, texts_b, settings.max_seq_length)
    train_labels = torch.tensor(train_labels)
    texts, texts_b, eval_labels = read_labelled_csv(data["dev"])
    eval_inputs = encode(tokenizer, texts, texts_b, settings.max_seq_length)

    history = []

    def evaluate_every(step, loss):
        if step % settings.eval_every == 0 or step == settings.steps:
            results = {"step": step, **huggingface_evaluate(model, eval_inputs, eval_labels)}
            history.append(results)
            print(f"Hugging Face {start} seed {seed}: step {step}/{settings.steps}  loss {float(loss):.4f}  "
                  f"eval accuracy {results['accuracy']:.4f}  macro_f1 {results['macro_f1']:.4f}", flush=True)

    step_seconds = huggingface_train(
        model, len(train_labels),
        lambda rows: model(**{name: value[rows] for name, value in train_inputs.items()},
                           labels=train_labels[rows]).loss,
        settings, seed, evaluate_every)
    best = max(history, key=lambda r: r["accuracy"])
    return {"accuracy": best["accuracy"], "macro_f1": best["macro_f1"], "best_step": best["step"],
            "last": {"accuracy": history[-1]["accuracy"], "macro_f1": history[-1]["macro_f1"]},
            "seconds_per_step": statistics.mean(step_seconds), "timed_steps": len(step_seconds)}


def weight_decay_groups(model, original_adamw=False):
    """`model`'s parameters as torch optimizer groups, weight decay 0.01 and 0. Which go without: run_glue's rule
    (a name holding "bias" or "LayerNorm.weight"), or with the original's optimizer the original's, albert_tf's
    (a name holding LayerNorm, layer_norm or bias). They differ on Hugging Face ALBERT's feed-forward LayerNorm,
    named full_layer_layer_norm: run_glue decays its weight, the original does not."""
    from benchmarks.downstream.original_adamw_torch import EXCLUDE_FROM_WEIGHT_DECAY

    if original_adamw:
        def decayed(name):
            return not any(re.search(pattern, name) for pattern in EXCLUDE_FROM_WEIGHT_DECAY)
    else:
        def decayed(name):
            return not any(part in name for part in ("bias", "LayerNorm.weight"))
    parameters = list(model.named_parameters())
    return [{"params": [p for n, p in parameters if decayed(n)], "weight_decay": 0.01},
            {"params": [p for n, p in parameters if not decayed(n)], "weight_decay": 0.0}]


def huggingface_train(model, num_rows, batch_loss, settings, seed, after_step, original_adamw=False):
    """Trains `model` as run_glue does (AdamW with weight decay 0.01 off biases and LayerNorm, linear warmup then
    decay, gradients clipped to norm 1) for settings.steps steps over `num_rows` rows: the rows shuffled every
    epoch, the epochs one stream cut into full batches, as the tool feeds its steps. `batch_loss(rows)` is the
    loss of a batch of row indices; `after_step(step, loss)` runs after each step, untimed (evaluations,
    progress). `original_adamw`: the original's AdamW (no bias correction, epsilon 1e-6), schedule (the decay
    measured from step 0) and decay exclusions (`weight_decay_groups`), albert_tf's, instead of torch's AdamW
    (epsilon 1e-8), transformers' schedule and run_glue's exclusions. Returns the seconds of each step from the
    first the tool's timing counts too."""
    import torch
    import transformers

    from benchmarks.downstream.original_adamw_torch import OriginalAdamW, original_schedule

    groups = weight_decay_groups(model, original_adamw)
    optimizer = (OriginalAdamW(groups, lr=settings.learning_rate) if original_adamw
                 else torch.optim.AdamW(groups, lr=settings.learning_rate, eps=1e-8))
    schedule = (original_schedule(optimizer, settings.warmup, settings.steps) if original_adamw
                else transformers.get_linear_schedule_with_warmup(optimizer, settings.warmup, settings.steps))
    generator = torch.Generator().manual_seed(seed)
    epochs = math.ceil(settings.steps * settings.batch_size / num_rows)
    order = torch.cat([torch.randperm(num_rows, generator=generator) for _ in range(epochs)])
    first_timed_step = timed_after_first_loop(settings)
    step_seconds = []
    model.train()
    for step in range(1, settings.steps + 1):
        started = time.perf_counter()
        loss = batch_loss(order[(step - 1) * settings.batch_size:step * settings.batch_size])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step >= first_timed_step:
            step_seconds.append(time.perf_counter() - started)
        after_step(step, loss)
    return step_seconds


def spread(values):
    mean = statistics.mean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"values": values, "mean": mean, "std": std, "min": min(values), "max": max(values)}


def summarize(records):
    """({implementation/start: figures}, goals): metrics in percent, time per step in milliseconds."""
    summary = {}
    for implementation in IMPLEMENTATIONS:
        for start in STARTS:
            runs = [r[implementation] for r in records if r["start"] == start]
            summary[f"{implementation}/{start}"] = {
                "accuracy": spread([100 * r["accuracy"] for r in runs]),
                "macro_f1": spread([100 * r["macro_f1"] for r in runs]),
                "last_accuracy": spread([100 * r["last"]["accuracy"] for r in runs]),
                "ms_per_step": spread([1000 * r["seconds_per_step"] for r in runs])}
    goals = []
    for start in STARTS:
        for metric in ("accuracy", "macro_f1"):
            ours, theirs = summary[f"albert_tf/{start}"][metric], summary[f"Hugging Face/{start}"][metric]
            difference, largest_std = ours["mean"] - theirs["mean"], max(ours["std"], theirs["std"])
            met = None if len(ours["values"]) < 2 else abs(difference) <= largest_std
            goals.append({"goal": f"{start}: equal {metric} within the seeds' spread", "met": met,
                          "measured": f"albert_tf - Hugging Face {difference:+.2f} (largest std {largest_std:.2f})"})
    ours, theirs = ([1000 * r[implementation]["seconds_per_step"] for r in records] for implementation in
                    IMPLEMENTATIONS)
    ours, theirs = statistics.mean(ours), statistics.mean(theirs)
    goals.append({"goal": "albert_tf's time per step <= Hugging Face's", "met": ours <= theirs,
                  "measured": f"{ours:.1f} ms vs {theirs:.1f} ms (Hugging Face / albert_tf {theirs / ours:.2f}x)"})
    return summary, goals


def tables(summary, goals):
    def cell(figures):
        return f"{figures['mean']:.2f} ± {figures['std']:.2f} ({figures['min']:.2f} - {figures['max']:.2f})"

    rows = []
    for implementation in IMPLEMENTATIONS:
        for start in STARTS:
            figures = summary[f"{implementation}/{start}"]
            rows.append((implementation, start, len(figures["accuracy"]["values"]), cell(figures["accuracy"]),
                         cell(figures["macro_f1"]), f"{figures['last_accuracy']['mean']:.2f}",
                         f"{figures['ms_per_step']['mean']:.1f}"))
    results = markdown_table(["implementation", "initialization", "seeds", "accuracy % (best evaluation)",
                              "macro-F1 % (best evaluation)", "accuracy % (last step)", "ms / step"], rows)
    verdict = {True: "met", False: "missed", None: "not judged (one seed)"}
    judged = markdown_table(["goal", "measured", ""], [(g["goal"], g["measured"], verdict[g["met"]]) for g in goals])
    return f"{results}\n\n{judged}"


def library_versions():
    return installed_versions("tensorflow", "torch", "transformers")


def starting_points(args, metadata, spm):
    """(the tool's flags for each start, what identifies each start, the pretrained checkpoint converted to
    Hugging Face): the --pretrained checkpoint, and a random init of its config and
    vocabulary with its casing (`metadata`: its albert_tf.json)."""
    config_file = os.path.join(args.work_dir, "albert_config.json")
    with open(config_file, "w") as f:
        json.dump(metadata["albert_config"], f)
    casing = [f"--{flag}={str(metadata[name]).lower()}" for flag, name in (
        ("do_lower_case", "lower_case"), ("keep_accents", "keep_accents"), ("rewrite_quotes", "rewrite_quotes"))
        if name in metadata]
    init_flags = {"pretrained": [f"--init_checkpoint={args.pretrained}"],
                  "random init": [f"--albert_config={config_file}", f"--spm_model_file={spm}", *casing]}
    identities = {"pretrained": {"pretrained": os.path.abspath(args.pretrained),
                                 "identity": checkpoint_identity(args.pretrained)},
                  "random init": random_init_identity(metadata, spm)}
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    return init_flags, identities, huggingface_checkpoint(args.pretrained, args.work_dir,
                                                          identities["pretrained"]["identity"], env)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pretrained", required=True, help="albert_tf checkpoint or model directory with spm.model")
    parser.add_argument("--stsb_dir", default=os.path.join(SHARED_DATA, "glue", "STS-B"),
                        help="holds STS-B's train.tsv and dev.tsv")
    parser.add_argument("--work_dir", default="/tmp/albert_own_labels", help="data, runs and per-run results (reused)")
    parser.add_argument("--results_dir", default=RESULTS, help="where own_labels.{json,md} go")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated fine-tuning seeds (default 1,2,3)")
    parser.add_argument("--epochs", type=float, default=3.0, help="passes over the training rows (default 3)")
    parser.add_argument("--learning_rate", type=float, default=1e-4,
                        help="peak AdamW rate (default 1e-4, for small models; the tool's own 2e-5 suits base size)")
    parser.add_argument("--batch_size", type=int, default=32, help="rows per step (default 32)")
    parser.add_argument("--max_seq_length", type=int, default=None,
                        help="tokens per pair. Default: the length --pretrained records it was pretrained at (so no "
                             "position embedding is used that pretraining never trained), else 128")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help=f"threads of both implementations (default: this machine's {os.cpu_count()} cores)")
    parser.add_argument("--max_train_rows", type=int, default=0,
                        help="train on this many rows drawn from train.tsv (default 0: all 5,749); for a quick check")
    parser.add_argument("--max_eval_rows", type=int, default=0,
                        help="evaluate on this many rows drawn from dev.tsv (default 0: all 1,500); for a quick check")
    args = parser.parse_args(argv)

    metadata_file, spm = (os.path.join(args.pretrained, name) for name in ("albert_tf.json", "spm.model"))
    for path in (metadata_file, spm):
        if not os.path.isfile(path):
            sys.exit(f"{path}: missing; --pretrained must be an albert_tf checkpoint directory with spm.model")
    for name in ("train.tsv", "dev.tsv"):
        if not os.path.isfile(os.path.join(args.stsb_dir, name)):
            sys.exit(f"{os.path.join(args.stsb_dir, name)}: missing; pass --stsb_dir=<GLUE's STS-B directory>")
    seeds = [int(s) for s in args.seeds.split(",") if s]
    with open(metadata_file) as f:
        metadata = json.load(f)
    args.max_seq_length = args.max_seq_length or metadata.get("max_seq_length") or 128

    data_dir = os.path.join(args.work_dir, "data")
    os.makedirs(data_dir, exist_ok=True)
    data = {split: os.path.join(data_dir, f"{split}.csv") for split in ("train", "dev")}
    counts = {split: write_labelled_split(os.path.join(args.stsb_dir, f"{split}.tsv"), data[split],
                                          args.max_train_rows if split == "train" else args.max_eval_rows)
              for split in data}
    settings = recipe(sum(counts["train"].values()), args)
    init_flags, identities, hf_dir = starting_points(args, metadata, spm)
    data_key = {"counts": counts, "max_train_rows": args.max_train_rows, "max_eval_rows": args.max_eval_rows}

    records = []
    for seed in seeds:
        for start in STARTS:
            record = {"start": start, "seed": seed}
            for implementation in IMPLEMENTATIONS:
                output = os.path.join(args.work_dir, implementation.replace(" ", "_"), start.replace(" ", "_"),
                                      f"seed{seed}")
                os.makedirs(os.path.dirname(output), exist_ok=True)
                key = {"implementation": implementation, "start": start, "seed": seed, **identities[start],
                       **vars(settings), **data_key}
                if implementation == "albert_tf":
                    record[implementation] = cached(output + ".json", key, lambda: albert_tf_run(
                        start, seed, data, init_flags[start], settings, output))
                else:
                    record[implementation] = cached(output + ".json", key, lambda: huggingface_run(
                        start, seed, data, hf_dir, settings))
            records.append(record)
            print(f"{start} seed {seed}: " + ", ".join(
                f"{name} accuracy {record[name]['accuracy']:.4f} macro-F1 {record[name]['macro_f1']:.4f} "
                f"{1000 * record[name]['seconds_per_step']:.1f} ms/step" for name in IMPLEMENTATIONS), flush=True)

    summary, goals = summarize(records)
    config = metadata["albert_config"]
    described = "; ".join(f"{split} " + ", ".join(f"{name} {counts[split][name]:,}" for name in ("low", "mid", "high"))
                          for split in ("train", "dev"))
    title = (f"STS-B pairs as 3 named classes (score < 2 low, < 3.5 mid, else high; {described}). Model: "
             f"{args.pretrained} (hidden {config['hidden_size']}, {config['num_hidden_layers']} layers, vocab "
             f"{config['vocab_size']}) and the same config from random init; {settings.steps} steps ({args.epochs:g} "
             f"epochs) of batch {settings.batch_size}, seq {settings.max_seq_length}, lr {settings.learning_rate:g}, "
             f"{settings.warmup} warmup steps, dev evaluated every {settings.eval_every} steps; seeds {args.seeds}; "
             f"{settings.threads} threads each on {cpu_description()}.")
    write_results(args.results_dir, "own_labels", f"{title}\n\n{tables(summary, goals)}\n", record={
        "args": vars(args), "settings": vars(settings), "counts": counts, "cpu": cpu_description(),
        "versions": library_versions(), "records": records, "summary": summary, "goals": goals})


if __name__ == "__main__":
    main()
