"""albert_tf as a KerasHub or Hugging Face user meets it: presets with overrides, from_preset, raw strings
in fit/predict, a fill-mask API, errors that keep their cause, and the tools' small courtesies."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import albert_tf
from albert_tf.albert_config import AlbertConfig
from albert_tf.models.model_io import load_model, write_model_dir
from pretraining_fixtures import PREDICTIONS, SEQ_LENGTH, make_pretraining_data
from text_fixtures import train_small_spm


def tool(name, *flags, timeout=300):
    return subprocess.run([sys.executable, "-m", f"albert_tf.{name}", *flags], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONUNBUFFERED": "1"}, timeout=timeout)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    """A tiny pretrainer directory with its spm.model (random weights: the API is under test, not learning)."""
    import keras

    spm = train_small_spm(tmp_path_factory)
    keras.utils.set_random_seed(0)
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=albert_tf.AlbertTokenizer(str(spm)).vocab_size,
                                      num_hidden_layers=2, max_position_embeddings=64)
    return write_model_dir(albert_tf.AlbertPretrainer(config), str(tmp_path_factory.mktemp("pre") / "pretrained"),
                           files={"spm.model": str(spm)})


# --- presets -------------------------------------------------------------------------------------------


def test_a_preset_takes_overrides_and_names_unknown_ones():
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=1000, num_hidden_layers=3)
    assert (config.vocab_size, config.num_hidden_layers, config.hidden_size) == (1000, 3, 128)
    with pytest.raises(ValueError, match=r"unknown AlbertConfig keys \['hidden_sise'\]"):
        AlbertConfig.from_preset("albert_tiny", hidden_sise=64)
    with pytest.raises(ValueError, match="is not a multiple of num_attention_heads"):
        AlbertConfig.from_preset("albert_tiny", num_attention_heads=3)


def test_task_models_from_a_preset_name_or_a_directory(pretrained, tmp_path):
    import tensorflow as tf

    with pytest.warns(UserWarning, match="random parameters"):
        fresh = albert_tf.AlbertClassifier.from_preset("albert_tiny", vocab_size=500, num_labels=3)
    assert fresh.albert_config.vocab_size == 500 and fresh.num_labels == 3 and fresh.preprocessor is None
    with pytest.warns(UserWarning, match="random parameters"):
        pretrainer = albert_tf.AlbertPretrainer.from_preset("albert_tiny", vocab_size=500)
    assert pretrainer.albert_config.vocab_size == 500

    classifier = albert_tf.AlbertClassifier.from_preset(pretrained, num_labels=2)
    source = load_model(pretrained)[0].encoder
    for mine, theirs in zip(classifier.encoder.weights, source.weights):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    # 128 by default, but never more than the model's 64 positions.
    assert classifier.preprocessor.seq_length == 64 and classifier.preprocessor.vocab_size == source.albert_config.vocab_size
    assert albert_tf.AlbertClassifier.from_preset(pretrained, max_seq_length=32).preprocessor.seq_length == 32

    # A directory holding this kind of model loads whole, head included.
    classifier.get_layer("classifier").kernel.assign(tf.ones_like(classifier.get_layer("classifier").kernel))
    write_model_dir(classifier, str(tmp_path / "clf"))
    again = albert_tf.AlbertClassifier.from_preset(str(tmp_path / "clf"))
    np.testing.assert_array_equal(again.get_layer("classifier").kernel.numpy(), 1.0)
    other_head = albert_tf.AlbertClassifier.from_preset(str(tmp_path / "clf"), num_labels=3)
    assert other_head.num_labels == 3  # another head: the encoder only

    with pytest.raises(ValueError, match="its weights fix the architecture; hidden_size can be changed only"):
        albert_tf.AlbertClassifier.from_preset(pretrained, hidden_size=64)
    with pytest.raises(ValueError, match="neither a preset .* nor a model directory"):
        albert_tf.AlbertClassifier.from_preset("albert_huge")


def test_a_hugging_face_directory_points_at_the_converter(tmp_path):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text("{}")
    (tmp_path / "hf" / "model.safetensors").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="a Hugging Face checkpoint.*albert-convert --from=huggingface"):
        albert_tf.load_encoder(str(tmp_path / "hf"))


# --- raw strings into Keras ----------------------------------------------------------------------------


def test_fit_predict_and_evaluate_take_raw_text_and_compile_with_the_recipe(pretrained, tmp_path):
    import keras

    from albert_tf.models.albert_classifier import DEFAULT_LEARNING_RATE
    from albert_tf.optimization import AdamWeightDecay

    keras.utils.set_random_seed(1)
    classifier = albert_tf.AlbertClassifier.from_preset(pretrained, num_labels=2, max_seq_length=24)
    texts = [f"{'good' if i % 2 else 'bad'} river town number {i}" for i in range(32)]
    labels = np.array([i % 2 for i in range(32)])
    before = [w.numpy().copy() for w in classifier.trainable_weights]
    history = classifier.fit(x=texts, y=labels, batch_size=8, epochs=1, verbose=0,
                             validation_data=(texts[:8], labels[:8]))
    assert isinstance(classifier.optimizer, AdamWeightDecay)  # the original AdamW, compiled by fit
    schedule = classifier.optimizer._learning_rate  # the schedule the recipe built: 4 steps of 8 rows, 10% warmup
    assert (schedule.learning_rate, schedule.num_train_steps, schedule.num_warmup_steps) == (DEFAULT_LEARNING_RATE, 4, 0)
    # A small model's larger rate (default_compile's docstring), the recipe otherwise the same.
    small_rate = albert_tf.AlbertClassifier.from_preset(pretrained, num_labels=2, max_seq_length=24)
    small_rate.default_compile(40, learning_rate=1e-4)
    schedule = small_rate.optimizer._learning_rate
    assert (schedule.learning_rate, schedule.num_train_steps, schedule.num_warmup_steps) == (1e-4, 40, 4)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert any(not np.array_equal(a, b.numpy()) for a, b in zip(before, classifier.trainable_weights))
    assert classifier.takes_pairs is False  # trained on single texts: recorded by save_to_preset
    logits = classifier.predict(["a good river", "a bad town", "x"], verbose=0)["logits"]
    assert logits.shape == (3, 2)
    preprocessed = classifier.preprocessor(np.array(["a good river", "a bad town", "x"]))
    np.testing.assert_allclose(logits, classifier.predict(preprocessed, verbose=0)["logits"], atol=1e-6)
    pairs = classifier.predict((["a good river"], ["a town"]), verbose=0)["logits"]
    assert pairs.shape == (1, 2)
    loss, accuracy = classifier.evaluate(x=texts, y=labels, verbose=0)
    assert np.isfinite(loss) and 0.0 <= accuracy <= 1.0

    # Saved with the preprocessor inside: Keras's own format and the albert_tf model directory.
    classifier.save(str(tmp_path / "c.keras"))
    reloaded = keras.models.load_model(str(tmp_path / "c.keras"))
    np.testing.assert_allclose(reloaded.predict(["a good river"], verbose=0)["logits"], logits[:1], atol=1e-5)
    write_model_dir(classifier, str(tmp_path / "dir"))
    loaded, metadata = load_model(str(tmp_path / "dir"))
    assert metadata["preprocessor"] == {"seq_length": 24, "lower_case": True, "keep_accents": False,
                                        "rewrite_quotes": False}
    np.testing.assert_allclose(loaded.predict(["a good river"], verbose=0)["logits"], logits[:1], atol=1e-5)


def test_fit_without_a_known_length_asks_for_steps(pretrained):
    import tensorflow as tf

    classifier = albert_tf.AlbertClassifier.from_preset(pretrained, num_labels=2, max_seq_length=16)
    endless = tf.data.Dataset.from_tensor_slices((["a river"] * 4, [0, 1, 0, 1])).repeat().batch(2)
    with pytest.raises(ValueError, match="pass steps_per_epoch"):
        classifier.fit(endless, epochs=1, verbose=0)
    history = classifier.fit(endless, epochs=1, steps_per_epoch=2, verbose=0)  # strings in a dataset: mapped
    assert len(history.history["loss"]) == 1


# --- mistakes refused at once, by name -------------------------------------------------------------------


def test_unknown_keywords_are_refused_by_name_not_dropped(pretrained):
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=100)
    for cls in (albert_tf.AlbertClassifier, albert_tf.AlbertSpanLabeler, albert_tf.AlbertPretrainer,
                albert_tf.AlbertMultipleChoice):
        with pytest.raises(TypeError, match=rf"^{cls.__name__} got unknown keyword argument 'num_lables'.*; "
                                            r"accepted: .*seq_length"):
            cls(config, num_lables=3)
    with pytest.raises(TypeError, match=r"'num_lables' \(did you mean 'num_labels'\?\); accepted: .*num_classes"):
        albert_tf.AlbertClassifier(config, num_lables=3)
    # from_preset: for a preset name, and for a directory (which used to load whole, the typo unseen).
    for preset, extra in (("albert_tiny", {"vocab_size": 100}), (pretrained, {})):
        with pytest.raises(TypeError, match=r"^AlbertClassifier.from_preset got unknown keyword argument "
                                            r"'num_lables'.*accepted: .*num_labels.*spm_model_file.*vocab_size"):
            albert_tf.AlbertClassifier.from_preset(preset, num_lables=3, **extra)
    with pytest.raises(TypeError, match="unknown keyword argument 'dropuot'"):
        albert_tf.AlbertMultipleChoice.from_preset(pretrained, dropuot=0.2)
    for cls in (albert_tf.Embedder, albert_tf.MaskFiller):
        with pytest.raises(TypeError, match="num_lables"):
            cls(pretrained, num_lables=3)
    with pytest.raises(TypeError, match=r"^AlbertEncoder got unknown keyword argument 'seq_lenght' \(did you mean "
                                        r"'seq_length'\?\)"):
        albert_tf.AlbertEncoder(config, seq_lenght=32)


def test_num_classes_is_kerashubs_name_for_num_labels(pretrained):
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=100)
    classifier = albert_tf.AlbertClassifier(config, num_classes=3)
    assert classifier.num_labels == 3 and classifier.get_layer("classifier").units == 3
    assert albert_tf.AlbertClassifier.from_config(classifier.get_config()).num_labels == 3
    assert albert_tf.AlbertClassifier(config, num_labels=3, num_classes=3).num_labels == 3
    with pytest.raises(TypeError, match="num_classes=3 and num_labels=2 disagree"):
        albert_tf.AlbertClassifier(config, num_labels=2, num_classes=3)
    assert albert_tf.AlbertClassifier.from_preset(pretrained, num_classes=3).num_labels == 3
    with pytest.raises(TypeError, match="num_classes=3 and num_labels=2 disagree"):
        albert_tf.AlbertClassifier.from_preset(pretrained, num_labels=2, num_classes=3)
    with pytest.raises(ValueError, match="num_labels=0 must be a positive integer"):
        albert_tf.AlbertClassifier(config, num_labels=0)


def test_fit_refuses_what_the_head_cannot_take_before_training(pretrained):
    classifier = albert_tf.AlbertClassifier.from_preset(pretrained, num_labels=2, max_seq_length=16)
    texts = ["a good river", "a bad town", "a river town"]
    before = [weight.numpy().copy() for weight in classifier.trainable_weights]

    def refused(match, **fit):
        with pytest.raises(ValueError, match=match) as error:
            classifier.fit(**{"x": texts, "y": [0, 1, 0], "verbose": 0, **fit})
        assert "\n" not in str(error.value)

    refused(r"^y: label 2 is outside the head's range 0\.\.1 \(num_labels=2\); the labels span 0\.\.2, so build "
            r"the model with num_labels=3$", y=np.array([0, 1, 2]))
    refused(r"label -1 is outside the head's range 0\.\.1 .*class ids start at 0", y=[0, -1, 1])
    refused(r"label 0\.5 is not a class id.*num_labels=1", y=[0.0, 0.5, 1.0])
    refused(r"labels such as 'pos' are not class ids", y=["pos", "neg", "pos"])
    refused(r"^validation_data: label 3 is outside", validation_data=(texts, [0, 3, 1]))
    refused(r"^fit: batch_size=0 must be a positive integer", batch_size=0)
    refused(r"^fit: x holds no examples", x=[], y=[])
    assert not classifier.compiled  # refused before the recipe compiled it, let alone trained
    for mine, earlier in zip(classifier.trainable_weights, before):
        np.testing.assert_array_equal(mine.numpy(), earlier)
    with pytest.raises(ValueError, match="^predict: x holds no examples"):
        classifier.predict([])
    with pytest.raises(ValueError, match="^evaluate: label 2 is outside|^y: label 2 is outside"):
        classifier.evaluate(texts, [0, 2, 1], verbose=0)
    # Whole-valued float labels are class ids all the same.
    classifier.fit(x=texts, y=np.array([0.0, 1.0, 0.0]), batch_size=3, verbose=0)


def test_a_preset_name_says_its_weights_are_random_and_takes_a_vocabulary(pretrained, tmp_path):
    spm = os.path.join(pretrained, "spm.model")
    pieces = albert_tf.AlbertTokenizer(spm).vocab_size
    with pytest.warns(UserWarning, match=r"'albert_tiny' is an architecture preset.*random parameters.*"
                                         r"pass spm_model_file="):
        blank = albert_tf.AlbertClassifier.from_preset("albert_tiny", num_labels=2, vocab_size=100)
    with pytest.raises(ValueError, match=r"^fit: x is raw text but this AlbertClassifier has no preprocessor.*"
                                         r"spm_model_file="):
        blank.fit(x=["a fine film", "a dull one"], y=[1, 0])
    with pytest.raises(ValueError, match="^predict: x is raw text"):
        blank.predict(["a fine film"])

    with pytest.warns(UserWarning, match="random parameters") as warned:
        classifier = albert_tf.AlbertClassifier.from_preset("albert_tiny", num_labels=2, spm_model_file=spm,
                                                            max_seq_length=16)
    assert "spm_model_file=" not in str(warned[0].message)
    assert classifier.albert_config.vocab_size == pieces  # from the vocabulary
    assert classifier.preprocessor.seq_length == 16 and classifier.preprocessor.vocab_size == pieces
    assert classifier.predict(["a fine film"], verbose=0)["logits"].shape == (1, 2)
    with pytest.warns(UserWarning):
        pretrainer = albert_tf.AlbertPretrainer.from_preset("albert_tiny", spm_model_file=spm)
    assert pretrainer.albert_config.vocab_size == pieces
    with pytest.raises(ValueError, match=rf"holds {pieces} pieces but the model's vocab_size is 999"):
        albert_tf.AlbertClassifier.from_preset("albert_tiny", vocab_size=999, spm_model_file=spm)
    (tmp_path / "vocab.txt").write_text("not a model\n")
    with pytest.raises(ValueError, match="vocab.txt: not a SentencePiece model"):
        albert_tf.AlbertClassifier.from_preset("albert_tiny", spm_model_file=str(tmp_path / "vocab.txt"))


def test_a_preset_name_cannot_reach_outside_the_presets(tmp_path):
    from albert_tf.albert_config import PRESETS_DIR

    (tmp_path / "elsewhere.json").write_text(AlbertConfig.from_preset("albert_tiny").to_json_string())
    outside = os.path.relpath(tmp_path / "elsewhere", PRESETS_DIR)  # "../../tmp/.../elsewhere"
    for name in (outside, "../../x"):
        with pytest.raises(ValueError, match="Unknown preset"):
            AlbertConfig.from_preset(name)
        with pytest.raises(ValueError, match="neither a preset"):
            albert_tf.AlbertClassifier.from_preset(name)


# --- the preprocessor, saving, embeddings --------------------------------------------------------------


def test_the_preprocessor_takes_python_strings_lists_and_pairs(pretrained):
    import tensorflow as tf

    preprocessor = albert_tf.AlbertPreprocessor.from_model_dir(pretrained, seq_length=12)
    texts = ["a good river", "a bad town"]
    batch = preprocessor(texts)
    np.testing.assert_array_equal(batch["input_word_ids"], preprocessor(tf.constant(texts))["input_word_ids"])
    one = preprocessor("a good river")
    assert one["input_word_ids"].shape == (12,)
    np.testing.assert_array_equal(one["input_word_ids"], batch["input_word_ids"][0])
    pairs = preprocessor((texts, ["the town", "the river"]))
    assert pairs["input_word_ids"].shape == (2, 12) and pairs["input_type_ids"].numpy().max(axis=1).tolist() == [1, 1]
    pair = preprocessor(("a good river", "the town"))
    np.testing.assert_array_equal(pair["input_word_ids"], pairs["input_word_ids"][0])
    inputs, labels = preprocessor(texts, [1, 0])
    assert labels.numpy().tolist() == [1, 0]
    with pytest.raises(ValueError, match="sentence pairs are a tuple of two lists"):
        preprocessor([texts, ["the town", "the river"]])
    with pytest.raises(ValueError, match="got 3 parts"):
        preprocessor(("a", "b", "c"))

    # A classifier given pairs of raw text reads both segments (not the first alone).
    classifier = albert_tf.AlbertClassifier.from_preset(pretrained, num_labels=2, max_seq_length=12)
    logits = classifier.predict((texts, ["the town", "the river"]), verbose=0)["logits"]
    np.testing.assert_allclose(logits, classifier.predict(pairs, verbose=0)["logits"], atol=1e-6)


def test_save_to_preset_writes_a_directory_from_preset_loads_whole(pretrained, tmp_path):
    import tensorflow as tf

    from albert_tf.settings import SettingFileExists

    classifier = albert_tf.AlbertClassifier.from_preset(pretrained, num_labels=3, max_seq_length=24)
    head = classifier.get_layer("classifier").kernel
    head.assign(tf.random.normal(head.shape))
    saved = classifier.save_to_preset(tmp_path / "saved")
    assert saved == str(tmp_path / "saved") and (tmp_path / "saved" / "spm.model").is_file()
    again = albert_tf.AlbertClassifier.from_preset(saved)
    assert again.num_labels == 3 and again.preprocessor.seq_length == 24
    assert again.preprocessor.model_proto == classifier.preprocessor.model_proto
    for mine, theirs in zip(again.weights, classifier.weights):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    np.testing.assert_allclose(again.predict(["a good river"], verbose=0)["logits"],
                               classifier.predict(["a good river"], verbose=0)["logits"], atol=1e-6)
    # The same head with another dropout (a training setting, not a weight): still the saved head.
    retuned = albert_tf.AlbertClassifier.from_preset(saved, num_classes=3, dropout=0.3)
    assert retuned.dropout_rate == 0.3
    np.testing.assert_array_equal(retuned.get_layer("classifier").kernel.numpy(), head.numpy())

    with pytest.raises(SettingFileExists, match="pass overwrite"):
        classifier.save_to_preset(saved)
    # What the tools read is recorded at the top, as they record it: no "records no rewrite_quotes" note later.
    metadata = load_model(saved)[1]
    assert {key: metadata[key] for key in ("lower_case", "keep_accents", "rewrite_quotes", "max_seq_length")} == {
        "lower_case": True, "keep_accents": False, "rewrite_quotes": False, "max_seq_length": 24}
    assert "takes_pairs" not in metadata  # never trained on text: not known
    # Trained on pairs, it records so, and a model loaded whole takes the record back.
    classifier.fit(x=(["a good river", "a town"], ["a road", "a bad town"]), y=[1, 0], batch_size=2, verbose=0)
    assert classifier.takes_pairs is True
    classifier.save_to_preset(saved, overwrite=True)
    assert load_model(saved)[1]["takes_pairs"] is True
    assert albert_tf.AlbertClassifier.from_preset(saved).takes_pairs is True
    assert albert_tf.AlbertClassifier.from_preset(saved, num_labels=2).takes_pairs is None  # a new head
    choices = albert_tf.AlbertMultipleChoice(classifier.encoder, num_choices=3)  # no call yet: no head variables
    choices.save_to_preset(saved, overwrite=True)
    reloaded = albert_tf.AlbertMultipleChoice.from_preset(saved, num_choices=3)
    np.testing.assert_array_equal(reloaded.scorer.kernel.numpy(), choices.scorer.kernel.numpy())


def test_save_to_preset_refuses_a_directory_another_tool_wrote_even_with_overwrite(tmp_path):
    """overwrite=True once replaced a SavedModel export, or a fine-tuning run's best/, with the saved model."""
    from albert_tf.file_utils import staged_directory
    from albert_tf.settings import SettingError

    export_dir = tmp_path / "export"
    with staged_directory(str(export_dir)) as staging:
        for entry in ("encoder", "preprocessing", "serving"):
            os.mkdir(os.path.join(staging, entry))
    run_dir = tmp_path / "run"
    with staged_directory(str(run_dir / "best")) as staging:
        open(os.path.join(staging, "albert_tf.json"), "w").close()
    (run_dir / "run_config.json").write_text(json.dumps({"tool": "albert_tf.run_classifier", "outputs": ["best"]}))
    before = sorted(str(path) for path in tmp_path.rglob("*"))
    choices = albert_tf.AlbertMultipleChoice(albert_tf.AlbertEncoder(AlbertConfig.from_preset("albert_tiny",
                                                                                              vocab_size=100)))
    for directory, what in ((export_dir, "a SavedModel export"),
                            (run_dir / "best", "part of a albert_tf.run_classifier run")):
        with pytest.raises(SettingError, match=f"^{directory} holds {what} .*AlbertMultipleChoice.save_to_preset "
                                               "writes into a directory of its own: choose another directory"):
            choices.save_to_preset(directory, overwrite=True)
    assert sorted(str(path) for path in tmp_path.rglob("*")) == before


def test_embedding_a_single_string_gives_one_vector(pretrained):
    embedder = albert_tf.Embedder(pretrained, max_seq_length=32)
    vector = embedder.embed("a single string")
    assert vector.shape == (embedder.opened.model.albert_config.hidden_size,)
    np.testing.assert_allclose(vector, embedder.embed(["a single string", "another"])[0], atol=1e-5)


# --- fill-mask -------------------------------------------------------------------------------------------


def test_mask_filler_answers_with_words_scores_and_the_filled_sentence(pretrained):
    filler = albert_tf.MaskFiller(pretrained)
    text = "The river [MASK] of the [MASK] garden."
    answer = filler(text, top_k=3, max_seq_length=32)
    assert len(answer) == 2 and all(len(candidates) == 3 for candidates in answer)
    raw = filler.fill(text, top_k=3, max_seq_length=32)
    for index, (candidates, (_, pieces)) in enumerate(zip(answer, raw)):
        scores = [c["score"] for c in candidates]
        assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1 + 1e-6
        for candidate, (piece, probability) in zip(candidates, pieces):
            assert filler.tokenizer.id_to_piece(candidate["token"]) == piece and candidate["score"] == probability
            assert candidate["token_str"] == (piece.replace("\u2581", " ").strip() or piece)
            assert "\u2581" not in candidate["token_str"]
            parts = text.split("[MASK]")
            assert candidate["sequence"].count("[MASK]") == 1  # only its own mask is filled
            assert candidate["token_str"] in candidate["sequence"]
            assert candidate["sequence"].startswith(parts[0].rstrip() if index == 0 else parts[0])
    best = filler.best_sequence(text, answer)
    assert "[MASK]" not in best and answer[0][0]["token_str"] in best and answer[1][0]["token_str"] in best
    assert filler([text, "A [MASK]."], top_k=1, max_seq_length=32)[1][0][0]["sequence"].startswith("A")


def test_fill_mask_cli_prints_words_and_the_filled_sentence(pretrained):
    result = tool("fill_mask", f"--model={pretrained}", "--text=The river [MASK] of the garden.", "--top_k=2",
                  "--max_seq_length=32")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("The river ") and "[MASK]" not in lines[0] and "\u2581" not in result.stdout
    assert re.match(r"  \[MASK\] 1: \S+ 0\.\d{3}, \S+ 0\.\d{3}$", lines[1])


# --- errors keep their cause; help is a success -----------------------------------------------------------


def test_every_tool_says_a_library_setting_error_in_flags(tmp_path):
    """The library names a setting as `name`; whatever tool it reaches says `--name`, in one line, status 1."""
    script = tmp_path / "tool.py"
    script.write_text(
        "from albert_tf import cli\n"
        "from albert_tf.settings import SettingError\n"
        "def main(argv):\n"
        "    raise SettingError('<max_seq_length> must be >= 1, got 0; or pass <albert_config> or <from|source>')\n"
        "cli.run(main, lambda: None, uses_tensorflow=False)\n")
    root = os.path.dirname(os.path.dirname(albert_tf.__file__))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": root})
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith(
        "error: --max_seq_length must be >= 1, got 0; or pass --albert_config or --from")
    from albert_tf.settings import SettingError, SettingFileExists, SettingFileNotFound

    assert str(SettingError("<max_seq_length> must be >= 1")) == "max_seq_length must be >= 1"
    # A flag named otherwise than its Python parameter: the parameter in the library's words.
    assert str(SettingError("<from|source_format> and <to|target_format>")) == "source_format and target_format"
    # Missing or existing files stay what callers catch.
    assert isinstance(SettingFileNotFound("x"), FileNotFoundError)
    assert isinstance(SettingFileExists("x"), FileExistsError)


def test_a_layer_raised_error_keeps_its_message_in_one_line(pretrained):
    import keras
    import tensorflow as tf

    from albert_tf.cli import error_line

    class Inner(keras.layers.Layer):
        def call(self, x):
            raise ValueError("Sequence length 128 exceeds max_position_embeddings 64")

    class Outer(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def call(self, x):
            return self.inner(x)

    with pytest.raises(ValueError) as wrapped:
        Outer()(tf.zeros([1, 2]))
    assert str(wrapped.value).startswith("Exception encountered when calling")
    assert error_line(wrapped.value) == "Sequence length 128 exceeds max_position_embeddings 64"
    # Through a tool: the model has 64 positions, the request 128, refused (naming the flag) before the model runs.
    result = tool("fill_mask", f"--model={pretrained}", "--text=a [MASK] b", "--max_seq_length=128")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "albert_tf.fill_mask: error: --max_seq_length must be an integer in [3, 64] (room for [CLS], a token and "
        "[SEP]; at most the model's max_position_embeddings), got 128")


def test_help_exits_0_and_a_bad_flag_1():
    for flag in ("--help", "--helpshort", "-h"):
        assert tool("params", flag).returncode == 0, flag
    assert tool("params", "--no_such_flag").returncode == 1


# --- run_pretraining: the vocabulary from the SentencePiece model; progress whatever the loop ----------------


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_pretraining_data(tmp_path_factory, num_documents=30, shards=1)


def pretraining(data, output_dir, *extra):
    return tool("run_pretraining", f"--input_file={data.prefix}", f"--output_dir={output_dir}",
                f"--spm_model_file={data.spm_model}", "--train_batch_size=8", f"--max_seq_length={SEQ_LENGTH}",
                f"--max_predictions_per_seq={PREDICTIONS}", "--num_warmup_steps=2", "--learning_rate=2e-3",
                "--shuffle_buffer_size=100", *extra)


def test_a_preset_takes_the_vocabulary_size_of_the_sentencepiece_model(data, tmp_path):
    pieces = albert_tf.AlbertTokenizer(str(data.spm_model)).vocab_size
    result = pretraining(data, tmp_path / "a", "--albert_config_file=albert_tiny", "--num_train_steps=2",
                         "--iterations_per_loop=2", "--save_checkpoints_steps=2")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"albert_config=albert_tiny with vocab_size {pieces}, the size of spm_model_file" in result.stdout
    assert json.loads((tmp_path / "a" / "albert_tf.json").read_text())["albert_config"]["vocab_size"] == pieces
    # Without spm_model_file the data's recorded size is taken (the pretraining tests check it); only an
    # explicit vocab_size that contradicts the data is refused.
    refused = tool("run_pretraining", f"--input_file={data.prefix}", f"--output_dir={tmp_path / 'b'}",
                   "--albert_config=albert_tiny", f"--vocab_size={pieces + 1}", f"--max_seq_length={SEQ_LENGTH}",
                   f"--max_predictions_per_seq={PREDICTIONS}", "--num_train_steps=2", "--num_warmup_steps=0")
    assert refused.returncode == 1 and f"pass --vocab_size={pieces}" in refused.stderr.strip().splitlines()[-1]
    explicit = tool("run_pretraining", f"--input_file={data.prefix}", f"--output_dir={tmp_path / 'c'}",
                    "--albert_config=albert_tiny", f"--vocab_size={pieces}", f"--max_seq_length={SEQ_LENGTH}",
                    f"--max_predictions_per_seq={PREDICTIONS}", "--num_train_steps=2", "--train_batch_size=8",
                    "--iterations_per_loop=2", "--num_warmup_steps=0")
    assert explicit.returncode == 0, explicit.stderr[-3000:]


def test_progress_comes_every_few_seconds_whatever_iterations_per_loop_is(data, tmp_path):
    result = pretraining(data, tmp_path, f"--albert_config={data.config_file}", "--num_train_steps=400",
                         "--iterations_per_loop=1000", "--save_checkpoints_steps=1000", "--max_seconds_per_loop=1")
    assert result.returncode == 0, result.stderr[-3000:]
    progress = [line for line in result.stdout.splitlines() if line.startswith("step ")]
    assert len(progress) >= 3, result.stdout  # one loop of 400 steps would print once
    assert progress[-1].startswith("step 400/400")


def test_a_tool_missing_its_extra_says_which_in_one_line(tmp_path):
    """A plain install without [plots] or [beam] (the packaging test installs [plots]): the module is hidden."""
    for module, entry, extra in (("matplotlib", "from albert_tf.analyze import console_main as run", "plots"),
                                 ("apache_beam", "from albert_tf_pipelines.console import "
                                                 "beam_create_pretraining_data as run", "beam")):
        code = f"import sys; sys.modules[{module!r}] = None; sys.argv = ['tool', '--checkpoint=x']; {entry}; run()"
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=120)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
        assert f"pip install 'albert_tf[{extra}]'" in result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_the_library_hides_tensorflows_start_up_lines_as_the_tools_do(tmp_path):
    """`import albert_tf` and a first model: no C++ start-up or CUDA-probe lines, unless the user asks for them."""
    code = ("import numpy as np, albert_tf\n"
            "encoder = albert_tf.AlbertEncoder(albert_tf.AlbertConfig.from_preset('albert_tiny'))\n"
            "inputs = {name: np.ones((1, 4), 'int32') for name in ('input_word_ids', 'input_mask', 'input_type_ids')}\n"
            "print(encoder(inputs)['pooled_output'].shape)\n")
    environment = {name: value for name, value in os.environ.items() if name != "TF_CPP_MIN_LOG_LEVEL"}
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                           env=environment)
    assert quiet.returncode == 0 and quiet.stdout.strip() == "(1, 128)", quiet.stderr
    assert quiet.stderr == ""
    asked = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                           env={**environment, "TF_CPP_MIN_LOG_LEVEL": "0"})
    assert asked.returncode == 0 and "I0000" in asked.stderr  # what the user asked to see still shows
