"""`convert()`: ALBERT checkpoints between albert_tf, the original TF1 format and Hugging Face.

Every tensor is checked before anything is written: names the model does not
have, variables the source lacks, and shape mismatches are listed together, and
the output directory is created only once the conversion has succeeded. The
casing and quote rule (and, from an albert_tf source, the sequence length) travel
with the model: Google's checkpoints were trained on text whose `` and '' were
kept (the original's rule), Hugging Face's on text where they became " (their
tokenizer's rule), and albert_tf records which (albert_tf.models.preprocessing_contract). The vocabulary
travels with it: a SentencePiece model, or BERT's WordPiece vocab.txt (Google's Chinese ALBERTs, the Hugging
Face ALBERTs whose tokenizer is BertTokenizer), recorded with its casing (huggingface_wordpiece).

Encoders, pretrainers and the fine-tuned models of `task_heads()` convert. A
classifier's head goes by the original run_classifier's names (output_weights,
output_bias); to Hugging Face it becomes AlbertForSequenceClassification, its label
names (albert_tf.json's label_names) id2label and label2id, a regression head
problem_type "regression", and back. A token classifier's head has the same names, on the
sequence output: to Hugging Face it becomes AlbertForTokenClassification (its tag names
id2label), which has no pooler, and back by that architecture (where config.json names none, by the
missing pooler); from the original's names (tf1) the caller says which (`model_kind`). The other
heads go by the names of the original script that fine-tuned them, so its checkpoints convert to
albert_tf and back (not to Hugging Face): run_squad_v1's cls/squad/output_weights [2, H] and output_bias [2] (a
span_labeler), run_squad_v2's start_logits/..., end_logits/..., answer_class/... (a
squad_v2_span_labeler), and run_race's output_weights [1, H] and output_bias [1] (a
multiple_choice model; the same names as a one-output classifier's, so the caller says
which: `model_kind`).
"""

import dataclasses
import os
from collections.abc import Callable

from albert_tf.settings import SettingError, SettingFileNotFound

FORMATS = ("albert_tf", "huggingface", "tf1")
CONVERTED_KINDS = ("encoder", "pretrainer", "classifier", "span_labeler", "squad_v2_span_labeler", "multiple_choice",
                   "token_classifier")
# What an albert_tf.json records that travels with the model: the preprocessing, a classifier's labels.
RECORDED_KEYS = ("lower_case", "keep_accents", "rewrite_quotes", "max_seq_length", "label_names", "is_regression",
                 "problem_type", "multi_label_threshold")
_SPM_NAMES = {"albert_tf": "spm.model", "huggingface": "spiece.model", "tf1": "30k-clean.model"}


@dataclasses.dataclass(frozen=True)
class TaskHead:
    """A fine-tuned model's head that converts, as one row of `task_heads()`."""

    kind: str  # the model kind (albert_tf.models.registry)
    # An original tensor name only this head has: a source holding it is this kind of model. None where the
    # head's names are another's (RACE's are a one-output classifier's): the kind is then named by the caller.
    marker: str | None
    variables: Callable  # model -> {original name: MappedVariable} of the head
    saved_arguments: Callable  # {original name: array} -> the model's recorded constructor arguments
    recorded: dict  # what albert_tf.json records of a model of this kind converted from another format
    not_huggingface: str = ""  # why it is not written to Hugging Face; empty where it is
    # False for a head on the sequence output: the pooler, which nothing reads, is neither written nor needed
    # from a source (Hugging Face's AlbertForTokenClassification has none); where a source lacks it, it keeps
    # its initialization.
    reads_pooler: bool = True


def task_heads():
    """The heads of fine-tuned models that convert: the one table `build_checked_model` and `model_tensors`
    read. The original's names: run_classifier's, run_squad_v1's, run_squad_v2's and run_race's."""
    from albert_tf.checkpoints.huggingface_format import CLASSIFIER_BIAS
    from albert_tf.checkpoints.original_names import SQUAD_V1_WEIGHTS, squad_v1_head_variables, squad_v2_head_variables

    return (
        TaskHead("classifier", CLASSIFIER_BIAS, classifier_head_variables,
                 lambda tensors: {"num_labels": len(tensors[CLASSIFIER_BIAS])}, {}),
        # No squad_version recorded: albert_tf's SQuAD 2.0 model of BERT's head has these names too.
        TaskHead("span_labeler", SQUAD_V1_WEIGHTS, squad_v1_head_variables, lambda tensors: {}, {},
                 not_huggingface="albert-convert does not write it as transformers' AlbertForQuestionAnswering"),
        TaskHead("squad_v2_span_labeler", "answer_class/dense_1/kernel", squad_v2_head_variables,
                 lambda tensors: {}, {"squad_version": "2.0", "squad_v2_head": "original"},
                 not_huggingface="Hugging Face has no model with its head (transformers' AlbertForQuestionAnswering "
                                 "is BERT's span head)"),
        # The original RACE model has 4 choices (the default num_choices); the head does not depend on it.
        TaskHead("multiple_choice", None, race_head_variables, lambda tensors: {}, {},
                 not_huggingface="albert-convert does not write it as transformers' AlbertForMultipleChoice"),
        # run_classifier's names on the sequence output: Hugging Face's architecture or the caller names the kind.
        TaskHead("token_classifier", None, classifier_head_variables,
                 lambda tensors: {"num_labels": len(tensors[CLASSIFIER_BIAS])}, {}, reads_pooler=False),
    )


@dataclasses.dataclass(frozen=True)
class SourceVocabulary:
    """The vocabulary a conversion stores with the weights: its kind (albert_tf.text.vocabularies' SENTENCEPIECE
    or WORDPIECE) and file."""

    kind: str
    path: str | None  # None: a Hugging Face BertTokenizer's directory without its vocab.txt
    # A WordPiece vocabulary's accent rule where its source states it (a Hugging Face BertTokenizer's
    # strip_accents, in the file `said_by`); None: as lowercasing (the original BERT's rule), or as an albert_tf
    # record's keep_accents says.
    strip_accents: bool | None = None
    said_by: str | None = None


def _huggingface_vocabulary(path):
    """(SourceVocabulary or None, recorded casing and quote rule) of a save_pretrained directory: its
    spiece.model (ALBERT's own tokenizer), or its vocab.txt where it names BERT's tokenizer (BertTokenizer or
    BertTokenizerFast, in tokenizer_config.json or config.json) or has no spiece.model and names no other."""
    from albert_tf.checkpoints import huggingface_format, huggingface_wordpiece
    from albert_tf.text.vocabularies import SENTENCEPIECE, WORDPIECE

    spm = os.path.join(path, "spiece.model")
    vocab = os.path.join(path, huggingface_wordpiece.VOCAB_FILE)
    named, said_by = huggingface_wordpiece.named_tokenizer_class(path)
    # A link (a Hugging Face cache snapshot links into blobs/) is followed and checked when it is read.
    is_bert = huggingface_wordpiece.is_bert_tokenizer(named)
    if (os.path.lexists(vocab) and (is_bert or (named is None and not os.path.lexists(spm)))) or (
            is_bert and not os.path.lexists(spm)):
        recorded, strip_accents = huggingface_wordpiece.read_settings(path)
        # Without vocab.txt (transformers 5 saves a BertTokenizer as tokenizer.json alone) the path is None: the
        # caller's vocab_file gives it, with this directory's settings.
        return (SourceVocabulary(WORDPIECE, vocab if os.path.lexists(vocab) else None, strip_accents,
                                 os.path.join(path, huggingface_wordpiece.TOKENIZER_CONFIG_FILE)), recorded)
    if not os.path.lexists(spm) and os.path.lexists(vocab):
        huggingface_wordpiece.refuse_other_tokenizer(named, said_by, vocab)
    recorded = {"rewrite_quotes": True, **huggingface_format.recorded_casing(path)}
    return (SourceVocabulary(SENTENCEPIECE, spm) if os.path.lexists(spm) else None), recorded


def _albert_tf_vocabulary(directory, metadata):
    """The SourceVocabulary stored in an albert_tf model directory (spm.model, or vocab.txt where albert_tf.json
    records "vocabulary": "wordpiece" or no spm.model is there), or None."""
    from albert_tf.text.albert_tokenizer import spm_model_path
    from albert_tf.text.vocabularies import FILE_NAMES, SENTENCEPIECE, WORDPIECE

    spm = spm_model_path(directory)
    vocab = os.path.join(directory, FILE_NAMES[WORDPIECE])
    if (metadata.get("vocabulary") == WORDPIECE or not spm) and os.path.isfile(vocab):
        return SourceVocabulary(WORDPIECE, vocab)
    return SourceVocabulary(SENTENCEPIECE, spm) if spm else None


def read_source(source_format, path, albert_config=None):
    """(AlbertConfig, {original name: array}, SourceVocabulary or None, {recorded}, model kind or None) from any
    format; the kind is an albert_tf source's, or a Hugging Face token classifier's (its config.json's
    architectures, or where those are missing a classifier head without a pooler: its tensor names are a
    sequence classifier's), else None (the tensor names say it, `build_checked_model`).

    The vocabulary: an albert_tf directory's spm.model or vocab.txt, a Hugging Face directory's spiece.model or
    (with BERT's tokenizer) vocab.txt; a tf1 checkpoint's comes from the caller.

    Recorded, where the source says them: "lower_case" and "max_seq_length" (albert_tf.json; a Hugging
    Face tokenizer_config.json's do_lower_case), and a classifier's "label_names", "is_regression" and
    "takes_pairs" (albert_tf.json; a Hugging Face config.json's id2label, problem_type and albert_tf's
    takes_pairs), a token classifier's "label_names" (its id2label). "rewrite_quotes" always
    from tf1 (false: the original's rule) and Hugging Face (true, their AlbertTokenizer's rule, unless its
    tokenizer_config.json says otherwise, as albert_tf's own conversion writes it; false beside a WordPiece
    vocab.txt, which BertTokenizer reads as the text writes its quotes); from albert_tf where its albert_tf.json
    records it.
    """
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.checkpoints import huggingface_format, tf1_format
    from albert_tf.checkpoints.assign import CheckpointMismatchError
    from albert_tf.checkpoints.original_names import POOLER_PREFIX
    from albert_tf.models.model_dir_format import recorded_takes_pairs, resolve_checkpoint
    from albert_tf.models.model_io import load_model

    if source_format == "albert_tf":
        model, metadata = load_model(path)
        if metadata["model"] not in CONVERTED_KINDS:
            raise ValueError(f"{path}: a {metadata['model']!r} model; only {', '.join(CONVERTED_KINDS)} models "
                             "convert")
        directory = resolve_checkpoint(path)[0]  # a ckpt-N prefix's directory, a training run's model directory
        recorded = {key: metadata[key] for key in RECORDED_KEYS if key in metadata}
        if metadata["model"] == "classifier":  # an old record's too, from its GLUE task
            recorded["takes_pairs"] = recorded_takes_pairs(metadata)
        return (model.albert_config, model_tensors(model), _albert_tf_vocabulary(directory, metadata), recorded,
                metadata["model"])
    if source_format == "huggingface":
        config, tensors, unmapped = huggingface_format.read_huggingface_dir(path)
        if unmapped:
            raise CheckpointMismatchError(path, unmapped=unmapped)
        vocabulary, recorded = _huggingface_vocabulary(path)
        kind = None
        if huggingface_format.CLASSIFIER_BIAS in tensors:
            num_labels = len(tensors[huggingface_format.CLASSIFIER_BIAS])
            has_pooler = any(name.startswith(POOLER_PREFIX) for name in tensors)
            if huggingface_format.is_token_classifier(path, has_pooler):
                kind = "token_classifier"
                recorded.update(huggingface_format.recorded_tag_names(path, num_labels))
            else:
                recorded.update(huggingface_format.recorded_labels(path, num_labels))
        return config, tensors, vocabulary, recorded, kind
    prefix = tf1_format.resolve_tf1_checkpoint(path)
    config_source = albert_config or os.path.join(os.path.dirname(prefix), tf1_format.ORIGINAL_CONFIG_FILE)
    if not albert_config and not os.path.isfile(config_source):
        raise SettingFileNotFound(f"{config_source}: not found; pass <albert_config>=PATH or a preset name")
    return (AlbertConfig.from_name_or_path(config_source), tf1_format.read_tf1_checkpoint(prefix), None,
            {"rewrite_quotes": False}, None)


def _casing_origin(source_format, input_path, recorded, do_lower_case):
    """(what says the casing, whether it is the source's record): the setting, the source's file, or the
    default."""
    if do_lower_case is not None:
        return f"<do_lower_case>={bool(do_lower_case)}", False
    if "lower_case" not in recorded:
        return "the default <do_lower_case>=True", False
    if source_format == "huggingface":
        from albert_tf.checkpoints.huggingface_format import TOKENIZER_CONFIG_FILE

        return f"{os.path.join(input_path, TOKENIZER_CONFIG_FILE)} (do_lower_case={recorded['lower_case']})", True
    return f"the albert_tf.json of {input_path} (lower_case={recorded['lower_case']})", True


def check_casing_against_vocabulary(spm_model_file, lower_case, origin, tokenizer=None):
    """SettingError when the casing (`origin`: what says it, and whether that is the source's record)
    contradicts the vocabulary's pieces (albert_tf.text.albert_tokenizer.vocabulary_casing), as the data tools
    refuse it: cased text through a lowercase vocabulary turns every capital into <unk>, lowercased text
    through a cased one never uses its capitalized pieces. `tokenizer`: the vocabulary's, where it is no
    SentencePiece model (a WordPiece vocab.txt at `spm_model_file`)."""
    from albert_tf.text.albert_tokenizer import AlbertTokenizer, vocabulary_casing

    casing = vocabulary_casing(tokenizer or AlbertTokenizer(spm_model_file))
    if casing != ("cased" if lower_case else "lowercase"):
        return
    said_by, is_record = origin
    if lower_case:
        contradiction = (f"lowercases the text, but {spm_model_file} is a cased vocabulary (its pieces have capital "
                         "letters): its capitalized pieces would never be used")
    else:
        contradiction = (f"keeps the text's capitals, but {spm_model_file} is a lowercase vocabulary (none of its "
                         "pieces has a capital letter): every capital letter would be an unknown token")
    fix = f"pass <do_lower_case>={not lower_case}"
    raise SettingError(f"{said_by} {contradiction}; "
                       + (f"correct the record, or {fix} with <force>" if is_record else fix))


def _given_vocabulary(source_vocabulary, spm_model_file, vocab_file, input_path):
    """The vocabulary to store: `spm_model_file` or `vocab_file` where given (the same file as the source's own,
    by content, where it has one; of the same kind), else the source's own."""
    from albert_tf.file_utils import file_sha256
    from albert_tf.text.albert_tokenizer import read_spm_model
    from albert_tf.text.vocabularies import DESCRIPTIONS, SENTENCEPIECE, SETTINGS, WORDPIECE

    given = SourceVocabulary(SENTENCEPIECE, spm_model_file) if spm_model_file else \
        SourceVocabulary(WORDPIECE, vocab_file) if vocab_file else None
    if source_vocabulary is not None and source_vocabulary.path is None and given is None:
        raise SettingFileNotFound(f"{input_path}: its tokenizer is BERT's WordPiece (its tokenizer_class), but it "
                                  "holds no vocab.txt (transformers 5 saves a BertTokenizer as tokenizer.json alone): "
                                  "pass the vocabulary as <vocab_file>, one piece per line in id order")
    if given is None or source_vocabulary is None:
        return given or source_vocabulary
    setting = SETTINGS[given.kind]
    if not os.path.isfile(given.path):
        raise SettingFileNotFound(f"<{setting}>={given.path}: no such {DESCRIPTIONS[given.kind]}")
    if given.kind != source_vocabulary.kind:
        theirs = source_vocabulary.kind
        fix = (f"leave <{setting}> unset to convert with it" if source_vocabulary.path else
               f"pass that vocabulary as <{SETTINGS[theirs]}>")
        raise SettingError(f"<{setting}>={given.path}: the vocabulary of {input_path} is a {DESCRIPTIONS[theirs]}"
                           f"{f' ({source_vocabulary.path})' if source_vocabulary.path else ''}, the kind its "
                           f"weights were trained with; {fix}")
    if source_vocabulary.path is None:  # the file the source lacks, read with the source's settings
        return dataclasses.replace(source_vocabulary, path=given.path)
    if given.kind == SENTENCEPIECE:  # as every tool that takes a model and a vocabulary
        from albert_tf.models.inference_model import check_same_spm_model

        read_spm_model(spm_model_file)  # a file that is no SentencePiece model is named as such first
        check_same_spm_model(spm_model_file, source_vocabulary.path, f"stored with {input_path}")
    elif file_sha256(given.path) != file_sha256(source_vocabulary.path):
        raise SettingError(f"<{setting}>={given.path} is not the {DESCRIPTIONS[WORDPIECE]} stored with {input_path} "
                           f"({source_vocabulary.path}): its ids would index other rows of the model's embeddings. "
                           f"Leave <{setting}> unset to use the model's own")
    return source_vocabulary  # the same bytes; the source's file carries what its directory says of it


def _wordpiece_tokenizer(vocabulary, lower_case, keep_accents, rewrite_quotes, input_path, tensors, config):
    """The WordPieceTokenizer of `vocabulary` with the resolved settings, refused in one line where the vocab.txt
    lacks BERT's special lines or its size is not the checkpoint's number of embedding rows."""
    from albert_tf.text.vocabularies import WORDPIECE, Vocabulary

    try:
        tokenizer = Vocabulary.read(vocabulary.path, WORDPIECE).tokenizer(lower_case, keep_accents, rewrite_quotes)
    except SettingError:
        raise
    except ValueError as error:  # the tokenizer names the file and the special lines it lacks
        raise SettingError(str(error)) from None
    embeddings = tensors.get("bert/embeddings/word_embeddings")
    rows = int(embeddings.shape[0]) if embeddings is not None else config.vocab_size
    if tokenizer.vocab_size != rows:
        raise SettingError(f"{vocabulary.path}: a WordPiece vocabulary of {tokenizer.vocab_size:,} pieces, but the "
                           f"word embeddings of {input_path} have {rows:,} rows: its ids would index other rows; "
                           "pass the vocab.txt the model was trained with")
    return tokenizer


def _wordpiece_keep_accents(vocabulary, lower_case, keep_accents, casing_origin):
    """Whether a WordPiece model's text keeps its accents, as albert_tf.json records it: the source's
    strip_accents where it states one, else the resolved `keep_accents` (accents stripped exactly when
    lowercasing, unless kept). Accents stripped from text that is not lowercased are refused (`casing_origin`:
    what says the casing, and whether that is the source's record): the record, as albert_tf's tokenizer, strips
    them only from lowercased text."""
    from albert_tf.checkpoints.huggingface_wordpiece import strip_accents_of

    if vocabulary.strip_accents is None:
        return not strip_accents_of(lower_case, keep_accents)
    if vocabulary.strip_accents and not lower_case:
        said_by, is_record = casing_origin
        casing = '"do_lower_case" false' if is_record else f"{said_by} keeping the text's capitals"
        raise SettingError(f'{vocabulary.said_by}: "strip_accents" true with {casing} (accents stripped from cased '
                           "text) cannot be recorded: an albert_tf model, as BERT's FullTokenizer, strips accents "
                           "only from lowercased text")
    return not vocabulary.strip_accents


def classifier_head_variables(classifier):
    """{original name: MappedVariable} for an AlbertClassifier's head (a Keras kernel is [H, num_labels])."""
    return _output_layer_variables(classifier.classifier)


def race_head_variables(multiple_choice):
    """{original name: MappedVariable} for an AlbertMultipleChoice's head: the original run_race's
    (race_utils.create_model's) output_weights [1, H] and output_bias [1], which score each choice's pooled
    output; run_classifier's names."""
    return _output_layer_variables(multiple_choice.scorer)


def _output_layer_variables(dense):
    from albert_tf.checkpoints.huggingface_format import CLASSIFIER_BIAS, CLASSIFIER_WEIGHTS
    from albert_tf.checkpoints.original_names import MappedVariable

    return {CLASSIFIER_WEIGHTS: MappedVariable(dense.kernel, transposed=True),
            CLASSIFIER_BIAS: MappedVariable(dense.bias)}


def _task_head_of(kind):
    return next((head for head in task_heads() if head.kind == kind), None)


def model_tensors(model):
    """{original name: numpy array} of every variable of an encoder, pretrainer or `task_heads()` model."""
    from albert_tf.checkpoints.assign import read_model_tensors
    from albert_tf.checkpoints.original_names import POOLER_PREFIX
    from albert_tf.models import registry

    task_head = _task_head_of(registry.describe(model)[0])
    if task_head is None:
        return read_model_tensors(model)
    encoder = {name: tensor for name, tensor in read_model_tensors(model.encoder).items()
               if task_head.reads_pooler or not name.startswith(POOLER_PREFIX)}
    head = {name: mapped.read() for name, mapped in task_head.variables(model).items()}
    return {**encoder, **head}


def _check_and_assign_with_head(model, head, tensors, source, init_missing_heads, reads_pooler=True):
    """check_and_assign for a model of `task_heads()` (`head`: its head's variables): the encoder's and the
    head's problems listed together. A head that does not `reads_pooler` lets the pooler keep its
    initialization where the source lacks it, without listing it."""
    from albert_tf.checkpoints.assign import CheckpointMismatchError, check_and_assign
    from albert_tf.checkpoints.original_names import POOLER_PREFIX

    missing = [name for name in head if name not in tensors]
    mismatched = [f"{name} (source {tuple(tensors[name].shape)}, model {mapped.original_shape})"
                  for name, mapped in head.items() if name in tensors
                  and tuple(tensors[name].shape) != mapped.original_shape]
    encoder_tensors = {name: tensor for name, tensor in tensors.items() if name not in head}
    try:
        # The encoder has no pretraining heads: initialize_missing_heads spares its pooler alone.
        initialized = check_and_assign(model.encoder, encoder_tensors, source,
                                       initialize_missing_heads=init_missing_heads or not reads_pooler)
    except CheckpointMismatchError as error:
        raise CheckpointMismatchError(source, [*error.missing, *missing], error.unmapped,
                                      [*error.mismatched, *mismatched]) from None
    if missing or mismatched:
        raise CheckpointMismatchError(source, missing, (), mismatched)
    for name, mapped in head.items():
        mapped.assign(tensors[name])
    return [name for name in initialized if reads_pooler or not name.startswith(POOLER_PREFIX)]


def build_checked_model(config, tensors, source, init_missing_heads=False, model_kind=None):
    """(model, kind, heads left initialized): the model that holds `tensors`, fully checked. `model_kind`: the
    kind the source records or the caller names, which picks the head where the names do not say it (RACE's);
    None: the kind the names say."""
    from albert_tf.checkpoints.assign import check_and_assign, has_pretraining_heads
    from albert_tf.models import registry
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.networks.albert_encoder import AlbertEncoder

    for task_head in task_heads():
        if task_head.kind == model_kind or (model_kind is None and task_head.marker in tensors):
            model = registry.build(task_head.kind, config, task_head.saved_arguments(tensors), source=source)
            initialized = _check_and_assign_with_head(model, task_head.variables(model), tensors, source,
                                                      init_missing_heads, task_head.reads_pooler)
            return model, task_head.kind, initialized
    with_heads = has_pretraining_heads(tensors)
    model = AlbertPretrainer(config) if with_heads else AlbertEncoder(config)
    initialized = check_and_assign(model, tensors, source, initialize_missing_heads=init_missing_heads)
    return model, "pretrainer" if with_heads else "encoder", initialized


def check_output(output_dir, input_path, spm_model_file=None, albert_config=None, vocab_file=None):
    """SettingError, before anything is read, when `output_dir` is, lies inside or holds an input (a conversion
    onto its own input with overwrite used to leave only the output), whatever overwrite says, or is a directory
    another albert_tf tool wrote (an export, a run, a data set). `albert_config` counts where it is a file."""
    from albert_tf.file_utils import MODEL_DIRECTORY, check_output_apart, refuse_another_tools_directory

    config_file = albert_config if isinstance(albert_config, (str, os.PathLike)) and os.path.exists(albert_config) \
        else None
    check_output_apart({"output|output_dir": output_dir}, {"input|input_path": input_path,
                                                           "spm_model_file": spm_model_file,
                                                           "vocab_file": vocab_file,
                                                           "albert_config": config_file})
    refuse_another_tools_directory(output_dir, "albert_tf.convert", (MODEL_DIRECTORY,), setting="output|output_dir")


def convert(source_format, target_format, input_path, output_dir, albert_config=None, spm_model_file=None,
            init_missing_heads=False, overwrite=False, do_lower_case=None, force=False, model_kind=None,
            vocab_file=None):
    """Converts and writes; returns a dict summary. Nothing is written on failure.

    `model_kind`: "multiple_choice" for a checkpoint of the original run_race, whose output_weights [1, H] and
    output_bias [1] have the names and shapes of run_classifier's one-output head (a classifier, which the names
    alone give); "token_classifier" for a token classifier's tf1 checkpoint (run_classifier's names, on the
    sequence output, without a pooler); None: the kind the source records or its tensor names say.

    The vocabulary: `spm_model_file` (a SentencePiece model) or `vocab_file` (a WordPiece vocab.txt, as Google's
    Chinese ALBERTs ship vocab_chinese.txt), not both, else the source's own (huggingface_wordpiece says which
    files a Hugging Face directory's are). A WordPiece vocabulary is written as vocab.txt, its exact bytes, and
    recorded in albert_tf.json as "vocabulary": "wordpiece" with "lower_case" and "keep_accents"; it must have
    BERT's special lines and one piece per row of the checkpoint's word embeddings.

    The casing and quote rule (and, from an albert_tf source, the sequence length) travel with the model:
    `do_lower_case` None takes the source's record (albert_tf.models.preprocessing_contract).

    For Hugging Face with a SentencePiece model, tokenizer.json and
    tokenizer_config.json are written too (`AutoTokenizer` loads them without
    converting spiece.model, which would need protobuf 7); with a WordPiece vocabulary, vocab.txt and
    transformers' BertTokenizer's tokenizer_config.json, and config.json names the vocabulary's special ids.
    """
    from albert_tf.checkpoints import huggingface_format, huggingface_tokenizer, huggingface_wordpiece, tf1_format
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.models.preprocessing_contract import resolve_preprocessing
    from albert_tf.file_utils import check_replaceable, staged_directory
    from albert_tf.text.albert_tokenizer import copy_spm_model, read_spm_model
    from albert_tf.text.special_ids import ALBERT_SPECIAL_IDS
    from albert_tf.text.vocabularies import FILE_NAMES, WORDPIECE

    if source_format == target_format:
        raise SettingError(f"<from|source_format> and <to|target_format> are both {source_format!r}; "
                           "nothing to convert")
    if spm_model_file and vocab_file:  # before anything is read, as every tool that takes a vocabulary
        raise SettingError("pass <spm_model_file> (a SentencePiece model) or <vocab_file> (a WordPiece vocab.txt), "
                           "not both")
    check_output(output_dir, input_path, spm_model_file, albert_config, vocab_file)
    check_replaceable(output_dir, overwrite)
    if model_kind is not None and model_kind not in [head.kind for head in task_heads()]:
        raise SettingError(f"<model|model_kind>={model_kind!r}: expected one of "
                           f"{', '.join(head.kind for head in task_heads())}")
    config, tensors, source_vocabulary, recorded, source_kind = read_source(source_format, input_path, albert_config)
    if model_kind and source_kind and model_kind != source_kind:
        found = (f"the albert_tf.json of {input_path} records a {source_kind!r} model" if source_format == "albert_tf"
                 else f"{input_path} holds a {source_kind!r} model (its config.json's architectures, or its "
                 "classifier head without a pooler, say so)")
        raise SettingError(f"<model|model_kind>={model_kind}, but {found}: leave the setting out")
    vocabulary = _given_vocabulary(source_vocabulary, spm_model_file, vocab_file, input_path)
    casing_origin = _casing_origin(source_format, input_path, recorded, do_lower_case)
    preprocessing = resolve_preprocessing({**recorded, "albert_config": config.to_dict()}, do_lower_case, force=force,
                                          source=input_path)
    for warning in preprocessing.warnings:
        print(f"Warning: {warning}.", flush=True)
    recorded = {**recorded, "lower_case": preprocessing.lower_case, "rewrite_quotes": preprocessing.rewrite_quotes}
    keep_accents = preprocessing.keep_accents
    special_ids, wordpiece = ALBERT_SPECIAL_IDS, None
    if vocabulary and vocabulary.kind == WORDPIECE:
        keep_accents = _wordpiece_keep_accents(vocabulary, preprocessing.lower_case, keep_accents, casing_origin)
        wordpiece = _wordpiece_tokenizer(vocabulary, preprocessing.lower_case, keep_accents,
                                         preprocessing.rewrite_quotes, input_path, tensors, config)
        check_casing_against_vocabulary(vocabulary.path, preprocessing.lower_case, casing_origin, wordpiece)
        special_ids = wordpiece.special_ids
        # The record of a WordPiece model (run_pretraining --vocab_file writes the same keys).
        recorded = {**recorded, "vocabulary": WORDPIECE, "keep_accents": keep_accents}
    elif vocabulary:
        read_spm_model(vocabulary.path)  # resolved and checked before the weights are converted
        check_casing_against_vocabulary(vocabulary.path, preprocessing.lower_case, casing_origin)
    model, kind, initialized = build_checked_model(config, tensors, input_path, init_missing_heads,
                                                   model_kind or source_kind)
    task_head = _task_head_of(kind)
    if target_format == "huggingface" and task_head is not None and task_head.not_huggingface:
        raise ValueError(f"{input_path}: a {kind!r} model; {task_head.not_huggingface}: convert it to tf1 or "
                         "albert_tf")

    if target_format == "albert_tf":
        files = {FILE_NAMES[vocabulary.kind]: vocabulary.path} if vocabulary else {}
        recorded = {**(task_head.recorded if task_head else {}), **recorded}
        write_model_dir(model, output_dir, kind, overwrite=overwrite, files=files, **recorded)
    else:
        tensors = model_tensors(model)
        classifier = None
        if target_format == "huggingface" and kind == "classifier":
            classifier = huggingface_format.classifier_config(model.num_labels, recorded.get("label_names"),
                                                              recorded.get("is_regression", False),
                                                              recorded.get("takes_pairs"),
                                                              recorded.get("problem_type") == "multi_label")
        elif target_format == "huggingface" and kind == "token_classifier":
            classifier = huggingface_format.token_classifier_config(model.num_labels, recorded.get("label_names"))
        with staged_directory(output_dir, overwrite=overwrite) as staging:
            if target_format == "huggingface":
                huggingface_format.write_huggingface_dir(
                    config, tensors, staging, with_heads=kind == "pretrainer", classifier=classifier,
                    special_ids=special_ids,
                    tokenizer_class=huggingface_wordpiece.WRITTEN_TOKENIZER_CLASS if wordpiece else None)
            else:
                tf1_format.write_tf1_checkpoint(tensors, os.path.join(staging, "model.ckpt"))
                tf1_format.write_original_config(config, os.path.join(staging, tf1_format.ORIGINAL_CONFIG_FILE))
            if wordpiece and target_format == "huggingface":
                huggingface_wordpiece.write_tokenizer_files(
                    _read_bytes(vocabulary.path), staging, model_max_length=config.max_position_embeddings,
                    lower_case=preprocessing.lower_case, keep_accents=keep_accents)
            elif wordpiece:  # the original's tools take any --vocab_file; BERT's name for it
                with open(os.path.join(staging, FILE_NAMES[WORDPIECE]), "wb") as f:
                    f.write(_read_bytes(vocabulary.path))
            elif vocabulary:
                copy_spm_model(vocabulary.path, os.path.join(staging, _SPM_NAMES[target_format]))
                if target_format == "huggingface":
                    huggingface_tokenizer.write_tokenizer_files(
                        vocabulary.path, staging, model_max_length=config.max_position_embeddings,
                        lower_case=preprocessing.lower_case, keep_accents=preprocessing.keep_accents,
                        rewrite_quotes=preprocessing.rewrite_quotes)
    return {
        "kind": kind,
        "tensors": len(tensors),
        "parameters": int(sum(v.size for v in tensors.values())),
        "initialized_heads": initialized,
        "output": os.path.abspath(output_dir),
        "lower_case": preprocessing.lower_case,
        "keep_accents": keep_accents,
        "rewrite_quotes": preprocessing.rewrite_quotes,
        # What the stored vocabulary is: its kind (None where none is stored) and its number of pieces.
        "vocabulary": vocabulary.kind if vocabulary else None,
        "vocabulary_size": wordpiece.vocab_size if wordpiece else _spm_size(vocabulary) if vocabulary else None,
    }


def _read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def _spm_size(vocabulary):
    from albert_tf.text.albert_tokenizer import AlbertTokenizer, read_spm_model

    return AlbertTokenizer(model_proto=read_spm_model(vocabulary.path)).vocab_size
