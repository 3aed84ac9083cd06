r"""Fine-tunes ALBERT on a GLUE task, evaluates every checkpoint, keeps the best, writes GLUE submissions.

  python -m albert_tf.run_classifier --task_name=mnli --data_dir=glue/MNLI \
      --init_checkpoint=/ckpt/albert_base --output_dir=/tmp/mnli --do_train --do_eval --do_predict

Per-task defaults are the original ALBERT recipe (lr, steps, warmup, batch:
docs/reference.md, "Fine-tuning recipes") and max_seq_length 512; any flag overrides them. Metrics as GLUE
defines them: Matthews correlation (CoLA), accuracy and F1 (MRPC, QQP), Pearson
and Spearman (STS-B, a regression), accuracy (the rest; MNLI matched and
mismatched). Writes OUTPUT_DIR/checkpoints/ckpt-N (resumable; with --do_eval
each is evaluated on dev), OUTPUT_DIR/best (the best of them, an albert_tf
model directory of kind "classifier" with spm.model), eval_results.json, and
the GLUE submission files `index<TAB>prediction` (CoLA.tsv, MNLI-m.tsv,
MNLI-mm.tsv, STS-B.tsv, ...). --init_checkpoint may also be a fine-tuned
classifier, to evaluate or predict without training.
"""

import json
import os

from absl import flags

from albert_tf import cli
from albert_tf.training.finetuning_flags import define_model_flags, define_training_flags

# task: (learning rate, steps, warmup, batch), from the original ALBERT fine-tuning scripts (docs/reference.md, "Fine-tuning recipes").
# WNLI is not in the original table: ours, sized for its 635 training pairs.
RECIPES = {
    "cola": (1e-5, 5336, 320, 16), "sst-2": (1e-5, 20935, 1256, 32), "mrpc": (2e-5, 800, 200, 32),
    "sts-b": (2e-5, 3598, 214, 16), "qqp": (5e-5, 14000, 1000, 128), "mnli": (3e-5, 10000, 1000, 128),
    "qnli": (1e-5, 33112, 1986, 32), "rte": (3e-5, 800, 200, 32), "wnli": (2e-5, 2000, 250, 8),
}


def define_flags():
    flags.DEFINE_enum("task_name", None, sorted(RECIPES), "The GLUE task (any case).", case_sensitive=False)
    flags.DEFINE_string("data_dir", None, "The task's GLUE directory (train.tsv, dev.tsv, test.tsv).")
    define_model_flags("checkpoints, the best model, results and predictions")
    flags.DEFINE_integer("max_seq_length", 512, "Tokens per example (original: 512).")
    flags.DEFINE_bool("do_train", False, "Fine-tune on train.tsv.")
    flags.DEFINE_bool("do_eval", False, "Evaluate on dev.tsv (every checkpoint while training).")
    flags.DEFINE_bool("do_predict", False, "Write GLUE submission files for test.tsv.")
    define_training_flags("Examples", train_batch_size=None, learning_rate=None, num_train_steps=None,
                          num_warmup_steps=None, defaults_note="Default: the task's recipe (the original "
                          "per-task lr, steps, warmup and batch).")
    flags.DEFINE_float("dropout", 0.1, "Dropout before the classifier (original: 0.1).")


FLAGS = flags.FLAGS


def predict_outputs(model, arrays, batch_size, regression):
    """Predictions (label indices or scores) for encoded arrays."""
    from albert_tf.training.finetuning import predict_logits

    logits = predict_logits(model, arrays, batch_size)
    return logits[:, 0] if regression else logits.argmax(-1)


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    for name in ("task_name", "data_dir", "output_dir"):
        if not FLAGS[name].value:
            raise ValueError(f"--{name} required")
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise ValueError("nothing to do: pass --do_train, --do_eval and/or --do_predict")
    if not FLAGS.init_checkpoint and not (FLAGS.do_train and FLAGS.albert_config):
        raise ValueError("--init_checkpoint required (or, to train from a random start, --albert_config)")
    import numpy as np

    from albert_tf.checkpoints.model_dir import find_spm_model
    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.tasks import glue
    from albert_tf.tasks.glue_metrics import primary_metric, task_metrics
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.training.finetuning import finetune, model_for_evaluation, report_best, starting_encoder

    task = FLAGS.task_name.lower()
    spec = glue.task_spec(task)
    regression = glue.is_regression(task)
    lr, steps, warmup, batch = RECIPES[task]
    lr, steps = FLAGS.learning_rate or lr, FLAGS.num_train_steps or steps
    warmup = FLAGS.num_warmup_steps if FLAGS.num_warmup_steps is not None else min(warmup, steps)
    batch = FLAGS.train_batch_size or batch
    spm = find_spm_model(FLAGS.init_checkpoint, FLAGS.spm_model_file)
    tokenizer = AlbertTokenizer(spm, lower_case=FLAGS.do_lower_case)
    num_labels = 1 if regression else len(spec.labels)
    label_names = ["score"] if regression else list(spec.labels)
    metadata = {"num_labels": num_labels, "label_names": label_names, "is_regression": regression, "task_name": task,
                "max_seq_length": FLAGS.max_seq_length}

    def read(split):
        return {name: glue.read_examples(task, os.path.join(FLAGS.data_dir, file), split)
                for name, file in glue.split_files(task, split).items()}

    dev = {name: glue.encode_examples(examples, tokenizer, FLAGS.max_seq_length, regression)
           for name, examples in read("dev").items()} if FLAGS.do_eval else {}

    def evaluate(model):
        results = {}
        for name, arrays in dev.items():
            metrics = task_metrics(task, predict_outputs(model, arrays, FLAGS.eval_batch_size, regression),
                                   arrays["label_ids"])
            results.update({(f"{name}_{k}" if name else k): v for k, v in metrics.items()})
        return results

    best_key = primary_metric(task) if task != "mnli" else f"matched_{primary_metric(task)}"
    best_dir = os.path.join(FLAGS.output_dir, "best")
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    model = None
    if FLAGS.do_train:
        encoder = starting_encoder(FLAGS.init_checkpoint, FLAGS.albert_config, FLAGS.seed)
        model = AlbertClassifier(encoder, num_labels, dropout=FLAGS.dropout)
        train = glue.encode_examples(read("train")[""], tokenizer, FLAGS.max_seq_length, regression)
        import tensorflow as tf

        def loss_fn(batch, outputs):
            logits = tf.cast(outputs["logits"], tf.float32)
            if regression:
                return tf.reduce_mean(tf.square(logits[:, 0] - batch["label_ids"]))
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(batch["label_ids"], logits))

        print(f"Fine-tuning on {len(train['input_word_ids']):,} {task} examples: {steps} steps, batch {batch}, "
              f"lr {lr}, warmup {warmup}.", flush=True)
        result = finetune(model, train, loss_fn, steps, batch, lr, warmup,
                          os.path.join(FLAGS.output_dir, "checkpoints"), "classifier", metadata=metadata,
                          save_checkpoints_steps=FLAGS.save_checkpoints_steps,
                          keep_checkpoint_max=FLAGS.keep_checkpoint_max, seed=FLAGS.seed,
                          evaluate=evaluate if FLAGS.do_eval else None, best_metric=best_key if FLAGS.do_eval else None,
                          best_dir=best_dir, spm_model_file=spm, summary_dir=FLAGS.output_dir)
        report_best(result, best_key, best_dir)
    if FLAGS.do_eval or FLAGS.do_predict:
        model = model_for_evaluation(best_dir, model, FLAGS.init_checkpoint, "classifier", task_name=task)
    if FLAGS.do_eval:
        results = evaluate(model)
        with open(os.path.join(FLAGS.output_dir, "eval_results.json"), "w") as f:
            json.dump(results, f, indent=2, sort_keys=True)
        print("dev: " + "  ".join(f"{k} {v:.4f}" for k, v in sorted(results.items())), flush=True)
    if FLAGS.do_predict:
        for name, examples in read("test").items():
            arrays = glue.encode_examples(examples, tokenizer, FLAGS.max_seq_length, regression)
            predictions = predict_outputs(model, arrays, FLAGS.predict_batch_size, regression)
            suffix = {"matched": "-m", "mismatched": "-mm"}.get(name, "")
            path = os.path.join(FLAGS.output_dir, f"{spec.submission_name}{suffix}.tsv")
            with open(path + ".tmp", "w") as f:
                f.write("index\tprediction\n")
                for example, prediction in zip(examples, predictions):
                    if regression:  # STS-B scores are similarities in [0, 5]
                        value = f"{float(np.clip(prediction, 0.0, 5.0)):.3f}"
                    else:
                        value = spec.labels[int(prediction)]
                    f.write(f"{example.guid}\t{value}\n")
            os.replace(path + ".tmp", path)
            print(f"Predictions: {path}", flush=True)
    print(f"Done. Output in {FLAGS.output_dir}: " + ", ".join(
        name for name, wanted in (("checkpoints/ (resumable)", FLAGS.do_train),
                                  ("best/ (load_model: a classifier)", os.path.isdir(best_dir)),
                                  ("eval_results.json", FLAGS.do_eval),
                                  (f"{spec.submission_name}*.tsv", FLAGS.do_predict)) if wanted) + ".", flush=True)
    return 0


def console_main():
    """The `albert-run-classifier` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
