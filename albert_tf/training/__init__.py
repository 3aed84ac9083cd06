"""Training: one trainer (`trainer`) and loop (`training_loop`) for pretraining (`pretraining_run`) and
fine-tuning (`finetuning`, `finetuning_tool`)."""


class TrainingDivergedError(RuntimeError):
    """The divergence check failed (`albert_tf.training.divergence`); the run stopped without saving, and its
    message says why; `last_good` is the newest checkpoint saved before (None: none yet). Tools exit with
    status 2 on it."""

    exit_code = 2  # the tools' status for it (albert_tf.cli): not 1, which means refused input

    def __init__(self, message, last_good=None):
        super().__init__(message)
        self.last_good = last_good
