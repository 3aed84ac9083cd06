"""`load_export()`: an albert_tf export in Python, called on raw text.

  import albert_tf
  model = albert_tf.load_export("exports/albert_base")   # the export, or one of its parts
  model(["How are you?", "Fine."])["embedding"]           # numpy [2, H]
  model(["A man plays."], ["Someone makes music."])       # pairs: the texts, then their second segments
  albert_tf.load_export("exports/ner")(["John lives in Paris."])   # a token classifier: entities per text
  # [[{"text": "John", "type": "PER", "start": 0, "end": 4, "score": 0.98}, {"text": "Paris", ...}]]

The SavedModels hold tensorflow-text's SentencePiece ops, which TensorFlow knows
only once `tensorflow_text` is imported; without it `tf.saved_model.load` fails
with "Op type not registered 'SentencepieceOp'". The loader imports it first.

What a path names, and what a call returns (numpy arrays; strings as str, in object arrays, which
keep a trailing NUL that numpy's fixed-width strings would drop):
  OUTPUT_DIR, OUTPUT_DIR/serving, OUTPUT_DIR/serving/NAME
                            the serving model (its newest version): the kind's outputs
                            (embeddings, probabilities and labels, answer spans); a
                            multi-label classifier's also `labels`: per text, the list of
                            the label names it predicts; a token classifier answers, instead
                            of arrays, per text the list of its entities, each
                            {"text", "type", "start", "end", "score"} with
                            text == texts[i][start:end] (character offsets)
  OUTPUT_DIR/serving/NAME/VERSION   that version of it
  OUTPUT_DIR/preprocessing  input_word_ids, input_mask, input_type_ids
  OUTPUT_DIR/encoder        pooled_output, sequence_output, encoder_outputs (one per block applied),
                            through the preprocessing SavedModel beside it
"""

import os
import warnings

import numpy as np

SAVED_MODEL_FILE = "saved_model.pb"


class ExportedModel:
    """One loaded part of an export, called on raw text: `model(texts)` or `model(texts, texts_b)`.

    `saved_model` is what `tf.saved_model.load` returned (its signatures, variables);
    `part` is "serving", "preprocessing" or "encoder".
    """

    def __init__(self, saved_model, part, preprocessing=None):
        self.saved_model = saved_model
        self.part = part
        self.preprocessing = preprocessing
        # A classifier export records whether it was fine-tuned on pairs (older exports do not: no warning).
        takes_pairs = getattr(saved_model, "takes_pairs_variable", None)
        self.takes_pairs = takes_pairs is not None and bool(takes_pairs.numpy())
        self._warned_of_single_texts = False

    def __call__(self, texts, texts_b=None):
        """Outputs for a list of strings (a str: one text), with one second segment per text for pairs
        ("" for none; a span labeler's second segments are its contexts): {name: array}, or a token
        classifier's list of entity lists, one per text (the module's docstring).

        Warns (Python warnings) where the answer is not what it seems: a text of which the served model read only
        the beginning (a token classifier's text past its character limit, a span labeler's context past what fits
        beside the question), naming it; and, once per model, a classifier fine-tuned on pairs called without
        `texts_b`."""
        import tensorflow as tf

        from albert_tf.export_lib.serving_requests import SIGNATURE, TEXT_SIGNATURE

        text = _strings(texts)
        text_b = None if texts_b is None else _strings(texts_b)
        if text_b is not None and len(text_b) != len(text):
            raise ValueError(f"{len(text)} texts but {len(text_b)} second segments; pass one per text (\"\" for none)")
        if text_b is None and self.takes_pairs and not self._warned_of_single_texts:
            self._warned_of_single_texts = True
            from albert_tf.models.lite_model import SINGLE_TEXTS_TO_A_PAIR_MODEL

            warnings.warn(SINGLE_TEXTS_TO_A_PAIR_MODEL.format(call="model(texts, texts_b)"), stacklevel=2)
        if self.part == "serving":
            signatures = self.saved_model.signatures
            limit = getattr(self.saved_model, "max_batch_size_variable", None)
            # The serving model refuses requests above its limit: larger batches go as several requests.
            step = max(len(text), 1) if limit is None else int(limit.numpy())
            parts = []
            for start in range(0, max(len(text), 1), step):
                rows = slice(start, start + step)
                if text_b is None and TEXT_SIGNATURE in signatures:
                    parts.append(signatures[TEXT_SIGNATURE](text=tf.constant(text[rows], tf.string)))
                else:
                    parts.append(signatures[SIGNATURE](text=tf.constant(text[rows], tf.string),
                                                       text_b=tf.constant((text_b or [])[rows], tf.string)))
            if "entity_count" in parts[0]:  # a token classifier's: rows padded to each request's own width
                _warn_of_cut_texts("text", text, [int(read) for part in parts if "characters_read" in part
                                                  for read in part["characters_read"].numpy()],
                                   "no entity after them is found; tag a longer text in parts of at most {read} "
                                   "characters")
                return [entities for part in parts for entities in _text_entities(
                    {name: _numpy(value) for name, value in part.items()})]
            outputs = parts[0] if len(parts) == 1 else {name: tf.concat([part[name] for part in parts], axis=0)
                                                        for name in parts[0]}
            if "context_characters_read" in outputs:  # a span labeler's: what of each context its answer comes from
                _warn_of_cut_texts("context", text_b or [""] * len(text), outputs["context_characters_read"].numpy(),
                                   "its answer comes from them alone (the question and context share "
                                   "max_seq_length tokens); ask about a longer context in parts")
        else:
            preprocessing = self.preprocessing or self.saved_model
            inputs = preprocessing(tf.constant(text, tf.string), tf.constant(text_b or [], tf.string))
            outputs = inputs if self.part == "preprocessing" else self.saved_model(inputs)
        outputs = {name: _numpy(value) for name, value in outputs.items()}
        if "predicted" in outputs and "label_names" in outputs:
            outputs["labels"] = _predicted_names(outputs["label_names"], outputs["predicted"])
        return outputs


def _warn_of_cut_texts(what, texts, characters_read, advice):
    """One warning naming every text of which the served model read fewer characters than it has (`advice`: what
    follows and what to do; "{read}" becomes the fewest characters read)."""
    cut = [(index, length, int(read)) for index, (length, read) in enumerate(
        (_length(text), read) for text, read in zip(texts, characters_read)) if read < length]
    if cut:
        named = ", ".join(f"{what} {index} (the first {read} of its {length} characters)"
                          for index, length, read in cut)
        warnings.warn(f"albert_tf: the served model read only the beginning of {named}: "
                      + advice.format(read=min(read for _, _, read in cut)), stacklevel=3)


def _length(text):
    """A text's length in characters (Python str indices), as the served model counts them; bytes are UTF-8."""
    return len(text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text)


def _predicted_names(label_names, predicted):
    """Per row, the names (str) of the labels `predicted` marks: a multi-label classifier's answer as lists,
    from its label_names and predicted [batch, labels] outputs."""
    return [[str(name) for name in names[mask]] for names, mask in zip(label_names, predicted)]


def _text_entities(outputs):
    """Per text, its entities as dicts {"text", "type", "start", "end", "score"} (Python values), from a token
    classifier's padded outputs (serving_module's entity_count, entity_text, entity_type, entity_start, ...)."""
    return [[{"text": str(outputs["entity_text"][row, column]), "type": str(outputs["entity_type"][row, column]),
              "start": int(outputs["entity_start"][row, column]), "end": int(outputs["entity_end"][row, column]),
              "score": float(outputs["entity_score"][row, column])} for column in range(count)]
            for row, count in enumerate(outputs["entity_count"])]


def load_export(path: str | os.PathLike) -> "ExportedModel":
    """The export (albert-export's OUTPUT_DIR) or the part of it that `path` names, as an `ExportedModel`
    (module docstring). Needs TensorFlow and tensorflow-text only, not the Keras model.

    >>> model = load_export("exports/albert_base")
    >>> model(["ALBERT shares one layer."])["embedding"].shape
    (1, 768)
    >>> model(["A man plays."], ["Someone makes music."])["pooled_output"].shape
    (1, 768)
    """
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the SentencePiece ops the graphs hold)

    directory = saved_model_dir(os.fspath(path))
    saved_model = tf.saved_model.load(directory)
    _say_if_bfloat16_is_emulated(saved_model)
    if hasattr(saved_model, "bert_pack_inputs"):
        return ExportedModel(saved_model, "preprocessing")
    _, inputs = saved_model.signatures["serving_default"].structured_input_signature
    if "input_word_ids" not in inputs:
        return ExportedModel(saved_model, "serving")
    beside = os.path.join(os.path.dirname(os.path.normpath(directory)), "preprocessing")
    if not os.path.isfile(os.path.join(beside, SAVED_MODEL_FILE)):
        raise FileNotFoundError(f"{directory}: an encoder takes token ids, and no preprocessing SavedModel is beside "
                                f"it ({beside}) to make them from text; load it with tf.saved_model.load instead")
    return ExportedModel(saved_model, "encoder", preprocessing=tf.saved_model.load(beside))


def _say_if_bfloat16_is_emulated(saved_model):
    """One warning when a bfloat16 serving model (albert-export --serving_precision=bfloat16, which saves its
    precision) is loaded on a CPU without native bfloat16: TensorFlow emulates it there, slower than float32."""
    from albert_tf.export_lib.bfloat16_export import cpu_bfloat16_support, emulation_note

    precision = getattr(saved_model, "precision_variable", None)
    if precision is None or precision.numpy() != b"bfloat16":
        return
    note = emulation_note(cpu_bfloat16_support())
    if note:
        warnings.warn(note, stacklevel=3)


def saved_model_dir(path):
    """The SavedModel directory `path` names: itself, or the newest version of the one serving model under
    an export, its serving/ or serving/NAME (TF Serving's NAME/VERSION layout)."""
    if os.path.isfile(os.path.join(path, SAVED_MODEL_FILE)):
        return path
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: no such directory")
    directory = os.path.join(path, "serving") if os.path.isdir(os.path.join(path, "serving")) else path
    names = _subdirectories(directory)
    if names and not any(name.isdigit() for name in names):
        if len(names) > 1:
            raise ValueError(f"{directory}: holds several serving models ({', '.join(names)}); pass "
                             f"{os.path.join(directory, 'NAME')}")
        directory = os.path.join(directory, names[0])
    versions = [name for name in _subdirectories(directory) if name.isdigit()
                and os.path.isfile(os.path.join(directory, name, SAVED_MODEL_FILE))]
    if not versions:
        raise FileNotFoundError(f"{path}: no SavedModel; pass an albert_tf export (albert-export's --output_dir) or "
                                "one of its parts")
    return os.path.join(directory, max(versions, key=int))


def _subdirectories(directory):
    return sorted(name for name in os.listdir(directory) if os.path.isdir(os.path.join(directory, name)))


def _strings(texts):
    if isinstance(texts, (str, bytes)):
        return [texts]
    return list(texts)


def _numpy(value):
    if isinstance(value, (list, tuple)):
        return [_numpy(item) for item in value]
    array = value.numpy()
    if array.dtype == object:  # tf.string: UTF-8 bytes
        # Decoded one by one into an object array: numpy's fixed-width strings (astype(bytes), np.char, "U")
        # drop trailing NULs, and an entity or answer ending in one would no longer be its text's own characters.
        decoded = np.empty(array.shape, dtype=object)
        decoded.ravel()[:] = [item.decode("utf-8") for item in array.ravel()]
        return decoded
    return array
