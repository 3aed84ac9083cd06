"""What every model built on the ALBERT encoder shares: its config, and a Keras config that round-trips.

Constructors take `(encoder, config, ...)` in that order: pass an `AlbertEncoder`
(pretrained, say), or an `AlbertConfig` (as the first argument or as `config=`)
to build a fresh one.
"""


class AlbertTaskModel:
    """Mixin for keras.Model subclasses with an `encoder` attribute.

    `CONFIG_ATTRIBUTES` maps each constructor argument that `get_config` records
    (besides the encoder's config) to the attribute holding it.
    """

    CONFIG_ATTRIBUTES: dict = {}

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
    def from_preset(cls, preset, max_seq_length=None, **kwargs):
        """The model from a preset name or a model directory, as KerasHub's `from_preset`.

        - A preset name (`albert_tf.preset_names()`): a fresh, randomly initialized model;
          AlbertConfig fields among `kwargs` replace the preset's (`vocab_size=1000`).
        - An albert_tf model directory (pretraining output, a converted Google or Hugging
          Face checkpoint, a fine-tuned model) or an `albert_tf.export` directory: its
          weights. A directory holding this very kind of model (with the same `num_labels`
          ...) loads whole, head included; otherwise its encoder gets a fresh head.
          A classifier also gets the directory's `AlbertPreprocessor` (its spm.model, at
          `max_seq_length` or the length it records, 128 otherwise), so it takes raw text.

        The other `kwargs` go to the constructor (`num_labels=3`, `dropout=0.2`).

        >>> classifier = AlbertClassifier.from_preset("albert_tiny", vocab_size=1000, num_labels=3)
        """
        from albert_tf.models.model_dir import model_from_preset

        return model_from_preset(cls, preset, max_seq_length=max_seq_length, **kwargs)
