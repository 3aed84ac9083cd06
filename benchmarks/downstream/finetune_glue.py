r"""Does pretraining help? SST-2 and MRPC fine-tuning from a pretrained checkpoint vs from random init.

  python -m benchmarks.downstream.finetune_glue [--pretrained=/tmp/albert_learning_curve/pretrain] \
      [--glue_dir=../shared/data/glue] [--work_dir=/tmp/albert_finetune_glue]

  # smoke test: 5 steps
  python -m benchmarks.downstream.finetune_glue --max_steps=5 --work_dir=/tmp/glue_smoke --results_dir=/tmp/glue_smoke

Only the dev sets are used (GLUE's test labels are private, and the issue asks
for the dev sets): each is split deterministically, odd data rows to train and
even rows to evaluate (--use_train_files trains on train.tsv instead and
evaluates on the whole dev set). The same `python -m albert_tf.run_classifier`
command fine-tunes the --pretrained checkpoint (any albert_tf checkpoint with
spm.model; `benchmarks/learning/learning_curve.py` makes one from the albert_tiny
preset) and an encoder of the same config and vocabulary from random
initialization, with identical flags and seed; each reports its best evaluated
checkpoint. max_seq_length defaults to 128, learning_curve.py's pretraining
length, so no position embedding is used that pretraining never trained.

Writes RESULTS_DIR/finetune_glue.{md,json}.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time


from benchmarks.common import REPO, RESULTS, child_env, markdown_table, portable

GLUE_NAMES = {"sst-2": "SST-2", "mrpc": "MRPC"}


def split_dev(source, directory):
    """Writes train.tsv (odd data rows) and dev.tsv (even rows) of a dev file with a header; returns the counts."""
    with open(source, encoding="utf-8-sig") as f:
        lines = f.read().splitlines()
    header, rows = lines[0], [line for line in lines[1:] if line.strip()]
    os.makedirs(directory, exist_ok=True)
    parts = {"train.tsv": rows[1::2], "dev.tsv": rows[0::2]}
    for name, part in parts.items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write("\n".join([header] + part) + "\n")
    return len(parts["train.tsv"]), len(parts["dev.tsv"])


def copy_split(source_dir, directory, name):
    """Copies one TSV with a header line as it is; returns its number of data rows."""
    os.makedirs(directory, exist_ok=True)
    shutil.copyfile(os.path.join(source_dir, name), os.path.join(directory, name))
    with open(os.path.join(directory, name), encoding="utf-8-sig") as f:
        return sum(1 for line in f if line.strip()) - 1


def copy_splits(source_dir, directory):
    """train.tsv and the whole dev.tsv, as they are; returns the counts."""
    return tuple(copy_split(source_dir, directory, name) for name in ("train.tsv", "dev.tsv"))


def run_classifier(task, data, output, init, args, env):
    steps = args.max_steps
    shutil.rmtree(output, ignore_errors=True)  # a leftover run would be resumed, with other settings
    command = [sys.executable, "-m", "albert_tf.run_classifier", f"--task_name={task}", f"--data_dir={data}",
               f"--output_dir={output}", "--do_train", "--do_eval", f"--max_seq_length={args.max_seq_length}",
               f"--num_train_steps={steps}", f"--num_warmup_steps={steps // 10}",
               f"--learning_rate={args.learning_rate}", f"--train_batch_size={args.batch_size}",
               f"--save_checkpoints_steps={max(steps // 3, 1)}", f"--seed={args.seed}", *init]
    print("+ " + " ".join(command[1:]), flush=True)
    start = time.monotonic()
    subprocess.run(command, check=True, env=env, cwd=REPO)
    seconds = time.monotonic() - start
    with open(os.path.join(output, "eval_results.json")) as f:
        results = json.load(f)
    with open(os.path.join(output, "best", "albert_tf.json")) as f:
        best_step = json.load(f)["best_step"]
    return {**results, "best_step": best_step, "seconds": round(seconds, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pretrained", default="/tmp/albert_learning_curve/pretrain",
                        help="albert_tf checkpoint to fine-tune (with spm.model); default: learning_curve.py's")
    parser.add_argument("--glue_dir", default=os.path.join(REPO, "..", "shared", "data", "glue"),
                        help="GLUE directory with SST-2/ and MRPC/ (dev.tsv)")
    parser.add_argument("--work_dir", default="/tmp/albert_finetune_glue", help="data splits and fine-tuning runs")
    parser.add_argument("--results_dir", default=RESULTS, help="where finetune_glue.{md,json} go")
    parser.add_argument("--tasks", default="sst-2,mrpc", help="comma-separated: sst-2, mrpc")
    parser.add_argument("--use_train_files", action="store_true",
                        help="train on train.tsv and evaluate on all of dev.tsv (default: split dev.tsv in halves)")
    parser.add_argument("--max_seq_length", type=int, default=128, help="tokens per example (default 128)")
    parser.add_argument("--max_steps", "--train_step", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--learning_rate", type=float, default=1e-4, help="peak AdamW learning rate (default 1e-4)")
    parser.add_argument("--batch_size", type=int, default=32, help="examples per step (default 32)")
    parser.add_argument("--seed", type=int, default=12345, help="seed of the heads, the random init and data order")
    args = parser.parse_args(argv)

    metadata_file = os.path.join(args.pretrained, "albert_tf.json")
    spm = os.path.join(args.pretrained, "spm.model")
    for path in (metadata_file, spm):
        if not os.path.isfile(path):
            sys.exit(f"{path}: missing; pass --pretrained=<albert_tf checkpoint dir with spm.model> "
                     "(benchmarks/learning/learning_curve.py makes one)")
    with open(metadata_file) as f:
        config = json.load(f)["albert_config"]
    os.makedirs(args.work_dir, exist_ok=True)
    config_file = os.path.join(args.work_dir, "albert_config.json")
    with open(config_file, "w") as f:
        json.dump(config, f)
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    starts = (("pretrained", [f"--init_checkpoint={args.pretrained}"]),
              ("random init", [f"--albert_config={config_file}", f"--spm_model_file={spm}"]))
    records = []
    for task in args.tasks.split(","):
        if task not in GLUE_NAMES:
            sys.exit(f"--tasks: {task!r} is not one of {sorted(GLUE_NAMES)}")
        source = os.path.join(args.glue_dir, GLUE_NAMES[task])
        data = os.path.join(args.work_dir, task, "data")
        train_count, eval_count = copy_splits(source, data) if args.use_train_files else split_dev(
            os.path.join(source, "dev.tsv"), data)
        for start, init in starts:
            output = os.path.join(args.work_dir, task, start.replace(" ", "_"))
            result = run_classifier(task, data, output, init, args, env)
            records.append({"task": task, "start": start, "train": train_count, "eval": eval_count, **result})
            print(f"{task} {start}: accuracy {result['accuracy']:.4f}"
                  + (f"  F1 {result['f1']:.4f}" if "f1" in result else ""), flush=True)

    def cell(record, key):
        return f"{record[key]:.3f}" if key in record else ""

    rows = []
    for task in dict.fromkeys(r["task"] for r in records):
        pretrained, random = (next(r for r in records if r["task"] == task and r["start"] == s) for s, _ in starts)
        for r in (pretrained, random):
            rows.append((task, r["start"], f"{r['train']} / {r['eval']}", cell(r, "accuracy"), cell(r, "f1"),
                         r["best_step"], r["seconds"]))
        gain = {k: f"{pretrained[k] - random[k]:+.3f}" for k in ("accuracy", "f1") if k in pretrained}
        rows.append((task, "pretrained - random", "", gain["accuracy"], gain.get("f1", ""), "", ""))
    table = markdown_table(["task", "initialization", "train / eval examples", "accuracy", "F1", "best step",
                            "seconds"], rows)
    split = "train.tsv, evaluated on dev.tsv" if args.use_train_files else "dev.tsv split in halves (odd rows train)"
    title = (f"GLUE {split}. Model: {args.pretrained} (hidden {config['hidden_size']}, "
             f"{config['num_hidden_layers']} layers, vocab {config['vocab_size']}); seq {args.max_seq_length}, "
             f"{args.max_steps} steps, batch {args.batch_size}, lr {args.learning_rate}, seed {args.seed}; "
             "the best of the evaluated checkpoints.")
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "finetune_glue.json"), "w") as f:
        json.dump(portable({"args": vars(args), "results": records}), f, indent=2)
    with open(os.path.join(args.results_dir, "finetune_glue.md"), "w") as f:
        f.write(portable(f"{title}\n\n{table}\n"))
    print(f"\n{title}\n\n{table}")


if __name__ == "__main__":
    main()
