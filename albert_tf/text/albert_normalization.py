"""ALBERT's text preprocessing as a SentencePiece normalization map, for a one-op in-graph tokenizer.

A SentencePiece model normalizes text with a character map (at each position the
longest matching key is replaced by its value), then collapses runs of spaces and
trims both ends, then searches for the best pieces. tensorflow-text's
`FastSentencepieceTokenizer` does all of that in one op, which also converts to a
TensorFlow Lite custom op. `albert_model_proto` gives it a copy of a model whose map
does `albert_tf.text.preprocessing` first and the model's own normalization after,
so that op alone gives `AlbertTokenizer`'s ids (the `<digit>,` re-encoding aside,
which `TFAlbertTokenizer` applies as a table). The map is built with SentencePiece's
own builder (`SentencePieceNormalizer(norm_map=...)`, the compiler behind its
`normalization_rule_tsv`) and holds, key -> value, each value being the key
preprocessed and then run through the model's own map (read back with `decompile`):

  - every character the preprocessing changes: Python's whitespace (`str.split`'s)
    becomes " " (the op then does what " ".join(text.split()) does), NFKD without
    combining marks unless keep_accents, lowercase unless cased;
  - every key of the model's own map (a key may span several characters, "e" and a
    combining acute), and the pairs of characters whose preprocessed forms join into
    such a key ("가" and a final "ᆨ"; "ㄱ" and "ㅏ");
  - with rewrite_quotes, ``` `` ``` and `''` (each becomes `"`);
  - with lower_case, the capital sigma in context (Python's final-sigma rule, below);
  - every character that no piece of the vocabulary holds, as one placeholder byte
    (U+0001). Such a character can only be `<unk>`, whatever it is, but SentencePiece
    scores an unknown character once and the op scores each of its bytes; as one byte
    both add the same scores in the same order, so the float sums agree and so do the
    rare ties between segmentations of equal score (`8` + `88` against `88` + `8`),
    which are decided by rounding.

The copy also gives the user-defined symbols the score SentencePiece's search adds for
them (`user_defined_score`), for the same reason: the ties after them then fall alike.

Python's `str.lower` makes a capital sigma final ("ς") when a cased letter precedes it
(case-ignorable characters skipped) and none follows; a character map sees no context
but its keys, so the map lowercases "Σ" to "ς", and to "σ" when the key goes on with a
cased letter (after up to five more capital sigmas, or one apostrophe, dot, colon or
zero-width character) or starts with a character that is not cased: whitespace,
punctuation, digits, symbols, controls, letters of caseless scripts (and one of those
apostrophes, dots... between an ASCII one and the sigma). At the start of a text the op
puts the space of the dummy prefix before the map runs, so that case is covered too.
It still differs from Python where other case-ignorable characters (a combining mark, a
skin-tone modifier, a second apostrophe) stand between the sigma and what decides it;
with keep_accents, on a sigma followed by a decomposed letter with two or more marks;
and on a capital sigma right after a NUL (U+0000), which Python lowercases to "σ" (a
NUL is not cased) and the map to "ς": no key of SentencePiece's map can hold a NUL,
so none sees it before the sigma (on "ΟΔΟΣ", NUL, "Σ", with a vocabulary that has "ς"
but not "σ", Python's ids end in one `<unk>` for the NUL and "σ", the op's in `<unk>`
and "ς").
Without keep_accents, a combining mark between two characters that compose (Hangul
jamo, the halves of some Indic vowel signs) is dropped by the preprocessing and the two
then compose; the map drops it but cannot join what it separated. None of these changes
the ids of a vocabulary without the letters involved (Google's 30k-clean.model has no
Greek, Hangul or Indic piece); a vocabulary with neither "σ" nor "ς" gets no sigma keys.
"""

import functools
import re
import unicodedata

import numpy as np
import sentencepiece

from albert_tf.text import spm_proto
from albert_tf.text.preprocessing import strip_accents, whitespace_codepoints

PLACEHOLDER = "\x01"
CAPITAL_SIGMA, SMALL_SIGMA, FINAL_SIGMA = "\u03a3", "\u03c3", "\u03c2"
# Unicode changes nothing beyond plane 2 under NFKD or lowercasing, and has no cased letter there;
# a test checks it against the whole range.
SCANNED_CODEPOINTS = 0x30000
# Capital sigmas in a row that keys cover before a cased letter.
_SIGMA_RUN = 6
# The case-ignorable characters that keys look past, after a capital sigma and before one: apostrophes,
# dots, the colon, the soft hyphen and zero-width characters.
_COMMON_CASE_IGNORABLE = "'\u2019.:\u00b7\u00ad\u200b\u200c\u200d\u2060"
# Around a key's preprocessed form when the model's own map is applied to it: a private-use character
# no map has a rule for, so the form is mapped as inside a text, its spaces kept.
_SENTINEL = "\ue000"
# NormalizerSpec.remove_extra_whitespaces (default true): the op collapses whitespace only with it.
_REMOVE_EXTRA_WHITESPACES = 4


@functools.cache
def _spaces():
    return dict.fromkeys(whitespace_codepoints(), " ")


def _preprocessed(text, lower_case, keep_accents, rewrite_quotes):
    """`preprocess_text` of a piece of a text: its whitespace made spaces but not collapsed or trimmed."""
    text = text.translate(_spaces())
    if rewrite_quotes:
        text = text.replace("``", '"').replace("''", '"')
    if not keep_accents:
        text = strip_accents(text)
    return text.lower() if lower_case else text


@functools.cache
def _changed_characters(lower_case, keep_accents):
    """The characters the preprocessing (without quotes) changes."""
    changed = []
    for codepoint in range(1, SCANNED_CODEPOINTS):
        char = chr(codepoint)
        if (char.isspace() or (lower_case and char.lower() != char)
                or (not keep_accents and not unicodedata.is_normalized("NFKD", char))
                or (not keep_accents and unicodedata.combining(char))):
            changed.append(char)
    return tuple(changed)


@functools.cache
def _case_classes():
    """(cased, case-ignorable): frozensets of characters, as Python's `str.lower` sees them: a capital sigma
    right after a cased character (after a space) lowercases as final, and so does one after a
    case-ignorable character that follows a cased letter."""
    cased, ignorable = set(), set()
    for codepoint in range(1, SCANNED_CODEPOINTS):
        char = chr(codepoint)
        if (" " + char + CAPITAL_SIGMA).lower()[-1] == FINAL_SIGMA:
            cased.add(char)
        elif ("A" + char + CAPITAL_SIGMA).lower()[-1] == FINAL_SIGMA:
            ignorable.add(char)
    return frozenset(cased), frozenset(ignorable)


def _is_cased(char):
    return char in _case_classes()[0]


def _first_significant(text):
    ignorable = _case_classes()[1]
    return next((char for char in text if char not in ignorable), None)


@functools.cache
def _sigma_context(keep_accents):
    """(capital sigmas, cased starts, uncased ends): the assigned characters that preprocess (before
    lowercasing) into a capital sigma, into text whose first character that is not case-ignorable is
    cased, and into text whose last such character is not cased."""
    sigmas, cased_starts, other_ends = [], [], []
    for codepoint in range(1, SCANNED_CODEPOINTS):
        char = chr(codepoint)
        category = unicodedata.category(char)
        if category in ("Cn", "Co", "Cs"):
            continue
        form = char if keep_accents else strip_accents(char)
        if form == CAPITAL_SIGMA:
            sigmas.append(char)
            continue
        first = _first_significant(form)
        if first is not None and _is_cased(first):
            cased_starts.append(char)
        last = _first_significant(reversed(form))
        if last is not None and not _is_cased(last):
            other_ends.append(char)
    return tuple(sigmas), tuple(cased_starts), tuple(other_ends)


@functools.lru_cache(maxsize=4)
def _own_rules(charsmap):
    """The rules of a precompiled character map, [(key, value)]."""
    if not charsmap:
        return ()
    return tuple(sentencepiece.SentencePieceNormalizer(
        normalizer_spec=spm_proto.normalizer_spec_with_charsmap(charsmap)).decompile())


@functools.lru_cache(maxsize=4)
def _own_map(charsmap):
    """The model's own character map applied to whole strings, spaces collapsed as the op does."""
    rules = _own_rules(charsmap)
    if not rules:
        return lambda texts: [re.sub(" +", " ", text) for text in texts]
    normalizer = sentencepiece.SentencePieceNormalizer(norm_map=list(rules), add_dummy_prefix=False,
                                                       escape_whitespaces=False, remove_extra_whitespaces=True)
    return lambda texts: [mapped[1:-1] for mapped in normalizer.normalize([_SENTINEL + text + _SENTINEL
                                                                          for text in texts])]


@functools.cache
def _changed_by_form(lower_case, keep_accents):
    """{preprocessed form: the changed characters with that form}."""
    by_form = {}
    for char in _changed_characters(lower_case, keep_accents):
        by_form.setdefault(_preprocessed(char, lower_case, keep_accents, False), []).append(char)
    return by_form


def _joined_keys(rules, lower_case, keep_accents):
    """Pairs of characters whose preprocessed forms join into a multi-character key of the model's own map
    that the preprocessing leaves as it is (the op would otherwise map the two apart)."""
    changed = frozenset(_changed_characters(lower_case, keep_accents))
    by_form = _changed_by_form(lower_case, keep_accents)

    def chars_becoming(form):
        return by_form.get(form, []) + ([form] if len(form) == 1 and form not in changed else [])

    joined = set()
    for key, _ in rules:
        if len(key) < 2 or not changed.isdisjoint(key):
            continue
        for split in range(1, len(key)):
            joined.update(head + tail for head in chars_becoming(key[:split]) for tail in chars_becoming(key[split:]))
    return joined


def _sigma_keys(rules, keep_accents):
    """The keys that lowercase a capital sigma by its context, and the characters that are capital sigmas."""
    sigmas, cased_starts, other_ends = _sigma_context(keep_accents)
    keys = {CAPITAL_SIGMA * count + follower for count in range(1, _SIGMA_RUN + 1) for follower in cased_starts}
    keys.update(CAPITAL_SIGMA + ignorable + follower for ignorable in _COMMON_CASE_IGNORABLE
                for follower in cased_starts)
    if keep_accents:  # a letter and its accent: one key of the model's map, which the sigma's key must hold
        keys.update(CAPITAL_SIGMA + key for key, _ in rules if len(key) == 2 and _is_cased(key[0]))
    keys.update(CAPITAL_SIGMA * count for count in range(2, _SIGMA_RUN + 1))
    keys.update(end + CAPITAL_SIGMA for end in other_ends)
    keys.update(end + ignorable + CAPITAL_SIGMA for end in other_ends if end.isascii() or end.isspace()
                for ignorable in _COMMON_CASE_IGNORABLE)
    return keys, sigmas


@functools.lru_cache(maxsize=4)
def _albert_forms(charsmap, lower_case, keep_accents):
    """[(key, value)] of the map but its quote and sigma rules, before the vocabulary is known: each key
    preprocessed and mapped by the model's own map (`charsmap`), sorted. No key holds ``` `` ``` or `''`."""
    rules = _own_rules(charsmap)
    keys = {key for key, _ in rules}
    keys.update(_changed_characters(lower_case, keep_accents))
    keys.update(_joined_keys(rules, lower_case, keep_accents))
    keys = sorted(keys)  # the map's builder sorts them, faster when they come sorted
    forms = [_preprocessed(key, lower_case, keep_accents, False) for key in keys]
    return tuple(zip(keys, _own_map(charsmap)(forms)))


@functools.lru_cache(maxsize=2)
def _sigma_forms(charsmap, keep_accents):
    """[(key, value)] of the rules that lowercase a capital sigma by its context, which replace those of
    `_albert_forms` for the same keys."""
    keys, sigmas = _sigma_keys(_own_rules(charsmap), keep_accents)
    keys = sorted(keys | set(sigmas))
    # Alone, a capital sigma is taken to end a word: the other keys cover the other contexts.
    forms = [FINAL_SIGMA if key in sigmas else _preprocessed(key, True, keep_accents, False) for key in keys]
    return tuple(zip(keys, _own_map(charsmap)(forms)))


@functools.cache
def _placeholder_candidates():
    """The characters that become the placeholder unless a piece holds them or a key maps them: planes 0-3,
    which hold every assigned character but the tags and variation selectors of plane 14, and those. (The
    other planes are unassigned or private use, never in a vocabulary: a character of theirs stays what it
    is, an unknown character of four bytes.)"""
    codepoints = [*range(1, 0xD800), *range(0xE000, 0x40000), *range(0xE0000, 0xE1000)]
    return tuple(map(chr, codepoints))


@functools.lru_cache(maxsize=16)
def _albert_charsmap(charsmap, known, lower_case, keep_accents, rewrite_quotes):
    """The precompiled map of `albert_model_proto`, for a model whose own map is `charsmap` and whose pieces
    hold the characters `known` (a frozenset)."""
    forms = _albert_forms(charsmap, lower_case, keep_accents)
    if lower_case and not known.isdisjoint((SMALL_SIGMA, FINAL_SIGMA)):
        # (For a vocabulary with neither, both are the placeholder: the context changes nothing.)
        forms = sorted({**dict(forms), **dict(_sigma_forms(charsmap, keep_accents))}.items())
    if rewrite_quotes:
        quotes = ("``", "''")
        forms = [*forms, *zip(quotes, _own_map(charsmap)([_preprocessed(quote, lower_case, keep_accents, True)
                                                           for quote in quotes]))]
    in_values = set().union(*(value for _, value in forms))
    unknown = str.maketrans({char: PLACEHOLDER for char in in_values if char not in known and char != " "})
    rules = [(key, translated) for key, translated in ((key, value.translate(unknown)) for key, value in forms)
             if key != translated]
    mapped = {key for key, _ in forms} | known
    rules += [(char, PLACEHOLDER) for char in _placeholder_candidates() if char not in mapped]
    spec = sentencepiece.SentencePieceNormalizer(norm_map=rules).serialized_normalizer_spec()
    return spm_proto.charsmap_of_normalizer_spec(spec)


@functools.lru_cache(maxsize=16)
def albert_model_proto(model_proto: bytes, lower_case: bool = True, keep_accents: bool = False,
                       rewrite_quotes: bool = False) -> bytes:
    """A copy of the SentencePiece model whose normalization is ALBERT's preprocessing and then its own.

    Raises ValueError for a model the fast op cannot run as SentencePiece does: one that is not a unigram
    model, or whose normalizer keeps runs of whitespace.
    """
    if spm_proto.model_type(model_proto) != spm_proto.UNIGRAM:
        raise ValueError("not a unigram SentencePiece model: the in-graph tokenizer runs unigram models only")
    if not spm_proto.normalizer_flag(model_proto, _REMOVE_EXTRA_WHITESPACES):
        raise ValueError("its normalizer keeps runs of whitespace (remove_extra_whitespaces=false), which "
                         "ALBERT's preprocessing collapses: the in-graph tokenizer cannot follow it")
    pieces = spm_proto.pieces(model_proto)
    known = frozenset(char for piece, piece_type, _ in pieces
                      if piece_type in (spm_proto.NORMAL, spm_proto.USER_DEFINED) for char in piece)
    charsmap = _albert_charsmap(spm_proto.precompiled_charsmap(model_proto), known, lower_case, keep_accents,
                                rewrite_quotes)
    scores = {piece_id: user_defined_score(piece) for piece_id, (piece, piece_type, _) in enumerate(pieces)
              if piece_type == spm_proto.USER_DEFINED}
    return spm_proto.with_scores(spm_proto.with_precompiled_charsmap(model_proto, charsmap), scores)


def user_defined_score(piece):
    """The score the op must give a user-defined symbol to add what SentencePiece adds for it.

    SentencePiece always picks a user-defined symbol (`(`, `–`, `£`...) whatever the proto's score
    (0): its unigram search adds a score of its own, which for the pinned version acts as
    0.1 * bytes - 0.1, summed in double precision (measured against its Python encoder: the ties
    after such a symbol then fall the same way on every text tried; the equality tests hold it).
    The op adds the piece's float score: the nearest float to that.
    """
    return float(np.float32(len(piece.encode("utf-8")) * np.float32(0.1))) - 0.1
