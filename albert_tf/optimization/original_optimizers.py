"""LAMB and AdamW exactly as the original ALBERT code defines them, as Keras 3 optimizers.

Both share one moment update, without bias correction:

    m <- beta_1 * m + (1 - beta_1) * g
    v <- beta_2 * v + (1 - beta_2) * g^2
    u  = m / (sqrt(v) + epsilon) + weight_decay_rate * w    (decay only where not excluded)

AdamW (`AdamWeightDecay`, the fine-tuning optimizer) then takes w <- w - lr * u.
LAMB scales the step by the layer-wise trust ratio:

    r  = ||w|| / ||u||   (1 where either norm is 0, and 1 for excluded variables)
    w <- w - lr * r * u

Weight decay sits inside u, so it is part of the trust ratio's denominator.
Variables whose path matches any of `exclude_from_weight_decay` (by default
LayerNorm / layer_norm / bias, as in the original) get neither decay nor
(for LAMB, unless `exclude_from_layer_adaptation` says otherwise) the ratio.

Keras 3's own `keras.optimizers.Lamb` differs on each point (bias correction,
decay applied outside the ratio, no exclusions, epsilon 1e-7), which is why
this module exists.

Distributed training: Keras all-reduces gradients inside `apply`, after its
own clipping, so clipping would act on per-replica gradients. Training loops
that all-reduce and clip the global gradient themselves (run_pretraining does)
pass `gradients_are_aggregated=True`, and `apply` then uses the gradients as
given.

Clipping to a global norm measures the gradient itself. An embedding's gradient
reaches `apply` (from keras.Model.fit, say) as IndexedSlices holding one row per
lookup, so a token seen twice has two rows there, and the norm of those rows is
not the gradient's: every token of segment 0 gives the segment table's one row
batch * seq times. Keras's own clipping takes the rows' norm; here the rows of
each token are summed first, as the original's TPU path (one-hot embeddings)
and PyTorch's clip_grad_norm_ see them.
"""

import re

import keras
import tensorflow as tf
from keras import ops

EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


class _OriginalAdamBase(keras.optimizers.Optimizer):
    """The moment update shared by LAMB and AdamW; subclasses choose the step scale."""

    def __init__(
        self,
        learning_rate=0.001,
        weight_decay_rate=0.01,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=EXCLUDE_FROM_WEIGHT_DECAY,
        gradients_are_aggregated=False,
        name=None,
        **kwargs,
    ):
        # Keras' own (decoupled) weight decay stays off: decay is part of the update here.
        kwargs.pop("weight_decay", None)
        super().__init__(learning_rate=learning_rate, weight_decay=None, name=name, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.exclude_from_weight_decay = tuple(exclude_from_weight_decay or ())
        self.gradients_are_aggregated = bool(gradients_are_aggregated)

    @staticmethod
    def _matches(patterns, path):
        return any(re.search(pattern, path) for pattern in patterns)

    def uses_weight_decay(self, path):
        return self.weight_decay_rate > 0 and not self._matches(self.exclude_from_weight_decay, path)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums = [self.add_variable_from_reference(v, name="m") for v in var_list]
        self._velocities = [self.add_variable_from_reference(v, name="v") for v in var_list]
        # update_step receives backend variables, which have no Keras path: decide per index now.
        self._decays = [self.uses_weight_decay(v.path) for v in var_list]
        self._adapts = [self._uses_layer_adaptation(v.path) for v in var_list]

    def _uses_layer_adaptation(self, path):
        return False

    def _all_reduce_sum_gradients(self, grads_and_vars):
        if self.gradients_are_aggregated:
            return list(grads_and_vars)
        return super()._all_reduce_sum_gradients(grads_and_vars)

    def _clip_gradients(self, grads):
        if not (self.global_clipnorm and self.global_clipnorm > 0):
            return super()._clip_gradients(grads)
        norm = gradients_global_norm(grads)
        # Keras's clip_by_global_norm: a non-finite norm makes every gradient non-finite too.
        scale = self.global_clipnorm * ops.minimum(1.0 / norm, 1.0 / self.global_clipnorm) + (norm - norm)
        return [None if gradient is None else _scaled(gradient, scale) for gradient in grads]

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        if isinstance(gradient, tf.IndexedSlices):
            # Every row's moments decay at every step, as the original's dense update has them.
            gradient = tf.convert_to_tensor(gradient)
        gradient = ops.cast(gradient, variable.dtype)
        learning_rate = ops.cast(learning_rate, variable.dtype)

        next_m = self.beta_1 * m + (1.0 - self.beta_1) * gradient
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient)
        update = next_m / (ops.sqrt(next_v) + self.epsilon)
        if self._decays[index]:
            update = update + self.weight_decay_rate * variable
        if self._adapts[index]:
            weight_norm = ops.sqrt(ops.sum(ops.square(variable)))
            update_norm = ops.sqrt(ops.sum(ops.square(update)))
            safe_ratio = weight_norm / ops.where(update_norm > 0, update_norm, 1.0)
            ratio = ops.where((weight_norm > 0) & (update_norm > 0), safe_ratio, 1.0)
            update = ratio * update
        self.assign(m, next_m)
        self.assign(v, next_v)
        self.assign_sub(variable, learning_rate * update)

    def get_config(self):
        config = super().get_config()
        config.pop("weight_decay", None)
        config.update(
            weight_decay_rate=self.weight_decay_rate,
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            exclude_from_weight_decay=list(self.exclude_from_weight_decay),
            gradients_are_aggregated=self.gradients_are_aggregated,
        )
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class AdamWeightDecay(_OriginalAdamBase):
    """The original BERT/ALBERT `AdamWeightDecayOptimizer` (fine-tuning): Adam without
    bias correction, weight decay added to the update, LayerNorm and bias excluded."""

    def __init__(self, learning_rate=0.001, name="adam_weight_decay", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)


@keras.saving.register_keras_serializable(package="albert_tf")
class Lamb(_OriginalAdamBase):
    """The original ALBERT `LAMBOptimizer` (pretraining): AdamWeightDecay's update
    scaled per variable by the trust ratio ||w|| / ||update||.

    Args:
      exclude_from_layer_adaptation: path patterns without the trust ratio;
        None (default) means the same as `exclude_from_weight_decay`, as in
        the original.
    """

    def __init__(self, learning_rate=0.001, exclude_from_layer_adaptation=None, name="lamb", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        if exclude_from_layer_adaptation is None:
            exclude_from_layer_adaptation = self.exclude_from_weight_decay
        self.exclude_from_layer_adaptation = tuple(exclude_from_layer_adaptation)

    def _uses_layer_adaptation(self, path):
        return not self._matches(self.exclude_from_layer_adaptation, path)

    def get_config(self):
        config = super().get_config()
        config["exclude_from_layer_adaptation"] = list(self.exclude_from_layer_adaptation)
        return config


def gradients_global_norm(gradients):
    """The global L2 norm of `gradients` as dense tensors (None entries skipped): IndexedSlices rows of the
    same index are summed before squaring, so a row looked up n times counts once, with its summed gradient."""
    squares = []
    for gradient in gradients:
        if gradient is None:
            continue
        if isinstance(gradient, tf.IndexedSlices):
            # A static row count keeps this XLA-compilable (tf.unique's output shape is not).
            gradient = tf.math.unsorted_segment_sum(gradient.values, gradient.indices, gradient.dense_shape[0])
        squares.append(ops.sum(ops.square(ops.cast(gradient, "float32"))))
    return ops.sqrt(ops.sum(ops.stack(squares)))


def _scaled(gradient, scale):
    if isinstance(gradient, tf.IndexedSlices):
        return tf.IndexedSlices(gradient.values * ops.cast(scale, gradient.values.dtype), gradient.indices,
                                gradient.dense_shape)
    return gradient * ops.cast(scale, gradient.dtype)
