r"""Fine-tunes ALBERT on RACE (4-way multiple choice) and reports accuracy overall and for middle/high.

  python -m albert_tf.run_race --data_dir=RACE --init_checkpoint=/ckpt/albert_base \
      --output_dir=/tmp/race --do_train --do_eval

Defaults are the original recipe (docs/reference.md, "Fine-tuning recipes"): max_seq_length 512,
max_qa_length 128, batch 32, AdamW lr 1e-5, 12k steps with 1k warmup. Every
checkpoint is evaluated on dev and the best is kept in OUTPUT_DIR/best.
"""

import json
import os

from absl import flags

from albert_tf import cli
from albert_tf.training.finetuning_flags import define_model_flags, define_training_flags


def define_flags():
    flags.DEFINE_string("data_dir", None, "The RACE directory ({train,dev,test}/{middle,high}/*.txt).")
    define_model_flags("checkpoints, the best model and results")
    flags.DEFINE_multi_enum("levels", ["middle", "high"], ["middle", "high"], "RACE levels to use (repeatable).")
    flags.DEFINE_integer("max_seq_length", 512, "Tokens per (article, question + option) sequence.")
    flags.DEFINE_integer("max_qa_length", 128, "Tokens of question + option at most.")
    flags.DEFINE_bool("do_train", False, "Fine-tune on train/.")
    flags.DEFINE_bool("do_eval", False, "Evaluate on dev/ (every checkpoint while training).")
    flags.DEFINE_bool("do_predict", False, "Evaluate on test/ and write test predictions.")
    define_training_flags("Questions", train_batch_size=32, learning_rate=1e-5, num_train_steps=12000,
                          num_warmup_steps=1000, defaults_note="Default: the original RACE recipe (batch 32, lr "
                          "1e-5, 12000 steps, 1000 warmup).")


FLAGS = flags.FLAGS


def predict(model, arrays, batch_size):
    from albert_tf.training.finetuning import predict_logits

    return predict_logits(model, arrays, batch_size).argmax(-1)


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    for name in ("data_dir", "output_dir"):
        if not FLAGS[name].value:
            raise ValueError(f"--{name} required")
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise ValueError("nothing to do: pass --do_train, --do_eval and/or --do_predict")
    if not FLAGS.init_checkpoint and not (FLAGS.do_train and FLAGS.albert_config):
        raise ValueError("--init_checkpoint required (or, to train from a random start, --albert_config)")
    if not 0 < FLAGS.max_qa_length <= FLAGS.max_seq_length - 3:
        raise ValueError(f"--max_qa_length={FLAGS.max_qa_length} must be in 1..--max_seq_length - 3")
    import tensorflow as tf

    from albert_tf.checkpoints.model_dir import find_spm_model
    from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
    from albert_tf.tasks import race
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.training.finetuning import finetune, model_for_evaluation, report_best, starting_encoder

    spm = find_spm_model(FLAGS.init_checkpoint, FLAGS.spm_model_file)
    tokenizer = AlbertTokenizer(spm, lower_case=FLAGS.do_lower_case)
    levels = tuple(dict.fromkeys(FLAGS.levels))

    def encoded(split):
        examples = race.read_split(FLAGS.data_dir, split, levels)
        return examples, race.encode_examples(examples, tokenizer, FLAGS.max_seq_length, FLAGS.max_qa_length)

    dev = encoded("dev") if FLAGS.do_eval else None

    def evaluate(model):
        return race.accuracies(predict(model, dev[1], FLAGS.eval_batch_size), dev[0])

    os.makedirs(FLAGS.output_dir, exist_ok=True)
    best_dir = os.path.join(FLAGS.output_dir, "best")
    metadata = {"num_choices": race.NUM_CHOICES, "max_seq_length": FLAGS.max_seq_length,
                "max_qa_length": FLAGS.max_qa_length}
    model = None
    if FLAGS.do_train:
        encoder = starting_encoder(FLAGS.init_checkpoint, FLAGS.albert_config, FLAGS.seed)
        model = AlbertMultipleChoice(encoder, race.NUM_CHOICES).build_variables()
        train_examples, train = encoded("train")

        def loss_fn(batch, outputs):
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                batch["label_ids"], tf.cast(outputs["logits"], tf.float32)))

        print(f"Fine-tuning on {len(train_examples):,} RACE questions: {FLAGS.num_train_steps} steps, batch "
              f"{FLAGS.train_batch_size}, lr {FLAGS.learning_rate}.", flush=True)
        result = finetune(model, train, loss_fn, FLAGS.num_train_steps, FLAGS.train_batch_size, FLAGS.learning_rate,
                          min(FLAGS.num_warmup_steps, FLAGS.num_train_steps), os.path.join(FLAGS.output_dir, "checkpoints"),
                          "multiple_choice", metadata=metadata, save_checkpoints_steps=FLAGS.save_checkpoints_steps,
                          keep_checkpoint_max=FLAGS.keep_checkpoint_max, seed=FLAGS.seed,
                          evaluate=evaluate if FLAGS.do_eval else None,
                          best_metric="accuracy" if FLAGS.do_eval else None, best_dir=best_dir, spm_model_file=spm,
                          summary_dir=FLAGS.output_dir)
        report_best(result, "accuracy", best_dir)
    if FLAGS.do_eval or FLAGS.do_predict:
        model = model_for_evaluation(best_dir, model, FLAGS.init_checkpoint, "multiple_choice")
    results = {}
    if FLAGS.do_eval:
        results["dev"] = evaluate(model)
    if FLAGS.do_predict:
        examples, arrays = encoded("test")
        predictions = predict(model, arrays, FLAGS.predict_batch_size)
        results["test"] = race.accuracies(predictions, examples)
        path = os.path.join(FLAGS.output_dir, "test_predictions.json")
        with open(path, "w") as f:
            json.dump({e.guid: "ABCD"[int(p)] for e, p in zip(examples, predictions)}, f, indent=2)
        print(f"Predictions: {path}", flush=True)
    if results:
        with open(os.path.join(FLAGS.output_dir, "eval_results.json"), "w") as f:
            json.dump(results, f, indent=2, sort_keys=True)
        for split, metrics in results.items():
            print(f"{split}: " + "  ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items())), flush=True)
    print(f"Done. Output in {FLAGS.output_dir}: " + ", ".join(
        name for name, wanted in (("checkpoints/ (resumable)", FLAGS.do_train),
                                  ("best/ (load_model: multiple_choice)", os.path.isdir(best_dir)),
                                  ("eval_results.json", bool(results)),
                                  ("test_predictions.json", FLAGS.do_predict)) if wanted) + ".", flush=True)
    return 0


def console_main():
    """The `albert-run-race` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
