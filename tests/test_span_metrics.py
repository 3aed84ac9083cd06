"""Metrics of entities as character spans (`span_metrics`) and KLUE-NER's official metrics (`klue_metrics`):
hand-computed cases in Korean, Chinese and Japanese; conlleval's metrics (`tagging_metrics`) on word-aligned
spans; scikit-learn's f1_score (KLUE's character macro F1) and a re-implementation of seqeval's strict IOB2
macro F1 (KLUE's entity macro F1; seqeval itself is not installed) on random spans."""

import random
from fractions import Fraction

import pytest

from albert_tf.tasks.tagging_metrics import klue_metrics, metrics_table, span_metrics, tagging_metrics

KLUE_LABELS = ("B-DT", "I-DT", "B-LC", "I-LC", "B-OG", "I-OG", "B-PS", "I-PS", "B-QT", "I-QT", "B-TI", "I-TI", "O")

# 서0 울1 에2 서3 _4 김5 철6 수7 를8 _9 만10 났11 다12
KOREAN = "서울에서 김철수를 만났다"
KOREAN_GOLD = [("LC", 0, 2), ("PS", 5, 8)]  # 서울, 김철수
KOREAN_PREDICTED = [("LC", 0, 3), ("OG", 5, 8)]  # 서울에: a wrong boundary; 김철수 as OG: a wrong type
CHINESE = "我在北京见到了王小明"
CHINESE_GOLD = [("LC", 2, 4), ("PS", 7, 10)]  # 北京, 王小明
CHINESE_PREDICTED = [("PS", 7, 10), ("LC", 2, 4), ("PS", 7, 10)]  # right, in another order, one twice
JAPANESE = "東京で山田さんに会った"
JAPANESE_GOLD = [("LC", 0, 2), ("PS", 3, 5)]  # 東京, 山田
JAPANESE_PREDICTED = [("LC", 0, 2), ("PS", 3, 7)]  # 山田さん: a wrong boundary


def test_korean_sentence_by_hand():
    metrics = span_metrics([KOREAN], [KOREAN_GOLD], [KOREAN_PREDICTED])
    assert (metrics["precision"], metrics["recall"], metrics["f1"]) == (0.0, 0.0, 0.0)
    assert (metrics["entities"], metrics["predicted_entities"], metrics["correct_entities"]) == (2, 2, 0)
    assert metrics["per_type"] == {
        "LC": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1, "predicted": 1, "correct": 0},
        "OG": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0, "predicted": 1, "correct": 0},
        "PS": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1, "predicted": 0, "correct": 0}}
    # 11 characters but the two spaces; gold  B-LC I-LC O    O B-PS I-PS I-PS O O O O
    #                                predicted B-LC I-LC I-LC O B-OG I-OG I-OG O O O O: 7 agree
    assert (metrics["characters"], metrics["sentences"]) == (11, 1)
    assert metrics["accuracy"] == pytest.approx(7 / 11)
    assert "tokens" not in metrics
    klue = klue_metrics([KOREAN], [KOREAN_GOLD], [KOREAN_PREDICTED], KLUE_LABELS)
    assert klue["klue_entity_macro_f1"] == 0.0  # LC, OG and PS: none correct
    # B-LC 1, I-LC 2/3 (one of its two predictions right), B-/I-PS and B-/I-OG 0, O 2*5/(6+5) = 10/11, and the
    # six DT, QT and TI tags found nowhere 1 each: (1 + 2/3 + 10/11 + 6) / 13
    assert klue["klue_char_macro_f1"] == pytest.approx(float(Fraction(283, 429)))


def test_chinese_japanese_and_korean_sentences_by_hand():
    texts = [KOREAN, CHINESE, JAPANESE]
    gold, predicted = [KOREAN_GOLD, CHINESE_GOLD, JAPANESE_GOLD], [KOREAN_PREDICTED, CHINESE_PREDICTED,
                                                                    JAPANESE_PREDICTED]
    metrics = span_metrics(texts, gold, predicted)
    # right: 北京, 王小明 (predicted twice, counted once), 東京
    assert (metrics["entities"], metrics["predicted_entities"], metrics["correct_entities"]) == (6, 6, 3)
    assert (metrics["precision"], metrics["recall"], metrics["f1"]) == (0.5, 0.5, 0.5)
    assert metrics["per_type"]["LC"] == pytest.approx(
        {"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "support": 3, "predicted": 3, "correct": 2})
    assert metrics["per_type"]["PS"] == pytest.approx(
        {"precision": 1 / 2, "recall": 1 / 3, "f1": 2 / 5, "support": 3, "predicted": 2, "correct": 1})
    assert list(metrics["per_type"]) == ["LC", "OG", "PS"]
    # Korean 7 of 11, Chinese 10 of 10, Japanese 9 of 11 (さん tagged I-PS)
    assert (metrics["characters"], metrics["sentences"]) == (32, 3)
    assert metrics["accuracy"] == pytest.approx(26 / 32)
    # per type: LC 2/3, OG 0, PS 2/5
    klue = klue_metrics(texts, gold, predicted, KLUE_LABELS)
    assert klue["klue_entity_macro_f1"] == pytest.approx(16 / 45)
    assert set(klue) == {"klue_entity_macro_f1", "klue_char_macro_f1"}


def test_all_right_and_nothing_at_all():
    texts, gold = [KOREAN, CHINESE, JAPANESE], [KOREAN_GOLD, CHINESE_GOLD, JAPANESE_GOLD]
    metrics = span_metrics(texts, gold, gold)
    assert (metrics["precision"], metrics["recall"], metrics["f1"], metrics["accuracy"]) == (1.0, 1.0, 1.0, 1.0)
    assert klue_metrics(texts, gold, gold, KLUE_LABELS) == {"klue_entity_macro_f1": 1.0, "klue_char_macro_f1": 1.0}
    empty = span_metrics(texts, [[], [], []], [[], [], []])
    assert (empty["f1"], empty["accuracy"], empty["per_type"], empty["entities"]) == (0.0, 1.0, {}, 0)
    # no entities: seqeval's mean over no types is nan, here 0; every tag but O is nowhere, so 1
    assert klue_metrics(texts, [[], [], []], [[], [], []], KLUE_LABELS) == {
        "klue_entity_macro_f1": 0.0, "klue_char_macro_f1": 1.0}
    nothing_predicted = span_metrics(texts, gold, [[], [], []])
    assert (nothing_predicted["precision"], nothing_predicted["recall"]) == (0.0, 0.0)


def test_whitespace_is_not_scored():
    # An entity with a space inside (김 철수) and a span with a space at either end (" 서울 "): spaces are no
    # characters of the accuracy, so an entity's first non-space character is its B- and spaces never count.
    text = "김 철수 씨가 서울 에 갔다"  # 김0 _1 철2 수3 _4 씨5 가6 _7 서8 울9 _10 에11 _12 갔13
    gold = [("PS", 0, 4), ("LC", 8, 10)]  # 김 철수; 서울 (trimmed spans)
    untrimmed = [("PS", 0, 4), ("LC", 7, 11)]  # " 서울 ": the same characters, another span
    metrics = span_metrics([text], [gold], [untrimmed])
    assert (metrics["characters"], metrics["accuracy"]) == (10, 1.0)
    assert (metrics["correct_entities"], metrics["per_type"]["LC"]["correct"]) == (1, 0)  # spans differ
    # KLUE compares character tags: the same tags, the same entities
    assert klue_metrics([text], [gold], [untrimmed], KLUE_LABELS) == {
        "klue_entity_macro_f1": 1.0, "klue_char_macro_f1": 1.0}
    # 철수 alone is another entity, and its characters' tags differ (철 B-PS against I-PS)
    metrics = span_metrics([text], [gold], [[("PS", 2, 4), ("LC", 8, 10)]])
    assert (metrics["correct_entities"], metrics["accuracy"]) == (1, 8 / 10)


def test_klue_drops_only_the_space_character():
    # U+3000, the ideographic space, is whitespace: no character of the accuracy, but KLUE scores it (an O),
    # as it scores every character of its files but the " " tokens.
    text = "東京\u3000大阪"
    gold, labels = [("LC", 0, 2), ("LC", 3, 5)], ("O", "B-LC", "I-LC")
    metrics = span_metrics([text], [gold], [[]])
    assert (metrics["characters"], metrics["accuracy"]) == (4, 0.0)
    klue = klue_metrics([text], [gold], [[]], labels)
    # B-LC 0, I-LC 0, O: 1 of the 5 predicted O right, the only true one: 2 / (1 + 5)
    assert klue == {"klue_entity_macro_f1": 0.0, "klue_char_macro_f1": pytest.approx(1 / 9)}
    assert klue_metrics([text.replace("\u3000", " ")], [gold], [[]], labels)["klue_char_macro_f1"] == 0.0


def test_word_aligned_spans_give_conllevals_entity_metrics():
    rng = random.Random(5)
    words = ["Paris", "is", "in", "France", "and", "Ana", "Silva", "lives", "at", "the", "UN", "."]
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
    texts, gold, predicted, gold_tags, predicted_tags = [], [], [], [], []
    for _ in range(40):
        sentence = [rng.choice(words) for _ in range(rng.randint(1, 12))]
        truth = [rng.choice(tags) for _ in sentence]
        guess = [tag if rng.random() < 0.6 else rng.choice(tags) for tag in truth]
        starts, position = [], 0
        for word in sentence:
            starts.append(position)
            position += len(word) + 1
        text = " ".join(sentence)

        def spans(word_tags):  # conlleval's entities of the words, as spans of the text
            from albert_tf.text.entities import entity_spans
            return [(kind, starts[first], starts[last - 1] + len(sentence[last - 1]))
                    for kind, first, last in entity_spans(word_tags)]
        texts.append(text), gold.append(spans(truth)), predicted.append(spans(guess))
        gold_tags.append(truth), predicted_tags.append(guess)
    by_spans, by_words = span_metrics(texts, gold, predicted), tagging_metrics(gold_tags, predicted_tags)
    for name in ("precision", "recall", "f1", "per_type", "entities", "predicted_entities", "correct_entities",
                 "sentences"):
        assert by_spans[name] == by_words[name], name
    assert 0 < by_spans["correct_entities"] < by_spans["entities"]


def character_tags(text, spans, skipped):
    """The test's own character tags: B- on an entity's first character not skipped, I- on the rest, O."""
    tags = []
    for index, character in enumerate(text):
        if skipped(character):
            continue
        tag = "O"
        for kind, start, end in spans:
            if start <= index < end:
                first = not any(not skipped(text[i]) for i in range(start, index))
                tag = ("B-" if first else "I-") + kind
        tags.append(tag)
    return tags


def seqeval_strict_iob2_macro_f1(true_tags, predicted_tags):
    """seqeval's f1_score([true_tags], [predicted_tags], average="macro", mode="strict", scheme=IOB2), written
    out: strict IOB2 entities are B-X followed by I-X (an I- without its B- is no entity); per type, F1 of the
    exact matches (0 where there are none); the mean over the types true or predicted."""
    def entities(tags):
        found, current = set(), None
        for index, tag in enumerate(tags + ["O"]):
            if current and tag == "I-" + current[0]:
                continue
            if current:
                found.add((current[0], current[1], index))
                current = None
            if tag.startswith("B-"):
                current = (tag[2:], index)
        return found
    truth, guess = entities(true_tags), entities(predicted_tags)
    scores = []
    for kind in {entity[0] for entity in truth | guess}:
        true = {entity for entity in truth if entity[0] == kind}
        predicted = {entity for entity in guess if entity[0] == kind}
        correct = len(true & predicted)
        precision = correct / len(predicted) if predicted else 0.0
        recall = correct / len(true) if true else 0.0
        scores.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return sum(scores) / len(scores)


def random_spans(rng, text, kinds):
    spans, position = [], 0
    while position < len(text):
        position += rng.randint(0, 4)
        end = position + rng.randint(1, 4)
        if end <= len(text) and not text[position:end].isspace():
            spans.append((rng.choice(kinds), position, end))
        position = end
    return spans


def perturbed(rng, text, spans, kinds):
    """Predictions from gold spans: some right, some of another type, moved or cut, dropped, some added."""
    predicted = []
    for kind, start, end in spans:
        roll = rng.random()
        if roll < 0.1:
            continue
        if roll < 0.25:
            kind = rng.choice(kinds)
        elif roll < 0.4 and text[start:end - 1].strip():
            end -= 1
        predicted.append((kind, start, end))
    predicted += [span for span in random_spans(rng, text, kinds)
                  if rng.random() < 0.2 and all(span[2] <= s or e <= span[1] for _, s, e in predicted)]
    return predicted


def test_klue_metrics_against_scikit_learn_and_seqeval_rewritten():
    metrics = pytest.importorskip("sklearn.metrics")
    kinds = ("DT", "LC", "OG", "PS", "QT")  # TI never: its tags score 1 in the character F1
    characters = "서울에김철수를만났다北京见到王小明東京で山田さん会った " + "  "
    for seed in range(8):
        rng = random.Random(seed)
        texts = ["".join(rng.choice(characters) for _ in range(rng.randint(0, 30))).strip() for _ in range(12)]
        gold = [random_spans(rng, text, kinds) for text in texts]
        predicted = [perturbed(rng, text, spans, kinds) for text, spans in zip(texts, gold)]
        klue = klue_metrics(texts, gold, predicted, KLUE_LABELS)
        true_tags, predicted_tags = [], []
        for text, truth, guess in zip(texts, gold, predicted):  # the sentences one after another, as KLUE
            true_tags += character_tags(text, truth, " ".__eq__)
            predicted_tags += character_tags(text, guess, " ".__eq__)
        ids = [KLUE_LABELS.index(tag) for tag in true_tags], [KLUE_LABELS.index(tag) for tag in predicted_tags]
        assert klue["klue_char_macro_f1"] == pytest.approx(metrics.f1_score(
            *ids, labels=list(range(len(KLUE_LABELS))), average="macro", zero_division=True), abs=1e-12)
        assert klue["klue_entity_macro_f1"] == pytest.approx(
            seqeval_strict_iob2_macro_f1(true_tags, predicted_tags), abs=1e-12)
        assert 0 < klue["klue_entity_macro_f1"] < 1 and 0 < klue["klue_char_macro_f1"] < 1
        accuracy = span_metrics(texts, gold, predicted)
        true_tags = sum((character_tags(t, s, str.isspace) for t, s in zip(texts, gold)), [])
        predicted_tags = sum((character_tags(t, s, str.isspace) for t, s in zip(texts, predicted)), [])
        assert accuracy["characters"] == len(true_tags)
        assert accuracy["accuracy"] == pytest.approx(
            sum(a == b for a, b in zip(true_tags, predicted_tags)) / len(true_tags), abs=1e-12)


@pytest.mark.parametrize("texts, gold, predicted, message", [
    (["ab", "cd"], [[]], [[], []], "2 texts but 1 gold span lists and 2 predicted ones"),
    (["ab"], [[]], [[], []], "1 texts but 1 gold span lists and 2 predicted ones"),
    (["서울"], [[("LC", 0, 3)]], [[]], r"sentence 1 \(gold\): \('LC', 0, 3\) is out of the text's 2 characters"),
    (["서울"], [[]], [[("LC", -1, 1)]], r"sentence 1 \(predicted\): \('LC', -1, 1\) is out of the text"),
    (["서울"], [[("LC", 1, 1)]], [[]], r"sentence 1 \(gold\): \('LC', 1, 1\): start 1 is not before end 1"),
    (["서울"], [[]], [[("LC", 2, 1)]], "start 2 is not before end 1"),
    (["서 울"], [[("LC", 1, 2)]], [[]], "covers only whitespace"),
    (["北京大学"], [[]], [[("LC", 0, 2), ("OG", 0, 4)]], r"sentence 1 \(predicted\): spans .* overlap"),
    (["北京"], [[("LC", 0)]], [[]], "is not a .type, start, end. span"),
    (["北京"], [[("LC", "0", 2)]], [[]], "is not a .type, start, end. span"),
    (["北京"], [[("", 0, 2)]], [[]], "the type is not a non-empty string"),
])
def test_refusals(texts, gold, predicted, message):
    for metrics in (span_metrics, lambda *lists: klue_metrics(*lists, KLUE_LABELS)):
        with pytest.raises(ValueError, match=message):
            metrics(texts, gold, predicted)


def test_klue_refuses_tags_not_among_the_labels():
    with pytest.raises(ValueError, match=r"sentence 1 \(predicted\): tag 'B-ORG' is not among the labels"):
        klue_metrics([CHINESE], [CHINESE_GOLD], [[("ORG", 2, 4)]], KLUE_LABELS)
    with pytest.raises(ValueError, match="tag 'I-LC' is not among"):
        klue_metrics([CHINESE], [CHINESE_GOLD], [[]], ("O", "B-LC", "B-PS", "I-PS"))
    with pytest.raises(ValueError, match="tag 'O' is not among"):
        klue_metrics([CHINESE], [CHINESE_GOLD], [[]], KLUE_LABELS[:-1])
    with pytest.raises(ValueError, match="repeat a tag"):
        klue_metrics([CHINESE], [CHINESE_GOLD], [[]], KLUE_LABELS + ("O",))


def test_table_counts_characters():
    metrics = span_metrics([KOREAN, CHINESE, JAPANESE], [KOREAN_GOLD, CHINESE_GOLD, JAPANESE_GOLD],
                           [KOREAN_PREDICTED, CHINESE_PREDICTED, JAPANESE_PREDICTED])
    table = metrics_table(metrics).splitlines()
    assert "characters: 32 in 3 sentences" in table and not any("tokens" in line for line in table)
    assert f"{'accuracy':>9}: {26 / 32:.4f}" in table
    assert [line for line in table if line.startswith("PS ")][0].split() == [
        "PS", "0.5000", "0.3333", "0.4000", "3", "2"]
    old = metrics_table(tagging_metrics([["B-PER", "O"]], [["B-PER", "O"]])).splitlines()
    assert f"{'tokens':>9}: 2 in 1 sentences" in old and not any("characters" in line for line in old)


def test_the_report_prints_klues_figures_where_they_were_computed():
    texts, gold = ["서울에서 왔다"], [[("LC", 0, 2)]]
    metrics = span_metrics(texts, gold, gold)
    assert "KLUE-NER" not in metrics_table(metrics)
    metrics.update(klue_metrics(texts, gold, gold, ("O", "B-LC", "I-LC")))
    assert "KLUE-NER: entity macro F1 1.0000, character macro F1 1.0000" in metrics_table(metrics)
