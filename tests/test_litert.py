"""LiteRT export: raw text in on the device, the Python tokenizer's ids, the float model's answers, only ops a
LiteRT runtime has, and refusals that write nothing."""

import json
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.export_lib import litert_export, litert_module
from albert_tf.export_lib.litert_export import LiteRTExportError, audit, export_litert
from albert_tf.file_utils import make_owned_staging
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


def test_text_file_answers_a_batch_row_by_row(models, pairs_float32):
    """N texts in one call to the bare interpreter: N rows, each the answer to its text alone (the file once
    answered one row, for the texts joined with spaces); a text_b per text or the call fails."""
    from albert_tf.models.lite_model import lite_interpreter

    runner = lite_interpreter(model_path=str(pairs_float32["dir"] / "model.tflite")).get_signature_runner("text")
    first, second = texts(8, seed=10), texts(8, seed=11)
    second[::2] = [""] * len(second[::2])
    batch = runner(text=np.array([text.encode() for text in first], dtype=object),
                   text_b=np.array([text.encode() for text in second], dtype=object))
    alone = LiteModel(pairs_float32["dir"])(first, second)
    assert batch["logits"].shape == (len(first), len(LABELS))
    np.testing.assert_allclose(batch["logits"], alone["logits"], atol=1e-5)
    with pytest.raises((RuntimeError, ValueError)):
        runner(text=np.array([b"a", b"b", b"c"], dtype=object), text_b=np.array([b"d"], dtype=object))


def test_the_export_refuses_a_file_whose_batch_rows_are_not_its_single_answers():
    """What the export checks before writing: a file that answers a batch with one row for all (as files did)
    is refused."""
    answers = {"logits": np.array([[0.5, -0.5], [1.5, 0.5]])}

    def one_row_for_all(text):
        return {"logits": answers["logits"][:1]}

    with pytest.raises(LiteRTExportError, match="model.tflite answers a batch of 2 texts .* away from its answers to "
                                                "each alone"):
        litert_export.check_batch(one_row_for_all, [("a", ""), ("b", "")], answers, False, "dynamic_int8")
    litert_export.check_batch(lambda text: answers, [("a", ""), ("b", "")], answers, False, "float32")


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
    # A batch of padded rows: each row's answer.
    batch = runner(**{name: np.asarray(value, np.int32) for name, value in inputs.items()})
    np.testing.assert_allclose(batch["logits"], lite["logits"], atol=1e-5)


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


def run_documented_app_lines(export_dir, tmp_path, monkeypatch):
    """Runs the Python block of docs/pipeline.md's "What an app links" as written, with exports/sst2_lite being
    `export_dir`; returns its variables."""
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "pipeline.md").read_text()
    section = text[text.index("**What an app links.**"):]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    assert "InterpreterWithCustomOps" in block
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exports").mkdir()
    (tmp_path / "exports" / "sst2_lite").symlink_to(export_dir)
    namespace = {}
    exec(compile(block, "docs/pipeline.md", "exec"), namespace)
    return namespace


def test_default_dynamic_int8_single_text_classifier_padded_and_bad_input(models, tmp_path, monkeypatch):
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
    # docs/pipeline.md's "What an app links" runs as written (a batch of two, padded to the static length).
    namespace = run_documented_app_lines(output, tmp_path, monkeypatch)
    np.testing.assert_allclose(namespace["outputs"]["probabilities"],
                               lite(["A delight from start to finish.", "A bore."])["probabilities"], atol=1e-5)
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
    with pytest.raises(ValueError, match="2 distinct texts; full int8 needs at least 200"):
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


def test_a_single_text_classifier_exports_single_text_after_save_to_preset_and_a_hugging_face_round_trip(
        models, tmp_path):
    """Whether a classifier takes pairs is recorded with it (save_to_preset, the Hugging Face config.json both
    ways), not guessed from a GLUE task name: a single-text model without one exports with `text` alone."""
    from albert_tf.checkpoints.conversion import convert
    from albert_tf.models.albert_classifier import AlbertClassifier

    classifier = AlbertClassifier(models["pretrainer"].encoder, 2, takes_pairs=False)
    saved = classifier.save_to_preset(tmp_path / "saved")
    assert json.loads((tmp_path / "saved" / "albert_tf.json").read_text())["takes_pairs"] is False
    spm = os.path.join(models["pairs_dir"], "spm.model")
    convert("albert_tf", "huggingface", saved, str(tmp_path / "hf"), spm_model_file=spm)
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["takes_pairs"] is False
    convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "back"))
    assert json.loads((tmp_path / "back" / "albert_tf.json").read_text())["takes_pairs"] is False
    result = export_litert(str(tmp_path / "back"), str(tmp_path / "lite"))
    assert result["litert"]["files"]["model.tflite"]["inputs"] == ["text"]


def test_takes_pairs_is_read_from_the_record_and_old_records_keep_the_glue_rule(tmp_path):
    from albert_tf.models.model_dir_format import read_metadata, recorded_takes_pairs

    assert recorded_takes_pairs({"takes_pairs": False, "task_name": "mrpc"}) is False
    assert recorded_takes_pairs({"takes_pairs": True, "task_name": "sst-2"}) is True
    assert recorded_takes_pairs({"task_name": "SST-2"}) is False
    assert recorded_takes_pairs({"task_name": "cola"}) is False
    assert recorded_takes_pairs({"task_name": "mrpc"}) is True and recorded_takes_pairs({}) is True
    record = {"format": "albert_tf", "model": "classifier", "albert_config": AlbertConfig.from_preset(
        "albert_tiny").to_dict(), "takes_pairs": "no"}
    (tmp_path / "albert_tf.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match='albert_tf.json: "takes_pairs" must be true or false'):
        read_metadata(str(tmp_path))


def test_a_failed_export_leaves_no_copy_of_the_weights_and_removes_a_killed_ones(models, tmp_path, monkeypatch):
    """The converter's SavedModel (a copy of the weights) in $TMPDIR goes when the export fails, and a killed
    export's (its process gone) goes at the next export; a live export's stays."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    live = make_owned_staging(str(scratch), "albert_litert-")  # this process's: alive
    killed = scratch / "albert_litert-killed"
    killed.mkdir()
    (killed / "owner").write_text(json.dumps({"pid": os.getpid(), "create_time": 0.0}))  # a pid reused since

    def failing_converter(saved_model_dir, *args):
        assert os.path.isdir(saved_model_dir)
        raise RuntimeError("converter failed")

    monkeypatch.setattr(litert_export, "converter", failing_converter)
    with pytest.raises(RuntimeError, match="converter failed"):
        export_litert(models["single_dir"], str(tmp_path / "out"))
    # (Run first in a process, the export has TensorFlow's autograph leave its generated modules in $TMPDIR too.)
    assert [name for name in os.listdir(scratch) if not name.startswith("__autograph_generated_file")] == [
        os.path.basename(live)]


def test_a_full_disk_during_the_export_fails_in_one_line_naming_the_path(models, tmp_path, monkeypatch):
    """TensorFlow reports a full disk while the converter's copy of the model is written to $TMPDIR as an
    OutOfRangeError with pages of traceback: the export says it in one line (an OSError, which albert-export prints
    as its error) naming the path and the fix, and leaves neither the half-written copy nor an output behind."""
    import keras
    import tensorflow as tf

    from albert_tf.cli import error_line

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))

    def full_disk(archive, path, *args, **kwargs):
        data = pathlib.Path(path) / "variables" / "variables.data-00000-of-00001"
        data.parent.mkdir(parents=True)
        data.write_bytes(b"\0" * 100)  # what a write cut short leaves
        raise tf.errors.OutOfRangeError(None, None, f"{data}; No space left on device")

    # The writer of the converter's copy (keras.export.ExportArchive() makes an instance of the backend's class).
    monkeypatch.setattr(type(keras.export.ExportArchive()), "write_out", full_disk)
    with pytest.raises(OSError) as failed:
        export_litert(models["single_dir"], str(tmp_path / "out"))
    line = error_line(failed.value)
    assert re.fullmatch(rf"could not write {re.escape(str(scratch))}/albert_litert-[^/]+/saved_model, the converter's "
                        rf"copy of the model \(.*No space left on device\): free space in {re.escape(str(scratch))}, "
                        r"or set TMPDIR to a directory with room, then rerun; nothing was written to the output", line)
    assert str(failed.value) == line and failed.value.__cause__ is None
    # (TensorFlow's autograph leaves its generated modules in $TMPDIR too: not the export's.)
    assert [name for name in os.listdir(scratch) if name.startswith(litert_export.WORK_DIRECTORY_PREFIX)] == []
    assert not (tmp_path / "out").exists() and os.listdir(tmp_path) == ["tmp"]


def test_sigterm_during_the_conversion_removes_its_copy_of_the_weights(tmp_path, monkeypatch):
    """SIGTERM (a scheduler's stop, `kill`) ends the export with status 143 through its clean-up, where it used to
    end the process at once and leave the weights in $TMPDIR."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        pytest.skip("a SIGTERM handler is installed already")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(SystemExit) as stopped:
        with litert_export.work_directory() as work:
            (pathlib.Path(work) / "saved_model").mkdir()
            os.kill(os.getpid(), signal.SIGTERM)
    assert stopped.value.code == 143 and os.listdir(tmp_path) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_calibration_file_that_is_not_texts_is_refused_naming_the_line(tmp_path):
    from albert_tf.export_lib.calibration_texts import read_calibration_texts

    binary = tmp_path / "binary"
    binary.write_bytes("a fine text\n".encode() + bytes(range(128, 256)) + b"\n")
    with pytest.raises(ValueError, match=f"calibration_file={binary}: line 2 is not UTF-8 text"):
        read_calibration_texts(str(binary), pairs=False)
    nul = tmp_path / "nul"
    nul.write_bytes(b"\0\n" * 300)
    with pytest.raises(ValueError, match=f"calibration_file={nul}: line 1 holds a NUL character"):
        read_calibration_texts(str(nul), pairs=False)
    copies = tmp_path / "copies"
    copies.write_text("the same text\n" * 300 + "another\n")
    with pytest.raises(ValueError, match="2 distinct texts \\(299 more are copies\\); full int8 needs at least 200"):
        read_calibration_texts(str(copies), pairs=False)
    rng = random.Random(12)
    good = tmp_path / "good"
    good.write_text("".join(f"{random_sentence(rng, 3, 12)} {i}\t{i}\r\n" for i in range(200)), encoding="utf-8")
    requests = read_calibration_texts(str(good), pairs=True)
    assert len(requests) == 200 and requests[7][1] == "7"


def test_lite_model_checks_the_record_beside_the_file_and_names_it(pairs_float32, tmp_path):
    shutil.copy(pairs_float32["dir"] / "model.tflite", tmp_path / "model.tflite")
    record = json.loads((pairs_float32["dir"] / "albert_tf.json").read_text())
    (tmp_path / "albert_tf.json").write_text(json.dumps(record)[:-5])
    with pytest.raises(ValueError, match=f"{tmp_path / 'albert_tf.json'}: not valid JSON"):
        LiteModel(tmp_path / "model.tflite")
    (tmp_path / "albert_tf.json").write_text(json.dumps({**record, "label_names": ["only"]}))
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'albert_tf.json'}: records 1 label names for the "
                                                   f"3 logits of {tmp_path / 'model.tflite'}")):
        LiteModel(tmp_path / "model.tflite")
    (tmp_path / "albert_tf.json").write_text(json.dumps({**record, "label_names": None, "num_labels": 2}))
    with pytest.raises(ValueError, match="records 2 label names"):
        LiteModel(tmp_path / "model.tflite")


def test_a_pair_classifier_called_on_single_texts_says_so_once(pairs_float32, tmp_path):
    """A classifier whose record says it was fine-tuned on pairs still answers single texts (text_b ""), but warns
    once that its labels can differ from the pair call's and names the call to make; one whose record says
    nothing (this fixture's) or a pair call stays silent."""
    import warnings

    for name in ("model.tflite", "spm.model"):
        shutil.copy(pairs_float32["dir"] / name, tmp_path / name)
    record = json.loads((pairs_float32["dir"] / "albert_tf.json").read_text())
    assert "takes_pairs" not in record
    (tmp_path / "albert_tf.json").write_text(json.dumps({**record, "takes_pairs": True}))
    lite = LiteModel(tmp_path)
    with pytest.warns(UserWarning, match=r"fine-tuned on text pairs \(its albert_tf.json records takes_pairs\) and "
                                         r"is called on single texts.*pass each text's second text, \"\" where it "
                                         r"has none: LiteModel\(path\)\(texts, texts_b\)$"):
        alone = lite(["a text"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = lite(["a text"])  # once per model
        np.testing.assert_array_equal(lite(["a text"], [""])["logits"], alone["logits"])
        LiteModel(pairs_float32["dir"])(["a text"])
        LiteModel(tmp_path)(["a text"], ["its second text"])
    np.testing.assert_array_equal(again["logits"], alone["logits"])


def test_the_exports_python_hint_shows_the_call_the_model_was_trained_for():
    """albert-export's closing line shows a pair classifier called with its second texts, a span labeler with its
    contexts, and every other model on texts alone."""
    from albert_tf.export import python_call_hint

    pairs = python_call_hint({"model": "classifier", "takes_pairs": True}, "albert_tf.LiteModel('x')")
    assert pairs.startswith("`albert_tf.LiteModel('x')(['a text'], ['its second text'])` answers pairs")
    assert "(\"\" where it has none)" in pairs
    for record in ({"model": "classifier", "takes_pairs": False}, {"model": "classifier"}, {"model": "encoder"},
                   {"model": "token_classifier"}):
        assert python_call_hint(record, "m").startswith("`m(['a text'])` answers")
    assert python_call_hint({"model": "span_labeler"}, "m").startswith("`m(['a question'], ['its context'])`")


def test_lite_model_batches_texts_of_similar_length_and_answers_in_their_order(models, pairs_float32, tmp_path,
                                                                              monkeypatch):
    """max_batch_tokens: fewer interpreter calls, each within the budget, the same answers in the texts' order;
    the rows counted as the file packs them."""
    lite = LiteModel(pairs_float32["dir"])
    first, second = texts(20, seed=3), texts(20, seed=4)[::-1]
    second[::3] = [""] * len(second[::3])
    alone = lite(first, second)
    lengths = lite.request_lengths(first, second)
    assert lengths == pack_batch(models["tokenizer"], first, second, SEQ)["input_mask"].sum(-1).tolist()
    calls, runner = [], lite._runner

    def counted(**inputs):
        calls.append([int(lengths[first.index(text.decode())]) for text in inputs["text"]])
        return runner(**inputs)

    monkeypatch.setattr(lite, "_runner", counted)
    budget = 3 * SEQ
    batched = lite(first, second, max_batch_tokens=budget)
    assert sum(len(call) for call in calls) == len(first) and len(calls) < len(first) / 2
    assert all(len(call) == 1 or len(call) * max(call) <= budget for call in calls)
    np.testing.assert_allclose(batched["logits"], alone["logits"], atol=1e-5)
    assert batched["label"] == alone["label"]

    from albert_tf.models.lite_model import length_groups, run_batches

    assert length_groups([5, 30, 6, 31, 7], 20) == [[0, 2], [4], [1], [3]]  # a request over the budget goes alone
    for bad in (0, -3, 2.5, True, "512"):
        with pytest.raises(ValueError, match="max_batch_tokens"):
            lite(first[:2], second[:2], max_batch_tokens=bad)
    # A file exported before batches worked answers one row for a batch: refused, not misread.
    with pytest.raises(ValueError, match="answers a batch of 2 texts with \\[1\\] rows: it was exported before"):
        run_batches(lambda **inputs: {"logits": np.zeros((1, 3))}, ["a", "b"], None, [[0, 1]])
    # A bare .tflite without the export's vocabulary beside it cannot count pieces.
    shutil.copy(pairs_float32["dir"] / "model.tflite", tmp_path / "model.tflite")
    with pytest.raises(ValueError, match="max_batch_tokens counts each text's pieces"):
        LiteModel(tmp_path / "model.tflite")(["a"], [""], max_batch_tokens=64)


def test_a_python_export_onto_its_own_checkpoint_is_refused_and_leaves_it(tmp_path):
    """Only the command line used to check: export_litert(X, X, overwrite=True) from Python left only the .tflite
    files."""
    checkpoint = tmp_path / "best"
    checkpoint.mkdir()
    (checkpoint / "albert_tf.json").write_text("{}")
    for output, relation in ((checkpoint, "is"), (checkpoint / "lite", "lies inside")):
        with pytest.raises(ValueError, match=f"^output_dir={output} {relation} checkpoint={checkpoint}, which this "
                                             "run reads"):
            export_litert(str(checkpoint), str(output), overwrite=True)
    assert os.listdir(checkpoint) == ["albert_tf.json"] and (checkpoint / "albert_tf.json").read_text() == "{}"
