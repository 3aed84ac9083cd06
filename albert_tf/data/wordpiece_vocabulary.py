"""Training a WordPiece vocabulary in BERT's layout, with Hugging Face's `tokenizers` (a maintained library).

The file is a vocab.txt as Google's Chinese ALBERTs and BERTs ship it: [PAD] at 0, [unused1] ... [unused99],
[UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103, then the learned pieces (`##` marks a continuation). The trainer
sees the text as `WordPieceTokenizer` splits it (cleaned, CJK ideographs one per word, lowercased and accents
stripped as set), so every word it learns from is a word the tokenizer will look up. It appears only once
complete (written to a temporary name, then renamed).
"""

import os

from albert_tf.settings import SettingError, SettingFileExists
from albert_tf.text.wordpiece_tokenizer import SPECIAL_TOKENS

UNUSED_PIECES = 99  # [unused1] ... [unused99], BERT's places for pieces a user adds later


def bert_layout(learned):
    """The vocabulary's lines: BERT's special and unused pieces at BERT's ids, then `learned` in order."""
    pad, unk, cls, sep, mask = SPECIAL_TOKENS
    reserved = [pad, *(f"[unused{i}]" for i in range(1, UNUSED_PIECES + 1)), unk, cls, sep, mask]
    return reserved + [piece for piece in learned if piece not in reserved]


def train(paths, output_file, vocab_size=21128, lower_case=True, strip_accents=None, tokenize_chinese_chars=True,
          min_frequency=2, overwrite=False):
    """Trains and writes OUTPUT_FILE (a vocab.txt); returns its number of pieces.

    `vocab_size` counts BERT's 104 reserved lines too (21,128: Google's Chinese vocabulary's size).
    """
    try:
        from tokenizers import normalizers, pre_tokenizers, trainers
        from tokenizers import Tokenizer
        from tokenizers.models import WordPiece
    except ImportError:
        raise SettingError("training a WordPiece vocabulary needs Hugging Face's tokenizers: pip install "
                           "'albert_tf[wordpiece]'") from None
    from albert_tf.data.corpus_reader import CorpusStats, iter_file_lines

    reserved = len(bert_layout([]))
    if vocab_size <= reserved:
        raise SettingError(f"<vocab_size>={vocab_size}: BERT's layout reserves {reserved} lines; pass more")
    if os.path.exists(output_file) and not overwrite:
        raise SettingFileExists(f"{output_file} exists (data made with it would no longer match): choose another "
                                "<output_file> or pass <overwrite>")
    tokenizer = Tokenizer(WordPiece(unk_token=SPECIAL_TOKENS[1]))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=tokenize_chinese_chars,
        strip_accents=lower_case if strip_accents is None else strip_accents, lowercase=lower_case)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size - reserved + len(SPECIAL_TOKENS),
                                        min_frequency=min_frequency, special_tokens=list(SPECIAL_TOKENS),
                                        continuing_subword_prefix="##", show_progress=False)
    stats = CorpusStats()

    def lines():
        for path in paths:
            for line in iter_file_lines(path, stats):
                if line.strip():
                    yield line

    tokenizer.train_from_iterator(lines(), trainer=trainer)
    learned = [piece for piece, _ in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])]
    pieces = bert_layout(learned)
    if len(pieces) == reserved:
        raise ValueError(f"no text in {', '.join(paths)}: nothing to train a vocabulary on")
    directory = os.path.dirname(os.path.abspath(output_file))
    os.makedirs(directory, exist_ok=True)
    staging = os.path.join(directory, f".{os.path.basename(output_file)}.{os.getpid()}.staging")
    try:
        with open(staging, "x", encoding="utf-8") as f:
            f.write("".join(piece + "\n" for piece in pieces))
        os.replace(staging, output_file)
    finally:
        if os.path.exists(staging):
            os.remove(staging)
    return len(pieces)
