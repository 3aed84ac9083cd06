"""Token ids with byte offsets into the raw strings, in-graph: what a served SQuAD model needs to
return its answer as the context's own text (its case, accents and spacing), not as normalized pieces.

`tokenize_with_offsets` is the in-graph twin of `albert_tf.tasks.squad.tokenize_with_alignment`
(a test checks they agree on every token): the ids of `TFAlbertTokenizer`, and for each id the
[start, end) of the raw text it came from, in bytes.

How: the tokenizer's one op gives no offsets, so this path preprocesses with TensorFlow's string
ops (the same steps, from the same character classes: `_preprocess`) and tokenizes with
tensorflow-text's `SentencepieceTokenizer`, whose `tokenize_with_offsets` gives offsets into that
*normalized* text (whitespace collapsed, quotes replaced where the tokenizer's `rewrite_quotes`
says so, accents stripped, lowercased). Each raw character is normalized on its own to learn how
many normalized bytes it produced (the steps that look at neighbours, whitespace runs and quote
pairs, are decided from the neighbours directly); characters that produce nothing (dropped
combining marks, the rest of a whitespace run, a replaced pair's second quote) widen the span of
the character before them, as in the Python alignment. A normalized offset then maps to the raw
span of the character that produced it.

That SentencePiece op breaks exact ties between segmentations of equal score (`00` + `0`
against `0` + `00`) its own way, so on such a tie its ids can differ from the tokenizer's, as
they did before the tokenizer became one op.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.text.albert_tokenizer import SPIECE_UNDERLINE
from albert_tf.text.preprocessing import combining_codepoints, re2_class, whitespace_codepoints


def tokenize_with_offsets(tokenizer, texts):
    """(ids, starts, ends), ragged [batch, (tokens)]: `tokenizer(texts)` and byte offsets into `texts`.

    Args:
      tokenizer: a `TFAlbertTokenizer`.
      texts: [batch] valid UTF-8 strings (`albert_tf.text.tf_packing.clean_text` makes them so).
    """
    sentencepiece = tf_text.SentencepieceTokenizer(model=tokenizer.model_proto, out_type=tf.int32)
    normalized = _preprocess(tokenizer, texts)
    pieces, piece_begins, piece_ends = sentencepiece.tokenize_with_offsets(normalized)
    ids, begins, ends = _split_digit_commas_with_offsets(tokenizer, sentencepiece, pieces, piece_begins, piece_ends)
    owners = _normalized_owners(tokenizer, texts)
    starts, ends = _raw_offsets(owners, begins, ends, tf.strings.length(normalized), tf.strings.length(texts))
    return ids, starts, ends


def _preprocess(tokenizer, texts):
    """`preprocess_text` with TensorFlow's string ops, by the tokenizer's switches."""
    texts = tf.strings.regex_replace(texts, re2_class(whitespace_codepoints()) + "+", " ")
    texts = tf.strings.regex_replace(texts, "^ | $", "")
    if tokenizer.rewrite_quotes:
        texts = tf.strings.regex_replace(texts, "``|''", '"')
    if not tokenizer.keep_accents:
        texts = tf.strings.regex_replace(tf_text.normalize_utf8(texts, "NFKD"), re2_class(combining_codepoints()), "")
    if tokenizer.lower_case:
        texts = tf.strings.lower(texts, encoding="utf-8")
    return texts


def _split_digit_commas_with_offsets(tokenizer, sentencepiece, pieces, begins, ends):
    """The tokenizer's `<digit>,` split, with normalized offsets per resulting id.

    A split piece's ids share its span from the end, each taking its own text's length (the
    comma the last byte), as `squad.tokenize_with_alignment` does.
    """
    one_per_row = tf.RaggedTensor.from_row_lengths(pieces.flat_values, tf.ones_like(pieces.flat_values, tf.int64),
                                                   validate=False)
    per_piece = tokenizer.split_digit_commas(one_per_row)  # [pieces, (ids of that piece)]
    ids = tf.RaggedTensor.from_row_splits(per_piece, pieces.row_splits, validate=False).merge_dims(1, 2)

    flat_ids = per_piece.flat_values
    piece_of = per_piece.value_rowids()
    text_lengths = tf.strings.length(tf.strings.regex_replace(sentencepiece.id_to_string(flat_ids),
                                                              SPIECE_UNDERLINE, ""))
    text_lengths = tf.cast(text_lengths, tf.int64)
    # suffix[j]: text length of this id and the ones after it within its piece.
    suffix = tf.cumsum(text_lengths, reverse=True)
    suffix -= tf.gather(tf.concat([suffix, [0]], 0), tf.gather(per_piece.row_limits(), piece_of))
    begin = tf.gather(tf.cast(begins.flat_values, tf.int64), piece_of)
    end = tf.gather(tf.cast(ends.flat_values, tf.int64), piece_of)
    first = tf.equal(tf.range(tf.size(flat_ids, out_type=tf.int64)), tf.gather(per_piece.row_starts(), piece_of))
    id_begins = tf.where(first, begin, tf.maximum(begin, end - suffix))
    id_ends = tf.maximum(begin, end - (suffix - text_lengths))
    return (ids, ids.with_flat_values(id_begins), ids.with_flat_values(id_ends))


def _row_cumsum(values, row_starts, row_ids, exclusive=False):
    """Cumulative sums restarting at each row, over the flat values of a ragged tensor."""
    total = tf.cumsum(values, exclusive=exclusive)
    before_row = tf.gather(tf.concat([[0], tf.cumsum(values)], 0), row_starts)
    return total - tf.gather(before_row, row_ids)


def _previous(flags, positions):
    """flags[i - 1], False at the start of a row."""
    return tf.concat([[False], flags[:-1]], 0) & (positions > 0)


def _next(flags, positions, row_length):
    """flags[i + 1], False at the end of a row."""
    return tf.concat([flags[1:], [False]], 0) & (positions < row_length - 1)


def _first_at_or_after(flags, count):
    """Index of the first True at or after each index (count if none)."""
    where = tf.concat([tf.where(flags)[:, 0], [count]], 0)
    return tf.gather(where, tf.cumsum(tf.cast(flags, tf.int64), exclusive=True))


def _last_at_or_before(flags):
    """Index of the last True at or before each index (-1 if none)."""
    where = tf.concat([[-1], tf.where(flags)[:, 0]], 0)
    return tf.gather(where, tf.cumsum(tf.cast(flags, tf.int64)))


def _normalized_owners(tokenizer, texts):
    """The raw characters that produce normalized text, ragged [batch, (owners)] per field:

    normalized_end: end of its normalized bytes (exclusive, from the row's start);
    start, end: its raw span in bytes, widened over the characters attached to it;
    is_space: whether it produces exactly " ".
    """
    chars = tf.strings.unicode_split(texts, "UTF-8")
    flat = chars.flat_values
    row_ids, row_starts = chars.value_rowids(), chars.row_starts()
    count = tf.size(flat, out_type=tf.int64)
    index = tf.range(count)
    positions = index - tf.gather(row_starts, row_ids)
    row_length = tf.gather(chars.row_lengths(), row_ids)
    raw_bytes = tf.cast(tf.strings.length(flat), tf.int64)
    raw_end = _row_cumsum(raw_bytes, row_starts, row_ids)

    # Whitespace: a run inside the text becomes one " " (owned by its first character, the
    # rest attached to it); runs at either end vanish.
    is_space = tf.strings.regex_full_match(flat, re2_class(whitespace_codepoints()))
    words = tf.cast(~is_space, tf.int64)
    words_before = _row_cumsum(words, row_starts, row_ids, exclusive=True)
    words_after = tf.gather(tf.math.segment_sum(words, row_ids), row_ids) - words_before - words
    inside = (words_before > 0) & (words_after > 0)
    space_kept = is_space & inside & ~_previous(is_space, positions)

    # With rewrite_quotes, `` and '' become ": the first of each pair owns it, the second is attached.
    pair_first = tf.zeros_like(is_space)
    pair_second = tf.zeros_like(is_space)
    for quote in ("`", "'") if tokenizer.rewrite_quotes else ():
        is_quote = tf.equal(flat, quote)
        run_start = is_quote & ~_previous(is_quote, positions)
        in_run = index - _last_at_or_before(run_start)
        pair_second |= is_quote & (in_run % 2 == 1)
        pair_first |= is_quote & (in_run % 2 == 0) & _next(is_quote, positions, row_length)

    # Everything else normalizes on its own (NFKD, combining marks dropped, lowercased).
    alone = _preprocess(tokenizer, flat)
    normalized = tf.where(space_kept, " ", tf.where(pair_first, '"', tf.where(is_space | pair_second, "", alone)))
    normalized_bytes = tf.cast(tf.strings.length(normalized), tf.int64)
    owns = normalized_bytes > 0
    # What produces nothing attaches to the owner before it, or, at the start of a text, after it.
    attached = ~owns & ~(is_space & ~inside)
    owners_before = _row_cumsum(tf.cast(owns, tf.int64), row_starts, row_ids, exclusive=True)
    owners_in_row = tf.gather(tf.math.segment_sum(tf.cast(owns, tf.int64), row_ids), row_ids)
    owner_number = tf.cumsum(tf.cast(owns, tf.int64)) - 1  # for an attached one: the owner before it
    owner_number = tf.where(attached & (owners_before == 0), owner_number + 1, owner_number)
    member = owns | (attached & (owners_in_row > 0))
    number_of_owners = tf.reduce_sum(tf.cast(owns, tf.int64))
    group = tf.boolean_mask(owner_number, member)
    span_start = tf.math.unsorted_segment_min(tf.boolean_mask(raw_end - raw_bytes, member), group, number_of_owners)
    span_end = tf.math.unsorted_segment_max(tf.boolean_mask(raw_end, member), group, number_of_owners)

    normalized_end = tf.boolean_mask(_row_cumsum(normalized_bytes, row_starts, row_ids), owns)
    owner_rows = tf.boolean_mask(row_ids, owns)

    def ragged(values):
        return tf.RaggedTensor.from_value_rowids(values, owner_rows, nrows=chars.nrows(), validate=False)

    return {"normalized_end": ragged(normalized_end), "start": ragged(span_start), "end": ragged(span_end),
            "is_space": ragged(tf.boolean_mask(tf.equal(normalized, " "), owns))}


def _raw_offsets(owners, begins, ends, normalized_length, raw_length):
    """Normalized [begin, end) per token -> raw [start, end), as `squad.tokenize_with_alignment`:
    a piece's leading spaces skipped, an empty piece placed where it stands."""
    is_space = owners["is_space"]
    rows = is_space.value_rowids()
    flat_is_space = is_space.flat_values
    owner_count = tf.size(flat_is_space, out_type=tf.int64)
    index = tf.range(owner_count)
    flat_normalized_end = owners["normalized_end"].flat_values
    first_in_row = tf.equal(index, tf.gather(is_space.row_starts(), rows))
    normalized_start = tf.where(first_in_row, tf.zeros_like(flat_normalized_end),
                                tf.concat([[0], flat_normalized_end[:-1]], 0))
    # Where the run of spaces from each owner ends: the next non-space owner's start in the
    # row, else the row's end.
    next_word = _first_at_or_after(~flat_is_space, owner_count)
    next_word_in_row = tf.equal(tf.gather(tf.concat([rows, [-1]], 0), next_word), rows)
    space_run_end = tf.where(next_word_in_row, tf.gather(tf.concat([normalized_start, [0]], 0), next_word),
                             tf.gather(tf.cast(normalized_length, tf.int64), rows))

    def dense(ragged, padding):
        """[batch, owners + 1]: a padding column, so a lookup past the last owner stays in range."""
        padding = tf.constant(padding, ragged.dtype)
        return tf.concat([ragged.to_tensor(padding), tf.fill([ragged.nrows(), 1], padding)], axis=1)

    normalized_end = dense(owners["normalized_end"], tf.int64.max)
    start, end = dense(owners["start"], 0), dense(owners["end"], 0)
    space_run_end = dense(is_space.with_flat_values(space_run_end), 0)
    is_space = dense(is_space, False)
    begin, finish = begins.to_tensor(0), ends.to_tensor(0)
    last_owner = tf.shape(normalized_end, out_type=tf.int64)[1] - 1

    def owner_of(offsets):
        return tf.minimum(tf.searchsorted(normalized_end, offsets, side="right", out_type=tf.int64), last_owner)

    def at(values, owner):
        return tf.gather(values, owner, batch_dims=1)

    first_owner = owner_of(begin)
    skip = at(is_space, first_owner) & (begin < finish - 1)
    moved = tf.where(skip, tf.maximum(begin, tf.minimum(at(space_run_end, first_owner), finish - 1)), begin)
    empty = tf.equal(begin, finish)
    empty_position = tf.where(begin < tf.cast(normalized_length, tf.int64)[:, None], at(start, first_owner),
                              tf.cast(raw_length, tf.int64)[:, None])
    token_start = tf.where(empty, empty_position, at(start, owner_of(moved)))
    token_end = tf.where(empty, empty_position, at(end, owner_of(finish - 1)))
    lengths = begins.row_lengths()
    return (tf.RaggedTensor.from_tensor(token_start, lengths=lengths),
            tf.RaggedTensor.from_tensor(token_end, lengths=lengths))
