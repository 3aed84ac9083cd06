"""Streams documents out of text corpora, with bounded memory and counted skips.

Input formats (docs/reference.md, "Pretraining data"):
  sentences:  one sentence per line, a blank line between documents (the original).
  paragraphs: one paragraph per line, a blank line between documents; each
              paragraph is split into sentences.

Files ending in .gz are read decompressed.

What is skipped, and counted in `CorpusStats` (nothing is silently dropped):
  - empty files (no text at all) and binary files (a NUL byte in the first 8 KiB);
  - lines longer than `max_line_bytes` (read in bounded chunks, never whole);
  - lines that are not valid UTF-8.
A document longer than `max_document_sentences` (for example a file with no
blank lines at all) is cut into consecutive documents of at most that many
sentences, and counted, so one document never has to fit a whole file.
"""

import collections
import dataclasses
import glob
import gzip
import os

from albert_tf.text.sentence_splitter import split_sentences

INPUT_FORMATS = ("sentences", "paragraphs")
DEFAULT_MAX_LINE_BYTES = 1 << 20
DEFAULT_MAX_DOCUMENT_SENTENCES = 100_000
_BINARY_SNIFF_BYTES = 8192


@dataclasses.dataclass
class CorpusStats:
    """What was read and what was skipped, by reason."""

    files: int = 0
    bytes: int = 0
    documents: int = 0
    sentences: int = 0
    documents_cut: int = 0
    skipped_files: dict = dataclasses.field(default_factory=dict)  # path -> reason
    skipped_lines: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def merge(self, other):
        self.files += other.files
        self.bytes += other.bytes
        self.documents += other.documents
        self.sentences += other.sentences
        self.documents_cut += other.documents_cut
        self.skipped_files.update(other.skipped_files)
        self.skipped_lines.update(other.skipped_lines)

    def problems(self):
        """One line per kind of skip, or [] when nothing was skipped."""
        lines = [f"skipped file {path}: {reason}" for path, reason in sorted(self.skipped_files.items())]
        lines += [f"skipped {count:,} line(s): {reason}" for reason, count in sorted(self.skipped_lines.items())]
        if self.documents_cut:
            lines.append(f"cut {self.documents_cut:,} over-long document(s) into parts")
        return lines


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


def _open_text_source(path, opener):
    """A binary file object of the file's text (gunzipped for .gz)."""
    raw = opener(path)
    return gzip.GzipFile(fileobj=raw, mode="rb") if path.endswith(".gz") else raw


def _is_binary(path, opener):
    try:
        with _open_text_source(path, opener) as f:
            return b"\x00" in f.read(_BINARY_SNIFF_BYTES)
    except (OSError, EOFError):  # not gzip after all, or truncated
        return True


def iter_file_lines(path, stats, max_line_bytes=DEFAULT_MAX_LINE_BYTES, opener=open_local):
    """Yields the decoded lines of one file (without line ends), skipping and counting bad ones.

    Blank lines are yielded (as ""): they separate documents. `opener(path)`
    returns a binary file object (Beam passes its FileSystems.open).
    """
    if _is_binary(path, opener):
        stats.skipped_files[path] = "binary (NUL bytes)"
        return
    stats.files += 1
    seen_text = False
    with _open_text_source(path, opener) as f:
        while True:
            raw = f.readline(max_line_bytes + 1)
            if not raw:
                break
            stats.bytes += len(raw)
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):  # drain the rest of the line in bounded reads
                    raw = f.readline(max_line_bytes)
                    stats.bytes += len(raw)
                stats.skipped_lines[f"longer than {max_line_bytes:,} bytes"] += 1
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                stats.skipped_lines["not valid UTF-8"] += 1
                continue
            line = line.rstrip("\r\n")
            if line.strip():
                seen_text = True
            yield line
    if not seen_text:
        stats.files -= 1
        stats.skipped_files[path] = "empty (no text)"


def iter_documents(path, file_index, stats, input_format="sentences", max_line_bytes=DEFAULT_MAX_LINE_BYTES,
                   max_document_sentences=DEFAULT_MAX_DOCUMENT_SENTENCES, opener=open_local):
    """Yields the `Document`s of one file, numbered from 0 in file order."""
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"input_format must be one of {INPUT_FORMATS}, got {input_format!r}")
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
        for sentence in split_sentences(line) if input_format == "paragraphs" else (line,):
            sentences.append(sentence)
            if len(sentences) >= max_document_sentences:
                stats.documents_cut += 1
                yield finish()
    if sentences:
        yield finish()
