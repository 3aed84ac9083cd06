"""BERT's WordPiece tokenizer, for the ALBERTs that ship a `vocab.txt` instead of a SentencePiece model.

Google's Chinese ALBERTs (albert_*_zh), brightmart's albert_zh, ckiplab's and kykim's models tokenize with the
original BERT/ALBERT `FullTokenizer` given a vocabulary file alone; this is that tokenizer, with character
offsets for every piece:

  1. text cleaning: NUL, U+FFFD and control characters (Unicode category C*, but tab, newline and carriage
     return) removed; tab, newline, carriage return and space separators (Zs) become spaces;
  2. with `tokenize_chinese_chars`, spaces around every CJK Unified Ideograph (BERT's eight ranges; kana and
     Hangul are written with spaces between words and are left alone);
  3. split at Python whitespace (`str.split`);
  4. each such word lowercased (`str.lower`) if `lower_case`, and its accents stripped (NFD, marks of
     category Mn dropped) if `strip_accents` (None: as `lower_case`, the original's only switch);
  5. split at punctuation (ASCII symbols and Unicode P*), each mark its own word;
  6. greedy longest-match WordPiece over each word, continuation pieces prefixed `##`; a word of more than
     `max_input_chars_per_word` characters (the original: 200), or with a part no piece matches, is [UNK].

Hugging Face's tokenizers differ from the original in three places, each only where said: its Python
BertTokenizer (`BertTokenizerLegacy` in transformers 5) NFC-normalizes the text first (only text not already
in NFC tokenizes differently), and both it and the Rust one (`BertTokenizer(Fast)`) make [UNK] of words over
100 characters, not 200; the Rust one lowercases character by character, so a word-final capital sigma
becomes σ where `str.lower` gives ς. A literal "[SEP]" in the text is text to the original (`[`, `sep`, `]`);
Hugging Face matches its special tokens in the raw text first.

Special ids are the vocabulary's: [PAD], [UNK], [CLS], [SEP] and [MASK] wherever its lines put them (BERT's
layout: 0, 100, 101, 102, 103).
"""

import dataclasses
import re
import unicodedata

import numpy as np

from albert_tf.text.special_ids import SpecialIds

CONTINUATION_PREFIX = "##"
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# BERT's reserved lines, for pieces a user adds later.
_UNUSED_LINE = re.compile(r"\[unused\d+\]")
# The original's limit; Hugging Face's BertTokenizer uses 100.
ORIGINAL_MAX_INPUT_CHARS_PER_WORD = 200

# BERT's "Chinese characters": the CJK Unified Ideographs blocks and extensions, and the compatibility ideographs.
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
               (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_cjk_character(char):
    codepoint = ord(char)
    return any(low <= codepoint <= high for low, high in _CJK_RANGES)


def _is_whitespace(char):
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_control(char):
    return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


def _is_punctuation(char):
    codepoint = ord(char)
    # ASCII symbols that are not letters or digits count, though Unicode files some ("$", "^") as symbols (S*).
    if 33 <= codepoint <= 47 or 58 <= codepoint <= 64 or 91 <= codepoint <= 96 or 123 <= codepoint <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def read_vocabulary(path):
    """The pieces of a WordPiece vocab.txt, one per line in id order (a line's end, and only that, removed)."""
    with open(path, encoding="utf-8", newline="") as f:
        return split_vocabulary_lines(f.read())


def split_vocabulary_lines(text):
    """A vocab.txt's text -> its pieces, one per line in id order: lines end at \\n, \\r\\n or \\r, as Python's
    text files (and so the original's and Hugging Face's readers) see them; a line's end, and only that, removed."""
    pieces = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if pieces and pieces[-1] == "":
        pieces.pop()  # the file's last line end
    return pieces


@dataclasses.dataclass(frozen=True)
class Word:
    """One word of the basic tokenization: its normalized text, and per normalized character the [start, end)
    of the raw characters it came from."""

    text: str
    starts: tuple
    ends: tuple


class WordPieceTokenizer:
    """The original BERT/ALBERT FullTokenizer over a WordPiece vocabulary (module docstring).

    Args:
      vocab_file: a vocab.txt, one piece per line; or None with `pieces`.
      pieces: the vocabulary's pieces in id order.
      lower_case: lowercase (and, unless `strip_accents` says otherwise, strip accents), as the original's
        do_lower_case.
      strip_accents: None (as `lower_case`), True or False, as Hugging Face's strip_accents.
      tokenize_chinese_chars: split CJK ideographs one per word.
      max_input_chars_per_word: longer words become [UNK].
    """

    # How accent stripping decomposes a character before dropping its marks (BERT's _run_strip_accents): NFD, so
    # a compatibility character such as ǆ keeps its caron.
    accent_decomposition = "NFD"

    def __init__(self, vocab_file=None, pieces=None, lower_case=True, strip_accents=None, tokenize_chinese_chars=True,
                 max_input_chars_per_word=ORIGINAL_MAX_INPUT_CHARS_PER_WORD):
        if (vocab_file is None) == (pieces is None):
            raise ValueError("pass exactly one of vocab_file and pieces")
        self.source = vocab_file or "<pieces>"
        self.pieces = list(read_vocabulary(vocab_file) if vocab_file is not None else pieces)
        self.vocab = {}
        for piece_id, piece in enumerate(self.pieces):
            # A repeated line takes its last id, as the original's and Hugging Face's load_vocab (a dict assigned
            # line by line) give it.
            self.vocab[piece] = piece_id
        missing = [token for token in SPECIAL_TOKENS if token not in self.vocab]
        if missing:
            raise ValueError(f"{self.source}: not a BERT WordPiece vocabulary: no {', '.join(missing)} line; it "
                             "needs [PAD], [UNK], [CLS], [SEP] and [MASK]")
        self.lower_case = lower_case
        self.strip_accents = lower_case if strip_accents is None else strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.max_input_chars_per_word = max_input_chars_per_word
        self.special_ids = SpecialIds(*(self.vocab[token] for token in SPECIAL_TOKENS))
        self.unk_id = self.special_ids.unk
        # The original masking's word starts: every piece but a `##` continuation.
        self.word_start_table = np.array([not piece.startswith(CONTINUATION_PREFIX) for piece in self.pieces], bool)
        # Ids a random replacement (masked-LM data) draws from, uniformly: the whole vocabulary, as the original.
        self.random_replacement_ids = np.arange(self.vocab_size, dtype=np.int32)

    @property
    def vocab_size(self):
        return len(self.pieces)

    def id_to_piece(self, piece_id):
        return self.pieces[piece_id]

    def piece_to_id(self, piece):
        return self.vocab.get(piece, self.unk_id)

    def ordinary_pieces(self):
        """The pieces of text: all but the special lines ([PAD], [UNK], [CLS], [SEP], [MASK]) and BERT's reserved
        [unusedN] lines, a continuation's `##` removed."""
        special = set(SPECIAL_TOKENS)
        return [piece[len(CONTINUATION_PREFIX):] if piece.startswith(CONTINUATION_PREFIX) else piece
                for piece in self.pieces if piece not in special and not _UNUSED_LINE.fullmatch(piece)]

    def piece_as_word(self, piece_id):
        """(the piece's text as written, whether it starts a word): 'paris' -> ('paris', True), '##ing' ->
        ('ing', False)."""
        piece = self.pieces[piece_id]
        if piece.startswith(CONTINUATION_PREFIX) and len(piece) > len(CONTINUATION_PREFIX):
            return piece[len(CONTINUATION_PREFIX):], False
        return piece, True

    # === Basic tokenization ===

    def words(self, text):
        """The basic tokenizer's words (steps 1-5 of the module docstring) with their raw character spans."""
        raw_words, current = [], []
        for index, char in enumerate(text):
            if ord(char) in (0, 0xFFFD) or _is_control(char):
                continue
            if _is_whitespace(char) or char.isspace():
                # Cleaning makes the original's whitespace spaces; str.split then also splits at the rest
                # of Python's whitespace (U+2028, U+0085 is a control and is gone).
                if current:
                    raw_words.append(current)
                current = []
            elif self.tokenize_chinese_chars and is_cjk_character(char):
                if current:
                    raw_words.append(current)
                raw_words.append([index])
                current = []
            else:
                current.append(index)
        if current:
            raw_words.append(current)
        words = []
        for indices in raw_words:
            words.extend(self._split_at_punctuation(self._normalized(text, indices)))
        return words

    def _normalized(self, text, indices):
        """A Word of the raw characters at `indices` (one whitespace-separated word): lowercased and stripped
        of its accents as the switches say, each normalized character mapped back to the raw one it came from."""
        raw = "".join(text[index] for index in indices)
        whole = raw.lower() if self.lower_case else raw
        # Lowercasing character by character keeps the map, but str.lower of the whole word decides a final
        # sigma; where the two agree in length (all but a few expanding letters, such as İ), each lowered
        # character is taken from the whole word's.
        per_character = [text[index].lower() if self.lower_case else text[index] for index in indices]
        if len(whole) == len(raw) and all(len(lowered) == 1 for lowered in per_character):
            per_character = list(whole)
        if self.strip_accents:
            per_character = [_strip_accents(part) for part in per_character]
            whole = _strip_accents(whole)
        chars, starts, ends = [], [], []
        for index, part in zip(indices, per_character):
            chars.append(part)
            starts.extend([index] * len(part))
            ends.extend([index + 1] * len(part))
        if "".join(chars) != whole:
            # Marks reordered across characters by NFD: the word's text is the whole word's; its characters
            # all map to the word's span.
            starts, ends = [indices[0]] * len(whole), [indices[-1] + 1] * len(whole)
        return Word(whole, tuple(starts), tuple(ends))

    @staticmethod
    def _split_at_punctuation(word):
        pieces, start = [], 0
        for position, char in enumerate(word.text):
            if _is_punctuation(char):
                if start < position:
                    pieces.append((start, position))
                pieces.append((position, position + 1))
                start = position + 1
        if start < len(word.text):
            pieces.append((start, len(word.text)))
        # A normalized word may hold whitespace again (a lowercased or stripped character that became one is
        # none in practice, but the original splits at it): split there too.
        split = []
        for begin, end in pieces:
            position = begin
            for part in word.text[begin:end].split():
                found = word.text.index(part, position)
                split.append((found, found + len(part)))
                position = found + len(part)
        return [Word(word.text[begin:end], word.starts[begin:end], word.ends[begin:end]) for begin, end in split]

    # === WordPiece ===

    def _word_pieces(self, word):
        """[(id, start, end)] of one word: [start, end) its raw characters."""
        text = word.text
        if len(text) > self.max_input_chars_per_word:
            return [(self.unk_id, word.starts[0], word.ends[-1])]
        found, start = [], 0
        while start < len(text):
            end = len(text)
            while start < end:
                candidate = text[start:end] if start == 0 else CONTINUATION_PREFIX + text[start:end]
                if candidate in self.vocab:
                    break
                end -= 1
            if start == end:
                return [(self.unk_id, word.starts[0], word.ends[-1])]
            found.append((self.vocab[candidate], word.starts[start], word.ends[end - 1]))
            start = end
        return found

    def encode_with_offsets(self, text):
        """(ids, starts, ends) of `text`: [start, end) of each piece in `text`'s characters."""
        pieces = [piece for word in self.words(text) for piece in self._word_pieces(word)]
        if not pieces:
            return [], [], []
        ids, starts, ends = zip(*pieces)
        return list(ids), list(starts), list(ends)

    def encode(self, text):
        return self.encode_with_offsets(text)[0]

    def aligned(self, text):
        """`piece_alignment.AlignedTokens` of `text`: its ids with each piece's [start, end) in its characters."""
        from albert_tf.text.piece_alignment import AlignedTokens

        ids, starts, ends = self.encode_with_offsets(text)
        return AlignedTokens(ids=ids, starts=starts, ends=ends)

    def encode_batch(self, texts):
        return [self.encode(text) for text in texts]

    def tokenize(self, text):
        return [self.pieces[piece_id] for piece_id in self.encode(text)]

    def decode(self, ids):
        """Text of `ids`: pieces joined by spaces, `##` continuations joined to the piece before; padding, [CLS] and
        [SEP] left out, as AlbertTokenizer.decode leaves them."""
        skipped = (self.special_ids.pad, self.special_ids.cls, self.special_ids.sep)
        return " ".join(self.pieces[i] for i in ids if int(i) not in skipped).replace(" " + CONTINUATION_PREFIX, "")


def _strip_accents(text):
    return "".join(char for char in unicodedata.normalize("NFD", text) if unicodedata.category(char) != "Mn")
