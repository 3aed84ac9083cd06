"""A multi-label classifier's exports: each label's sigmoid probability and the labels at the recorded threshold,
from the TF Serving model (its signatures, load_export, its warm-up file) and from the LiteRT file (LiteModel)."""

import json

import numpy as np
import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.export_lib.exporter import export
from albert_tf.models.model_io import write_model_dir
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from albert_tf.text.packing import pack_batch
from test_export import read_warmup_requests
from serving_fixtures import assert_every_signature_answers_alike
from text_fixtures import SPECIAL_LINES, train_small_spm

SEQ = 24
LABELS = ["billing", "bug", "other", "urgent"]
# Not run_text_classifier's 0.5, so an export that ignored the record would predict other labels.
THRESHOLD = 0.4
TEXTS = SPECIAL_LINES[:6] + ["", "the invoice was charged twice", "the app crashes when i open it"]


def sigmoid(logits):
    return 1 / (1 + np.exp(-np.asarray(logits, np.float64)))


def names_at(probabilities, threshold):
    return [[name for name, p in zip(LABELS, row) if p >= threshold] for row in probabilities]


def spread_head(model, inputs):
    """Sets the classifier's head so its labels differ from text to text and across the thresholds: a random
    tiny model's pooled outputs are nearly alike for every text (a random head answers about the same
    probabilities for all), so labels 0 and 1 follow the two directions in which the texts' pooled outputs
    differ most (scaled to a logit spread of about +-2), label 2 is always predicted and label 3 sits at 0.45:
    predicted at THRESHOLD, not at 0.5."""
    pooled = np.asarray(model.encoder(inputs, training=False)["pooled_output"], np.float64)
    mean = pooled.mean(0)
    _, _, directions = np.linalg.svd(pooled - mean, full_matrices=False)
    spread = ((pooled - mean) @ directions[:2].T).std(0)
    kernel = (directions[:2].T / spread) @ np.array([[2.0, 0, 0, 0], [0, -2.0, 0, 0]])
    bias = np.array([0.3, 0.3, 1.5, np.log(0.45 / 0.55)]) - mean @ kernel
    model.classifier.set_weights([kernel.astype(np.float32), bias.astype(np.float32)])


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """A tiny multi-label classifier (`spread_head`), as model directories with and without a recorded
    threshold (a Hugging Face conversion records none)."""
    import keras

    from albert_tf.models.albert_classifier import AlbertClassifier

    spm = train_small_spm(tmp_path_factory)
    tokenizer = AlbertTokenizer(str(spm))
    keras.utils.set_random_seed(7)
    model = AlbertClassifier(config=AlbertConfig.from_preset("albert_tiny", vocab_size=tokenizer.vocab_size),
                             num_labels=len(LABELS))
    inputs = pack_batch(tokenizer, TEXTS, None, SEQ)
    spread_head(model, inputs)
    probabilities = sigmoid(model(inputs, training=False)["logits"])
    # Labels that differ by text and by threshold, and no probability so near a threshold that float noise
    # could flip it.
    assert len({tuple(names) for names in names_at(probabilities, 0.5)}) > 2
    assert names_at(probabilities, THRESHOLD) != names_at(probabilities, 0.5)
    assert np.abs(probabilities - THRESHOLD).min() > 1e-3 and np.abs(probabilities - 0.5).min() > 1e-3
    directory = tmp_path_factory.mktemp("multi_label")
    record = dict(files={"spm.model": str(spm)}, label_names=LABELS, is_regression=False, problem_type="multi_label",
                  takes_pairs=False, max_seq_length=SEQ)
    return {"model": model, "tokenizer": tokenizer, "probabilities": probabilities,
            "recorded": write_model_dir(model, str(directory / "recorded"), multi_label_threshold=THRESHOLD,
                                        **record),
            "unrecorded": write_model_dir(model, str(directory / "unrecorded"), **record)}


@pytest.fixture(scope="module")
def exported(classifier, tmp_path_factory):
    root = tmp_path_factory.mktemp("export") / "tickets"
    return {"root": root, **export(classifier["recorded"], str(root), serving_name="tickets")}


def test_serving_answers_sigmoid_probabilities_and_the_labels_at_the_recorded_threshold(classifier, exported):
    import tensorflow as tf

    serving = tf.saved_model.load(exported["serving"])
    expected = classifier["probabilities"]
    single = serving.signatures["serve_text"](text=tf.constant(TEXTS))
    assert set(single) == {"probabilities", "predicted", "label_names"}
    np.testing.assert_allclose(single["probabilities"].numpy(), expected, atol=1e-5)
    assert single["predicted"].dtype == tf.bool
    np.testing.assert_array_equal(single["predicted"].numpy(), expected >= THRESHOLD)
    assert single["label_names"].numpy().astype(str).tolist() == [LABELS] * len(TEXTS)
    # The pair signature with no second segments, and serialized tf.Examples, answer the same.
    assert_every_signature_answers_alike(serving, TEXTS, {name: value.numpy() for name, value in single.items()})
    recorded = json.loads((exported["root"] / "albert_tf.json").read_text())
    assert recorded["problem_type"] == "multi_label" and recorded["multi_label_threshold"] == THRESHOLD
    assert recorded["label_names"] == LABELS


def test_load_export_returns_each_texts_label_names(classifier, exported):
    from albert_tf import load_export

    outputs = load_export(exported["root"])(TEXTS)
    np.testing.assert_allclose(outputs["probabilities"], classifier["probabilities"], atol=1e-5)
    assert outputs["labels"] == names_at(classifier["probabilities"], THRESHOLD)
    assert "label" not in outputs and "label_id" not in outputs


def test_warmup_requests_replay_on_the_multi_label_model(exported):
    import tensorflow as tf

    serving = tf.saved_model.load(exported["serving"])
    requests = read_warmup_requests(exported["serving"])
    assert {request.model_spec.signature_name for request in requests} == {"serve_text", "serving_default"}
    for request in requests:
        inputs = {name: tf.constant(tf.make_ndarray(tensor)) for name, tensor in request.inputs.items()}
        outputs = serving.signatures[request.model_spec.signature_name](**inputs)
        rows = len(inputs["text"])
        assert outputs["probabilities"].shape == outputs["predicted"].shape == (rows, len(LABELS))


def test_litert_answers_sigmoid_probabilities_and_lite_model_the_names(classifier, tmp_path):
    """From a record without a threshold (a Hugging Face conversion's): the default, recorded for the app."""
    from albert_tf.export_lib.litert_export import export_litert
    from albert_tf.models.lite_model import LiteModel

    output = tmp_path / "lite"
    export_litert(classifier["unrecorded"], str(output), quantization="float32")
    recorded = json.loads((output / "albert_tf.json").read_text())
    assert recorded["problem_type"] == "multi_label" and recorded["multi_label_threshold"] == 0.5
    assert recorded["label_names"] == LABELS
    outputs = LiteModel(output)(TEXTS)
    np.testing.assert_allclose(outputs["probabilities"], classifier["probabilities"], atol=1e-4)
    np.testing.assert_array_equal(outputs["predicted"], classifier["probabilities"] >= 0.5)
    assert outputs["labels"] == names_at(classifier["probabilities"], 0.5)
    assert "label" not in outputs and "label_id" not in outputs
    # LiteModel applies the threshold the record gives, not a default of its own.
    (output / "albert_tf.json").write_text(json.dumps({**recorded, "multi_label_threshold": THRESHOLD}))
    assert LiteModel(output)(TEXTS)["labels"] == names_at(classifier["probabilities"], THRESHOLD)


def test_int8_gate_of_a_multi_label_model_counts_each_labels_decision():
    """Full int8's gate: every label's predicted-or-not must agree with the float model, not only the top label
    (a file can keep the argmax and still flip a label across the threshold)."""
    from albert_tf.export_lib.litert_module import INT8_MIN_LABEL_AGREEMENT, ClassifierRequests

    requests = ClassifierRequests(None, {"model": "classifier", "problem_type": "multi_label",
                                         "multi_label_threshold": THRESHOLD, "takes_pairs": False})
    reference = np.tile([[0.9, 0.45, 0.1]], (100, 1))
    flipped = reference.copy()
    flipped[:2, 1] = 0.35  # two decisions of 300 flipped; every row's argmax kept
    outputs = {"logits": np.log(flipped / (1 - flipped)), "probabilities": flipped}
    reference = {"logits": np.log(reference / (1 - reference)), "probabilities": reference}
    assert requests.int8_gate(reference, reference)[0]
    passed, measured = requests.int8_gate(outputs, reference)
    assert 1 - 2 / 300 < INT8_MIN_LABEL_AGREEMENT and not passed
    assert measured.startswith("per-label agreement with the float model 99.33%")
