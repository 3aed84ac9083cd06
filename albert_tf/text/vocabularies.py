"""A model's vocabulary, whichever kind it is: a SentencePiece model (ALBERT's own, spm.model) or a WordPiece
vocab.txt (BERT's layout: Google's Chinese ALBERTs, brightmart's, ckiplab's and kykim's models).

`Vocabulary` is the file's bytes and its kind; `tokenizer` builds the Python tokenizer with the data's casing
and accent settings. Both tokenizers answer the same questions (ids, pieces, character offsets through
`aligned`, `special_ids`, the word-start table whole-word masking reads, `random_replacement_ids`), so the
code after this point never asks which kind it holds. The bytes, not a path, travel to worker processes and
Beam workers, as the SentencePiece model always has.

The settings map onto WordPiece as the original BERT's `FullTokenizer` and Hugging Face's BertTokenizer take
them: `lower_case` is do_lower_case; accents are stripped when lowercasing unless `keep_accents` (Hugging
Face's strip_accents=False, as kykim's Korean model sets); `rewrite_quotes` belongs to SentencePiece ALBERTs
converted from Hugging Face and is refused here.
"""

import dataclasses
import hashlib
import os

from albert_tf.settings import SettingError, SettingFileNotFound

SENTENCEPIECE, WORDPIECE = "sentencepiece", "wordpiece"
KINDS = (SENTENCEPIECE, WORDPIECE)
# The name each kind has inside a model directory or a SavedModel's assets.
FILE_NAMES = {SENTENCEPIECE: "spm.model", WORDPIECE: "vocab.txt"}
# What each kind is called in messages.
DESCRIPTIONS = {SENTENCEPIECE: "SentencePiece model", WORDPIECE: "WordPiece vocabulary"}
# The flag (or setting) each kind comes from.
SETTINGS = {SENTENCEPIECE: "spm_model_file", WORDPIECE: "vocab_file"}


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """A vocabulary file's kind and bytes (and where it was read, for messages)."""

    kind: str
    content: bytes
    source: str = "<vocabulary>"

    @classmethod
    def read(cls, path, kind):
        """The vocabulary at `path` as `kind`; SettingError in one line when the file is not one."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if not os.path.isfile(path):
            raise SettingFileNotFound(f"<{SETTINGS[kind]}>={path}: no such {DESCRIPTIONS[kind]}")
        # Each tokenizer checks its own layout ([CLS], [SEP], [MASK] and [UNK] where they must be), naming the file.
        if kind == SENTENCEPIECE:
            from albert_tf.text.albert_tokenizer import AlbertTokenizer

            AlbertTokenizer(str(path))
        else:
            from albert_tf.text.wordpiece_tokenizer import WordPieceTokenizer

            try:
                WordPieceTokenizer(vocab_file=str(path))
            except UnicodeDecodeError as error:
                raise SettingError(f"{path}: not a WordPiece vocab.txt (not UTF-8 text: {error})") from None
        with open(path, "rb") as f:
            return cls(kind, f.read(), str(path))

    @property
    def file_name(self):
        return FILE_NAMES[self.kind]

    @property
    def sha256(self):
        return hashlib.sha256(self.content).hexdigest()

    def tokenizer(self, lower_case=True, keep_accents=False, rewrite_quotes=False):
        """The Python tokenizer of this vocabulary with the data's settings."""
        if self.kind == SENTENCEPIECE:
            from albert_tf.text.albert_tokenizer import AlbertTokenizer

            tokenizer = AlbertTokenizer(model_proto=self.content, lower_case=lower_case, keep_accents=keep_accents,
                                        rewrite_quotes=rewrite_quotes)
            tokenizer.source = self.source
            return tokenizer
        from albert_tf.text.wordpiece_tokenizer import WordPieceTokenizer, split_vocabulary_lines

        if rewrite_quotes:
            raise SettingError(f"{self.source}: <rewrite_quotes> is a SentencePiece ALBERT's rule (Hugging Face's "
                               "AlbertTokenizer); a WordPiece vocabulary takes quotes as the text writes them")
        try:
            lines = split_vocabulary_lines(self.content.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise SettingError(f"{self.source}: not a WordPiece vocab.txt (not UTF-8 text: {error})") from None
        try:
            tokenizer = WordPieceTokenizer(pieces=lines, lower_case=lower_case,
                                           strip_accents=lower_case and not keep_accents)
        except ValueError as error:
            raise SettingError(str(error).replace("<pieces>", self.source, 1)) from None
        tokenizer.source = self.source
        return tokenizer


def tf_tokenizer(vocabulary, lower_case=True, keep_accents=False, rewrite_quotes=False):
    """The in-graph tokenizer layer of `vocabulary` with these settings (`TFAlbertTokenizer` or
    `TFWordPieceTokenizer`): the ids of `vocabulary.tokenizer(...)`, and its `special_ids`."""
    if vocabulary.kind == SENTENCEPIECE:
        from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

        return TFAlbertTokenizer(vocabulary.content, lower_case=lower_case, keep_accents=keep_accents,
                                 rewrite_quotes=rewrite_quotes)
    from albert_tf.text.tf_wordpiece_tokenizer import TFWordPieceTokenizer

    python_tokenizer = vocabulary.tokenizer(lower_case, keep_accents, rewrite_quotes)
    return TFWordPieceTokenizer(python_tokenizer.pieces, lower_case=lower_case,
                                strip_accents=python_tokenizer.strip_accents)


def write_vocabulary(vocabulary, path):
    """Writes the vocabulary's bytes to `path`: a new file with the umask's mode (not the source's), as every
    model directory's copy is made."""
    with open(path, "wb") as f:
        f.write(vocabulary.content)
