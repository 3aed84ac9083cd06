"""Optimizers and learning-rate schedules of the original ALBERT recipe.

>>> optimizer = create_optimizer(0.00176, num_train_steps=125_000, num_warmup_steps=3125)  # LAMB
>>> finetune = create_optimizer(1e-5, 20935, 1256, optimizer="adamw")
"""

from albert_tf.optimization.original_optimizers import EXCLUDE_FROM_WEIGHT_DECAY, AdamWeightDecay, Lamb
from albert_tf.optimization.schedules import WarmupPolynomialDecay
from albert_tf.settings import NON_NEGATIVE, POSITIVE, NumberRange

OPTIMIZERS = ("lamb", "adamw")
# A moment's decay: at 1 the moment would keep its zero start forever.
MOMENT_DECAY = NumberRange(low=0, high=1, high_open=True)


def create_optimizer(
    learning_rate: float,
    num_train_steps: int,
    num_warmup_steps: int = 0,
    optimizer: str = "lamb",
    weight_decay_rate: float = 0.01,
    clipnorm: float | None = 1.0,
    epsilon: float = 1e-6,
    beta_1: float = 0.9,
    beta_2: float = 0.999,
    end_learning_rate: float = 0.0,
    power: float = 1.0,
    gradients_are_aggregated: bool = False,
) -> Lamb | AdamWeightDecay:
    """LAMB or AdamW with the original exclusions, on the warmup + linear-decay schedule.

    `clipnorm` is a global-norm clip applied by the optimizer (single-device use,
    for example fine-tuning); pass None when the training loop clips the
    all-reduced gradient itself, with `gradients_are_aggregated=True`. A rate, step count or
    coefficient the update cannot use (NaN, infinite, out of range) is a SettingError naming it.
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    NON_NEGATIVE.check("weight_decay_rate", weight_decay_rate)
    POSITIVE.check("clipnorm", clipnorm, allow_none=True)
    POSITIVE.check("epsilon", epsilon)
    for name, beta in (("beta_1", beta_1), ("beta_2", beta_2)):
        MOMENT_DECAY.check(name, beta)
    schedule = WarmupPolynomialDecay(learning_rate, num_train_steps, num_warmup_steps, end_learning_rate, power)
    cls = Lamb if optimizer == "lamb" else AdamWeightDecay
    return cls(
        learning_rate=schedule,
        weight_decay_rate=weight_decay_rate,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=clipnorm,
        gradients_are_aggregated=gradients_are_aggregated,
    )


__all__ = ["AdamWeightDecay", "Lamb", "WarmupPolynomialDecay", "create_optimizer", "EXCLUDE_FROM_WEIGHT_DECAY", "OPTIMIZERS"]
