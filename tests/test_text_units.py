"""The unit rule of entity tagging (`albert_tf.text.entities`), checked by hand on a vocabulary written here:
which pieces start a unit (a word, a punctuation mark, a piece of text without spaces), where its tag is read,
how gold entities (character spans) become unit tags, and how predicted tags become entities; in English,
Chinese, Japanese and Korean."""

import numpy as np
import pytest

from albert_tf.text.entities import (reading_pieces, span_entities, span_tags, text_entities, unit_first_pieces,
                                     unit_tables, unit_tags, words_text, TextUnits)
from albert_tf.text.piece_alignment import AlignedTokens

PIECES = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", "▁", "▁john", "▁lives", "▁in", "▁par", "is", ".", "▁u",
          "s", "北京", "大学", "東京", "タワー", "は", "▁서울", "에서", "▁만났다", "，", "▁2004", "年"]
LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


class SentencePieces:
    """What unit_tables reads of an AlbertTokenizer's SentencePieceProcessor."""

    def get_piece_size(self):
        return len(PIECES)

    def id_to_piece(self, piece_id):
        return PIECES[piece_id]

    def is_unknown(self, piece_id):
        return PIECES[piece_id] == "<unk>"

    def is_control(self, piece_id):
        return PIECES[piece_id] in ("<pad>", "[CLS]", "[SEP]", "[MASK]")


class Tokenizer:
    sp = SentencePieces()


TABLES = unit_tables(Tokenizer())


def units_of(pieces):
    """The units of a piece sequence, as lists of piece texts."""
    ids = [PIECES.index(piece) for piece in pieces]
    firsts = unit_first_pieces(ids, TABLES)
    return [pieces[first:end] for first, end in zip(firsts, [*firsts[1:], len(ids)])]


@pytest.mark.parametrize("pieces, units", [
    # English: a word is its `▁` piece and what continues it; punctuation stands alone, a word after it too.
    (["▁john", "▁lives", "▁in", "▁par", "is", "."], [["▁john"], ["▁lives"], ["▁in"], ["▁par", "is"], ["."]]),
    (["▁u", ".", "s", "."], [["▁u"], ["."], ["s"], ["."]]),
    # Chinese and Japanese: a unit per piece; a bare `▁` belongs to the piece after it.
    (["▁", "北京", "大学", "，", "▁", "東京", "タワー", "は"],
     [["▁", "北京"], ["大学"], ["，"], ["▁", "東京"], ["タワー"], ["は"]]),
    # Korean: a particle after a name is a unit of its own, so `서울` can be an entity inside `서울에서`.
    (["▁서울", "에서", "▁만났다", "."], [["▁서울"], ["에서"], ["▁만났다"], ["."]]),
    # Digits next to Han split; an unknown piece is a unit of its own whatever surrounds it.
    (["▁2004", "年", "<unk>", "is", "▁par", "<unk>"], [["▁2004"], ["年"], ["<unk>"], ["is"], ["▁par"], ["<unk>"]]),
    # A text's first piece starts a unit even when it continues a word.
    (["is", "▁john"], [["is"], ["▁john"]]),
])
def test_units_are_words_punctuation_and_pieces_of_text_without_spaces(pieces, units):
    assert units_of(pieces) == units


def test_a_units_tag_is_read_after_the_bare_space_piece_that_starts_it():
    ids = [PIECES.index(piece) for piece in ["▁", "北京", "大学", "▁"]]
    firsts = unit_first_pieces(ids, TABLES)
    assert firsts == [0, 2, 3] and reading_pieces(ids, firsts, TABLES) == [1, 2, 3]  # a trailing `▁` reads itself


def aligned_units(text, pieces, spans):
    ids = [PIECES.index(piece) for piece in pieces]
    firsts = unit_first_pieces(ids, TABLES)
    aligned = AlignedTokens(ids, [start for start, _ in spans], [end for _, end in spans])
    return TextUnits(text, aligned, firsts, reading_pieces(ids, firsts, TABLES))


CHINESE = aligned_units("北京大学，東京タワーは", ["▁", "北京", "大学", "，", "東京", "タワー", "は"],
                        [(0, 0), (0, 2), (2, 4), (4, 5), (5, 7), (7, 10), (10, 11)])
KOREAN = aligned_units("서울에서 만났다.", ["▁서울", "에서", "▁만났다", "."], [(0, 2), (2, 4), (4, 8), (8, 9)])
IDS = {label: index for index, label in enumerate(LABELS)}


def test_gold_entities_tag_the_units_they_overlap():
    assert CHINESE.spans() == [(0, 2), (2, 4), (4, 5), (5, 7), (7, 10), (10, 11)]
    tags, inexact = unit_tags(CHINESE, [("LOC", 0, 2), ("LOC", 5, 10)], IDS)
    assert [LABELS[tag] for tag in tags] == ["B-LOC", "O", "O", "B-LOC", "I-LOC", "O"] and inexact == []
    # A boundary inside a piece (`北京大` of `北京` `大学`): the entity is learned as the units covering it, and
    # counted; a second entity in the same unit has none left.
    tags, inexact = unit_tags(CHINESE, [("LOC", 0, 3), ("PER", 3, 4)], IDS)
    assert [LABELS[tag] for tag in tags] == ["B-LOC", "I-LOC", "O", "O", "O", "O"]
    assert inexact == [("LOC", 0, 3), ("PER", 3, 4)]
    tags, _ = unit_tags(KOREAN, [("LOC", 0, 2)], IDS)
    assert [LABELS[tag] for tag in tags] == ["B-LOC", "O", "O", "O"]


def test_predicted_unit_tags_become_entities_with_the_units_character_spans():
    logits = np.full((6, len(LABELS)), -5.0)
    for unit, tag in enumerate(["B-LOC", "I-LOC", "O", "B-PER", "I-LOC", "I-LOC"]):
        logits[unit, LABELS.index(tag)] = 5.0
    entities = text_entities(CHINESE, logits, LABELS)
    # conlleval's reading: I-LOC after B-PER starts a LOC, which the next I-LOC continues.
    assert [(entity["type"], entity["text"], entity["start"], entity["end"]) for entity in entities] == [
        ("LOC", "北京大学", 0, 4), ("PER", "東京", 5, 7), ("LOC", "タワーは", 7, 11)]
    assert all(0.99 < entity["score"] <= 1 for entity in entities)


def test_words_become_a_text_and_tags_become_spans_and_back():
    text, spans = words_text(["我", "喜欢", "ALBERT", "模型", "和", "deep", "learning", "。"])
    assert text == "我喜欢ALBERT模型和deep learning。"
    assert [text[start:end] for start, end in spans] == ["我", "喜欢", "ALBERT", "模型", "和", "deep", "learning", "。"]
    tags = ["O", "O", "B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O"]
    entities = span_entities(tags, spans)
    assert [text[start:end] for _, start, end in entities] == ["ALBERT模型", "deep learning"]
    assert span_tags(spans, entities) == tags
    # An entity that ends inside a word tags the whole word.
    assert span_tags(spans, [("LOC", 1, 2)]) == ["O", "B-LOC", "O", "O", "O", "O", "O", "O"]
    text, spans = words_text(["New York", "is", "big"])  # a word holding a space
    assert text == "New York is big" and spans == [(0, 8), (9, 11), (12, 15)]
