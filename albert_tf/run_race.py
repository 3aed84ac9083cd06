r"""Fine-tunes ALBERT on RACE (4-way multiple choice) and reports accuracy overall and for middle/high.

  python -m albert_tf.run_race --data_dir=RACE --init_checkpoint=/ckpt/albert_base \
      --output_dir=/tmp/race --do_train --do_eval --do_predict

Defaults are the original recipe (docs/reference.md, "Fine-tuning recipes"):
max_seq_length 512, max_qa_length 128, batch 32, AdamW lr 1e-5, 12k steps with
1k warmup. Every checkpoint is evaluated on dev and the best is kept in
OUTPUT_DIR/best; --do_predict answers test/ (OUTPUT_DIR/test_predictions.json).
Flags and output layout are those of every fine-tuning tool
(albert_tf.training.finetuning_flags, albert_tf.training.finetuning_tool).
"""

from absl import flags

from albert_tf.settings import field_default
from albert_tf.tasks import race
from albert_tf.training import finetuning_flags

# The task module is imported in the functions: its TensorFlow-using parts, after cli.run has imported
# TensorFlow quietly (past the checks the flags alone decide).


def define_race_flags():
    from albert_tf.tasks.race_task import RaceConfig

    flags.DEFINE_string("data_dir", None, "The RACE directory ({train,dev,test}/{middle,high}/*.txt).")
    flags.DEFINE_multi_enum("levels", list(field_default(RaceConfig, "levels")), list(race.LEVELS),
                            "RACE levels to use (repeatable).")
    flags.DEFINE_integer("max_qa_length", field_default(RaceConfig, "max_qa_length"),
                         "Tokens of question + option at most.")
    flags.DEFINE_float("dropout", field_default(RaceConfig, "dropout"), "Dropout before the choice scorer (original: "
                       "0.1; 0 makes runs on different device layouts train alike).")


def race_config():
    from albert_tf.tasks.race_task import RaceConfig

    values = flags.FLAGS
    return RaceConfig(data_dir=values.data_dir, levels=tuple(dict.fromkeys(values.levels)),
                      max_qa_length=values.max_qa_length, dropout=values.dropout)


def console_main():
    """The `albert-run-race` console script."""
    from albert_tf.tasks.race_task import RaceTask

    finetuning_flags.run(RaceTask(), define_race_flags, race_config)


if __name__ == "__main__":
    console_main()
