"""A default English corpus that every Python installation already has: the standard library's docstrings.

`make demo` must run on a fresh clone with no download and no third-party text
committed. CPython ships several MB of English prose in its modules'
docstrings; this module extracts them (by parsing the source with `ast`,
never importing a module), one document per module, one paragraph per line,
doctest and code lines removed. The output depends only on the Python version's
standard library, so it is the same on every machine with that version.
"""

import ast
import os
import re
import sysconfig

_CODE_LINE = re.compile(r"^\s*(>>>|\.\.\.|\$ |%|[{}\[\]()]|[\w.]+\(.*\)\s*$|[\w.]+\s*=\s)")
_MIN_WORDS = 6


def _stdlib_files():
    root = sysconfig.get_paths()["stdlib"]
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d not in ("test", "tests", "idle_test", "site-packages",
                                                                          "__pycache__", "lib2to3"))
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(directory, name)


def _paragraphs(docstring):
    for block in re.split(r"\n\s*\n", docstring):
        lines = [line.strip() for line in block.splitlines()]
        if not lines or any(_CODE_LINE.match(line) for line in lines):
            continue
        text = " ".join(line for line in lines if line)
        # Prose has sentences; argument lists and tables mostly do not.
        if len(text.split()) >= _MIN_WORDS and re.search(r"[a-z]{3,}[.!?](\s|$)", text):
            yield text


def module_documents():
    """Yields (module path, [paragraphs]) for every standard-library module with docstring prose."""
    for path in _stdlib_files():
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        paragraphs = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                docstring = ast.get_docstring(node)
                if docstring:
                    paragraphs.extend(_paragraphs(docstring))
        if len(paragraphs) >= 2:
            yield path, paragraphs


def write_corpus(output_path, max_bytes=None):
    """Writes the corpus (paragraph per line, blank line between modules); returns (documents, bytes)."""
    from albert_tf.file_utils import atomic_output

    documents = written = 0
    with atomic_output(output_path) as f:  # complete or not at all, never through a planted link
        for _, paragraphs in module_documents():
            text = "\n".join(paragraphs) + "\n\n"
            size = len(text.encode("utf-8"))
            if max_bytes and written + size > max_bytes:
                break
            f.write(text)
            documents += 1
            written += size
    return documents, written
