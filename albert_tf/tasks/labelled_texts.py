"""A user's own labelled texts: CSV, TSV, JSON Lines or JSON array files (each optionally .gz) read into
examples and a label scheme, every bad input named by file, line and column before anything is trained.

Files:
  - CSV and TSV have a header row naming the columns. How quotes are read is the `quoting` setting
    (`QUOTINGS`):
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
    A row equal to the header (files joined with their headers) is refused, not read as a row.
  - JSON Lines (`.jsonl`, or `.json`) hold one JSON object per line; blank lines are skipped. Lines end at LF,
    CRLF or CR alone, never at a character such as U+2028 or U+0085 inside a JSON string.
  - A `.json` file whose first character (after spaces) is `[` holds one JSON array of objects (KLUE's files);
    a record's place in messages is its 0-based index in the array, `record N`. Predictions for it are JSON
    Lines.
  - All are UTF-8; a byte-order mark is dropped; CRLF and CR alone (old Mac files) end lines as LF does.
  - A file is read whole into memory (its examples are all needed at once), so one over `MAX_TEXT_BYTES`
    (1 GiB) of text, counted while decompressing a .gz, is refused in one line instead of exhausting memory.

Columns are chosen by name (`ColumnNames`): the text, an optional second text of a pair, the label, and an
optional id carried to the predictions. A second text or id column named by default is used where the header
has it; one named explicitly must exist. In JSON a column is a key, and a dotted name reaches into nested
objects where the object has no key of that whole name: KLUE STS's `{"labels": {"label": 4.9, ...}}` gives its
score as `labels.label`. Nesting is followed through objects only, not lists.

Labels are optional in a file to predict, and one rule says whether a file has them: a label column that is
blank in every row (an empty or spaces-only cell, JSON null, or a JSON key left out) is no labels at all; one
blank in some rows only is refused at the first blank row (a multi-label row with no labels holds `[]`). A
training or evaluation file needs every row labelled.

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

from albert_tf.settings import SettingError

PROBLEM_TYPES = ("single_label", "multi_label", "regression")
# Hugging Face's config.problem_type for each (AlbertForSequenceClassification's loss follows it).
HUGGINGFACE_PROBLEM_TYPES = {
    "single_label": "single_label_classification",
    "multi_label": "multi_label_classification",
    "regression": "regression",
}
MULTI_LABEL_THRESHOLD = 0.5  # a label is predicted where its sigmoid probability reaches this

_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}  # .json: JSON Lines or an array
# The most text a file may hold (decompressed): files are read whole, and parsing holds about five times their
# size at its peak (bytes, text, cells, examples); past this a MemoryError would come instead of a message.
MAX_TEXT_BYTES = 1 << 30
_READ_CHUNK = 1 << 20  # a .gz is decompressed this much at a time, counted against MAX_TEXT_BYTES
_LINE_END = re.compile(r"\r\n|\r|\n")
_BYTE_LINE_END = re.compile(rb"\r\n|\r|\n")
_JSON_SPACE = re.compile(r"[ \t\r\n]*")  # JSON's whitespace, and no other
_LISTED_KEYS = 40  # column names listed in a message about a JSON file's columns
_MISSING = object()  # a JSON row without the column's key
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
    """'csv', 'tsv' or 'jsonl' (JSON Lines, or a .json file's array), from the name (a .gz suffix looked
    through)."""
    extension = _extension(path)
    if extension not in _FORMATS:
        raise ValueError(f"{path}: unknown file type {extension or '(none)'!r}; name the file .csv, .tsv, .jsonl "
                         "or .json (each optionally .gz)")
    return _FORMATS[extension]


def _extension(path):
    name = path[:-3] if path.endswith(".gz") else path
    return os.path.splitext(name)[1].lower()


def split_lines(text):
    """The text's lines, without their ends: LF, CRLF and CR alone end a line, nothing else (str.splitlines
    would also split at U+2028, U+0085 and other characters a JSON string or a token may hold). A text that
    ends with a line end gives no empty last line."""
    lines = _LINE_END.split(text)
    return lines[:-1] if lines[-1] == "" else lines


def _size(count):
    return f"{count / (1 << 30):g} GiB" if count >= 1 << 30 else f"{count:,} bytes"


def _too_large(path):
    decompressed = " once decompressed" if path.endswith(".gz") else ""
    return ValueError(f"{path}: more than {_size(MAX_TEXT_BYTES)} of text{decompressed}, the most a file is read "
                      "into memory; use a sample of it, or shorten it below that size")


def _read_bytes(path):
    """The file's bytes, gunzipped where named .gz; refused past MAX_TEXT_BYTES (a .gz counted while it is
    decompressed, so that a small file of huge content stops early)."""
    if not path.endswith(".gz"):
        if os.path.getsize(path) > MAX_TEXT_BYTES:
            raise _too_large(path)
        with open(path, "rb") as f:
            return f.read()
    chunks, total = [], 0
    try:
        with gzip.open(path, "rb") as f:
            while chunk := f.read(min(_READ_CHUNK, MAX_TEXT_BYTES + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > MAX_TEXT_BYTES:
                    raise _too_large(path)
    except (EOFError, OSError, zlib.error) as error:
        raise ValueError(f"{path}: not a complete gzip file ({error}); recompress or pass the file "
                         "uncompressed") from None
    return b"".join(chunks)


def read_text(path):
    """The file's text: gunzipped where named .gz, UTF-8 decoded, a byte-order mark dropped; one-line errors
    naming the file (and the line of a byte that is not UTF-8, counting LF, CRLF and CR line ends), and one past
    MAX_TEXT_BYTES."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    data = _read_bytes(path)
    try:
        # The mark is dropped after decoding: utf-8-sig would count the error's offset from after it.
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        line = len(_BYTE_LINE_END.findall(data, 0, error.start)) + 1
        raise ValueError(f"{path}:{line}: not UTF-8 text (byte 0x{data[error.start]:02x}); convert the file to "
                         "UTF-8") from None
    del data  # the bytes are not kept beside the text: a large file's peak memory
    if not text.strip():
        raise ValueError(f"{path}: the file is empty")
    return text


def _split_rows(text, delimiter, quoted):
    """(line, cells) of each row that is not blank, the header first; a row's line is the line it starts on.
    Raises csv.Error with the line of the row it could not read as `line`."""
    # newline="": the csv module reads quoted line ends itself, and ends rows at LF, CRLF and CR alone.
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
    """The header's line and names, the (line, cells) of each row after it, and whether the file's quotes
    were read as text."""
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
    (header_line, header), rows = rows[0], rows[1:]
    header = [name.strip() for name in header]
    return header_line, header, rows, not quoted and '"' in text


def _line_at(text, position):
    return len(_LINE_END.findall(text, 0, position)) + 1


def parse_json_line(where, text):
    """One JSON value; ValueError naming `where` for what is no JSON, and for nesting deeper than Python's
    JSON reader goes (its RecursionError)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{where}: JSON nested deeper than Python reads (about {sys.getrecursionlimit()} levels); "
                         "flatten this row") from None
    except ValueError as error:
        raise ValueError(f"{where}: not a JSON object ({error.args[0].split(':')[0]})") from None


def _is_json_array(path, text):
    return _extension(path) == ".json" and text.lstrip(" \t\r\n").startswith("[")


def _json_lines(path, text):
    """[(where, object)] of a JSON Lines file, one object per line that is not blank."""
    records = []
    for line, row in enumerate(split_lines(text), start=1):
        if not row.strip(" \t"):
            continue
        where = f"{path}:{line}"
        value = parse_json_line(where, row)
        if not isinstance(value, dict):
            hint = (" (a file holding one JSON array is read as such when named .json)"
                    if line == 1 and isinstance(value, list) else "")
            raise ValueError(f"{where}: holds {_describe(value)}; each line must be one JSON object{hint}")
        records.append((where, value))
    return records


def _json_array(path, text):
    """[(where, object)] of a JSON array of objects, each `path: record N` (N its 0-based index). Decoded a
    record at a time, so that an error names its record and line."""
    decoder = json.JSONDecoder()
    position = _JSON_SPACE.match(text, _JSON_SPACE.match(text).end() + 1).end()  # past the "["
    records = []
    if text.startswith("]", position):
        position += 1
    else:
        while True:
            where = f"{path}: record {len(records)}"
            try:
                value, position = decoder.raw_decode(text, position)
            except RecursionError:
                raise ValueError(f"{where} (line {_line_at(text, position)}): JSON nested deeper than Python "
                                 f"reads (about {sys.getrecursionlimit()} levels); flatten this record") from None
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{_line_at(text, error.pos)}: not valid JSON in record {len(records)} "
                                 f"({error.msg}); fix the file") from None
            if not isinstance(value, dict):
                raise ValueError(f"{where}: holds {_describe(value)}; a .json file's array holds one JSON object "
                                 "per row")
            records.append((where, value))
            position = _JSON_SPACE.match(text, position).end()
            if text.startswith(",", position):
                position = _JSON_SPACE.match(text, position + 1).end()
            elif text.startswith("]", position):
                position += 1
                break
            else:
                raise ValueError(f"{path}:{_line_at(text, position)}: expected ',' or ']' after record "
                                 f"{len(records) - 1}; fix the file")
    if text[position:].strip(" \t\r\n"):
        raise ValueError(f"{path}:{_line_at(text, position)}: text after the array's closing ']'; a .json file "
                         "holds one array, or is JSON Lines")
    return records


def _lookup(record, name):
    """The value a column name gives in a JSON object: its key, else (a dotted name) the nested keys' value;
    _MISSING where there is none."""
    if name in record:
        return record[name]
    value = record
    for key in name.split("."):
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


def _key_names(record):
    """The column names a JSON object offers, for messages: its keys, then nested objects' dotted keys,
    breadth first, at most _LISTED_KEYS (a row may be large)."""
    names, queue = [], [("", record)]
    while queue and len(names) <= _LISTED_KEYS:
        prefix, value = queue.pop(0)
        for key, inner in value.items():
            names.append(prefix + key)
            if isinstance(inner, dict):
                queue.append((f"{prefix}{key}.", inner))
    return names[:_LISTED_KEYS] + (["..."] if len(names) > _LISTED_KEYS else [])


def _choose_columns(columns, has, listed, where, labelled, has_label=None):
    """{role: column name or None} for the columns this file is read with. `has(name)`: the file has the
    column; `listed`: its columns, for messages; `has_label`: whether some row has the label column (JSON,
    whose rows may differ), else `has`."""
    def pick(given, default, role):
        if given is not None:
            if not has(given):
                raise SettingError(f"{where}: no {role} column {given!r}; the file has {listed} (choose "
                                   f"another with <{role}_column>)")
            return given
        return default if has(default) else None

    chosen = {
        "text": pick(columns.text, None, "text"),
        "text_b": pick(columns.text_b, ColumnNames.DEFAULT_TEXT_B, "text_b"),
        "example_id": pick(columns.example_id, ColumnNames.DEFAULT_ID, "id"),
        "label": None,
    }
    if (has_label or has)(columns.label):
        chosen["label"] = columns.label
    elif labelled:
        raise SettingError(f"{where}: no label column {columns.label!r}; the file has {listed} (choose "
                           "it with <label_column>)")
    return chosen


def _example(where, value_of, chosen):
    """A LabelledText from `value_of(column)` (_MISSING where a JSON row lacks the key); refuses an empty
    text. The label is kept as read (_MISSING included) for `_labels_or_none` to judge."""
    texts = {}
    for role in ("text", "text_b"):
        name = chosen[role]
        value = None if name is None else value_of(name)
        if role == "text_b" and (value is None or value is _MISSING):  # a JSON row without a second text: a single text
            texts[role] = None
            continue
        if value is _MISSING:
            raise ValueError(f"{where}: no {name!r} key; every row needs a text")
        if not isinstance(value, str):
            raise ValueError(f"{where}: column {name!r} holds {_describe(value)}, not a text")
        if role == "text" and not value.strip():
            raise ValueError(f"{where}: column {name!r} is empty; every row needs a text")
        texts[role] = value
    example_id = None
    if chosen["example_id"] is not None:
        example_id = value_of(chosen["example_id"])
        example_id = None if example_id is None or example_id is _MISSING else str(example_id)
    raw_label = value_of(chosen["label"]) if chosen["label"] is not None else None
    return LabelledText(texts["text"], texts["text_b"] or None, raw_label, example_id, where)


def _is_blank(raw_label):
    return raw_label is None or raw_label is _MISSING or (isinstance(raw_label, str) and not raw_label.strip())


def _labels_or_none(examples, column, labelled):
    """The examples as labelled (every row has a label), or with no labels (the column is blank in every
    row: a file to predict); refuses a column blank in some rows only, at the first one (the module's
    docstring)."""
    blank = [example for example in examples if _is_blank(example.raw_label)]
    if not blank:
        return examples, True
    if len(blank) < len(examples):
        first, other = blank[0], next(example for example in examples if not _is_blank(example.raw_label))
        said = f"no {column!r} key" if first.raw_label is _MISSING else f"the label is empty (column {column!r})"
        raise ValueError(f"{first.where}: {said}, where {_place(other)} has a label; label every row (a "
                         "multi-label row with no labels holds []), or leave the label out of every row of a file "
                         "to predict")
    if labelled:
        raise ValueError(f"{examples[0].where}: the label column {column!r} is empty in every row; a training or "
                         "evaluation file labels each row")
    return [dataclasses.replace(example, raw_label=None) for example in examples], False


def read_text_file(path, columns=ColumnNames(), labelled=True, quoting="auto"):
    """The examples of one file. `labelled`: the label column must exist and label every row (training and
    evaluation files); otherwise labels are read where the column labels every row, and a column blank in every
    row is no labels (a predict file; the module's docstring). `quoting`: how CSV and TSV cells are read
    (`QUOTINGS`). ValueError naming file, line (or JSON array record) and column."""
    if quoting not in QUOTINGS:
        raise SettingError(f"<quoting> must be one of {list(QUOTINGS)}, got {quoting!r}")
    kind = file_format(path)
    text = read_text(path)
    examples = []
    if kind == "jsonl":
        array = _is_json_array(path, text)
        records = _json_array(path, text) if array else _json_lines(path, text)
        del text
        if not records:
            raise ValueError(f"{path}: {'holds an empty JSON array' if array else 'the file is empty'}")
        first_where, first = records[0]
        chosen = _choose_columns(columns, lambda name: _lookup(first, name) is not _MISSING, _key_names(first),
                                 first_where, labelled,
                                 has_label=lambda name: any(_lookup(r, name) is not _MISSING for _, r in records))
        for where, record in records:
            examples.append(_example(where, lambda name: _lookup(record, name), chosen))
    else:
        header_line, header, rows, quotes_as_text = _delimited_rows(path, text, "," if kind == "csv" else "\t",
                                                                    quoting)
        del text
        duplicates = sorted({name for name in header if header.count(name) > 1})
        if duplicates:
            raise ValueError(f"{path}:{header_line}: the header names {duplicates} more than once")
        names = set(header)
        chosen = _choose_columns(columns, names.__contains__, sorted(names), f"{path}:{header_line}", labelled)
        for line, cells in rows:
            if len(cells) != len(header):
                hint = ("the file's quotes were read as text (<quoting>=none, or auto finding quotes that are "
                        "not RFC 4180 quoting); <quoting>=csv reads quoted cells and names the row a quote breaks"
                        if quotes_as_text else "quote cells that hold the delimiter")
                raise SettingError(f"{path}:{line}: {len(cells)} columns where the header has {len(header)}; {hint}")
            if [cell.strip() for cell in cells] == header:
                # Files joined with their headers: read as a row, the header would become a label named "label".
                raise ValueError(f"{path}:{line}: repeats the header (line {header_line}), as files joined with "
                                 "their headers do; delete this line")
            values = dict(zip(header, cells))
            examples.append(_example(f"{path}:{line}", values.__getitem__, chosen))
        if not examples:
            raise ValueError(f"{path}: holds a header and no rows")
    has_labels = chosen["label"] is not None
    if has_labels:
        examples, has_labels = _labels_or_none(examples, chosen["label"], labelled)
    return TextFile(path, tuple(examples), has_text_b=chosen["text_b"] is not None,
                    has_labels=has_labels, id_column=chosen["example_id"])


def _place(example):
    """'line 3', or 'record 5' in a JSON array: where in its file an example is, for messages listing rows."""
    tail = example.where.rsplit(":", 1)[-1].strip()
    return tail if tail.startswith("record ") else f"line {tail}"


def _describe(value):
    return "nothing" if value is None else f"a JSON {type(value).__name__}"


def _nested_hint(raw):
    """For a label that is a JSON object: how to name a value inside it (the module's docstring)."""
    if not isinstance(raw, dict) or not raw:
        return ""
    return f"; to read a value inside the object, name it with a dot: <label_column>=COLUMN.{next(iter(raw))}"


def _shortened(text, length=60):
    return text if len(text) <= length else text[:length - 3] + "..."


# --- labels ---


def _label_names(example, separator):
    """A multi-label row's names, from a list (JSON, or a cell holding a JSON list) or a separated string."""
    raw = example.raw_label
    if isinstance(raw, str) and raw.strip().startswith("["):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: a cell nested deeper than Python's JSON reader goes
            raise ValueError(f"{example.where}: label {_shortened(raw)!r} starts like a JSON list but is none (or "
                             "is nested too deep); write the names as [\"a\", \"b\"]") from None
    if isinstance(raw, list):
        names = raw
    elif isinstance(raw, str) and separator:
        names = raw.split(separator) if raw.strip() else []
    elif isinstance(raw, str):
        names = [raw] if raw.strip() else []
    else:
        # A SettingError, whose hint a command line says as its flag.
        raise SettingError(f"{example.where}: label holds {_describe(raw)}; a multi-label row holds a list of "
                           f"names{_nested_hint(raw)}")
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
        raise SettingError(f"{example.where}: label holds {_describe(raw)}; give one label name (or a list, for "
                           f"multi-label data){_nested_hint(raw)}")
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
                           f"{_place(fractional)}) with names ({name.raw_label!r} at {_place(name)}); fix the "
                           "labels, or pass <problem_type>=regression for scores")
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
                unknown.setdefault(name, _place(example))
    if unknown:
        listed = ", ".join(f"{name!r} ({place})" for name, place in sorted(unknown.items()))
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
