"""The one compiled trainer: many steps per `tf.function` call, under any tf.distribute strategy.

Pretraining and fine-tuning differ only in their objective
(`albert_tf.tasks.objective.Objective`: what a batch
computes: the forward pass, the summed metric pieces, this replica's share of
the loss); the step, the accumulation, the all-reduce, loss scaling and the
loops are this module's, the same for both.

One training step, per replica:
  1. the objective's global sums (pretraining: the masked-LM weight) are
     all-reduced from the input alone, so every replica and every micro-batch
     divides by the same global denominators: N replicas x K accumulation
     micro-batches compute exactly the loss and gradient of one device on the
     global batch;
  2. forward and backward per micro-batch (optionally XLA-compiled), gradients
     summed over micro-batches, then all-reduced across replicas;
  3. the optimizer (built with `gradients_are_aggregated=True`) clips the global
     gradient to norm 1.0 and applies LAMB/AdamW; for fp16 a Keras
     `LossScaleOptimizer` around it unscales and skips non-finite steps.

Input: the loop takes a plain `tf.data` iterator (tf.distribute's own
distributed iterators cannot be checkpointed; a plain one can, so a resumed run
continues from the exact input position) and hands each replica its slice:
  - worker batches (`input_is_global=False`, pretraining): each worker reads its
    own `global_batch_size / workers` sequences, split over its local replicas;
  - global batches (`input_is_global=True`, fine-tuning): every worker reads the
    same global batch and replica r takes slice r of it, so the replicas
    together see exactly the batch one device would.

Note on clipping: the original TPU code clipped each shard's gradient before
CrossShardOptimizer averaged them, so its effective clip depended on the number
of shards. Clipping the all-reduced gradient is the same on 1 or N devices.
"""

import keras
import tensorflow as tf

_SUM = tf.distribute.ReduceOp.SUM


class Trainer:
    """Builds and runs the compiled train and eval loops of `model` for `objective`.

    Create it (and the model and optimizer) inside `strategy.scope()`.

    Args:
      strategy: the tf.distribute strategy the model's variables live in.
      model: the Keras model.
      optimizer: from `create_optimizer(..., gradients_are_aggregated=True)`,
        possibly wrapped in `keras.optimizers.LossScaleOptimizer` (fp16).
      objective: the `Objective`.
      global_batch_size: examples per optimizer step, over all replicas and
        accumulation micro-batches.
      gradient_accumulation_steps: micro-batches per step on each replica.
      jit_compile: XLA-compile the forward and backward pass.
      variables: the variables trained (default: all trainable ones); a span
        head's pooler, say, has no gradient path and is left out.
      input_is_global: every worker's iterator yields the global batch (see above).
    """

    def __init__(self, strategy, model, optimizer, objective, global_batch_size, gradient_accumulation_steps=1,
                 jit_compile=False, variables=None, input_is_global=False):
        replicas = strategy.num_replicas_in_sync
        if gradient_accumulation_steps < 1:
            raise ValueError(f"gradient_accumulation_steps must be >= 1, got {gradient_accumulation_steps}")
        if global_batch_size % (replicas * gradient_accumulation_steps):
            raise ValueError(
                f"train_batch_size={global_batch_size} must be divisible by the number of replicas ({replicas}) "
                f"times gradient_accumulation_steps ({gradient_accumulation_steps})"
            )
        self.strategy = strategy
        self.model = model
        self.optimizer = optimizer
        self.objective = objective
        self.global_batch_size = global_batch_size
        self.accumulation_steps = gradient_accumulation_steps
        self.input_is_global = input_is_global
        self.variables = list(variables) if variables is not None else model.trainable_variables
        self.loss_scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        with strategy.scope():
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step",
                                    aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
            # Keras builds optimizer slots lazily; under MirroredStrategy they must exist before the loop.
            optimizer.build(self.variables)
        # Set (from a SIGTERM handler, say) to end the running loop after the current step. Read
        # once per step on the host; multi-worker runs leave it unset, since every worker must run
        # the same steps and they agree on stopping at loop boundaries instead.
        self.stop_requested = tf.Variable(False, trainable=False, name="stop_requested")
        self._forward_backward = tf.function(self._forward_backward_fn, jit_compile=jit_compile)
        self.train_loop = tf.function(self._train_loop_fn)
        self.eval_step = tf.function(self._eval_step_fn)

    @property
    def sum_keys(self):
        return self.objective.sum_keys

    # --- one replica ---------------------------------------------------------------------------

    def _forward_backward_fn(self, batch, global_sums):
        objective = self.objective
        with tf.GradientTape() as tape:
            outputs = objective.outputs(self.model, {name: batch[name] for name in objective.model_inputs},
                                        training=True)
            sums = objective.batch_sums(outputs, batch)
            loss = objective.replica_loss(sums, global_sums, self.global_batch_size)
            if self.loss_scaling:
                loss = self.optimizer.scale_loss(loss)
        gradients = tape.gradient(loss, self.variables)
        # The embedding gradient arrives as IndexedSlices; dense sums all-reduce and accumulate simply.
        return [tf.convert_to_tensor(g) for g in gradients], sums

    def _replica_step(self, batch):
        context = tf.distribute.get_replica_context()
        global_sums = {name: context.all_reduce(_SUM, value)
                       for name, value in self.objective.global_sums(batch).items()}
        if self.accumulation_steps == 1:
            gradients, sums = self._forward_backward(batch, global_sums)
        else:
            gradients, sums = self._accumulate(batch, global_sums)
        gradients = context.all_reduce(_SUM, gradients)
        gradient_norm = tf.linalg.global_norm(gradients)
        if self.loss_scaling:
            gradient_norm = gradient_norm / tf.cast(self.optimizer.dynamic_scale, gradient_norm.dtype)
        self.optimizer.apply(gradients, self.variables)
        return sums, gradient_norm

    def _accumulate(self, batch, global_sums):
        k = self.accumulation_steps
        micro = {name: tf.reshape(value, [k, -1] + value.shape[1:].as_list()) for name, value in batch.items()}
        gradients = [tf.zeros_like(v) for v in self.variables]
        sums = {key: tf.zeros([], tf.float32) for key in self.sum_keys}
        for i in tf.range(k):
            micro_gradients, micro_sums = self._forward_backward({n: v[i] for n, v in micro.items()}, global_sums)
            gradients = [a + g for a, g in zip(gradients, micro_gradients)]
            sums = {key: sums[key] + micro_sums[key] for key in self.sum_keys}
        return gradients, sums

    # --- loops ---------------------------------------------------------------------------------

    def _train_loop_fn(self, iterator, num_steps):
        """Runs `num_steps` steps, fewer if `stop_requested` is set meanwhile; returns the summed metric
        pieces, the last gradient norm and learning rate (`step` counts the steps actually run)."""
        totals = {key: tf.zeros([], tf.float32) for key in self.sum_keys}
        gradient_norm = tf.zeros([], tf.float32)
        learning_rate = tf.zeros([], tf.float32)
        for _ in tf.range(num_steps):
            if self.stop_requested:
                break
            learning_rate = tf.cast(self.optimizer.learning_rate, tf.float32)  # the rate this step uses
            batch = self.distribute_batch(next(iterator))
            per_replica_sums, per_replica_norm = self.strategy.run(self._replica_step, args=(batch,))
            # A new dict each step: autograph carries rebound names through the loop, not item assignments.
            totals = {key: totals[key] + self.strategy.reduce(_SUM, per_replica_sums[key], axis=None)
                      for key in self.sum_keys}
            # Every replica holds the same all-reduced norm.
            gradient_norm = self.strategy.experimental_local_results(per_replica_norm)[0]
            self.step.assign_add(1)
        return totals, gradient_norm, learning_rate

    def distribute_batch(self, batch):
        """This worker's batch -> per-replica values (see the module docstring)."""
        strategy = self.strategy
        if strategy.num_replicas_in_sync == 1:
            return batch
        parts = strategy.num_replicas_in_sync if self.input_is_global else len(strategy.extended.worker_devices)

        def replica_slice(context):
            index = context.replica_id_in_sync_group % parts
            return {name: tf.split(value, parts)[index] for name, value in batch.items()}

        return strategy.experimental_distribute_values_from_function(replica_slice)

    def _eval_replica_step(self, batch):
        objective = self.objective
        outputs = objective.outputs(self.model, {name: batch[name] for name in objective.model_inputs},
                                    training=False)
        return objective.batch_sums(outputs, batch)

    def _eval_step_fn(self, batch):
        per_replica = self.strategy.run(self._eval_replica_step, args=(batch,))
        return {key: self.strategy.reduce(_SUM, per_replica[key], axis=None) for key in self.sum_keys}

    def evaluate(self, distributed_dataset, max_steps=None):
        """Summed metric pieces over the dataset (or its first `max_steps` batches)."""
        totals = {key: 0.0 for key in self.sum_keys}
        for steps, batch in enumerate(distributed_dataset):
            if max_steps is not None and steps >= max_steps:
                break
            for key, value in self.eval_step(batch).items():
                totals[key] += float(value)
        return totals
