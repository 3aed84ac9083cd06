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
3125 warmup steps, seq 512); another --num_train_steps warms up over the same
2.5% of its steps unless --num_warmup_steps says otherwise. Run the same command again to resume: the latest
`ckpt-N` in --output_dir restores the model, optimizer, step and the input
position, so a killed or preempted run continues exactly. SIGTERM saves a
checkpoint and exits with status 143; Ctrl-C (SIGINT) with 130. A diverging run (a NaN or infinite loss,
or a loss grown past 10x its level: albert_tf.training.divergence) stops with
status 2 without saving, naming the last good checkpoint; rerun with a lower
--learning_rate to resume from it at the new rate.

--output_dir is an albert_tf checkpoint directory: `albert_tf.load_pretrainer`
and `albert_tf.load_encoder` read it, during training and after; TensorBoard
summaries go to OUTPUT_DIR/train and OUTPUT_DIR/eval.
"""

import dataclasses

from absl import flags

from albert_tf import cli
from albert_tf.settings import field_default
from albert_tf.training.distribution_config import DISTRIBUTION_NAMES
from albert_tf.training.distribution_flags import define_distribution_flags
from albert_tf.training.pretraining_config import PretrainingConfig


def default(name):
    """The flag's default: the PretrainingConfig field's."""
    return field_default(PretrainingConfig, name)



def define_flags():
    flags.DEFINE_string("input_file", default("input_file"), "Training TFRecords: a glob, comma-separated globs, or the --output_file "
                        "prefix given to create_pretraining_data. gs:// paths work.")
    flags.DEFINE_integer("vocab_size", default("vocab_size"), "The model's vocabulary size, replacing the config's. Default: the "
                         "config's; with a preset name, the size of --spm_model_file, else the one the data's metadata "
                         "records, where it differs from the preset's (the output says so).")
    flags.DEFINE_string("albert_config", default("albert_config"), "A preset name (see `python -m albert_tf.params`) or an "
                        "albert_config.json path.")
    flags.DEFINE_alias("albert_config_file", "albert_config")  # the original scripts' name
    flags.DEFINE_string("init_checkpoint", default("init_checkpoint"), "Start from this albert_tf checkpoint (pretrainer or encoder; "
                        "convert Google or Hugging Face checkpoints first). Ignored when --output_dir already "
                        "holds a checkpoint to resume from.")
    flags.DEFINE_string("output_dir", default("output_dir"), "Where checkpoints, summaries and albert_tf.json go; rerun with the same "
                        "directory to resume.")
    flags.DEFINE_string("spm_model_file", default("spm_model_file"), "The SentencePiece model the data was made with; copied into "
                        "--output_dir as spm.model so the checkpoint can be exported and fine-tuned on its own.")
    flags.DEFINE_string("vocab_file", default("vocab_file"), "Instead of --spm_model_file: the WordPiece vocab.txt the data "
                        "was made with (create_pretraining_data --vocab_file); copied into --output_dir as vocab.txt, "
                        "its kind recorded in albert_tf.json.")
    flags.DEFINE_bool("do_train", default("do_train"), "Train for --num_train_steps (resuming if a checkpoint exists).")
    flags.DEFINE_bool("do_eval", default("do_eval"), "After training, evaluate the four metrics on --eval_input_file.")
    flags.DEFINE_string("eval_input_file", default("eval_input_file"), "Held-out TFRecords for --do_eval and --eval_every_steps (same forms "
                        "as --input_file), e.g. the PREFIX-heldout set of create_pretraining_data --heldout_every.")
    flags.DEFINE_integer("eval_every_steps", default("eval_every_steps"), "Evaluate --eval_input_file every this many steps during training "
                         "(at most --max_eval_steps batches): printed with the learning phase it shows, written to "
                         "TensorBoard's eval/ and to OUTPUT_DIR/eval_history.jsonl. 0: only --do_eval, at the end.")
    flags.DEFINE_float("train_budget_hours", default("train_budget_hours"), "Train for this long: after the first steps the step time is "
                       "measured and the step count fixed so that the run (evaluations included) ends at the budget, "
                       "with the learning rate decaying to 0 there; --num_train_steps becomes an upper bound. The plan "
                       "is recorded in run_config.json and a resumed run keeps it. 0: train --num_train_steps.")
    flags.DEFINE_integer("input_workers", default("input_workers"), "Threads making instances from a documents data set "
                         "(create_pretraining_data --output_format=documents); the order does not depend on it.")
    flags.DEFINE_integer("input_processes", default("input_processes"), "Child processes making instances from a "
                         "documents data set instead of --input_workers' threads, which Python's GIL holds to about "
                         "two threads' worth (on a 16-core host: under 39,000 seq-64 instances/s with any number "
                         "of threads, 79,000-110,000 with 16 processes). For hosts feeding an accelerator; the "
                         "instances and their order do not depend on it. 0: build in the threads.")
    flags.DEFINE_integer("input_mixed_documents", default("input_mixed_documents"), "Documents of a documents data "
                         "set whose instances are drawn from in turn, one from each, before the shuffle buffer: a "
                         "long document makes its instances together and would otherwise fill the buffer and most "
                         "of a stretch of batches. Each holds the rest of its instances in memory and in the "
                         "checkpointed input position. 1: one document's instances after another (runs started "
                         "before this setting existed). Fixed for the run (a resumed run keeps it).")
    flags.DEFINE_integer("train_batch_size", default("train_batch_size"), "Sequences per optimizer step, over all devices and "
                         "accumulation micro-batches (paper: 4096).")
    flags.DEFINE_integer("eval_batch_size", default("eval_batch_size"), "Sequences per evaluation batch (original: 8).")
    flags.DEFINE_integer("max_eval_steps", default("max_eval_steps"), "Evaluation batches at most (original: 100).")
    flags.DEFINE_integer("max_seq_length", default("max_seq_length"), "Sequence length of the data. Default: the data's (its metadata, or "
                         "its first record); given, it is checked against the files.")
    flags.DEFINE_integer("max_predictions_per_seq", default("max_predictions_per_seq"), "Masked positions per sequence in the data. Default: the "
                         "data's; given, it is checked against the files.")
    flags.DEFINE_integer("num_train_steps", default("num_train_steps"), "Optimizer steps in total (paper: 125k).")
    flags.DEFINE_integer("num_warmup_steps", default("num_warmup_steps"), "Linear warmup steps from 0 to "
                         "--learning_rate. Default: the paper's share of --num_train_steps, 2.5% (3125 of 125k; "
                         "--num_train_steps=50: 1), said when the run starts; a resumed run keeps the warmup it "
                         "started with.")
    flags.DEFINE_float("learning_rate", default("learning_rate"), "Peak learning rate; decays linearly to 0 at --num_train_steps "
                       "(paper: 0.00176 with LAMB at batch 4096).")
    flags.DEFINE_enum("optimizer", default("optimizer"), ["lamb", "adamw"], "LAMB (paper) or AdamW, both as in the original code: "
                      "no bias correction, eps 1e-6, weight decay 0.01, LayerNorm and biases excluded.")
    flags.DEFINE_float("weight_decay_rate", default("weight_decay_rate"), "Weight decay inside the update (original: 0.01).")
    flags.DEFINE_float("clip_norm", default("clip_norm"), "Clip the global gradient norm (over all replicas) to this.")
    flags.DEFINE_integer("save_checkpoints_steps", default("save_checkpoints_steps"), "Save a checkpoint every this many steps (and at the end).")
    flags.DEFINE_integer("keep_checkpoint_max", default("keep_checkpoint_max"), "Checkpoints kept in --output_dir (older ones are deleted).")
    define_distribution_flags(PretrainingConfig)
    flags.DEFINE_float("sentence_loss_weight", default("sentence_loss_weight"), "Weight of the sentence-level loss (SOP, or NSP for data made "
                       "with --random_next_sentence) added to the MLM loss; the original: 1. 0 trains MLM only "
                       "(the paper's Table 5 'None' row).")
    flags.DEFINE_integer("seed", default("seed"), "Seed for initialization and input order.")
    flags.DEFINE_integer("shuffle_buffer_size", default("shuffle_buffer_size"), "Records in the training shuffle buffer.")


FLAGS = flags.FLAGS


def config_from_flags():
    """The run's PretrainingConfig, from the flags (every field has a flag of its name)."""
    from albert_tf.training.distribution_flags import distribution_settings
    from albert_tf.training.pretraining_config import PretrainingConfig

    names = [field.name for field in dataclasses.fields(PretrainingConfig)]
    values = {name: FLAGS[name].value for name in names if name in FLAGS and name not in DISTRIBUTION_NAMES}
    return PretrainingConfig(**values, **distribution_settings(FLAGS))


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    from albert_tf.settings import SettingError
    from albert_tf.training import pretraining_run

    try:
        return pretraining_run.run(config_from_flags())
    except SettingError as error:  # the library names settings; the command line says flags
        raise error.for_flags() from None


def console_main():
    """The `albert-run-pretraining` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
