"""A wall-clock training budget turned into a step count and a decay schedule that ends with it.

run_pretraining --train_budget_hours=H trains on the schedule of --num_train_steps
(an upper bound) while it measures its step time, over at least
CALIBRATION_STEPS steps after the first loop (which includes compilation). It
then fixes the step count T so that the run ends at the budget, counting the
measured cost of the periodic evaluations, sets the learning-rate schedule's T
to it (the decay reaches 0 at the budget), and records the plan in
run_config.json. A resumed run reads the plan and keeps the same T: its
schedule is the one the run started with, however fast the machine that
resumes it. A run killed before it measured its step time measures again.

`plan_budget` is the arithmetic; `BudgetKeeper` does the above in the training
loop (albert_tf.training.pretraining_run's hooks), and `recorded_budget_plan`
reads back the plan a resumed run keeps.
"""

import dataclasses
import json
import os

import tensorflow as tf

from albert_tf.file_utils import write_json
from albert_tf.settings import SettingError
from albert_tf.training.pretraining_record import RUN_CONFIG_FILE

CALIBRATION_STEPS = 20


@dataclasses.dataclass(frozen=True)
class BudgetPlan:
    hours: float
    num_train_steps: int
    step_seconds: float
    eval_seconds: float  # one evaluation (0 without periodic evaluation)
    eval_every_steps: int
    planned_at_step: int
    elapsed_seconds_at_plan: float

    def to_json(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, values):
        return cls(**values)

    def describe(self):
        evaluations = (f" + {self.eval_seconds:.1f} s per evaluation every {self.eval_every_steps} steps"
                       if self.eval_every_steps else "")
        return (f"Time budget {self.hours:g} h: {self.step_seconds * 1000:.0f} ms/step measured{evaluations} -> "
                f"{self.num_train_steps:,} steps in all; the learning rate decays to 0 there (plan recorded in "
                "run_config.json, kept on resume).")


class StepTimer:
    """Seconds per step, measured over the loops after the first (the first one compiles)."""

    def __init__(self):
        self.loops = 0
        self.steps = 0
        self.seconds = 0.0

    def add(self, steps, seconds):
        self.loops += 1
        if self.loops > 1:
            self.steps += steps
            self.seconds += seconds

    @property
    def ready(self):
        return self.steps >= CALIBRATION_STEPS

    @property
    def step_seconds(self):
        return self.seconds / self.steps


def plan_budget(hours, elapsed_seconds, step, step_seconds, eval_seconds, eval_every_steps, max_steps,
                num_warmup_steps):
    """The BudgetPlan for the rest of a run that has spent `elapsed_seconds` and is at `step`."""
    per_step = step_seconds + (eval_seconds / eval_every_steps if eval_every_steps else 0.0)
    remaining = max(0.0, hours * 3600.0 - elapsed_seconds)
    steps = min(max_steps, step + int(remaining // per_step))
    if steps < max(num_warmup_steps, step, 1):
        raise SettingError(f"<train_budget_hours>={hours:g} allows {steps} steps at the measured {per_step:.3f} s "
                           f"per step, fewer than <num_warmup_steps>={num_warmup_steps} or the {step} steps already "
                           "done; give a longer budget or fewer warmup steps")
    return BudgetPlan(hours, steps, step_seconds, eval_seconds, eval_every_steps, step, elapsed_seconds)


class BudgetKeeper:
    """Measures the step time, then fixes the step count and the schedule to end at --train_budget_hours."""

    def __init__(self, settings, schedule_steps, output_dir, chief, plan, strategy=None):
        self.settings = settings
        self.strategy = strategy
        self.schedule_steps = schedule_steps  # the variable the learning-rate schedule reads its T from
        self.path = os.path.join(output_dir, RUN_CONFIG_FILE)
        self.chief = chief
        self.plan = plan
        self.timer = StepTimer()

    def total_steps(self, default):
        return self.plan.num_train_steps if self.plan else default

    def after_loop(self, step, num_steps, seconds, elapsed, heldout):
        """Returns the plan once, when the step time has just been measured."""
        if self.plan:
            return None
        self.timer.add(num_steps, seconds)
        if not self.timer.ready:
            return None
        eval_seconds = 0.0
        if heldout:  # its cost counts in the budget: measure one evaluation now
            heldout.run(step, elapsed)
            eval_seconds = heldout.last_seconds
            elapsed += eval_seconds
        settings = self.settings
        # Every worker must plan the same step count: they plan from the workers' mean figures.
        step_seconds, eval_seconds, elapsed = (_workers_mean(self.strategy, value)
                                               for value in (self.timer.step_seconds, eval_seconds, elapsed))
        self.plan = plan_budget(settings.train_budget_hours, elapsed, step, step_seconds, eval_seconds,
                                settings.eval_every_steps, settings.num_train_steps, settings.num_warmup_steps)
        self.schedule_steps.assign(self.plan.num_train_steps)
        if self.chief:
            with tf.io.gfile.GFile(self.path) as f:
                run_config = json.load(f)
            run_config["train_budget"] = self.plan.to_json()
            write_json(self.path, run_config)
        print(self.plan.describe(), flush=True)
        return self.plan


def _workers_mean(strategy, value):
    """The mean of every worker's `value` under MultiWorkerMirroredStrategy (a collective: every worker gets
    the same number); else `value`."""
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        per_replica = strategy.run(lambda: tf.constant(float(value), tf.float64))
        return float(strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None))
    return value


def recorded_budget_plan(output_dir):
    """The budget plan a run that was interrupted after measuring its step time recorded, or None."""
    path = os.path.join(output_dir, RUN_CONFIG_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        recorded = json.load(f).get("train_budget")
    return BudgetPlan.from_json(recorded) if recorded else None
