"""Entity tagging from files: run_tagger end to end (CoNLL-2003 and CoNLL-U-like column files, JSON Lines, long
sentences in windows), its refusals before anything is written, and its loss against torch's."""

import json
import random
import subprocess
import sys

import conlleval
import numpy as np
import pytest

from albert_tf.models.model_io import load_model
from albert_tf.settings import SettingError
from albert_tf.tasks.tagging_metrics import tagging_metrics
from albert_tf.tasks.tagging_task import TaggingConfig, TaggingObjective, TaggingTask
from albert_tf.training.finetuning_config import FinetuningConfig
from albert_tf.training.finetuning_tool import run_finetuning
from text_fixtures import WORDS, tiny_pretrained_checkpoint

# Entities are words the vocabulary knows, so the tiny model can learn them from the words alone.
ENTITIES = {"PER": ["mr"], "LOC": ["river", "island", "village"], "ORG": ["market"]}
TYPE_OF = {word: entity_type for entity_type, words in ENTITIES.items() for word in words}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return tiny_pretrained_checkpoint(tmp_path_factory)


def tagged_sentences(seed, count, types=("PER", "LOC", "ORG"), longest=12):
    """[(tokens, IOB2 tags)]: random words, the entity words tagged B- (a two-word LOC tagged B- I-)."""
    rng = random.Random(seed)
    plain = [word for word in WORDS if word not in TYPE_OF]
    sentences = []
    for _ in range(count):
        tokens, tags = [], []
        for _ in range(rng.randint(2, longest)):
            entity_type = rng.choice(types) if rng.random() < 0.3 else None
            if entity_type is None:
                tokens.append(rng.choice(plain))
                tags.append("O")
                continue
            tokens.append(rng.choice(ENTITIES[entity_type]))
            tags.append(f"B-{entity_type}")
            if entity_type == "LOC" and rng.random() < 0.5:
                tokens.append("river")
                tags.append("I-LOC")
        sentences.append((tokens, tags))
    return sentences


def write_conll2003(path, sentences):
    """CoNLL-2003's layout in IOB1 (I- starts an entity; B- only after one of its type), POS and chunk columns."""
    lines = ["-DOCSTART- -X- -X- O", ""]
    for tokens, tags in sentences:
        previous = "O"
        for token, tag in zip(tokens, tags):
            iob1 = tag if tag == "O" or previous[2:] == tag[2:] else "I-" + tag[2:]
            lines.append(f"{token} NN B-NP {iob1}")
            previous = tag
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def write_conllu_like(path, sentences):
    """The staged UNER files' layout: comments, then index, token, tag, and two unused columns, tab-separated."""
    lines = []
    for number, (tokens, tags) in enumerate(sentences):
        lines += [f"# sent_id = s{number}", "# text = " + " ".join(tokens)]
        lines += [f"{i + 1}\t{token}\t{tag}\t-\t-" for i, (token, tag) in enumerate(zip(tokens, tags))]
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def write_jsonl(path, sentences, with_tags=True):
    path.write_text("".join(json.dumps({"tokens": tokens, **({"tags": tags} if with_tags else {})}) + "\n"
                            for tokens, tags in sentences), encoding="utf-8")
    return str(path)


def last_column_tags(path):
    """Per sentence, the last column of a column file's token lines (what run_tagger adds: the predicted tag)."""
    sentences, current = [], []
    for line in open(path, encoding="utf-8").read().splitlines():
        if not line.strip():
            if current:
                sentences.append(current)
            current = []
        elif not line.startswith("#"):
            current.append(line.split("\t")[-1])
    return sentences + ([current] if current else [])


@pytest.mark.slow
def test_tagger_end_to_end_through_the_cli(checkpoint, tmp_path):
    train = write_conll2003(tmp_path / "train.conll", tagged_sentences("train", 48))
    dev_sentences = tagged_sentences("dev", 12, longest=20)  # longer than a window of 16: merged back
    dev = write_conllu_like(tmp_path / "dev.iob2", dev_sentences)
    new = write_jsonl(tmp_path / "new.jsonl", tagged_sentences("new", 5), with_tags=False)
    output = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.run_tagger", f"--train_file={train}", f"--eval_file={dev}",
         f"--predict_file={new}", f"--init_checkpoint={checkpoint}", f"--output_dir={output}", "--do_train",
         "--do_eval", "--do_predict", "--max_seq_length=16", "--num_train_epochs=30", "--train_batch_size=8",
         "--learning_rate=1e-3", "--iterations_per_loop=10"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"{train}: 48 sentences" in result.stdout and "(read as iob1, tagged in IOB2)" in result.stdout
    results = json.loads((output / "eval_results.json").read_text())
    history = json.loads((output / "checkpoints" / "evaluations.json").read_text())
    assert results["f1"] == max(h["f1"] for h in history)
    # It learns: the entity words tell their types apart (a model tagging everything O scores 0, and one that
    # misaligned words and tags would learn nothing; about 0.8 is reached).
    assert results["f1"] > 0.5, history
    assert set(results["per_type"]) <= {"PER", "LOC", "ORG"} and results["sentences"] == 12
    # The eval file comes back with one more column, the best model's tags, which score as eval_results says.
    predicted = last_column_tags(output / "eval_predictions.iob2")
    assert [len(tags) for tags in predicted] == [len(tokens) for tokens, _ in dev_sentences]
    gold = [tags for _, tags in dev_sentences]
    assert tagging_metrics(gold, predicted)["f1"] == pytest.approx(results["f1"])
    # conlleval scores the file written for it as the tool did (the `conlleval` port of conlleval.pl).
    scored = conlleval.evaluate((output / "eval_predictions.conlleval.txt").read_text().splitlines())
    assert scored["overall"]["chunks"]["evals"]["f1"] == pytest.approx(results["f1"], abs=1e-12)
    assert scored["overall"]["chunks"]["stats"]["gold"] == results["entities"]
    assert "f1" in (output / "eval_report.txt").read_text()
    rows = [json.loads(line) for line in (output / "predictions.jsonl").read_text().splitlines()]
    assert [len(row["predicted_tags"]) for row in rows] == [len(row["tokens"]) for row in rows]
    _, metadata = load_model(str(output / "best"))
    assert metadata["model"] == "token_classifier"
    assert metadata["label_names"] == ["O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    assert metadata["doc_stride"] == 7  # not given: half a window of 16, recorded as the windows were cut
    # The fine-tuned model evaluates alone: its record gives the labels.
    again = tmp_path / "again"
    rerun = subprocess.run(
        [sys.executable, "-m", "albert_tf.run_tagger", f"--eval_file={dev}", f"--init_checkpoint={output}/best",
         f"--output_dir={again}", "--do_eval", "--max_seq_length=16"], capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert json.loads((again / "eval_results.json").read_text())["f1"] == pytest.approx(results["f1"])


TINY = dict(max_seq_length=16, train_batch_size=8, learning_rate=1e-3, iterations_per_loop=1, eval_batch_size=16)


def test_an_entity_type_unseen_in_training_is_refused_before_anything_is_written(checkpoint, tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", tagged_sentences("t", 8, types=("PER", "LOC")))
    dev = write_jsonl(tmp_path / "dev.jsonl", tagged_sentences("d", 8, types=("ORG",)))
    config = FinetuningConfig(output_dir=str(tmp_path / "out"), init_checkpoint=checkpoint, do_train=True,
                              do_eval=True, num_train_steps=2, task=TaggingConfig(train_file=train, eval_file=dev),
                              **TINY)
    with pytest.raises(ValueError, match=r"dev.jsonl: entity types not in the training file: 'ORG'"):
        run_finetuning(TaggingTask(), config)
    assert not (tmp_path / "out").exists()


def test_evaluating_without_training_needs_a_fine_tuned_tagger(checkpoint, tmp_path):
    dev = write_jsonl(tmp_path / "dev.jsonl", tagged_sentences("d", 4))
    config = FinetuningConfig(output_dir=str(tmp_path / "out"), init_checkpoint=checkpoint, do_eval=True,
                              task=TaggingConfig(eval_file=dev), **TINY)
    with pytest.raises(SettingError, match="holds a 'pretrainer' model; .* needs a fine-tuned tagger"):
        run_finetuning(TaggingTask(), config)
    assert not (tmp_path / "out").exists()


def test_the_training_loss_is_the_token_mean_of_the_global_batch_as_torch_computes_it():
    import tensorflow as tf
    import torch

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4, 6, 5)).astype(np.float32)
    label_ids = rng.integers(0, 5, size=(4, 6)).astype(np.int32)
    label_ids[rng.random((4, 6)) < 0.5] = -100  # continuation pieces, [CLS], [SEP], padding
    label_ids[3] = -100  # a window that labels nothing (only continuation pieces)
    expected = torch.nn.functional.cross_entropy(torch.tensor(logits).reshape(-1, 5),
                                                 torch.tensor(label_ids, dtype=torch.long).reshape(-1),
                                                 ignore_index=-100)
    objective = TaggingObjective(None)
    # Two replicas of two windows each: their shares sum to the global batch's token mean.
    batch = {"label_ids": tf.constant(label_ids)}
    global_sums = objective.global_sums(batch)
    shares = [objective.replica_loss(objective.batch_sums({"logits": tf.constant(logits[i:i + 2])},
                                                          {"label_ids": tf.constant(label_ids[i:i + 2])}),
                                     global_sums, 4) for i in (0, 2)]
    assert float(sum(shares)) == pytest.approx(float(expected), rel=1e-5)
    # The training step's outputs: the logits of the labelled positions alone (the tagger's head_outputs).
    labelled = label_ids != -100
    shares = [objective.replica_loss(objective.batch_sums(
        {"labelled_logits": tf.constant(logits[i:i + 2][labelled[i:i + 2]]),
         "labelled_ids": tf.constant(label_ids[i:i + 2][labelled[i:i + 2]])}, {"label_ids": tf.constant(
             label_ids[i:i + 2])}), global_sums, 4) for i in (0, 2)]
    assert float(sum(shares)) == pytest.approx(float(expected), rel=1e-5)
    totals = objective.batch_sums({"logits": tf.constant(logits)}, batch)
    assert objective.metrics({name: value.numpy() for name, value in totals.items()})["loss"] == pytest.approx(
        float(expected), rel=1e-5)


def test_predictions_are_named_after_the_file_they_answer():
    from albert_tf.tasks.tagging_task import _predictions_name

    assert _predictions_name("predictions", "/data/test.iob2.gz") == "predictions.iob2"
    assert _predictions_name("eval_predictions", "eng.testa") == "eval_predictions.testa"
    assert _predictions_name("predictions", "/data/sentences") == "predictions.txt"


def test_column_settings_are_refused_before_any_file_is_read(checkpoint, tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", tagged_sentences("t", 4))
    config = FinetuningConfig(output_dir=str(tmp_path / "out"), init_checkpoint=checkpoint, do_train=True,
                              num_train_steps=2, task=TaggingConfig(train_file=train, token_column=1, tag_column=1),
                              **TINY)
    with pytest.raises(SettingError, match="token_column and tag_column are both 1"):
        TaggingTask().validate(config)
    with pytest.raises(SettingError, match="both 1"):
        run_finetuning(TaggingTask(), config)
    assert not (tmp_path / "out").exists()


def test_the_window_stride_is_recorded_the_default_too_and_read_back_at_that_length(tmp_path):
    """A run without <doc_stride> records the stride it cut windows with (half a window of 16: 7 pieces), so an
    evaluation of the fine-tuned tagger without <doc_stride> cuts the same windows, as it does for a stride
    given at training; at another length the recorded stride, chosen for other windows, is not taken."""
    import dataclasses

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
    from albert_tf.models.model_io import write_model_dir

    labels = ("O", "B-PER", "I-PER")
    config = FinetuningConfig(output_dir=str(tmp_path / "out"), do_train=True, task=TaggingConfig(labels=labels),
                              **TINY)
    assert TaggingTask().metadata(config)["doc_stride"] == 7
    given = dataclasses.replace(config, task=dataclasses.replace(config.task, doc_stride=3))
    assert TaggingTask().metadata(given)["doc_stride"] == 3

    tagger = AlbertTokenClassifier(AlbertConfig.from_preset("albert_tiny", vocab_size=64, num_hidden_layers=1),
                                   labels=list(labels))
    trained = write_model_dir(tagger, tmp_path / "tagger", max_seq_length=16, doc_stride=5)
    dev = write_jsonl(tmp_path / "dev.jsonl", tagged_sentences("d", 2, types=("PER",)))
    evaluation = FinetuningConfig(output_dir=str(tmp_path / "eval"), init_checkpoint=trained, do_eval=True,
                                  task=TaggingConfig(eval_file=dev), **TINY)
    assert TaggingTask().resolve(evaluation).task.doc_stride == 5
    asked = dataclasses.replace(evaluation, task=dataclasses.replace(evaluation.task, doc_stride=2))
    assert TaggingTask().resolve(asked).task.doc_stride == 2
    longer = dataclasses.replace(evaluation, max_seq_length=32)
    assert TaggingTask().resolve(longer).task.doc_stride is None
