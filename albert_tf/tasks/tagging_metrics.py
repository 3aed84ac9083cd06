"""Metrics of a tagger, as conlleval (the CoNLL-2000/2003 shared tasks' evaluation script) computes them from
IOB2 tag sequences: entity-level precision, recall and F1, overall and per entity type, and token accuracy.

Entities (`entity_spans`) are read as conlleval reads them, malformed sequences included: an entity starts at
B-TYPE, at I-TYPE after O or at a sentence's start (an I- without B-), and at I-TYPE after a tag of another
type (a type change inside an entity ends it and starts another); it continues over I- tags of its type. An
entity is correct where a predicted entity has its type, first and last token. Sentences end entities.

  precision = correct / predicted entities, recall = correct / true entities, F1 their harmonic mean; each is 0
  where its denominator is (conlleval.pl's defaults, which the `conlleval` package on PyPI departs from by
  giving precision 1 where nothing is predicted). accuracy = tokens whose predicted tag equals the true one.
  Types hold everything after the first hyphen ("B-creative-work" is of type "creative-work"), as conlleval.pl
  has since 2004. conlleval prints percentages; these are fractions.

The metrics dict (`tagging_metrics`):
  {"precision", "recall", "f1": the overall entity-level figures, "accuracy": token accuracy,
   "per_type": {type: {"precision", "recall", "f1", "support": true entities, "predicted": predicted entities,
                       "correct": correct entities}}, types sorted, every type true or predicted listed,
   "entities": true entities, "predicted_entities", "correct_entities", "tokens", "sentences"}

Character spans (`span_metrics`, `klue_metrics`), for text without spaces (Chinese, Japanese, Korean): each
sentence is its raw text and its entities are (type, start, end) character spans of it, `end` exclusive, Python
str indices (`text[start:end]` is the entity), as a file gives them and as the model serves them. A span must
lie in its text (0 <= start < end <= len(text)), hold a non-whitespace character, and not overlap another
span of the same side; identical spans repeated on one side count once. Spans come trimmed; where one holds
whitespace anyway, its whitespace characters are simply not scored (below).

  `span_metrics`: the metrics dict above, with entities compared as spans: an entity is correct where a
  predicted one has its type, start and end (conlleval's rule on characters; for spans on word boundaries it is
  conlleval on the words). In place of "tokens" and token accuracy: "characters", the non-whitespace
  characters of the texts (str.isspace), and "accuracy", the share of them whose predicted tag equals the true
  one, each character tagged from its side's spans: B-TYPE the first non-whitespace character of an entity,
  I-TYPE its other non-whitespace characters, O the rest.
    {"precision", "recall", "f1", "accuracy", "per_type", "entities", "predicted_entities",
     "correct_entities", "characters", "sentences"}

  `klue_metrics`: KLUE-NER's two official metrics, as the KLUE benchmark's baseline computes them
  (klue_baseline/metrics/functional.py) on character tags: the baseline drops the texts' space characters
  (" ", the KLUE file's space tokens; other whitespace is scored) and tags every other character B-/I-/O from
  the spans as above, the sentences one after another.
    "klue_entity_macro_f1": `klue_ner_entity_macro_f1`, seqeval's f1_score(average="macro", mode="strict",
      scheme=IOB2): per entity type (every type true or predicted) the F1 of exact entity matches (0 where a
      type has none correct), then their unweighted mean; 0 where there are no entities at all (seqeval: nan,
      a mean of nothing).
    "klue_char_macro_f1": `klue_ner_char_macro_f1`, scikit-learn's f1_score(labels=every tag of the label
      list, average="macro", zero_division=True) over the characters' tags: per tag, O included, the F1 of the
      characters given that tag; a tag that no character has, true or predicted, gets 1; then their unweighted
      mean.
  One departure: the baseline also scores an O for each sentence's [CLS] and [SEP], against the model's
  predictions at those two positions; these leave them out (they are not characters of the text). KLUE reports
  both ×100; these are fractions.
"""

import operator

from albert_tf.text.entities import OUTSIDE, entity_spans


def _checked(tags, where):
    for index, tag in enumerate(tags):
        if tag != OUTSIDE and not (isinstance(tag, str) and len(tag) > 2 and tag[0] in "BI" and tag[1] == "-"):
            raise ValueError(f"{where}, token {index + 1}: {tag!r} is not an IOB2 tag (O, B-TYPE or I-TYPE)")


def _ratio(numerator, denominator):
    return numerator / denominator if denominator else 0.0


def _scores(correct, predicted, true):
    precision, recall = _ratio(correct, predicted), _ratio(correct, true)
    return {"precision": precision, "recall": recall, "f1": _ratio(2 * precision * recall, precision + recall)}


def tagging_metrics(true_tags, predicted_tags):
    """The metrics dict (the module's docstring) of `predicted_tags` against `true_tags`: per sentence, one
    IOB2 tag per token. ValueError where the two do not pair up or a tag is not IOB2."""
    true_tags, predicted_tags = list(true_tags), list(predicted_tags)
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"{len(true_tags)} true sentences but {len(predicted_tags)} predicted ones")
    true_counts, predicted_counts, correct_counts = {}, {}, {}
    tokens = correct_tokens = 0
    for number, (truth, predicted) in enumerate(zip(true_tags, predicted_tags), start=1):
        truth, predicted = list(truth), list(predicted)
        if len(truth) != len(predicted):
            raise ValueError(f"sentence {number}: {len(truth)} true tags but {len(predicted)} predicted")
        _checked(truth, f"sentence {number} (true)")
        _checked(predicted, f"sentence {number} (predicted)")
        true_spans, predicted_spans = entity_spans(truth), entity_spans(predicted)
        for spans, counts in ((true_spans, true_counts), (predicted_spans, predicted_counts),
                              (set(true_spans) & set(predicted_spans), correct_counts)):
            for entity_type, _, _ in spans:
                counts[entity_type] = counts.get(entity_type, 0) + 1
        tokens += len(truth)
        correct_tokens += sum(a == b for a, b in zip(truth, predicted))
    return _ordered(_entity_metrics(true_counts, predicted_counts, correct_counts),
                    accuracy=_ratio(correct_tokens, tokens), tokens=tokens, sentences=len(true_tags))


def _ordered(entity_metrics, accuracy, sentences, **count):
    """The metrics dict in its keys' order: the overall figures, accuracy, the types, the counts."""
    figures = {name: entity_metrics[name] for name in ("precision", "recall", "f1")}
    counts = {name: entity_metrics[name] for name in ("entities", "predicted_entities", "correct_entities")}
    return {**figures, "accuracy": accuracy, "per_type": entity_metrics["per_type"], **counts, **count,
            "sentences": sentences}


def _entity_metrics(true_counts, predicted_counts, correct_counts):
    """The entity-level part of the metrics dict from the entities counted per type."""
    per_type = {}
    for entity_type in sorted(set(true_counts) | set(predicted_counts)):
        true, predicted = true_counts.get(entity_type, 0), predicted_counts.get(entity_type, 0)
        correct = correct_counts.get(entity_type, 0)
        per_type[entity_type] = {**_scores(correct, predicted, true), "support": true, "predicted": predicted,
                                 "correct": correct}
    true, predicted, correct = (sum(counts.values()) for counts in (true_counts, predicted_counts, correct_counts))
    return {**_scores(correct, predicted, true), "per_type": per_type, "entities": true,
            "predicted_entities": predicted, "correct_entities": correct}


def _sentences(texts, gold, predicted):
    """(text, gold spans, predicted spans) per sentence, each side's spans checked, distinct and in order."""
    texts, gold, predicted = list(texts), list(gold), list(predicted)
    if not len(texts) == len(gold) == len(predicted):
        raise ValueError(f"{len(texts)} texts but {len(gold)} gold span lists and {len(predicted)} predicted ones")
    sentences = []
    for number, (text, truth, guess) in enumerate(zip(texts, gold, predicted), start=1):
        if not isinstance(text, str):
            raise ValueError(f"sentence {number}: the text is {type(text).__name__}, not str")
        sentences.append((text, _checked_spans(text, truth, f"sentence {number} (gold)"),
                          _checked_spans(text, guess, f"sentence {number} (predicted)")))
    return sentences


def _checked_spans(text, spans, where):
    """The distinct (type, start, end) spans of one side of a sentence, in order of start; ValueError for a
    span that is not one of `text`'s (see the module's docstring)."""
    distinct = set()
    for span in spans:
        try:
            entity_type, start, end = span
            start, end = operator.index(start), operator.index(end)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: {span!r} is not a (type, start, end) span") from None
        if not isinstance(entity_type, str) or not entity_type:
            raise ValueError(f"{where}: {span!r}: the type is not a non-empty string")
        if start >= end:
            raise ValueError(f"{where}: {span!r}: start {start} is not before end {end}")
        if start < 0 or end > len(text):
            raise ValueError(f"{where}: {span!r} is out of the text's {len(text)} characters")
        if text[start:end].isspace():
            raise ValueError(f"{where}: {span!r} covers only whitespace")
        distinct.add((entity_type, start, end))
    ordered = sorted(distinct, key=lambda span: (span[1], span[2], span[0]))
    for before, after in zip(ordered, ordered[1:]):
        if after[1] < before[2]:
            raise ValueError(f"{where}: spans {before!r} and {after!r} overlap")
    return ordered


def _character_tags(text, spans, skipped):
    """The IOB2 tags of `text`'s characters but those `skipped` says to leave out, from non-overlapping
    `spans`: B-TYPE an entity's first character left in, I-TYPE its others, O the rest."""
    tags = [None if skipped(character) else OUTSIDE for character in text]
    for entity_type, start, end in spans:
        prefix = "B-"
        for index in range(start, end):
            if tags[index] is not None:
                tags[index], prefix = prefix + entity_type, "I-"
    return [tag for tag in tags if tag is not None]


def _count(counts, spans):
    for entity_type, _, _ in spans:
        counts[entity_type] = counts.get(entity_type, 0) + 1


def span_metrics(texts, gold, predicted):
    """The metrics dict of entities given as character spans (the module's docstring): `texts` a string per
    sentence, `gold` and `predicted` per sentence a list of (type, start, end) spans of its text. ValueError
    where the lists differ in length or a span is not one of its text's."""
    true_counts, predicted_counts, correct_counts = {}, {}, {}
    characters = correct_characters = 0
    sentences = _sentences(texts, gold, predicted)
    for text, truth, guess in sentences:
        for spans, counts in ((truth, true_counts), (guess, predicted_counts),
                              (set(truth) & set(guess), correct_counts)):
            _count(counts, spans)
        true_tags, predicted_tags = (_character_tags(text, spans, str.isspace) for spans in (truth, guess))
        characters += len(true_tags)
        correct_characters += sum(a == b for a, b in zip(true_tags, predicted_tags))
    return _ordered(_entity_metrics(true_counts, predicted_counts, correct_counts),
                    accuracy=_ratio(correct_characters, characters), characters=characters,
                    sentences=len(sentences))


def klue_metrics(texts, gold, predicted, labels):
    """KLUE-NER's entity macro F1 and character macro F1 (the module's docstring) of character spans, as
    `span_metrics` takes them: {"klue_entity_macro_f1", "klue_char_macro_f1"}, fractions. `labels`: the
    task's IOB2 tags, O included (KLUE's 13: O and B-/I- of DT, LC, OG, PS, QT, TI); the character F1 averages
    over all of them. ValueError where a character's tag is not among `labels`, or as `span_metrics`."""
    labels = list(labels)
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels {labels!r} repeat a tag")
    true_counts, predicted_counts, correct_counts = {}, {}, {}
    tag_counts = {label: [0, 0, 0] for label in labels}  # characters true, predicted, both with the tag
    for number, (text, truth, guess) in enumerate(_sentences(texts, gold, predicted), start=1):
        true_tags, predicted_tags = (_character_tags(text, spans, " ".__eq__) for spans in (truth, guess))
        for side, tags in (("gold", true_tags), ("predicted", predicted_tags)):
            for tag in tags:
                if tag not in tag_counts:
                    raise ValueError(f"sentence {number} ({side}): tag {tag!r} is not among the labels {labels!r}")
        for true_tag, predicted_tag in zip(true_tags, predicted_tags):
            tag_counts[true_tag][0] += 1
            tag_counts[predicted_tag][1] += 1
            tag_counts[true_tag][2] += true_tag == predicted_tag
        # seqeval's strict IOB2 entities of tags made from spans: B- and the I-s of its type after it.
        true_entities, predicted_entities = entity_spans(true_tags), entity_spans(predicted_tags)
        _count(true_counts, true_entities)
        _count(predicted_counts, predicted_entities)
        _count(correct_counts, set(true_entities) & set(predicted_entities))
    types = set(true_counts) | set(predicted_counts)
    entity_f1 = [_scores(correct_counts.get(entity_type, 0), predicted_counts.get(entity_type, 0),
                         true_counts.get(entity_type, 0))["f1"] for entity_type in types]
    # scikit-learn's F1 = 2 TP / (2 TP + FP + FN), zero_division=True: 1 where the tag is nowhere.
    char_f1 = [2 * both / (true + predicted) if true + predicted else 1.0
               for true, predicted, both in tag_counts.values()]
    return {"klue_entity_macro_f1": _ratio(sum(entity_f1), len(entity_f1)),
            "klue_char_macro_f1": _ratio(sum(char_f1), len(char_f1))}


def metrics_table(metrics):
    """The metrics as lines a person reads: the overall figures, then a row per entity type."""
    lines = [f"{name:>9}: {metrics[name]:.4f}" for name in ("precision", "recall", "f1", "accuracy")]
    lines.append(f"{'entities':>9}: {metrics['entities']} true, {metrics['predicted_entities']} predicted, "
                 f"{metrics['correct_entities']} correct")
    if "characters" in metrics:  # span_metrics: accuracy over characters
        lines.append(f"{'characters':>9}: {metrics['characters']} in {metrics['sentences']} sentences")
    else:
        lines.append(f"{'tokens':>9}: {metrics['tokens']} in {metrics['sentences']} sentences")
    if "klue_entity_macro_f1" in metrics:  # klue_metrics: KLUE-NER's own figures (it reports them x100)
        lines.append(f"KLUE-NER: entity macro F1 {metrics['klue_entity_macro_f1']:.4f}, character macro F1 "
                     f"{metrics['klue_char_macro_f1']:.4f}")
    if metrics["per_type"]:
        width = max(len("type"), *(len(name) for name in metrics["per_type"]))
        lines += ["", f"{'type':<{width}}  precision  recall      f1  support  predicted"]
        for name, row in metrics["per_type"].items():
            lines.append(f"{name:<{width}}  {row['precision']:>9.4f}  {row['recall']:>6.4f}  {row['f1']:>6.4f}  "
                         f"{row['support']:>7}  {row['predicted']:>9}")
    return "\n".join(lines) + "\n"
