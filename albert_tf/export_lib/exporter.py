"""`export()`: an albert_tf checkpoint as the three SavedModels of `python -m albert_tf.export`.

  OUTPUT_DIR/encoder/        TF Hub-style encoder (encoder_module)
  OUTPUT_DIR/preprocessing/  raw strings -> the three int32 tensors (preprocessing_module)
  OUTPUT_DIR/serving/NAME/VERSION/
                             TF Serving's layout (serving_module), with warm-up requests
                             (serving_warmup)
  OUTPUT_DIR/albert_tf.json, spm.model

Everything is checked (OUTPUT_DIR apart from every input and no other tool's directory, the
model kind, the serving name, the casing and length against the checkpoint's record, the
vocabulary) before the export is written, into a staging directory that replaces OUTPUT_DIR
only once complete.
"""

import os
import re
import typing

from albert_tf.export_lib.bfloat16_export import check_precision
from albert_tf.export_lib.serving_requests import DEFAULT_MAX_BATCH_SIZE
from albert_tf.file_utils import LITERT_EXPORT, SAVEDMODEL_EXPORT, check_output_apart, refuse_another_tools_directory
from albert_tf.settings import SettingError

# Warm-up requests' batch sizes: the small batch buckets (XLA's 1, 2, 4, 8).
DEFAULT_WARMUP_BATCH_SIZES = (1, 2, 4, 8)

# A TF Serving model name is one directory name inside OUTPUT_DIR/serving.
_SERVING_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_serving_name(name):
    """SettingError unless `name` is one plain directory name: no separator, no '..', not absolute, so the
    serving model stays inside OUTPUT_DIR/serving."""
    if not isinstance(name, str) or not _SERVING_NAME.fullmatch(name):
        raise SettingError(f"<serving_name>={name!r}: must be one directory name of letters, digits, '.', '_' and "
                           "'-' (not starting with '.' or '-'); the model goes to OUTPUT_DIR/serving/NAME/VERSION")


def check_output_dir(output_dir, checkpoint, **inputs):
    """SettingError, before anything is read, when `output_dir` is, lies inside or holds `checkpoint` or another
    of the `inputs` ({setting: path}), whatever overwrite says (an export onto its own checkpoint used to leave
    only the export), or is a directory another albert_tf tool wrote: an export of either format replaces only an
    export."""
    check_output_apart({"output_dir": output_dir}, {"checkpoint": checkpoint, **inputs})
    refuse_another_tools_directory(output_dir, "albert_tf.export", (SAVEDMODEL_EXPORT, LITERT_EXPORT))


def export(checkpoint, output_dir, spm_model_file=None, max_seq_length=None, lower_case=None, serving_name="albert",
           serving_version=1, overwrite=False, serving_xla=False, serving_outputs=None,
           serving_warmup_batch_sizes=DEFAULT_WARMUP_BATCH_SIZES, force=False,
           serving_max_batch_size=DEFAULT_MAX_BATCH_SIZE, serving_precision="float32", calibration_file=None,
           vocab_file=None):
    """Writes the three SavedModels; returns {part: path}. `max_seq_length`, `lower_case`: None takes what
    the checkpoint records (albert_tf.models.preprocessing_contract); the accents and quote rules are always
    the recorded ones, and the export records them too. `serving_xla`, `serving_outputs`,
    `serving_warmup_batch_sizes`, `force`, `serving_max_batch_size`, `serving_precision`: see the flags (bfloat16:
    bfloat16_export; BFloat16GateError, nothing written, when its answers move beyond the gate). `calibration_file`:
    texts like the requests (one a line, text<TAB>text_b for pairs and questions with contexts) the bfloat16 gate
    measures on besides its own; only with serving_precision bfloat16. `spm_model_file` or `vocab_file` (a
    WordPiece vocab.txt): the checkpoint's vocabulary given again (default: the stored one)."""
    if calibration_file is not None and serving_precision != "bfloat16":
        raise SettingError("<calibration_file> is for <serving_precision>=bfloat16 (the texts its accuracy gate "
                           "measures on) and for LiteRT files of <quantization>=int8")
    import tensorflow as tf

    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.models.model_dir_format import METADATA_FILE
    from albert_tf.export_lib.encoder_module import EncoderModule
    from albert_tf.export_lib.preprocessing_module import Preprocessor
    from albert_tf.export_lib.serving_module import SERVED_KINDS, serving_module
    from albert_tf.export_lib.serving_warmup import warmup_requests, write_warmup_requests
    from albert_tf.file_utils import check_replaceable, staged_directory, write_json_atomically
    check_output_dir(output_dir, checkpoint, spm_model_file=spm_model_file, vocab_file=vocab_file)
    check_precision(serving_precision)
    check_serving_name(serving_name)
    if not isinstance(serving_version, int) or serving_version < 1:
        raise SettingError(f"<serving_version>={serving_version}: must be a positive integer (TF Serving's version "
                           "directories are numbers)")
    check_replaceable(output_dir, overwrite)
    source = load_for_export(checkpoint, SERVED_KINDS, spm_model_file, max_seq_length, lower_case, force, vocab_file)
    model, metadata, preprocessing = source.model, source.metadata, source.preprocessing
    max_seq_length, lower_case, tokenizer, model_proto = (preprocessing.max_seq_length, preprocessing.lower_case,
                                                          source.tokenizer, source.model_proto)
    encoder = getattr(model, "encoder", model)
    # Checked before anything is written.
    serving = serving_module(tokenizer, max_seq_length, model, metadata, xla=serving_xla, outputs=serving_outputs,
                             max_batch_size=serving_max_batch_size)
    warmup = warmup_requests(serving, serving_name, serving_warmup_batch_sizes)  # checks the sizes are integers
    too_large = [size for size in serving_warmup_batch_sizes or () if int(size) > serving_max_batch_size]
    if too_large:
        raise SettingError(f"<serving_warmup_batch_sizes>: {', '.join(map(str, too_large))} above "
                           f"<serving_max_batch_size>={serving_max_batch_size}, which the server would refuse")
    precision_record = {"serving_precision": serving_precision}
    if serving_precision == "bfloat16":
        serving, precision_record = bfloat16_serving(serving, tokenizer, max_seq_length, model, metadata,
                                                     serving_xla, serving_outputs, serving_max_batch_size,
                                                     calibration_file)
    with staged_directory(output_dir, overwrite=overwrite) as staging:
        metadata = {**metadata, "max_seq_length": max_seq_length, "lower_case": lower_case,
                    "keep_accents": preprocessing.keep_accents, "rewrite_quotes": preprocessing.rewrite_quotes,
                    "serving_xla": serving_xla, **precision_record,
                    **serving.export_settings()}
        metadata_file = os.path.join(staging, METADATA_FILE)
        write_json_atomically(metadata_file, metadata)
        # The vocabulary travels as an asset under its kind's name (spm.model, or a WordPiece vocab.txt).
        spm_copy = os.path.join(staging, source.vocabulary.file_name)
        with open(spm_copy, "wb") as f:
            f.write(model_proto)

        # A model with pretraining heads gives the encoder its `mlm` and `sop` signatures.
        pretrainer = model if isinstance(model, AlbertPretrainer) else None
        encoder_module = EncoderModule(encoder, pretrainer, spm_copy, metadata_file, lower_case=lower_case,
                                       keep_accents=preprocessing.keep_accents,
                                       rewrite_quotes=preprocessing.rewrite_quotes)
        encoder_module.trace()
        tf.saved_model.save(encoder_module, os.path.join(staging, "encoder"), signatures=encoder_module.signatures())

        preprocessor = Preprocessor(tokenizer, max_seq_length, spm_copy)
        preprocessor.trace()
        tf.saved_model.save(preprocessor, os.path.join(staging, "preprocessing"), signatures=preprocessor.signatures())

        serving_dir = os.path.join(staging, "serving", serving_name, str(serving_version))
        tf.saved_model.save(serving, serving_dir, signatures=serving.signatures())
        if warmup:
            write_warmup_requests(serving_dir, warmup)
    return {"encoder": os.path.join(output_dir, "encoder"), "preprocessing": os.path.join(output_dir, "preprocessing"),
            "serving": os.path.join(output_dir, "serving", serving_name, str(serving_version))}


def bfloat16_serving(reference, tokenizer, max_seq_length, model, metadata, xla, outputs, max_batch_size,
                     calibration_file=None):
    """(the bfloat16 serving module, what albert_tf.json records of it) once it passes its accuracy gate against
    the float32 module `reference` (bfloat16_export), on its own texts and those of `calibration_file`;
    BFloat16GateError, with the figures, when it does not."""
    import tensorflow as tf

    from albert_tf.export_lib.bfloat16_export import (BFloat16GateError, bfloat16_model, cpu_bfloat16_support,
                                                      emulation_note, gate)
    from albert_tf.export_lib.serving_module import serving_module

    support = cpu_bfloat16_support()
    note = emulation_note(support)
    if note:
        print(note.replace("albert_tf: ", "Note: ", 1), flush=True)
    serving = serving_module(tokenizer, max_seq_length, bfloat16_model(model, metadata), metadata, xla=xla,
                             outputs=outputs, max_batch_size=max_batch_size)
    # Saved with the model, so load_export can say when the CPU it runs on emulates bfloat16.
    serving.precision_variable = tf.Variable("bfloat16", trainable=False, name="precision")
    requests = ()
    if calibration_file:
        from albert_tf.export_lib.calibration_texts import read_calibration_texts

        pairs = reference.takes_context or metadata.get("takes_pairs") is True
        requests = read_calibration_texts(calibration_file, pairs, minimum=1, purpose="the bfloat16 gate needs")
    record = gate(serving, reference, metadata, requests)
    print(f"bfloat16 gate on {record['texts']} texts: {record['measured']}", flush=True)
    if not record["passed"]:
        raise BFloat16GateError(f"<serving_precision>=bfloat16: the bfloat16 {metadata['model']} fails its accuracy "
                                f"gate on {record['texts']} texts: {record['measured']}; nothing was written (export "
                                "it with <serving_precision>=float32)")
    return serving, {"serving_precision": "bfloat16", "bfloat16_gate": record,
                     "made_on_cpu": {"native_bfloat16": support["native_bfloat16"],
                                     "cpu_flags": support["cpu_flags"]}}


class ExportSource(typing.NamedTuple):
    """A checkpoint as an export reads it: the model, its albert_tf.json, the preprocessing resolved against its
    record, the SentencePiece model's bytes and the in-graph tokenizer that follows that preprocessing."""
    model: object
    metadata: dict
    preprocessing: object
    model_proto: bytes  # the vocabulary file's bytes (a SentencePiece model's, or a vocab.txt's)
    tokenizer: object
    vocabulary: object  # the `vocabularies.Vocabulary`


def load_for_export(checkpoint, kinds, spm_model_file=None, max_seq_length=None, lower_case=None, force=False,
                    vocab_file=None):
    """Loads `checkpoint` and checks it before anything is written: its kind is one of `kinds`, the casing and
    length agree with its record (warnings printed), the vocabulary fits the model. An `ExportSource`."""
    from albert_tf.models.inference_model import check_same_vocabulary
    from albert_tf.models.model_dir_format import find_vocabulary
    from albert_tf.models.model_io import load_model
    from albert_tf.models.preprocessing_contract import resolve_preprocessing
    from albert_tf.text.vocabularies import tf_tokenizer

    model, metadata = load_model(checkpoint)
    if metadata["model"] not in kinds:
        raise ValueError(f"{checkpoint}: holds a {metadata['model']!r} model; this export supports {', '.join(kinds)}")
    vocabulary = find_vocabulary(checkpoint, spm_model_file, vocab_file)
    if spm_model_file or vocab_file:
        check_same_vocabulary(checkpoint, vocabulary)
    config = model.albert_config
    preprocessing = resolve_preprocessing(metadata, lower_case, max_seq_length, force=force, source=checkpoint)
    for warning in preprocessing.warnings:
        print(f"Warning: {warning}.", flush=True)
    if not 3 <= preprocessing.max_seq_length <= config.max_position_embeddings:
        raise SettingError(f"<max_seq_length>={preprocessing.max_seq_length}: must be at least 3 ([CLS] [SEP] [SEP]) "
                           f"and at most the model's max_position_embeddings ({config.max_position_embeddings})")
    try:
        tokenizer = tf_tokenizer(vocabulary, preprocessing.lower_case, preprocessing.keep_accents,
                                 preprocessing.rewrite_quotes)
    except ValueError as error:
        raise ValueError(f"{vocabulary.source}: {error}") from None
    if tokenizer.vocab_size > config.vocab_size:
        raise SettingError(f"{vocabulary.source}: has {tokenizer.vocab_size} pieces, more than the model's vocab_size "
                           f"({config.vocab_size}); pass the vocabulary it was trained with (<spm_model_file> or "
                           "<vocab_file>)")
    return ExportSource(model, metadata, preprocessing, vocabulary.content, tokenizer, vocabulary)
