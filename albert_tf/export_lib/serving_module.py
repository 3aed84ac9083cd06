"""The TF Serving SavedModel: raw text in, task outputs out, tokenized in-graph.

Signatures:
  serve_text       text [batch] -> outputs (below): single texts. Every kind
                   but the span labeler, whose text_b is its context.
  serving_default  text [batch], text_b [batch] -> outputs: pairs ("" in a row:
                   that row has none). TF Serving fills in a left-out text_b
                   from the SignatureDef's default (no second segments);
                   TensorFlow's signature functions in Python take every input.
  serve_examples   examples [batch]: serialized tf.Example with bytes features
                   `text` and optional `text_b` -> outputs

Outputs by model kind:
  encoder / pretrainer  pooled_output [batch, H]; embedding [batch, H] (mean of
                        the token vectors, L2-normalized: for similarity search).
                        Either may be left out (export's --serving_outputs):
                        pooled_output alone computes the last layer at [CLS] only
  classifier            probabilities [batch, labels] (softmax), label_id, label (its name);
                        regression: score [batch];
                        multi-label (albert_tf.json's problem_type): probabilities
                        [batch, labels] (each label's sigmoid), predicted [batch, labels]
                        (bool: probability >= the recorded multi_label_threshold) and
                        label_names [batch, labels] (every label's name, the same in each
                        row: TF Serving's row format answers every output per row). A REST
                        client reads one row as
                          {"probabilities": [0.91, 0.08, 0.64],
                           "predicted": [true, false, true],
                           "label_names": ["billing", "bug", "other"]}
                        and takes the names where predicted is true (load_export does).
  span_labeler          question = text, context = text_b: start, end (sequence
                        positions of the answer's first and last token), score
                        (start + end logit), answer (the context's own text of
                        that span, from the tokenizer's byte offsets). With no
                        context left: start = end = -1, answer "", score the
                        lowest float32. context_characters_read [batch] int32:
                        how many of the context's characters (from its start)
                        the answer was searched in: all of them where every
                        context token fits in max_seq_length beside the
                        question (and the context is within
                        tf_packing.MAX_CHARACTERS), else up to the end of the
                        last token that fits; fewer than the context has means
                        it was cut (load_export warns naming the context).
  squad_v2_span_labeler as span_labeler, from the best valid span of the
                        original SQuAD 2.0 head's beam (score: start + end
                        log-probability), and no_answer_score [batch], its
                        answerability logit: above a threshold tuned on dev
                        (run_squad's null_score_diff_threshold), no answer.
  token_classifier      single texts (a row with a non-empty text_b fails the
                        request) -> their entities, by the rule of
                        albert_tf.text.entities (the whole text's pieces grouped
                        into units: a word, a punctuation mark, a piece of text
                        without spaces (Chinese, Japanese, Korean); each unit's
                        tag at its reading piece, entities read from the IOB2
                        unit tags as conlleval reads them). Per text, padded to E columns, E
                        the most entities of any text in the request (at least 1):
                          entity_count [batch] int32: how many columns hold one
                          entity_type  [batch, E] string ("PER"; "" padding)
                          entity_text  [batch, E] string: the text's own characters
                          entity_start [batch, E] int32, entity_end [batch, E] int32:
                            [start, end) in CHARACTERS (Unicode code points, Python
                            str indices) of the request's text, whitespace trimmed;
                            -1 padding
                          entity_score [batch, E] float32: the mean over the
                            entity's units of the softmax probability of each
                            unit's tag; 0 padding
                          characters_read [batch] int32: how many of the text's
                            characters (from its start) were read: its length, or
                            tf_packing.MAX_CHARACTERS (20,000) for a longer text,
                            whose entities after that are not found
                        A REST client reads one row ("instances": [{"text": ...}]) as
                          {"entity_count": 2, "entity_type": ["PER", "LOC"],
                           "entity_text": ["John Smith", "Zürich"],
                           "entity_start": [0, 20], "entity_end": [10, 26],
                           "entity_score": [0.97, 0.91], "characters_read": 27}
                        and takes the first entity_count columns (load_export
                        does). A text longer than max_seq_length - 2 pieces is
                        read in windows half a window apart, all in the request
                        (max_batch_size windows per model run); each unit's tag
                        from the window that gives its reading piece the most
                        context. A text is read up to tf_packing.MAX_CHARACTERS
                        (20,000) characters; entities after that are not found,
                        and characters_read below the text's length says so
                        (load_export warns naming the text): send a longer text
                        in parts. Memory grows linearly with the characters a
                        request holds (a few MB per 20,000-character text
                        besides the model), so max_batch_size such texts are
                        what a request can cost.

With `xla=True` (export's --serving_xla) the model part of every request (the
encoder and the task head; not the tokenizer) runs as one XLA program. XLA
compiles a program per input shape, so requests are padded up to buckets:
lengths 16, 32, 64, ... and max_seq_length, batch sizes 1, 2, 4, 8 and then
multiples of 8 (empty rows and padded keys change no output; their rows are cut
off again). The first request of each bucket waits for its compilation
(seconds), unless the export's warm-up records (serving_warmup) compiled it while
TF Serving loaded the model. TF Serving runs such a model only when started with
--xla_cpu_compilation_enabled=true; without it the first request fails.
"""

import tensorflow as tf

from albert_tf.text.entities import OUTSIDE, entity_types, unit_tables
from albert_tf.text.preprocessing import whitespace_codepoints
from albert_tf.text.special_ids import PADDING_ID
from albert_tf.text.tf_packing import (NO_SECOND_SEGMENTS, TEXT_B_SPEC, TEXT_SPEC, clean_text, encode_text, pack,
                                      second_segments, split_batch)
from albert_tf.text.word_pieces import default_doc_stride
from albert_tf.export_lib.bfloat16_export import answer_agreement, cosine_agreement, score_agreement
from albert_tf.export_lib.serving_requests import DEFAULT_MAX_BATCH_SIZE, SIGNATURE, TEXT_SIGNATURE
from albert_tf.export_lib.token_offsets import check_offsets_measurable, tokenize_with_offsets
from albert_tf.models.albert_token_classifier import recorded_doc_stride
from albert_tf.models.model_dir_format import recorded_multi_label_threshold
from albert_tf.settings import SettingError

# Longest answer considered, in tokens (the original run_squad's max_answer_length).
MAX_ANSWER_TOKENS = 30
# The outputs an embedding model (an encoder or pretrainer, no task head) may serve.
EMBEDDING_OUTPUTS = ("pooled_output", "embedding")
# XLA's shape buckets (see above): the shortest length bucket, and the batch size from which buckets are
# multiples of it rather than powers of two (at most 7 empty rows computed for larger batches).
MIN_LENGTH_BUCKET = 16
BATCH_BUCKET_STEP = 8


def trim_padding(inputs):
    """The packed inputs cut to the batch's longest row.

    Padded keys add -10000 to the attention logits, so they get exactly zero weight (exp underflows in
    float32): the real tokens' outputs, the pooled [CLS] vector and the masked mean are those of the
    fully padded batch. Short requests then cost their own length, not --max_seq_length.
    """
    # At least one position: an empty batch (whose max is the lowest int32) still has a [CLS] column to pool.
    length = tf.maximum(tf.reduce_max(tf.reduce_sum(inputs["input_mask"], axis=1)), 1)
    return {name: value[:, :length] for name, value in inputs.items()}


def length_buckets(max_seq_length):
    """16, 32, 64, ... below max_seq_length, then max_seq_length itself."""
    buckets, length = [], MIN_LENGTH_BUCKET
    while length < max_seq_length:
        buckets.append(length)
        length *= 2
    return buckets + [max_seq_length]


def _round_up_to(buckets, value):
    """The smallest of the ascending `buckets` that is >= value (value must not exceed the last)."""
    buckets = tf.constant(buckets, tf.int32)
    return tf.gather(buckets, tf.searchsorted(buckets, tf.reshape(value, [1]))[0])


def pad_to_buckets(inputs, max_seq_length):
    """The packed inputs padded up to the next length bucket and batch bucket.

    Padding columns are padded keys (zero mask: exactly zero attention weight) and padding rows are
    empty rows: neither changes a real row's outputs. XLA then sees a bounded set of shapes.
    """
    ids = inputs["input_word_ids"]
    batch, length = tf.shape(ids)[0], tf.shape(ids)[1]
    powers_of_two = [2 ** i for i in range(BATCH_BUCKET_STEP.bit_length())]
    # (Both branches are computed: the clip keeps the small-batch lookup in range.)
    small_batch = _round_up_to(powers_of_two, tf.clip_by_value(batch, 1, BATCH_BUCKET_STEP))
    padded_batch = tf.where(batch <= BATCH_BUCKET_STEP, small_batch,
                            -(-batch // BATCH_BUCKET_STEP) * BATCH_BUCKET_STEP)
    padded_length = _round_up_to(length_buckets(max_seq_length), length)
    return {name: tf.pad(value, [[0, padded_batch - batch], [0, padded_length - length]])
            for name, value in inputs.items()}


class ServingModule(tf.Module):
    """What every model kind's serving module shares: the signatures, tokenization, XLA buckets.

    A kind's subclass says what a request returns (`_respond`) and what its model computes
    (`_model_outputs`); `serving_module()` picks the subclass from the checkpoint's kind.

    Args:
      tokenizer: an in-graph tokenizer layer (`TFAlbertTokenizer` or `TFWordPieceTokenizer`).
      max_seq_length: tokens per input row.
      model: the checkpoint's Keras model (an encoder, or a model with an `.encoder`).
      metadata: its albert_tf.json (`model` is the kind; classifiers add `label_names`, `is_regression`,
        `problem_type` and `multi_label_threshold`).
      xla: run the model part of each request as an XLA program on bucketed shapes (module docstring).
      outputs: which outputs to serve, where the kind offers a choice (EmbeddingServing); None elsewhere.
    """

    # Whether a request's text_b is required context (a span labeler's): no serve_text signature, and
    # warm-up requests carry one.
    takes_context = False
    # Whether its answers carry character offsets into the request's text (token_offsets).
    answers_with_offsets = False

    def __init__(self, tokenizer, max_seq_length, model, metadata, xla=False, outputs=None,
                 max_batch_size=DEFAULT_MAX_BATCH_SIZE):
        super().__init__(name="albert_serving")
        if self.answers_with_offsets:
            check_offsets_measurable(tokenizer)  # refuses it here, not inside a traced function
        if not isinstance(max_batch_size, int) or isinstance(max_batch_size, bool) or max_batch_size < 1:
            raise SettingError(f"<serving_max_batch_size>={max_batch_size!r}: must be a positive integer (texts per "
                               "request)")
        self.max_batch_size = max_batch_size
        # Saved with the model, so a Python caller (load_export) splits larger batches into requests it accepts.
        self.max_batch_size_variable = tf.Variable(max_batch_size, trainable=False, name="max_batch_size")
        self.kind = metadata["model"]
        if outputs is not None:
            raise ValueError(f"a {self.kind} model's serving outputs are fixed; choosing outputs is for encoders "
                             "and pretrainers")
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.model = model
        self.xla = xla
        if xla:
            self._compiled_model_outputs = tf.function(self._model_outputs, jit_compile=True)

    @tf.function(input_signature=[TEXT_SPEC, TEXT_B_SPEC])
    def serve(self, text, text_b=NO_SECOND_SEGMENTS):
        return self._respond(text, text_b)

    @tf.function(input_signature=[TEXT_SPEC])
    def serve_text(self, text):
        return self._respond(text, NO_SECOND_SEGMENTS)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve_examples(self, examples):
        features = tf.io.parse_example(examples, {
            "text": tf.io.FixedLenFeature([], tf.string),
            "text_b": tf.io.FixedLenFeature([], tf.string, default_value=""),
        })
        return self.serve(features["text"], features["text_b"])

    def signatures(self):
        signatures = {SIGNATURE: self.serve, "serve_examples": self.serve_examples}
        if not self.takes_context:
            signatures[TEXT_SIGNATURE] = self.serve_text
        return signatures

    def export_settings(self):
        """What the export's albert_tf.json records about this serving model beyond the kind."""
        return {"serving_max_batch_size": self.max_batch_size}

    def _respond(self, text, text_b):
        """The signature outputs for a batch of requests."""
        raise NotImplementedError

    def _model_outputs(self, inputs):
        """The model's per-row outputs that `_respond` reads: float32 [batch, ...]."""
        raise NotImplementedError

    def _encoded(self, text, text_b):
        return trim_padding(encode_text(self.tokenizer, self._within_batch_limit(text), text_b, self.max_seq_length))

    def _within_batch_limit(self, text):
        """`text`, once its rows are known to be at most max_batch_size: a request of a hundred thousand rows
        would otherwise run until the server runs out of memory (tens of GB even at albert_tiny)."""
        rows = tf.size(text)
        check = tf.debugging.Assert(
            rows <= self.max_batch_size,
            ["albert_tf: a request of", rows, f"texts; this model takes at most {self.max_batch_size} per request "
             "(albert-export --serving_max_batch_size): split it into several requests"])
        with tf.control_dependencies([check]):
            return tf.identity(text)

    def agreement_with(self, served, reference):
        """(passed, {figure: value}, one line) of this module's answers `served` ({output: numpy}) against
        `reference`, another precision's answers to the same requests: the measure a lower-precision export's
        gate reads (`bfloat16_export`), by what this kind answers."""
        raise NotImplementedError

    def _run_model(self, inputs):
        if not self.xla:
            return self._model_outputs(inputs)
        batch = tf.shape(inputs["input_word_ids"])[0]
        outputs = self._compiled_model_outputs(pad_to_buckets(inputs, self.max_seq_length))
        # Only rows need cutting off: the one per-position output, the span labeler's logits, comes from
        # rows packed to max_seq_length, which is always the last length bucket.
        return {name: value[:batch] for name, value in outputs.items()}


class EmbeddingServing(ServingModule):
    """Encoders and pretrainers: pooled_output and/or embedding (`outputs`, some of EMBEDDING_OUTPUTS,
    default both). A pretrainer's heads stay out of the SavedModel."""

    def __init__(self, tokenizer, max_seq_length, model, metadata, xla=False, outputs=None,
                 max_batch_size=DEFAULT_MAX_BATCH_SIZE):
        super().__init__(tokenizer, max_seq_length, getattr(model, "encoder", model), metadata, xla=xla,
                         max_batch_size=max_batch_size)
        self.outputs = EMBEDDING_OUTPUTS if outputs is None else tuple(outputs)
        unknown = sorted(set(self.outputs) - set(EMBEDDING_OUTPUTS))
        if unknown or not self.outputs:
            raise ValueError(f"serving outputs {', '.join(unknown) or '(none)'}: choose from "
                             f"{', '.join(EMBEDDING_OUTPUTS)}")

    def export_settings(self):
        return {**super().export_settings(), "serving_outputs": list(self.outputs)}

    def agreement_with(self, served, reference):
        return cosine_agreement(served, reference)

    def _respond(self, text, text_b):
        return self._run_model(self._encoded(text, text_b))

    def _model_outputs(self, inputs):
        if "embedding" not in self.outputs:
            # The pooled output reads [CLS] alone: the last layer is computed at that row only.
            # (Cast: a bfloat16 export's pooler computes in bfloat16; every export answers float32.)
            return {"pooled_output": tf.cast(self.model.first_token_pooled_output(inputs, training=False), tf.float32)}
        outputs = self.model(inputs, training=False)
        mask = tf.cast(inputs["input_mask"], tf.float32)[:, :, None]
        mean = (tf.reduce_sum(tf.cast(outputs["sequence_output"], tf.float32) * mask, 1)
                / tf.maximum(tf.reduce_sum(mask, 1), 1.0))
        embeddings = {"pooled_output": tf.cast(outputs["pooled_output"], tf.float32),
                      "embedding": tf.math.l2_normalize(mean, axis=-1)}
        return {name: embeddings[name] for name in self.outputs}


class ClassifierServing(ServingModule):
    """Classifiers: probabilities, label_id and label (its name); multi-label: probabilities, predicted and
    label_names (module docstring); regression: score."""

    def __init__(self, tokenizer, max_seq_length, model, metadata, xla=False, outputs=None,
                 max_batch_size=DEFAULT_MAX_BATCH_SIZE):
        super().__init__(tokenizer, max_seq_length, model, metadata, xla=xla, outputs=outputs,
                         max_batch_size=max_batch_size)
        self.is_regression = bool(metadata.get("is_regression", False))
        # Saved with the model, so a Python caller (load_export) can say that single texts are not what a classifier
        # fine-tuned on pairs was trained on (its albert_tf.json records takes_pairs).
        self.takes_pairs_variable = tf.Variable(metadata.get("takes_pairs") is True, trainable=False,
                                                name="takes_pairs")
        self.multi_label = metadata.get("problem_type") == "multi_label"
        self.multi_label_threshold = recorded_multi_label_threshold(metadata)
        if not self.is_regression:
            names = metadata.get("label_names") or [str(i) for i in range(int(metadata["num_labels"]))]
            if len(names) != int(metadata["num_labels"]):
                raise ValueError(f"label_names has {len(names)} names for num_labels={metadata['num_labels']}")
            self.label_names = tf.constant(names)

    def agreement_with(self, served, reference):
        if self.is_regression:
            return score_agreement(served["score"], reference["score"])
        if self.multi_label:
            return answer_agreement(served["predicted"] == reference["predicted"], "per-label agreement")
        return answer_agreement(served["label_id"] == reference["label_id"], "label agreement")

    def export_settings(self):
        if not self.multi_label:
            return super().export_settings()
        # Recorded even where the checkpoint's record has none (a Hugging Face conversion): what the graph uses.
        return {**super().export_settings(), "multi_label_threshold": self.multi_label_threshold}

    def _respond(self, text, text_b):
        logits = self._run_model(self._encoded(text, text_b))["logits"]
        if self.is_regression:
            return {"score": logits[:, 0]}
        if self.multi_label:
            probabilities = tf.sigmoid(logits)
            return {"probabilities": probabilities, "predicted": probabilities >= self.multi_label_threshold,
                    "label_names": tf.tile(self.label_names[None, :], [tf.shape(logits)[0], 1])}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"probabilities": tf.nn.softmax(logits), "label_id": label_id,
                "label": tf.gather(self.label_names, label_id)}

    def _model_outputs(self, inputs):
        # The head reads [CLS] alone: the last layer is computed at that row only (same logits).
        return {"logits": tf.cast(self.model.head_outputs(inputs, training=False)["logits"], tf.float32)}


class SpanLabelerServing(ServingModule):
    """Span labelers: question = text, context = text_b -> start, end, score, answer (module docstring)."""

    takes_context = True
    answers_with_offsets = True

    def agreement_with(self, served, reference):
        return answer_agreement((served["start"] == reference["start"]) & (served["end"] == reference["end"]),
                                "answer span (start and end) agreement")

    def _model_outputs(self, inputs):
        outputs = self.model(inputs, training=False)
        return {name: tf.cast(outputs[name], tf.float32) for name in ("start_logits", "end_logits")}

    def _respond(self, question, context):
        question = self._within_batch_limit(question)
        context, has_context = second_segments(question, context)
        texts = clean_text(tf.concat([question, context], axis=0))
        batch = tf.shape(question)[0]
        ids, starts, ends = tokenize_with_offsets(self.tokenizer, texts)
        ids_question, ids_context = split_batch(ids, batch)
        inputs = pack(ids_question, ids_context, has_context, self.max_seq_length, self.tokenizer.special_ids)
        outputs = self._run_model(inputs)

        # Context tokens: segment B without its closing [SEP].
        positions = tf.range(self.max_seq_length)[None, :]
        length = tf.reduce_sum(inputs["input_mask"], axis=1, keepdims=True)
        context_start = length - tf.reduce_sum(inputs["input_type_ids"], axis=1, keepdims=True)
        in_context = (positions >= context_start) & (positions < length - 1) & has_context[:, None]
        start, end, score, found = self._best_span(outputs, in_context)
        start, end = tf.where(found, start, -1), tf.where(found, end, -1)

        # Sequence positions -> context tokens -> bytes of the context.
        first_token = tf.maximum(start - context_start[:, 0], 0)[:, None]
        last_token = tf.maximum(end - context_start[:, 0], 0)[:, None]
        _, context_starts = split_batch(starts, batch)
        _, context_ends = split_batch(ends, batch)
        byte_start = tf.gather(context_starts.to_tensor(0, shape=[None, self.max_seq_length]), first_token,
                               batch_dims=1)[:, 0]
        byte_end = tf.gather(context_ends.to_tensor(0, shape=[None, self.max_seq_length]), last_token,
                             batch_dims=1)[:, 0]
        answer = tf.strings.substr(texts[batch:], byte_start, tf.maximum(byte_end - byte_start, 0))
        return {"start": start, "end": end, "score": score, "answer": tf.where(found, answer, ""),
                "context_characters_read": _characters_read(texts[batch:], context_ends, in_context,
                                                            self.max_seq_length),
                **self._other_outputs(outputs)}

    def _best_span(self, outputs, in_context):
        """(start, end, score, found) per row: the valid span (on context tokens, start <= end, at most
        MAX_ANSWER_TOKENS) with the highest start + end logit, over every pair of positions."""
        positions = tf.range(self.max_seq_length)[None, :]
        scores = outputs["start_logits"][:, :, None] + outputs["end_logits"][:, None, :]
        valid = (in_context[:, :, None] & in_context[:, None, :]
                 & (positions[:, :, None] <= positions[:, None, :])
                 & (positions[:, None, :] - positions[:, :, None] < MAX_ANSWER_TOKENS))
        flat = tf.reshape(tf.where(valid, scores, tf.float32.min), [tf.shape(scores)[0], -1])
        best = tf.argmax(flat, axis=-1, output_type=tf.int32)
        return (best // self.max_seq_length, best % self.max_seq_length, tf.reduce_max(flat, axis=-1),
                tf.reduce_any(in_context, axis=1))

    def _other_outputs(self, outputs):
        """Outputs besides the span's."""
        return {}


class SquadV2SpanLabelerServing(SpanLabelerServing):
    """The original SQuAD 2.0 head: the best valid span of its beam, and its no_answer_score (module docstring)."""

    def _model_outputs(self, inputs):
        outputs = self.model(inputs, training=False)
        names = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index", "cls_logits")
        return {name: tf.cast(outputs[name], tf.float32) for name in names}

    def _best_span(self, outputs, in_context):
        # Each of the start_n_top starts comes with end_n_top ends: entry k * end_n_top + j of the ends.
        ends_per_start = self.model.end_n_top
        starts = tf.repeat(tf.cast(outputs["start_top_index"], tf.int32), ends_per_start, axis=1)
        ends = tf.cast(outputs["end_top_index"], tf.int32)
        valid = (tf.gather(in_context, starts, batch_dims=1) & tf.gather(in_context, ends, batch_dims=1)
                 & (starts <= ends) & (ends - starts < MAX_ANSWER_TOKENS))
        scores = tf.repeat(outputs["start_top_log_probs"], ends_per_start, axis=1) + outputs["end_top_log_probs"]
        scores = tf.where(valid, scores, tf.float32.min)
        best = tf.argmax(scores, axis=-1, output_type=tf.int32)[:, None]
        return (tf.gather(starts, best, batch_dims=1)[:, 0], tf.gather(ends, best, batch_dims=1)[:, 0],
                tf.reduce_max(scores, axis=-1), tf.reduce_any(valid, axis=1))

    def _other_outputs(self, outputs):
        return {"no_answer_score": outputs["cls_logits"]}


class TokenClassifierServing(ServingModule):
    """Token classifiers (entity taggers): single texts -> their entities with character offsets, padded per
    text (module docstring), by the rule of `albert_tf.text.entities`, which
    `AlbertTokenClassifier.predict_entities` applies in Python."""

    answers_with_offsets = True

    def agreement_with(self, served, reference):
        # Per text, not per entity: a long text's run of entities, shifted by one flipped tag, would outweigh the rest.
        def entities(outputs, row):
            return [(outputs["entity_type"][row, i], int(outputs["entity_start"][row, i]),
                     int(outputs["entity_end"][row, i])) for i in range(int(outputs["entity_count"][row]))]

        return answer_agreement([entities(served, row) == entities(reference, row)
                                 for row in range(len(reference["entity_count"]))],
                                "entity agreement (texts with the same entities)")

    def __init__(self, tokenizer, max_seq_length, model, metadata, xla=False, outputs=None,
                 max_batch_size=DEFAULT_MAX_BATCH_SIZE):
        super().__init__(tokenizer, max_seq_length, model, metadata, xla=xla, outputs=outputs,
                         max_batch_size=max_batch_size)
        names = list(metadata.get("label_names") or [])
        if len(names) != int(metadata["num_labels"]):
            raise ValueError(f"a token classifier whose albert_tf.json records {len(names)} label_names for "
                             f"num_labels={metadata['num_labels']}: its entities are read from its IOB2 tag names; "
                             "record them (label_names)")
        types = entity_types(names)
        self.num_labels = len(names)
        self.entity_types = tf.constant(types)
        # Per tag id: its entity type's index (-1 for O), and whether it is an I- tag.
        self.label_types = tf.constant([-1 if name == OUTSIDE else types.index(name[2:]) for name in names], tf.int32)
        self.label_inside = tf.constant([name.startswith("I-") for name in names])
        # Per piece id, what the unit rule reads of it (entities.unit_tables): a bare `▁`; starts a unit; the
        # piece after it starts one.
        tables = unit_tables(tokenizer.python_tokenizer)
        self.piece_bare, self.piece_opens, self.piece_closes = (tf.constant(table) for table in (
            tables.bare, tables.opens, tables.closes))
        # Windows as the Python reader cuts them (word_pieces.sentence_windows): starts `stride` pieces apart.
        self.window = max_seq_length - 2
        # The model's own stride, else the one its albert_tf.json records for windows of this length (the windows
        # it was trained and evaluated on: a model loaded from its directory does not carry it).
        stride = getattr(model, "doc_stride", None) or recorded_doc_stride(metadata, None, max_seq_length)
        self.stride = min(stride or default_doc_stride(max_seq_length), self.window)

    def _model_outputs(self, inputs):
        return {"logits": tf.cast(self.model(inputs, training=False)["logits"], tf.float32)}

    def _respond(self, text, text_b):
        texts = clean_text(self._single_texts(self._within_batch_limit(text), text_b))
        ids, byte_starts, byte_ends = tokenize_with_offsets(self.tokenizer, texts)
        piece_logits = self._piece_logits(ids)

        # Units (entities.py, rule 1): a text's first piece starts one, and a piece that opens one or follows a
        # piece that closes one, unless it follows a bare `▁`; a unit's tag is read at its first piece, or at the
        # piece after a bare `▁` that starts it.
        piece_rows = ids.value_rowids()
        flat_ids = ids.flat_values
        index = tf.range(tf.size(flat_ids, out_type=tf.int64))
        before = tf.gather(flat_ids, tf.maximum(index - 1, 0))
        starts_word = tf.equal(index, tf.gather(ids.row_starts(), piece_rows)) | (
            ~tf.gather(self.piece_bare, before)
            & (tf.gather(self.piece_opens, flat_ids) | tf.gather(self.piece_closes, before)))
        word_first = tf.where(starts_word)[:, 0]
        words = tf.size(word_first, out_type=tf.int64)
        word_last = tf.math.unsorted_segment_max(index, tf.cumsum(tf.cast(starts_word, tf.int64)) - 1, words)
        word_rows = tf.gather(piece_rows, word_first)
        word_reading = word_first + tf.cast(tf.gather(self.piece_bare, tf.gather(flat_ids, word_first))
                                            & (word_last > word_first), tf.int64)
        probabilities = tf.nn.softmax(tf.gather(piece_logits, word_reading))
        tags = tf.argmax(probabilities, axis=-1, output_type=tf.int32)

        # Entities as conlleval reads IOB2: I-TYPE continues an entity of its type in the same text, any other
        # tag but O starts one.
        word_type = tf.gather(self.label_types, tags)
        continues = (tf.gather(self.label_inside, tags) & tf.equal(word_rows, _previous(word_rows, -1))
                     & tf.equal(word_type, _previous(word_type, -1)))
        in_entity = word_type >= 0
        starts_entity = in_entity & ~continues
        entity_of_word = tf.boolean_mask(tf.cumsum(tf.cast(starts_entity, tf.int64)) - 1, in_entity)
        entity_first = tf.where(starts_entity)[:, 0]
        entities = tf.size(entity_first, out_type=tf.int64)
        entity_last = tf.math.unsorted_segment_max(tf.boolean_mask(tf.range(words), in_entity), entity_of_word,
                                                   entities)
        score = tf.math.unsorted_segment_mean(tf.boolean_mask(tf.reduce_max(probabilities, axis=-1), in_entity),
                                              entity_of_word, entities)
        rows = tf.gather(word_rows, entity_first)
        start = tf.gather(byte_starts.flat_values, tf.gather(word_first, entity_first))
        end = tf.maximum(start, tf.gather(byte_ends.flat_values, tf.gather(word_last, entity_last)))
        entity_text, start, end = _trimmed_spans(texts, rows, start, end)

        batch = tf.shape(texts, out_type=tf.int64)[0]
        per_text = tf.RaggedTensor.from_value_rowids(rows, rows, nrows=batch, validate=False)
        # At least one column: a batch without entities still answers every output per row.
        shape = tf.stack([batch, tf.maximum(tf.reduce_max(per_text.row_lengths()), 1)])

        def padded(values, padding):
            return per_text.with_flat_values(values).to_tensor(padding, shape=shape)

        return {"entity_count": tf.cast(per_text.row_lengths(), tf.int32),
                "entity_type": padded(tf.gather(self.entity_types, tf.gather(word_type, entity_first)), ""),
                "entity_text": padded(entity_text, ""),
                "entity_start": padded(tf.cast(start, tf.int32), -1),
                "entity_end": padded(tf.cast(end, tf.int32), -1),
                "entity_score": padded(score, 0.0),
                # Fewer than the text's own characters: it was cut (clean_text), entities after these not searched.
                "characters_read": tf.strings.length(texts, unit="UTF8_CHAR")}

    def _single_texts(self, text, text_b):
        """`text`, once no request row has a second segment: a tagger reads single texts."""
        _, has_b = second_segments(text, text_b)
        check = tf.debugging.Assert(~tf.reduce_any(has_b), [
            "albert_tf: a token classifier tags single texts; send text alone (serve_text) or with text_b empty"])
        with tf.control_dependencies([check]):
            return tf.identity(text)

    def _piece_logits(self, ids):
        """Flat [pieces, labels]: each piece's logits in the window that gives it the most context.

        A text of more than `window` pieces is cut into windows `stride` pieces apart, each packed as
        [CLS] pieces [SEP]; a piece's score in a window is min(pieces left of it, pieces right of it) + 0.01 *
        the window's length, and the first window of the best score wins (`sliding_windows.max_context_window`,
        in float64 as Python computes it).
        """
        window, stride = self.window, self.stride
        pieces = ids.row_lengths()
        windows = 1 + tf.maximum(pieces - window + stride - 1, 0) // stride  # a text without pieces: one, empty
        text_of_window = tf.repeat(tf.range(tf.size(pieces, out_type=tf.int64)), windows)
        window_start = (tf.range(tf.reduce_sum(windows))
                        - tf.gather(tf.cumsum(windows, exclusive=True), text_of_window)) * stride
        length = tf.minimum(tf.gather(pieces, text_of_window) - window_start, window)[:, None]
        positions = tf.range(self.max_seq_length, dtype=tf.int64)[None, :]
        offset = positions - 1  # [CLS] comes first
        in_window = (positions >= 1) & (positions <= length)
        piece = (tf.gather(ids.row_starts(), text_of_window) + window_start)[:, None] + offset
        flat_ids = tf.concat([tf.cast(ids.flat_values, tf.int32), [0]], axis=0)  # something to read when empty
        special_ids = self.tokenizer.special_ids
        word_ids = tf.where(positions == 0, special_ids.cls, tf.where(
            in_window, tf.gather(flat_ids, tf.clip_by_value(piece, 0, tf.size(flat_ids, tf.int64) - 1)),
            tf.where(positions == length + 1, special_ids.sep, PADDING_ID)))
        logits = self._window_logits(trim_padding({"input_word_ids": word_ids,
                                                   "input_mask": tf.cast(positions <= length + 1, tf.int32),
                                                   "input_type_ids": tf.zeros_like(word_ids)}))

        entries = tf.where(in_window)  # (window, position) of every piece in every window
        entry_piece, entry_window = tf.gather_nd(piece, entries), entries[:, 0]
        context = tf.cast(tf.minimum(offset, length - 1 - offset), tf.float64) + 0.01 * tf.cast(length, tf.float64)
        entry_context = tf.gather_nd(context, entries)
        count = tf.size(ids.flat_values, out_type=tf.int64)
        best = tf.math.unsorted_segment_max(entry_context, entry_piece, count)
        first_best = tf.math.unsorted_segment_min(
            tf.where(tf.equal(entry_context, tf.gather(best, entry_piece)), entry_window, tf.int64.max), entry_piece,
            count)
        chosen = tf.boolean_mask(entries, tf.equal(entry_window, tf.gather(first_best, entry_piece)))
        return tf.scatter_nd(tf.gather_nd(piece, chosen)[:, None], tf.gather_nd(logits, chosen),
                             tf.stack([count, tf.constant(self.num_labels, tf.int64)]))

    def _window_logits(self, inputs):
        """[windows, length, labels]: the model run on at most max_batch_size windows at a time, so a request of
        long texts (many windows each) needs no more memory than a full request of short ones."""
        rows, length = tf.shape(inputs["input_word_ids"])[0], tf.shape(inputs["input_word_ids"])[1]
        chunk = tf.clip_by_value(rows, 1, self.max_batch_size)
        chunks = tf.maximum(-(-rows // chunk), 1)
        chunked = {name: tf.reshape(tf.pad(value, [[0, chunks * chunk - rows], [0, 0]]), [chunks, chunk, length])
                   for name, value in inputs.items()}
        # (XLA pads a chunk's length up to its bucket: cut back to the windows' own length.)
        logits = tf.map_fn(lambda part: self._run_model(part)["logits"][:, :length], chunked, parallel_iterations=1,
                           fn_output_signature=tf.TensorSpec([None, None, self.num_labels], tf.float32))
        return tf.reshape(logits, [chunks * chunk, length, self.num_labels])[:rows]


def _characters_read(contexts, token_ends, in_context, max_seq_length):
    """[batch] int32: how many characters of each (cleaned) context the packed input holds: all of them where every
    context token fits beside the question, else up to the end of the last one that does. Fewer than the
    request's context has: the answer was searched for in that beginning only."""
    kept = tf.reduce_sum(tf.cast(in_context, tf.int64), axis=1)
    # (At most max_seq_length tokens are kept: a row of the dense ends reaches the last, even with none at all.)
    last_end = tf.gather(token_ends.to_tensor(0, shape=[None, max_seq_length]), tf.maximum(kept - 1, 0)[:, None],
                         batch_dims=1)[:, 0]
    read = tf.where(tf.equal(kept, token_ends.row_lengths()), tf.cast(tf.strings.length(contexts), tf.int64),
                    tf.where(kept > 0, last_end, 0))
    return tf.strings.length(tf.strings.substr(contexts, tf.zeros_like(read), read), unit="UTF8_CHAR")


def _previous(values, first):
    """values[i - 1] at i, `first` at 0."""
    return tf.concat([tf.fill([1], tf.constant(first, values.dtype)), values[:-1]], axis=0)[:tf.size(values)]


def _trimmed_spans(texts, rows, start, end):
    """(text, start, end) of each span [start, end) in bytes of texts[rows], whitespace at either end left out (an
    empty span stays where it ends): its own characters, and its [start, end) in CHARACTERS (code points, Python str
    indices) of its text.

    Each text is decoded once and every span read from its code points: cutting a span from its own copy of its
    text (tf.gather(texts, rows)) would cost a text's length per entity, the square of a long text's length.
    """
    codepoints, byte_offsets = tf.strings.unicode_decode_with_offsets(texts, "UTF-8")
    codepoints = codepoints.with_row_splits_dtype(tf.int64)
    byte_offsets = byte_offsets.with_row_splits_dtype(tf.int64)
    characters = codepoints.flat_values
    count = tf.size(characters, out_type=tf.int64)
    # One sorted axis over all the texts' bytes, each text after the one before; a span's end at its text's end
    # falls on the next text's first character, which is this text's character count.
    text_start = tf.cumsum(tf.cast(tf.strings.length(texts), tf.int64), exclusive=True)
    all_starts = byte_offsets.flat_values + tf.gather(text_start, byte_offsets.value_rowids())

    def character(offsets):
        return tf.searchsorted(all_starts, tf.cast(offsets, tf.int64) + tf.gather(text_start, rows), side="left",
                               out_type=tf.int64)

    first, limit = character(start), character(end)
    whitespace = tf.constant(sorted(whitespace_codepoints()), tf.int32)
    content = tf.not_equal(tf.gather(tf.concat([whitespace, [-1]], 0), tf.searchsorted(whitespace, characters)),
                           characters)
    content_at = tf.where(content)[:, 0]
    # The first content character at or after each index (count past the last), the last one before each.
    next_content = tf.gather(tf.concat([content_at, [count]], 0),
                             tf.cumsum(tf.cast(tf.concat([content, [True]], 0), tf.int64), exclusive=True))
    previous_content = tf.gather(tf.concat([[-1], content_at], 0),
                                 tf.cumsum(tf.cast(tf.concat([[False], content], 0), tf.int64)))
    first = tf.minimum(tf.gather(next_content, first), limit)
    limit = tf.maximum(first, tf.gather(previous_content, limit) + 1)
    text = tf.strings.unicode_encode(tf.gather(characters, tf.ragged.range(first, limit)), "UTF-8")
    row_start = tf.gather(codepoints.row_starts(), rows)
    return text, first - row_start, limit - row_start


# The serving module of each model kind export supports.
SERVING_BY_KIND = {"encoder": EmbeddingServing, "pretrainer": EmbeddingServing, "classifier": ClassifierServing,
                   "span_labeler": SpanLabelerServing, "squad_v2_span_labeler": SquadV2SpanLabelerServing,
                   "token_classifier": TokenClassifierServing}
SERVED_KINDS = tuple(SERVING_BY_KIND)


def serving_module(tokenizer, max_seq_length, model, metadata, xla=False, outputs=None,
                   max_batch_size=DEFAULT_MAX_BATCH_SIZE):
    """The serving module for the model kind `metadata["model"]` (ValueError for a kind export does not
    serve); `outputs`: an encoder's or pretrainer's outputs (EmbeddingServing); other kinds' are fixed;
    `max_batch_size`: texts per request at most."""
    kind = metadata["model"]
    if kind not in SERVING_BY_KIND:
        raise ValueError(f"no serving outputs for a {kind!r} model; export one of {', '.join(SERVED_KINDS)}")
    return SERVING_BY_KIND[kind](tokenizer, max_seq_length, model, metadata, xla=xla, outputs=outputs,
                                 max_batch_size=max_batch_size)
