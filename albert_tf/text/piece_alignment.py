"""Character alignment between a text and its tokens: each token's [start, end) in the raw text.

The tokenizer lowercases, strips accents, collapses whitespace, splits `<digit>,` pieces and, for models
converted from Hugging Face (their recorded rewrite_quotes), turns `` and '' into ", so pieces are not
substrings of the text. `tokenize_with_alignment` tracks every character through each of those steps (and
SentencePiece's own normalization through its offset mapping), so each token knows the exact [start, end) of
the text it came from, in characters (Python str indices). SQuAD maps answers through it; a tagger reads its
entities' offsets from it; `albert_tf.export_lib.token_offsets` is its in-graph twin (in bytes).
"""

import bisect
import dataclasses
import unicodedata

from albert_tf.text.preprocessing import SPIECE_UNDERLINE


@dataclasses.dataclass(frozen=True)
class AlignedTokens:
    """Token ids of a text and, per token, the [start, end) of the text it covers.

    A piece that begins a word ('▁x') covers its characters without the space
    before them; a piece that is only '▁' covers that whitespace.
    """

    ids: list
    starts: list
    ends: list

    def token_span(self, char_start, char_end):
        """(first, last) index of the tokens covering text[char_start:char_end], or None if none does."""
        covering = []
        # Token spans are in text order, so `ends` is sorted.
        for index in range(bisect.bisect_right(self.ends, char_start), len(self.ids)):
            if self.starts[index] >= char_end:
                break
            if self.ends[index] > self.starts[index]:
                covering.append(index)
        return (covering[0], covering[-1]) if covering else None


def preprocess_with_alignment(text, lower_case, keep_accents, rewrite_quotes=False):
    """`preprocess_text(text)` and, per output character, its [start, end) in `text`.

    Each step of the preprocessing is replayed character by character: a
    collapsed whitespace run maps to the whole run, a `` or '' that
    `rewrite_quotes` replaces by " to both quote characters (the original keeps
    them, one character each), a character NFKD expands (ﬁ -> fi) to itself for
    each output, and a dropped combining mark widens the character before it.
    """
    # Collapse whitespace runs to one space, and drop leading/trailing ones.
    items = []  # [char, start, end]
    run_start = None
    for index, char in enumerate(text):
        if char.isspace():
            if run_start is None:
                run_start = index
            continue
        if run_start is not None and items:
            items.append([" ", run_start, index])
        run_start = None
        items.append([char, index, index + 1])

    for quotes in ("``", "''") if rewrite_quotes else ():
        replaced = []
        index = 0
        while index < len(items):
            if index + 1 < len(items) and items[index][0] + items[index + 1][0] == quotes:
                replaced.append(['"', items[index][1], items[index + 1][2]])
                index += 2
            else:
                replaced.append(items[index])
                index += 1
        items = replaced

    if not keep_accents and not all(item[0].isascii() for item in items):
        stripped = []
        widen_next_to = None
        for char, start, end in items:
            kept = [c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)]
            if not kept:
                if stripped:
                    stripped[-1][2] = end
                elif widen_next_to is None:
                    widen_next_to = start
                continue
            if widen_next_to is not None:
                start, widen_next_to = widen_next_to, None
            stripped.extend([c, start, end] for c in kept)
        items = stripped

    if lower_case:
        lowered = [[c, start, end] for char, start, end in items for c in char.lower()]
        # str.lower() looks at context only for a final sigma, which keeps the length.
        whole = "".join(item[0] for item in items).lower()
        items = [[c, start, end] for c, (_, start, end) in zip(whole, lowered)]

    return "".join(item[0] for item in items), [(item[1], item[2]) for item in items]


def _piece_text(piece):
    return piece.replace(SPIECE_UNDERLINE, "")


def tokenize_with_alignment(tokenizer, text):
    """`AlignedTokens` of `text`: exactly `tokenizer.encode(text)`, with character spans."""
    preprocessed, char_spans = preprocess_with_alignment(text, tokenizer.lower_case, tokenizer.keep_accents,
                                                          tokenizer.rewrite_quotes)
    if preprocessed != tokenizer.preprocess(text):
        raise RuntimeError(f"character alignment diverged from the tokenizer's preprocessing on {text[:80]!r}")
    ids = tokenizer.encode_preprocessed([preprocessed])[0]
    encoded = tokenizer.sp.encode(preprocessed, return_type="offset_mapping")

    # Pieces the tokenizer splits (`<digit>,`) become several ids covering the
    # piece's characters, ',' the last one; the others share the rest from the end,
    # each its own text's length in SentencePiece's normalized text. A boundary there
    # maps to where normalization took that text from, so the characters it removed
    # (controls) stay with the id before them, as with a whole piece.
    piece_spans = []  # (begin, end) in `preprocessed`, one per id
    normalized_sources = None  # per normalized character, its position in `preprocessed`
    normalized_end = 0
    next_id = 0
    for piece_id, piece, (begin, end) in zip(encoded["ids"], encoded["pieces"], encoded["offsets"]):
        normalized_end += len(piece)
        if ids[next_id] == piece_id:
            piece_spans.append((begin, end))
            next_id += 1
            continue
        if normalized_sources is None:
            normalized_sources = tokenizer.sp.normalize(preprocessed, with_offsets=True)[1]
        target_length = len(_piece_text(piece))
        sub_ids, length = [], 0
        while length < target_length:
            sub_ids.append(ids[next_id + len(sub_ids)])
            length += len(_piece_text(tokenizer.id_to_piece(sub_ids[-1])))
        boundaries = []
        boundary = normalized_end
        for sub_id in reversed(sub_ids[1:]):
            boundary -= len(_piece_text(tokenizer.id_to_piece(sub_id)))
            boundaries.insert(0, max(begin, normalized_sources[boundary]))
        edges = [begin, *boundaries, end]
        piece_spans.extend(zip(edges[:-1], edges[1:]))
        next_id += len(sub_ids)
    if next_id != len(ids):
        raise RuntimeError(f"piece alignment diverged from the tokenizer's ids on {text[:80]!r}")

    starts, ends = [], []
    for begin, end in piece_spans:
        while begin < end - 1 and preprocessed[begin] == " ":
            begin += 1
        if begin == end:
            position = char_spans[begin][0] if begin < len(char_spans) else len(text)
            starts.append(position)
            ends.append(position)
        else:
            starts.append(char_spans[begin][0])
            ends.append(char_spans[end - 1][1])
    return AlignedTokens(ids=ids, starts=starts, ends=ends)
