"""`export_litert()`: an albert_tf checkpoint as LiteRT (.tflite) files for phones and other devices.

  OUTPUT_DIR/model.tflite         raw text in: text [N] (and text_b [N] for sentence-pair
                                  classifiers; "" = none) -> the task's outputs, one row
                                  per text (litert_module); the tokenizer inside, as
                                  tensorflow-text's custom ops: FastSentencepieceTokenize for
                                  a SentencePiece model; FastBertNormalize (with a table of
                                  BERT's own rules) and FastWordpieceTokenizeWithOffsets for a
                                  WordPiece vocab.txt (litert_wordpiece_tokenizer)
  OUTPUT_DIR/encoder_ids.tflite   the same model from token ids (input_word_ids, input_mask,
                                  input_type_ids [N, n] int32): built-in ops only, for apps
                                  that cannot link tensorflow-text's TFLite kernel
  OUTPUT_DIR/albert_tf.json       the checkpoint's record (a classifier's label_names and
                                  problem_type; a multi-label one's multi_label_threshold,
                                  the default where the checkpoint records none), its
                                  preprocessing, and "litert": the files' inputs, outputs,
                                  quantization, ops and checks
  OUTPUT_DIR/spm.model            the vocabulary (to tokenize for encoder_ids.tflite), or
  (or vocab.txt)                  the WordPiece vocab.txt

Kinds: encoders, pretrainers and classifiers; token classifiers of WordPiece models, whose
model.tflite answers each piece's tag probabilities, unit start and byte offsets, which
`LiteModel` reads into entities (litert_module.TokenClassifierRequests). A SentencePiece token
classifier is refused before it is loaded (`REFUSED_KINDS`): its entities need character
offsets, which the SentencePiece op does not give; the SavedModel export serves them.

Quantization (`quantization`): "dynamic_int8" (default: int8 weights, float activations),
"float16", "float32", or "int8" (weights and activations, calibrated on `calibration_texts`;
written only when it passes the accuracy gate below on those texts, else refused with what was
measured). Only the weight matrices shrink (to a quarter, or half for float16): the tokenizer
in model.tflite (its SentencePiece model, 0.66 MB for a 30k vocabulary) and the tensors kept
in float (position embeddings, LayerNorm, biases) do not, so a large model's file comes nearer
a quarter than a small one's (dynamic_int8 of float32: albert_base 27%, albert_tiny 36% with a
30k vocabulary and about half with a few hundred pieces).

Before anything is written: the model is converted from a SavedModel made by Keras's
ExportArchive (which hands the converter the weights' values: a Keras 3 model saved inside a
plain tf.Module converts to resource-variable ops that a LiteRT interpreter runs on zeros,
with no error), each file's ops are audited (no Flex op, which would need the TensorFlow
runtime on the device; no resource-variable op; no custom op but the tokenizer, and none at
all in encoder_ids.tflite), and both files are run on a few texts against the float model:
float32 within 1e-4, the others within their quantization's tolerance, encoder_ids.tflite
giving model.tflite's outputs from the same ids, and model.tflite given them all in one call
answering each as it did alone. The output directory is staged and replaces OUTPUT_DIR only
when complete; the converter's scratch copy of the weights in $TMPDIR is removed however the
export ends (`work_directory`).
"""

import contextlib
import errno
import json
import os
import shutil
import signal
import tempfile
import threading

import numpy as np

from albert_tf.export_lib.calibration_texts import read_calibration_texts
from albert_tf.models.lite_model import lite_interpreter, run_requests, stacked_rows, tokenizer_op_registerers
from albert_tf.settings import SettingError

TEXT_MODEL_FILE = "model.tflite"
IDS_MODEL_FILE = "encoder_ids.tflite"
QUANTIZATIONS = ("dynamic_int8", "float16", "float32", "int8")
DEFAULT_QUANTIZATION = "dynamic_int8"
# tensorflow-text's kernel for the tokenizer: the one custom op model.tflite holds.
TOKENIZER_OP = "TFText>FastSentencepieceTokenize"
# Model kinds a LiteRT export refuses for a SentencePiece model, with the reason, before the model is loaded (a
# WordPiece model's op pair gives each piece's offsets).
REFUSED_KINDS = {
    "token_classifier": "its entities need each piece's character offsets in the raw text, and model.tflite's "
                        f"SentencePiece tokenizer ({TOKENIZER_OP}) gives ids only (the SavedModel rebuilds the "
                        "offsets with regex, Unicode and ragged ops that LiteRT has no kernels for; a WordPiece "
                        "model's LiteRT file has them from its tokenizer ops); export a SavedModel instead "
                        "(albert-export's default format), whose serving model returns entities with character "
                        "offsets",
}
# Ops that mean a weight was left out of the file (it would be read as zeros at run time).
VARIABLE_OPS = frozenset({"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE"})
# How far a file's outputs may be from the float model's on the check texts: float32 absolute (scaled by the
# outputs' magnitude when above 1); the others relative to the largest |output| (a file that lost its weights is
# off by about 100%).
FLOAT32_TOLERANCE = 1e-4
RELATIVE_TOLERANCE = {"float16": 0.01, "dynamic_int8": 0.25, "int8": 0.25}
# How far model.tflite's rows for a batch may be from its answers to each text alone, absolute, scaled by the
# outputs' magnitude when above 1: padded keys get zero attention weight, so only arithmetic noise remains; but full
# int8 quantizes the attention mask with the activations, so there a padded key keeps a sliver of weight (0.5% of
# the largest output measured on albert_tiny): as far as the file may be from the float model.
BATCH_TOLERANCE = {"float32": 1e-4, "float16": 1e-4, "dynamic_int8": 1e-4, "int8": RELATIVE_TOLERANCE["int8"]}

# The scratch directories in $TMPDIR (work_directory).
WORK_DIRECTORY_PREFIX = "albert_litert-"
# The texts every export is checked on: ordinary, empty, long (truncated), digits with commas, accents, emoji.
CHECK_TEXTS = ("The film was a delight from start to finish.", "", "It is not good, not good at all.",
               "In 1998, 2,000 people met in Zürich (Switzerland) for the ``premiere''.",
               "a " * 400, "Ångström ☃ 東京 😀")


class LiteRTExportError(RuntimeError):
    """A converted file failed its audit, its check against the float model or the int8 gate: nothing was
    written. Command lines exit with status 3."""

    exit_code = 3


def model_ops(model_content):
    """(built-in op names, custom op names) a .tflite's bytes use, read from its flatbuffer's operator codes."""
    from tensorflow.lite.python import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(model_content), 0))
    names = {code: name for name, code in vars(schema.BuiltinOperator).items() if not name.startswith("_")}
    builtin, custom = set(), set()
    for operator_code in model.operatorCodes:
        code = max(operator_code.builtinCode, operator_code.deprecatedBuiltinCode)
        if code == schema.BuiltinOperator.CUSTOM:
            custom.add(operator_code.customCode.decode() if isinstance(operator_code.customCode, bytes)
                       else operator_code.customCode)
        else:
            builtin.add(names.get(code, str(code)))
    return builtin, custom


def audit(model_content, file_name, allowed_custom_ops):
    """The file's ops (sorted names); LiteRTExportError for a Flex op, a resource-variable op or a custom op
    other than `allowed_custom_ops`."""
    builtin, custom = model_ops(model_content)
    problems = []
    flex = sorted(op for op in custom if op.startswith("Flex"))
    if flex:
        problems.append(f"Flex ops {', '.join(flex)} (they need the TensorFlow runtime on the device)")
    variables = sorted(builtin & VARIABLE_OPS)
    if variables:
        problems.append(f"resource-variable ops {', '.join(variables)} (weights left out of the file: it would run "
                        "on zeros)")
    foreign = sorted(custom - set(flex) - set(allowed_custom_ops))
    if foreign:
        problems.append(f"custom ops {', '.join(foreign)} that no LiteRT runtime provides")
    if problems:
        raise LiteRTExportError(f"{file_name}: holds {'; '.join(problems)}; nothing was written")
    return sorted(builtin) + sorted(custom)


def converter(saved_model_dir, signature, quantization, representative_requests=None):
    import tensorflow as tf

    conversion = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir, signature_keys=[signature])
    conversion.allow_custom_ops = signature == "text"
    conversion.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if quantization != "float32":
        conversion.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantization == "float16":
        conversion.target_spec.supported_types = [tf.float16]
    if quantization == "int8":
        conversion.representative_dataset = lambda: iter(representative_requests)
        conversion.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8, tf.lite.OpsSet.TFLITE_BUILTINS]
        # Calibration runs the model in LiteRT: the tokenizer's kernel must be there.
        conversion.target_spec._experimental_custom_op_registerers = tokenizer_op_registerers()
    return conversion.convert()


def litert_tokenizer(tokenizer):
    """(the tokenizer layer model.tflite converts, the TFLite custom ops it becomes) for an export's in-graph
    tokenizer: a SentencePiece one converts as it is; a WordPiece one (TFWordPieceTokenizer, whose string and
    ragged ops LiteRT has no kernels for) is replaced by `LiteRTWordPieceTokenizer`, with the same settings."""
    from albert_tf.text.tf_wordpiece_tokenizer import TFWordPieceTokenizer

    if not isinstance(tokenizer, TFWordPieceTokenizer):
        return tokenizer, (TOKENIZER_OP,)
    from albert_tf.text.litert_wordpiece_tokenizer import CUSTOM_OPS, LiteRTWordPieceTokenizer

    return (LiteRTWordPieceTokenizer(tokenizer.pieces, lower_case=tokenizer.lower_case,
                                     strip_accents=tokenizer.strip_accents,
                                     tokenize_chinese_chars=tokenizer.tokenize_chinese_chars), CUSTOM_OPS)


def check_tokenizer_ids(tokenizer, python_tokenizer, texts):
    """LiteRTExportError unless `tokenizer` (the layer model.tflite converts) gives `python_tokenizer`'s ids on
    `texts` (the check and calibration texts): the ids the model was trained on (a WordPiece layer's: with its
    documented lowercasing difference, `as_lowercased_here`)."""
    import tensorflow as tf

    texts = [text for text in texts if text]
    if not texts:
        return
    ids = tokenizer(tf.constant(texts)).to_list()
    as_lowercased_here = getattr(tokenizer, "as_lowercased_here", lambda text: text)
    for text, got in zip(texts, ids):
        expected = python_tokenizer.encode(as_lowercased_here(text))
        if list(got) != list(expected):
            raise LiteRTExportError(f"{TEXT_MODEL_FILE}'s tokenizer gives other ids than training's for {text[:60]!r} "
                                    f"({list(got)[:12]} against {list(expected)[:12]}); nothing was written")


def packing_model(tokenizer, max_seq_length):
    """The bytes of a .tflite of model.tflite's tokenizer and packing alone (litert_module.PackingModule)."""
    import tensorflow as tf

    from albert_tf.export_lib.litert_module import PackingModule

    module = PackingModule(tokenizer, max_seq_length)
    conversion = tf.lite.TFLiteConverter.from_concrete_functions([module.text.get_concrete_function()], module)
    conversion.allow_custom_ops = True
    return conversion.convert()


def run_on(run, requests, pairs):
    """{output: its rows} of a text signature (a .tflite's, or the float function) on (text, text_b) requests."""
    return run_requests(run, [text for text, _ in requests], [text_b for _, text_b in requests] if pairs else None)


def check_against_float(file_outputs, reference, quantization, file_name):
    """The measured error (float32: absolute; else relative); LiteRTExportError when outside the tolerance."""
    # Imported here: litert_module imports TensorFlow, which this module loads only when it exports.
    from albert_tf.export_lib.litert_module import relative_error

    if quantization == "float32":
        error = max(float(np.abs(file_outputs[name] - reference[name]).max())
                    / max(1.0, float(np.abs(reference[name]).max())) for name in file_outputs)
        tolerance = FLOAT32_TOLERANCE
    else:
        error, tolerance = relative_error(file_outputs, reference), RELATIVE_TOLERANCE[quantization]
    if not error <= tolerance:  # NaN fails too
        raise LiteRTExportError(f"{file_name} ({quantization}) answers the check texts {error:.3g} away from the "
                                f"float model (tolerance {tolerance:g}); nothing was written")
    return error


def check_batch(runner, requests, answers, pairs, quantization):
    """LiteRTExportError unless model.tflite given every request in one call answers each as it did alone (within
    BATCH_TOLERANCE)."""
    inputs = {"text": np.array([text.encode("utf-8") for text, _ in requests], dtype=object)}
    if pairs:
        inputs["text_b"] = np.array([text_b.encode("utf-8") for _, text_b in requests], dtype=object)
    batch = runner(**inputs)
    error = max(float(np.abs(np.asarray(batch[name]) - answers[name]).max())
                / max(1.0, float(np.abs(answers[name]).max())) for name in answers)
    tolerance = BATCH_TOLERANCE[quantization]
    if not error <= tolerance:
        raise LiteRTExportError(f"{TEXT_MODEL_FILE} answers a batch of {len(requests)} texts {error:.3g} away from "
                                f"its answers to each alone (tolerance {tolerance:g}); nothing was written")


def check_quantization(quantization, calibration_file=None):
    """SettingError unless `quantization` is one of QUANTIZATIONS with the calibration file it needs (int8) and
    no other."""
    if quantization not in QUANTIZATIONS:
        raise SettingError(f"<quantization>={quantization!r}: choose one of {', '.join(QUANTIZATIONS)}")
    if calibration_file and quantization != "int8":
        raise SettingError("<calibration_file> calibrates full int8 only: pass <quantization>=int8 with it")
    if quantization == "int8" and not calibration_file:
        raise SettingError("<quantization>=int8 (weights and activations) needs <calibration_file>: texts like the "
                           "requests the model will get, one per line, to calibrate on and to check its accuracy")


def scratch_write_failure(path, error):
    """A TensorFlow error of writing the converter's scratch SavedModel at `path` (in $TMPDIR) as an OSError of one
    line naming it and the fix, which command lines print as their error."""
    import tensorflow as tf

    from albert_tf.file_utils import OutputWriteError

    codes = {tf.errors.ResourceExhaustedError: errno.ENOSPC, tf.errors.OutOfRangeError: errno.EFBIG,
             tf.errors.PermissionDeniedError: errno.EACCES}
    reason = (getattr(error, "message", None) or str(error)).strip().splitlines()
    scratch = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    return OutputWriteError(codes.get(type(error), errno.EIO),
                            f"could not write {path}, the converter's copy of the model "
                            f"({reason[0] if reason else type(error).__name__}): free space in {scratch}, or set "
                            "TMPDIR to a directory with room, then rerun; nothing was written to the output")


@contextlib.contextmanager
def work_directory():
    """A scratch directory in $TMPDIR for the SavedModel the converter reads (a copy of the weights), removed however
    the export ends: on an error, on SIGTERM (`sigterm_exits`), and after a SIGKILL by the next export, which removes
    every one whose process is gone (file_utils.remove_stale_staging: a live export's stays)."""
    from albert_tf.file_utils import make_owned_staging, remove_stale_staging

    parent = tempfile.gettempdir()
    remove_stale_staging(parent, WORK_DIRECTORY_PREFIX)
    work = make_owned_staging(parent, WORK_DIRECTORY_PREFIX)
    try:
        with sigterm_exits():
            yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def sigterm_exits():
    """Meanwhile SIGTERM raises SystemExit(143), so `finally` blocks run, where it would end the process at once.
    A handler of the caller's own, or a thread other than the main one (where none can be set), is left alone."""

    def exit_on_signal(signum, frame):
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, exit_on_signal)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def export_litert(checkpoint, output_dir, quantization=DEFAULT_QUANTIZATION, pad_to=None, spm_model_file=None,
                  max_seq_length=None, lower_case=None, force=False, calibration_file=None, overwrite=False,
                  vocab_file=None):
    """Writes OUTPUT_DIR (module docstring); returns {"model": path, "encoder_ids": path, "litert": the record}.

    `max_seq_length`, `lower_case`, `force`, `spm_model_file`, `vocab_file`: as `export()`; `pad_to`: a static
    sequence length (<= max_seq_length) for runtimes that need static shapes, None for inputs as long as the
    text."""
    import keras
    import tensorflow as tf

    from albert_tf.export_lib.exporter import check_output_dir, load_for_export
    from albert_tf.export_lib.litert_module import ENCODER_INPUT_NAMES, LITERT_KINDS, LiteRTModule, pack_requests
    from albert_tf.file_utils import atomic_output, check_replaceable, staged_directory, write_json_atomically
    from albert_tf.models.model_dir_format import METADATA_FILE, model_metadata

    check_quantization(quantization, calibration_file)
    check_output_dir(output_dir, checkpoint, spm_model_file=spm_model_file, vocab_file=vocab_file,
                     calibration_file=calibration_file)
    check_replaceable(output_dir, overwrite)
    recorded = model_metadata(checkpoint)
    kind = recorded.get("model")
    if kind in REFUSED_KINDS and not (vocab_file or recorded.get("vocabulary") == "wordpiece"):
        raise ValueError(f"{checkpoint}: holds a {kind!r} model, which a LiteRT export cannot serve: "
                         f"{REFUSED_KINDS[kind]}")
    source = load_for_export(checkpoint, LITERT_KINDS, spm_model_file, max_seq_length, lower_case, force, vocab_file)
    tokenizer, tokenizer_ops = litert_tokenizer(source.tokenizer)
    max_seq_length = source.preprocessing.max_seq_length
    if pad_to is not None and not (isinstance(pad_to, int) and 3 <= pad_to <= max_seq_length):
        raise SettingError(f"<pad_to>={pad_to}: must be an integer from 3 to max_seq_length ({max_seq_length}); "
                           "leave it out for inputs as long as each text")
    module = LiteRTModule(tokenizer, source.model, source.metadata, max_seq_length, pad_to)
    check_requests = [(text, "" if i % 2 else CHECK_TEXTS[-1 - i]) for i, text in enumerate(CHECK_TEXTS)]
    calibration = read_calibration_texts(calibration_file, module.pairs) if calibration_file else None

    def packed(requests):
        """The encoder inputs (numpy, [1, n]) model.tflite makes of each request, for encoder_ids.tflite."""
        result = []
        for text, text_b in requests:
            ids_a = tokenizer(tf.constant([text]))
            ids_b = tokenizer(tf.constant([text_b])) if module.pairs else None
            has_b = tf.constant([bool(module.pairs and text_b)])
            inputs = pack_requests(ids_a, ids_b, has_b, max_seq_length, tokenizer.special_ids, pad_to)
            result.append({name: inputs[name].numpy() for name in ENCODER_INPUT_NAMES})
        return result

    check_tokenizer_ids(tokenizer, source.tokenizer.python_tokenizer,
                        [text for request in check_requests + (calibration or []) for text in request])
    with work_directory() as work:
        saved_model = os.path.join(work, "saved_model")
        archive = keras.export.ExportArchive()
        archive.track(module.model)
        archive.add_endpoint("text", module.text_function)
        archive.add_endpoint("ids", module.ids_function)
        try:
            archive.write_out(saved_model, verbose=False)
        except (tf.errors.OutOfRangeError, tf.errors.ResourceExhaustedError, tf.errors.PermissionDeniedError,
                tf.errors.UnavailableError) as error:
            # TensorFlow's file writes report a full disk as these, with a traceback through Keras and the saver;
            # the scratch copy goes with work_directory, and nothing was written to the output.
            raise scratch_write_failure(saved_model, error) from None
        text_representative = ids_representative = None
        if calibration:
            text_representative = [
                {"text": np.array([text.encode("utf-8")], dtype=object),
                 **({"text_b": np.array([text_b.encode("utf-8")], dtype=object)} if module.pairs else {})}
                for text, text_b in calibration]
            ids_representative = packed(calibration)
        text_model = converter(saved_model, "text", quantization, text_representative)
        ids_model = converter(saved_model, "ids", quantization, ids_representative)
    text_ops = audit(text_model, TEXT_MODEL_FILE, set(tokenizer_ops))
    ids_ops = audit(ids_model, IDS_MODEL_FILE, set())

    text_runner = lite_interpreter(text_model).get_signature_runner("text")
    reference = run_on(module.text_function, check_requests, module.pairs)
    text_outputs = run_on(text_runner, check_requests, module.pairs)
    text_error = check_against_float(text_outputs, reference, quantization, TEXT_MODEL_FILE)
    check_batch(text_runner, check_requests, text_outputs, module.pairs, quantization)
    # encoder_ids.tflite, given the ids model.tflite makes of the same texts.
    ids_runner = lite_interpreter(ids_model).get_signature_runner("ids")
    ids_outputs = [ids_runner(**inputs) for inputs in packed(check_requests)]
    ids_outputs = {name: stacked_rows([output[name] for output in ids_outputs]) for name in ids_outputs[0]}
    ids_error = check_against_float(ids_outputs, reference, quantization, IDS_MODEL_FILE)

    gate = None
    if calibration:
        passed, measured = module.requests.int8_gate(run_on(text_runner, calibration, module.pairs),
                                                     run_on(module.text_function, calibration, module.pairs))
        gate = {"calibration_texts": len(calibration), "measured": measured, "passed": passed}
        if not passed:
            raise LiteRTExportError(f"full int8 fails its accuracy gate on {calibration_file} ({len(calibration)} "
                                    f"texts): {measured}; nothing was written (dynamic_int8, the default, keeps "
                                    "activations in float)")

    inputs = ["text", "text_b"] if module.pairs else ["text"]
    record = {
        "quantization": quantization, "pad_to": pad_to, "max_seq_length": max_seq_length,
        "files": {
            TEXT_MODEL_FILE: {"inputs": inputs, "outputs": module.output_names(), "bytes": len(text_model),
                              "ops": text_ops, "custom_ops": list(tokenizer_ops), "check_error": text_error},
            IDS_MODEL_FILE: {"inputs": list(ENCODER_INPUT_NAMES), "outputs": module.output_names(),
                             "bytes": len(ids_model), "ops": ids_ops, "custom_ops": [], "check_error": ids_error},
        },
        "int8_gate": gate,
    }
    metadata = {**source.metadata, "max_seq_length": max_seq_length, "lower_case": source.preprocessing.lower_case,
                "keep_accents": source.preprocessing.keep_accents,
                "rewrite_quotes": source.preprocessing.rewrite_quotes, **module.requests.export_settings(),
                "litert": record}
    with staged_directory(output_dir, overwrite=overwrite) as staging:
        for name, content in ((TEXT_MODEL_FILE, text_model), (IDS_MODEL_FILE, ids_model),
                              (source.vocabulary.file_name, source.vocabulary.content)):
            # (A full disk here fails in one line naming the file; the staging directory goes with it.)
            with atomic_output(os.path.join(staging, name), "wb") as f:
                f.write(content)
        write_json_atomically(os.path.join(staging, METADATA_FILE), metadata)
    return {"model": os.path.join(output_dir, TEXT_MODEL_FILE), "encoder_ids": os.path.join(output_dir, IDS_MODEL_FILE),
            "litert": json.loads(json.dumps(record))}
