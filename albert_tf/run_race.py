r"""Fine-tunes ALBERT on RACE (4-way multiple choice) and reports accuracy overall and for middle/high.

  python -m albert_tf.run_race --data_dir=RACE --init_checkpoint=/ckpt/albert_base \
      --output_dir=/tmp/race --do_train --do_eval --do_predict

Defaults are the original recipe (docs/reference.md, "Fine-tuning recipes"):
max_seq_length 512, max_qa_length 128, batch 32, AdamW lr 1e-5, 12k steps with
1k warmup. Every checkpoint is evaluated on dev and the best is kept in
OUTPUT_DIR/best; --do_predict answers test/ (OUTPUT_DIR/test_predictions.json).
Flags and output layout are those of every fine-tuning tool
(albert_tf.training.finetuning_tool).
"""

from albert_tf.tasks.race_task import RaceTask
from albert_tf.training import finetuning_tool


def console_main():
    """The `albert-run-race` console script."""
    finetuning_tool.run(RaceTask())


if __name__ == "__main__":
    console_main()
