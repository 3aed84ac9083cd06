"""Chinese and Japanese text whose words a segmenter separated with spaces (jieba, MeCab -Owakati, ...), for
whole-word masking.

Chinese and Japanese put no space between words, so a vocabulary's pieces say nothing about where a word
ends, and the original masking takes every piece with a Han or kana character for a word of its own. Text a
segmenter has split into words says where they are:

  - a space next to a Chinese or Japanese character (Han, kana, CJK punctuation or a full-width form) marks a
    word boundary and is removed: `我 喜欢 自然 语言` is tokenized as `我喜欢自然语言`, the ids of the
    unsegmented sentence; a space between two other characters (two Latin words, say) stays one space;
  - a piece starts a word where it begins at the start of one of those words (or the '▁' piece alone
    before it, as SentencePiece writes a word start: `▁` `北京`); a piece that begins inside one
    continues it, so n-gram masking hides whole words. Pieces without Han or kana (Latin, digits,
    punctuation, Hangul) keep the vocabulary's own rule besides (`AlbertTokenizer.word_start_table`), as
    without segmentation. A piece that reaches across a boundary (`自然语言` for `自然 语言`) makes the two
    words one.

`join_words` removes the spaces, `split_segmented_sentences` splits a segmented paragraph into segmented
sentences (the sentence rules read the unsegmented text), `encode_segmented` gives the ids and word starts.

>>> join_words("我 喜欢 ALBERT 模型 和 deep learning 。")
('我喜欢ALBERT模型和deep learning。', [0, 1, 3, 9, 11, 12, 17, 25])
"""

import bisect
import re

import numpy as np

from albert_tf.text.albert_tokenizer import SPIECE_UNDERLINE
from albert_tf.text.sentence_splitter import HAN_KANA

# Characters a space next to which is a segmenter's, not the text's: Han and kana, CJK punctuation (。、「」)
# and full-width forms (！，（）).
_UNSPACED = re.compile(f"[{HAN_KANA}\u3000-\u303f\u30fb\uff00-\uffef]")


def join_words(text):
    """(text with the spaces next to Chinese or Japanese characters removed and every other run of whitespace
    made one space, the offsets in it where each of `text`'s whitespace-separated words starts)."""
    joined, starts, length = [], [], 0
    previous = None
    for word in text.split():
        if previous is not None and not (_UNSPACED.match(previous[-1]) or _UNSPACED.match(word[0])):
            joined.append(" ")
            length += 1
        starts.append(length)
        joined.append(word)
        length += len(word)
        previous = word
    return "".join(joined), starts


def split_segmented_sentences(paragraph, split):
    """The sentences `split` (a function of unsegmented text, such as split_sentences) finds in a segmented
    paragraph, each segmented as the paragraph was: its words separated by one space. A sentence boundary
    inside a segmenter's word (`。」` kept with the next word, say) splits the word."""
    joined, starts = join_words(paragraph)
    sentences, position = [], 0
    for sentence in split(joined):
        begin = joined.index(sentence, position)
        end = position = begin + len(sentence)
        pieces, last = [], begin
        for start in starts[bisect.bisect_right(starts, begin) : bisect.bisect_left(starts, end)]:
            if joined[start - 1] != " ":  # a removed space: put it back
                pieces.append(joined[last:start])
                last = start
        pieces.append(joined[last:end])
        sentences.append(" ".join(pieces))
    return sentences


def has_han_or_kana(piece):
    return bool(_UNSPACED.search(piece))


def unsegmented_piece_table(tokenizer):
    """bool [V]: whether a piece holds a Chinese or Japanese character (its word starts come from the
    segmentation alone)."""
    return np.array([has_han_or_kana(tokenizer.id_to_piece(i)) for i in range(tokenizer.vocab_size)], dtype=bool)


def encode_segmented(tokenizer, sentences, segmented_pieces=None):
    """[(int32 ids, bool word starts)] of segmented sentences: the ids of each sentence's `join_words` text
    (each word preprocessed as the tokenizer preprocesses a sentence: accent stripping and lowercasing work
    character by character, so these are the unsegmented sentence's ids), and whether each piece starts a
    word (the module's rule). `segmented_pieces`: `unsegmented_piece_table(tokenizer)`, passed in to compute
    it once."""
    if segmented_pieces is None:
        segmented_pieces = unsegmented_piece_table(tokenizer)
    texts, word_starts = [], []
    for sentence in sentences:
        words = sentence.split()
        joined, starts = join_words(sentence)
        kept_spaces = {start for start in starts if start and joined[start - 1] == " "}
        text, byte_starts, length = [], set(), 0
        for word, start in zip(words, starts):
            if start in kept_spaces:
                text.append(" ")
                length += 1
            byte_starts.add(length)
            preprocessed = tokenizer.preprocess(word)
            text.append(preprocessed)
            length += len(preprocessed.encode("utf-8"))
        texts.append("".join(text))
        word_starts.append(byte_starts)
    table = tokenizer.word_start_table
    encoded = []
    for proto, byte_starts in zip(tokenizer.sp.encode(texts, return_type="proto"), word_starts):
        ids, starts = [], []
        after_bare_underline = False
        for piece in proto.pieces:
            # A piece's begin is where its surface starts, the space a '▁' stands for included. After a '▁'
            # piece alone (SentencePiece's word start: `▁` `北京`), the word began with that '▁'.
            surface = piece.surface
            begins_word = (piece.begin + len(surface) - len(surface.lstrip(" ")) in byte_starts
                           and not after_bare_underline)
            after_bare_underline = piece.piece == SPIECE_UNDERLINE
            # The original tokenizer's fix-up of `<digit>,` pieces (AlbertTokenizer.encode_preprocessed).
            pieces = tokenizer._split_digit_commas([piece.id]) if tokenizer._needs_comma_split[piece.id] else [
                piece.id]
            for index, piece_id in enumerate(pieces):
                ids.append(piece_id)
                starts.append((begins_word and index == 0)
                              or bool(table[piece_id] and not segmented_pieces[piece_id]))
        encoded.append((np.array(ids, np.int32), np.array(starts, bool)))
    return encoded

