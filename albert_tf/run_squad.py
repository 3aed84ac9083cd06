r"""Fine-tunes ALBERT on SQuAD v1.1 or v2.0 and writes predictions in the official format.

  # Train on SQuAD 1.1 from a pretrained (or converted) albert_tf checkpoint, then predict dev
  python -m albert_tf.run_squad --version=1.1 --do_train --do_predict \
      --train_file=train-v1.1.json --predict_file=dev-v1.1.json \
      --init_checkpoint=/ckpt/albert_base --output_dir=/tmp/squad11

  # SQuAD 2.0: unanswerable questions, decided by the [CLS] null score
  python -m albert_tf.run_squad --version=2.0 --do_train --do_predict \
      --train_file=train-v2.0.json --predict_file=dev-v2.0.json \
      --init_checkpoint=/ckpt/albert_base --output_dir=/tmp/squad20

  # Predict only, with a fine-tuned model (OUTPUT_DIR/model of a training run)
  python -m albert_tf.run_squad --version=1.1 --do_predict --predict_file=dev-v1.1.json \
      --init_checkpoint=/tmp/squad11/model --output_dir=/tmp/squad11_dev

The defaults are the original recipe (docs/reference.md, "Fine-tuning recipes"): max_seq_length 384,
doc_stride 128, max_query_length 64, batch 48, AdamW with lr 5e-5 (v1.1) or
3e-5 (v2.0), 10% warmup then linear decay, weight decay 0.01, gradient norm
clipped to 1.0.

Writes into --output_dir:
  model/                   the fine-tuned model (albert_tf checkpoint, kind
                           "span_labeler", with spm.model): `load_model` reads it
  checkpoints/ckpt-N       training checkpoints (model and optimizer)
  predictions.json         {question id: answer text}, the official format
  nbest_predictions.json   the n best answers per question, with probabilities
  null_odds.json           v2.0: score_null - best span score per question (the
                           official evaluation's --na-prob-file)
  eval_results.json        EM / F1 (official definitions) when the predict file
                           has answers; for v2.0 also the best null threshold
"""

import json
import math
import os
import shutil

from absl import flags

from albert_tf import cli
from albert_tf.tasks import squad  # no TensorFlow: that loads quietly, in cli.run

DEFAULT_LEARNING_RATES = {"1.1": 5e-5, "2.0": 3e-5}
MODEL_SUBDIR = "model"
CHECKPOINT_SUBDIR = "checkpoints"
EVAL_RESULTS_FILE = "eval_results.json"


def define_flags():
    flags.DEFINE_enum("version", None, list(squad.VERSIONS), "SQuAD version of the files: 1.1, or 2.0 (adds "
                      "unanswerable questions, predicted as \"\" by the [CLS] null score).")
    flags.DEFINE_string("train_file", None, "SQuAD JSON to train on (official layout), for --do_train.")
    flags.DEFINE_string("predict_file", None, "SQuAD JSON to answer, for --do_predict; scored with the official "
                        "EM/F1 when its questions have answers.")
    flags.DEFINE_string("init_checkpoint", None, "What to start from: an albert_tf checkpoint directory of a "
                        "pretrainer or encoder, or an `albert_tf.export` directory (its encoder SavedModel); a fresh "
                        "span head is added. Or a span_labeler checkpoint (a fine-tuned model, OUTPUT_DIR/model; "
                        "needed for --do_predict without --do_train). Convert Google or Hugging Face checkpoints "
                        "first with `python -m albert_tf.convert`.")
    flags.DEFINE_string("output_dir", None, "Where the model, checkpoints, predictions and metrics go.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model. Default: the spm.model stored in "
                        "--init_checkpoint.")
    flags.DEFINE_integer("max_seq_length", 384, "Tokens per window: [CLS] question [SEP] context [SEP] "
                         "(original: 384).")
    flags.DEFINE_integer("doc_stride", 128, "Tokens between the starts of consecutive windows over a long "
                         "context (original: 128).")
    flags.DEFINE_integer("max_query_length", 64, "Questions are cut to this many tokens (original: 64).")
    flags.DEFINE_integer("train_batch_size", 48, "Windows per training step (original: 48).")
    flags.DEFINE_integer("predict_batch_size", 8, "Windows per prediction batch (original: 8).")
    flags.DEFINE_float("learning_rate", None, "Peak AdamW learning rate. Default: 5e-5 for --version=1.1, 3e-5 "
                       "for 2.0 (the original scripts).")
    flags.DEFINE_float("num_train_epochs", 2.0, "Passes over the training windows; ignored when "
                       "--num_train_steps is set.")
    flags.DEFINE_integer("num_train_steps", None, "Training steps in total. Default: --num_train_epochs x "
                         "training windows / --train_batch_size.")
    flags.DEFINE_alias("train_step", "num_train_steps")
    flags.DEFINE_integer("num_warmup_steps", None, "Linear warmup steps; when set, replaces --warmup_proportion "
                         "(the name run_pretraining, run_classifier and run_race use too).")
    flags.DEFINE_alias("warmup_step", "num_warmup_steps")
    flags.DEFINE_bool("do_lower_case", True, "Lowercase as the pretraining data was.")
    flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps with a linear warmup of the learning rate "
                       "from 0 (original: 0.1); it then decays linearly to 0.")
    flags.DEFINE_integer("n_best_size", 20, "Answers kept per question in nbest_predictions.json, and start/end "
                         "candidates tried per window (original: 20).")
    flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in tokens (original: 30).")
    flags.DEFINE_float("null_score_diff_threshold", 0.0, "v2.0: predict no answer when score_null - best span "
                       "score exceeds this (logit units; default 0.0). eval_results.json's best_f1_thresh is the "
                       "value that would have been best on the predict file.")
    flags.DEFINE_bool("do_train", False, "Fine-tune on --train_file.")
    flags.DEFINE_bool("do_predict", False, "Answer the questions of --predict_file.")
    flags.DEFINE_integer("save_checkpoints_steps", 1000, "Save a training checkpoint every this many steps (and at "
                         "the end).")
    flags.DEFINE_integer("keep_checkpoint_max", 3, "Training checkpoints kept in OUTPUT_DIR/checkpoints.")
    flags.DEFINE_integer("seed", 12345, "Seed of the span head's initialization, dropout and the input order.")
    flags.DEFINE_bool("overwrite", False, "Replace the model and predictions of an earlier run in --output_dir.")


FLAGS = flags.FLAGS


def _validate_flags():
    if not FLAGS.version:
        raise ValueError("--version is required (1.1 or 2.0)")
    if not (FLAGS.do_train or FLAGS.do_predict):
        raise ValueError("nothing to do: pass --do_train, --do_predict or both")
    required = {"output_dir": FLAGS.output_dir, "init_checkpoint": FLAGS.init_checkpoint}
    if FLAGS.do_train:
        required["train_file"] = FLAGS.train_file
    if FLAGS.do_predict:
        required["predict_file"] = FLAGS.predict_file
    missing = [f"--{name}" for name, value in required.items() if not value]
    if missing:
        raise ValueError(f"{' and '.join(missing)} required")
    for name in ("max_seq_length", "doc_stride", "max_query_length", "train_batch_size", "predict_batch_size",
                 "n_best_size", "max_answer_length", "save_checkpoints_steps", "keep_checkpoint_max"):
        if FLAGS[name].value < 1:
            raise ValueError(f"--{name} must be >= 1, got {FLAGS[name].value}")
    if FLAGS.max_seq_length <= FLAGS.max_query_length + 3:
        raise ValueError(f"--max_seq_length={FLAGS.max_seq_length} must exceed --max_query_length="
                         f"{FLAGS.max_query_length} + 3 ([CLS] and two [SEP]) to leave room for the context")
    if FLAGS.num_train_steps is not None and FLAGS.num_train_steps < 1:
        raise ValueError(f"--num_train_steps must be >= 1, got {FLAGS.num_train_steps}")
    if FLAGS.num_train_epochs <= 0:
        raise ValueError(f"--num_train_epochs must be > 0, got {FLAGS.num_train_epochs}")
    if FLAGS.num_warmup_steps is not None and FLAGS.num_warmup_steps < 0:
        raise ValueError(f"--num_warmup_steps must be >= 0, got {FLAGS.num_warmup_steps}")
    if not 0 <= FLAGS.warmup_proportion <= 1:
        raise ValueError(f"--warmup_proportion must be in [0, 1], got {FLAGS.warmup_proportion}")
    if FLAGS.learning_rate is not None and FLAGS.learning_rate <= 0:
        raise ValueError(f"--learning_rate must be > 0, got {FLAGS.learning_rate}")
    for name in ("train_file", "predict_file", "spm_model_file"):
        path = FLAGS[name].value
        if path and not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such file (--{name})")
    outputs = [MODEL_SUBDIR, CHECKPOINT_SUBDIR] if FLAGS.do_train else []
    outputs += [squad.PREDICTIONS_FILE] if FLAGS.do_predict else []
    for name in outputs:
        path = os.path.join(FLAGS.output_dir, name)
        if os.path.exists(path) and not FLAGS.overwrite:
            raise FileExistsError(f"{path} exists from an earlier run; choose another --output_dir or pass "
                                  "--overwrite")


def load_tokenizer(init_checkpoint, spm_model_file=None, lower_case=True):
    """The tokenizer of --spm_model_file, else the spm.model stored with --init_checkpoint."""
    from albert_tf.checkpoints.model_dir import find_spm_model
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    return AlbertTokenizer(find_spm_model(init_checkpoint, spm_model_file), lower_case=lower_case)


def load_span_labeler(init_checkpoint, for_training):
    """(AlbertSpanLabeler, what it was loaded from), from an albert_tf checkpoint or an exported encoder."""
    from albert_tf.checkpoints.model_dir import exported_encoder_dir, load_encoder, load_model
    from albert_tf.models.albert_span_labeler import MODEL_KIND, AlbertSpanLabeler

    if exported_encoder_dir(init_checkpoint):
        kind, model = "exported encoder", load_encoder(init_checkpoint)
    else:
        model, metadata = load_model(init_checkpoint)
        kind = metadata["model"]
        if kind == MODEL_KIND:
            return model, kind
    if not for_training:
        raise ValueError(f"{init_checkpoint}: has no span head (it holds a {kind}); fine-tune it first (--do_train), "
                         "or pass a span_labeler checkpoint (OUTPUT_DIR/model of a training run)")
    return AlbertSpanLabeler(getattr(model, "encoder", model)), kind


def make_features(path, tokenizer, labeled, what):
    from albert_tf.progress import Progress

    articles, examples = squad.read_squad(path, FLAGS.version, labeled=labeled)
    if not examples:
        raise ValueError(f"{path}: no questions")
    progress = Progress(len(examples), lambda done, elapsed: f"{what}: {done}/{len(examples)} questions")
    features = squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=FLAGS.max_seq_length, doc_stride=FLAGS.doc_stride,
        max_query_length=FLAGS.max_query_length, progress=progress)
    progress.finish(len(examples))
    return articles, examples, features


def check_vocabulary(model, tokenizer):
    vocab_size = model.albert_config.vocab_size
    if tokenizer.vocab_size > vocab_size:
        raise ValueError(f"{tokenizer.source}: {tokenizer.vocab_size} pieces, more than the model's vocab_size "
                         f"{vocab_size}; pass the SentencePiece model the checkpoint was trained with")
    if FLAGS.max_seq_length > model.albert_config.max_position_embeddings:
        raise ValueError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the model's max_position_embeddings "
                         f"({model.albert_config.max_position_embeddings})")


def train(model, features, output_dir):
    """Fine-tunes `model` on the features; returns the number of steps run."""
    from albert_tf.tasks.squad_training import train_span_labeler

    arrays = squad.feature_arrays(features)
    checkpoint_dir = os.path.join(output_dir, CHECKPOINT_SUBDIR)
    shutil.rmtree(checkpoint_dir, ignore_errors=True)  # an earlier run's, replaced under --overwrite
    num_train_steps = FLAGS.num_train_steps or max(
        1, math.ceil(len(features) * FLAGS.num_train_epochs / FLAGS.train_batch_size))
    learning_rate = FLAGS.learning_rate or DEFAULT_LEARNING_RATES[FLAGS.version]
    warmup = (min(FLAGS.num_warmup_steps, num_train_steps) if FLAGS.num_warmup_steps is not None
              else int(num_train_steps * FLAGS.warmup_proportion))
    print(f"Training on {len(features)} windows: {num_train_steps} steps of batch {FLAGS.train_batch_size}, "
          f"lr {learning_rate:g}, {warmup} warmup steps.", flush=True)
    train_span_labeler(
        model, arrays, num_train_steps=num_train_steps, batch_size=FLAGS.train_batch_size,
        learning_rate=learning_rate, num_warmup_steps=warmup,
        checkpoint_dir=checkpoint_dir,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps, seed=FLAGS.seed,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max, summary_dir=output_dir)
    return num_train_steps


def predict_logits(model, features, batch_size):
    """(start_logits, end_logits): float32 arrays [num_features, seq]."""
    import numpy as np
    import tensorflow as tf

    arrays = squad.feature_arrays(features, with_positions=False)
    forward = tf.function(lambda inputs: model(inputs, training=False), reduce_retracing=True)
    starts, ends = [], []
    for begin in range(0, len(features), batch_size):
        outputs = forward({name: tf.constant(value[begin : begin + batch_size]) for name, value in arrays.items()})
        starts.append(outputs["start_logits"].numpy())
        ends.append(outputs["end_logits"].numpy())
    return np.concatenate(starts), np.concatenate(ends)


def predict(model, tokenizer, output_dir):
    """Writes the predictions (and metrics when the file has answers); returns the metrics or None."""
    from albert_tf.tasks.squad_evaluation import evaluate

    articles, examples, features = make_features(FLAGS.predict_file, tokenizer, labeled=False, what="predict")
    start_logits, end_logits = predict_logits(model, features, FLAGS.predict_batch_size)
    version_2 = FLAGS.version == "2.0"
    for name in (squad.PREDICTIONS_FILE, squad.NBEST_FILE, squad.NULL_ODDS_FILE, EVAL_RESULTS_FILE):
        if os.path.exists(os.path.join(output_dir, name)):  # an earlier run's, replaced under --overwrite
            os.remove(os.path.join(output_dir, name))
    predictions, nbest, null_odds = squad.postprocess_predictions(
        examples, features, start_logits, end_logits, n_best_size=FLAGS.n_best_size,
        max_answer_length=FLAGS.max_answer_length, version_2_with_negative=version_2,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold)
    written = squad.write_predictions(output_dir, predictions, nbest, null_odds if version_2 else None)
    print(f"Answered {len(examples)} questions ({len(features)} windows): " + ", ".join(written), flush=True)
    if not all(example.is_impossible or example.answer_start >= 0 for example in examples):
        print(f"{FLAGS.predict_file} has questions without answers: not scored.", flush=True)
        return None
    # math.inf: score predictions.json as written; null_odds only feed the best-threshold search.
    metrics = evaluate(articles, predictions, na_probs=null_odds if version_2 else None, na_prob_thresh=math.inf)
    with open(os.path.join(output_dir, EVAL_RESULTS_FILE), "w") as f:
        json.dump(metrics, f, indent=2, sort_keys=True)
        f.write("\n")
    return metrics


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    _validate_flags()
    import keras

    from albert_tf.checkpoints.model_dir import SPM_MODEL_FILE, write_model_dir
    from albert_tf.models.albert_span_labeler import MODEL_KIND

    output_dir = FLAGS.output_dir
    os.makedirs(output_dir, exist_ok=True)
    keras.utils.set_random_seed(FLAGS.seed)
    tokenizer = load_tokenizer(FLAGS.init_checkpoint, FLAGS.spm_model_file, FLAGS.do_lower_case)
    model, loaded_kind = load_span_labeler(FLAGS.init_checkpoint, for_training=FLAGS.do_train)
    check_vocabulary(model, tokenizer)
    summary = []
    if FLAGS.do_train:
        if loaded_kind != MODEL_KIND:
            print(f"Starting from the encoder of {FLAGS.init_checkpoint} ({loaded_kind}), with a fresh span head.",
                  flush=True)
        _, _, features = make_features(FLAGS.train_file, tokenizer, labeled=True, what="train")
        steps = train(model, features, output_dir)
        model_dir = write_model_dir(
            model, os.path.join(output_dir, MODEL_SUBDIR), MODEL_KIND, overwrite=FLAGS.overwrite,
            files={SPM_MODEL_FILE: tokenizer.source}, squad_version=FLAGS.version,
            max_seq_length=FLAGS.max_seq_length, train_steps=steps)
        summary.append(f"fine-tuned for {steps} steps; the model is in {model_dir}")
    if FLAGS.do_predict:
        metrics = predict(model, tokenizer, output_dir)
        summary.append(f"predictions are in {os.path.join(os.path.abspath(output_dir), squad.PREDICTIONS_FILE)}")
        if metrics is not None:
            line = f"EM {metrics['exact']:.2f}, F1 {metrics['f1']:.2f} on {metrics['total']} questions"
            if "best_f1" in metrics:
                line += (f" (best F1 {metrics['best_f1']:.2f} with --null_score_diff_threshold="
                         f"{metrics['best_f1_thresh']:.4g})")
            summary.append(line)
    print(f"SQuAD {FLAGS.version}: " + "; ".join(summary) + ".", flush=True)
    return 0


def console_main():
    """The `albert-run-squad` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
