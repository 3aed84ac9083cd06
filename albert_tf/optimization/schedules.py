"""The original ALBERT/BERT learning-rate schedule: linear warmup, then polynomial decay.

    decayed(step) = (lr - end_lr) * (1 - min(step, T) / T) ** power + end_lr
    lr(step)      = lr * step / W      if step < W   (linear warmup)
                  = decayed(step)      otherwise

As in the original `optimization.py`, the decay is measured from step 0, not
from the end of warmup: at step W the rate is lr * (1 - W / T), not lr. With the
paper's recipe (W = 3125, T = 125k) that is 2.5% below the peak.

T may be a variable (an int tf.Variable): a run with a time budget
(run_pretraining --train_budget_hours) sets it once its step time is measured,
without retracing the compiled training loop that reads it.
"""

import keras
from keras import ops

from albert_tf.settings import NON_NEGATIVE, POSITIVE, POSITIVE_INTEGER, NumberRange


@keras.saving.register_keras_serializable(package="albert_tf")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    def __init__(self, learning_rate, num_train_steps, num_warmup_steps=0, end_learning_rate=0.0, power=1.0):
        """SettingError (a ValueError) naming the argument for a rate or step count the schedule cannot
        follow: a NaN or infinite rate would train every weight to NaN, silently."""
        POSITIVE.check("learning_rate", learning_rate)
        steps = POSITIVE_INTEGER.check("num_train_steps", _value(num_train_steps))
        NumberRange(0, steps, integer=True).check("num_warmup_steps", num_warmup_steps, why="at most <num_train_steps>")
        NON_NEGATIVE.check("end_learning_rate", end_learning_rate)
        POSITIVE.check("power", power)
        self.learning_rate = float(learning_rate)
        self.num_train_steps = num_train_steps if hasattr(num_train_steps, "assign") else int(steps)
        self.num_warmup_steps = int(num_warmup_steps)
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        total = ops.cast(self.num_train_steps, "float32")
        progress = ops.minimum(step, total) / total
        decayed = (self.learning_rate - self.end_learning_rate) * ops.power(1.0 - progress, self.power)
        decayed = decayed + self.end_learning_rate
        if not self.num_warmup_steps:
            return decayed
        warmup = self.learning_rate * step / float(self.num_warmup_steps)
        return ops.where(step < float(self.num_warmup_steps), warmup, decayed)

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "num_train_steps": _value(self.num_train_steps),
            "num_warmup_steps": self.num_warmup_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
        }


def _value(steps):
    """An int, or a variable's value (a distributed variable, under a strategy, has no __int__); anything
    else as it is, for the caller to check."""
    return int(steps.numpy()) if hasattr(steps, "numpy") else steps
