"""Casing and sequence length travel with a model: recorded from the data onward, the default of every tool
that reads the model, and a contradicting setting refused (or warned about) with the reason."""

import json
import os
import random
import subprocess
import sys

import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.models.mask_filler import MaskFiller
from albert_tf.models.model_dir_format import read_metadata
from albert_tf.models.model_io import write_model_dir
from albert_tf.models.preprocessing_contract import resolve_preprocessing
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from pretraining_fixtures import PREDICTIONS, SEQ_LENGTH, make_pretraining_data
from test_glue import write_task
from text_fixtures import train_small_spm

CONFIG = {"albert_config": {"max_position_embeddings": 64}}


def test_recorded_settings_are_the_defaults_and_contradictions_are_named():
    assert resolve_preprocessing(CONFIG) == resolve_preprocessing(CONFIG, True, 64)  # nothing recorded: old defaults
    recorded = {**CONFIG, "lower_case": False, "max_seq_length": 32}
    resolved = resolve_preprocessing(recorded, default_max_seq_length=128)
    assert (resolved.lower_case, resolved.max_seq_length, resolved.warnings) == (False, 32, ())
    with pytest.raises(ValueError, match=r"^lower_case=True contradicts m, trained on cased .*pass force$") as refused:
        resolve_preprocessing(recorded, lower_case=True, source="m")
    assert str(refused.value.for_flags()).startswith("--do_lower_case=True contradicts m")  # as the tools say it
    forced = resolve_preprocessing(recorded, lower_case=True, force=True)
    assert forced.lower_case and forced.warnings[0].startswith("forced: lowercasing the input")
    longer = resolve_preprocessing(recorded, max_seq_length=48)
    assert longer.max_seq_length == 48 and "positions 32-47 were never trained" in longer.warnings[0]
    with pytest.raises(ValueError, match="^max_seq_length=65 exceeds the max_position_embeddings"):
        resolve_preprocessing(recorded, max_seq_length=65)


def test_the_quote_rule_is_the_recorded_one_and_the_originals_where_none_is(capsys):
    for recorded in (False, True):
        metadata = {**CONFIG, "rewrite_quotes": recorded}
        assert resolve_preprocessing(metadata).rewrite_quotes is recorded
        with pytest.raises(ValueError, match=f"^rewrite_quotes={not recorded} contradicts m, trained on text with "
                           f".*records rewrite_quotes={recorded}.*pass force$"):
            resolve_preprocessing(metadata, rewrite_quotes=not recorded, source="m")
        forced = resolve_preprocessing(metadata, rewrite_quotes=not recorded, force=True)
        assert forced.rewrite_quotes is (not recorded) and forced.warnings[0].startswith("forced: ")
    assert capsys.readouterr().err == ""
    # Nothing recorded: the original's rule (no rewrite), said once for that source, not at every call.
    for _ in range(3):
        assert resolve_preprocessing(CONFIG, source="old_model_dir").rewrite_quotes is False
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("Note: old_model_dir records no rewrite_quotes")
    assert "the original's rule, `` and '' kept" in said[0]
    # An explicit setting where nothing is recorded is taken as it is, silently.
    assert resolve_preprocessing(CONFIG, rewrite_quotes=True, source="another_dir").rewrite_quotes is True
    assert capsys.readouterr().err == ""


def test_a_directory_that_records_no_quote_rule_keeps_the_quotes_and_says_so(tmp_path_factory, capsys):
    from albert_tf.models.inference_model import open_for_inference
    from albert_tf.networks.albert_encoder import AlbertEncoder

    spm = train_small_spm(tmp_path_factory, name="unrecorded_spm")
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=AlbertTokenizer(str(spm)).vocab_size,
                                      num_hidden_layers=1)
    directory = write_model_dir(AlbertEncoder(config), str(tmp_path_factory.mktemp("old") / "model"),
                                files={"spm.model": str(spm)}, lower_case=True)
    assert "rewrite_quotes" not in read_metadata(directory)  # as written before the key existed
    for _ in range(2):
        opened = open_for_inference(directory, "encoder")
        assert opened.tokenizer.rewrite_quotes is False and opened.preprocessing.rewrite_quotes is False
        assert opened.tokenizer.encode("``a''") == AlbertTokenizer(str(spm)).encode("``a''")
    said = [line for line in capsys.readouterr().err.splitlines() if "rewrite_quotes" in line]
    assert said == [f"Note: {directory} records no rewrite_quotes (it predates that record, or another tool made "
                    "it): its text is tokenized by the original's rule, `` and '' kept as they are."]


@pytest.fixture(scope="module")
def cased(tmp_path_factory):
    """A pretrainer whose albert_tf.json says: cased text with its accents, `` and '' turned into " (as
    Hugging Face's tokenizer does), sequences of 32; its vocabulary is cased, as convert checks."""
    spm = train_small_spm(tmp_path_factory, name="cased_spm", lower_case=False, keep_accents=True)
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=AlbertTokenizer(str(spm)).vocab_size,
                                       num_hidden_layers=2)
    return write_model_dir(AlbertPretrainer(config), str(tmp_path_factory.mktemp("cased") / "model"), "pretrainer",
                           files={"spm.model": str(spm)}, lower_case=False, keep_accents=True, max_seq_length=32,
                           rewrite_quotes=True)


def tool(name, *flags):
    return subprocess.run([sys.executable, "-m", f"albert_tf.{name}", *flags], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)


@pytest.mark.slow
def test_export_keeps_the_recorded_case_and_length_and_refuses_another_casing(cased, tmp_path):
    result = tool("export", f"--checkpoint={cased}", f"--output_dir={tmp_path / 'export'}",
                  "--serving_warmup_batch_sizes=")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "(max_seq_length 32, cased text)" in result.stdout
    exported = read_metadata(str(tmp_path / "export"))
    assert (exported["lower_case"], exported["max_seq_length"], exported["rewrite_quotes"]) == (False, 32, True)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    preprocessing = tf.saved_model.load(str(tmp_path / "export" / "preprocessing"))
    upper, lower = (preprocessing(tf.constant([text]))["input_word_ids"].numpy() for text in ("The River", "the river"))
    assert upper.shape == (1, 32) and (upper != lower).any()  # requests keep their case
    quoted = "He said ``hi'' twice"  # requests get the recorded quote rule
    ids = AlbertTokenizer(os.path.join(cased, "spm.model"), lower_case=False, keep_accents=True,
                          rewrite_quotes=True).encode(quoted)
    served = preprocessing(tf.constant([quoted]))["input_word_ids"].numpy()[0]
    assert list(served[1:1 + len(ids)]) == ids and served[1 + len(ids)] == 3

    refused = tool("export", f"--checkpoint={cased}", f"--output_dir={tmp_path / 'x'}", "--do_lower_case")
    assert refused.returncode == 1 and "trained on cased text" in refused.stderr and not (tmp_path / "x").exists()
    forced = tool("export", f"--checkpoint={cased}", f"--output_dir={tmp_path / 'forced'}", "--do_lower_case",
                  "--force", "--max_seq_length=48", "--serving_warmup_batch_sizes=")
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert "Warning: forced: lowercasing" in forced.stdout and "were never trained" in forced.stdout
    too_long = tool("export", f"--checkpoint={cased}", f"--output_dir={tmp_path / 'y'}", "--max_seq_length=1000")
    assert too_long.returncode == 1 and "exceeds the max_position_embeddings (512)" in too_long.stderr


def test_inference_and_conversion_take_the_recorded_casing(cased, tmp_path):
    assert MaskFiller(cased).tokenizer.lower_case is False
    assert MaskFiller(cased).preprocessing.max_seq_length == 32
    assert MaskFiller(cased).tokenizer.rewrite_quotes is True
    result = tool("convert", "--from=albert_tf", "--to=huggingface", f"--input={cased}",
                  f"--output={tmp_path / 'hf'}")
    assert result.returncode == 0, result.stderr[-2000:]
    hf_config = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert (hf_config["do_lower_case"], hf_config["rewrite_quotes"]) == (False, True)
    back = tool("convert", "--from=huggingface", "--to=albert_tf", f"--input={tmp_path / 'hf'}",
                f"--output={tmp_path / 'back'}")
    assert back.returncode == 0, back.stderr[-2000:]
    assert read_metadata(str(tmp_path / "back"))["lower_case"] is False
    assert read_metadata(str(tmp_path / "back"))["rewrite_quotes"] is True
    refused = tool("convert", "--from=huggingface", "--to=albert_tf", f"--input={tmp_path / 'hf'}",
                   f"--output={tmp_path / 'other'}", "--do_lower_case")
    assert refused.returncode == 1 and "trained on cased text" in refused.stderr


def test_finetuning_starts_from_the_recorded_case_and_length(cased, tmp_path):
    mrpc = write_task(tmp_path / "MRPC", "mrpc", random.Random("mrpc"))
    flags = ["--task_name=mrpc", f"--data_dir={mrpc}", f"--init_checkpoint={cased}", "--do_train",
             "--train_step=2", "--warmup_step=1", "--train_batch_size=8", "--save_checkpoints_steps=2"]
    result = tool("run_classifier", *flags, f"--output_dir={tmp_path / 'out'}")
    assert result.returncode == 0, result.stderr[-2000:]
    training = json.loads((tmp_path / "out" / "run_config.json").read_text())["training"]
    # The task's 512 gives way to the 32 the model was trained at; the casing is the model's.
    assert (training["max_seq_length"], training["do_lower_case"], training["keep_accents"],
            training["rewrite_quotes"]) == (32, False, True, True)
    saved = read_metadata(str(tmp_path / "out" / "checkpoints"))
    assert (saved["max_seq_length"], saved["lower_case"], saved["keep_accents"], saved["rewrite_quotes"]) == (
        32, False, True, True)
    refused = tool("run_classifier", *flags, f"--output_dir={tmp_path / 'other'}", "--do_lower_case")
    assert refused.returncode == 1 and "trained on cased text" in refused.stderr
    refused = tool("run_classifier", *flags, f"--output_dir={tmp_path / 'other'}", "--nokeep_accents")
    assert refused.returncode == 1 and "--keep_accents=False contradicts" in refused.stderr


def test_pretraining_takes_lengths_from_the_data_and_records_its_casing(tmp_path_factory, tmp_path):
    data = make_pretraining_data(tmp_path_factory, num_documents=20, shards=1, lower_case=False, keep_accents=True)
    result = tool("run_pretraining", f"--input_file={data.prefix}", f"--albert_config={data.config_file}",
                  f"--output_dir={tmp_path}", f"--spm_model_file={data.spm_model}", "--train_batch_size=8",
                  "--num_train_steps=2", "--num_warmup_steps=1", "--save_checkpoints_steps=2")
    assert result.returncode == 0, result.stderr[-2000:]
    # The data albert_tf makes keeps `` and '' (the original's rule) and says so; the model records it.
    assert json.loads(open(f"{data.prefix}.metadata.json").read())["config"]["rewrite_quotes"] is False
    recorded = read_metadata(str(tmp_path))
    assert (recorded["max_seq_length"], recorded["max_predictions_per_seq"], recorded["lower_case"],
            recorded["keep_accents"], recorded["rewrite_quotes"]) == (SEQ_LENGTH, PREDICTIONS, False, True, False)


def test_one_loader_opens_models_for_every_inference_tool(cased, tmp_path):
    from albert_tf.models.embedder import Embedder
    from albert_tf.models.inference_model import open_for_inference

    opened = open_for_inference(cased, "pretrainer")
    assert (opened.tokenizer.lower_case, opened.preprocessing.max_seq_length) == (False, 32)
    assert type(opened.model).__name__ == "AlbertPretrainer" and not opened.is_export
    assert type(open_for_inference(cased, "encoder").model).__name__ == "AlbertEncoder"
    with pytest.raises(ValueError, match="trained on cased text"):
        open_for_inference(cased, lower_case=True)
    with pytest.raises(ValueError, match="part='heads'"):
        open_for_inference(cased, "heads")

    embedder = Embedder(cased)  # the same loader: the recorded casing and length
    assert (embedder.tokenizer.lower_case, embedder.max_seq_length) == (False, 32)
    assert embedder.inputs(["The River"])["input_word_ids"].shape == (1, 32)
    upper, lower = embedder.embed(["The River"]), embedder.embed(["the river"])
    assert abs(upper - lower).max() > 0  # a cased model sees the case

    result = tool("export", f"--checkpoint={cased}", f"--output_dir={tmp_path / 'export'}",
                  "--serving_warmup_batch_sizes=")
    assert result.returncode == 0, result.stderr[-2000:]
    exported = open_for_inference(tmp_path / "export", "pretrainer")
    assert exported.is_export and exported.model is None and "mlm" in exported.saved_model.signatures
    assert exported.tokenizer.lower_case is False
    as_keras = open_for_inference(tmp_path / "export", "encoder", saved_model=False)
    assert type(as_keras.model).__name__ == "AlbertEncoder" and not as_keras.is_export
    with pytest.raises(ValueError, match="only its encoder loads as a Keras model"):
        open_for_inference(tmp_path / "export", "pretrainer", saved_model=False)
    import numpy as np

    np.testing.assert_allclose(Embedder(tmp_path / "export").embed(["The River"]), upper, atol=1e-5)
