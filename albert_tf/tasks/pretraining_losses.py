"""The pretraining objective: weighted-mean masked-LM cross-entropy + mean SOP cross-entropy.

As in the original `run_pretraining.py`: the MLM loss is
sum(w * CE) / (sum(w) + 1e-5) over masked positions (w = masked_lm_weights,
0 for padding), the SOP loss the mean CE over sequences, the total their sum.

Under a distribution strategy each replica holds part of the batch. To make the
summed per-replica losses equal the global-batch loss exactly (so N replicas
train like one device with the same global batch), each replica divides its
local sums by the global denominators: the all-reduced masked weight and the
global batch size. `batch_sums` returns the pieces; `replica_loss` combines them.
"""

import tensorflow as tf

from albert_tf.settings import NON_NEGATIVE
from albert_tf.tasks.objective import Objective

MLM_EPSILON = 1e-5  # the original's denominator epsilon
SUM_KEYS = ("mlm_loss_sum", "mlm_correct", "masked_weight", "mask_input_correct", "mask_input_weight", "sop_loss_sum",
            "sop_correct", "sequences")
MODEL_INPUTS = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")


def batch_sums(outputs, batch, mask_id):
    """Local (one replica, one micro-batch) sums the loss and the metrics are made of; `mask_id`: the data's
    vocabulary's [MASK] (the accuracy where the input is [MASK] is counted apart)."""
    mlm_logits = tf.cast(outputs["mlm_logits"], tf.float32)
    labels = tf.cast(batch["masked_lm_ids"], tf.int32)
    weights = tf.cast(batch["masked_lm_weights"], tf.float32)
    mlm_losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=mlm_logits)
    mlm_correct = tf.cast(tf.equal(tf.argmax(mlm_logits, axis=-1, output_type=tf.int32), labels), tf.float32)
    # 10% of the masked positions keep their own token and 10% get a random one (the 80/10/10 rule); a
    # model learns to copy the kept ones without any context. Accuracy where the input IS [MASK] is the
    # part that needs the context, so it is counted apart.
    inputs_at_positions = tf.gather(batch["input_word_ids"], batch["masked_lm_positions"], batch_dims=1)
    at_mask = tf.cast(tf.equal(inputs_at_positions, mask_id), tf.float32) * weights

    sop_logits = tf.cast(outputs["sop_logits"], tf.float32)
    sop_labels = tf.cast(tf.reshape(batch["sentence_order_labels"], [-1]), tf.int32)
    sop_losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=sop_labels, logits=sop_logits)
    sop_correct = tf.cast(tf.equal(tf.argmax(sop_logits, axis=-1, output_type=tf.int32), sop_labels), tf.float32)
    return {
        "mlm_loss_sum": tf.reduce_sum(weights * mlm_losses),
        "mlm_correct": tf.reduce_sum(weights * mlm_correct),
        "masked_weight": tf.reduce_sum(weights),
        "mask_input_correct": tf.reduce_sum(at_mask * mlm_correct),
        "mask_input_weight": tf.reduce_sum(at_mask),
        "sop_loss_sum": tf.reduce_sum(sop_losses),
        "sop_correct": tf.reduce_sum(sop_correct),
        "sequences": tf.cast(tf.shape(sop_labels)[0], tf.float32),
    }


def replica_loss(sums, global_masked_weight, global_batch_size, sentence_loss_weight=1.0):
    """This replica's share of the global-batch loss (the shares sum to the loss).

    The original adds the MLM and sentence-order losses with equal weight; a
    weight of 0 trains MLM alone (the "None" row of the paper's Table 5).
    """
    mlm = sums["mlm_loss_sum"] / (global_masked_weight + MLM_EPSILON)
    sop = sums["sop_loss_sum"] / tf.cast(global_batch_size, tf.float32)
    return mlm + sentence_loss_weight * sop  # x * 1.0 == x exactly: the default changes no bit


def metrics_from_sums(totals):
    """The original's four metrics, and the masked-LM accuracy at positions whose input is [MASK], from sums
    accumulated over replicas and steps (NumPy or floats)."""
    masked = max(float(totals["masked_weight"]), 1e-9)
    sequences = max(float(totals["sequences"]), 1e-9)
    return {
        "masked_lm_accuracy": float(totals["mlm_correct"]) / masked,
        "masked_lm_accuracy_at_mask": float(totals["mask_input_correct"]) / max(float(totals["mask_input_weight"]), 1e-9),
        "masked_lm_loss": float(totals["mlm_loss_sum"]) / masked,
        "sentence_order_accuracy": float(totals["sop_correct"]) / sequences,
        "sentence_order_loss": float(totals["sop_loss_sum"]) / sequences,
    }


class PretrainingObjective(Objective):
    """Pretraining as the trainer's objective: the MLM and sentence-order losses of an `AlbertPretrainer`,
    the sentence loss weighted by `sentence_loss_weight` (0 = MLM only); `mask_id`: the [MASK] id of the
    data's vocabulary (`pretraining_dataset.data_special_ids`)."""

    sum_keys = SUM_KEYS
    model_inputs = MODEL_INPUTS

    def __init__(self, sentence_loss_weight=1.0, *, mask_id):
        NON_NEGATIVE.check("sentence_loss_weight", sentence_loss_weight)
        self.sentence_loss_weight = float(sentence_loss_weight)
        self.mask_id = int(mask_id)

    def outputs(self, model, inputs, training):
        return model.pretraining_logits(inputs, training=training)

    def global_sums(self, batch):
        return {"masked_weight": tf.reduce_sum(tf.cast(batch["masked_lm_weights"], tf.float32))}

    def batch_sums(self, outputs, batch):
        return batch_sums(outputs, batch, self.mask_id)

    def replica_loss(self, sums, global_sums, global_batch_size):
        return replica_loss(sums, global_sums["masked_weight"], global_batch_size, self.sentence_loss_weight)

    def metrics(self, totals):
        metrics = metrics_from_sums(totals)
        metrics["loss"] = metrics["masked_lm_loss"] + metrics["sentence_order_loss"]
        return metrics
