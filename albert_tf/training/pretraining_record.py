"""The record a pretraining run keeps in its output directory: run_config.json, and the model files beside it.

OUTPUT_DIR/run_config.json (`RUN_CONFIG_FILE`) is written when a run starts. It
holds what a resumed run must share with the run that wrote the checkpoints
(`_RESUME_INVARIANTS`: the resolved model config, batch, lengths, optimizer,
seed, loss weights, budget, input order; the input files by path, since the
checkpointed input position is a position in them) and the whole config the
run started with. `check_or_write_run_config` refuses a resumed run that
differs in one of them, naming each, and says in one line each setting a
resumed run may change and did (`_NOTED_ON_RESUME`: learning rate, steps,
warmup, precision). The time budget adds its plan to the record
(albert_tf.training.train_budget).

Beside it the run writes albert_tf.json (the model config and the preprocessing
contract, albert_tf.models.preprocessing_contract) and a copy of the vocabulary (spm.model or vocab.txt),
which a resumed run's spm_model_file (or vocab_file) must match (`check_vocabulary_file`). An
output directory another albert_tf tool wrote (a fine-tuning run, an export, a
conversion, a data set: albert_tf.file_utils.written_as) is refused before
anything is read or written; fine-tuning's own record is
albert_tf.training.run_directory's.
"""

import json
import os

import tensorflow as tf

from albert_tf.file_utils import PRETRAINING_TOOL, RUN_CONFIG_FILE, file_sha256, write_json
from albert_tf.models import model_dir_format
from albert_tf.models.preprocessing_contract import recorded_rewrite_quotes
from albert_tf.settings import SettingError
from albert_tf.text.vocabularies import DESCRIPTIONS, FILE_NAMES, SENTENCEPIECE, SETTINGS, WORDPIECE, write_vocabulary

# Flags a resumed run must share with the run that wrote the checkpoints.
_RESUME_INVARIANTS = ("albert_config", "train_batch_size", "max_seq_length", "max_predictions_per_seq", "optimizer",
                      "gradient_accumulation_steps", "seed", "sentence_loss_weight", "train_budget_hours",
                      "input_mixed_documents")
# What a run_config.json written before an invariant existed implies for it (a documents run before
# input_mixed_documents read one document's instances after another; static data has no such setting).
_INVARIANT_DEFAULTS = {"sentence_loss_weight": 1.0, "train_budget_hours": 0.0, "input_mixed_documents": 1}
# Settings a resumed run may change (the schedule and the arithmetic go on from the checkpoint's step),
# said in one line each so that a changed flag is never taken silently.
_NOTED_ON_RESUME = ("learning_rate", "num_train_steps", "num_warmup_steps", "mixed_precision")


def _run_config(settings, config, training_data):
    run_config = {"tool": PRETRAINING_TOOL, **{name: getattr(settings, name) for name in _RESUME_INVARIANTS}}
    if not training_data.is_documents:
        run_config["input_mixed_documents"] = None  # the order of static instances does not depend on it
    # The resolved model config, not the flag's string: a JSON edited in place between runs
    # (4 -> 12 layers keeps every variable's shape) must not relabel the old checkpoints.
    run_config["albert_config"] = config.to_dict()
    # The checkpointed input position is a position in these files; it means nothing in others.
    run_config["input_files"] = list(training_data.files)
    # And the whole config the run started with, as resolved (the lengths from the data).
    run_config["config"] = settings.to_json()
    return run_config


def _recorded(previous, key, current):
    """A resume invariant as the earlier run_config.json records it, or as its absence implies."""
    if key in previous:
        return previous[key]
    if key == "input_mixed_documents" and current[key] is None:
        return None  # static data, recorded before the setting existed
    return _INVARIANT_DEFAULTS.get(key)


def check_or_write_run_config(settings, output_dir, resuming, chief, config, training_data):
    """Resuming: refuses settings or training files that differ from the recorded run's, and notes a changed
    schedule. Else the chief writes the record. `training_data`: the run's `TrainingData`."""
    path = os.path.join(output_dir, RUN_CONFIG_FILE)
    current = _run_config(settings, config, training_data)
    if resuming and tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            previous = json.load(f)
        changed = []
        for key in _RESUME_INVARIANTS:
            if key == "albert_config":
                if isinstance(previous.get(key), dict) and previous[key] != current[key]:
                    fields = sorted(k for k in set(previous[key]) | set(current[key])
                                    if previous[key].get(k) != current[key].get(k))
                    changed.append(f"<albert_config>={settings.albert_config} resolves to another model ("
                                   + ", ".join(f"{k}={current[key].get(k)}, was {previous[key].get(k)}"
                                               for k in fields) + ")")
                elif isinstance(previous.get(key), str) and previous[key] != settings.albert_config:
                    changed.append(f"<albert_config>={settings.albert_config} (the checkpoints were made with "
                                   f"{previous[key]})")
            elif _recorded(previous, key, current) != current[key]:
                changed.append(f"<{key}>={current[key]} (the checkpoints were made with "
                               f"{_recorded(previous, key, current)})")
        if changed:
            raise SettingError(f"{output_dir} holds checkpoints of another run: " + "; ".join(changed) +
                               ". Use another <output_dir>, or the original settings to resume.")
        # By path, not by name: the checkpointed input iterator holds these paths and reads from them.
        if "input_files" in previous and previous["input_files"] != current["input_files"]:
            raise SettingError(
                f"{output_dir}: the training files changed since its checkpoints were written "
                f"({len(previous['input_files'])} file(s) then, e.g. {previous['input_files'][0]}; "
                f"{len(current['input_files'])} now), and the saved input position is a position in those files. "
                "Resume with the same <input_file> at the same path, or continue training on the new data in a "
                f"new <output_dir> with <init_checkpoint>={output_dir}")
        _say_schedule_changes(previous.get("config") or {}, settings)
    elif chief:
        write_json(path, current)


def _say_schedule_changes(previous_config, settings):
    for name in _NOTED_ON_RESUME:
        if name in previous_config and previous_config[name] != getattr(settings, name):
            print(f"Note: resuming with {name}={getattr(settings, name)}; the checkpoints were made with "
                  f"{previous_config[name]}: from the resumed step on the run follows the new value.", flush=True)


def check_vocabulary_file(settings, output_dir, resuming):
    """On resume, spm_model_file (or vocab_file) must be the vocabulary the run started with (it is copied into
    output_dir)."""
    if not (resuming and settings.vocabulary_file()):
        return
    kind = WORDPIECE if settings.vocab_file else SENTENCEPIECE
    others = [name for other, name in FILE_NAMES.items() if other != kind
              and tf.io.gfile.exists(os.path.join(output_dir, name))]
    if others:
        raise SettingError(f"<{SETTINGS[kind]}>={settings.vocabulary_file()}: this run started with another kind of "
                           f"vocabulary ({os.path.join(output_dir, others[0])}); pass that one, or train into a new "
                           "<output_dir>")
    stored = os.path.join(output_dir, FILE_NAMES[kind])
    if tf.io.gfile.exists(stored) and file_sha256(stored) != file_sha256(settings.vocabulary_file()):
        raise SettingError(f"<{SETTINGS[kind]}>={settings.vocabulary_file()} is not the {DESCRIPTIONS[kind]} this "
                           f"run started with ({stored}); pass that one, or train into a new <output_dir>")


def write_model_metadata(settings, output_dir, config, training_data):
    """albert_tf.json, and a copy of spm_model_file: what makes output_dir a model directory others load."""
    # The preprocessing contract (albert_tf.models.preprocessing_contract): the length, and the casing and
    # quote rule the data was made with (data without metadata, such as the original script's, records none).
    data_config = training_data.metadata["config"] if training_data.metadata else None
    casing = ({"lower_case": data_config["lower_case"], "keep_accents": data_config.get("keep_accents", False),
               "rewrite_quotes": recorded_rewrite_quotes(data_config, f"the data {settings.input_file}")}
              if data_config else {})
    # A WordPiece vocabulary's kind is recorded (a directory without the key holds a SentencePiece model).
    kind = {"vocabulary": WORDPIECE} if settings.vocab_file else {}
    model_dir_format.write_metadata(output_dir, "pretrainer", config, max_seq_length=settings.max_seq_length,
                                    max_predictions_per_seq=settings.max_predictions_per_seq, **casing, **kind)
    source = settings.vocabulary_file()
    if not source:
        return
    stored = os.path.join(output_dir, FILE_NAMES[WORDPIECE if settings.vocab_file else SENTENCEPIECE])
    if "://" in source or "://" in output_dir:
        tf.io.gfile.copy(source, stored, overwrite=True)
    else:
        write_vocabulary(settings.vocabulary(), stored)  # checked again: the file it copies is a vocabulary
