"""A training checkpoint restores whole: the model, the optimizer and the dropout states, with nothing left over
for TensorFlow to warn about after an exact resume."""

import gc
import io
import logging

import keras
import numpy as np
import tensorflow as tf

from albert_tf.training.random_state import dropout_states, restore_training_checkpoint, training_checkpoint


def _model_and_optimizer():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dropout(0.5),
                              keras.layers.Dense(2)])
    return model, keras.optimizers.Adam()


def _trained_checkpoint(directory):
    model, optimizer = _model_and_optimizer()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(np.ones((2, 4), "float32"), training=True))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return model, optimizer, training_checkpoint(model, optimizer=optimizer).save(str(directory / "ckpt"))


def test_a_resume_restores_everything_and_tensorflow_warns_of_nothing(tmp_path):
    model, optimizer, prefix = _trained_checkpoint(tmp_path)
    logged = io.StringIO()
    handler = logging.StreamHandler(logged)
    tf.get_logger().addHandler(handler)
    try:
        resumed, resumed_optimizer = _model_and_optimizer()
        resumed_optimizer.build(resumed.trainable_variables)
        restore_training_checkpoint(prefix, resumed, optimizer=resumed_optimizer)
        gc.collect()  # TensorFlow warns of unrestored values when it collects the restore's status
    finally:
        tf.get_logger().removeHandler(handler)
    assert "unrestored" not in logged.getvalue() and "could not be found" not in logged.getvalue(), logged.getvalue()
    for saved, restored in zip(model.variables + optimizer.variables,
                               resumed.variables + resumed_optimizer.variables):
        np.testing.assert_array_equal(np.asarray(saved), np.asarray(restored), err_msg=saved.path)
    assert [int(state.numpy()[1]) for state in dropout_states(resumed)] == [1]  # the mask counter moved on


def test_a_checkpoint_written_before_dropout_states_were_saved_still_restores(tmp_path):
    model, optimizer = _model_and_optimizer()
    model(np.ones((2, 4), "float32"), training=True)
    prefix = tf.train.Checkpoint(model=model).save(str(tmp_path / "old"))
    resumed, _ = _model_and_optimizer()
    restore_training_checkpoint(prefix, resumed)
    for saved, restored in zip(model.trainable_variables, resumed.trainable_variables):
        np.testing.assert_array_equal(np.asarray(saved), np.asarray(restored))
