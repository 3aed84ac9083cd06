"""Streams documents out of text corpora, with bounded memory and counted skips.

Input formats (docs/reference.md, "Pretraining data"):
  sentences:  one sentence per line, a blank line between documents (the original).
  paragraphs: one paragraph per line, a blank line between documents; each
              paragraph is split into sentences.

Files ending in .gz are read decompressed; one whose gzip data breaks off
(truncated or corrupt) is an error naming it and the line reached.

What is skipped, and counted in `CorpusStats` (nothing is silently dropped):
  - empty files (no text at all), binary files (a NUL byte in the first 8 KiB)
    and files named .gz that are not gzip;
  - lines longer than `max_line_bytes` (read in bounded chunks, never whole);
  - lines that are not valid UTF-8.
A document longer than `max_document_sentences` (for example a file with no
blank lines at all) is cut into consecutive documents of at most that many
sentences, and counted, so one document never has to fit a whole file.
"""

import collections
import contextlib
import dataclasses
import functools
import glob
import gzip
import os
import zlib

from albert_tf.data import marked_scripts
from albert_tf.text.segmented_text import split_segmented_sentences
from albert_tf.text.sentence_splitter import split_sentences

INPUT_FORMATS = ("sentences", "paragraphs")
DEFAULT_MAX_LINE_BYTES = 1 << 20
DEFAULT_MAX_DOCUMENT_SENTENCES = 100_000
_BINARY_SNIFF_BYTES = 8192
_GZIP_MAGIC = b"\x1f\x8b"
# What Python's gzip raises for data that breaks off: truncated (EOFError), corrupt (zlib.error, a CRC mismatch).
_GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)


@dataclasses.dataclass
class CorpusStats:
    """What was read and what was skipped, by reason."""

    files: int = 0
    bytes: int = 0  # of text (decompressed)
    file_bytes: int = 0  # of the files as they lie on disk (compressed, for .gz): what progress is measured in
    documents: int = 0
    sentences: int = 0
    documents_cut: int = 0
    skipped_files: dict = dataclasses.field(default_factory=dict)  # path -> reason
    skipped_lines: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    # Counted where accents are stripped: script -> characters whose meaningful marks that rewrites.
    marked_characters: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    marked_sentences: int = 0

    def merge(self, other):
        self.files += other.files
        self.bytes += other.bytes
        self.file_bytes += other.file_bytes
        self.documents += other.documents
        self.sentences += other.sentences
        self.documents_cut += other.documents_cut
        self.skipped_files.update(other.skipped_files)
        self.skipped_lines.update(other.skipped_lines)
        self.marked_characters.update(other.marked_characters)
        self.marked_sentences += other.marked_sentences

    def count_marked(self, sentence):
        """Counts the characters of `sentence` whose meaningful marks accent stripping rewrites."""
        if marked_scripts.count_marked(sentence, self.marked_characters):
            self.marked_sentences += 1

    def problems(self):
        """One line per kind of skip, and one for text accent stripping rewrote, or [] when neither happened."""
        lines = [f"skipped file {path}: {reason}" for path, reason in sorted(self.skipped_files.items())]
        lines += [f"skipped {count:,} line(s): {reason}" for reason, count in sorted(self.skipped_lines.items())]
        if self.documents_cut:
            lines.append(f"cut {self.documents_cut:,} over-long document(s) into parts")
        if self.marked_sentences:
            lines.append(marked_scripts.marked_text_warning(self.marked_characters, self.marked_sentences))
        return lines

    def to_json(self):
        """What a data set's metadata records of its corpus."""
        return {
            "files": self.files,
            "bytes": self.bytes,
            "documents": self.documents,
            "sentences": self.sentences,
            "documents_cut": self.documents_cut,
            "skipped_files": dict(sorted(self.skipped_files.items())),
            "skipped_lines": dict(sorted(self.skipped_lines.items())),
            "marked_characters": dict(sorted(self.marked_characters.items())),
            "marked_sentences": self.marked_sentences,
        }

    @classmethod
    def from_json(cls, values):
        """The CorpusStats a metadata's "corpus" records (what it predates counts as none)."""
        return cls(files=values["files"], bytes=values["bytes"], documents=values["documents"],
                   sentences=values["sentences"], documents_cut=values["documents_cut"],
                   skipped_files=dict(values["skipped_files"]),
                   skipped_lines=collections.Counter(values["skipped_lines"]),
                   marked_characters=collections.Counter(values.get("marked_characters", {})),
                   marked_sentences=values.get("marked_sentences", 0))


@dataclasses.dataclass(frozen=True)
class Document:
    """A document's identity (which fixes its random stream) and its sentences (raw text)."""

    file_index: int
    document_index: int
    sentences: tuple


def expand_input_patterns(patterns):
    """Sorted, de-duplicated files for comma-separated globs; each pattern must match a file."""
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p]
    paths = set()
    for pattern in patterns:
        matches = sorted(glob.glob(os.path.expanduser(pattern)))
        if not matches:
            raise FileNotFoundError(f"{pattern}: no such file (the pattern matches nothing)")
        wildcard = glob.has_magic(pattern)
        files = [match for match in matches if not os.path.isdir(match)]
        if not wildcard and not files:
            raise IsADirectoryError(f"{pattern}: is a directory; pass files or a glob such as '{pattern}/*.txt'")
        if not files:
            raise FileNotFoundError(f"{pattern}: matches only directories, no files")
        # A glob such as 'dir/*' also matches subdirectories (another run's output, say): only files are input.
        paths.update(files)
    return sorted(paths)


def open_local(path):
    return open(path, "rb")


def _is_gzip(path):
    return path.endswith(".gz")


def _skip_reason(path, opener):
    """Why a file is not text to read ("binary (NUL bytes)", ...), or None."""
    if not _is_gzip(path):
        with opener(path) as stored:
            start = stored.read(_BINARY_SNIFF_BYTES)
        return "binary (NUL bytes)" if b"\x00" in start else None
    with opener(path) as stored:
        if stored.read(len(_GZIP_MAGIC)) != _GZIP_MAGIC:
            return "not gzip data (the name ends in .gz)"
    try:
        with opener(path) as stored, gzip.GzipFile(fileobj=stored, mode="rb") as text:
            start = text.read(_BINARY_SNIFF_BYTES)
    except _GZIP_ERRORS:
        return None  # iter_file_lines names the line where the data breaks off
    return "binary (NUL bytes)" if b"\x00" in start else None


def iter_file_lines(path, stats, max_line_bytes=DEFAULT_MAX_LINE_BYTES, opener=open_local):
    """Yields the decoded lines of one file (without line ends), skipping and counting bad ones.

    Blank lines are yielded (as ""): they separate documents. `opener(path)`
    returns a binary file object (Beam passes its FileSystems.open). A .gz file
    whose data breaks off (truncated or corrupt) is a ValueError naming the line reached.
    """
    reason = _skip_reason(path, opener)
    if reason:
        stats.skipped_files[path] = reason
        return
    stats.files += 1
    seen_text = False
    lines_read, text_start, stored_start = 0, stats.bytes, stats.file_bytes
    with opener(path) as stored, (gzip.GzipFile(fileobj=stored, mode="rb") if _is_gzip(path)
                                  else contextlib.nullcontext(stored)) as f:

        def stored_position():
            return stored_start + (stored.tell() if f is not stored else stats.bytes - text_start)

        try:
            while raw := f.readline(max_line_bytes + 1):
                lines_read += 1
                stats.bytes += len(raw)
                if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                    while raw and not raw.endswith(b"\n"):  # drain the rest of the line in bounded reads
                        raw = f.readline(max_line_bytes)
                        stats.bytes += len(raw)
                    stats.skipped_lines[f"longer than {max_line_bytes:,} bytes"] += 1
                    stats.file_bytes = stored_position()
                    continue
                stats.file_bytes = stored_position()
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    stats.skipped_lines["not valid UTF-8"] += 1
                    continue
                line = line.rstrip("\r\n")
                if line.strip():
                    seen_text = True
                yield line
        except _GZIP_ERRORS as error:
            raise ValueError(f"{path}: the gzip data breaks off after line {lines_read:,} "
                             f"({stats.bytes - text_start:,} bytes of text): {error}; the file is truncated or "
                             "corrupt: restore it or leave it out of the input") from None
    if not seen_text:
        stats.files -= 1
        stats.skipped_files[path] = "empty (no text)"


def iter_documents(path, file_index, stats, input_format="sentences", max_line_bytes=DEFAULT_MAX_LINE_BYTES,
                   max_document_sentences=DEFAULT_MAX_DOCUMENT_SENTENCES, opener=open_local, pre_segmented=False):
    """Yields the `Document`s of one file, numbered from 0 in file order. `pre_segmented`: the text is
    Chinese or Japanese words separated by spaces; paragraphs are split where the unsegmented text's sentences
    end, and each sentence keeps its words' spaces (albert_tf.text.segmented_text)."""
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"input_format must be one of {INPUT_FORMATS}, got {input_format!r}")
    split = functools.partial(split_segmented_sentences, split=split_sentences) if pre_segmented else split_sentences
    document_index = 0
    sentences = []

    def finish():
        nonlocal document_index, sentences
        document = Document(file_index, document_index, tuple(sentences))
        stats.documents += 1
        stats.sentences += len(sentences)
        document_index += 1
        sentences = []
        return document

    for line in iter_file_lines(path, stats, max_line_bytes, opener):
        if not line.strip():
            if sentences:
                yield finish()
            continue
        for sentence in split(line) if input_format == "paragraphs" else (line,):
            sentences.append(sentence)
            if len(sentences) >= max_document_sentences:
                stats.documents_cut += 1
                yield finish()
    if sentences:
        yield finish()
