"""Entity tagging (token classification) as a fine-tuning task: CoNLL-style column files or JSON Lines of
tokens and tags (`tagged_texts`), entities predicted as character spans of each sentence's text, scored as
conlleval scores entities (`tagging_metrics`).

Each sentence is tagged as served text is (`albert_tf.text.entities`): its raw text (the file's `# text =`
line where its tokens are found in it, KLUE-NER's characters joined, else the tokens joined with no space
between Chinese or Japanese characters: `tagged_texts.sentence_text`) tokenized whole, its pieces grouped into
units (a word, a punctuation mark, a piece of text without spaces), each unit tagged by the gold entities --
character spans of the text -- it overlaps; the loss on each unit's reading piece; long texts cut into
overlapping windows and merged back so every unit gets exactly one tag. The loss is the mean cross-entropy
over the units of the whole global batch (Hugging Face's token classification loss), not a mean of
per-window means.

What is measured is what is served: evaluation and prediction find each sentence's entities by the served
rule and score them as character spans against the file's (conlleval's entity precision, recall and F1 per
type and overall; accuracy over the text's non-space characters), and for KLUE-NER's files (one character a
line) KLUE's entity and character macro F1 besides. The predictions file tags each token an entity overlaps;
`<stem>.entities.jsonl` holds every sentence's text and entities as the served model returns them.

The label set is the training file's ("O", then B- and I- of each entity type, types sorted) and is recorded
with the fine-tuned model as `label_names` (Hugging Face's id2label); evaluating or predicting with a fine-tuned
tagger and no training file takes the labels it records. The recipe is the own-data classifier's: 3 epochs at
lr 2e-5, 10% warmup, batch 32, a checkpoint evaluated every tenth of the steps, the best kept by entity F1.
"""

import dataclasses
import json
import os

from albert_tf.file_utils import atomic_output, atomic_output_path
from albert_tf.settings import DROPOUT_RATE, POSITIVE_INTEGER, SettingError
from albert_tf.tasks import tagged_texts
from albert_tf.tasks.finetuning_task import FinetuningObjective, FinetuningTask, check_data_files, predict_logits
from albert_tf.tasks.tagged_texts import TagLabels
from albert_tf.tasks.tagging_metrics import klue_metrics, metrics_table, span_metrics
from albert_tf.tasks.text_classification_task import EVALUATIONS_PER_RUN, RECIPE

EVAL_REPORT_FILE = "eval_report.txt"
EVAL_PREDICTIONS_STEM = "eval_predictions"
PREDICTIONS_STEM = "predictions"
CONLLEVAL_SUFFIX = ".conlleval.txt"  # "token gold predicted" lines, which conlleval scores whatever the input's layout
ENTITIES_SUFFIX = ".entities.jsonl"  # each sentence's text and its entities as the served model returns them
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
    """A file read for the model: its sentences' texts, gold entities and units, their windows and arrays."""

    tagged_file: object  # tagged_texts.TaggedFile
    texts: list  # each sentence's text
    token_spans: list  # per sentence, each token's [start, end) in its text
    gold: list  # per sentence, its entities as (type, start, end) character spans of its text ([] untagged)
    units: list  # per sentence, its entities.TextUnits
    windows: list  # word_pieces.TaggingWindow, in order
    arrays: dict  # the encoder inputs and label_ids, one row per window

    inexact: int = 0  # gold entities the units cannot hold exactly (a boundary inside a piece)
    sources: tuple = ()  # per sentence, the rule its text came by (tagged_texts.text_source)

    def entities(self, model, batch_size, label_names):
        """Per sentence, its entities as the served model finds them ({"text", "type", "start", "end", "score"})."""
        return self.entities_of_logits(predict_logits(model, self.arrays, batch_size), label_names)

    def entities_of_logits(self, logits, label_names):
        """The entities of a model's logits on the windows ([windows, seq, labels]), each unit read in the window
        that gives it the most context."""
        from albert_tf.text.entities import text_entities
        from albert_tf.text.word_pieces import merge_unit_scores

        scores = merge_unit_scores(self.windows, logits, [len(units.first_pieces) for units in self.units])
        return [text_entities(units, unit_scores, label_names) for units, unit_scores in zip(self.units, scores)]

    def metrics(self, entities, labels):
        """The span metrics of `entities` (per sentence, as `entities` gives them) against the file's, and
        KLUE-NER's own for a file in its layout (`labels`: the IOB2 tag names)."""
        predicted = [_spans_of(found) for found in entities]
        metrics = span_metrics(self.texts, self.gold, predicted)
        if self.sources and all(source == "characters" for source in self.sources):
            metrics.update(klue_metrics(self.texts, self.gold, predicted, labels))
        return metrics


def tagged_data(tagged_file, tokenizer, labels, max_seq_length, doc_stride=None):
    """`TaggedData` of a file for a model of `labels` (IOB2 tag names) whose tokenizer is `tokenizer`: each
    sentence's text, gold entities (character spans) and units, their windows (labelled where the file has tags)."""
    from albert_tf.text.entities import text_units, unit_tables, unit_tags
    from albert_tf.text.word_pieces import text_windows, window_arrays

    tables = unit_tables(tokenizer)
    texts, token_spans, gold, units = [], [], [], []
    for sentence in tagged_file.sentences:
        text, spans = tagged_texts.sentence_text(sentence)
        texts.append(text)
        token_spans.append(spans)
        gold.append(tagged_texts.entity_char_spans(sentence, spans) if tagged_file.has_tags else [])
        units.append(text_units(tokenizer, text, tables))
    tag_ids, inexact = None, 0
    if tagged_file.has_tags:
        ids = TagLabels(labels).label2id
        tag_ids = []
        for sentence_units, entities in zip(units, gold):
            sentence_tags, sentence_inexact = unit_tags(sentence_units, entities, ids)
            tag_ids.append(sentence_tags)
            inexact += len(sentence_inexact)
    windows = text_windows(units, tag_ids, max_seq_length, doc_stride, special_ids=tokenizer.special_ids)
    sources = tuple(tagged_texts.text_source(sentence) for sentence in tagged_file.sentences)
    return TaggedData(tagged_file, texts, token_spans, gold, units, windows, window_arrays(windows), inexact, sources)


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
    do_eval_help = ("Evaluate on --eval_file (every checkpoint while training) as the served model tags raw text: "
                    "each sentence's entities, as character spans of its text, against the file's: precision, recall "
                    "and F1 per type and overall (conlleval's entity scores) and accuracy over the text's characters "
                    "in eval_results.json (KLUE-NER files: KLUE's entity and character macro F1 too), a table in "
                    f"{EVAL_REPORT_FILE}, the file with each token's predicted tag as a last column in "
                    f"{EVAL_PREDICTIONS_STEM}.<the eval file's extension> (and as conlleval reads it in "
                    f"{EVAL_PREDICTIONS_STEM}{CONLLEVAL_SUFFIX}), and each sentence's text and entities in "
                    f"{EVAL_PREDICTIONS_STEM}{ENTITIES_SUFFIX}.")
    do_predict_help = (f"Write {PREDICTIONS_STEM}.<the predict file's extension>: the predict file with each token's "
                       "predicted tag as a last column (JSON Lines: a \"predicted_tags\" list), and each sentence's "
                       f"text and entities, as the served model returns them, in {PREDICTIONS_STEM}{ENTITIES_SUFFIX}; "
                       f"scored when it has tags (then also {PREDICTIONS_STEM}{CONLLEVAL_SUFFIX}, conlleval's "
                       "input).")
    config_class = TaggingConfig

    def __init__(self):
        self._files = {}  # (path, tagged) -> TaggedFile: each file is read and checked once per run
        self._eval_predictions = None  # the last evaluation's (entities, tags), written with its report

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
        return tagged_data(tagged_file, tokenizer, config.task.labels, config.max_seq_length, config.task.doc_stride)

    def read_train(self, tokenizer, config):
        train = self._read(config.task.train_file, config.task, tagged=True)
        data = self._data(train, tokenizer, config)
        print(self._describe(train, data), flush=True)
        return data.arrays

    def _describe(self, tagged_file, data):
        tokens = sum(len(sentence.tokens) for sentence in tagged_file.sentences)
        counts = tagged_texts.entity_counts(tagged_file)
        entities = ", ".join(f"{name} {count:,}" for name, count in counts.items())
        scheme = "" if tagged_file.scheme in (None, "iob2") else f" (read as {tagged_file.scheme}, tagged in IOB2)"
        lines = [f"{tagged_file.path}: {len(tagged_file.sentences):,} sentences, {tokens:,} tokens, "
                 f"{sum(len(units.first_pieces) for units in data.units):,} units, {len(data.windows):,} windows; "
                 f"entities{scheme}: {entities}"]
        joined = data.sources.count("joined")
        if joined and any(sentence.text is not None for sentence in tagged_file.sentences):
            lines.append(f"  {joined:,} of the {len(tagged_file.sentences):,} sentences have no `# text =` line their "
                         "tokens are found in: their tokens joined (a space between words, none between Chinese or "
                         "Japanese characters)")
        if data.inexact:
            lines.append(f"  {data.inexact:,} of the {sum(counts.values()):,} entities begin or end inside a piece "
                         "of the vocabulary (or share one with another entity): learned as the pieces that cover "
                         "them")
        return "\n".join(lines)

    def read_eval(self, tokenizer, config):
        return self._data(self._read(config.task.eval_file, config.task, tagged=True), tokenizer, config)

    def _predicted(self, model, data, config, batch_size):
        """(per sentence its entities as served, per sentence one predicted IOB2 tag per token: the tokens an
        entity overlaps)."""
        from albert_tf.text.entities import span_tags

        entities = data.entities(model, batch_size, list(config.task.labels))
        tags = [span_tags(spans, _spans_of(found), sentence.tokens)
                for spans, found, sentence in zip(data.token_spans, entities, data.tagged_file.sentences)]
        return entities, tags

    def evaluate(self, model, eval_data, config):
        entities, tags = self._predicted(model, eval_data, config, config.eval_batch_size)
        self._eval_predictions, self._evaluated_data = (entities, tags), eval_data
        return eval_data.metrics(entities, config.task.labels)

    def best_metric(self, config):
        return "f1"

    def evaluation_note(self, config):
        from albert_tf.tasks.prediction_notes import only_outside_note

        predictions = getattr(self, "_eval_predictions", None)
        if predictions is None:
            return None
        gold = [sentence.tags for sentence in self._evaluated_data.tagged_file.sentences]
        return only_outside_note(predictions[1], gold, config.task.eval_file)

    def output_files(self, config):
        files = [EVAL_REPORT_FILE]
        for stem, path in ((EVAL_PREDICTIONS_STEM, config.task.eval_file),
                           (PREDICTIONS_STEM, config.task.predict_file)):
            if path:
                files += [_predictions_name(stem, path), stem + CONLLEVAL_SUFFIX, stem + ENTITIES_SUFFIX]
        return files

    def write_evaluation_report(self, evaluation, config, output_dir):
        """The evaluation as a table, and the eval file with the predicted tags of the evaluated model (the last
        evaluation: the best checkpoint's) as a last column, as conlleval's input, and its entities; returns the
        paths written."""
        report = os.path.join(output_dir, EVAL_REPORT_FILE)
        with atomic_output(report) as f:
            f.write(metrics_table(evaluation))
        entities, tags = self._eval_predictions
        return [report, *_write_predictions(output_dir, EVAL_PREDICTIONS_STEM, self._evaluated_data, entities, tags)]

    def predict(self, model, tokenizer, config, output_dir):
        predict_file = self._read(config.task.predict_file, config.task, tagged=False)
        data = self._data(predict_file, tokenizer, config)
        entities, tags = self._predicted(model, data, config, config.predict_batch_size)
        written = _write_predictions(output_dir, PREDICTIONS_STEM, data, entities, tags)
        metrics = data.metrics(entities, config.task.labels) if predict_file.has_tags else None
        return metrics, written

    def eval_results(self, evaluation, prediction):
        if evaluation is None and prediction is None:
            return None
        return {**(evaluation or {}), **({"predict": prediction} if prediction else {})}

    def summary(self, metrics):
        klue = (f"  KLUE entity macro F1 {metrics['klue_entity_macro_f1']:.4f}  character macro F1 "
                f"{metrics['klue_char_macro_f1']:.4f}" if "klue_char_macro_f1" in metrics else "")
        return (f"entity F1 {metrics['f1']:.4f}  precision {metrics['precision']:.4f}  recall {metrics['recall']:.4f}"
                f"  character accuracy {metrics['accuracy']:.4f}{klue}")


def _spans_of(entities):
    """(type, start, end) of each entity dict."""
    return [(entity["type"], entity["start"], entity["end"]) for entity in entities]


def _write_predictions(output_dir, stem, data, entities, tags):
    """Writes the file of `data` with its predicted tags in its own format, its sentences' texts and served
    entities as JSON Lines and, where it has gold tags, conlleval's input; returns the paths."""
    tagged_file = data.tagged_file
    outputs = [(_predictions_name(stem, tagged_file.path), lambda path: tagged_texts.write_predictions(
        path, tagged_file, tags)), (stem + ENTITIES_SUFFIX, lambda path: _write_entities(path, data, entities))]
    if tagged_file.has_tags:
        outputs.append((stem + CONLLEVAL_SUFFIX, lambda path: tagged_texts.write_conlleval_input(
            path, tagged_file, tags)))
    paths = []
    for name, write in outputs:
        path = os.path.join(output_dir, name)
        with atomic_output_path(path) as temporary:
            write(temporary)
        paths.append(path)
    return paths


def _write_entities(path, data, entities):
    """One JSON object a line per sentence: {"where": file:line, "text": the text tagged, "entities": as served}."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        for sentence, text, found in zip(data.tagged_file.sentences, data.texts, entities):
            f.write(json.dumps({"where": sentence.where, "text": text, "entities": found}, ensure_ascii=False) + "\n")


def _predictions_name(stem, path):
    """`stem` with the extension of the file it answers (a .gz looked through: predictions are written plain)."""
    name = os.path.basename(path)
    if name.endswith(".gz"):
        name = name[:-3]
    extension = os.path.splitext(name)[1]
    return stem + (extension if extension else ".txt")
