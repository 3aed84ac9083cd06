"""Token ids with byte offsets into the raw strings, in-graph: what a served SQuAD model needs to
return its answer as the context's own text (its case, accents and spacing), not as normalized pieces.

`tokenize_with_offsets` is the in-graph twin of `albert_tf.text.piece_alignment.tokenize_with_alignment`
(a test checks they agree on every token): the ids of `TFAlbertTokenizer`, and for each id the
[start, end) of the raw text it came from, in bytes.

How: the ids come from the tokenizer's own op, so they are the trained ids, ties between
segmentations of equal score included. That op reports no offsets, so they are rebuilt from what
each piece and each raw character is:

  1. Each raw character is preprocessed on its own (`_preprocess`: the same steps, from the same
     character classes; the steps that look at neighbours, whitespace runs, quote pairs and a
     final sigma, are decided from the neighbours directly). Characters that produce nothing
     (dropped combining marks, the rest of a whitespace run, a replaced pair's second quote) widen
     the span of the character before them, as in the Python alignment.
  2. SentencePiece's own normalization (NFKC, some characters removed or made spaces, space runs
     collapsed) can change a character further. The tokenizer run on probe + character + probe
     (the probe a digit or letter the vocabulary knows, else one of its CJK ideographs or Hangul
     syllables that compose with nothing) says what it makes: how long, whether all
     space, whether it starts or ends unknown. A combining mark that NFKC composes with the
     character before it (`l` + caron: `ľ`) is taken with it.
  3. Pieces and characters are laid on one axis: a piece's length is its text's (`▁` one byte, the
     first piece's dummy `▁` none, `<unk>` one unit), a character's what its probe's pieces
     measure; a space counts only where SentencePiece keeps it (inside the text, the first of a
     run), and a character continuing the `<unk>` before it adds none for that unit. The
     `<digit>,` split shares a piece's span on this axis. An id's start and end on the axis then
     name the characters they fall in, hence its [begin, end) in the preprocessed text, as
     SentencePiece's offsets give it (`_axis_to_text`), and from there in the raw text.
"""

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.text.albert_tokenizer import SPIECE_UNDERLINE, AlbertTokenizer
from albert_tf.text.preprocessing import combining_codepoints, re2_class, whitespace_codepoints
from albert_tf.text.tf_wordpiece_tokenizer import TFWordPieceTokenizer


def check_offsets_measurable(tokenizer):
    """ValueError, outside any traced function, for a SentencePiece vocabulary whose pieces `PieceTable` cannot
    measure; a WordPiece tokenizer's offsets need no measuring."""
    if not isinstance(tokenizer, TFWordPieceTokenizer):
        PieceTable(tokenizer)


def tokenize_with_offsets(tokenizer, texts):
    """(ids, starts, ends), ragged [batch, (tokens)]: `tokenizer(texts)` and byte offsets into `texts`.

    Args:
      tokenizer: a `TFAlbertTokenizer`, or a `TFWordPieceTokenizer` (which tracks every character itself and
        reports its own offsets).
      texts: [batch] valid UTF-8 strings (`albert_tf.text.tf_packing.clean_text` makes them so).
    """
    if isinstance(tokenizer, TFWordPieceTokenizer):
        return tokenizer.tokenize_with_offsets(texts)
    pieces = PieceTable(tokenizer)
    texts = tf.convert_to_tensor(texts, tf.string)
    piece_ids = tokenizer.sentencepiece.tokenize(texts).with_row_splits_dtype(tf.int64)
    _, axis_begin, axis_end, _ = _piece_axis(piece_ids, pieces)
    ids, axis_begins, axis_ends = _split_digit_commas_on_axis(tokenizer, pieces, piece_ids,
                                                              piece_ids.with_flat_values(axis_begin),
                                                              piece_ids.with_flat_values(axis_end))
    preprocessed = _preprocess(tokenizer, texts)
    owners = _normalized_owners(tokenizer, texts, preprocessed)
    begins, ends = _axis_to_text(axis_begins, axis_ends, _units(tokenizer, pieces, owners))
    starts, ends = _raw_offsets(owners, begins, ends, tf.strings.length(preprocessed), tf.strings.length(texts))
    return ids, starts, ends


class PieceTable:
    """Per piece id, what its text spans; and the probe character (`<s>` above) for this vocabulary.

    text_bytes: UTF-8 bytes of its text without `▁`; spaces: its `▁`s; unknown: it is `<unk>`.
    """

    PROBE_CANDIDATES = "0123456789xqzkjvwbcdfghlmnprstyaeiou"

    def __init__(self, tokenizer):
        python_tokenizer = AlbertTokenizer(model_proto=tokenizer.model_proto, lower_case=tokenizer.lower_case,
                                           keep_accents=tokenizer.keep_accents,
                                           rewrite_quotes=tokenizer.rewrite_quotes)
        sp = python_tokenizer.sp
        texts = [sp.id_to_piece(piece_id) for piece_id in range(sp.get_piece_size())]
        self.text_bytes = tf.constant(np.array([len(text.replace(SPIECE_UNDERLINE, "").encode("utf-8"))
                                                for text in texts], np.int64))
        self.spaces = tf.constant(np.array([text.count(SPIECE_UNDERLINE) for text in texts], np.int64))
        self.unknown_id = sp.unk_id()
        # A digit first: no combining mark composes with one, so it never merges with a probed mark. A vocabulary
        # of Chinese or Korean text alone may know none of them; then a character of the vocabulary's own that
        # composes with nothing on either side either: a CJK ideograph, or a Hangul syllable with a final
        # consonant (only a syllable without one takes a following jamo).
        known = next((c for c in [*self.PROBE_CANDIDATES, *_own_probe_candidates(texts)]
                      if self.unknown_id not in sp.encode(c)), None)
        if known is None:
            raise ValueError("the vocabulary has no piece of an ASCII digit or lower-case letter, a CJK ideograph "
                             "or a Hangul syllable with a final consonant; in-graph offsets need one such character "
                             "to measure the others against")
        self.probe = known
        self.probe_bytes = len(known.encode("utf-8"))  # its length on the axis (1, or 3 for a CJK character)

    def lengths(self, ids):
        """Normalized bytes a piece covers (`▁` one byte; meaningless for `<unk>`), its spaces, whether unknown."""
        return tf.gather(self.text_bytes, ids) + tf.gather(self.spaces, ids), tf.gather(self.spaces, ids), \
            tf.equal(ids, self.unknown_id)


def _own_probe_candidates(pieces):
    """The single characters of `pieces` that no neighbour composes with under NFKC: CJK unified ideographs and
    Hangul syllables with a final consonant, in the vocabulary's order."""
    for piece in pieces:
        char = piece.replace(SPIECE_UNDERLINE, "")
        if len(char) == 1 and ("\u4e00" <= char <= "\u9fff" or ("\uac00" <= char <= "\ud7a3"
                                                               and (ord(char) - 0xAC00) % 28)):
            yield char


def _preprocess(tokenizer, texts):
    """`preprocess_text` with TensorFlow's string ops, by the tokenizer's switches."""
    texts = tf.strings.regex_replace(texts, re2_class(whitespace_codepoints()) + "+", " ")
    texts = tf.strings.regex_replace(texts, "^ | $", "")
    if tokenizer.rewrite_quotes:
        texts = tf.strings.regex_replace(texts, "``|''", '"')
    if not tokenizer.keep_accents:
        texts = tf.strings.regex_replace(tf_text.normalize_utf8(texts, "NFKD"), re2_class(combining_codepoints()), "")
    if tokenizer.lower_case:
        texts = _lower(texts)
    return texts


def _lower(texts):
    """Python's `str.lower` of each text. TensorFlow's UTF-8 lowercasing ends a text at its first NUL (it
    would drop the rest, and every later offset would move), so the pieces between NULs are lowercased
    apart: a NUL is no cased letter, so no final sigma changes."""
    parts = tf.strings.split(texts, sep="\x00").with_row_splits_dtype(tf.int64)
    lowered = tf.strings.lower(parts.flat_values, encoding="utf-8")
    index = tf.range(tf.size(lowered, out_type=tf.int64))
    last = tf.equal(index, tf.gather(parts.row_limits(), parts.value_rowids()) - 1)
    lowered = tf.where(last, lowered, tf.strings.join([lowered, "\x00"]))
    return tf.strings.reduce_join(parts.with_flat_values(lowered), axis=1)


def _split_digit_commas_on_axis(tokenizer, pieces, piece_ids, begins, ends):
    """The tokenizer's `<digit>,` split, with the axis span of each resulting id.

    A split piece's ids share its span from the end, each taking its own text's length (the
    comma the last byte), as `piece_alignment.tokenize_with_alignment` does.
    """
    one_per_row = tf.RaggedTensor.from_row_lengths(piece_ids.flat_values,
                                                   tf.ones_like(piece_ids.flat_values, tf.int64), validate=False)
    per_piece = tokenizer.split_digit_commas(one_per_row)  # [pieces, (ids of that piece)]
    ids = tf.RaggedTensor.from_row_splits(per_piece, piece_ids.row_splits, validate=False).merge_dims(1, 2)

    flat_ids = per_piece.flat_values
    piece_of = per_piece.value_rowids()
    text_lengths = tf.gather(pieces.text_bytes, flat_ids)
    # suffix[j]: text length of this id and the ones after it within its piece.
    suffix = tf.cumsum(text_lengths, reverse=True)
    suffix -= tf.gather(tf.concat([suffix, [0]], 0), tf.gather(per_piece.row_limits(), piece_of))
    begin = tf.gather(begins.flat_values, piece_of)
    end = tf.gather(ends.flat_values, piece_of)
    first = tf.equal(tf.range(tf.size(flat_ids, out_type=tf.int64)), tf.gather(per_piece.row_starts(), piece_of))
    id_begins = tf.where(first, begin, tf.maximum(begin, end - suffix))
    id_ends = tf.maximum(begin, end - (suffix - text_lengths))
    return (ids, ids.with_flat_values(id_begins), ids.with_flat_values(id_ends))


def _padded_dense(ragged, padding):
    """ragged [batch, (n)] as [batch, longest n + 1], filled with `padding`: the extra column keeps a lookup
    past a row's last element in range."""
    padding = tf.constant(padding, ragged.dtype)
    return tf.concat([ragged.to_tensor(padding), tf.fill([ragged.nrows(), 1], padding)], axis=1)


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


def _character_at(texts, character, rows, byte_positions):
    """Whether `character` starts at byte_positions (from its text's start) of texts[rows]; memory linear in the
    texts' total length."""
    codepoints, offsets = tf.strings.unicode_decode_with_offsets(texts, "UTF-8")
    offsets = offsets.with_row_splits_dtype(tf.int64)
    # One sorted axis over all the texts' bytes, each text after the one before.
    text_start = tf.cumsum(tf.cast(tf.strings.length(texts), tf.int64), exclusive=True)
    found = tf.boolean_mask(offsets.flat_values + tf.gather(text_start, offsets.value_rowids()),
                            tf.equal(codepoints.flat_values, ord(character)))
    wanted = byte_positions + tf.gather(text_start, rows)
    index = tf.searchsorted(found, wanted, side="left", out_type=tf.int64)
    return tf.equal(tf.gather(tf.concat([found, [-1]], 0), index), wanted)


def _normalized_owners(tokenizer, texts, preprocessed):
    """The raw characters that produce preprocessed text (`preprocessed`: the whole texts'), ragged
    [batch, (owners)] per field:

    normalized_end: end of its preprocessed bytes (exclusive, from the row's start);
    normalized_bytes: how many preprocessed bytes it makes;
    text: those bytes;
    start, end: its raw span in bytes, widened over the characters attached to it;
    own_end: where the character itself ends (the end of all but the last character it makes);
    is_space: whether it produces exactly " ";
    is_mark: whether it is a combining mark (kept by keep_accents).
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
    distinct, index_of_distinct = tf.unique(flat)  # most characters repeat: preprocess each once
    alone = tf.gather(_preprocess(tokenizer, distinct), index_of_distinct)
    normalized = tf.where(space_kept, " ", tf.where(pair_first, '"', tf.where(is_space | pair_second, "", alone)))
    normalized_bytes = tf.cast(tf.strings.length(normalized), tf.int64)
    if tokenizer.lower_case:
        # Lowercasing makes a capital sigma final ("ς") by its neighbours, which the whole text's
        # lowercasing sees (in the same two bytes): the pieces may know one form and not the other. Looked up
        # among the whole texts' final sigmas by byte position: reading it from a copy of the whole text per
        # character would cost the square of a text's length (400 MB for one of 20,000 characters).
        position = _row_cumsum(normalized_bytes, row_starts, row_ids, exclusive=True)
        final_sigma = tf.equal(normalized, "\u03c3") & _character_at(preprocessed, "\u03c2", row_ids, position)
        normalized = tf.where(final_sigma, "\u03c2", normalized)
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
            "own_end": ragged(tf.boolean_mask(raw_end, owns)),
            "normalized_bytes": ragged(tf.boolean_mask(normalized_bytes, owns)),
            "text": ragged(tf.boolean_mask(normalized, owns)),
            "is_space": ragged(tf.boolean_mask(tf.equal(normalized, " "), owns)),
            # Only keep_accents keeps marks as owners (otherwise they make nothing).
            "is_mark": ragged(tf.boolean_mask(tf.strings.regex_full_match(flat, re2_class(combining_codepoints()))
                                              if tokenizer.keep_accents else tf.zeros_like(owns), owns))}


def _units(tokenizer, pieces, owners):
    """Owners grouped as SentencePiece's NFKC sees them, ragged [batch, (units)] per field:

    a combining mark kept by keep_accents joins the owner before it where NFKC composes them (`l` +
    caron make `ľ`).

    normalized_end, normalized_bytes: as the owners';
    axis_length: its length on the pieces' axis (see the module's docstring, step 3);
    space_only: whether SentencePiece's normalization makes only space of it;
    makes_text: whether it makes anything at all;
    merged: whether its first unit on the axis belongs to the unit before it (an unknown character
      continuing a `<unk>`, a space joining a space);
    nfkc_keeps: whether NFKC, SentencePiece's usual normalization, leaves its text as it is.
    """
    is_mark = owners["is_mark"]
    owner_rows = is_mark.value_rowids()
    texts, unit_rows = owners["text"].flat_values, owner_rows
    normalized_bytes, normalized_end = owners["normalized_bytes"].flat_values, owners["normalized_end"].flat_values
    if tokenizer.keep_accents:  # otherwise marks make nothing: no owner is one, each owner is a unit
        first_in_row = tf.equal(tf.range(tf.size(texts, out_type=tf.int64)),
                                tf.gather(is_mark.row_starts(), owner_rows))
        previous = tf.concat([[""], texts[:-1]], 0)
        composes = tf.not_equal(_nfkc(previous + texts), _nfkc(previous) + _nfkc(texts))
        starts_unit = ~(is_mark.flat_values & composes) | first_in_row
        unit_of = tf.cumsum(tf.cast(starts_unit, tf.int64)) - 1
        count = tf.reduce_sum(tf.cast(starts_unit, tf.int64))
        texts = tf.strings.unsorted_segment_join(texts, unit_of, count)
        unit_rows = tf.boolean_mask(owner_rows, starts_unit)
        normalized_bytes = tf.math.unsorted_segment_sum(normalized_bytes, unit_of, count)
        normalized_end = tf.math.unsorted_segment_max(normalized_end, unit_of, count)
    axis_length, space_only, makes_text, merged = _axis_lengths(tokenizer, pieces, texts, unit_rows, is_mark.nrows())

    def ragged(values):
        return tf.RaggedTensor.from_value_rowids(values, unit_rows, nrows=is_mark.nrows(), validate=False)

    return {"normalized_end": ragged(normalized_end), "normalized_bytes": ragged(normalized_bytes),
            "axis_length": ragged(axis_length), "space_only": ragged(space_only),
            "makes_text": ragged(makes_text), "merged": ragged(merged),
            "nfkc_keeps": ragged(tf.equal(_nfkc(texts), texts))}


def _nfkc(texts):
    """NFKC of each text, each distinct text normalized once (most characters repeat)."""
    distinct, index = tf.unique(texts)
    return tf.gather(tf_text.normalize_utf8(distinct, "NFKC"), index)


def _axis_lengths(tokenizer, pieces, owner_texts, owner_rows, rows):
    """Per owner (flat): its length on the pieces' axis; whether it makes only space (kept or not),
    whether it makes anything, and whether its first unit belongs to the owner before it (`merged`).
    Owners are here the units of `_units`, flat, with their rows.
    """
    count = tf.size(owner_texts, out_type=tf.int64)
    total, all_space, starts_unknown, ends_unknown, starts_space, ends_space = _probe(tokenizer, pieces, owner_texts)

    # Decided among the owners that make something, in order: SentencePiece keeps a space only inside
    # the text and only the first of a run; consecutive unknown characters are one `<unk>`.
    kept = tf.where(total > 0)[:, 0]
    kept_rows = tf.gather(owner_rows, kept)
    kept_space = tf.gather(all_space, kept)
    same_row = tf.concat([[False], tf.equal(kept_rows[1:], kept_rows[:-1])], 0)

    def after(flags):
        return tf.concat([[False], tf.gather(flags, kept)[:-1]], 0) & same_row

    after_space = after(all_space)
    content = tf.cast(~kept_space, tf.int64)
    row_starts = tf.RaggedTensor.from_value_rowids(kept, kept_rows, nrows=rows, validate=False).row_starts()
    content_before = _row_cumsum(content, row_starts, kept_rows, exclusive=True)
    content_after = tf.gather(tf.math.unsorted_segment_sum(content, kept_rows, rows), kept_rows) \
        - content_before - content
    space_kept = kept_space & (content_before > 0) & (content_after > 0) & ~after_space
    merged = (tf.gather(starts_unknown, kept) & after(ends_unknown)) | (
        ~kept_space & tf.gather(starts_space, kept) & (after_space | after(ends_space) | tf.equal(content_before, 0)))
    length = tf.where(kept_space, tf.cast(space_kept, tf.int64), tf.gather(total, kept) - tf.cast(merged, tf.int64))
    positions = kept[:, None]
    return (tf.scatter_nd(positions, length, [count]), all_space, total > 0,
            tf.scatter_nd(positions, merged, [count]))


def _probe(tokenizer, pieces, texts):
    """Per text, what SentencePiece makes of it between two probes (each distinct text tokenized once):
    its length on the axis, whether all space, whether it starts or ends unknown, or with a space."""
    distinct, index = tf.unique(texts)
    count = tf.size(distinct, out_type=tf.int64)
    probed = tokenizer.sentencepiece.tokenize(tf.strings.join([pieces.probe, distinct, pieces.probe]))
    probed = probed.with_row_splits_dtype(tf.int64)
    length, begin, end, unknown = _piece_axis(probed, pieces)
    probe_of = probed.value_rowids()
    probes = 2 * pieces.probe_bytes  # the two probes' length on the axis
    total = tf.math.unsorted_segment_sum(length, probe_of, count)  # the text's, and the probes'
    covered, spaces, _ = pieces.lengths(probed.flat_values)
    all_space = ~tf.reduce_any(probed.with_flat_values(unknown), axis=1) & (total > probes) & tf.equal(
        tf.math.unsorted_segment_sum(covered - spaces, probe_of, count), probes)  # nothing but the probes' bytes
    probe_end = tf.gather(total, probe_of) - pieces.probe_bytes  # where the last probe begins

    def any_piece(flags):
        return tf.math.unsorted_segment_max(tf.cast(flags, tf.int64), probe_of, count) > 0

    starts_unknown = any_piece(unknown & tf.equal(begin, pieces.probe_bytes))
    ends_unknown = any_piece(unknown & tf.equal(end, probe_end))
    # A text that starts with a space (`¨` kept by keep_accents: NFKC makes it " " + a mark); pieces
    # begin with their `▁`, so a space at the text's end starts the last probe's piece.
    starts_space = any_piece((spaces > 0) & tf.equal(begin, pieces.probe_bytes))
    ends_space = any_piece((spaces > 0) & tf.equal(begin, probe_end - 1))
    return [tf.gather(value, index) for value in
            (total - probes, all_space, starts_unknown, ends_unknown, starts_space, ends_space)]


def _piece_axis(piece_ids, pieces):
    """Flat (length, begin, end, unknown) of each piece on the axis, from its row's start.

    A piece's length is its text's bytes (`▁` one byte, a row's leading dummy `▁` none), `<unk>` one.
    """
    flat = piece_ids.flat_values
    rows, starts = piece_ids.value_rowids(), piece_ids.row_starts()
    covered, spaces, unknown = pieces.lengths(flat)
    first = tf.equal(tf.range(tf.size(flat, out_type=tf.int64)), tf.gather(starts, rows))
    length = tf.where(unknown, tf.ones_like(covered), covered - tf.cast(first & (spaces > 0), tf.int64))
    end = _row_cumsum(length, starts, rows)
    return length, end - length, end, unknown


def _axis_to_text(axis_begins, axis_ends, units):
    """[begin, end) in the preprocessed text of each id, from its span on the axis (ragged [batch, (ids)]).

    As SentencePiece's offsets: a position on the axis maps to where its unit starts (inside a
    unit, byte for byte, kept inside it); the end of a row's axis to the end of its last unit that
    is not space. So an id's end is where the next id's unit starts: a kept space covers the
    spaces dropped after it, `<unk>` all of its run, a piece what normalization removed after it.
    A row's first id starts at its first unit that is not space (leading spaces are skipped,
    removed characters are not).
    """
    begin_on_axis, end_on_axis = axis_begins.to_tensor(0), axis_ends.to_tensor(0)

    axis_length = units["axis_length"]
    unit_rows, unit_starts = axis_length.value_rowids(), axis_length.row_starts()
    unit_axis_end = _row_cumsum(axis_length.flat_values, unit_starts, unit_rows)
    normalized_bytes = units["normalized_bytes"].flat_values
    normalized_end = units["normalized_end"].flat_values
    rows = axis_length.nrows()
    space_only = units["space_only"].flat_values
    unit_start = normalized_end - normalized_bytes
    text_start = tf.math.unsorted_segment_min(tf.where(space_only, tf.int64.max, unit_start), unit_rows, rows)
    # Trailing space is cut where it starts; without it, removed characters at the end still count.
    unit_index = tf.range(tf.size(space_only, out_type=tf.int64))
    content = units["makes_text"].flat_values & ~space_only
    last_content = tf.math.unsorted_segment_max(tf.where(content, unit_index, -1), unit_rows, rows)
    trailing_space = space_only & (unit_index > tf.gather(last_content, unit_rows))
    trailing_space_start = tf.math.unsorted_segment_min(tf.where(trailing_space, unit_start, tf.int64.max),
                                                        unit_rows, rows)
    text_end = tf.minimum(trailing_space_start, tf.maximum(tf.math.unsorted_segment_max(normalized_end, unit_rows,
                                                                                        rows), 0))

    def dense(values, padding):
        return _padded_dense(axis_length.with_flat_values(values), padding)

    axis_ends = dense(unit_axis_end, tf.int64.max)
    axis_starts = dense(unit_axis_end - axis_length.flat_values, 0)
    unit_starts_in_text = dense(unit_start, -1)
    merged = dense(tf.cast(units["merged"].flat_values, tf.int64), 0)
    # Inside a unit that SentencePiece's normalization rewrites (ligatures kept by keep_accents,
    # Hangul jamo recomposed), every position is its start, as SentencePiece's offsets have it.
    last_byte = dense(tf.where(units["nfkc_keeps"].flat_values, tf.maximum(normalized_bytes - 1, 0), 0), 0)
    last = tf.shape(axis_ends, out_type=tf.int64)[1] - 1

    def in_text(position):
        unit = tf.minimum(tf.searchsorted(axis_ends, position, side="right", out_type=tf.int64), last)

        def at(values):
            return tf.gather(values, unit, batch_dims=1)

        start = at(unit_starts_in_text)
        # A merged unit's first position on the axis is already one byte inside it.
        inside = tf.minimum(position - at(axis_starts) + at(merged), at(last_byte))
        return tf.where(start < 0, text_end[:, None], start + inside)  # past the last unit: the text's end

    lengths = axis_begins.row_lengths()
    first = tf.equal(tf.range(tf.shape(begin_on_axis, out_type=tf.int64)[1]), 0)[None, :]
    begin = tf.where(first, tf.minimum(text_start, text_end)[:, None], in_text(begin_on_axis))
    return (tf.RaggedTensor.from_tensor(begin, lengths=lengths),
            tf.RaggedTensor.from_tensor(in_text(end_on_axis), lengths=lengths))


def _raw_offsets(owners, begins, ends, normalized_length, raw_length):
    """Normalized [begin, end) per token -> raw [start, end), as `piece_alignment.tokenize_with_alignment`:
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

    normalized_end = _padded_dense(owners["normalized_end"], tf.int64.max)
    start, end, own_end = (_padded_dense(owners[name], 0) for name in ("start", "end", "own_end"))
    space_run_end = _padded_dense(is_space.with_flat_values(space_run_end), 0)
    is_space = _padded_dense(is_space, False)
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
    last_owner = owner_of(finish - 1)
    # Marks dropped after a character widen only the last character it makes (`ﬁ` + mark: `f` ends before).
    ends_with_owner = tf.equal(finish, at(normalized_end, last_owner))
    token_end = tf.where(empty, empty_position,
                         tf.where(ends_with_owner, at(end, last_owner), at(own_end, last_owner)))
    lengths = begins.row_lengths()
    return (tf.RaggedTensor.from_tensor(token_start, lengths=lengths),
            tf.RaggedTensor.from_tensor(token_end, lengths=lengths))
