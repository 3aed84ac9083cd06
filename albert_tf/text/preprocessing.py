"""The original ALBERT text preprocessing, and the character classes it depends on.

Order matters and follows the original `preprocess_text`: collapse whitespace,
strip accents (NFKD, then drop combining marks), lowercase. The original leaves
``` `` ``` and `''` as they are; Hugging Face's ALBERT tokenizer (after XLNet's)
turns each into `"` right after the whitespace step, which `rewrite_quotes`
adds for models trained that way (a model directory records which rule its
text followed: albert_tf.models.preprocessing_contract). The in-graph tokenizer
runs these functions on every character to build its normalization map
(albert_tf.text.albert_normalization), and what uses regular expressions
instead (SQuAD serving's in-graph offsets, the Hugging Face tokenizer.json)
builds them from the same character sets (computed here from Python's Unicode
database), so all of them agree on every character, not only on ASCII.
"""

import functools
import unicodedata

# SentencePiece's word-start mark: a piece that begins with it follows whitespace in the text.
SPIECE_UNDERLINE = "\u2581"


def _ranges_class(codepoints):
    """A regex character class body matching exactly `codepoints` (sorted ints)."""
    parts = []
    start = previous = None
    for codepoint in codepoints:
        if previous is not None and codepoint == previous + 1:
            previous = codepoint
            continue
        if start is not None:
            parts.append((start, previous))
        start = previous = codepoint
    if start is not None:
        parts.append((start, previous))
    return "".join(
        f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in parts
    )


# Unicode puts no combining marks (nor whitespace or digits) above plane 1: the
# higher planes hold CJK extensions, tags and private use. Scanning only planes
# 0-1 keeps start-up fast; a test checks the claim against the whole range.
SCANNED_CODEPOINTS = 0x20000


@functools.cache
def combining_codepoints():
    """Code points with a non-zero canonical combining class (what the original drops)."""
    return tuple(cp for cp in range(SCANNED_CODEPOINTS) if unicodedata.combining(chr(cp)))


@functools.cache
def whitespace_codepoints():
    """Code points `str.split()` splits on."""
    return tuple(cp for cp in range(SCANNED_CODEPOINTS) if chr(cp).isspace())


def re2_class(codepoints):
    """`[...]` for RE2 (tf.strings.regex_replace), with \\x{...} escapes."""
    return "[" + _ranges_class(codepoints) + "]"


@functools.cache
def _drop_combining_table():
    return dict.fromkeys(combining_codepoints())


def strip_accents(text):
    """NFKD, then drop combining marks (the original's `keep_accents=False`)."""
    if text.isascii():
        return text  # NFKD is the identity on ASCII, which has no combining marks
    return unicodedata.normalize("NFKD", text).translate(_drop_combining_table())


def preprocess_text(text, lower_case=True, keep_accents=False, remove_space=True, rewrite_quotes=False):
    """The original ALBERT preprocessing of one string; `rewrite_quotes` adds Hugging Face's `` / '' -> "."""
    if remove_space:
        text = " ".join(text.strip().split())
    if rewrite_quotes:
        text = text.replace("``", '"').replace("''", '"')
    if not keep_accents:
        text = strip_accents(text)
    if lower_case:
        text = text.lower()
    return text
