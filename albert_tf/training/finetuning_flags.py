"""The fine-tuning tools' command line: the shared flags, mapped to a `FinetuningConfig`.

run_classifier, run_squad and run_race are this module's `run` with their task,
the task's flags and the function that maps them to the task's config:

    run(GlueTask(), define_glue_flags, glue_config)

Every shared flag is the `FinetuningConfig` field of its name (its default comes
from there, or from the task where the task sets it), plus the original scripts'
names as aliases (`--train_step`, `--warmup_step`, `--albert_config_file`,
`--use_tpu`, `--tpu_name`). The run itself is
`albert_tf.training.finetuning_tool.run_finetuning`; its errors name settings,
which this module says as flags.
"""

import dataclasses

from absl import flags

from albert_tf import cli
from albert_tf.settings import field_default
from albert_tf.training.distribution_config import DISTRIBUTION_NAMES
from albert_tf.training.distribution_flags import define_distribution_flags, distribution_settings
from albert_tf.training.finetuning_config import FinetuningConfig
from albert_tf.training.finetuning_tool import MANY_EPOCHS

FLAGS = flags.FLAGS


def default(name):
    """The flag's default: the FinetuningConfig field's."""
    return field_default(FinetuningConfig, name)


def define_flags(task, define_task_flags):
    """The shared flags, with the task's defaults and help, then the task's own (`define_task_flags()`)."""
    flags.DEFINE_string("init_checkpoint", None, "albert_tf checkpoint (pretrainer, encoder, or a model fine-tuned "
                        "on this task), converted Google/Hugging Face checkpoint, or albert_tf.export directory. "
                        "Without it: random init from --albert_config.")
    flags.DEFINE_string("albert_config", None, "Preset or config JSON, only when there is no --init_checkpoint.")
    flags.DEFINE_alias("albert_config_file", "albert_config")  # the original scripts' name
    flags.DEFINE_string("output_dir", None, "Where checkpoints/, best/, eval_results.json, TensorBoard summaries and "
                        "predictions go.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model (default: the checkpoint's spm.model).")
    flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt, for a model whose vocabulary is one (Google's Chinese "
                        "ALBERTs, brightmart's, ckiplab's, kykim's; default: the checkpoint's vocab.txt).")
    flags.DEFINE_bool("do_lower_case", None, "Lowercase the input. Default: as --init_checkpoint records its "
                      "training text was (lowercase when it records nothing); another casing needs --force.")
    flags.DEFINE_bool("keep_accents", None, "Keep the input's accents. Default: as --init_checkpoint records (the "
                      "original strips them); the other needs --force.")
    flags.DEFINE_bool("rewrite_quotes", None, "Turn `` and '' into \" before tokenizing (Hugging Face's rule). "
                      "Default: as --init_checkpoint records (true for models converted from Hugging Face), else the "
                      "original's rule, which keeps them; against the record it needs --force.")
    flags.DEFINE_integer("max_seq_length", None, f"Tokens per sequence. Default: {task.max_seq_length} (the "
                         "original's), or the length --init_checkpoint records when that is shorter; longer than the "
                         "recorded length works with a warning, beyond max_position_embeddings not at all.")
    flags.DEFINE_bool("force", default("force"), "Fine-tune with a --do_lower_case, --keep_accents or "
                      "--rewrite_quotes that contradicts --init_checkpoint's record.")
    flags.DEFINE_bool("do_train", default("do_train"), "Fine-tune on the training data.")
    flags.DEFINE_bool("do_eval", default("do_eval"), task.do_eval_help)
    flags.DEFINE_bool("do_predict", default("do_predict"), task.do_predict_help)
    unit, note = task.unit, task.recipe_note
    flags.DEFINE_integer("train_batch_size", None, f"{unit} per training step. {note}")
    flags.DEFINE_integer("eval_batch_size", default("eval_batch_size"), f"{unit} per evaluation batch (original: 8).")
    flags.DEFINE_integer("predict_batch_size", default("predict_batch_size"),
                         f"{unit} per prediction batch (original: 8).")
    flags.DEFINE_float("learning_rate", None, f"Peak AdamW learning rate. {note}")
    flags.DEFINE_integer("num_train_steps", None, f"Training steps; a plan of more than {MANY_EPOCHS} epochs is said "
                         f"before it starts. {note}")
    flags.DEFINE_alias("train_step", "num_train_steps")  # the original scripts' name
    flags.DEFINE_float("num_train_epochs", None, "Passes over the training data, when --num_train_steps is not "
                       f"set. {note}")
    flags.DEFINE_integer("num_warmup_steps", None, f"Linear warmup steps (at most the training steps). {note}")
    flags.DEFINE_alias("warmup_step", "num_warmup_steps")
    flags.DEFINE_float("warmup_proportion", None, "Fraction of the steps with a linear warmup from 0, when "
                       f"--num_warmup_steps is not set; the rate then decays linearly to 0. {note}")
    flags.DEFINE_integer("save_checkpoints_steps", default("save_checkpoints_steps"),
                         "Checkpoint (and evaluate, keeping the best on dev) every this many steps. Default: the "
                         "task's recipe, the original's interval (GLUE and RACE 100, QNLI 200, SQuAD 5000: on the "
                         "real data SQuAD 1.1 saves only its final checkpoint, SQuAD 2.0 steps 5000 and 5429).")
    flags.DEFINE_integer("keep_checkpoint_max", task.keep_checkpoint_max, "Training checkpoints kept (default "
                         f"{task.keep_checkpoint_max}); the best is kept apart in OUTPUT_DIR/best.")
    flags.DEFINE_integer("seed", default("seed"), "Seed of the head's initialization (and of the encoder for a random "
                         "start), dropout and the data order.")
    flags.DEFINE_bool("overwrite", default("overwrite"), "Start afresh: train into a staging directory and, once the "
                      "run has "
                      "finished, replace the earlier run's checkpoints, best model, results, summaries and predictions "
                      "(only what the tool wrote; a failed run leaves them as they were). Without it, training resumes "
                      "from the latest checkpoint.")
    define_distribution_flags(FinetuningConfig)
    define_task_flags()


def config_from_flags(task_config):
    """The run's FinetuningConfig from the parsed shared flags and the task's config."""
    names = [field.name for field in dataclasses.fields(FinetuningConfig) if field.name != "task"]
    values = {name: FLAGS[name].value for name in names if name not in DISTRIBUTION_NAMES}
    return FinetuningConfig(**values, **distribution_settings(FLAGS), task=task_config)


def check_flags(task_config_from_flags, argv):
    """The shared settings' own checks (`FinetuningConfig.check`), before TensorFlow's import (cli.run)."""
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    config_from_flags(task_config_from_flags()).check()


def main(task, task_config_from_flags, argv):
    from albert_tf.settings import SettingError
    from albert_tf.training.finetuning_tool import run_finetuning

    try:
        return run_finetuning(task, config_from_flags(task_config_from_flags()))
    except SettingError as error:  # the library names settings; the command line says flags
        raise error.for_flags() from None


def run(task, define_task_flags, task_config_from_flags):
    """Runs the tool of `task` (its console script's entry point): `define_task_flags()` defines the task's
    flags, `task_config_from_flags()` maps their parsed values to the task's config."""
    cli.run(lambda argv: main(task, task_config_from_flags, argv), lambda: define_flags(task, define_task_flags),
            tool_module=define_task_flags.__module__,
            check_flags=lambda argv: check_flags(task_config_from_flags, argv))
