"""`convert()`: ALBERT checkpoints between albert_tf, the original TF1 format and Hugging Face.

Every tensor is checked before anything is written: names the model does not
have, variables the source lacks, and shape mismatches are listed together, and
the output directory is created only once the conversion has succeeded. The
casing and quote rule (and, from an albert_tf source, the sequence length) travel
with the model: Google's checkpoints were trained on text whose `` and '' were
kept (the original's rule), Hugging Face's on text where they became " (their
tokenizer's rule), and albert_tf records which (albert_tf.models.preprocessing_contract).

Encoders, pretrainers and the fine-tuned models of `task_heads()` convert. A
classifier's head goes by the original run_classifier's names (output_weights,
output_bias); to Hugging Face it becomes AlbertForSequenceClassification, its label
names (albert_tf.json's label_names) id2label and label2id, a regression head
problem_type "regression", and back. The original SQuAD 2.0 model's head goes by
run_squad_v2's names (start_logits/..., end_logits/..., answer_class/...), so a
checkpoint it fine-tuned converts; Hugging Face has no such model.
"""

import dataclasses
import os
from collections.abc import Callable

from albert_tf.settings import SettingError, SettingFileNotFound

FORMATS = ("albert_tf", "huggingface", "tf1")
CONVERTED_KINDS = ("encoder", "pretrainer", "classifier", "squad_v2_span_labeler")
# What an albert_tf.json records that travels with the model: the preprocessing, a classifier's labels.
RECORDED_KEYS = ("lower_case", "keep_accents", "rewrite_quotes", "max_seq_length", "label_names", "is_regression")
_SPM_NAMES = {"albert_tf": "spm.model", "huggingface": "spiece.model", "tf1": "30k-clean.model"}


@dataclasses.dataclass(frozen=True)
class TaskHead:
    """A fine-tuned model's head that converts, as one row of `task_heads()`."""

    kind: str  # the model kind (albert_tf.models.registry)
    marker: str  # an original tensor name only this head has: a source holding it is this kind of model
    variables: Callable  # model -> {original name: MappedVariable} of the head
    saved_arguments: Callable  # {original name: array} -> the model's recorded constructor arguments
    recorded: dict  # what albert_tf.json records of a model of this kind converted from another format
    huggingface: bool  # whether Hugging Face has a model with this head


def task_heads():
    """The heads of fine-tuned models that convert: the one table `build_checked_model` and `model_tensors`
    read."""
    from albert_tf.checkpoints.huggingface_format import CLASSIFIER_BIAS
    from albert_tf.checkpoints.original_names import squad_v2_head_variables

    return (
        TaskHead("classifier", CLASSIFIER_BIAS, classifier_head_variables,
                 lambda tensors: {"num_labels": len(tensors[CLASSIFIER_BIAS])}, {}, huggingface=True),
        TaskHead("squad_v2_span_labeler", "answer_class/dense_1/kernel", squad_v2_head_variables,
                 lambda tensors: {}, {"squad_version": "2.0", "squad_v2_head": "original"}, huggingface=False),
    )


def read_source(source_format, path, albert_config=None):
    """(AlbertConfig, {original name: array}, spm model path or None, {recorded}) from any format.

    Recorded, where the source says them: "lower_case" and "max_seq_length" (albert_tf.json; a Hugging
    Face tokenizer_config.json's do_lower_case), and a classifier's "label_names" and "is_regression"
    (albert_tf.json; a Hugging Face config.json's id2label and problem_type). "rewrite_quotes" always
    from tf1 (false: the original's rule) and Hugging Face (true, their tokenizer's rule, unless its
    tokenizer_config.json says otherwise, as albert_tf's own conversion writes it); from albert_tf
    where its albert_tf.json records it.
    """
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.checkpoints import huggingface_format, tf1_format
    from albert_tf.checkpoints.assign import CheckpointMismatchError
    from albert_tf.models.model_io import load_model
    from albert_tf.text.albert_tokenizer import spm_model_path

    if source_format == "albert_tf":
        model, metadata = load_model(path)
        if metadata["model"] not in CONVERTED_KINDS:
            raise ValueError(f"{path}: a {metadata['model']!r} model; only {', '.join(CONVERTED_KINDS)} models "
                             "convert")
        directory = path if os.path.isdir(path) else os.path.dirname(path)
        recorded = {key: metadata[key] for key in RECORDED_KEYS if key in metadata}
        return model.albert_config, model_tensors(model), spm_model_path(directory), recorded
    if source_format == "huggingface":
        config, tensors, unmapped = huggingface_format.read_huggingface_dir(path)
        if unmapped:
            raise CheckpointMismatchError(path, unmapped=unmapped)
        spm = os.path.join(path, "spiece.model")
        recorded = {"rewrite_quotes": True, **huggingface_format.recorded_casing(path)}
        if huggingface_format.CLASSIFIER_BIAS in tensors:
            num_labels = len(tensors[huggingface_format.CLASSIFIER_BIAS])
            recorded.update(huggingface_format.recorded_labels(path, num_labels))
        # A link (a Hugging Face cache snapshot links into blobs/) is followed and checked when it is copied.
        return config, tensors, spm if os.path.lexists(spm) else None, recorded
    prefix = tf1_format.resolve_tf1_checkpoint(path)
    config_source = albert_config or os.path.join(os.path.dirname(prefix), tf1_format.ORIGINAL_CONFIG_FILE)
    if not albert_config and not os.path.isfile(config_source):
        raise SettingFileNotFound(f"{config_source}: not found; pass <albert_config>=PATH or a preset name")
    return (AlbertConfig.from_name_or_path(config_source), tf1_format.read_tf1_checkpoint(prefix), None,
            {"rewrite_quotes": False})


def classifier_head_variables(classifier):
    """{original name: MappedVariable} for an AlbertClassifier's head (a Keras kernel is [H, num_labels])."""
    from albert_tf.checkpoints.huggingface_format import CLASSIFIER_BIAS, CLASSIFIER_WEIGHTS
    from albert_tf.checkpoints.original_names import MappedVariable

    return {CLASSIFIER_WEIGHTS: MappedVariable(classifier.classifier.kernel, transposed=True),
            CLASSIFIER_BIAS: MappedVariable(classifier.classifier.bias)}


def _task_head_of(kind):
    return next((head for head in task_heads() if head.kind == kind), None)


def model_tensors(model):
    """{original name: numpy array} of every variable of an encoder, pretrainer or `task_heads()` model."""
    from albert_tf.checkpoints.assign import read_model_tensors
    from albert_tf.models import registry

    task_head = _task_head_of(registry.describe(model)[0])
    if task_head is None:
        return read_model_tensors(model)
    head = {name: mapped.read() for name, mapped in task_head.variables(model).items()}
    return {**read_model_tensors(model.encoder), **head}


def _check_and_assign_with_head(model, head, tensors, source, init_missing_heads):
    """check_and_assign for a model of `task_heads()` (`head`: its head's variables): the encoder's and the
    head's problems listed together."""
    from albert_tf.checkpoints.assign import CheckpointMismatchError, check_and_assign

    missing = [name for name in head if name not in tensors]
    mismatched = [f"{name} (source {tuple(tensors[name].shape)}, model {mapped.original_shape})"
                  for name, mapped in head.items() if name in tensors
                  and tuple(tensors[name].shape) != mapped.original_shape]
    encoder_tensors = {name: tensor for name, tensor in tensors.items() if name not in head}
    try:
        initialized = check_and_assign(model.encoder, encoder_tensors, source,
                                       initialize_missing_heads=init_missing_heads)
    except CheckpointMismatchError as error:
        raise CheckpointMismatchError(source, [*error.missing, *missing], error.unmapped,
                                      [*error.mismatched, *mismatched]) from None
    if missing or mismatched:
        raise CheckpointMismatchError(source, missing, (), mismatched)
    for name, mapped in head.items():
        mapped.assign(tensors[name])
    return initialized


def build_checked_model(config, tensors, source, init_missing_heads=False):
    """(model, kind, heads left initialized): the model that holds `tensors`, fully checked."""
    from albert_tf.checkpoints.assign import check_and_assign, has_pretraining_heads
    from albert_tf.models import registry
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.networks.albert_encoder import AlbertEncoder

    for task_head in task_heads():
        if task_head.marker in tensors:
            model = registry.build(task_head.kind, config, task_head.saved_arguments(tensors), source=source)
            initialized = _check_and_assign_with_head(model, task_head.variables(model), tensors, source,
                                                      init_missing_heads)
            return model, task_head.kind, initialized
    with_heads = has_pretraining_heads(tensors)
    model = AlbertPretrainer(config) if with_heads else AlbertEncoder(config)
    initialized = check_and_assign(model, tensors, source, initialize_missing_heads=init_missing_heads)
    return model, "pretrainer" if with_heads else "encoder", initialized


def convert(source_format, target_format, input_path, output_dir, albert_config=None, spm_model_file=None,
            init_missing_heads=False, overwrite=False, do_lower_case=None, force=False):
    """Converts and writes; returns a dict summary. Nothing is written on failure.

    The casing and quote rule (and, from an albert_tf source, the sequence length) travel with the model:
    `do_lower_case` None takes the source's record (albert_tf.models.preprocessing_contract).

    For Hugging Face with a SentencePiece model, tokenizer.json and
    tokenizer_config.json are written too (`AutoTokenizer` loads them without
    converting spiece.model, which would need protobuf 7).
    """
    from albert_tf.checkpoints import huggingface_format, huggingface_tokenizer, tf1_format
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.models.preprocessing_contract import resolve_preprocessing
    from albert_tf.file_utils import check_replaceable, staged_directory
    from albert_tf.text.albert_tokenizer import SPM_MODEL_FILE, copy_spm_model, read_spm_model

    if source_format == target_format:
        raise SettingError(f"<from|source_format> and <to|target_format> are both {source_format!r}; "
                           "nothing to convert")
    check_replaceable(output_dir, overwrite)
    config, tensors, source_spm, recorded = read_source(source_format, input_path, albert_config)
    preprocessing = resolve_preprocessing({**recorded, "albert_config": config.to_dict()}, do_lower_case, force=force,
                                          source=input_path)
    for warning in preprocessing.warnings:
        print(f"Warning: {warning}.", flush=True)
    recorded = {**recorded, "lower_case": preprocessing.lower_case, "rewrite_quotes": preprocessing.rewrite_quotes}
    if spm_model_file and source_spm:  # as every tool that takes a model and a vocabulary
        from albert_tf.models.inference_model import check_same_spm_model

        read_spm_model(spm_model_file)  # a file that is no SentencePiece model is named as such first
        check_same_spm_model(spm_model_file, source_spm, f"stored with {input_path}")
    spm_model_file = spm_model_file or source_spm
    if spm_model_file:
        read_spm_model(spm_model_file)  # resolved and checked before the weights are converted
    model, kind, initialized = build_checked_model(config, tensors, input_path, init_missing_heads)
    task_head = _task_head_of(kind)
    if target_format == "huggingface" and task_head is not None and not task_head.huggingface:
        raise ValueError(f"{input_path}: a {kind!r} model; Hugging Face has no model with its head (transformers' "
                         "AlbertForQuestionAnswering is BERT's span head): convert it to tf1 or albert_tf")

    if target_format == "albert_tf":
        files = {SPM_MODEL_FILE: spm_model_file} if spm_model_file else {}
        recorded = {**(task_head.recorded if task_head else {}), **recorded}
        write_model_dir(model, output_dir, kind, overwrite=overwrite, files=files, **recorded)
    else:
        tensors = model_tensors(model)
        classifier = None
        if target_format == "huggingface" and kind == "classifier":
            classifier = huggingface_format.classifier_config(model.num_labels, recorded.get("label_names"),
                                                              recorded.get("is_regression", False))
        with staged_directory(output_dir, overwrite=overwrite) as staging:
            if target_format == "huggingface":
                huggingface_format.write_huggingface_dir(config, tensors, staging, with_heads=kind == "pretrainer",
                                                         classifier=classifier)
            else:
                tf1_format.write_tf1_checkpoint(tensors, os.path.join(staging, "model.ckpt"))
                tf1_format.write_original_config(config, os.path.join(staging, tf1_format.ORIGINAL_CONFIG_FILE))
            if spm_model_file:
                copy_spm_model(spm_model_file, os.path.join(staging, _SPM_NAMES[target_format]))
                if target_format == "huggingface":
                    huggingface_tokenizer.write_tokenizer_files(
                        spm_model_file, staging, model_max_length=config.max_position_embeddings,
                        lower_case=preprocessing.lower_case, keep_accents=preprocessing.keep_accents,
                        rewrite_quotes=preprocessing.rewrite_quotes)
    return {
        "kind": kind,
        "tensors": len(tensors),
        "parameters": int(sum(v.size for v in tensors.values())),
        "initialized_heads": initialized,
        "output": os.path.abspath(output_dir),
        "lower_case": preprocessing.lower_case,
        "rewrite_quotes": preprocessing.rewrite_quotes,
    }
