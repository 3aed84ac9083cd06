"""The one outer training loop: compiled loops of steps, progress, summaries, checkpoints, divergence, preemption.

Pretraining (`pretraining_run`) and fine-tuning (`finetuning`) run their
`Trainer` through `run_training_loop`; what differs between them comes in as
`LoopHooks` (held-out evaluation and the time budget for pretraining; evaluating
every checkpoint and keeping the best for fine-tuning).

Each pass runs one compiled loop of up to `iterations_per_loop` steps, ending
early at a checkpoint or hook boundary, after `max_seconds_per_loop` seconds or
on SIGTERM; then, on the host: the divergence check on the loop's loss and
gradient norm (`albert_tf.training.divergence`), one progress line with the
metrics since the last line, ETA and the run's clock, TensorBoard scalars in
the `writer`, the hooks, and a checkpoint every `save_checkpoints_steps` steps
and at the end (refused when the weights are no longer finite). The clock
continues across resumes (`training_time`). SIGTERM ends the running loop after
its current step, saves and returns PREEMPTED_EXIT_CODE.
"""

import concurrent.futures
import re
import signal
import threading
import time

import tensorflow as tf

from albert_tf.file_utils import check_held_directories
from albert_tf.progress import format_duration
from albert_tf.training.divergence import DivergenceGuard
from albert_tf.training.training_time import record_seconds, recorded_seconds

PREEMPTED_EXIT_CODE = 143  # 128 + SIGTERM, what schedulers expect of a terminated job


class PreemptionFlag:
    """Set by SIGTERM; the running loop stops after its current step, saves a checkpoint and exits.

    A TPU preemption notice leaves about 30 s, less than a loop of --iterations_per_loop
    steps may take, so the handler also sets the trainer's `stop_requested`, which the
    compiled loop reads before every step. (Multi-worker runs stop at loop boundaries:
    all workers must run the same steps.)
    """

    def __init__(self, stop_variable=None):
        self.raised = False
        self.stop_variable = stop_variable

    def install(self):
        signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum, frame):
        self.raised = True
        if self.stop_variable is not None:
            self.stop_variable.assign(True)


class LoopHooks:
    """What a run adds to the loop; every method may be left as it is."""

    def boundaries(self):
        """Step intervals a compiled loop must end at, beside the checkpoint interval."""
        return []

    def start(self, step):
        """Before the first loop of this process, at `step` (a resumed run's checkpoint step)."""

    def after_loop(self, step, num_steps, seconds, elapsed, totals):
        """After each loop (`totals`: its summed metric pieces); returns a new total step count or None."""
        return None

    def progress_suffix(self):
        """Appended to the progress line."""
        return ""

    def after_progress(self, step, total_steps, elapsed):
        """After the progress line and summaries of each loop."""

    def after_save(self, step):
        """After the checkpoint of `step` is saved."""


def call_interruptibly(function):
    """Runs `function` in a thread so that signal handlers run meanwhile, and returns its result.

    Python runs signal handlers in the main thread between bytecodes; a main thread
    blocked in a long TF call would hear SIGTERM only after the whole loop.
    """
    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        future = executor.submit(function)
        while True:
            try:
                return future.result(timeout=0.5)
            except concurrent.futures.TimeoutError:
                continue


def any_worker_preempted(strategy, preemption):
    """Whether any worker got SIGTERM: all must stop at the same step."""
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        flag = strategy.run(lambda: tf.constant(1.0 if preemption.raised else 0.0))
        return float(strategy.reduce(tf.distribute.ReduceOp.SUM, flag, axis=None)) > 0
    return preemption.raised


def stops_every_step(strategy):
    """Whether SIGTERM and the loop timer may end a compiled loop after any step: not under
    MultiWorkerMirroredStrategy, where every worker must run the same steps."""
    return not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def _loop_timer(trainer, seconds):
    """Ends the running compiled loop after `seconds` (through the flag the loop reads before each step),
    so that progress, summaries and the divergence check come at least that often."""
    trainer.stop_requested.assign(False)
    timer = threading.Timer(seconds, lambda: trainer.stop_requested.assign(True))
    timer.daemon = True
    timer.start()
    return timer


class InputProcessError(ChildProcessError):
    """A process of the documents reader (run_pretraining --input_processes) died or failed mid-run."""


# What the documents reader's builder processes raise (albert_tf.data.builder_processes), as TensorFlow
# passes it up through the input pipeline inside an UnknownError with a Python traceback.
_INPUT_PROCESS_FAILURE = re.compile(r"an instance builder process \(pid \d+\) [^\n]*|the instance builder failed in "
                                    r"process \d+")


def input_process_failure(error):
    """The line of a tf.errors.UnknownError that says a documents-reader process failed, or None."""
    match = _INPUT_PROCESS_FAILURE.search(getattr(error, "message", None) or str(error))
    return match.group(0).rstrip(":") if match else None


def save_checkpoint(manager, step):
    """Saves ckpt-`step`; a failed save (disk full, read-only, quota) stops the run with the reason, as does an
    output directory deleted or replaced meanwhile (file_utils.check_held_directories)."""
    check_held_directories()
    try:
        manager.save(checkpoint_number=step)
    except (tf.errors.OpError, OSError) as error:
        message = getattr(error, "message", None) or str(error)
        previous = manager.latest_checkpoint or "none"
        raise OSError(f"could not save the checkpoint of step {step} in {manager.directory} "
                      f"({message.strip().splitlines()[0]}). The previous checkpoint ({previous}) is intact: free "
                      "space or fix the directory, then rerun the same command to resume from it") from None


def run_training_loop(trainer, iterator, manager, writer, preemption, total_steps, *, save_checkpoints_steps,
                      iterations_per_loop, max_seconds_per_loop, format_metrics, diverged, read_error=None,
                      examples_name="sequences", rate_label="seq/s", hooks=None, log=print):
    """Trains from `trainer.step` to `total_steps`; returns 0, or PREEMPTED_EXIT_CODE after SIGTERM.

    Args:
      trainer: the `Trainer`; `iterator` the input it reads.
      manager: the `tf.train.CheckpointManager` (its directory gets training_time.json).
      writer: the TensorBoard writer of the training scalars.
      preemption: the installed `PreemptionFlag`.
      format_metrics: metrics -> the progress line's metric part.
      diverged: (problem, "step N" or "steps M-N", last good checkpoint) -> the exception to raise.
      read_error: (a read error of file input) -> the exception to raise instead; None: data in memory,
        whose errors are the model's and pass as they are.
      examples_name: what a batch row is, for the throughput's summary ("sequences" -> sequences_per_second);
        `rate_label` its unit in the progress line.
      hooks: `LoopHooks`.
    """
    hooks = hooks or LoopHooks()
    objective = trainer.objective
    step = int(trainer.step.numpy())
    if step >= total_steps:
        log(f"Already trained for {step} steps (of {total_steps}).", flush=True)
        return 0
    start_step, start_time = step, time.monotonic()
    # The run's clock continues from its checkpoint's reading (albert_tf.training.training_time).
    previous_seconds = recorded_seconds(manager.directory, step) or 0.0

    def elapsed_seconds():
        return previous_seconds + time.monotonic() - start_time

    hooks.start(step)
    loop_seconds = max_seconds_per_loop if stops_every_step(trainer.strategy) else 0
    preempted = False
    saved_step = step if step else None  # a resumed run starts from a checkpoint of its first step
    guard = DivergenceGuard(trainer.variables)

    def save_if_good(steps):
        problem = guard.weights_problem()
        if problem:
            raise diverged(problem, steps, manager.latest_checkpoint)
        save_checkpoint(manager, step)
        steps_kept = [int(prefix.rsplit("-", 1)[1]) for prefix in manager.checkpoints]
        record_seconds(manager.directory, step, elapsed_seconds(), steps_kept)
        hooks.after_save(step)

    while step < total_steps:
        intervals = [save_checkpoints_steps, *hooks.boundaries()]
        to_boundary = min(every - step % every for every in intervals)
        num_steps = min(iterations_per_loop, total_steps - step, to_boundary)
        loop_start = time.monotonic()
        timer = _loop_timer(trainer, loop_seconds) if loop_seconds and not preemption.raised else None
        try:
            totals, gradient_norm, learning_rate = call_interruptibly(
                lambda: trainer.train_loop(iterator, tf.constant(num_steps)))
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
            if read_error is None:
                raise
            raise read_error(error) from None
        except tf.errors.UnknownError as error:
            failure = input_process_failure(error)
            if failure is None:
                raise
            last = manager.latest_checkpoint or "none"
            raise InputProcessError(
                f"{failure}: the input pipeline cannot go on. The last checkpoint ({last}) is intact: rerun the same "
                "command to resume from it (with fewer input processes, or more memory, if the out-of-memory killer "
                "stopped the process)") from None
        finally:
            if timer is not None:
                timer.cancel()
        seconds = time.monotonic() - loop_start
        previous_step, step = step, int(trainer.step.numpy())
        num_steps = step - previous_step  # fewer than asked when SIGTERM or the loop timer stopped the loop
        if num_steps == 0:
            if preemption.raised:  # SIGTERM came before the loop's first step
                preempted = True
                break
            continue  # the timer ran out while the loop was being traced: the next call starts at once
        totals = {key: value.numpy() for key, value in totals.items()}
        metrics = objective.metrics(totals)
        steps = f"steps {step - num_steps + 1}-{step}" if num_steps > 1 else f"step {step}"
        problem = guard.loss_problem(metrics["loss"], float(gradient_norm))
        if problem:
            raise diverged(problem, steps, manager.latest_checkpoint)
        examples_per_second = num_steps * trainer.global_batch_size / max(seconds, 1e-9)
        elapsed = elapsed_seconds()
        new_total = hooks.after_loop(step, num_steps, seconds, elapsed, totals)
        if new_total is not None:
            total_steps = new_total
        eta = (time.monotonic() - start_time) / (step - start_step) * max(0, total_steps - step)
        log(f"step {step}/{total_steps}  {format_metrics(metrics)}  lr {float(learning_rate):.3g}  "
            f"grad_norm {float(gradient_norm):.3g}  {examples_per_second:.1f} {rate_label}  "
            f"elapsed {format_duration(elapsed)}  ETA {format_duration(eta)}{hooks.progress_suffix()}", flush=True)
        with writer.as_default(step=step):
            for name, value in metrics.items():
                tf.summary.scalar(name, value)
            tf.summary.scalar("learning_rate", float(learning_rate))
            tf.summary.scalar("gradient_norm", float(gradient_norm))
            tf.summary.scalar(f"{examples_name}_per_second", examples_per_second)
        writer.flush()
        hooks.after_progress(step, total_steps, elapsed_seconds())
        if step % save_checkpoints_steps == 0 or step >= total_steps:
            save_if_good(steps)
            saved_step = step
        if any_worker_preempted(trainer.strategy, preemption):
            preempted = True
            break
    if preempted:
        if saved_step != step:
            save_if_good(f"steps up to {step}")
        log(f"SIGTERM: saved a checkpoint at step {step}; rerun the same command to resume.", flush=True)
        return PREEMPTED_EXIT_CODE
    return 0
