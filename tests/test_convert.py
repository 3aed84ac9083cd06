"""Converter behaviour on incomplete, foreign and mismatched checkpoints."""

import dataclasses
import json
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import transformers

import huggingface_oracle as oracle
from text_fixtures import SPECIAL_LINES, random_sentence, train_small_spm
from albert_tf.albert_config import AlbertConfig
from albert_tf.checkpoints.assign import CheckpointMismatchError
from albert_tf.models.model_dir_format import read_metadata
from albert_tf.models.model_io import load_encoder, load_pretrainer, write_model_dir
from albert_tf.checkpoints.tf1_format import write_tf1_checkpoint
from albert_tf.checkpoints.conversion import convert
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.text.albert_tokenizer import AlbertTokenizer

SMALL = AlbertConfig(
    vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
    intermediate_size=32, max_position_embeddings=16,
)


@pytest.fixture
def tf1_tensors():
    return oracle.original_tf1_tensors(oracle.random_pretraining_model(SMALL), SMALL)


def write_tf1(tmp_path, tensors, config=SMALL):
    directory = tmp_path / "google"
    directory.mkdir(exist_ok=True)
    write_tf1_checkpoint(tensors, str(directory / "model.ckpt"))
    config.to_json_file(directory / "albert_config.json")
    return str(directory / "model.ckpt")


def test_missing_tensor_is_named_and_nothing_is_written(tmp_path, tf1_tensors):
    del tf1_tensors["bert/encoder/transformer/group_0/inner_group_0/LayerNorm_1/beta"]
    with pytest.raises(CheckpointMismatchError, match="missing from the source \\(1\\): bert/encoder/"
                       "transformer/group_0/inner_group_0/LayerNorm_1/beta"):
        convert("tf1", "albert_tf", write_tf1(tmp_path, tf1_tensors), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".out")]


def test_unmapped_tensor_is_named(tmp_path, tf1_tensors):
    tf1_tensors["bert/encoder/transformer/group_1/inner_group_0/LayerNorm/gamma"] = np.ones(16, np.float32)
    with pytest.raises(CheckpointMismatchError, match="not mapped to any model variable \\(1\\): "
                       "bert/encoder/transformer/group_1/inner_group_0/LayerNorm/gamma"):
        convert("tf1", "albert_tf", write_tf1(tmp_path, tf1_tensors), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_shape_mismatch_is_named_with_both_shapes(tmp_path, tf1_tensors):
    wrong = dataclasses.replace(SMALL, vocab_size=60)
    with pytest.raises(CheckpointMismatchError, match=r"bert/embeddings/word_embeddings \(source \(50, 8\), "
                       r"model \(60, 8\)\).*cls/predictions/output_bias"):
        convert("tf1", "albert_tf", write_tf1(tmp_path, tf1_tensors, wrong), str(tmp_path / "out"))


def test_masked_lm_without_sop_needs_init_missing_heads(tmp_path):
    model = oracle.random_pretraining_model(SMALL, model_class=transformers.AlbertForMaskedLM)
    model.save_pretrained(tmp_path / "hf")
    expected = ["bert/pooler/dense/bias", "bert/pooler/dense/kernel", "cls/seq_relationship/output_bias",
                "cls/seq_relationship/output_weights"]
    with pytest.raises(CheckpointMismatchError, match=", ".join(expected)):
        convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "out"))
    summary = convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "out"),
                      init_missing_heads=True)
    assert summary["initialized_heads"] == expected
    pretrainer = load_pretrainer(str(tmp_path / "out"))
    np.testing.assert_array_equal(
        pretrainer.masked_lm_head.output_bias.numpy(), model.state_dict()["predictions.bias"].numpy()
    )


def test_bare_albert_model_converts_to_an_encoder(tmp_path):
    model = oracle.random_pretraining_model(SMALL, model_class=transformers.AlbertModel)
    model.save_pretrained(tmp_path / "hf", safe_serialization=False)  # pytorch_model.bin
    assert (tmp_path / "hf" / "pytorch_model.bin").exists() or (tmp_path / "hf" / "model.safetensors").exists()
    summary = convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "out"))
    assert summary["kind"] == "encoder"
    # Trained on text whose `` and '' Hugging Face's tokenizer turned into ": recorded.
    assert summary["rewrite_quotes"] is read_metadata(str(tmp_path / "out"))["rewrite_quotes"] is True
    encoder = load_encoder(str(tmp_path / "out"))
    np.testing.assert_array_equal(
        encoder.embeddings.word_embeddings.numpy(), model.state_dict()["embeddings.word_embeddings.weight"].numpy()
    )
    with pytest.raises(ValueError, match="without pretraining heads; use load_encoder"):
        load_pretrainer(str(tmp_path / "out"))


def test_not_shared_models_reach_the_original_as_one_group_per_layer(tmp_path):
    """The original has no `sharing` key: its not-shared model is G = L groups, layer l in group int(l / L * G)."""
    model = AlbertPretrainer(dataclasses.replace(SMALL, sharing="none", num_hidden_layers=3))
    write_model_dir(model, tmp_path / "ours", "pretrainer")
    convert("albert_tf", "tf1", str(tmp_path / "ours"), str(tmp_path / "tf1"))
    written = json.loads((tmp_path / "tf1" / "albert_config.json").read_text())
    assert written["num_hidden_groups"] == written["num_hidden_layers"] == 3
    reader = tf.train.load_checkpoint(str(tmp_path / "tf1" / "model.ckpt"))
    groups = {name.split("/")[3] for name in reader.get_variable_to_shape_map() if "/transformer/" in name}
    assert groups == {f"group_{int(layer / 3 * 3)}" for layer in range(3)}
    # With 22 layers the original's int(15 / 22 * 22) is 14: layer 15 would run layer 14's weights.
    deep = AlbertPretrainer(dataclasses.replace(SMALL, sharing="none", num_hidden_layers=22))
    write_model_dir(deep, tmp_path / "deep", "pretrainer")
    with pytest.raises(ValueError, match=r"gives layer\(s\) \[15\] the group of the layer before"):
        convert("albert_tf", "tf1", str(tmp_path / "deep"), str(tmp_path / "deep_tf1"))
    assert not (tmp_path / "deep_tf1").exists()


def test_partial_sharing_modes_refuse_foreign_formats(tmp_path):
    model = AlbertPretrainer(dataclasses.replace(SMALL, sharing="attention"))
    write_model_dir(model, tmp_path / "ours", "pretrainer")
    assert load_pretrainer(str(tmp_path / "ours")).albert_config.sharing == "attention"
    with pytest.raises(ValueError, match='sharing="attention" has no counterpart'):
        convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))
    assert not (tmp_path / "hf").exists()


def test_output_directory_is_never_clobbered_by_default(tmp_path, tf1_tensors):
    source = write_tf1(tmp_path, tf1_tensors)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("precious")
    with pytest.raises(FileExistsError, match="not empty"):
        convert("tf1", "albert_tf", source, str(tmp_path / "out"))
    assert (tmp_path / "out" / "keep.txt").read_text() == "precious"
    # --overwrite replaces an earlier conversion, never a file convert did not write.
    with pytest.raises(FileExistsError, match="was not written by albert_tf"):
        convert("tf1", "albert_tf", source, str(tmp_path / "out"), overwrite=True)
    assert (tmp_path / "out" / "keep.txt").read_text() == "precious"
    convert("tf1", "albert_tf", source, str(tmp_path / "new"))
    convert("tf1", "albert_tf", source, str(tmp_path / "new"), overwrite=True)
    vocab_size = tf1_tensors["bert/embeddings/word_embeddings"].shape[0]
    assert load_pretrainer(str(tmp_path / "new")).albert_config.vocab_size == vocab_size


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return str(train_small_spm(tmp_path_factory))


def test_sentencepiece_model_travels_with_the_weights(tmp_path, tf1_tensors, spm_model):
    convert("tf1", "albert_tf", write_tf1(tmp_path, tf1_tensors), str(tmp_path / "ours"), spm_model_file=spm_model)
    assert read_metadata(str(tmp_path / "ours"))["rewrite_quotes"] is False  # Google's: the original's rule
    original = open(spm_model, "rb").read()
    assert (tmp_path / "ours" / "spm.model").read_bytes() == original
    convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == original
    # Not a SentencePiece model: refused before anything is written.
    (tmp_path / "bad.model").write_bytes(b"spm bytes")
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf2"),
                spm_model_file=str(tmp_path / "bad.model"))
    assert not (tmp_path / "hf2").exists()


def _digit_comma_rule_fires(tokenizer, text):
    """True if the original's "<digit>," re-encoding changes this text's ids (transformers has no equivalent)."""
    raw = tokenizer.sp.encode(tokenizer.preprocess(text))
    return raw != tokenizer.encode(text)


def test_huggingface_round_trip_tokenizer_and_model(tmp_path, spm_model):
    """convert --to=huggingface loads with AutoTokenizer and AutoModelForPreTraining and agrees with albert_tf."""
    import torch

    tokenizer = AlbertTokenizer(spm_model)
    config = dataclasses.replace(SMALL, vocab_size=tokenizer.vocab_size, max_position_embeddings=96)
    pretrainer = AlbertPretrainer(config)
    write_model_dir(pretrainer, tmp_path / "ours", files={"spm.model": spm_model})
    assert not (tmp_path / "hf").exists()
    convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))
    for name in ("tokenizer.json", "tokenizer_config.json", "spiece.model", "config.json"):
        assert (tmp_path / "hf" / name).exists(), name

    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    rng = random.Random(3)
    extra = ["  ΟΔΟΣ σας,  ΑΣ'  ", "``Tab\there'' (a) b-c £5 –", "ǅemal İzmir ﬁne café Ⅻ", "a\u200bb \ufeffc 東京"]
    texts = SPECIAL_LINES + extra + [random_sentence(rng) for _ in range(200)]
    exact = [text for text in texts if not _digit_comma_rule_fires(tokenizer, text)]
    # The sample keeps the multilingual lines; the rule fires only on "<digit>," text.
    assert set(SPECIAL_LINES + extra) - set(exact) == {SPECIAL_LINES[2]}
    assert all(re.search(r"\d,", text) for text in texts if text not in exact)
    assert len(exact) > 0.9 * len(texts)
    for text in exact:
        assert hf_tokenizer(text, add_special_tokens=False)["input_ids"] == tokenizer.encode(text), text
    pair = hf_tokenizer("The first segment.", "And a second one.")
    first, second = tokenizer.encode("The first segment."), tokenizer.encode("And a second one.")
    assert pair["input_ids"] == [2, *first, 3, *second, 3]
    assert pair["token_type_ids"] == [0] * (len(first) + 2) + [1] * (len(second) + 1)
    assert hf_tokenizer.mask_token_id == 4 and hf_tokenizer.pad_token_id == 0

    # The model: AutoModelForPreTraining on HF-tokenized text matches albert_tf on its own ids.
    hf_model = transformers.AutoModelForPreTraining.from_pretrained(tmp_path / "hf").eval()
    batch = hf_tokenizer([SPECIAL_LINES[0], SPECIAL_LINES[4]], padding="max_length", max_length=48,
                         truncation=True, return_tensors="pt")
    with torch.no_grad():
        hf_output = hf_model(**batch)
    ours = pretrainer({
        "input_word_ids": batch["input_ids"].numpy().astype(np.int32),
        "input_mask": batch["attention_mask"].numpy().astype(np.int32),
        "input_type_ids": batch["token_type_ids"].numpy().astype(np.int32),
        "masked_lm_positions": np.tile(np.arange(48, dtype=np.int32), (2, 1)),
    })
    np.testing.assert_allclose(np.asarray(ours["mlm_logits"]), hf_output.prediction_logits.numpy(), atol=2e-4)
    np.testing.assert_allclose(np.asarray(ours["sop_logits"]), hf_output.sop_logits.numpy(), atol=2e-4)


@pytest.mark.parametrize("rewrite_quotes", [False, True])
def test_tokenizer_json_rewrites_quotes_only_where_the_model_records_it(tmp_path, spm_model, rewrite_quotes):
    import json

    from albert_tf.networks.albert_encoder import AlbertEncoder

    tokenizer = AlbertTokenizer(spm_model, rewrite_quotes=rewrite_quotes)
    encoder = AlbertEncoder(dataclasses.replace(SMALL, vocab_size=tokenizer.vocab_size))
    write_model_dir(encoder, tmp_path / "ours", files={"spm.model": spm_model}, rewrite_quotes=rewrite_quotes)
    convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))
    steps = json.loads((tmp_path / "hf" / "tokenizer.json").read_text(encoding="utf-8"))["normalizer"]["normalizers"]
    replaced = [step["pattern"].get("String") for step in steps if step["type"] == "Replace"]
    assert ("``" in replaced, "''" in replaced) == (rewrite_quotes, rewrite_quotes)
    assert json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())["rewrite_quotes"] is rewrite_quotes
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    for text in ["he said ``hello'' to me", "``Quoted,'' she said -- ``twice''.", "a ``` b '''' c", "x``y''z"]:
        assert hf_tokenizer(text, add_special_tokens=False)["input_ids"] == tokenizer.encode(text), text
    convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "back"))
    assert read_metadata(str(tmp_path / "back"))["rewrite_quotes"] is rewrite_quotes


def test_not_a_checkpoint_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        convert("huggingface", "albert_tf", str(tmp_path / "empty"), str(tmp_path / "out"))
    with pytest.raises(FileNotFoundError, match="no TF1 checkpoint"):
        convert("tf1", "albert_tf", str(tmp_path / "empty"), str(tmp_path / "out"))
    with pytest.raises(FileNotFoundError, match="holds no checkpoint"):
        load_pretrainer(str(tmp_path / "empty"))


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "albert_tf.convert", *args], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def test_cli_success_and_one_line_failure(tmp_path, tf1_tensors):
    source = write_tf1(tmp_path, tf1_tensors)
    result = run_cli("--from=tf1", f"--input={source}", f"--output={tmp_path / 'out'}")
    assert result.returncode == 0, result.stderr
    assert "Converted tf1 -> albert_tf: a pretrainer with 32 tensors" in result.stdout
    result = run_cli("--from=tf1", f"--input={tmp_path / 'nowhere'}", f"--output={tmp_path / 'out2'}")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("albert_tf.convert: error:")
    assert "nowhere" in result.stderr and not (tmp_path / "out2").exists()


def test_classifier_converts_through_tf1_and_lists_its_head_problems_with_the_encoders(tmp_path, tf1_tensors):
    import tensorflow as tf

    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
    from albert_tf.models.model_io import load_model

    classifier = AlbertClassifier(SMALL, num_labels=2)
    write_model_dir(classifier, tmp_path / "ours", label_names=["no", "yes"], is_regression=False)
    convert("albert_tf", "tf1", str(tmp_path / "ours"), str(tmp_path / "tf1"))
    # The original run_classifier's names and layout: output_weights is [num_labels, H].
    reader = tf.train.load_checkpoint(str(tmp_path / "tf1" / "model.ckpt"))
    np.testing.assert_array_equal(reader.get_tensor("output_weights"), classifier.classifier.kernel.numpy().T)
    summary = convert("tf1", "albert_tf", str(tmp_path / "tf1" / "model.ckpt"), str(tmp_path / "back"))
    model, metadata = load_model(str(tmp_path / "back"))
    assert summary["kind"] == metadata["model"] == "classifier" and metadata["num_labels"] == 2
    for ours, back in zip(classifier.weights, model.weights, strict=True):
        np.testing.assert_array_equal(back.numpy(), ours.numpy(), err_msg=ours.path)

    # A head of the wrong width and a missing encoder tensor: one error names both.
    tensors = {name: value for name, value in tf1_tensors.items() if not name.startswith("cls/")}
    del tensors["bert/embeddings/LayerNorm/beta"]
    tensors.update(output_weights=np.zeros((3, 16), np.float32), output_bias=np.zeros(2, np.float32))
    with pytest.raises(CheckpointMismatchError, match=r"missing from the source \(1\): bert/embeddings/LayerNorm/beta;"
                       r" shape mismatches \(1\): output_weights \(source \(3, 16\), model \(2, 16\)\)"):
        convert("tf1", "albert_tf", write_tf1(tmp_path, tensors), str(tmp_path / "bad"))

    # Label names that do not fit the head, and kinds without a counterpart, are refused before writing.
    write_model_dir(classifier, tmp_path / "one_name", label_names=["only"])
    with pytest.raises(ValueError, match="label_names has 1 names for num_labels=2"):
        convert("albert_tf", "huggingface", str(tmp_path / "one_name"), str(tmp_path / "hf"))
    write_model_dir(AlbertSpanLabeler(SMALL), tmp_path / "span")
    with pytest.raises(ValueError, match="a 'span_labeler' model; only encoder, pretrainer, classifier, "
                                         "squad_v2_span_labeler models convert"):
        convert("albert_tf", "huggingface", str(tmp_path / "span"), str(tmp_path / "hf"))
    assert not (tmp_path / "bad").exists() and not (tmp_path / "hf").exists()


def test_a_full_disk_while_writing_hugging_face_weights_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    """safetensors reports a full disk as its own error, which the command line printed as a traceback; convert
    says it as any write failure and leaves no output."""
    import safetensors.numpy
    from safetensors import SafetensorError

    model = write_model_dir(AlbertPretrainer(AlbertConfig.from_preset("albert_tiny")), str(tmp_path / "model"))

    def full_disk(state, path, metadata=None):
        raise SafetensorError(f"Error while serializing: I/O error: No space left on device (os error 28) at {path}")

    monkeypatch.setattr(safetensors.numpy, "save_file", full_disk)
    with pytest.raises(OSError, match=r"model.safetensors: could not write the weights \(Error while serializing: "
                                      r"I/O error: No space left on device"):
        convert("albert_tf", "huggingface", model, str(tmp_path / "hf"))
    assert sorted(os.listdir(tmp_path)) == ["model"]
