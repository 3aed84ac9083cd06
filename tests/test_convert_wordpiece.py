"""Converting the ALBERTs whose vocabulary is a WordPiece vocab.txt (Google's albert_*_zh, brightmart's, ckiplab's
and kykim's): from the original's layout (albert_config.json with hidden_act relu, model.ckpt-best,
vocab_chinese.txt), from a Hugging Face AlbertModel beside a BertTokenizerFast's vocab.txt, and to Hugging Face,
where transformers' AutoTokenizer and AutoModel load the output and agree with albert_tf."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import transformers

import huggingface_oracle as oracle
from albert_tf.albert_config import AlbertConfig
from albert_tf.checkpoints.conversion import convert
from albert_tf.checkpoints.tf1_format import write_tf1_checkpoint
from albert_tf.data.wordpiece_vocabulary import bert_layout
from albert_tf.models.model_dir_format import read_metadata
from albert_tf.models.model_io import load_encoder, load_pretrainer
from albert_tf.settings import SettingError
from albert_tf.text.wordpiece_tokenizer import WordPieceTokenizer

CHINESE = list("北京欢迎你我们今天去公园散步這是繁體中文的句子鲁迅作家东大阪日本都市")
ENGLISH = ["the", "cat", "##s", "run", "##ning", "in", "paris", "london", "cafe", "café", "love", "and", "are",
           "is", "a", "##b", "##c", "good", "day", ".", ",", "!", "?", "！", "。", "，"]
# A lowercase vocabulary (Google's vocab_chinese.txt is one) and a cased one (kykim's Korean model keeps case).
LOWERCASE_PIECES = bert_layout(CHINESE + ENGLISH)
CASED_PIECES = bert_layout(CHINESE + ENGLISH + ["The", "Cat", "Paris", "London", "Café", "Love", "Good", "Day"])
TEXTS = ["北京欢迎你！我们今天去公园散步。", "這是繁體中文的句子，鲁迅是作家。", "The cats are running in Paris.",
         "我们 love 北京 and London!", "Café day, a good cafe?", "unknown words 東京 stay unknown"]


def tiny_config(vocab_size):
    # Google's Chinese ALBERTs use relu, not gelu.
    return AlbertConfig(vocab_size=vocab_size, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=32, hidden_act="relu")


def write_vocabulary(path, pieces):
    path.write_text("".join(piece + "\n" for piece in pieces), encoding="utf-8")
    return str(path)


def write_google_chinese_release(directory, config, tensors, pieces):
    """The albert_*_zh layout: albert_config.json with the original's keys (layers_to_keep among them),
    model.ckpt-best and vocab_chinese.txt, no SentencePiece model."""
    directory.mkdir(parents=True, exist_ok=True)
    write_tf1_checkpoint(tensors, str(directory / "model.ckpt-best"))
    original = {**config.to_dict(), "down_scale_factor": 1, "gap_size": 0, "net_structure_type": 0,
                "num_memory_blocks": 0, "layers_to_keep": []}
    del original["sharing"]  # the original has no such key
    (directory / "albert_config.json").write_text(json.dumps(original, indent=2))
    write_vocabulary(directory / "vocab_chinese.txt", pieces)
    return str(directory / "model.ckpt-best"), str(directory / "vocab_chinese.txt")


def model_inputs(ids_batch, length=24):
    ids = np.zeros((len(ids_batch), length), np.int32)
    mask = np.zeros_like(ids)
    for row, ids_of_row in enumerate(ids_batch):
        ids[row, :len(ids_of_row)] = ids_of_row
        mask[row, :len(ids_of_row)] = 1
    types = (np.arange(length) >= 5).astype(np.int32) * mask
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def with_special(tokenizer, text):
    ids = tokenizer.special_ids
    return [ids.cls, *tokenizer.encode(text), ids.sep]


@pytest.fixture(scope="module")
def google_release(tmp_path_factory):
    """A random Hugging Face AlbertForPreTraining (the oracle) and its tensors in the original's names, written in
    the albert_*_zh layout."""
    config = tiny_config(len(LOWERCASE_PIECES))
    hf_model = oracle.random_pretraining_model(config)
    work = tmp_path_factory.mktemp("albert_zh")
    checkpoint, vocab = write_google_chinese_release(work / "albert_tiny_zh", config,
                                                     oracle.original_tf1_tensors(hf_model, config), LOWERCASE_PIECES)
    return work, hf_model, checkpoint, vocab


@pytest.fixture(scope="module")
def converted(google_release):
    """--from=tf1 --vocab_file=vocab_chinese.txt, then --to=huggingface of that."""
    work, _, checkpoint, vocab = google_release
    summary = convert("tf1", "albert_tf", checkpoint, str(work / "ours"), vocab_file=vocab)
    convert("albert_tf", "huggingface", str(work / "ours"), str(work / "hf"))
    return work, summary


def test_the_google_chinese_layout_converts_with_its_vocab_txt_and_record(google_release, converted):
    work, hf_model, _, vocab = google_release
    _, summary = converted
    ours = work / "ours"
    assert (ours / "vocab.txt").read_bytes() == open(vocab, "rb").read()
    assert not (ours / "spm.model").exists()
    metadata = read_metadata(str(ours))
    assert metadata["vocabulary"] == "wordpiece"
    assert (metadata["lower_case"], metadata["keep_accents"], metadata["rewrite_quotes"]) == (True, False, False)
    assert metadata["albert_config"]["hidden_act"] == "relu"
    assert summary["vocabulary"] == "wordpiece" and summary["vocabulary_size"] == len(LOWERCASE_PIECES)
    assert (summary["lower_case"], summary["keep_accents"]) == (True, False)

    # The pretrainer's outputs are the oracle's on the WordPiece tokenizer's ids.
    tokenizer = WordPieceTokenizer(vocab_file=vocab)
    inputs = model_inputs([with_special(tokenizer, text) for text in TEXTS[:3]])
    positions = np.tile(np.arange(6, dtype=np.int32), (3, 1))
    ours_out = load_pretrainer(str(ours))({**inputs, "masked_lm_positions": positions})
    expected = oracle.run_pretraining_model(hf_model, inputs, positions)
    for name in ("sequence_output", "pooled_output", "mlm_logits", "sop_logits"):
        np.testing.assert_allclose(np.asarray(ours_out[name]), expected[name], atol=1e-4, err_msg=name)


def test_the_huggingface_output_loads_with_auto_classes_and_agrees(google_release, converted):
    """AutoTokenizer gives the WordPiece tokenizer's ids with [CLS] and [SEP]; AutoModel gives albert_tf's outputs."""
    import torch

    work, _, _, vocab = google_release
    hf = work / "hf"
    assert (hf / "vocab.txt").read_bytes() == open(vocab, "rb").read()
    tokenizer_config = json.loads((hf / "tokenizer_config.json").read_text())
    assert tokenizer_config["tokenizer_class"] == "BertTokenizer"
    assert (tokenizer_config["do_lower_case"], tokenizer_config["strip_accents"],
            tokenizer_config["tokenize_chinese_chars"]) == (True, True, True)
    hf_config = json.loads((hf / "config.json").read_text())
    assert (hf_config["pad_token_id"], hf_config["bos_token_id"], hf_config["eos_token_id"]) == (0, 101, 102)

    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(hf)
    ours = WordPieceTokenizer(vocab_file=vocab)
    for text in TEXTS:
        assert hf_tokenizer(text)["input_ids"] == with_special(ours, text), text
    assert (hf_tokenizer.pad_token_id, hf_tokenizer.unk_token_id, hf_tokenizer.cls_token_id,
            hf_tokenizer.sep_token_id, hf_tokenizer.mask_token_id) == tuple(vars(ours.special_ids).values())

    batch = hf_tokenizer(TEXTS[:4], padding="max_length", max_length=24, truncation=True, return_tensors="pt")
    hf_model = transformers.AutoModelForPreTraining.from_pretrained(hf).eval()
    with torch.no_grad():
        theirs = hf_model(**batch, output_hidden_states=True)
        base = transformers.AutoModel.from_pretrained(hf).eval()(**batch)
    inputs = {"input_word_ids": batch["input_ids"].numpy().astype(np.int32),
              "input_mask": batch["attention_mask"].numpy().astype(np.int32),
              "input_type_ids": batch["token_type_ids"].numpy().astype(np.int32)}
    pretrainer = load_pretrainer(str(work / "ours"))
    outputs = pretrainer({**inputs, "masked_lm_positions": np.tile(np.arange(24, dtype=np.int32), (4, 1))})
    np.testing.assert_allclose(np.asarray(outputs["mlm_logits"]), theirs.prediction_logits.numpy(), atol=1e-4)
    np.testing.assert_allclose(np.asarray(outputs["sop_logits"]), theirs.sop_logits.numpy(), atol=1e-4)
    np.testing.assert_allclose(np.asarray(outputs["sequence_output"]), base.last_hidden_state.detach().numpy(),
                               atol=1e-4)


def test_albert_tf_to_huggingface_and_back_keeps_weights_vocabulary_and_record(converted):
    work, _ = converted
    summary = convert("huggingface", "albert_tf", str(work / "hf"), str(work / "back"))
    assert summary["vocabulary"] == "wordpiece"
    assert (work / "back" / "vocab.txt").read_bytes() == (work / "ours" / "vocab.txt").read_bytes()
    keys = ("model", "vocabulary", "lower_case", "keep_accents", "rewrite_quotes", "albert_config")
    before, after = read_metadata(str(work / "ours")), read_metadata(str(work / "back"))
    assert {key: after[key] for key in keys} == {key: before[key] for key in keys}
    for original, back in zip(load_pretrainer(str(work / "ours")).weights, load_pretrainer(str(work / "back")).weights,
                              strict=True):
        np.testing.assert_array_equal(back.numpy(), original.numpy(), err_msg=original.path)
    # And to the original's layout: the checkpoint, its config and the vocabulary by BERT's name.
    convert("albert_tf", "tf1", str(work / "back"), str(work / "tf1"))
    assert (work / "tf1" / "vocab.txt").read_bytes() == (work / "ours" / "vocab.txt").read_bytes()
    assert json.loads((work / "tf1" / "albert_config.json").read_text())["hidden_act"] == "relu"


def huggingface_albert_with_bert_vocabulary(directory, pieces, tokenizer_config=None, class_in_config=False):
    """A Hugging Face AlbertModel saved beside a BertTokenizerFast's vocab.txt, as kykim's and ckiplab's are:
    tokenizer_config.json (when given) or config.json (`class_in_config`) names the class."""
    model = oracle.random_pretraining_model(tiny_config(len(pieces)), seed=4, model_class=transformers.AlbertModel)
    if class_in_config:
        model.config.tokenizer_class = "BertTokenizerFast"
    model.save_pretrained(directory)
    write_vocabulary(directory / "vocab.txt", pieces)
    if tokenizer_config is not None:
        (directory / "tokenizer_config.json").write_text(json.dumps(
            {"tokenizer_class": "BertTokenizerFast", "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
             "cls_token": "[CLS]", "mask_token": "[MASK]", **tokenizer_config}))
    return model


def test_a_cased_huggingface_albert_with_a_bert_tokenizer_converts_and_computes_the_same(tmp_path):
    """kykim's layout: do_lower_case false, strip_accents false; the encoder's outputs are the model's."""
    import torch

    hf = tmp_path / "hf"
    hf_model = huggingface_albert_with_bert_vocabulary(hf, CASED_PIECES,
                                                       {"do_lower_case": False, "strip_accents": False})
    summary = convert("huggingface", "albert_tf", str(hf), str(tmp_path / "ours"))
    assert (summary["kind"], summary["vocabulary"], summary["lower_case"], summary["keep_accents"]) == (
        "encoder", "wordpiece", False, True)
    metadata = read_metadata(str(tmp_path / "ours"))
    assert (metadata["vocabulary"], metadata["lower_case"], metadata["keep_accents"], metadata["rewrite_quotes"]) == (
        "wordpiece", False, True, False)
    assert (tmp_path / "ours" / "vocab.txt").read_bytes() == (hf / "vocab.txt").read_bytes()

    tokenizer = WordPieceTokenizer(vocab_file=str(hf / "vocab.txt"), lower_case=False)
    inputs = model_inputs([with_special(tokenizer, text) for text in TEXTS[2:5]])
    outputs = load_encoder(str(tmp_path / "ours"))(inputs)
    with torch.no_grad():
        theirs = hf_model(input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
                          attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
                          token_type_ids=torch.tensor(inputs["input_type_ids"], dtype=torch.long))
    np.testing.assert_allclose(np.asarray(outputs["sequence_output"]), theirs.last_hidden_state.numpy(), atol=1e-4)
    np.testing.assert_allclose(np.asarray(outputs["pooled_output"]), theirs.pooler_output.numpy(), atol=1e-4)

    # Back to Hugging Face: a cased BertTokenizer that keeps accents, the ids of albert_tf's tokenizer.
    convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf_again"))
    written = json.loads((tmp_path / "hf_again" / "tokenizer_config.json").read_text())
    assert (written["do_lower_case"], written["strip_accents"]) == (False, False)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf_again")
    for text in TEXTS:
        assert hf_tokenizer(text)["input_ids"] == with_special(tokenizer, text), text


# do_lower_case and strip_accents of tokenizer_config.json (None: not in the file) -> lower_case, keep_accents.
CASING_MAP = [
    (None, None, True, False),
    (True, None, True, False),
    (True, True, True, False),
    (True, False, True, True),  # lowercased, accents kept
    (False, None, False, True),
    (False, False, False, True),
]


@pytest.mark.parametrize("do_lower_case, strip_accents, lower_case, keep_accents", CASING_MAP)
def test_huggingface_casing_maps_onto_the_record(tmp_path, do_lower_case, strip_accents, lower_case, keep_accents):
    stated = {key: value for key, value in (("do_lower_case", do_lower_case), ("strip_accents", strip_accents))
              if value is not None}
    pieces = CASED_PIECES if do_lower_case is False else LOWERCASE_PIECES
    huggingface_albert_with_bert_vocabulary(tmp_path / "hf", pieces, stated)
    convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "ours"))
    metadata = read_metadata(str(tmp_path / "ours"))
    assert (metadata["lower_case"], metadata["keep_accents"]) == (lower_case, keep_accents)
    # The tokenizer the record builds is the one Hugging Face's settings describe.
    ours = WordPieceTokenizer(vocab_file=str(tmp_path / "ours" / "vocab.txt"), lower_case=lower_case,
                              strip_accents=lower_case and not keep_accents)
    theirs = transformers.BertTokenizer(vocab=str(tmp_path / "hf" / "vocab.txt"), **stated)
    for text in TEXTS:
        assert theirs(text)["input_ids"] == with_special(ours, text), text


def test_a_tokenizer_class_in_config_json_alone_is_read(tmp_path):
    """ckiplab's layout: config.json names BertTokenizerFast, no tokenizer_config.json: BertTokenizer's defaults."""
    huggingface_albert_with_bert_vocabulary(tmp_path / "hf", LOWERCASE_PIECES, class_in_config=True)
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["tokenizer_class"] == "BertTokenizerFast"
    summary = convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert (summary["vocabulary"], summary["lower_case"], summary["keep_accents"]) == ("wordpiece", True, False)


def test_a_bert_tokenizer_saved_without_its_vocab_txt_takes_it_as_vocab_file(tmp_path):
    """transformers 5 saves a BertTokenizer as tokenizer.json alone: the directory's settings still apply, with the
    vocabulary passed as vocab_file."""
    huggingface_albert_with_bert_vocabulary(tmp_path / "hf", CASED_PIECES, {"do_lower_case": False})
    vocab = str((tmp_path / "hf" / "vocab.txt").rename(tmp_path / "vocab.txt"))
    assert_refused(r"hf: its tokenizer is BERT's WordPiece \(its tokenizer_class\), but it holds no vocab.txt .*pass "
                   "the vocabulary as vocab_file", "huggingface", "albert_tf", str(tmp_path / "hf"),
                   str(tmp_path / "ours"))
    summary = convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "ours"), vocab_file=vocab)
    assert (summary["vocabulary"], summary["lower_case"], summary["keep_accents"]) == ("wordpiece", False, True)
    assert (tmp_path / "ours" / "vocab.txt").read_bytes() == open(vocab, "rb").read()


def assert_refused(match, *args, **kwargs):
    with pytest.raises(SettingError, match=match) as refused:
        convert(*args, **kwargs)
    assert "\n" not in str(refused.value)
    assert not os.path.exists(args[3])


@pytest.mark.parametrize("stated, key", [({"do_lower_case": False, "strip_accents": True}, "strip_accents"),
                                         ({"tokenize_chinese_chars": False}, "tokenize_chinese_chars"),
                                         ({"unk_token": "<unk>"}, "unk_token")])
def test_what_the_record_cannot_express_is_refused_naming_file_and_key(tmp_path, stated, key):
    huggingface_albert_with_bert_vocabulary(tmp_path / "hf", CASED_PIECES, stated)
    tokenizer_config = re.escape(str(tmp_path / "hf" / "tokenizer_config.json"))
    assert_refused(f'^{tokenizer_config}: "{key}" (true|is)', "huggingface", "albert_tf", str(tmp_path / "hf"),
                   str(tmp_path / "ours"))


def test_a_vocab_txt_of_another_tokenizer_class_is_refused(tmp_path):
    huggingface_albert_with_bert_vocabulary(tmp_path / "hf", LOWERCASE_PIECES, {"tokenizer_class": "XLNetTokenizer"})
    assert_refused(r'tokenizer_config.json: "tokenizer_class" is \'XLNetTokenizer\', but the vocabulary beside it is',
                   "huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "ours"))


@pytest.mark.parametrize("missing", ["[CLS]", "[SEP]", "[MASK]", "[UNK]"])
def test_a_vocab_txt_without_berts_special_lines_is_refused(tmp_path, missing):
    pieces = [piece if piece != missing else "[unused0]" for piece in LOWERCASE_PIECES]
    huggingface_albert_with_bert_vocabulary(tmp_path / "hf", pieces, {})
    assert_refused(rf"vocab.txt: not a BERT WordPiece vocabulary: no \{missing[:-1]}\] line", "huggingface",
                   "albert_tf", str(tmp_path / "hf"), str(tmp_path / "ours"))


def test_a_vocabulary_of_another_size_than_the_embeddings_is_refused(google_release, tmp_path):
    _, _, checkpoint, _ = google_release
    shorter = write_vocabulary(tmp_path / "vocab.txt", LOWERCASE_PIECES[:-1])
    assert_refused(rf"vocab.txt: a WordPiece vocabulary of {len(LOWERCASE_PIECES) - 1} pieces, but the word "
                   rf"embeddings of .* have {len(LOWERCASE_PIECES)} rows", "tf1", "albert_tf", checkpoint,
                   str(tmp_path / "ours"), vocab_file=shorter)
    huggingface_albert_with_bert_vocabulary(tmp_path / "hf", LOWERCASE_PIECES, {})
    write_vocabulary(tmp_path / "hf" / "vocab.txt", LOWERCASE_PIECES + ["extra"])
    assert_refused(r"a WordPiece vocabulary of \d+ pieces, but the word embeddings", "huggingface", "albert_tf",
                   str(tmp_path / "hf"), str(tmp_path / "from_hf"))


def test_both_vocabularies_and_a_vocabulary_not_the_models_are_refused(google_release, converted, tmp_path):
    work, _, checkpoint, vocab = google_release
    (tmp_path / "spm.model").write_bytes(b"not read")
    assert_refused("pass spm_model_file .* or vocab_file .*, not both", "tf1", "albert_tf", checkpoint,
                   str(tmp_path / "out"), vocab_file=vocab, spm_model_file=str(tmp_path / "spm.model"))
    other = write_vocabulary(tmp_path / "other.txt", list(reversed(LOWERCASE_PIECES)))
    assert_refused(r"vocab_file=.*other.txt is not the WordPiece vocabulary stored with", "albert_tf", "huggingface",
                   str(work / "ours"), str(tmp_path / "out"), vocab_file=other)
    assert_refused(r"spm_model_file=.*: the vocabulary of .* is a WordPiece vocabulary .*leave spm_model_file unset",
                   "albert_tf", "huggingface", str(work / "ours"), str(tmp_path / "out"),
                   spm_model_file=str(tmp_path / "spm.model"))


def test_a_cased_vocabulary_is_not_recorded_as_lowercased_text(google_release, tmp_path):
    """The original's checkpoint records no casing: the default (lowercased) must suit the vocab_file's pieces."""
    work, _, _, _ = google_release
    config = tiny_config(len(CASED_PIECES))
    tensors = oracle.original_tf1_tensors(oracle.random_pretraining_model(config), config)
    checkpoint, vocab = write_google_chinese_release(tmp_path / "cased", config, tensors, CASED_PIECES)
    assert_refused("the default do_lower_case=True lowercases the text, but .* is a cased vocabulary", "tf1",
                   "albert_tf", checkpoint, str(tmp_path / "ours"), vocab_file=vocab)
    summary = convert("tf1", "albert_tf", checkpoint, str(tmp_path / "ours"), vocab_file=vocab, do_lower_case=False)
    assert (summary["lower_case"], summary["keep_accents"]) == (False, True)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "albert_tf.convert", *args], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def test_the_command_line_says_what_the_vocabulary_is(google_release, tmp_path):
    _, _, checkpoint, vocab = google_release
    result = run_cli("--from=tf1", f"--input={checkpoint}", f"--vocab_file={vocab}", f"--output={tmp_path / 'out'}")
    assert result.returncode == 0, result.stderr
    assert (f"(a WordPiece vocabulary of {len(LOWERCASE_PIECES):,} pieces, lowercased text, accents stripped)"
            in result.stdout)
    assert "``" not in result.stdout
    result = run_cli("--from=tf1", f"--input={checkpoint}", f"--vocab_file={vocab}", f"--spm_model_file={vocab}",
                     f"--output={tmp_path / 'both'}")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "albert_tf.convert: error: pass --spm_model_file (a SentencePiece model) or --vocab_file (a WordPiece "
        "vocab.txt), not both")
