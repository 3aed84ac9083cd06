"""SQuAD 2.0 with the original ALBERT's v2 model: the head against a numpy transcription of the original's
create_v2_model, its loss, the beam's answers and the no-answer decision, the conversion of a checkpoint
with the original's names, the recipe, and the CLI."""

import dataclasses
import json
import math

import numpy as np
import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.tasks import squad
from albert_tf.tasks.squad_evaluation import evaluate, f1

CONFIG = AlbertConfig(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=32)
SEQ = 16
# (question tokens, context tokens) of the windows below, packed [CLS] question [SEP] context [SEP] + padding.
WINDOWS = [(3, 7), (2, 10), (4, 5)]
# The original run_squad_v2's variable names and shapes for hidden size H (besides the encoder's under bert/).
HEAD_SHAPES = {
    "start_logits/dense/kernel": (16, 1), "start_logits/dense/bias": (1,),
    "end_logits/dense_0/kernel": (32, 16), "end_logits/dense_0/bias": (16,),
    "end_logits/LayerNorm/gamma": (16,), "end_logits/LayerNorm/beta": (16,),
    "end_logits/dense_1/kernel": (16, 1), "end_logits/dense_1/bias": (1,),
    "answer_class/dense_0/kernel": (32, 16), "answer_class/dense_0/bias": (16,),
    "answer_class/dense_1/kernel": (16, 1),
}


def packed_windows(rng):
    """Encoder inputs of WINDOWS and, built as the original's convert_examples_to_features builds it, p_mask."""
    ids, masks, types, p_masks = [], [], [], []
    for query, context in WINDOWS:
        tokens = [2] + list(rng.integers(5, 40, query)) + [3] + list(rng.integers(5, 40, context)) + [3]
        p_mask = [0] + [1] * query + [1] + [0] * context + [1]
        segments = [0] * (query + 2) + [1] * (context + 1)
        padding = SEQ - len(tokens)
        ids.append(tokens + [0] * padding)
        masks.append([1] * len(tokens) + [0] * padding)
        types.append(segments + [0] * padding)
        p_masks.append(p_mask + [1] * padding)
    inputs = {"input_word_ids": np.array(ids, np.int32), "input_mask": np.array(masks, np.int32),
              "input_type_ids": np.array(types, np.int32)}
    return inputs, np.array(p_masks, np.float64)


def random_head_tensors(rng):
    return {name: rng.normal(0.0, 0.5, shape).astype(np.float32) for name, shape in HEAD_SHAPES.items()}


# ----------------------------------------------------------------------------
# The original create_v2_model (run_squad_v2's squad_utils), transcribed to numpy


def _log_softmax(x):
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + 1e-12) * gamma + beta


class OriginalV2Head:
    """The original's head on one window: `output` [L, H] (the encoder's), `p_mask` [L], weights `w` by name."""

    def __init__(self, w, output, p_mask):
        self.w, self.output, self.p_mask = w, np.asarray(output, np.float64), p_mask
        start_logits = self.output @ w["start_logits/dense/kernel"][:, 0] + w["start_logits/dense/bias"][0]
        self.start_logits_masked = start_logits * (1 - p_mask) - 1e30 * p_mask
        self.start_log_probs = _log_softmax(self.start_logits_masked)

    def end_log_probs(self, start):
        """The end's log-probabilities given the start position (dense_0 on [h_i, h_start], tanh, LayerNorm,
        dense_1, masked)."""
        w = self.w
        features = np.concatenate([self.output, np.repeat(self.output[start][None], len(self.output), 0)], -1)
        hidden = np.tanh(features @ w["end_logits/dense_0/kernel"] + w["end_logits/dense_0/bias"])
        hidden = _layer_norm(hidden, w["end_logits/LayerNorm/gamma"], w["end_logits/LayerNorm/beta"])
        logits = hidden @ w["end_logits/dense_1/kernel"][:, 0] + w["end_logits/dense_1/bias"][0]
        return _log_softmax(logits * (1 - self.p_mask) - 1e30 * self.p_mask)

    def cls_logit(self):
        start_p = np.exp(_log_softmax(self.start_logits_masked))
        features = np.concatenate([start_p @ self.output, self.output[0]])
        hidden = np.tanh(features @ self.w["answer_class/dense_0/kernel"] + self.w["answer_class/dense_0/bias"])
        return float(hidden @ self.w["answer_class/dense_1/kernel"][:, 0])

    def beam(self, start_n_top=5, end_n_top=5):
        """(start log probs, starts, end log probs, ends): tf.nn.top_k of the starts, then of each start's ends."""
        starts = np.argsort(-self.start_log_probs, kind="stable")[:start_n_top]
        end_log_probs, ends = [], []
        for start in starts:
            log_probs = self.end_log_probs(start)
            top = np.argsort(-log_probs, kind="stable")[:end_n_top]
            ends.extend(top)
            end_log_probs.extend(log_probs[top])
        return self.start_log_probs[starts], starts, np.array(end_log_probs), np.array(ends)

    def loss(self, start_position, end_position, is_impossible):
        """The original's training loss of this window: (start_loss + end_loss) / 2 + 0.5 * sigmoid xent."""
        start_loss = -self.start_log_probs[start_position]
        end_loss = -self.end_log_probs(start_position)[end_position]
        logit = self.cls_logit()
        # tf.nn.sigmoid_cross_entropy_with_logits: max(x, 0) - x z + log(1 + exp(-|x|)).
        xent = max(logit, 0.0) - logit * is_impossible + math.log1p(math.exp(-abs(logit)))
        return (start_loss + end_loss) / 2 + 0.5 * xent


def labeler_with_head(tensors, seed=0):
    """A fresh AlbertSquadV2SpanLabeler of CONFIG whose head holds `tensors` (the original names)."""
    import keras

    from albert_tf.checkpoints.original_names import squad_v2_head_variables
    from albert_tf.models.albert_squad_v2_span_labeler import AlbertSquadV2SpanLabeler

    keras.utils.set_random_seed(seed)
    labeler = AlbertSquadV2SpanLabeler(CONFIG)
    head = squad_v2_head_variables(labeler)
    assert set(head) == set(HEAD_SHAPES)
    for name, mapped in head.items():
        mapped.assign(tensors[name])
    return labeler


# ----------------------------------------------------------------------------
# The model


def test_the_model_outputs_a_beam_and_round_trips_its_config_and_directory(tmp_path):
    from albert_tf.models.albert_squad_v2_span_labeler import AlbertSquadV2SpanLabeler
    from albert_tf.models.model_io import load_model, write_model_dir

    labeler = AlbertSquadV2SpanLabeler(CONFIG, start_n_top=3, end_n_top=4)
    inputs, _ = packed_windows(np.random.default_rng(0))
    outputs = labeler(inputs)
    shapes = {name: (tuple(value.shape), value.dtype.name) for name, value in outputs.items()}
    assert shapes == {"start_top_log_probs": ((3, 3), "float32"), "start_top_index": ((3, 3), "int32"),
                      "end_top_log_probs": ((3, 12), "float32"), "end_top_index": ((3, 12), "int32"),
                      "cls_logits": ((3,), "float32")}
    clone = AlbertSquadV2SpanLabeler.from_config(labeler.get_config())
    assert clone.get_config() == labeler.get_config() and clone.start_n_top == 3 and clone.end_n_top == 4

    write_model_dir(labeler, tmp_path / "labeler")
    loaded, metadata = load_model(str(tmp_path / "labeler"))
    assert metadata["model"] == "squad_v2_span_labeler" and (metadata["start_n_top"], metadata["end_n_top"]) == (3, 4)
    assert isinstance(loaded, AlbertSquadV2SpanLabeler)
    for name, value in loaded(inputs).items():
        np.testing.assert_array_equal(value, outputs[name], err_msg=name)
    with pytest.raises(ValueError, match="start_n_top=0 must be a positive integer"):
        AlbertSquadV2SpanLabeler(CONFIG, start_n_top=0)
    with pytest.raises(ValueError, match="needs the gold start_positions"):
        labeler.head_outputs(inputs)


def test_the_beam_is_the_originals_top_5_starts_then_top_5_ends():
    rng = np.random.default_rng(1)
    tensors = random_head_tensors(rng)
    labeler = labeler_with_head(tensors)
    inputs, p_mask = packed_windows(rng)
    outputs = {name: np.asarray(value) for name, value in labeler(inputs).items()}
    sequence_output = np.asarray(labeler.encoder(inputs)["sequence_output"])
    for row in range(len(WINDOWS)):
        original = OriginalV2Head(tensors, sequence_output[row], p_mask[row])
        start_log_probs, starts, end_log_probs, ends = original.beam()
        np.testing.assert_array_equal(outputs["start_top_index"][row], starts)
        np.testing.assert_array_equal(outputs["end_top_index"][row], ends)
        np.testing.assert_allclose(outputs["start_top_log_probs"][row], start_log_probs, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(outputs["end_top_log_probs"][row], end_log_probs, rtol=1e-4, atol=1e-4)
        assert outputs["cls_logits"][row] == pytest.approx(original.cls_logit(), rel=1e-4, abs=1e-4)
        # Only [CLS] and the context can start or end an answer: the other positions' log-probs are ~ -1e30.
        assert all(p_mask[row, start] == 0 for start in starts) and all(p_mask[row, end] == 0 for end in ends)


def test_the_loss_is_the_originals_with_the_end_given_the_gold_start():
    from albert_tf.tasks.squad_task import SquadTask

    rng = np.random.default_rng(2)
    tensors = random_head_tensors(rng)
    labeler = labeler_with_head(tensors)
    inputs, p_mask = packed_windows(rng)
    # An answer in the first window's context, a window without the answer ([CLS], impossible), another answer.
    batch = {**inputs, "start_positions": np.array([6, 0, 8], np.int32), "end_positions": np.array([8, 0, 8], np.int32),
             "is_impossible": np.array([0, 1, 0], np.int32)}
    outputs = labeler.head_outputs({name: batch[name] for name in labeler.TRAINING_INPUTS}, training=False)
    losses = np.asarray(SquadTask().example_losses(batch, outputs))
    sequence_output = np.asarray(labeler.encoder(inputs)["sequence_output"])
    expected = [OriginalV2Head(tensors, sequence_output[row], p_mask[row]).loss(
        batch["start_positions"][row], batch["end_positions"][row], batch["is_impossible"][row])
        for row in range(len(WINDOWS))]
    np.testing.assert_allclose(losses, expected, rtol=1e-4)
    # The end is conditioned on the gold start: another start gives another end distribution.
    moved = labeler.head_outputs({**{name: batch[name] for name in labeler.TRAINING_INPUTS},
                                  "start_positions": np.array([7, 0, 8], np.int32)}, training=False)
    assert not np.allclose(np.asarray(moved["end_log_probs"])[0], np.asarray(outputs["end_log_probs"])[0])


# ----------------------------------------------------------------------------
# Answers from the beam, and the no-answer decision


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    from text_fixtures import train_small_spm

    return train_small_spm(tmp_path_factory, name="squad_v2_spm")


@pytest.fixture(scope="module")
def tokenizer(spm_model):
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    return AlbertTokenizer(str(spm_model))


def beam_rows(features, entries, cls_logits, start_n_top=2, end_n_top=2):
    """The head's outputs for `features`: entries {row: [(start, start_lp, [(end, end_lp), ...]), ...]}, the rest
    of the beam on position 1 (a question token: never valid)."""
    rows = len(features)
    outputs = {"start_top_log_probs": np.full((rows, start_n_top), -20.0, np.float32),
               "start_top_index": np.ones((rows, start_n_top), np.float32),  # floats, as predict_outputs gives
               "end_top_log_probs": np.full((rows, start_n_top * end_n_top), -20.0, np.float32),
               "end_top_index": np.ones((rows, start_n_top * end_n_top), np.float32),
               "cls_logits": np.asarray(cls_logits, np.float32)}
    for row, starts in entries.items():
        for k, (start, start_log_prob, ends) in enumerate(starts):
            outputs["start_top_index"][row, k], outputs["start_top_log_probs"][row, k] = start, start_log_prob
            for j, (end, end_log_prob) in enumerate(ends):
                outputs["end_top_index"][row, k * end_n_top + j] = end
                outputs["end_top_log_probs"][row, k * end_n_top + j] = end_log_prob
    return outputs


def test_beam_answers_keep_valid_spans_and_the_smallest_cls_logit_of_a_questions_windows(tokenizer):
    from test_squad import long_example

    example = long_example(tokenizer)
    features = squad.convert_examples_to_features([example], tokenizer, max_seq_length=24, doc_stride=5,
                                                  max_query_length=8)
    assert len(features) >= 2
    first, second = features[0], features[1]
    first_positions, second_positions = sorted(first.token_spans), sorted(second.token_spans)
    owned = [p for p in second_positions if second.token_is_max_context[p]]
    borrowed = second_positions[1]
    assert not second.token_is_max_context[borrowed] and owned[0] + 1 in second.token_spans
    assert first.token_is_max_context[first_positions[4]] and first_positions[-1] - first_positions[4] >= 3
    entries = {
        # The best pair ends before it starts; the next runs beyond max_answer_length 3; [CLS] starts none.
        0: [(first_positions[4], -0.1, [(first_positions[2], -0.1), (first_positions[-1], -0.2)]),
            (0, -0.2, [(0, -0.1)])],
        # A start whose token has more context in another window; then the valid answers.
        1: [(borrowed, -0.3, [(borrowed + 1, -0.1)]),
            (owned[0], -0.5, [(owned[0] + 1, -0.4), (owned[0], -0.6)])],
    }
    cls_logits = [0.7, -1.5] + [2.0] * (len(features) - 2)
    outputs = beam_rows(features, entries, cls_logits)
    answers, nbest, no_answer_scores = squad.postprocess_beam_predictions([example], features, outputs,
                                                                          n_best_size=5, max_answer_length=3)

    def text(feature, start, end):
        return example.context_text[feature.token_spans[start][0] : feature.token_spans[end][1]].strip()

    assert answers == {"long": text(second, owned[0], owned[0] + 1)}
    assert [entry["text"] for entry in nbest["long"]] == [text(second, owned[0], owned[0] + 1),
                                                          text(second, owned[0], owned[0])]
    assert nbest["long"][0]["start_log_prob"] == pytest.approx(-0.5)
    assert nbest["long"][0]["end_log_prob"] == pytest.approx(-0.4)
    probabilities = [entry["probability"] for entry in nbest["long"]]
    assert probabilities == pytest.approx([1 / (1 + math.exp(-0.2)), 1 / (1 + math.exp(0.2))])
    assert no_answer_scores == {"long": pytest.approx(-1.5)}
    # Nothing valid: the original's placeholder answer "".
    empty, nbest, _ = squad.postprocess_beam_predictions([example], features, beam_rows(features, {}, cls_logits))
    assert empty == {"long": ""} and nbest["long"][0]["start_log_prob"] == -1e6


def test_a_span_of_whitespace_only_is_a_candidate_answered_as_empty(tokenizer):
    """The original keeps it, its text "" (squad_utils' write_predictions_v2): the best answers "", before
    the no-answer decision, and takes one place of the n best."""
    from test_squad import whitespace_span_example

    example, feature, space, word = whitespace_span_example(tokenizer)
    outputs = beam_rows([feature], {0: [(space, -0.1, [(space, -0.1)]), (word, -0.2, [(word, -0.3)])]}, [0.0])
    answers, nbest, _ = squad.postprocess_beam_predictions([example], [feature], outputs, n_best_size=5)
    assert answers == {"q": ""}
    assert [entry["text"] for entry in nbest["q"]] == ["", example.context_text[slice(*feature.token_spans[word])]]
    assert nbest["q"][0]["start_log_prob"] == pytest.approx(-0.1)


def v2_articles():
    context = "Paris is the capital of France. The blue whale is the largest animal."
    questions = [("a", ["Paris"]), ("b", []), ("c", []), ("d", ["blue whale"]), ("e", ["France"])]
    return [{"paragraphs": [{"context": context, "qas": [
        {"id": qas_id, "question": "?", "is_impossible": not answers,
         "answers": [{"text": text, "answer_start": context.index(text)} for text in answers]}
        for qas_id, answers in questions]}]}]


# The beam's answer of each question of v2_articles (b and c have none).
V2_ANSWERS = {"a": "Paris", "b": "the capital", "c": "the largest", "d": "blue whale", "e": "France"}


def beam_answers(monkeypatch, cls_logits, articles, config):
    """The task's `_answers` on hand-made beam outputs: each question of v2_articles answers V2_ANSWERS, one
    window per question but "d", which has two (cls_logits: one per window, rows a, b, c, d, d, e)."""
    from albert_tf.tasks import squad_task
    from albert_tf.tasks.squad_task import SquadTask

    context = v2_articles()[0]["paragraphs"][0]["context"]
    examples = [squad.SquadExample(qas_id, "?", context, "", -1) for qas_id in V2_ANSWERS]
    rows = [0, 1, 2, 3, 3, 4]
    features = []
    for row, example_index in enumerate(rows):
        text = V2_ANSWERS[examples[example_index].qas_id]
        span = (context.index(text), context.index(text) + len(text))
        features.append(squad.SquadFeature(row, example_index, 0, [], [], [], {5: span}, {5: True}, None, None,
                                           False))
    outputs = beam_rows(features, {row: [(5, -0.1, [(5, -0.1)])] for row in range(len(rows))},
                        np.array(cls_logits, np.float32), start_n_top=1, end_n_top=1)
    monkeypatch.setattr(squad_task, "predict_outputs", lambda model, arrays, batch_size, names, progress=None: outputs)
    return SquadTask()._answers(None, articles, examples, features, config)


def original_evaluate_v2(articles, answers, na_probs):
    """The original's evaluate_v2 (squad_utils.py), transcribed: the best F1's threshold searched with every
    question answered (find_best_thresh: 0.0 when none beats answering nothing), "" where a question's
    na_prob is at or above it (write_predictions_v2), and EM / F1 with na_prob_thresh 1.0 applied
    (apply_no_ans_threshold). Returns (threshold, predictions, {exact, f1})."""
    from albert_tf.tasks.squad_evaluation import raw_scores

    has_answer = {qa["id"]: bool(qa["answers"]) for qa in articles[0]["paragraphs"][0]["qas"]}
    score = best_score = sum(not has for has in has_answer.values())
    threshold = 0.0
    f1_raw = raw_scores(articles, answers)[1]
    for qas_id in sorted(na_probs, key=lambda q: na_probs[q]):
        score += f1_raw[qas_id] if has_answer[qas_id] else -1 if answers[qas_id] else 0
        if score > best_score:
            best_score, threshold = score, na_probs[qas_id]
    predictions = {q: answers[q] if na_probs[q] < threshold else "" for q in answers}

    def reported(scores):
        scores = {q: float(not has_answer[q]) if na_probs[q] > 1.0 else value for q, value in scores.items()}
        return 100.0 * sum(scores.values()) / len(scores)

    exact, f1_scores = raw_scores(articles, predictions)
    return threshold, predictions, {"exact": reported(exact), "f1": reported(f1_scores)}


def test_the_threshold_is_the_one_with_the_best_f1_and_predictions_use_it(monkeypatch):
    """The task's decision on hand-made beam outputs: no-answer scores are each question's smallest
    cls_logits, the threshold maximizes F1 (a brute-force oracle here), and the reported EM/F1 are those of
    the predictions at it, beside those at threshold 0."""
    from albert_tf.tasks.squad_task import SquadConfig
    from albert_tf.training.finetuning_config import FinetuningConfig

    articles = v2_articles()
    answers = V2_ANSWERS
    # "d"'s answer window says "no answer" less (min: -2.0).
    cls_logits = [-3.0, 0.5, 2.5, 1.0, -2.0, 0.25]
    config = FinetuningConfig(task=SquadConfig(version="2.0"))
    predictions, _, no_answer_scores, metrics = beam_answers(monkeypatch, cls_logits, articles, config)

    assert no_answer_scores == pytest.approx({"a": -3.0, "b": 0.5, "c": 2.5, "d": -2.0, "e": 0.25})
    golds = {"a": "Paris", "b": "", "c": "", "d": "blue whale", "e": "France"}

    def f1_at(threshold):
        decided = {q: "" if no_answer_scores[q] > threshold else answers[q] for q in answers}
        return 100 * sum(f1(golds[q], decided[q]) for q in golds) / len(golds), decided

    candidates = [-math.inf, *sorted(no_answer_scores.values())]
    best_threshold = max(candidates, key=lambda threshold: f1_at(threshold)[0])  # the first of the best
    assert best_threshold == pytest.approx(0.25)  # b (0.5) and c (2.5) stay unanswered, e (0.25) answered
    assert metrics["null_score_diff_threshold"] == pytest.approx(best_threshold)
    assert metrics["best_f1_thresh"] == pytest.approx(best_threshold)
    assert predictions == f1_at(best_threshold)[1]
    assert metrics["f1"] == pytest.approx(f1_at(best_threshold)[0]) == pytest.approx(metrics["best_f1"])
    assert metrics["f1"] == pytest.approx(100.0)
    # At threshold 0: e (0.25) is left unanswered, b and c too.
    assert metrics["f1_at_threshold_0"] == pytest.approx(f1_at(0.0)[0]) == pytest.approx(80.0)
    assert metrics == {**evaluate(articles, predictions), "metric": "squad", **{key: metrics[key] for key in (
        "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh", "null_score_diff_threshold",
        "exact_at_threshold_0", "f1_at_threshold_0")}}

    # A threshold given is used as it is; a file without answers is answered at 0 unless one is given.
    given = dataclasses.replace(config, task=SquadConfig(version="2.0", null_score_diff_threshold=1.0))
    predictions, _, _, metrics = beam_answers(monkeypatch, cls_logits, articles, given)
    assert predictions == f1_at(1.0)[1] and metrics["null_score_diff_threshold"] == 1.0
    predictions, _, _, metrics = beam_answers(monkeypatch, cls_logits, None, config)
    assert predictions == f1_at(0.0)[1] and metrics is None


@pytest.mark.parametrize("cls_logits, threshold", [
    # The best threshold is 2.0: "d" (1.5) and "e" (2.0) are answered, but the reported EM / F1 count
    # them as "" (above 1.0), as the original's do.
    ([-3.0, 3.0, 4.0, 1.5, 1.5, 2.0], 2.0),
    # No threshold beats answering nothing: 0.0, where "a" and "d" are answered (wrongly, here).
    ([-3.0, -1.0, -2.0, -0.5, -0.5, 0.5], 0.0),
])
def test_the_threshold_and_the_reported_scores_are_the_originals(monkeypatch, cls_logits, threshold):
    from albert_tf.tasks.squad_task import SquadConfig
    from albert_tf.training.finetuning_config import FinetuningConfig

    articles = v2_articles()
    if threshold == 0.0:  # every answer wrong: answering nothing is best
        articles[0]["paragraphs"][0]["context"] += " Rome. The shark."
        context = articles[0]["paragraphs"][0]["context"]
        for qa, text in zip(articles[0]["paragraphs"][0]["qas"], ["Rome", "", "", "The shark", "Rome"]):
            qa["answers"] = [{"text": text, "answer_start": context.index(text)}] if text else []
    config = FinetuningConfig(task=SquadConfig(version="2.0"))
    predictions, _, no_answer_scores, metrics = beam_answers(monkeypatch, cls_logits, articles, config)
    original_threshold, original_predictions, reported = original_evaluate_v2(articles, V2_ANSWERS,
                                                                               no_answer_scores)
    assert metrics["null_score_diff_threshold"] == original_threshold == threshold
    assert (metrics["exact"], metrics["f1"]) == pytest.approx((reported["exact"], reported["f1"]))
    # albert_tf answers the question at the threshold (the official rule: "" above it); the original does not.
    at_threshold = {q for q, score in no_answer_scores.items() if score == threshold}
    assert {q: a for q, a in predictions.items() if q not in at_threshold} == {
        q: a for q, a in original_predictions.items() if q not in at_threshold}


# ----------------------------------------------------------------------------
# A checkpoint of the original's v2 model


def test_an_original_v2_checkpoint_converts_with_its_head_and_back(tmp_path):
    import tensorflow as tf

    from albert_tf.checkpoints.assign import read_model_tensors
    from albert_tf.checkpoints.conversion import convert
    from albert_tf.checkpoints.tf1_format import write_tf1_checkpoint
    from albert_tf.models.albert_squad_v2_span_labeler import AlbertSquadV2SpanLabeler
    from albert_tf.models.model_io import load_model
    from albert_tf.networks.albert_encoder import AlbertEncoder

    rng = np.random.default_rng(3)
    head = random_head_tensors(rng)
    encoder = {name: rng.normal(0.0, 0.2, value.shape).astype(np.float32)
               for name, value in read_model_tensors(AlbertEncoder(CONFIG)).items()}
    assert not set(encoder) & set(head) and all(name.startswith("bert/") for name in encoder)
    # What the original's training leaves beside the model: the step and AdamW's slots, which stay behind.
    bookkeeping = {"global_step": np.array(100, np.int64),
                   **{f"{name}/adam_{slot}": np.zeros_like(value) for name, value in head.items() for slot in "mv"}}
    source = tmp_path / "squad2"
    source.mkdir()
    write_tf1_checkpoint({**encoder, **head, **bookkeeping}, str(source / "model.ckpt-best"))
    CONFIG.to_json_file(source / "albert_config.json")

    summary = convert("tf1", "albert_tf", str(source / "model.ckpt-best"), str(tmp_path / "ours"))
    assert summary["kind"] == "squad_v2_span_labeler" and summary["tensors"] == len(encoder) + len(head)
    labeler, metadata = load_model(str(tmp_path / "ours"))
    assert isinstance(labeler, AlbertSquadV2SpanLabeler)
    assert (metadata["squad_version"], metadata["squad_v2_head"]) == ("2.0", "original")
    # Each original tensor in its Keras variable, in Keras's layout (a TF1 dense kernel is [in, out] too).
    layers = labeler.squad_v2_head
    landed = {"start_logits/dense/kernel": layers.start_dense.kernel,
              "end_logits/dense_0/kernel": layers.end_dense_0.kernel,
              "end_logits/dense_0/bias": layers.end_dense_0.bias,
              "end_logits/LayerNorm/gamma": layers.end_layer_norm.gamma,
              "end_logits/LayerNorm/beta": layers.end_layer_norm.beta,
              "end_logits/dense_1/bias": layers.end_dense_1.bias,
              "answer_class/dense_0/kernel": layers.answer_dense_0.kernel,
              "answer_class/dense_1/kernel": layers.answer_dense_1.kernel}
    for name, variable in landed.items():
        np.testing.assert_array_equal(variable.numpy(), head[name], err_msg=name)
    assert layers.answer_dense_1.bias is None
    np.testing.assert_array_equal(labeler.encoder.embeddings.word_embeddings.numpy(),
                                  encoder["bert/embeddings/word_embeddings"])

    # The converted model computes the original's head on the raw arrays.
    inputs, p_mask = packed_windows(rng)
    outputs = labeler(inputs)
    sequence_output = np.asarray(labeler.encoder(inputs)["sequence_output"])
    for row in range(len(WINDOWS)):
        original = OriginalV2Head(head, sequence_output[row], p_mask[row])
        start_log_probs, starts, end_log_probs, ends = original.beam()
        np.testing.assert_array_equal(np.asarray(outputs["end_top_index"])[row], ends)
        np.testing.assert_allclose(np.asarray(outputs["end_top_log_probs"])[row], end_log_probs, atol=1e-4)
        assert float(outputs["cls_logits"][row]) == pytest.approx(original.cls_logit(), abs=1e-4)

    # Back to the original's names, tensor for tensor; Hugging Face has no such model.
    convert("albert_tf", "tf1", str(tmp_path / "ours"), str(tmp_path / "back"))
    reader = tf.train.load_checkpoint(str(tmp_path / "back" / "model.ckpt"))
    assert set(reader.get_variable_to_shape_map()) == set(encoder) | set(head)
    for name, value in {**encoder, **head}.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value, err_msg=name)
    with pytest.raises(ValueError, match="'squad_v2_span_labeler' model; Hugging Face has no model with its head"):
        convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))
    assert not (tmp_path / "hf").exists()


def test_the_serving_model_answers_with_the_best_valid_span_of_the_beam(tokenizer):
    """Export's serving module of the kind: the best span of the beam among the context's tokens, its start +
    end log-probability, and the answerability logit as no_answer_score."""
    import tensorflow as tf

    from albert_tf.export_lib.serving_module import serving_module
    from albert_tf.models.albert_squad_v2_span_labeler import AlbertSquadV2SpanLabeler
    from albert_tf.text.packing import pack_batch
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    labeler = AlbertSquadV2SpanLabeler(dataclasses.replace(CONFIG, vocab_size=tokenizer.vocab_size))
    questions = ["Which river?", "Where is the garden?", "Who?"]
    contexts = ["island summer island winter bridge market", "the garden is near the old village river", ""]
    serving = serving_module(TFAlbertTokenizer(tokenizer.model_proto), 24, labeler,
                             {"model": "squad_v2_span_labeler"})
    assert "serve_text" not in serving.signatures()
    served = {name: value.numpy() for name, value in serving.serve(tf.constant(questions),
                                                                   tf.constant(contexts)).items()}
    inputs = pack_batch(tokenizer, questions, contexts, 24)
    outputs = {name: np.asarray(value) for name, value in labeler(inputs).items()}
    np.testing.assert_allclose(served["no_answer_score"], outputs["cls_logits"], rtol=1e-5, atol=1e-5)
    for row in range(2):
        length = int(inputs["input_mask"][row].sum())
        context = {p for p in range(length - 1) if inputs["input_type_ids"][row, p] == 1}
        pairs = [(outputs["start_top_log_probs"][row, k] + outputs["end_top_log_probs"][row, k * 5 + j],
                  outputs["start_top_index"][row, k], outputs["end_top_index"][row, k * 5 + j])
                 for k in range(5) for j in range(5)]
        valid = [(score, start, end) for score, start, end in pairs
                 if start in context and end in context and start <= end < start + 30]
        if not valid:
            assert served["start"][row] == -1 and served["answer"][row] == b""
            continue
        score, start, end = max(valid, key=lambda pair: pair[0])
        assert (served["start"][row], served["end"][row]) == (start, end)
        assert served["score"][row] == pytest.approx(score, abs=1e-5)
        assert served["answer"][row].decode() in contexts[row]
    assert (served["start"][:2] >= 0).any()  # a span found: the comparison above ran
    assert (served["start"][2], served["end"][2], served["answer"][2]) == (-1, -1, b"")  # no context


# ----------------------------------------------------------------------------
# The recipe and the settings


def test_the_recipe_is_the_originals_lr_and_step_count():
    from albert_tf.tasks.squad_task import SquadConfig, SquadTask
    from albert_tf.training.finetuning_config import FinetuningConfig
    from albert_tf.training.finetuning_tool import training_schedule

    task = SquadTask()
    for version in ("1.1", "2.0"):
        config = FinetuningConfig(task=SquadConfig(version=version))
        assert task.recipe(config).learning_rate == 5e-5
        # run_squad_v1/v2: int(len(train_examples) / 48 * 2) steps, int(0.1 * steps) warmup.
        for questions in (87599, 130319, 1000, 24):
            steps = int(questions / 48 * 2.0)
            assert training_schedule(task.recipe(config), questions, config, task.epoch_steps) == (
                5e-5, 48, steps, int(steps * 0.1))
    assert training_schedule(task.recipe(config), 87599, config, task.epoch_steps)[2:] == (3649, 364)
    assert task.epoch_steps(10, 2.0, 48) == 1  # at least one step


def test_an_epoch_is_the_training_questions_not_their_windows(tmp_path, tokenizer):
    from test_squad import long_example, qa, squad_json

    from albert_tf.tasks.squad_task import SquadConfig, SquadTask
    from albert_tf.training.finetuning_config import FinetuningConfig

    example = long_example(tokenizer)
    records = [qa(f"q{i}", example.question_text, example.context_text, [example.answer_text]) for i in range(3)]
    path = tmp_path / "train.json"
    path.write_text(json.dumps(squad_json([(example.context_text, records)])), encoding="utf-8")
    config = FinetuningConfig(max_seq_length=24, task=SquadConfig(version="1.1", train_file=str(path), doc_stride=5,
                                                                  max_query_length=8))
    train = SquadTask().read_train(tokenizer, config)
    assert len(train["start_positions"]) > 3  # several windows a question
    assert "is_impossible" not in train
    assert SquadTask().epoch_size(train, config) == (3, "Questions")


def test_the_v2_head_is_a_setting_recorded_with_the_model(tmp_path):
    from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
    from albert_tf.models.albert_squad_v2_span_labeler import AlbertSquadV2SpanLabeler
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.networks.albert_encoder import AlbertEncoder
    from albert_tf.settings import SettingError
    from albert_tf.tasks.squad_task import SquadConfig, SquadTask
    from albert_tf.training.finetuning_config import FinetuningConfig

    task = SquadTask()

    def config(init=None, **settings):
        return FinetuningConfig(output_dir="out", init_checkpoint=init, do_train=True, max_seq_length=64,
                                task=SquadConfig(version=settings.pop("version", "2.0"),
                                                 train_file=str(tmp_path / "train.json"), **settings))

    (tmp_path / "train.json").write_text("{}")
    with pytest.raises(SettingError, match=r"^squad_v2_head is for version=2.0"):
        task.validate(config(version="1.1", squad_v2_head="original"))
    with pytest.raises(SettingError, match=r"^squad_v2_head must be one of \['original', 'null_score'\]"):
        task.validate(config(squad_v2_head="bert"))

    encoder = write_model_dir(AlbertEncoder(CONFIG), tmp_path / "encoder")
    null_score = write_model_dir(AlbertSpanLabeler(CONFIG), tmp_path / "null", squad_version="2.0")
    v1 = write_model_dir(AlbertSpanLabeler(CONFIG), tmp_path / "v1", squad_version="1.1")
    original = write_model_dir(AlbertSquadV2SpanLabeler(CONFIG), tmp_path / "original", squad_version="2.0")
    heads = {None: "original", encoder: "original", v1: "original", null_score: "null_score", original: "original"}
    for init, head in heads.items():
        assert task.resolve(config(init)).task.squad_v2_head == head, init
    assert task.resolve(config(null_score, squad_v2_head="original")).task.squad_v2_head == "original"
    assert task.resolve(config(version="1.1")).task.squad_v2_head is None

    resolved = {head: task.resolve(config(squad_v2_head=head)) for head in squad.V2_HEADS}
    assert [task.kind(resolved[head]) for head in squad.V2_HEADS] == ["squad_v2_span_labeler", "span_labeler"]
    assert [task.title(resolved[head]) for head in squad.V2_HEADS] == ["SQuAD 2.0",
                                                                       "SQuAD 2.0 (BERT's null-score head)"]
    assert task.metadata(resolved["original"]) == {"squad_version": "2.0", "max_seq_length": 64,
                                                   "squad_v2_head": "original"}
    assert isinstance(task.build_model(AlbertEncoder(CONFIG), resolved["original"]), AlbertSquadV2SpanLabeler)
    assert type(task.build_model(AlbertEncoder(CONFIG), resolved["null_score"])) is AlbertSpanLabeler
    assert task.kind(config(version="1.1")) == "span_labeler" and task.title(config(version="1.1")) == "SQuAD 1.1"


# ----------------------------------------------------------------------------
# The CLI


@pytest.mark.slow
def test_cli_v2_trains_the_original_head_and_predicts_at_the_tuned_threshold(tmp_path, spm_model):
    import keras
    from test_squad import SMALL_RUN, V1_QUESTIONS, run_squad, squad_file

    from albert_tf.models.model_io import load_model, write_model_dir
    from albert_tf.networks.albert_encoder import AlbertEncoder
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    encoder_dir = tmp_path / "encoder"
    config = dataclasses.replace(AlbertConfig.from_preset("albert_tiny"), num_hidden_layers=1,
                                 vocab_size=AlbertTokenizer(str(spm_model)).vocab_size)
    keras.utils.set_random_seed(0)
    write_model_dir(AlbertEncoder(config), encoder_dir, "encoder", files={"spm.model": str(spm_model)})
    questions = V1_QUESTIONS[:2] + V1_QUESTIONS[4:6]
    unanswerable = [(0, "What is the capital of Mars?"), (1, "Who closed the cafe?")]
    train_file = squad_file(tmp_path, "train-v2.0.json", "2.0", questions, unanswerable)
    output = tmp_path / "out"
    common = [f"--predict_file={train_file}", *SMALL_RUN]
    # Without --do_eval: as the original's do_predict, every checkpoint is scored and the best (best/) answers.
    result = run_squad("--version=2.0", "--do_train", "--do_predict", f"--train_file={train_file}",
                       f"--init_checkpoint={encoder_dir}", f"--output_dir={output}", "--num_train_steps=20", *common)
    assert result.returncode == 0, result.stderr
    assert "Fine-tuning on 6 questions: 20 steps of batch 4" in result.stdout
    assert "SQuAD 2.0: fine-tuned for 20 steps" in result.stdout

    model, metadata = load_model(str(output / "best"))
    assert metadata["model"] == "squad_v2_span_labeler" and metadata["squad_v2_head"] == "original"
    predictions = json.loads((output / "predictions.json").read_text(encoding="utf-8"))
    null_odds = json.loads((output / "null_odds.json").read_text())
    nbest = json.loads((output / "nbest_predictions.json").read_text(encoding="utf-8"))
    metrics = json.loads((output / "eval_results.json").read_text())
    threshold = metrics["null_score_diff_threshold"]
    assert threshold == metrics["best_f1_thresh"]
    assert {"exact_at_threshold_0", "f1_at_threshold_0"} <= set(metrics)
    for qas_id, score in null_odds.items():
        assert set(nbest[qas_id][0]) == {"text", "probability", "start_log_prob", "end_log_prob"}
        assert predictions[qas_id] == ("" if score > threshold else nbest[qas_id][0]["text"])
    # The official script's scores for predictions.json with null_odds.json as its --na-prob-file.
    articles, _ = squad.read_squad(str(train_file), "2.0")
    assert metrics["f1"] == pytest.approx(evaluate(articles, predictions, na_probs=null_odds)["f1"])

    # The fine-tuned model answers again with its own head, without naming it.
    again = run_squad("--version=2.0", "--do_predict", f"--init_checkpoint={output / 'best'}",
                      f"--output_dir={tmp_path / 'again'}", *common)
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again" / "predictions.json").read_text(encoding="utf-8")) == predictions

