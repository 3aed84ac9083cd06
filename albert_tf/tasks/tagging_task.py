"""Entity tagging (token classification) as a fine-tuning task: CoNLL-style column files or JSON Lines of
tokens and tags (`tagged_texts`), one IOB2 tag per word predicted, scored as conlleval scores it
(`tagging_metrics`).

Words become pieces and windows as `albert_tf.text.word_pieces` says: each word tokenized on its own (the
model's casing and accents), the loss on each word's first piece, long sentences cut into overlapping windows
and merged back so every word gets exactly one tag. The loss is the mean cross-entropy over the first pieces
of the whole global batch (Hugging Face's token classification loss), not a mean of per-window means.

The label set is the training file's ("O", then B- and I- of each entity type, types sorted) and is recorded
with the fine-tuned model as `label_names` (Hugging Face's id2label); evaluating or predicting with a fine-tuned
tagger and no training file takes the labels it records. The recipe is the own-data classifier's: 3 epochs at
lr 2e-5, 10% warmup, batch 32, a checkpoint evaluated every tenth of the steps, the best kept by entity F1.
"""

import dataclasses
import os

from albert_tf.file_utils import atomic_output, atomic_output_path
from albert_tf.settings import DROPOUT_RATE, POSITIVE_INTEGER, SettingError
from albert_tf.tasks import tagged_texts
from albert_tf.tasks.finetuning_task import FinetuningObjective, FinetuningTask, check_data_files, predict_logits
from albert_tf.tasks.tagged_texts import TagLabels
from albert_tf.tasks.tagging_metrics import metrics_table, tagging_metrics
from albert_tf.tasks.text_classification_task import EVALUATIONS_PER_RUN, RECIPE

EVAL_REPORT_FILE = "eval_report.txt"
EVAL_PREDICTIONS_STEM = "eval_predictions"
PREDICTIONS_STEM = "predictions"
CONLLEVAL_SUFFIX = ".conlleval.txt"  # "token gold predicted" lines, which conlleval scores whatever the input's layout
MODEL_KIND = "token_classifier"


@dataclasses.dataclass(frozen=True)
class TaggingConfig:
    """The task's own settings (run_tagger's flags of the same names). Columns and scheme left None are detected
    from each file; `labels` left None come from the training file (or the fine-tuned model's record)."""

    train_file: str | None = None
    eval_file: str | None = None
    predict_file: str | None = None
    token_column: int | None = None  # 0-based; None: detected
    tag_column: int | None = None  # 0-based; None: detected
    scheme: str | None = None  # iob2, iob1 or bioes; None: detected
    tokens_key: str | None = None  # JSON Lines: the key of the tokens; None: "tokens"
    tags_key: str | None = None  # JSON Lines: the key of the tags; None: "tags", or "ner_tags" where that is there
    tag_names: tuple | None = None  # JSON Lines: the names of integer tag ids, in id order
    tag_names_file: str | None = None  # the same, one a line in a file
    doc_stride: int | None = None  # pieces between a long sentence's windows; None: half a window
    dropout: float = 0.1
    labels: tuple | None = None  # the IOB2 tags, in class-id order


@dataclasses.dataclass(frozen=True)
class TaggedData:
    """A file read for the model: its sentences, their windows and the windows' arrays."""

    tagged_file: object  # tagged_texts.TaggedFile
    windows: list  # word_pieces.TaggingWindow, in order
    arrays: dict  # the encoder inputs and label_ids, one row per window

    def word_logits(self, model, batch_size):
        """Per sentence, float32 [words, labels]: each word read in the window that gives it the most context."""
        from albert_tf.text.word_pieces import merge_word_scores

        logits = predict_logits(model, self.arrays, batch_size)
        return merge_word_scores(self.windows, logits, [len(s.tokens) for s in self.tagged_file.sentences])


def recorded_labels(metadata, source):
    """The tags a fine-tuned tagger's albert_tf.json records."""
    if metadata.get("model") != MODEL_KIND:
        raise SettingError(f"{source}: holds a {metadata.get('model')!r} model; evaluating or predicting without "
                           "<train_file> needs a fine-tuned tagger")
    names = metadata.get("label_names")
    if not names:
        raise SettingError(f"{source}: its albert_tf.json records no label_names; fine-tune it with <train_file>")
    return TagLabels(names)


class TaggingObjective(FinetuningObjective):
    """Cross-entropy of each labelled position (a word's first piece) summed on each replica and divided by the
    labelled positions of the whole global batch: every replica's share of Hugging Face's token mean."""

    sum_keys = ("loss_sum", "labelled")

    def global_sums(self, batch):
        import tensorflow as tf

        from albert_tf.text.word_pieces import IGNORED_LABEL_ID

        return {"labelled": tf.reduce_sum(tf.cast(batch["label_ids"] != IGNORED_LABEL_ID, tf.float32))}

    def batch_sums(self, outputs, batch):
        import tensorflow as tf

        # Training reads the tagger's `head_outputs`, the labelled positions' logits alone; evaluation the model's.
        if "labelled_logits" in outputs:
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(outputs["labelled_ids"],
                                                                    outputs["labelled_logits"])
            return {"loss_sum": tf.reduce_sum(losses), "labelled": tf.cast(tf.size(losses), tf.float32)}
        losses, labelled = token_losses(batch["label_ids"], outputs["logits"])
        return {"loss_sum": tf.reduce_sum(losses), "labelled": tf.reduce_sum(labelled)}

    def replica_loss(self, sums, global_sums, global_batch_size):
        import tensorflow as tf

        return sums["loss_sum"] / tf.maximum(global_sums["labelled"], 1.0)

    def metrics(self, totals):
        return {"loss": float(totals["loss_sum"]) / max(float(totals["labelled"]), 1.0)}


def token_losses(label_ids, logits):
    """(cross-entropy at every position, 0 where ignored; 1.0 where labelled, else 0), float32 [batch, seq]."""
    import tensorflow as tf

    from albert_tf.text.word_pieces import IGNORED_LABEL_ID

    labelled = tf.cast(label_ids != IGNORED_LABEL_ID, tf.float32)
    safe_ids = tf.where(label_ids == IGNORED_LABEL_ID, tf.zeros_like(label_ids), label_ids)
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(safe_ids, tf.cast(logits, tf.float32))
    return losses * labelled, labelled


class TaggingTask(FinetuningTask):
    tool = "albert_tf.run_tagger"
    model_kind = MODEL_KIND
    unit = "Windows"
    max_seq_length = 128
    recipe_note = ("Default: the own-data recipe (3 epochs, lr 2e-5, 10% warmup, batch 32, a checkpoint evaluated "
                   "every tenth of the steps).")
    do_eval_help = ("Evaluate on --eval_file (every checkpoint while training): entity-level precision, recall and F1 "
                    "per type and overall, as conlleval computes them, and token accuracy in eval_results.json, a "
                    f"table in {EVAL_REPORT_FILE}, and the file with each token's predicted tag as a last column in "
                    f"{EVAL_PREDICTIONS_STEM}.<the eval file's extension> (and as conlleval reads it, token, gold "
                    f"and predicted tag per line, in {EVAL_PREDICTIONS_STEM}{CONLLEVAL_SUFFIX}).")
    do_predict_help = (f"Write {PREDICTIONS_STEM}.<the predict file's extension>: the predict file with each token's "
                       "predicted tag as a last column (JSON Lines: a \"predicted_tags\" list); scored when it has "
                       f"tags (then also {PREDICTIONS_STEM}{CONLLEVAL_SUFFIX}, conlleval's input).")
    config_class = TaggingConfig

    def __init__(self):
        self._files = {}  # (path, tagged) -> TaggedFile: each file is read and checked once per run
        self._eval_tags = None  # the last evaluation's predicted tags, written with its report

    def title(self, config):
        named = config.task.train_file or config.task.eval_file or config.task.predict_file
        return f"Tagger ({os.path.basename(named)})"

    def validate(self, config):
        task = config.task
        check_data_files(config)
        tagged_texts.check_settings(task.token_column, task.tag_column, task.scheme)
        self._tag_names(task)  # bad keys or names, and an unreadable names file, refused before anything is read
        POSITIVE_INTEGER.check("doc_stride", task.doc_stride, allow_none=True)
        DROPOUT_RATE.check("dropout", task.dropout)

    def resolve(self, config):
        """Reads the training file (every sentence checked) for the labels, or takes the starting model's; checks
        the evaluation and predict files' entity types against them before anything is written."""
        task = config.task
        if config.do_train:
            labels = tagged_texts.tag_labels(self._read(task.train_file, task, tagged=True))
        elif config.init_checkpoint:
            from albert_tf.models.model_dir_format import model_metadata

            from albert_tf.models.albert_token_classifier import recorded_doc_stride

            metadata = model_metadata(config.init_checkpoint)
            labels = recorded_labels(metadata, config.init_checkpoint)
            task = dataclasses.replace(task, doc_stride=recorded_doc_stride(metadata, task.doc_stride,
                                                                            config.max_seq_length))
        else:
            raise SettingError("<init_checkpoint> (a fine-tuned tagger) required without <do_train>")
        if config.do_eval:
            tagged_texts.check_entity_types(labels, self._read(task.eval_file, task, tagged=True))
        if config.do_predict:
            tagged_texts.check_entity_types(labels, self._read(task.predict_file, task, tagged=False))
        if config.max_seq_length < 3:
            raise SettingError(f"<max_seq_length>={config.max_seq_length} cannot hold [CLS] a piece [SEP]: at least 3")
        return dataclasses.replace(config, task=dataclasses.replace(task, labels=labels.labels))

    def _read(self, path, task, tagged):
        key = (path, tagged)
        if key not in self._files:
            self._files[key] = tagged_texts.read_tagged_file(path, task.token_column, task.tag_column, task.scheme,
                                                             tagged=tagged, tokens_key=task.tokens_key,
                                                             tags_key=task.tags_key, tag_names=self._tag_names(task))
        return self._files[key]

    def _tag_names(self, task):
        """The names of integer tag ids (<tag_names>, or <tag_names_file> read), checked; None where not given."""
        if task.tag_names is not None and task.tag_names_file is not None:
            raise SettingError("<tag_names> and <tag_names_file> both given; give the tag names once")
        names = task.tag_names
        if task.tag_names_file is not None:
            names = tagged_texts.read_tag_names(task.tag_names_file)
        return tagged_texts.check_json_settings(task.tokens_key, task.tags_key, names)

    def recipe(self, config):
        return RECIPE

    def checkpoint_steps(self, config, steps):
        return max(1, -(-steps // EVALUATIONS_PER_RUN))

    def metadata(self, config):
        # The stride the windows were cut with, the default too: a later reader at this length (an evaluation
        # without <doc_stride>, from_preset) cuts the same windows, whatever default it has.
        from albert_tf.text.word_pieces import default_doc_stride

        return {"num_labels": len(config.task.labels), "label_names": list(config.task.labels),
                "max_seq_length": config.max_seq_length, "tag_scheme": "iob2",
                "doc_stride": config.task.doc_stride or default_doc_stride(config.max_seq_length)}

    def continues(self, metadata, config):
        """A tagger fine-tuned on the same tags trains on with its head; any other model gets a fresh one."""
        return metadata.get("model") == self.model_kind and list(metadata.get("label_names") or []) == list(
            config.task.labels)

    def build_model(self, encoder, config):
        from albert_tf.models.albert_token_classifier import AlbertTokenClassifier

        return AlbertTokenClassifier(encoder, labels=list(config.task.labels), dropout=config.task.dropout,
                                     doc_stride=config.task.doc_stride)

    def objective(self, model):
        return TaggingObjective(self.example_losses, model.TRAINING_INPUTS)

    def example_losses(self, batch, outputs):
        """Each window's mean cross-entropy over its first pieces (0 for a window labelling none): what the
        trainer's per-example interface asks for; training itself uses `TaggingObjective`'s token mean."""
        import tensorflow as tf

        losses, labelled = token_losses(batch["label_ids"], outputs["logits"])
        return tf.reduce_sum(losses, -1) / tf.maximum(tf.reduce_sum(labelled, -1), 1.0)

    def _data(self, tagged_file, tokenizer, config):
        from albert_tf.text.word_pieces import tagging_windows, window_arrays

        sentences = [list(sentence.tokens) for sentence in tagged_file.sentences]
        tag_ids = None
        if tagged_file.has_tags:
            ids = TagLabels(config.task.labels).label2id
            tag_ids = [[ids[tag] for tag in sentence.tags] for sentence in tagged_file.sentences]
        windows = tagging_windows(tokenizer, sentences, tag_ids, config.max_seq_length, config.task.doc_stride)
        return TaggedData(tagged_file, windows, window_arrays(windows))

    def read_train(self, tokenizer, config):
        train = self._read(config.task.train_file, config.task, tagged=True)
        data = self._data(train, tokenizer, config)
        print(self._describe(train, data), flush=True)
        return data.arrays

    def _describe(self, tagged_file, data):
        tokens = sum(len(sentence.tokens) for sentence in tagged_file.sentences)
        entities = ", ".join(f"{name} {count:,}" for name, count in tagged_texts.entity_counts(tagged_file).items())
        scheme = "" if tagged_file.scheme in (None, "iob2") else f" (read as {tagged_file.scheme}, tagged in IOB2)"
        return (f"{tagged_file.path}: {len(tagged_file.sentences):,} sentences, {tokens:,} tokens, "
                f"{len(data.windows):,} windows; entities{scheme}: {entities}")

    def read_eval(self, tokenizer, config):
        return self._data(self._read(config.task.eval_file, config.task, tagged=True), tokenizer, config)

    def _predicted_tags(self, model, data, config, batch_size):
        names = config.task.labels
        return [[names[index] for index in scores.argmax(-1)] for scores in data.word_logits(model, batch_size)]

    def evaluate(self, model, eval_data, config):
        predicted = self._predicted_tags(model, eval_data, config, config.eval_batch_size)
        self._eval_tags, self._evaluated_file = predicted, eval_data.tagged_file
        return tagging_metrics([sentence.tags for sentence in eval_data.tagged_file.sentences], predicted)

    def best_metric(self, config):
        return "f1"

    def evaluation_note(self, config):
        from albert_tf.tasks.prediction_notes import only_outside_note

        predicted = getattr(self, "_eval_tags", None)
        if predicted is None:
            return None
        gold = [sentence.tags for sentence in self._evaluated_file.sentences]
        return only_outside_note(predicted, gold, config.task.eval_file)

    def output_files(self, config):
        files = [EVAL_REPORT_FILE]
        if config.task.eval_file:
            files += [_predictions_name(EVAL_PREDICTIONS_STEM, config.task.eval_file),
                      EVAL_PREDICTIONS_STEM + CONLLEVAL_SUFFIX]
        if config.task.predict_file:
            files += [_predictions_name(PREDICTIONS_STEM, config.task.predict_file), PREDICTIONS_STEM + CONLLEVAL_SUFFIX]
        return files

    def write_evaluation_report(self, evaluation, config, output_dir):
        """The evaluation as a table, and the eval file with the predicted tags of the evaluated model (the last
        evaluation: the best checkpoint's) as a last column, and as conlleval's input; returns the paths written."""
        report = os.path.join(output_dir, EVAL_REPORT_FILE)
        with atomic_output(report) as f:
            f.write(metrics_table(evaluation))
        eval_file = self._read(config.task.eval_file, config.task, tagged=True)
        return [report, *_write_predictions(output_dir, EVAL_PREDICTIONS_STEM, eval_file, self._eval_tags)]

    def predict(self, model, tokenizer, config, output_dir):
        predict_file = self._read(config.task.predict_file, config.task, tagged=False)
        predicted = self._predicted_tags(model, self._data(predict_file, tokenizer, config), config,
                                         config.predict_batch_size)
        written = _write_predictions(output_dir, PREDICTIONS_STEM, predict_file, predicted)
        metrics = None
        if predict_file.has_tags:
            metrics = tagging_metrics([sentence.tags for sentence in predict_file.sentences], predicted)
        return metrics, written

    def eval_results(self, evaluation, prediction):
        if evaluation is None and prediction is None:
            return None
        return {**(evaluation or {}), **({"predict": prediction} if prediction else {})}

    def summary(self, metrics):
        return (f"entity F1 {metrics['f1']:.4f}  precision {metrics['precision']:.4f}  recall {metrics['recall']:.4f}"
                f"  token accuracy {metrics['accuracy']:.4f}")


def _write_predictions(output_dir, stem, tagged_file, predicted):
    """Writes `tagged_file` with its predicted tags in its own format and, where it has gold tags, as conlleval's
    input; returns the paths."""
    outputs = [(_predictions_name(stem, tagged_file.path), tagged_texts.write_predictions)]
    if tagged_file.has_tags:
        outputs.append((stem + CONLLEVAL_SUFFIX, tagged_texts.write_conlleval_input))
    paths = []
    for name, write in outputs:
        path = os.path.join(output_dir, name)
        with atomic_output_path(path) as temporary:
            write(temporary, tagged_file, predicted)
        paths.append(path)
    return paths


def _predictions_name(stem, path):
    """`stem` with the extension of the file it answers (a .gz looked through: predictions are written plain)."""
    name = os.path.basename(path)
    if name.endswith(".gz"):
        name = name[:-3]
    extension = os.path.splitext(name)[1]
    return stem + (extension if extension else ".txt")
