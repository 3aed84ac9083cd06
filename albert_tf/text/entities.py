"""Entities of raw text from a tagger's scores: the rule the served token classifier applies in-graph
(`albert_tf.export_lib.serving_module.TokenClassifierServing`) and `AlbertTokenClassifier.predict_entities`
applies in Python, so both give the same entities.

  1. Words: the text is tokenized as a whole (its pieces and their character spans:
     `piece_alignment.tokenize_with_alignment`); a piece that starts with `▁`, and the text's first piece,
     starts a word. Training tokenizes each word on its own, so every word starts with such a piece there too.
  2. Tags: a word's tag is the argmax of the tagger's scores at its FIRST piece (where training puts the
     loss), read in the window that gives that piece the most context (a text longer than a window is cut
     into overlapping windows, as `albert_tf.text.word_pieces` cuts a long sentence).
  3. Entities: read from the word tags as conlleval reads IOB2 (`entity_spans`): B-TYPE starts one;
     I-TYPE continues the entity before it when that is of its type, and starts one otherwise (after O, or
     after another type).
  4. Span: from the start of its first word's first piece to the end of its last word's last piece, with
     whitespace at either end trimmed: [start, end) in characters of the text (Python str indices), so
     `text[start:end]` is the entity's own text, case, accents and all.
  5. Score: the MEAN, over the entity's words, of the softmax probability of each word's predicted tag at
     its first piece: in (0, 1].
"""

import numpy as np

from albert_tf.text.albert_tokenizer import SPIECE_UNDERLINE

OUTSIDE = "O"


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


def starts_word(piece):
    """Whether a piece (its text) starts a word: it begins with `▁`."""
    return piece.startswith(SPIECE_UNDERLINE)


def word_first_pieces(pieces):
    """The index of each word's first piece among a text's `pieces` (their texts): the pieces that start a
    word, and the first piece whatever it is."""
    return [index for index, piece in enumerate(pieces) if index == 0 or starts_word(piece)]


def word_pieces(ids, first_pieces):
    """The piece ids of each word, given the index of each word's first piece."""
    return [ids[first:end] for first, end in zip(first_pieces, [*first_pieces[1:], len(ids)])]


def text_entities(text, aligned, first_pieces, word_logits, label_names):
    """The entities of `text` as dicts {"text", "type", "start", "end", "score"} (the module's rule).

    Args:
      text: the raw text (str).
      aligned: its `piece_alignment.AlignedTokens` (ids and character spans).
      first_pieces: each word's first piece (`word_first_pieces`).
      word_logits: [words, labels], each word's scores at its first piece.
      label_names: the IOB2 tag names, index = tag id.
    """
    word_logits = np.asarray(word_logits, np.float64).reshape(len(first_pieces), len(label_names))
    probabilities = np.exp(word_logits - word_logits.max(axis=-1, keepdims=True))
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    tag_ids = probabilities.argmax(axis=-1)
    word_probabilities = probabilities[np.arange(len(tag_ids)), tag_ids]
    last_pieces = [end - 1 for end in [*first_pieces[1:], len(aligned.ids)]]
    entities = []
    for entity_type, first_word, end_word in entity_spans([label_names[tag_id] for tag_id in tag_ids]):
        start = aligned.starts[first_pieces[first_word]]
        end = max(start, aligned.ends[last_pieces[end_word - 1]])
        span = text[start:end]
        start += len(span) - len(span.lstrip())
        end = max(start, end - (len(span) - len(span.rstrip())))
        entities.append({"text": text[start:end], "type": entity_type, "start": start, "end": end,
                         "score": float(word_probabilities[first_word:end_word].mean())})
    return entities
