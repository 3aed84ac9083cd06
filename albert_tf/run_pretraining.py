r"""Pretrains ALBERT (masked n-gram LM + sentence-order prediction) on create_pretraining_data's TFRecords.

  python -m albert_tf.run_pretraining --input_file=/data/albert-* \
      --albert_config=albert_base_v2 --output_dir=/ckpt/albert_base \
      --train_batch_size=4096 --max_seq_length=512 --num_train_steps=125000

  # A Cloud TPU (VM: --tpu=local); data and output_dir on Cloud Storage
  python -m albert_tf.run_pretraining --tpu=local --mixed_precision=bf16 \
      --input_file=gs://bucket/data/albert-* --output_dir=gs://bucket/albert_base ...

  # Small corpus: documents once (new pairs and masks every epoch), a held-out split evaluated every
  # 500 steps with the learning phase it shows, and a 3-hour budget the schedule is fitted to
  python -m albert_tf.create_pretraining_data --input_file=corpus.txt --output_file=data/docs \
      --spm_model_file=spm.model --output_format=documents --heldout_every=10 --max_seq_length=128
  python -m albert_tf.run_pretraining --input_file=data/docs --eval_input_file=data/docs-heldout \
      --spm_model_file=spm.model --eval_every_steps=500 --train_budget_hours=3 ...

The defaults are the paper's recipe (LAMB, lr 0.00176, batch 4096, 125k steps,
3125 warmup steps, seq 512). Run the same command again to resume: the latest
`ckpt-N` in --output_dir restores the model, optimizer, step and the input
position, so a killed or preempted run continues exactly. SIGTERM saves a
checkpoint and exits with status 143. A diverging run (a NaN or infinite loss,
or a loss grown past 10x its level: albert_tf.training.divergence) stops with
status 2 without saving, naming the last good checkpoint; rerun with a lower
--learning_rate to resume from it at the new rate.

--output_dir is an albert_tf checkpoint directory: `albert_tf.load_pretrainer`
and `albert_tf.load_encoder` read it, during training and after; TensorBoard
summaries go to OUTPUT_DIR/train and OUTPUT_DIR/eval.
"""

import contextlib
import os

from absl import flags

from albert_tf import cli
from albert_tf.file_utils import exclusive_directory_lock
from albert_tf.training.distribution_flags import check_distribution_flags, define_distribution_flags



def define_flags():
    flags.DEFINE_string("input_file", None, "Training TFRecords: a glob, comma-separated globs, or the --output_file "
                        "prefix given to create_pretraining_data. gs:// paths work.")
    flags.DEFINE_integer("vocab_size", None, "The model's vocabulary size, replacing the config's. Default: the "
                         "config's; with a preset name and an --spm_model_file of another size, the SentencePiece "
                         "model's (the output says so).")
    flags.DEFINE_string("albert_config", "albert_base_v2", "A preset name (see `python -m albert_tf.params`) or an "
                        "albert_config.json path.")
    flags.DEFINE_alias("albert_config_file", "albert_config")  # the original scripts' name
    flags.DEFINE_string("init_checkpoint", None, "Start from this albert_tf checkpoint (pretrainer or encoder; "
                        "convert Google or Hugging Face checkpoints first). Ignored when --output_dir already "
                        "holds a checkpoint to resume from.")
    flags.DEFINE_string("output_dir", None, "Where checkpoints, summaries and albert_tf.json go; rerun with the same "
                        "directory to resume.")
    flags.DEFINE_string("spm_model_file", None, "The SentencePiece model the data was made with; copied into "
                        "--output_dir as spm.model so the checkpoint can be exported and fine-tuned on its own.")
    flags.DEFINE_bool("do_train", True, "Train for --num_train_steps (resuming if a checkpoint exists).")
    flags.DEFINE_bool("do_eval", False, "After training, evaluate the four metrics on --eval_input_file.")
    flags.DEFINE_string("eval_input_file", None, "Held-out TFRecords for --do_eval and --eval_every_steps (same forms "
                        "as --input_file), e.g. the PREFIX-heldout set of create_pretraining_data --heldout_every.")
    flags.DEFINE_integer("eval_every_steps", 0, "Evaluate --eval_input_file every this many steps during training "
                         "(at most --max_eval_steps batches): printed with the learning phase it shows, written to "
                         "TensorBoard's eval/ and to OUTPUT_DIR/eval_history.jsonl. 0: only --do_eval, at the end.")
    flags.DEFINE_float("train_budget_hours", 0.0, "Train for this long: after the first steps the step time is "
                       "measured and the step count fixed so that the run (evaluations included) ends at the budget, "
                       "with the learning rate decaying to 0 there; --num_train_steps becomes an upper bound. The plan "
                       "is recorded in run_config.json and a resumed run keeps it. 0: train --num_train_steps.")
    flags.DEFINE_integer("input_workers", 2, "Threads making instances from a documents data set "
                         "(create_pretraining_data --output_format=documents); the order does not depend on it.")
    flags.DEFINE_integer("train_batch_size", 4096, "Sequences per optimizer step, over all devices and "
                         "accumulation micro-batches (paper: 4096).")
    flags.DEFINE_integer("eval_batch_size", 8, "Sequences per evaluation batch (original: 8).")
    flags.DEFINE_integer("max_eval_steps", 100, "Evaluation batches at most (original: 100).")
    flags.DEFINE_integer("max_seq_length", None, "Sequence length of the data. Default: the data's (its metadata, or "
                         "its first record); given, it is checked against the files.")
    flags.DEFINE_integer("max_predictions_per_seq", None, "Masked positions per sequence in the data. Default: the "
                         "data's; given, it is checked against the files.")
    flags.DEFINE_integer("num_train_steps", 125000, "Optimizer steps in total (paper: 125k).")
    flags.DEFINE_integer("num_warmup_steps", 3125, "Linear warmup steps from 0 to --learning_rate (paper: 3125).")
    flags.DEFINE_float("learning_rate", 0.00176, "Peak learning rate; decays linearly to 0 at --num_train_steps "
                       "(paper: 0.00176 with LAMB at batch 4096).")
    flags.DEFINE_enum("optimizer", "lamb", ["lamb", "adamw"], "LAMB (paper) or AdamW, both as in the original code: "
                      "no bias correction, eps 1e-6, weight decay 0.01, LayerNorm and biases excluded.")
    flags.DEFINE_float("weight_decay_rate", 0.01, "Weight decay inside the update (original: 0.01).")
    flags.DEFINE_float("clip_norm", 1.0, "Clip the global gradient norm (over all replicas) to this.")
    flags.DEFINE_integer("save_checkpoints_steps", 5000, "Save a checkpoint every this many steps (and at the end).")
    flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept in --output_dir (older ones are deleted).")
    define_distribution_flags(iterations_per_loop=1000)
    flags.DEFINE_float("sentence_loss_weight", 1.0, "Weight of the sentence-level loss (SOP, or NSP for data made "
                       "with --random_next_sentence) added to the MLM loss; the original: 1. 0 trains MLM only "
                       "(the paper's Table 5 'None' row).")
    flags.DEFINE_integer("seed", 12345, "Seed for initialization and input order.")
    flags.DEFINE_integer("shuffle_buffer_size", 10000, "Records in the training shuffle buffer.")


FLAGS = flags.FLAGS


def _validate_flags():
    required = {"input_file": FLAGS.input_file, "output_dir": FLAGS.output_dir}
    missing = [f"--{name}" for name, value in required.items() if not value]
    if missing:
        raise ValueError(f"{' and '.join(missing)} required")
    positive = ("train_batch_size", "eval_batch_size", "max_seq_length", "max_predictions_per_seq", "num_train_steps",
                "save_checkpoints_steps", "keep_checkpoint_max")
    for name in positive:
        if FLAGS[name].value is not None and FLAGS[name].value < 1:
            raise ValueError(f"--{name} must be >= 1, got {FLAGS[name].value}")
    if FLAGS.num_warmup_steps < 0 or FLAGS.num_warmup_steps > FLAGS.num_train_steps:
        raise ValueError(f"--num_warmup_steps must be in [0, --num_train_steps={FLAGS.num_train_steps}]")
    check_distribution_flags(FLAGS)
    if FLAGS.vocab_size is not None and FLAGS.vocab_size < 1:
        raise ValueError(f"--vocab_size must be >= 1, got {FLAGS.vocab_size}")
    if FLAGS.learning_rate <= 0:
        raise ValueError(f"--learning_rate must be > 0, got {FLAGS.learning_rate}")
    if FLAGS.sentence_loss_weight < 0:
        raise ValueError(f"--sentence_loss_weight must be >= 0, got {FLAGS.sentence_loss_weight}")
    if (FLAGS.do_eval or FLAGS.eval_every_steps) and not FLAGS.eval_input_file:
        raise ValueError("--do_eval and --eval_every_steps need --eval_input_file")
    for name in ("eval_every_steps", "train_budget_hours"):
        if FLAGS[name].value < 0:
            raise ValueError(f"--{name} must be >= 0, got {FLAGS[name].value}")
    if FLAGS.input_workers < 1:
        raise ValueError(f"--input_workers must be >= 1, got {FLAGS.input_workers}")
    if FLAGS.spm_model_file and not os.path.isfile(FLAGS.spm_model_file):
        raise FileNotFoundError(f"{FLAGS.spm_model_file}: no such SentencePiece model (--spm_model_file)")


def _model_config():
    """--albert_config with --vocab_size, or a preset's vocabulary size replaced by --spm_model_file's."""
    from albert_tf.albert_config import AlbertConfig, preset_names
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    config = AlbertConfig.from_name_or_path(FLAGS.albert_config)
    vocab_size = FLAGS.vocab_size
    if vocab_size is None and FLAGS.spm_model_file and FLAGS.albert_config in preset_names():
        pieces = AlbertTokenizer(FLAGS.spm_model_file).vocab_size
        if pieces != config.vocab_size:
            print(f"--albert_config={FLAGS.albert_config} with vocab_size {pieces}, the size of --spm_model_file "
                  f"(the preset has {config.vocab_size}).", flush=True)
            vocab_size = pieces
    if vocab_size is None or vocab_size == config.vocab_size:
        return config
    return AlbertConfig.from_dict({**config.to_dict(), "vocab_size": vocab_size},
                                  source=f"--albert_config={FLAGS.albert_config} with --vocab_size={vocab_size}")


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    _validate_flags()
    import tensorflow as tf

    from albert_tf.data import pretraining_dataset as data
    from albert_tf.data.pretraining_data_job import DOCUMENTS_FORMAT
    from albert_tf.training import pretraining_run
    from albert_tf.training.distribution_flags import strategy_from_flags
    from albert_tf.training.strategies import is_chief

    config = _model_config()
    train_files = data.expand_data_files(FLAGS.input_file)
    if FLAGS.max_seq_length is None or FLAGS.max_predictions_per_seq is None:
        # Settings travel with the data: its lengths, unless the command says them (then they are checked).
        seq_length, predictions = data.infer_shapes(train_files)
        FLAGS.max_seq_length = FLAGS.max_seq_length or seq_length
        FLAGS.max_predictions_per_seq = FLAGS.max_predictions_per_seq or predictions
    data.check_pretraining_files(train_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, config.vocab_size,
                                 spm_model_file=FLAGS.spm_model_file)
    data_format, _ = data.data_set_format(train_files)
    if data_format == DOCUMENTS_FORMAT and not FLAGS.spm_model_file:
        raise ValueError(f"{FLAGS.input_file} holds tokenized documents, made into instances while training: pass "
                         "--spm_model_file, the SentencePiece model the data was made with (its word boundaries and "
                         "ordinary pieces drive the masking)")
    eval_files = []
    if FLAGS.do_eval or FLAGS.eval_every_steps:
        eval_files = data.expand_data_files(FLAGS.eval_input_file)
        if data.data_set_format(eval_files)[0] == DOCUMENTS_FORMAT:
            raise ValueError(f"--eval_input_file={FLAGS.eval_input_file} holds tokenized documents; evaluation reads "
                             "fixed instances, such as the PREFIX-heldout set of create_pretraining_data --heldout_every")
        data.check_pretraining_files(eval_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, config.vocab_size)
    if FLAGS.max_seq_length > config.max_position_embeddings:
        raise ValueError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the config's max_position_embeddings "
                         f"({config.max_position_embeddings})")

    strategy = strategy_from_flags(FLAGS)
    chief = is_chief(strategy)
    output_dir = FLAGS.output_dir
    tf.io.gfile.makedirs(output_dir)
    # One run per output directory: a second one would overwrite the first one's checkpoints.
    with exclusive_directory_lock(output_dir, "run_pretraining") if chief else contextlib.nullcontext():
        return pretraining_run.train_and_evaluate(FLAGS, config, strategy, chief, output_dir, train_files,
                                                  eval_files)


def console_main():
    """The `albert-run-pretraining` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
