"""Pretraining from a WordPiece vocab.txt: create_pretraining_data --vocab_file (local and Beam, the same bytes)
makes BERT-layout ids ([CLS] 101, [SEP] 102, [MASK] 103) with whole words by the `##` rule, records the vocabulary's
kind, hash and special ids, and run_pretraining --vocab_file trains on it and keeps vocab.txt in the model
directory; a vocabulary of the other kind, or both flags, is refused in one line."""

import dataclasses
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
    check_inference_finetuning_and_serving(run_dir, vocab_file, tmp_path)

    # Data made with a WordPiece vocabulary and a SentencePiece model passed: refused, naming both kinds.
    from albert_tf.data.vocabulary import train as train_spm

    spm = directory / "other.model"
    train_spm([str(corpus)], str(directory / "other"), vocab_size=300, num_threads=1)
    line = error_line(tool("albert_tf.run_pretraining", *common[:2], f"--output_dir={tmp_path / 'other'}",
                           *common[3:], f"--spm_model_file={spm}"))
    assert "made with a WordPiece vocabulary" in line and "is a SentencePiece model" in line


HELD_OUT = ["北京的公园很大。", "我们学习历史和科学。", "The capital of France is Paris.", "他今天去大学。"]


def check_inference_finetuning_and_serving(run_dir, vocab_file, tmp_path):
    """The pretrained WordPiece model through fill-mask, fine-tuning (a classifier of its own labels) and export:
    the served SavedModels take raw text, tokenize it in-graph to the ids training used, and answer as the model."""
    import tensorflow as tf

    from albert_tf.models.mask_filler import MaskFiller
    from albert_tf.models.model_io import load_model
    from albert_tf.export_lib.exporter import export
    from albert_tf.export_lib.litert_export import export_litert
    from albert_tf.models.lite_model import LiteModel
    from albert_tf.tasks.text_classification_task import TextClassificationConfig, TextClassificationTask
    from albert_tf.text.packing import pack_batch
    from albert_tf.training.finetuning_config import FinetuningConfig
    from albert_tf.training.finetuning_tool import run_finetuning

    tokenizer = Vocabulary.read(vocab_file, WORDPIECE).tokenizer()
    filler = MaskFiller(str(run_dir))
    [candidates] = filler("北京是中国的[MASK]都。", top_k=3)
    special = set(dataclasses.astuple(tokenizer.special_ids))
    assert len(candidates) == 3 and not {c["token"] for c in candidates} & special

    rows = [{"text": text, "label": "zh" if "。" in text else "en"} for text in HELD_OUT * 4]
    train = tmp_path / "labels.jsonl"
    train.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    config = FinetuningConfig(output_dir=str(tmp_path / "classifier"), init_checkpoint=str(run_dir), do_train=True,
                              do_eval=True, num_train_steps=3, max_seq_length=24, train_batch_size=8,
                              learning_rate=1e-3, iterations_per_loop=1, eval_batch_size=16,
                              task=TextClassificationConfig(train_file=str(train), eval_file=str(train)))
    assert run_finetuning(TextClassificationTask(), config) == 0
    best = tmp_path / "classifier" / "best"
    assert (best / "vocab.txt").read_bytes() == vocab_file.read_bytes()
    assert json.loads((best / "albert_tf.json").read_text())["vocabulary"] == "wordpiece"

    paths = export(str(best), str(tmp_path / "export"))
    preprocessing = tf.saved_model.load(paths["preprocessing"])
    served_ids = preprocessing(tf.constant(HELD_OUT))["input_word_ids"].numpy()
    expected = pack_batch(tokenizer, HELD_OUT, None, 24)
    np.testing.assert_array_equal(served_ids, expected["input_word_ids"])
    serving = tf.saved_model.load(paths["serving"])
    served = serving.signatures["serve_text"](text=tf.constant(HELD_OUT))
    model = load_model(str(best))[0]
    logits = model(expected, training=False)["logits"].numpy()
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(served["probabilities"].numpy(), probabilities, atol=1e-5)
    assert (tmp_path / "export" / "encoder" / "assets" / "vocab.txt").exists()
    # On a device: model.tflite tokenizes with tensorflow-text's WordPiece ops and answers as the SavedModel.
    export_litert(str(best), str(tmp_path / "litert"), quantization="float32")
    lite = LiteModel(str(tmp_path / "litert"))
    np.testing.assert_allclose(lite(HELD_OUT)["probabilities"], probabilities, atol=1e-4)


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


def tiny_config(vocab_file):
    from albert_tf.albert_config import AlbertConfig

    return AlbertConfig.from_dict({**AlbertConfig.from_name_or_path("albert_tiny").to_dict(),
                                   "vocab_size": Vocabulary.read(vocab_file, WORDPIECE).tokenizer().vocab_size})


@pytest.mark.slow
def test_a_wordpiece_span_labeler_serves_answers_in_the_contexts_own_text(made, tmp_path):
    """The served answer is the context's own text at the pieces the model picked: the in-graph WordPiece
    offsets, checked against the Python tokenizer's character offsets on Chinese and English contexts."""
    import tensorflow as tf

    from albert_tf.export_lib.exporter import export
    from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.networks.albert_encoder import AlbertEncoder

    _, _, vocab_file, _ = made
    tokenizer = Vocabulary.read(vocab_file, WORDPIECE).tokenizer()
    write_model_dir(AlbertSpanLabeler(AlbertEncoder(tiny_config(vocab_file))), tmp_path / "span",
                    files={"vocab.txt": str(vocab_file)}, vocabulary="wordpiece", max_seq_length=48)
    paths = export(str(tmp_path / "span"), str(tmp_path / "export"))
    questions = ["北京在哪里？", "Who studies?", "什么是历史？", "capital?"]
    contexts = ["北京是中国的首都，公园很大。", "He studies computer science at the University.",
                "这本书讲的是历史。", "The capital of France is Paris."]
    served = tf.saved_model.load(paths["serving"]).signatures["serving_default"](
        text=tf.constant(questions), text_b=tf.constant(contexts))
    for row, (question, context) in enumerate(zip(questions, contexts)):
        start, end = int(served["start"][row]), int(served["end"][row])
        assert 0 < start <= end
        context_start = len(tokenizer.encode(question)) + 2  # [CLS] question [SEP]
        aligned = tokenizer.aligned(context)
        expected = context[aligned.starts[start - context_start] : aligned.ends[end - context_start]]
        assert served["answer"][row].numpy().decode("utf-8") == expected


TAGGED_TEXTS = ["北京是中国的首都，我们今天去公园散步。", "He studies computer science at the University.",
                "这本书讲的是历史。The capital of France is Paris.", "", "他在大学学习计算机科学。" * 4]


@pytest.mark.slow
def test_a_wordpiece_tagger_serves_the_entities_its_units_give(made, tmp_path):
    """A random WordPiece token classifier, exported: the served entities equal those the Python unit rule reads
    from the model's logits (each Chinese character a unit; an English word and its `##` pieces one), and slice
    their texts; a long text takes several windows."""
    import keras

    from albert_tf import load_export
    from albert_tf.export_lib.exporter import export
    from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.networks.albert_encoder import AlbertEncoder
    from albert_tf.text.entities import text_entities, text_units, unit_tables
    from albert_tf.text.word_pieces import merge_unit_scores, text_windows, window_arrays

    _, _, vocab_file, _ = made
    tokenizer = Vocabulary.read(vocab_file, WORDPIECE).tokenizer()
    tags = ["O", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
    keras.utils.set_random_seed(3)
    model = AlbertTokenClassifier(AlbertEncoder(tiny_config(vocab_file)), labels=tags)
    kernel, _ = model.classifier.get_weights()
    model.classifier.set_weights([20 * kernel, np.array([4.0, 0, 0, 0, 0], np.float32)])
    seq = 16
    tables = unit_tables(tokenizer)
    units = [text_units(tokenizer, text, tables) for text in TAGGED_TEXTS]
    windows = text_windows(units, None, seq, None, special_ids=tokenizer.special_ids)
    inputs = {name: value for name, value in window_arrays(windows).items() if name != "label_ids"}
    logits = model(inputs, training=False)["logits"].numpy()
    scores = merge_unit_scores(windows, logits, [len(text_units.first_pieces) for text_units in units])
    expected = [text_entities(text_units, unit_scores, tags) for text_units, unit_scores in zip(units, scores)]
    assert sum(map(len, expected)) > 3 and len(windows) > len(TAGGED_TEXTS)
    chinese = units[0]
    assert len(chinese.first_pieces) == len(TAGGED_TEXTS[0])  # a unit per Chinese character (and mark)

    write_model_dir(model, tmp_path / "tagger", files={"vocab.txt": str(vocab_file)}, vocabulary="wordpiece",
                    max_seq_length=seq, lower_case=True)
    export(str(tmp_path / "tagger"), str(tmp_path / "export"))
    served = load_export(tmp_path / "export")(TAGGED_TEXTS)
    strip = lambda rows: [[{k: v for k, v in entity.items() if k != "score"} for entity in row] for row in rows]
    assert strip(served) == strip(expected)
    for text, row in zip(TAGGED_TEXTS, served):
        assert all(entity["text"] == text[entity["start"]:entity["end"]] for entity in row)
