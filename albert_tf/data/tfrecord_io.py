"""TFRecord files and `tf.train.Example` protos, encoded without TensorFlow.

Data-creation workers only serialize fixed-layout int64/float features; encoding
the protobuf wire format directly with NumPy is several times faster than
building `tf.train.Example` objects, and keeps TensorFlow (and its memory) out
of the worker processes. Files are standard: `tf.data.TFRecordDataset` and
`tf.io.parse_single_example` read them (tests check it), and so does the
original ALBERT input pipeline.

Framing (TFRecord): uint64 length, uint32 masked CRC32C of the length, data,
uint32 masked CRC32C of the data. GZIP output uses mtime 0, so the same records
give byte-identical files.
"""

import functools
import gzip
import struct

import google_crc32c
import numpy as np

_MASK_DELTA = 0xA282EAD8


def masked_crc32c(data):
    crc = google_crc32c.value(data)  # the CPU's crc32 instruction where there is one
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame_record(data):
    """One TFRecord record (header + data + footer) as bytes."""
    length = struct.pack("<Q", len(data))
    return b"".join(
        (length, struct.pack("<I", masked_crc32c(length)), data, struct.pack("<I", masked_crc32c(data)))
    )


class TFRecordWriter:
    """Writes framed records to a binary file object (optionally GZIP-compressed)."""

    def __init__(self, file_object, compression=None):
        if compression not in (None, "gzip"):
            raise ValueError(f"compression must be None or 'gzip', got {compression!r}")
        self._raw = file_object
        self._file = gzip.GzipFile(fileobj=file_object, mode="wb", mtime=0, filename="") if compression else file_object

    def write(self, data):
        self._file.write(frame_record(data))

    def close(self):
        if self._file is not self._raw:
            self._file.close()
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- tf.train.Example wire format -----------------------------------------------


def _varint_bytes(value):
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# Varints of lengths, which every nested message needs several of per Example.
_SMALL_VARINTS = [_varint_bytes(value) for value in range(1 << 16)]


def _varint_of_length(value):
    return _SMALL_VARINTS[value] if value < 65536 else _varint_bytes(value)


_TABLE_LIMIT = 1 << 21  # values below this take at most 3 varint bytes


@functools.cache
def _varint_table():
    """(bytes [2^21, 3], valid-byte mask [2^21, 3], sizes [2^21]) for every value below 2^21."""
    values = np.arange(_TABLE_LIMIT, dtype=np.uint32)
    sizes = 1 + (values >= 1 << 7).astype(np.uint8) + (values >= 1 << 14).astype(np.uint8)
    table = np.empty((_TABLE_LIMIT, 3), dtype=np.uint8)
    table[:, 0] = (values & 0x7F) | np.where(sizes > 1, 0x80, 0)
    table[:, 1] = ((values >> 7) & 0x7F) | np.where(sizes > 2, 0x80, 0)
    table[:, 2] = (values >> 14) & 0x7F
    return table, np.arange(3)[None, :] < sizes[:, None], sizes


def encode_varint_rows(rows):
    """Packed varints of each row of a non-negative int array [N, L] -> N bytes objects.

    One vectorized pass for all rows: token ids, positions and flags are small,
    so rows take one of two fast paths, all values below 128 (one byte each,
    the values themselves) or all below 2^21 (a table lookup). Larger values go
    through a general per-value loop.
    """
    rows = np.asarray(rows)
    if rows.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {rows.shape}")
    if not rows.size:
        return [b""] * rows.shape[0]
    if rows.min() < 0:
        raise ValueError("only non-negative integers are encoded")
    largest = rows.max()
    if largest < 0x80:
        return [row.tobytes() for row in rows.astype(np.uint8)]
    if largest >= _TABLE_LIMIT:
        return [b"".join(_varint_bytes(int(value)) for value in row) for row in rows]
    table, valid, sizes = _varint_table()
    flat = rows.ravel()
    data = np.take(table, flat, axis=0)[np.take(valid, flat, axis=0)].tobytes()
    ends = np.cumsum(np.take(sizes, rows).sum(axis=1, dtype=np.int64)).tolist()
    return [data[start:end] for start, end in zip([0] + ends[:-1], ends)]


class ExampleEncoder:
    """Serializes batches of Examples with fixed-length int64 and float list features.

    Field numbers: Example.features=1; Features.feature (map entry)=1 with
    key=1, value=2; Feature.float_list=2, Feature.int64_list=3; the lists'
    `value`=1, packed.

    >>> encoder = ExampleEncoder(["input_ids"], ["weights"])
    >>> [example] = encoder.encode_batch({"input_ids": [[2, 300]]}, {"weights": [[1.0]]})
    """

    def __init__(self, int_feature_names, float_feature_names=()):
        self.int_feature_names = tuple(int_feature_names)
        self.float_feature_names = tuple(float_feature_names)
        self._key_bytes = {
            name: b"\x0a" + _varint_bytes(len(name.encode())) + name.encode()
            for name in self.int_feature_names + self.float_feature_names
        }
        self._headers = {}

    def _entry(self, name, feature_tag, packed):
        """Features.feature map entry {key: name, value: Feature{<tag>: {value: packed}}}.

        Everything before the packed values depends only on the feature and the
        payload length, which repeats from example to example: cached.
        """
        cache_key = (name, feature_tag, len(packed))
        header = self._headers.get(cache_key)
        if header is None:
            key = self._key_bytes[name]
            packed_length = _varint_of_length(len(packed))
            value_list_length = 1 + len(packed_length) + len(packed)  # XList.value (tag 0x0a), packed
            value_list_varint = _varint_of_length(value_list_length)
            feature_length = 1 + len(value_list_varint) + value_list_length  # Feature.{float,int64}_list
            feature_varint = _varint_of_length(feature_length)
            entry_length = len(key) + 1 + len(feature_varint) + feature_length  # map entry: key, value (0x12)
            header = b"".join((b"\x0a", _varint_of_length(entry_length), key, b"\x12", feature_varint,
                               feature_tag, value_list_varint, b"\x0a", packed_length))
            self._headers[cache_key] = header
        return header + packed

    def encode_batch(self, int_features, float_features=None):
        """{name: [N, L] ints}, {name: [N, L] floats} -> N serialized Examples."""
        columns = []
        for name in self.int_feature_names:
            columns.append([self._entry(name, b"\x1a", packed) for packed in encode_varint_rows(int_features[name])])
        for name in self.float_feature_names:
            rows = np.ascontiguousarray(float_features[name], dtype="<f4")
            columns.append([self._entry(name, b"\x12", row.tobytes()) for row in rows])
        examples = []
        for entries in zip(*columns):
            features = b"".join(entries)
            examples.append(b"\x0a" + _varint_of_length(len(features)) + features)  # Example.features
        return examples
