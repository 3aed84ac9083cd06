"""RACE as a fine-tuning task: 4-way multiple choice, accuracy overall and per level (middle, high).

Defaults are the original recipe (docs/reference.md, "Fine-tuning recipes"):
max_seq_length 512, max_qa_length 128, batch 32, AdamW lr 1e-5, 12k steps with
1k warmup. --do_predict answers test/ and writes test_predictions.json.
"""

import json
import os

from absl import flags as absl_flags

from albert_tf.tasks import race
from albert_tf.tasks.finetuning_task import FinetuningTask, Recipe, predict_logits

PREDICTIONS_FILE = "test_predictions.json"


class RaceTask(FinetuningTask):
    tool = "albert_tf.run_race"
    model_kind = "multiple_choice"
    unit = "Questions"
    recipe_note = "Default: the original RACE recipe (batch 32, lr 1e-5, 12000 steps, 1000 warmup)."
    do_eval_help = "Evaluate on dev/ (every checkpoint while training)."
    do_predict_help = "Evaluate on test/ and write test predictions."

    def title(self, flags):
        return "RACE"

    def define_flags(self):
        absl_flags.DEFINE_string("data_dir", None, "The RACE directory ({train,dev,test}/{middle,high}/*.txt).")
        absl_flags.DEFINE_multi_enum("levels", ["middle", "high"], ["middle", "high"],
                                     "RACE levels to use (repeatable).")
        absl_flags.DEFINE_integer("max_qa_length", 128, "Tokens of question + option at most.")

    def validate(self, flags):
        if not flags.data_dir:
            raise ValueError("--data_dir required")
        if not 0 < flags.max_qa_length <= flags.max_seq_length - 3:
            raise ValueError(f"--max_qa_length={flags.max_qa_length} must be in 1..--max_seq_length - 3")

    def recipe(self, flags):
        return Recipe(1e-5, 32, num_train_steps=12000, num_warmup_steps=1000)

    def metadata(self, flags):
        return {"num_choices": race.NUM_CHOICES, "max_seq_length": flags.max_seq_length,
                "max_qa_length": flags.max_qa_length}

    def build_model(self, encoder, flags):
        from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice

        return AlbertMultipleChoice(encoder, race.NUM_CHOICES).build_variables()

    def _encoded(self, split, tokenizer, flags):
        examples = race.read_split(flags.data_dir, split, tuple(dict.fromkeys(flags.levels)))
        return examples, race.encode_examples(examples, tokenizer, flags.max_seq_length, flags.max_qa_length)

    def read_train(self, tokenizer, flags):
        return self._encoded("train", tokenizer, flags)[1]

    def read_eval(self, tokenizer, flags):
        return self._encoded("dev", tokenizer, flags)

    def example_losses(self, batch, outputs):
        import tensorflow as tf

        return tf.nn.sparse_softmax_cross_entropy_with_logits(batch["label_ids"], tf.cast(outputs["logits"], tf.float32))

    @staticmethod
    def _choices(model, arrays, batch_size):
        return predict_logits(model, arrays, batch_size).argmax(-1)

    def evaluate(self, model, eval_data, flags):
        examples, arrays = eval_data
        return race.accuracies(self._choices(model, arrays, flags.eval_batch_size), examples)

    def best_metric(self, flags):
        return "accuracy"

    def output_files(self, flags):
        return [PREDICTIONS_FILE]

    def predict(self, model, tokenizer, flags, output_dir):
        examples, arrays = self._encoded("test", tokenizer, flags)
        choices = self._choices(model, arrays, flags.predict_batch_size)
        path = os.path.join(output_dir, PREDICTIONS_FILE)
        with open(path + ".tmp", "w") as f:
            json.dump({e.guid: "ABCD"[int(p)] for e, p in zip(examples, choices)}, f, indent=2)
        os.replace(path + ".tmp", path)
        return race.accuracies(choices, examples), [path]

    def eval_results(self, evaluation, prediction):
        results = {split: metrics for split, metrics in (("dev", evaluation), ("test", prediction)) if metrics}
        return results or None
