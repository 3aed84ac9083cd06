"""Cased models: the vocabulary tool trains a cased vocabulary, and the data tool refuses a vocabulary whose
casing contradicts the data's (a lowercase vocabulary turns every capital of cased text into <unk>)."""

import random
import subprocess
import sys

import pytest

from text_fixtures import SPECIAL_LINES, write_corpus


def tool(name, *flags, cwd=None):
    return subprocess.run([sys.executable, "-m", f"albert_tf.{name}", *flags], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    directory = tmp_path_factory.mktemp("casing")
    path = write_corpus(directory / "corpus.txt", num_documents=40, seed=1)
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n" + "\n".join(SPECIAL_LINES * 3) + "\n")
    return path


@pytest.fixture(scope="module")
def vocabularies(corpus):
    """{casing: .model path}, each trained by the console tool as a user runs it."""
    made = {}
    for casing, flag in (("lowercase", "--do_lower_case"), ("cased", "--nodo_lower_case")):
        prefix = corpus.parent / casing
        result = tool("train_sentencepiece", f"--input={corpus}", f"--output_prefix={prefix}", "--vocab_size=400",
                      "--nohard_vocab_limit", "--num_threads=1", flag)
        assert result.returncode == 0, result.stderr
        assert f"pieces, {casing})" in result.stdout  # the summary says which
        made[casing] = prefix.with_suffix(".model")
    return made


def test_a_cased_vocabulary_keeps_capitals(vocabularies):
    from albert_tf.text.albert_tokenizer import UNK_ID, AlbertTokenizer, vocabulary_casing

    cased = AlbertTokenizer(str(vocabularies["cased"]), lower_case=False)
    lowercase = AlbertTokenizer(str(vocabularies["lowercase"]), lower_case=False)
    assert (vocabulary_casing(cased), vocabulary_casing(lowercase)) == ("cased", "lowercase")
    text = "THE River was Old"
    assert UNK_ID not in cased.encode(text)
    assert "".join(cased.tokenize(text)).replace("\u2581", " ").strip() == text
    assert UNK_ID in lowercase.encode(text)  # what the data tool now refuses


def test_the_data_tool_refuses_a_vocabulary_of_the_other_casing(corpus, vocabularies, tmp_path):
    common = [f"--input_file={corpus}", "--max_seq_length=32", "--dupe_factor=1", "--num_workers=1"]
    refused = tool("create_pretraining_data", *common, f"--output_file={tmp_path / 'a'}",
                   f"--spm_model_file={vocabularies['lowercase']}", "--nodo_lower_case")
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "lowercase vocabulary" in lines[0] and "--do_lower_case=False" in lines[0], lines
    assert str(vocabularies["lowercase"]) in lines[0]

    refused = tool("create_pretraining_data", *common, f"--output_file={tmp_path / 'b'}",
                   f"--spm_model_file={vocabularies['cased']}")
    assert refused.returncode == 1 and "cased vocabulary" in refused.stderr and "--do_lower_case=True" in refused.stderr
    assert not list(tmp_path.iterdir())  # refused before anything was written

    made = tool("create_pretraining_data", *common, f"--output_file={tmp_path / 'c'}",
                f"--spm_model_file={vocabularies['cased']}", "--nodo_lower_case")
    assert made.returncode == 0, made.stderr
    import json

    metadata = json.loads((tmp_path / "c.metadata.json").read_text())
    assert metadata["config"]["lower_case"] is False


def test_the_beam_pipeline_refuses_it_too(corpus, vocabularies, tmp_path):
    pytest.importorskip("apache_beam")
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.create_pretraining_data", f"--input_file={corpus}",
         f"--output_file={tmp_path / 'a'}", f"--spm_model_file={vocabularies['lowercase']}", "--nodo_lower_case",
         "--runner=FnApiRunner"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "lowercase vocabulary" in result.stderr, result.stderr[-2000:]


def test_a_script_without_case_is_neither(tmp_path):
    from albert_tf.data.vocabulary import train
    from albert_tf.text.albert_tokenizer import AlbertTokenizer, check_vocabulary_casing, vocabulary_casing

    rng = random.Random(0)
    characters = [chr(codepoint) for codepoint in range(0x4E00, 0x4E00 + 60)]
    lines = ["".join(rng.choice(characters) for _ in range(rng.randint(5, 30))) for _ in range(300)]
    (tmp_path / "zh.txt").write_text("\n".join(lines), encoding="utf-8")
    train([str(tmp_path / "zh.txt")], str(tmp_path / "zh"), vocab_size=150, hard_vocab_limit=False, num_threads=1)
    tokenizer = AlbertTokenizer(str(tmp_path / "zh.model"))
    assert vocabulary_casing(tokenizer) == "caseless"
    check_vocabulary_casing(tokenizer, lower_case=False)  # nothing to contradict
    check_vocabulary_casing(tokenizer, lower_case=True)


def test_googles_vocabulary_reads_as_lowercase(shared_data):
    from albert_tf.text.albert_tokenizer import AlbertTokenizer, check_vocabulary_casing, vocabulary_casing

    tokenizer = AlbertTokenizer(str(shared_data / "albert_base_v2_release" / "30k-clean.model"))
    assert vocabulary_casing(tokenizer) == "lowercase"
    with pytest.raises(ValueError, match="lowercase vocabulary"):
        check_vocabulary_casing(tokenizer, lower_case=False)


def test_accents_kept_from_the_vocabulary_to_the_export(corpus, tmp_path):
    """--keep_accents (the original always strips them): the vocabulary, the data, and every tool after
    them keep the accents the model was trained with."""
    import json

    import tensorflow as tf

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.checkpoints.conversion import convert
    from albert_tf.export_lib.exporter import export
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.models.inference_model import open_for_inference
    from albert_tf.models.model_dir_format import read_metadata
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.text.albert_tokenizer import AlbertTokenizer, vocabulary_has_accents

    prefix = tmp_path / "accents"
    trained = tool("train_sentencepiece", f"--input={corpus}", f"--output_prefix={prefix}", "--vocab_size=400",
                   "--nohard_vocab_limit", "--num_threads=1", "--keep_accents")
    assert trained.returncode == 0 and "accents kept" in trained.stdout, trained.stderr
    spm = str(prefix.with_suffix(".model"))
    tokenizer = AlbertTokenizer(spm, keep_accents=True)
    assert vocabulary_has_accents(tokenizer)
    text = "Café déjà vu"
    ids = tokenizer.encode(text)
    assert ids != AlbertTokenizer(spm).encode(text) and "é" in "".join(tokenizer.tokenize(text))

    common = [f"--input_file={corpus}", f"--spm_model_file={spm}", "--max_seq_length=32", "--dupe_factor=1",
              "--num_workers=1"]
    refused = tool("create_pretraining_data", *common, f"--output_file={tmp_path / 'a'}", "--nokeep_accents")
    assert refused.returncode == 1 and "trained with accents kept" in refused.stderr
    assert "--keep_accents=True" in refused.stderr
    made = tool("create_pretraining_data", *common, f"--output_file={tmp_path / 'b'}")  # the vocabulary's choice
    assert made.returncode == 0, made.stderr
    assert json.loads((tmp_path / "b.metadata.json").read_text())["config"]["keep_accents"] is True

    config = AlbertConfig.from_preset("albert_tiny", vocab_size=tokenizer.vocab_size, num_hidden_layers=1)
    model_dir = write_model_dir(AlbertPretrainer(config), str(tmp_path / "model"), files={"spm.model": spm},
                                max_seq_length=16, lower_case=True, keep_accents=True)
    assert open_for_inference(model_dir, "encoder").tokenizer.keep_accents is True

    export(model_dir, str(tmp_path / "export"), serving_warmup_batch_sizes=())
    assert read_metadata(str(tmp_path / "export"))["keep_accents"] is True
    preprocessing = tf.saved_model.load(str(tmp_path / "export" / "preprocessing"))
    served = preprocessing(tf.constant([text]))["input_word_ids"].numpy()[0]
    assert list(served[1:1 + len(ids)]) == ids

    convert("albert_tf", "huggingface", model_dir, str(tmp_path / "hf"))
    assert json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())["keep_accents"] is True
    convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "back"))
    assert read_metadata(str(tmp_path / "back"))["keep_accents"] is True
