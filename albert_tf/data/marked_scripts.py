"""Scripts whose marks carry meaning, which the original's accent stripping rewrites.

Accent stripping (NFKD, then combining marks dropped; `keep_accents=False`, the original's rule and
the default) is meant for accents: é becomes e. In other scripts the marks it drops are part of the
letter: Japanese kana lose their (han)dakuten (が becomes か, ゲ becomes ケ), Indic scripts their
virama and nukta, Arabic its harakat, Hebrew its points, Thai its tone marks; and NFKD splits every
Hangul syllable into its jamo. The vocabulary and data tools count such characters in the text they
read anyway and say so in one line, with `--keep_accents` as the fix. Latin, Greek and Cyrillic
letters are not counted: their marks are the accents the rule is for.
"""

import collections
import functools
import re
import unicodedata

from albert_tf.text.preprocessing import SCANNED_CODEPOINTS, strip_accents

# Scripts (the first word of a character's Unicode name) whose dropped marks are accents.
_ACCENT_SCRIPTS = frozenset({"LATIN", "GREEK", "CYRILLIC", "ANGSTROM", "MUSICAL"})
_HANGUL_SYLLABLES = range(0xAC00, 0xD7A4)  # NFKD decomposes each into two or three jamo


def _script(char):
    """The script a character's Unicode name starts with ("HIRAGANA LETTER GA" -> "Hiragana"), or None
    for the general-purpose combining marks (accents of any script)."""
    name = unicodedata.name(char, "")
    if name.startswith("COMBINING "):
        # U+3099 and U+309A are kana's (han)dakuten, written apart; the others are diacritics of any script.
        return "Kana" if "KATAKANA-HIRAGANA" in name else None
    words = name.split()
    if words and words[0] in ("HALFWIDTH", "FULLWIDTH"):
        words = words[1:]
    if not words or words[0] in _ACCENT_SCRIPTS:
        return None
    return words[0].title()


@functools.cache
def marked_characters():
    """{character: its script} of the letters and marks accent stripping rewrites in scripts whose marks
    carry meaning: it drops one of their marks, or (Hangul syllables) decomposes them."""
    found = {}
    for codepoint in range(SCANNED_CODEPOINTS):
        char = chr(codepoint)
        decomposed = unicodedata.normalize("NFKD", char)
        if decomposed == char and not unicodedata.combining(char):
            continue
        if unicodedata.category(char)[0] not in "LM":
            continue  # symbols such as ≠ (= and a combining slash) are no script's letters
        if strip_accents(char) != decomposed or codepoint in _HANGUL_SYLLABLES:
            script = _script(char)
            if script:
                found[char] = script
    return found


@functools.cache
def _marked_pattern():
    return re.compile("[" + "".join(re.escape(char) for char in sorted(marked_characters())) + "]")


def count_marked(text, counts):
    """Adds the marked characters of `text` to `counts` (script -> characters); True if it has any."""
    if text.isascii():
        return False
    found = _marked_pattern().findall(text)
    counts.update(map(marked_characters().__getitem__, found))
    return bool(found)


def marked_text_warning(counts, sentences):
    """The one line that says accent stripping rewrote `counts` (script -> characters) in `sentences`."""
    total = sum(counts.values())
    scripts = ", ".join(f"{script} {count:,}" for script, count in collections.Counter(counts).most_common())
    return (f"accent stripping (the original's rule) rewrote {total:,} character(s) in {sentences:,} sentence(s) of "
            f"scripts whose marks carry meaning ({scripts}; が becomes か, Hangul syllables become jamo): pass "
            "--keep_accents to train_sentencepiece and create_pretraining_data alike to keep them")
