"""Tagging metrics against conlleval: the `conlleval` package (a port of conlleval.pl, test-only) on the staged
UNER test file's gold tags and predictions made from them with malformed sequences, and the places where the
port departs from conlleval.pl, decided by the Perl script's source."""

import random

import conlleval
import pytest

from albert_tf.tasks.tagged_texts import read_tagged_file, write_predictions
from albert_tf.tasks.tagging_metrics import entity_spans, metrics_table, tagging_metrics

TYPES = ("LOC", "ORG", "PER")


def conlleval_lines(true_tags, predicted_tags):
    """conlleval's input: a line "token gold predicted" per token, a blank line after each sentence."""
    lines = []
    for truth, predicted in zip(true_tags, predicted_tags):
        lines += [f"w {a} {b}" for a, b in zip(truth, predicted)] + [""]
    return lines


def assert_as_conlleval(metrics, oracle):
    chunks, tags = oracle["overall"]["chunks"], oracle["overall"]["tags"]
    assert (metrics["entities"], metrics["predicted_entities"], metrics["correct_entities"]) == (
        chunks["stats"]["gold"], chunks["stats"]["pred"], chunks["stats"]["correct"])
    assert metrics["tokens"] == tags["stats"]["gold"]
    assert metrics["accuracy"] == pytest.approx(tags["stats"]["correct"] / tags["stats"]["gold"], abs=1e-12)
    for name, key in (("precision", "prec"), ("recall", "rec"), ("f1", "f1")):
        assert metrics[name] == pytest.approx(chunks["evals"][key], abs=1e-12), name
    assert set(metrics["per_type"]) == set(oracle["slots"]["chunks"])
    for name, row in metrics["per_type"].items():
        expected = oracle["slots"]["chunks"][name]
        assert (row["support"], row["predicted"], row["correct"]) == (
            expected["stats"]["gold"], expected["stats"]["pred"], expected["stats"]["correct"]), name
        # conlleval.pl: `if (not($foundGuessed{$i})) { ...; $precision = 0.0; }`; the port says 1 there.
        precision = 0.0 if expected["stats"]["pred"] == 0 else expected["evals"]["prec"]
        assert (row["precision"], row["recall"], row["f1"]) == pytest.approx(
            (precision, expected["evals"]["rec"], expected["evals"]["f1"]), abs=1e-12), name


def perturbed(true_tags, rate, seed):
    """Predictions a weak tagger might make: each token, at `rate`, gets one of the mistakes that make
    malformed IOB2 (an entity's B- as I-, a type change inside an entity, a stray I-) or a plain one (a wrong
    type, a missed or split entity, an extra B-)."""
    rng = random.Random(seed)
    predictions = []
    for truth in true_tags:
        predicted = list(truth)
        for index, tag in enumerate(truth):
            if rng.random() >= rate:
                continue
            other = rng.choice(TYPES)
            predicted[index] = rng.choice([
                "I-" + tag[2:] if tag != "O" else "I-" + other,  # I- without B- (or a stray I-)
                "I-" + other,  # a type change inside an entity
                "B-" + other,
                "O",
                "B-" + tag[2:] if tag != "O" else "O",  # an entity split
            ])
        predictions.append(predicted)
    return predictions


def malformed_counts(predictions):
    """(I- tags that continue nothing, I- tags after a tag of another type): what the test must include."""
    orphans = type_changes = 0
    for tags in predictions:
        for previous, tag in zip(["O"] + tags, tags):
            if tag.startswith("I-"):
                orphans += previous == "O"
                type_changes += previous != "O" and previous[2:] != tag[2:]
    return orphans, type_changes


def random_gold(seed, sentences=300):
    """Well-formed IOB2 sentences: entities of 1-4 tokens between runs of O."""
    rng = random.Random(seed)
    result = []
    for _ in range(sentences):
        tags = []
        while len(tags) < rng.randint(1, 25):
            if rng.random() < 0.3:
                entity_type = rng.choice(TYPES)
                tags += ["B-" + entity_type] + ["I-" + entity_type] * rng.randint(0, 3)
            else:
                tags += ["O"] * rng.randint(1, 4)
        result.append(tags)
    return result


def test_entity_spans_read_malformed_sequences_as_conlleval():
    # Hand-derived from conlleval.pl's startOfChunk/endOfChunk.
    assert entity_spans(["B-PER", "I-PER", "O", "B-LOC"]) == [("PER", 0, 2), ("LOC", 3, 4)]
    assert entity_spans(["I-PER", "I-PER", "O", "I-LOC"]) == [("PER", 0, 2), ("LOC", 3, 4)]  # I- without B-
    assert entity_spans(["B-PER", "I-LOC", "I-LOC"]) == [("PER", 0, 1), ("LOC", 1, 3)]  # a type change
    assert entity_spans(["B-PER", "B-PER", "I-PER"]) == [("PER", 0, 1), ("PER", 1, 3)]
    assert entity_spans(["O", "O"]) == [] and entity_spans([]) == []


@pytest.mark.parametrize("seed, rate", [(0, 0.02), (1, 0.1), (2, 0.3), (3, 1.0)])
def test_metrics_equal_conlleval_on_random_sentences_with_malformed_predictions(seed, rate):
    gold = random_gold(seed)
    predictions = perturbed(gold, rate, seed)
    assert min(malformed_counts(predictions)) > 0
    assert_as_conlleval(tagging_metrics(gold, predictions), conlleval.evaluate(conlleval_lines(gold, predictions)))


@pytest.fixture(scope="module")
def uner_test_gold(shared_data):
    test = read_tagged_file(str(shared_data / "ner_uner_en_ewt" / "en_ewt-ud-test.iob2"))
    return [list(sentence.tags) for sentence in test.sentences]


@pytest.mark.parametrize("seed, rate", [(0, 0.02), (1, 0.1), (2, 0.5)])
def test_metrics_equal_conlleval_on_the_uner_test_file(uner_test_gold, seed, rate):
    gold = uner_test_gold
    predictions = perturbed(gold, rate, seed)
    assert min(malformed_counts(predictions)) > 0
    metrics = tagging_metrics(gold, predictions)
    assert_as_conlleval(metrics, conlleval.evaluate(conlleval_lines(gold, predictions)))
    assert metrics["sentences"] == 2077 and metrics["entities"] == 1088


def test_nothing_predicted_has_precision_zero_as_conlleval_pl_says():
    gold, predictions = [["B-PER", "O"]], [["O", "O"]]
    oracle = conlleval.evaluate(conlleval_lines(gold, predictions))
    # conlleval.pl: `$precision = 100*$correctChunk/$foundGuessed if ($foundGuessed > 0);` after
    # `my $precision = 0.0;`. The port gives 1 there; the Perl script is the reference.
    assert oracle["overall"]["chunks"]["evals"]["prec"] == 1
    metrics = tagging_metrics(gold, predictions)
    assert (metrics["precision"], metrics["recall"], metrics["f1"]) == (0.0, 0.0, 0.0)
    assert metrics["per_type"]["PER"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1,
                                          "predicted": 0, "correct": 0}
    assert metrics["accuracy"] == 0.5


def test_types_with_hyphens_are_whole_as_in_conlleval_since_2004():
    # conlleval.pl 2004-01-26: `/^([^-]*)-(.*)$/`, "code which allows hyphens in the types".
    gold = [["B-creative-work", "I-creative-work", "O", "B-creative-group"]]
    predictions = [["B-creative-work", "I-creative-group", "O", "B-creative-group"]]
    metrics = tagging_metrics(gold, predictions)
    assert set(metrics["per_type"]) == {"creative-work", "creative-group"}
    assert_as_conlleval(metrics, conlleval.evaluate(conlleval_lines(gold, predictions)))


def test_written_predictions_of_a_conll2003_layout_file_are_conlleval_input(tmp_path):
    # Gold tag last, no comments: conlleval reads the written file as it is, gold and predicted its last two.
    gold = random_gold(7, sentences=40)
    lines = []
    for tags in gold:
        lines += [f"w{i} NN {tag}" for i, tag in enumerate(tags)] + [""]
    path = tmp_path / "test.conll"
    path.write_text("\n".join(lines), encoding="utf-8")
    source = read_tagged_file(str(path))
    predictions = perturbed(gold, 0.2, 7)
    write_predictions(str(tmp_path / "predicted.conll"), source, predictions)
    written = (tmp_path / "predicted.conll").read_text(encoding="utf-8").split("\n")
    assert_as_conlleval(tagging_metrics(gold, predictions), conlleval.evaluate(written))


def test_pairs_that_do_not_match_and_tags_that_are_not_iob2_are_refused():
    for gold, predictions, message in [([["O"]], [], "1 true sentences but 0 predicted"),
                                       ([["O", "O"]], [["O"]], "sentence 1: 2 true tags but 1 predicted"),
                                       ([["S-PER"]], [["O"]], r"sentence 1 \(true\), token 1: 'S-PER' is not an IOB2"),
                                       ([["O"]], [["PER"]], r"sentence 1 \(predicted\), token 1: 'PER' is not")]:
        with pytest.raises(ValueError, match=message):
            tagging_metrics(gold, predictions)


def test_table_lists_the_overall_figures_and_each_type():
    gold = random_gold(3, sentences=20)
    metrics = tagging_metrics(gold, perturbed(gold, 0.3, 3))
    table = metrics_table(metrics).splitlines()
    for name in ("precision", "recall", "f1", "accuracy"):
        assert f"{name:>9}: {metrics[name]:.4f}" in table
    for name, row in metrics["per_type"].items():
        assert [line for line in table if line.startswith(name + " ")][0].split() == [
            name, f"{row['precision']:.4f}", f"{row['recall']:.4f}", f"{row['f1']:.4f}", str(row["support"]),
            str(row["predicted"])]
