"""Fine-tuning an `AlbertSpanLabeler`: the span loss and a minimal single-device loop.

The loss is BERT's: the mean over the batch of (cross-entropy of the start
position + cross-entropy of the end position) / 2, both over all positions of
the window; a window without the answer (or an unanswerable question) points
both at [CLS] (position 0).

Training is the shared fine-tuning loop (`albert_tf.training.finetuning`):
AdamW with the original exclusions, warmup + linear decay, resumable
checkpoints that `load_model(checkpoint_dir)` reads as a span_labeler.
"""

import tensorflow as tf


def span_loss(start_positions, end_positions, outputs):
    """Scalar float32: mean over the batch of (CE(start) + CE(end)) / 2."""
    start_losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(start_positions, tf.int32), logits=tf.cast(outputs["start_logits"], tf.float32))
    end_losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(end_positions, tf.int32), logits=tf.cast(outputs["end_logits"], tf.float32))
    return tf.reduce_mean(start_losses + end_losses) / 2.0


def train_span_labeler(model, arrays, num_train_steps, batch_size, learning_rate, num_warmup_steps, checkpoint_dir,
                       save_checkpoints_steps=1000, seed=12345, keep_checkpoint_max=3, summary_dir=None, log=print):
    """Trains `model` in place for num_train_steps steps; returns the last step's loss.

    arrays: {input_word_ids, input_mask, input_type_ids, start_positions,
    end_positions} as from `squad.feature_arrays`.
    """
    from albert_tf.training.finetuning import finetune

    # The pooler is not on the span head's path and gets no gradient.
    variables = [v for v in model.trainable_variables if "pooler" not in v.path]
    result = finetune(
        model, arrays, lambda batch, outputs: span_loss(batch["start_positions"], batch["end_positions"], outputs),
        num_train_steps, batch_size, learning_rate, num_warmup_steps, checkpoint_dir, "span_labeler",
        save_checkpoints_steps=save_checkpoints_steps, keep_checkpoint_max=keep_checkpoint_max, seed=seed,
        variables=variables, summary_dir=summary_dir, log=log)
    return result["loss"]
