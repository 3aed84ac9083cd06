"""`AlbertTokenClassifier`: the encoder with a tag for every token (named entities in IOB2, say), as Hugging
Face's AlbertForTokenClassification.

With a vocabulary (`from_preset` of a model directory, or of a preset with `spm_model_file=`) it takes
sentences as lists of words in `fit`, `evaluate` and `predict`, and compiles itself with the original
fine-tuning recipe when `fit` finds it uncompiled:

  tagger = AlbertTokenClassifier.from_preset("ckpt/albert_base", labels=["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])
  tagger.fit(x=[["John", "lives", "in", "Paris"]], y=[["B-PER", "O", "O", "B-LOC"]], epochs=3)
  tagger.predict([["Mary", "visited", "Rome"]])            # [["B-PER", "O", "B-LOC"]]

Sentences become texts, units, windows and tags as `albert_tf.text.entities` and `albert_tf.text.word_pieces`
describe: each sentence's words joined into its text (no space between two Chinese or Japanese characters),
tokenized whole, its pieces grouped into units (a word, a punctuation mark, a piece of text without spaces),
each unit tagged by the entities (character spans) it overlaps; the loss on each unit's reading piece only;
long texts in overlapping windows merged back by the most context. `predict` finds the entities of each
sentence's text and tags each word an entity overlaps, as `predict_entities` and the served model find them.
"""

import math

import keras
import numpy as np
import tensorflow as tf

from albert_tf.albert_config import AlbertConfig
from albert_tf.layers.initializers import truncated_normal
from albert_tf.models.albert_classifier import DEFAULT_BATCH_SIZE, DEFAULT_LEARNING_RATE, DEFAULT_WARMUP_PROPORTION
from albert_tf.models.task_model import AlbertTaskModel
from albert_tf.networks.albert_encoder import ENCODER_INPUTS, AlbertEncoder, encoder_for, encoder_inputs
from albert_tf.settings import DROPOUT_RATE, POSITIVE_INTEGER
from albert_tf.text.albert_preprocessor import AlbertPreprocessor
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from albert_tf.text.word_pieces import (IGNORED_LABEL_ID, default_doc_stride, merge_unit_scores, text_windows,
                                        window_arrays)

MODEL_KIND = "token_classifier"


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTokenClassifier(AlbertTaskModel, keras.Model):
    """sequence_output -> dropout -> dense(num_labels) at every position, as AlbertForTokenClassification.

    Inputs: the encoder's dict (input_word_ids, input_mask, input_type_ids, int32 [batch, seq]), or, with a
    `preprocessor` (its vocabulary, casing and window length), sentences as lists of words. Outputs:
    {"logits": float32 [batch, seq, num_labels]}.

    >>> tagger = AlbertTokenClassifier(AlbertConfig.from_preset("albert_tiny"), labels=["O", "B-PER", "I-PER"])
    >>> ids = keras.ops.ones((2, 8), "int32")
    >>> tuple(tagger({"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids})["logits"].shape)
    (2, 8, 3)
    """

    # Fine-tuning's training step reads the labels too: the last layer is computed where they are (`head_outputs`).
    TRAINING_INPUTS = (*ENCODER_INPUTS, "label_ids")
    CONFIG_ATTRIBUTES = {"labels": "labels", "num_labels": "num_labels", "dropout": "dropout_rate",
                         "seq_length": "seq_length", "doc_stride": "doc_stride"}
    preprocessor = None

    def __init__(self, encoder: AlbertEncoder | AlbertConfig | None = None, labels: list[str] | None = None,
                 num_labels: int | None = None, dropout: float = 0.1, config: AlbertConfig | None = None,
                 seq_length: int | None = None, preprocessor: AlbertPreprocessor | dict | None = None,
                 doc_stride: int | None = None, **kwargs):
        """`labels`: the tag names, index = tag id (IOB2 for entities: "O", "B-PER", "I-PER", ...); `num_labels`
        alone gives a head without names (Hugging Face's LABEL_0, LABEL_1, ... stand for them). `doc_stride`:
        pieces between the starts of a long sentence's windows; None for half a window. Any keyword besides
        these and keras.Model's `name`/`trainable` is a TypeError."""
        self.refuse_unknown_arguments(kwargs)
        labels, num_labels = _checked_labels(labels, num_labels)
        encoder = encoder_for("AlbertTokenClassifier", encoder, config, seq_length)
        config = encoder.albert_config
        DROPOUT_RATE.check("dropout", dropout)
        POSITIVE_INTEGER.check("doc_stride", doc_stride, allow_none=True)
        kwargs.setdefault("name", "albert_token_classifier")

        # === Layers ===
        self.encoder = encoder
        self.dropout = keras.layers.Dropout(dropout, name="token_classifier_dropout")
        self.classifier = keras.layers.Dense(num_labels, kernel_initializer=truncated_normal(config.initializer_range),
                                             dtype="float32", name="token_classifier")

        # === Functional Model ===
        inputs = encoder_inputs(seq_length)
        sequence_output = encoder({name: inputs[name] for name in ENCODER_INPUTS})["sequence_output"]
        super().__init__(inputs=inputs, outputs={"logits": self.classifier(self.dropout(sequence_output))}, **kwargs)

        # === Config ===
        self.labels = labels
        self.num_labels = num_labels
        self.dropout_rate = dropout
        self.seq_length = seq_length
        self.doc_stride = doc_stride
        if isinstance(preprocessor, dict):
            preprocessor = keras.saving.deserialize_keras_object(preprocessor)
        if preprocessor is not None:
            self.preprocessor = preprocessor

    @classmethod
    def from_preset(cls, preset, max_seq_length=None, spm_model_file=None, **kwargs):
        """`AlbertTaskModel.from_preset`, with `labels=[...]` the tag names: a directory holding a token
        classifier of the same labels loads whole, head included; any other model directory gives its encoder a
        fresh head of these labels. `max_seq_length`: the window, in pieces with [CLS] and [SEP]."""
        labels = kwargs.get("labels")
        if isinstance(labels, (list, tuple)):
            # As albert_tf.json records them, for the same-head comparison; with their count, so a directory's
            # head without names loads whole only when it has as many outputs.
            kwargs["labels"] = list(labels)
            kwargs.setdefault("num_labels", len(labels))
        return super().from_preset(preset, max_seq_length=max_seq_length, spm_model_file=spm_model_file, **kwargs)

    def head_outputs(self, inputs, training=True):
        """What fine-tuning's loss reads, at the labelled positions only (each word's first piece; label_ids other
        than IGNORED_LABEL_ID): {"labelled_logits": float32 [n, num_labels], "labelled_ids": int32 [n]}, the n
        labelled positions of the whole batch in row-major order. The same values as `logits` gathered there, at a
        fraction of the work for short sentences: every layer runs on the unpadded positions alone, the last
        layer's output projection and feed-forward block on the labelled ones
        (`AlbertEncoder.last_layer_flat_rows`). Without `label_ids` among `inputs`: the model's outputs."""
        if "label_ids" not in inputs:
            return self({name: inputs[name] for name in ENCODER_INPUTS}, training=training)
        label_ids = tf.reshape(tf.cast(inputs["label_ids"], tf.int32), [-1])
        rows = tf.cast(tf.where(label_ids != IGNORED_LABEL_ID)[:, 0], tf.int32)
        hidden_states = self.encoder.last_layer_flat_rows({name: inputs[name] for name in ENCODER_INPUTS}, rows,
                                                          training=training)
        logits = self.classifier(self.dropout(hidden_states, training=training))
        return {"labelled_logits": tf.cast(logits, tf.float32), "labelled_ids": tf.gather(label_ids, rows)}

    @property
    def trainable_weights(self):
        """Every trainable weight but the pooler's: no output reads it, so it gets no gradient (Keras would warn
        of that in every fit, and an optimizer keep slots for it); Hugging Face's token classifier has none."""
        pooler = {id(weight) for weight in self.encoder.pooler.weights}
        return [weight for weight in super().trainable_weights if id(weight) not in pooler]

    trainable_variables = trainable_weights

    @property
    def label_names(self) -> list[str]:
        """The tag names, index = tag id: `labels`, or Hugging Face's LABEL_i for a head without names."""
        return self.labels or [f"LABEL_{index}" for index in range(self.num_labels)]

    def recorded_settings(self):
        """The preprocessing's settings, and with a preprocessor the stride its windows are cut with (the default
        too, half a window), as run_tagger records them: `from_preset` reads the same windows back."""
        record = super().recorded_settings()
        if self.preprocessor is not None:
            record["doc_stride"] = self.doc_stride or default_doc_stride(self.preprocessor.seq_length)
        return record

    def adopt_record(self, metadata):
        """A tagger's record whose head this model loaded whole, at the window length it records, gives it the
        stride it records where none was asked for."""
        head = {"num_labels": self.num_labels, "labels": self.labels}
        if self.preprocessor is None or self.recorded_head(metadata, head) is None:
            return
        self.doc_stride = recorded_doc_stride(metadata, self.doc_stride, self.preprocessor.seq_length)

    def get_config(self):
        config = super().get_config()
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    # --- sentences as word lists in fit, evaluate and predict -----------------------------------

    def default_compile(self, num_train_steps, learning_rate=DEFAULT_LEARNING_RATE):
        """Compiles with the original fine-tuning recipe, as `AlbertClassifier.default_compile`: AdamW (no bias
        correction, LayerNorm and biases excluded from decay, global norm 1.0) at `learning_rate`, 10% warmup,
        linear decay; the loss is the cross-entropy of each word's first piece, the mean over those (positions
        labelled IGNORED_LABEL_ID, -100, are skipped, as Hugging Face's). For a small model pass a larger rate
        (1e-4 to 3e-4) than albert_base's 2e-5."""
        from albert_tf.optimization import create_optimizer

        optimizer = create_optimizer(learning_rate, num_train_steps,
                                     int(num_train_steps * DEFAULT_WARMUP_PROPORTION), optimizer="adamw")
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORED_LABEL_ID)
        self.compile(optimizer=optimizer, loss={"logits": loss})

    def train_step(self, data):
        """keras.Model's training step, computing what its loss reads alone: with a loss that skips
        IGNORED_LABEL_ID positions (`default_compile`'s), the logits of the labelled positions (`head_outputs`,
        as run_tagger trains) rather than every position's, the same loss and gradients at a fraction of the work.
        Keras's own step (the full model) where that would change what is computed: compiled metrics (they read
        every position's logits), sample weights, another loss."""
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        label_ids = y.get("logits") if isinstance(y, dict) and len(y) == 1 else y
        if not self._trains_on_labelled_rows(x, label_ids, sample_weight):
            return super().train_step(data)
        with tf.GradientTape() as tape:
            outputs = self.head_outputs({**{name: x[name] for name in ENCODER_INPUTS}, "label_ids": label_ids},
                                        training=True)
            labelled_ids = outputs["labelled_ids"]
            # The compiled loss on the labelled rows: where the full model's loss has each window's positions, the
            # same cross-entropies (the skipped ones weigh nothing) and, per replica, the same mean.
            loss = self.compute_loss(x=x, y={"logits": labelled_ids} if isinstance(y, dict) else labelled_ids,
                                     y_pred={"logits": outputs["labelled_logits"]}, training=True)
            # As keras.Model's step: the tracker's loss is the whole batch's (the replica's share scaled back).
            self._loss_tracker.update_state(loss * tf.distribute.get_strategy().num_replicas_in_sync,
                                            sample_weight=tf.shape(label_ids)[0])
            loss = self.optimizer.scale_loss(loss)
        trainable_weights = self.trainable_weights
        self.optimizer.apply_gradients(zip(tape.gradient(loss, trainable_weights), trainable_weights))
        return self.get_metrics_result()

    def _trains_on_labelled_rows(self, x, label_ids, sample_weight):
        """Whether `train_step` may compute the labelled positions alone: the encoder's inputs and [batch, seq]
        integer labels, no sample weights or compiled metrics, and a compiled loss that skips IGNORED_LABEL_ID
        (Keras's SparseCategoricalCrossentropy with ignore_class=IGNORED_LABEL_ID, a mean or a sum)."""
        loss = self.loss.get("logits") if isinstance(self.loss, dict) and len(self.loss) == 1 else self.loss
        if (sample_weight is not None or getattr(self, "_compile_metrics", None) is not None
                or getattr(self, "_loss_tracker", None) is None or self.optimizer is None
                or not isinstance(loss, keras.losses.SparseCategoricalCrossentropy)):
            return False
        settings = loss.get_config()
        if settings.get("ignore_class") != IGNORED_LABEL_ID or settings.get("reduction") not in (
                "sum_over_batch_size", "mean", "mean_with_sample_weight", "sum"):
            return False  # "none" gives a loss per position, which the labelled rows have other shapes of
        return (isinstance(x, dict) and all(name in x for name in ENCODER_INPUTS) and label_ids is not None
                and not isinstance(label_ids, dict) and len(label_ids.shape) == 2
                and tf.as_dtype(label_ids.dtype).is_integer)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, validation_data=None, shuffle=True, steps_per_epoch=None,
            **kwargs):
        """keras.Model.fit, also on sentences: `x` a list of word lists, `y` a list of tag-name lists (one tag per
        word, names of `labels`); `validation_data` likewise a (sentences, tags) pair. Compiles itself when
        uncompiled (`default_compile`, at albert_base's lr 2e-5: for a small model call it first with a larger
        one). Sentences that are no word lists, or tags outside `labels`, are refused before any training."""
        _refuse_raw_text("fit", x)
        if _is_sentences(x):
            x, y = self._inputs_and_labels("fit", x, y, "x", "y")
            batch_size = batch_size or DEFAULT_BATCH_SIZE
        if isinstance(validation_data, (tuple, list)) and len(validation_data) == 2 and _is_sentences(
                validation_data[0]):
            validation_data = self._inputs_and_labels("fit", *validation_data, "validation_data[0]",
                                                      "validation_data[1]")
        if not self.compiled:
            steps = steps_per_epoch or _batches(x, batch_size)
            if steps is None:
                raise ValueError("fit on an uncompiled model needs the number of batches for its learning-rate "
                                 "schedule: pass steps_per_epoch, a dataset of known length, or compile() first")
            with self.distribute_strategy.scope():  # the optimizer's variables live where the model's do
                self.default_compile(max(1, steps * epochs))
        return super().fit(x, y, batch_size=batch_size, epochs=epochs, validation_data=validation_data,
                           shuffle=shuffle, steps_per_epoch=steps_per_epoch, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        """keras.Model.evaluate, also on (sentences, tags) as `fit` takes them: the loss over first pieces."""
        _refuse_raw_text("evaluate", x)
        if _is_sentences(x):
            x, y = self._inputs_and_labels("evaluate", x, y, "x", "y")
            batch_size = batch_size or DEFAULT_BATCH_SIZE
        return super().evaluate(x, y, batch_size=batch_size, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """On sentences (a list of word lists): a list of tag-name lists, one tag per word, read from the
        entities found in the words' text (`predict_entities` of `entities.words_text`: a word an entity
        overlaps is tagged with it). On raw texts (a str or a list of them): each text's entities with character
        offsets (`predict_entities`). On the encoder's inputs (a dict of arrays, a dataset): keras.Model.predict's
        {"logits": [batch, seq, num_labels]}."""
        from albert_tf.text.entities import span_tags, words_text

        if _is_raw_text(x):
            return self.predict_entities(x, batch_size, **kwargs)
        if not _is_sentences(x):
            return super().predict(x, batch_size=batch_size, **kwargs)
        _check_sentences("predict", x, "x")
        texts = [words_text(list(words)) for words in x]
        found = self.predict_entities([text for text, _ in texts], batch_size, **kwargs)
        return [span_tags(spans, [(entity["type"], entity["start"], entity["end"]) for entity in entities])
                for (_, spans), entities in zip(texts, found)]

    def _units(self, texts):
        from albert_tf.text.entities import text_units, unit_tables

        tokenizer = self._tokenizer()
        tables = unit_tables(tokenizer)
        return [text_units(tokenizer, text, tables) for text in texts]

    def _inputs_and_labels(self, method, sentences, tags, sentences_argument, tags_argument):
        """(encoder inputs, {"logits": label ids}) of sentences and their tag names, checked: each sentence's
        words made a text (`entities.words_text`), its entities (conlleval's reading of the tags) character spans
        of it, and those the tags of the text's units."""
        from albert_tf.text.entities import span_entities, unit_tags, words_text

        _check_sentences(method, sentences, sentences_argument)
        self._check_tags(sentences, tags, tags_argument)
        texts = [words_text(list(words)) for words in sentences]
        units = self._units([text for text, _ in texts])
        ids = {name: index for index, name in enumerate(self.label_names)}
        tag_ids = [unit_tags(text_units, span_entities(list(sentence_tags), spans), ids)[0]
                   for text_units, (_, spans), sentence_tags in zip(units, texts, tags)]
        arrays = window_arrays(text_windows(units, tag_ids, self.preprocessor.seq_length, self.doc_stride,
                                            special_ids=self._tokenizer().special_ids))
        return {name: arrays[name] for name in ENCODER_INPUTS}, {"logits": arrays["label_ids"]}

    def _check_tags(self, sentences, tags, argument):
        if not isinstance(tags, (list, tuple)) or len(tags) != len(sentences):
            count = f"{len(tags)} entries" if isinstance(tags, (list, tuple)) else f"a {type(tags).__name__}"
            raise ValueError(f"{argument}: {count} for {len(sentences)} sentences; pass one list of tag names per "
                             "sentence")
        for index, (words, sentence_tags) in enumerate(zip(sentences, tags)):
            if not isinstance(sentence_tags, (list, tuple)) or len(sentence_tags) != len(words):
                count = (f"{len(sentence_tags)} tags" if isinstance(sentence_tags, (list, tuple))
                         else f"a {type(sentence_tags).__name__}")
                raise ValueError(f"{argument}[{index}]: {count} for {len(words)} words; pass one tag name per word")
            unknown = next((tag for tag in sentence_tags if tag not in self.label_names), None)
            if unknown is not None:
                raise ValueError(f"{argument}[{index}]: tag {unknown!r} is not one of the model's labels "
                                 f"{self.label_names}")

    # --- raw texts: entities with character offsets ---------------------------------------------

    def predict_entities(self, texts, batch_size=None, **kwargs):
        """Per raw text (a str, or a list of them), its entities: a list of {"text", "type", "start", "end",
        "score"}, `text == texts[i][start:end]` (character offsets: Python str indices).

        The rule of `albert_tf.text.entities`, which the exported serving model applies in-graph (a test holds
        the two equal): the text tokenized as a whole, its pieces grouped into units (a word, a punctuation mark,
        a piece of text without spaces: an entity may start and end inside a Chinese run), each unit's tag read
        at its reading piece, entities read from the unit tags as conlleval reads IOB2, `score` the mean over an
        entity's units of its tag's softmax probability. A text longer than a window is read in overlapping
        windows, each piece from the one that gives it the most context. The labels must be IOB2 tag names.

        >>> tagger.predict_entities(["John lives in Paris.", "我住在北京。"])  # doctest: +SKIP
        [[{'text': 'John', 'type': 'PER', 'start': 0, 'end': 4, 'score': 0.98},
          {'text': 'Paris', 'type': 'LOC', 'start': 14, 'end': 19, 'score': 0.97}],
         [{'text': '北京', 'type': 'LOC', 'start': 3, 'end': 5, 'score': 0.95}]]
        """
        from albert_tf.text.entities import entity_types, text_entities

        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, (list, tuple)) or not all(isinstance(text, str) for text in texts):
            raise ValueError("predict_entities: texts must be a string or a list of strings (raw text)")
        entity_types(self.label_names)  # refuses tag names that name no entity types
        units = self._units(texts)
        scores = self.unit_logits(units, batch_size, **kwargs)
        return [text_entities(text_units, unit_scores, self.label_names)
                for text_units, unit_scores in zip(units, scores)]

    def unit_logits(self, units, batch_size=None, **kwargs):
        """Per text's `entities.TextUnits`, float32 [units, num_labels]: each unit's logits at its reading piece in
        the window that gives it the most context."""
        windows = text_windows(units, None, self.preprocessor.seq_length, self.doc_stride,
                               special_ids=self._tokenizer().special_ids)
        if not windows:  # only texts without pieces
            return [np.zeros((0, self.num_labels), np.float32) for _ in units]
        inputs = {name: array for name, array in window_arrays(windows).items() if name in ENCODER_INPUTS}
        logits = super().predict(inputs, batch_size=batch_size or DEFAULT_BATCH_SIZE, **kwargs)["logits"]
        return merge_unit_scores(windows, logits, [len(text_units.first_pieces) for text_units in units])

    def _tokenizer(self):
        """The Python tokenizer of the model's preprocessor (its vocabulary, casing, accents and quote rule)."""
        if self.preprocessor is None:
            raise ValueError("this AlbertTokenClassifier has no vocabulary to split texts into pieces; build it with "
                             "from_preset(<model directory>) or from_preset(<preset>, spm_model_file=...), or pass "
                             "preprocessor=AlbertPreprocessor(...)")
        preprocessor = self.preprocessor
        return AlbertTokenizer(model_proto=preprocessor.model_proto, lower_case=preprocessor.lower_case,
                               keep_accents=preprocessor.keep_accents, rewrite_quotes=preprocessor.rewrite_quotes)


def recorded_doc_stride(metadata, doc_stride, max_seq_length):
    """The stride to cut windows with: `doc_stride` where given, else the one a tagger's albert_tf.json
    records for this window length (the windows it was trained and evaluated on); None (half a window) for a
    record of another length, whose stride was chosen for other windows, or of none."""
    if doc_stride is not None or metadata.get("max_seq_length") != max_seq_length:
        return doc_stride
    recorded = metadata.get("doc_stride")
    return recorded if POSITIVE_INTEGER.admits(recorded) else None


def _checked_labels(labels, num_labels):
    """(labels as a list or None, num_labels): names that are distinct strings, as many as `num_labels` says."""
    if labels is None:
        if num_labels is None:
            raise ValueError("AlbertTokenClassifier: pass labels=[tag names] (or num_labels for a head without names)")
        if not POSITIVE_INTEGER.admits(num_labels):
            raise ValueError(f"AlbertTokenClassifier: num_labels={num_labels!r} must be a positive integer")
        return None, int(num_labels)
    if isinstance(labels, str) or not all(isinstance(name, str) and name for name in labels):
        raise ValueError(f"AlbertTokenClassifier: labels={labels!r} must be a list of tag names (non-empty strings)")
    labels = list(labels)
    if not labels or len(set(labels)) != len(labels):
        raise ValueError(f"AlbertTokenClassifier: labels={labels} must name at least one tag, each once")
    if num_labels is not None and num_labels != len(labels):
        raise ValueError(f"AlbertTokenClassifier: num_labels={num_labels!r} but {len(labels)} labels; pass one of them")
    return labels, len(labels)


def _is_sentences(x):
    """Whether `x` is sentences as lists of words (not the encoder's inputs, a dataset or raw text); an empty list
    counts, to be refused as holding none."""
    return isinstance(x, (list, tuple)) and all(isinstance(words, (list, tuple)) for words in x)


def _is_raw_text(x):
    return isinstance(x, str) or (isinstance(x, (list, tuple)) and x and all(isinstance(item, str) for item in x))


def _refuse_raw_text(method, x, argument="x"):
    """A one-line error for raw strings, which keras.Model would fail on obscurely."""
    if _is_raw_text(x):
        raise ValueError(f"{method}: {argument} is raw text; AlbertTokenClassifier trains on sentences as lists of "
                         "words and their tags (split each text into its words first); predict takes raw text")


def _check_sentences(method, sentences, argument):
    if not isinstance(sentences, (list, tuple)) or not sentences:
        raise ValueError(f"{method}: {argument} holds no sentences; pass a list of word lists")
    for index, words in enumerate(sentences):
        if not isinstance(words, (list, tuple)):
            raise ValueError(f"{method}: {argument}[{index}] is a {type(words).__name__}, not a list of words")
        word = next((word for word in words if not isinstance(word, str)), None)
        if word is not None:
            raise ValueError(f"{method}: {argument}[{index}] holds {word!r}, not a word (a string)")


def _batches(x, batch_size):
    """Batches per epoch of keras.Model.fit's `x` (the encoder's inputs, arrays or a dataset), or None when it
    cannot be known up front."""
    if isinstance(x, tf.data.Dataset):
        count = int(x.cardinality())
        return count if count >= 0 else None
    rows = x.get("input_word_ids") if isinstance(x, dict) else None
    return None if rows is None else math.ceil(len(rows) / (batch_size or DEFAULT_BATCH_SIZE))
