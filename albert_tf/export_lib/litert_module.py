"""The functions a LiteRT (.tflite) export converts: a batch of requests of raw text, or of token ids.

  text model   text [N] (and text_b [N] for sentence pairs: "" = none) -> the task's outputs,
               one row per text
  ids model    input_word_ids, input_mask, input_type_ids [N, n] int32 -> the same outputs,
               built-in ops only (for apps that tokenize themselves and cannot link
               tensorflow-text's TFLite kernel)

Outputs by model kind: classifier: logits and probabilities [N, labels] (softmax; a
multi-label classifier's: each label's sigmoid, its labels those at or above the
multi_label_threshold the export's albert_tf.json records; regression: score [N]); encoder
and pretrainer: pooled_output [N, H] (a pretrainer's heads stay out).

The packing needs no ragged ops (TensorFlow Lite has no built-in kernel for RaggedRange or
RaggedTensorToTensor): each row's ids are gathered by position from the tokenizer's flat ids
and row splits. A sequence is as long as its text ([CLS] A [SEP] (B [SEP]), pairs truncated
longest-first as `albert_tf.text.packing`), capped at max_seq_length; the rows of a batch are
padded to the longest, or with `pad_to` to that static length for runtimes that need static
shapes (padded keys get exactly zero attention weight, so each row is its text's answer alone).
"""

import numpy as np
import tensorflow as tf

from albert_tf.models.model_dir_format import recorded_multi_label_threshold, recorded_takes_pairs
from albert_tf.text.special_ids import PADDING_ID
from albert_tf.text.tf_packing import truncated_lengths

ENCODER_INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
# Full int8's gate on the calibration texts (litert_export): classifiers keep the float model's label (a
# multi-label classifier: each label's predicted or not) on this share of them; encoders' pooled outputs and
# regression scores stay this close (mean cosine / relative error).
INT8_MIN_LABEL_AGREEMENT = 0.995
INT8_MIN_COSINE = 0.99
INT8_MAX_SCORE_ERROR = 0.05


def relative_error(outputs, reference):
    """max |outputs - reference| over the largest |reference| (at least 1e-3), over every output of `outputs` (an
    ids model's are some of the text model's)."""
    return max(float(np.abs(outputs[name] - reference[name]).max()) / max(float(np.abs(reference[name]).max()), 1e-3)
               for name in outputs)


class EmbeddingRequests:
    """Encoders and pretrainers: pooled_output [N, H] of N texts (a pretrainer's heads stay out)."""

    takes_pairs = False

    def __init__(self, model, metadata):
        self.model = getattr(model, "encoder", model)

    def output_names(self):
        return ["pooled_output"]

    def export_settings(self):
        """What the export's albert_tf.json records about the file's outputs beyond the checkpoint's record."""
        return {}

    def outputs(self, inputs):
        return {"pooled_output": tf.cast(self.model(inputs, training=False)["pooled_output"], tf.float32)}

    def int8_gate(self, quantized, reference):
        """(passed, what was measured) for full int8 on the calibration texts."""
        a, b = quantized["pooled_output"], reference["pooled_output"]
        norms = np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)
        cosine = float(np.mean((a * b).sum(-1) / norms))
        measured = f"mean cosine similarity of pooled_output {cosine:.4f} (needs {INT8_MIN_COSINE})"
        return cosine >= INT8_MIN_COSINE, measured


class ClassifierRequests:
    """Classifiers: logits and probabilities [N, labels] (softmax; multi-label: each label's sigmoid; regression:
    score [N]). Sentence-pair classifiers take text_b too: those whose albert_tf.json records takes_pairs true (a
    record without it: all but those fine-tuned on a single-sentence GLUE task)."""

    def __init__(self, model, metadata):
        self.model = model
        self.is_regression = bool(metadata.get("is_regression", False))
        self.multi_label = metadata.get("problem_type") == "multi_label"
        self.multi_label_threshold = recorded_multi_label_threshold(metadata)
        self.takes_pairs = recorded_takes_pairs(metadata)

    def output_names(self):
        return ["score"] if self.is_regression else ["logits", "probabilities"]

    def export_settings(self):
        """What the export's albert_tf.json records about the file's outputs beyond the checkpoint's record: a
        multi-label model's threshold (where the checkpoint records none, the default it was read with), which an
        app applies to the probabilities."""
        return {"multi_label_threshold": self.multi_label_threshold} if self.multi_label else {}

    def outputs(self, inputs):
        logits = tf.cast(self.model.classifier(self.model.encoder(inputs, training=False)["pooled_output"]), tf.float32)
        if self.is_regression:
            return {"score": logits[:, 0]}
        return {"logits": logits, "probabilities": tf.sigmoid(logits) if self.multi_label else tf.nn.softmax(logits)}

    def int8_gate(self, quantized, reference):
        """(passed, what was measured) for full int8 on the calibration texts."""
        if self.is_regression:
            error = relative_error(quantized, reference)
            return error <= INT8_MAX_SCORE_ERROR, (f"score error {error:.3g} of the largest score (at most "
                                                   f"{INT8_MAX_SCORE_ERROR:g})")
        if self.multi_label:
            threshold = self.multi_label_threshold
            agreement = float(np.mean((quantized["probabilities"] >= threshold)
                                      == (reference["probabilities"] >= threshold)))
            return agreement >= INT8_MIN_LABEL_AGREEMENT, (f"per-label agreement with the float model "
                                                           f"{agreement:.2%} (needs {INT8_MIN_LABEL_AGREEMENT:.1%})")
        agreement = float(np.mean(quantized["logits"].argmax(-1) == reference["logits"].argmax(-1)))
        return agreement >= INT8_MIN_LABEL_AGREEMENT, (f"label agreement with the float model {agreement:.2%} "
                                                       f"(needs {INT8_MIN_LABEL_AGREEMENT:.1%})")


class TokenClassifierRequests:
    """Token classifiers (WordPiece vocabularies: their op pair gives each piece's offsets): per piece of each text,
    probabilities [N, n, tags] (softmax over the IOB2 tags), unit_starts [N, n] (1 where a piece begins a unit,
    the entity rule's step 1: `entities.unit_tables`), piece_starts and piece_ends [N, n] (its [start, end) in the
    raw text's UTF-8 bytes); every output is 0 outside the text's pieces ([CLS], [SEP], padding), so a row padded
    with zeros is the row answered alone. Each unit's tag is the argmax at its first piece; IOB2 over the units
    gives the entities, each from its first unit's first byte to its last unit's last (`LiteModel` reads them:
    `lite_model.litert_entities`). A text is read up to max_seq_length - 2 pieces. encoder_ids.tflite answers
    probabilities alone."""

    takes_pairs = False
    needs_offsets = True

    def __init__(self, model, metadata, tokenizer):
        from albert_tf.text.entities import unit_tables

        self.model = model
        tables = unit_tables(tokenizer.python_tokenizer)
        self.opens, self.closes = (tf.constant(table.astype(np.int32)) for table in (tables.opens, tables.closes))

    def output_names(self):
        return ["probabilities", "unit_starts", "piece_starts", "piece_ends"]

    def export_settings(self):
        return {}

    def outputs(self, inputs, pieces=None):
        """`pieces`: {"in_text", "piece_starts", "piece_ends"} [N, n] of the text model (`piece_offsets`); None
        for the ids model, whose texts are the positions between [CLS] and the last [SEP]."""
        logits = tf.cast(self.model(inputs, training=False)["logits"], tf.float32)
        if pieces is None:
            positions = tf.range(tf.shape(inputs["input_mask"])[1])[None, :]
            length = tf.reduce_sum(inputs["input_mask"], axis=1, keepdims=True)
            in_text = (positions >= 1) & (positions < length - 1)
        else:
            in_text = pieces["in_text"]
        # (expand_dims: a new axis by slicing converts to a StridedSlice LiteRT has no kernel for.)
        probabilities = tf.nn.softmax(logits) * tf.expand_dims(tf.cast(in_text, tf.float32), -1)
        if pieces is None:
            return {"probabilities": probabilities}
        ids = inputs["input_word_ids"]
        previous = tf.concat([tf.zeros_like(ids[:, :1]), ids[:, :-1]], axis=1)
        first = tf.equal(tf.range(tf.shape(ids)[1])[None, :], 1)
        starts = (tf.gather(self.opens, ids) > 0) | (tf.gather(self.closes, previous) > 0) | first
        return {"probabilities": probabilities, "unit_starts": tf.where(in_text & starts, 1, 0),
                "piece_starts": pieces["piece_starts"], "piece_ends": pieces["piece_ends"]}

    def int8_gate(self, quantized, reference):
        """(passed, what was measured) for full int8: the tag at every unit's first piece kept."""
        at = reference["unit_starts"] > 0
        tags, reference_tags = (outputs["probabilities"].argmax(-1)[at] for outputs in (quantized, reference))
        agreement = float(np.mean(tags == reference_tags))
        return agreement >= INT8_MIN_LABEL_AGREEMENT, (f"unit tag agreement with the float model {agreement:.2%} "
                                                       f"(needs {INT8_MIN_LABEL_AGREEMENT:.1%})")


def piece_offsets(ids, starts, ends, mapping, max_seq_length, pad_to=None):
    """{"in_text", "piece_starts", "piece_ends"} [N, length]: at the positions `pack_requests` gives the text's
    pieces (1 ... its kept pieces), each piece's [start, end) in the raw text's bytes (0 elsewhere), from the
    tokenizer's normalized-text offsets and `mapping` (`LiteRTWordPieceTokenizer.pieces_with_offsets`); gathers
    over dense positions only (LiteRT has no kernel for the ragged ops that would do it)."""
    values_starts, row_starts, lengths = _flat_rows(starts)
    values_ends = tf.cast(ends.flat_values, tf.int32)
    mapping_values, mapping_starts, _ = _flat_rows(mapping)
    keep = tf.minimum(lengths, max_seq_length - 2)
    positions = tf.range(tf.reduce_max(keep + 2) if pad_to is None else pad_to)[None, :]
    in_text = (positions >= 1) & (positions <= keep[:, None])
    index = row_starts[:, None] + positions - 1  # the piece at each position
    byte_starts = _gather_rows(mapping_values, mapping_starts[:, None] + _gather_rows(values_starts, index))
    byte_ends = _gather_rows(mapping_values, mapping_starts[:, None] + _gather_rows(values_ends, index))
    return {"in_text": in_text, "piece_starts": tf.where(in_text, byte_starts, 0),
            "piece_ends": tf.where(in_text, byte_ends, 0)}


# Every layer is computed at every position, the last one too: computing it at [CLS] alone (as the TF Serving
# model does) makes the converter fuse the shared layer's attention weights a second time for that layer, 1.8 MB
# more at albert_base for a twelfth of one request's work.
# What a request returns, per model kind a LiteRT export supports (span labelers answer with text spans,
# which the SavedModel export serves).
REQUESTS_BY_KIND = {"encoder": EmbeddingRequests, "pretrainer": EmbeddingRequests, "classifier": ClassifierRequests,
                    "token_classifier": TokenClassifierRequests}
LITERT_KINDS = tuple(REQUESTS_BY_KIND)


def pack_requests(ids_a, ids_b, has_b, max_seq_length, special_ids, pad_to=None):
    """Token ids of N requests -> the encoder's int32 inputs [N, length], `length` the longest request's (or `pad_to`).

    `ids_a`, `ids_b`: the tokenizer's ids of the texts and of the second texts, one row per request (ragged;
    `ids_b` None for single texts); `has_b`: bool [N], whether each second text is a segment; `special_ids`: the
    tokenizer's ([CLS], [SEP]). Each row equals
    `tf_packing.pack`'s with the padding cut to `length`. (Each text is tokenized on its own: TensorFlow Lite has
    no built-in kernel that concatenates strings. The rows are gathered from the flat ids by position: it has
    none for RaggedRange or RaggedTensorToTensor either.)
    """
    values_a, starts_a, length_a = _flat_rows(ids_a)
    if ids_b is None:
        values_b, starts_b, length_b = tf.zeros([0], tf.int32), tf.zeros_like(starts_a), tf.zeros_like(length_a)
    else:
        values_b, starts_b, length_b = _flat_rows(ids_b)
    length_b = tf.where(has_b, length_b, 0)
    budget = tf.where(has_b, max_seq_length - 3, max_seq_length - 2)
    keep_a, keep_b = truncated_lengths(length_a, length_b, budget)
    lengths = keep_a + 2 + tf.where(has_b, keep_b + 1, 0)
    positions = tf.range(tf.reduce_max(lengths) if pad_to is None else pad_to)[None, :]
    keep_a, keep_b, has_b, lengths = keep_a[:, None], keep_b[:, None], has_b[:, None], lengths[:, None]
    b_start = keep_a + 2
    in_a = (positions >= 1) & (positions <= keep_a)
    in_b = has_b & (positions >= b_start) & (positions < b_start + keep_b)
    in_sequence = positions < lengths
    ids_at_a = _gather_rows(values_a, starts_a[:, None] + positions - 1)  # a[p - 1] at p
    ids_at_b = _gather_rows(values_b, starts_b[:, None] + positions - b_start)  # b[p - b_start] at p
    word_ids = tf.where(positions == 0, special_ids.cls, tf.where(in_a, ids_at_a, tf.where(
        in_b, ids_at_b, tf.where(in_sequence, special_ids.sep, PADDING_ID))))
    # tf.where, not a cast: the converter folds the encoder's negative-index check of a cast bool into a ZEROS_LIKE
    # of bools, which no LiteRT kernel takes.
    return {"input_word_ids": word_ids, "input_mask": tf.where(in_sequence, 1, 0),
            "input_type_ids": tf.where(has_b & (positions >= b_start) & in_sequence, 1, 0)}


def one_per_text(text, text_b):
    """`text_b` as it is when it holds one string per text; otherwise the request fails (a RESHAPE that cannot
    hold it: LiteRT has no Assert kernel), where a single text_b would broadcast to every text unnoticed."""
    return tf.reshape(text_b, tf.shape(text))


def _flat_rows(ids):
    """(flat int32 ids, each row's start in them, each row's length) of the tokenizer's ragged [N, (n)] ids."""
    splits = tf.cast(ids.row_splits, tf.int32)
    return tf.cast(ids.flat_values, tf.int32), splits[:-1], splits[1:] - splits[:-1]


def _gather_rows(values, index):
    """values[index], with any index outside `values` reading a 0 (the positions it lands on are masked)."""
    padded = tf.concat([values, [0]], axis=0)  # so an empty `values` has something to read
    return tf.gather(padded, tf.clip_by_value(index, 0, tf.size(values)))


class LiteRTModule(tf.Module):
    """The converted functions (`text_function`, `ids_function`) of one checkpoint's model.

    Args:
      tokenizer: a `TFAlbertTokenizer` with the checkpoint's recorded preprocessing.
      model: the checkpoint's Keras model; metadata: its albert_tf.json.
      max_seq_length: tokens per request at most; pad_to: a static length (<= max_seq_length) or None.
    """

    def __init__(self, tokenizer, model, metadata, max_seq_length, pad_to=None):
        super().__init__(name="albert_litert")
        kind = metadata["model"]
        if kind not in REQUESTS_BY_KIND:
            raise ValueError(f"a LiteRT export takes a {', '.join(LITERT_KINDS)}; this checkpoint holds a {kind!r} "
                             "model (span labelers: export SavedModels, whose serving model returns answer text)")
        requests = REQUESTS_BY_KIND[kind]
        # A tagger's requests read each piece's offsets in the raw text, which the tokenizer then has to give.
        self.needs_offsets = getattr(requests, "needs_offsets", False)
        if self.needs_offsets and not hasattr(tokenizer, "pieces_with_offsets"):
            raise ValueError(f"a {kind!r} model's LiteRT file needs each piece's offsets in the raw text, which only "
                             "the WordPiece op pair gives (tensorflow-text's SentencePiece op gives ids alone); export "
                             "a SavedModel, whose serving model returns entities with character offsets")
        self.requests = requests(model, metadata, tokenizer) if self.needs_offsets else requests(model, metadata)
        self.model = self.requests.model
        self.tokenizer = tokenizer
        self.pairs = self.requests.takes_pairs
        self.max_seq_length = max_seq_length
        self.pad_to = pad_to
        self.text_function = tf.function(
            self._respond_to_pair if self.pairs else self._respond_to_text,
            input_signature=[tf.TensorSpec([None], tf.string, name="text")]
            + ([tf.TensorSpec([None], tf.string, name="text_b")] if self.pairs else []))
        self.ids_function = tf.function(
            self._respond_to_ids,
            input_signature=[tf.TensorSpec([None, pad_to], tf.int32, name=name) for name in ENCODER_INPUT_NAMES])

    def output_names(self):
        return self.requests.output_names()

    def _respond_to_text(self, text):
        if self.needs_offsets:
            ids, starts, ends, mapping = self.tokenizer.pieces_with_offsets(text)
            inputs = pack_requests(ids, None, tf.zeros_like(text, tf.bool), self.max_seq_length,
                                   self.tokenizer.special_ids, self.pad_to)
            return self.requests.outputs(inputs, piece_offsets(ids, starts, ends, mapping, self.max_seq_length,
                                                               self.pad_to))
        return self.requests.outputs(pack_requests(self.tokenizer(text), None, tf.zeros_like(text, tf.bool),
                                                   self.max_seq_length, self.tokenizer.special_ids, self.pad_to))

    def _respond_to_pair(self, text, text_b):
        text_b = one_per_text(text, text_b)
        return self.requests.outputs(pack_requests(self.tokenizer(text), self.tokenizer(text_b),
                                                   tf.not_equal(text_b, ""), self.max_seq_length,
                                                   self.tokenizer.special_ids, self.pad_to))

    def _respond_to_ids(self, input_word_ids, input_mask, input_type_ids):
        return self.requests.outputs({"input_word_ids": input_word_ids, "input_mask": input_mask,
                                      "input_type_ids": input_type_ids})


class PackingModule(tf.Module):
    """model.tflite's tokenizer and packing alone: text [N] and text_b [N] ("" = none) -> the three int32 inputs
    [N, n]. Converted on its own, it shows in LiteRT which ids a text model sees (tests and benchmarks compare
    them with the Python tokenizer's)."""

    def __init__(self, tokenizer, max_seq_length):
        super().__init__(name="albert_litert_packing")
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                  tf.TensorSpec([None], tf.string, name="text_b")])
    def text(self, text, text_b):
        text_b = one_per_text(text, text_b)
        return pack_requests(self.tokenizer(text), self.tokenizer(text_b), tf.not_equal(text_b, ""),
                             self.max_seq_length, self.tokenizer.special_ids)
