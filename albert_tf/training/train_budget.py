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
"""

import dataclasses

from albert_tf.settings import SettingError

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
