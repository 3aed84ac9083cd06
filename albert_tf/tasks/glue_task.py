"""GLUE as a fine-tuning task: classification (regression for STS-B) on the [CLS] pooled output.

Per-task defaults are the original ALBERT fine-tuning recipe (docs/reference.md,
"Fine-tuning recipes"); metrics as GLUE defines them (`glue_metrics`); the best
checkpoint is picked by the task's leaderboard metric (MNLI: matched accuracy).
--do_predict writes GLUE submission files `index<TAB>prediction`.
"""

import dataclasses
import os

from albert_tf.file_utils import atomic_output
from albert_tf.settings import DROPOUT_RATE, SettingError
from albert_tf.tasks import glue
from albert_tf.tasks.finetuning_task import FinetuningTask, Recipe, predict_logits
from albert_tf.tasks.glue_metrics import primary_metric, task_metrics

# From the original ALBERT fine-tuning scripts (docs/reference.md, "Fine-tuning recipes"), with the rows of
# the GLUE training set each step count was set for: other data trains for as many epochs.
# WNLI is not in the original table: ours, sized for its 635 training pairs.
RECIPES = {
    "cola": Recipe(1e-5, 16, num_train_steps=5336, num_warmup_steps=320, train_rows=8551),
    "sst-2": Recipe(1e-5, 32, num_train_steps=20935, num_warmup_steps=1256, train_rows=67349),
    "mrpc": Recipe(2e-5, 32, num_train_steps=800, num_warmup_steps=200, train_rows=3668),
    "sts-b": Recipe(2e-5, 16, num_train_steps=3598, num_warmup_steps=214, train_rows=5749),
    "qqp": Recipe(5e-5, 128, num_train_steps=14000, num_warmup_steps=1000, train_rows=363846),
    "mnli": Recipe(3e-5, 128, num_train_steps=10000, num_warmup_steps=1000, train_rows=392702),
    "qnli": Recipe(1e-5, 32, num_train_steps=33112, num_warmup_steps=1986, train_rows=104743,
                   save_checkpoints_steps=200),
    "rte": Recipe(3e-5, 32, num_train_steps=800, num_warmup_steps=200, train_rows=2490),
    "wnli": Recipe(2e-5, 8, num_train_steps=2000, num_warmup_steps=250, train_rows=635),
}


@dataclasses.dataclass(frozen=True)
class GlueConfig:
    """GLUE's own settings (run_classifier's flags of the same names)."""

    task_name: str | None = None  # any case: "MRPC", "mrpc"
    data_dir: str | None = None  # the task's GLUE directory (train.tsv, dev.tsv, test.tsv)
    dropout: float = 0.1  # before the classifier (original: 0.1)


class GlueTask(FinetuningTask):
    tool = "albert_tf.run_classifier"
    model_kind = "classifier"
    unit = "Examples"
    recipe_note = ("Default: the task's recipe (the original per-task lr, warmup and batch, and the epochs its steps "
                   "make of the task's GLUE training set).")
    do_eval_help = "Evaluate on dev.tsv (every checkpoint while training)."
    do_predict_help = "Write GLUE submission files for test.tsv."

    def title(self, config):
        return f"GLUE {self._task(config)}"

    config_class = GlueConfig

    def validate(self, config):
        for name in ("task_name", "data_dir"):
            if not getattr(config.task, name):
                raise SettingError(f"<{name}> required")
        DROPOUT_RATE.check("dropout", config.task.dropout)  # before the run directory exists
        if self._task(config) not in RECIPES:
            raise SettingError(f"<task_name> must be one of {sorted(RECIPES)} (any case), got {config.task.task_name!r}")
        # [CLS] A [SEP] (B [SEP]) with at least one token of each text.
        pair = glue.task_spec(self._task(config)).text_b is not None
        shortest = 5 if pair else 3
        if config.max_seq_length < shortest:
            raise SettingError(f"<max_seq_length>={config.max_seq_length} cannot hold a {self._task(config)} input: "
                               f"[CLS] A [SEP]{' B [SEP]' if pair else ''} with a token of each text needs at least "
                               f"{shortest}")

    def _task(self, config):
        return config.task.task_name.lower()

    def _regression(self, config):
        return glue.is_regression(self._task(config))

    def recipe(self, config):
        return RECIPES[self._task(config)]

    def task_name(self, config):
        return self._task(config)

    def metadata(self, config):
        task = self._task(config)
        regression = glue.is_regression(task)
        labels = glue.task_spec(task).labels
        return {"num_labels": 1 if regression else len(labels), "label_names": ["score"] if regression else list(labels),
                "is_regression": regression, "task_name": task, "max_seq_length": config.max_seq_length,
                "takes_pairs": glue.task_spec(task).text_b is not None}

    def build_model(self, encoder, config):
        from albert_tf.models.albert_classifier import AlbertClassifier

        return AlbertClassifier(encoder, self.metadata(config)["num_labels"], dropout=config.task.dropout)

    def _read(self, split, config):
        task = self._task(config)
        return {name: glue.read_examples(task, os.path.join(config.task.data_dir, file), split)
                for name, file in glue.split_files(task, split).items()}

    def _encode(self, examples, tokenizer, config):
        return glue.encode_examples(examples, tokenizer, config.max_seq_length, self._regression(config))

    def read_train(self, tokenizer, config):
        return self._encode(self._read("train", config)[""], tokenizer, config)

    def read_eval(self, tokenizer, config):
        return {name: self._encode(examples, tokenizer, config) for name, examples in self._read("dev", config).items()}

    def example_losses(self, batch, outputs):
        import tensorflow as tf

        logits = tf.cast(outputs["logits"], tf.float32)
        if logits.shape[-1] == 1:  # regression (STS-B): the one output is the score
            return tf.square(logits[:, 0] - tf.cast(batch["label_ids"], tf.float32))
        return tf.nn.sparse_softmax_cross_entropy_with_logits(batch["label_ids"], logits)

    def _predictions(self, model, arrays, batch_size, config):
        """Label indices, or scores for regression."""
        logits = predict_logits(model, arrays, batch_size)
        return logits[:, 0] if self._regression(config) else logits.argmax(-1)

    def evaluate(self, model, eval_data, config):
        results, self._evaluated = {}, []
        for name, arrays in eval_data.items():
            predictions = self._predictions(model, arrays, config.eval_batch_size, config)
            self._evaluated.append((name, predictions, arrays["label_ids"]))
            metrics = task_metrics(self._task(config), predictions, arrays["label_ids"])
            results.update({(f"{name}_{k}" if name else k): v for k, v in metrics.items()})
        return results

    def evaluation_note(self, config):
        from albert_tf.tasks import prediction_notes

        for name, predictions, targets in getattr(self, "_evaluated", []):
            what = f"{self._task(config)} dev{f' {name}' if name else ''}"
            note = (prediction_notes.constant_score_note(predictions, targets, what) if self._regression(config)
                    else prediction_notes.single_class_note(predictions, targets, glue.task_spec(
                        self._task(config)).labels, what))
            if note:
                return note
        return None

    def best_metric(self, config):
        task = self._task(config)
        return primary_metric(task) if task != "mnli" else f"matched_{primary_metric(task)}"

    def _submission_name(self, name, config):
        suffix = {"matched": "-m", "mismatched": "-mm"}.get(name, "")
        return f"{glue.task_spec(self._task(config)).submission_name}{suffix}.tsv"

    def output_files(self, config):
        return [self._submission_name(name, config) for name in glue.split_files(self._task(config), "test")]

    def predict(self, model, tokenizer, config, output_dir):
        import numpy as np

        spec = glue.task_spec(self._task(config))
        written = []
        for name, examples in self._read("test", config).items():
            predictions = self._predictions(model, self._encode(examples, tokenizer, config), config.predict_batch_size,
                                            config)
            path = os.path.join(output_dir, self._submission_name(name, config))
            with atomic_output(path) as f:
                f.write("index\tprediction\n")
                for example, prediction in zip(examples, predictions):
                    if self._regression(config):  # STS-B scores are similarities in [0, 5]
                        value = f"{float(np.clip(prediction, 0.0, 5.0)):.3f}"
                    else:
                        value = spec.labels[int(prediction)]
                    f.write(f"{example.guid}\t{value}\n")
            written.append(path)
        return None, written
