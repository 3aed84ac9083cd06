"""Tagged texts for entity tagging: CoNLL-style column files and JSON Lines (each optionally .gz) read into
sentences of (token, IOB2 tag), every bad input refused in one line naming the file and line before anything
is trained; and the predictions written back in the input's format.

  train = read_tagged_file("train.conll")            # scheme and columns detected
  labels = tag_labels(train)                         # TagLabels(('O', 'B-LOC', 'I-LOC', 'B-PER', 'I-PER'))
  test = read_tagged_file("test.iob2")
  check_entity_types(labels, test)                   # refuses a type the training file lacks
  write_predictions("predictions.iob2", test, predicted_tags)

Formats, from the name (a .gz suffix looked through): `.jsonl` and `.json` are JSON Lines; every other name
(`.conll`, `.iob2`, `.bio`, `.txt`, `.tsv`, CoNLL-2003's `eng.train`, ...) is a column file. All are UTF-8 (a
byte-order mark dropped); lines end at LF, CRLF or CR alone (old Mac files), never at U+2028, U+0085 or another
character a token or a JSON string may hold. A file over `labelled_texts.MAX_TEXT_BYTES` of text (1 GiB, a .gz
counted while decompressing) is refused in one line: files are read whole.

Column files (`COLUMNS`) hold one token per line, its fields in columns; a blank line ends a sentence.
  - Columns are separated by tabs where the file's first token line holds a tab (a token may then hold
    spaces), else by runs of spaces and tabs. Spaces around a token are dropped, but in a tab-separated file
    a token cell of whitespace alone is a space token, " " (KLUE-NER's layout: one character a line, each
    space of the sentence a line ` <TAB>O`); an empty token cell is refused.
  - A line whose first column is `-DOCSTART-` is a document break, not a token.
  - A line starting with `#` is a comment (CoNLL-U's `# text = ...`), unless it reads as a token line: as many
    columns as the file's token lines and, where the file has tags, a tag in the tag column (a `#hashtag O`
    token of tweet corpora). A block of comment lines alone is no sentence. The last `# text = ...` comment
    between a sentence's end and the next one's first token line is that sentence's raw `text` (what follows
    `# text = `, exactly); KLUE-NER's `## <id><TAB><annotated sentence>` lines are comments, nothing more.
  - The token and tag columns (0-based `token_column`, `tag_column`) are detected where not set, from the lines
    that are neither blank, comments nor document breaks, counting columns by the most common line:
      tag column: the LAST column in which more than half of the values are tags (`O`, or one of B I E S L U,
        a hyphen and a type), so that CoNLL-2003's `EU NNP B-NP B-ORG` takes the entity column after the chunk
        column, and a stray bad tag is refused by its line rather than moving the choice;
      token column: the first other column that does not hold an index on every line (integers, and CoNLL-U's
        `1-2` ranges and `1.1` empty nodes), so UNER's `1<TAB>where<TAB>O<TAB>-<TAB>-` reads `where`.
    A file that is not tagged (`tagged=False`: a predict file) may have no tag column.
JSON Lines (`JSON_LINES`) hold one object per line, `{"tokens": [...], "tags": [...]}` (other keys kept and
ignored, except "text": a string, the sentence's raw `text`, or null); blank lines are skipped. The keys are
settings (`tokens_key`, default "tokens"; `tags_key`, default "tags", or "ner_tags" where the first object has
no "tags": Hugging Face's token classification data sets as `datasets` exports them). Tags are names, or integer
ids (`datasets`' ClassLabel) read as names through `tag_names` (in id order: a list, or `read_tag_names` of a
file with one name a line); integer tags without names are refused. A .json file holding a JSON array (starting
with `[`) is refused, naming JSON Lines.

Tag schemes (`SCHEMES`; the `scheme` setting, detected where not set), each converted on reading to IOB2, the
scheme the model predicts:
  - `iob2`: an entity starts with B-TYPE and continues with I-TYPE;
  - `iob1` (CoNLL-2003 as released): I-TYPE also starts an entity, after O or another type; B-TYPE starts one
    that follows an entity of its type;
  - `bioes` (also read: BILOU, whose L and U are BIOES' E and S): S-TYPE is a one-token entity, E-TYPE an
    entity's last token.
  Detected: `bioes` where some tag is E-, S-, L- or U-; else `iob1` where some I- starts an entity (after O,
  after another type, or first in a sentence); else `iob2`. Read as iob1, an IOB2 file whose I- starts an
  entity gets the entities conlleval reads in it; `scheme=iob2` (and `bioes`) refuses an I- (E-) that
  continues no entity instead.

Character spans, for text without spaces between words (Chinese, Japanese; Korean's spaces fall between
phrases, an entity often ending inside one, `<서울:LC>에서`), scored as spans of the sentence's raw text:
`sentence_text` gives the text and each token's span in it (the `# text` line where the tokens are found in it,
else the tokens concatenated where spaces are tokens, else joined as `albert_tf.text.entities.words_text`
does), `entity_char_spans` the gold entities as character spans, and `albert_tf.text.entities.span_tags`
turns character spans (a prediction) back into tags of the tokens.

  text, token_spans = sentence_text(sentence)          # "서울에서 왔다", ((0, 1), (1, 2), ...)
  entity_char_spans(sentence, token_spans)             # [("LC", 0, 2)]
  span_tags(token_spans, [("LC", 0, 2)], sentence.tokens)   # ["B-LC", "I-LC", "O", ...]

The label set (`TagLabels`, from the training file): "O" first, then each entity type's B- and I-, the types
sorted (the layout of Hugging Face's CoNLL-2003 labels, whose types are in the corpus' order instead).
"""

import dataclasses
import json
import os
import re
from collections import Counter

from albert_tf.settings import SettingError
# gunzip, UTF-8, size and empty-file errors and line ends, as for labelled texts
from albert_tf.tasks.labelled_texts import parse_json_line, read_text, split_lines
from albert_tf.tasks.tagging_metrics import entity_spans
from albert_tf.text.entities import words_text

COLUMNS = "columns"
JSON_LINES = "jsonl"
LISTS = "lists"  # sentences given in memory (`tagged_lists`)
SCHEMES = ("iob2", "iob1", "bioes")
OUTSIDE = "O"
DOCUMENT_BREAK = "-DOCSTART-"
TEXT_COMMENT = "# text = "  # CoNLL-U's comment holding the sentence's raw text
SPACE = " "  # the token a tab-separated file's whitespace-only token cell reads as
TEXT_KEY = "text"  # a JSON Lines object's raw sentence text, where it has one

_JSON_LINES_EXTENSIONS = (".jsonl", ".json")
_TAG = re.compile(r"([BIESLU])-(\S+)")
_INDEX = re.compile(r"\d+(?:[-.]\d+)?")
_SCHEME_PREFIXES = {"iob2": "BI", "iob1": "BI", "bioes": "BIESLU"}
_TAG_FORMS = "O, or B-, I-, E-, S- (BILOU's L-, U-) before a type"
TOKENS_KEY = "tokens"
TAGS_KEYS = ("tags", "ner_tags")  # the default tags key: the first a file's first object has (else "tags")


@dataclasses.dataclass(frozen=True)
class TaggedSentence:
    """One sentence: its tokens as the file holds them and their tags converted to IOB2."""

    tokens: tuple  # the words, one per token line (JSON Lines: the "tokens" list)
    tags: tuple  # IOB2, one per token; None where the file is read untagged and has no tags
    where: str  # "file:line" of the first token (JSON Lines: of the object), for messages
    token_lines: tuple  # the 1-based line of each token (JSON Lines: the object's line for each); () for lists
    text: str = None  # the raw sentence: a column file's `# text = ` line, a JSON object's "text"; else None


@dataclasses.dataclass(frozen=True)
class TaggedFile:
    """A file's sentences, how it was read, and its lines (what `write_predictions` writes back)."""

    path: str
    format: str  # COLUMNS, JSON_LINES, or LISTS (`tagged_lists`: nothing to write back)
    sentences: tuple  # of TaggedSentence
    scheme: str  # the scheme the tags were read in (now IOB2); None where the file has no tags
    token_column: int = None  # column files only
    tag_column: int = None  # column files with tags only
    delimiter: str = None  # column files: "\t", or " " for a file separated by spaces
    lines: tuple = ()  # the file's lines, without line ends

    @property
    def has_tags(self):
        return self.scheme is not None


@dataclasses.dataclass(frozen=True)
class TagLabels:
    """The IOB2 tags a tagger predicts, in class-id order: "O" and B-/I- tags, each once. `from_types`
    makes the usual set; any order is accepted (a Hugging Face model's id2label keeps its own)."""

    labels: tuple

    def __post_init__(self):
        object.__setattr__(self, "labels", tuple(self.labels))
        bad = [label for label in self.labels if label != OUTSIDE and not _iob2_tag(label)]
        if bad:
            raise ValueError(f"tag labels must be O, B-TYPE or I-TYPE; got {bad}")
        repeated = sorted(label for label, count in Counter(self.labels).items() if count > 1)
        if repeated:
            raise ValueError(f"tag labels repeat {repeated}")
        if OUTSIDE not in self.labels:
            raise ValueError(f"tag labels must include {OUTSIDE!r}; got {list(self.labels)}")

    @classmethod
    def from_types(cls, types):
        """"O", then B- and I- of each type, types sorted."""
        return cls((OUTSIDE,) + tuple(f"{prefix}-{name}" for name in sorted(set(types)) for prefix in "BI"))

    @property
    def types(self):
        """The entity types, sorted."""
        return tuple(sorted({label[2:] for label in self.labels if label != OUTSIDE}))

    @property
    def id2label(self):
        return {index: label for index, label in enumerate(self.labels)}

    @property
    def label2id(self):
        return {label: index for index, label in enumerate(self.labels)}


def _iob2_tag(tag):
    return isinstance(tag, str) and len(tag) > 2 and tag[0] in "BI" and tag[1] == "-" and not any(
        character.isspace() for character in tag)


def file_format(path):
    """JSON_LINES for a .jsonl or .json name (a .gz suffix looked through), else COLUMNS."""
    return JSON_LINES if _extension(path) in _JSON_LINES_EXTENSIONS else COLUMNS


def _extension(path):
    name = path[:-3] if path.endswith(".gz") else path
    return os.path.splitext(name)[1].lower()


def check_settings(token_column, tag_column, scheme):
    """Refuses (SettingError) column numbers that are no column or the same one twice, and an unknown scheme."""
    for name, value in (("token_column", token_column), ("tag_column", tag_column)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise SettingError(f"<{name}> must be a column number, 0 or more (0 is the first column), got {value!r}")
    if token_column is not None and token_column == tag_column:
        raise SettingError(f"<token_column> and <tag_column> are both {token_column}; name two different columns")
    if scheme is not None and scheme not in SCHEMES:
        raise SettingError(f"<scheme> must be one of {list(SCHEMES)} (or unset: detected), got {scheme!r}")


def check_json_settings(tokens_key=None, tags_key=None, tag_names=None):
    """Refuses (SettingError) a JSON key that is no non-empty string, the same key for tokens and tags, and tag
    names that are not tags, repeat one, or are empty; returns the tag names as a tuple (None where not given)."""
    for name, value in (("tokens_key", tokens_key), ("tags_key", tags_key)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise SettingError(f"<{name}> must be a JSON key (a non-empty string), got {value!r}")
    if (tokens_key or TOKENS_KEY) == tags_key:
        raise SettingError(f"<tokens_key> and <tags_key> are both {tags_key!r}; name two different keys")
    if tag_names is None:
        return None
    if isinstance(tag_names, str) or not all(isinstance(name, str) for name in tag_names):
        raise SettingError(f"<tag_names> must be a list of tag names, got {tag_names!r}")
    names = []
    for name in tag_names:
        problem = _tag_name_problem(name.strip(), names)
        if problem:
            raise SettingError(f"<tag_names>: {problem} (the names of tag ids 0, 1, ... in order, comma-separated)")
        names.append(name.strip())
    if not names:
        raise SettingError("<tag_names> is empty; give the names of tag ids 0, 1, ... in order")
    return tuple(names)


def read_tag_names(path):
    """The tag names of a file holding one a line in id order (line 1 names id 0), as the names of `datasets`'
    ner_tags feature; trailing blank lines ignored. ValueError naming the file and line of a bad name."""
    lines = split_lines(read_text(path))
    while not lines[-1].strip():
        lines.pop()
    names = []
    for number, line in enumerate(lines, start=1):
        problem = _tag_name_problem(line.strip(), names)
        if problem:
            raise ValueError(f"{path}:{number}: {problem}; the file holds one tag name a line, in id order (line 1 "
                             "names id 0)")
        names.append(line.strip())
    return tuple(names)


def _tag_name_problem(name, earlier):
    """What is wrong with `name` as the next of the tag names `earlier`, or None."""
    if not name:
        return "an empty tag name"
    if not _is_tag(name):
        return f"{name!r} is not a tag; tags are {_TAG_FORMS}"
    if name in earlier:
        return f"{name!r} names both id {earlier.index(name)} and id {len(earlier)}"
    return None


def read_tagged_file(path, token_column=None, tag_column=None, scheme=None, tagged=True, tokens_key=None,
                     tags_key=None, tag_names=None):
    """The sentences of one file, tags converted to IOB2. `token_column`, `tag_column` (column files only) and
    `scheme` are detected where None (the module's docstring says how). `tagged`: the file must hold tags (a
    training or evaluation file); otherwise they are read where it has them (a predict file). `tokens_key`,
    `tags_key` and `tag_names` (the names of integer tag ids, in id order) are for JSON Lines; a column file
    ignores them. Raises ValueError (SettingError for a setting) naming the file and line."""
    check_settings(token_column, tag_column, scheme)
    tag_names = check_json_settings(tokens_key, tags_key, tag_names)
    if file_format(path) == JSON_LINES:
        for name, value in (("token_column", token_column), ("tag_column", tag_column)):
            if value is not None:
                raise SettingError(f"{path}: <{name}> is for column files; a JSON Lines file holds its tokens "
                                   "and tags under keys (<tokens_key>, <tags_key>)")
        return _read_json_lines(path, read_text(path), scheme, tagged, tokens_key or TOKENS_KEY, tags_key,
                                tag_names)
    return _read_columns(path, read_text(path), token_column, tag_column, scheme, tagged)


def tagged_lists(token_lists, tag_lists=None, scheme=None, name="sentences"):
    """In-memory sentences (a model's `fit` on token and tag lists) read as a file's are: tags checked,
    the scheme detected where None, converted to IOB2. Messages name `name[i]`, the i-th sentence."""
    check_settings(None, None, scheme)
    token_lists = list(token_lists)
    if tag_lists is not None:
        tag_lists = list(tag_lists)
        if len(tag_lists) != len(token_lists):
            raise ValueError(f"{name}: {len(token_lists)} token lists but {len(tag_lists)} tag lists")
    if not token_lists:
        raise ValueError(f"{name}: no sentences")
    records = []
    for index, tokens in enumerate(token_lists):
        where = f"{name}[{index}]"
        tags = None if tag_lists is None else tag_lists[index]
        tokens, tags = _checked_lists(where, tokens, tags, tag_lists is not None)
        records.append(_Record(where, tokens, tags, None))
    sentences, found_scheme = _converted(records, scheme)
    return TaggedFile(name, LISTS, sentences, found_scheme)


# --- reading ---


@dataclasses.dataclass(frozen=True)
class _Record:
    """A sentence as read, its tags in the file's scheme. `token_lines`: each token's line (column files), the
    object's line for each (JSON Lines), or None (lists)."""

    where: str
    tokens: tuple
    tags: tuple
    token_lines: tuple
    one_token_a_line: bool = False
    text: str = None

    def token_where(self, index):
        """Where token `index` is: its line in a column file, else the sentence and the token's position."""
        if self.one_token_a_line:
            return f"{self.where.rsplit(':', 1)[0]}:{self.token_lines[index]}"
        return f"{self.where}: token {index + 1}"


def _split(line, delimiter):
    if delimiter == "\t":
        return line.split("\t")
    return re.split(r"[ \t]+", line.strip(" \t"))


def _is_document_break(line):
    """Whether the line's first column (separated by spaces or tabs) is -DOCSTART-."""
    return _split(line, " ")[0] == DOCUMENT_BREAK


def _is_tag(value):
    return value == OUTSIDE or _TAG.fullmatch(value) is not None


def _detect_columns(path, candidates, width, token_column, tag_column, tagged):
    """(token column, tag column or None) from `candidates` [(line, cells)] whose usual number of columns is
    `width`, as the module's docstring says."""

    def values(column):
        return [cells[column].strip() for _, cells in candidates if len(cells) > column]

    if tag_column is None and width > 1:
        for column in reversed(range(width)):
            column_values = values(column)
            if column != token_column and 2 * sum(map(_is_tag, column_values)) > len(column_values):
                tag_column = column
                break
    if tag_column is None and tagged:
        raise SettingError(f"{path}: no column holds tags ({_TAG_FORMS}) on most lines; name the tag column "
                           "with <tag_column> (0 is the first)")
    if token_column is None:
        for column in range(width):
            if column != tag_column and not all(_INDEX.fullmatch(value) for value in values(column)):
                token_column = column
                break
        if token_column is None:
            raise SettingError(f"{path}: no column holds tokens (every column holds tags or line numbers); name "
                               "it with <token_column> (0 is the first)")
    return token_column, tag_column


def _lines(text):
    """The text's lines without line ends: LF, CRLF and CR alone (`split_lines`)."""
    return tuple(split_lines(text))


def _read_columns(path, text, token_column, tag_column, scheme, tagged):
    lines = _lines(text)
    first = next((line for line in lines if line.strip() and not line.startswith("#")
                  and not _is_document_break(line)), None)
    if first is None:
        raise ValueError(f"{path}: holds no token lines (only comments, document breaks or blank lines)")
    delimiter = "\t" if "\t" in first else " "
    cells_of = {}  # line number -> cells, for each line that is neither blank nor a document break
    for number, line in enumerate(lines, start=1):
        if line.strip() and not _is_document_break(line):
            cells_of[number] = _split(line, delimiter)
    candidates = [(number, cells) for number, cells in cells_of.items() if not lines[number - 1].startswith("#")]
    width = Counter(len(cells) for _, cells in candidates).most_common(1)[0][0]
    token_column, tag_column = _detect_columns(path, candidates, width, token_column, tag_column, tagged)
    needed = max(token_column, tag_column if tag_column is not None else -1) + 1
    described_columns = f"token column ({token_column})" + (
        f" and tag column ({tag_column})" if tag_column is not None else "")

    def is_token_line(number, cells):
        if not lines[number - 1].startswith("#"):
            return True
        return len(cells) == width >= needed and (tag_column is None or _is_tag(cells[tag_column].strip()))

    records, block = [], []
    raw_text = None  # the last `# text = ` line since the previous sentence ended, while no token line followed

    def end_sentence():
        nonlocal raw_text
        if block:
            tokens = tuple(token for _, token, _ in block)
            tags = None if tag_column is None else tuple(tag for _, _, tag in block)
            token_lines = tuple(number for number, _, _ in block)
            records.append(_Record(f"{path}:{token_lines[0]}", tokens, tags, token_lines, one_token_a_line=True,
                                   text=raw_text))
            block.clear()
            raw_text = None

    for number, line in enumerate(lines, start=1):
        if not line.strip():
            end_sentence()
            continue
        cells = cells_of.get(number)
        if cells is None or not is_token_line(number, cells):
            if cells is not None and not block and line.startswith(TEXT_COMMENT):
                raw_text = line[len(TEXT_COMMENT):]
            continue  # a document break or a comment
        if len(cells) < needed:
            raise SettingError(f"{path}:{number}: {len(cells)} column(s), too few for the {described_columns}; the "
                               f"file's token lines have {width} (set <token_column> and <tag_column>, 0-based, "
                               "where detection chose wrong)")
        token = cells[token_column].strip(" ")
        if not token and delimiter == "\t" and cells[token_column]:
            token = SPACE  # whitespace alone between tabs: a space of the text (KLUE-NER's character lines)
        elif not token:
            raise ValueError(f"{path}:{number}: the token column ({token_column}) is empty")
        block.append((number, token, None if tag_column is None else cells[tag_column].strip()))
    end_sentence()
    sentences, found_scheme = _converted(records, scheme)
    return TaggedFile(path, COLUMNS, sentences, found_scheme, token_column, tag_column, delimiter, lines)


def _named_tags(where, tags, tag_names):
    """A sentence's tags as names: integer ids (`datasets`' ClassLabel) named through `tag_names`; anything else
    as it is, for `_checked_lists` to check."""
    if not isinstance(tags, list) or not any(isinstance(tag, int) and not isinstance(tag, bool) for tag in tags):
        return tags
    if tag_names is None:
        raise SettingError(f"{where}: the tags are integer ids (as `datasets` exports a ClassLabel feature); name "
                           "them in id order with <tag_names> (comma-separated) or <tag_names_file> (one a line)")
    names = []
    for index, tag in enumerate(tags):
        if isinstance(tag, bool) or not isinstance(tag, int):
            raise ValueError(f"{where}: token {index + 1}: tag {tag!r} among integer ids; give every tag of a "
                             "sentence as an id, or every one as a name")
        if not 0 <= tag < len(tag_names):
            raise SettingError(f"{where}: token {index + 1}: tag id {tag} has no name; the {len(tag_names)} tag "
                               f"names name ids 0-{len(tag_names) - 1} (<tag_names>, <tag_names_file>)")
        names.append(tag_names[tag])
    return names


def _checked_lists(where, tokens, tags, tagged):
    """(tokens, tags) as tuples of strings, their lengths equal; ValueError naming `where`."""
    if not isinstance(tokens, (list, tuple)) or not all(isinstance(token, str) for token in tokens):
        raise ValueError(f"{where}: tokens must be a list of strings")
    if not tokens:
        raise ValueError(f"{where}: a sentence with no tokens")
    empty = [index + 1 for index, token in enumerate(tokens) if not token.strip()]
    if empty:
        raise ValueError(f"{where}: token {empty[0]} is empty")
    if not tagged:
        return tuple(tokens), None
    if not isinstance(tags, (list, tuple)) or not all(isinstance(tag, str) for tag in tags):
        raise ValueError(f"{where}: tags must be a list of tag names (strings such as \"B-PER\")")
    if len(tags) != len(tokens):
        raise ValueError(f"{where}: {len(tokens)} tokens but {len(tags)} tags")
    return tuple(tokens), tuple(tag.strip() for tag in tags)


def _read_json_lines(path, text, scheme, tagged, tokens_key, tags_key, tag_names):
    if _extension(path) == ".json" and text.lstrip(" \t\r\n").startswith("["):
        raise ValueError(f"{path}:1: holds a JSON array; tagged JSON files hold one object a line (JSON Lines, as "
                         "`datasets`' to_json writes them): write each sentence's object on its own line")
    lines = _lines(text)
    records, has_tags = [], None
    for number, line in enumerate(lines, start=1):
        if not line.strip(" \t"):
            continue
        where = f"{path}:{number}"
        value = parse_json_line(where, line)
        if not isinstance(value, dict) or tokens_key not in value:
            raise SettingError(f"{where}: each line must be a JSON object with a \"{tokens_key}\" list (and its "
                               "tags); name other keys with <tokens_key> and <tags_key>")
        if has_tags is None:  # the first object says which key holds the tags, and whether the file is tagged
            tags_key = tags_key or next((key for key in TAGS_KEYS if key in value), TAGS_KEYS[0])
            has_tags = tags_key in value
            if tagged and not has_tags:
                raise SettingError(f"{where}: no \"{tags_key}\" key; a training or evaluation file tags every token "
                                   "(name the key of the tags with <tags_key>)")
        if has_tags and tags_key not in value:
            raise ValueError(f"{where}: no \"{tags_key}\" key, which the file's first object has; tag every "
                             "sentence")
        tags = _named_tags(where, value[tags_key], tag_names) if has_tags else None
        tokens, tags = _checked_lists(where, value[tokens_key], tags, has_tags)
        text = value.get(TEXT_KEY) if TEXT_KEY not in (tokens_key, tags_key) else None
        if text is not None and not isinstance(text, str):
            raise ValueError(f"{where}: \"{TEXT_KEY}\" must be a string (the sentence's raw text) or null, got "
                             f"{type(text).__name__} {text!r:.40}")
        records.append(_Record(where, tokens, tags, (number,) * len(tokens), text=text))
    sentences, found_scheme = _converted(records, scheme)
    return TaggedFile(path, JSON_LINES, sentences, found_scheme, lines=lines)


# --- schemes ---


def _parsed(record, index):
    """(prefix, type) of a record's tag `index`, ('O', None) for O; refuses what is no tag."""
    tag = record.tags[index]
    if tag == OUTSIDE:
        return OUTSIDE, None
    match = _TAG.fullmatch(tag)
    if match is None:
        raise ValueError(f"{record.token_where(index)}: {tag!r} is not a tag; tags are {_TAG_FORMS}")
    return match.group(1), match.group(2)


def _continues(previous, entity_type):
    """Whether a tag of `entity_type` after the tag parsed as `previous` is inside the same entity."""
    return previous[0] in "BI" and previous[1] == entity_type


def _detect_scheme(records):
    """The scheme of the tag sequences in `records`, as the module's docstring says."""
    starts_with_inside = False
    for record in records:
        previous = (OUTSIDE, None)
        for index in range(len(record.tags)):
            prefix, entity_type = _parsed(record, index)
            if prefix in "ESLU":
                return "bioes"
            if prefix == "I" and not _continues(previous, entity_type):
                starts_with_inside = True
            previous = (prefix, entity_type)
    return "iob1" if starts_with_inside else "iob2"


def _to_iob2(record, scheme):
    """The record's tags in IOB2; refuses a tag its scheme has not and (iob2, bioes) an I-/E- tag that
    continues no entity."""
    tags, previous = [], (OUTSIDE, None)
    for index in range(len(record.tags)):
        prefix, entity_type = _parsed(record, index)
        if prefix != OUTSIDE and prefix not in _SCHEME_PREFIXES[scheme]:
            raise SettingError(f"{record.token_where(index)}: {record.tags[index]!r} is not a tag of {scheme} "
                               f"(whose tags are O and {', '.join(p + '-' for p in _SCHEME_PREFIXES[scheme])} "
                               "before a type); set <scheme> to the file's scheme")
        if prefix in "IEL" and not _continues(previous, entity_type):
            if scheme == "iob1":
                prefix = "B"  # IOB1's I- after O or another type starts the entity
            else:
                before = "the sentence's first token" if index == 0 else f"after {record.tags[index - 1]!r}"
                remedy = ("B- or S-; fix the tag" if scheme == "bioes" else
                          "B- (set <scheme>=iob1 for a file whose I- starts entities)")
                raise SettingError(f"{record.token_where(index)}: {record.tags[index]!r} continues no {entity_type} "
                                   f"entity ({before}); in {scheme} an entity starts with {remedy}")
        if prefix == OUTSIDE:
            tags.append(OUTSIDE)
        else:
            tags.append(f"{'B' if prefix in 'BSU' else 'I'}-{entity_type}")
        # What follows an E-/S- tag starts a new entity; in IOB2 terms the entity is closed.
        previous = (prefix if prefix in "BI" else OUTSIDE, entity_type)
    return tuple(tags)


def _converted(records, scheme):
    """(TaggedSentences with IOB2 tags, the scheme read) from records in the file's scheme."""
    if not records or records[0].tags is None:
        return tuple(TaggedSentence(r.tokens, None, r.where, r.token_lines or (), r.text) for r in records), None
    scheme = scheme or _detect_scheme(records)
    return tuple(TaggedSentence(r.tokens, _to_iob2(r, scheme), r.where, r.token_lines or (), r.text)
                 for r in records), scheme


# --- character spans ---

TEXT_SOURCES = ("text", "characters", "joined")  # `text_source`'s answers, in the order its rules are tried


def sentence_text(sentence):
    """(text, token_spans): the sentence's raw text and each token's [start, end) character span in it (Python
    str indices, so `text[start:end] == token`), by the first rule that applies:
      "text": `sentence.text` (a `# text = ` line, a JSON object's "text") where every token is found in it in
        order: each starting at the first character after the previous token's end (the text's start) that is
        not whitespace, only whitespace between the tokens and before and after them;
      "characters": else, where a token is whitespace alone (KLUE-NER's layout: one character a line, a space a
        token of its own), the tokens concatenated;
      "joined": else the tokens joined as `entities.words_text` joins words, no space between two Chinese
        or Japanese characters (Han, kana, CJK punctuation, full-width forms) and one space elsewhere
        (`我 喜欢 ALBERT 模型` is `我喜欢ALBERT模型`); a sentence with a token holding whitespace (`New York` of a
        tab-separated file) has its tokens joined with one space each instead.
    `text_source` says which rule gave it."""
    text, spans, _ = _sentence_text(sentence)
    return text, spans


def text_source(sentence):
    """Which rule of `sentence_text` gives the sentence's text: "text", "characters" or "joined"."""
    return _sentence_text(sentence)[2]


def _sentence_text(sentence):
    """(text, token spans, rule) of `sentence_text`."""
    tokens = sentence.tokens
    if sentence.text is not None:
        spans = _aligned(sentence.text, tokens)
        if spans is not None:
            return sentence.text, spans, "text"
    if any(not token.strip() for token in tokens):
        return "".join(tokens), _consecutive(tokens, ""), "characters"
    text, spans = words_text(tokens)
    return text, tuple(spans), "joined"


def _aligned(text, tokens):
    """Each token's span in `text`, found in order as `sentence_text`'s "text" rule says; None where one is
    not found or something other than whitespace is left over."""
    spans, position = [], 0
    for token in tokens:
        while position < len(text) and text[position].isspace():
            position += 1
        if not token or not text.startswith(token, position):
            return None
        spans.append((position, position + len(token)))
        position += len(token)
    if text[position:].strip():
        return None
    return tuple(spans)


def _consecutive(tokens, separator):
    """The tokens' spans in `separator.join(tokens)`."""
    spans, position = [], 0
    for token in tokens:
        spans.append((position, position + len(token)))
        position += len(token) + len(separator)
    return tuple(spans)


def entity_char_spans(sentence, token_spans=None):
    """The sentence's gold entities as [(type, start, end)] character spans of its `sentence_text`, in order:
    from the start of an entity's first token (`entity_spans` of its tags) to the end of its last, whitespace
    at either end left out (a KLUE-NER entity whose last tagged token is a space); an entity of whitespace
    alone is left out. `token_spans`: the tokens' spans, where `sentence_text` already gave them. [] where the
    sentence has no tags."""
    if sentence.tags is None:
        return []
    if token_spans is None:
        token_spans = sentence_text(sentence)[1]
    tokens = sentence.tokens
    entities = []
    for entity_type, first, end in entity_spans(sentence.tags):
        last = end - 1
        while first <= last and not tokens[first].strip():
            first += 1
        while last >= first and not tokens[last].strip():
            last -= 1
        if first > last:
            continue
        # A token's span holds the token itself, so its own leading or trailing whitespace is the text's.
        start = token_spans[first][0] + len(tokens[first]) - len(tokens[first].lstrip())
        stop = token_spans[last][1] - (len(tokens[last]) - len(tokens[last].rstrip()))
        entities.append((entity_type, start, stop))
    return entities


# --- labels ---


def entity_counts(tagged_file):
    """{entity type: entities of it in the file}, types sorted."""
    counts = Counter(entity_type for sentence in tagged_file.sentences
                     for entity_type, _, _ in entity_spans(sentence.tags or ()))
    return dict(sorted(counts.items()))


def tag_labels(train_file):
    """The label set a training file defines (`TagLabels.from_types` of its entity types). A file without tags
    or without any entity is refused: there is nothing to learn."""
    if not train_file.has_tags:
        raise ValueError(f"{train_file.path}: has no tags to train on")
    types = entity_counts(train_file)
    if not types:
        raise ValueError(f"{train_file.path}: every token is tagged {OUTSIDE!r}; a tagger learns from tagged "
                         "entities")
    return TagLabels.from_types(types)


def check_entity_types(labels, tagged_file):
    """Refuses entity types of an evaluation or predict file that the label set lacks (the training file did
    not have them), listing each with the line where it first appears."""
    if not tagged_file.has_tags:
        return
    known = set(labels.types)
    unknown = {}
    for sentence in tagged_file.sentences:
        for index, tag in enumerate(sentence.tags):
            if tag != OUTSIDE and tag[2:] not in known and tag[2:] not in unknown:
                line = sentence.token_lines[index] if sentence.token_lines else None
                unknown[tag[2:]] = f"line {line}" if line else sentence.where
    if unknown:
        listed = ", ".join(f"{name!r} ({where})" for name, where in sorted(unknown.items()))
        raise ValueError(f"{tagged_file.path}: entity types not in the training file: {listed}; the model "
                         f"tags only {list(labels.types)}")


# --- writing predictions ---


def write_predictions(path, tagged_file, predicted_tags):
    """Writes `tagged_file` back to `path` (UTF-8, LF line ends, uncompressed), each sentence with its predicted
    tags (`predicted_tags`: per sentence, one IOB2 tag per token):
      - column files: every line as read, each token line with the predicted tag added as a last column (the
        file's delimiter before it), a -DOCSTART- line with O, so every line that is not a comment or blank has
        one column more. Where the gold tag is the input's last column and there are no comment lines
        (CoNLL-2003's layout), conlleval reads the file as it is, gold and predicted tag its last two columns
        (the input's tags stay in its scheme: an IOB1 file's entities are scored alike, its token accuracy
        counts I- against B-; conlleval counts -DOCSTART- lines as tokens);
      - JSON Lines: each object with a "predicted_tags" list added (replacing one it had).
    ValueError where the predictions do not match the sentences."""
    predicted_tags = list(predicted_tags)
    if tagged_file.format == LISTS:
        raise ValueError(f"{tagged_file.path}: sentences given as lists have no file to write back")
    if len(predicted_tags) != len(tagged_file.sentences):
        raise ValueError(f"{len(predicted_tags)} predicted sentences for the {len(tagged_file.sentences)} of "
                         f"{tagged_file.path}")
    added = {}  # line number -> what the line gets
    for sentence, tags in zip(tagged_file.sentences, predicted_tags):
        tags = list(tags)
        if len(tags) != len(sentence.tokens):
            raise ValueError(f"{sentence.where}: {len(sentence.tokens)} tokens but {len(tags)} predicted tags")
        bad = [tag for tag in tags if tag != OUTSIDE and not _iob2_tag(tag)]
        if bad:
            raise ValueError(f"{sentence.where}: predicted {bad[0]!r} is not an IOB2 tag (O, B-TYPE or I-TYPE)")
        if tagged_file.format == JSON_LINES:
            added[sentence.token_lines[0]] = tags
        else:
            added.update(zip(sentence.token_lines, tags))
    output = []
    for number, line in enumerate(tagged_file.lines, start=1):
        # A tab-separated line keeps its trailing empty cells; spaces after a space-separated line's last go.
        end = line if tagged_file.delimiter == "\t" else line.rstrip(" \t")
        if number in added and tagged_file.format == JSON_LINES:
            value = json.loads(line)
            value["predicted_tags"] = added[number]
            line = json.dumps(value, ensure_ascii=False)
        elif number in added:
            line = end + tagged_file.delimiter + added[number]
        elif tagged_file.format == COLUMNS and line.strip() and _is_document_break(line):
            line = end + tagged_file.delimiter + OUTSIDE
        output.append(line + "\n")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(output))


def write_conlleval_input(path, tagged_file, predicted_tags):
    """Writes what conlleval reads, whatever the input's layout: a line "token gold predicted" per token (the
    gold tag in IOB2, as read; whitespace inside a token made "_", since conlleval splits lines on it), a blank
    line after each sentence. For a file with tags only: the scores conlleval prints from it are the tagger's
    metrics."""
    if not tagged_file.has_tags:
        raise ValueError(f"{tagged_file.path}: has no gold tags for conlleval to score against")
    predicted_tags = list(predicted_tags)
    if len(predicted_tags) != len(tagged_file.sentences):
        raise ValueError(f"{len(predicted_tags)} predicted sentences for the {len(tagged_file.sentences)} of "
                         f"{tagged_file.path}")
    lines = []
    for sentence, tags in zip(tagged_file.sentences, predicted_tags):
        if len(tags) != len(sentence.tokens):
            raise ValueError(f"{sentence.where}: {len(sentence.tokens)} tokens but {len(tags)} predicted tags")
        lines += [f"{'_'.join(token.split()) or '_'} {gold} {tag}\n"
                  for token, gold, tag in zip(sentence.tokens, sentence.tags, tags)]
        lines.append("\n")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(lines))
