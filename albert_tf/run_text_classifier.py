r"""Fine-tunes ALBERT on your own labelled texts: CSV, TSV, JSON Lines or a JSON array, any label names, single
texts or pairs, multi-label or regression; evaluates every checkpoint, keeps the best, writes metrics and predictions.

  python -m albert_tf.run_text_classifier --train_file=tickets_train.csv --eval_file=tickets_dev.csv \
      --predict_file=tickets_new.csv --init_checkpoint=/ckpt/albert_base --output_dir=/tmp/tickets \
      --do_train --do_eval --do_predict

Files: .csv, .tsv (a header row), .jsonl (one object per line) or .json (JSON Lines, or one JSON array of
objects as KLUE ships), each optionally .gz, UTF-8, at most 1 GiB of text. Columns by name: --text_column
(default text), --text_b_column (a second text, making pairs; default text_b where the file has it),
--label_column (default label), --id_column (default id where present; carried to the predictions); in JSON a
dotted name reaches into nested objects (--label_column=labels.label). A predict file's labels are optional: a
label column blank in every row is no labels (predictions, no metrics); one blank in some rows only is refused.
Labels: names (strings or integers) make a single-label classifier over the training file's names, sorted; lists
(JSON lists, or names joined by --label_separator; [] for a row with none) a multi-label one (sigmoid, each label
predicted at probability >= 0.5); scores a regression (--regression when the scores are all integers). Bad input
is refused before anything is trained or written, naming the file, line (a JSON array's record) and column.

The recipe fits data of any size: 3 epochs, lr 2e-5, 10% warmup, batch 32, max_seq_length 128, a checkpoint
evaluated every tenth of the steps and the best kept by accuracy (micro-F1 for multi-label, the lowest squared
error for regression; --metric picks another). Writes OUTPUT_DIR/checkpoints/ckpt-N (resumable), OUTPUT_DIR/best (the
best model: an albert_tf classifier directory recording the label names and problem type, for albert-export
and albert-convert), eval_results.json (accuracy, macro and micro F1, each label's precision/recall/F1/support
and the confusion matrix, or past 50 labels the most frequent confusions; MSE, Pearson and Spearman for
regression), eval_report.txt (the same as a table), confusion_matrix.png (up to 50 labels), and predictions.csv/.tsv/.jsonl. Flags and output layout are those of every
fine-tuning tool (albert_tf.training.finetuning_flags, albert_tf.training.finetuning_tool).
"""

from absl import flags

from albert_tf.settings import field_default
from albert_tf.tasks.labelled_texts import PROBLEM_TYPES, QUOTINGS
from albert_tf.training import finetuning_flags

# The task module is imported in the functions: its TensorFlow-using parts, after cli.run has imported
# TensorFlow quietly (past the checks the flags alone decide). The file reader imports no TensorFlow.


def define_text_classification_flags():
    from albert_tf.tasks.text_classification_task import TextClassificationConfig

    def default(name):
        return field_default(TextClassificationConfig, name)

    flags.DEFINE_string("train_file", None, "Labelled training rows: .csv, .tsv, .jsonl or .json (JSON Lines or a "
                        "JSON array of objects; each optionally .gz).")
    flags.DEFINE_string("eval_file", None, "Labelled rows evaluated at every checkpoint (--do_eval); its labels must "
                        "all occur in the training file.")
    flags.DEFINE_string("predict_file", None, "Rows to predict (--do_predict); labels optional: a label column "
                        "blank in every row (or none) is no labels; labels on every row also have the predictions' "
                        "metrics written.")
    flags.DEFINE_string("text_column", default("text_column"), "The column (or JSON key; in JSON a dotted name "
                        "reaches into nested objects) of the text.")
    flags.DEFINE_string("text_b_column", None, "The column of a second text, making sentence pairs. Default: "
                        "text_b where the file has it (else single texts).")
    flags.DEFINE_string("label_column", default("label_column"), "The column of the label(s); in JSON a dotted "
                        "name reaches into nested objects (KLUE STS's labels.label).")
    flags.DEFINE_string("id_column", None, "A column carried to the predictions. Default: id where the file has it.")
    flags.DEFINE_string("label_separator", None, "Multi-label rows: the string between label names in one cell "
                        "(default: a JSON list makes a row multi-label, and no separator is read).")
    flags.DEFINE_enum("problem_type", None, PROBLEM_TYPES, "Force the problem type. Default: read from the training "
                      "labels (lists: multi_label; numbers not all integers: regression; else single_label).")
    flags.DEFINE_bool("regression", False, "Shorthand for --problem_type=regression (integer scores, say 1-5).")
    flags.DEFINE_string("metric", None, "The metric that picks the best checkpoint: accuracy, macro_f1 or micro_f1 "
                        "(single-label; default accuracy); micro_f1, macro_f1 or exact_match (multi-label; default "
                        "micro_f1); neg_mse, pearson or spearman (regression; default neg_mse, the squared error: a "
                        "near-constant model can have the best correlation).")
    flags.DEFINE_enum("quoting", default("quoting"), QUOTINGS, "How CSV and TSV cells are read. csv: RFC 4180 "
                      "quoting (a cell that begins with a quote may hold the delimiter, newlines and doubled quotes); "
                      "none: every character literal, one row per line (GLUE's TSVs, whose texts hold stray quotes); "
                      "auto: csv for .csv files; for .tsv files csv where every cell that begins with a quote ends "
                      "with its closing quote right before a tab or line end, its inner quotes doubled, no text "
                      "holds a lone quote between two of its characters, and every row then has the header's "
                      "number of cells (as pandas and Excel write them), else none.")
    flags.DEFINE_float("dropout", default("dropout"), "Dropout before the classifier (original: 0.1).")


def text_classification_config():
    from albert_tf.settings import SettingError
    from albert_tf.tasks.text_classification_task import TextClassificationConfig

    values = flags.FLAGS
    problem_type = values.problem_type
    if values.regression:
        if problem_type not in (None, "regression"):
            raise SettingError(f"<regression> contradicts <problem_type>={problem_type}")
        problem_type = "regression"
    return TextClassificationConfig(
        train_file=values.train_file, eval_file=values.eval_file, predict_file=values.predict_file,
        text_column=values.text_column, text_b_column=values.text_b_column, label_column=values.label_column,
        id_column=values.id_column, label_separator=values.label_separator, problem_type=problem_type,
        quoting=values.quoting, metric=values.metric, dropout=values.dropout)


def console_main():
    """The `albert-run-text-classifier` console script."""
    from albert_tf.tasks.text_classification_task import TextClassificationTask

    finetuning_flags.run(TextClassificationTask(), define_text_classification_flags, text_classification_config)


if __name__ == "__main__":
    console_main()
