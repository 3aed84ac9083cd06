"""`LiteModel`: a LiteRT export (`albert-export --format=litert`) run from Python on raw texts.

>>> model = LiteModel("exports/sst2_lite")                                   # doctest: +SKIP
>>> model(["a delight from start to finish", "a bore"])["label"]            # doctest: +SKIP
['1', '0']
>>> LiteModel("exports/mrpc_lite")(["He left."], ["He went away."])          # doctest: +SKIP
>>> LiteModel("exports/tickets_lite")(["refund my card, the app crashes"])["labels"]  # doctest: +SKIP
[['billing', 'bug']]
>>> LiteModel("exports/ner_zh_lite")(["我在北京工作。"])["entities"]  # a WordPiece tagger   # doctest: +SKIP
[[{'text': '北京', 'type': 'LOC', 'start': 3, 'end': 5, 'score': 0.97}]]

The interpreter is ai-edge-litert's (`pip install 'albert_tf[litert]'`) when it is installed,
else TensorFlow's own `tf.lite.Interpreter`; either way tensorflow-text registers the
tokenizer's kernel (FastSentencepieceTokenize), which model.tflite holds as a custom op.
model.tflite takes a batch (text [N]: N rows, each its text's answer alone, the rows padded to
the longest); `LiteModel` calls it once per text, as a phone's app does, which pads nothing
and suits files exported before batches worked (their text [N] answered one row for all). On a
server, `max_batch_tokens` groups texts of similar length into one call each (`length_groups`):
albert_base's dynamic int8 file answered 2.5x the texts per second on texts of a dozen tokens
and 1.15x on 40-token ones when 32 went in one call (1 thread), and fewer on 128-token ones.
"""

import os

import numpy as np

RUNTIMES = ("auto", "litert", "tensorflow")
TEXT_MODEL_FILE = "model.tflite"
METADATA_FILE = "albert_tf.json"  # as in every albert_tf directory (models.model_dir_format)
# A `max_batch_tokens` for a CPU server: 32 texts of a dozen tokens per call, 11 of 40 tokens, 4 of 128.
# albert_base's dynamic int8 file gained from batching short texts (2.5x at 32 per call) and lost on 128-token
# ones at 32 per call (4,096 padded pieces: 0.7x one call per text), on 1 thread.
SERVER_MAX_BATCH_TOKENS = 512
# Said once per model (here and by load_export) when a classifier fine-tuned on pairs is called on single texts: it
# answers them, but not as it was trained to (labels can differ from the pair call's); {call}: the pair call.
SINGLE_TEXTS_TO_A_PAIR_MODEL = (
    "albert_tf: this classifier was fine-tuned on text pairs (its albert_tf.json records takes_pairs) and is called "
    "on single texts, which it was not trained on; pass each text's second text, \"\" where it has none: {call}")


def tokenizer_op_registerers():
    """tensorflow-text's registrar of the tokenizer's TFLite kernel, for an interpreter's custom_op_registerers."""
    from tensorflow_text import tflite_registrar

    # SentencePiece models' tokenizer; WordPiece models' normalizer and tokenizer.
    return [tflite_registrar.AddFastSentencepieceTokenize, tflite_registrar.AddFastBertNormalize,
            tflite_registrar.AddFastWordpieceTokenize]


def lite_interpreter(model_content=None, model_path=None, num_threads=None, runtime="auto"):
    """An interpreter of a .tflite (bytes or path) with the tokenizer's kernel registered.

    `runtime`: "litert" (ai-edge-litert's; ImportError naming the extra when missing), "tensorflow"
    (tf.lite's, deprecated by TensorFlow but still shipped) or "auto" (the first of them installed)."""
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime={runtime!r}: choose one of {', '.join(RUNTIMES)}")
    interpreter_class = None
    if runtime in ("auto", "litert"):
        try:
            from ai_edge_litert.interpreter import InterpreterWithCustomOps as interpreter_class
        except ImportError:
            if runtime == "litert":
                raise ImportError("runtime='litert' needs ai-edge-litert: pip install 'albert_tf[litert]'") from None
    if interpreter_class is None:
        import warnings

        from tensorflow.lite.python.interpreter import InterpreterWithCustomOps as interpreter_class

        warnings.filterwarnings("ignore", message=r"(?s).*tf\.lite\.Interpreter is deprecated")
    return interpreter_class(custom_op_registerers=tokenizer_op_registerers(), model_content=model_content,
                             model_path=model_path, num_threads=num_threads)


class LiteModel:
    """Runs model.tflite of a LiteRT export on texts.

    Args:
      path: the export directory (model.tflite and albert_tf.json), or a .tflite file (its label names
        then come from an albert_tf.json beside it, if there is one).
      num_threads: the interpreter's CPU threads (default: the runtime's).
      runtime: "auto", "litert" or "tensorflow" (`lite_interpreter`).

    Calling it on a list of texts (and, for a sentence-pair classifier, a list of second texts; "" =
    none) returns numpy arrays with one row per text: logits, probabilities, label_id and label (a
    classifier; regression: score), or pooled_output (an encoder). A multi-label classifier (albert_tf.json's
    problem_type) answers each label's sigmoid probability, and instead of label_id and label: predicted
    (bool [N, labels]: probability >= its recorded multi_label_threshold) and labels (per text, the list of
    the names it predicts).

    By default each text is its own interpreter call. `max_batch_tokens=N` (SERVER_MAX_BATCH_TOKENS, 512, suits
    a CPU server) sends texts of similar length together, each call's rows times its longest row (in pieces,
    with [CLS] and [SEP], counted by the export's vocabulary and casing) at most N; the answers come back in the
    texts' order, each its text's alone. A file exported before batches worked answers a batch with one row,
    and is refused. A classifier whose albert_tf.json records takes_pairs (fine-tuned on pairs) called without
    texts_b answers each text with text_b "", and warns once that it was not trained so.
    """

    def __init__(self, path: str | os.PathLike, num_threads: int | None = None, runtime: str = "auto"):
        path = os.fspath(path)
        model_path = os.path.join(path, TEXT_MODEL_FILE) if os.path.isdir(path) else path
        if not os.path.isfile(model_path):
            raise FileNotFoundError(f"{path}: no LiteRT model (a directory from albert-export --format=litert, or "
                                    "its model.tflite)")
        directory = os.path.dirname(model_path)
        self.metadata = {}
        # A multi-label classifier's threshold; None: not one (or no albert_tf.json beside the file says so).
        self.multi_label_threshold = None
        if os.path.isfile(os.path.join(directory, METADATA_FILE)):
            from albert_tf.models.model_dir_format import read_metadata, recorded_multi_label_threshold

            self.metadata = read_metadata(directory)
            if self.metadata.get("problem_type") == "multi_label":
                self.multi_label_threshold = recorded_multi_label_threshold(self.metadata)
        self.model_path = model_path
        self._length_tokenizer = None  # made on the first call with max_batch_tokens (request_lengths)
        self.interpreter = lite_interpreter(model_path=model_path, num_threads=num_threads, runtime=runtime)
        signatures = self.interpreter.get_signature_list()
        if "text" not in signatures:
            raise ValueError(f"{model_path}: has no 'text' signature (signatures: {', '.join(signatures) or 'none'}); "
                             "encoder_ids.tflite takes token ids: run it with a LiteRT interpreter directly")
        self.input_names = signatures["text"]["inputs"]
        self.output_names = signatures["text"]["outputs"]
        self.takes_pairs = "text_b" in self.input_names
        self._warned_of_single_texts = False  # once per model (a classifier fine-tuned on pairs, called on one text)
        self._runner = self.interpreter.get_signature_runner("text")
        self.label_names = None
        self._warned_of_cut_texts = False  # once per model (a token classifier's text longer than it reads)
        for scores in ("logits", "probabilities"):
            if scores in self.output_names:
                self.label_names = self._recorded_label_names(os.path.join(directory, METADATA_FILE), model_path,
                                                              scores)
                break

    def _recorded_label_names(self, metadata_path, model_path, scores="logits"):
        """The label names albert_tf.json records (else "0", "1", ... for its num_labels; None without either);
        ValueError naming both files when they are not one per logit of the model."""
        logits = int(self._runner.get_output_details()[scores]["shape"][-1])
        names = self.metadata.get("label_names")
        if names is None and self.metadata.get("num_labels"):
            names = [str(i) for i in range(self.metadata["num_labels"])]
        if names is not None and len(names) != logits:
            raise ValueError(f"{metadata_path}: records {len(names)} label names for the {logits} logits of "
                             f"{model_path}; it belongs to another model: export it again")
        return names

    def __call__(self, texts, texts_b=None, max_batch_tokens=None):
        texts = _text_list(texts, "texts")
        if texts_b is not None:
            if not self.takes_pairs:
                raise ValueError("this model takes single texts: leave texts_b out")
            texts_b = _text_list(texts_b, "texts_b")
            if len(texts_b) != len(texts):
                raise ValueError(f"texts_b has {len(texts_b)} texts for {len(texts)} texts: one each (\"\" = none)")
        elif self.takes_pairs:
            if self.metadata.get("takes_pairs") is True and not self._warned_of_single_texts:
                import warnings

                self._warned_of_single_texts = True
                warnings.warn(SINGLE_TEXTS_TO_A_PAIR_MODEL.format(call="LiteModel(path)(texts, texts_b)"),
                              stacklevel=2)
            texts_b = [""] * len(texts)
        if not texts:
            raise ValueError("no texts: pass at least one")
        if max_batch_tokens is None:
            outputs = run_requests(self._runner, texts, texts_b)
        else:
            if isinstance(max_batch_tokens, bool) or not isinstance(max_batch_tokens, int) or max_batch_tokens < 1:
                raise ValueError(f"max_batch_tokens={max_batch_tokens!r}: a positive number of pieces per call "
                                 f"(SERVER_MAX_BATCH_TOKENS = {SERVER_MAX_BATCH_TOKENS} suits a CPU server), or "
                                 "None for one call per text")
            groups = length_groups(self.request_lengths(texts, texts_b), max_batch_tokens)
            outputs = run_batches(self._runner, texts, texts_b, groups, self.model_path)
        if "logits" in outputs and self.multi_label_threshold is not None:
            outputs["predicted"] = outputs["probabilities"] >= self.multi_label_threshold
            outputs["labels"] = [[self.label_names[i] for i in np.flatnonzero(row)] for row in outputs["predicted"]]
        elif "logits" in outputs:
            outputs["label_id"] = outputs["logits"].argmax(-1).astype(np.int32)
            if self.label_names:
                outputs["label"] = [self.label_names[i] for i in outputs["label_id"]]
        elif "unit_starts" in outputs:
            outputs["entities"] = [litert_entities(text, {name: outputs[name][row] for name in self.output_names},
                                                   self.label_names) for row, text in enumerate(texts)]
            cut = [row for row, text in enumerate(texts) if _bytes_read(outputs, row) < len(text.rstrip().encode())]
            if cut and not self._warned_of_cut_texts:
                import warnings

                self._warned_of_cut_texts = True
                warnings.warn(f"albert_tf: text {cut[0]} (of {len(cut)} such) is longer than the "
                              f"{self.metadata.get('max_seq_length', 'max_seq_length')} pieces model.tflite reads: "
                              "entities after that are not found; send it in parts (the SavedModel export reads "
                              "long texts in windows)", stacklevel=2)
        return outputs

    def request_lengths(self, texts, texts_b=None):
        """Each request's row in model.tflite, in pieces: [CLS] text [SEP] (text_b [SEP]), at most the export's
        max_seq_length (a longer pair is cut to it). Counted by the vocabulary and casing the export records."""
        if self._length_tokenizer is None:
            from albert_tf.text.vocabularies import FILE_NAMES, Vocabulary

            found = [(kind, os.path.join(os.path.dirname(self.model_path), name)) for kind, name in FILE_NAMES.items()
                     if os.path.isfile(os.path.join(os.path.dirname(self.model_path), name))]
            if not found or "max_seq_length" not in self.metadata:
                raise ValueError(f"max_batch_tokens counts each text's pieces with the export's vocabulary "
                                 f"({' or '.join(FILE_NAMES.values())}) and {METADATA_FILE} (its max_seq_length), not "
                                 f"beside {self.model_path}: pass the export directory, or leave max_batch_tokens out")
            kind, path = found[0]
            self._length_tokenizer = Vocabulary.read(path, kind).tokenizer(
                **{name: bool(self.metadata.get(name, default)) for name, default in (
                    ("lower_case", True), ("keep_accents", False), ("rewrite_quotes", False))})
        lengths = [len(ids) + 2 for ids in self._length_tokenizer.encode_batch(texts)]
        if texts_b is not None:
            lengths = [length + (len(ids) + 1 if text_b else 0) for length, ids, text_b in zip(
                lengths, self._length_tokenizer.encode_batch(texts_b), texts_b)]
        return [min(length, int(self.metadata["max_seq_length"])) for length in lengths]


def length_groups(lengths, max_batch_tokens):
    """The requests' indices in interpreter calls: ordered by length (`lengths`, each request's row in pieces),
    each call as many as keep its rows times its longest within `max_batch_tokens` (a longer request alone)."""
    groups, current = [], []
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        if current and (len(current) + 1) * lengths[index] > max_batch_tokens:
            groups.append(current)
            current = []
        current.append(index)
    if current:
        groups.append(current)
    return groups


def run_batches(run, texts, texts_b, groups, model_path="model.tflite"):
    """{output: its rows, in the texts' order}: `run` (a text signature) called once per group of indices
    (`length_groups`); a file answering a batch with other than one row per text is refused."""
    parts, order = [], []
    for group in groups:
        inputs = {"text": np.array([texts[i].encode("utf-8") for i in group], dtype=object)}
        if texts_b is not None:
            inputs["text_b"] = np.array([texts_b[i].encode("utf-8") for i in group], dtype=object)
        answer = {name: np.asarray(value) for name, value in run(**inputs).items()}
        rows = {len(value) for value in answer.values()}
        if rows != {len(group)}:
            raise ValueError(f"{model_path} answers a batch of {len(group)} texts with {sorted(rows)} rows: it was "
                             "exported before model.tflite took batches; export it again, or leave "
                             "max_batch_tokens out (one call per text)")
        parts.append(answer)
        order.extend(group)
    inverse = np.argsort(np.array(order), kind="stable")
    return {name: stacked_rows([part[name] for part in parts])[inverse] for name in parts[0]}


def run_requests(run, texts, texts_b=None):
    """{output: its rows}: `run` (a text signature, text [1] and, unless `texts_b` is None, text_b [1] -> outputs)
    called once per text, as a device's app calls the file."""
    rows = []
    for index, text in enumerate(texts):
        inputs = {"text": np.array([text.encode("utf-8")], dtype=object)}
        if texts_b is not None:
            inputs["text_b"] = np.array([texts_b[index].encode("utf-8")], dtype=object)
        rows.append(run(**inputs))
    return {name: stacked_rows([row[name] for row in rows]) for name in rows[0]}


def _bytes_read(outputs, row):
    return int(outputs["piece_ends"][row].max(initial=0))


def litert_entities(text, row, label_names):
    """The entities of `text` from a token classifier's model.tflite answer to it (`row`: its probabilities
    [pieces, tags], unit_starts, piece_starts and piece_ends [pieces], 0 outside its pieces), by the rule the
    served model applies (`albert_tf.text.entities`): each unit's tag the argmax at its first piece, IOB2 over
    the units, each entity from its first unit's first byte to its last unit's last, whitespace trimmed;
    {"text", "type", "start", "end" (characters of `text`), "score" (the mean of its units' tag probabilities)}."""
    from albert_tf.text.entities import entity_spans

    raw = text.encode("utf-8")
    pieces = np.flatnonzero(np.asarray(row["piece_ends"]) > 0)
    firsts = [index for index in pieces if row["unit_starts"][index]]
    lasts = [*(pieces[np.searchsorted(pieces, first) - 1] for first in firsts[1:]), *pieces[-1:]]
    probabilities = np.asarray(row["probabilities"])[firsts]
    tag_ids = probabilities.argmax(-1) if len(firsts) else np.zeros(0, int)
    entities = []
    for entity_type, first_unit, end_unit in entity_spans([label_names[tag] for tag in tag_ids]):
        start = len(raw[:int(row["piece_starts"][firsts[first_unit]])].decode("utf-8", "replace"))
        end = len(raw[:int(row["piece_ends"][lasts[end_unit - 1]])].decode("utf-8", "replace"))
        span = text[start:end]
        start += len(span) - len(span.lstrip())
        end = max(start, start + len(span.strip()))
        entities.append({"text": text[start:end], "type": entity_type, "start": start, "end": end,
                         "score": float(probabilities[np.arange(first_unit, end_unit),
                                                      tag_ids[first_unit:end_unit]].mean())})
    return entities


def stacked_rows(parts):
    """The rows of `parts` (arrays [rows, ...]) in one array; per-piece outputs ([rows, pieces, ...], a token
    classifier's) are padded with zeros to the longest, as model.tflite pads a batch (0 outside a text's pieces)."""
    parts = [np.asarray(part) for part in parts]
    if parts[0].ndim >= 2:
        longest = max(part.shape[1] for part in parts)
        parts = [np.pad(part, [(0, 0), (0, longest - part.shape[1])] + [(0, 0)] * (part.ndim - 2)) for part in parts]
    return np.concatenate(parts)


def _text_list(texts, name):
    if isinstance(texts, str):
        return [texts]  # one text, not its characters
    texts = list(texts)
    wrong = [type(text).__name__ for text in texts if not isinstance(text, str)]
    if wrong:
        raise TypeError(f"{name} must be strings; got {', '.join(sorted(set(wrong)))}")
    return texts
