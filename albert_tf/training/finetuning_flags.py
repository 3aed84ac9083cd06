"""The flags the fine-tuning tools share: one name and one meaning each, as in run_pretraining.

The original google-research/albert scripts' names stay as aliases (`--train_step`,
`--warmup_step`, `--albert_config_file`). Each tool passes its defaults and what
a default means for it ("the task's recipe", "original: 12000").
"""

from absl import flags


def define_model_flags(outputs):
    """Where the model starts, its vocabulary, and where the outputs (`outputs`, for the help text) go."""
    flags.DEFINE_string("init_checkpoint", None, "albert_tf checkpoint (pretrainer, encoder, or a model fine-tuned "
                        "on this task), converted Google/Hugging Face checkpoint, or albert_tf.export directory. "
                        "Without it: random init from --albert_config.")
    flags.DEFINE_string("albert_config", None, "Preset or config JSON, only when there is no --init_checkpoint.")
    flags.DEFINE_alias("albert_config_file", "albert_config")  # the original scripts' name
    flags.DEFINE_string("output_dir", None, f"Where {outputs} go.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model (default: the checkpoint's spm.model).")
    flags.DEFINE_bool("do_lower_case", True, "Lowercase as the pretraining data was.")


def define_training_flags(unit, train_batch_size, learning_rate, num_train_steps, num_warmup_steps, defaults_note):
    """Batch sizes, the AdamW schedule, checkpoints and seed. `unit` names what a batch holds ("Examples").

    A default of None means the tool fills it in (e.g. from the task's recipe); `defaults_note` says how.
    """
    flags.DEFINE_integer("train_batch_size", train_batch_size, f"{unit} per training step. {defaults_note}")
    flags.DEFINE_integer("eval_batch_size", 8, f"{unit} per evaluation batch (original: 8).")
    flags.DEFINE_integer("predict_batch_size", 8, f"{unit} per prediction batch (original: 8).")
    flags.DEFINE_float("learning_rate", learning_rate, f"Peak AdamW learning rate. {defaults_note}")
    flags.DEFINE_integer("num_train_steps", num_train_steps, f"Training steps. {defaults_note}")
    flags.DEFINE_alias("train_step", "num_train_steps")  # the original scripts' name
    flags.DEFINE_integer("num_warmup_steps", num_warmup_steps, f"Linear warmup steps. {defaults_note}")
    flags.DEFINE_alias("warmup_step", "num_warmup_steps")
    flags.DEFINE_integer("save_checkpoints_steps", 1000, "Checkpoint (and evaluate) every this many steps.")
    flags.DEFINE_integer("keep_checkpoint_max", 5, "Training checkpoints kept (original: 5); the best is kept "
                         "apart in OUTPUT_DIR/best.")
    flags.DEFINE_integer("seed", 12345, "Seed for initialization and data order.")
