"""Entities of raw text from a tagger's scores: the rule the served token classifier applies in-graph
(`albert_tf.export_lib.serving_module.TokenClassifierServing`), `AlbertTokenClassifier.predict_entities`
applies in Python and run_tagger trains, evaluates and predicts by, so all give the same entities.

  1. Units: the text is tokenized as a whole (its pieces and their character spans: the tokenizer's
     `aligned`) and its pieces grouped into units, the things that get one tag
     each. A piece starts a unit where it begins with `▁` (a word start), where its first character is a break
     character, or where the piece before it ends with one; the text's first piece starts one too. Break
     characters: Han, kana and Hangul, CJK punctuation and full-width forms, and every punctuation mark
     (Unicode category P*); the vocabulary's unknown and control pieces count as breaks on both sides. So an
     English word is a unit (its `▁` piece and what continues it), punctuation stands alone (`Paris` `.`, as
     a word tokenizer splits it), and text without spaces -- Chinese, Japanese, a Korean word with its
     particle (`서울` `에서`) -- gets a unit per piece: an entity can start and end inside a run between spaces,
     wherever the vocabulary's pieces do. A bare `▁` piece (the space SentencePiece writes before a piece that
     has no `▁` form) starts the unit of the piece after it. In a WordPiece vocabulary a piece without `##`
     begins a word as a `▁` piece does (BERT's tokenizer already splits words at spaces, punctuation and
     each Chinese character), and the break rule is the same.
  2. Tags: a unit's tag is the argmax of the tagger's scores at its reading piece: its first piece, or the
     piece after a bare `▁` (where the unit's text is), read in the window that gives that piece the most
     context (a text longer than a window is cut into overlapping windows, as `albert_tf.text.word_pieces`
     cuts them). Training puts each unit's tag at the same piece.
  3. Entities: read from the unit tags as conlleval reads IOB2 (`entity_spans`): B-TYPE starts one;
     I-TYPE continues the entity before it when that is of its type, and starts one otherwise (after O, or
     after another type).
  4. Span: from the start of its first unit's first piece to the end of its last unit's last piece, with
     whitespace at either end trimmed: [start, end) in characters of the text (Python str indices), so
     `text[start:end]` is the entity's own text, case, accents and all.
  5. Score: the MEAN, over the entity's units, of the softmax probability of each unit's predicted tag at
     its reading piece: in (0, 1].

Training targets come the other way (`unit_tags`): a gold entity, a character span of the text, tags the
units it overlaps, B- the first and I- the rest. Where an entity's boundary falls inside a piece (the
vocabulary joined the entity's last character with the next word's first), the units cannot say it exactly:
the entity is learned as the units covering it, and `unit_tags` counts such entities.
"""

import dataclasses
import re
import unicodedata

import numpy as np

from albert_tf.text.albert_tokenizer import SPIECE_UNDERLINE
from albert_tf.text.sentence_splitter import HAN_KANA, HANGUL
from albert_tf.text.wordpiece_tokenizer import WordPieceTokenizer

OUTSIDE = "O"

# Characters between which a unit ends whatever the spaces say: Chinese, Japanese and Korean letters, CJK
# punctuation (。、「」), the katakana middle dot and full-width forms (！，（）). Punctuation elsewhere: by category.
_BREAK = re.compile(f"[{HAN_KANA}{HANGUL}\u3000-\u303f\u30fb\uff00-\uffef]")


def entity_spans(tags):
    """The entities of one sentence's IOB2 tags, as conlleval reads them: (type, start, end) tuples, `end`
    exclusive, in order. `tags` may be malformed (an I- without B-, a type change inside an entity): an entity
    starts at B-TYPE, at I-TYPE after O or at the start, and at I-TYPE after a tag of another type; it continues
    over I- tags of its type. Types hold everything after the first hyphen."""
    spans = []
    entity_type, start = None, None
    for index, tag in enumerate(tags):
        tag_type = None if tag == OUTSIDE else tag[2:]
        continues = tag_type is not None and tag[0] == "I" and tag_type == entity_type
        if entity_type is not None and not continues:
            spans.append((entity_type, start, index))
            entity_type = None
        if tag_type is not None and not continues:
            entity_type, start = tag_type, index
    if entity_type is not None:
        spans.append((entity_type, start, len(tags)))
    return spans


def entity_types(labels):
    """The entity types of IOB2 tag names, sorted; ValueError naming the names that are not O, B-TYPE or
    I-TYPE (a head whose names say no entity types, such as Hugging Face's LABEL_0, LABEL_1, ...)."""
    bad = [label for label in labels if label != OUTSIDE and not (
        isinstance(label, str) and len(label) > 2 and label[0] in "BI" and label[1] == "-")]
    if bad or not labels:
        raise ValueError(f"tag names {bad or list(labels)} are not IOB2 tags (O, B-TYPE, I-TYPE): entities cannot be "
                         "read from them; give the token classifier IOB2 label names (albert_tf.json's label_names, "
                         "Hugging Face's id2label)")
    return sorted({label[2:] for label in labels if label != OUTSIDE})


def is_break_character(character):
    """Whether a unit ends before and after `character` (the module's rule 1)."""
    return bool(_BREAK.match(character)) or unicodedata.category(character).startswith("P")


@dataclasses.dataclass(frozen=True)
class UnitTables:
    """Per vocabulary id, what rule 1 reads of its piece (bool arrays [vocabulary size]); the served model
    gathers the same tables in-graph.

    bare: the piece is `▁` alone. opens: it starts a unit whatever comes before it (it begins with `▁`, its
    first character is a break character, or it is an unknown or control piece). closes: the piece after it
    starts a unit (its last character is a break character, or it is an unknown or control piece).
    """

    bare: np.ndarray
    opens: np.ndarray
    closes: np.ndarray


def unit_tables(tokenizer):
    """The `UnitTables` of a Python tokenizer's vocabulary: an `AlbertTokenizer`'s SentencePiece pieces, or a
    `WordPieceTokenizer`'s, where a piece without `##` begins a word as one with `▁` does in SentencePiece (no
    piece is a bare `▁`; the special lines are control pieces)."""
    if isinstance(tokenizer, WordPieceTokenizer):
        return _wordpiece_unit_tables(tokenizer)
    sentence_piece = tokenizer.sp
    size = sentence_piece.get_piece_size()
    bare, opens, closes = (np.zeros(size, bool) for _ in range(3))
    for piece_id in range(size):
        if sentence_piece.is_unknown(piece_id) or sentence_piece.is_control(piece_id):
            opens[piece_id] = closes[piece_id] = True
            continue
        piece = sentence_piece.id_to_piece(piece_id)
        text = piece.lstrip(SPIECE_UNDERLINE)
        bare[piece_id] = bool(piece) and not text
        opens[piece_id] = piece.startswith(SPIECE_UNDERLINE) or (bool(text) and is_break_character(text[0]))
        closes[piece_id] = bool(text) and is_break_character(text[-1])
    return UnitTables(bare, opens, closes)


def _wordpiece_unit_tables(tokenizer):
    size = tokenizer.vocab_size
    bare, opens, closes = (np.zeros(size, bool) for _ in range(3))
    special = set(dataclasses.astuple(tokenizer.special_ids))
    for piece_id in range(size):
        if piece_id in special:
            opens[piece_id] = closes[piece_id] = True
            continue
        text, starts_word = tokenizer.piece_as_word(piece_id)
        opens[piece_id] = starts_word or (bool(text) and is_break_character(text[0]))
        closes[piece_id] = bool(text) and is_break_character(text[-1])
    return UnitTables(bare, opens, closes)


def unit_first_pieces(ids, tables):
    """The index of each unit's first piece among a text's piece `ids` (rule 1)."""
    ids = np.asarray(ids, np.int64)
    if not len(ids):
        return []
    before = np.concatenate([[0], ids[:-1]])
    starts = ~tables.bare[before] & (tables.opens[ids] | tables.closes[before])
    starts[0] = True
    return np.flatnonzero(starts).tolist()


def reading_pieces(ids, first_pieces, tables):
    """The piece each unit's tag is read at (rule 2): its first, or the one after a bare `▁` that starts it."""
    bare = tables.bare[np.asarray(ids, np.int64)] if len(ids) else np.zeros(0, bool)
    ends = [*first_pieces[1:], len(ids)]
    return [first + 1 if end - first > 1 and bare[first] else first for first, end in zip(first_pieces, ends)]


@dataclasses.dataclass(frozen=True)
class TextUnits:
    """A text's pieces grouped into units (rule 1).

    text: the raw text. aligned: its `piece_alignment.AlignedTokens` (ids and character spans). first_pieces:
    each unit's first piece; reading_pieces: the piece its tag is read at (and trained at).
    """

    text: str
    aligned: object
    first_pieces: list
    reading_pieces: list

    @property
    def last_pieces(self):
        return [end - 1 for end in [*self.first_pieces[1:], len(self.aligned.ids)]]

    def spans(self):
        """Each unit's [start, end) in the text, whitespace at either end trimmed (empty for a unit of
        whitespace alone)."""
        return [_trimmed(self.text, self.aligned.starts[first], self.aligned.ends[last])
                for first, last in zip(self.first_pieces, self.last_pieces)]


def text_units(tokenizer, text, tables=None):
    """The `TextUnits` of `text` under a Python tokenizer (its casing, accents and quote rule); `tables`: its
    vocabulary's `unit_tables` (made when not given; pass them for many texts)."""
    tables = tables if tables is not None else unit_tables(tokenizer)
    aligned = tokenizer.aligned(text)
    firsts = unit_first_pieces(aligned.ids, tables)
    return TextUnits(text, aligned, firsts, reading_pieces(aligned.ids, firsts, tables))


def _trimmed(text, start, end):
    """[start, end) without the whitespace at either end of text[start:end] (empty: (start, start))."""
    end = max(start, end)
    span = text[start:end]
    stripped = span.lstrip()
    start += len(span) - len(stripped)
    return start, max(start, start + len(stripped.rstrip()))


def unit_tags(units, entities, label_ids):
    """(a tag id per unit, the entities the units cannot hold exactly) for gold `entities`, (type, start, end)
    character spans of `units.text`: each entity tags the units it overlaps, B-TYPE the first and I-TYPE the
    rest; the others are O. `label_ids`: {tag name: id}. An entity is not held exactly where a unit it overlaps
    reaches outside it (a boundary inside a piece) or where a unit was already another entity's (two entities
    in one unit: the first keeps it; one left without a unit is lost)."""
    spans = units.spans()
    tags = [label_ids[OUTSIDE]] * len(spans)
    owner = [None] * len(spans)
    inexact = []
    for number, (entity_type, start, end) in enumerate(sorted(entities, key=lambda entity: entity[1:])):
        covered = [index for index, (unit_start, unit_end) in enumerate(spans)
                   if unit_start < end and start < unit_end]
        free = [index for index in covered if owner[index] is None]
        if len(free) != len(covered) or not covered or spans[covered[0]][0] != start or spans[covered[-1]][1] != end:
            inexact.append((entity_type, start, end))
        for position, index in enumerate(free):
            owner[index] = number
            tags[index] = label_ids[("B-" if position == 0 else "I-") + entity_type]
    return tags, inexact


def text_entities(units, unit_logits, label_names):
    """The entities of `units.text` as dicts {"text", "type", "start", "end", "score"} (rules 3-5), given
    [units, labels], each unit's scores at its reading piece, and the IOB2 tag names (index = tag id)."""
    unit_logits = np.asarray(unit_logits, np.float64).reshape(len(units.first_pieces), len(label_names))
    probabilities = np.exp(unit_logits - unit_logits.max(axis=-1, keepdims=True))
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    tag_ids = probabilities.argmax(axis=-1)
    unit_probabilities = probabilities[np.arange(len(tag_ids)), tag_ids]
    aligned, text, last_pieces = units.aligned, units.text, units.last_pieces
    entities = []
    for entity_type, first_unit, end_unit in entity_spans([label_names[tag_id] for tag_id in tag_ids]):
        start, end = _trimmed(text, aligned.starts[units.first_pieces[first_unit]],
                              aligned.ends[last_pieces[end_unit - 1]])
        entities.append({"text": text[start:end], "type": entity_type, "start": start, "end": end,
                         "score": float(unit_probabilities[first_unit:end_unit].mean())})
    return entities


def words_text(words):
    """(a text of `words`, each word's [start, end) in it): the words joined by one space, except that no space
    goes between two Chinese or Japanese characters (`segmented_text.join_words`: `我 喜欢 ALBERT` is
    `我喜欢ALBERT`); words holding whitespace themselves are joined by single spaces."""
    from albert_tf.text.segmented_text import join_words

    if all(word and not any(character.isspace() for character in word) for word in words):
        text, starts = join_words(" ".join(words))
    else:
        text, starts, position = " ".join(words), [], 0
        for word in words:
            starts.append(position)
            position += len(word) + 1
    return text, [(start, start + len(word)) for start, word in zip(starts, words)]


def span_entities(tags, spans):
    """The entities of IOB2 `tags` (one per token; conlleval's reading, `entity_spans`) as (type, start, end)
    character spans, given each token's [start, end)."""
    return [(entity_type, spans[first][0], spans[end - 1][1]) for entity_type, first, end in entity_spans(tags)]


def span_tags(token_spans, entities, tokens=None):
    """IOB2 tags, one per token, for entities given as [(type, start, end)] character spans of the text that
    the tokens' [start, end) `token_spans` are in (`words_text`'s, `tagged_texts.sentence_text`'s): the
    inverse of `span_entities`, to write predicted entities back onto words or a file's tokens.
      - A token overlapping an entity's span (sharing a character with it) belongs to that entity; to the
        first one in `entities` where it overlaps two. A token overlapping none is O.
      - A token of whitespace alone (a KLUE-NER space; told by `tokens`, the sentence's tokens: without them
        no token is taken for one) belongs to the first entity it overlaps only where the nearest tokens
        that are not whitespace on both sides belong to that entity too; else it is O.
      - A token is B-TYPE where the token before it does not belong to its entity (the entity's first token),
        else I-TYPE."""
    if tokens is not None and len(tokens) != len(token_spans):
        raise ValueError(f"{len(token_spans)} token spans but {len(tokens)} tokens")
    blank = [tokens is not None and not tokens[index].strip() for index in range(len(token_spans))]

    def first_overlapping(span):
        start, end = span
        return next((number for number, (_, entity_start, entity_end) in enumerate(entities)
                     if start < entity_end and entity_start < end), None)

    entities = list(entities)
    owners = [None if blank[index] else first_overlapping(span) for index, span in enumerate(token_spans)]
    for index, span in enumerate(token_spans):
        if blank[index]:
            owner = first_overlapping(span)
            before = next((owners[i] for i in reversed(range(index)) if not blank[i]), None)
            after = next((owners[i] for i in range(index + 1, len(token_spans)) if not blank[i]), None)
            owners[index] = owner if owner is not None and before == owner == after else None
    tags = []
    for index, owner in enumerate(owners):
        if owner is None:
            tags.append(OUTSIDE)
        else:
            prefix = "I" if index > 0 and owners[index - 1] == owner else "B"
            tags.append(f"{prefix}-{entities[owner][0]}")
    return tags
