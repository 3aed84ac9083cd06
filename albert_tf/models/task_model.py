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
