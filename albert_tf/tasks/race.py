"""RACE (4-way reading-comprehension multiple choice) in its official directory layout.

  RACE/{train,dev,test}/{middle,high}/*.txt   each a JSON object:
  {"id": ..., "article": str, "questions": [str], "options": [[str x 4]], "answers": ["A".."D"]}

As the original ALBERT (race_utils.py): each option makes one sequence
[CLS] article [SEP] question+option [SEP], where a question with a blank ("_")
gets the option filled in and any other question is followed by it. The
question+option keeps its last max_qa_length tokens (the option is at its end);
the article is then cut to fill what is left of max_seq_length.
"""

import dataclasses
import glob
import json
import os

LEVELS = ("middle", "high")
NUM_CHOICES = 4


@dataclasses.dataclass
class RaceExample:
    guid: str
    level: str
    article: str
    question: str
    options: list
    label: int = None


def read_split(data_dir, split, levels=LEVELS):
    """Examples of RACE/<split>/<level>/*.txt, in a stable (sorted) order."""
    examples = []
    for level in levels:
        directory = os.path.join(data_dir, split, level)
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"{directory}: no such directory (expected RACE/{split}/{level}/*.txt)")
        for path in sorted(glob.glob(os.path.join(directory, "*.txt"))):
            examples.extend(read_file(path, level))
    if not examples:
        raise ValueError(f"{os.path.join(data_dir, split)}: holds no questions")
    return examples


def read_file(path, level):
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a RACE JSON file ({error})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}: not a RACE JSON file (a {type(record).__name__}, not an object)")
    for key, kind in (("article", str), ("questions", list), ("options", list), ("answers", list)):
        if not isinstance(record.get(key), kind):
            raise ValueError(f"{path}: {key!r} missing or not a {kind.__name__}")
    questions, options, answers = record["questions"], record["options"], record["answers"]
    if not (len(questions) == len(options) == len(answers)):
        raise ValueError(f"{path}: {len(questions)} questions, {len(options)} option lists, {len(answers)} answers")
    examples = []
    for index, (question, choices, answer) in enumerate(zip(questions, options, answers)):
        if not isinstance(question, str) or not isinstance(choices, list) or not all(
                isinstance(choice, str) for choice in choices):
            raise ValueError(f"{path}: question {index}: the question and its options must be strings")
        if len(choices) != NUM_CHOICES:
            raise ValueError(f"{path}: question {index} has {len(choices)} options, not {NUM_CHOICES}")
        if answer not in ("A", "B", "C", "D"):
            raise ValueError(f"{path}: question {index} has answer {answer!r}, not one of A-D")
        examples.append(RaceExample(f"{record.get('id', os.path.basename(path))}-{index}", level, record["article"],
                                    question, list(choices), "ABCD".index(answer)))
    return examples


def question_with_option(question, option):
    return question.replace("_", option) if "_" in question else f"{question} {option}"


def encode_examples(examples, tokenizer, max_seq_length, max_qa_length):
    """-> numpy arrays [examples, 4, max_seq_length] for the encoder inputs, plus label_ids."""
    import numpy as np

    from albert_tf.text.packing import pack

    if not 0 < max_qa_length <= max_seq_length - 3:
        raise ValueError(f"max_qa_length {max_qa_length} must be in 1..max_seq_length - 3 ({max_seq_length - 3})")
    shape = (len(examples), NUM_CHOICES, max_seq_length)
    arrays = {name: np.zeros(shape, np.int32) for name in ("input_word_ids", "input_mask", "input_type_ids")}
    for row, example in enumerate(examples):
        article = tokenizer.encode(example.article)
        for column, option in enumerate(example.options):
            qa = tokenizer.encode(question_with_option(example.question, option))[-max_qa_length:]
            packed = pack(article[: max_seq_length - 3 - len(qa)], qa, max_seq_length, tokenizer.special_ids)
            for name, value in zip(("input_word_ids", "input_mask", "input_type_ids"), packed):
                arrays[name][row, column] = value
    arrays["label_ids"] = np.array([e.label for e in examples], np.int32)
    return arrays


def accuracies(predictions, examples):
    """Accuracy overall and per level (middle, high)."""
    import numpy as np

    correct = np.asarray(predictions) == np.array([e.label for e in examples])
    results = {"accuracy": float(correct.mean())}
    for level in LEVELS:
        chosen = np.array([e.level == level for e in examples])
        if chosen.any():
            results[f"{level}_accuracy"] = float(correct[chosen].mean())
    return results
