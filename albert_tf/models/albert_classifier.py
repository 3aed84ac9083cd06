"""`AlbertClassifier`: the encoder with a classification (or regression) head on the pooled output.

With an `AlbertPreprocessor` attached (`preprocessor=`, or `from_preset` of a model
directory) it takes raw text in `fit`, `evaluate` and `predict`, as KerasHub's task
models do, and compiles itself with the original fine-tuning recipe when `fit` finds
it uncompiled. Given its label names, it trains on them and answers with them:

  classifier = AlbertClassifier.from_preset("ckpt/albert_base", labels=["billing", "bug", "other"])
  classifier.fit(x=["refund me", "it crashes"], y=["billing", "bug"], batch_size=32, epochs=3)
  classifier.predict(["the app froze"])["label"]          # ["bug"]
  classifier.fit(x=(questions, sentences), y=labels)   # sentence pairs: a tuple of two lists
  tagger = AlbertClassifier.from_preset("ckpt/albert_base", labels=["bug", "urgent"], problem_type="multi_label")
  tagger.fit(x=["it crashes, fix it now"], y=[["bug", "urgent"]])
"""

import math

import keras
import numpy as np
import tensorflow as tf

from albert_tf.albert_config import AlbertConfig
from albert_tf.layers.initializers import truncated_normal
from albert_tf.models.model_dir_format import (DEFAULT_MULTI_LABEL_THRESHOLD, PROBLEM_TYPES,
                                               recorded_multi_label_threshold, recorded_problem_type,
                                               recorded_takes_pairs)
from albert_tf.models.task_model import AlbertTaskModel
from albert_tf.networks.albert_encoder import ENCODER_INPUTS, AlbertEncoder, encoder_for, encoder_inputs
from albert_tf.settings import DROPOUT_RATE, POSITIVE_INTEGER, PROBABILITY, merge_synonyms
from albert_tf.text.albert_preprocessor import AlbertPreprocessor

MODEL_KIND = "classifier"
# The default compile: the original fine-tuning AdamW at the rate of the GLUE recipes for MRPC and
# STS-B (the middle of the table's 1e-5..5e-5, set for albert_base and larger), warming up over the
# first 10% of the steps. Small models need more (`default_compile`).
DEFAULT_LEARNING_RATE = 2e-5
DEFAULT_WARMUP_PROPORTION = 0.1
DEFAULT_BATCH_SIZE = 32
# Hugging Face's config.problem_type for each of ours (AlbertForSequenceClassification's loss follows it);
# the constructor takes either name.
HUGGINGFACE_PROBLEM_TYPES = {"single_label": "single_label_classification",
                             "multi_label": "multi_label_classification", "regression": "regression"}
# What albert_tf.json names a regression head's one output (as run_text_classifier and the GLUE tool record it).
REGRESSION_LABELS = ["score"]
_UNKNOWN_NAMES_SHOWN = 10  # an error lists this many unknown label names, then counts the rest


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertClassifier(AlbertTaskModel, keras.Model):
    """pooled_output -> dropout -> dense(num_labels), as the original run_classifier.

    Inputs: the encoder's dict (TF Hub names: input_word_ids, input_mask, input_type_ids), or
    raw strings when a `preprocessor` is attached. Outputs: {"logits": float32 [batch, num_labels]}
    (a regression head has num_labels 1: the logit is the score).

    Problem types (`problem_type`; Hugging Face's names are accepted too):
      - "single_label" (single_label_classification): softmax over the labels, cross-entropy;
      - "multi_label" (multi_label_classification): each label's sigmoid, binary cross-entropy, a label
        predicted where its probability is at least `multi_label_threshold` (0.5);
      - "regression": one output, the score, mean squared error.

    `predict` returns the "logits" and what they say:
      - single-label: "probabilities" (float32 [batch, num_labels], softmax), "label_id" (int32 [batch]) and,
        where the model knows its `labels`, "label" (a list: one name per row);
      - multi-label: "probabilities" (float32 [batch, num_labels], sigmoid), "predicted" (bool [batch,
        num_labels]: probability >= the threshold) and, with `labels`, "labels" (a list: per row, the list of
        names predicted, in label order);
      - regression: "score" (float32 [batch]).
    These are the names `albert_tf.LiteModel` answers with.

    >>> classifier = AlbertClassifier(AlbertConfig.from_preset("albert_tiny"), labels=["neg", "pos"])
    >>> ids = keras.ops.ones((2, 8), "int32")
    >>> outputs = classifier.predict({"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids}, verbose=0)
    >>> outputs["probabilities"].shape, outputs["label"][0] in ("neg", "pos")
    ((2, 2), True)
    """

    CONFIG_ATTRIBUTES = {"num_labels": "num_labels", "dropout": "dropout_rate", "seq_length": "seq_length",
                         "takes_pairs": "takes_pairs", "labels": "labels", "problem_type": "problem_type",
                         "multi_label_threshold": "multi_label_threshold"}
    ARGUMENT_SYNONYMS = {"num_classes": "num_labels"}
    preprocessor = None

    def __init__(self, encoder: AlbertEncoder | AlbertConfig | None = None, num_labels: int | None = None,
                 dropout: float = 0.1, config: AlbertConfig | None = None, seq_length: int | None = None,
                 preprocessor: AlbertPreprocessor | dict | None = None, takes_pairs: bool | None = None, *,
                 num_classes: int | None = None, labels: list[str] | None = None, id2label: dict | None = None,
                 problem_type: str | None = None, multi_label_threshold: float = DEFAULT_MULTI_LABEL_THRESHOLD,
                 **kwargs):
        """`labels`: the label names, index = class id (or `id2label`, Hugging Face's {id: name}); the head then
        has one output per name, and `fit`, `evaluate` and `predict` take and give names. `num_labels` (default
        2, or the number of `labels`; `num_classes` is KerasHub's name for it): the head's outputs, 1 for a
        regression score; one that contradicts `labels` or the problem type is a ValueError. `problem_type`:
        "single_label", "multi_label" or "regression" (or Hugging Face's single_label_classification, ...);
        default single_label, or regression for a head of one output. `multi_label_threshold`: the probability
        at which a multi-label head predicts a label. `takes_pairs`: whether the model answers sentence pairs
        (text, text_b) or single texts; None (not known) until `fit` trains it on raw text, which sets it.
        `save_to_preset` records these as run_text_classifier does, and the exports follow them. Any keyword
        besides these and keras.Model's `name`/`trainable` is a TypeError."""
        self.refuse_unknown_arguments(kwargs)
        given = "num_classes" if num_classes is not None and num_labels is None else "num_labels"
        num_labels = merge_synonyms("AlbertClassifier", {"num_labels": num_labels, "num_classes": num_classes},
                                    self.ARGUMENT_SYNONYMS)["num_labels"]
        if num_labels is not None and not POSITIVE_INTEGER.admits(num_labels):
            raise ValueError(f"AlbertClassifier: {given}={num_labels!r} must be a positive integer (1 for a "
                             "regression head)")
        num_labels, labels, problem_type = _head(None if num_labels is None else int(num_labels), given, labels,
                                                 id2label, problem_type)
        PROBABILITY.check("multi_label_threshold", multi_label_threshold)
        encoder = encoder_for("AlbertClassifier", encoder, config, seq_length)
        config = encoder.albert_config
        kwargs.setdefault("name", "albert_classifier")
        self.encoder = encoder
        DROPOUT_RATE.check("dropout", dropout)
        self.dropout = keras.layers.Dropout(dropout, name="classifier_dropout")
        self.classifier = keras.layers.Dense(num_labels, kernel_initializer=truncated_normal(config.initializer_range),
                                             dtype="float32", name="classifier")
        inputs = encoder_inputs(seq_length)
        pooled = encoder({name: inputs[name] for name in ENCODER_INPUTS})["pooled_output"]
        super().__init__(inputs=inputs, outputs={"logits": self.classifier(self.dropout(pooled))}, **kwargs)
        self.num_labels = num_labels
        self.labels = labels
        self.problem_type = problem_type
        self.multi_label_threshold = float(multi_label_threshold)
        self.dropout_rate = dropout
        self.seq_length = seq_length
        if takes_pairs is not None and not isinstance(takes_pairs, bool):
            raise ValueError(f"AlbertClassifier: takes_pairs={takes_pairs!r} must be True, False or None (not known)")
        self.takes_pairs = takes_pairs
        if isinstance(preprocessor, dict):
            preprocessor = keras.saving.deserialize_keras_object(preprocessor)
        if preprocessor is not None:
            self.preprocessor = preprocessor

    def head_outputs(self, inputs, training=True):
        # Training skips the padding too (a tagger's training step does likewise); serving's requests are cut
        # to their longest text already.
        pooled = self.encoder.first_token_pooled_output({name: inputs[name] for name in ENCODER_INPUTS},
                                                        training=training, skip_padding=bool(training))
        return {"logits": self.classifier(self.dropout(pooled, training=training))}

    @classmethod
    def recorded_head(cls, metadata, arguments):
        """A classifier's head is also its labels and problem type: the record's (a GLUE or run_text_classifier
        model's, one `save_to_preset` wrote), unless `arguments` ask for others (`labels` or `id2label` other
        than the recorded names, or, where none are recorded, another number of them; another `problem_type`),
        which get a fresh head, as another `num_labels` does."""
        recorded = super().recorded_head(metadata, arguments)
        if recorded is None:
            return None
        problem_type = recorded_problem_type(metadata)
        names = metadata.get("label_names") or (REGRESSION_LABELS if problem_type == "regression" else None)
        asked_type = _problem_type(arguments.get("problem_type"))
        asked_names = _label_names(arguments.get("labels"), arguments.get("id2label"))
        if asked_type not in (None, problem_type):
            return None
        if asked_names is not None and (asked_names != names if names else len(asked_names) != recorded.get(
                "num_labels")):
            return None
        recorded.update(labels=names, problem_type=problem_type)
        if problem_type == "multi_label":
            recorded["multi_label_threshold"] = recorded_multi_label_threshold(metadata)
        return recorded

    def adopt_record(self, metadata):
        """A classifier's record whose head this model loaded whole gives it the `takes_pairs` it records."""
        head = {"num_labels": self.num_labels, "labels": self.labels, "problem_type": self.problem_type}
        if self.takes_pairs is None and self.recorded_head(metadata, head) is not None:
            self.takes_pairs = recorded_takes_pairs(metadata)

    def recorded_settings(self):
        """What the tools read besides the head's size, with the keys run_text_classifier records: `label_names`
        (index = class id; ["score"] for a regression head; none for a head without names), `problem_type`,
        `is_regression`, a multi-label head's `multi_label_threshold`, and `takes_pairs` where it is known."""
        regression = self.problem_type == "regression"
        record = {**super().recorded_settings(), "problem_type": self.problem_type, "is_regression": regression}
        if self.labels or regression:
            record["label_names"] = list(self.labels or REGRESSION_LABELS)
        if self.problem_type == "multi_label":
            record["multi_label_threshold"] = self.multi_label_threshold
        if self.takes_pairs is not None:
            record["takes_pairs"] = self.takes_pairs
        return record

    def get_config(self):
        config = super().get_config()
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    # --- raw text in fit, evaluate and predict ---------------------------------------------------

    def default_compile(self, num_train_steps, learning_rate=DEFAULT_LEARNING_RATE):
        """Compiles with the original fine-tuning recipe: AdamW (no bias correction, LayerNorm and biases
        excluded from decay, global norm 1.0) at `learning_rate`, 10% warmup and the original's linear
        decay (measured from step 0); the loss and metric of the problem type: cross-entropy and accuracy
        (single-label), each label's binary cross-entropy from the logits (their mean) and micro-F1 at the
        threshold (multi-label, `MultiLabelF1`), mean squared error (regression).

        The default rate, 2e-5, is the original's for albert_base and larger: a small model (albert_tiny,
        albert_small, or one pretrained on your own corpus at such a size) barely moves at it in a few epochs.
        Call this before `fit` with a larger one there, 1e-4 to 3e-4 (albert_tf's benchmarks fine-tune its
        small models at 1e-4):

        >>> classifier.default_compile(num_train_steps=3 * len(texts) // 32, learning_rate=1e-4)  # doctest: +SKIP
        >>> classifier.fit(x=texts, y=labels, batch_size=32, epochs=3)                            # doctest: +SKIP
        """
        from albert_tf.optimization import create_optimizer

        optimizer = create_optimizer(learning_rate, num_train_steps,
                                     int(num_train_steps * DEFAULT_WARMUP_PROPORTION), optimizer="adamw")
        if self.problem_type == "regression":
            self.compile(optimizer=optimizer, loss={"logits": keras.losses.MeanSquaredError()})
        elif self.problem_type == "multi_label":
            self.compile(optimizer=optimizer, loss={"logits": keras.losses.BinaryCrossentropy(from_logits=True)},
                         metrics={"logits": [MultiLabelF1(self.multi_label_threshold)]})
        else:
            cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            self.compile(optimizer=optimizer, loss={"logits": cross_entropy}, metrics={"logits": ["accuracy"]})

    def fit(self, x=None, y=None, batch_size=None, epochs=1, sample_weight=None, validation_data=None, shuffle=True,
            steps_per_epoch=None, **kwargs):
        """keras.Model.fit, also on raw strings (with a preprocessor) and compiling itself when uncompiled
        (`default_compile`, at lr 2e-5, albert_base's rate: for a small model call `default_compile` first with
        a larger one).

        `y` (and `validation_data`'s): class ids, or the label names of a model with `labels`; for a multi-label
        head a list of names per text (a name alone for one) or rows of 0/1 per label; scores for a regression
        head. Before any training, labels the head cannot take are refused: names the model does not know (all
        of them listed), ids outside 0..num_labels-1, fractions, names without `labels`, NaN or infinite scores;
        so are a missing or empty `x`, a `batch_size`, `epochs` or `steps_per_epoch` that is no positive
        integer, and raw text without a preprocessor."""
        self._check_inputs("fit", x, batch_size)
        # Keras runs no epoch for epochs <= 0 and no step for steps_per_epoch 0, and says nothing.
        _check_count("fit", "epochs", epochs)
        _check_count("fit", "steps_per_epoch", steps_per_epoch, "or None for every batch of x")
        y = self._targets(y, "y")
        if isinstance(validation_data, (tuple, list)) and len(validation_data) >= 2:
            self._check_inputs("fit", validation_data[0], batch_size, "validation_data")
            validation_data = (validation_data[0], self._targets(validation_data[1], "validation_data"),
                               *validation_data[2:])
        if isinstance(validation_data, (tuple, list)) and self._is_text(validation_data[0]):
            texts, labels, *weights = validation_data
            validation_data = self._text_dataset(texts, labels, weights[0] if weights else None, batch_size, False)[0]
        pairs = _text_pairs(x)
        if pairs is not None:  # what the model learns to answer, recorded with it (save_to_preset)
            self.takes_pairs = pairs
        x, y, sample_weight, batch_size = self._text_dataset(x, y, sample_weight, batch_size, shuffle)
        # A dataset made here is shuffled already; Keras leaves any dataset's order to the dataset.
        shuffle = shuffle and not isinstance(x, tf.data.Dataset)
        if not self.compiled:
            steps = steps_per_epoch or _batches(x, batch_size)
            if steps is None:
                raise ValueError("fit on an uncompiled model needs the number of batches for its learning-rate "
                                 "schedule: pass steps_per_epoch, a dataset of known length, or compile() first")
            with self.distribute_strategy.scope():  # the optimizer's variables live where the model's do
                self.default_compile(max(1, steps * epochs))
        return super().fit(x, y, batch_size=batch_size, epochs=epochs, sample_weight=sample_weight,
                           validation_data=validation_data, shuffle=shuffle, steps_per_epoch=steps_per_epoch, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """keras.Model.evaluate, also on raw strings, with `y` as `fit` takes it (label names included)."""
        self._check_inputs("evaluate", x, batch_size)
        y = self._targets(y, "y")
        x, y, sample_weight, batch_size = self._text_dataset(x, y, sample_weight, batch_size, False)
        return super().evaluate(x, y, batch_size=batch_size, sample_weight=sample_weight, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """keras.Model.predict, also on raw strings: the "logits" and, by problem type, the probabilities and the
        predicted label names (or the score), as the class docstring lists them."""
        self._check_inputs("predict", x, batch_size)
        x, _, _, batch_size = self._text_dataset(x, None, None, batch_size, False)
        outputs = super().predict(x, batch_size=batch_size, **kwargs)
        return {**outputs, **self._answers(outputs["logits"])}

    def _answers(self, logits):
        """What the logits say, besides themselves (the class docstring's keys)."""
        if self.problem_type == "regression":
            return {"score": logits[:, 0]}
        if self.problem_type == "multi_label":
            probabilities = keras.ops.convert_to_numpy(keras.ops.sigmoid(logits))
            predicted = probabilities >= self.multi_label_threshold
            answers = {"probabilities": probabilities, "predicted": predicted}
            if self.labels:
                answers["labels"] = [[self.labels[i] for i in np.flatnonzero(row)] for row in predicted]
            return answers
        label_id = np.argmax(logits, axis=-1).astype(np.int32)
        answers = {"probabilities": keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1)),
                   "label_id": label_id}
        if self.labels:
            answers["label"] = [self.labels[i] for i in label_id]
        return answers

    def _is_text(self, x):
        return self.preprocessor is not None and _is_text(x)

    def _check_inputs(self, method, x, batch_size, argument="x"):
        """One-line errors for what keras.Model would fail on later and obscurely (a KeyError for no rows,
        "Unrecognized data type" for strings it cannot tokenize)."""
        _check_count(method, "batch_size", batch_size, f"or None for {DEFAULT_BATCH_SIZE}")
        nothing = f"nothing to {_PURPOSES[method] if argument == 'x' else 'validate on'}"
        if x is None:
            raise ValueError(f"{method}: no {argument} given, {nothing}; pass at least one example")
        if _is_empty(x):
            raise ValueError(f"{method}: {argument} holds no examples, {nothing}; pass at least one")
        if self.preprocessor is None and (_is_text(x) or (isinstance(x, tf.data.Dataset) and _yields_text(x))):
            raise ValueError(f"{method}: {argument} is raw text but this AlbertClassifier has no preprocessor; build "
                             "it with from_preset(<model directory>) or from_preset(<preset>, spm_model_file=...), "
                             "or pass preprocessor=AlbertPreprocessor(...)")

    def _targets(self, y, argument):
        """`y` as the head trains on it: label names become class ids (multi-label: 0/1 rows over the labels);
        refused, before training, what the head cannot take (`fit`'s docstring). A dataset, and multi-column
        targets of a single-label head (one-hot, a custom loss), are left to Keras."""
        if isinstance(y, dict):
            return {**y, "logits": self._targets(y["logits"], argument)} if "logits" in y else y
        if y is None or isinstance(y, tf.data.Dataset):
            return y
        if self.problem_type == "multi_label":
            return self._multi_label_targets(y, argument)
        try:
            labels = np.asarray(y)
        except (TypeError, ValueError):
            return y
        if _holds_names(labels):
            if self.problem_type == "regression":
                raise ValueError(f"{argument}: labels such as {_first_name(labels)!r} are not scores; a regression "
                                 "head (problem_type='regression') trains on numbers")
            return self._class_ids(labels, argument)
        if self.problem_type == "regression":
            _check_scores(labels, argument)
        else:
            self._check_class_ids(labels, argument)
        return y

    def _class_ids(self, names, argument):
        """The class ids of an array of label names; ValueError listing the names the model does not know."""
        if not self.labels:
            raise ValueError(f"{argument}: labels such as {_first_name(names)!r} are not class ids; the head "
                             f"(num_labels={self.num_labels}) takes integers 0..{self.num_labels - 1}: name its "
                             "labels with labels=[...] (index = class id), or map each label name to its id")
        index = {name: class_id for class_id, name in enumerate(self.labels)}
        flat = [_as_name(name) for name in names.reshape(-1).tolist()]
        self._refuse_unknown(flat, argument)
        return np.array([index[name] for name in flat], np.int32).reshape(names.shape)

    def _multi_label_targets(self, y, argument):
        """0/1 rows over the labels (float32 [rows, num_labels]) from a list of label names per text, or from
        rows of targets in [0, 1] per label."""
        if isinstance(y, np.ndarray) and y.dtype.kind in "USO":
            y = y.tolist()
        if isinstance(y, (list, tuple)) and all(_is_name_row(row) for row in y):
            rows = [[_as_name(row)] if isinstance(row, (str, bytes)) else [_as_name(name) for name in row]
                    for row in y]
            if not self.labels:
                first = next((row[0] for row in rows if row), None)
                raise ValueError(f"{argument}: label names{f' such as {first!r}' if first else ''} need the model's "
                                 "labels: build it with labels=[...] (index = label id), or pass rows of 0/1 per "
                                 "label")
            self._refuse_unknown([name for row in rows for name in row], argument)
            index = {name: label_id for label_id, name in enumerate(self.labels)}
            targets = np.zeros((len(rows), self.num_labels), np.float32)
            for row, names in enumerate(rows):
                targets[row, [index[name] for name in names]] = 1.0
            return targets
        expected = (f"a multi-label head of {self.num_labels} labels trains on a list of label names per text, or "
                    f"rows of {self.num_labels} targets (0/1 per label)")
        try:
            targets = np.asarray(y, np.float32)
        except (TypeError, ValueError):
            raise ValueError(f"{argument}: {expected}") from None
        if targets.ndim != 2 or targets.shape[1] != self.num_labels:
            raise ValueError(f"{argument}: targets of shape {targets.shape}; {expected}")
        outside = targets[~((targets >= 0) & (targets <= 1))]
        if outside.size:
            raise ValueError(f"{argument}: target {outside[0]} is outside [0, 1]; {expected}")
        return targets

    def _refuse_unknown(self, names, argument):
        """ValueError listing the label names (of `y` or `validation_data`) that are not among the model's, in the
        order they first occur."""
        known = set(self.labels)
        unknown = list(dict.fromkeys(name for name in names if name not in known))
        if unknown:
            listed = ", ".join(repr(name) for name in unknown[:_UNKNOWN_NAMES_SHOWN])
            more = f" and {len(unknown) - _UNKNOWN_NAMES_SHOWN} more" if len(unknown) > _UNKNOWN_NAMES_SHOWN else ""
            raise ValueError(f"{argument}: labels not among the model's {list(self.labels)}: {listed}{more}; build "
                             "the model with labels that include them, or fix the data")

    def _check_class_ids(self, labels, argument):
        """Refuses class ids a single-label head cannot take (outside 0..num_labels-1, fractional)."""
        if labels.size == 0 or labels.ndim > 2 or (labels.ndim == 2 and labels.shape[1] != 1) or labels.dtype == object:
            return
        labels = labels.reshape(-1)
        last = self.num_labels - 1
        if labels.dtype.kind == "f":
            fractional = labels[~np.isfinite(labels) | (labels != np.round(labels))]
            if fractional.size:
                raise ValueError(f"{argument}: label {fractional[0]} is not a class id; the head (num_labels="
                                 f"{self.num_labels}) takes integers 0..{last} (a regression score needs num_labels=1)")
        low, high = int(labels.min()), int(labels.max())
        if low < 0:
            raise ValueError(f"{argument}: label {low} is outside the head's range 0..{last} (num_labels="
                             f"{self.num_labels}); class ids start at 0")
        if high > last:
            raise ValueError(f"{argument}: label {high} is outside the head's range 0..{last} (num_labels="
                             f"{self.num_labels}); the labels span {low}..{high}, so build the model with "
                             f"num_labels={high + 1}")

    def _text_dataset(self, x, y, sample_weight, batch_size, shuffle):
        """(x, y, sample_weight, batch_size) for keras.Model: raw text becomes a batched dataset of the
        preprocessor's outputs (with the labels and weights inside); a dataset of strings is mapped."""
        if isinstance(x, tf.data.Dataset) and self.preprocessor is not None and _yields_text(x):
            return x.map(self.preprocessor, num_parallel_calls=tf.data.AUTOTUNE), None, None, None
        if not self._is_text(x):
            return x, y, sample_weight, batch_size
        texts = tuple(tf.constant(part, tf.string) for part in x) if _is_pair(x) else tf.constant(x, tf.string)
        parts = tuple(part for part in (texts, y, sample_weight) if part is not None)
        # Always a tuple, so map passes a pair of segments as one argument, not as (texts_a, labels).
        dataset = tf.data.Dataset.from_tensor_slices(parts)
        if shuffle:
            dataset = dataset.shuffle(int(dataset.cardinality()), reshuffle_each_iteration=True)
        dataset = dataset.batch(batch_size or DEFAULT_BATCH_SIZE)
        return dataset.map(self.preprocessor, num_parallel_calls=tf.data.AUTOTUNE), None, None, None


@keras.saving.register_keras_serializable(package="albert_tf")
class MultiLabelF1(keras.metrics.F1Score):
    """Micro-averaged F1 of a multi-label head's logits, each label predicted where its sigmoid probability is
    at least `threshold` (the micro_f1 by which run_text_classifier keeps a multi-label model's best checkpoint)."""

    def __init__(self, threshold=DEFAULT_MULTI_LABEL_THRESHOLD, name="micro_f1", dtype=None):
        # F1Score predicts where its input is above its own threshold: it is given the 0/1 decisions made here
        # (">=", as predict decides), so any threshold between 0 and 1 passes them through.
        super().__init__(average="micro", threshold=0.5, name=name, dtype=dtype)
        self.label_threshold = threshold

    def update_state(self, y_true, y_pred, sample_weight=None):
        predicted = keras.ops.sigmoid(keras.ops.cast(y_pred, "float32")) >= self.label_threshold
        super().update_state(y_true, keras.ops.cast(predicted, self.dtype), sample_weight)

    def get_config(self):
        return {"threshold": self.label_threshold, "name": self.name, "dtype": self.dtype}


def _problem_type(problem_type):
    """Our name of `problem_type` (ours or Hugging Face's), None for None; ValueError for any other."""
    if problem_type is None or problem_type in PROBLEM_TYPES:
        return problem_type
    ours = {theirs: ours for ours, theirs in HUGGINGFACE_PROBLEM_TYPES.items()}
    if problem_type not in ours:
        raise ValueError(f"AlbertClassifier: problem_type={problem_type!r} must be one of {list(PROBLEM_TYPES)} (or "
                         f"Hugging Face's {list(ours)})")
    return ours[problem_type]


def _label_names(labels, id2label):
    """The label names (a list, index = class id) of `labels` or of Hugging Face's `id2label` ({id: name}, ids
    0..n-1 as ints or strings), None for neither; ValueError for names that are not distinct strings, ids that
    are not 0..n-1, or the two disagreeing."""
    names = None
    if labels is not None:
        if isinstance(labels, (str, bytes, dict)) or not hasattr(labels, "__iter__"):
            raise ValueError(f"AlbertClassifier: labels={labels!r} must be a list of label names (index = class id)")
        names = list(labels)
    if id2label is not None:
        if not isinstance(id2label, dict):
            raise ValueError(f"AlbertClassifier: id2label={id2label!r} must be a dict {{class id: label name}}")
        ids = {}
        for key, name in id2label.items():
            if isinstance(key, bool) or not (isinstance(key, int) or (isinstance(key, str) and key.isdigit())):
                raise ValueError(f"AlbertClassifier: id2label key {key!r} is not a class id (0, 1, ...)")
            ids[int(key)] = name
        if sorted(ids) != list(range(len(ids))):
            raise ValueError(f"AlbertClassifier: id2label's ids {sorted(ids)} must be 0..{len(ids) - 1}, each once")
        from_ids = [ids[class_id] for class_id in range(len(ids))]
        if names is not None and names != from_ids:
            raise ValueError(f"AlbertClassifier: labels={names} and id2label={id2label} disagree; pass one of them")
        names = from_ids
    if names is None:
        return None
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"AlbertClassifier: label name {name!r} must be a non-empty string")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"AlbertClassifier: labels name {repeated} more than once; each class has one name")
    return names


def _head(num_labels, given, labels, id2label, problem_type):
    """(outputs, label names or None, problem type) of the head the constructor's arguments describe; ValueError
    where they contradict each other. `given`: the name the caller gave `num_labels` by."""
    problem_type = _problem_type(problem_type)
    names = _label_names(labels, id2label)
    outputs = len(names) if names is not None else num_labels
    if problem_type is None:  # one output unnamed is a score, as num_labels=1 always was; one name, a mistake
        problem_type = "regression" if names is None and num_labels == 1 else "single_label"
    if problem_type == "regression":
        if outputs not in (None, 1):
            said = f"labels={names}" if names is not None else f"{given}={num_labels}"
            raise ValueError(f"AlbertClassifier: {said} contradicts problem_type='regression', whose head has one "
                             "output, the score; leave it out")
        outputs = 1
    elif outputs is None:
        outputs = 2
    elif outputs < 2:
        raise ValueError(f"AlbertClassifier: a {problem_type} head needs two or more labels, got {outputs}; "
                         "problem_type='regression' for a score")
    if num_labels is not None and num_labels != outputs:
        raise ValueError(f"AlbertClassifier: {given}={num_labels} contradicts labels={names} ({outputs} names); leave "
                         f"{given} out: it follows the labels")
    return outputs, names, problem_type


def _as_name(name):
    return name.decode("utf-8") if isinstance(name, bytes) else name


def _holds_names(labels):
    """Whether a labels array holds label names (strings), not class ids or scores."""
    if labels.dtype.kind in "US":
        return labels.size > 0
    return labels.dtype == object and labels.size > 0 and all(isinstance(item, (str, bytes)) for item in labels.flat)


def _first_name(labels):
    return _as_name(labels.reshape(-1)[0].item() if labels.dtype.kind in "US" else labels.flat[0])


def _is_name_row(row):
    """A multi-label row of names: a name alone, or a list (tuple, set) of names, maybe empty."""
    return isinstance(row, (str, bytes)) or (isinstance(row, (list, tuple, set, frozenset)) and all(
        isinstance(name, (str, bytes)) for name in row))


# What each of fit, evaluate and predict does with its examples, for "nothing to ...".
_PURPOSES = {"fit": "train on", "evaluate": "evaluate", "predict": "predict on"}


def _check_count(method, name, value, when_none=None):
    """ValueError naming argument `name` of `method` unless `value` is a positive integer (or None, where
    `when_none` says what None means)."""
    if value is None and when_none:
        return
    requirement = POSITIVE_INTEGER.requirement(value)
    if requirement:
        raise ValueError(f"{method}: {name}={value!r} must be {requirement}{f' ({when_none})' if when_none else ''}")


def _check_scores(scores, argument):
    """A regression head's targets must be finite: one NaN or infinite score makes the loss NaN, and then every
    weight, without an error."""
    if scores.dtype.kind != "f":
        return
    not_finite = scores[~np.isfinite(scores)]
    if not_finite.size:
        raise ValueError(f"{argument}: score {not_finite[0]} is not a finite number; a regression head (num_labels=1) "
                         "trains on finite scores")


def _is_strings(value):
    if isinstance(value, str):
        return True
    if isinstance(value, tf.Tensor):
        return value.dtype == tf.string
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "USO" and value.size > 0 and isinstance(value.flat[0], (str, bytes))
    return isinstance(value, list) and len(value) > 0 and all(isinstance(item, (str, bytes)) for item in value)


def _is_pair(x):
    return isinstance(x, tuple) and len(x) == 2 and all(_is_strings(part) and not isinstance(part, str) for part in x)


def _is_text(x):
    return _is_pair(x) or _is_strings(x) or (isinstance(x, tuple) and all(isinstance(p, (str, bytes)) for p in x))


def _text_pairs(x):
    """Whether raw text `x` (lists, arrays, or a dataset of strings) holds sentence pairs; None for other inputs."""
    if isinstance(x, tf.data.Dataset):
        if not _yields_text(x):
            return None
        spec = x.element_spec
        return isinstance(spec[0] if isinstance(spec, tuple) else spec, tuple)
    return _is_pair(x) if _is_text(x) else None


def _yields_text(dataset):
    spec = dataset.element_spec
    first = spec[0] if isinstance(spec, tuple) else spec
    parts = first if isinstance(first, tuple) else (first,)
    return all(isinstance(part, tf.TensorSpec) and part.dtype == tf.string for part in parts)


def _is_empty(x):
    if isinstance(x, dict):
        return not x or any(_is_empty(value) for value in x.values())
    if _is_pair(x) or (isinstance(x, tuple) and len(x) == 2 and all(isinstance(part, list) for part in x)):
        return any(len(part) == 0 for part in x)
    if isinstance(x, np.ndarray):
        return x.ndim > 0 and x.shape[0] == 0
    return isinstance(x, (list, tuple)) and len(x) == 0


def _batches(x, batch_size):
    """Batches per epoch of keras.Model.fit's `x`, or None when it cannot be known up front."""
    if isinstance(x, tf.data.Dataset):
        count = int(x.cardinality())
        return count if count >= 0 else None
    arrays = list(x.values()) if isinstance(x, dict) else [x]
    rows = len(arrays[0]) if arrays and hasattr(arrays[0], "__len__") else None
    return None if rows is None else math.ceil(rows / (batch_size or DEFAULT_BATCH_SIZE))
