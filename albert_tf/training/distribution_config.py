"""Where and how a training run computes: the settings pretraining and fine-tuning share.

`PretrainingConfig` and `FinetuningConfig` extend `DistributionConfig`, so the seven
settings are declared once; the tools set them from the same flags
(`albert_tf.training.distribution_flags`), which take their defaults from here.
"""

import dataclasses

from albert_tf.settings import SettingError, check_at_least

# The strategies `albert_tf.training.strategies.create_strategy` builds (named here without importing TensorFlow).
STRATEGY_NAMES = ("one_device", "mirrored", "multi_worker", "tpu")
# --mixed_precision's values and the Keras precision policy each sets.
PRECISIONS = {"none": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


@dataclasses.dataclass(frozen=True)
class DistributionConfig:
    strategy: str = "one_device"
    tpu: str | None = None
    mixed_precision: str = "none"
    jit_compile: bool = False
    gradient_accumulation_steps: int = 1
    iterations_per_loop: int = 100
    max_seconds_per_loop: int = 60

    def check_distribution(self):
        """SettingError naming the setting when a distribution setting cannot run."""
        check_at_least(self, ("gradient_accumulation_steps", "iterations_per_loop"), 1, allow_none=False)
        check_at_least(self, ("max_seconds_per_loop",), 0, allow_none=False)
        if self.strategy not in STRATEGY_NAMES:
            raise SettingError(f"<strategy> must be one of {STRATEGY_NAMES}, got {self.strategy!r}")
        if self.mixed_precision not in PRECISIONS:
            raise SettingError(f"<mixed_precision> must be one of {tuple(PRECISIONS)}, got {self.mixed_precision!r}")


DISTRIBUTION_NAMES = tuple(field.name for field in dataclasses.fields(DistributionConfig))
