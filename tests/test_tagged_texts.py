"""Tagged texts for entity tagging: each layout and scheme read into IOB2 sentences, every bad input refused by
file and line, the staged UNER files read with their published counts, and predictions written back."""

import json
import subprocess
import sys

import pytest

from albert_tf.settings import SettingError
from albert_tf.tasks.tagged_texts import (TagLabels, check_entity_types, entity_counts, read_tag_names,
                                          read_tagged_file, tag_labels, tagged_lists, write_predictions)
from text_fixtures import jsonl, write_data_file as write


def tokens_and_tags(tagged_file):
    return [(list(s.tokens), list(s.tags)) for s in tagged_file.sentences]


# CoNLL-2003 as released: space-separated, token POS chunk entity, IOB1, -DOCSTART- lines.
CONLL2003 = """-DOCSTART- -X- -X- O

EU NNP I-NP I-ORG
rejects VBZ I-VP O
German JJ I-NP I-MISC
call NN I-NP O
. . O O

Peter NNP I-NP I-PER
Blackburn NNP I-NP I-PER
"""
# Its entities in IOB2, derived by hand: every I- after O (or first in a sentence) starts an entity.
CONLL2003_IOB2 = [(["EU", "rejects", "German", "call", "."], ["B-ORG", "O", "B-MISC", "O", "O"]),
                  (["Peter", "Blackburn"], ["B-PER", "I-PER"])]

# The staged UNER files' layout: index, token, tag, unused, annotator; tab-separated; CoNLL-U comments.
UNER = """# newdoc id = doc-1
# sent_id = doc-1-0001
# text = where can I get morcillas in tampa bay , I will
1\twhere\tO\t-\t-
2\tcan\tO\t-\t-
3\ttampa\tB-LOC\t-\tstephen
4\tbay\tI-LOC\t-\tstephen
5\t#\tO\t-\t-

# sent_id = doc-1-0002
1\tNew York\tB-LOC\t-\tstephen
2\tE-mail\tO\t-\t-
"""
UNER_IOB2 = [(["where", "can", "tampa", "bay", "#"], ["O", "O", "B-LOC", "I-LOC", "O"]),
             (["New York", "E-mail"], ["B-LOC", "O"])]


def test_conll2003_layout_reads_the_entity_column_converted_from_iob1(tmp_path):
    read = read_tagged_file(write(tmp_path / "eng.train", CONLL2003))
    # Both the chunk column (2) and the entity column (3) hold tags: the last one is the entity column.
    assert (read.token_column, read.tag_column, read.delimiter, read.scheme) == (0, 3, " ", "iob1")
    assert tokens_and_tags(read) == CONLL2003_IOB2
    assert [s.where for s in read.sentences] == [f"{tmp_path}/eng.train:3", f"{tmp_path}/eng.train:9"]
    assert read.sentences[1].token_lines == (9, 10)


def test_uner_layout_reads_token_and_tag_after_the_index_without_settings(tmp_path):
    read = read_tagged_file(write(tmp_path / "dev.iob2", UNER))
    assert (read.token_column, read.tag_column, read.delimiter, read.scheme) == (1, 2, "\t", "iob2")
    assert tokens_and_tags(read) == UNER_IOB2  # a token of a tab-separated file may hold spaces


@pytest.mark.parametrize("name", ["t.jsonl", "t.json", "t.jsonl.gz", "t.iob2.gz"])
def test_json_lines_and_gzip_read_the_same_sentences(tmp_path, name):
    if ".iob2" in name:
        text = UNER
    else:
        text = jsonl([{"id": 1, "tokens": tokens, "tags": tags} for tokens, tags in UNER_IOB2])
    read = read_tagged_file(write(tmp_path / name, text))
    assert tokens_and_tags(read) == UNER_IOB2
    if "jsonl" in name or name == "t.json":
        assert [s.where for s in read.sentences] == [f"{tmp_path / name}:1", f"{tmp_path / name}:2"]


@pytest.mark.parametrize("tags, iob2", [
    # BIOES: S- a one-token entity, E- the last token; hand-derived IOB2.
    (["S-PER", "O", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "B-ORG", "E-ORG"],
     ["B-PER", "O", "B-LOC", "I-LOC", "I-LOC", "B-LOC", "B-ORG", "I-ORG"]),
    # BILOU: U- and L- are BIOES' S- and E-.
    (["U-PER", "B-ORG", "L-ORG", "U-ORG", "O"], ["B-PER", "B-ORG", "I-ORG", "B-ORG", "O"]),
    # IOB1: I- starts an entity after O, another type, or first; B- only between two of one type.
    (["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "I-ORG"],
     ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "I-ORG"]),
    # IOB2 stays as it is.
    (["B-PER", "I-PER", "B-PER", "O", "B-LOC"], ["B-PER", "I-PER", "B-PER", "O", "B-LOC"]),
])
def test_schemes_are_detected_and_converted_to_iob2(tmp_path, tags, iob2):
    tokens = [f"w{i}" for i in range(len(tags))]
    text = "".join(f"{token} {tag}\n" for token, tag in zip(tokens, tags))
    read = read_tagged_file(write(tmp_path / "t.bio", text))
    assert tokens_and_tags(read) == [(tokens, iob2)]
    assert tokens_and_tags(tagged_lists([tokens], [tags])) == [(tokens, iob2)]


def test_a_set_scheme_reads_the_file_so_and_refuses_what_it_lacks(tmp_path):
    path = write(tmp_path / "t.conll", "a O\nb I-PER\nc I-PER\n")
    assert read_tagged_file(path).scheme == "iob1"
    assert read_tagged_file(path, scheme="iob1").sentences[0].tags == ("O", "B-PER", "I-PER")
    with pytest.raises(ValueError, match=r"t.conll:2: 'I-PER' continues no PER entity \(after 'O'\); in iob2 an "
                                         r"entity starts with B- \(set scheme=iob1 for a file"):
        read_tagged_file(path, scheme="iob2")
    with pytest.raises(ValueError, match=r"t.conll:2: 'I-PER' continues no PER entity .* in bioes an entity "
                                         "starts with B- or S-; fix the tag"):
        read_tagged_file(path, scheme="bioes")
    bioes = write(tmp_path / "s.conll", "a S-PER\nb O\n")
    with pytest.raises(ValueError, match=r"s.conll:1: 'S-PER' is not a tag of iob2 \(whose tags are O and B-, "
                                         r"I- before a type\); set scheme"):
        read_tagged_file(bioes, scheme="iob2")
    # A BIOES file's E- must close an entity of its type, as its I- must continue one.
    with pytest.raises(ValueError, match=r"e.conll:2: 'E-LOC' continues no LOC entity \(after 'B-PER'\)"):
        read_tagged_file(write(tmp_path / "e.conll", "a B-PER\nb E-LOC\n"))


def test_columns_can_be_set(tmp_path):
    path = write(tmp_path / "eng.testa", CONLL2003)
    read = read_tagged_file(path, tag_column=2)  # the chunk column, read as tags
    assert read.sentences[0].tags[:2] == ("B-NP", "B-VP") and read.token_column == 0
    read = read_tagged_file(path, token_column=1)  # the POS column, read as tokens
    assert read.sentences[0].tokens[:2] == ("NNP", "VBZ") and read.tag_column == 3


def test_comments_and_hashtag_tokens(tmp_path):
    # A '#' line is a token where it has the token lines' columns and a tag; a comment otherwise. A block of
    # comments alone is no sentence.
    text = "# a comment\n# another one here\n\n#nlp O\nrocks O\n# sent 2\nParis B-LOC\n\n# trailing\n"
    read = read_tagged_file(write(tmp_path / "tweets.conll", text))
    assert tokens_and_tags(read) == [(["#nlp", "rocks", "Paris"], ["O", "O", "B-LOC"])]


def test_an_untagged_predict_file_reads_tokens(tmp_path):
    read = read_tagged_file(write(tmp_path / "p.txt", "1\tJohn\n2\tsleeps\n\n1\tHi\n"), tagged=False)
    assert [s.tokens for s in read.sentences] == [("John", "sleeps"), ("Hi",)]
    assert not read.has_tags and read.sentences[0].tags is None and read.token_column == 1
    read = read_tagged_file(write(tmp_path / "p.jsonl", jsonl([{"tokens": ["a", "b"]}])), tagged=False)
    assert read.sentences[0].tags is None and not read.has_tags
    with pytest.raises(SettingError, match="p.txt: no column holds tags .*; name the tag column with tag_column"):
        read_tagged_file(str(tmp_path / "p.txt"))
    with pytest.raises(ValueError, match=r"p.jsonl:1: no \"tags\" key; a training or evaluation file"):
        read_tagged_file(str(tmp_path / "p.jsonl"))


@pytest.mark.parametrize("name, text, message", [
    ("few.conll", "EU NNP B-ORG\nrejects VBZ O\ncall O\n",
     r"few.conll:3: 2 column\(s\), too few for the token column \(0\) and tag column \(2\); the file's token "
     r"lines have 3"),
    ("few.iob2", "1\tJohn\tB-PER\n2\tsleeps\n3\tnow\tO\n", r"few.iob2:2: 2 column\(s\), too few"),
    # A stray bad tag in CoNLL-2003's entity column is refused, not read as "the chunk column holds the tags".
    ("stray.conll", "EU NNP I-NP B-ORG\nrejects VBZ I-VP O\nGerman JJ I-NP B_MISC\n",
     r"stray.conll:3: 'B_MISC' is not a tag"),
    ("bad.conll", "EU B-ORG\nrejects O\nGerman B_MISC\ncall O\n",
     r"bad.conll:3: 'B_MISC' is not a tag; tags are O, or B-, I-, E-, S- \(BILOU's L-, U-\) before a type"),
    ("empty-token.iob2", "1\tJohn\tB-PER\n2\t\tO\n", r"empty-token.iob2:2: the token column \(1\) is empty"),
    ("no-tokens.jsonl", '{"tokens": ["a"], "tags": ["O"]}\n{"tokens": [], "tags": []}\n',
     r"no-tokens.jsonl:2: a sentence with no tokens"),
    ("lengths.jsonl", '{"tokens": ["a", "b"], "tags": ["O"]}\n', r"lengths.jsonl:1: 2 tokens but 1 tags"),
    ("tag.jsonl", '{"tokens": ["a", "b"], "tags": ["O", "X-PER"]}\n',
     r"tag.jsonl:1: token 2: 'X-PER' is not a tag"),
    ("ids.jsonl", '{"tokens": ["a"], "tags": [3]}\n', r"ids.jsonl:1: the tags are integer ids .* name them in id "
     r"order with tag_names \(comma-separated\) or tag_names_file"),
    ("mixed.jsonl", '{"tokens": ["a"], "tags": [{}]}\n', r"mixed.jsonl:1: tags must be a list of tag names"),
    ("object.jsonl", '["a", "b"]\n', r"object.jsonl:1: each line must be a JSON object with a \"tokens\" list"),
    ("later.jsonl", '{"tokens": ["a"], "tags": ["O"]}\n{"tokens": ["b"]}\n', r"later.jsonl:2: no \"tags\" key"),
    ("empty.conll", "", r"empty.conll: the file is empty"),
    ("blank.conll.gz", "\n \n", r"blank.conll.gz: the file is empty"),
    ("comments.conll", "# only\n-DOCSTART- O\n\n# comments\n", r"comments.conll: holds no token lines"),
    ("latin1.conll", "EU B-ORG\n\nM\xfcnchen B-LOC\n".encode("latin-1"), r"latin1.conll:3: not UTF-8 text"),
])
def test_bad_input_is_refused_naming_file_and_line(tmp_path, name, text, message):
    path = write(tmp_path / name, text)
    with pytest.raises(ValueError, match=message):
        read_tagged_file(path)


def test_bad_settings_are_refused_by_name(tmp_path):
    path = write(tmp_path / "t.conll", "a O\n")
    for settings, message in [({"token_column": -1}, "token_column must be a column number"),
                              ({"tag_column": "2"}, "tag_column must be a column number"),
                              ({"token_column": 1, "tag_column": 1}, "token_column and tag_column are both 1"),
                              ({"scheme": "bilou"}, r"scheme must be one of \['iob2', 'iob1', 'bioes'\]")]:
        with pytest.raises(SettingError, match=message) as raised:
            read_tagged_file(path, **settings)
        assert "<" in raised.value.template  # a tool says --name
    with pytest.raises(SettingError, match="t.jsonl: tag_column is for column files"):
        read_tagged_file(write(tmp_path / "t.jsonl", jsonl([{"tokens": ["a"], "tags": ["O"]}])), tag_column=1)


def test_label_set_from_the_training_file_and_unseen_types_refused(tmp_path):
    train = read_tagged_file(write(tmp_path / "train.conll", "a B-PER\nb O\n\nc B-LOC\nd I-LOC\n"))
    labels = tag_labels(train)
    assert labels.labels == ("O", "B-LOC", "I-LOC", "B-PER", "I-PER") and labels.types == ("LOC", "PER")
    assert labels.id2label[1] == "B-LOC" and labels.label2id["I-PER"] == 4
    assert entity_counts(train) == {"LOC": 1, "PER": 1}
    check_entity_types(labels, read_tagged_file(write(tmp_path / "ok.conll", "x I-PER\n")))
    test = read_tagged_file(write(tmp_path / "test.conll", "a B-PER\nb B-MISC\n\nc O\nd B-DATE\ne B-MISC\n"))
    with pytest.raises(ValueError, match=r"test.conll: entity types not in the training file: 'DATE' \(line 5\), "
                                         r"'MISC' \(line 2\); the model tags only \['LOC', 'PER'\]"):
        check_entity_types(labels, test)
    outside = read_tagged_file(write(tmp_path / "o.conll", "a O\nb O\n"))
    with pytest.raises(ValueError, match="o.conll: every token is tagged 'O'"):
        tag_labels(outside)


def test_tag_labels_keep_any_order_and_refuse_what_is_no_iob2_label():
    assert TagLabels(["B-PER", "O", "I-PER"]).id2label == {0: "B-PER", 1: "O", 2: "I-PER"}
    for labels, message in [(["B-PER", "I-PER"], "must include 'O'"), (["O", "S-PER"], "must be O, B-TYPE"),
                            (["O", "B-PER", "B-PER"], r"repeat \['B-PER'\]")]:
        with pytest.raises(ValueError, match=message):
            TagLabels(labels)


def test_lists_are_checked_as_files_are():
    read = tagged_lists([["John", "sleeps"]], [["S-PER", "O"]])
    assert read.scheme == "bioes" and read.sentences[0].tags == ("B-PER", "O") and read.sentences[0].where == \
        "sentences[0]"
    for tokens, tags, message in [([["a"], []], [["O"], []], r"sentences\[1\]: a sentence with no tokens"),
                                  ([["a", "b"]], [["O", "I_PER"]], r"sentences\[0\]: token 2: 'I_PER' is not a tag"),
                                  ([["a"]], [["O"], ["O"]], "sentences: 1 token lists but 2 tag lists")]:
        with pytest.raises(ValueError, match=message):
            tagged_lists(tokens, tags)
    with pytest.raises(ValueError, match="no file to write back"):
        write_predictions("unused", read, [["O", "O"]])


@pytest.mark.parametrize("name, text", [("eng.testb", CONLL2003), ("test.iob2", UNER),
                                        ("test.jsonl", jsonl([{"tokens": t, "tags": g} for t, g in UNER_IOB2]))])
def test_predictions_are_written_in_the_input_format(tmp_path, name, text):
    source = read_tagged_file(write(tmp_path / name, text))
    predicted = [["B-PER"] + ["I-PER"] * (len(s.tokens) - 1) for s in source.sentences]
    out = str(tmp_path / f"predicted.{name}")
    write_predictions(out, source, predicted)
    written = read_tagged_file(out)
    assert [s.tokens for s in written.sentences] == [s.tokens for s in source.sentences]
    if name.endswith(".jsonl"):
        objects = [json.loads(line) for line in open(out, encoding="utf-8")]
        assert [o["predicted_tags"] for o in objects] == predicted and [o["tags"] for o in objects] == [
            g for _, g in UNER_IOB2]
        return
    # The predicted tag is the new last column; every other line and column is as read.
    assert written.tag_column == {"eng.testb": 4, "test.iob2": 5}[name]  # the input's number of columns
    assert [list(s.tags) for s in written.sentences] == predicted
    lines = open(out, encoding="utf-8").read().split("\n")[:-1]
    assert len(lines) == len(source.lines)
    for line, original in zip(lines, source.lines):
        if original.startswith("#") or not original.strip():
            assert line == original
        else:
            assert line.rsplit(source.delimiter, 1)[0] == original
    if name == "eng.testb":
        assert lines[0] == "-DOCSTART- -X- -X- O O"  # every non-blank line keeps one number of columns
    gold_again = read_tagged_file(out, tag_column=source.tag_column)
    assert tokens_and_tags(gold_again) == tokens_and_tags(source)


def test_predictions_that_do_not_fit_are_refused(tmp_path):
    source = read_tagged_file(write(tmp_path / "t.conll", "a O\nb O\n\nc O\n"))
    for predicted, message in [([["O", "O"]], "1 predicted sentences for the 2"),
                               ([["O"], ["O"]], r"t.conll:1: 2 tokens but 1 predicted tags"),
                               ([["O", "B PER"], ["O"]], r"predicted 'B PER' is not an IOB2 tag")]:
        with pytest.raises(ValueError, match=message):
            write_predictions(str(tmp_path / "out.conll"), source, predicted)


@pytest.mark.parametrize("split, sentences, tokens, entities", [
    ("dev", 2001, 25149, {"LOC": 399, "ORG": 224, "PER": 343}),
    ("test", 2077, 25097, {"LOC": 317, "ORG": 322, "PER": 449}),
])
def test_staged_uner_files_read_with_their_published_counts(shared_data, split, sentences, tokens, entities):
    # The counts are those SOURCE.txt and the upstream .stats files state.
    read = read_tagged_file(str(shared_data / "ner_uner_en_ewt" / f"en_ewt-ud-{split}.iob2"))
    assert (read.token_column, read.tag_column, read.scheme) == (1, 2, "iob2")
    assert len(read.sentences) == sentences and sum(len(s.tokens) for s in read.sentences) == tokens
    assert entity_counts(read) == entities
    assert tag_labels(read).labels == ("O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER")


# Hugging Face's token classification rows as `datasets` exports them (to_json): integer ner_tags, the names in
# the ClassLabel feature (CoNLL-2003's order).
CONLL2003_NAMES = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
HF_ROWS = [{"id": "0", "tokens": ["EU", "rejects", "German", "call"], "pos_tags": [22, 42, 16, 21],
            "ner_tags": [3, 0, 7, 0]},
           {"id": "1", "tokens": ["Peter", "Blackburn"], "pos_tags": [22, 22], "ner_tags": [1, 2]}]
HF_IOB2 = [(["EU", "rejects", "German", "call"], ["B-ORG", "O", "B-MISC", "O"]),
           (["Peter", "Blackburn"], ["B-PER", "I-PER"])]


def test_hugging_face_ner_tags_read_with_their_names(tmp_path):
    path = write(tmp_path / "train.json", jsonl(HF_ROWS))
    read = read_tagged_file(path, tag_names=CONLL2003_NAMES)  # ner_tags found where there is no "tags" key
    assert tokens_and_tags(read) == HF_IOB2
    names_file = write(tmp_path / "labels.txt", "\n".join(CONLL2003_NAMES) + "\n\n")
    assert read_tag_names(names_file) == CONLL2003_NAMES
    # The names as they are, other keys by setting; predictions are written back as names.
    named = [{"words": row["tokens"], "labels": [CONLL2003_NAMES[i] for i in row["ner_tags"]]} for row in HF_ROWS]
    read = read_tagged_file(write(tmp_path / "named.jsonl", jsonl(named)), tokens_key="words", tags_key="labels")
    assert tokens_and_tags(read) == HF_IOB2
    write_predictions(str(tmp_path / "out.jsonl"), read, [tags for _, tags in HF_IOB2])
    assert json.loads(open(tmp_path / "out.jsonl").readline())["predicted_tags"] == HF_IOB2[0][1]


@pytest.mark.parametrize("settings, message", [
    ({}, r"train.jsonl:1: the tags are integer ids \(as `datasets` exports a ClassLabel feature\); name them in id "
         r"order with tag_names \(comma-separated\) or tag_names_file \(one a line\)"),
    ({"tag_names": ("O", "B-PER", "I-PER")}, r"train.jsonl:1: token 1: tag id 3 has no name; the 3 tag names name "
                                              r"ids 0-2"),
    ({"tag_names": ("O", "B-PER", "O")}, r"tag_names: 'O' names both id 0 and id 2"),
    ({"tag_names": ("O", "PER")}, r"tag_names: 'PER' is not a tag"),
    ({"tags_key": "tags"}, r"train.jsonl:1: no \"tags\" key; a training or evaluation file tags every token \(name "
                           r"the key of the tags with tags_key\)"),
    ({"tokens_key": "words"}, r"train.jsonl:1: each line must be a JSON object with a \"words\" list"),
    ({"tokens_key": "ner_tags", "tags_key": "ner_tags"}, r"tokens_key and tags_key are both 'ner_tags'"),
])
def test_hugging_face_rows_are_refused_without_what_they_need(tmp_path, settings, message):
    path = write(tmp_path / "train.jsonl", jsonl(HF_ROWS))
    with pytest.raises(ValueError, match=message) as refusal:
        read_tagged_file(path, **settings)
    assert "\n" not in str(refusal.value)


@pytest.mark.parametrize("text, message", [
    ("O\nB-PER\n\nI-PER\n", r"names.txt:3: an empty tag name; the file holds one tag name a line, in id order"),
    ("O\nB-PER\nB_LOC\n", r"names.txt:3: 'B_LOC' is not a tag"),
    ("", r"names.txt: the file is empty"),
])
def test_a_bad_tag_names_file_is_named_by_line(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        read_tag_names(write(tmp_path / "names.txt", text))


def test_cr_alone_ends_a_line(tmp_path):
    # Old Mac line ends: read as one token before, silently.
    read = read_tagged_file(write(tmp_path / "mac.conll", "EU B-ORG\rrejects O\r\rGerman B-MISC\r"))
    assert tokens_and_tags(read) == [(["EU", "rejects"], ["B-ORG", "O"]), (["German"], ["B-MISC"])]
    assert read.sentences[1].token_lines == (4,)
    read = read_tagged_file(write(tmp_path / "mac.jsonl", '{"tokens": ["a"], "tags": ["O"]}\r'
                                                          '{"tokens": ["b"], "tags": ["B-X"]}\r'))
    assert [s.where.rsplit(":", 1)[1] for s in read.sentences] == ["1", "2"]


def test_json_lines_keep_line_separators_inside_strings(tmp_path):
    tokens = ["one\u2028two", "x\u0085y", "z\u2029"]
    read = read_tagged_file(write(tmp_path / "u.jsonl", json.dumps({"tokens": tokens, "tags": ["O"] * 3},
                                                                   ensure_ascii=False) + "\n"))
    assert list(read.sentences[0].tokens) == tokens
    # A column file's token may hold them too: only LF, CRLF and CR end a line.
    read = read_tagged_file(write(tmp_path / "u.conll", "a\u2028b O\nc\u0085 B-X\n"))
    assert read.sentences[0].tokens == ("a\u2028b", "c\u0085")


def test_json_too_deep_or_an_array_is_refused_in_one_line(tmp_path):
    deep = '{"tokens": ["a"], "tags": ["O"], "x": ' + "[" * 10_000 + "]" * 10_000 + "}\n"
    for name, text, message in [
            ("deep.jsonl", '{"tokens": ["a"], "tags": ["O"]}\n' + deep, r"deep.jsonl:2: JSON nested deeper than "
                                                                          "Python reads"),
            ("array.json", json.dumps([{"tokens": ["a"], "tags": ["O"]}], indent=2),
             r"array.json:1: holds a JSON array; tagged JSON files hold one object a line")]:
        with pytest.raises(ValueError, match=message) as refusal:
            read_tagged_file(write(tmp_path / name, text))
        assert "\n" not in str(refusal.value)


def test_files_past_the_size_bound_are_refused(tmp_path, monkeypatch):
    from albert_tf.tasks import labelled_texts

    monkeypatch.setattr(labelled_texts, "MAX_TEXT_BYTES", 100)
    text = "a O\n" * 30  # 120 bytes
    for name in ("big.conll", "big.conll.gz"):
        with pytest.raises(ValueError, match=rf"{name}: more than 100 bytes of text"):
            read_tagged_file(write(tmp_path / name, text))
    assert len(read_tagged_file(write(tmp_path / "ok.conll", text[:100])).sentences[0].tokens) == 25


def test_the_task_reads_with_the_json_settings(tmp_path):
    from albert_tf.tasks.tagging_task import TaggingConfig, TaggingTask
    from albert_tf.training.finetuning_config import FinetuningConfig

    train = write(tmp_path / "train.jsonl", jsonl(HF_ROWS))
    names = write(tmp_path / "names.txt", "\n".join(CONLL2003_NAMES))

    def config(**task):
        return FinetuningConfig(output_dir=str(tmp_path / "out"), do_train=True, max_seq_length=24,
                                task=TaggingConfig(train_file=train, **task))

    resolved = TaggingTask().resolve(config(tag_names_file=names))
    assert resolved.task.labels == ("O", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER")
    with pytest.raises(SettingError, match="tag_names and tag_names_file both given"):
        TaggingTask().validate(config(tag_names=CONLL2003_NAMES, tag_names_file=names))


def test_the_tool_takes_the_tag_names_flag(tmp_path):
    """--tag_names reaches the reader: an id it does not name is refused in one line before anything is written."""
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps({"vocab_size": 100, "embedding_size": 8, "hidden_size": 8, "num_hidden_layers": 1,
                                  "num_attention_heads": 1, "intermediate_size": 8}))
    train = write(tmp_path / "train.jsonl", jsonl(HF_ROWS))
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.run_tagger", f"--train_file={train}", "--do_train",
         "--tag_names=O,B-PER,I-PER,B-ORG", f"--albert_config={config}",
         f"--spm_model_file={write(tmp_path / 'spm.model', 'x')}", f"--output_dir={tmp_path / 'out'}"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert "train.jsonl:1: token 3: tag id 7 has no name" in result.stderr and "--tag_names" in result.stderr
    assert not (tmp_path / "out").exists()
