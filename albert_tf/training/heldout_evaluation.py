"""Pretraining's evaluation on the held-out records: every N steps while training, and once at the end.

With `eval_every_steps` (`HeldoutEvaluation`), every N steps the held-out
records are evaluated (at most `max_eval_steps` batches), printed beside the
progress line with the learning phase they show
(albert_tf.training.learning_phase), written to TensorBoard's eval/ and
appended to OUTPUT_DIR/eval_history.jsonl (`EVAL_HISTORY_FILE`). A resumed run
keeps the history up to its step and judges its phase from it, as the
uninterrupted run does. With `do_eval`, `evaluate_once` evaluates the model as
the run leaves it and writes OUTPUT_DIR/eval_results.txt.

Both read the same records the same way (`eval_dataset`) and print the metrics
as the training progress line does (`format_metrics`). When the run starts,
`check_heldout_size` says in one line when they would read too few sequences
for their figures to be more than noise (MIN_HELDOUT_SEQUENCES).
"""

import json
import os
import time

import tensorflow as tf

from albert_tf.data import pretraining_dataset as data
from albert_tf.file_utils import write_text_atomically
from albert_tf.settings import SettingError
from albert_tf.tasks.pretraining_losses import SUM_KEYS, metrics_from_sums
from albert_tf.training.learning_phase import TREND_EVALUATIONS, Phase, learning_phase
from albert_tf.training.summary_files import logged_steps

EVAL_HISTORY_FILE = "eval_history.jsonl"
# Below this many sequences an evaluation's figures are noise beside what they are read for: an accuracy over n
# sequences has a standard error of up to 0.5 / sqrt(n), 0.025 at 400, a quarter of the SOP gap that marks
# memorizing (learning_phase.MEMORIZING_SOP_GAP, 0.10).
MIN_HELDOUT_SEQUENCES = 400


def format_metrics(metrics):
    """Pretraining's metrics (`metrics_from_sums`) in one line: the progress lines' and the evaluations'."""
    return (f"loss {metrics['masked_lm_loss'] + metrics['sentence_order_loss']:.4f}  "
            f"mlm_loss {metrics['masked_lm_loss']:.4f}  mlm_acc {metrics['masked_lm_accuracy']:.4f} "
            f"(at [MASK] {metrics['masked_lm_accuracy_at_mask']:.4f})  "
            f"sop_loss {metrics['sentence_order_loss']:.4f}  sop_acc {metrics['sentence_order_accuracy']:.4f}")


def eval_dataset(settings, strategy, eval_files):
    """The held-out records, distributed over the replicas (the same records on every pass)."""
    def eval_dataset_fn(input_context):
        per_replica = input_context.get_per_replica_batch_size(settings.eval_batch_size)
        return data.make_pretraining_dataset(eval_files, per_replica, settings.max_seq_length,
                                             settings.max_predictions_per_seq, is_training=False,
                                             input_context=input_context)

    if settings.eval_batch_size % strategy.num_replicas_in_sync:
        raise SettingError(f"<eval_batch_size>={settings.eval_batch_size} must be divisible by the number of replicas "
                         f"({strategy.num_replicas_in_sync})")
    return strategy.distribute_datasets_from_function(eval_dataset_fn)


def check_heldout_size(settings, eval_files):
    """Refuses a held-out set of less than one batch; says in one line what the evaluations' figures are worth
    when they would read fewer than MIN_HELDOUT_SEQUENCES sequences."""
    batch, limit = settings.eval_batch_size, settings.max_eval_steps * settings.eval_batch_size
    count = data.count_records(eval_files, MIN_HELDOUT_SEQUENCES)
    evaluated = min(count, limit) // batch * batch  # full batches only
    if evaluated == 0:
        raise SettingError(f"{settings.eval_input_file}: fewer than <eval_batch_size>={batch} records")
    if evaluated >= MIN_HELDOUT_SEQUENCES:
        return
    noise = f"an accuracy over {evaluated} sequences has a standard error of up to {0.5 / evaluated ** 0.5:.2f}"
    if count < MIN_HELDOUT_SEQUENCES:
        print(f"Warning: the held-out set {settings.eval_input_file} holds {count} instances, {evaluated} evaluated "
              f"(full batches of {batch}): below about {MIN_HELDOUT_SEQUENCES} its figures are noise ({noise}); hold "
              "out more documents (create_pretraining_data --heldout_every).", flush=True)
    else:
        print(f"Warning: the held-out evaluation reads {evaluated} sequences (max_eval_steps={settings.max_eval_steps} "
              f"batches of {batch}): below about {MIN_HELDOUT_SEQUENCES} its figures are noise ({noise}); raise "
              "max_eval_steps.", flush=True)


class HeldoutEvaluation:
    """Evaluates the held-out records every `eval_every_steps` during training, and says the learning phase.

    Each evaluation reads the first `max_eval_steps` batches of `eval_batch_size` (the same
    records every time), prints one line, writes TensorBoard's eval/ and appends a line to
    OUTPUT_DIR/eval_history.jsonl: step, elapsed seconds, the held-out metrics, the training
    metrics since the previous evaluation, the phase and its reason.
    """

    def __init__(self, settings, trainer, strategy, eval_files, output_dir, chief):
        self.settings = settings
        self.trainer = trainer
        self.every = settings.eval_every_steps
        self.chief = chief
        self.dataset = eval_dataset(settings, strategy, eval_files)
        self.level = data.frequent_piece_level(eval_files, batch_size=settings.eval_batch_size,
                                               max_batches=settings.max_eval_steps)
        self.history_path = os.path.join(output_dir, EVAL_HISTORY_FILE)
        self.writer = (tf.summary.create_file_writer(os.path.join(output_dir, "eval")) if chief
                       else tf.summary.create_noop_writer())
        self.training_totals = None
        self.phase = None
        self.last_seconds = 0.0
        self.last_step = None
        self.history = []  # the lines of eval_history.jsonl (the chief writes it)
        self.earlier_heldout = []  # the last TREND_EVALUATIONS evaluations' held-out figures, oldest first

    def start(self, step):
        """Keeps the history lines of steps up to `step` (a run resumed from an earlier checkpoint redoes the rest),
        and takes the held-out trend and the phase up from them, so that a resumed run judges its phase as the
        uninterrupted run does."""
        self.history = []
        if tf.io.gfile.exists(self.history_path):
            with tf.io.gfile.GFile(self.history_path) as f:
                self.history = [line for line in f if line.strip() and json.loads(line)["step"] <= step]
            if self.chief:
                self._write_history()
        records = [json.loads(line) for line in self.history]
        self.earlier_heldout = [record["heldout"] for record in records][-TREND_EVALUATIONS:]
        self.phase = Phase(records[-1]["phase"], records[-1]["phase_reason"]) if records else None

    def _write_history(self):
        # Rewritten whole, not appended: Cloud Storage files cannot be appended to. Locally through a temporary of
        # a unique name (a fixed one could be a planted link), remotely as one object.
        write_text_atomically(self.history_path, "".join(self.history))

    def add_training(self, totals):
        if self.training_totals is None:
            self.training_totals = {key: 0.0 for key in SUM_KEYS}
        for key in SUM_KEYS:
            self.training_totals[key] += float(totals[key])

    def due(self, step, total_steps):
        return step != self.last_step and (step % self.every == 0 or step >= total_steps)

    def run(self, step, elapsed):
        start = time.monotonic()
        totals = self.trainer.evaluate(self.dataset, max_steps=self.settings.max_eval_steps)
        if totals["sequences"] == 0:
            raise SettingError(f"{self.settings.eval_input_file}: fewer than <eval_batch_size>="
                             f"{self.settings.eval_batch_size} records")
        heldout = metrics_from_sums(totals)
        heldout["loss"] = heldout["masked_lm_loss"] + heldout["sentence_order_loss"]
        training = metrics_from_sums(self.training_totals) if self.training_totals else None
        self.training_totals = None
        self.phase = learning_phase(heldout, training, self.level, self.earlier_heldout,
                                    self.phase.name if self.phase else None)
        self.earlier_heldout = (self.earlier_heldout + [heldout])[-TREND_EVALUATIONS:]
        self.last_seconds = time.monotonic() - start
        self.last_step = step
        print(f"eval step {step}  held-out {format_metrics(heldout)}  phase: {self.phase.name} "
              f"({self.phase.reason})", flush=True)
        with self.writer.as_default(step=step):
            for name, value in heldout.items():
                tf.summary.scalar(name, value)
            tf.summary.scalar("phase", self.phase.index)
            tf.summary.scalar("frequent_piece_level", self.level)
            tf.summary.text("phase_reason", f"{self.phase.name}: {self.phase.reason}")  # "phase" is the number
        self.writer.flush()
        if self.chief:
            record = {"step": step, "elapsed_seconds": round(elapsed, 1), "heldout": heldout, "training": training,
                      "phase": self.phase.name, "phase_reason": self.phase.reason,
                      "frequent_piece_level": self.level}
            self.history.append(json.dumps(record, sort_keys=True) + "\n")
            self._write_history()


def evaluate_once(settings, trainer, strategy, eval_files, output_dir, chief):
    """`do_eval`: the held-out metrics of the model at its current step, printed and written to
    OUTPUT_DIR/eval_results.txt and TensorBoard's eval/; returns them."""
    dataset = eval_dataset(settings, strategy, eval_files)
    totals = trainer.evaluate(dataset, max_steps=settings.max_eval_steps)
    if totals["sequences"] == 0:
        raise SettingError(f"{settings.eval_input_file}: fewer than <eval_batch_size>={settings.eval_batch_size} "
                           "records")
    metrics = metrics_from_sums(totals)
    metrics["loss"] = metrics["masked_lm_loss"] + metrics["sentence_order_loss"]
    step = int(trainer.step.numpy())
    print(f"eval at step {step} on {int(totals['sequences'])} sequences: {format_metrics(metrics)}", flush=True)
    if chief:
        with tf.io.gfile.GFile(os.path.join(output_dir, "eval_results.txt"), "w") as f:
            for name in sorted(metrics):
                f.write(f"{name} = {metrics[name]}\n")
            f.write(f"global_step = {step}\n")
        eval_dir = os.path.join(output_dir, "eval")
        # Unless the held-out evaluation every eval_every_steps, or an earlier run's do_eval, logged this step
        # (the same model on the same records): TensorBoard would show it twice.
        if step not in logged_steps(eval_dir, "masked_lm_loss"):
            with tf.summary.create_file_writer(eval_dir).as_default(step=step):
                for name, value in metrics.items():
                    tf.summary.scalar(name, value)
    return metrics
