"""The pretraining loss pieces and metrics: by hand on a two-sequence batch, and against the records themselves."""

import math

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.tasks.pretraining_losses import batch_sums, metrics_from_sums, replica_loss
from albert_tf.text.albert_tokenizer import MASK_ID

VOCAB = 8


def one_hot_logits(predicted):
    """Logits whose argmax is `predicted`, with a margin of 5."""
    return np.eye(VOCAB, dtype=np.float32)[predicted] * 5.0


def test_accuracy_at_mask_inputs_counts_only_positions_whose_input_is_mask():
    # Sequence 0 masks positions 1 ([MASK]), 2 (kept token 6) and 3 ([MASK]); sequence 1 masks position 1
    # (random token 7) and 2 ([MASK]), and pads its third prediction (weight 0, at a [MASK] input).
    input_word_ids = np.array([[2, MASK_ID, 6, MASK_ID, 3], [2, 7, MASK_ID, MASK_ID, 3]], np.int32)
    positions = np.array([[1, 2, 3], [1, 2, 3]], np.int32)
    labels = np.array([[5, 6, 7], [5, 6, 7]], np.int32)
    weights = np.array([[1, 1, 1], [1, 1, 0]], np.float32)
    predicted = np.array([[5, 6, 0], [0, 6, 7]])  # right: [MASK] 5, kept 6 | [MASK] 6, and the padded 7
    batch = {"input_word_ids": input_word_ids, "masked_lm_positions": positions, "masked_lm_ids": labels,
             "masked_lm_weights": weights, "sentence_order_labels": np.array([0, 1], np.int32)}
    outputs = {"mlm_logits": tf.constant(one_hot_logits(predicted)),
               "sop_logits": tf.constant([[2.0, 0.0], [2.0, 0.0]])}
    sums = {k: float(v) for k, v in batch_sums(outputs, batch, MASK_ID).items()}
    assert sums["masked_weight"] == 5 and sums["mlm_correct"] == 3  # the padded prediction does not count
    assert sums["mask_input_weight"] == 3 and sums["mask_input_correct"] == 2
    # [MASK] is the vocabulary's: with another id (a WordPiece vocabulary's), positions holding that id count.
    other = {k: float(v) for k, v in batch_sums(outputs, batch, 7).items()}
    assert (other["mask_input_weight"], other["mask_input_correct"]) == (1, 0)
    metrics = metrics_from_sums(sums)
    assert metrics["masked_lm_accuracy"] == pytest.approx(3 / 5)
    assert metrics["masked_lm_accuracy_at_mask"] == pytest.approx(2 / 3)
    assert metrics["sentence_order_accuracy"] == pytest.approx(1 / 2)
    # The loss is the original's: weighted-mean MLM cross-entropy + mean SOP cross-entropy.
    right, wrong = -math.log(math.exp(5) / (math.exp(5) + 7)), -math.log(1 / (math.exp(5) + 7))
    sop = (-math.log(math.exp(2) / (math.exp(2) + 1)) - math.log(1 / (math.exp(2) + 1))) / 2
    loss = float(replica_loss(batch_sums(outputs, batch, MASK_ID), tf.constant(5.0), 2))
    assert loss == pytest.approx((3 * right + 2 * wrong) / (5 + 1e-5) + sop, rel=1e-5)


def test_frequent_piece_level_counts_the_labels_behind_mask_inputs(tmp_path_factory):
    import collections

    from albert_tf.data.pretraining_dataset import frequent_piece_level
    from pretraining_fixtures import make_pretraining_data

    data = make_pretraining_data(tmp_path_factory, num_documents=20, shards=1)
    counts = collections.Counter()
    records = [tf.train.Example.FromString(r.numpy()).features.feature for r in tf.data.TFRecordDataset(data.files())]
    for feature in records[:len(records) // 4 * 4]:  # the full batches of 4 that the level reads
        ids = feature["input_ids"].int64_list.value
        for position, label, weight in zip(feature["masked_lm_positions"].int64_list.value,
                                           feature["masked_lm_ids"].int64_list.value,
                                           feature["masked_lm_weights"].float_list.value):
            if weight > 0 and ids[position] == MASK_ID:
                counts[label] += 1
    assert len(counts) > 5
    expected = counts.most_common(1)[0][1] / sum(counts.values())
    assert frequent_piece_level(data.prefix, batch_size=4) == pytest.approx(expected)
