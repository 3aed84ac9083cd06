"""When training has diverged: the one rule pretraining and fine-tuning apply to losses and checkpoints.

A loss that turns NaN is the late sign of a divergence. Before it, a learning
rate far too high blows the weights up to millions while the loss is still a
finite 1e12, and a checkpoint saved then is no "last good" one. The rule:

  Every check of the loss (one per compiled loop in pretraining, one per step
  in fine-tuning) fails when the loss or the gradient norm is NaN or infinite,
  or when the loss exceeds GROWTH_LIMIT (10) times its reference level: the
  larger of the run's first checked loss and the lowest median of RECENT_WINDOW
  (20) consecutive checked losses so far. (The lowest, not the latest: a loss
  that climbs steadily drags the latest median up with it and would never be
  10x its own recent past, while it climbs to 15x where it started.)

  A checkpoint is saved only after a check that passed, and only when the
  weights' global norm is finite and at most GROWTH_LIMIT times the norm at the
  previous checkpoint (at the start of the run for the first one).

The weight rule is what catches a single exploding update: a step's loss is
computed before its update, so the weights a checkpoint saves are ones no loss
has been measured on yet. Sane training moves the weight norm by percents
between checkpoints, an exploding learning rate by orders of magnitude. The
loss reference never falls below the run's first loss, about what an
untrained head scores (ln 2 for a binary task, ~11 for MLM + SOP at V = 30000),
so a well-trained model's small and noisy losses do not trip it: a fine-tuning
batch of loss 2.0 after a run of 0.01s is not a divergence; 10x the starting
loss is.
"""

import math
import statistics

GROWTH_LIMIT = 10.0
RECENT_WINDOW = 20


def _global_norm(variables):
    import tensorflow as tf

    return float(tf.linalg.global_norm([tf.cast(v, tf.float32) for v in variables]))


def rerun_advice(last_good):
    """What to do after a divergence stop, given the last good checkpoint (None: none yet)."""
    if last_good:
        return (f"Last good checkpoint: {last_good}; rerun with a lower --learning_rate (or more "
                "--num_warmup_steps) to resume from it at the new rate")
    return "No good checkpoint yet; rerun with a lower --learning_rate (or more --num_warmup_steps)"


class DivergenceGuard:
    """Applies the module's rule to one run: its losses in order, and its weights at each checkpoint.

    Create it when the weights are the run's starting weights (after any restore).
    """

    def __init__(self, variables, growth_limit=GROWTH_LIMIT, window=RECENT_WINDOW):
        self.variables = list(variables)
        self.growth_limit = growth_limit
        self.window = window
        self.first = None
        self.recent = []
        self.lowest_median = math.inf
        self.weight_norm = _global_norm(self.variables)

    def loss_problem(self, loss, gradient_norm=None):
        """None when `loss` passes (and is then remembered), else why it does not, in words."""
        if not math.isfinite(loss):
            return f"the loss became {loss}"
        if gradient_norm is not None and not math.isfinite(gradient_norm):
            return f"the gradient norm became {gradient_norm} (loss {loss:.4g})"
        if self.first is not None:
            level = max(self.first, self.lowest_median)
            if loss > self.growth_limit * level:
                return (f"the loss grew to {loss:.4g}, more than {self.growth_limit:g}x its level ({level:.4g}: the "
                        f"larger of the run's first loss and the lowest median of {self.window} consecutive losses "
                        "so far)")
        else:
            self.first = loss
        self.recent = (self.recent + [loss])[-self.window:]
        self.lowest_median = min(self.lowest_median, statistics.median(self.recent))
        return None

    def weights_problem(self):
        """None when the weights may be saved (their norm is then the next checkpoint's reference), else why not."""
        norm = _global_norm(self.variables)
        if not math.isfinite(norm):
            return f"the weights are no longer finite (global norm {norm})"
        if norm > self.growth_limit * self.weight_norm:
            return (f"the weights' global norm grew to {norm:.4g}, more than {self.growth_limit:g}x its "
                    f"{self.weight_norm:.4g} at the previous checkpoint (or the start of the run)")
        self.weight_norm = norm
        return None
