r"""Fine-tunes ALBERT on a GLUE task, evaluates every checkpoint, keeps the best, writes GLUE submissions.

  python -m albert_tf.run_classifier --task_name=mnli --data_dir=glue/MNLI \
      --init_checkpoint=/ckpt/albert_base --output_dir=/tmp/mnli --do_train --do_eval --do_predict

Per-task defaults are the original ALBERT recipe (lr, steps, warmup, batch:
docs/reference.md, "Fine-tuning recipes") and max_seq_length 512; any flag
overrides them. Metrics as GLUE defines them: Matthews correlation (CoLA),
accuracy and F1 (MRPC, QQP), Pearson and Spearman (STS-B, a regression),
accuracy (the rest; MNLI matched and mismatched). Writes
OUTPUT_DIR/checkpoints/ckpt-N (resumable; with --do_eval each is evaluated on
dev), OUTPUT_DIR/best (the best of them, an albert_tf model directory of kind
"classifier" with spm.model), eval_results.json, and the GLUE submission files
`index<TAB>prediction` (CoLA.tsv, MNLI-m.tsv, MNLI-mm.tsv, STS-B.tsv, ...).
--init_checkpoint may also be a fine-tuned classifier, to evaluate or predict
without training. Flags and output layout are those of every fine-tuning tool
(albert_tf.training.finetuning_flags, albert_tf.training.finetuning_tool).
"""

from absl import flags

from albert_tf.settings import field_default
from albert_tf.training import finetuning_flags

# The task module is imported in the functions: its TensorFlow-using parts, after cli.run has imported
# TensorFlow quietly (past the checks the flags alone decide).


def define_glue_flags():
    from albert_tf.tasks.glue_task import RECIPES, GlueConfig

    flags.DEFINE_enum("task_name", None, sorted(RECIPES), "The GLUE task (any case).", case_sensitive=False)
    flags.DEFINE_string("data_dir", None, "The task's GLUE directory (train.tsv, dev.tsv, test.tsv).")
    flags.DEFINE_float("dropout", field_default(GlueConfig, "dropout"), "Dropout before the classifier (original: "
                       "0.1; 0 makes runs on different device layouts train alike).")


def glue_config():
    from albert_tf.tasks.glue_task import GlueConfig

    values = flags.FLAGS
    return GlueConfig(task_name=values.task_name, data_dir=values.data_dir, dropout=values.dropout)


def console_main():
    """The `albert-run-classifier` console script."""
    from albert_tf.tasks.glue_task import GlueTask

    finetuning_flags.run(GlueTask(), define_glue_flags, glue_config)


if __name__ == "__main__":
    console_main()
