"""Every setting of a fine-tuning run, typed: what run_classifier, run_squad and run_race map their flags to.

    from albert_tf.tasks.glue_task import GlueConfig, GlueTask
    from albert_tf.training.finetuning_config import FinetuningConfig
    from albert_tf.training.finetuning_tool import run_finetuning

    config = FinetuningConfig(output_dir="mrpc", init_checkpoint="ckpt/albert_base", do_train=True, do_eval=True,
                              task=GlueConfig(task_name="mrpc", data_dir="glue/MRPC"))
    run_finetuning(GlueTask(), config)

The shared fields carry the tools' flag names and defaults (the flags take theirs from
here); `task` holds the task's own config (`GlueConfig`, `SquadConfig`, `RaceConfig`). A
field left None takes the task's recipe (steps, warmup, batch, learning rate) or the
starting model's record (casing, length); where and how it computes are
`DistributionConfig`'s fields. `check` raises `albert_tf.settings.SettingError`
naming the setting; run_config.json records the config as `to_json` gives it.

The same type is what `albert_tf.training.finetuning.finetune` trains with, its schedule
filled in (the tools from the task's recipe and the data; `check_schedule`).
"""

import dataclasses
import os
from typing import Any

from albert_tf.settings import POSITIVE, PROBABILITY, SettingError, check_at_least
from albert_tf.training.distribution_config import DistributionConfig


# Where a library caller of `finetune` leaves them None (the tools take the task recipe's).
DEFAULT_SAVE_CHECKPOINTS_STEPS = 1000
DEFAULT_KEEP_CHECKPOINT_MAX = 3


@dataclasses.dataclass(frozen=True)
class FinetuningConfig(DistributionConfig):
    output_dir: str | None = None
    task: Any = None  # the task's config
    init_checkpoint: str | None = None
    albert_config: str | None = None
    spm_model_file: str | None = None
    vocab_file: str | None = None
    do_lower_case: bool | None = None
    keep_accents: bool | None = None
    rewrite_quotes: bool | None = None
    max_seq_length: int | None = None
    force: bool = False
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    train_batch_size: int | None = None
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float | None = None
    num_train_steps: int | None = None
    num_train_epochs: float | None = None
    num_warmup_steps: int | None = None
    warmup_proportion: float | None = None
    save_checkpoints_steps: int | None = None  # None: the task recipe's
    keep_checkpoint_max: int | None = None  # None: the task's
    seed: int = 12345
    overwrite: bool = False

    def check(self):
        """SettingError naming the setting for a value or combination that cannot run (the task's own
        settings are the task's to check: `FinetuningTask.validate`)."""
        if not self.output_dir:
            raise SettingError("<output_dir> required")
        if not (self.do_train or self.do_eval or self.do_predict):
            raise SettingError("nothing to do: pass <do_train>, <do_eval> and/or <do_predict>")
        if not self.init_checkpoint and not (self.do_train and self.albert_config):
            raise SettingError("<init_checkpoint> required (or, to train from a random start, <albert_config>)")
        check_at_least(self, ("max_seq_length", "eval_batch_size", "predict_batch_size", "save_checkpoints_steps",
                              "keep_checkpoint_max", "train_batch_size", "num_train_steps"), 1)
        POSITIVE.check_fields(self, ("learning_rate", "num_train_epochs"))
        check_at_least(self, ("num_warmup_steps",), 0)
        PROBABILITY.check_fields(self, ("warmup_proportion",))
        if self.spm_model_file and not os.path.isfile(self.spm_model_file):
            raise SettingError(f"<spm_model_file>={self.spm_model_file}: no such file")
        if self.vocab_file and not os.path.isfile(self.vocab_file):
            raise SettingError(f"<vocab_file>={self.vocab_file}: no such file")
        if self.spm_model_file and self.vocab_file:
            raise SettingError("pass <spm_model_file> (a SentencePiece model) or <vocab_file> (a WordPiece vocab.txt), "
                               "not both")
        self.check_distribution()
        return self

    def check_schedule(self):
        """SettingError naming the setting unless the schedule `finetune` trains with is whole and can run:
        steps, global batch and learning rate given (the tools fill them from the task's recipe and the data);
        warmup, checkpoint interval and count default to 0, 1,000 and 3 where None."""
        missing = [f"<{name}>" for name in ("num_train_steps", "train_batch_size", "learning_rate")
                   if getattr(self, name) is None]
        if missing:
            raise SettingError(f"fine-tuning needs {', '.join(missing)}")
        defaults = {"num_warmup_steps": 0, "save_checkpoints_steps": DEFAULT_SAVE_CHECKPOINTS_STEPS,
                    "keep_checkpoint_max": DEFAULT_KEEP_CHECKPOINT_MAX}
        resolved = dataclasses.replace(self, **{name: value for name, value in defaults.items()
                                                if getattr(self, name) is None})
        check_at_least(resolved, ("num_train_steps", "train_batch_size", "save_checkpoints_steps",
                                  "keep_checkpoint_max"), 1, allow_none=False)
        if not 0 <= resolved.num_warmup_steps <= resolved.num_train_steps:
            raise SettingError(f"<num_warmup_steps> must be in [0, <num_train_steps>={resolved.num_train_steps}], "
                               f"got {resolved.num_warmup_steps}")
        POSITIVE.check("learning_rate", resolved.learning_rate)
        resolved.check_distribution()
        return resolved

    def to_json(self):
        """The config as JSON values, the task's config under "task"."""
        return {**{field.name: getattr(self, field.name) for field in dataclasses.fields(self) if field.name != "task"},
                "task": dataclasses.asdict(self.task) if dataclasses.is_dataclass(self.task) else self.task}
