"""The albert_tf model directory format: `albert_tf.json` (what the model is) + weights, found and checked.

A directory holds either one `weights` checkpoint (written by the converter or
at the end of training) or the `ckpt-N` series that run_pretraining's
CheckpointManager keeps. Both are TF object-graph checkpoints whose root has a
`model` child, so one loader reads both; a training checkpoint's optimizer and
input-iterator state is simply not restored.

Metadata (`albert_tf.json`):
  {"format": "albert_tf", "format_version": 1, "model": "<kind>",
   "albert_config": {...}, ...kind-specific keys}

This module knows the files only: it writes and checks the metadata, finds the
vocabulary and the checkpoint to read, and falls back past damaged checkpoints.
It builds no model: `model_io` turns a directory into a model and back, through
`registry`'s model classes. The split keeps the format below every model class,
so the models (and `task_model`'s `from_preset`/`save_to_preset`, through
`model_io`) import it without an import circle.
"""

import json
import os
import re
import sys

import tensorflow as tf

from albert_tf.albert_config import AlbertConfig
from albert_tf.file_utils import describe_json_value, write_json
from albert_tf.settings import SettingError, SettingFileNotFound
from albert_tf.text.albert_tokenizer import spm_model_path

METADATA_FILE = "albert_tf.json"
# What a Hugging Face save_pretrained directory holds instead (albert_tf.convert reads it).
_HUGGINGFACE_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
WEIGHTS_PREFIX = "weights"
# GLUE tasks of single sentences: their classifiers take no text_b (`recorded_takes_pairs` of an old record).
SINGLE_SENTENCE_GLUE_TASKS = frozenset({"cola", "sst-2"})
FORMAT_VERSION = 1
# What a classifier's "problem_type" may say: the loss its head was trained with, so the outputs it answers.
PROBLEM_TYPES = ("single_label", "multi_label", "regression")
# A multi-label classifier predicts each label whose sigmoid probability reaches this, unless its record says
# otherwise (`recorded_multi_label_threshold`).
DEFAULT_MULTI_LABEL_THRESHOLD = 0.5


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
    # A classifier's head: which loss it was trained with, so which outputs it answers.
    "problem_type": (lambda value: value in PROBLEM_TYPES, '"single_label", "multi_label" or "regression"'),
    "albert_config": _OBJECT,
    # A task model's head sizes (models.registry's saved arguments) and the recorded preprocessing.
    **dict.fromkeys(("num_labels", "num_choices", "start_n_top", "end_n_top", "max_seq_length",
                     "max_predictions_per_seq", "max_qa_length"), _POSITIVE),
    **dict.fromkeys(("lower_case", "keep_accents", "rewrite_quotes", "is_regression", "takes_pairs"), _BOOLEAN),
    **dict.fromkeys(("task_name", "squad_version", "squad_v2_head"), _STRING),
    "label_names": (_is_string_list, "a list of strings"),
    "multi_label_threshold": (lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)
                              and 0 <= value <= 1, "a number from 0 to 1"),
    "preprocessor": _OBJECT,
    # The vocabulary's kind: "wordpiece" beside a vocab.txt; absent (or "sentencepiece") beside an spm.model.
    "vocabulary": (lambda value: value in ("sentencepiece", "wordpiece"), '"sentencepiece" or "wordpiece"'),
}
# What model_io.write_model_dir records of a model's own preprocessor (model_io.load_model rebuilds it from these).
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


def recorded_multi_label_threshold(metadata):
    """The probability at which the multi-label classifier of `metadata` (an albert_tf.json) predicts a label: its
    "multi_label_threshold", which run_text_classifier records; a record without it (a model converted from
    Hugging Face, whose config has none): DEFAULT_MULTI_LABEL_THRESHOLD."""
    threshold = metadata.get("multi_label_threshold")
    return DEFAULT_MULTI_LABEL_THRESHOLD if threshold is None else float(threshold)


def recorded_problem_type(metadata):
    """The problem type of the classifier of `metadata` (an albert_tf.json): its "problem_type", which
    run_text_classifier and save_to_preset record; a record without it: regression where it says
    "is_regression" (or, saying neither, has one output, as a classifier saved before either key), else
    single_label."""
    if metadata.get("problem_type") is not None:
        return metadata["problem_type"]
    is_regression = metadata.get("is_regression")
    if is_regression is None:
        is_regression = metadata.get("num_labels") == 1
    return "regression" if is_regression else "single_label"


def recorded_takes_pairs(metadata):
    """Whether the classifier of `metadata` (an albert_tf.json) answers sentence pairs (text, text_b): its
    "takes_pairs", which every writer of a classifier records; a record made before that key: true unless it
    was fine-tuned on a single-sentence GLUE task."""
    if metadata.get("takes_pairs") is not None:
        return metadata["takes_pairs"]
    return str(metadata.get("task_name") or "").lower() not in SINGLE_SENTENCE_GLUE_TASKS


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
    # Checked here, where the file's path is known: the loaders build the config again from the dict alone.
    AlbertConfig.from_dict(metadata["albert_config"], source=f'{path}: "albert_config"')
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


def find_vocabulary(path=None, spm_model_file=None, vocab_file=None):
    """The `vocabularies.Vocabulary` a tool tokenizes with: `spm_model_file` or `vocab_file` if given (not both),
    else the one stored with `path` (a checkpoint directory, a ckpt-N prefix, an albert_tf.export directory or
    its encoder SavedModel): spm.model or vocab.txt, beside the weights or in the SavedModel's assets."""
    from albert_tf.text.vocabularies import FILE_NAMES, SENTENCEPIECE, WORDPIECE, Vocabulary

    if spm_model_file and vocab_file:
        raise SettingError("pass <spm_model_file> (a SentencePiece model) or <vocab_file> (a WordPiece vocab.txt), "
                           "not both")
    if spm_model_file or vocab_file:
        return Vocabulary.read(vocab_file, WORDPIECE) if vocab_file else Vocabulary.read(spm_model_file, SENTENCEPIECE)
    if not path:
        raise SettingFileNotFound("no vocabulary: pass <spm_model_file> or <vocab_file>")
    exported = exported_encoder_dir(path)
    for directory in [path, exported] if exported else [resolve_checkpoint(path)[0]]:
        for kind, name in FILE_NAMES.items():
            for candidate in (os.path.join(directory, name), os.path.join(directory, "assets", name)):
                if os.path.isfile(candidate):
                    return Vocabulary.read(candidate, kind)
    raise SettingFileNotFound(f"{path}: holds no vocabulary (spm.model or vocab.txt); pass <spm_model_file> or "
                              "<vocab_file>")


def resolve_checkpoint(path):
    """(directory, checkpoint prefix) for a checkpoint directory, a `ckpt-N` prefix, or a training run's output
    directory (the model `run_model_dir` takes from it)."""
    if tf.io.gfile.exists(path + ".index"):
        return os.path.dirname(path) or ".", path
    if not tf.io.gfile.isdir(path):
        raise FileNotFoundError(f"{path}: no such checkpoint directory")
    weights = os.path.join(path, WEIGHTS_PREFIX)
    if tf.io.gfile.exists(weights + ".index"):
        return path, weights
    candidates = checkpoints_newest_first(path)
    if not candidates:
        run_model = run_model_dir(path)
        if run_model:
            return resolve_checkpoint(run_model)
        if any(tf.io.gfile.exists(os.path.join(path, name)) for name in _HUGGINGFACE_WEIGHTS):
            raise FileNotFoundError(f"{path}: a Hugging Face checkpoint, not an albert_tf one; convert it first: "
                                    f"albert-convert --from=huggingface --input={path} --output=NEW_DIR")
        raise FileNotFoundError(f"{path}: holds no checkpoint ({WEIGHTS_PREFIX}.index or ckpt-N)")
    return path, candidates[0]


# Where a fine-tuning tool's output directory keeps its models, in the order one is taken when the output
# directory is given as a model: the best evaluated one (with do_eval), else the last one
# (albert_tf.training.finetuning_tool's BEST_SUBDIR and CHECKPOINT_SUBDIR).
RUN_MODELS = (("best", "its best model"),
              ("checkpoints", "its last model (a run without do_eval keeps no best one)"))
_RUN_MODELS_SAID = set()


def run_model_dir(path):
    """The model directory inside the training run's output directory `path`: its best model, else its last;
    None when `path` holds neither. Which one is said on stderr, once per model in a process."""
    for name, what in RUN_MODELS:
        directory = os.path.join(path, name)
        if tf.io.gfile.exists(os.path.join(directory, METADATA_FILE)):
            if directory not in _RUN_MODELS_SAID:
                _RUN_MODELS_SAID.add(directory)
                print(f"Note: {path} is a training run's output directory; reading {what}, {directory}.",
                      file=sys.stderr, flush=True)
            return directory
    return None


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
