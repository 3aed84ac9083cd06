"""AlbertClassifier speaks in label names, as run_text_classifier does: `labels`/`id2label` and every problem type's
name (ours and Hugging Face's), `fit`/`evaluate` on names, `predict` answering names and probabilities, the
multi-label head's loss and metric checked against torch and scikit-learn, and the same albert_tf.json record as the
tool's, both ways."""

import json

import numpy as np
import pytest

import albert_tf
from albert_tf.albert_config import AlbertConfig
from albert_tf.models.albert_classifier import HUGGINGFACE_PROBLEM_TYPES, AlbertClassifier
from albert_tf.models.model_io import load_model, write_model_dir
from text_fixtures import train_small_spm

TEXTS = ["a refund for the invoice", "the app crashes at once", "where is my parcel", "charged twice, refund it",
         "it crashes on start", "do you ship abroad"]
TICKETS = ["billing", "bug", "other", "billing", "bug", "other"]


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    """A tiny pretrainer directory with its spm.model (random weights: the API is under test, not learning)."""
    import keras

    spm = train_small_spm(tmp_path_factory)
    keras.utils.set_random_seed(0)
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=albert_tf.AlbertTokenizer(str(spm)).vocab_size,
                                      num_hidden_layers=1, max_position_embeddings=32)
    return write_model_dir(albert_tf.AlbertPretrainer(config), str(tmp_path_factory.mktemp("pre") / "pretrained"),
                           files={"spm.model": str(spm)})


def tool_record(labels, problem_type, max_seq_length=16):
    """What run_text_classifier records for this label scheme (its task's own metadata)."""
    from albert_tf.tasks.text_classification_task import TextClassificationConfig, TextClassificationTask
    from albert_tf.training.finetuning_config import FinetuningConfig

    config = FinetuningConfig(output_dir="unused", max_seq_length=max_seq_length, task=TextClassificationConfig(
        problem_type=problem_type, labels=tuple(labels)))
    return TextClassificationTask(), config, TextClassificationTask().metadata(config)


def head_kernel(model):
    return model.get_layer("classifier").kernel.numpy()


# --- the head the arguments describe --------------------------------------------------------------------


def test_labels_id2label_and_problem_types_describe_the_head():
    from albert_tf.models.model_dir_format import DEFAULT_MULTI_LABEL_THRESHOLD, PROBLEM_TYPES
    from albert_tf.tasks import labelled_texts

    # One set of names with the TF-free reader's (which cannot import the models).
    assert PROBLEM_TYPES == labelled_texts.PROBLEM_TYPES
    assert HUGGINGFACE_PROBLEM_TYPES == labelled_texts.HUGGINGFACE_PROBLEM_TYPES
    assert DEFAULT_MULTI_LABEL_THRESHOLD == labelled_texts.MULTI_LABEL_THRESHOLD

    config = AlbertConfig.from_preset("albert_tiny", vocab_size=100, num_hidden_layers=1)
    named = AlbertClassifier(config, labels=["billing", "bug", "other"])
    assert (named.num_labels, named.labels, named.problem_type) == (3, ["billing", "bug", "other"], "single_label")
    assert named.get_layer("classifier").units == 3
    for id2label in ({0: "billing", 1: "bug", 2: "other"}, {"2": "other", "0": "billing", "1": "bug"}):
        assert AlbertClassifier(config, id2label=id2label).labels == ["billing", "bug", "other"]
    for ours, theirs in HUGGINGFACE_PROBLEM_TYPES.items():
        labels = None if ours == "regression" else ["a", "b"]
        assert AlbertClassifier(config, labels=labels, problem_type=ours).problem_type == ours
        assert AlbertClassifier(config, labels=labels, problem_type=theirs).problem_type == ours
    assert AlbertClassifier(config, num_labels=1).problem_type == "regression"  # as num_labels=1 always meant
    assert AlbertClassifier(config, num_classes=3, labels=["a", "b", "c"]).num_labels == 3

    def refused(match, **arguments):
        with pytest.raises(ValueError, match=match) as error:
            AlbertClassifier(config, **arguments)
        assert "\n" not in str(error.value)

    refused(r"^AlbertClassifier: num_labels=2 contradicts labels=\['a', 'b', 'c'\] \(3 names\); leave num_labels "
            "out: it follows the labels$", num_labels=2, labels=["a", "b", "c"])
    refused(r"^AlbertClassifier: num_classes=4 contradicts labels", num_classes=4, labels=["a", "b", "c"])
    refused(r"num_labels=3 contradicts problem_type='regression', whose head has one output", num_labels=3,
            problem_type="regression")
    refused(r"labels=\['a', 'b'\] contradicts problem_type='regression'", labels=["a", "b"], problem_type="regression")
    refused(r"problem_type='multilabel' must be one of \['single_label', 'multi_label', 'regression'\] \(or Hugging "
            r"Face's \['single_label_classification'", problem_type="multilabel")
    refused(r"a single_label head needs two or more labels, got 1", labels=["spam"])
    refused(r"a multi_label head needs two or more labels, got 1", num_labels=1, problem_type="multi_label")
    refused(r"labels=\['a', 'b'\] and id2label=\{0: 'b', 1: 'a'\} disagree", labels=["a", "b"],
            id2label={0: "b", 1: "a"})
    refused(r"id2label's ids \[1, 2\] must be 0\.\.1", id2label={1: "a", 2: "b"})
    refused(r"labels name \['a'\] more than once", labels=["a", "b", "a"])
    refused(r"labels='ab' must be a list of label names", labels="ab")
    refused(r"label name 3 must be a non-empty string", labels=["a", 3])
    with pytest.raises(ValueError, match=r"multi_label_threshold must be in \[0, 1\], got 1.5"):
        AlbertClassifier(config, labels=["a", "b"], problem_type="multi_label", multi_label_threshold=1.5)

    # Keras's config keeps it all (from_config, and so keras.saving).
    tagger = AlbertClassifier(config, labels=["bug", "urgent"], problem_type="multi_label_classification",
                              multi_label_threshold=0.3)
    clone = AlbertClassifier.from_config(tagger.get_config())
    assert (clone.labels, clone.problem_type, clone.multi_label_threshold) == (["bug", "urgent"], "multi_label", 0.3)
    assert clone.get_config() == tagger.get_config()


# --- names in, names out --------------------------------------------------------------------------------


def test_fit_and_evaluate_take_label_names_and_predict_answers_them(pretrained):
    import torch

    labels = ["billing", "bug", "other"]
    classifier = AlbertClassifier.from_preset(pretrained, labels=labels, max_seq_length=16)
    history = classifier.fit(x=TEXTS, y=TICKETS, batch_size=3, epochs=1, verbose=0,
                             validation_data=(TEXTS[:3], TICKETS[:3]))
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert classifier.takes_pairs is False

    ids = np.array([labels.index(name) for name in TICKETS])
    loss, accuracy = classifier.evaluate(TEXTS, TICKETS, verbose=0)
    assert (loss, accuracy) == pytest.approx(classifier.evaluate(TEXTS, ids, verbose=0), abs=1e-6)
    answers = classifier.predict(TEXTS, verbose=0)
    logits = torch.tensor(answers["logits"])
    assert loss == pytest.approx(float(torch.nn.functional.cross_entropy(logits, torch.tensor(ids))), abs=1e-5)
    assert set(answers) == {"logits", "probabilities", "label_id", "label"}
    np.testing.assert_allclose(answers["probabilities"], torch.softmax(logits, -1).numpy(), atol=1e-6)
    assert answers["label_id"].tolist() == logits.argmax(-1).tolist()
    assert answers["label"] == [labels[i] for i in logits.argmax(-1).tolist()]
    assert accuracy == pytest.approx(np.mean(logits.argmax(-1).numpy() == ids))

    # A head without names answers ids and probabilities, and no names.
    unnamed = AlbertClassifier.from_preset(pretrained, num_labels=3, max_seq_length=16).predict(TEXTS[:2], verbose=0)
    assert set(unnamed) == {"logits", "probabilities", "label_id"}
    # Regression: the score.
    scorer = AlbertClassifier.from_preset(pretrained, problem_type="regression", max_seq_length=16)
    scores = scorer.predict(TEXTS[:2], verbose=0)
    assert set(scores) == {"logits", "score"} and scores["score"].tolist() == scores["logits"][:, 0].tolist()


def test_label_names_the_model_does_not_know_are_refused_before_training(pretrained):
    classifier = AlbertClassifier.from_preset(pretrained, labels=["billing", "bug", "other"], max_seq_length=16)
    before = [weight.numpy().copy() for weight in classifier.trainable_weights]

    def refused(match, call=classifier.fit, **arguments):
        with pytest.raises(ValueError, match=match) as error:
            call(**{"x": TEXTS[:3], "y": TICKETS[:3], "verbose": 0, **arguments})
        assert "\n" not in str(error.value)

    refused(r"^y: labels not among the model's \['billing', 'bug', 'other'\]: 'refund', 'spam'; build the model with "
            "labels that include them", y=["refund", "bug", "spam"])
    refused(r"^validation_data: labels not among the model's .*: 'Bug'", validation_data=(TEXTS[:2], ["bug", "Bug"]))
    refused(r"^y: labels not among the model's .*: 'x0', 'x1', 'x2', .*'x9' and 2 more; ", x=TEXTS * 2,
            y=[f"x{i}" for i in range(12)])
    refused(r"^y: labels not among", call=classifier.evaluate, y=["refund", "bug", "other"])
    assert not classifier.compiled
    for mine, earlier in zip(classifier.trainable_weights, before):
        np.testing.assert_array_equal(mine.numpy(), earlier)

    unnamed = AlbertClassifier.from_preset(pretrained, num_labels=3, max_seq_length=16)
    with pytest.raises(ValueError, match=r"^y: labels such as 'billing' are not class ids.*labels=\[\.\.\.\]"):
        unnamed.fit(TEXTS[:3], TICKETS[:3], verbose=0)
    scorer = AlbertClassifier.from_preset(pretrained, problem_type="regression", max_seq_length=16)
    with pytest.raises(ValueError, match=r"^y: labels such as 'billing' are not scores; a regression head"):
        scorer.fit(TEXTS[:3], TICKETS[:3], verbose=0)
    tagger = AlbertClassifier.from_preset(pretrained, num_labels=2, problem_type="multi_label", max_seq_length=16)
    with pytest.raises(ValueError, match=r"^y: label names such as 'bug' need the model's labels"):
        tagger.fit(TEXTS[:2], [["bug"], []], verbose=0)


def test_multi_label_fit_and_predict_with_each_labels_binary_cross_entropy(pretrained, tmp_path):
    import keras
    import torch
    from sklearn.metrics import f1_score

    labels = ["billing", "bug", "urgent"]
    tags = [["billing"], ["bug", "urgent"], [], "urgent", ("bug",), ["billing", "bug", "urgent"]]
    rows = np.array([[1, 0, 0], [0, 1, 1], [0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 1, 1]], np.float32)
    tagger = AlbertClassifier.from_preset(pretrained, labels=labels, problem_type="multi_label_classification",
                                          max_seq_length=16)
    history = tagger.fit(TEXTS, tags, batch_size=3, epochs=1, verbose=0, validation_data=(TEXTS[:3], rows[:3]))
    assert set(history.history) == {"loss", "micro_f1", "val_loss", "val_micro_f1"}
    # A head with its outputs well apart from the threshold answers those labels on every text.
    bias = tagger.get_layer("classifier").bias
    bias.assign([8.0, -8.0, 8.0])

    loss, micro_f1 = tagger.evaluate(TEXTS, tags, verbose=0)
    assert (loss, micro_f1) == pytest.approx(tagger.evaluate(TEXTS, rows, verbose=0), abs=1e-6)
    answers = tagger.predict(TEXTS, verbose=0)
    logits = torch.tensor(answers["logits"])
    assert loss == pytest.approx(float(torch.nn.BCEWithLogitsLoss()(logits, torch.tensor(rows))), abs=1e-5)
    probabilities = torch.sigmoid(logits).numpy()
    assert micro_f1 == pytest.approx(f1_score(rows, probabilities >= 0.5, average="micro"), abs=1e-6)
    assert set(answers) == {"logits", "probabilities", "predicted", "labels"}
    np.testing.assert_allclose(answers["probabilities"], probabilities, atol=1e-6)
    np.testing.assert_array_equal(answers["predicted"], probabilities >= 0.5)
    assert answers["labels"] == [["billing", "urgent"]] * len(TEXTS)

    with pytest.raises(ValueError, match=r"^y: targets of shape \(6, 2\); a multi-label head of 3 labels trains on"):
        tagger.fit(TEXTS, rows[:, :2], verbose=0)
    with pytest.raises(ValueError, match=r"^y: target 2\.0 is outside \[0, 1\]"):
        tagger.fit(TEXTS, rows * 2, verbose=0)
    with pytest.raises(ValueError, match=r"^y: labels not among the model's .*: 'spam'"):
        tagger.fit(TEXTS[:2], [["bug"], ["spam", "bug"]], verbose=0)

    # Keras's own format keeps the head's scheme and the compiled metric.
    tagger.save(str(tmp_path / "tagger.keras"))
    reloaded = keras.models.load_model(str(tmp_path / "tagger.keras"))
    assert (reloaded.labels, reloaded.problem_type) == (labels, "multi_label")
    assert reloaded.predict(TEXTS[:1], verbose=0)["labels"] == [["billing", "urgent"]]


# --- the record: the same keys as run_text_classifier's, read both ways ------------------------------------


def test_save_to_preset_records_what_run_text_classifier_records_and_from_preset_restores_it(pretrained, tmp_path):
    from albert_tf.checkpoints.conversion import convert
    from albert_tf.tasks.text_classification_task import recorded_scheme

    labels = ["billing", "bug", "urgent"]
    tagger = AlbertClassifier.from_preset(pretrained, labels=labels, problem_type="multi_label", max_seq_length=16)
    tagger.fit(TEXTS[:2], [["bug"], ["billing", "urgent"]], verbose=0)
    saved = tagger.save_to_preset(tmp_path / "tagger")
    metadata = load_model(saved)[1]
    task, config, tool = tool_record(labels, "multi_label")
    assert {key: metadata[key] for key in tool} == tool  # label_names, problem_type, threshold, is_regression ...
    # run_text_classifier --init_checkpoint: the same scheme, and its head trains on.
    assert recorded_scheme(metadata, saved) == config.task.scheme and task.continues(metadata, config)

    again = AlbertClassifier.from_preset(saved)
    assert (again.labels, again.problem_type, again.multi_label_threshold) == (labels, "multi_label", 0.5)
    assert again.takes_pairs is False
    np.testing.assert_array_equal(head_kernel(again), head_kernel(tagger))
    np.testing.assert_allclose(again.predict(TEXTS, verbose=0)["logits"], tagger.predict(TEXTS, verbose=0)["logits"],
                               atol=1e-5)

    # albert-convert reads it as a tool-trained model: Hugging Face's id2label and problem_type.
    convert("albert_tf", "huggingface", saved, str(tmp_path / "hf"))
    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf_config["problem_type"] == "multi_label_classification"
    assert [hf_config["id2label"][str(i)] for i in range(3)] == labels

    # A regression head records its one output as the tool does, and comes back a regression head.
    scorer = AlbertClassifier.from_preset(pretrained, problem_type="regression", max_seq_length=16)
    metadata = load_model(scorer.save_to_preset(tmp_path / "scorer"))[1]
    _, _, tool = tool_record((), "regression")
    assert {key: metadata[key] for key in tool} == tool
    assert AlbertClassifier.from_preset(str(tmp_path / "scorer")).problem_type == "regression"


def test_a_directory_the_tool_wrote_restores_its_labels_and_other_labels_get_a_fresh_head(pretrained, tmp_path):
    import tensorflow as tf

    from albert_tf.models.model_io import load_encoder

    labels = ["billing", "bug", "other"]
    task, config, record = tool_record(labels, "single_label")
    model = task.build_model(load_encoder(pretrained), config)  # as run_text_classifier builds and writes it
    head = model.get_layer("classifier").kernel
    head.assign(tf.random.normal(head.shape))
    directory = write_model_dir(model, str(tmp_path / "best"), files={"spm.model": f"{pretrained}/spm.model"},
                                **record, takes_pairs=True, lower_case=True)

    restored = AlbertClassifier.from_preset(directory)
    assert (restored.labels, restored.problem_type, restored.takes_pairs) == (labels, "single_label", True)
    np.testing.assert_array_equal(head_kernel(restored), head.numpy())
    assert restored.predict((TEXTS[:2], TEXTS[2:4]), verbose=0)["label"][0] in labels
    # The same names (as a tuple, through id2label) and the problem type by Hugging Face's name: the same head.
    for same in ({"labels": tuple(labels)}, {"id2label": dict(enumerate(labels))},
                 {"problem_type": "single_label_classification"}, {"num_labels": 3}):
        np.testing.assert_array_equal(head_kernel(AlbertClassifier.from_preset(directory, **same)), head.numpy())

    # Other names, another number of them, another problem type: the encoder with a fresh head, as another num_labels.
    for other in ({"labels": ["bug", "billing", "other"]}, {"labels": ["billing", "bug"]},
                  {"labels": labels, "problem_type": "multi_label"}, {"num_labels": 2}):
        fresh = AlbertClassifier.from_preset(directory, **other)
        assert fresh.takes_pairs is None and not np.array_equal(head_kernel(fresh)[:, :2], head.numpy()[:, :2])
        assert fresh.labels == other.get("labels")
    with pytest.raises(ValueError, match="num_labels=2 contradicts labels"):
        AlbertClassifier.from_preset(directory, labels=labels, num_labels=2)

    # A record older than problem_type: one output unnamed is a regression head, as it was trained.
    from albert_tf.models.model_dir_format import recorded_problem_type

    assert recorded_problem_type({"num_labels": 1}) == "regression"
    assert recorded_problem_type({"num_labels": 1, "is_regression": None}) == "regression"
    assert recorded_problem_type({"num_labels": 2, "is_regression": True}) == "regression"
    assert recorded_problem_type({"num_labels": 3}) == "single_label"
