"""Optimizers and learning-rate schedules of the original ALBERT recipe.

>>> optimizer = create_optimizer(0.00176, num_train_steps=125_000, num_warmup_steps=3125)  # LAMB
>>> finetune = create_optimizer(1e-5, 20935, 1256, optimizer="adamw")
"""

from albert_tf.optimization.original_optimizers import EXCLUDE_FROM_WEIGHT_DECAY, AdamWeightDecay, Lamb
from albert_tf.optimization.schedules import WarmupPolynomialDecay

OPTIMIZERS = ("lamb", "adamw")


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
    all-reduced gradient itself, with `gradients_are_aggregated=True`.
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
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
