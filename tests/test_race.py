"""RACE: the reader, the original packing of question + option, and fine-tuning end to end."""

import json
import random
import subprocess
import sys

import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.models.model_io import load_model, write_model_dir
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.tasks import race
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from text_fixtures import random_sentence, train_small_spm


def write_race(root, rng, files=3):
    for split in ("train", "dev", "test"):
        for level in race.LEVELS:
            directory = root / split / level
            directory.mkdir(parents=True)
            for number in range(files):
                questions, options, answers = [], [], []
                for _ in range(2):
                    answer = rng.randrange(4)
                    choices = [random_sentence(rng, 2, 4) for _ in range(4)]
                    choices[answer] = "the garden " + choices[answer]  # a learnable signal
                    questions.append(random_sentence(rng, 3, 8) + (" _ ." if rng.random() < 0.5 else ""))
                    options.append(choices)
                    answers.append("ABCD"[answer])
                record = {"id": f"{level}{number}.txt", "article": " ".join(random_sentence(rng) for _ in range(6)),
                          "questions": questions, "options": options, "answers": answers}
                (directory / f"{number}.txt").write_text(json.dumps(record))
    return root


def test_reader_and_packing(tmp_path):
    root = write_race(tmp_path / "RACE", random.Random(0), files=1)
    examples = race.read_split(str(root), "dev")
    assert len(examples) == 4 and {e.level for e in examples} == {"middle", "high"}
    assert race.question_with_option("The cat sat on the _ today.", "mat") == "The cat sat on the mat today."
    assert race.question_with_option("Where did it sit?", "on the mat") == "Where did it sit? on the mat"
    assert race.accuracies([0, 1, 2, 3], examples)["accuracy"] == sum(
        e.label == p for e, p in zip(examples, [0, 1, 2, 3])) / 4
    bad = root / "dev" / "high" / "0.txt"
    record = json.loads(bad.read_text())
    record["answers"][1] = "E"
    bad.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"high/0.txt: question 1 has answer 'E'"):
        race.read_split(str(root), "dev")
    record["answers"][1] = "A"
    record["options"][0] = record["options"][0][:3]
    bad.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"high/0.txt: question 0 has 3 options"):
        race.read_split(str(root), "dev")
    bad.write_text("{not json")
    with pytest.raises(ValueError, match=r"high/0.txt: not a RACE JSON file"):
        race.read_split(str(root), "dev")
    del record["article"]
    bad.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"high/0.txt: 'article' missing"):
        race.read_split(str(root), "dev")
    bad.write_text(json.dumps([record]))
    with pytest.raises(ValueError, match=r"high/0.txt: not a RACE JSON file \(a list"):
        race.read_split(str(root), "dev")
    record = {"article": "a", "questions": ["q", "r"], "options": [list("abcd")], "answers": ["A", "B"]}
    bad.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"high/0.txt: 2 questions, 1 option lists, 2 answers"):
        race.read_split(str(root), "dev")
    with pytest.raises(FileNotFoundError, match=r"test/middle: no such directory"):
        race.read_split(str(tmp_path), "test")


@pytest.fixture(scope="module")
def spm(tmp_path_factory):
    return str(train_small_spm(tmp_path_factory))


def test_encoding_keeps_the_end_of_question_and_option_then_cuts_the_article(spm):
    tokenizer = AlbertTokenizer(spm)
    article = " ".join(["river garden"] * 50)
    example = race.RaceExample("x", "high", article, "what " * 30, ["a", "b", "c", "morning bridge"], 3)
    arrays = race.encode_examples([example], tokenizer, 64, max_qa_length=10)
    assert arrays["input_word_ids"].shape == (1, 4, 64) and arrays["label_ids"].tolist() == [3]
    qa = tokenizer.encode("what " * 30 + " morning bridge")[-10:]  # as the original: the last max_qa_length tokens
    ids, types, mask = (arrays[name][0, 3] for name in ("input_word_ids", "input_type_ids", "input_mask"))
    assert ids[-11:].tolist() == qa + [3] and types.sum() == 11  # question + option end, then [SEP]
    assert ids[1:52].tolist() == tokenizer.encode(article)[:51] and ids[52] == 3  # the article fills the rest
    assert mask.sum() == 64 and types[:53].sum() == 0
    short = race.encode_examples([race.RaceExample("y", "middle", "river", "Where _ ?", list("abcd"), 0)],
                                 tokenizer, 64, max_qa_length=10)
    assert short["input_mask"][0, 0].sum() == 3 + len(tokenizer.encode("river")) + len(tokenizer.encode("Where a ?"))
    with pytest.raises(ValueError, match="max_qa_length 62 must be in 1..max_seq_length - 3"):
        race.encode_examples([example], tokenizer, 64, max_qa_length=62)


def test_race_end_to_end_through_the_cli(spm, tmp_path):
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=AlbertTokenizer(spm).vocab_size)
    checkpoint = write_model_dir(AlbertPretrainer(config), str(tmp_path / "ckpt"), "pretrainer",
                                 files={"spm.model": spm})
    root = write_race(tmp_path / "RACE", random.Random(1))
    output = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "albert_tf.run_race", f"--data_dir={root}",
                             f"--init_checkpoint={checkpoint}", f"--output_dir={output}", "--do_train", "--do_eval",
                             "--do_predict", "--max_seq_length=48", "--max_qa_length=16", "--train_step=4",
                             "--warmup_step=1", "--train_batch_size=4", "--save_checkpoints_steps=2"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((output / "eval_results.json").read_text())
    assert set(results["dev"]) == {"accuracy", "middle_accuracy", "high_accuracy"}
    # Overall accuracy is the question-weighted mean of the levels' (both have 6 questions here).
    dev = results["dev"]
    assert dev["accuracy"] == pytest.approx((dev["middle_accuracy"] + dev["high_accuracy"]) / 2)
    history = json.loads((output / "checkpoints" / "evaluations.json").read_text())
    assert [h["step"] for h in history] == [2, 4]
    best = max(history, key=lambda h: h["accuracy"])
    assert dev == pytest.approx({k: v for k, v in best.items() if k != "step"})
    predictions = json.loads((output / "test_predictions.json").read_text())
    assert len(predictions) == 12 and set(predictions.values()) <= set("ABCD")
    assert set(predictions) == {f"{level}{n}.txt-{q}" for level in race.LEVELS for n in range(3) for q in range(2)}
    examples = race.read_split(str(root), "test")
    truth = {e.guid: "ABCD"[e.label] for e in examples}
    assert results["test"]["accuracy"] == pytest.approx(sum(predictions[g] == truth[g] for g in truth) / 12)
    _, metadata = load_model(str(output / "best"))
    assert metadata["model"] == "multiple_choice" and metadata["best_step"] == best["step"]
    # Evaluating without training needs a fine-tuned RACE model, not the pretrained one.
    failed = subprocess.run([sys.executable, "-m", "albert_tf.run_race", f"--data_dir={root}",
                             f"--init_checkpoint={checkpoint}", f"--output_dir={tmp_path / 'x'}", "--do_eval",
                             "--max_seq_length=48", "--max_qa_length=16"], capture_output=True, text=True)
    assert failed.returncode == 1 and "holds a 'pretrainer' model; evaluating needs a multiple_choice" in failed.stderr
