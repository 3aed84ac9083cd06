"""Training loops: pretraining (`pretraining_trainer`, `pretraining_run`) and fine-tuning (`finetuning`)."""


class TrainingDivergedError(RuntimeError):
    """The loss became NaN or infinite; the run stopped without saving over the last good checkpoint."""
