"""Every tool that takes a model and a vocabulary compares them, as fine-tuning does: another SentencePiece model
than the one stored with the model is refused (its ids index other rows of the embeddings), and so is one with
more pieces than the model has rows. And fill-mask answers in words: at least one candidate, never the bare
word-start piece."""

import os
import subprocess
import sys

import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.models.embedder import Embedder
from albert_tf.models.mask_filler import MaskFiller
from albert_tf.models.model_io import write_model_dir
from albert_tf.text.albert_tokenizer import SPIECE_UNDERLINE, AlbertTokenizer
from text_fixtures import train_small_spm


@pytest.fixture(scope="module")
def vocabularies(tmp_path_factory):
    return {"own": train_small_spm(tmp_path_factory, name="own_spm", vocab_size=400),
            "other": train_small_spm(tmp_path_factory, name="other_spm", vocab_size=300)}


@pytest.fixture(scope="module")
def pretrainer(tmp_path_factory, vocabularies):
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=AlbertTokenizer(str(vocabularies["own"])).vocab_size,
                                      num_hidden_layers=1)
    model = AlbertPretrainer(config)
    directory = tmp_path_factory.mktemp("models")
    # As the tools write them: with the quote rule (a directory without one gets a note on stderr).
    with_vocabulary = write_model_dir(model, str(directory / "with"), files={"spm.model": str(vocabularies["own"])},
                                      max_seq_length=32, rewrite_quotes=False)
    without_vocabulary = write_model_dir(model, str(directory / "without"), max_seq_length=32, rewrite_quotes=False)
    return {"with": with_vocabulary, "without": without_vocabulary}


def tool(name, *flags):
    return subprocess.run([sys.executable, "-m", f"albert_tf.{name}", *flags], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)


def test_another_vocabulary_than_the_models_is_refused(pretrainer, vocabularies):
    for opener in (MaskFiller, Embedder):
        with pytest.raises(ValueError, match="is not the SentencePiece model stored with"):
            opener(pretrainer["with"], spm_model_file=str(vocabularies["other"]))
        opener(pretrainer["with"], spm_model_file=str(vocabularies["own"]))  # the same one, by content: fine
    # A model without its vocabulary takes the one given, if the model has a row for every piece.
    MaskFiller(pretrainer["without"], spm_model_file=str(vocabularies["other"]))


def test_a_vocabulary_larger_than_the_model_is_refused(tmp_path, vocabularies):
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=300, num_hidden_layers=1)
    small = write_model_dir(AlbertPretrainer(config), str(tmp_path / "small"), max_seq_length=32)
    pieces = AlbertTokenizer(str(vocabularies["own"])).vocab_size
    assert pieces > 300
    with pytest.raises(ValueError, match=f"{pieces} pieces, more than the model's vocab_size 300"):
        MaskFiller(small, spm_model_file=str(vocabularies["own"]))


def test_fill_mask_tool_refuses_another_vocabulary_and_a_zero_top_k(pretrainer, vocabularies):
    refused = tool("fill_mask", f"--model={pretrainer['with']}", "--text=the [MASK] river",
                   f"--spm_model_file={vocabularies['other']}")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines() == [
        f"albert_tf.fill_mask: error: --spm_model_file={vocabularies['other']} is not the SentencePiece model stored "
        f"with {pretrainer['with']} ({pretrainer['with']}/spm.model): its ids would index other rows of the model's "
        "embeddings. Leave --spm_model_file unset to use the model's own"]
    zero = tool("fill_mask", f"--model={pretrainer['with']}", "--text=the [MASK] river", "--top_k=0")
    assert zero.returncode == 1 and "Traceback" not in zero.stderr and "--top_k" in zero.stderr, zero.stderr


def test_fill_mask_proposes_words_only(pretrainer):
    filler = MaskFiller(pretrainer["with"])
    with pytest.raises(ValueError, match="top_k=0: must be a whole number of candidates, at least 1"):
        filler("the [MASK] river", top_k=0)
    with pytest.raises(ValueError, match="top_k=-1"):
        filler("the [MASK] river", top_k=-1)
    bare = filler.tokenizer.piece_to_id(SPIECE_UNDERLINE)
    assert filler.tokenizer.id_to_piece(bare) == SPIECE_UNDERLINE  # the vocabulary has the bare piece
    every = filler("the [MASK] river", top_k=filler.tokenizer.vocab_size)[0]
    assert bare not in {candidate["token"] for candidate in every}
    assert all(candidate["token_str"].strip() for candidate in every)
    assert len(every) == filler.tokenizer.vocab_size - 5 - 1  # all but the special pieces and the bare one


def test_export_refuses_another_vocabulary(pretrainer, vocabularies, tmp_path):
    from albert_tf.export_lib.exporter import export

    with pytest.raises(ValueError, match="is not the SentencePiece model stored with"):
        export(pretrainer["with"], str(tmp_path / "export"), spm_model_file=str(vocabularies["other"]))
    assert not (tmp_path / "export").exists()


def test_convert_refuses_another_vocabulary(pretrainer, vocabularies, tmp_path):
    from albert_tf.checkpoints.conversion import convert

    with pytest.raises(ValueError, match="is not the SentencePiece model stored with"):
        convert("albert_tf", "huggingface", pretrainer["with"], str(tmp_path / "hf"),
                spm_model_file=str(vocabularies["other"]))
    assert not (tmp_path / "hf").exists()
    convert("albert_tf", "huggingface", pretrainer["with"], str(tmp_path / "hf"),
            spm_model_file=str(vocabularies["own"]))  # the same one, by content
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == vocabularies["own"].read_bytes()
