"""Bad input gets one line naming the file or the setting and what is wrong, never a traceback from deep inside."""

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import albert_tf
from albert_tf.albert_config import AlbertConfig
from albert_tf.checkpoints.conversion import convert
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.model_dir_format import read_metadata
from albert_tf.models.model_io import write_model_dir
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.tasks import glue
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from text_fixtures import train_small_spm


def run_tool(tool, *flags):
    return subprocess.run([sys.executable, "-m", f"albert_tf.{tool}", *flags], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)


def last_error(result):
    return result.stderr.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    classifier = AlbertClassifier(config=AlbertConfig.from_preset("albert_tiny"), num_labels=2)
    return write_model_dir(classifier, str(tmp_path_factory.mktemp("model") / "classifier"))


@pytest.mark.parametrize("change, message", [
    (lambda metadata: [metadata], "expected a JSON object (albert_tf metadata), got a list"),
    (lambda metadata: {**metadata, "model": 3}, '"model" must be a string (the model kind), got the number 3'),
    (lambda metadata: {**metadata, "albert_config": "x"}, '"albert_config" must be a JSON object, got the string "x"'),
    (lambda metadata: {**metadata, "num_labels": "two"}, '"num_labels" must be a positive integer, got the string '
                                                         '"two"'),
    (lambda metadata: {**metadata, "num_labels": 2.5}, '"num_labels" must be a positive integer, got the number 2.5'),
    (lambda metadata: {**metadata, "format_version": "1"}, '"format_version" must be an integer, got the string "1"'),
    (lambda metadata: {**metadata, "label_names": "no,yes"}, '"label_names" must be a list of strings'),
    (lambda metadata: {**metadata, "preprocessor": {"seq_length": "16"}},
     '"preprocessor.seq_length" must be a positive integer, got the string "16"'),
    (lambda metadata: {**metadata, "preprocessor": {"lower_case": True}},
     '"preprocessor" has no "seq_length" (its preprocessor\'s sequence length)'),
    (lambda metadata: {**metadata, "albert_config": {**metadata["albert_config"], "hidden_size": -8}},
     '"albert_config": Invalid AlbertConfig: hidden_size must be a positive integer, got -8'),
    (lambda metadata: {**metadata, "albert_config": {**metadata["albert_config"], "hidden_sise": 8}},
     '"albert_config": unknown AlbertConfig keys [\'hidden_sise\']'),
], ids=["list", "model", "albert_config", "num_labels", "fractional_num_labels", "format_version", "label_names",
        "preprocessor", "preprocessor_without_length", "albert_config_value", "albert_config_key"])
def test_model_metadata_of_the_wrong_type_names_the_file_the_key_and_the_type(classifier_dir, tmp_path, change,
                                                                                message):
    directory = tmp_path / "damaged"
    shutil.copytree(classifier_dir, directory)
    metadata_file = directory / "albert_tf.json"
    metadata_file.write_text(json.dumps(change(json.loads(metadata_file.read_text()))))
    expected = f"^{re.escape(f'{metadata_file}: {message}')}"
    with pytest.raises(ValueError, match=expected):
        read_metadata(str(directory))
    for load in (albert_tf.load_model, albert_tf.load_encoder):
        with pytest.raises(ValueError, match=expected):
            load(str(directory))


def test_model_metadata_null_is_an_optional_key_left_out(classifier_dir, tmp_path):
    directory = tmp_path / "nulls"
    shutil.copytree(classifier_dir, directory)
    metadata_file = directory / "albert_tf.json"
    metadata = json.loads(metadata_file.read_text())
    metadata_file.write_text(json.dumps({**metadata, "lower_case": None, "max_seq_length": None}))
    model, _ = albert_tf.load_model(str(directory))
    assert model.num_labels == 2


HUGGINGFACE_CONFIG = {"model_type": "albert", "vocab_size": 50, "embedding_size": 8, "hidden_size": 16,
                      "num_hidden_layers": 2, "num_hidden_groups": 1, "num_attention_heads": 2,
                      "intermediate_size": 32, "max_position_embeddings": 16, "hidden_act": "gelu_new"}


@pytest.mark.parametrize("config, message", [
    ({**HUGGINGFACE_CONFIG, "hidden_size": "768"}, '"hidden_size" must be an integer, got the string "768"'),
    # Compared before AlbertConfig saw it: a TypeError from inside the converter.
    ({**HUGGINGFACE_CONFIG, "num_hidden_layers": "12"}, '"num_hidden_layers" must be an integer, got the string "12"'),
    ({**HUGGINGFACE_CONFIG, "layer_norm_eps": "1e-12"}, '"layer_norm_eps" must be a number, got the string "1e-12"'),
    ({**HUGGINGFACE_CONFIG, "hidden_act": ["gelu"]}, '"hidden_act" must be a string, got a list'),
    ([HUGGINGFACE_CONFIG], "expected a JSON object (a Hugging Face config), got a list"),
], ids=["hidden_size", "num_hidden_layers", "layer_norm_eps", "hidden_act", "list"])
def test_huggingface_config_of_the_wrong_type_names_the_file_and_the_key(tmp_path, config, message):
    source = tmp_path / "hf"
    source.mkdir()
    (source / "config.json").write_text(json.dumps(config))
    config_file = source / "config.json"
    with pytest.raises(ValueError, match=f"^{re.escape(f'{config_file}: {message}')}$"):
        convert("huggingface", "albert_tf", str(source), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_convert_reports_a_damaged_huggingface_config_in_one_line(tmp_path):
    source = tmp_path / "hf"
    source.mkdir()
    (source / "config.json").write_text(json.dumps({**HUGGINGFACE_CONFIG, "num_hidden_layers": "12"}))
    result = run_tool("convert", "--from=huggingface", f"--input={source}", f"--output={tmp_path / 'out'}")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert last_error(result) == (f'albert_tf.convert: error: {source / "config.json"}: "num_hidden_layers" must be '
                                  'an integer, got the string "12"')
    (source / "config.json").write_text('{"hidden_size": 16')
    with pytest.raises(ValueError, match=f"^{re.escape(str(source / 'config.json'))}: not valid JSON"):
        convert("huggingface", "albert_tf", str(source), str(tmp_path / "out"))


def test_glue_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_bytes("sentence\tlabel\ngood one\t1\ncafé au lait\t0\n".encode("latin-1"))
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}:3: not UTF-8 text \\(byte 0xe9\\); convert the "
                                         "file to UTF-8$"):
        glue.read_examples("sst-2", str(path), "dev")
    path.write_bytes("\ufeffsentence\tlabel\nok\t1\n".encode("utf-8") + "café\t0\n".encode("latin-1"))
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}:3: not UTF-8 text \\(byte 0xe9\\)"):
        glue.read_examples("sst-2", str(path), "dev")
    # A byte-order mark and Windows line ends still read (as GLUE's files written on Windows are).
    path.write_bytes("\ufeffsentence\tlabel\r\ncafé\t1\r\n".encode("utf-8"))
    assert [(example.text_a, example.label) for example in glue.read_examples("sst-2", str(path), "dev")] == [
        ("café", 1)]


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    spm = train_small_spm(tmp_path_factory)
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=AlbertTokenizer(str(spm)).vocab_size)
    return write_model_dir(AlbertEncoder(config), str(tmp_path_factory.mktemp("encoder") / "encoder"),
                           files={"spm.model": str(spm)})


def test_embed_refuses_an_existing_output_and_names_the_file_it_writes(encoder_dir, tmp_path):
    output = tmp_path / "embeddings.npy"
    output.write_bytes(b"the user's own file")
    texts = ["--text=a river town", "--text=the garden window"]
    # numpy.save adds .npy to a name without it: --output=embeddings is embeddings.npy.
    refused = run_tool("embed", f"--model={encoder_dir}", *texts, f"--output={tmp_path / 'embeddings'}")
    assert refused.returncode == 1, refused.stderr
    assert last_error(refused) == f"albert_tf.embed: error: {output} exists; choose another path or pass --overwrite"
    assert output.read_bytes() == b"the user's own file"
    replaced = run_tool("embed", f"--model={encoder_dir}", *texts, f"--output={tmp_path / 'embeddings'}",
                        "--overwrite")
    assert replaced.returncode == 0, replaced.stderr
    assert replaced.stdout.strip().splitlines()[-1] == f"Embeddings: {output}"
    assert np.load(output).shape == (2, AlbertConfig.from_preset("albert_tiny").hidden_size)
    assert sorted(os.listdir(tmp_path)) == ["embeddings.npy"]  # no staging file left beside it


def test_embed_names_the_line_of_an_input_file_that_is_not_utf8(encoder_dir, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_bytes("a river town\ncafé au lait\n".encode("latin-1"))
    result = run_tool("embed", f"--model={encoder_dir}", f"--input_file={texts}")
    assert result.returncode == 1, result.stderr
    assert last_error(result) == (f"albert_tf.embed: error: {texts}:2: not UTF-8 text (byte 0xe9); convert the file "
                                  "to UTF-8")
