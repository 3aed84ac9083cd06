"""SQuAD v1.1 / v2.0: the official JSON, features with a doc stride, and predictions.

Reading: `read_squad` checks every record of the official layout
(data[].paragraphs[].{context, qas[].{id, question, answers[].{text,
answer_start}, is_impossible}}); a malformed file fails with the file, the record
and the question id. An answer whose text is not at its answer_start (CMRC 2018
marks with answer_start -1 the extra gold answers its annotators wrote that are not
verbatim in the context, and has a few 1-2 characters off) is a gold answer for
evaluation only: the metrics read every answer's text, training only a first answer
found where it says. A training question whose first answer is not is left out of
training; one line says how many answers and questions that concerns.

Separator: a literal "[SEP]" in a context (JSQuAD writes each as "title [SEP]
paragraph") is read as the separator it stands for: the [SEP] token, as the
Hugging Face tokenizers of JGLUE's models read it, not the text "[", "sep", "]".
It is never the start or end of an answer; answer offsets stay those of the
context as written.

Features: the question is segment A and the context segment B,
`[CLS] question [SEP] context [SEP]`, with contexts longer than a window split
into windows `doc_stride` tokens apart (BERT's sliding window). A token seen in
several windows is predicted only from the one where it has the most context
on both sides (`token_is_max_context`).

Character alignment: the tokenizer lowercases, strips accents, collapses
whitespace, splits `<digit>,` pieces and, for models converted from Hugging Face
(their recorded rewrite_quotes), turns `` and '' into ", so pieces are not
substrings of the context. The tokenizer's `aligned` tracks every character
through each of those steps (SentencePiece's own normalization through its
offset mapping; a WordPiece vocabulary's pieces carry their offsets), so each token knows the exact [start, end) of the context it
came from. Answer character spans map to token spans through it, and predicted
token spans map back to the original context text, accents and quotes intact.
The original ALBERT run_squad recovered the same alignment approximately, with
a longest-common-subsequence match between the context and the pieces.

Predictions, of one of two heads:
- BERT's (`AlbertSpanLabeler`, SQuAD 1.1, and 2.0's null-score alternative): the
  n-best search over start/end logits (`postprocess_predictions`), and for v2 the
  no-answer decision at [CLS]: score_null = start_logits[0] + end_logits[0] (the
  smallest over a question's windows), "" predicted when score_null - best span
  score > null_score_diff_threshold.
- the original ALBERT's SQuAD 2.0 head (`AlbertSquadV2SpanLabeler`): the best
  span of its start x end beam (`postprocess_beam_predictions`), and "" where the
  question's no-answer score, the smallest cls_logits over its windows, exceeds a
  threshold (`decide_no_answer`; run_squad tunes it on the scored file).
"""

import collections
import dataclasses
import json
import math
import os

import numpy as np

from albert_tf.settings import SettingError
from albert_tf.text.piece_alignment import AlignedTokens
from albert_tf.text.sliding_windows import doc_windows, is_max_context

VERSIONS = ("1.1", "2.0")
# SQuAD 2.0's models: the original ALBERT's (answerability logit, end given the start) or BERT's ([CLS] null score).
V2_HEADS = ("original", "null_score")

PREDICTIONS_FILE = "predictions.json"
NBEST_FILE = "nbest_predictions.json"
NULL_ODDS_FILE = "null_odds.json"


# ----------------------------------------------------------------------------
# Reading the official JSON


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question about one context.

    `answer_text`/`answer_start` are the first gold answer (what training
    learns; the official training sets have exactly one), "" and -1 for an
    unanswerable SQuAD 2.0 question, a question read without answers, or one
    whose first answer is not in the context at its answer_start.
    `gold_answers`: the texts of all its answers, those for evaluation only too.
    """

    qas_id: str
    question_text: str
    context_text: str
    answer_text: str
    answer_start: int
    is_impossible: bool = False
    gold_answers: tuple = ()


def _require(record, key, kind, where, path):
    if not isinstance(record, dict) or key not in record:
        raise ValueError(f"{path}: {where}: missing {key!r}")
    value = record[key]
    if not isinstance(value, kind):
        raise ValueError(f"{path}: {where}: {key!r} must be of type {kind.__name__}, got {type(value).__name__}")
    return value


def read_squad(path, version, labeled=True, report=None):
    """(articles, examples) of an official SQuAD JSON file.

    `articles` is the file's `data` list (what `squad_evaluation.evaluate`
    scores against); `examples` holds one `SquadExample` per question, in file
    order. With labeled=False (questions to answer, not to learn from), a
    question may come without answers; it gets answer_start -1. Answers that
    are there are checked all the same. With labeled=True (questions to learn
    from), a question whose first answer is not at its answer_start is left out.
    `report` (e.g. print), when given, gets one line saying how many answers are
    kept for evaluation only, and how many questions that leaves out, if any.
    Raises FileNotFoundError or ValueError naming the file, the record
    (data[i].paragraphs[j].qas[k]) and the question id.
    """
    if version not in VERSIONS:
        raise ValueError(f"SQuAD version must be one of {VERSIONS}, got {version!r}")
    try:
        with open(path, encoding="utf-8") as f:
            dataset = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: SQuAD file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    articles = _require(dataset, "data", list, "top level", path)
    examples = []
    seen_ids = {}
    counts = collections.Counter()  # answers for evaluation only ("eval_only", "minus_one"); questions "left_out"
    for i, article in enumerate(articles):
        paragraphs = _require(article, "paragraphs", list, f"data[{i}]", path)
        for j, paragraph in enumerate(paragraphs):
            where = f"data[{i}].paragraphs[{j}]"
            context = _require(paragraph, "context", str, where, path)
            for k, qa in enumerate(_require(paragraph, "qas", list, where, path)):
                qa_where = f"{where}.qas[{k}]"
                qas_id = _require(qa, "id", str, qa_where, path)
                qa_where = f"{qa_where} (question id {qas_id})"
                if qas_id in seen_ids:
                    raise ValueError(f"{path}: {qa_where}: duplicate question id, first seen at {seen_ids[qas_id]}")
                seen_ids[qas_id] = qa_where
                example = _read_question(qa, qas_id, context, version, labeled, qa_where, path, counts)
                if labeled and not example.is_impossible and example.answer_start < 0:
                    counts["left_out"] += 1  # its first answer is for evaluation only: nothing to learn
                    continue
                examples.append(example)
    if labeled and counts["left_out"] and not examples:
        raise ValueError(f"{path}: no question to train on: none has its first answer in the context at its "
                         "answer_start (fix the answer_start of the first answers)")
    if report is not None and counts["eval_only"]:
        left_out = (f"; {counts['left_out']} questions whose first answer is one of them left out of training"
                    if counts["left_out"] else "")
        report(f"{path}: {counts['eval_only']} gold answers are not in the context at their answer_start "
               f"({counts['minus_one']} with answer_start -1): kept for evaluation only, never a training "
               f"target{left_out}.")
    return articles, examples


def _read_question(qa, qas_id, context, version, labeled, where, path, counts):
    question = _require(qa, "question", str, where, path)
    answers = _require(qa, "answers", list, where, path) if labeled or "answers" in qa else []
    is_impossible = qa.get("is_impossible", False)
    if not isinstance(is_impossible, bool):
        raise ValueError(f"{path}: {where}: 'is_impossible' must be true or false, got {is_impossible!r}")
    if is_impossible and version == "1.1":
        raise SettingError(f"{path}: {where}: an unanswerable (is_impossible) question; SQuAD 1.1 has none, "
                           "use <version>=2.0")
    if is_impossible and answers:
        raise ValueError(f"{path}: {where}: is_impossible but has {len(answers)} answers "
                         "(SQuAD 2.0 keeps those under 'plausible_answers')")
    if not is_impossible and not answers and labeled:
        raise ValueError(f"{path}: {where}: no answers, and not marked is_impossible")
    located = []
    for a, answer in enumerate(answers):
        answer_where = f"{where}, answers[{a}]"
        text = _require(answer, "text", str, answer_where, path)
        start = _require(answer, "answer_start", int, answer_where, path)
        if not text.strip():
            raise ValueError(f"{path}: {answer_where}: empty answer text")
        if start < -1 or start >= len(context):
            raise ValueError(f"{path}: {answer_where}: answer_start {start} is outside the context of "
                             f"{len(context)} characters (-1 marks an answer that is not in it)")
        located.append(context[start : start + len(text)] == text if start >= 0 else False)
        if not located[-1]:
            counts["eval_only"] += 1
            counts["minus_one"] += start == -1
    if is_impossible:
        return SquadExample(qas_id, question, context, "", -1, True)
    golds = tuple(answer["text"] for answer in answers)
    if not answers or not located[0]:
        return SquadExample(qas_id, question, context, "", -1, gold_answers=golds)
    return SquadExample(qas_id, question, context, answers[0]["text"], answers[0]["answer_start"],
                        gold_answers=golds)


# ----------------------------------------------------------------------------
# Features: windows of [CLS] question [SEP] context [SEP]


@dataclasses.dataclass
class SquadFeature:
    """One window of one example, padded to max_seq_length.

    token_spans: sequence position -> [start, end) in the example's context, for
      every context token of the window but a separator ("[SEP]" in the context).
    token_is_max_context: sequence position -> whether this window gives that
      token more context than any other window.
    start_position, end_position: sequence positions of the answer's first and
      last token; 0 ([CLS]) when the window holds no answer. None when the
      example has no known answer position (never for examples read from a file).
    is_impossible: the window holds no answer (the question is unanswerable or
      its answer lies outside the window).
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    input_word_ids: list
    input_mask: list
    input_type_ids: list
    token_spans: dict
    token_is_max_context: dict
    start_position: int
    end_position: int
    is_impossible: bool


# A context's literal separator: JSQuAD's "title [SEP] paragraph".
CONTEXT_SEPARATOR = "[SEP]"


def tokenize_context(tokenizer, context):
    """(AlignedTokens of `context`, the indexes of its separator tokens).

    Each literal "[SEP]" is the tokenizer's [SEP] token, covering that text; the
    text around it is tokenized apart, with offsets in the whole context. JGLUE's
    models read it so (Hugging Face's tokenizers match special tokens in the
    text), and to SentencePiece it would be the pieces of "[", "sep" and "]".
    """
    if CONTEXT_SEPARATOR not in context:
        return tokenizer.aligned(context), frozenset()
    ids, starts, ends, separators = [], [], [], set()
    offset = 0
    for index, part in enumerate(context.split(CONTEXT_SEPARATOR)):
        if index:
            separators.add(len(ids))
            ids.append(tokenizer.special_ids.sep)
            starts.append(offset - len(CONTEXT_SEPARATOR))
            ends.append(offset)
        if part.strip():
            aligned = tokenizer.aligned(part)
            ids.extend(aligned.ids)
            starts.extend(offset + start for start in aligned.starts)
            ends.extend(offset + end for end in aligned.ends)
        offset += len(part) + len(CONTEXT_SEPARATOR)
    return AlignedTokens(ids=ids, starts=starts, ends=ends), frozenset(separators)


def convert_examples_to_features(examples, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64,
                                 progress=None):
    """SquadFeatures of `examples`, in order (an example gives one feature per window)."""
    if max_seq_length - max_query_length - 3 < 1:
        raise ValueError(f"max_seq_length {max_seq_length} leaves no room for the context after a question of "
                         f"up to {max_query_length} tokens, [CLS] and two [SEP]")
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be >= 1, got {doc_stride}")
    cls, sep = tokenizer.special_ids.cls, tokenizer.special_ids.sep
    features = []
    context_text = context = None  # a paragraph's questions come one after the other and share its tokens
    for example_index, example in enumerate(examples):
        query_ids = tokenizer.encode(example.question_text)[:max_query_length]
        if example.context_text != context_text:
            context_text = example.context_text
            context, separators = tokenize_context(tokenizer, context_text)
        answer_tokens = None
        if not example.is_impossible and example.answer_start >= 0:
            answer_tokens = context.token_span(example.answer_start, example.answer_start + len(example.answer_text))
            if answer_tokens is None:
                raise ValueError(f"question {example.qas_id}: answer {example.answer_text!r} covers no token "
                                 "of the context")

        context_offset = len(query_ids) + 2
        windows = doc_windows(len(context.ids), max_seq_length - len(query_ids) - 3, doc_stride)
        for window_index, (window_start, window_length) in enumerate(windows):
            input_word_ids = [cls, *query_ids, sep, *context.ids[window_start : window_start + window_length], sep]
            input_type_ids = [0] * context_offset + [1] * (window_length + 1)
            token_spans, token_is_max_context = {}, {}
            for i in range(window_length):
                token_index = window_start + i
                if token_index in separators:
                    continue  # never the start or end of an answer
                token_spans[context_offset + i] = (context.starts[token_index], context.ends[token_index])
                token_is_max_context[context_offset + i] = is_max_context(windows, window_index, token_index)

            start_position = end_position = None
            if example.is_impossible:
                start_position = end_position = 0
            elif answer_tokens is not None:
                first, last = answer_tokens
                if window_start <= first and last < window_start + window_length:
                    start_position = first - window_start + context_offset
                    end_position = last - window_start + context_offset
                else:
                    start_position = end_position = 0
            padding = max_seq_length - len(input_word_ids)
            features.append(SquadFeature(
                unique_id=len(features),
                example_index=example_index,
                doc_span_index=window_index,
                input_word_ids=input_word_ids + [0] * padding,
                input_mask=[1] * len(input_word_ids) + [0] * padding,
                input_type_ids=input_type_ids + [0] * padding,
                token_spans=token_spans,
                token_is_max_context=token_is_max_context,
                start_position=start_position,
                end_position=end_position,
                is_impossible=start_position == 0,
            ))
        if progress is not None:
            progress.update(example_index + 1)
    return features


def feature_arrays(features, with_positions=True, with_answerability=False):
    """{name: int32 array [num_features, ...]}: the encoder inputs (+ start/end positions, + is_impossible:
    1 for a window without the answer, what the original SQuAD 2.0 head learns to tell)."""
    arrays = {
        name: np.asarray([getattr(feature, name) for feature in features], np.int32).reshape(len(features), -1)
        for name in ("input_word_ids", "input_mask", "input_type_ids")
    }
    if with_positions:
        missing = [feature.unique_id for feature in features if feature.start_position is None]
        if missing:
            raise ValueError(f"{len(missing)} features have no answer position (first: {missing[0]})")
        arrays["start_positions"] = np.asarray([f.start_position for f in features], np.int32)
        arrays["end_positions"] = np.asarray([f.end_position for f in features], np.int32)
    if with_answerability:
        arrays["is_impossible"] = np.asarray([f.is_impossible for f in features], np.int32)
    return arrays


# ----------------------------------------------------------------------------
# Predictions


def _softmax(scores):
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]
    total = sum(exps)
    return [value / total for value in exps]


def _top_positions(logits, positions, count):
    """The `count` positions of `positions` with the highest logits, best first."""
    return sorted(positions, key=lambda position: logits[position], reverse=True)[:count]


def postprocess_predictions(examples, features, start_logits, end_logits, n_best_size=20, max_answer_length=30,
                            version_2_with_negative=False, null_score_diff_threshold=0.0):
    """(predictions, nbest, null_odds) from per-feature logits.

    start_logits, end_logits: float arrays [num_features, seq], rows in the
    order of `features`. A candidate answer starts and ends on context tokens of
    one window, start <= end, at most max_answer_length tokens, and its start
    token has its maximal context in that window; its score is start + end logit.

    predictions: {question id: answer text from the original context}: v1.1's best candidate ("" where
      it spans only whitespace, as the original's), v2's best non-empty one unless the null score wins.
    nbest: {question id: up to n_best_size [{text, probability, start_logit,
      end_logit}], best first}, probabilities a softmax over those scores.
    null_odds: {question id: score_null - best span score} (v2; empty for v1.1).
    """
    features_by_example = collections.defaultdict(list)
    for row, feature in enumerate(features):
        features_by_example[feature.example_index].append((row, feature))

    predictions, nbest_json, null_odds = {}, {}, {}
    for example_index, example in enumerate(examples):
        candidates = []  # (score, start_logit, end_logit, text)
        null_score = null_start = null_end = None
        for row, feature in features_by_example[example_index]:
            starts, ends = start_logits[row], end_logits[row]
            if version_2_with_negative:
                score = float(starts[0] + ends[0])
                if null_score is None or score < null_score:
                    null_score, null_start, null_end = score, float(starts[0]), float(ends[0])
            context_positions = sorted(feature.token_spans)
            for start in _top_positions(starts, context_positions, n_best_size):
                if not feature.token_is_max_context[start]:
                    continue
                for end in _top_positions(ends, context_positions, n_best_size):
                    if end < start or end - start + 1 > max_answer_length:
                        continue
                    # A span of whitespace only stays a candidate, with the text "" (the original's rule).
                    text = example.context_text[feature.token_spans[start][0] : feature.token_spans[end][1]].strip()
                    candidates.append((float(starts[start] + ends[end]), float(starts[start]), float(ends[end]), text))
        if version_2_with_negative and null_score is not None:
            candidates.append((null_score, null_start, null_end, ""))
        candidates.sort(key=lambda candidate: candidate[0], reverse=True)

        nbest, seen = [], set()
        for score, start_logit, end_logit, text in candidates:
            if text in seen:
                continue
            seen.add(text)
            nbest.append({"text": text, "start_logit": start_logit, "end_logit": end_logit, "score": score})
            if len(nbest) == n_best_size:
                break
        if version_2_with_negative and null_score is not None and "" not in seen:
            nbest.append({"text": "", "start_logit": null_start, "end_logit": null_end, "score": null_score})
        if not nbest:
            nbest.append({"text": "", "start_logit": 0.0, "end_logit": 0.0, "score": 0.0})
        for entry, probability in zip(nbest, _softmax([entry["score"] for entry in nbest])):
            entry["probability"] = probability
        best_span = next((entry for entry in nbest if entry["text"]), None)

        if version_2_with_negative:
            score_diff = null_score - best_span["score"] if best_span else math.inf
            null_odds[example.qas_id] = score_diff
            predictions[example.qas_id] = "" if score_diff > null_score_diff_threshold else best_span["text"]
        else:
            predictions[example.qas_id] = nbest[0]["text"]
        nbest_json[example.qas_id] = [
            {key: entry[key] for key in ("text", "probability", "start_logit", "end_logit")} for entry in nbest
        ]
    return predictions, nbest_json, null_odds


# The log-probabilities of the placeholder answer a question gets when no candidate of its beam is valid.
NO_CANDIDATE_LOG_PROB = -1e6


def postprocess_beam_predictions(examples, features, outputs, n_best_size=20, max_answer_length=30):
    """(answers, nbest, no_answer_scores) from the original SQuAD 2.0 head's beam, as its run_squad_v2 does.

    outputs: float or int arrays, rows in the order of `features` (`AlbertSquadV2SpanLabeler`'s
    outputs): start_top_log_probs, start_top_index [num_features, S]; end_top_log_probs,
    end_top_index [num_features, S * E], entry k * E + j an end of start k; cls_logits [num_features].
    A candidate is a pair of the beam that starts and ends on context tokens of its window, start <=
    end, at most max_answer_length tokens, its start token with its maximal context in that window;
    its score is start_log_prob + end_log_prob.

    answers: {question id: the best candidate's text from the original context}, before the no-answer
      decision (`decide_no_answer`); "" when no candidate of any window is valid, or when the best spans
      only whitespace (the original keeps such a candidate, its text "").
    nbest: {question id: up to n_best_size [{text, probability, start_log_prob, end_log_prob}], best
      first, one per text}, probabilities a softmax over their scores.
    no_answer_scores: {question id: the smallest cls_logits of its windows} (null_odds.json).
    """
    start_log_probs, end_log_probs = outputs["start_top_log_probs"], outputs["end_top_log_probs"]
    start_indexes = np.asarray(outputs["start_top_index"]).astype(np.int64)
    end_indexes = np.asarray(outputs["end_top_index"]).astype(np.int64)
    start_n_top = start_indexes.shape[1]
    end_n_top = end_indexes.shape[1] // start_n_top
    features_by_example = collections.defaultdict(list)
    for row, feature in enumerate(features):
        features_by_example[feature.example_index].append((row, feature))

    answers, nbest_json, no_answer_scores = {}, {}, {}
    for example_index, example in enumerate(examples):
        candidates = []  # (score, start_log_prob, end_log_prob, text), in beam order
        no_answer_score = math.inf
        for row, feature in features_by_example[example_index]:
            no_answer_score = min(no_answer_score, float(outputs["cls_logits"][row]))
            for k in range(start_n_top):
                start = int(start_indexes[row, k])
                if start not in feature.token_spans or not feature.token_is_max_context[start]:
                    continue
                for j in range(k * end_n_top, (k + 1) * end_n_top):
                    end = int(end_indexes[row, j])
                    if end not in feature.token_spans or end < start or end - start + 1 > max_answer_length:
                        continue
                    # A span of whitespace only stays a candidate, with the text "" (the original's rule).
                    text = example.context_text[feature.token_spans[start][0] : feature.token_spans[end][1]].strip()
                    start_log_prob, end_log_prob = float(start_log_probs[row, k]), float(end_log_probs[row, j])
                    candidates.append((start_log_prob + end_log_prob, start_log_prob, end_log_prob, text))
        candidates.sort(key=lambda candidate: candidate[0], reverse=True)  # stable: ties keep the beam's order

        nbest, seen = [], set()
        for score, start_log_prob, end_log_prob, text in candidates:
            if len(nbest) == n_best_size:
                break
            if text in seen:
                continue
            seen.add(text)
            nbest.append({"text": text, "start_log_prob": start_log_prob, "end_log_prob": end_log_prob,
                          "score": score})
        if not nbest:
            nbest.append({"text": "", "start_log_prob": NO_CANDIDATE_LOG_PROB, "end_log_prob": NO_CANDIDATE_LOG_PROB,
                          "score": 2 * NO_CANDIDATE_LOG_PROB})
        for entry, probability in zip(nbest, _softmax([entry["score"] for entry in nbest])):
            entry["probability"] = probability
        answers[example.qas_id] = nbest[0]["text"]
        no_answer_scores[example.qas_id] = no_answer_score
        nbest_json[example.qas_id] = [
            {key: entry[key] for key in ("text", "probability", "start_log_prob", "end_log_prob")} for entry in nbest
        ]
    return answers, nbest_json, no_answer_scores


def decide_no_answer(answers, no_answer_scores, threshold):
    """{question id: "" where its no-answer score exceeds `threshold`, else its answer}.

    The official evaluation's rule for a na-prob threshold, so that the threshold its search finds
    best (squad_evaluation.best_threshold) reproduces the best score. (The original's run_squad_v2
    also answers "" where the score equals the threshold, which loses the questions at the threshold.)
    """
    return {qas_id: "" if no_answer_scores[qas_id] > threshold else text for qas_id, text in answers.items()}


def write_predictions(output_dir, predictions, nbest, null_odds=None):
    """Writes predictions.json (the official format: {id: text}), nbest_predictions.json and, for v2,
    null_odds.json (the official evaluation's --na-prob-file); returns their paths."""
    os.makedirs(output_dir, exist_ok=True)
    contents = {PREDICTIONS_FILE: predictions, NBEST_FILE: nbest}
    if null_odds:
        contents[NULL_ODDS_FILE] = null_odds
    paths = []
    for name, content in contents.items():
        path = os.path.join(output_dir, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(content, f, indent=2, ensure_ascii=False)
            f.write("\n")
        paths.append(path)
    return paths
