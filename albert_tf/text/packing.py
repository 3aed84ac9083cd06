"""Packing token ids into model inputs: [CLS] A [SEP] (B [SEP]), the original way.

Pairs that do not fit lose tokens from the end of the longer segment, one at a
time (the original `_truncate_seq_pair`); `truncated_lengths` is its closed form,
shared by the Python packing here and the in-graph packing of exported models.
"""

import numpy as np

from albert_tf.settings import NumberRange
from albert_tf.text.special_ids import PADDING_ID

# The encoder's inputs, the three arrays packing makes (the names of TF Hub's BERT encoders).
ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")

# The shortest sequence that holds any text: [CLS], a token, [SEP].
SHORTEST_SEQUENCE = 3


def check_sequence_length(value, name="max_seq_length", positions=None):
    """`value`, or SettingError naming setting `name` when it is no length a sequence of text can have (or, given
    a model's `positions`, more than it has position embeddings for)."""
    within = NumberRange(SHORTEST_SEQUENCE, positions, integer=True)
    why = "room for [CLS], a token and [SEP]" + ("; at most the model's max_position_embeddings" if positions else "")
    return within.check(name, value, why=why)


def truncated_lengths(length_a, length_b, budget):
    """Lengths after repeatedly trimming the longer segment (B on ties) until length_a + length_b <= budget."""
    excess = length_a + length_b - budget
    if excess <= 0:
        return length_a, length_b
    longer, shorter = max(length_a, length_b), min(length_a, length_b)
    if longer - excess >= shorter:
        return (length_a - excess, length_b) if length_a > length_b else (length_a, length_b - excess)
    return (budget + 1) // 2, budget // 2


def pack(ids_a, ids_b, max_seq_length, special_ids):
    """(input_word_ids, input_mask, input_type_ids) int32 arrays of length max_seq_length; [CLS] and [SEP] are
    `special_ids`' (the tokenizer's)."""
    cls, sep = special_ids.cls, special_ids.sep
    if ids_b is None:
        ids_a = list(ids_a)[: max_seq_length - 2]
        tokens, types = [cls] + ids_a + [sep], [0] * (len(ids_a) + 2)
    else:
        length_a, length_b = truncated_lengths(len(ids_a), len(ids_b), max_seq_length - 3)
        tokens = [cls] + list(ids_a[:length_a]) + [sep] + list(ids_b[:length_b]) + [sep]
        types = [0] * (length_a + 2) + [1] * (length_b + 1)
    word_ids = np.full(max_seq_length, PADDING_ID, np.int32)
    type_ids = np.zeros(max_seq_length, np.int32)
    word_ids[: len(tokens)] = tokens
    type_ids[: len(types)] = types
    return word_ids, (np.arange(max_seq_length) < len(tokens)).astype(np.int32), type_ids


def pack_batch(tokenizer, texts, texts_b=None, max_seq_length=128):
    """Raw strings (and optional second segments; "" = none) -> the encoder's input dict (int32 numpy)."""
    ids_a = tokenizer.encode_batch(texts)
    # As in exported models: an empty second segment means a single-segment input.
    ids_b = [tokenizer.encode(b) if b else None for b in texts_b] if texts_b is not None else [None] * len(ids_a)
    rows = [pack(a, b, max_seq_length, tokenizer.special_ids) for a, b in zip(ids_a, ids_b)]
    return {
        "input_word_ids": np.stack([r[0] for r in rows]).astype(np.int32),
        "input_mask": np.stack([r[1] for r in rows]).astype(np.int32),
        "input_type_ids": np.stack([r[2] for r in rows]).astype(np.int32),
    }
