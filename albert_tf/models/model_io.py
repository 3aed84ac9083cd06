"""Models in and out of albert_tf model directories: build, restore, load, save, and `from_preset`.

  write_model_dir      a model's weights, albert_tf.json (its kind and heads, from `registry`) and files
  load_model           (model, metadata): the model albert_tf.json records, its weights restored
  load_pretrainer      the same, refusing a model without pretraining heads
  load_encoder         the encoder of any model directory, or of an albert_tf.export directory
  model_from_preset    `AlbertTaskModel.from_preset` and `save_to_preset`'s other half
  build_model, restore_weights, copy_weights: the steps, for the training loops

`model_dir_format` holds what the directory is (its files, metadata and checkpoints); this
module holds what needs model classes. It names them through `registry`, which imports a
class only when a model of its kind is built, so `task_model` (which every model class
imports) can import this module at its top.
"""

import dataclasses
import os
import shutil
import warnings

import keras
import tensorflow as tf

from albert_tf.albert_config import AlbertConfig, preset_names
from albert_tf.file_utils import staged_directory
from albert_tf.models import registry
from albert_tf.models.model_dir_format import (METADATA_FILE, WEIGHTS_PREFIX, checkpoints_newest_first,
                                               exported_encoder_dir, read_metadata, resolve_checkpoint,
                                               restore_newest_intact, write_metadata)
from albert_tf.models.preprocessing_contract import recorded_rewrite_quotes
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.settings import merge_synonyms, refuse_unknown_keywords
from albert_tf.text.albert_tokenizer import (SPM_MODEL_FILE, AlbertTokenizer, copy_spm_model, read_spm_model,
                                             spm_model_path)


def _albert_config(metadata):
    return AlbertConfig.from_dict(metadata["albert_config"], source=METADATA_FILE)


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
    """An `AlbertPreprocessor` of a SentencePiece model, or of a WordPiece vocab.txt (a path ending in .txt, as a
    model directory stores it)."""
    # Here, not at the top: the preprocessor needs tensorflow-text, which only a model fed raw text loads.
    from albert_tf.text.albert_preprocessor import AlbertPreprocessor

    if str(spm_model_file).endswith(".txt"):
        return AlbertPreprocessor.from_vocab_file(spm_model_file, seq_length=seq_length, lower_case=lower_case,
                                                  keep_accents=keep_accents)
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
    return AlbertTokenizer(model_proto=read_spm_model(spm_model_file)).vocab_size


def _check_vocabulary(caller, spm_model_file, vocab_size):
    pieces = _vocabulary_size(spm_model_file)
    if pieces != vocab_size:
        raise ValueError(f"{caller}: spm_model_file {spm_model_file} holds {pieces} pieces but the model's "
                         f"vocab_size is {vocab_size}; pass the vocabulary the model was trained with (or leave "
                         "vocab_size out for a preset)")


def model_from_preset(model_class, preset, max_seq_length=None, spm_model_file=None, **kwargs):
    """`model_class.from_preset(preset, **kwargs)`: see `AlbertTaskModel.from_preset`."""
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
    recorded = None if exported else model_class.recorded_head(metadata, arguments)
    if recorded is not None:
        # The same kind of model and head: the head too, built with the caller's other arguments (a new dropout).
        model = model_class(config=_albert_config(metadata), **{**recorded, **arguments})
        if hasattr(model, "build_variables"):
            model.build_variables()
        _restore_checkpoint(model, preset)
    else:
        model = model_class(load_encoder(preset), **arguments)
    directory = exported or resolve_checkpoint(preset)[0]
    # The directory's vocabulary: its spm.model, or the vocab.txt of a WordPiece model (Google's Chinese ALBERTs).
    wordpiece = os.path.join(directory, "assets" if exported else "", "vocab.txt")
    vocabulary = spm_model_file or spm_model_path(directory) or (wordpiece if os.path.isfile(wordpiece) else None)
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


# Annotated keras.Model, not AlbertPretrainer: importing that class here would close an import circle
# (albert_pretrainer -> task_model -> model_io); registry builds it.
def load_pretrainer(path: str | os.PathLike) -> keras.Model:
    """The `AlbertPretrainer` saved in an albert_tf checkpoint directory."""
    model, metadata = load_model(path)
    if metadata["model"] != "pretrainer":
        raise ValueError(
            f"{path}: holds a {metadata['model']!r} model without pretraining heads; "
            "use load_encoder, or convert a checkpoint that has the MLM and SOP heads"
        )
    return model


def load_encoder(path: str | os.PathLike) -> AlbertEncoder:
    """The `AlbertEncoder` of any albert_tf checkpoint (encoder, pretrainer or task model), or of a
    directory written by `albert_tf.export` (given the export or its `encoder/` SavedModel): an
    encoder built from the export's albert_tf.json, holding the SavedModel's weights."""
    saved_model = exported_encoder_dir(path)
    if saved_model:
        return _encoder_from_saved_model(saved_model)
    model, _ = load_model(path)
    return getattr(model, "encoder", model)


def _encoder_from_saved_model(directory):
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
