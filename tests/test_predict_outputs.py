"""predict_outputs, what every fine-tuning evaluation and prediction runs: one traced batch function per model,
reused by every later evaluation (a run evaluates the same model at each checkpoint)."""

import gc
import weakref

import keras
import numpy as np
import tensorflow as tf

from albert_tf.tasks.finetuning_task import predict_outputs


class CountingModel(keras.Model):
    """A model whose `call` counts its Python runs: once per trace inside a tf.function."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(2)
        self.calls = 0

    def call(self, inputs, training=False):
        self.calls += 1
        return {"logits": self.dense(tf.cast(inputs["input_word_ids"], tf.float32))}


def rows(count, seq=3, seed=0):
    ids = np.random.default_rng(seed).integers(0, 9, (count, seq)).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}


def test_repeated_evaluations_reuse_one_traced_function_per_model():
    model = CountingModel()
    arrays = rows(10)
    expected = model(arrays)["logits"].numpy()  # built eagerly, its variables made outside any trace
    model.calls = 0
    for seed in range(3):  # three evaluations, three batches of 4 each (the last padded)
        outputs = predict_outputs(model, arrays if seed == 0 else rows(10, seed=seed), batch_size=4)
        assert outputs["logits"].shape == (10, 2)
    np.testing.assert_allclose(predict_outputs(model, arrays, batch_size=4)["logits"], expected, rtol=1e-6)
    assert model.calls == 1, f"{model.calls} traces for 4 evaluations of one model"

    # Another model gets its own function; the first one's is not traced again.
    other = CountingModel()
    other(arrays)
    other.calls = 0
    predict_outputs(other, arrays, batch_size=4)
    predict_outputs(model, arrays, batch_size=4)
    assert (model.calls, other.calls) == (1, 1)


def test_the_cached_function_does_not_keep_its_model_alive():
    model = CountingModel()
    model(rows(2))
    predict_outputs(model, rows(5), batch_size=4)
    gone = weakref.ref(model)
    del model
    gc.collect()
    assert gone() is None


def test_long_predictions_show_their_progress(capsys):
    """A labelled prediction says how many windows are done, and ends with all of them; the outputs are the
    unlabelled call's."""
    model = CountingModel()
    arrays = rows(10)
    expected = predict_outputs(model, arrays, batch_size=4)["logits"]
    capsys.readouterr()
    outputs = predict_outputs(model, arrays, batch_size=4, progress="answering")
    np.testing.assert_array_equal(outputs["logits"], expected)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines and "answering: 10/10 windows" in lines[-1] and "100.0%" in lines[-1]
