"""`normalizer_model()`: `WordPieceTokenizer`'s text rules as a model for tensorflow-text's FastBertNormalizer.

tensorflow-text's FastBertNormalize op (a TFLite kernel too) maps the text one code point at a time through a
table it reads from a flatbuffer (fast_bert_normalizer_model.fbs): a darts-clone trie from each changed code
point's UTF-8 bytes to its replacement in a string pool. Its own tables are not BERT's rules:

  - lowercasing there is ICU's NFKC case folding, which also turns full-width forms into ASCII (，-> ,
    ！-> !) and compatibility characters into their letters: a lowercased Chinese vocabulary, which has both
    ， and , as pieces, gets other ids for most sentences;
  - control characters become spaces there; the original removes them (a\\x01b is one word to BERT).

So the table is built here from the rules `WordPieceTokenizer` applies, read from Python's Unicode database:
NUL, U+FFFD and control characters removed, whitespace a space, a CJK ideograph spaced on both sides, then
`str.lower` and accent stripping (NFD, marks of category Mn dropped) as configured. Applied per code point,
this equals the original's whole-text rules except where a rule looks beyond one character: a capital sigma at
a word's end, which `str.lower` makes ς and a table can only make σ (Hugging Face's fast tokenizer does the
same), and the canonical reordering of two adjacent combining marks that are both kept.
"""

import functools
import sys
import unicodedata

import numpy as np

from albert_tf.text.wordpiece_tokenizer import _is_control, _is_whitespace

# The kernel's encoding of a code point's data (fast_bert_normalizer.h): bit 30 says the code point changes,
# bits 6-29 the replacement's offset in the pool, bits 0-5 its length in UTF-8 bytes.
_CHANGED = 0x40000000
_LENGTH_BITS = 6
_MAX_LENGTH = (1 << _LENGTH_BITS) - 1
_MAX_OFFSET = (1 << (30 - _LENGTH_BITS)) - 1


def normalized_character(char, lower_case, strip_accents):
    """What `WordPieceTokenizer` makes of one character before it splits words (CJK ideographs aside: the
    WordPiece op splits them off itself)."""
    if char in ("\0", "\ufffd") or _is_control(char):
        return ""
    if _is_whitespace(char) or char.isspace():
        return " "
    text = char.lower() if lower_case else char
    if strip_accents:
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    return text


def left_to_the_kernel(codepoint):
    """Code points the table leaves out, so they reach the WordPiece op unchanged where the Python tokenizer
    removes them: unassigned ones (830,000 keys that would make every file megabytes larger) and the
    supplementary private use planes 15 and 16 (131,000). Real text does not hold them; a word that does
    becomes [UNK] on the device. The 66 noncharacters stay in the table (removed): U+FFFF names the
    vocabulary's repeated lines (`tf_wordpiece_tokenizer.unique_pieces`), which no text may match."""
    if 0xFDD0 <= codepoint <= 0xFDEF or codepoint & 0xFFFE == 0xFFFE:
        return False
    return codepoint >= 0xF0000 or unicodedata.category(chr(codepoint)) == "Cn"


@functools.cache
def normalizer_model(lower_case, strip_accents):
    """The FastBertNormalizer model (flatbuffer bytes) of these settings (`strip_accents` None: as `lower_case`)."""
    strip_accents = lower_case if strip_accents is None else strip_accents
    pool, pool_offsets, keys = bytearray(), {}, []

    def encoded(replacement):
        data = replacement.encode("utf-8")
        if data not in pool_offsets:
            pool_offsets[data] = len(pool)
            pool.extend(data)
        offset = pool_offsets[data]
        if len(data) > _MAX_LENGTH or offset > _MAX_OFFSET:
            raise ValueError(f"a replacement of {len(data)} bytes at pool offset {offset} does not fit the "
                             "normalizer model's encoding")
        return _CHANGED | (offset << _LENGTH_BITS) | len(data)

    for codepoint in range(1, sys.maxunicode + 1):
        if 0xD800 <= codepoint <= 0xDFFF or left_to_the_kernel(codepoint):  # (surrogates: never in UTF-8 text)
            continue
        char = chr(codepoint)
        replacement = normalized_character(char, lower_case, strip_accents)
        if replacement != char:
            keys.append((char.encode("utf-8"), encoded(replacement)))
    data_for_zero = encoded(normalized_character("\0", lower_case, strip_accents))
    return _flatbuffer(lower_case and strip_accents, darts_clone_array(keys), data_for_zero, bytes(pool))


def darts_clone_array(keys):
    """A darts-clone double array (uint32 units) of `keys`: (bytes without NUL, value < 2**31) sorted by bytes.

    The layout tensorflow-text's DartsCloneTrieWrapper reads: a unit holds its label (bits 0-7), whether a value
    hangs under it (bit 8) and the XOR offset from its position to its children's (bits 10-31); child `c` of the
    node at `p` sits at p ^ offset ^ c; a value sits at p ^ offset in a unit with bit 31 set (so no label matches
    it). Every node's offset base is unique, so no traversal lands in another node's children.
    """
    keys = sorted(keys)
    if any(not key or 0 in key for key, _ in keys):
        raise ValueError("darts-clone keys must be non-empty and hold no NUL byte")
    units, used, used_bases = [0], bytearray(1 << 16), set()
    used[0] = 1
    first_free = 1

    def grow(size):
        nonlocal used
        while len(used) < size:
            used.extend(bytearray(len(used)))
        while len(units) < size:
            units.append(0)

    def place(labels):
        """A new base at which every label's slot is free (the first such, scanning from the first free slot)."""
        nonlocal first_free
        first_free = next_free(first_free)
        position = first_free
        while True:
            base = position ^ labels[0]
            grow(max(base ^ label for label in labels) + 1)
            if base not in used_bases and all(not used[base ^ label] for label in labels):
                return base
            position = next_free(position + 1)

    def next_free(position):
        found = used.find(0, position)
        if found < 0:
            found = len(used)
            grow(found + 1)
        return found

    # Depth-first from the root: (position, the keys below it, the depth of their next byte).
    stack = [(0, 0, len(keys), 0)]
    while stack:
        position, start, end, depth = stack.pop()
        children, value = [], None  # children: (label, start, end)
        index = start
        while index < end:
            key = keys[index][0]
            if len(key) == depth:
                value = keys[index][1]
                index += 1
                continue
            label, child_start = key[depth], index
            while index < end and len(keys[index][0]) > depth and keys[index][0][depth] == label:
                index += 1
            children.append((label, child_start, index))
        labels = ([0] if value is not None else []) + [label for label, _, _ in children]
        base = place(labels)
        used_bases.add(base)
        offset = position ^ base
        if offset >= 1 << 21:
            raise ValueError("the double array outgrew darts-clone's short offsets")
        units[position] |= (offset << 10) | (0x100 if value is not None else 0)
        if value is not None:
            used[base] = 1
            units[base] = value | (1 << 31)
        for label, child_start, child_end in children:
            used[base ^ label] = 1
            units[base ^ label] = label
            stack.append((base ^ label, child_start, child_end, depth + 1))
    while len(units) > 1 and units[-1] == 0 and not used[len(units) - 1]:
        units.pop()
    return np.array(units, np.uint32)


def _flatbuffer(lower_case_nfd_strip_accents, trie_array, data_for_codepoint_zero, pool):
    """FastBertNormalizerModel's flatbuffer: (bool, [uint32] trie, int32, [ubyte] pool), fields 0-3 in order."""
    import flatbuffers

    builder = flatbuffers.Builder(len(pool) + 4 * len(trie_array) + 1024)
    pool_vector = builder.CreateNumpyVector(np.frombuffer(pool or b" ", np.uint8)[:len(pool)])
    trie_vector = builder.CreateNumpyVector(trie_array)
    builder.StartObject(4)
    builder.PrependBoolSlot(0, bool(lower_case_nfd_strip_accents), False)
    builder.PrependUOffsetTRelativeSlot(1, trie_vector, 0)
    builder.PrependInt32Slot(2, data_for_codepoint_zero, 0)
    builder.PrependUOffsetTRelativeSlot(3, pool_vector, 0)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output())
