"""Span QA on Chinese and Japanese: CMRC 2018's and JSQuAD's official metrics (and SQuAD's) against the
figures of their official scripts, the metric picked from the data, CMRC 2018's extra gold answers, and
JSQuAD's "[SEP]" between title and paragraph.

Official figures. Each metric scores the file's questions with `fixed_predictions` (a deterministic
rewrite of each question's first gold answer), and the figures pinned below are what the official script
gave for the same predictions, written with

    python tests/test_cjk_qa.py FILE predictions.json [--omit]

(--omit for CMRC 2018, whose script counts unanswered questions) and scored with:

- CMRC 2018: ymcui/cmrc2018 at c0eb1b6, squad-style-data/cmrc2018_evaluate.py, under Python 2.7.18 (the
  script is Python 2) with NLTK 3.4.5 (the last NLTK for Python 2) and NLTK's English punkt model:
      python2.7 cmrc2018_evaluate.py cmrc2018_dev.json predictions.json
      -> {"AVERAGE": "53.393", "F1": "67.178", "EM": "39.609", "TOTAL": 3219, "SKIP": 388}
  (The same figures with NLTK's sentence split turned off, so the punkt model's version does not matter.)
- JSQuAD: JGLUE (yahoojapan/JGLUE at 6f071c0) evaluates with transformers 4.9.2 under its patch
  fine-tuning/patch/transformers-4.9.2_jglue-1.3.0.patch; its run_squad scores dev as
      examples = SquadV1Processor().get_dev_examples(DIR, filename="valid-v1.3.json")
      squad_evaluate(examples, predictions)
      -> exact 39.216569113012156, f1 67.66003256206469, total 4442
- SQuAD: rajpurkar/SQuAD-explorer at eee5fdb, evaluate-v2.0.py (the v2.0 script scores v1.1 files as v1.1's
  does, but for unanswered questions, of which these predictions have none):
      python evaluate-v2.0.py dev-v1.1.json predictions.json
      -> exact 26.111636707663198, f1 47.27767312134926, total 10570

The live comparisons (marked slow) run those scripts again where they are on this machine, and skip where
they are not: the repositories as the `fetch` tool mirrors them (git directories under ORACLE_MIRROR, by
default ../.mirror beside the repository), and two interpreters (by default under ../.oracle):
- CMRC2018_PYTHON: a command running Python 2.7 with NLTK 3.4.5 (pip install --target DIR nltk==3.4.5)
  and an NLTK_DATA holding tokenizers/punkt/english.pickle (NLTK's English punkt parameters; here those
  of nltk/nltk's history, nltk_data/tokenizers/punkt/english.pickle at 4dc39fbf, pickled again for 3.4.5);
- JGLUE_PYTHON: the python of a Python 3.9 venv with transformers==4.9.2 installed and the src/ hunks of
  JGLUE's patch applied to its site-packages (patch -p2).
"""

import json
import os
import pathlib
import subprocess
import sys
import zlib

import pytest

from albert_tf.tasks import cmrc2018_evaluation, jsquad_evaluation, qa_metrics, squad, squad_evaluation
from albert_tf.text.albert_tokenizer import SEP_ID

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
MIRROR = pathlib.Path(os.environ.get("ORACLE_MIRROR", REPO_ROOT.parent / ".mirror"))
ORACLE_ENVS = REPO_ROOT.parent / ".oracle"
CMRC2018_PYTHON = os.environ.get("CMRC2018_PYTHON", str(ORACLE_ENVS / "py27"))
JGLUE_PYTHON = os.environ.get("JGLUE_PYTHON", str(ORACLE_ENVS / "jglue-venv" / "bin" / "python"))

CMRC2018_DEV = "cmrc2018/cmrc2018_dev.json"
CMRC2018_TRIAL = "cmrc2018/cmrc2018_trial.json"
JSQUAD_VALID = "jglue/jsquad-v1.3/valid-v1.3.json"
SQUAD_DEV = "squad/dev-v1.1.json"

# The official scripts' figures of fixed_predictions (the module docstring says how they were computed).
OFFICIAL_CMRC2018_DEV = {"AVERAGE": "53.393", "F1": "67.178", "EM": "39.609", "TOTAL": 3219, "SKIP": 388}
OFFICIAL_JSQUAD_VALID = {"exact": 39.216569113012156, "f1": 67.66003256206469, "total": 4442}
OFFICIAL_SQUAD_DEV = {"exact": 26.111636707663198, "f1": 47.27767312134926, "total": 10570}


def fixed_predictions(articles, omit=False):
    """{question id: prediction}: the question's first gold answer rewritten by a rule that crc32(id) % 8
    picks: as it is; its first two thirds; its last two thirds; "。" added; upper-cased between spaces; its
    last gold answer with "（" + two characters of the question + "）"; ""; the question itself (with omit:
    no prediction). Each rule meets a different part of the metrics (truncation, punctuation, case,
    whitespace, the other golds, empty and wrong answers)."""
    predictions = {}
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                golds = [answer["text"] for answer in qa["answers"]]
                gold = golds[0]
                rule = zlib.crc32(qa["id"].encode("utf-8")) % 8
                if rule == 7 and omit:
                    continue
                predictions[qa["id"]] = [
                    gold, gold[: max(1, len(gold) * 2 // 3)], gold[len(gold) // 3 :], gold + "。",
                    f" {gold.upper()} ", golds[-1] + "（" + qa["question"][:2] + "）", "", qa["question"],
                ][rule]
    return predictions


def load_articles(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["data"]


def write_json(path, content):
    path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    return path


def one_article(paragraphs):
    """The SQuAD layout around [(context, [(id, question, [(text, answer_start)])])]."""
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": context, "qas": [{"id": qas_id, "question": question, "answers": [
            {"text": text, "answer_start": start} for text, start in answers]}
            for qas_id, question, answers in qas]} for context, qas in paragraphs]}]}


# ----------------------------------------------------------------------------
# CMRC 2018's metric, by hand


def test_mixed_segmentation_makes_each_chinese_character_a_token_and_other_runs_words():
    assert cmrc2018_evaluation.mixed_segmentation("2008年北京奥运会在Beijing举行") == [
        "2008", "年", "北", "京", "奥", "运", "会", "在", "beijing", "举", "行"]
    # Punctuation is dropped without ending a run (the official script's quirk).
    assert cmrc2018_evaluation.mixed_segmentation("147.0（20）") == ["147.020"]
    assert cmrc2018_evaluation.mixed_segmentation("《青天》、「米」：A-B") == ["青", "天", "米", "ab"]
    # Kept without dropping: each mark a token of its own.
    assert cmrc2018_evaluation.mixed_segmentation("北京，A-B", drop_punctuation=False) == [
        "北", "京", "，", "a", "-", "b"]
    # Outside U+4E00..U+9FA5 (here kana, a character past 9FA5) is "other": a run.
    assert cmrc2018_evaluation.mixed_segmentation("东京とうきょう\u9fa6") == ["东", "京", "とうきょう\u9fa6"]
    # An ellipsis is not in the list ("……" is, as one two-character entry).
    assert cmrc2018_evaluation.mixed_segmentation("好…") == ["好", "…"]


def test_other_runs_split_as_the_penn_treebank_does():
    words = cmrc2018_evaluation.treebank_words
    assert words('"iskra" u.s. 1,000 3.5% (jnu) cannot it\'s end.') == [
        "``", "iskra", "''", "u.s.", "1,000", "3.5", "%", "(", "jnu", ")", "can", "not", "it", "'s", "end", "."]
    # Only the final period of a run is split off (NLTK's sentence split is not reproduced).
    assert words("h. reinhart") == ["h.", "reinhart"]


def test_cmrc2018_f1_is_over_the_longest_common_substring_and_em_ignores_punctuation():
    # A bag of tokens would give 1.0; the longest common substring is 2 of 4 tokens.
    assert cmrc2018_evaluation.f1("北京大学", "大学北京") == pytest.approx(0.5)
    assert cmrc2018_evaluation.f1("北京大学", "北京") == pytest.approx(2 * 1.0 * 0.5 / 1.5)
    assert cmrc2018_evaluation.f1("北京", "") == cmrc2018_evaluation.f1("。", "。") == 0.0
    assert cmrc2018_evaluation.exact_match("《北京》。", " 北京 ") == 1
    # Whitespace inside is kept for EM, not for F1.
    assert cmrc2018_evaluation.exact_match("北 京", "北京") == 0
    assert cmrc2018_evaluation.f1("北 京", "北京") == 1.0
    # SQuAD's F1 on the same Chinese answers is its EM: an unsegmented answer is one token.
    assert squad_evaluation.f1("北京大学", "北京") == 0.0


def test_cmrc2018_evaluate_takes_the_best_gold_and_counts_unanswered_questions():
    articles = one_article([("北京大学在北京。", [
        ("q1", "哪里?", [("北京大学", 0), ("北京的大学", -1)]),
        ("q2", "哪里?", [("北京", 5)]),
        ("q3", "哪里?", [("北京", 5)]),
    ])])["data"]
    result = cmrc2018_evaluation.evaluate(articles, {"q1": "北京的大学", "q2": "北"})
    # q1: the answer_start -1 gold matches; q2: F1 2/3 (precision 1, recall 1/2); q3: unanswered.
    assert result["exact"] == pytest.approx(100 / 3)
    assert result["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)
    assert result["average"] == pytest.approx((result["exact"] + result["f1"]) / 2)
    assert (result["total"], result["skip"]) == (3, 1)


# ----------------------------------------------------------------------------
# JSQuAD's metric, by hand


def test_jsquad_normalization_keeps_punctuation_and_drops_a_final_full_stop():
    assert jsquad_evaluation.normalize_answer(" 東京タワー。。") == "東京タワー"
    # The full stops go before whitespace is collapsed: not those followed by a space (as JGLUE's code does).
    assert jsquad_evaluation.normalize_answer("東京タワー。 ") == "東京タワー。"
    assert jsquad_evaluation.normalize_answer("「東京」、 ABC  def") == "「東京」、 abc def"
    assert jsquad_evaluation.normalize_answer("。東京") == "。東京"
    assert jsquad_evaluation.exact_match("東京。", "東京") == 1
    assert jsquad_evaluation.exact_match("東京、", "東京") == 0  # SQuAD's would drop the comma: it is not ASCII


def test_jsquad_f1_counts_characters():
    assert jsquad_evaluation.f1("東京都", "東京") == pytest.approx(2 * 1.0 * (2 / 3) / (1 + 2 / 3))
    assert jsquad_evaluation.f1("京東", "東京") == 1.0  # a bag of characters
    assert jsquad_evaluation.f1("a b", "ab") == pytest.approx(2 * 1.0 * (2 / 3) / (1 + 2 / 3))  # spaces count
    assert jsquad_evaluation.f1("東京", "") == 0.0 and jsquad_evaluation.f1("。", "") == 1.0
    articles = one_article([("東京タワー", [("q1", "何?", [("東京", 0), ("。", 0)]), ("q2", "何?", [("タワー", 2)])])])
    result = jsquad_evaluation.evaluate(articles["data"], {"q1": "東京。", "q2": "ワ"})
    assert result["exact"] == 50.0 and result["total"] == 2 and result["HasAns_total"] == 2
    assert result["f1"] == pytest.approx(100 * (1 + 0.5) / 2)


# ----------------------------------------------------------------------------
# The official scripts' figures on the dev files


def test_cmrc2018_metric_gives_the_official_scripts_figures_on_dev(shared_data):
    articles = load_articles(shared_data / CMRC2018_DEV)
    result = cmrc2018_evaluation.evaluate(articles, fixed_predictions(articles, omit=True))
    assert {"AVERAGE": f"{result['average']:.3f}", "F1": f"{result['f1']:.3f}", "EM": f"{result['exact']:.3f}",
            "TOTAL": result["total"], "SKIP": result["skip"]} == OFFICIAL_CMRC2018_DEV


def test_jsquad_metric_gives_jglues_figures_on_valid(shared_data):
    articles = load_articles(shared_data / JSQUAD_VALID)
    result = jsquad_evaluation.evaluate(articles, fixed_predictions(articles))
    assert {key: result[key] for key in OFFICIAL_JSQUAD_VALID} == pytest.approx(OFFICIAL_JSQUAD_VALID, abs=1e-9)


def test_squad_metric_gives_the_official_scripts_figures_on_dev(shared_data):
    articles = load_articles(shared_data / SQUAD_DEV)
    result = squad_evaluation.evaluate(articles, fixed_predictions(articles))
    assert {key: result[key] for key in OFFICIAL_SQUAD_DEV} == pytest.approx(OFFICIAL_SQUAD_DEV, abs=1e-9)


def mirrored_file(repository, path, destination):
    """`path` of the mirrored `repository` written to `destination`; skips where it is not mirrored."""
    git_dir = MIRROR / repository.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        pytest.skip(f"{repository} is not mirrored in {MIRROR}")
    shown = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"HEAD:{path}"], capture_output=True,
                           timeout=60)
    if shown.returncode:
        pytest.skip(f"{repository}: no {path} in its mirror")
    destination.write_bytes(shown.stdout)
    return destination


def oracle_python(command, check):
    """`command` (an interpreter) when it runs `check`; skips otherwise."""
    if not os.path.exists(command):
        pytest.skip(f"{command} not present")
    probe = subprocess.run([command, "-c", check], capture_output=True, timeout=120)
    if probe.returncode:
        pytest.skip(f"{command} cannot run the oracle: {probe.stderr.decode(errors='replace')[-200:]}")
    return command


@pytest.mark.slow
def test_cmrc2018_metric_against_the_official_script(shared_data, tmp_path):
    """The figures, and the mixed segmentation of every question and answer of dev and trial."""
    script = mirrored_file("ymcui/cmrc2018", "squad-style-data/cmrc2018_evaluate.py",
                           tmp_path / "cmrc2018_evaluate.py")
    python = oracle_python(CMRC2018_PYTHON, "import nltk; nltk.word_tokenize(u'a b. c')")
    dev = shared_data / CMRC2018_DEV
    articles = load_articles(dev)
    predictions = write_json(tmp_path / "predictions.json", fixed_predictions(articles, omit=True))
    run = subprocess.run([python, str(script), str(dev), str(predictions)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    official = json.loads(run.stdout.strip().splitlines()[-1])
    official.pop("FILE")
    assert official == OFFICIAL_CMRC2018_DEV
    result = cmrc2018_evaluation.evaluate(articles, json.loads(predictions.read_text(encoding="utf-8")))
    assert {"AVERAGE": f"{result['average']:.3f}", "F1": f"{result['f1']:.3f}", "EM": f"{result['exact']:.3f}",
            "TOTAL": result["total"], "SKIP": result["skip"]} == official

    texts = sorted({text for path in (dev, shared_data / CMRC2018_TRIAL) for article in load_articles(path)
                    for paragraph in article["paragraphs"] for qa in paragraph["qas"]
                    for text in [qa["question"], *(answer["text"] for answer in qa["answers"])]})
    write_json(tmp_path / "texts.json", texts)
    # Run in tmp_path, beside the script: importing it runs no evaluation (its __main__ does).
    segment = ("import json, sys; sys.argv = ['x']\n"
               "import cmrc2018_evaluate as ev\n"
               "texts = json.load(open('texts.json'))\n"
               "json.dump([[ev.mixed_segmentation(t, rm_punc=True), ev.remove_punctuation(t)] for t in texts],"
               " open('segmented.json', 'w'))\n")
    run = subprocess.run([python, "-c", segment], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    official = json.loads((tmp_path / "segmented.json").read_text(encoding="utf-8"))
    ours = [[cmrc2018_evaluation.mixed_segmentation(text), cmrc2018_evaluation.remove_punctuation(text)]
            for text in texts]
    assert len(texts) > 9000
    assert [text for text, a, b in zip(texts, ours, official) if a != b] == []


JSQUAD_ORACLE = """
import json, os, sys
from transformers.data.processors.squad import SquadV1Processor
from transformers.data.metrics.squad_metrics import squad_evaluate
dataset, predictions = sys.argv[1:3]
examples = SquadV1Processor().get_dev_examples(os.path.dirname(dataset), filename=os.path.basename(dataset))
print(json.dumps(squad_evaluate(examples, json.load(open(predictions, encoding="utf-8")))))
"""


@pytest.mark.slow
def test_jsquad_metric_against_jglues_evaluation(shared_data, tmp_path):
    mirrored_file("yahoojapan/JGLUE", "fine-tuning/patch/transformers-4.9.2_jglue-1.3.0.patch", tmp_path / "patch")
    # JGLUE's patch applied: "。" at the end goes, punctuation stays.
    python = oracle_python(JGLUE_PYTHON, "from transformers.data.metrics.squad_metrics import normalize_answer as n; "
                                         "assert n('A、B。') == 'a、b', n('A、B。')")
    valid = shared_data / JSQUAD_VALID
    articles = load_articles(valid)
    predictions = write_json(tmp_path / "predictions.json", fixed_predictions(articles))
    run = subprocess.run([python, "-c", JSQUAD_ORACLE, str(valid), str(predictions)], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    official = json.loads(run.stdout.strip().splitlines()[-1])
    assert {key: official[key] for key in OFFICIAL_JSQUAD_VALID} == pytest.approx(OFFICIAL_JSQUAD_VALID, abs=1e-9)
    result = jsquad_evaluation.evaluate(articles, fixed_predictions(articles))
    assert {key: result[key] for key in result} == pytest.approx({key: official[key] for key in result}, abs=1e-9)


@pytest.mark.slow
def test_squad_metric_against_the_official_script(shared_data, tmp_path):
    script = mirrored_file("rajpurkar/SQuAD-explorer", "evaluate-v2.0.py", tmp_path / "evaluate-v2.0.py")
    dev = shared_data / SQUAD_DEV
    articles = load_articles(dev)
    predictions = write_json(tmp_path / "predictions.json", fixed_predictions(articles))
    run = subprocess.run([sys.executable, str(script), str(dev), str(predictions)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    official = json.loads(run.stdout)
    assert {key: official[key] for key in OFFICIAL_SQUAD_DEV} == pytest.approx(OFFICIAL_SQUAD_DEV, abs=1e-9)
    assert squad_evaluation.evaluate(articles, fixed_predictions(articles)) == pytest.approx(official, abs=1e-9)


# ----------------------------------------------------------------------------
# The metric picked from the data


def test_auto_picks_the_metric_from_the_contexts_script():
    chinese = one_article([("北京大学（Peking）是中国的一所大学，位于北京。", [])])["data"]
    japanese = one_article([("東京 [SEP] 東京は日本の首都であり、とても大きな都市です。", [])])["data"]
    english = one_article([("The blue whale is the largest animal, 鯨.", [])])["data"]
    # A few katakana in Chinese do not make it Japanese.
    chinese_with_katakana = one_article([("北京大学是中国的一所综合性大学，位于北京市海淀区，创建于一八九八年，是中国近代"
                                          "第一所国立大学。日本人称它为ペキン大学。", [])])["data"]
    picked = {name: qa_metrics.pick_metric(articles, f"/data/{name}.json") for name, articles in [
        ("zh", chinese), ("ja", japanese), ("en", english), ("zh_kana", chinese_with_katakana)]}
    assert {name: metric for name, (metric, _) in picked.items()} == {
        "zh": "cmrc2018", "ja": "jsquad", "en": "squad", "zh_kana": "cmrc2018"}
    assert picked["zh"][1].startswith("Scoring zh.json with CMRC 2018's official metric (--metric=auto: ")
    assert picked["ja"][1].startswith("Scoring ja.json with JSQuAD's official metric")


def test_auto_picks_each_dev_files_own_metric(shared_data):
    for path, metric in [(CMRC2018_DEV, "cmrc2018"), (JSQUAD_VALID, "jsquad"), (SQUAD_DEV, "squad")]:
        assert qa_metrics.pick_metric(load_articles(shared_data / path), path)[0] == metric


def test_metrics_are_selected_by_name_and_record_it():
    articles = one_article([("北京大学", [("q1", "?", [("北京大学", 0)])])])["data"]
    scored = {metric: qa_metrics.evaluate(metric, articles, {"q1": "北京"}) for metric in qa_metrics.METRICS}
    assert {metric: result["metric"] for metric, result in scored.items()} == {m: m for m in qa_metrics.METRICS}
    assert scored["squad"]["f1"] == 0.0
    assert scored["cmrc2018"]["f1"] == pytest.approx(100 * 2 * 0.5 / 1.5)
    assert scored["jsquad"]["f1"] == pytest.approx(100 * 2 * 0.5 / 1.5)
    with pytest.raises(ValueError, match="metric must be one of"):
        qa_metrics.evaluate("bleu", articles, {})


def test_the_task_resolves_auto_prints_it_and_refuses_a_cjk_metric_for_squad_2(tmp_path, capsys):
    from albert_tf.settings import SettingError
    from albert_tf.tasks.squad_task import SquadConfig, SquadTask
    from albert_tf.training.finetuning_config import FinetuningConfig

    dev = write_json(tmp_path / "dev.json", one_article([("北京大学在北京。", [("q1", "哪里?", [("北京", 5)])])]))

    def resolved(**task):
        config = FinetuningConfig(task=SquadConfig(predict_file=str(dev), **task), do_predict=True)
        return SquadTask().resolve(config).task.metric

    assert resolved(version="1.1") == "cmrc2018"
    assert "Scoring dev.json with CMRC 2018's official metric (--metric=auto: " in capsys.readouterr().out
    assert resolved(version="1.1", metric="squad") == "squad"
    assert resolved(version="2.0") == "squad"
    for metric in ("cmrc2018", "jsquad", "rouge"):
        with pytest.raises(SettingError, match="metric"):
            SquadTask().validate(FinetuningConfig(task=SquadConfig(version="2.0", predict_file=str(dev),
                                                                   metric=metric), do_predict=True))


# ----------------------------------------------------------------------------
# Reading CMRC 2018: answers for evaluation only


def test_answers_not_at_their_answer_start_are_for_evaluation_only(tmp_path):
    context = "北京大学位于北京。"
    path = write_json(tmp_path / "zh.json", one_article([(context, [
        ("q1", "哪所大学?", [("北京大学", 0), ("北大", -1)]),   # an extra gold not in the context
        ("q2", "在哪里?", [("北京", 6), ("北京", 7)]),          # the second one character off
        ("q3", "在哪里?", [("北京", -1), ("北京", 6)]),         # the first: nothing to learn
    ])]))
    lines = []
    articles, examples = squad.read_squad(str(path), "1.1", labeled=False, report=lines.append)
    assert [(e.qas_id, e.answer_text, e.answer_start, e.gold_answers) for e in examples] == [
        ("q1", "北京大学", 0, ("北京大学", "北大")), ("q2", "北京", 6, ("北京", "北京")), ("q3", "", -1, ("北京", "北京"))]
    assert lines == [f"{path}: 3 gold answers are not in the context at their answer_start (2 with answer_start "
                     "-1): kept for evaluation only, never a training target."]
    # Every gold answer scores: q1 answered with the extra gold is right.
    assert cmrc2018_evaluation.evaluate(articles, {"q1": "北大", "q2": "北京", "q3": "北京"})["exact"] == 100.0

    lines.clear()
    _, training = squad.read_squad(str(path), "1.1", report=lines.append)
    assert [e.qas_id for e in training] == ["q1", "q2"]
    assert lines[0].endswith("never a training target; 1 questions whose first answer is one of them left out "
                             "of training.")


def test_a_file_with_no_first_answer_in_place_has_nothing_to_train_on(tmp_path):
    path = write_json(tmp_path / "zh.json", one_article([("北京大学", [("q1", "?", [("北大", -1)])])]))
    with pytest.raises(ValueError, match=r"zh.json: no question to train on: none has its first answer in the "
                                         r"context at its answer_start \(fix the answer_start of the first answers\)"):
        squad.read_squad(str(path), "1.1")
    # To answer and score, it is a question with answers.
    from albert_tf.tasks.squad_task import _answered

    assert _answered(squad.read_squad(str(path), "1.1", labeled=False)[1])


def test_the_reader_reads_cmrc2018_dev_keeping_its_extra_answers_for_evaluation(shared_data):
    path = str(shared_data / CMRC2018_DEV)
    lines = []
    articles, examples = squad.read_squad(path, "1.1", labeled=False, report=lines.append)
    assert len(examples) == 3219
    assert sum(len(example.gold_answers) for example in examples) == 3 * 3219
    assert lines == [f"{path}: 200 gold answers are not in the context at their answer_start (193 with "
                     "answer_start -1): kept for evaluation only, never a training target."]
    # Three first answers are 1-2 characters off: answered and scored, not trained on.
    assert [e.qas_id for e in examples if e.answer_start < 0] == ["DEV_101_QUERY_3", "DEV_110_QUERY_2",
                                                                  "DEV_110_QUERY_3"]
    assert len(squad.read_squad(path, "1.1")[1]) == 3216
    # DEV_64_QUERY_2's third gold answer has answer_start -1: predicting it is exact.
    extra = "便利店、面包糕饼店以及洗衣店，亦设有招商银行自动柜员机以及自动售卖机"
    example = next(e for e in examples if e.qas_id == "DEV_64_QUERY_2")
    assert example.gold_answers[2] == extra and extra not in example.gold_answers[:2]
    scores = cmrc2018_evaluation.evaluate(articles, {"DEV_64_QUERY_2": extra})
    assert scores["exact"] == pytest.approx(100 / 3219)


# ----------------------------------------------------------------------------
# JSQuAD's [SEP]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from text_fixtures import train_small_spm

    return AlbertTokenizer(str(train_small_spm(tmp_path_factory, name="cjk_qa_spm")))


def test_a_literal_sep_in_the_context_is_the_separator_token(tokenizer):
    title, paragraph = "Whales", "The blue whale is the largest animal. It lives in the ocean."
    context = f"{title} [SEP] {paragraph}"
    tokens, separators = squad.tokenize_context(tokenizer, context)
    title_ids, paragraph_ids = tokenizer.encode(title), tokenizer.encode(paragraph)
    assert tokens.ids == [*title_ids, SEP_ID, *paragraph_ids]
    assert separators == {len(title_ids)}
    assert context[tokens.starts[len(title_ids)] : tokens.ends[len(title_ids)]] == "[SEP]"
    # Offsets are the whole context's: each token covers its own text there.
    assert "".join(context[s:e] for s, e in zip(tokens.starts, tokens.ends)).replace(" ", "") == context.replace(
        " ", "")
    assert tokenizer.encode(context) != tokens.ids  # to SentencePiece alone it is text

    answer = "the ocean"
    example = squad.SquadExample("q", "Where?", context, answer, context.index(answer))
    (feature,) = squad.convert_examples_to_features([example], tokenizer, max_seq_length=64, max_query_length=8)
    question_ids = tokenizer.encode("Where?")
    separator_position = len(question_ids) + 2 + len(title_ids)
    assert feature.input_word_ids[separator_position] == SEP_ID
    assert feature.input_word_ids.count(SEP_ID) == 3  # after the question, between title and paragraph, at the end
    assert feature.input_type_ids[separator_position] == 1
    # Never an answer's start or end; the answer maps back to the context as written.
    assert separator_position not in feature.token_spans and separator_position not in feature.token_is_max_context
    start, end = feature.token_spans[feature.start_position][0], feature.token_spans[feature.end_position][1]
    assert context[start:end] == answer


def test_a_prediction_never_starts_or_ends_at_the_separator(tokenizer):
    import numpy as np

    context = "Whales [SEP] The blue whale is the largest animal."
    example = squad.SquadExample("q", "Which?", context, "", -1)
    (feature,) = squad.convert_examples_to_features([example], tokenizer, max_seq_length=64, max_query_length=8)
    separator = feature.input_word_ids.index(SEP_ID, feature.input_word_ids.index(SEP_ID) + 1)
    starts, ends = np.zeros((1, 64), np.float32), np.zeros((1, 64), np.float32)
    starts[0, separator] = ends[0, separator] = 10.0  # the separator scores best as both
    starts[0, separator + 1] = ends[0, separator + 4] = 5.0
    predictions, nbest, _ = squad.postprocess_predictions([example], [feature], starts, ends, n_best_size=5)
    assert predictions["q"] and "[SEP]" not in predictions["q"]
    assert not any(entry["text"].startswith("[SEP]") or entry["text"].endswith("[SEP]") for entry in nbest["q"])


def test_jsquad_contexts_have_one_separator_read_as_the_token(shared_data, tokenizer):
    articles, examples = squad.read_squad(str(shared_data / JSQUAD_VALID), "1.1", labeled=False)
    contexts = [paragraph["context"] for article in articles for paragraph in article["paragraphs"]]
    assert len(contexts) == 1145 and all(context.count(" [SEP] ") == 1 for context in contexts)
    for context in contexts[:50]:
        tokens, separators = squad.tokenize_context(tokenizer, context)
        (separator,) = separators
        assert tokens.ids.count(SEP_ID) == 1 and tokens.ids[separator] == SEP_ID
        assert context[tokens.starts[separator] : tokens.ends[separator]] == "[SEP]"
    # Every answer lies after the separator and maps to tokens of the paragraph.
    features = squad.convert_examples_to_features(examples[:40], tokenizer, max_seq_length=384)
    for feature in features:
        example = examples[feature.example_index]
        if feature.start_position:
            start = feature.token_spans[feature.start_position][0]
            assert start > example.context_text.index("[SEP]")


# ----------------------------------------------------------------------------
# The tool, end to end


@pytest.mark.slow
def test_run_squad_scores_chinese_with_cmrc2018s_metric_and_records_it(tmp_path, tokenizer):
    import dataclasses

    import keras

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.networks.albert_encoder import AlbertEncoder

    config = dataclasses.replace(AlbertConfig.from_preset("albert_tiny"), vocab_size=tokenizer.vocab_size)
    keras.utils.set_random_seed(0)
    encoder = tmp_path / "encoder"
    write_model_dir(AlbertEncoder(config), encoder, "encoder", files={"spm.model": tokenizer.source})
    context = "北京大学位于北京市海淀区，创建于1898年。"
    data = write_json(tmp_path / "zh.json", one_article([(context, [
        ("q1", "北京大学在哪里?", [("北京市海淀区", 6), ("海淀区", -1)]),
        ("q2", "北京大学创建于哪一年?", [("1898年", 16)]),
    ])]))
    common = [f"--train_file={data}", f"--predict_file={data}", f"--init_checkpoint={encoder}", "--version=1.1",
              "--do_train", "--do_predict", "--num_train_steps=2", "--max_seq_length=64", "--max_query_length=16",
              "--doc_stride=16", "--train_batch_size=2", "--predict_batch_size=2"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    run = subprocess.run([sys.executable, "-m", "albert_tf.run_squad", *common, f"--output_dir={tmp_path / 'a'}"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "Scoring zh.json with CMRC 2018's official metric (--metric=auto: " in run.stdout
    assert "1 gold answers are not in the context at their answer_start (1 with answer_start -1)" in run.stdout
    assert "(CMRC 2018's official metric)" in run.stdout
    results = json.loads((tmp_path / "a" / "eval_results.json").read_text())
    predictions = json.loads((tmp_path / "a" / "predictions.json").read_text(encoding="utf-8"))
    articles = load_articles(data)
    assert results == {**cmrc2018_evaluation.evaluate(articles, predictions), "metric": "cmrc2018"}

    run = subprocess.run([sys.executable, "-m", "albert_tf.run_squad", *common, "--metric=squad",
                          f"--output_dir={tmp_path / 'b'}"], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "b" / "eval_results.json").read_text())
    predictions = json.loads((tmp_path / "b" / "predictions.json").read_text(encoding="utf-8"))
    assert results == {**squad_evaluation.evaluate(articles, predictions), "metric": "squad"}


if __name__ == "__main__":
    # python tests/test_cjk_qa.py FILE OUT [--omit]: writes fixed_predictions of FILE, for the official scripts.
    source, destination = sys.argv[1], sys.argv[2]
    write_json(pathlib.Path(destination), fixed_predictions(load_articles(source), omit="--omit" in sys.argv[3:]))
