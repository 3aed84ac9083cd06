"""albert_tf checkpoint directories: `albert_tf.json` (what the model is) + weights.

A directory holds either one `weights` checkpoint (written by the converter or
at the end of training) or the `ckpt-N` series that run_pretraining's
CheckpointManager keeps. Both are TF object-graph checkpoints whose root has a
`model` child, so one loader reads both; a training checkpoint's optimizer and
input-iterator state is simply not restored.

Metadata (`albert_tf.json`):
  {"format": "albert_tf", "format_version": 1, "model": "<kind>",
   "albert_config": {...}, ...kind-specific keys}
"""

import json
import os
import re
import shutil
import sys
from typing import TYPE_CHECKING

import keras
import tensorflow as tf

from albert_tf.albert_config import AlbertConfig
from albert_tf.file_utils import describe_json_value, staged_directory, write_json
from albert_tf.models import registry
from albert_tf.models.preprocessing_contract import recorded_rewrite_quotes
from albert_tf.settings import SettingFileNotFound
from albert_tf.text.albert_tokenizer import SPM_MODEL_FILE, copy_spm_model, read_spm_model, spm_model_path

if TYPE_CHECKING:  # for the return types only: models.registry imports the model classes when they are built
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.networks.albert_encoder import AlbertEncoder

METADATA_FILE = "albert_tf.json"
# What a Hugging Face save_pretrained directory holds instead (albert_tf.convert reads it).
_HUGGINGFACE_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
WEIGHTS_PREFIX = "weights"
FORMAT_VERSION = 1

def _albert_config(metadata):
    return AlbertConfig.from_dict(metadata["albert_config"], source=METADATA_FILE)


def write_metadata(directory, kind, albert_config, **extra):
    """Writes albert_tf.json, the one writer of it (atomically on local disks; gs:// paths work too)."""
    metadata = {
        "format": "albert_tf",
        "format_version": FORMAT_VERSION,
        "model": kind,
        "albert_config": albert_config.to_dict(),
        **extra,
    }
    write_json(os.path.join(directory, METADATA_FILE), metadata)
    return metadata


def _is_integer(value):
    return isinstance(value, int) and not isinstance(value, bool)  # JSON's true is a Python int too


def _is_positive_integer(value):
    return _is_integer(value) and value > 0


def _is_string_list(value):
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# The keys of albert_tf.json that albert_tf reads back, and what each must hold: a file edited by hand or
# written by another tool is refused here, naming the file and the key, not deep inside building or
# restoring the model. A key albert_tf does not read may hold anything (a later version's additions).
_INTEGER = (_is_integer, "an integer")
_POSITIVE = (_is_positive_integer, "a positive integer")
_BOOLEAN = (lambda value: isinstance(value, bool), "true or false")
_STRING = (lambda value: isinstance(value, str), "a string")
_OBJECT = (lambda value: isinstance(value, dict), "a JSON object")
_METADATA_TYPES = {
    "format_version": _INTEGER,
    "model": (_STRING[0], "a string (the model kind)"),
    "albert_config": _OBJECT,
    # A task model's head sizes (models.registry's saved arguments) and the recorded preprocessing.
    **dict.fromkeys(("num_labels", "num_choices", "start_n_top", "end_n_top", "max_seq_length",
                     "max_predictions_per_seq", "max_qa_length"), _POSITIVE),
    **dict.fromkeys(("lower_case", "keep_accents", "rewrite_quotes", "is_regression"), _BOOLEAN),
    **dict.fromkeys(("task_name", "squad_version", "squad_v2_head"), _STRING),
    "label_names": (_is_string_list, "a list of strings"),
    "preprocessor": _OBJECT,
}
# What write_model_dir records of a model's own preprocessor (load_model rebuilds it from these).
_PREPROCESSOR_TYPES = {"seq_length": _POSITIVE, **dict.fromkeys(("lower_case", "keep_accents", "rewrite_quotes"),
                                                                _BOOLEAN)}
# The readers take an optional key's null as its absence; these have no such meaning, so null is refused.
_NOT_NULL = ("format_version", "model", "albert_config", "preprocessor.seq_length")


def _check_metadata_types(metadata, path):
    """ValueError naming `path`, the key and the type it needs, for the first recorded value of the wrong type."""
    checks = [(key, metadata[key], expected) for key, expected in _METADATA_TYPES.items() if key in metadata]
    if isinstance(metadata.get("preprocessor"), dict):
        recorded = metadata["preprocessor"]
        if "seq_length" not in recorded:
            raise ValueError(f'{path}: "preprocessor" has no "seq_length" (its preprocessor\'s sequence length)')
        checks += [(f"preprocessor.{key}", recorded[key], expected) for key, expected in _PREPROCESSOR_TYPES.items()
                   if key in recorded]
    for key, value, (is_valid, expected) in checks:
        if value is None and key not in _NOT_NULL:
            continue
        if not is_valid(value):
            raise ValueError(f'{path}: "{key}" must be {expected}, got {describe_json_value(value)}')


def read_metadata(directory):
    path = os.path.join(directory, METADATA_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{directory}: not an albert_tf checkpoint directory (no {METADATA_FILE}); "
            "convert other checkpoints with `python -m albert_tf.convert`"
        )
    try:
        with open(path) as f:
            metadata = json.load(f)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(metadata, dict):
        raise ValueError(f"{path}: expected a JSON object (albert_tf metadata), got {describe_json_value(metadata)}")
    if metadata.get("format") != "albert_tf" or "albert_config" not in metadata or "model" not in metadata:
        raise ValueError(f"{path}: not albert_tf metadata (needs format, model and albert_config)")
    _check_metadata_types(metadata, path)
    if metadata.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(
            f"{path}: format_version {metadata['format_version']} is newer than this albert_tf "
            f"understands ({FORMAT_VERSION}); upgrade albert_tf"
        )
    return metadata


def find_spm_model(path=None, spm_model_file=None):
    """`spm_model_file` if given, else the spm.model stored with `path` (a checkpoint directory, a
    ckpt-N prefix, an albert_tf.export directory or its encoder SavedModel); FileNotFoundError when
    there is none. The one lookup every tool that tokenizes uses."""
    if spm_model_file:
        if not os.path.isfile(spm_model_file):
            raise SettingFileNotFound(f"{spm_model_file}: no such SentencePiece model (<spm_model_file>)")
        return spm_model_file
    if not path:
        raise SettingFileNotFound("no SentencePiece model: pass <spm_model_file>")
    exported = exported_encoder_dir(path)
    for directory in [path, exported] if exported else [resolve_checkpoint(path)[0]]:
        found = spm_model_path(directory)
        if found:
            return found
    raise SettingFileNotFound(f"{path}: holds no spm.model; pass <spm_model_file>")


def resolve_checkpoint(path):
    """(directory, checkpoint prefix) for a checkpoint directory or a `ckpt-N` prefix."""
    if tf.io.gfile.exists(path + ".index"):
        return os.path.dirname(path) or ".", path
    if not tf.io.gfile.isdir(path):
        raise FileNotFoundError(f"{path}: no such checkpoint directory")
    weights = os.path.join(path, WEIGHTS_PREFIX)
    if tf.io.gfile.exists(weights + ".index"):
        return path, weights
    candidates = checkpoints_newest_first(path)
    if not candidates:
        if any(tf.io.gfile.exists(os.path.join(path, name)) for name in _HUGGINGFACE_WEIGHTS):
            raise FileNotFoundError(f"{path}: a Hugging Face checkpoint, not an albert_tf one; convert it first: "
                                    f"albert-convert --from=huggingface --input={path} --output=NEW_DIR")
        raise FileNotFoundError(f"{path}: holds no checkpoint ({WEIGHTS_PREFIX}.index or ckpt-N)")
    return path, candidates[0]


def checkpoints_newest_first(directory):
    """Every `ckpt-N` prefix in `directory` that has an .index file, highest N first.

    The files, not the `checkpoint` state file, are the record: CheckpointManager
    updates the state file only after a save, so a run killed in between leaves a
    complete ckpt-N that the state file does not name (and a damaged state file
    must not hide the checkpoints).
    """
    numbers = [int(m.group(1)) for path in tf.io.gfile.glob(os.path.join(directory, "ckpt-*.index"))
               if (m := re.search(r"ckpt-(\d+)\.index$", path))]
    return [os.path.join(directory, f"ckpt-{n}") for n in sorted(numbers, reverse=True)]


def restore_newest_intact(restore, candidates, what="checkpoint"):
    """Calls `restore(prefix)` on the newest of `candidates` that restores; returns that prefix.

    A checkpoint can be damaged after it was written (a disk that filled up during
    the save, a truncated copy, a flipped bit: TF checks every tensor's CRC32C). The
    previous intact one is used instead, with a warning naming the damaged one.
    """
    problems = []
    for prefix in candidates:
        try:
            restore(prefix)
        except (tf.errors.OpError, ValueError, AssertionError) as error:
            message = (getattr(error, "message", None) or str(error)).strip().splitlines()[0]
            problems.append(f"{prefix} ({message})")
            print(f"WARNING: {prefix} is unreadable ({message}); using the previous {what}.", file=sys.stderr,
                  flush=True)
            continue
        return prefix
    raise ValueError(f"no intact {what} in {os.path.dirname(candidates[0])}: " + "; ".join(problems))


def write_model_dir(model: keras.Model, directory: str | os.PathLike, kind: str | None = None,
                    overwrite: bool = False, files: dict[str, str] | None = None, **extra) -> str:
    """Writes metadata + weights (+ `files`: {name in dir: source path}), all or nothing.

    The kind and what it needs (a classifier's num_labels, ...) come from the model itself;
    `extra` adds to them (label_names, is_regression, ...).
    """
    inferred_kind, needed = registry.describe(model)
    if kind is not None and kind != inferred_kind:
        raise ValueError(f"kind={kind!r}, but the model is an {type(model).__name__} ({inferred_kind!r})")
    kind = inferred_kind
    extra = {**needed, **extra}
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is not None:  # the model's own vocabulary and settings travel with it
        extra["preprocessor"] = {"seq_length": preprocessor.seq_length, "lower_case": preprocessor.lower_case,
                                 "keep_accents": preprocessor.keep_accents,
                                 "rewrite_quotes": preprocessor.rewrite_quotes}
    with staged_directory(directory, overwrite=overwrite) as staging:
        tf.train.Checkpoint(model=model).write(os.path.join(staging, WEIGHTS_PREFIX))
        for name, source in (files or {}).items():
            copy = copy_spm_model if name == SPM_MODEL_FILE else shutil.copyfile
            copy(source, os.path.join(staging, name))
        if preprocessor is not None:
            with open(os.path.join(staging, SPM_MODEL_FILE), "wb") as f:
                f.write(preprocessor.model_proto)
        write_metadata(staging, kind, model.albert_config, **extra)
    return os.path.abspath(directory)


def build_model(metadata):
    """A fresh model of the kind (and heads) an albert_tf.json records."""
    return registry.build(metadata["model"], _albert_config(metadata), metadata, source=METADATA_FILE)


def restore_weights(model, checkpoint_prefix):
    """Restores `model` from the `model` child of a checkpoint; every variable must be found."""
    status = tf.train.Checkpoint(model=model).read(checkpoint_prefix)
    try:
        status.expect_partial().assert_existing_objects_matched()
    except AssertionError as error:
        raise ValueError(
            f"{checkpoint_prefix}: checkpoint does not match the model its {METADATA_FILE} "
            f"describes ({error})"
        ) from None


def load_model(path: str | os.PathLike) -> tuple[keras.Model, dict]:
    """(model, metadata) for an albert_tf checkpoint directory or ckpt prefix.

    Given a directory of `ckpt-N` checkpoints, the newest intact one is loaded (a
    damaged newest one is skipped with a warning); a prefix names exactly one.
    """
    directory, _ = resolve_checkpoint(path)
    metadata = read_metadata(directory)
    model = build_model(metadata)
    _restore_checkpoint(model, path)
    if "preprocessor" in metadata and spm_model_path(directory):
        recorded = metadata["preprocessor"]
        rewrite_quotes = recorded_rewrite_quotes(recorded if "rewrite_quotes" in recorded else metadata, directory)
        model.preprocessor = _preprocessor(spm_model_path(directory), **{**recorded, "rewrite_quotes": rewrite_quotes})
    return model, metadata


def _restore_checkpoint(model, path):
    """Restores `model` from `path`: a prefix names exactly one checkpoint; a directory of `ckpt-N` gives the
    newest intact one."""
    directory, prefix = resolve_checkpoint(path)
    if prefix == path or prefix.endswith(WEIGHTS_PREFIX):
        restore_weights(model, prefix)
    else:
        restore_newest_intact(lambda candidate: restore_weights(model, candidate), checkpoints_newest_first(directory))


def _preprocessor(spm_model_file, seq_length, lower_case=True, keep_accents=False, rewrite_quotes=False):
    from albert_tf.text.albert_preprocessor import AlbertPreprocessor

    return AlbertPreprocessor(read_spm_model(spm_model_file), seq_length=seq_length, lower_case=lower_case,
                              keep_accents=keep_accents, rewrite_quotes=rewrite_quotes)


def _default_seq_length(caller, max_seq_length, recorded, albert_config):
    """`max_seq_length`, else the recorded length, else 128; never more than the model has positions for."""
    positions = albert_config.max_position_embeddings
    if max_seq_length is not None and max_seq_length > positions:
        raise ValueError(f"{caller}: max_seq_length={max_seq_length} exceeds the model's max_position_embeddings "
                         f"{positions}; pass at most {positions}")
    return max_seq_length or recorded or min(128, positions)


def _vocabulary_size(spm_model_file):
    """The size of an ALBERT SentencePiece model (anything else is refused, naming the file)."""
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    return AlbertTokenizer(model_proto=read_spm_model(spm_model_file)).vocab_size


def _check_vocabulary(caller, spm_model_file, vocab_size):
    pieces = _vocabulary_size(spm_model_file)
    if pieces != vocab_size:
        raise ValueError(f"{caller}: spm_model_file {spm_model_file} holds {pieces} pieces but the model's "
                         f"vocab_size is {vocab_size}; pass the vocabulary the model was trained with (or leave "
                         "vocab_size out for a preset)")


def model_from_preset(model_class, preset, max_seq_length=None, spm_model_file=None, **kwargs):
    """`model_class.from_preset(preset, **kwargs)`: see `AlbertTaskModel.from_preset`."""
    import dataclasses
    import warnings

    from albert_tf.albert_config import preset_names
    from albert_tf.models.task_model import merge_synonyms
    from albert_tf.settings import refuse_unknown_keywords
    from albert_tf.networks.albert_encoder import AlbertEncoder

    caller = f"{model_class.__name__}.from_preset"
    config_fields = {field.name for field in dataclasses.fields(AlbertConfig)}
    # The encoder comes from the preset: the constructor's own `encoder` and `config` have no place here.
    model_arguments = model_class.constructor_arguments() - {"encoder", "config"}
    refuse_unknown_keywords(caller, kwargs, model_arguments | config_fields | {"max_seq_length", "spm_model_file"})
    kwargs = merge_synonyms(caller, kwargs, model_class.ARGUMENT_SYNONYMS)
    overrides = {name: value for name, value in kwargs.items() if name in config_fields}
    arguments = {name: value for name, value in kwargs.items() if name not in config_fields}
    takes_preprocessor = hasattr(model_class, "preprocessor")
    if spm_model_file is not None and arguments.get("preprocessor") is not None:
        raise TypeError(f"{caller}: preprocessor= and spm_model_file= both given; pass one of them")
    if not os.path.isdir(preset):
        if preset not in preset_names():
            raise ValueError(f"{preset!r}: neither a preset ({', '.join(preset_names())}) nor a model directory")
        if spm_model_file is not None:
            if "vocab_size" in overrides:
                _check_vocabulary(caller, spm_model_file, overrides["vocab_size"])
            overrides["vocab_size"] = _vocabulary_size(spm_model_file)
        model = model_class(AlbertEncoder(AlbertConfig.from_preset(preset, **overrides)), **arguments)
        advice = ("; to feed it raw text, pass spm_model_file=" if takes_preprocessor and spm_model_file is None
                  and model.preprocessor is None else "")
        warnings.warn(f"{preset!r} is an architecture preset, not pretrained weights: this {model_class.__name__} "
                      f"starts from random parameters. For pretrained ones pass a model directory (albert-convert "
                      f"makes one from Google's or Hugging Face's checkpoints){advice}", UserWarning, stacklevel=3)
        if spm_model_file is not None and takes_preprocessor:
            seq_length = _default_seq_length(caller, max_seq_length, None, model.albert_config)
            model.preprocessor = _preprocessor(spm_model_file, seq_length)
        return model
    if overrides:
        raise ValueError(f"{preset}: its weights fix the architecture; {', '.join(sorted(overrides))} can be changed "
                         "only for a preset name")
    exported = exported_encoder_dir(preset)
    metadata = read_metadata(os.path.join(exported, "assets") if exported else resolve_checkpoint(preset)[0])
    kind, saved_arguments = registry.describe_class(model_class)
    if metadata["model"] == kind and not exported and all(
            metadata.get(name, value) == value for name, value in arguments.items() if name in saved_arguments):
        # The same kind of model: its head too, built with the caller's other arguments (a new dropout).
        recorded = {name: int(metadata[name]) for name in saved_arguments if name in metadata}
        model = model_class(config=_albert_config(metadata), **{**recorded, **arguments})
        if hasattr(model, "build_variables"):
            model.build_variables()
        _restore_checkpoint(model, preset)
    else:
        model = model_class(load_encoder(preset), **arguments)
    directory = exported or resolve_checkpoint(preset)[0]
    vocabulary = spm_model_file or spm_model_path(directory)
    if spm_model_file is not None:
        _check_vocabulary(caller, spm_model_file, model.albert_config.vocab_size)
    if takes_preprocessor and vocabulary and arguments.get("preprocessor") is None:
        # What the directory records (a saved classifier's preprocessor, an export's length and casing).
        recorded = metadata.get("preprocessor", {})
        seq_length = _default_seq_length(caller, max_seq_length,
                                         recorded.get("seq_length") or metadata.get("max_seq_length"),
                                         model.albert_config)
        lower_case = recorded.get("lower_case", metadata.get("lower_case", True))
        keep_accents = recorded.get("keep_accents", metadata.get("keep_accents", False))
        rewrite_quotes = recorded_rewrite_quotes(recorded if "rewrite_quotes" in recorded else metadata, preset)
        model.preprocessor = _preprocessor(vocabulary, seq_length, lower_case, keep_accents, rewrite_quotes)
    return model


def load_pretrainer(path: str | os.PathLike) -> "AlbertPretrainer":
    """The `AlbertPretrainer` saved in an albert_tf checkpoint directory."""
    model, metadata = load_model(path)
    if metadata["model"] != "pretrainer":
        raise ValueError(
            f"{path}: holds a {metadata['model']!r} model without pretraining heads; "
            "use load_encoder, or convert a checkpoint that has the MLM and SOP heads"
        )
    return model


def load_encoder(path: str | os.PathLike) -> "AlbertEncoder":
    """The `AlbertEncoder` of any albert_tf checkpoint (encoder, pretrainer or task model), or of a
    directory written by `albert_tf.export` (given the export or its `encoder/` SavedModel): an
    encoder built from the export's albert_tf.json, holding the SavedModel's weights."""
    saved_model = exported_encoder_dir(path)
    if saved_model:
        return _encoder_from_saved_model(saved_model)
    model, _ = load_model(path)
    return getattr(model, "encoder", model)


def model_metadata(path):
    """The albert_tf.json of a checkpoint directory, a ckpt-N prefix, or an albert_tf.export directory
    (its root's, which records the export's length and casing) or its encoder SavedModel."""
    exported = exported_encoder_dir(path)
    if exported:
        root = os.path.dirname(os.path.normpath(exported))
        return read_metadata(root if os.path.isfile(os.path.join(root, METADATA_FILE)) else
                             os.path.join(exported, "assets"))
    return read_metadata(resolve_checkpoint(path)[0])


def exported_encoder_dir(path):
    """The encoder SavedModel of an albert_tf.export directory (given the export or the SavedModel), or None."""
    for candidate in (os.path.join(path, "encoder"), path):
        if os.path.isfile(os.path.join(candidate, "saved_model.pb")) and os.path.isfile(
                os.path.join(candidate, "assets", METADATA_FILE)):
            return candidate
    return None


def _encoder_from_saved_model(directory):
    from albert_tf.networks.albert_encoder import AlbertEncoder

    metadata = read_metadata(os.path.join(directory, "assets"))
    encoder = AlbertEncoder(_albert_config(metadata))
    # The export lists the encoder's weights in the encoder's own order (EncoderModule.variables).
    copy_weights(encoder.weights, tf.saved_model.load(directory).variables,
                 f"{directory} (with the config in its {METADATA_FILE})")
    return encoder


def copy_weights(targets, sources, source_name):
    """Assigns `sources` to `targets` in order once their count and every shape match (else nothing changes)."""
    targets, sources = list(targets), list(sources)
    if len(targets) != len(sources):
        raise ValueError(f"{source_name}: holds {len(sources)} variables where the model has {len(targets)}")
    for target, source in zip(targets, sources):
        if tuple(target.shape) != tuple(source.shape):
            name = getattr(source, "path", None) or source.name
            raise ValueError(f"{source_name}: {name} has shape {tuple(source.shape)}, {target.path} needs "
                             f"{tuple(target.shape)}")
    for target, source in zip(targets, sources):
        target.assign(source)
