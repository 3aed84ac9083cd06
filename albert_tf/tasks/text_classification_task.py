"""A user's own labelled texts as a fine-tuning task: any label names, single texts or pairs, multi-label or
regression, from CSV, TSV or JSON Lines files (`labelled_texts`).

The label scheme is the training file's (its sorted label names; the problem type read from its labels or
set by the settings) and is recorded with the fine-tuned model: `label_names` (index = class id, Hugging
Face's id2label), `problem_type` and, for multi-label models, the threshold. Evaluating or predicting with a
fine-tuned model and no training file takes the scheme the model records.

The recipe fits data of any size: 3 epochs at lr 2e-5 with 10% warmup and batch 32 (the middle of the
original's GLUE recipes), a checkpoint evaluated every tenth of the steps, the best kept by accuracy
(single-label), micro-F1 (multi-label) or the squared error (regression; Pearson can favour a near-constant
model), or by `metric`.
"""

import dataclasses
import json
import math
import os

from albert_tf.file_utils import atomic_output, atomic_output_path
from albert_tf.settings import DROPOUT_RATE, SettingError
from albert_tf.tasks import labelled_texts
from albert_tf.tasks.classification_metrics import (DEFAULT_SELECTION_METRIC, MAX_MATRIX_LABELS, SELECTION_METRICS,
                                                    metrics_table, multi_label_metrics, plot_confusion_matrix,
                                                    regression_metrics, single_label_metrics)
from albert_tf.tasks.finetuning_task import FinetuningTask, Recipe, check_data_files, predict_logits
from albert_tf.tasks.labelled_texts import MULTI_LABEL_THRESHOLD, PROBLEM_TYPES, ColumnNames, LabelScheme

RECIPE = Recipe(2e-5, 32, num_train_epochs=3.0, warmup_proportion=0.1)
EVALUATIONS_PER_RUN = 10  # checkpoints evaluated over a run, whatever its length
EVAL_REPORT_FILE = "eval_report.txt"
CONFUSION_MATRIX_FILE = "confusion_matrix.png"
PREDICTIONS_STEM = "predictions"


@dataclasses.dataclass(frozen=True)
class TextClassificationConfig:
    """The task's own settings (run_text_classifier's flags of the same names). `problem_type` and `labels` left
    None are read from the training file (or, without training, from the fine-tuned model's record)."""

    train_file: str | None = None
    eval_file: str | None = None
    predict_file: str | None = None
    text_column: str = "text"
    text_b_column: str | None = None  # None: "text_b" where the file has it
    label_column: str = "label"
    id_column: str | None = None  # None: "id" where the file has it
    label_separator: str | None = None  # multi-label names in one cell, split on this
    quoting: str = "auto"  # how CSV and TSV cells are read: labelled_texts.QUOTINGS
    problem_type: str | None = None  # single_label, multi_label or regression
    metric: str | None = None  # the metric that picks the best checkpoint
    dropout: float = 0.1
    labels: tuple | None = None  # the label names, in class-id order

    @property
    def columns(self):
        return ColumnNames(text=self.text_column, text_b=self.text_b_column, label=self.label_column,
                           example_id=self.id_column)

    @property
    def scheme(self):
        return LabelScheme(self.problem_type, tuple(self.labels or ()))


def recorded_scheme(metadata, source):
    """The label scheme a fine-tuned classifier's albert_tf.json records (GLUE classifiers included)."""
    if metadata.get("model") != "classifier":
        raise SettingError(f"{source}: holds a {metadata.get('model')!r} model; evaluating or predicting without "
                           "<train_file> needs a fine-tuned classifier")
    problem_type = metadata.get("problem_type") or ("regression" if metadata.get("is_regression") else "single_label")
    if problem_type == "regression":
        return LabelScheme("regression")
    names = metadata.get("label_names") or [str(index) for index in range(int(metadata.get("num_labels", 0)))]
    return LabelScheme(problem_type, tuple(names))


class TextClassificationTask(FinetuningTask):
    tool = "albert_tf.run_text_classifier"
    model_kind = "classifier"
    unit = "Rows"
    # The original's GLUE length is 512; a user's labelled texts are mostly short, and a model at 128 trains
    # and serves about four times as fast (Hugging Face's run_glue defaults to 128 too).
    max_seq_length = 128
    recipe_note = ("Default: the own-data recipe (3 epochs, lr 2e-5, 10% warmup, batch 32, a checkpoint evaluated "
                   "every tenth of the steps).")
    do_eval_help = ("Evaluate on --eval_file (every checkpoint while training): metrics in eval_results.json, a table "
                    f"in {EVAL_REPORT_FILE}, and the confusion matrix in {CONFUSION_MATRIX_FILE} (up to "
                    f"{MAX_MATRIX_LABELS} labels; past that, the most frequent confusions in {EVAL_REPORT_FILE}).")
    do_predict_help = (f"Write {PREDICTIONS_STEM}.csv/.tsv/.jsonl (the --predict_file's format): its id column if any, "
                       "the predicted label name(s) and each label's probability (the score for regression).")
    config_class = TextClassificationConfig

    def __init__(self):
        self._files = {}  # path -> TextFile: each file is read and checked once per run

    def title(self, config):
        named = config.task.train_file or config.task.eval_file or config.task.predict_file
        return f"Text classifier ({os.path.basename(named)})"

    def validate(self, config):
        task = config.task
        check_data_files(config, labelled_texts.file_format)  # file_format refuses a name no reader takes
        if task.problem_type is not None and task.problem_type not in PROBLEM_TYPES:
            raise SettingError(f"<problem_type> must be one of {list(PROBLEM_TYPES)}, got {task.problem_type!r}")
        if task.label_separator is not None and task.problem_type not in (None, "multi_label"):
            raise SettingError(f"<label_separator> splits multi-label names; <problem_type> is {task.problem_type}")
        if task.label_separator == "":
            raise SettingError("<label_separator> must not be empty")
        if task.quoting not in labelled_texts.QUOTINGS:
            raise SettingError(f"<quoting> must be one of {list(labelled_texts.QUOTINGS)}, got {task.quoting!r}")
        DROPOUT_RATE.check("dropout", task.dropout)

    def resolve(self, config):
        """Reads the training file (every row checked) for the label scheme, or takes the starting model's."""
        task = config.task
        if config.do_train:
            train = self._read(task.train_file, task, labelled=True)
            scheme = labelled_texts.label_scheme(train, task.problem_type, task.label_separator)
        elif config.init_checkpoint:
            from albert_tf.models.model_dir_format import model_metadata

            scheme = recorded_scheme(model_metadata(config.init_checkpoint), config.init_checkpoint)
        else:
            raise SettingError("<init_checkpoint> (a fine-tuned classifier) required without <do_train>")
        if task.metric is not None and task.metric not in SELECTION_METRICS[scheme.problem_type]:
            raise SettingError(f"<metric> of a {scheme.problem_type} model must be one of "
                               f"{list(SELECTION_METRICS[scheme.problem_type])}, got {task.metric!r}")
        if config.do_predict:  # a labelled predict file is scored: its labels are checked before anything is written
            labelled_texts.check_labels(scheme, self._read(task.predict_file, task, labelled=False),
                                        task.label_separator)
        config = dataclasses.replace(config, task=dataclasses.replace(task, problem_type=scheme.problem_type,
                                                                      labels=scheme.labels))
        pairs = config.do_train and self._read(task.train_file, task, labelled=True).has_text_b
        shortest = 5 if pairs else 3  # [CLS] A [SEP] (B [SEP]) with a token of each text
        if config.max_seq_length < shortest:
            raise SettingError(f"<max_seq_length>={config.max_seq_length} cannot hold [CLS] A [SEP]"
                               f"{' B [SEP]' if pairs else ''} with a token of each text: at least {shortest}")
        return config

    def _read(self, path, task, labelled):
        key = (path, labelled)
        if key not in self._files:
            self._files[key] = labelled_texts.read_text_file(path, task.columns, labelled=labelled,
                                                             quoting=task.quoting)
        return self._files[key]

    def recipe(self, config):
        return RECIPE

    def checkpoint_steps(self, config, steps):
        return max(1, math.ceil(steps / EVALUATIONS_PER_RUN))

    def metadata(self, config):
        scheme = config.task.scheme
        regression = scheme.problem_type == "regression"
        metadata = {"num_labels": scheme.num_outputs, "label_names": ["score"] if regression else list(scheme.labels),
                    "is_regression": regression, "problem_type": scheme.problem_type,
                    "max_seq_length": config.max_seq_length}
        if config.do_train:  # what the model learns to answer: the LiteRT export gives it text_b or none
            metadata["takes_pairs"] = self._read(config.task.train_file, config.task, labelled=True).has_text_b
        if scheme.problem_type == "multi_label":
            metadata["multi_label_threshold"] = MULTI_LABEL_THRESHOLD
        return metadata

    def continues(self, metadata, config):
        """A classifier fine-tuned on the same labels trains on with its head; any other gets a fresh one."""
        if metadata.get("model") != self.model_kind:
            return False
        try:
            return recorded_scheme(metadata, "") == config.task.scheme
        except (SettingError, ValueError):
            return False

    def build_model(self, encoder, config):
        from albert_tf.models.albert_classifier import AlbertClassifier

        scheme = config.task.scheme
        labels = None if scheme.problem_type == "regression" else list(scheme.labels)
        return AlbertClassifier(encoder, scheme.num_outputs, dropout=config.task.dropout, labels=labels,
                                problem_type=scheme.problem_type)

    def _encode(self, text_file, tokenizer, config, labelled):
        from albert_tf.tasks import glue

        examples = [glue.Example(e.where, e.text, e.text_b) for e in text_file.examples]
        arrays = glue.encode_examples(examples, tokenizer, config.max_seq_length)
        if labelled:
            arrays["label_ids"] = labelled_texts.label_targets(config.task.scheme, text_file,
                                                               config.task.label_separator)
        return arrays

    def read_train(self, tokenizer, config):
        task = config.task
        train = self._read(task.train_file, task, labelled=True)
        print(self._describe(train, config), flush=True)
        return self._encode(train, tokenizer, config, labelled=True)

    def _describe(self, text_file, config):
        scheme = config.task.scheme
        texts = "text pairs" if text_file.has_text_b else "texts"
        line = f"{text_file.path}: {len(text_file.examples):,} {texts}, {scheme.problem_type.replace('_', '-')}"
        if scheme.problem_type == "regression":
            return line
        counts = labelled_texts.label_counts(scheme, text_file, config.task.label_separator)
        return f"{line}, {len(scheme.labels)} labels: " + ", ".join(f"{name} {count:,}" for name, count in
                                                                      counts.items())

    def read_eval(self, tokenizer, config):
        task = config.task
        evaluation = self._read(task.eval_file, task, labelled=True)
        labelled_texts.check_labels(task.scheme, evaluation, task.label_separator)
        return self._encode(evaluation, tokenizer, config, labelled=True)

    def example_losses(self, batch, outputs):
        import tensorflow as tf

        logits = tf.cast(outputs["logits"], tf.float32)
        targets = batch["label_ids"]
        if len(targets.shape) == 2:  # multi-label: each label a binary decision, their mean per row
            return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(tf.cast(targets, tf.float32), logits), -1)
        if logits.shape[-1] == 1:  # regression: the one output is the score
            return tf.square(logits[:, 0] - tf.cast(targets, tf.float32))
        return tf.nn.sparse_softmax_cross_entropy_with_logits(targets, logits)

    def _metrics(self, logits, targets, config):
        scheme = config.task.scheme
        if scheme.problem_type == "regression":
            return regression_metrics(targets, logits[:, 0])
        if scheme.problem_type == "multi_label":
            return multi_label_metrics(targets, probabilities(logits, scheme) >= MULTI_LABEL_THRESHOLD, scheme.labels)
        return single_label_metrics(targets, logits.argmax(-1), scheme.labels)

    def evaluate(self, model, eval_data, config):
        logits = predict_logits(model, eval_data, config.eval_batch_size)
        self._evaluated = (logits, eval_data["label_ids"])
        return self._metrics(logits, eval_data["label_ids"], config)

    def evaluation_note(self, config):
        from albert_tf.tasks import prediction_notes

        logits, targets = getattr(self, "_evaluated", (None, None))
        if logits is None:
            return None
        scheme, what = config.task.scheme, config.task.eval_file
        if scheme.problem_type == "regression":
            return prediction_notes.constant_score_note(logits[:, 0], targets, what)
        if scheme.problem_type == "multi_label":
            predicted = probabilities(logits, scheme) >= MULTI_LABEL_THRESHOLD
            return prediction_notes.constant_label_set_note(predicted, targets, what)
        return prediction_notes.single_class_note(logits.argmax(-1), targets, scheme.labels, what)

    def best_metric(self, config):
        return config.task.metric or DEFAULT_SELECTION_METRIC[config.task.problem_type]

    def _predictions_file(self, config):
        return f"{PREDICTIONS_STEM}.{labelled_texts.file_format(config.task.predict_file)}"  # format = extension

    def output_files(self, config):
        files = [EVAL_REPORT_FILE, CONFUSION_MATRIX_FILE]
        if config.task.predict_file:
            files.append(self._predictions_file(config))
        return files

    def write_evaluation_report(self, evaluation, config, output_dir):
        """The evaluation as a table a person reads and, for single-label models where matplotlib (the [plots]
        extra) is installed, a PNG of the confusion matrix; returns the paths written."""
        import importlib.util

        scheme = config.task.scheme
        paths = [os.path.join(output_dir, EVAL_REPORT_FILE)]
        with atomic_output(paths[0]) as f:
            f.write(metrics_table(evaluation, scheme.labels))
        if "top_confusions" in evaluation:
            print(f"{len(scheme.labels):,} labels: no {CONFUSION_MATRIX_FILE} past {MAX_MATRIX_LABELS}; "
                  f"{EVAL_REPORT_FILE} lists the most frequent confusions.", flush=True)
        if "confusion_matrix" not in evaluation:
            return paths
        try:
            has_matplotlib = importlib.util.find_spec("matplotlib") is not None
        except ValueError:  # a module entry of None (hidden)
            has_matplotlib = False
        if not has_matplotlib:
            print(f"The confusion matrix is in {EVAL_REPORT_FILE}; for {CONFUSION_MATRIX_FILE} too: "
                  "pip install 'albert_tf[plots]'.", flush=True)
            return paths
        paths.append(os.path.join(output_dir, CONFUSION_MATRIX_FILE))
        with atomic_output(paths[1], "wb") as f:
            plot_confusion_matrix(evaluation, scheme.labels, f)
        return paths

    def predict(self, model, tokenizer, config, output_dir):
        task = config.task
        predict_file = self._read(task.predict_file, task, labelled=False)
        logits = predict_logits(model, self._encode(predict_file, tokenizer, config, labelled=False),
                                config.predict_batch_size)
        rows = prediction_rows(predict_file, logits, task.scheme, task.label_separator)
        path = os.path.join(output_dir, self._predictions_file(config))
        with atomic_output_path(path) as temporary:
            write_rows(temporary, rows, labelled_texts.file_format(task.predict_file))
        metrics = None
        # The reader's one rule: a label column blank in every row is no labels (predictions, no metrics); one
        # blank in some rows only was refused. So labels here are on every row, of every problem type alike.
        if predict_file.has_labels:
            targets = labelled_texts.label_targets(task.scheme, predict_file, task.label_separator)
            metrics = self._metrics(logits, targets, config)
        return metrics, [path]

    def eval_results(self, evaluation, prediction):
        if evaluation is None and prediction is None:
            return None
        return {**(evaluation or {}), **({"predict": prediction} if prediction else {})}


def probabilities(logits, scheme):
    """Each row's probabilities: softmax over the labels, or each label's sigmoid for multi-label models."""
    import numpy as np

    logits = np.asarray(logits, np.float64)
    if scheme.problem_type == "multi_label":
        return 1 / (1 + np.exp(-logits))
    shifted = np.exp(logits - logits.max(-1, keepdims=True))
    return shifted / shifted.sum(-1, keepdims=True)


def prediction_rows(text_file, logits, scheme, label_separator=None):
    """One dict per input row: its id (where the file has an id column), the predicted label (names joined
    by the separator, or "|", for multi-label rows; the score for regression) and each label's probability."""
    rows = []
    probs = None if scheme.problem_type == "regression" else probabilities(logits, scheme)
    for index, example in enumerate(text_file.examples):
        row = {text_file.id_column: example.example_id} if text_file.id_column else {}
        if probs is None:
            row["score"] = float(logits[index, 0])
        else:
            if scheme.problem_type == "multi_label":
                names = [name for name, p in zip(scheme.labels, probs[index]) if p >= MULTI_LABEL_THRESHOLD]
                row["label"] = names if label_separator is None else label_separator.join(names)
            else:
                row["label"] = scheme.labels[int(probs[index].argmax())]
            row.update({f"p_{name}": round(float(p), 6) for name, p in zip(scheme.labels, probs[index])})
        rows.append(row)
    return rows


def write_rows(path, rows, kind):
    """Writes prediction rows as CSV/TSV (a header, multi-label names as a JSON list) or JSON Lines."""
    import csv

    with open(path, "w", encoding="utf-8", newline="") as f:
        if kind == "jsonl":
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            return
        writer = csv.writer(f, delimiter="," if kind == "csv" else "\t", lineterminator="\n")
        writer.writerow(list(rows[0]))
        for row in rows:
            writer.writerow([json.dumps(v, ensure_ascii=False) if isinstance(v, list) else v for v in row.values()])
