"""In-graph packing of raw text into the encoder's inputs: [CLS] A [SEP] (B [SEP]).

TensorFlow ops only (TF Serving runs them), giving the ids of the Python
`albert_tf.text.packing`: pairs truncated the original way (the longer segment
loses tokens from its end). Used by the exported preprocessing and serving
SavedModels and by the Keras `AlbertPreprocessor` layer.
"""

import tensorflow as tf

from albert_tf.text.special_ids import PADDING_ID

# Characters tokenized per text at most: a piece covers at least one character,
# so this is far beyond any max_seq_length for text with words in it, and it
# bounds the work a huge request causes.
MAX_CHARACTERS = 20_000

TEXT_SPEC = tf.TensorSpec([None], tf.string, name="text")
TEXT_B_SPEC = tf.TensorSpec([None], tf.string, name="text_b")
# The default of `text_b` in every raw-text signature: no second segments. TF
# Serving fills it in when a request leaves text_b out (SignatureDef.defaults).
NO_SECOND_SEGMENTS = tf.constant([], tf.string)


def clean_text(texts):
    """Texts cut to MAX_CHARACTERS characters; a text that is not valid UTF-8 fails the request.

    Guessing what invalid bytes meant would answer a different question than the
    client asked (they used to become U+FFFD and then vanish in tokenization), so
    the request fails with INVALID_ARGUMENT and a message that says why.
    """
    valid = tf.equal(tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="ignore"), texts)
    check = tf.debugging.Assert(
        tf.reduce_all(valid),
        ["albert_tf: input text is not valid UTF-8; invalid rows:", tf.reshape(tf.where(~valid), [-1])], summarize=10)
    with tf.control_dependencies([check]):
        return tf.strings.substr(texts, 0, MAX_CHARACTERS, unit="UTF8_CHAR")


def second_segments(text, text_b):
    """(text_b with one string per text, has_b [batch] bool). An empty `text_b` means none."""
    text_b = tf.cond(tf.equal(tf.size(text_b), 0), lambda: tf.fill(tf.shape(text), ""), lambda: text_b)
    tf.debugging.assert_equal(tf.size(text_b), tf.size(text),
                              message="text_b must be left out (or empty) or hold one string per text")
    return text_b, tf.not_equal(text_b, "")


def split_batch(ragged, batch):
    """Rows [0, batch) and [batch, 2 * batch) of a ragged tensor (both segments tokenized in one call)."""
    return ragged[:batch], ragged[batch:]


def pack(ids_a, ids_b, has_b, max_seq_length, special_ids):
    """Ragged ids of both segments [batch, (n)] -> the dense int32 inputs [batch, max_seq_length].

    Rows where `has_b` is false are single segments ([CLS] A [SEP]); the others
    are [CLS] A [SEP] B [SEP], truncated like `packing.truncated_lengths`. [CLS] and [SEP] are `special_ids`'
    (the tokenizer's).
    """
    length_a = tf.cast(ids_a.row_lengths(), tf.int32)
    length_b = tf.where(has_b, tf.cast(ids_b.row_lengths(), tf.int32), 0)
    budget = tf.where(has_b, max_seq_length - 3, max_seq_length - 2)
    keep_a, keep_b = truncated_lengths(length_a, length_b, budget)
    # max_seq_length may be a tensor (bert_pack_inputs' seq_length): a shape built from tensors.
    shape = tf.stack([tf.cast(ids_a.nrows(), tf.int32), tf.cast(max_seq_length, tf.int32)])
    a = tf.cast(ids_a[:, :max_seq_length].to_tensor(0, shape=shape), tf.int32)
    b = tf.cast(ids_b[:, :max_seq_length].to_tensor(0, shape=shape), tf.int32)

    positions = tf.range(max_seq_length)[None, :]
    keep_a, keep_b, has_b = keep_a[:, None], keep_b[:, None], has_b[:, None]
    b_start = keep_a + 2
    length = tf.where(has_b, b_start + keep_b + 1, keep_a + 2)
    in_a = (positions >= 1) & (positions <= keep_a)
    in_b = has_b & (positions >= b_start) & (positions < b_start + keep_b)
    a_shifted = tf.concat([tf.zeros_like(a[:, :1]), a[:, :-1]], axis=1)  # a[p - 1] at p
    b_index = tf.clip_by_value(positions - b_start, 0, max_seq_length - 1)
    b_shifted = tf.gather(b, b_index, batch_dims=1)  # b[p - b_start] at p
    in_sequence = positions < length
    word_ids = tf.where(positions == 0, special_ids.cls, tf.where(in_a, a_shifted, tf.where(
        in_b, b_shifted, tf.where(in_sequence, special_ids.sep, PADDING_ID))))
    return {
        "input_word_ids": word_ids,
        "input_mask": tf.cast(in_sequence, tf.int32),
        "input_type_ids": tf.cast(has_b & (positions >= b_start) & in_sequence, tf.int32),
    }


def truncated_lengths(length_a, length_b, budget):
    """`albert_tf.text.packing.truncated_lengths`, vectorized."""
    excess = length_a + length_b - budget
    longer, shorter = tf.maximum(length_a, length_b), tf.minimum(length_a, length_b)
    trim_longer_only = longer - excess >= shorter
    a_longer = length_a > length_b
    a = tf.where(excess <= 0, length_a,
                 tf.where(trim_longer_only, tf.where(a_longer, length_a - excess, length_a), (budget + 1) // 2))
    b = tf.where(excess <= 0, length_b,
                 tf.where(trim_longer_only, tf.where(a_longer, length_b, length_b - excess), budget // 2))
    return a, b


def encode_text(tokenizer, text, text_b, max_seq_length):
    """Raw text (and second segments) -> the encoder's input dict; both segments tokenized in one call by
    `tokenizer` (an in-graph tokenizer layer: its `special_ids` pack them)."""
    text_b, has_b = second_segments(text, text_b)
    ids = tokenizer(clean_text(tf.concat([text, text_b], axis=0)))
    ids_a, ids_b = split_batch(ids, tf.shape(text)[0])
    return pack(ids_a, ids_b, has_b, max_seq_length, tokenizer.special_ids)
