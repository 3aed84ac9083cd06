"""Every setting of a pretraining run, typed: what `run_pretraining` maps its flags to.

    config = PretrainingConfig(input_file="data/train", output_dir="ckpt/small", albert_config="albert_base_v2",
                               train_batch_size=64, num_train_steps=10_000, num_warmup_steps=1_000)
    config.check()

Fields carry the tool's flag names and defaults (the flags take their defaults from here);
the defaults are the paper's recipe (LAMB, lr 0.00176, batch 4096, 125k steps, 3125 warmup
steps: without num_warmup_steps, a run of other length warms up over the same 2.5% of its
steps, `warmup_steps`); where and how it computes are `DistributionConfig`'s fields. `check` raises
`albert_tf.settings.SettingError` naming the setting. run_config.json records the config,
and the fields a resumed run must share are checked against it (`pretraining_record`).
"""

import dataclasses
import os

from albert_tf.settings import NON_NEGATIVE, POSITIVE, SettingError, check_at_least
from albert_tf.training.distribution_config import DistributionConfig

OPTIMIZER_NAMES = ("lamb", "adamw")
# The paper's warmup, 3125 of its 125k steps: its share of any other step count is the default, as
# fine-tuning keeps its recipes' share, so that a 50-step run warms up for 1 step instead of being refused.
PAPER_WARMUP_STEPS, PAPER_TRAIN_STEPS = 3125, 125000


@dataclasses.dataclass(frozen=True)
class PretrainingConfig(DistributionConfig):
    input_file: str | None = None
    output_dir: str | None = None
    albert_config: str = "albert_base_v2"
    vocab_size: int | None = None
    init_checkpoint: str | None = None
    spm_model_file: str | None = None
    vocab_file: str | None = None
    do_train: bool = True
    do_eval: bool = False
    eval_input_file: str | None = None
    eval_every_steps: int = 0
    train_budget_hours: float = 0.0
    input_workers: int = 2
    input_processes: int = 0
    input_mixed_documents: int = 16  # dynamic_instances.MIXED_DOCUMENTS (not imported: it needs TensorFlow)
    train_batch_size: int = 4096
    eval_batch_size: int = 8
    max_eval_steps: int = 100
    max_seq_length: int | None = None
    max_predictions_per_seq: int | None = None
    num_train_steps: int = PAPER_TRAIN_STEPS
    num_warmup_steps: int | None = None  # None: the paper's share of num_train_steps (`warmup_steps`)
    learning_rate: float = 0.00176
    optimizer: str = "lamb"
    weight_decay_rate: float = 0.01
    clip_norm: float = 1.0
    save_checkpoints_steps: int = 5000
    keep_checkpoint_max: int = 5
    sentence_loss_weight: float = 1.0
    seed: int = 12345
    shuffle_buffer_size: int = 10000
    iterations_per_loop: int = 1000  # DistributionConfig's, with this tool's default

    def check(self):
        """SettingError naming the setting for a value or combination that cannot run."""
        missing = [f"<{name}>" for name in ("input_file", "output_dir") if not getattr(self, name)]
        if missing:
            raise SettingError(f"{' and '.join(missing)} required")
        check_at_least(self, ("train_batch_size", "eval_batch_size", "max_seq_length", "max_predictions_per_seq",
                              "num_train_steps", "save_checkpoints_steps", "keep_checkpoint_max", "vocab_size",
                              "input_workers", "input_mixed_documents", "max_eval_steps", "shuffle_buffer_size"), 1)
        self.check_distribution()
        if self.num_warmup_steps is not None and not 0 <= self.num_warmup_steps <= self.num_train_steps:
            raise SettingError(f"<num_warmup_steps> must be in [0, <num_train_steps>={self.num_train_steps}]")
        # A NaN or infinite rate or clip norm would train every weight to NaN.
        POSITIVE.check_fields(self, ("learning_rate", "clip_norm"))
        NON_NEGATIVE.check_fields(self, ("weight_decay_rate", "sentence_loss_weight", "eval_every_steps",
                                         "train_budget_hours", "input_processes"))
        if self.optimizer not in OPTIMIZER_NAMES:
            raise SettingError(f"<optimizer> must be one of {OPTIMIZER_NAMES}, got {self.optimizer!r}")
        if (self.do_eval or self.eval_every_steps) and not self.eval_input_file:
            raise SettingError("<do_eval> and <eval_every_steps> need <eval_input_file>")
        if self.spm_model_file and not os.path.isfile(self.spm_model_file):
            raise SettingError(f"<spm_model_file>={self.spm_model_file}: no such SentencePiece model")
        if self.spm_model_file and self.vocab_file:
            raise SettingError("pass <spm_model_file> (a SentencePiece model) or <vocab_file> (a WordPiece vocab.txt), "
                               "not both")
        if self.vocab_file and not os.path.isfile(self.vocab_file):
            raise SettingError(f"<vocab_file>={self.vocab_file}: no such WordPiece vocabulary")
        return self

    def vocabulary(self):
        """The `vocabularies.Vocabulary` the data was made with (spm_model_file or vocab_file), or None."""
        from albert_tf.text.vocabularies import SENTENCEPIECE, WORDPIECE, Vocabulary

        if self.vocab_file:
            return Vocabulary.read(self.vocab_file, WORDPIECE)
        return Vocabulary.read(self.spm_model_file, SENTENCEPIECE) if self.spm_model_file else None

    def vocabulary_file(self):
        """The path of the vocabulary the data was made with, or None."""
        return self.vocab_file or self.spm_model_file

    def warmup_steps(self):
        """num_warmup_steps, else the paper's share of num_train_steps (3125 of 125k: 2.5%, rounded down)."""
        if self.num_warmup_steps is not None:
            return self.num_warmup_steps
        return self.num_train_steps * PAPER_WARMUP_STEPS // PAPER_TRAIN_STEPS

    def to_json(self):
        return dataclasses.asdict(self)
