"""LiteRT export: raw text in on the device, the Python tokenizer's ids, the float model's answers, only ops a
LiteRT runtime has, and refusals that write nothing."""

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.export_lib import litert_export, litert_module
from albert_tf.export_lib.litert_export import LiteRTExportError, audit, export_litert
from albert_tf.models.lite_model import LiteModel
from albert_tf.models.model_io import write_model_dir
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from albert_tf.text.packing import pack_batch
from test_tokenization import unicode_fuzz
from text_fixtures import SPECIAL_LINES, random_sentence, train_small_spm

SEQ = 32
LABELS = ["negative", "neutral", "positive"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A pretrainer, a sentence-pair classifier and an SST-2 (single-sentence) classifier, as model directories."""
    import keras

    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.models.albert_pretrainer import AlbertPretrainer

    spm = train_small_spm(tmp_path_factory)
    tokenizer = AlbertTokenizer(str(spm))
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=tokenizer.vocab_size)
    keras.utils.set_random_seed(11)
    pretrainer = AlbertPretrainer(config)
    pairs = AlbertClassifier(pretrainer.encoder, len(LABELS))
    single = AlbertClassifier(pretrainer.encoder, 2)
    directory = tmp_path_factory.mktemp("litert_models")
    files = {"spm.model": str(spm)}
    return {
        "tokenizer": tokenizer, "pretrainer": pretrainer, "pairs": pairs, "single": single, "directory": directory,
        "pretrainer_dir": write_model_dir(pretrainer, str(directory / "pretrainer"), files=files,
                                          max_seq_length=SEQ, rewrite_quotes=False),
        "pairs_dir": write_model_dir(pairs, str(directory / "pairs"), files=files, label_names=LABELS,
                                     is_regression=False, max_seq_length=SEQ, rewrite_quotes=False),
        "single_dir": write_model_dir(single, str(directory / "sst2"), files=files, is_regression=False,
                                      task_name="sst-2", max_seq_length=SEQ, rewrite_quotes=False),
    }


def texts(count, seed):
    rng = random.Random(seed)
    return SPECIAL_LINES + ["", "   ", "!!!", "1,000,000, 2,5"] + [random_sentence(rng, 1, 30) for _ in range(count)]


@pytest.fixture(scope="module")
def pairs_float32(models, tmp_path_factory):
    output = tmp_path_factory.mktemp("lite") / "pairs_float32"
    result = export_litert(models["pairs_dir"], str(output), quantization="float32")
    return {"dir": output, **result}


def test_float32_text_model_answers_as_the_keras_model_on_raw_text(models, pairs_float32):
    lite = LiteModel(pairs_float32["dir"])
    assert lite.input_names == ["text", "text_b"] and lite.takes_pairs
    first, second = texts(30, seed=1), texts(30, seed=2)[::-1]
    second[::3] = [""] * len(second[::3])  # some requests without a second text
    outputs = lite(first, second)
    inputs = pack_batch(models["tokenizer"], first, second, SEQ)
    expected = np.asarray(models["pairs"](inputs, training=False)["logits"])
    assert np.abs(outputs["logits"] - expected).max() <= 1e-4
    np.testing.assert_allclose(outputs["probabilities"].sum(-1), 1.0, atol=1e-5)
    assert outputs["label"] == [LABELS[i] for i in expected.argmax(-1)]
    record = json.loads((pairs_float32["dir"] / "albert_tf.json").read_text())["litert"]
    assert record["quantization"] == "float32" and record["files"]["model.tflite"]["check_error"] <= 1e-4
    assert sorted(os.listdir(pairs_float32["dir"])) == [".albert_tf_manifest.json", "albert_tf.json",
                                                        "encoder_ids.tflite", "model.tflite", "spm.model"]


def test_tflite_tokenizer_and_packing_give_the_python_ids(models, tmp_path):
    """The TFLite kernel of the tokenizer and the one-request packing, converted alone: the ids of the Python
    tokenizer and packing on sentences, the shared special lines and a seeded Unicode fuzz set."""
    from albert_tf.export_lib.litert_export import packing_model
    from albert_tf.models.lite_model import lite_interpreter
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    with open(os.path.join(models["pairs_dir"], "spm.model"), "rb") as f:
        tokenizer = TFAlbertTokenizer(f.read())
    runner = lite_interpreter(packing_model(tokenizer, SEQ)).get_signature_runner()
    first = texts(60, seed=3) + unicode_fuzz(300, seed=4)
    second = [("" if i % 3 == 0 else other) for i, other in enumerate(unicode_fuzz(len(first), seed=5))]
    expected = pack_batch(models["tokenizer"], first, second, SEQ)
    for row, (text, text_b) in enumerate(zip(first, second)):
        out = runner(text=np.array([text.encode()], dtype=object), text_b=np.array([text_b.encode()], dtype=object))
        length = int(expected["input_mask"][row].sum())
        for name in ("input_word_ids", "input_type_ids", "input_mask"):
            assert out[name][0].tolist() == expected[name][row][:length].tolist(), (name, text, text_b)


def test_ids_file_holds_builtin_ops_only_and_answers_as_the_text_file(models, pairs_float32):
    from albert_tf.models.lite_model import lite_interpreter

    directory = pairs_float32["dir"]
    record = json.loads((directory / "albert_tf.json").read_text())["litert"]["files"]
    assert record["model.tflite"]["custom_ops"] == ["TFText>FastSentencepieceTokenize"]
    ids_blob = (directory / "encoder_ids.tflite").read_bytes()
    builtin, custom = litert_export.model_ops(ids_blob)
    assert not custom and "FULLY_CONNECTED" in builtin
    assert not builtin & litert_export.VARIABLE_OPS
    runner = lite_interpreter(ids_blob).get_signature_runner("ids")
    sample = texts(5, seed=6)
    inputs = pack_batch(models["tokenizer"], sample, None, SEQ)
    lite = LiteModel(directory)(sample)
    for row in range(len(sample)):
        length = int(inputs["input_mask"][row].sum())
        out = runner(**{name: np.asarray(value[row:row + 1, :length], np.int32) for name, value in inputs.items()})
        np.testing.assert_allclose(out["logits"][0], lite["logits"][row], atol=1e-6)


def test_audit_refuses_resource_variables_and_flex_ops(models):
    """A Keras model inside a plain tf.Module converts to VAR_HANDLE ops (LiteRT runs it on zeros, silently),
    a string op outside the built-ins to a Flex op: both are refused, naming the ops."""
    import tensorflow as tf

    classifier = models["single"]

    class Unfrozen(tf.Module):
        def __init__(self):
            super().__init__()
            self.model = classifier

        @tf.function(input_signature=[tf.TensorSpec([1, 8], tf.int32)] * 3)
        def ids(self, input_word_ids, input_mask, input_type_ids):
            return classifier.head_outputs({"input_word_ids": input_word_ids, "input_mask": input_mask,
                                            "input_type_ids": input_type_ids}, training=False)

    module = Unfrozen()
    blob = tf.lite.TFLiteConverter.from_concrete_functions([module.ids.get_concrete_function()], module).convert()
    with pytest.raises(LiteRTExportError, match="resource-variable ops .*VAR_HANDLE.*nothing was written"):
        audit(blob, "x.tflite", set())

    class Length(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1], tf.string)])
        def length(self, text):
            return tf.strings.length(text)

    length = Length()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([length.length.get_concrete_function()], length)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS]
    with pytest.raises(LiteRTExportError, match="Flex ops FlexStringLength"):
        audit(converter.convert(), "y.tflite", set())


def test_default_dynamic_int8_single_text_classifier_padded_and_bad_input(models, tmp_path):
    output = tmp_path / "sst2"
    result = export_litert(models["single_dir"], str(output), pad_to=SEQ)
    record = result["litert"]
    assert record["quantization"] == "dynamic_int8" and record["pad_to"] == SEQ
    lite = LiteModel(output)
    assert lite.input_names == ["text"] and not lite.takes_pairs
    assert lite.label_names == ["0", "1"]
    sample = texts(40, seed=7)
    outputs = lite(sample)
    inputs = pack_batch(models["tokenizer"], sample, None, SEQ)
    expected = np.asarray(models["single"](inputs, training=False)["logits"])
    scale = np.abs(expected).max()
    assert np.abs(outputs["logits"] - expected).max() <= 0.25 * scale
    # One string is one text; the ids file is padded to the static length.
    assert lite("one text")["logits"].shape == (1, 2)
    from albert_tf.models.lite_model import lite_interpreter

    ids_interpreter = lite_interpreter(model_path=str(output / "encoder_ids.tflite"))
    assert [list(d["shape"]) for d in ids_interpreter.get_input_details()] == [[1, SEQ]] * 3
    # What the SavedModel answers, the file answers too: empty text, no letters, 1 MB of text (truncated).
    for text in ["", "!!! ??? ...", "word " * 200_000, "\u200b\u200b"]:
        answer = lite([text])
        assert answer["logits"].shape == (1, 2) and np.isfinite(answer["logits"]).all()
    # Bytes that are not UTF-8 reach the interpreter only from other languages' clients: an answer, no crash.
    raw = lite.interpreter.get_signature_runner("text")(text=np.array([b"\xff\xfe caf\xe9 \x80"], dtype=object))
    assert np.isfinite(raw["logits"]).all()
    with pytest.raises(ValueError, match="takes single texts"):
        lite(["a"], ["b"])
    with pytest.raises(TypeError, match="must be strings"):
        lite([b"bytes"])
    with pytest.raises(ValueError, match="no texts"):
        lite([])


def test_float16_encoder_and_both_interpreters(models, tmp_path):
    output = tmp_path / "encoder"
    export_litert(models["pretrainer_dir"], str(output), quantization="float16")
    sample = texts(10, seed=8)
    inputs = pack_batch(models["tokenizer"], sample, None, SEQ)
    expected = np.asarray(models["pretrainer"].encoder(inputs, training=False)["pooled_output"])
    litert = LiteModel(output, runtime="litert")(sample)
    assert set(litert) == {"pooled_output"}
    assert np.abs(litert["pooled_output"] - expected).max() <= 0.01 * np.abs(expected).max()
    tensorflow = LiteModel(output / "model.tflite", runtime="tensorflow")(sample)
    np.testing.assert_allclose(tensorflow["pooled_output"], litert["pooled_output"], atol=1e-5)
    assert (output / "model.tflite").stat().st_size < 0.75 * (
        export_litert(models["pretrainer_dir"], str(tmp_path / "f32"), quantization="float32")["litert"]["files"]
        ["model.tflite"]["bytes"])


@pytest.mark.slow
def test_full_int8_is_written_only_through_its_accuracy_gate(models, tmp_path, monkeypatch):
    calibration = tmp_path / "calibration.txt"
    rng = random.Random(9)
    calibration.write_text("\n".join(random_sentence(rng, 3, 20) for _ in range(220)) + "\n", encoding="utf-8")
    # Gate out of reach: refused with the measured agreement, nothing written.
    monkeypatch.setattr(litert_module, "INT8_MIN_LABEL_AGREEMENT", 1.01)
    with pytest.raises(LiteRTExportError, match=r"fails its accuracy gate .*220 texts.*label agreement with the "
                                                r"float model \d+\.\d+% \(needs 101\.0%\)"):
        export_litert(models["single_dir"], str(tmp_path / "refused"), quantization="int8",
                      calibration_file=str(calibration))
    assert not (tmp_path / "refused").exists()
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".refused")]
    # Within reach: written, with what was measured.
    monkeypatch.setattr(litert_module, "INT8_MIN_LABEL_AGREEMENT", 0.0)
    result = export_litert(models["single_dir"], str(tmp_path / "int8"), quantization="int8",
                           calibration_file=str(calibration))
    gate = result["litert"]["int8_gate"]
    assert gate["passed"] and gate["calibration_texts"] == 220 and "label agreement" in gate["measured"]
    assert LiteModel(tmp_path / "int8")(["the river"])["logits"].shape == (1, 2)
    with pytest.raises(ValueError, match="needs calibration_file"):
        export_litert(models["single_dir"], str(tmp_path / "x"), quantization="int8")
    short = tmp_path / "short.txt"
    short.write_text("one\ntwo\n")
    with pytest.raises(ValueError, match="2 texts; full int8 needs at least 200"):
        export_litert(models["single_dir"], str(tmp_path / "x"), quantization="int8", calibration_file=str(short))


@pytest.mark.slow
def test_cli_writes_litert_and_refuses_what_does_not_apply(models, tmp_path):
    base = [sys.executable, "-m", "albert_tf.export", f"--checkpoint={models['pairs_dir']}"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}

    def run(*args):
        return subprocess.run(base + list(args), capture_output=True, text=True, env=env)

    result = run(f"--output_dir={tmp_path / 'x'}", "--format=litert", "--serving_xla")
    assert result.returncode == 1 and "--serving_xla: only for --format=savedmodel" in result.stderr
    result = run(f"--output_dir={tmp_path / 'x'}", "--pad_to=16")
    assert result.returncode == 1 and "--pad_to: only for --format=litert" in result.stderr
    result = run(f"--output_dir={tmp_path / 'x'}", "--format=litert", "--pad_to=1000")
    assert result.returncode == 1 and "--pad_to=1000: must be an integer from 3 to max_seq_length (32)" in result.stderr
    result = run(f"--output_dir={tmp_path / 'x'}", "--format=litert", "--quantization=int8")
    assert result.returncode == 1 and "--quantization=int8 (weights and activations) needs --calibration_file" in (
        result.stderr)
    assert not (tmp_path / "x").exists()
    result = run(f"--checkpoint={models['directory'] / 'nowhere'}", f"--output_dir={tmp_path / 'x'}",
                 "--format=litert")
    assert result.returncode == 1 and "error:" in result.stderr
    result = run(f"--output_dir={tmp_path / 'lite'}", "--format=litert")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "as LiteRT (dynamic_int8)" in result.stdout and "text, text_b -> logits, probabilities" in result.stdout
    assert LiteModel(tmp_path / "lite")(["a"], ["b"])["label"][0] in LABELS


def test_span_labelers_are_refused_with_the_route_that_serves_them(models, tmp_path):
    from albert_tf.models.albert_span_labeler import AlbertSpanLabeler

    labeler = write_model_dir(AlbertSpanLabeler(models["pretrainer"].encoder), str(tmp_path / "span"),
                              files={"spm.model": os.path.join(models["pairs_dir"], "spm.model")})
    with pytest.raises(ValueError, match="'span_labeler' model; this export supports encoder, pretrainer, classifier"):
        export_litert(labeler, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
