"""A SentencePiece model proto read and edited in its wire format, without the protobuf package.

The `sentencepiece_model_pb2` that the sentencepiece wheel ships needs protobuf at the
version it was generated with, which this environment's other pins rule out; the few
fields albert_tf reads or replaces are reached directly (sentencepiece_model.proto):

  ModelProto.pieces = 1: SentencePiece {piece = 1, score = 2 (float), type = 3}
  ModelProto.trainer_spec = 2: TrainerSpec {model_type = 3 (1 = unigram, the default)}
  ModelProto.normalizer_spec = 3: NormalizerSpec {name = 1, precompiled_charsmap = 2, ...}
"""

import struct

PIECES, TRAINER_SPEC, NORMALIZER_SPEC = 1, 2, 3
PIECE, SCORE, TYPE = 1, 2, 3
MODEL_TYPE, UNIGRAM = 3, 1
PRECOMPILED_CHARSMAP = 2
# SentencePiece.Type.
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

_LENGTH_DELIMITED = 2


def _varint(data, position):
    value = shift = 0
    while True:
        if position >= len(data):
            raise ValueError("truncated varint")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def _encode_varint(value):
    encoded = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        encoded.append(low | 0x80 if value else low)
        if not value:
            return bytes(encoded)


def fields(data):
    """Yields (field number, wire type, value, the field's own bytes) of one message; the value is the
    integer of a varint field and the bytes of the others."""
    position = 0
    while position < len(data):
        start = position
        key, position = _varint(data, position)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, position = _varint(data, position)
        elif wire_type == 1:
            value, position = data[position:position + 8], position + 8
        elif wire_type == _LENGTH_DELIMITED:
            length, position = _varint(data, position)
            value, position = data[position:position + length], position + length
        elif wire_type == 5:
            value, position = data[position:position + 4], position + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type}")
        if position > len(data):
            raise ValueError("truncated field")
        yield number, wire_type, value, data[start:position]


def _field(number, payload):
    return _encode_varint(number << 3 | _LENGTH_DELIMITED) + _encode_varint(len(payload)) + payload


def _submessage(model_proto, number):
    for field_number, wire_type, value, _ in fields(model_proto):
        if field_number == number and wire_type == _LENGTH_DELIMITED:
            return bytes(value)
    return b""


def pieces(model_proto):
    """[(piece, type, score)] in id order."""
    result = []
    for number, wire_type, value, _ in fields(model_proto):
        if number != PIECES or wire_type != _LENGTH_DELIMITED:
            continue
        piece, piece_type, score = "", NORMAL, 0.0
        for inner_number, _, inner_value, _ in fields(value):
            if inner_number == PIECE:
                piece = bytes(inner_value).decode("utf-8")
            elif inner_number == TYPE:
                piece_type = inner_value
            elif inner_number == SCORE:
                score = struct.unpack("<f", inner_value)[0]
        result.append((piece, piece_type, score))
    return result


def with_scores(model_proto, scores):
    """The model with the scores of some pieces replaced: `scores` maps a piece's id to its new score."""
    edited = bytearray()
    piece_id = 0
    for number, wire_type, value, raw in fields(model_proto):
        if number != PIECES or wire_type != _LENGTH_DELIMITED:
            edited += raw
            continue
        if piece_id in scores:
            piece = b"".join(inner_raw for inner_number, _, _, inner_raw in fields(value) if inner_number != SCORE)
            raw = _field(PIECES, piece + _encode_varint(SCORE << 3 | 5) + struct.pack("<f", scores[piece_id]))
        edited += raw
        piece_id += 1
    return bytes(edited)


def precompiled_charsmap(model_proto):
    """The normalizer's precompiled character map (b"" if none)."""
    return charsmap_of_normalizer_spec(_submessage(model_proto, NORMALIZER_SPEC))


def charsmap_of_normalizer_spec(normalizer_spec):
    """The precompiled character map of a serialized NormalizerSpec (b"" if none)."""
    for number, wire_type, value, _ in fields(normalizer_spec):
        if number == PRECOMPILED_CHARSMAP and wire_type == _LENGTH_DELIMITED:
            return bytes(value)
    return b""


def normalizer_spec_with_charsmap(charsmap):
    """A serialized NormalizerSpec holding only `charsmap` (its other settings the defaults)."""
    return _field(PRECOMPILED_CHARSMAP, charsmap)


def normalizer_flag(model_proto, number, default=True):
    """A boolean field of the model's NormalizerSpec (3 add_dummy_prefix, 4 remove_extra_whitespaces,
    5 escape_whitespaces), `default` when unset."""
    for field_number, wire_type, value, _ in fields(_submessage(model_proto, NORMALIZER_SPEC)):
        if field_number == number and wire_type == 0:
            return bool(value)
    return default


def model_type(model_proto):
    """TrainerSpec.model_type (1 = unigram, the default when unset)."""
    for number, wire_type, value, _ in fields(_submessage(model_proto, TRAINER_SPEC)):
        if number == MODEL_TYPE and wire_type == 0:
            return value
    return UNIGRAM


def with_precompiled_charsmap(model_proto, charsmap):
    """The model with its normalizer's character map replaced (its other normalizer settings kept; a model
    without a normalizer spec, which means the defaults, gets one with only the map)."""
    edited = bytearray()
    replaced = False
    for number, wire_type, value, raw in fields(model_proto):
        if number != NORMALIZER_SPEC or wire_type != _LENGTH_DELIMITED:
            edited += raw
            continue
        spec = b"".join(inner_raw for inner_number, _, _, inner_raw in fields(value)
                        if inner_number != PRECOMPILED_CHARSMAP)
        edited += _field(NORMALIZER_SPEC, _field(PRECOMPILED_CHARSMAP, charsmap) + spec)
        replaced = True
    if not replaced:
        edited += _field(NORMALIZER_SPEC, _field(PRECOMPILED_CHARSMAP, charsmap))
    return bytes(edited)
