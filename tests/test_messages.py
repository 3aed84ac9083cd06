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


# A line of TensorFlow's (or tensorflow-text's) C++ logger: "I0000 00:00:1795814616.963322    5316 port.cc:153] ...".
CPP_LOG_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ [\w.]+:\d+\]|absl::InitializeLog")


def run_tool(tool, *flags):
    """The tool as a user runs it who set TF_CPP_MIN_LOG_LEVEL=2 (hide TensorFlow's INFO and WARNING, as often
    advised): stderr holds none of the C++ logger's lines, which print before any log level applies."""
    result = subprocess.run([sys.executable, "-m", f"albert_tf.{tool}", *flags], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=300)
    cpp_log = [line for line in result.stderr.splitlines() if CPP_LOG_LINE.search(line)]
    assert not cpp_log, "TensorFlow's C++ log:\n" + "\n".join(cpp_log)
    return result


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
    (lambda metadata: {**metadata, "multi_label_threshold": 50}, '"multi_label_threshold" must be a number from 0 '
                                                                 'to 1, got the number 50'),
    (lambda metadata: {**metadata, "preprocessor": {"seq_length": "16"}},
     '"preprocessor.seq_length" must be a positive integer, got the string "16"'),
    (lambda metadata: {**metadata, "preprocessor": {"lower_case": True}},
     '"preprocessor" has no "seq_length" (its preprocessor\'s sequence length)'),
    (lambda metadata: {**metadata, "albert_config": {**metadata["albert_config"], "hidden_size": -8}},
     '"albert_config": Invalid AlbertConfig: hidden_size must be a positive integer, got -8'),
    (lambda metadata: {**metadata, "albert_config": {**metadata["albert_config"], "hidden_sise": 8}},
     '"albert_config": unknown AlbertConfig keys [\'hidden_sise\']'),
], ids=["list", "model", "albert_config", "num_labels", "fractional_num_labels", "format_version", "label_names",
        "multi_label_threshold", "preprocessor", "preprocessor_without_length", "albert_config_value", "albert_config_key"])
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
    """An encoder saved with its raw-text preprocessor (as `save_to_preset` saves a model fed raw text): loading it
    makes the in-graph tokenizer, whose SentencePiece model conversion in tensorflow-text logs through C++."""
    spm = train_small_spm(tmp_path_factory)
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=AlbertTokenizer(str(spm)).vocab_size)
    directory = write_model_dir(AlbertEncoder(config), str(tmp_path_factory.mktemp("encoder") / "encoder"),
                                files={"spm.model": str(spm)})
    metadata_file = os.path.join(directory, "albert_tf.json")
    with open(metadata_file) as f:
        metadata = json.load(f)
    metadata["preprocessor"] = {"seq_length": 16, "lower_case": True, "keep_accents": False, "rewrite_quotes": False}
    with open(metadata_file, "w") as f:
        json.dump(metadata, f)
    return directory


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


def test_a_record_that_does_not_parse_is_named_with_its_file_and_number(tmp_path):
    """A TFRecord whose frames are intact (its checksums hold) but whose 6th record is of another length: the
    training input fails inside the compiled loop ("Graph execution error:"), and the message names the file and
    the record instead."""
    import tensorflow as tf

    from albert_tf.data.pretraining_dataset import make_pretraining_dataset, read_error

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    def instance(input_ids_length):
        features = {"input_ids": ints([1] * input_ids_length), "input_mask": ints([1] * 8),
                    "segment_ids": ints([0] * 8)}
        features.update(masked_lm_positions=ints([1, 2]), masked_lm_ids=ints([5, 6]), next_sentence_labels=ints([0]),
                        masked_lm_weights=tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 1.0])))
        return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()

    files = [str(tmp_path / f"train-0000{i}-of-00002.tfrecord") for i in range(2)]
    for path, bad in zip(files, (None, 5)):
        with tf.io.TFRecordWriter(path) as writer:
            for number in range(8):
                writer.write(instance(7 if number == bad else 8))

    @tf.function
    def read_all(iterator):
        for _ in tf.range(16):
            next(iterator)

    with pytest.raises(tf.errors.InvalidArgumentError) as failed:
        read_all(iter(make_pretraining_dataset(files, 2, 8, 2, is_training=False)))
    assert failed.value.message.startswith("Graph execution error:")
    reason = "Key: input_ids.  Number of int64 values != expected.  Values size: 7 but output shape: [8]"
    assert str(read_error(files, failed.value, "the training data")) == (
        f"{files[1]}: record 5 (counted from 0) does not parse as a pretraining instance of the data's lengths "
        f"({reason}); recreate the file with create_pretraining_data")
    # Where no file is to blame, the reason still, not TensorFlow's "Graph execution error:".
    assert str(read_error(files[:1], failed.value, "the training data")) == (
        f"the training data could not be read ({reason})")
