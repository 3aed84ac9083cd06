"""Fine-tuning (GLUE, SQuAD, RACE): a task's loss through the one trainer and training loop, under any strategy.

    strategy = create_strategy("mirrored")
    with strategy.scope():
        model = AlbertClassifier(starting_encoder(init_checkpoint), num_labels=2)
    result = finetune(model, arrays, task.example_losses,
                      FinetuningConfig(num_train_steps=800, train_batch_size=32, learning_rate=2e-5,
                                       num_warmup_steps=200),
                      checkpoint_dir, kind="classifier", evaluate=evaluate_fn, best_metric="accuracy",
                      best_dir=best_dir, strategy=strategy)

- `arrays`: dict of equal-length numpy arrays: the three encoder inputs (the
  model gets only those and the rest of its `TRAINING_INPUTS`, such as the
  SQuAD 2.0 head's gold start) plus what the loss reads; shuffled with `seed`,
  repeated as needed, in global batches of `train_batch_size`: every replica
  takes its slice of each, so N replicas (and K accumulation micro-batches)
  train on exactly the batches of one device (`albert_tf.training.trainer`).
  A resumed run skips the batches already seen.
- `example_losses(batch, outputs)` -> the float32 loss of each example; a step
  minimizes their mean over the global batch.
- Optimizer: the original fine-tuning AdamW (`create_optimizer(optimizer="adamw")`:
  no bias correction, weight decay 0.01 with LayerNorm/bias excluded, the
  all-reduced gradient's global norm clipped to 1.0), linear warmup then linear
  decay; under the mixed_float16 policy with dynamic loss scaling.
- The loop is pretraining's (`albert_tf.training.training_loop`): compiled loops
  of `iterations_per_loop` steps, a progress line and TensorBoard scalars per
  loop, the divergence check (`albert_tf.training.divergence`: a failing loop
  stops the run with `TrainingDivergedError` naming the last good checkpoint,
  and no checkpoint is saved, evaluated or kept as the best unless its weights
  are finite too), SIGTERM or Ctrl-C (SIGINT) saves and returns status 143 or 130.
- Checkpoints (model, optimizer, step) every `save_checkpoints_steps` and at the
  end in `checkpoint_dir` (with albert_tf.json and the SentencePiece model, so
  `load_model` reads it as a model directory); rerunning resumes from the latest.
- `evaluate(model) -> {metric: value}` runs at every scheduled checkpoint (every
  `save_checkpoints_steps` and the last step), inside the strategy's scope
  (history in checkpoint_dir/evaluations.json); the checkpoint with the highest
  `best_metric` is copied to `best_dir` as an albert_tf model directory (with the
  SentencePiece model when given) and its results returned. A checkpoint saved
  at a signal is no candidate (nor evaluated when the run resumes from it), so an
  interrupted run evaluates, and ships, what the uninterrupted one does. best/ is
  written before the history names it: a kill meanwhile leaves the earlier best/
  whole (a cut swap is undone on resume, `file_utils.recover_replacement`) and
  the checkpoint unrecorded, so the resumed run evaluates it again.
- Multi-worker: every worker runs the same steps and evaluations (they are
  collective); only the chief (`chief=True`) writes, the others write into a
  directory of their own that the caller discards.
- With `summary_dir`, TensorBoard summaries: the loss, learning rate, gradient
  norm and throughput per loop in SUMMARY_DIR/train, the evaluation metrics per
  checkpoint in SUMMARY_DIR/eval (`tensorboard --logdir OUTPUT_DIR`).
"""

import json
import os

import tensorflow as tf

from albert_tf.file_utils import atomic_output
from albert_tf.models.model_dir_format import checkpoints_newest_first, restore_newest_intact, write_metadata
from albert_tf.models.model_io import write_model_dir
from albert_tf.settings import SettingError
from albert_tf.text.vocabularies import write_vocabulary
from albert_tf.training import TrainingDivergedError
from albert_tf.training.random_state import restore_training_checkpoint, training_checkpoint
from albert_tf.training.summary_files import drop_summaries_after
from albert_tf.training.training_loop import LoopHooks, PreemptionFlag, run_training_loop, stops_every_step

EVALUATIONS_FILE = "evaluations.json"
SUMMARY_SUBDIRS = ("train", "eval")  # in summary_dir: the per-loop and the per-evaluation TensorBoard summaries


def finetune(model, arrays, example_losses, config, checkpoint_dir, kind, metadata=None, evaluate=None,
             best_metric=None, best_dir=None, vocabulary=None, variables=None, summary_dir=None, strategy=None,
             chief=True, restore_dir=None, objective=None, log=print):
    """Trains `model` (built inside `strategy.scope()`) in place; returns {"status": 0, or 143 after SIGTERM and
    130 after Ctrl-C (SIGINT), "signal": the signal's name or None, "step": the last step, "loss": the last
    loop's loss, "evaluations": [...], "best": {...} or None}.

    `config`: a `FinetuningConfig`; what trains is its schedule and distribution fields
    (`check_schedule`: steps, global batch, learning rate, warmup, checkpoints, seed, accumulation,
    XLA, loop length), whatever its task and paths say.

    `restore_dir`: where to resume from, when not `checkpoint_dir` (a worker that is not the chief
    resumes from the chief's checkpoints and saves into a directory of its own).

    `objective`: what a step computes (`albert_tf.tasks.objective.Objective`); None for the mean of
    `example_losses` over the global batch."""
    import keras

    from albert_tf.optimization import create_optimizer
    from albert_tf.tasks.finetuning_task import FinetuningObjective
    from albert_tf.training.trainer import Trainer

    settings = config.check_schedule()
    if evaluate is not None and not best_metric:
        raise ValueError("finetune: `evaluate` needs the `best_metric` that picks the best checkpoint")
    strategy = strategy or tf.distribute.get_strategy()
    metadata = metadata or {}
    with strategy.scope():
        optimizer = create_optimizer(learning_rate=settings.learning_rate, num_train_steps=settings.num_train_steps,
                                     num_warmup_steps=settings.num_warmup_steps, optimizer="adamw",
                                     weight_decay_rate=0.01, clipnorm=1.0, gradients_are_aggregated=True)
        if keras.mixed_precision.global_policy().name == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        objective = objective or FinetuningObjective(example_losses, model.TRAINING_INPUTS)
        trainer = Trainer(strategy, model, optimizer, objective, settings.train_batch_size,
                          settings.gradient_accumulation_steps, jit_compile=settings.jit_compile,
                          variables=variables, input_is_global=True)
    checkpoint = training_checkpoint(model, optimizer=optimizer, step=trainer.step)
    manager = tf.train.CheckpointManager(checkpoint, checkpoint_dir, max_to_keep=settings.keep_checkpoint_max,
                                         step_counter=trainer.step, checkpoint_name="ckpt")
    candidates = checkpoints_newest_first(restore_dir or checkpoint_dir)
    if candidates:
        # A damaged newest checkpoint falls back to the previous one; a full restore after a failed one
        # leaves nothing of it behind (every object must be matched).
        resumed = restore_newest_intact(
            lambda prefix: restore_training_checkpoint(prefix, model, optimizer=optimizer, step=trainer.step),
            candidates)
        log(f"Resuming from {resumed}", flush=True)
    write_metadata(checkpoint_dir, kind, model.albert_config, **metadata)
    # So that checkpoint_dir alone is a complete model directory: the vocabulary beside the weights.
    if vocabulary is not None:
        copy = os.path.join(checkpoint_dir, vocabulary.file_name)
        if not (os.path.exists(copy) and os.path.exists(vocabulary.source) and os.path.samefile(vocabulary.source,
                                                                                               copy)):
            write_vocabulary(vocabulary, copy)
    if summary_dir and chief:  # what a stopped run logged past its checkpoint is done again
        for name in SUMMARY_SUBDIRS:
            drop_summaries_after(os.path.join(summary_dir, name), int(trainer.step.numpy()))
    train_writer, eval_writer = (
        (tf.summary.create_file_writer(os.path.join(summary_dir, name)) for name in SUMMARY_SUBDIRS)
        if summary_dir and chief else (tf.summary.create_noop_writer(), tf.summary.create_noop_writer()))
    done = int(trainer.step.numpy())

    def scheduled(step):
        return step % settings.save_checkpoints_steps == 0 or step == settings.num_train_steps

    evaluations = _CheckpointEvaluations(model, evaluate, best_metric, best_dir, eval_writer, checkpoint_dir, kind,
                                         metadata, vocabulary, strategy, log, objective, scheduled,
                                         resumed_at=done, chief=chief)

    # A run stopped between saving a checkpoint and evaluating it evaluates it now. The workers of a
    # multi-worker run must agree without reading a file the chief may be writing: they evaluate it again.
    multi_worker = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
    evaluations.after_save(done, only_if_missing=not multi_worker)

    count = len(next(iter(arrays.values())))
    dataset = (tf.data.Dataset.from_tensor_slices(arrays).shuffle(count, seed=settings.seed).repeat()
               .batch(settings.train_batch_size, drop_remainder=True).skip(done).prefetch(tf.data.AUTOTUNE))

    def diverged(problem, steps, last_good):
        return TrainingDivergedError(f"{problem} in {steps}; stopped without saving", last_good=last_good)

    with PreemptionFlag(trainer.stop_requested if stops_every_step(strategy) else None) as preemption:
        status = run_training_loop(
            trainer, iter(dataset), manager, train_writer, preemption, settings.num_train_steps,
            save_checkpoints_steps=settings.save_checkpoints_steps, iterations_per_loop=settings.iterations_per_loop,
            max_seconds_per_loop=settings.max_seconds_per_loop, format_metrics=lambda m: f"loss {m['loss']:.4f}",
            diverged=diverged, examples_name="examples", rate_label="examples/s",
            hooks=evaluations, log=log)
    train_writer.flush()
    return {"status": status, "signal": preemption.signal_name, "step": int(trainer.step.numpy()),
            "loss": evaluations.last_loss, "evaluations": evaluations.history, "best": evaluations.best()}


class _CheckpointEvaluations(LoopHooks):
    """The loop's hooks for fine-tuning: evaluates every saved checkpoint and keeps the best in best_dir."""

    def __init__(self, model, evaluate, best_metric, best_dir, writer, checkpoint_dir, kind, metadata,
                 vocabulary, strategy, log, objective, scheduled, resumed_at=0, chief=True):
        self.model, self.evaluate, self.best_metric, self.best_dir = model, evaluate, best_metric, best_dir
        self.objective = objective  # turns the loop's sums into its loss
        self.writer, self.kind, self.metadata, self.vocabulary = writer, kind, metadata, vocabulary
        self.strategy, self.log = strategy, log
        self.scheduled = scheduled  # step -> whether it is an evaluation point of the run's schedule
        self.path = os.path.join(checkpoint_dir, EVALUATIONS_FILE)
        self.history = []
        self.last_loss = float("nan")
        if os.path.exists(self.path):
            with open(self.path) as f:
                self.history = json.load(f)
        if self.best_dir and self.evaluate is not None and chief:
            self._reconcile_best(resumed_at)

    def _reconcile_best(self, resumed_at):
        """Makes best/ and the history agree after a kill: a swap of best/ cut halfway is undone and what it
        left beside best/ removed (this run holds the output directory's lock: no other writer is there), and a
        history entry for the checkpoint the run resumes from that best/ does not hold (written before best/ by
        an earlier version) is dropped, so that the checkpoint is evaluated again and best/ follows."""
        from albert_tf.file_utils import recover_replacement
        from albert_tf.models.model_dir_format import read_metadata

        recover_replacement(self.best_dir, exclusive=True)
        best = self.best()
        if best is None or best["step"] != resumed_at:
            return
        try:
            kept = read_metadata(self.best_dir).get("best_step") if os.path.isdir(self.best_dir) else None
        except (OSError, ValueError):
            kept = None
        if kept != best["step"]:
            self.history = [r for r in self.history if r["step"] != best["step"]]

    def best(self):
        return max(self.history, key=lambda r: r[self.best_metric]) if self.history and self.best_metric else None

    def after_loop(self, step, num_steps, seconds, elapsed, totals):
        self.last_loss = self.objective.metrics(totals)["loss"]
        return None

    def after_save(self, step, only_if_missing=False):
        if self.evaluate is None or not step or (only_if_missing and step in {r["step"] for r in self.history}):
            return
        if not self.scheduled(step):  # saved at a signal: the uninterrupted run has no such checkpoint to pick
            return
        with self.strategy.scope():
            results = {"step": step, **self.evaluate(self.model)}
        self.log("eval at step {}: {}".format(step, "  ".join(
            f"{k} {v:.4f}" for k, v in results.items() if k != "step" and isinstance(v, float))), flush=True)
        # A checkpoint evaluated again (a resumed multi-worker run) replaces its earlier entry.
        self.history = [r for r in self.history if r["step"] != step] + [results]
        with self.writer.as_default(step=step):
            for name, value in results.items():
                if name != "step" and isinstance(value, (int, float)):
                    tf.summary.scalar(name, value)
        self.writer.flush()
        # best/ first, then the history that names it: a kill in between leaves this checkpoint unrecorded, and
        # the resumed run evaluates it again (the other order left best/ behind the history's best, for good).
        if self.best_dir and self.best() is results:
            files = {self.vocabulary.file_name: self.vocabulary.source} if self.vocabulary else None
            write_model_dir(self.model, self.best_dir, self.kind, overwrite=True, files=files, **self.metadata,
                            best_step=step, best_results=results)
        with atomic_output(self.path) as f:
            json.dump(self.history, f, indent=2)


def model_for_evaluation(best_dir, trained_model, init_checkpoint, kind, task_name=None):
    """The model a task CLI evaluates and predicts with: the best checkpoint (`best_dir`) when there is
    one, else the model just trained, else the fine-tuned `kind` model given as `init_checkpoint`
    (ValueError naming what it holds when it is not one, or not for `task_name`)."""
    from albert_tf.models.inference_model import open_for_inference
    from albert_tf.models.model_dir_format import exported_encoder_dir

    if best_dir and os.path.isdir(best_dir):
        return open_for_inference(best_dir, tokenizer=False).model
    if trained_model is not None:
        return trained_model
    if not init_checkpoint:
        raise SettingError(f"nothing to evaluate: pass <do_train> or a fine-tuned {kind} as <init_checkpoint>")
    if exported_encoder_dir(init_checkpoint):
        raise SettingError(f"{init_checkpoint}: holds an exported encoder; evaluating needs a {kind} "
                           "(fine-tune one with <do_train>)")
    opened = open_for_inference(init_checkpoint, tokenizer=False)
    loaded = opened.metadata
    if loaded["model"] != kind or (task_name and loaded.get("task_name", task_name) != task_name):
        held = " ".join(filter(None, (loaded.get("task_name"), repr(loaded["model"]))))
        wanted = " ".join(filter(None, (task_name, kind)))
        raise SettingError(f"{init_checkpoint}: holds a {held} model; evaluating needs a {wanted} "
                           "(fine-tune one with <do_train>)")
    return opened.model


def report_best(result, best_metric, best_dir, log=print):
    """Prints which checkpoint `finetune` kept as the best, if any."""
    if result["best"]:
        log(f"Best checkpoint: step {result['best']['step']} ({best_metric} {result['best'][best_metric]:.4f}), "
            f"kept in {best_dir}", flush=True)


def starting_encoder(init_checkpoint=None, albert_config=None, seed=12345):
    """The encoder fine-tuning starts from: a checkpoint's (any albert_tf kind, or an export's encoder),
    or a freshly initialized one of `albert_config` (a preset name or config JSON)."""
    import keras

    from albert_tf.models.model_io import load_encoder

    keras.utils.set_random_seed(seed)
    if init_checkpoint:
        return load_encoder(init_checkpoint)
    if not albert_config:
        raise SettingError("<init_checkpoint> (or, for a random start, <albert_config>) required")
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.networks.albert_encoder import AlbertEncoder

    return AlbertEncoder(AlbertConfig.from_name_or_path(albert_config))
