r"""Does pretraining help? SQuAD v1.1 fine-tuning from a pretrained checkpoint vs from random init.

  python -m benchmarks.downstream.finetune_squad [--pretrained=/tmp/albert_learning_curve/pretrain] \
      [--squad_file=../shared/data/squad/dev-v1.1.json] [--work_dir=/tmp/albert_finetune_squad]

  # smoke test: 4 articles, 5 steps
  python -m benchmarks.downstream.finetune_squad --max_articles=4 --max_steps=5 --results_dir=/tmp/squad_smoke

Only the official dev set is available offline, so it is split by article
(deterministic: every --eval_every-th article is held out; no context is in
both parts). The same `python -m albert_tf.run_squad` run then fine-tunes two
models with identical flags and seed: the --pretrained checkpoint (any albert_tf
checkpoint with spm.model; `benchmarks/learning/learning_curve.py` makes one from the
albert_tiny preset), and an encoder of the same config and vocabulary freshly
initialized. Both are scored on the held-out articles with the official EM/F1.

The window defaults (max_seq_length 128, doc_stride 64, max_query_length 32)
match learning_curve.py's pretraining length, so no position embedding is used
that pretraining never trained; pass --max_seq_length=384 --doc_stride=128
--max_query_length=64 for the paper's SQuAD recipe.

Writes RESULTS_DIR/finetune_squad.{md,json}.
"""

import argparse
import json
import os
import subprocess
import sys
import time


from benchmarks.common import REPO, RESULTS, child_env, markdown_table, portable



def split_by_article(squad_file, train_path, eval_path, eval_every, max_articles=None):
    """Writes the train and held-out SQuAD files; returns {part: (articles, questions)}."""
    with open(squad_file, encoding="utf-8") as f:
        dataset = json.load(f)
    articles = dataset["data"][:max_articles] if max_articles else dataset["data"]
    if len(articles) < 2:
        raise ValueError(f"{squad_file}: need at least 2 articles to split, got {len(articles)}")
    every = min(eval_every, len(articles))
    parts = {
        "train": [a for i, a in enumerate(articles) if i % every != every - 1],
        "eval": [a for i, a in enumerate(articles) if i % every == every - 1],
    }
    counts = {}
    for (name, part), path in zip(parts.items(), (train_path, eval_path)):
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"version": dataset.get("version", "1.1"), "data": part}, f)
        questions = sum(len(p["qas"]) for a in part for p in a["paragraphs"])
        counts[name] = (len(part), questions)
    return counts


def write_random_init(pretrained, directory, seed):
    """An encoder with the pretrained checkpoint's config and spm.model, freshly initialized."""
    import keras

    from albert_tf.models.model_dir_format import read_metadata, resolve_checkpoint
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.text.albert_tokenizer import SPM_MODEL_FILE, spm_model_path
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.networks.albert_encoder import AlbertEncoder

    source_dir, _ = resolve_checkpoint(pretrained)
    spm = spm_model_path(source_dir)
    if spm is None:
        raise FileNotFoundError(f"{source_dir}: holds no spm.model, which fine-tuning needs")
    config = AlbertConfig.from_dict(read_metadata(source_dir)["albert_config"])
    keras.utils.set_random_seed(seed)
    write_model_dir(AlbertEncoder(config), directory, "encoder", overwrite=True, files={SPM_MODEL_FILE: spm})
    return config


def run_squad(init_checkpoint, output_dir, train_file, eval_file, args, env):
    command = [sys.executable, "-m", "albert_tf.run_squad", "--version=1.1", "--do_train", "--do_predict",
               f"--train_file={train_file}", f"--predict_file={eval_file}", f"--init_checkpoint={init_checkpoint}",
               f"--output_dir={output_dir}", "--overwrite", f"--max_seq_length={args.max_seq_length}",
               f"--doc_stride={args.doc_stride}", f"--max_query_length={args.max_query_length}",
               f"--train_batch_size={args.train_batch_size}", f"--seed={args.seed}",
               f"--save_checkpoints_steps={args.save_checkpoints_steps}"]
    command.append(f"--num_train_steps={args.max_steps}" if args.max_steps else
                   f"--num_train_epochs={args.num_train_epochs}")
    if args.learning_rate:
        command.append(f"--learning_rate={args.learning_rate}")
    print("+ " + " ".join(command[1:]), flush=True)
    start = time.monotonic()
    subprocess.run(command, check=True, env=env, cwd=REPO)
    seconds = time.monotonic() - start
    with open(os.path.join(output_dir, "eval_results.json")) as f:
        metrics = json.load(f)
    with open(os.path.join(output_dir, "checkpoints", "albert_tf.json")) as f:
        steps = json.load(f)["train_steps"]
    return {"exact": metrics["exact"], "f1": metrics["f1"], "questions": metrics["total"], "steps": steps,
            "seconds": round(seconds, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pretrained", default="/tmp/albert_learning_curve/pretrain",
                        help="albert_tf checkpoint to fine-tune (with spm.model); default: learning_curve.py's")
    parser.add_argument("--squad_file", default=os.path.join(REPO, "..", "shared", "data", "squad", "dev-v1.1.json"),
                        help="SQuAD v1.1 JSON; its articles are split into train and held-out")
    parser.add_argument("--work_dir", default="/tmp/albert_finetune_squad",
                        help="features, fine-tuning runs and predictions")
    parser.add_argument("--results_dir", default=RESULTS, help="where finetune_squad.{md,json} go")
    parser.add_argument("--eval_every", type=int, default=5, help="every N-th article is held out (default 5: 20%%)")
    parser.add_argument("--max_articles", type=int, default=None, help="use only the first N articles (smoke runs)")
    parser.add_argument("--max_seq_length", type=int, default=128,
                        help="tokens per window")
    parser.add_argument("--doc_stride", type=int, default=64,
                        help="tokens between the starts of a context's windows")
    parser.add_argument("--max_query_length", type=int, default=32,
                        help="question tokens kept")
    parser.add_argument("--train_batch_size", type=int, default=32,
                        help="windows per step")
    parser.add_argument("--learning_rate", type=float, default=None, help="default: run_squad's (5e-5 for v1.1)")
    parser.add_argument("--num_train_epochs", type=float, default=2.0,
                        help="epochs as run_squad counts them: int(questions / batch x epochs) steps, as the "
                        "original (the recorded run, made when they counted windows, trained 1736 steps: "
                        "--max_steps=1736 repeats it)")
    parser.add_argument("--max_steps", type=int, default=None, help="train this many steps instead of epochs")
    parser.add_argument("--save_checkpoints_steps", type=int, default=1000,
                        help="a checkpoint every N steps")
    parser.add_argument("--seed", type=int, default=12345,
                        help="seed of the heads, the random init and data order")
    args = parser.parse_args(argv)

    if not os.path.isdir(args.pretrained):
        sys.exit(f"{args.pretrained}: no such checkpoint directory; run benchmarks/learning/learning_curve.py first or pass "
                 "--pretrained")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env = child_env(PYTHONUNBUFFERED="1")
    work = args.work_dir
    os.makedirs(work, exist_ok=True)
    train_file, eval_file = os.path.join(work, "train.json"), os.path.join(work, "eval.json")
    counts = split_by_article(args.squad_file, train_file, eval_file, args.eval_every, args.max_articles)
    random_init = os.path.join(work, "random_init")
    config = write_random_init(args.pretrained, random_init, args.seed)

    results = {}
    for name, init in (("pretrained", args.pretrained), ("random init", random_init)):
        output_dir = os.path.join(work, name.replace(" ", "_"))
        results[name] = run_squad(init, output_dir, train_file, eval_file, args, env)
        print(f"{name}: EM {results[name]['exact']:.2f} F1 {results[name]['f1']:.2f}", flush=True)

    title = (f"SQuAD v1.1 dev split by article: {counts['train'][0]} articles / {counts['train'][1]} questions "
             f"to train, {counts['eval'][0]} / {counts['eval'][1]} held out. Model: {args.pretrained} "
             f"(hidden {config.hidden_size}, {config.num_hidden_layers} layers, vocab {config.vocab_size}); "
             f"seq {args.max_seq_length}, stride {args.doc_stride}, batch {args.train_batch_size}, "
             f"lr {args.learning_rate or 'run_squad default'}, seed {args.seed}.")
    rows = [(name, f"{r['exact']:.2f}", f"{r['f1']:.2f}", r["steps"], r["seconds"]) for name, r in results.items()]
    gain = (results["pretrained"]["exact"] - results["random init"]["exact"],
            results["pretrained"]["f1"] - results["random init"]["f1"])
    rows.append(("pretrained - random", f"{gain[0]:+.2f}", f"{gain[1]:+.2f}", "", ""))
    table = markdown_table(["initialization", "EM", "F1", "steps", "seconds"], rows)
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "finetune_squad.json"), "w") as f:
        json.dump(portable({"args": vars(args), "split": counts, "results": results}), f, indent=2)
    with open(os.path.join(args.results_dir, "finetune_squad.md"), "w") as f:
        f.write(portable(f"{title}\n\n{table}\n"))
    print(f"\n{title}\n\n{table}")


if __name__ == "__main__":
    main()
