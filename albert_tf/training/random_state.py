"""The dropout random state a training checkpoint carries, so that a resumed run draws the masks an
uninterrupted run would have drawn.

Keras 3's Dropout layers draw from a `SeedGenerator` whose state ([seed, counter]) advances with every
call. The state is among `model.variables`, but `tf.train.Checkpoint(model=model)` does not reach it, so
a resumed run restarted the counter and drew other masks (a loss 0.02 apart after 300 steps, where
uninterrupted runs agree to 1e-7). Training checkpoints save the states as their own child,
`dropout_states`, and restore them with a checkpoint object of their own, so that checkpoints written
before they carried them still restore (with the counters at their start, as then).
"""

import tensorflow as tf

CHECKPOINT_CHILD = "dropout_states"


def dropout_states(model):
    """The seed-generator state variables of `model`'s random layers, in the model's own order."""
    return [variable for variable in model.variables if variable.path.endswith("seed_generator_state")]


def training_checkpoint(model, **objects):
    """The checkpoint a training run saves: `objects` (model, optimizer, step, ...) and the dropout states."""
    return tf.train.Checkpoint(model=model, **objects, **{CHECKPOINT_CHILD: dropout_states(model)})


def restore_training_checkpoint(prefix, model, **objects):
    """Restores what `training_checkpoint` saved at `prefix`: every object of `objects` must be matched
    (AssertionError otherwise); the dropout states are restored where the checkpoint holds them."""
    # One checkpoint object for all that is saved: restored in two, each would leave the other's values
    # unrestored, and TensorFlow warns of them when it collects the status, after an exact resume.
    saved = {name.split("/", 1)[0] for name, _ in tf.train.list_variables(prefix)}
    checkpoint = (training_checkpoint(model, **objects) if CHECKPOINT_CHILD in saved
                  else tf.train.Checkpoint(model=model, **objects))
    checkpoint.restore(prefix).assert_existing_objects_matched()
