"""One way to open a model for inference: the weights, the tokenizer and the preprocessing it records.

`open_for_inference(path)` takes what every inference tool is given: an albert_tf model
directory (a checkpoint directory or a ckpt-N prefix) or an `albert_tf.export` directory
(or its encoder SavedModel). It reads the model's albert_tf.json, resolves casing and
sequence length against the caller's explicit settings (albert_tf.models.preprocessing_contract:
the recorded values by default, contradictions refused or warned about; the quote rule is always
the recorded one), finds the
vocabulary stored with it (a SentencePiece model or a WordPiece vocab.txt), and loads the part asked for. `Embedder`, `MaskFiller`,
`albert-analyze` and the fine-tuning tools' evaluation of a given model all open models here,
so they agree on what a directory means.
"""

import dataclasses
import os
from typing import Any

from albert_tf.models.model_dir_format import exported_encoder_dir, find_vocabulary, model_metadata
from albert_tf.models.model_io import load_encoder, load_model, load_pretrainer
from albert_tf.models.preprocessing_contract import Preprocessing, resolve_preprocessing

# What a caller may ask for: the encoder alone, the encoder with its pretraining heads, or the model
# the directory holds, whatever its kind (a classifier, a span labeler, ...).
PARTS = ("encoder", "pretrainer", "model")


@dataclasses.dataclass(frozen=True)
class InferenceModel:
    """A model opened for inference.

    `model` is the Keras model of a checkpoint directory (the part asked for); for an export
    directory it is None and `saved_model` is the export's encoder SavedModel (`export_dir`
    its path). `metadata` is the model's albert_tf.json, `preprocessing` the casing and length
    to use, `tokenizer` the stored vocabulary's tokenizer with that casing (an `AlbertTokenizer` or a
    `WordPieceTokenizer`; None when the caller tokenizes elsewhere).
    """
    path: str
    metadata: dict
    preprocessing: Preprocessing
    tokenizer: Any
    model: Any = None
    saved_model: Any = None
    export_dir: str | None = None

    @property
    def is_export(self):
        return self.export_dir is not None


def open_for_inference(path: str | os.PathLike, part: str = "model", spm_model_file: str | None = None,
                       lower_case: bool | None = None, max_seq_length: int | None = None,
                       force: bool = False, saved_model: bool = True, tokenizer: bool = True,
                       vocab_file: str | None = None) -> InferenceModel:
    """Opens `path` (see the module) for inference.

    `part`: one of PARTS. `spm_model_file` (or `vocab_file`, a WordPiece vocab.txt): the stored vocabulary given
    again, by content the same.
    `lower_case`, `max_seq_length`, `force`: explicit settings, checked against the model's record.
    `saved_model`: an export directory is run as its SavedModel (as TF Serving would); False turns
    its encoder back into a Keras `AlbertEncoder` (part "encoder" only: an export holds no heads
    as Keras layers). `tokenizer`: False leaves the SentencePiece model unread (the fine-tuning
    tools tokenize with the one they were given).
    """
    if part not in PARTS:
        raise ValueError(f"part={part!r}: one of {', '.join(PARTS)}")
    path = os.fspath(path)
    metadata = model_metadata(path)
    preprocessing = resolve_preprocessing(metadata, lower_case, max_seq_length, force=force, source=path)
    export_dir = exported_encoder_dir(path)
    model = loaded_saved_model = None
    if export_dir and saved_model:
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the ops of exported graphs)

        loaded_saved_model = tf.saved_model.load(export_dir)
    elif export_dir and part != "encoder":
        raise ValueError(f"{path}: an albert_tf.export directory; only its encoder loads as a Keras model")
    elif part == "encoder":
        model = load_encoder(path)
    elif part == "pretrainer":
        model = load_pretrainer(path)
    else:
        model = load_model(path)[0]
    text_tokenizer = None
    if tokenizer:
        vocabulary = find_vocabulary(export_dir or path, spm_model_file, vocab_file)
        if spm_model_file or vocab_file:
            check_same_vocabulary(export_dir or path, vocabulary)
        text_tokenizer = vocabulary.tokenizer(preprocessing.lower_case, preprocessing.keep_accents,
                                              preprocessing.rewrite_quotes)
        check_vocabulary_fits(text_tokenizer, metadata["albert_config"]["vocab_size"])
    return InferenceModel(path, metadata, preprocessing, text_tokenizer, model, loaded_saved_model,
                          export_dir if loaded_saved_model is not None else None)


def check_same_vocabulary(path, vocabulary, model_setting=None):
    """SettingError when `vocabulary` (a `vocabularies.Vocabulary` given by a setting) is not, by kind and content,
    the one stored with the model at `path` (when it stores one): its ids would index other rows of the model's
    embedding table."""
    from albert_tf.settings import SettingError
    from albert_tf.text.vocabularies import DESCRIPTIONS, SETTINGS

    try:
        stored = find_vocabulary(path)
    except FileNotFoundError:  # a converted checkpoint without its vocabulary: the given one is all there is
        return
    if (stored.kind, stored.sha256) != (vocabulary.kind, vocabulary.sha256):
        model = f"of <{model_setting}>" if model_setting else f"stored with {path}"
        raise SettingError(f"<{SETTINGS[vocabulary.kind]}>={vocabulary.source} is not the "
                           f"{DESCRIPTIONS[stored.kind]} {model} ({stored.source}): its ids would index other rows "
                           f"of the model's embeddings. Leave <{SETTINGS[vocabulary.kind]}> unset to use the model's "
                           "own")


def check_same_spm_model(spm_model_file, stored, model, setting="spm_model_file"):
    """SettingError when `spm_model_file` and `stored` (the model's own) differ by content; `model` says whose
    (`stored with PATH`, `of <init_checkpoint>`)."""
    from albert_tf.file_utils import file_sha256
    from albert_tf.settings import SettingError

    if file_sha256(stored) != file_sha256(spm_model_file):
        raise SettingError(f"<{setting}>={spm_model_file} is not the SentencePiece model {model} "
                           f"({stored}): its ids would index other rows of the model's embeddings. Leave "
                           f"<{setting}> unset to use the model's own")


def check_vocabulary_fits(tokenizer, vocab_size):
    """ValueError when the vocabulary has more pieces than the model has embedding rows."""
    if tokenizer.vocab_size > vocab_size:
        raise ValueError(f"{tokenizer.source}: {tokenizer.vocab_size} pieces, more than the model's vocab_size "
                         f"{vocab_size}; pass the vocabulary the model was trained with")
