r"""Does it learn? Pretrains a small ALBERT on the real corpus and tracks held-out MLM and SOP accuracy.

  python -m benchmarks.learning.learning_curve [--corpus=../shared/data/corpus/corpus_paragraphs.txt] \
      [--work_dir=/tmp/albert_learning_curve] [--num_train_steps=8000]

Every 10th document of the corpus is held out. The rest goes through the real
CLIs: train_sentencepiece -> create_pretraining_data -> run_pretraining (LAMB,
the albert_tiny preset with the new vocabulary). Each saved checkpoint is then
evaluated on the held-out documents' instances. Writes
benchmarks/results/learning_curve.{md,json,png}. Rerunning resumes: every stage
reuses what --work_dir already holds. The final checkpoint
(WORK_DIR/pretrain) is what the fine-tuning benchmarks start from.
"""

import argparse
import json
import os
import subprocess
import sys

from benchmarks.common import REPO, RESULTS, SHARED_CORPUS, child_env, portable



def tool(*args, env):
    print("+ python -m " + " ".join(args), flush=True)
    subprocess.run([sys.executable, "-m", *args], check=True, env=env, cwd=REPO)


def evaluate_checkpoints(output_dir, eval_prefix, seq_length, predictions, batch_size=64, only_steps=None):
    import tensorflow as tf

    from albert_tf.models.model_dir_format import checkpoints_newest_first
    from albert_tf.models.model_io import load_pretrainer
    from albert_tf.data.pretraining_dataset import data_special_ids, expand_data_files, make_pretraining_dataset
    from albert_tf.tasks.pretraining_losses import batch_sums, metrics_from_sums
    from albert_tf.tasks.pretraining_losses import MODEL_INPUTS

    files = expand_data_files(eval_prefix)
    mask_id = data_special_ids(files).mask
    dataset = make_pretraining_dataset(files, batch_size, seq_length, predictions, is_training=False)
    curve = []
    for prefix in reversed(checkpoints_newest_first(output_dir)):
        if only_steps is not None and int(prefix.rsplit("-", 1)[1]) not in only_steps:
            continue
        model = load_pretrainer(prefix)
        step_fn = tf.function(lambda batch, model=model: batch_sums(
            model({name: batch[name] for name in MODEL_INPUTS}, training=False), batch, mask_id))
        totals = {}
        for batch in dataset:
            for key, value in step_fn(batch).items():
                totals[key] = totals.get(key, 0.0) + float(value)
        metrics = metrics_from_sums(totals)
        metrics["step"] = int(prefix.rsplit("-", 1)[1])
        metrics["sequences"] = int(totals["sequences"])
        print(f"held-out at step {metrics['step']}: mlm_acc {metrics['masked_lm_accuracy']:.4f} "
              f"(at [MASK] inputs {metrics['masked_lm_accuracy_at_mask']:.4f}) "
              f"sop_acc {metrics['sentence_order_accuracy']:.4f}", flush=True)
        curve.append(metrics)
    return sorted(curve, key=lambda m: m["step"])


def plot(curve, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [m["step"] for m in curve]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(steps, [m["masked_lm_accuracy"] for m in curve], marker="o", label="all masked positions")
    left.plot(steps, [m["masked_lm_accuracy_at_mask"] for m in curve], marker="o", label="inputs that are [MASK]")
    left.set(title="masked-LM accuracy (held-out)", xlabel="step", ylabel="accuracy")
    left.legend()
    right.plot(steps, [m["sentence_order_accuracy"] for m in curve], marker="o", label="albert_tf")
    right.axhline(0.5, color="grey", linestyle="--", label="chance")
    right.set(title="sentence-order accuracy (held-out)", xlabel="step", ylim=(0.4, 1.0))
    right.legend()
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=SHARED_CORPUS,
                        help="paragraph-per-line corpus, documents separated by blank lines")
    parser.add_argument("--work_dir", default="/tmp/albert_learning_curve",
                        help="holds the vocabulary, TFRecords and checkpoints; reused when rerun")
    parser.add_argument("--vocab_size", type=int, default=8000, help="SentencePiece vocabulary size")
    parser.add_argument("--max_seq_length", type=int, default=128, help="tokens per sequence")
    parser.add_argument("--max_predictions_per_seq", type=int, default=20, help="masked positions per sequence")
    parser.add_argument("--dupe_factor", type=int, default=3, help="times each document is masked differently")
    parser.add_argument("--train_batch_size", type=int, default=32, help="sequences per step")
    parser.add_argument("--num_train_steps", type=int, default=8000, help="pretraining steps")
    parser.add_argument("--num_warmup_steps", type=int, default=400, help="linear warm-up steps")
    parser.add_argument("--learning_rate", type=float, default=1e-2,
                        help="peak LAMB learning rate (see the README on small batches)")
    parser.add_argument("--save_checkpoints_steps", type=int, default=500,
                        help="a checkpoint (and a held-out evaluation) every N steps")
    args = parser.parse_args(argv)

    env = child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    work = args.work_dir
    os.makedirs(work, exist_ok=True)
    train_text, eval_text = os.path.join(work, "train.txt"), os.path.join(work, "heldout.txt")
    from albert_tf.data.heldout_split import split_documents

    kept, held_out = split_documents(args.corpus, train_text, eval_text)
    spm = os.path.join(work, "spm")
    if not os.path.exists(spm + ".model"):
        tool("albert_tf.train_sentencepiece", f"--input={train_text}", "--input_format=paragraphs",
             f"--vocab_size={args.vocab_size}", f"--output_prefix={spm}", env=env)
    shapes = [f"--max_seq_length={args.max_seq_length}", f"--max_predictions_per_seq={args.max_predictions_per_seq}"]
    for name, text, dupe in (("train", train_text, args.dupe_factor), ("heldout", eval_text, 1)):
        prefix = os.path.join(work, "data", name)
        if not os.path.exists(prefix + ".metadata.json"):
            tool("albert_tf.create_pretraining_data", f"--input_file={text}", "--input_format=paragraphs",
                 f"--output_file={prefix}", f"--spm_model_file={spm}.model", f"--dupe_factor={dupe}",
                 "--num_workers=2", "--num_output_shards=4", *shapes, env=env)
    with open(os.path.join(REPO, "configs", "albert_tiny.json")) as f:
        config = json.load(f)
    config["vocab_size"] = args.vocab_size
    config_file = os.path.join(work, "albert_tiny_8k.json")
    with open(config_file, "w") as f:
        json.dump(config, f, indent=2)
    output_dir = os.path.join(work, "pretrain")
    tool("albert_tf.run_pretraining", f"--input_file={os.path.join(work, 'data', 'train')}",
         f"--albert_config={config_file}", f"--output_dir={output_dir}", f"--spm_model_file={spm}.model",
         f"--train_batch_size={args.train_batch_size}", f"--num_train_steps={args.num_train_steps}",
         f"--num_warmup_steps={args.num_warmup_steps}", f"--learning_rate={args.learning_rate}",
         f"--save_checkpoints_steps={args.save_checkpoints_steps}", "--iterations_per_loop=50",
         f"--keep_checkpoint_max={args.num_train_steps // args.save_checkpoints_steps + 1}", *shapes, env=env)

    curve = evaluate_checkpoints(output_dir, os.path.join(work, "data", "heldout"), args.max_seq_length,
                                 args.max_predictions_per_seq)
    os.makedirs(RESULTS, exist_ok=True)
    title = (f"albert_tiny (vocab {args.vocab_size}), LAMB lr {args.learning_rate}, batch {args.train_batch_size}, "
             f"seq {args.max_seq_length}; {kept} train / {held_out} held-out documents")
    plot(curve, os.path.join(RESULTS, "learning_curve.png"), title)
    with open(os.path.join(RESULTS, "learning_curve.json"), "w") as f:
        json.dump(portable({"args": vars(args), "curve": curve}), f, indent=2)
    rows = "\n".join(f"| {m['step']} | {m['masked_lm_accuracy']:.3f} | {m['masked_lm_accuracy_at_mask']:.3f} | "
                     f"{m['masked_lm_loss']:.3f} | {m['sentence_order_accuracy']:.3f} |" for m in curve)
    with open(os.path.join(RESULTS, "learning_curve.md"), "w") as f:
        f.write(portable(f"{title}; held-out: {curve[-1]['sequences']:,} sequences.\n\n"
                         "| step | MLM accuracy | MLM accuracy at [MASK] inputs | MLM loss | SOP accuracy |\n"
                         "|---|---|---|---|---|\n" + rows + "\n"))
    print(open(os.path.join(RESULTS, "learning_curve.md")).read())


if __name__ == "__main__":
    main()
