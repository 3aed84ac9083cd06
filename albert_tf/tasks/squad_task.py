"""SQuAD v1.1 / v2.0 as a fine-tuning task: a span head over windows of the context, official EM / F1.

Defaults are the original recipe (docs/reference.md, "Fine-tuning recipes"):
max_seq_length 384, doc_stride 128, max_query_length 64, batch 48 windows, AdamW
with lr 5e-5 (both versions), 2 epochs of the training questions, counted as the
original does (int(questions / batch * epochs) steps), 10% warmup and the
original's linear decay, measured from step 0.

The models: SQuAD 1.1 fine-tunes BERT's span head (`AlbertSpanLabeler`), as the
original's run_squad_v1. SQuAD 2.0 fine-tunes the original's run_squad_v2 model
(`AlbertSquadV2SpanLabeler`: the end scored given the start, a beam of 5 starts
x 5 ends, an answerability logit) unless squad_v2_head="null_score" asks for
BERT's head, whose no-answer score is the [CLS] span's. A fine-tuned model
records its head (its kind, and squad_v2_head in albert_tf.json); a run from it
that does not name one uses it.

--do_predict answers --predict_file and writes, into OUTPUT_DIR:
  predictions.json         {question id: answer text}, the official format
  nbest_predictions.json   the n best answers per question, with probabilities
  null_odds.json           v2.0: each question's no-answer score (the official
                           evaluation's --na-prob-file): the original head's
                           smallest cls_logits over the question's windows, the
                           null-score head's score_null - best span score
and scores them (eval_results.json) when the file's questions have answers; for
v2.0 also the best no-answer threshold. The scores are those of one official
metric (`qa_metrics`, recorded as eval_results.json's "metric"): SQuAD's,
CMRC 2018's or JSQuAD's, as `metric` names it, or picked from the contexts of
the predict file (`auto`: Chinese -> cmrc2018, Japanese -> jsquad, else squad).
SQuAD 2.0 is scored with SQuAD's, whose no-answer thresholds it reports.

The original head answers "" where the no-answer score exceeds
null_score_diff_threshold, by default the threshold with the best F1 on the
scored file (the original's best_f1_thresh; 0 when none beats
answering nothing): its EM and F1 are those at that threshold, scored as the
original reports them, with the official evaluation's --na-prob-thresh 1.0: a
question whose no-answer score exceeds 1.0 counts as answered "" even where a
threshold above 1.0 answers it (what the official script gives for
predictions.json with null_odds.json as --na-prob-file). exact_at_threshold_0
and f1_at_threshold_0 are those at 0; on a file without answers the default is
0. --do_eval scores every
training checkpoint on --predict_file and keeps the one with the best F1 in
OUTPUT_DIR/best. A run that trains and predicts does so too (as the original's
do_predict does) when the predict file's questions have answers, and answers
with the best; without answers it answers with the last checkpoint. Weights
answer a file once: the best checkpoint's answers from its evaluation while
training are what its evaluation after training and --do_predict write (on
CMRC 2018's dev set, 23,875 windows, each pass took minutes on a CPU).
"""

import dataclasses
import hashlib
import math
import os

from albert_tf.settings import SettingError, check_at_least
from albert_tf.tasks import qa_metrics, squad
from albert_tf.tasks.finetuning_task import FinetuningTask, Recipe, predict_outputs

DEFAULT_LEARNING_RATES = {"1.1": 5e-5, "2.0": 5e-5}
# The model kind of each SQuAD 2.0 head (squad.V2_HEADS).
V2_MODEL_KINDS = {"original": "squad_v2_span_labeler", "null_score": "span_labeler"}
# The outputs of the original SQuAD 2.0 head that its predictions read.
BEAM_OUTPUTS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index", "cls_logits")
BEST_THRESHOLD_KEYS = ("best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh")
# The official SQuAD 2.0 evaluation's default --na-prob-thresh, which the original applies to its reported EM / F1.
OFFICIAL_NA_PROB_THRESH = 1.0


@dataclasses.dataclass(frozen=True)
class SquadConfig:
    """SQuAD's own settings (run_squad's flags of the same names; the defaults are the original's)."""

    version: str | None = None  # "1.1" or "2.0"
    train_file: str | None = None  # SQuAD JSON to train on
    predict_file: str | None = None  # SQuAD JSON to answer, or to score checkpoints on
    doc_stride: int = 128  # tokens between the starts of consecutive windows over a long context
    max_query_length: int = 64  # questions are cut to this many tokens
    n_best_size: int = 20  # answers kept per question, and BERT's head's start/end candidates per window
    max_answer_length: int = 30  # longest answer, in tokens
    # v2.0: "original" (the original ALBERT's v2 model) or "null_score" (BERT's head); None: the head of a
    # SQuAD 2.0 model given as init_checkpoint, else "original".
    squad_v2_head: str | None = None
    # v2.0: no answer where a question's no-answer score exceeds this; None: the original head's threshold with
    # the best F1 on a scored file (0 on a file without answers), the null-score head's 0.
    null_score_diff_threshold: float | None = None
    # The official metric that scores --predict_file: qa_metrics.CHOICES; "auto" picks from its contexts.
    metric: str = "auto"


class SquadTask(FinetuningTask):
    tool = "albert_tf.run_squad"
    model_kind = "span_labeler"
    unit = "Windows"
    max_seq_length = 384
    keep_checkpoint_max = 3
    recipe_note = ("Default: the original recipe (batch 48; lr 5e-5; 2 epochs of the training questions, "
                   "int(questions / batch * epochs) steps; 10% warmup).")
    do_eval_help = ("Score every training checkpoint on --predict_file (official F1; its questions need answers) "
                    "and keep the best in OUTPUT_DIR/best.")
    do_predict_help = ("Answer the questions of --predict_file (scored with the official EM/F1 when they have "
                       "answers). With --do_train and answers in the file, as the original: every checkpoint is scored "
                       "on it and the best answers (--do_eval implied); without answers, the last checkpoint answers.")

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
        if task.squad_v2_head is not None:
            if task.squad_v2_head not in squad.V2_HEADS:
                raise SettingError(f"<squad_v2_head> must be one of {list(squad.V2_HEADS)}, got "
                                   f"{task.squad_v2_head!r}")
            if task.version != "2.0":
                raise SettingError("<squad_v2_head> is for <version>=2.0; SQuAD 1.1 fine-tunes BERT's span head, as "
                                   "the original does")
        if task.metric not in qa_metrics.CHOICES:
            raise SettingError(f"<metric> must be one of {list(qa_metrics.CHOICES)}, got {task.metric!r}")
        if task.version == "2.0" and task.metric not in ("auto", "squad"):
            raise SettingError(f"<metric>={task.metric} scores questions that all have answers; SQuAD 2.0 files are "
                               "scored with <metric>=squad, whose no-answer thresholds they need")
        if config.max_seq_length <= task.max_query_length + 3:
            raise SettingError(f"<max_seq_length>={config.max_seq_length} must exceed <max_query_length>="
                               f"{task.max_query_length} + 3 ([CLS] and two [SEP]) to leave room for the context")
        for name in ("train_file", "predict_file"):
            path = getattr(task, name)
            if path and not os.path.isfile(path):
                raise SettingError(f"<{name}>={path}: no such file")

    def resolve(self, config):
        config = self._resolve_metric(config)
        task = config.task
        if config.do_train and config.do_predict and not config.do_eval and _answered(
                squad.read_squad(task.predict_file, task.version, labeled=False)[1]):
            # The original's do_predict scores every checkpoint it saved on the predict file and answers with
            # the best (the v2 recipe saves steps 5000 and 5429): --do_eval does that.
            config = dataclasses.replace(config, do_eval=True)
        if task.version != "2.0" or task.squad_v2_head is not None:
            return config
        head = recorded_v2_head(config.init_checkpoint) or "original"
        return dataclasses.replace(config, task=dataclasses.replace(task, squad_v2_head=head))

    def _resolve_metric(self, config):
        """`config` with --metric=auto replaced by the metric that fits the predict file's contexts (said in a
        line); SQuAD 2.0 is SQuAD's. Left auto when nothing is scored."""
        task = config.task
        if task.metric != "auto" or not (config.do_predict or config.do_eval) or not task.predict_file:
            return config
        if task.version == "2.0":
            metric = "squad"
        else:
            articles = squad.read_squad(task.predict_file, task.version, labeled=False)[0]
            metric, line = qa_metrics.pick_metric(articles, task.predict_file)
            print(line, flush=True)
        return dataclasses.replace(config, task=dataclasses.replace(task, metric=metric))

    def recipe(self, config):
        # A checkpoint every 5000 steps, as the original README runs run_squad_v1/v2.py: on the real data
        # SQuAD 1.1 saves only its final one (3,649 steps), SQuAD 2.0 steps 5000 and 5429.
        return Recipe(DEFAULT_LEARNING_RATES[config.task.version], 48, num_train_epochs=2.0, warmup_proportion=0.1,
                      save_checkpoints_steps=5000)

    def epoch_size(self, train, config):
        # As the original counts an epoch: the training questions, though a batch is of their windows.
        return len(squad.read_squad(config.task.train_file, config.task.version)[1]), "Questions"

    def epoch_steps(self, size, epochs, batch_size):
        return max(1, int(size / batch_size * epochs))  # the original's int(examples / batch * epochs)

    def title(self, config):
        if v2_head(config) == "null_score":
            return "SQuAD 2.0 (BERT's null-score head)"
        return f"SQuAD {config.task.version}"

    def kind(self, config):
        return V2_MODEL_KINDS[v2_head(config)] if config.task.version == "2.0" else self.model_kind

    def metadata(self, config):
        recorded = {"squad_version": config.task.version, "max_seq_length": config.max_seq_length}
        if config.task.version == "2.0":
            recorded["squad_v2_head"] = v2_head(config)
        return recorded

    def build_model(self, encoder, config):
        if v2_head(config) == "original":
            from albert_tf.models.albert_squad_v2_span_labeler import AlbertSquadV2SpanLabeler

            return AlbertSquadV2SpanLabeler(encoder)
        from albert_tf.models.albert_span_labeler import AlbertSpanLabeler

        return AlbertSpanLabeler(encoder)

    def _features(self, path, tokenizer, config, labeled, what):
        from albert_tf.progress import Progress

        articles, examples = squad.read_squad(path, config.task.version, labeled=labeled, report=self._report_once)
        if not examples:
            raise ValueError(f"{path}: no questions")
        progress = Progress(len(examples), lambda done, elapsed: f"{what}: {done}/{len(examples)} questions")
        features = squad.convert_examples_to_features(
            examples, tokenizer, max_seq_length=config.max_seq_length, doc_stride=config.task.doc_stride,
            max_query_length=config.task.max_query_length, progress=progress)
        progress.finish(len(examples))
        return articles, examples, features

    def _report_once(self, line):
        # The predict file is read for --do_eval and again for --do_predict: its line is said once.
        reported = self.__dict__.setdefault("_reported", set())
        if line not in reported:
            reported.add(line)
            print(line, flush=True)

    def read_train(self, tokenizer, config):
        features = self._features(config.task.train_file, tokenizer, config, True, "train")[2]
        return squad.feature_arrays(features, with_answerability=v2_head(config) == "original")

    def read_eval(self, tokenizer, config):
        data = self._features(config.task.predict_file, tokenizer, config, False, "eval")
        if not _answered(data[1]):
            raise SettingError(f"{config.task.predict_file}: has questions without answers; <do_eval> needs answers to "
                               "score")
        return data

    def example_losses(self, batch, outputs):
        if "cls_logits" in outputs:  # the original SQuAD 2.0 head's training outputs
            return squad_v2_losses(batch, outputs)
        return span_losses(batch["start_positions"], batch["end_positions"], outputs)

    def trainable_variables(self, model):
        # The pooler is on neither span head's path and gets no gradient.
        return [v for v in model.trainable_variables if "pooler" not in v.path]

    def _answers(self, model, articles, examples, features, config):
        """(predictions, nbest, null_odds, metrics) of the model on the windows; metrics None when `articles`
        is None (questions without answers)."""
        from albert_tf.tasks.squad_evaluation import evaluate

        if v2_head(config) == "original":
            return self._beam_answers(model, articles, examples, features, config)
        threshold = config.task.null_score_diff_threshold
        start_logits, end_logits = span_logits(model, features, config.predict_batch_size, progress="answering")
        predictions, nbest, null_odds = squad.postprocess_predictions(
            examples, features, start_logits, end_logits, n_best_size=config.task.n_best_size,
            max_answer_length=config.task.max_answer_length, version_2_with_negative=config.task.version == "2.0",
            null_score_diff_threshold=0.0 if threshold is None else threshold)
        if articles is None:
            metrics = None
        elif config.task.version == "2.0":
            # math.inf: score the predictions as written; null_odds only feed the best-threshold search.
            metrics = {**evaluate(articles, predictions, na_probs=null_odds, na_prob_thresh=math.inf),
                       "metric": "squad"}
        else:
            metrics = qa_metrics.evaluate(scoring_metric(config, articles), articles, predictions)
        return predictions, nbest, null_odds, metrics

    def _beam_answers(self, model, articles, examples, features, config):
        """`_answers` of the original SQuAD 2.0 head: no answer above the threshold of the best F1 on
        `articles`, unless null_score_diff_threshold names one."""
        from albert_tf.tasks.squad_evaluation import evaluate

        outputs = predict_outputs(model, squad.feature_arrays(features, with_positions=False),
                                  config.predict_batch_size, BEAM_OUTPUTS, progress="answering")
        answers, nbest, no_answer_scores = squad.postprocess_beam_predictions(
            examples, features, outputs, n_best_size=config.task.n_best_size,
            max_answer_length=config.task.max_answer_length)
        threshold = config.task.null_score_diff_threshold
        if articles is None:
            threshold = 0.0 if threshold is None else threshold
            return squad.decide_no_answer(answers, no_answer_scores, threshold), nbest, no_answer_scores, None
        # Every question answered, as the original's first pass: what the threshold search starts from.
        searched = evaluate(articles, answers, na_probs=no_answer_scores, na_prob_thresh=math.inf)
        if threshold is None:
            threshold = searched["best_f1_thresh"]
        predictions = squad.decide_no_answer(answers, no_answer_scores, threshold)
        at_zero = evaluate(articles, squad.decide_no_answer(answers, no_answer_scores, 0.0))
        # Scored as the original reports them: also "" wherever the no-answer score exceeds the official
        # script's na_prob_thresh 1.0 (what that script gives for predictions.json with null_odds.json).
        scored = evaluate(articles, predictions, na_probs=no_answer_scores, na_prob_thresh=OFFICIAL_NA_PROB_THRESH)
        metrics = {**scored, **{key: searched[key] for key in BEST_THRESHOLD_KEYS},
                   "null_score_diff_threshold": threshold, "exact_at_threshold_0": at_zero["exact"],
                   "f1_at_threshold_0": at_zero["f1"], "metric": "squad"}
        return predictions, nbest, no_answer_scores, metrics

    def _kept(self, fingerprint, path):
        """The answers an earlier pass of weights `fingerprint` gave to the file `path`, or None."""
        for kept_fingerprint, kept_path, eval_data, answers in self.__dict__.get("_kept_answers", ()):
            if (kept_fingerprint, kept_path) == (fingerprint, path):
                print(f"{path}: answered by these weights before (an earlier evaluation); its answers reused",
                      flush=True)
                return eval_data, answers
        return None

    def _keep(self, fingerprint, path, eval_data, answers, config):
        """Keeps the answers of the newest evaluation and of the best so far (the trainer's rule: the highest
        best_metric, the earlier on a tie): the best checkpoint, scored while training, is scored again after
        it and then answers the same file for do_predict. Only these two: each holds every question's n-best."""
        metric = self.best_metric(config)
        entries = [entry for entry in self.__dict__.get("_kept_answers", ()) if entry[0] != fingerprint]
        newest = (fingerprint, path, eval_data, answers)
        best = max(entries + [newest], key=lambda entry: entry[3][3][metric])
        self._kept_answers = [newest] + ([best] if best is not newest else [])

    def evaluate(self, model, eval_data, config):
        path, fingerprint = config.task.predict_file, weights_fingerprint(model)
        kept = self._kept(fingerprint, path)
        if kept is not None:
            return kept[1][3]
        answers = self._answers(model, *eval_data, config)
        self._keep(fingerprint, path, eval_data, answers, config)
        return answers[3]

    def best_metric(self, config):
        return "f1"

    def output_files(self, config):
        return [squad.PREDICTIONS_FILE, squad.NBEST_FILE, squad.NULL_ODDS_FILE]

    def predict(self, model, tokenizer, config, output_dir):
        kept = self._kept(weights_fingerprint(model), config.task.predict_file)
        if kept is not None:  # an evaluation of this file (its questions all answered) by these weights
            (articles, examples, features), (predictions, nbest, null_odds, metrics) = kept
            answered = True
        else:
            articles, examples, features = self._features(config.task.predict_file, tokenizer, config, False,
                                                          "predict")
            answered = _answered(examples)
            predictions, nbest, null_odds, metrics = self._answers(model, articles if answered else None, examples,
                                                                   features, config)
        written = squad.write_predictions(output_dir, predictions, nbest,
                                          null_odds if config.task.version == "2.0" else None)
        print(f"Answered {len(examples)} questions ({len(features)} windows): " + ", ".join(written), flush=True)
        if not answered:
            last = " Answered with the last checkpoint: none could be scored on it." if config.do_train else ""
            print(f"{config.task.predict_file} has questions without answers: not scored.{last}", flush=True)
            if v2_head(config) == "original" and config.task.null_score_diff_threshold is None:
                print("No answer where the no-answer score exceeds 0; a threshold tuned on dev (the "
                      "null_score_diff_threshold of a scored run's eval_results.json) is passed as "
                      "--null_score_diff_threshold.", flush=True)
        return metrics, written

    def eval_results(self, evaluation, prediction):
        return prediction or evaluation

    def summary(self, metrics):
        line = f"EM {metrics['exact']:.2f}, F1 {metrics['f1']:.2f} on {metrics['total']} questions"
        if metrics.get("metric", "squad") != "squad":
            line += f" ({qa_metrics.TITLES[metrics['metric']]} official metric)"
        if "f1_at_threshold_0" in metrics:
            line += (f" with --null_score_diff_threshold={metrics['null_score_diff_threshold']:.4g} (at 0: EM "
                     f"{metrics['exact_at_threshold_0']:.2f}, F1 {metrics['f1_at_threshold_0']:.2f})")
        elif "best_f1" in metrics:
            line += (f" (best F1 {metrics['best_f1']:.2f} with --null_score_diff_threshold="
                     f"{metrics['best_f1_thresh']:.4g})")
        return line


def scoring_metric(config, articles):
    """The official metric that scores this run's answers on `articles`: --metric, or for a --metric=auto
    that nothing resolved (a task built by hand) the one their contexts call for."""
    if config.task.metric != "auto":
        return config.task.metric
    if config.task.version == "2.0":
        return "squad"
    return qa_metrics.pick_metric(articles, config.task.predict_file or "the scored file")[0]


def v2_head(config):
    """The SQuAD 2.0 head a run fine-tunes or evaluates ("original" or "null_score"); None for SQuAD 1.1."""
    if config.task.version != "2.0":
        return None
    return config.task.squad_v2_head or "original"


def recorded_v2_head(init_checkpoint):
    """The head of the SQuAD 2.0 model `init_checkpoint` holds, or None when it holds none (any other model)."""
    from albert_tf.models.model_dir_format import model_metadata

    if not init_checkpoint:
        return None
    try:
        metadata = model_metadata(init_checkpoint)
    except (FileNotFoundError, ValueError):
        return None  # loading it names the problem
    if metadata.get("squad_version") != "2.0":
        return None
    return {kind: head for head, kind in V2_MODEL_KINDS.items()}.get(metadata["model"])


def squad_v2_losses(batch, outputs):
    """The original SQuAD 2.0 loss of each window, [batch] float32: (CE(start) + CE(end)) / 2, the end's
    given the gold start, + 0.5 * the sigmoid cross-entropy of cls_logits against is_impossible (1 for a
    window without the answer, whose start and end are [CLS]). Its batch mean is the original's loss."""
    import tensorflow as tf

    def picked(log_probs, positions):
        positions = tf.reshape(tf.cast(positions, tf.int32), [-1, 1])
        return tf.gather(tf.cast(log_probs, tf.float32), positions, batch_dims=1)[:, 0]

    start_losses = -picked(outputs["start_log_probs"], batch["start_positions"])
    end_losses = -picked(outputs["end_log_probs"], batch["end_positions"])
    answerability_losses = tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(batch["is_impossible"], tf.float32), logits=tf.cast(outputs["cls_logits"], tf.float32))
    return (start_losses + end_losses) / 2.0 + 0.5 * answerability_losses


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


def weights_fingerprint(model):
    """A digest of the model's weights (names and bytes): equal for the same weights, as the best checkpoint read
    back from disk is to the weights that were scored while training."""
    import keras
    import numpy as np

    digest = hashlib.blake2b(digest_size=16)
    for variable in model.weights:
        digest.update(variable.path.encode("utf-8"))
        digest.update(np.ascontiguousarray(keras.ops.convert_to_numpy(variable.value)).tobytes())
    return digest.hexdigest()


def _answered(examples):
    return all(example.is_impossible or example.gold_answers for example in examples)


def span_logits(model, features, batch_size, progress=None):
    """(start_logits, end_logits): float32 arrays [num_features, seq] (spread over the replicas of the
    strategy in scope, as `predict_outputs` does; `progress`: its label)."""
    arrays = squad.feature_arrays(features, with_positions=False)
    outputs = predict_outputs(model, arrays, batch_size, ("start_logits", "end_logits"), progress=progress)
    return outputs["start_logits"], outputs["end_logits"]
