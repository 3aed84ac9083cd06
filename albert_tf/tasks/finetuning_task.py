"""What a fine-tuning task supplies to the one fine-tuning front end (`albert_tf.training.finetuning_tool`).

A task (GLUE, SQuAD, RACE) is one `FinetuningTask` subclass: its own settings, its
reader, its model head, its loss, its metrics, the kind its fine-tuned models
are saved as, and what --do_predict writes. Everything else is the front end's
and the same for every task: the shared settings and their meaning, the starting
model and the SentencePiece model, resolving steps and warmup, the training loop
with best-checkpoint selection, TensorBoard summaries, eval_results.json and the
output layout (OUTPUT_DIR/checkpoints, OUTPUT_DIR/best).

The methods get the run's `FinetuningConfig` (`config`: the shared settings, the
task's own config, a dataclass of `config_class`, as `config.task`) and the
`AlbertTokenizer`. Tasks define no flags: the tools map their flags to the configs.
"""

import dataclasses
import math
import os
import weakref

from albert_tf.settings import SettingError
from albert_tf.text.packing import ENCODER_INPUTS
from albert_tf.tasks.objective import Objective


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A task's training defaults: each applies where its flag is left unset.

    Steps come from `num_train_epochs` passes over the training rows (what the
    task's `epoch_size` counts, and rounded as its `epoch_steps` does), or from
    `num_train_steps`, the original's count for the task's real training set of
    `train_rows` rows: other data (or another batch size) gets the epochs those
    steps make of it, so that 200 rows of SST-2 train for about 10 epochs as
    its 67,349 do, not for the 3,350 that its 20,935 steps would make of them.
    Warmup from `num_warmup_steps` (its share of `num_train_steps` when the
    steps differ), else `warmup_proportion` of the steps. A checkpoint, evaluated
    on dev for the best, every `save_checkpoints_steps` (the original's interval:
    run_glue.sh's 100, 200 for QNLI; RACE 100; SQuAD 5000), in steps whatever the
    data, as the original.
    """

    learning_rate: float
    train_batch_size: int
    num_train_steps: int | None = None
    num_train_epochs: float | None = None
    num_warmup_steps: int | None = None
    warmup_proportion: float | None = None
    train_rows: int | None = None  # with num_train_steps: the rows of the training set they were set for
    save_checkpoints_steps: int = 100

    def __post_init__(self):
        if (self.num_train_steps is None) == (self.num_train_epochs is None):
            raise ValueError("a Recipe sets exactly one of num_train_steps and num_train_epochs")
        if (self.num_warmup_steps is None) == (self.warmup_proportion is None):
            raise ValueError("a Recipe sets exactly one of num_warmup_steps and warmup_proportion")
        if (self.num_train_steps is None) != (self.train_rows is None):
            raise ValueError("a Recipe with num_train_steps sets train_rows, the training rows those steps were set "
                             "for (and one with num_train_epochs does not)")


class FinetuningTask:
    """One fine-tuning task. Subclasses set the class attributes and implement the methods that raise."""

    tool = ""  # the module users run, for messages: "albert_tf.run_classifier"
    model_kind = ""  # the fine-tuned model's kind (models.registry): "classifier", "span_labeler", ...
    unit = "Examples"  # what one training row is, for help texts and progress
    max_seq_length = 512  # --max_seq_length default
    keep_checkpoint_max = 5  # --keep_checkpoint_max default
    recipe_note = ""  # help text: where the training defaults come from
    do_eval_help = ""
    do_predict_help = ""
    config_class = None  # the dataclass of the task's own settings (`config.task`)

    def title(self, config):
        """The task in the tool's closing line: "GLUE mrpc", "SQuAD 1.1"."""
        raise NotImplementedError

    def validate(self, config):
        """Raises `albert_tf.settings.SettingError` naming the setting when the task's settings do not fit."""

    def resolve(self, config):
        """`config` (validated) with the task's settings that it leaves None and the starting model records
        filled in from that record (SQuAD 2.0's head); the default changes nothing."""
        return config

    def recipe(self, config) -> Recipe:
        raise NotImplementedError

    def epoch_size(self, train, config) -> tuple[int, str]:
        """(count, what it counts) of one pass over the training data `train` (read_train's arrays), for the
        step plan: its rows and `unit` by default."""
        return len(next(iter(train.values()))), self.unit

    def epoch_steps(self, size, epochs, batch_size) -> int:
        """Training steps of `epochs` passes over `size` (`epoch_size`'s count) at `batch_size`: rounded
        up, at least 1."""
        return max(1, math.ceil(size * epochs / batch_size))

    def checkpoint_steps(self, config, steps) -> int:
        """Steps between checkpoints (each evaluated on dev with do_eval) of a run of `steps` steps, where
        save_checkpoints_steps is unset: the recipe's interval by default."""
        return self.recipe(config).save_checkpoints_steps

    def kind(self, config) -> str:
        """The kind of model this run fine-tunes and evaluates: `model_kind`, unless the settings choose
        among several heads (SQuAD 2.0)."""
        return self.model_kind

    def metadata(self, config) -> dict:
        """Keys saved in the fine-tuned model's albert_tf.json beside its kind and config."""
        return {"max_seq_length": config.max_seq_length}

    def task_name(self, config):
        """The name a fine-tuned model must record to be evaluated by this task (None: any of the kind)."""
        return None

    def continues(self, metadata, config) -> bool:
        """Whether a starting model recording `metadata` (its albert_tf.json) is already this run's task
        model, which then trains on with its own head: one of `kind` fine-tuned for `task_name`."""
        return metadata["model"] == self.kind(config) and metadata.get("task_name") == self.task_name(config)

    def build_model(self, encoder, config):
        """The task model: `encoder` under a fresh head."""
        raise NotImplementedError

    def check_vocabulary(self, vocabulary):
        """SettingError when the task cannot read text through `vocabulary` (a `vocabularies.Vocabulary`); every
        kind by default."""

    def read_train(self, tokenizer, config) -> dict:
        """Training rows: equal-length numpy arrays, the encoder inputs plus what `loss` reads."""
        raise NotImplementedError

    def read_eval(self, tokenizer, config):
        """The evaluation data `evaluate` takes (read once, evaluated at every checkpoint)."""
        raise NotImplementedError

    def example_losses(self, batch, outputs):
        """float32 loss of each example of a training batch, [batch]; training minimizes their mean."""
        raise NotImplementedError

    def objective(self, model):
        """What training computes on a batch of `model`: the mean of `example_losses` over the global batch by
        default (`FinetuningObjective`); a task whose loss is a mean over other units (a tagger's words)
        returns its own."""
        return FinetuningObjective(self.example_losses, model.TRAINING_INPUTS)

    def loss(self, batch, outputs):
        """Scalar float32 loss of a training batch: the mean of `example_losses`."""
        import tensorflow as tf

        return tf.reduce_mean(self.example_losses(batch, outputs))

    def trainable_variables(self, model):
        """The variables fine-tuning updates (default: all trainable ones)."""
        return model.trainable_variables

    def evaluate(self, model, eval_data, config) -> dict:
        """{metric: float} of `model` on `eval_data` (run inside the strategy's scope: `predict_outputs`
        spreads the batches over its replicas)."""
        raise NotImplementedError

    def best_metric(self, config) -> str:
        """The `evaluate` metric whose highest value picks the best checkpoint."""
        raise NotImplementedError

    def evaluation_note(self, config):
        """One line on the last `evaluate`'s predictions when they answer every input alike (the majority class,
        only O tags: `prediction_notes`), else None."""
        return None

    def write_evaluation_report(self, evaluation, config, output_dir) -> list:
        """Writes files that show the final do_eval metrics `evaluation` into `output_dir` (named in
        `output_files`); returns their paths. The default writes none (eval_results.json has the metrics)."""
        return []

    def output_files(self, config) -> list:
        """Names of the files --do_predict writes into the output directory (replaced by --overwrite)."""
        return []

    def predict(self, model, tokenizer, config, output_dir):
        """Writes the predictions into `output_dir`; returns (metrics or None, [paths written])."""
        raise NotImplementedError

    def eval_results(self, evaluation, prediction):
        """eval_results.json's content from the --do_eval metrics and the --do_predict metrics (each may be
        None); None writes no file."""
        return evaluation

    def summary(self, metrics):
        """One line of metrics for the console."""
        return "  ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items()) if isinstance(v, float))


def check_data_files(config, check_name=lambda path: None):
    """Refuses (SettingError) a `train_file`, `eval_file` or `predict_file` of `config.task` that its do_ setting
    wants and is not given, or that is given and is no file; `check_name(path)` first refuses a name no reader
    takes. For the tasks that read one file per purpose (a user's own labelled or tagged files)."""
    for wanted, name in ((config.do_train, "train_file"), (config.do_eval, "eval_file"),
                         (config.do_predict, "predict_file")):
        path = getattr(config.task, name)
        if wanted and not path:
            raise SettingError(f"<{name}> required with <do_{name.split('_')[0]}>")
        if path:
            check_name(path)
            if not os.path.isfile(path):
                raise SettingError(f"<{name}>={path}: no such file")


class FinetuningObjective(Objective):
    """A task's per-example loss as the trainer's objective: each replica adds its examples' losses and
    divides by the global batch size, so the replicas' shares sum to the global batch's mean loss."""

    sum_keys = ("loss_sum", "examples")

    def __init__(self, example_losses, model_inputs=ENCODER_INPUTS):
        self.example_losses = example_losses  # (batch, outputs) -> [batch] float32
        self.model_inputs = tuple(model_inputs)  # the batch entries the model reads (a task model's TRAINING_INPUTS)

    def outputs(self, model, inputs, training):
        # albert_tf's task models compute for training only what the loss reads (the same values).
        head_outputs = getattr(model, "head_outputs", None)
        if training and head_outputs is not None:
            return head_outputs(inputs, training=True)
        # The model itself takes the encoder inputs alone (what else the head reads in training, such as the
        # labels, would only earn a Keras warning about the inputs' structure).
        return model({name: inputs[name] for name in ENCODER_INPUTS}, training=training)

    def batch_sums(self, outputs, batch):
        import tensorflow as tf

        losses = self.example_losses(batch, outputs)
        return {"loss_sum": tf.reduce_sum(losses), "examples": tf.cast(tf.size(losses), tf.float32)}

    def replica_loss(self, sums, global_sums, global_batch_size):
        return sums["loss_sum"] / global_batch_size

    def metrics(self, totals):
        return {"loss": float(totals["loss_sum"]) / max(float(totals["examples"]), 1e-9)}


# model -> {(strategy, names, global batch): its traced batch function}: a run evaluates the same model at every
# checkpoint, and a function made anew for each evaluation is traced anew (seconds of a small run's evaluation,
# and TensorFlow warns of retracing). Weak keys: a model no longer used elsewhere takes its functions with it.
_BATCH_FUNCTIONS = weakref.WeakKeyDictionary()


def predict_outputs(model, arrays, batch_size, names=("logits",), progress=None):
    """{name: float32 numpy array over all rows of `arrays`} of the model's outputs `names`, in row order.
    `progress`: a label; the rows done are then shown as they go (`albert_tf.progress`), for sets whose
    windows take minutes (CMRC 2018's dev set: 22,968 windows).

    Under a distribution strategy's scope (`tf.distribute.get_strategy()`) each batch of
    `batch_size` rows (rounded up to a multiple of the replicas) is split over all replicas,
    on every worker alike, and their outputs gathered back in order; rows padding the last
    batch are dropped. Every worker of a multi-worker run must call it (it is collective)
    and gets all the outputs. The batch function is traced once per model, strategy, outputs
    and batch size (and input length), and reused by every later call.
    """
    import numpy as np
    import tensorflow as tf

    strategy = tf.distribute.get_strategy()
    replicas = strategy.num_replicas_in_sync
    global_batch = -(-batch_size // replicas) * replicas
    inputs = {name: np.asarray(arrays[name]) for name in ENCODER_INPUTS}
    count = len(inputs["input_word_ids"])
    padded = -(-count // global_batch) * global_batch
    # Padding rows attend to nothing (input_mask 0): finite outputs, dropped below.
    inputs = {name: np.concatenate([value, np.zeros((padded - count, *value.shape[1:]), value.dtype)])
              for name, value in inputs.items()}

    functions = _BATCH_FUNCTIONS.setdefault(model, {})
    key = (strategy, tuple(names), global_batch)
    if key not in functions:
        functions[key] = _batch_function(weakref.ref(model), strategy, tuple(names))
    batch_outputs = functions[key]
    meter = None
    if progress:
        from albert_tf.progress import Progress

        meter = Progress(count, lambda done, elapsed: f"{progress}: {done}/{count} windows "
                                                      f"({done / max(elapsed, 1e-9):,.0f}/s)")
    collected = {name: [] for name in names}
    for begin in range(0, padded, global_batch):
        outputs = batch_outputs({name: tf.constant(value[begin : begin + global_batch])
                                 for name, value in inputs.items()})
        for name in names:
            collected[name].append(outputs[name].numpy())
        if meter:
            meter.update(min(begin + global_batch, count))
    if meter:
        meter.finish(count)
    return {name: np.concatenate(parts)[:count] for name, parts in collected.items()}


def _batch_function(model_ref, strategy, names):
    """The tf.function of one global batch's outputs `names` over `strategy`'s replicas. It holds the model
    weakly (`model_ref`): a strong reference from the cache's value would keep its weak key alive for ever."""
    import tensorflow as tf

    replicas = strategy.num_replicas_in_sync

    def replica_outputs(batch):
        outputs = model_ref()(batch, training=False)
        return {name: tf.cast(outputs[name], tf.float32) for name in names}

    @tf.function
    def batch_outputs(batch):
        if replicas == 1:
            return strategy.run(replica_outputs, args=(batch,))
        parts = strategy.experimental_distribute_values_from_function(
            lambda context: {name: tf.split(value, replicas)[context.replica_id_in_sync_group]
                             for name, value in batch.items()})
        per_replica = strategy.run(replica_outputs, args=(parts,))
        if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):  # the other workers' rows too
            return {name: strategy.gather(per_replica[name], axis=0) for name in names}
        # One worker holds every replica's rows, in replica order.
        return {name: tf.concat(strategy.experimental_local_results(per_replica[name]), axis=0) for name in names}

    return batch_outputs


def predict_logits(model, arrays, batch_size):
    """The model's "logits" over the encoder inputs of `arrays`, batched (numpy; see `predict_outputs`)."""
    return predict_outputs(model, arrays, batch_size)["logits"]
