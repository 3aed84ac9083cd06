"""A rule-based sentence splitter for one-paragraph-per-line corpora.

A sentence ends at '.', '!', '?' or '…' (possibly followed by closing quotes or
brackets) when whitespace follows and the next word starts like a sentence
(an upper-case letter, a digit, or an opening quote or bracket). It does not end
after common abbreviations ("Mr.", "e.g.", "St.") or single-letter initials
("J. R. R. Tolkien"). Deterministic and dependency-free; SOP only needs
sentence-like segments, not perfect linguistics.

>>> split_sentences('Mr. Smith went to Washington. "Why?" he asked! It was 3 p.m. Then he left.')
['Mr. Smith went to Washington.', '"Why?" he asked!', 'It was 3 p.m. Then he left.']
"""

import re

_ABBREVIATIONS = frozenset(
    """mr mrs ms messrs dr prof rev hon st mt ft jr sr gen col capt lt sgt cmdr adm gov sen rep pres supt
    vs etc e.g i.e cf viz al approx no nos vol vols pp ch chap fig figs sec art ed eds esq inc ltd co corp
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun a.m p.m u.s u.k""".split()
)

# Candidate boundary: terminal punctuation, optional closers, whitespace, then a sentence start.
_BOUNDARY = re.compile(r"""([.!?…]+)(["'”’)\]]*)(\s+)(?=["'“‘(\[]*[A-Z0-9À-ÖØ-Þ])""")
_LAST_WORD = re.compile(r"(\S+)$")


def _is_abbreviation(text_before_period):
    match = _LAST_WORD.search(text_before_period)
    if not match:
        return False
    word = match.group(1).lstrip("\"'“‘([").lower()
    if len(word) == 1 and word.isalpha():
        return True  # an initial
    return word in _ABBREVIATIONS


def split_sentences(paragraph):
    """Sentences of one paragraph, whitespace-trimmed, in order."""
    sentences = []
    start = 0
    for match in _BOUNDARY.finditer(paragraph):
        if match.group(1) == "." and _is_abbreviation(paragraph[start : match.start(1)]):
            continue
        sentence = paragraph[start : match.start(3)].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end(3)
    tail = paragraph[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences
