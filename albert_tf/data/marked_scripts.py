"""Scripts whose marks carry meaning, which the original's accent stripping rewrites.

Accent stripping (NFKD, then combining marks dropped; `keep_accents=False`, the original's rule) is meant
for accents: é becomes e. In other scripts the marks it drops are part of the letter: Japanese kana lose
their (han)dakuten (が becomes か, ゲ becomes ケ), Indic scripts their virama and nukta, Arabic its harakat,
Hebrew its points, Thai its tone marks. Hangul is not among them: NFKD splits each syllable into jamo,
none of which is a combining mark, and SentencePiece's own normalizer (NFKC) composes them again, so the
model sees the syllables it was trained on. A character counts here only where the text the model sees
differs: NFKC of its stripped form is not NFKC of the character. Latin, Greek and Cyrillic letters are not
counted: their marks are the accents the rule is for.

The vocabulary tool reads these counts to choose `keep_accents` for a corpus whose text stripping would
rewrite (`keeps_meaningful_marks`); the data tool counts what it strips where the user chose to strip.
"""

import collections
import functools
import re
import unicodedata

from albert_tf.text.preprocessing import SCANNED_CODEPOINTS, strip_accents

# Scripts (the first word of a character's Unicode name) whose dropped marks are accents.
_ACCENT_SCRIPTS = frozenset({"LATIN", "GREEK", "CYRILLIC", "ANGSTROM", "MUSICAL"})
# The vocabulary tool keeps accents where at least this share of the characters it samples would be rewritten:
# 6.6% of a Japanese novel's characters are voiced kana; an English corpus quoting a Japanese name now and
# then stays far below, and keeps the original's rule.
KEEP_ACCENTS_SHARE = 0.001


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
    """{character: its script} of the letters and marks accent stripping rewrites, as the model sees the text
    (after NFKC), in scripts whose marks carry meaning."""
    found = {}
    for codepoint in range(SCANNED_CODEPOINTS):
        char = chr(codepoint)
        decomposed = unicodedata.normalize("NFKD", char)
        if decomposed == char and not unicodedata.combining(char):
            continue
        if unicodedata.category(char)[0] not in "LM":
            continue  # symbols such as ≠ (= and a combining slash) are no script's letters
        if unicodedata.normalize("NFKC", strip_accents(char)) != unicodedata.normalize("NFKC", char):
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
            f"scripts whose marks carry meaning ({scripts}; が becomes か): train the vocabulary without "
            "--nokeep_accents (or with --keep_accents) to keep them")


def keeps_meaningful_marks(counts, characters):
    """Whether text of `characters` characters, of which stripping rewrites `counts` (script -> characters),
    should keep its accents: KEEP_ACCENTS_SHARE or more of it rewritten."""
    return characters > 0 and sum(counts.values()) >= KEEP_ACCENTS_SHARE * characters
