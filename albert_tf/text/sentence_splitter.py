"""A rule-based sentence splitter for one-paragraph-per-line corpora.

Latin-script text (and Korean): a sentence ends at '.', '!', '?' or '…'
(possibly followed by closing quotes or brackets) when whitespace follows and
the next word starts like a sentence (an upper-case letter, a digit, a Hangul
syllable, a Chinese or Japanese character, or an opening quote or bracket). It
does not end after common abbreviations ("Mr.", "e.g.", "St.") or single-letter
Latin initials ("J. R. R. Tolkien"). So Korean `첫 문장입니다. 두 번째 문장입니다.`
is two sentences, and a one-syllable Korean word before '.' ("해.") is no initial.

Chinese and Japanese, which put no space between sentences:
  - a sentence ends after 。 ！ ？ (full width) wherever they stand, and after
    ASCII '!' '?', '…' '‥' and the full-width period ． when they directly
    follow a CJK character (a Han character, kana or a Hangul syllable), so
    "3．14", "st．francis" and "，……" (an ellipsis after a comma, a pause) end
    nothing; a run of marks (！？, ……, 。……) is one end;
  - closing brackets and quotes after the marks stay with the sentence
    (「そうか。」, “好。”), no whitespace needed before the next one; a straight
    quote '"' closes one only where a quotation is open (an odd number of them
    before it in the paragraph), else it opens the next sentence: 他说。"你好。";
  - the sentence goes on where what follows is a comma-like mark (、，,；;：:),
    and, after a closing bracket or quote or after an ellipsis, where what
    follows is a Japanese quoting particle (と, って, を, など, なんて): in
    「そうか。」と彼は言った。 the quotation is part of the sentence, which ends
    only at the last 。. A bare 。 always ends a sentence (in the Japanese
    corpus 。と is followed by ところが, とにかく: new sentences). Nor does a
    Latin-script end before a particle: それは Grob ! と言った is one sentence.
  - marks inside brackets end sentences too: 「A。B」 gives 「A。 and B」, a long
    quoted speech gives its sentences (the pairs sentence-order prediction
    makes need sentence-like segments, not balanced brackets).

Deterministic and dependency-free; SOP only needs sentence-like segments, not
perfect linguistics. Figures on the Japanese, Chinese and Korean corpora:
benchmarks/README.md, "Sentences in Chinese, Japanese and Korean text".

>>> split_sentences('Mr. Smith went to Washington. "Why?" he asked! It was 3 p.m. Then he left.')
['Mr. Smith went to Washington.', '"Why?" he asked!', 'It was 3 p.m. Then he left.']
>>> split_sentences('「そうか。」と彼は言った。雨が降る！本当？')
['「そうか。」と彼は言った。', '雨が降る！', '本当？']
"""

import re

_ABBREVIATIONS = frozenset(
    """mr mrs ms messrs dr prof rev hon st mt ft jr sr gen col capt lt sgt cmdr adm gov sen rep pres supt
    vs etc e.g i.e cf viz al approx no nos vol vols pp ch chap fig figs sec art ed eds esq inc ltd co corp
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun a.m p.m u.s u.k""".split()
)

# Characters of the CJK scripts: Han (with 々 〆 〇 and the kana iteration marks), hiragana, katakana (full and
# half width) and Hangul (syllables and jamo).
HAN_KANA = ("\u3005-\u3007\u3021-\u3029\u3031-\u3035\u303b\u3040-\u309f\u30a0-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
            "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f")
HANGUL = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff"
_CJK_CHARACTER = re.compile(f"[{HAN_KANA}{HANGUL}]")

# Candidate boundary: terminal punctuation, optional closers, whitespace, then a sentence start.
_BOUNDARY = re.compile(rf"""([.!?…]+)(["'”’)\]]*)(\s+)(?=["'“‘(\[「『（《〈【]*[A-Z0-9À-ÖØ-Þ{HANGUL}{HAN_KANA}])""")
_LAST_WORD = re.compile(r"(\S+)$")

# Chinese and Japanese: a run of terminal marks and closing brackets and quotes ("。」", "！？", "。’……"), then
# any whitespace.
_STRONG_MARKS = "。｡！？"  # end a sentence after anything
_WEAK_MARKS = "!?…‥．"  # end one only directly after a CJK character
_CLOSING_BRACKETS = "」』）)】〉》〕〗〙〛］]｝｣〟”’"  # and quotes whose shape says they close
_CLOSERS = _CLOSING_BRACKETS + "\"'"
_CJK_RUN = re.compile(rf"[{_STRONG_MARKS}{_WEAK_MARKS}][{_STRONG_MARKS}{_WEAK_MARKS}{re.escape(_CLOSERS)}]*")
_SPACES = re.compile(r"\s*")
# What text needs for the rules above to apply: a CJK character, or a mark that ends a sentence anywhere.
_MAY_HAVE_CJK_ENDS = re.compile(f"[{HAN_KANA}{HANGUL}{_STRONG_MARKS}]")
_CONTINUING_MARKS = "、，,；;：:"
# Japanese particles that make a quotation or an interjection part of the sentence it stands in.
_QUOTING_PARTICLES = ("と", "って", "を", "など", "なんて")
_ELLIPSES = frozenset("…‥")


def _is_abbreviation(text_before_period):
    match = _LAST_WORD.search(text_before_period)
    if not match:
        return False
    word = match.group(1).lstrip("\"'“‘([").lower()
    if len(word) == 1 and word.isalpha():
        return not _CJK_CHARACTER.match(word)  # a Latin initial; a one-syllable Korean word ends sentences
    return word in _ABBREVIATIONS


def _cjk_ends(paragraph):
    """(end of sentence, start of the next) at each Chinese or Japanese sentence end, in order."""
    for match in _CJK_RUN.finditer(paragraph):
        run, end = match.group(), match.end()
        quote = run.find('"')
        if quote >= 0 and paragraph.count('"', 0, match.start() + quote) % 2 == 0:
            # A straight quote that opens one (none is open before it) starts the next sentence: 他说。"你好。"
            run, end = run[:quote], match.start() + quote
        if not any(mark in _STRONG_MARKS for mark in run):
            before = paragraph[match.start() - 1] if match.start() else ""
            if not _CJK_CHARACTER.match(before):
                continue  # "3．14", "Hello!", "，……": no CJK sentence end
        next_start = _SPACES.match(paragraph, end).end()
        rest = paragraph[next_start:]
        if not rest:
            continue  # the paragraph's end: its tail is the last sentence anyway
        if rest[0] in _CONTINUING_MARKS or rest[0] in _CLOSING_BRACKETS:
            continue  # "……，", or a closer after a space
        if (set(run) & set(_CLOSERS) or set(run) <= _ELLIPSES) and rest.startswith(_QUOTING_PARTICLES):
            continue
        yield end, next_start


def _latin_ends(paragraph):
    """(end of sentence, start of the next, the match) at each whitespace-separated sentence end."""
    for match in _BOUNDARY.finditer(paragraph):
        if not paragraph.startswith(_QUOTING_PARTICLES, match.end(3)):  # Japanese "Grob ! と言った"
            yield match.start(3), match.end(3), match


def split_sentences(paragraph):
    """Sentences of one paragraph, whitespace-trimmed, in order."""
    candidates = _latin_ends(paragraph)
    if _MAY_HAVE_CJK_ENDS.search(paragraph):  # other text (English) takes only the whitespace rule
        candidates = sorted([*candidates, *((end, next_start, None) for end, next_start in _cjk_ends(paragraph))],
                            key=lambda candidate: candidate[:2])
    sentences = []
    start = 0
    for end, next_start, match in candidates:
        if end <= start:
            continue  # the same end found by both rules
        if match is not None and match.group(1) == "." and _is_abbreviation(paragraph[start : match.start(1)]):
            continue
        sentence = paragraph[start:end].strip()
        if sentence:
            sentences.append(sentence)
        start = next_start
    tail = paragraph[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences
