"""`AlbertClassifier`: the encoder with a classification (or regression) head on the pooled output."""

import keras

from albert_tf.albert_config import AlbertConfig
from albert_tf.layers.initializers import truncated_normal
from albert_tf.models.task_model import AlbertTaskModel
from albert_tf.networks.albert_encoder import ENCODER_INPUTS, AlbertEncoder, encoder_for, encoder_inputs

MODEL_KIND = "classifier"


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertClassifier(AlbertTaskModel, keras.Model):
    """pooled_output -> dropout -> dense(num_labels), as the original run_classifier.

    Inputs: the encoder's dict. Outputs: {"logits": float32 [batch, num_labels]}
    (a regression task such as STS-B has num_labels 1: the logit is the score).
    """

    CONFIG_ATTRIBUTES = {"num_labels": "num_labels", "dropout": "dropout_rate", "seq_length": "seq_length"}

    def __init__(self, encoder: AlbertEncoder | AlbertConfig | None = None, num_labels: int = 2, dropout: float = 0.1,
                 config: AlbertConfig | None = None, seq_length: int | None = None, **kwargs):
        encoder = encoder_for("AlbertClassifier", encoder, config, seq_length)
        config = encoder.albert_config
        kwargs.setdefault("name", "albert_classifier")
        self.encoder = encoder
        self.dropout = keras.layers.Dropout(dropout, name="classifier_dropout")
        self.classifier = keras.layers.Dense(num_labels, kernel_initializer=truncated_normal(config.initializer_range),
                                             dtype="float32", name="classifier")
        inputs = encoder_inputs(seq_length)
        pooled = encoder({name: inputs[name] for name in ENCODER_INPUTS})["pooled_output"]
        super().__init__(inputs=inputs, outputs={"logits": self.classifier(self.dropout(pooled))}, **kwargs)
        self.num_labels = num_labels
        self.dropout_rate = dropout
        self.seq_length = seq_length

    def head_outputs(self, inputs, training=True):
        pooled = self.encoder.first_token_pooled_output({name: inputs[name] for name in ENCODER_INPUTS},
                                                        training=training)
        return {"logits": self.classifier(self.dropout(pooled, training=training))}
