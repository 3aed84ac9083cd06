"""GLUE's nine tasks in the official TSV layout: readers that name the file and line of bad input.

data_dir holds train.tsv, dev.tsv and test.tsv (MNLI: dev_matched.tsv,
dev_mismatched.tsv, test_matched.tsv, test_mismatched.tsv). Files are read
without quote processing, as GLUE's own scripts do (texts contain stray quotes).
"""

import csv
import dataclasses
import io
import math
import os
import sys

from albert_tf.file_utils import read_utf8_text
from albert_tf.settings import SettingError


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    labels: tuple  # label names; () for regression
    text_a: int  # column of the first text in labelled files
    text_b: int = None
    label: int = -1
    header: bool = True
    test_text_a: int = 1  # columns in test files (index first)
    test_text_b: int = None
    submission_name: str = ""
    min_columns: int = 0


TASKS = {
    "cola": TaskSpec(("0", "1"), text_a=3, label=1, header=False, test_text_a=1, submission_name="CoLA", min_columns=4),
    "sst-2": TaskSpec(("0", "1"), text_a=0, label=1, test_text_a=1, submission_name="SST-2", min_columns=2),
    "mrpc": TaskSpec(("0", "1"), text_a=3, text_b=4, label=0, test_text_a=3, test_text_b=4, submission_name="MRPC",
                     min_columns=5),
    "sts-b": TaskSpec((), text_a=7, text_b=8, label=9, test_text_a=7, test_text_b=8, submission_name="STS-B",
                      min_columns=10),
    "qqp": TaskSpec(("0", "1"), text_a=3, text_b=4, label=5, test_text_a=1, test_text_b=2, submission_name="QQP",
                    min_columns=6),
    "mnli": TaskSpec(("contradiction", "entailment", "neutral"), text_a=8, text_b=9, label=-1, test_text_a=8,
                     test_text_b=9, submission_name="MNLI", min_columns=10),
    "qnli": TaskSpec(("entailment", "not_entailment"), text_a=1, text_b=2, label=3, test_text_a=1, test_text_b=2,
                     submission_name="QNLI", min_columns=4),
    "rte": TaskSpec(("entailment", "not_entailment"), text_a=1, text_b=2, label=3, test_text_a=1, test_text_b=2,
                    submission_name="RTE", min_columns=4),
    "wnli": TaskSpec(("0", "1"), text_a=1, text_b=2, label=3, test_text_a=1, test_text_b=2, submission_name="WNLI",
                     min_columns=4),
}


@dataclasses.dataclass
class Example:
    guid: str
    text_a: str
    text_b: str = None
    label: object = None  # label index (classification), float (regression), None (test)


def task_spec(task):
    if task not in TASKS:
        raise SettingError(f"<task_name> must be one of {sorted(TASKS)}, got {task!r}")
    return TASKS[task]


def is_regression(task):
    return not task_spec(task).labels


def split_files(task, split):
    """{name: file name} of a split: 'train', 'dev' or 'test' (MNLI: matched and mismatched)."""
    if task == "mnli" and split in ("dev", "test"):
        return {"matched": f"{split}_matched.tsv", "mismatched": f"{split}_mismatched.tsv"}
    return {"": f"{split}.tsv"}


def read_tsv(path):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    csv.field_size_limit(sys.maxsize)
    # Read whole (as the rows are kept anyway), so that a byte that is not UTF-8 is named with its line.
    text = read_utf8_text(path)
    return list(csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE))


def read_examples(task, path, split):
    """Examples of one file; labelled unless split == 'test'."""
    spec = task_spec(task)
    rows = read_tsv(path)
    labelled = split != "test"
    # Test files have a header; CoLA's train/dev files do not.
    start = 1 if (spec.header or not labelled) else 0
    if labelled:
        columns = (spec.text_a, spec.text_b, spec.label)
    else:
        columns = (spec.test_text_a, spec.test_text_b)
    needed = max(spec.min_columns if labelled else 0, *[c + 1 for c in columns if c is not None and c >= 0])
    # Every row has as many columns as the header (CoLA's headerless files: its four). A row with
    # more is a text holding a stray tab: read by position it would shift a text into the next
    # column and drop the last one, so it is refused like a row with too few.
    expected = len(rows[0]) if start and rows else spec.min_columns
    if start and rows and len(rows[0]) < needed:
        raise ValueError(f"{path}:1: a header of {len(rows[0])} columns, {task} needs at least {needed}")
    examples = []
    for number, row in enumerate(rows[start:], start=start + 1):
        if not row or all(not cell for cell in row):
            continue
        where = f"{path}:{number}"
        if len(row) < needed:
            raise ValueError(f"{where}: {len(row)} columns, {task} needs at least {needed}")
        if len(row) != expected:
            raise ValueError(f"{where}: {len(row)} columns where {'the header has' if start else task + ' has'} "
                             f"{expected} (a tab inside a text?); fix the row")
        text_a = row[columns[0]]
        text_b = row[columns[1]] if columns[1] is not None else None
        label = None
        if labelled:
            raw = row[spec.label].strip()
            if spec.labels:
                if raw not in spec.labels:
                    raise ValueError(f"{where}: label {raw!r} is not one of {list(spec.labels)}")
                label = spec.labels.index(raw)
            else:
                try:
                    label = float(raw)
                except ValueError:
                    label = float("nan")
                if not math.isfinite(label):
                    raise ValueError(f"{where}: score {raw!r} is not a number")
        guid = row[0] if not labelled else f"{split}-{number}"
        examples.append(Example(guid, text_a, text_b, label))
    if not examples:
        raise ValueError(f"{path}: holds no examples")
    return examples


def encode_examples(examples, tokenizer, max_seq_length, regression=False):
    """Examples -> dict of numpy arrays: the encoder inputs (+ `label_ids` when labelled)."""
    import numpy as np

    from albert_tf.text.packing import pack

    ids_a = tokenizer.encode_batch([e.text_a for e in examples])
    rows = []
    for example, a in zip(examples, ids_a):
        # As the original: an empty second text makes a single-segment input.
        b = tokenizer.encode(example.text_b) if example.text_b else None
        rows.append(pack(a, b, max_seq_length, tokenizer.special_ids))
    arrays = {
        "input_word_ids": np.stack([r[0] for r in rows]),
        "input_mask": np.stack([r[1] for r in rows]),
        "input_type_ids": np.stack([r[2] for r in rows]),
    }
    if examples[0].label is not None:
        arrays["label_ids"] = np.array([e.label for e in examples], np.float32 if regression else np.int32)
    return arrays
