"""SQuAD v1.1 / v2.0 as a fine-tuning task: a span head over windows of the context, official EM / F1.

Defaults are the original recipe (docs/reference.md, "Fine-tuning recipes"):
max_seq_length 384, doc_stride 128, max_query_length 64, batch 48, AdamW with
lr 5e-5 (v1.1) or 3e-5 (v2.0), 2 epochs, 10% warmup then linear decay.

--do_predict answers --predict_file and writes, into OUTPUT_DIR:
  predictions.json         {question id: answer text}, the official format
  nbest_predictions.json   the n best answers per question, with probabilities
  null_odds.json           v2.0: score_null - best span score per question (the
                           official evaluation's --na-prob-file)
and scores them (eval_results.json) when the file's questions have answers; for
v2.0 also the best null threshold. --do_eval scores every training checkpoint on
--predict_file and keeps the one with the best F1 in OUTPUT_DIR/best.
"""

import dataclasses
import math
import os

from albert_tf.settings import SettingError, check_at_least
from albert_tf.tasks import squad
from albert_tf.tasks.finetuning_task import FinetuningTask, Recipe, predict_outputs

DEFAULT_LEARNING_RATES = {"1.1": 5e-5, "2.0": 3e-5}


@dataclasses.dataclass(frozen=True)
class SquadConfig:
    """SQuAD's own settings (run_squad's flags of the same names; the defaults are the original's)."""

    version: str | None = None  # "1.1" or "2.0"
    train_file: str | None = None  # SQuAD JSON to train on
    predict_file: str | None = None  # SQuAD JSON to answer, or to score checkpoints on
    doc_stride: int = 128  # tokens between the starts of consecutive windows over a long context
    max_query_length: int = 64  # questions are cut to this many tokens
    n_best_size: int = 20  # answers kept per question, and start/end candidates tried per window
    max_answer_length: int = 30  # longest answer, in tokens
    null_score_diff_threshold: float = 0.0  # v2.0: no answer when score_null - best span score exceeds this


class SquadTask(FinetuningTask):
    tool = "albert_tf.run_squad"
    model_kind = "span_labeler"
    unit = "Windows"
    max_seq_length = 384
    keep_checkpoint_max = 3
    recipe_note = ("Default: the original recipe (batch 48; lr 5e-5 for --version=1.1, 3e-5 for 2.0; 2 epochs; "
                   "10% warmup).")
    do_eval_help = ("Score every training checkpoint on --predict_file (official F1; its questions need answers) "
                    "and keep the best in OUTPUT_DIR/best.")
    do_predict_help = "Answer the questions of --predict_file (scored with the official EM/F1 when they have answers)."

    config_class = SquadConfig

    def validate(self, config):
        task = config.task
        if task.version not in squad.VERSIONS:
            raise SettingError(f"<version> is required: one of {list(squad.VERSIONS)}, got {task.version!r}")
        required = {"train_file": config.do_train, "predict_file": config.do_predict or config.do_eval}
        missing = [f"<{name}>" for name, needed in required.items() if needed and not getattr(task, name)]
        if missing:
            raise SettingError(f"{' and '.join(missing)} required")
        check_at_least(task, ("doc_stride", "max_query_length", "n_best_size", "max_answer_length"), 1,
                       allow_none=False)
        if config.max_seq_length <= task.max_query_length + 3:
            raise SettingError(f"<max_seq_length>={config.max_seq_length} must exceed <max_query_length>="
                               f"{task.max_query_length} + 3 ([CLS] and two [SEP]) to leave room for the context")
        for name in ("train_file", "predict_file"):
            path = getattr(task, name)
            if path and not os.path.isfile(path):
                raise SettingError(f"<{name}>={path}: no such file")

    def recipe(self, config):
        return Recipe(DEFAULT_LEARNING_RATES[config.task.version], 48, num_train_epochs=2.0, warmup_proportion=0.1)

    def title(self, config):
        return f"SQuAD {config.task.version}"

    def metadata(self, config):
        return {"squad_version": config.task.version, "max_seq_length": config.max_seq_length}

    def build_model(self, encoder, config):
        from albert_tf.models.albert_span_labeler import AlbertSpanLabeler

        return AlbertSpanLabeler(encoder)

    def _features(self, path, tokenizer, config, labeled, what):
        from albert_tf.progress import Progress

        articles, examples = squad.read_squad(path, config.task.version, labeled=labeled)
        if not examples:
            raise ValueError(f"{path}: no questions")
        progress = Progress(len(examples), lambda done, elapsed: f"{what}: {done}/{len(examples)} questions")
        features = squad.convert_examples_to_features(
            examples, tokenizer, max_seq_length=config.max_seq_length, doc_stride=config.task.doc_stride,
            max_query_length=config.task.max_query_length, progress=progress)
        progress.finish(len(examples))
        return articles, examples, features

    def read_train(self, tokenizer, config):
        return squad.feature_arrays(self._features(config.task.train_file, tokenizer, config, True, "train")[2])

    def read_eval(self, tokenizer, config):
        data = self._features(config.task.predict_file, tokenizer, config, False, "eval")
        if not _answered(data[1]):
            raise SettingError(f"{config.task.predict_file}: has questions without answers; <do_eval> needs answers to "
                               "score")
        return data

    def example_losses(self, batch, outputs):
        return span_losses(batch["start_positions"], batch["end_positions"], outputs)

    def trainable_variables(self, model):
        # The pooler is not on the span head's path and gets no gradient.
        return [v for v in model.trainable_variables if "pooler" not in v.path]

    def _answers(self, model, features, examples, config):
        """(predictions, nbest, null_odds) of the model on the windows."""
        start_logits, end_logits = span_logits(model, features, config.predict_batch_size)
        return squad.postprocess_predictions(
            examples, features, start_logits, end_logits, n_best_size=config.task.n_best_size,
            max_answer_length=config.task.max_answer_length, version_2_with_negative=config.task.version == "2.0",
            null_score_diff_threshold=config.task.null_score_diff_threshold)

    def _score(self, articles, predictions, null_odds, config):
        from albert_tf.tasks.squad_evaluation import evaluate

        # math.inf: score the predictions as written; null_odds only feed the best-threshold search.
        return evaluate(articles, predictions, na_probs=null_odds if config.task.version == "2.0" else None,
                        na_prob_thresh=math.inf)

    def evaluate(self, model, eval_data, config):
        articles, examples, features = eval_data
        predictions, _, null_odds = self._answers(model, features, examples, config)
        return self._score(articles, predictions, null_odds, config)

    def best_metric(self, config):
        return "f1"

    def output_files(self, config):
        return [squad.PREDICTIONS_FILE, squad.NBEST_FILE, squad.NULL_ODDS_FILE]

    def predict(self, model, tokenizer, config, output_dir):
        articles, examples, features = self._features(config.task.predict_file, tokenizer, config, False, "predict")
        predictions, nbest, null_odds = self._answers(model, features, examples, config)
        written = squad.write_predictions(output_dir, predictions, nbest,
                                          null_odds if config.task.version == "2.0" else None)
        print(f"Answered {len(examples)} questions ({len(features)} windows): " + ", ".join(written), flush=True)
        if not _answered(examples):
            print(f"{config.task.predict_file} has questions without answers: not scored.", flush=True)
            return None, written
        return self._score(articles, predictions, null_odds, config), written

    def eval_results(self, evaluation, prediction):
        return prediction or evaluation

    def summary(self, metrics):
        line = f"EM {metrics['exact']:.2f}, F1 {metrics['f1']:.2f} on {metrics['total']} questions"
        if "best_f1" in metrics:
            line += (f" (best F1 {metrics['best_f1']:.2f} with --null_score_diff_threshold="
                     f"{metrics['best_f1_thresh']:.4g})")
        return line


def span_loss(start_positions, end_positions, outputs):
    """BERT's span loss, scalar float32: the mean of `span_losses` over the batch."""
    import tensorflow as tf

    return tf.reduce_mean(span_losses(start_positions, end_positions, outputs))


def span_losses(start_positions, end_positions, outputs):
    """BERT's span loss of each window, [batch] float32: (CE(start) + CE(end)) / 2, each over all positions
    of the window; a window without the answer (or an unanswerable question) points both at [CLS]
    (position 0)."""
    import tensorflow as tf

    start_losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(start_positions, tf.int32), logits=tf.cast(outputs["start_logits"], tf.float32))
    end_losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(end_positions, tf.int32), logits=tf.cast(outputs["end_logits"], tf.float32))
    return (start_losses + end_losses) / 2.0


def _answered(examples):
    return all(example.is_impossible or example.answer_start >= 0 for example in examples)


def span_logits(model, features, batch_size):
    """(start_logits, end_logits): float32 arrays [num_features, seq] (spread over the replicas of the
    strategy in scope, as `predict_outputs` does)."""
    arrays = squad.feature_arrays(features, with_positions=False)
    outputs = predict_outputs(model, arrays, batch_size, ("start_logits", "end_logits"))
    return outputs["start_logits"], outputs["end_logits"]
