"""AlbertTokenClassifier: a tag per word from sentences as word lists; its loss is Hugging Face's (cross-entropy on
the units' reading pieces only), its labels travel with it, and it converts through the original's names."""

import warnings

import numpy as np
import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
from albert_tf.text.albert_preprocessor import AlbertPreprocessor
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from text_fixtures import train_small_spm

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
SENTENCES = [["John", "Smith", "lives", "in", "Paris"],
             ["Mary", "visited", "the", "old", "river", "garden", "in", "Rome", "last", "summer", "with", "her",
              "brother", "Peter"],
             ["the", "village"]]
SENTENCE_TAGS = [["B-PER", "I-PER", "O", "O", "B-LOC"],
                 ["B-PER", "O", "O", "O", "O", "O", "O", "B-LOC", "O", "O", "O", "O", "O", "B-PER"],
                 ["O", "O"]]
WINDOW = 16  # the second sentence takes several windows


@pytest.fixture(scope="module")
def cased_spm(tmp_path_factory):
    return train_small_spm(tmp_path_factory, "cased_spm", lower_case=False)


def tiny_config(spm):
    return AlbertConfig(vocab_size=AlbertTokenizer(str(spm)).vocab_size, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)


def tagger(spm, **arguments):
    with open(spm, "rb") as f:
        preprocessor = AlbertPreprocessor(f.read(), seq_length=WINDOW, lower_case=False)
    return AlbertTokenClassifier(tiny_config(spm), labels=TAGS, preprocessor=preprocessor, **arguments)


def test_fit_lowers_the_loss_and_predict_gives_a_tag_per_word(cased_spm):
    import keras

    keras.utils.set_random_seed(0)  # fit shuffles, and the tests run with deterministic ops
    model = tagger(cased_spm, dropout=0.0)
    pooler = [weight.numpy() for weight in model.encoder.pooler.weights]
    model.default_compile(num_train_steps=24, learning_rate=3e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the pooler, on no output's path, is not among the trained weights
        history = model.fit(SENTENCES, SENTENCE_TAGS, batch_size=4, epochs=8, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0]
    for before, weight in zip(pooler, model.encoder.pooler.weights):
        np.testing.assert_array_equal(weight.numpy(), before)

    predicted = model.predict(SENTENCES, verbose=0)
    assert [len(tags) for tags in predicted] == [len(words) for words in SENTENCES]
    assert all(tag in TAGS for tags in predicted for tag in tags)
    assert sum(p == t for tags, gold in zip(predicted, SENTENCE_TAGS) for p, t in zip(tags, gold)) >= 17  # of 21
    inputs, _ = model._inputs_and_labels("fit", SENTENCES[:1], SENTENCE_TAGS[:1], "x", "y")
    logits = model.predict(inputs, verbose=0)["logits"]
    assert logits.shape[1:] == (WINDOW, len(TAGS)) and logits.dtype == np.float32


def test_the_loss_is_huggingface_cross_entropy_over_first_pieces(cased_spm):
    import torch

    model = tagger(cased_spm)
    model.default_compile(num_train_steps=1)
    loss = model.evaluate(SENTENCES, SENTENCE_TAGS, batch_size=16, verbose=0)
    inputs, labels = model._inputs_and_labels("evaluate", SENTENCES, SENTENCE_TAGS, "x", "y")
    assert (labels["logits"] != -100).sum() >= sum(map(len, SENTENCES))  # a unit per word at least
    logits = model.predict(inputs, verbose=0)["logits"]
    expected = torch.nn.functional.cross_entropy(torch.tensor(logits).reshape(-1, len(TAGS)),
                                                 torch.tensor(labels["logits"], dtype=torch.long).reshape(-1),
                                                 ignore_index=-100)
    assert loss == pytest.approx(float(expected), abs=1e-5)


def test_save_to_preset_and_from_preset_keep_the_labels(cased_spm, tmp_path):
    from albert_tf.models.model_io import load_model

    model = tagger(cased_spm)
    saved = model.save_to_preset(tmp_path / "tagger")
    reloaded = AlbertTokenClassifier.from_preset(saved)
    assert reloaded.labels == TAGS and reloaded.preprocessor.seq_length == WINDOW
    assert reloaded.preprocessor.lower_case is False
    for ours, back in zip(model.weights, reloaded.weights):
        np.testing.assert_array_equal(back.numpy(), ours.numpy(), err_msg=ours.path)
    assert reloaded.predict(SENTENCES, verbose=0) == model.predict(SENTENCES, verbose=0)
    loaded, metadata = load_model(saved)
    assert (metadata["model"], metadata["label_names"], metadata["num_labels"]) == ("token_classifier", TAGS, 5)
    assert isinstance(loaded, AlbertTokenClassifier) and loaded.labels == TAGS

    # The same labels load the head whole; other labels give the encoder a fresh head of theirs.
    assert AlbertTokenClassifier.from_preset(saved, labels=tuple(TAGS)).classifier.kernel.numpy().tolist() == \
        model.classifier.kernel.numpy().tolist()
    other = AlbertTokenClassifier.from_preset(saved, labels=["O", "B-ORG", "I-ORG"])
    assert other.labels == ["O", "B-ORG", "I-ORG"] and other.classifier.kernel.shape == (32, 3)
    np.testing.assert_array_equal(other.encoder.weights[0].numpy(), model.encoder.weights[0].numpy())

    with_stride = tagger(cased_spm, doc_stride=3)
    clone = AlbertTokenClassifier.from_config(with_stride.get_config())
    assert clone.get_config() == with_stride.get_config() and clone.doc_stride == 3


def test_bad_labels_and_tags_are_refused_before_training(cased_spm):
    model = tagger(cased_spm)
    with pytest.raises(ValueError, match=r"y\[1\]: tag 'B-ORG' is not one of the model's labels"):
        model.fit(SENTENCES[:2], [SENTENCE_TAGS[0], ["B-ORG"] + SENTENCE_TAGS[1][1:]])
    with pytest.raises(ValueError, match=r"y\[0\]: 4 tags for 5 words"):
        model.fit(SENTENCES[:1], [SENTENCE_TAGS[0][:4]])
    with pytest.raises(ValueError, match=r"x\[0\] holds 3, not a word"):
        model.predict([["a", 3]])
    with pytest.raises(ValueError, match="holds no sentences"):
        model.predict([])
    with pytest.raises(ValueError, match="raw text; AlbertTokenClassifier trains on sentences as lists of words"):
        model.fit(["John lives in Paris"], [["B-PER", "O", "O", "B-LOC"]])
    assert not model.compiled  # nothing reached training
    with pytest.raises(ValueError, match="each once"):
        AlbertTokenClassifier(tiny_config(cased_spm), labels=["O", "B-PER", "O"])
    with pytest.raises(ValueError, match="no vocabulary"):
        AlbertTokenClassifier(tiny_config(cased_spm), labels=TAGS).predict(SENTENCES)


def test_a_token_classifier_converts_through_the_original_names(cased_spm, tmp_path):
    """To tf1 its head is run_classifier's output_weights/output_bias, without a pooler; back, the caller names the
    kind (the names are a classifier's) and every weight but the unused pooler returns."""
    import tensorflow as tf

    from albert_tf.checkpoints.conversion import convert
    from albert_tf.models.model_io import load_model

    model = tagger(cased_spm)
    saved = model.save_to_preset(tmp_path / "tagger")
    convert("albert_tf", "tf1", saved, str(tmp_path / "tf1"))
    names = {name for name, _ in tf.train.list_variables(str(tmp_path / "tf1" / "model.ckpt"))}
    assert {"output_weights", "output_bias"} <= names and not any(name.startswith("bert/pooler") for name in names)
    np.testing.assert_array_equal(tf.train.load_checkpoint(str(tmp_path / "tf1" / "model.ckpt")).get_tensor(
        "output_weights"), model.classifier.kernel.numpy().T)

    summary = convert("tf1", "albert_tf", str(tmp_path / "tf1" / "model.ckpt"), str(tmp_path / "back"),
                      albert_config=str(tmp_path / "tf1" / "albert_config.json"), model_kind="token_classifier")
    assert summary["kind"] == "token_classifier" and summary["initialized_heads"] == []
    back, _ = load_model(str(tmp_path / "back"))
    assert isinstance(back, AlbertTokenClassifier) and back.num_labels == len(TAGS)
    for ours, theirs in zip(model.weights, back.weights):
        if "pooler" not in ours.path:
            np.testing.assert_array_equal(theirs.numpy(), ours.numpy(), err_msg=ours.path)


def test_the_window_stride_travels_with_a_saved_tagger(cased_spm, tmp_path):
    """save_to_preset records the stride its windows are cut with (half a window where none was given, as
    run_tagger records it) and from_preset reads it back at that window length."""
    from albert_tf.models.model_dir_format import read_metadata

    saved = tagger(cased_spm).save_to_preset(tmp_path / "default")
    assert read_metadata(saved)["doc_stride"] == 7  # (16 - 2) // 2
    saved = tagger(cased_spm, doc_stride=3).save_to_preset(tmp_path / "given")
    assert read_metadata(saved)["doc_stride"] == 3
    assert AlbertTokenClassifier.from_preset(saved).doc_stride == 3
    assert AlbertTokenClassifier.from_preset(saved, doc_stride=5).doc_stride == 5  # asked for: kept
    assert AlbertTokenClassifier.from_preset(saved, max_seq_length=32).doc_stride is None  # other windows


def test_fit_computes_the_labelled_positions_alone_with_the_full_models_loss_and_gradients(cased_spm, monkeypatch):
    """fit trains as run_tagger does, on the logits of the labelled positions alone (`head_outputs`, through
    AlbertEncoder.last_layer_flat_rows), not on every position's: the same loss and gradients as the compiled
    loss on the full model's logits (one plain SGD step of rate 1 moves each weight by minus its gradient)."""
    import keras
    import tensorflow as tf

    from albert_tf.networks.albert_encoder import AlbertEncoder

    keras.utils.set_random_seed(1)
    model = tagger(cased_spm, dropout=0.0)
    x, y = model._inputs_and_labels("fit", SENTENCES, SENTENCE_TAGS, "x", "y")
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-100)
    with tf.GradientTape() as tape:
        full_loss = loss(y["logits"], model(x, training=True)["logits"])
    gradients = [tf.convert_to_tensor(gradient).numpy()
                 for gradient in tape.gradient(full_loss, model.trainable_weights)]
    initial = [weight.numpy() for weight in model.trainable_weights]

    flat_rows = []
    original = AlbertEncoder.last_layer_flat_rows
    monkeypatch.setattr(AlbertEncoder, "last_layer_flat_rows",
                        lambda *args, **kwargs: flat_rows.append(1) or original(*args, **kwargs))
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=1.0), loss={"logits": loss})
    history = model.fit(x, y, batch_size=len(x["input_word_ids"]), shuffle=False, verbose=0)
    assert flat_rows, "fit computed every position's logits, not the labelled ones alone"
    assert history.history["loss"][0] == pytest.approx(float(full_loss), rel=1e-5)
    for before, gradient, weight in zip(initial, gradients, model.trainable_weights):
        np.testing.assert_allclose(before - weight.numpy(), gradient, rtol=1e-4, atol=1e-6, err_msg=weight.path)
