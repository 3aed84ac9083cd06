"""`AlbertClassifier`: the encoder with a classification (or regression) head on the pooled output.

With an `AlbertPreprocessor` attached (`preprocessor=`, or `from_preset` of a model
directory) it takes raw text in `fit`, `evaluate` and `predict`, as KerasHub's task
models do, and compiles itself with the original fine-tuning recipe when `fit` finds
it uncompiled:

  classifier = AlbertClassifier.from_preset("ckpt/albert_base", num_labels=2)
  classifier.fit(x=["a fine film", "a dull one"], y=[1, 0], batch_size=32, epochs=3)
  classifier.predict(["what a film"])["logits"]
  classifier.fit(x=(questions, sentences), y=labels)   # sentence pairs: a tuple of two lists
"""

import math

import keras
import numpy as np
import tensorflow as tf

from albert_tf.albert_config import AlbertConfig
from albert_tf.layers.initializers import truncated_normal
from albert_tf.models.model_dir_format import recorded_takes_pairs
from albert_tf.models.task_model import AlbertTaskModel
from albert_tf.networks.albert_encoder import ENCODER_INPUTS, AlbertEncoder, encoder_for, encoder_inputs
from albert_tf.settings import DROPOUT_RATE, POSITIVE_INTEGER, merge_synonyms
from albert_tf.text.albert_preprocessor import AlbertPreprocessor

MODEL_KIND = "classifier"
# The default compile: the original fine-tuning AdamW at the rate of the GLUE recipes for MRPC and
# STS-B (the middle of the table's 1e-5..5e-5, set for albert_base and larger), warming up over the
# first 10% of the steps. Small models need more (`default_compile`).
DEFAULT_LEARNING_RATE = 2e-5
DEFAULT_WARMUP_PROPORTION = 0.1
DEFAULT_BATCH_SIZE = 32


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertClassifier(AlbertTaskModel, keras.Model):
    """pooled_output -> dropout -> dense(num_labels), as the original run_classifier.

    Inputs: the encoder's dict (TF Hub names: input_word_ids, input_mask, input_type_ids), or
    raw strings when a `preprocessor` is attached. Outputs: {"logits": float32 [batch, num_labels]}
    (a regression task such as STS-B has num_labels 1: the logit is the score).
    """

    CONFIG_ATTRIBUTES = {"num_labels": "num_labels", "dropout": "dropout_rate", "seq_length": "seq_length",
                         "takes_pairs": "takes_pairs"}
    ARGUMENT_SYNONYMS = {"num_classes": "num_labels"}
    preprocessor = None

    def __init__(self, encoder: AlbertEncoder | AlbertConfig | None = None, num_labels: int | None = None,
                 dropout: float = 0.1, config: AlbertConfig | None = None, seq_length: int | None = None,
                 preprocessor: AlbertPreprocessor | dict | None = None, takes_pairs: bool | None = None, *,
                 num_classes: int | None = None, **kwargs):
        """`num_labels` (default 2; `num_classes` is KerasHub's name for it): the head's outputs, 1 for a
        regression score. `takes_pairs`: whether the model answers sentence pairs (text, text_b) or single
        texts; None (not known) until `fit` trains it on raw text, which sets it. `save_to_preset` records it
        and the LiteRT export follows it (a second input, text_b, or none). Any keyword besides these and
        keras.Model's `name`/`trainable` is a TypeError."""
        self.refuse_unknown_arguments(kwargs)
        num_labels = merge_synonyms("AlbertClassifier", {"num_labels": num_labels, "num_classes": num_classes},
                                    self.ARGUMENT_SYNONYMS)["num_labels"]
        num_labels = 2 if num_labels is None else num_labels
        if not POSITIVE_INTEGER.admits(num_labels):
            raise ValueError(f"AlbertClassifier: num_labels={num_labels!r} must be a positive integer (1 for a "
                             "regression head)")
        num_labels = int(num_labels)
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
        pooled = self.encoder.first_token_pooled_output({name: inputs[name] for name in ENCODER_INPUTS},
                                                        training=training)
        return {"logits": self.classifier(self.dropout(pooled, training=training))}

    def adopt_record(self, metadata):
        """A classifier's record whose head this model loaded whole gives it the `takes_pairs` it records."""
        same_head = metadata["model"] == MODEL_KIND and metadata.get("num_labels") == self.num_labels
        if self.takes_pairs is None and same_head:
            self.takes_pairs = recorded_takes_pairs(metadata)

    def recorded_settings(self):
        return {**super().recorded_settings(),
                **({"takes_pairs": self.takes_pairs} if self.takes_pairs is not None else {})}

    def get_config(self):
        config = super().get_config()
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    # --- raw text in fit, evaluate and predict ---------------------------------------------------

    def default_compile(self, num_train_steps, learning_rate=DEFAULT_LEARNING_RATE):
        """Compiles with the original fine-tuning recipe: AdamW (no bias correction, LayerNorm and biases
        excluded from decay, global norm 1.0) at `learning_rate`, 10% warmup and the original's linear
        decay (measured from step 0); cross-entropy and accuracy (mean squared error for a regression head).

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
        if self.num_labels == 1:
            self.compile(optimizer=optimizer, loss={"logits": keras.losses.MeanSquaredError()})
        else:
            cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            self.compile(optimizer=optimizer, loss={"logits": cross_entropy}, metrics={"logits": ["accuracy"]})

    def fit(self, x=None, y=None, batch_size=None, epochs=1, sample_weight=None, validation_data=None, shuffle=True,
            steps_per_epoch=None, **kwargs):
        """keras.Model.fit, also on raw strings (with a preprocessor) and compiling itself when uncompiled
        (`default_compile`, at lr 2e-5, albert_base's rate: for a small model call `default_compile` first with
        a larger one).

        Before any training, labels a classification head cannot take (outside 0..num_labels-1, fractional,
        strings) and scores a regression head cannot (NaN, infinite) are refused, as are a missing or empty `x`,
        a `batch_size`, `epochs` or `steps_per_epoch` that is no positive integer, and raw text without a
        preprocessor."""
        self._check_inputs("fit", x, batch_size)
        # Keras runs no epoch for epochs <= 0 and no step for steps_per_epoch 0, and says nothing.
        _check_count("fit", "epochs", epochs)
        _check_count("fit", "steps_per_epoch", steps_per_epoch, "or None for every batch of x")
        self._check_labels(y, "y")
        if isinstance(validation_data, (tuple, list)) and len(validation_data) >= 2:
            self._check_inputs("fit", validation_data[0], batch_size, "validation_data")
            self._check_labels(validation_data[1], "validation_data")
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
        self._check_inputs("evaluate", x, batch_size)
        self._check_labels(y, "y")
        x, y, sample_weight, batch_size = self._text_dataset(x, y, sample_weight, batch_size, False)
        return super().evaluate(x, y, batch_size=batch_size, sample_weight=sample_weight, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        self._check_inputs("predict", x, batch_size)
        x, _, _, batch_size = self._text_dataset(x, None, None, batch_size, False)
        return super().predict(x, batch_size=batch_size, **kwargs)

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

    def _check_labels(self, y, argument):
        """Refuses, before training, class labels the head cannot take, and NaN or infinite scores for a
        regression head (num_labels 1); a dataset and multi-column targets (one-hot, a custom loss) are left
        to Keras."""
        if isinstance(y, dict):
            y = y.get("logits")
        if y is None or isinstance(y, tf.data.Dataset):
            return
        try:
            labels = np.asarray(y)
        except (TypeError, ValueError):
            return
        if self.num_labels == 1:
            _check_scores(labels, argument)
            return
        if labels.size == 0 or labels.ndim > 2 or (labels.ndim == 2 and labels.shape[1] != 1) or labels.dtype == object:
            return
        labels = labels.reshape(-1)
        last = self.num_labels - 1
        if labels.dtype.kind in "US":
            raise ValueError(f"{argument}: labels such as {labels.tolist()[0]!r} are not class ids; the head "
                             f"(num_labels={self.num_labels}) takes integers 0..{last}: map each label name to its id")
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
