"""SQuAD: official metrics on hand-computed cases, the reader, alignment, windows, predictions, the CLI."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.tasks import squad
from albert_tf.tasks.squad_evaluation import evaluate, exact_match, f1, normalize_answer
from albert_tf.text.albert_tokenizer import CLS_ID, SEP_ID, AlbertTokenizer
from albert_tf.text.piece_alignment import preprocess_with_alignment, tokenize_with_alignment
from text_fixtures import train_small_spm


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return train_small_spm(tmp_path_factory, name="squad_spm")


@pytest.fixture(scope="module")
def tokenizer(spm_model):
    return AlbertTokenizer(str(spm_model))


def squad_json(paragraphs, version="1.1", title="Article"):
    """The official layout around [(context, [qa, ...])]."""
    return {
        "version": version,
        "data": [{"title": title, "paragraphs": [{"context": c, "qas": qas} for c, qas in paragraphs]}],
    }


def qa(qas_id, question, context=None, answers=(), is_impossible=None):
    """A question record; answers as texts, placed at their first occurrence in `context`."""
    record = {"id": qas_id, "question": question,
              "answers": [{"text": text, "answer_start": context.index(text)} for text in answers]}
    if is_impossible is not None:
        record["is_impossible"] = is_impossible
    return record


# ----------------------------------------------------------------------------
# Official metrics, on cases computed by hand


def test_normalization_drops_case_punctuation_articles_and_extra_spaces():
    assert normalize_answer("The  Cat's hat!") == "cats hat"
    assert normalize_answer("  An apple, a day\tkeeps THE doctor away. ") == "apple day keeps doctor away"
    assert normalize_answer("theatre anthem") == "theatre anthem"  # articles only as whole words
    assert normalize_answer("the") == ""


def test_exact_match_and_f1_by_hand():
    assert exact_match("the Eiffel Tower", "Eiffel tower.") == 1
    assert exact_match("Eiffel Tower", "Eiffel") == 0
    # gold {big, red, dog}, prediction {red, dog, barked}: P = R = 2/3.
    assert f1("a big red dog", "red dog barked") == pytest.approx(2 / 3)
    # Repeated tokens count as often as both sides have them: P = 1, R = 1/2.
    assert f1("new york new york", "new york") == pytest.approx(2 / 3)
    assert f1("Denver Broncos", "Carolina Panthers") == 0.0
    # "" matches only "" (an unanswerable question answered with nothing).
    assert f1("", "") == 1.0 and exact_match("", "") == 1
    assert f1("", "London") == 0.0 and f1("Paris", "") == 0.0


def test_evaluate_takes_the_best_gold_and_counts_missing_predictions():
    context = "Denver Broncos beat the Carolina Panthers in Santa Clara."
    articles = squad_json([(context, [
        qa("q1", "Who won?", context, ["Denver Broncos", "Broncos"]),
        qa("q2", "Who won again?", context, ["Denver Broncos", "Broncos"]),
        qa("q3", "Where?", context, ["Santa Clara"]),
    ])])["data"]
    # q1: matches the second gold exactly. q2: "Denver" vs "Denver Broncos": P 1, R 1/2 -> F1 2/3,
    # against "Broncos" 0. q3: no prediction, 0.
    result = evaluate(articles, {"q1": "the Broncos", "q2": "Denver"})
    assert result["exact"] == pytest.approx(100 / 3)
    assert result["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)
    assert result["total"] == 3
    assert result["HasAns_total"] == 3 and "NoAns_total" not in result


def v2_articles():
    context = "Paris is the capital of France. The blue whale is the largest animal."
    return squad_json([(context, [
        qa("a", "Capital of France?", context, ["Paris"]),
        qa("b", "Capital of Mars?", context, is_impossible=True),
        qa("c", "Capital of Venus?", context, is_impossible=True),
        qa("d", "Largest animal?", context, ["blue whale"]),
    ])], version="v2.0")["data"]


def test_v2_no_answer_questions_score_when_predicted_empty():
    # a: right. b: "" on an unanswerable question, right. c: an answer where there is none, wrong.
    # d: "whale" vs "blue whale", EM 0, F1 2/3.
    predictions = {"a": "Paris", "b": "", "c": "London", "d": "whale"}
    result = evaluate(v2_articles(), predictions)
    assert result["exact"] == pytest.approx(50.0)
    assert result["f1"] == pytest.approx(100 * (1 + 1 + 0 + 2 / 3) / 4)
    assert (result["HasAns_exact"], result["HasAns_f1"], result["HasAns_total"]) == pytest.approx(
        (50.0, 100 * (1 + 2 / 3) / 2, 2))
    assert (result["NoAns_exact"], result["NoAns_f1"], result["NoAns_total"]) == pytest.approx((50.0, 50.0, 2))
    assert "best_f1" not in result


def test_v2_best_threshold_search_by_hand():
    predictions = {"a": "Paris", "b": "", "c": "London", "d": "whale"}
    null_odds = {"a": -3.0, "b": 2.0, "c": 1.0, "d": 0.5}
    # Above every threshold all four answer "": b and c right (2/4). Letting predictions through in
    # increasing odds: a (+1 -> 3), d (EM +0 / F1 +2/3), c (-1: now answered "London"), b (+0).
    result = evaluate(v2_articles(), predictions, na_probs=null_odds, na_prob_thresh=math.inf)
    assert result["exact"] == pytest.approx(50.0)  # inf: the predictions are scored as they are
    assert (result["best_exact"], result["best_exact_thresh"]) == pytest.approx((75.0, -3.0))
    assert (result["best_f1"], result["best_f1_thresh"]) == pytest.approx((100 * (3 + 2 / 3) / 4, 0.5))
    # The official --na-prob-thresh: odds above 0.0 count as "" (c becomes right, d wrong).
    thresholded = evaluate(v2_articles(), predictions, na_probs=null_odds, na_prob_thresh=0.0)
    assert thresholded["exact"] == pytest.approx(75.0)
    assert thresholded["f1"] == pytest.approx(75.0)


def test_v2_best_threshold_is_0_when_no_threshold_beats_answering_nothing():
    """As the official script (and the original's copy of it) reports it."""
    predictions = {"a": "London", "b": "Mars", "c": "Venus", "d": "dolphin"}
    null_odds = {"a": -3.0, "b": 2.0, "c": 1.0, "d": 0.5}
    # Every question "": b and c right (2/4); letting any prediction through gains nothing.
    result = evaluate(v2_articles(), predictions, na_probs=null_odds, na_prob_thresh=math.inf)
    assert (result["best_exact"], result["best_exact_thresh"]) == (50.0, 0.0)
    assert (result["best_f1"], result["best_f1_thresh"]) == (50.0, 0.0)


# ----------------------------------------------------------------------------
# Reader


def write_json(tmp_path, content, name="squad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(content) if not isinstance(content, str) else content, encoding="utf-8")
    return str(path)


def test_reader_reads_v1_and_v2(tmp_path):
    context = "The blue whale is the largest animal."
    path = write_json(tmp_path, squad_json([(context, [
        qa("q1", "Largest animal?", context, ["blue whale", "The blue whale"]),
        qa("q2", "Smallest animal?", context, is_impossible=True) | {"plausible_answers": [
            {"text": "animal", "answer_start": context.index("animal")}]},
    ])], version="v2.0"))
    articles, examples = squad.read_squad(path, "2.0")
    assert len(articles) == 1
    assert examples == [
        squad.SquadExample("q1", "Largest animal?", context, "blue whale", 4,
                           gold_answers=("blue whale", "The blue whale")),
        squad.SquadExample("q2", "Smallest animal?", context, "", -1, is_impossible=True),
    ]
    with pytest.raises(ValueError, match=r"squad.json: data\[0\].paragraphs\[0\].qas\[1\] \(question id q2\): "
                       "an unanswerable .* use version=2.0"):
        squad.read_squad(path, "1.1")


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].pop("question"),
     r"qas\[0\] \(question id q1\): missing 'question'"),
    (lambda d: d["data"][0]["paragraphs"][0].pop("context"), r"data\[0\].paragraphs\[0\]: missing 'context'"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].pop("id"), r"qas\[0\]: missing 'id'"),
    # -1 marks an answer that is not in the context (CMRC 2018's extra gold answers); below it, or past the
    # context's end, answer_start is wrong.
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"][0].update(answer_start=-2),
     r"question id q1\), answers\[0\]: answer_start -2 is outside the context of 37 characters "
     r"\(-1 marks an answer that is not in it\)"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"][0].update(answer_start=37),
     r"question id q1\), answers\[0\]: answer_start 37 is outside the context of 37 characters"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"][0].update(text=" "),
     r"question id q1\), answers\[0\]: empty answer text"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"][0].update(answer_start="4"),
     r"'answer_start' must be of type int, got str"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].update(answers=[]),
     r"question id q1\): no answers, and not marked is_impossible"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"].append(dict(d["data"][0]["paragraphs"][0]["qas"][0])),
     r"qas\[1\] \(question id q1\): duplicate question id, first seen at data\[0\].paragraphs\[0\].qas\[0\]"),
    (lambda d: d.pop("data"), r"top level: missing 'data'"),
])
def test_reader_rejects_malformed_records_naming_file_and_question(tmp_path, mutate, message):
    context = "The blue whale is the largest animal."
    content = squad_json([(context, [qa("q1", "Largest animal?", context, ["blue whale"])])])
    mutate(content)
    with pytest.raises(ValueError, match=r"squad.json: .*" + message):
        squad.read_squad(write_json(tmp_path, content), "1.1")


def test_questions_to_answer_may_come_without_answers(tmp_path, tokenizer):
    context = "The blue whale is the largest animal."
    content = squad_json([(context, [{"id": "q1", "question": "Largest animal?"},
                                     qa("q2", "Smallest?", context, ["animal"])])])
    path = write_json(tmp_path, content)
    with pytest.raises(ValueError, match=r"qas\[0\] \(question id q1\): missing 'answers'"):
        squad.read_squad(path, "1.1")
    _, examples = squad.read_squad(path, "1.1", labeled=False)
    assert [(e.answer_text, e.answer_start) for e in examples] == [("", -1), ("animal", 30)]
    features = squad.convert_examples_to_features(examples, tokenizer, max_seq_length=64, max_query_length=8)
    assert [(f.example_index, f.start_position is None) for f in features] == [(0, True), (1, False)]
    with pytest.raises(ValueError, match="1 features have no answer position"):
        squad.feature_arrays(features)
    assert set(squad.feature_arrays(features, with_positions=False)) == {"input_word_ids", "input_mask",
                                                                         "input_type_ids"}


def test_reader_rejects_missing_and_invalid_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere.json: SQuAD file not found"):
        squad.read_squad(str(tmp_path / "nothere.json"), "1.1")
    with pytest.raises(ValueError, match="broken.json: not valid JSON"):
        squad.read_squad(write_json(tmp_path, '{"data": [', name="broken.json"), "1.1")


# ----------------------------------------------------------------------------
# Character alignment and features

ALIGNMENT_CASES = [
    ("Café déjà vu: the naïve Ångström lived in Zürich, then in Straße Nord.",
     ["Café déjà vu", "naïve Ångström", "Zürich", "Straße Nord"]),
    # Decomposed accents: e + combining acute.
    ("The cafe\u0301 and the re\u0301sume\u0301 were there.", ["cafe\u0301", "re\u0301sume\u0301 were"]),
    ("``Quoted,'' she said -- ``twice'' in the morning.", ["``Quoted,''", "twice", "she said"]),
    ("Prices rose 3.0, 12, 1,000,000, and 7,5 units in 1,999 years.", ["1,000,000", "12", "7,5", "1,999 years"]),
    ("Tabs\tand   many   spaces,\u00a0non-breaking  here.", ["many   spaces", "non-breaking  here"]),
    ("  İstanbul ΟΔΟΣ and Ⅻ ﬁne days.", ["İstanbul ΟΔΟΣ", "Ⅻ ﬁne days"]),
    # Control characters SentencePiece removes, after and inside a piece split at `<digit>,`.
    ("Counts of 1,000,\x03\x15 and 2,0\x030\x150, rose.", ["1,000", "000", "2,0\x030\x150", "0\x150"]),
]


@pytest.mark.parametrize("context, answers", ALIGNMENT_CASES)
def test_alignment_keeps_the_tokenizer_ids_and_recovers_answers_exactly(tokenizer, context, answers):
    aligned = tokenize_with_alignment(tokenizer, context)
    assert aligned.ids == tokenizer.encode(context)
    for answer in answers:
        start = context.index(answer)
        first, last = aligned.token_span(start, start + len(answer))
        assert context[aligned.starts[first] : aligned.ends[last]] == answer


@pytest.mark.parametrize("rewrite_quotes", [False, True])
def test_alignment_follows_the_tokenizers_quote_rule(spm_model, rewrite_quotes):
    """A `` or '' becomes one " covering both characters only where the tokenizer rewrites them (the
    original keeps each character); either way answers in and around quotes map to tokens and back."""
    tokenizer = AlbertTokenizer(str(spm_model), rewrite_quotes=rewrite_quotes)
    context = "He said ``hello there'' to me, and ``bye'' at 3.0, then left."
    preprocessed, spans = preprocess_with_alignment(context, True, False, rewrite_quotes)
    assert preprocessed == tokenizer.preprocess(context)
    quoted = [context[start:end] for char, (start, end) in zip(preprocessed, spans) if char in "`'\""]
    assert quoted == (["``", "''", "``", "''"] if rewrite_quotes else list("``''``''"))
    aligned = tokenize_with_alignment(tokenizer, context)
    assert aligned.ids == tokenizer.encode(context)
    answers = ["``hello there''", "hello there", "``bye''", "bye", "3.0"]
    examples = [squad.SquadExample(f"q{i}", "Said what?", context, answer, context.index(answer))
                for i, answer in enumerate(answers)]
    features = squad.convert_examples_to_features(examples, tokenizer, max_seq_length=64, doc_stride=16,
                                                  max_query_length=16)
    assert len(features) == len(answers)
    for feature, answer in zip(features, answers):
        start, end = feature.start_position, feature.end_position
        assert context[feature.token_spans[start][0] : feature.token_spans[end][1]] == answer


def test_features_map_answers_to_tokens_and_back(tokenizer):
    examples = [
        squad.SquadExample(f"q{i}-{j}", "Which words?", context, answer, context.index(answer))
        for i, (context, answers) in enumerate(ALIGNMENT_CASES)
        for j, answer in enumerate(answers)
    ]
    features = squad.convert_examples_to_features(examples, tokenizer, max_seq_length=64, doc_stride=16,
                                                  max_query_length=16)
    assert {feature.example_index for feature in features} == set(range(len(examples)))
    for feature in features:
        example = examples[feature.example_index]
        query = tokenizer.encode(example.question_text)
        assert feature.input_word_ids[: len(query) + 2] == [CLS_ID, *query, SEP_ID]
        assert feature.input_type_ids[: len(query) + 2] == [0] * (len(query) + 2)
        assert not feature.is_impossible
        start, end = feature.start_position, feature.end_position
        span = example.context_text[feature.token_spans[start][0] : feature.token_spans[end][1]]
        assert span == example.answer_text
        assert feature.input_type_ids[start] == feature.input_type_ids[end] == 1


def test_doc_windows_and_max_context_by_hand():
    # 10 tokens, windows of 4, stride 3: [0-3], [3-6], [6-9].
    windows = squad.doc_windows(10, 4, 3)
    assert windows == [(0, 4), (3, 4), (6, 4)]
    # Token 4 is in window 1 only; 5: window 1 (left 2, right 1) vs window 2 (absent);
    # 3 and 6 score min(3, 0) in both windows holding them: the first wins.
    owners = {token: [w for w in range(3) if squad.is_max_context(windows, w, token)] for token in range(10)}
    assert owners == {0: [0], 1: [0], 2: [0], 3: [0], 4: [1], 5: [1], 6: [1], 7: [2], 8: [2], 9: [2]}
    # Windows [0-5], [2-7], [4-9]: token 4 has min(4, 1) = 1 token of context on its short side in
    # window 0, min(2, 3) = 2 in window 1, 0 in window 2; token 6 has 1 in window 1, 2 in window 2.
    windows = squad.doc_windows(10, 6, 2)
    assert windows == [(0, 6), (2, 6), (4, 6)]
    owners = [next(w for w in range(3) if squad.is_max_context(windows, w, token)) for token in range(10)]
    assert owners == [0, 0, 0, 0, 1, 1, 2, 2, 2, 2]
    assert squad.doc_windows(5, 8, 3) == [(0, 5)]
    # Stride larger than the window still covers everything (windows just touch).
    assert squad.doc_windows(7, 3, 5) == [(0, 3), (3, 3), (6, 1)]


def long_example(tokenizer):
    context = " ".join(f"island {word}" for word in ("summer winter bridge market village river garden window "
                                                      "morning letter evening mountain").split())
    answer = "letter island evening"
    return squad.SquadExample("long", "Which river?", context, answer, context.index(answer))


def test_long_context_is_split_into_windows(tokenizer):
    example = long_example(tokenizer)
    context = tokenize_with_alignment(tokenizer, example.context_text)
    query = tokenizer.encode(example.question_text)
    max_seq_length, stride = 24, 5
    features = squad.convert_examples_to_features([example], tokenizer, max_seq_length=max_seq_length,
                                                  doc_stride=stride, max_query_length=8)
    per_window = max_seq_length - len(query) - 3
    assert len(features) == len(squad.doc_windows(len(context.ids), per_window, stride)) > 2
    offset = len(query) + 2
    owned = {}
    for window, feature in enumerate(features):
        assert len(feature.input_word_ids) == len(feature.input_mask) == max_seq_length
        start = window * stride
        tokens = context.ids[start : start + per_window]
        assert feature.input_word_ids[offset : offset + len(tokens) + 1] == tokens + [SEP_ID]
        assert sum(feature.input_mask) == offset + len(tokens) + 1
        for position, is_max in feature.token_is_max_context.items():
            if is_max:
                owned.setdefault(start + position - offset, []).append(window)
        first, last = context.token_span(example.answer_start, example.answer_start + len(example.answer_text))
        if start <= first and last < start + len(tokens):
            assert (feature.start_position, feature.end_position) == (first - start + offset, last - start + offset)
            assert not feature.is_impossible
        else:
            assert (feature.start_position, feature.end_position, feature.is_impossible) == (0, 0, True)
    # Every context token is predicted from exactly one window.
    assert sorted(owned) == list(range(len(context.ids)))
    assert all(len(windows) == 1 for windows in owned.values())


def test_features_reject_a_query_budget_that_leaves_no_context(tokenizer):
    with pytest.raises(ValueError, match="max_seq_length 66 leaves no room"):
        squad.convert_examples_to_features([], tokenizer, max_seq_length=66, max_query_length=64)


# ----------------------------------------------------------------------------
# Predictions from logits


def span_logits(feature, start, end, seq, value=10.0):
    starts, ends = np.zeros(seq, np.float32), np.zeros(seq, np.float32)
    starts[start], ends[end] = value, value
    return starts, ends


def test_best_span_maps_back_to_the_original_context(tokenizer):
    context, answers = ALIGNMENT_CASES[0]
    answer = answers[1]  # "naïve Ångström"
    example = squad.SquadExample("q", "Who?", context, answer, context.index(answer))
    (feature,) = squad.convert_examples_to_features([example], tokenizer, max_seq_length=64, max_query_length=16)
    starts, ends = span_logits(feature, feature.start_position, feature.end_position, 64)
    starts[feature.start_position + 1] = 4.0  # a runner-up start inside the answer
    predictions, nbest, null_odds = squad.postprocess_predictions(
        [example], [feature], starts[None], ends[None], n_best_size=3)
    assert predictions == {"q": "naïve Ångström"}
    assert null_odds == {}
    entries = nbest["q"]
    assert entries[0]["text"] == "naïve Ångström"
    assert entries[0]["start_logit"] == 10.0 and entries[0]["end_logit"] == 10.0
    assert sum(entry["probability"] for entry in entries) == pytest.approx(1.0)
    assert [entry["probability"] for entry in entries] == sorted((e["probability"] for e in entries), reverse=True)
    assert len({entry["text"] for entry in entries}) == len(entries) <= 3


def whitespace_span_example(tokenizer):
    """(example, feature, position of a token that spans only whitespace, position of the next word's token):
    '▁' before an unknown character covers the space before it."""
    context = "The snowman ☃ stood there."
    example = squad.SquadExample("q", "Who stood?", context, "", -1)
    (feature,) = squad.convert_examples_to_features([example], tokenizer, max_seq_length=32, max_query_length=8)
    positions = sorted(feature.token_spans)
    space = next(p for p in positions if not context[slice(*feature.token_spans[p])].strip())
    word = next(p for p in positions if p > space and context[slice(*feature.token_spans[p])].strip())
    return example, feature, space, word


def test_a_span_of_whitespace_only_is_a_candidate_answered_as_empty(tokenizer):
    """The original keeps it, its text "" (squad_utils' write_predictions_v1): the best answers ""."""
    example, feature, space, word = whitespace_span_example(tokenizer)
    starts, ends = span_logits(feature, space, space, 32)
    starts[word], ends[word] = 9.0, 9.0
    predictions, nbest, _ = squad.postprocess_predictions([example], [feature], starts[None], ends[None],
                                                          n_best_size=3)
    word_text = example.context_text[slice(*feature.token_spans[word])]
    assert predictions == {"q": ""}
    assert [entry["text"] for entry in nbest["q"]][:2] == ["", word_text]


def test_answer_length_and_max_context_limit_the_candidates(tokenizer):
    example = long_example(tokenizer)
    features = squad.convert_examples_to_features([example], tokenizer, max_seq_length=24, doc_stride=5,
                                                  max_query_length=8)
    logits = np.zeros((2, len(features), 24), np.float32)
    first, second = features[0], features[1]
    first_positions, second_positions = sorted(first.token_spans), sorted(second.token_spans)
    # The best score: the first window's whole context, a span longer than max_answer_length.
    logits[0, 0, first_positions[0]] = logits[1, 0, first_positions[-1]] = 9.0
    # Next: a short span in the second window whose start token has more context in the first.
    borrowed = second_positions[1]
    assert not second.token_is_max_context[borrowed] and first.token_is_max_context[borrowed + 5]
    logits[0, 1, borrowed] = logits[1, 1, borrowed + 1] = 7.0
    # Then a short span starting on a token the second window owns.
    owned = next(p for p in second_positions if second.token_is_max_context[p])
    logits[0, 1, owned] = logits[1, 1, owned + 1] = 5.0

    def predict(max_answer_length):
        predictions, _, _ = squad.postprocess_predictions([example], features, logits[0], logits[1],
                                                          max_answer_length=max_answer_length)
        return predictions["long"]

    def text(feature, start, end):
        return example.context_text[feature.token_spans[start][0] : feature.token_spans[end][1]]

    assert predict(3) == text(second, owned, owned + 1)
    assert predict(30) == text(first, first_positions[0], first_positions[-1])


def test_v2_null_answer_uses_cls_scores_and_the_threshold(tokenizer):
    context, answers = ALIGNMENT_CASES[0]
    example = squad.SquadExample("q", "Who?", context, answers[2], context.index(answers[2]))
    (feature,) = squad.convert_examples_to_features([example], tokenizer, max_seq_length=64, max_query_length=16)
    starts, ends = span_logits(feature, feature.start_position, feature.end_position, 64, value=3.0)
    starts[0], ends[0] = 2.0, 2.5  # score_null 4.5 vs best span 6.0: diff -1.5
    run = lambda threshold: squad.postprocess_predictions(  # noqa: E731
        [example], [feature], starts[None], ends[None], version_2_with_negative=True,
        null_score_diff_threshold=threshold)
    predictions, nbest, null_odds = run(0.0)
    assert predictions == {"q": "Zürich"}
    assert null_odds["q"] == pytest.approx(-1.5)
    assert "" in [entry["text"] for entry in nbest["q"]]
    predictions, _, _ = run(-2.0)
    assert predictions == {"q": ""}


def test_predictions_files_are_in_the_official_format(tmp_path):
    paths = squad.write_predictions(str(tmp_path), {"q1": "Zürich", "q2": ""},
                                    {"q1": [{"text": "Zürich", "probability": 1.0, "start_logit": 1.0,
                                             "end_logit": 2.0}]}, {"q1": -1.5, "q2": 3.0})
    assert [p.split("/")[-1] for p in paths] == ["predictions.json", "nbest_predictions.json", "null_odds.json"]
    assert json.loads((tmp_path / "predictions.json").read_text(encoding="utf-8")) == {"q1": "Zürich", "q2": ""}


# ----------------------------------------------------------------------------
# The span labeler


def test_span_labeler_outputs_config_and_model_dir_round_trip(tmp_path):
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.model_io import load_encoder, load_model, write_model_dir
    from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
    from albert_tf.networks.albert_encoder import AlbertEncoder

    encoder = AlbertEncoder(AlbertConfig.from_preset("albert_tiny"))
    labeler = AlbertSpanLabeler(encoder)
    assert labeler.encoder is encoder
    inputs = {"input_word_ids": np.arange(14, dtype=np.int32).reshape(2, 7) + 5,
              "input_mask": np.ones((2, 7), np.int32), "input_type_ids": np.zeros((2, 7), np.int32)}
    outputs = labeler(inputs)
    assert set(outputs) == {"start_logits", "end_logits"}
    assert outputs["start_logits"].shape == outputs["end_logits"].shape == (2, 7)
    assert outputs["start_logits"].dtype == "float32"
    # A dense(2) over sequence_output: start = column 0, end = column 1.
    kernel, bias = labeler.span_head.kernel.numpy(), labeler.span_head.bias.numpy()
    sequence_output = encoder(inputs)["sequence_output"].numpy()
    np.testing.assert_allclose(outputs["start_logits"], sequence_output @ kernel[:, 0] + bias[0], atol=1e-5)
    np.testing.assert_allclose(outputs["end_logits"], sequence_output @ kernel[:, 1] + bias[1], atol=1e-5)
    assert kernel.std() == pytest.approx(0.02 * 0.88, rel=0.35)  # truncated normal, initializer_range 0.02
    assert AlbertSpanLabeler.from_config(labeler.get_config()).get_config() == labeler.get_config()

    write_model_dir(labeler, tmp_path / "labeler", "span_labeler")
    loaded, metadata = load_model(str(tmp_path / "labeler"))
    assert metadata["model"] == "span_labeler" and isinstance(loaded, AlbertSpanLabeler)
    np.testing.assert_array_equal(loaded(inputs)["end_logits"], outputs["end_logits"])
    assert isinstance(load_encoder(str(tmp_path / "labeler")), AlbertEncoder)


# ----------------------------------------------------------------------------
# The CLI, end to end

CONTEXTS = [
    "The blue whale is the largest animal. It lives in the ocean and eats krill. Paris is the capital of France.",
    "Café Zürich opened in 1,999 near the old bridge. Its owner, ``Ångström'', sold 12,500 cups in the summer.",
]
V1_QUESTIONS = [
    (0, "What is the largest animal?", "The blue whale"), (0, "Where does it live?", "the ocean"),
    (0, "What does it eat?", "krill"), (0, "What is the capital of France?", "Paris"),
    (1, "When did the cafe open?", "1,999"), (1, "Who owned it?", "``Ångström''"),
    (1, "How many cups?", "12,500 cups"), (1, "Which cafe?", "Café Zürich"),
]


def squad_file(directory, name, version, questions, unanswerable=()):
    paragraphs = [(context, []) for context in CONTEXTS]
    for index, (context_index, question, answer) in enumerate(questions):
        record = qa(f"q{index}", question, CONTEXTS[context_index], [answer])
        if version == "2.0":
            record["is_impossible"] = False
        paragraphs[context_index][1].append(record)
    for index, (context_index, question) in enumerate(unanswerable):
        paragraphs[context_index][1].append(qa(f"n{index}", question, is_impossible=True))
    path = directory / name
    path.write_text(json.dumps(squad_json(paragraphs, "v2.0" if version == "2.0" else "1.1")), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory, spm_model, tokenizer):
    """A freshly initialized albert_tiny encoder with the test vocabulary and its spm.model."""
    import dataclasses

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.networks.albert_encoder import AlbertEncoder

    import keras

    config = dataclasses.replace(AlbertConfig.from_preset("albert_tiny"), vocab_size=tokenizer.vocab_size)
    keras.utils.set_random_seed(0)  # the same starting weights whatever ran before: the learning check is stable
    directory = tmp_path_factory.mktemp("encoder") / "albert_tiny"
    write_model_dir(AlbertEncoder(config), directory, "encoder", files={"spm.model": str(spm_model)})
    return directory


def run_squad(*args):
    return subprocess.run([sys.executable, "-m", "albert_tf.run_squad", *args], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


SMALL_RUN = ["--max_seq_length=64", "--max_query_length=16", "--doc_stride=16", "--train_batch_size=4",
             "--learning_rate=1e-3", "--save_checkpoints_steps=20"]


@pytest.mark.parametrize("version", squad.VERSIONS)
def test_training_and_predicting_scores_every_checkpoint_as_the_original(tmp_path, version):
    """The original's do_predict scores each checkpoint it saved on the predict file and answers with the
    best: --do_train --do_predict implies --do_eval where the file's questions have answers; without
    answers nothing can be scored, and the last checkpoint answers."""
    from albert_tf.tasks.squad_task import SquadConfig, SquadTask
    from albert_tf.training.finetuning_config import FinetuningConfig

    answered = squad_file(tmp_path, "dev.json", version, V1_QUESTIONS[:2])
    unanswered = tmp_path / "test.json"
    unanswered.write_text(json.dumps(squad_json([(CONTEXTS[0], [qa("t0", "Where?")])])), encoding="utf-8")

    def resolved(predict_file, **switches):
        task = SquadConfig(version=version, predict_file=str(predict_file), squad_v2_head="original"
                           if version == "2.0" else None)
        return SquadTask().resolve(FinetuningConfig(task=task, **switches))

    assert resolved(answered, do_train=True, do_predict=True).do_eval
    assert not resolved(unanswered, do_train=True, do_predict=True).do_eval
    assert not resolved(answered, do_predict=True).do_eval  # nothing trained: the model given answers


@pytest.mark.slow
def test_cli_v1_trains_predicts_and_scores(tmp_path, encoder_dir, tokenizer):
    from albert_tf.models.model_io import load_model
    from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
    from albert_tf.networks.albert_encoder import ENCODER_INPUTS
    from albert_tf.tasks.squad_task import span_loss

    train_file = squad_file(tmp_path, "train-v1.1.json", "1.1", V1_QUESTIONS)
    output = tmp_path / "out"
    result = run_squad("--version=1.1", "--do_train", "--do_predict", f"--train_file={train_file}",
                       f"--predict_file={train_file}", f"--init_checkpoint={encoder_dir}", f"--output_dir={output}",
                       "--num_train_steps=50", "--n_best_size=5", *SMALL_RUN)
    assert result.returncode == 0, result.stderr
    assert "SQuAD 1.1: fine-tuned for 50 steps" in result.stdout
    # The best checkpoint answered the file while training: its evaluation after training and the predictions
    # reuse those answers (that they are the best checkpoint's is checked below).
    assert result.stdout.count("its answers reused") == 2

    predictions = json.loads((output / "predictions.json").read_text(encoding="utf-8"))
    assert set(predictions) == {f"q{i}" for i in range(len(V1_QUESTIONS))}
    assert all(isinstance(text, str) for text in predictions.values())
    # Answers are cut from the original context: accents and quotes as written.
    assert all(text in CONTEXTS[V1_QUESTIONS[int(qas_id[1:])][0]] for qas_id, text in predictions.items())
    nbest = json.loads((output / "nbest_predictions.json").read_text(encoding="utf-8"))
    for qas_id, entries in nbest.items():
        assert 1 <= len(entries) <= 5 and entries[0]["text"] == predictions[qas_id]
        assert set(entries[0]) == {"text", "probability", "start_logit", "end_logit"}
        assert sum(entry["probability"] for entry in entries) == pytest.approx(1.0)
    assert not (output / "null_odds.json").exists()

    metrics = json.loads((output / "eval_results.json").read_text())
    articles, _ = squad.read_squad(str(train_file), "1.1")
    assert metrics == {**evaluate(articles, predictions), "metric": "squad"}  # English contexts: --metric=auto

    # The training checkpoints are the last fine-tuned model.
    model, metadata = load_model(str(output / "checkpoints"))
    assert isinstance(model, AlbertSpanLabeler) and metadata["squad_version"] == "1.1"
    # The saved model learned its training windows: from about ln(64) (uniform over the window) to well below.
    _, examples = squad.read_squad(str(train_file), "1.1")
    arrays = squad.feature_arrays(squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=64, doc_stride=16, max_query_length=16))
    outputs = model({name: arrays[name] for name in ENCODER_INPUTS})
    initial = AlbertSpanLabeler(load_model(str(encoder_dir))[0])({name: arrays[name] for name in ENCODER_INPUTS})
    initial_loss = float(span_loss(arrays["start_positions"], arrays["end_positions"], initial))
    assert initial_loss == pytest.approx(math.log(64), rel=0.1)
    assert float(span_loss(arrays["start_positions"], arrays["end_positions"], outputs)) < 0.6 * initial_loss
    assert (output / "checkpoints" / "spm.model").read_bytes() == (encoder_dir / "spm.model").read_bytes()

    # As the original's do_predict, every checkpoint was scored on the predict file and the best answered:
    # predicting again from it gives the same answers.
    assert (output / "best").is_dir()
    again = run_squad("--version=1.1", "--do_predict", f"--predict_file={train_file}",
                      f"--init_checkpoint={output / 'best'}", f"--output_dir={tmp_path / 'again'}", *SMALL_RUN)
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again" / "predictions.json").read_text(encoding="utf-8")) == predictions


@pytest.mark.slow
def test_cli_v2_null_score_head_decides_no_answer_with_the_null_threshold(tmp_path, encoder_dir):
    """SQuAD 2.0 with BERT's head, the named alternative to the original's (test_squad_v2)."""
    from albert_tf.models.model_io import load_model

    questions = V1_QUESTIONS[:2] + V1_QUESTIONS[4:6]
    unanswerable = [(0, "What is the capital of Mars?"), (1, "Who closed the cafe?")]
    train_file = squad_file(tmp_path, "train-v2.0.json", "2.0", questions, unanswerable)
    output = tmp_path / "out"
    result = run_squad("--version=2.0", "--squad_v2_head=null_score", "--do_train", "--do_predict",
                       f"--train_file={train_file}", f"--predict_file={train_file}", f"--init_checkpoint={encoder_dir}",
                       f"--output_dir={output}", "--num_train_steps=30", "--null_score_diff_threshold=0.5", *SMALL_RUN)
    assert result.returncode == 0, result.stderr
    assert "SQuAD 2.0 (BERT's null-score head): fine-tuned for 30 steps" in result.stdout
    _, metadata = load_model(str(output / "checkpoints"))
    assert metadata["model"] == "span_labeler" and metadata["squad_v2_head"] == "null_score"
    predictions = json.loads((output / "predictions.json").read_text(encoding="utf-8"))
    null_odds = json.loads((output / "null_odds.json").read_text())
    nbest = json.loads((output / "nbest_predictions.json").read_text(encoding="utf-8"))
    assert set(predictions) == set(null_odds) == {"q0", "q1", "q2", "q3", "n0", "n1"}
    for qas_id, odds in null_odds.items():
        best_span = next(entry for entry in nbest[qas_id] if entry["text"])
        assert predictions[qas_id] == ("" if odds > 0.5 else best_span["text"])
        null_entry = next(entry for entry in nbest[qas_id] if entry["text"] == "")
        score_null = null_entry["start_logit"] + null_entry["end_logit"]
        assert odds == pytest.approx(score_null - best_span["start_logit"] - best_span["end_logit"], abs=1e-4)
    metrics = json.loads((output / "eval_results.json").read_text())
    articles, _ = squad.read_squad(str(train_file), "2.0")
    assert metrics == {**evaluate(articles, predictions, na_probs=null_odds, na_prob_thresh=math.inf),
                       "metric": "squad"}
    assert metrics["HasAns_total"] == 4 and metrics["NoAns_total"] == 2
    assert metrics["best_f1"] >= metrics["f1"]


def test_cli_rejects_a_malformed_file_in_one_line(tmp_path, encoder_dir):
    content = squad_json([(CONTEXTS[0], [qa("q7", "Largest?", CONTEXTS[0], ["The blue whale"])])])
    content["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = -3
    bad = write_json(tmp_path, content, name="bad.json")
    result = run_squad("--version=1.1", "--do_train", f"--train_file={bad}", f"--init_checkpoint={encoder_dir}",
                       f"--output_dir={tmp_path / 'out'}", *SMALL_RUN)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("albert_tf.run_squad: error: ") and "bad.json" in last and "question id q7" in last
    assert not (tmp_path / "out" / "checkpoints").exists()


def test_fine_tuning_starts_from_checkpoints_or_an_exported_encoder(tmp_path, encoder_dir):

    import tensorflow as tf

    from albert_tf.models.model_dir_format import find_spm_model
    from albert_tf.models.model_io import load_encoder
    from albert_tf.export_lib.encoder_module import EncoderModule
    from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
    from albert_tf.tasks.squad_task import SquadConfig, SquadTask
    from albert_tf.training.finetuning import model_for_evaluation
    from albert_tf.training.finetuning_config import FinetuningConfig
    from albert_tf.training.finetuning_tool import starting_model

    encoder = load_encoder(str(encoder_dir))
    module = EncoderModule(encoder, None, str(encoder_dir / "spm.model"), str(encoder_dir / "albert_tf.json"))
    tf.saved_model.save(module, str(tmp_path / "export" / "encoder"), signatures=module.signatures())

    for source, kind in ((encoder_dir, "'encoder' model"), (tmp_path / "export", "exported encoder")):
        config = FinetuningConfig(init_checkpoint=str(source), seed=1, task=SquadConfig(version="1.1"))
        labeler = starting_model(SquadTask(), config)
        assert isinstance(labeler, AlbertSpanLabeler)
        for ours, theirs in zip(labeler.encoder.weights, encoder.weights):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        with open(find_spm_model(str(source)), "rb") as f:
            assert f.read() == (encoder_dir / "spm.model").read_bytes()
        with pytest.raises(ValueError, match=f"holds an? {kind}; evaluating needs a span_labeler"):
            model_for_evaluation(None, None, str(source), "span_labeler")


def test_a_span_labeler_keeps_its_head_when_fine_tuned_again(tmp_path, encoder_dir):
    from albert_tf.models.model_io import load_encoder, write_model_dir
    from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
    from albert_tf.tasks.squad_task import SquadConfig, SquadTask
    from albert_tf.training.finetuning_config import FinetuningConfig
    from albert_tf.training.finetuning_tool import starting_model

    tuned = AlbertSpanLabeler(load_encoder(str(encoder_dir)))
    directory = write_model_dir(tuned, str(tmp_path / "tuned"), "span_labeler")
    config = FinetuningConfig(init_checkpoint=str(directory), seed=2, task=SquadConfig(version="1.1"))
    again = starting_model(SquadTask(), config)
    assert len(again.weights) == len(tuned.weights)
    for ours, theirs in zip(again.weights, tuned.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.slow
def test_squad_keeps_its_best_checkpoint_and_overwrite_starts_afresh(tmp_path, encoder_dir):
    from albert_tf.models.model_io import load_model

    data = squad_file(tmp_path, "train-v1.1.json", "1.1", V1_QUESTIONS)
    output = tmp_path / "out"
    common = ["--version=1.1", f"--train_file={data}", f"--predict_file={data}", f"--init_checkpoint={encoder_dir}",
              f"--output_dir={output}", *SMALL_RUN]
    result = run_squad(*common, "--do_train", "--do_eval", "--num_train_steps=40")
    assert result.returncode == 0, result.stderr
    history = json.loads((output / "checkpoints" / "evaluations.json").read_text())
    assert [h["step"] for h in history] == [20, 40]
    best = max(history, key=lambda h: h["f1"])
    _, metadata = load_model(str(output / "best"))
    assert metadata["model"] == "span_labeler" and metadata["best_step"] == best["step"]
    # eval_results.json holds the kept model's scores on --predict_file.
    results = json.loads((output / "eval_results.json").read_text())
    assert results["f1"] == pytest.approx(best["f1"]) and results["exact"] == pytest.approx(best["exact"])
    # TensorBoard: the evaluated F1 of every checkpoint.
    from test_glue import summary_steps

    assert summary_steps(output / "eval")["f1"] == [20, 40]

    # Rerun: resumes (nothing left to train); --overwrite: trains again from step 0.
    again = run_squad(*common, "--do_train", "--num_train_steps=40")
    assert again.returncode == 0 and "Resuming from" in again.stdout, again.stderr
    fresh = run_squad(*common, "--do_train", "--num_train_steps=20", "--overwrite")
    assert fresh.returncode == 0, fresh.stderr
    assert not (output / "best").exists() and not (output / "eval_results.json").exists()
    assert "Resuming from" not in fresh.stdout
    assert json.loads((output / "checkpoints" / "albert_tf.json").read_text())["train_steps"] == 20


def test_weights_answer_a_file_once(tmp_path, encoder_dir, tokenizer, monkeypatch):
    """The best checkpoint's evaluation, its evaluation again after training and do_predict answer one file with
    the same weights: one pass over the windows, the files written as a fresh pass writes them; changed weights
    answer again."""
    from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
    from albert_tf.models.model_io import load_model
    from albert_tf.tasks import squad_task
    from albert_tf.tasks.squad_task import SquadConfig, SquadTask
    from albert_tf.training.finetuning_config import FinetuningConfig

    dev = squad_file(tmp_path, "dev.json", "1.1", V1_QUESTIONS[:4])
    config = SquadTask().resolve(FinetuningConfig(
        task=SquadConfig(version="1.1", predict_file=str(dev), max_query_length=16, doc_stride=16),
        max_seq_length=64, do_eval=True, do_predict=True))
    model = AlbertSpanLabeler(load_model(str(encoder_dir))[0])
    passes = []
    counted = squad_task.span_logits
    monkeypatch.setattr(squad_task, "span_logits", lambda *args, **kwargs: passes.append(1) or counted(*args,
                                                                                                         **kwargs))
    task = SquadTask()
    eval_data = task.read_eval(tokenizer, config)
    first = task.evaluate(model, eval_data, config)
    assert task.evaluate(model, eval_data, config) == first and len(passes) == 1
    metrics, _ = task.predict(model, tokenizer, config, str(tmp_path / "kept"))
    assert metrics == first and len(passes) == 1

    fresh_metrics, _ = SquadTask().predict(model, tokenizer, config, str(tmp_path / "fresh"))
    assert len(passes) == 2 and fresh_metrics == first
    for name in (squad.PREDICTIONS_FILE, squad.NBEST_FILE):
        assert (tmp_path / "kept" / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes()

    kernel = model.weights[-1]
    kernel.assign(kernel.numpy() + 1.0)
    task.predict(model, tokenizer, config, str(tmp_path / "changed"))
    assert len(passes) == 3
