"""What one kind of training computes on a batch, for the one trainer (`albert_tf.training.trainer`).

Pretraining (`pretraining_losses.PretrainingObjective`) and fine-tuning
(`finetuning_task.FinetuningObjective`, from a task's per-example loss) are the
two; the trainer owns the step, the replicas, accumulation and the loops.
"""


class Objective:
    """What one kind of training computes on a batch. Subclasses set the attributes and implement the methods.

    All sums are float32 scalars over the examples of one replica's (micro-)batch; summed over
    replicas, micro-batches and steps they give the metrics (`metrics`).
    """

    sum_keys = ()  # the keys `batch_sums` returns
    model_inputs = ()  # the batch entries the model reads

    def outputs(self, model, inputs, training):
        """The model's outputs the sums read."""
        return model(inputs, training=training)

    def global_sums(self, batch):
        """Local values every replica all-reduces before its forward pass: the loss's global denominators."""
        return {}

    def batch_sums(self, outputs, batch):
        raise NotImplementedError

    def replica_loss(self, sums, global_sums, global_batch_size):
        """This replica's share of the global-batch loss (the shares sum to the loss)."""
        raise NotImplementedError

    def metrics(self, totals):
        """{name: float} from sums accumulated over replicas and steps (NumPy or floats); "loss" among them."""
        raise NotImplementedError
