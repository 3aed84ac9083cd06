"""`AlbertTokenizer`: SentencePiece with the original ALBERT preprocessing and ids.

>>> tokenizer = AlbertTokenizer("30k-clean.model")      # doctest: +SKIP
>>> tokenizer.tokenize("In 2010, pi was 3.14.")         # doctest: +SKIP
['▁in', '▁2010', ',', '▁pi', '▁was', '▁3', '.', '14', '.']
"""

import os
import re
import unicodedata

import numpy as np
import sentencepiece

from albert_tf.settings import SettingError
from albert_tf.text.preprocessing import SPIECE_UNDERLINE, preprocess_text
from albert_tf.text.special_ids import ALBERT_SPECIAL_IDS

# The ids ALBERT's SentencePiece layout fixes (docs/reference.md, "Tokenizer"). The rest of the package takes
# them from the tokenizer (`special_ids`), as it does a WordPiece vocabulary's.
SPECIAL_PIECES = {"<pad>": ALBERT_SPECIAL_IDS.pad, "<unk>": ALBERT_SPECIAL_IDS.unk, "[CLS]": ALBERT_SPECIAL_IDS.cls,
                  "[SEP]": ALBERT_SPECIAL_IDS.sep, "[MASK]": ALBERT_SPECIAL_IDS.mask}
PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = (ALBERT_SPECIAL_IDS.pad, ALBERT_SPECIAL_IDS.unk, ALBERT_SPECIAL_IDS.cls,
                                           ALBERT_SPECIAL_IDS.sep, ALBERT_SPECIAL_IDS.mask)

# The SentencePiece model a checkpoint or export was trained with, when it travels with it.
SPM_MODEL_FILE = "spm.model"


def spm_model_path(directory: str | os.PathLike) -> str | None:
    """The SentencePiece model stored in a directory (a checkpoint, or a SavedModel's assets), or None."""
    for path in (os.path.join(directory, SPM_MODEL_FILE), os.path.join(directory, "assets", SPM_MODEL_FILE)):
        if os.path.isfile(path):
            return path
    return None


def read_spm_model(path: str | os.PathLike) -> bytes:
    """The bytes of the SentencePiece model at `path`, checked before any copy of them is made.

    A link is resolved first and must lead to a regular file (not a device or a
    directory), and the bytes must load as a SentencePiece model: a model
    directory handed over by someone else cannot smuggle another file out
    under the vocabulary's name.
    """
    resolved = os.path.realpath(path)
    if not os.path.isfile(resolved):
        raise FileNotFoundError(f"{path}: no such SentencePiece model" + (
            f" (it links to {resolved})" if resolved != os.path.abspath(path) else ""))
    with open(resolved, "rb") as f:
        model_proto = f.read()
    try:
        sentencepiece.SentencePieceProcessor().LoadFromSerializedProto(model_proto)
    except (RuntimeError, OSError) as error:
        shown = path if resolved == os.path.abspath(path) else f"{path} (a link to {resolved})"
        raise ValueError(f"{shown}: not a SentencePiece model ({error})") from None
    return model_proto


def copy_spm_model(source: str | os.PathLike, destination: str | os.PathLike) -> None:
    """Copies a SentencePiece model after `read_spm_model`'s checks; the copy is a new file with the
    umask's mode, not the source's."""
    model_proto = read_spm_model(source)
    with open(destination, "wb") as f:
        f.write(model_proto)


# Pieces the original masking treats as words of their own (`_is_start_piece_sp`). The original also lists
# "€" and "£", but as UTF-8 bytes, which under Python 3 never equal a character of a piece; they are left
# out here for the same result: a piece holding either is a start by the last rule of is_word_start_piece.
_WORD_START_PUNCTUATION = set('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')
_ENGLISH_LETTERS = set("abcdefghijklmnopqrstuvwxyz")
# Hangul syllables and jamo: Korean separates its words with spaces, so its pieces follow the '▁' rule.
_HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff]+")


def is_word_start_piece(piece):
    """True if `piece` starts a word for whole-word masking, as in the original.

    A piece starts a word if it begins with '▁' or '<', is a punctuation piece,
    or contains any character outside a-z and that punctuation (digits, accented
    or non-Latin letters: "foreign characters" are treated as whole pieces),
    except a piece of Hangul alone, which continues the word before it as a-z
    pieces do (a Korean word is the pieces from one '▁' to the next, so n-gram
    masking masks it whole; the original takes each of its pieces for a word).
    """
    return (
        piece.startswith(SPIECE_UNDERLINE)
        or piece.startswith("<")
        or piece in _WORD_START_PUNCTUATION
        or (not all(char.lower() in _ENGLISH_LETTERS or char in _WORD_START_PUNCTUATION for char in piece)
            and not _HANGUL.fullmatch(piece))
    )


# A vocabulary trained on lowercased text has no piece with a capital letter, save the few that
# SentencePiece's own NFKC normalization makes of a compatibility character after lowercasing ('™' has
# no lowercase form and becomes 'TM'; measured: 2 of 244 pieces with letters in a small vocabulary that
# kept accents). One trained on cased text has many (64 of 332 in the same small vocabulary, cased).
# The share of the pieces with letters above which a vocabulary counts as cased lies between the two.
_CASED_SHARE = 0.05


def vocabulary_casing(tokenizer):
    """'cased', 'lowercase' or 'caseless' (no letter that has a case): what the text a vocabulary was
    trained on was, read from its pieces.

    A SentencePiece model records its training text's casing in its pieces, whoever trained it
    (Google's 30k-clean.model has no piece with a capital letter), so this needs no side file.
    """
    with_letters = [piece for piece in tokenizer.ordinary_pieces() if any(char.lower() != char.upper() for char in piece)]
    if not with_letters:
        return "caseless"  # a script without case (Chinese, Thai, ...) says nothing about lowercasing
    capitalized = sum(1 for piece in with_letters if piece != piece.lower())
    return "cased" if capitalized > len(with_letters) * _CASED_SHARE else "lowercase"


def vocabulary_has_accents(tokenizer):
    """Whether any ordinary piece holds an accented letter or a combining mark: a vocabulary trained with
    accents kept (on text that has them). One without says nothing: its text may have had none."""
    return any(unicodedata.combining(char) for piece in tokenizer.ordinary_pieces()
               for char in unicodedata.normalize(tokenizer.accent_decomposition, piece))


def check_vocabulary_casing(tokenizer, lower_case, vocabulary_name=None, keep_accents=False):
    """SettingError when the data's casing (`lower_case`) contradicts the vocabulary's: cased text
    through a lowercase vocabulary turns every capital letter into <unk>; lowercased text through a
    cased vocabulary never uses its capitalized pieces. Likewise accents: a vocabulary with accented
    pieces was trained with them kept, and data that strips them (`keep_accents` False) never uses those."""
    casing = vocabulary_casing(tokenizer)
    name = vocabulary_name or tokenizer.source
    if lower_case and casing == "cased":
        raise SettingError(
            f"{name} is a cased vocabulary (its pieces have capital letters), but "
            "<do_lower_case|lower_case>=True lowercases the text: pass <do_lower_case|lower_case>=False, or "
            "train a lowercase vocabulary (albert-train-sentencepiece --do_lower_case)")
    if not lower_case and casing == "lowercase":
        raise SettingError(
            f"{name} is a lowercase vocabulary (none of its pieces has a capital letter), but "
            "<do_lower_case|lower_case>=False keeps the text's capitals, which would all become <unk>: "
            "pass <do_lower_case|lower_case>=True, or train a cased vocabulary (albert-train-sentencepiece "
            "--nodo_lower_case)")
    if not keep_accents and vocabulary_has_accents(tokenizer):
        raise SettingError(
            f"{name} was trained with accents kept (it has accented pieces), but the data strips them, as the "
            "original does: pass <keep_accents>=True, or train the vocabulary without albert-train-sentencepiece "
            "--keep_accents")


def ends_with_digit_comma(piece):
    """Whether the original re-encodes this piece without its comma (`▁2010,` -> `▁2010` + `,`)."""
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


class AlbertTokenizer:
    """Python tokenizer: preprocess, SentencePiece-encode, split `<digit>,` pieces.

    Args:
      spm_model_file: path of a SentencePiece model, or None with `model_proto`.
      model_proto: the serialized model (bytes).
      lower_case, keep_accents: the original preprocessing switches.
      rewrite_quotes: also turn `` and '' into " (Hugging Face's rule, for models trained with it; the
        original keeps them, and so does the default).

    Raises ValueError if the model's special pieces are not at ALBERT's ids
    (<pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4).
    """

    # How accent stripping decomposes a character before dropping its marks (the original's preprocess_text).
    accent_decomposition = "NFKD"

    def __init__(self, spm_model_file: str | None = None, model_proto: bytes | None = None, lower_case: bool = True,
                 keep_accents: bool = False, rewrite_quotes: bool = False):
        if (spm_model_file is None) == (model_proto is None):
            raise ValueError("Pass exactly one of spm_model_file and model_proto")
        if model_proto is None:
            try:
                with open(spm_model_file, "rb") as f:
                    model_proto = f.read()
            except FileNotFoundError:
                raise FileNotFoundError(f"{spm_model_file}: SentencePiece model not found") from None
        self.model_proto = model_proto
        self.source = spm_model_file or "<model_proto>"
        self.lower_case = lower_case
        self.keep_accents = keep_accents
        self.rewrite_quotes = rewrite_quotes
        self.sp = sentencepiece.SentencePieceProcessor()
        try:
            self.sp.LoadFromSerializedProto(model_proto)
        except (RuntimeError, OSError) as error:
            raise ValueError(f"{self.source}: not a SentencePiece model ({error})") from None
        wrong = {
            piece: (self.sp.piece_to_id(piece), expected)
            for piece, expected in SPECIAL_PIECES.items()
            if self.sp.piece_to_id(piece) != expected or self.sp.id_to_piece(expected) != piece
        }
        if wrong:
            found = ", ".join(f"{piece} at {self.sp.id_to_piece(expected)!r}'s place" for piece, (_, expected) in wrong.items())
            raise ValueError(
                f"{self.source}: not an ALBERT vocabulary; needs <pad>=0, <unk>=1, [CLS]=2, [SEP]=3, "
                f"[MASK]=4 ({found}). Train one with `python -m albert_tf.train_sentencepiece`."
            )
        pieces = [self.sp.id_to_piece(i) for i in range(self.vocab_size)]
        self._needs_comma_split = np.array([ends_with_digit_comma(p) for p in pieces], dtype=bool)
        self.word_start_table = np.array([is_word_start_piece(p) for p in pieces], dtype=bool)
        # Ids a random replacement (masked-LM data) draws from, uniformly: every id, the special pieces
        # included, as the original draws from its whole vocabulary.
        self.random_replacement_ids = np.arange(self.vocab_size, dtype=np.int32)
        self.special_ids = ALBERT_SPECIAL_IDS

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def preprocess(self, text: str) -> str:
        return preprocess_text(text, lower_case=self.lower_case, keep_accents=self.keep_accents,
                               rewrite_quotes=self.rewrite_quotes)

    def _split_digit_commas(self, ids):
        """The original's fix-up: a piece ending in `<digit>,` becomes its prefix pieces + ','.

        The prefix is re-encoded without '▁', and SentencePiece then puts a '▁' in front of it. When the
        piece itself had none (it continues a word), that '▁' is dropped here, as the original's code
        intends. The original run under Python 3 keeps it: its check compares bytes with str and is never
        true, so a mid-word piece gains a word start and the text a space (with a small vocabulary, `2010,`
        becomes `▁2 0 ▁ 10 ,`, which decodes as "20 10,"; here `▁2 0 10 ,`). Google's 30k-clean.model has
        no such piece (its 141 `<digit>,` pieces all begin with '▁'), so the two agree on it; they differ
        only on other vocabularies. The in-graph tokenizer drops it too.
        """
        result = []
        for token_id in ids:
            if not self._needs_comma_split[token_id]:
                result.append(token_id)
                continue
            piece = self.sp.id_to_piece(token_id)
            sub_pieces = self.sp.encode_as_pieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
            if not piece.startswith(SPIECE_UNDERLINE) and sub_pieces and sub_pieces[0].startswith(SPIECE_UNDERLINE):
                if len(sub_pieces[0]) == 1:
                    sub_pieces = sub_pieces[1:]
                else:
                    sub_pieces[0] = sub_pieces[0][1:]
            result.extend(self.sp.piece_to_id(p) for p in sub_pieces)
            result.append(self.sp.piece_to_id(piece[-1]))
        return result

    def encode_preprocessed(self, texts: list[str]) -> list[list[int]]:
        """Ids for already-preprocessed strings (a list), as lists of ints."""
        return [
            self._split_digit_commas(ids) if self._needs_comma_split[ids].any() else ids
            for ids in self.sp.encode(list(texts))
        ]

    def encode(self, text: str) -> list[int]:
        """Ids of one raw string."""
        return self.encode_preprocessed([self.preprocess(text)])[0]

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return self.encode_preprocessed([self.preprocess(text) for text in texts])

    def tokenize(self, text: str) -> list[str]:
        """Pieces of one raw string."""
        return [self.sp.id_to_piece(i) for i in self.encode(text)]

    def aligned(self, text: str):
        """`piece_alignment.AlignedTokens` of one raw string: `encode(text)` with each piece's [start, end) in
        `text`'s characters (every preprocessing step tracked)."""
        from albert_tf.text.piece_alignment import tokenize_with_alignment  # it imports this module

        return tokenize_with_alignment(self, text)

    def id_to_piece(self, token_id: int) -> str:
        return self.sp.id_to_piece(int(token_id))

    def ordinary_pieces(self) -> list[str]:
        """The pieces of text: all but the control (<pad>, [CLS], ...), unknown and unused ones."""
        sp = self.sp
        return [sp.id_to_piece(i) for i in range(sp.get_piece_size())
                if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i))]

    def piece_as_word(self, token_id: int) -> tuple[str, bool]:
        """(the piece's text as written, whether it starts a word): '▁paris' -> ('paris', True), 'ing' ->
        ('ing', False); a piece with no text of its own ('▁') gives ('', True)."""
        piece = self.id_to_piece(token_id)
        return piece.replace(SPIECE_UNDERLINE, " ").strip(), piece.startswith(SPIECE_UNDERLINE)

    def piece_to_id(self, piece: str) -> int:
        return self.sp.piece_to_id(piece)

    def decode(self, ids: list[int]) -> str:
        skipped = (self.special_ids.pad, self.special_ids.cls, self.special_ids.sep)
        return self.sp.decode([int(i) for i in ids if int(i) not in skipped])
