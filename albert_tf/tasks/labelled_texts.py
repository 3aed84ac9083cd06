"""A user's own labelled texts: CSV, TSV or JSON Lines files (each optionally .gz) read into examples and a
label scheme, every bad input named by file, line and column before anything is trained.

Files:
  - CSV and TSV have a header row naming the columns; CRLF line ends are read as LF. How quotes are read is the
    `quoting` setting (`QUOTINGS`):
      `csv`: RFC 4180 quoting: a cell that begins with a quote ends at its closing quote and may hold the
        delimiter, newlines and quotes (doubled); a row's line is the line it starts on;
      `none`: every character literal, one row per line, every delimiter a cell boundary (GLUE's TSVs, whose
        texts hold stray quotes such as `"Hello," she said.`);
      `auto` (the default): `csv` for a CSV file. A TSV file is read with `csv` where it is RFC 4180 throughout,
        else with `none`: every cell that begins with a quote ends with its closing quote right before a tab or
        a line end, the quotes inside it doubled; no text holds a lone quote between two of its characters (RFC
        4180 would have quoted the cell and doubled it); the file ends outside quotes; and every row so read
        has the header's number of cells. Tools that quote (pandas,
        Excel) write such files. A stray quote (`"Hello," she said.`, `the "best" one`) makes the file literal.
        Two cases read quoted where `none` is meant: a file whose only quotes enclose whole cells (`"Stop."`)
        loses those quotes; a text that opens a quote it never closes, in a file with no other stray quote,
        whose next quote ends a cell of the same column on a later row, joins those rows into one cell.
  - JSON Lines hold one JSON object per line; blank lines are skipped.
  - All are UTF-8; a byte-order mark is dropped.

Columns are chosen by name (`ColumnNames`): the text, an optional second text of a pair, the label, and an
optional id carried to the predictions. A second text or id column named by default is used where the header
has it; one named explicitly must exist.

The problem type comes from the training file's labels, or from the caller:
  - `single_label`: one name per row (strings, or integers read as names); the label set is the training file's,
    sorted (numerically when every name is an integer), its index the class id;
  - `multi_label`: any number of names per row, as a JSON list (a JSON Lines list, or a CSV/TSV cell holding
    one) or split on a separator; sigmoid outputs, each label predicted where its probability >= 0.5;
  - `regression`: one float per row (read so when some label is not an integer, or when forced).
These are the names Hugging Face's `problem_type` uses, less the `_classification` suffix.
"""

import csv
import dataclasses
import gzip
import io
import json
import math
import os
import re
import sys
import zlib

from albert_tf.file_utils import decode_utf8_text
from albert_tf.settings import SettingError

PROBLEM_TYPES = ("single_label", "multi_label", "regression")
# Hugging Face's config.problem_type for each (AlbertForSequenceClassification's loss follows it).
HUGGINGFACE_PROBLEM_TYPES = {
    "single_label": "single_label_classification",
    "multi_label": "multi_label_classification",
    "regression": "regression",
}
MULTI_LABEL_THRESHOLD = 0.5  # a label is predicted where its sigmoid probability reaches this

_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}
# An odd run of quotes between two characters of a cell: a quote that RFC 4180 quoting does not explain.
_LONE_QUOTE = re.compile(r'(?<=[^\t\r\n"])"(?:"")*(?=[^\t\r\n"])')
QUOTINGS = ("auto", "csv", "none")  # how CSV and TSV cells are read: the module's docstring


@dataclasses.dataclass(frozen=True)
class ColumnNames:
    """Which columns hold what. `text_b` and `example_id` are optional: None takes the default name where
    the file has such a column, and a name given explicitly must exist."""

    text: str = "text"
    text_b: str = None
    label: str = "label"
    example_id: str = None

    DEFAULT_TEXT_B = "text_b"
    DEFAULT_ID = "id"


@dataclasses.dataclass(frozen=True)
class LabelledText:
    text: str
    text_b: str  # None for single texts
    raw_label: object  # as read: a string, a number, a list of names; None where the file has no labels
    example_id: str  # None where the file has no id column
    where: str  # "file:line", for messages


@dataclasses.dataclass(frozen=True)
class TextFile:
    """One file's examples, and which optional columns it had."""

    path: str
    examples: tuple
    has_text_b: bool
    has_labels: bool
    id_column: str  # None where the file has none


@dataclasses.dataclass(frozen=True)
class LabelScheme:
    """What the model predicts: the problem type and (for classification) the label names, in class-id order."""

    problem_type: str
    labels: tuple = ()

    def __post_init__(self):
        if self.problem_type not in PROBLEM_TYPES:
            raise SettingError(f"<problem_type> must be one of {list(PROBLEM_TYPES)}, got {self.problem_type!r}")
        if self.problem_type == "regression" and self.labels:
            raise SettingError("a regression scheme has no label names")
        if self.problem_type != "regression" and len(self.labels) < 2:
            raise SettingError(f"a {self.problem_type} scheme needs two or more label names, got {list(self.labels)}")

    @property
    def num_outputs(self):
        return 1 if self.problem_type == "regression" else len(self.labels)

    @property
    def id2label(self):
        return {str(index): name for index, name in enumerate(self.labels)}


def file_format(path):
    """'csv', 'tsv' or 'jsonl', from the name (a .gz suffix looked through)."""
    name = path[:-3] if path.endswith(".gz") else path
    extension = os.path.splitext(name)[1].lower()
    if extension not in _FORMATS:
        raise ValueError(f"{path}: unknown file type {extension or '(none)'!r}; name the file .csv, .tsv or .jsonl "
                         "(each optionally .gz)")
    return _FORMATS[extension]


def read_text(path):
    """The file's text: gunzipped where named .gz, UTF-8 decoded, a byte-order mark dropped; one-line errors
    naming the file (and the line of a byte that is not UTF-8)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as error:
            raise ValueError(f"{path}: not a complete gzip file ({error}); recompress or pass the file "
                             "uncompressed") from None
    text = decode_utf8_text(data, path)
    if not text.strip():
        raise ValueError(f"{path}: the file is empty")
    return text


def _split_rows(text, delimiter, quoted):
    """(line, cells) of each row that is not blank, the header first; a row's line is the line it starts on.
    Raises csv.Error with the line of the row it could not read as `line`."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True,
                        quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE)
    rows = []
    start = 1
    try:
        for cells in reader:
            if any(cell.strip() for cell in cells):
                rows.append((start, cells))
            start = reader.line_num + 1
    except csv.Error as error:
        error.line = start
        raise
    return rows


def _whole_quoted_rows(text):
    """A TSV's rows read with quoting where the file is RFC 4180 throughout and every row has the header's
    number of cells (`auto`, the module's docstring); None otherwise."""
    if _LONE_QUOTE.search(text):
        return None
    try:
        rows = _split_rows(text, "\t", quoted=True)
    except csv.Error:
        return None
    return rows if all(len(cells) == len(rows[0][1]) for _, cells in rows) else None


def _delimited_rows(path, text, delimiter, quoting):
    """The header, the (line, cells) of each row after it, and whether the file's quotes were read as text."""
    csv.field_size_limit(sys.maxsize)
    rows = _whole_quoted_rows(text) if quoting == "auto" and delimiter == "\t" else None
    quoted = rows is not None or quoting == "csv" or (quoting == "auto" and delimiter == ",")
    if rows is None:
        try:
            rows = _split_rows(text, delimiter, quoted)
        except csv.Error as error:
            raise SettingError(f"{path}:{error.line}: not valid {'CSV' if delimiter == ',' else 'TSV'} ({error}); "
                               "check the quoting of this row, or pass <quoting>=none to read every character "
                               "literally, one row per line") from None
    if not rows:
        raise ValueError(f"{path}: the file is empty")
    (_, header), rows = rows[0], rows[1:]
    header = [name.strip() for name in header]
    return header, rows, not quoted and '"' in text


def _choose_columns(columns, present, path, labelled):
    """{role: column name or None} for the columns this file is read with."""
    def pick(given, default, role):
        if given is not None:
            if given not in present:
                raise SettingError(f"{path}:1: no {role} column {given!r}; the file has {sorted(present)} (choose "
                                   f"another with <{role}_column>)")
            return given
        return default if default in present else None

    chosen = {
        "text": pick(columns.text, None, "text"),
        "text_b": pick(columns.text_b, ColumnNames.DEFAULT_TEXT_B, "text_b"),
        "example_id": pick(columns.example_id, ColumnNames.DEFAULT_ID, "id"),
        "label": None,
    }
    if columns.label in present:
        chosen["label"] = columns.label
    elif labelled:
        raise SettingError(f"{path}:1: no label column {columns.label!r}; the file has {sorted(present)} (choose "
                           "it with <label_column>)")
    return chosen


def _example(path, line, values, chosen):
    """A LabelledText from {column: value}; refuses an empty text."""
    where = f"{path}:{line}"
    texts = {}
    for role in ("text", "text_b"):
        name = chosen[role]
        if name is None:
            texts[role] = None
            continue
        value = values.get(name)
        if role == "text_b" and value is None:  # a JSON line without a second text: a single text
            texts[role] = None
            continue
        if not isinstance(value, str):
            raise ValueError(f"{where}: column {name!r} holds {_describe(value)}, not a text")
        if role == "text" and not value.strip():
            raise ValueError(f"{where}: column {name!r} is empty; every row needs a text")
        texts[role] = value
    example_id = None
    if chosen["example_id"] is not None:
        example_id = values.get(chosen["example_id"])
        example_id = None if example_id is None else str(example_id)
    raw_label = values.get(chosen["label"]) if chosen["label"] is not None else None
    return LabelledText(texts["text"], texts["text_b"] or None, raw_label, example_id, where)


def _describe(value):
    return "nothing" if value is None else f"a JSON {type(value).__name__}"


def read_text_file(path, columns=ColumnNames(), labelled=True, quoting="auto"):
    """The examples of one file. `labelled`: the label column must exist (training and evaluation files);
    otherwise it is read where present (a predict file). `quoting`: how CSV and TSV cells are read (`QUOTINGS`).
    ValueError naming file, line and column."""
    if quoting not in QUOTINGS:
        raise SettingError(f"<quoting> must be one of {list(QUOTINGS)}, got {quoting!r}")
    kind = file_format(path)
    text = read_text(path)
    examples = []
    if kind == "jsonl":
        objects = []
        for line, row in enumerate(text.splitlines(), start=1):
            if not row.strip():
                continue
            try:
                value = json.loads(row)
            except ValueError as error:
                raise ValueError(f"{path}:{line}: not a JSON object ({error.args[0].split(':')[0]})") from None
            if not isinstance(value, dict):
                raise ValueError(f"{path}:{line}: holds {_describe(value)}; each line must be one JSON object")
            objects.append((line, value))
        if not objects:
            raise ValueError(f"{path}: the file is empty")
        present = set(objects[0][1])
        chosen = _choose_columns(columns, present, path, labelled)
        for line, value in objects:
            for role, name in chosen.items():
                # Optional columns may be absent from a row (JSON Lines have no header to fix them).
                if name is not None and name not in value and role in ("text", "label"):
                    raise ValueError(f"{path}:{line}: no {name!r} key; every line needs one")
            examples.append(_example(path, line, value, chosen))
    else:
        header, rows, quotes_as_text = _delimited_rows(path, text, "," if kind == "csv" else "\t", quoting)
        duplicates = sorted({name for name in header if header.count(name) > 1})
        if duplicates:
            raise ValueError(f"{path}:1: the header names {duplicates} more than once")
        chosen = _choose_columns(columns, set(header), path, labelled)
        for line, cells in rows:
            if len(cells) != len(header):
                hint = ("the file's quotes were read as text (<quoting>=none, or auto finding quotes that are "
                        "not RFC 4180 quoting); <quoting>=csv reads quoted cells and names the row a quote breaks"
                        if quotes_as_text else "quote cells that hold the delimiter")
                raise SettingError(f"{path}:{line}: {len(cells)} columns where the header has {len(header)}; {hint}")
            examples.append(_example(path, line, dict(zip(header, cells)), chosen))
        if not examples:
            raise ValueError(f"{path}: holds a header and no rows")
    return TextFile(path, tuple(examples), has_text_b=chosen["text_b"] is not None,
                    has_labels=chosen["label"] is not None, id_column=chosen["example_id"])


# --- labels ---


def _label_names(example, separator):
    """A multi-label row's names, from a list (JSON, or a cell holding a JSON list) or a separated string."""
    raw = example.raw_label
    if isinstance(raw, str) and raw.strip().startswith("["):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ValueError(f"{example.where}: label {raw!r} starts like a JSON list but is none") from None
    if isinstance(raw, list):
        names = raw
    elif isinstance(raw, str) and separator:
        names = raw.split(separator) if raw.strip() else []
    elif isinstance(raw, str):
        names = [raw] if raw.strip() else []
    else:
        raise ValueError(f"{example.where}: label holds {_describe(raw)}; a multi-label row holds a list of names")
    result = []
    for name in names:
        if isinstance(name, bool) or not isinstance(name, (str, int)):
            raise ValueError(f"{example.where}: label list holds {_describe(name)}; give label names")
        name = str(name).strip()
        if not name:
            raise ValueError(f"{example.where}: an empty label name in {example.raw_label!r}")
        result.append(name)
    return tuple(result)


def _as_number(raw):
    """A label as a float where it is one (a JSON number or a numeric string), else None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str):
        try:
            return float(raw.strip())
        except ValueError:
            return None
    return None


def _single_name(example):
    raw = example.raw_label
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise ValueError(f"{example.where}: label holds {_describe(raw)}; give one label name (or a list, for "
                         "multi-label data)")
    if isinstance(raw, float):
        if not raw.is_integer():
            raise SettingError(f"{example.where}: label {raw!r} is a score; pass <problem_type>=regression for "
                               "scores")
        raw = int(raw)
    name = str(raw).strip()
    if not name:
        raise ValueError(f"{example.where}: the label is empty")
    return name


def _is_list_label(raw):
    return isinstance(raw, list) or (isinstance(raw, str) and raw.strip().startswith("["))


def infer_problem_type(train, label_separator=None):
    """The problem type the training file's labels say: lists (or a separator) -> multi_label; numbers of
    which some are not integers -> regression; names (or integers) -> single_label. Numbers that are not
    integers mixed with names are refused, naming a row of each."""
    if label_separator or any(_is_list_label(example.raw_label) for example in train.examples):
        return "multi_label"
    fractional = name = None
    for example in train.examples:
        number = _as_number(example.raw_label)
        if number is not None and math.isfinite(number) and not number.is_integer():
            fractional = fractional or example
        elif number is None:
            name = name or example
    if fractional and name:
        raise SettingError(f"{train.path}: label column mixes scores ({fractional.raw_label!r} at "
                         f"{fractional.where.rsplit(':', 1)[1]}) with names ({name.raw_label!r} at "
                         f"{name.where.rsplit(':', 1)[1]}); fix the labels, or pass <problem_type>=regression for scores")
    return "regression" if fractional else "single_label"


def _sorted_names(names):
    """Label names in class-id order: numerically when every name is an integer ('2' before '10'), else as text."""
    names = set(names)
    try:
        return tuple(sorted(names, key=int))
    except ValueError:
        return tuple(sorted(names))


def label_scheme(train, problem_type=None, label_separator=None):
    """The scheme the training file defines: `problem_type` forced, or inferred (`infer_problem_type`); the
    label set is every name in the file, sorted. A classification file with one label is refused."""
    if not train.has_labels:
        raise ValueError(f"{train.path}: has no labels to train on")
    problem_type = problem_type or infer_problem_type(train, label_separator)
    if problem_type == "regression":
        for example in train.examples:
            regression_target(example)
        return LabelScheme("regression")
    if problem_type == "multi_label":
        names = [name for example in train.examples for name in _label_names(example, label_separator)]
    else:
        names = [_single_name(example) for example in train.examples]
    labels = _sorted_names(names)
    if len(labels) < 2:
        only = f"only the label {labels[0]!r}" if labels else "no label names"
        raise SettingError(f"{train.path}: {only} in {len(train.examples)} rows; a classifier needs two or more "
                           "(pass <problem_type>=regression for scores)")
    return LabelScheme(problem_type, labels)


def regression_target(example):
    number = _as_number(example.raw_label)
    if number is None or not math.isfinite(number):
        raise ValueError(f"{example.where}: label {example.raw_label!r} is not a finite number; a regression "
                         "file holds one score per row")
    return number


def check_labels(scheme, text_file, label_separator=None):
    """Refuses labels of an evaluation or predict file that the training file did not have, listing them
    with the line of each one's first row."""
    if not text_file.has_labels:
        return
    if scheme.problem_type == "regression":
        for example in text_file.examples:
            regression_target(example)
        return
    known = set(scheme.labels)
    unknown = {}
    for example in text_file.examples:
        if example.raw_label is None:
            continue
        if scheme.problem_type == "multi_label":
            names = _label_names(example, label_separator)
        else:
            names = (_single_name(example),)
        for name in names:
            if name not in known:
                unknown.setdefault(name, example.where.rsplit(":", 1)[1])
    if unknown:
        listed = ", ".join(f"{name!r} (line {line})" for name, line in sorted(unknown.items()))
        raise ValueError(f"{text_file.path}: labels not in the training file: {listed}; the model can only "
                         f"predict {list(scheme.labels)}")


def label_targets(scheme, text_file, label_separator=None):
    """The training targets of a labelled file: class ids (single_label), 0/1 rows over the labels
    (multi_label) or floats (regression), as a numpy array."""
    import numpy as np

    if scheme.problem_type == "regression":
        return np.array([regression_target(example) for example in text_file.examples], np.float32)
    index = {name: i for i, name in enumerate(scheme.labels)}
    if scheme.problem_type == "single_label":
        return np.array([index[_single_name(example)] for example in text_file.examples], np.int32)
    targets = np.zeros((len(text_file.examples), len(scheme.labels)), np.float32)
    for row, example in enumerate(text_file.examples):
        for name in _label_names(example, label_separator):
            targets[row, index[name]] = 1.0
    return targets


def label_counts(scheme, text_file, label_separator=None):
    """{label name: rows holding it} (classification), for the summary said before training."""
    targets = label_targets(scheme, text_file, label_separator)
    if scheme.problem_type == "single_label":
        return {name: int((targets == i).sum()) for i, name in enumerate(scheme.labels)}
    return {name: int(targets[:, i].sum()) for i, name in enumerate(scheme.labels)}
