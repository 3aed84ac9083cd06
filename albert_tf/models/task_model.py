"""What every model built on the ALBERT encoder shares: its config, and a Keras config that round-trips.

Constructors take `(encoder, config, ...)` in that order: pass an `AlbertEncoder`
(pretrained, say), or an `AlbertConfig` (as the first argument or as `config=`)
to build a fresh one. A keyword the constructor does not know is refused with a
TypeError (keras.Model would otherwise drop it silently: a misspelt `num_lables=3`
gave a 2-label model).
"""

import inspect
import os

from albert_tf.models import registry
from albert_tf.models.model_dir_format import model_metadata
from albert_tf.models.model_io import model_from_preset, write_model_dir
from albert_tf.networks.albert_encoder import ENCODER_INPUTS
from albert_tf.settings import KERAS_ARGUMENTS, refuse_unknown_keywords
from albert_tf.text.packing import check_sequence_length


class AlbertTaskModel:
    """Mixin for keras.Model subclasses with an `encoder` attribute.

    `CONFIG_ATTRIBUTES` maps each constructor argument that `get_config` records
    (besides the encoder's config) to the attribute holding it. `ARGUMENT_SYNONYMS`
    maps another library's name for a constructor argument to ours (KerasHub's
    `num_classes` for a classifier's `num_labels`).
    """

    CONFIG_ATTRIBUTES: dict = {}
    # The batch entries fine-tuning feeds `head_outputs`: the encoder inputs, and whatever else the head
    # reads in training (the SQuAD 2.0 head's gold start).
    TRAINING_INPUTS: tuple = ENCODER_INPUTS
    ARGUMENT_SYNONYMS: dict = {}

    @classmethod
    def constructor_arguments(cls) -> set:
        """Every keyword the constructor takes: its own parameters and keras.Model's."""
        parameters = inspect.signature(cls.__init__).parameters.values()
        return {parameter.name for parameter in parameters if parameter.name != "self" and parameter.kind not in (
            parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL)} | set(KERAS_ARGUMENTS)

    @classmethod
    def refuse_unknown_arguments(cls, kwargs: dict) -> None:
        """Called by each constructor with the keywords its signature did not name."""
        refuse_unknown_keywords(cls.__name__, kwargs, cls.constructor_arguments())

    def head_outputs(self, inputs, training=True):
        """The model's outputs computed with only the work they need: what fine-tuning's loss and the
        served classifier read. The same values as calling the model; models whose head reads only
        the first token override it to compute the last layer at that token alone
        (`AlbertEncoder.first_token_pooled_output`)."""
        return self(inputs, training=training)

    @property
    def albert_config(self):
        return self.encoder.albert_config

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "config": self.albert_config.to_dict(),
                **{argument: getattr(self, attribute) for argument, attribute in self.CONFIG_ATTRIBUTES.items()}}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, max_seq_length=None, spm_model_file=None, **kwargs):
        """The model from a preset name or a model directory, as KerasHub's `from_preset`.

        - A preset name (`albert_tf.preset_names()`): a fresh model with RANDOM weights (a
          warning says so: the presets are architectures, no weights ship with albert_tf);
          AlbertConfig fields among `kwargs` replace the preset's (`vocab_size=1000`).
          `spm_model_file=` gives a classifier an `AlbertPreprocessor` of that ALBERT
          SentencePiece model, so it takes raw text; the vocabulary's size is the model's
          `vocab_size` unless `vocab_size=` says otherwise (then they must agree).
        - An albert_tf model directory (pretraining output, a converted Google or Hugging
          Face checkpoint, a fine-tuned model, what `save_to_preset` writes) or an
          `albert_tf.export` directory: its weights. A directory holding this very kind of
          model (with the same `num_labels` ...) loads whole, head included; otherwise its
          encoder gets a fresh head. A classifier also gets the directory's
          `AlbertPreprocessor` (its spm.model, or `spm_model_file`; at `max_seq_length` or
          the length it records, 128 otherwise), so it takes raw text.

        The other `kwargs` go to the constructor (`num_labels=3`, `dropout=0.2`); an unknown
        keyword is a TypeError naming the accepted ones.

        >>> classifier = AlbertClassifier.from_preset("albert_tiny", vocab_size=1000, num_labels=3)
        """
        if max_seq_length is not None:  # model_from_preset would read 0 as "the default" and let NaN through
            check_sequence_length(max_seq_length)
        model = model_from_preset(cls, preset, max_seq_length=max_seq_length, spm_model_file=spm_model_file, **kwargs)
        if os.path.isdir(preset):
            model.adopt_record(model_metadata(preset))
        return model

    @classmethod
    def recorded_head(cls, metadata: dict, arguments: dict) -> dict | None:
        """The constructor arguments of the head `metadata` (a model directory's albert_tf.json) records, where it
        records this kind of model and the head the caller's constructor `arguments` ask for (every recorded
        argument among them agrees: the same `num_labels` ...); None otherwise, and `from_preset` then gives the
        directory's encoder a fresh head."""
        kind, recorded_keys = registry.describe_class(cls)
        if metadata["model"] != kind or any(metadata.get(recorded_keys[name], value) != value
                                            for name, value in arguments.items() if name in recorded_keys):
            return None
        return registry.recorded_arguments(kind, metadata)

    def adopt_record(self, metadata):
        """Takes from `metadata` (the albert_tf.json `from_preset` loaded) what the model keeps besides its weights
        and constructor arguments; a head that keeps nothing more takes nothing."""

    def save_to_preset(self, directory: str | os.PathLike, overwrite: bool = False) -> str:
        """Writes this model to `directory` as an albert_tf model directory (weights, the head's
        arguments, and a classifier's preprocessor settings with its spm.model), which
        `from_preset(directory)` loads back whole, as KerasHub's `save_to_preset`. An existing
        `directory` is refused unless `overwrite`, and even with it when another albert_tf tool wrote it
        (an export, a run or a run's best/, a data set). Returns its absolute path."""
        from albert_tf.file_utils import MODEL_DIRECTORY, refuse_another_tools_directory

        refuse_another_tools_directory(os.fspath(directory), f"{type(self).__name__}.save_to_preset",
                                       (MODEL_DIRECTORY,), setting="directory")
        if hasattr(self, "build_variables") and not self.built:  # a subclassed head exists after its first call
            self.build_variables()
        return write_model_dir(self, directory, overwrite=overwrite, **self.recorded_settings())

    def recorded_settings(self) -> dict:
        """What albert_tf.json records beside the head's arguments, for the tools that read the model: its
        preprocessor's casing, quotes rule and length (where it has one), as every albert_tf tool records them."""
        preprocessor = getattr(self, "preprocessor", None)
        if preprocessor is None:
            return {}
        return {"lower_case": preprocessor.lower_case, "keep_accents": preprocessor.keep_accents,
                "rewrite_quotes": preprocessor.rewrite_quotes, "max_seq_length": preprocessor.seq_length}
