"""Pretraining from a WordPiece vocab.txt: create_pretraining_data --vocab_file (local and Beam, the same bytes)
makes BERT-layout ids ([CLS] 101, [SEP] 102, [MASK] 103) with whole words by the `##` rule, records the vocabulary's
kind, hash and special ids, and run_pretraining --vocab_file trains on it and keeps vocab.txt in the model
directory; a vocabulary of the other kind, or both flags, is refused in one line."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.data.masking import MaskingConfig
from albert_tf.data.pretraining_data_job import CreationConfig
from albert_tf.data.pretraining_instances import InstanceConfig
from albert_tf.data.wordpiece_vocabulary import train
from albert_tf.text.vocabularies import WORDPIECE, Vocabulary
from test_run_pretraining import environment
from text_fixtures import write_corpus

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
CHINESE = ["北京是中国的首都。", "我们今天去公园散步，天气很好。", "他在大学学习计算机科学。", "这本书讲的是历史。"]
CONFIG = CreationConfig(instances=InstanceConfig(max_seq_length=32, dupe_factor=2,
                                                 masking=MaskingConfig(max_predictions_per_seq=5)),
                        num_output_shards=2)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A corpus of English and Chinese documents, a WordPiece vocabulary trained on it, and data made with it."""
    from albert_tf.data.local_runner import create_pretraining_data

    directory = tmp_path_factory.mktemp("wordpiece_data")
    corpus = write_corpus(directory / "corpus.txt", num_documents=40, seed=5)
    with open(corpus, "a", encoding="utf-8") as f:
        for document in range(20):
            f.write("\n" + "\n".join(CHINESE[document % 4:] + CHINESE[:document % 4]) + "\n")
    vocab_file = directory / "vocab.txt"
    train([str(corpus)], str(vocab_file), vocab_size=600, min_frequency=1)
    prefix = str(directory / "train")
    create_pretraining_data([str(corpus)], prefix, Vocabulary.read(vocab_file, WORDPIECE), CONFIG, progress=False)
    return directory, corpus, vocab_file, prefix


def records(prefix):
    import tensorflow as tf

    from albert_tf.data.pretraining_dataset import expand_data_files

    parsed = []
    for record in tf.data.TFRecordDataset(expand_data_files(prefix)):
        feature = tf.train.Example.FromString(record.numpy()).features.feature
        parsed.append({name: np.array(feature[name].int64_list.value or feature[name].float_list.value)
                       for name in ("input_ids", "input_mask", "masked_lm_positions", "masked_lm_ids",
                                    "masked_lm_weights", "token_boundary")})
    return parsed


def test_data_from_a_wordpiece_vocabulary_has_its_ids_and_its_word_starts(made):
    _, _, vocab_file, prefix = made
    metadata = json.loads(pathlib.Path(prefix + ".metadata.json").read_text())
    vocabulary = Vocabulary.read(vocab_file, WORDPIECE)
    tokenizer = vocabulary.tokenizer()
    assert metadata["vocabulary"] == "wordpiece" and metadata["vocab_file_sha256"] == vocabulary.sha256
    assert metadata["special_ids"] == {"pad": 0, "unk": 100, "cls": 101, "sep": 102, "mask": 103}
    assert "spm_model_sha256" not in metadata and metadata["vocab_size"] == tokenizer.vocab_size
    shown_at_masked, continuations = [], 0
    for row in records(prefix):
        ids = row["input_ids"][: int(row["input_mask"].sum())]
        assert ids[0] == 101 and ids[-1] == 102 and (ids == 102).sum() == 2
        chosen = row["masked_lm_weights"] > 0
        shown_at_masked.extend(ids[row["masked_lm_positions"][chosen]].tolist())
        # The original's rule, on the ids before masking: a `##` piece continues the word before it; every other
        # piece starts one.
        original = ids.copy()
        original[row["masked_lm_positions"][chosen]] = row["masked_lm_ids"][chosen]
        starts = row["token_boundary"][: len(ids)].astype(bool)
        np.testing.assert_array_equal(starts, tokenizer.word_start_table[original] | np.isin(original, [101, 102]))
        continuations += int((~tokenizer.word_start_table[original]).sum())
    assert continuations > 0  # the corpus has words of several pieces: the rule was exercised
    shown = np.array(shown_at_masked)
    assert len(shown) > 100 and 0.7 < (shown == 103).mean() < 0.9


def test_beam_makes_the_same_bytes_from_a_wordpiece_vocabulary(made, tmp_path):
    import apache_beam as beam

    from pipelines.create_pretraining_data import build_pipeline

    _, corpus, vocab_file, prefix = made
    with beam.Pipeline(runner="FnApiRunner") as pipeline:
        build_pipeline(pipeline, [str(corpus)], str(tmp_path / "data"), Vocabulary.read(vocab_file, WORDPIECE), CONFIG)
    for shard in range(CONFIG.num_output_shards):
        name = f"-{shard:05d}-of-{CONFIG.num_output_shards:05d}.tfrecord"
        assert (tmp_path / ("data" + name)).read_bytes() == pathlib.Path(prefix + name).read_bytes()


def tool(*args):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, env=environment(),
                          cwd=REPO_ROOT, timeout=600)


def error_line(result):
    assert result.returncode == 1, result.stdout + result.stderr
    [line] = [line for line in result.stderr.splitlines() if ": error: " in line]
    return line


@pytest.mark.slow
def test_run_pretraining_trains_on_wordpiece_data_and_keeps_the_vocabulary(made, tmp_path):
    directory, corpus, vocab_file, prefix = made
    common = [f"--input_file={prefix}", "--albert_config=albert_tiny", f"--output_dir={tmp_path / 'run'}",
              "--train_batch_size=8", "--max_seq_length=32", "--max_predictions_per_seq=5", "--num_train_steps=4",
              "--num_warmup_steps=1", "--iterations_per_loop=2", "--save_checkpoints_steps=4"]
    result = tool("albert_tf.run_pretraining", *common, f"--vocab_file={vocab_file}")
    assert result.returncode == 0, result.stderr
    assert f"vocab_size {len(vocab_file.read_text(encoding='utf-8').splitlines())}" in result.stdout
    run_dir = tmp_path / "run"
    assert (run_dir / "vocab.txt").read_bytes() == vocab_file.read_bytes() and not (run_dir / "spm.model").exists()
    assert json.loads((run_dir / "albert_tf.json").read_text())["vocabulary"] == "wordpiece"
    # The later tools that read only SentencePiece say so in one line, naming the vocabulary.
    refused = tool("albert_tf.export", f"--checkpoint={run_dir}", f"--output_dir={tmp_path / 'export'}")
    assert "WordPiece vocab.txt" in error_line(refused)

    # Data made with a WordPiece vocabulary and a SentencePiece model passed: refused, naming both kinds.
    from albert_tf.data.vocabulary import train as train_spm

    spm = directory / "other.model"
    train_spm([str(corpus)], str(directory / "other"), vocab_size=300, num_threads=1)
    line = error_line(tool("albert_tf.run_pretraining", *common[:2], f"--output_dir={tmp_path / 'other'}",
                           *common[3:], f"--spm_model_file={spm}"))
    assert "made with a WordPiece vocabulary" in line and "is a SentencePiece model" in line


def test_both_vocabularies_are_refused_by_the_data_tool(made, tmp_path):
    directory, corpus, vocab_file, _ = made
    line = error_line(tool("albert_tf.create_pretraining_data", f"--input_file={corpus}",
                           f"--output_file={tmp_path / 'data'}", f"--vocab_file={vocab_file}",
                           f"--spm_model_file={vocab_file}"))
    assert "not both" in line and not list(tmp_path.iterdir())
    line = error_line(tool("albert_tf.create_pretraining_data", f"--input_file={corpus}",
                           f"--output_file={tmp_path / 'data'}", f"--vocab_file={vocab_file}", "--pre_segmented",
                           "--output_format=instances"))
    assert "pre_segmented" in line and "WordPiece" in line
