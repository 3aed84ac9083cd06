"""albert_tf checkpoint directories written from a model alone: the kind and heads come from the model."""

import numpy as np
import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.models.model_io import load_model, write_model_dir
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice


def test_a_saved_task_model_loads_with_its_heads(tmp_path):
    config = AlbertConfig.from_preset("albert_tiny")
    classifier = AlbertClassifier(config=config, num_labels=3)
    write_model_dir(classifier, str(tmp_path / "classifier"))  # no kind, no num_labels given
    loaded, metadata = load_model(str(tmp_path / "classifier"))
    assert metadata["model"] == "classifier" and metadata["num_labels"] == 3
    assert isinstance(loaded, AlbertClassifier) and loaded.num_labels == 3
    for a, b in zip(loaded.weights, classifier.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())

    choices = AlbertMultipleChoice(config=config, num_choices=3).build_variables()
    write_model_dir(choices, str(tmp_path / "race"), label_names=["a", "b", "c"])
    _, metadata = load_model(str(tmp_path / "race"))
    assert metadata["model"] == "multiple_choice" and metadata["num_choices"] == 3 and metadata["label_names"] == ["a", "b", "c"]

    with pytest.raises(ValueError, match="is an AlbertClassifier"):
        write_model_dir(classifier, str(tmp_path / "wrong"), "encoder")
    assert not (tmp_path / "wrong").exists()


def test_the_package_exports_what_users_build_with():
    import albert_tf

    for name in ("AlbertConfig", "AlbertEncoder", "AlbertPretrainer", "AlbertClassifier", "AlbertSpanLabeler",
                 "AlbertMultipleChoice", "AlbertTokenizer", "TFAlbertTokenizer", "create_optimizer", "load_model",
                 "write_model_dir", "AlbertPreprocessor", "load_encoder", "load_pretrainer"):
        assert name in albert_tf.__all__ and getattr(albert_tf, name) is not None, name


def test_the_public_api_has_type_hints():
    import inspect

    import albert_tf

    for name in albert_tf.__all__:
        target = getattr(albert_tf, name)
        function = target.__init__ if inspect.isclass(target) else target
        parameters = [parameter for parameter in inspect.signature(function).parameters.values()
                      if parameter.name != "self" and parameter.kind not in (parameter.VAR_KEYWORD,
                                                                                parameter.VAR_POSITIONAL)]
        missing = [parameter.name for parameter in parameters if parameter.annotation is inspect.Parameter.empty]
        assert not missing, f"{name}: no type hint for {missing}"


def test_compile_fit_then_save_and_load(tmp_path):
    """Keras-native fine-tuning: compile/fit a task model on packed ids, save without naming the kind, load."""
    import keras

    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.text.packing import pack_batch
    from text_fixtures import train_small_spm

    class Factory:
        def mktemp(self, name):
            (tmp_path / name).mkdir()
            return tmp_path / name

    spm = train_small_spm(Factory())
    texts = [f"{'good' if i % 2 else 'bad'} river town number {i}" for i in range(64)]
    labels = np.array([i % 2 for i in range(64)])
    inputs = pack_batch(AlbertTokenizer(str(spm)), texts, None, 16)
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=400)
    keras.utils.set_random_seed(1)
    classifier = AlbertClassifier(config=config, num_labels=2)
    classifier.compile(optimizer=keras.optimizers.Adam(1e-3),
                       loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)})
    losses = classifier.fit(inputs, labels, batch_size=16, epochs=6, verbose=0).history["loss"]
    assert losses[-1] < losses[0] * 0.7, losses

    write_model_dir(classifier, str(tmp_path / "fine_tuned"), files={"spm.model": str(spm)})
    loaded, metadata = load_model(str(tmp_path / "fine_tuned"))
    assert metadata["model"] == "classifier" and metadata["num_labels"] == 2
    np.testing.assert_allclose(loaded(inputs)["logits"].numpy(), classifier(inputs)["logits"].numpy(), atol=1e-5)


def test_fit_on_raw_strings_with_the_preprocessor(tmp_path):
    """AlbertPreprocessor maps raw (text, label) data for compile/fit and gives the Python tokenizer's ids."""
    import keras
    import tensorflow as tf

    import albert_tf
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.text.packing import pack_batch
    from text_fixtures import SPECIAL_LINES, train_small_spm

    class Factory:
        def mktemp(self, name):
            (tmp_path / name).mkdir()
            return tmp_path / name

    spm = str(train_small_spm(Factory()))
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=400)
    write_model_dir(albert_tf.AlbertPretrainer(config), str(tmp_path / "pretrained"), files={"spm.model": spm})
    preprocessor = albert_tf.AlbertPreprocessor.from_model_dir(str(tmp_path / "pretrained"), seq_length=24)

    # The same ids as the Python tokenizer and packing, for single texts and pairs.
    tokenizer = AlbertTokenizer(spm)
    texts_b = ["", *SPECIAL_LINES[1:]]
    expected = pack_batch(tokenizer, SPECIAL_LINES, texts_b, 24)
    packed = preprocessor((tf.constant(SPECIAL_LINES), tf.constant(texts_b)))
    for name, value in expected.items():
        np.testing.assert_array_equal(packed[name].numpy(), value, err_msg=name)
    one = preprocessor(tf.constant(SPECIAL_LINES[0]))
    np.testing.assert_array_equal(one["input_word_ids"].numpy(), expected["input_word_ids"][0])

    texts = [f"{'good' if i % 2 else 'bad'} river town number {i}" for i in range(64)]
    labels = np.array([i % 2 for i in range(64)])
    train = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(16).map(preprocessor)
    # Setting the seed clears TF's eager kernel cache; a SentencePiece op created eagerly before it would
    # have lost its model ("... SentencepieceOp does not exist" in fit).
    keras.utils.set_random_seed(1)
    classifier = albert_tf.AlbertClassifier(encoder=albert_tf.load_encoder(str(tmp_path / "pretrained")),
                                            num_labels=2)
    # The original AdamW has no bias correction: its first steps are ~3x the rate, hence the small rate.
    classifier.compile(optimizer=albert_tf.create_optimizer(3e-4, num_train_steps=32, num_warmup_steps=4,
                                                            optimizer="adamw"),
                       loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)})
    losses = classifier.fit(train, epochs=8, verbose=0).history["loss"]
    assert losses[-1] < losses[0] * 0.7, losses
    logits = classifier.predict(preprocessor(tf.constant(texts[:4])), verbose=0)["logits"]
    assert list(np.argmax(logits, axis=-1)) == list(labels[:4])

    # The layer's config round-trips (the SentencePiece model travels inside it).
    clone = albert_tf.AlbertPreprocessor.from_config(preprocessor.get_config())
    np.testing.assert_array_equal(clone(tf.constant(texts[:3]))["input_word_ids"].numpy(),
                                  preprocessor(tf.constant(texts[:3]))["input_word_ids"].numpy())
    with pytest.raises(FileNotFoundError, match="holds no spm.model"):
        albert_tf.AlbertPreprocessor.from_model_dir(str(tmp_path))


def test_every_model_takes_the_encoder_or_a_config_first():
    """One argument order for all models built on the encoder: (encoder, config, ...); a config may stand first."""
    import albert_tf
    from albert_tf.networks.albert_encoder import AlbertEncoder

    config = AlbertConfig.from_preset("albert_tiny")
    encoder = AlbertEncoder(config)
    for cls, extra in ((albert_tf.AlbertPretrainer, {}), (AlbertClassifier, {"num_labels": 3}),
                       (albert_tf.AlbertSpanLabeler, {}), (AlbertMultipleChoice, {"num_choices": 2})):
        assert cls(encoder, **extra).encoder is encoder
        from_config = cls(config, **extra)
        assert from_config.albert_config == config and from_config.encoder is not encoder
        clone = cls.from_config(from_config.get_config())
        assert clone.get_config() == from_config.get_config()
        with pytest.raises(ValueError, match="two configs given"):
            cls(config, config=config, **extra)
