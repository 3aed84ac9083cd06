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
    with pytest.raises(ValueError, match="a 'span_labeler' model; albert-convert does not write it as transformers' "
                                         "AlbertForQuestionAnswering"):
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


def _random_head(names_and_shapes, seed=0):
    rng = np.random.default_rng(seed)
    return {name: rng.normal(0.0, 0.5, shape).astype(np.float32) for name, shape in names_and_shapes.items()}


def _encoder_inputs(rng, shape):
    ids = rng.integers(5, SMALL.vocab_size, shape).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": np.ones(shape, np.int32),
            "input_type_ids": (np.arange(shape[-1]) >= shape[-1] // 2).astype(np.int32) * np.ones(shape, np.int32)}


def test_the_originals_squad_v1_head_converts_and_gives_its_logits(tmp_path, tf1_tensors):
    """run_squad_v1's head (squad_utils.create_v1_model): logits = sequence_output @ cls/squad/output_weights^T +
    output_bias, start and end unstacked from the last axis."""
    from albert_tf.models.model_io import load_model

    encoder = {name: value for name, value in tf1_tensors.items() if not name.startswith("cls/")}
    head = _random_head({"cls/squad/output_weights": (2, 16), "cls/squad/output_bias": (2,)})
    summary = convert("tf1", "albert_tf", write_tf1(tmp_path, {**encoder, **head}), str(tmp_path / "ours"))
    labeler, metadata = load_model(str(tmp_path / "ours"))
    assert summary["kind"] == metadata["model"] == "span_labeler"

    inputs = _encoder_inputs(np.random.default_rng(1), (3, 12))
    sequence_output = np.asarray(labeler.encoder(inputs)["sequence_output"])
    logits = sequence_output @ head["cls/squad/output_weights"].T + head["cls/squad/output_bias"]
    outputs = labeler(inputs)
    np.testing.assert_allclose(np.asarray(outputs["start_logits"]), logits[..., 0], atol=1e-5)
    np.testing.assert_allclose(np.asarray(outputs["end_logits"]), logits[..., 1], atol=1e-5)

    convert("albert_tf", "tf1", str(tmp_path / "ours"), str(tmp_path / "back"))
    reader = tf.train.load_checkpoint(str(tmp_path / "back" / "model.ckpt"))
    assert set(reader.get_variable_to_shape_map()) == set(encoder) | set(head)
    for name, value in head.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value, err_msg=name)
    with pytest.raises(ValueError, match="a 'span_labeler' model; albert-convert does not write it as transformers' "
                                         "AlbertForQuestionAnswering: convert it to tf1 or albert_tf"):
        convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))

    # A head of the wrong width is listed as the classifier's is.
    head["cls/squad/output_weights"] = np.zeros((3, 16), np.float32)
    with pytest.raises(CheckpointMismatchError, match=r"shape mismatches \(1\): cls/squad/output_weights \(source "
                                                      r"\(3, 16\), model \(2, 16\)\)"):
        convert("tf1", "albert_tf", write_tf1(tmp_path, {**encoder, **head}), str(tmp_path / "bad"))
    assert not (tmp_path / "hf").exists() and not (tmp_path / "bad").exists()


def test_the_originals_race_head_converts_as_a_multiple_choice_model_and_gives_its_logits(tmp_path, tf1_tensors):
    """run_race's head (race_utils.create_model): each choice's pooled output @ output_weights^T [1, H] +
    output_bias [1], reshaped to [batch, choices]. The names are a one-output classifier's: model_kind says which."""
    from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
    from albert_tf.models.model_io import load_model

    encoder = {name: value for name, value in tf1_tensors.items() if not name.startswith("cls/")}
    head = _random_head({"output_weights": (1, 16), "output_bias": (1,)})
    source = write_tf1(tmp_path, {**encoder, **head})
    summary = convert("tf1", "albert_tf", source, str(tmp_path / "ours"), model_kind="multiple_choice")
    model, metadata = load_model(str(tmp_path / "ours"))
    assert summary["kind"] == metadata["model"] == "multiple_choice" and isinstance(model, AlbertMultipleChoice)
    assert metadata["num_choices"] == 4  # the original RACE's

    inputs = _encoder_inputs(np.random.default_rng(2), (2, 4, 10))
    flat = {name: value.reshape(8, 10) for name, value in inputs.items()}
    pooled = np.asarray(model.encoder(flat)["pooled_output"])
    logits = (pooled @ head["output_weights"].T + head["output_bias"]).reshape(2, 4)
    np.testing.assert_allclose(np.asarray(model(inputs)["logits"]), logits, atol=1e-5)

    convert("albert_tf", "tf1", str(tmp_path / "ours"), str(tmp_path / "back"))  # the kind is the record's
    reader = tf.train.load_checkpoint(str(tmp_path / "back" / "model.ckpt"))
    assert set(reader.get_variable_to_shape_map()) == set(encoder) | set(head)
    for name, value in head.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value, err_msg=name)
    with pytest.raises(ValueError, match="AlbertForMultipleChoice: convert it to tf1 or albert_tf"):
        convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))
    encoder_dir = write_model_dir(model.encoder, tmp_path / "encoder")
    with pytest.raises(ValueError, match="model_kind=multiple_choice, but the albert_tf.json of .*encoder records an? "
                                         "'encoder' model: leave the setting out"):
        convert("albert_tf", "tf1", encoder_dir, str(tmp_path / "x"), model_kind="multiple_choice")
    # Without model_kind the same names are run_classifier's one-output head; a head of two outputs does not fit.
    assert convert("tf1", "albert_tf", source, str(tmp_path / "classifier"))["kind"] == "classifier"
    head["output_weights"], head["output_bias"] = np.zeros((2, 16), np.float32), np.zeros(2, np.float32)
    with pytest.raises(CheckpointMismatchError, match=r"output_bias \(source \(2,\), model \(1,\)\), output_weights "
                                                      r"\(source \(2, 16\), model \(1, 16\)\)"):
        convert("tf1", "albert_tf", write_tf1(tmp_path, {**encoder, **head}), str(tmp_path / "bad"),
                model_kind="multiple_choice")
    assert not (tmp_path / "hf").exists() and not (tmp_path / "bad").exists()


def huggingface_shards(tmp_path, tf1_tensors, directory):
    """`directory`: a Hugging Face directory whose weights are one shard that model.safetensors.index.json lists;
    returns the index's path and its weight_map."""
    convert("tf1", "huggingface", write_tf1(tmp_path, tf1_tensors), str(directory))
    (directory / "model.safetensors").rename(directory / "model-00001-of-00001.safetensors")
    from safetensors.numpy import load_file

    names = load_file(directory / "model-00001-of-00001.safetensors")
    weight_map = dict.fromkeys(names, "model-00001-of-00001.safetensors")
    index = directory / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return index, weight_map


@pytest.mark.parametrize("entry", ["../outside.safetensors", "{outside}", "sub/../../outside.safetensors",
                                   "link.safetensors"])
def test_a_shard_index_naming_a_file_outside_its_directory_is_refused(tmp_path, tf1_tensors, entry):
    index, weight_map = huggingface_shards(tmp_path, tf1_tensors, tmp_path / "hf")
    outside = tmp_path / "outside.safetensors"  # weights that would convert: only the path is wrong
    outside.write_bytes((tmp_path / "hf" / "model-00001-of-00001.safetensors").read_bytes())
    (tmp_path / "hf" / "link.safetensors").symlink_to(outside)
    entry = entry.format(outside=outside)
    last = sorted(weight_map)[-1]
    index.write_text(json.dumps({"weight_map": {**weight_map, last: entry}}))
    with pytest.raises(ValueError, match=f"^{re.escape(str(index))}: its weight_map names {re.escape(repr(entry))}, "
                                         "which is not a file of"):
        convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_a_shard_index_of_its_own_files_converts_from_a_cache_snapshot_too(tmp_path, tf1_tensors):
    """A Hugging Face cache snapshot links every file into its repository's blobs/: those links lead out of
    the snapshot's directory, to where the cache keeps the files."""
    repository = tmp_path / "models--someone--albert"
    snapshot = repository / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    huggingface_shards(tmp_path, tf1_tensors, tmp_path / "hf")
    convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "plain"))
    (repository / "blobs").mkdir()
    for number, path in enumerate(sorted((tmp_path / "hf").iterdir())):
        path.rename(repository / "blobs" / f"blob{number}")
        (snapshot / path.name).symlink_to(f"../../blobs/blob{number}")
    convert("huggingface", "albert_tf", str(snapshot), str(tmp_path / "cached"))
    for cached, plain in zip(load_pretrainer(str(tmp_path / "cached")).weights,
                             load_pretrainer(str(tmp_path / "plain")).weights, strict=True):
        np.testing.assert_array_equal(cached.numpy(), plain.numpy(), err_msg=cached.path)


def test_a_pickle_torch_refuses_is_one_line_saying_to_use_safetensors(tmp_path, capsys):
    """A pytorch_model.bin that runs code when unpickled (here it would only print): torch.load(weights_only=True)
    refuses it, and convert says so in one line naming the file."""
    import torch

    from albert_tf.checkpoints.huggingface_format import albert_config_to_huggingface

    class RunsCode:
        def __reduce__(self):
            return print, ("unpickled: this pickle ran code",)

    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps(albert_config_to_huggingface(SMALL, with_heads=False)))
    torch.save({"embeddings.word_embeddings.weight": torch.zeros(50, 8), "payload": RunsCode()},
               hf / "pytorch_model.bin")
    with pytest.raises(ValueError) as refused:
        convert("huggingface", "albert_tf", str(hf), str(tmp_path / "out"))
    message = str(refused.value)
    assert message.startswith(f"{hf / 'pytorch_model.bin'}: a pickle that holds more than tensors (Unsupported "
                              "global: GLOBAL print was not an allowed global by default)")
    assert "model.safetensors" in message and "\n" not in message
    assert "ran code" not in capsys.readouterr().out and not (tmp_path / "out").exists()


def test_a_tokenizer_config_that_contradicts_the_vocabulary_is_refused(tmp_path, spm_model):
    """do_lower_case false beside a lowercase spiece.model would record cased text, whose every capital the
    vocabulary cannot encode: refused, naming both files, as the data tools refuse it."""
    from albert_tf.networks.albert_encoder import AlbertEncoder

    encoder = AlbertEncoder(dataclasses.replace(SMALL, vocab_size=AlbertTokenizer(spm_model).vocab_size))
    write_model_dir(encoder, tmp_path / "ours", files={"spm.model": spm_model})
    convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))
    tokenizer_config = tmp_path / "hf" / "tokenizer_config.json"
    tokenizer_config.write_text(json.dumps({**json.loads(tokenizer_config.read_text()), "do_lower_case": False}))
    vocabulary = tmp_path / "hf" / "spiece.model"
    with pytest.raises(ValueError, match=re.escape(
            f"{tokenizer_config} (do_lower_case=False) keeps the text's capitals, but {vocabulary} is a lowercase "
            "vocabulary (none of its pieces has a capital letter)") + ".*correct the record, or pass "
            "do_lower_case=True with force"):
        convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "cased"))
    assert not (tmp_path / "cased").exists()
    convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "forced"), do_lower_case=True, force=True)
    assert read_metadata(str(tmp_path / "forced"))["lower_case"] is True


def test_a_cased_vocabulary_is_not_converted_as_lowercased_text(tmp_path_factory, tmp_path, tf1_tensors):
    """A TF1 checkpoint records no casing: the default (lowercased, as Google's models are) must suit the
    vocabulary given with it."""
    cased = str(train_small_spm(tmp_path_factory, "cased", lower_case=False))
    source = write_tf1(tmp_path, tf1_tensors)
    with pytest.raises(ValueError, match=re.escape(f"the default do_lower_case=True lowercases the text, but {cased} "
                                                   "is a cased vocabulary") + ".*; pass do_lower_case=False$"):
        convert("tf1", "albert_tf", source, str(tmp_path / "lowercased"), spm_model_file=cased)
    convert("tf1", "albert_tf", source, str(tmp_path / "cased"), spm_model_file=cased, do_lower_case=False)
    assert read_metadata(str(tmp_path / "cased"))["lower_case"] is False


def test_a_python_conversion_onto_its_own_input_is_refused_and_leaves_it(tmp_path):
    """Only the command line used to check: convert(X, X, overwrite=True) from Python replaced X by its output."""
    source = tmp_path / "model"
    source.mkdir()
    (source / "albert_tf.json").write_text("{}")
    for output, relation in ((source, "is"), (source / "hf", "lies inside"), (tmp_path, "contains")):
        with pytest.raises(ValueError, match=f"^output_dir={output} {relation} input_path={source}, which this run "
                                             "reads"):
            convert("albert_tf", "huggingface", str(source), str(output), overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["model"] and os.listdir(source) == ["albert_tf.json"]
    assert (source / "albert_tf.json").read_text() == "{}"


def test_pair_truncation_keeps_the_odd_piece_in_text_where_huggingface_keeps_it_in_text_b(tmp_path, spm_model):
    """The rule docs/model_and_conversion.md states: two over-long segments of equal length, both cut to an odd
    room: albert_tf, as the original's _truncate_seq_pair (the longer loses a piece, text_b on ties), keeps the
    odd piece in text; transformers' longest_first gives it to text_b; the longer text_b gets it there too."""
    from albert_tf.checkpoints.huggingface_tokenizer import write_tokenizer_files
    from albert_tf.text.packing import pack
    from albert_tf.text.special_ids import ALBERT_SPECIAL_IDS

    write_tokenizer_files(spm_model, str(tmp_path), model_max_length=96)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path)
    tokenizer = AlbertTokenizer(spm_model)
    text = "the river by the village market and the island beyond the old river"
    ids = tokenizer.encode(text)
    longer = tokenizer.encode(text + " and the market")
    max_seq_length = len(ids) + 3 + (1 - len(ids) % 2)  # an odd room of len(ids) or len(ids) + 1: both are cut
    room = max_seq_length - 3
    assert room % 2 == 1 and room < 2 * len(ids)

    def segment_lengths(type_ids):
        return int(np.sum(np.asarray(type_ids) == 0) - 2), int(np.sum(type_ids) - 1)  # without [CLS] and [SEP]s

    _, mask, type_ids = pack(ids, ids, max_seq_length, ALBERT_SPECIAL_IDS)
    assert (segment_lengths(type_ids[mask == 1]), mask.sum()) == (((room + 1) // 2, room // 2), max_seq_length)
    _, mask, type_ids = pack(ids, longer, max_seq_length, ALBERT_SPECIAL_IDS)
    assert segment_lengths(type_ids[mask == 1]) == ((room + 1) // 2, room // 2)
    theirs = hf_tokenizer(text, text, truncation="longest_first", max_length=max_seq_length)
    assert segment_lengths(theirs["token_type_ids"]) == (room // 2, (room + 1) // 2)
    theirs = hf_tokenizer(text, text + " and the market", truncation="longest_first", max_length=max_seq_length)
    assert segment_lengths(theirs["token_type_ids"]) == (room // 2, (room + 1) // 2)
