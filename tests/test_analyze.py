"""albert_tf.analyze (Figure 2, Table 2) and the built-in demo corpus."""

import json
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.models.layer_analysis import layer_transitions, pack_passages
from albert_tf.models.model_io import write_model_dir
from albert_tf.data.builtin_corpus import write_corpus
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from text_fixtures import train_small_spm, write_corpus as write_test_corpus


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return train_small_spm(tmp_path_factory)


def tiny(sharing, vocab_size):
    return AlbertConfig.from_preset("albert_tiny", sharing=sharing, vocab_size=vocab_size)


def test_layer_transitions_measure_each_layers_change(spm_model, tmp_path):
    tokenizer = AlbertTokenizer(str(spm_model))
    encoder = AlbertEncoder(tiny("all", tokenizer.vocab_size))
    passages = write_test_corpus(tmp_path / "c.txt", num_documents=6).read_text().splitlines()
    inputs = pack_passages(passages, tokenizer, 32, 4)
    assert inputs["input_word_ids"].shape == (4, 32) and (inputs["input_word_ids"][:, 0] == 2).all()
    result = layer_transitions(encoder, inputs)
    outputs = [np.asarray(x) for x in encoder(inputs)["encoder_outputs"]]
    for layer in range(1, 4):  # computed directly from consecutive layer outputs
        before, after = outputs[layer - 1].reshape(-1, 128), outputs[layer].reshape(-1, 128)
        np.testing.assert_allclose(result["l2_distance"][layer], np.linalg.norm(after - before, axis=1).mean(), rtol=1e-4)
        cosine = (before * after).sum(1) / np.linalg.norm(before, axis=1) / np.linalg.norm(after, axis=1)
        np.testing.assert_allclose(result["cosine_angle_degrees"][layer],
                                   np.degrees(np.arccos(np.clip(cosine, -1, 1))).mean(), rtol=1e-3)
    assert len(result["l2_distance"]) == 4


def test_cli_compares_shared_and_not_shared(spm_model, tmp_path):
    vocab = AlbertTokenizer(str(spm_model)).vocab_size
    paths = []
    for sharing in ("all", "none"):
        path = tmp_path / sharing
        write_model_dir(AlbertEncoder(tiny(sharing, vocab)), str(path), "encoder", files={"spm.model": str(spm_model)})
        paths.append(f"{'ALBERT' if sharing == 'all' else 'not-shared'}={path}")
    text = write_test_corpus(tmp_path / "text.txt", num_documents=8)
    result = subprocess.run([sys.executable, "-m", "albert_tf.analyze", f"--checkpoint={','.join(paths)}",
                             f"--input_file={text}", "--max_seq_length=32", "--num_sequences=4",
                             f"--output_dir={tmp_path / 'out'}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    figure = json.loads((tmp_path / "out" / "figure2.json").read_text())
    assert set(figure) == {"ALBERT", "not-shared"} and all(len(v["l2_distance"]) == 4 for v in figure.values())
    assert (tmp_path / "out" / "figure2_l2.png").stat().st_size > 1000
    assert (tmp_path / "out" / "figure2_cosine.png").stat().st_size > 1000
    # Table 2: the not-shared model has four blocks' worth of layer parameters, ALBERT one.
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.startswith(("ALBERT", "not-shared"))}
    assert len(lines) == 2 and lines["ALBERT"] != lines["not-shared"]
    missing = subprocess.run([sys.executable, "-m", "albert_tf.analyze", f"--checkpoint={tmp_path / 'nope'}"],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "nope" in missing.stderr and "Traceback" not in missing.stderr


def test_builtin_corpus_is_prose_and_deterministic(tmp_path):
    documents, size = write_corpus(str(tmp_path / "a.txt"), max_bytes=300_000)
    write_corpus(str(tmp_path / "b.txt"), max_bytes=300_000)
    text = (tmp_path / "a.txt").read_text(encoding="utf-8")
    assert text == (tmp_path / "b.txt").read_text(encoding="utf-8")
    assert documents >= 20 and 100_000 < size <= 300_000 and len(text.encode()) == size
    lines = [line for line in text.splitlines() if line]
    assert not any(line.lstrip().startswith(">>>") for line in lines)
    assert sum(len(line.split()) for line in lines) / len(lines) > 8  # paragraphs of prose


def test_an_existing_figure2_json_is_replaced_only_with_overwrite(tmp_path):
    """analyze replaced a user's figure2.json without being asked; it is refused in one line before any work
    (here: before the checkpoint, which does not exist, is read)."""
    output = tmp_path / "out"
    output.mkdir()
    (output / "figure2.json").write_text("the user's own figure")

    def analyze(*flags):
        return subprocess.run([sys.executable, "-m", "albert_tf.analyze", f"--checkpoint={tmp_path / 'nope'}",
                               f"--output_dir={output}", *flags], capture_output=True, text=True)

    refused = analyze()
    assert refused.returncode == 1, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert line.endswith(f"error: {output / 'figure2.json'} exists; choose another path or pass --overwrite")
    allowed = analyze("--overwrite")  # gets past the check: on to the checkpoint, which is missing
    assert allowed.returncode == 1 and "nope" in allowed.stderr and "figure2.json" not in allowed.stderr
    assert (output / "figure2.json").read_text() == "the user's own figure"
