"""The one outer training loop: compiled loops of steps, progress, summaries, checkpoints, divergence, preemption.

Pretraining (`pretraining_run`) and fine-tuning (`finetuning`) run their
`Trainer` through `run_training_loop`; what differs between them comes in as
`LoopHooks` (held-out evaluation and the time budget for pretraining; evaluating
every checkpoint and keeping the best for fine-tuning).

Each pass runs one compiled loop of up to `iterations_per_loop` steps, ending
early at a checkpoint or hook boundary, after `max_seconds_per_loop` seconds or
on SIGTERM or SIGINT; then, on the host: the divergence check on the loop's loss and
gradient norm (`albert_tf.training.divergence`), one progress line with the
metrics since the last line, ETA and the run's clock, TensorBoard scalars in
the `writer`, the hooks, and a checkpoint every `save_checkpoints_steps` steps
and at the end (refused when the weights are no longer finite). The clock
continues across resumes (`training_time`). SIGTERM or SIGINT (Ctrl-C) ends the
running loop after its current step, saves and returns 128 + the signal's number
(143, 130), as a shell reports a process the signal stopped; a second Ctrl-C
stops at once, without saving.
"""

import concurrent.futures
import os
import re
import signal
import threading
import time

import tensorflow as tf

from albert_tf.cli import tf_error_reason
from albert_tf.file_utils import check_held_directories
from albert_tf.progress import format_duration
from albert_tf.training.divergence import DivergenceGuard
from albert_tf.training.training_time import record_seconds, recorded_seconds

# The signals that stop a run after its current step with a checkpoint: a scheduler's preemption notice
# and Ctrl-C. The exit status then is 128 + the signal's number, what schedulers expect of a stopped job.
STOPPING_SIGNALS = (signal.SIGTERM, signal.SIGINT)
PREEMPTED_EXIT_CODE = 128 + signal.SIGTERM


class PreemptionFlag:
    """While its `with` block runs, SIGTERM and SIGINT (Ctrl-C) stop the running loop after its current step;
    the loop saves a checkpoint and returns `exit_code`. The handlers in place before come back afterwards,
    so Ctrl-C interrupts what follows (a final evaluation, a notebook's next cell) as usual.

    A TPU preemption notice leaves about 30 s, less than a loop of --iterations_per_loop
    steps may take, so the handler also sets the trainer's `stop_requested`, which the
    compiled loop reads before every step. (Multi-worker runs stop at loop boundaries:
    all workers must run the same steps.) A second Ctrl-C ends the process at once, without
    saving: the way out when the step, an evaluation or the save itself takes too long.
    """

    def __init__(self, stop_variable=None):
        self.signal_number = None
        self.stop_variable = stop_variable
        self._previous = {}

    @property
    def raised(self):
        return self.signal_number is not None

    @property
    def signal_name(self):
        return signal.Signals(self.signal_number).name if self.raised else None

    @property
    def exit_code(self):
        return 128 + self.signal_number if self.raised else 0

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():  # Python runs handlers in the main thread only
            self._previous = {number: signal.signal(number, self._handle) for number in STOPPING_SIGNALS}
        return self

    def __exit__(self, *exc_info):
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}

    def _handle(self, signum, frame):
        if signum == signal.SIGINT and self.signal_number == signal.SIGINT:
            os.write(2, b"\nSIGINT again: stopped at once, without saving this step (the last checkpoint stays).\n")
            os._exit(128 + signum)
        if not self.raised:
            self.signal_number = signum
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
    blocked in a long TF call would hear SIGTERM or Ctrl-C only after the whole loop.
    """
    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        future = executor.submit(function)
        while True:
            try:
                return future.result(timeout=0.5)
            except concurrent.futures.TimeoutError:
                continue


def any_worker_preempted(strategy, preemption):
    """Whether any worker got SIGTERM or SIGINT: all must stop at the same step."""
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        flag = strategy.run(lambda: tf.constant(1.0 if preemption.raised else 0.0))
        return float(strategy.reduce(tf.distribute.ReduceOp.SUM, flag, axis=None)) > 0
    return preemption.raised


def stops_every_step(strategy):
    """Whether a stopping signal and the loop timer may end a compiled loop after any step: not under
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


# A save writes its shards into `ckpt-N_temp/` and then merges them into ckpt-N's files; a save that failed or
# was killed leaves that directory behind. (Both training loops name their checkpoints `ckpt`.)
_SAVE_STAGING = re.compile(r"/ckpt-\d+_temp$")
# The operating system's words for why a save could not write, and what to do about each.
_SAVE_ADVICE = {
    "File too large": "raise the file-size limit (ulimit -f) above the checkpoint's size",
    "No space left on device": "free space on the disk",
    "Disk quota exceeded": "free space within the quota, or raise it",
    "Permission denied": "make the directory writable",
    "Read-only file system": "choose a writable output directory",
}


def remove_save_staging(directory):
    """Removes the `ckpt-N_temp` directories that failed or killed checkpoint saves left in `directory`."""
    for path in tf.io.gfile.glob(os.path.join(directory, "ckpt-*_temp")):
        if _SAVE_STAGING.search(path) and tf.io.gfile.isdir(path):
            tf.io.gfile.rmtree(path)


def save_checkpoint(manager, step):
    """Saves ckpt-`step`; a failed save (disk full, file-size limit, read-only, quota) stops the run with one line
    that names the directory, the cause and what is left, as does an output directory deleted or replaced
    meanwhile (file_utils.check_held_directories)."""
    check_held_directories()
    try:
        manager.save(checkpoint_number=step)
    except (tf.errors.OpError, OSError) as error:
        raise OSError(_save_failure(manager, step, error)) from None


def _save_failure(manager, step, error):
    check_held_directories()  # a directory deleted or replaced meanwhile is the news, not the write that failed
    directory = manager.directory
    if not tf.io.gfile.isdir(directory):
        return (f"could not save the checkpoint of step {step}: {directory} is gone (deleted while the run was "
                "writing it), and its checkpoints with it; nothing of this run is saved. Rerun the command to start "
                "again in a directory that stays")
    remove_save_staging(directory)
    # TensorFlow's reason reads "PATH; CAUSE" (the path of a staging file inside ckpt-N_temp/).
    cause = tf_error_reason(error).rsplit("; ", 1)[-1]
    advice = _SAVE_ADVICE.get(cause, "free space or fix the directory")
    previous = intact_latest_checkpoint(manager)
    if previous:
        left = (f"The previous checkpoint ({previous}) is intact: {advice}, then rerun the same command to resume "
                "from it")
    else:
        left = f"No earlier checkpoint is there: {advice}, then rerun the same command to start again"
    return f"could not save the checkpoint of step {step} in {directory} ({cause}). {left}"


def intact_latest_checkpoint(manager):
    """The manager's newest checkpoint while its files are there, else None: the manager remembers what it
    saved, whatever happened to the directory since (emptied, deleted)."""
    latest = manager.latest_checkpoint
    return latest if latest and tf.io.gfile.exists(latest + ".index") else None


def input_process_error(manager, failure):
    """The InputProcessError for a documents-reader process that failed (`failure`, its line), which says what
    is left to resume from."""
    advice = "with fewer input processes, or more memory, if the out-of-memory killer stopped the process"
    last = intact_latest_checkpoint(manager)
    if last:
        left = f"The last checkpoint ({last}) is intact: rerun the same command to resume from it ({advice})"
    elif not tf.io.gfile.isdir(manager.directory):
        left = (f"{manager.directory} is gone (deleted while the run was writing it), and its checkpoints with it: "
                f"rerun the command to start again in a directory that stays ({advice})")
    else:
        left = f"No checkpoint of this run is there: rerun the same command to start again ({advice})"
    return InputProcessError(f"{failure}: the input pipeline cannot go on. {left}")


def run_training_loop(trainer, iterator, manager, writer, preemption, total_steps, *, save_checkpoints_steps,
                      iterations_per_loop, max_seconds_per_loop, format_metrics, diverged, read_error=None,
                      examples_name="sequences", rate_label="seq/s", hooks=None, log=print):
    """Trains from `trainer.step` to `total_steps`; returns 0, or after SIGTERM or SIGINT the exit status
    `preemption.exit_code` (143, 130; PREEMPTED_EXIT_CODE on a worker stopped because another got one).

    Args:
      trainer: the `Trainer`; `iterator` the input it reads.
      manager: the `tf.train.CheckpointManager` (its directory gets training_time.json).
      writer: the TensorBoard writer of the training scalars.
      preemption: the `PreemptionFlag`, its `with` block entered.
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
    remove_save_staging(manager.directory)  # a killed run's, or one whose save failed before it stopped
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
            raise input_process_error(manager, failure) from None
        finally:
            if timer is not None:
                timer.cancel()
        seconds = time.monotonic() - loop_start
        previous_step, step = step, int(trainer.step.numpy())
        num_steps = step - previous_step  # fewer than asked when a signal or the loop timer stopped the loop
        if num_steps == 0:
            if preemption.raised:  # the signal came before the loop's first step
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
        log(f"{preemption.signal_name or 'Another worker stopped'}: saved a checkpoint at step {step}; rerun the same "
            "command to resume.", flush=True)
        return preemption.exit_code or PREEMPTED_EXIT_CODE
    return 0
