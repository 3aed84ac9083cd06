"""RACE as a fine-tuning task: 4-way multiple choice, accuracy overall and per level (middle, high).

Defaults are the original recipe (docs/reference.md, "Fine-tuning recipes"):
max_seq_length 512, max_qa_length 128, batch 32, AdamW lr 1e-5, 12k steps with
1k warmup. --do_predict answers test/ and writes test_predictions.json.
"""

import dataclasses
import json
import os

from albert_tf.file_utils import atomic_output
from albert_tf.settings import DROPOUT_RATE, SettingError
from albert_tf.tasks import race
from albert_tf.tasks.finetuning_task import FinetuningTask, Recipe, predict_logits

PREDICTIONS_FILE = "test_predictions.json"


@dataclasses.dataclass(frozen=True)
class RaceConfig:
    """RACE's own settings (run_race's flags of the same names)."""

    data_dir: str | None = None  # {train,dev,test}/{middle,high}/*.txt
    levels: tuple = ("middle", "high")
    max_qa_length: int = 128  # tokens of question + option at most
    dropout: float = 0.1  # before the choice scorer (original: 0.1)


class RaceTask(FinetuningTask):
    tool = "albert_tf.run_race"
    model_kind = "multiple_choice"
    unit = "Questions"
    recipe_note = ("Default: the original RACE recipe (batch 32, lr 1e-5, 12000 steps with 1000 warmup for its 87,866 "
                   "training questions, about 4.4 epochs: other data trains as many epochs, warmup its share).")
    do_eval_help = "Evaluate on dev/ (every checkpoint while training)."
    do_predict_help = "Evaluate on test/ and write test predictions."

    def title(self, config):
        return "RACE"

    config_class = RaceConfig

    def validate(self, config):
        if not config.task.data_dir:
            raise SettingError("<data_dir> required")
        DROPOUT_RATE.check("dropout", config.task.dropout)  # before the run directory exists
        if not 0 < config.task.max_qa_length <= config.max_seq_length - 3:
            raise SettingError(f"<max_qa_length>={config.task.max_qa_length} must be in 1..<max_seq_length> - 3")
        unknown = sorted(set(config.task.levels) - set(race.LEVELS))
        if unknown or not config.task.levels:
            raise SettingError(f"<levels> must be some of {list(race.LEVELS)}, got {list(config.task.levels)}")

    def recipe(self, config):
        # 12k steps for RACE's 87,866 training questions (middle and high): about 4.4 epochs of any data.
        return Recipe(1e-5, 32, num_train_steps=12000, num_warmup_steps=1000, train_rows=87866)

    def metadata(self, config):
        return {"num_choices": race.NUM_CHOICES, "max_seq_length": config.max_seq_length,
                "max_qa_length": config.task.max_qa_length}

    def build_model(self, encoder, config):
        from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice

        return AlbertMultipleChoice(encoder, race.NUM_CHOICES, dropout=config.task.dropout).build_variables()

    def _encoded(self, split, tokenizer, config):
        examples = race.read_split(config.task.data_dir, split, tuple(dict.fromkeys(config.task.levels)))
        return examples, race.encode_examples(examples, tokenizer, config.max_seq_length, config.task.max_qa_length)

    def read_train(self, tokenizer, config):
        return self._encoded("train", tokenizer, config)[1]

    def read_eval(self, tokenizer, config):
        return self._encoded("dev", tokenizer, config)

    def example_losses(self, batch, outputs):
        import tensorflow as tf

        return tf.nn.sparse_softmax_cross_entropy_with_logits(batch["label_ids"], tf.cast(outputs["logits"], tf.float32))

    @staticmethod
    def _choices(model, arrays, batch_size):
        return predict_logits(model, arrays, batch_size).argmax(-1)

    def evaluate(self, model, eval_data, config):
        examples, arrays = eval_data
        return race.accuracies(self._choices(model, arrays, config.eval_batch_size), examples)

    def best_metric(self, config):
        return "accuracy"

    def output_files(self, config):
        return [PREDICTIONS_FILE]

    def predict(self, model, tokenizer, config, output_dir):
        examples, arrays = self._encoded("test", tokenizer, config)
        choices = self._choices(model, arrays, config.predict_batch_size)
        path = os.path.join(output_dir, PREDICTIONS_FILE)
        with atomic_output(path) as f:
            json.dump({e.guid: "ABCD"[int(p)] for e, p in zip(examples, choices)}, f, indent=2)
        return race.accuracies(choices, examples), [path]

    def eval_results(self, evaluation, prediction):
        results = {split: metrics for split, metrics in (("dev", evaluation), ("test", prediction)) if metrics}
        return results or None
