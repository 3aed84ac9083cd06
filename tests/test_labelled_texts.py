"""A user's own labelled files: every format and encoding detail read, every bad input refused by file and line."""

import csv
import dataclasses
import gzip
import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from albert_tf.settings import SettingError
from albert_tf.tasks import labelled_texts
from albert_tf.tasks.labelled_texts import (ColumnNames, LabelScheme, check_labels, label_counts, label_scheme,
                                            label_targets, read_text_file)
from text_fixtures import jsonl, write_data_file as write

TICKETS_CSV = 'id,text,label\nt1,"The invoice, again",billing\nt2,App crashes,bug\nt3,Hello,other\n'
TICKETS_TSV = 'id\ttext\tlabel\nt1\tThe invoice, again\tbilling\nt2\tApp crashes\tbug\nt3\tHello\tother\n'


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz", "t.tsv", "t.tsv.gz", "t.jsonl", "t.jsonl.gz"])
def test_each_format_reads_the_same_examples(tmp_path, name):
    rows = [{"id": "t1", "text": "The invoice, again", "label": "billing"},
            {"id": "t2", "text": "App crashes", "label": "bug"}, {"id": "t3", "text": "Hello", "label": "other"}]
    text = {"csv": TICKETS_CSV, "tsv": TICKETS_TSV, "jsonl": jsonl(rows)}[name.split(".")[1]]
    read = read_text_file(write(tmp_path / name, text))
    assert [(e.example_id, e.text, e.raw_label) for e in read.examples] == [tuple(r.values()) for r in rows]
    assert read.id_column == "id" and not read.has_text_b
    first_line = 1 if name.endswith((".jsonl", ".jsonl.gz")) else 2  # below the header
    assert [e.where for e in read.examples] == [f"{tmp_path / name}:{first_line + i}" for i in range(3)]


def test_bom_crlf_and_quoted_newlines(tmp_path):
    text = '\ufefftext,label\r\n"two\r\nlines, one cell",a\r\nplain,b\r\n'
    read = read_text_file(write(tmp_path / "t.csv", text))
    assert [e.text for e in read.examples] == ["two\r\nlines, one cell", "plain"]
    # A row's line is where it starts: the quoted newline moves the next row to line 4.
    assert [e.where for e in read.examples] == [f"{tmp_path}/t.csv:2", f"{tmp_path}/t.csv:4"]


def test_pairs_and_columns_by_name(tmp_path):
    path = write(tmp_path / "p.csv", "question,answer,y\nWhat?,That.,yes\nWho?,,no\n")
    read = read_text_file(path, ColumnNames(text="question", text_b="answer", label="y"))
    assert read.has_text_b and [(e.text_b, e.raw_label) for e in read.examples] == [("That.", "yes"), (None, "no")]
    # The default second-text column is used where present, without a flag.
    read = read_text_file(write(tmp_path / "d.csv", "text,text_b,label\na,b,x\n"))
    assert read.has_text_b and read.examples[0].text_b == "b"


@pytest.mark.parametrize("text, columns, expected", [
    ("text,label\n", ColumnNames(), "holds a header and no rows"),
    ("", ColumnNames(), "the file is empty"),
    ("words,label\na,b\n", ColumnNames(), ":1: no text column 'text'"),
    ("text,tag\na,b\n", ColumnNames(), ":1: no label column 'label'"),
    ("text,label\na,b\n", ColumnNames(text_b="second"), ":1: no text_b column 'second'"),
    ("text,label\na,b\n  ,c\n", ColumnNames(), ":3: column 'text' is empty"),
    ("text,label\na,b\nc,d,e\n", ColumnNames(), ":3: 3 columns where the header has 2"),
    ("text,label,text\na,b,c\n", ColumnNames(), ":1: the header names ['text'] more than once"),
])
def test_bad_csv_is_named_by_file_line_and_column(tmp_path, text, columns, expected):
    with pytest.raises(ValueError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        read_text_file(write(tmp_path / "bad.csv", text), columns)


def test_bad_bytes_and_bad_json_lines_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"bad.csv:3: not UTF-8 text \(byte 0xff\)"):
        read_text_file(write(tmp_path / "bad.csv", b"text,label\na,b\n\xff,c\n"))
    with pytest.raises(ValueError, match="bad.jsonl:2: not a JSON object"):
        read_text_file(write(tmp_path / "bad.jsonl", '{"text": "a", "label": "x"}\n{"text": \n'))
    with pytest.raises(ValueError, match="bad.jsonl:2: no 'label' key"):
        read_text_file(write(tmp_path / "bad.jsonl", '{"text": "a", "label": "x"}\n{"text": "b"}\n'))
    truncated = tmp_path / "cut.csv.gz"
    truncated.write_bytes(gzip.compress(TICKETS_CSV.encode())[:-12])
    with pytest.raises(ValueError, match="cut.csv.gz: not a complete gzip file"):
        read_text_file(str(truncated))
    with pytest.raises(ValueError, match="unknown file type '.txt'"):
        read_text_file(write(tmp_path / "t.txt", TICKETS_CSV))


def test_a_predict_file_may_lack_labels(tmp_path):
    read = read_text_file(write(tmp_path / "p.csv", "id,text\n1,a\n"), labelled=False)
    assert not read.has_labels and read.examples[0].raw_label is None


def test_label_names_are_the_training_files_sorted(tmp_path):
    train = read_text_file(write(tmp_path / "t.csv", TICKETS_CSV))
    scheme = label_scheme(train)
    assert scheme == LabelScheme("single_label", ("billing", "bug", "other"))
    assert scheme.id2label == {"0": "billing", "1": "bug", "2": "other"}
    assert label_targets(scheme, train).tolist() == [0, 1, 2]
    assert label_counts(scheme, train) == {"billing": 1, "bug": 1, "other": 1}
    # Integer names sort as numbers ('2' before '10'), JSON integers are names too.
    train = read_text_file(write(tmp_path / "n.jsonl", jsonl([{"text": "a", "label": 10}, {"text": "b", "label": 2}])))
    assert label_scheme(train).labels == ("2", "10")


def test_multi_label_from_json_lists_and_from_a_separator(tmp_path):
    train = read_text_file(write(tmp_path / "m.jsonl", jsonl([
        {"text": "a", "label": ["bug", "billing"]}, {"text": "b", "label": []}, {"text": "c", "label": ["other"]}])))
    scheme = label_scheme(train)
    assert scheme == LabelScheme("multi_label", ("billing", "bug", "other"))
    np.testing.assert_array_equal(label_targets(scheme, train), [[1, 1, 0], [0, 0, 0], [0, 0, 1]])
    train = read_text_file(write(tmp_path / "m.csv", "text,label\na,bug|billing\nb,other\n"))
    scheme = label_scheme(train, label_separator="|")
    assert scheme.problem_type == "multi_label"
    np.testing.assert_array_equal(label_targets(scheme, train, "|"), [[1, 1, 0], [0, 0, 1]])
    # A CSV cell holding a JSON list is a list too.
    train = read_text_file(write(tmp_path / "j.csv", 'text,label\na,"[""x"", ""y""]"\nb,"[""y""]"\n'))
    assert label_scheme(train) == LabelScheme("multi_label", ("x", "y"))


def test_regression_is_read_from_scores_or_forced(tmp_path):
    train = read_text_file(write(tmp_path / "r.csv", "text,label\na,0.5\nb,3\n"))
    scheme = label_scheme(train)
    assert scheme.problem_type == "regression" and scheme.num_outputs == 1
    np.testing.assert_allclose(label_targets(scheme, train), [0.5, 3.0])
    integers = read_text_file(write(tmp_path / "i.csv", "text,label\na,1\nb,3\n"))
    assert label_scheme(integers).problem_type == "single_label"
    assert label_scheme(integers, problem_type="regression").problem_type == "regression"
    with pytest.raises(ValueError, match=r"r.csv:3: label 'x' is not a finite number"):
        label_scheme(read_text_file(write(tmp_path / "r.csv", "text,label\na,0.5\nb,x\n")), "regression")


def test_bad_labels_are_refused_before_training(tmp_path):
    with pytest.raises(ValueError, match=r"only the label 'bug' in 2 rows; a classifier needs two or more"):
        label_scheme(read_text_file(write(tmp_path / "one.csv", "text,label\na,bug\nb,bug\n")))
    with pytest.raises(ValueError, match=r"mixes scores \('0.5' at line 2\) with names \('bug' at line 3\)"):
        label_scheme(read_text_file(write(tmp_path / "mix.csv", "text,label\na,0.5\nb,bug\n")))
    with pytest.raises(ValueError, match=r"e.csv:3: the label is empty"):
        label_scheme(read_text_file(write(tmp_path / "e.csv", "text,label\na,bug\nb,\n")))
    train = read_text_file(write(tmp_path / "t.csv", TICKETS_CSV))
    dev = read_text_file(write(tmp_path / "dev.csv", "text,label\na,bug\nb,refund\nc,spam\nd,refund\n"))
    with pytest.raises(ValueError, match=r"dev.csv: labels not in the training file: 'refund' \(line 3\), "
                                         r"'spam' \(line 4\)"):
        check_labels(label_scheme(train), dev)
    check_labels(label_scheme(train), read_text_file(write(tmp_path / "ok.csv", "text,label\na,bug\n")))


# GLUE's TSVs quote nothing, and their texts hold stray quotes. Each file below also has a text that opens a
# quote and a later row's text that ends with one: read with quoting, the two rows would be one cell.
UNQUOTED_TSVS = {
    # a quote-led cell that is not a whole quoted cell
    "malformed": 'id\ttext\tlabel\n1\t"Hello," she said.\ta\n2\t"Open quote\tb\n3\tclosed at the end"\ta\n',
    # a quote inside a text: RFC 4180 would have quoted the cell
    "inner": 'id\ttext\tlabel\n1\tThe "best" one\ta\n2\t"Open quote\tb\n3\tclosed at the end"\ta\n',
    # the joined row would have fewer cells than the header
    "ragged": 'id\ttext\tlabel\n1\tfine\ta\n2\t"Open quote\tb\n3\tb\tclosed at the end"\n',
}
UNQUOTED_TEXTS = {"malformed": ['"Hello," she said.', '"Open quote', 'closed at the end"'],
                  "inner": ['The "best" one', '"Open quote', 'closed at the end"'],
                  "ragged": ["fine", '"Open quote', "b"]}
# As pandas' to_csv(sep="\t") and Excel write a TSV: cells holding a tab, a newline or a quote are quoted, and
# their quotes doubled.
QUOTED_TSV = 'id\ttext\tlabel\n1\t"a\ttab"\ta\n2\t"two\nlines"\tb\n3\t"say ""hi"""\ta\n4\tplain\tb\n'
QUOTED_TEXTS = ["a\ttab", "two\nlines", 'say "hi"', "plain"]


@pytest.mark.parametrize("quoting", ["auto", "none"])
@pytest.mark.parametrize("name", sorted(UNQUOTED_TSVS))
def test_an_unquoted_tsv_with_stray_quotes_reads_literally(tmp_path, name, quoting):
    read = read_text_file(write(tmp_path / "glue.tsv", UNQUOTED_TSVS[name]), quoting=quoting)
    assert [e.text for e in read.examples] == UNQUOTED_TEXTS[name]
    assert [e.where.rsplit(":", 1)[1] for e in read.examples] == ["2", "3", "4"]


@pytest.mark.parametrize("quoting", ["auto", "csv"])
def test_a_quoting_tsv_reads_quoted(tmp_path, quoting):
    read = read_text_file(write(tmp_path / "pandas.tsv", QUOTED_TSV), quoting=quoting)
    assert [e.text for e in read.examples] == QUOTED_TEXTS
    assert [e.where.rsplit(":", 1)[1] for e in read.examples] == ["2", "3", "5", "6"]


def test_each_quoting_refuses_what_it_cannot_read(tmp_path):
    # Read literally, the quoted tab splits the row: refused as ragged, pointing at <quoting>=csv.
    with pytest.raises(SettingError, match=r"pandas.tsv:2: 4 columns where the header has 3; .*quoting=csv"):
        read_text_file(write(tmp_path / "pandas.tsv", QUOTED_TSV), quoting="none")
    # A ragged row in a file without quotes, read either way: quoting the cell is what helps.
    with pytest.raises(SettingError, match=r"plain.tsv:3: 4 columns where the header has 3; quote cells that hold"):
        read_text_file(write(tmp_path / "plain.tsv", "id\ttext\tlabel\n1\ta\tx\n2\ta\tb\ty\n"))
    # Read with quoting, the stray quote is malformed: refused at its row, pointing at <quoting>=none.
    with pytest.raises(SettingError, match=r"glue.tsv:2: not valid TSV .*quoting=none"):
        read_text_file(write(tmp_path / "glue.tsv", UNQUOTED_TSVS["malformed"]), quoting="csv")
    # A CSV's quotes are quoting in auto; none reads them as text.
    read = read_text_file(write(tmp_path / "t.csv", 'text,label\n"x",a\n'), quoting="none")
    assert read.examples[0].text == '"x"'
    with pytest.raises(SettingError, match=r"quoting must be one of \['auto', 'csv', 'none'\], got 'rfc'"):
        read_text_file(write(tmp_path / "t.csv", TICKETS_CSV), quoting="rfc")


STSB_COLUMNS = ColumnNames(text="sentence1", text_b="sentence2", label="score")


def test_glues_sts_b_reads_every_line_as_a_row(shared_data):
    path = shared_data / "glue" / "STS-B" / "dev.tsv"
    lines = path.read_text(encoding="utf-8").splitlines()
    read = read_text_file(str(path), STSB_COLUMNS)
    assert len(read.examples) == len(lines) - 1
    # Each row is its line split at the tabs, stray quotes kept (line 700's second text begins with one).
    expected = [(cells[7], cells[8], cells[9]) for cells in (line.split("\t") for line in lines[1:])]
    assert [(e.text, e.text_b, e.raw_label) for e in read.examples] == expected
    assert read.examples[698].text_b.startswith('"') and read.examples[698].where.endswith(":700")


def test_sts_b_read_with_quoting_is_refused_naming_the_flag_that_reads_it(shared_data):
    path = shared_data / "glue" / "STS-B" / "dev.tsv"
    with pytest.raises(SettingError) as refusal:
        read_text_file(str(path), STSB_COLUMNS, quoting="csv")
    message = str(refusal.value.for_flags())
    assert "dev.tsv:700: not valid TSV" in message and "--quoting=none" in message and "\n" not in message


def test_the_tool_reads_with_its_quoting_flag(tmp_path):
    """--quoting reaches the reader: forced csv refuses the stray quote in one line, naming the flag."""
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps({"vocab_size": 100, "embedding_size": 8, "hidden_size": 8, "num_hidden_layers": 1,
                                  "num_attention_heads": 1, "intermediate_size": 8}))
    train = write(tmp_path / "g.tsv", UNQUOTED_TSVS["malformed"])
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.run_text_classifier", f"--train_file={train}", "--do_train", "--quoting=csv",
         f"--albert_config={config}", f"--spm_model_file={write(tmp_path / 'spm.model', 'x')}",
         f"--output_dir={tmp_path / 'out'}"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert "g.tsv:2: not valid TSV" in result.stderr and "--quoting=none" in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_task_refuses_an_unknown_quoting_before_reading_anything(tmp_path):
    from albert_tf.tasks.text_classification_task import TextClassificationConfig, TextClassificationTask
    from albert_tf.training.finetuning_config import FinetuningConfig

    config = FinetuningConfig(output_dir=str(tmp_path / "out"), task=TextClassificationConfig(quoting="rfc"))
    with pytest.raises(SettingError, match=r"quoting must be one of \['auto', 'csv', 'none'\], got 'rfc'"):
        TextClassificationTask().validate(config)


# KLUE's layout: a JSON array, pretty-printed, the score nested in a "labels" object.
KLUE_STS_LIKE = [
    {"guid": "sts-0", "sentence1": "The host was kind.", "sentence2": "Our host was very kind.",
     "labels": {"label": 4.9, "binary-label": 1}},
    {"guid": "sts-1", "sentence1": "Walk to the sights.", "sentence2": "The center is a walk away.",
     "labels": {"label": 1.4, "binary-label": 0}},
]
KLUE_COLUMNS = ColumnNames(text="sentence1", text_b="sentence2", label="labels.label", example_id="guid")


@pytest.mark.parametrize("name", ["sts.json", "sts.json.gz"])
def test_a_json_array_reads_its_records_and_dotted_names_reach_into_objects(tmp_path, name):
    path = write(tmp_path / name, json.dumps(KLUE_STS_LIKE, indent=4))
    read = read_text_file(path, KLUE_COLUMNS)
    assert [(e.example_id, e.text, e.text_b, e.raw_label) for e in read.examples] == [
        ("sts-0", "The host was kind.", "Our host was very kind.", 4.9),
        ("sts-1", "Walk to the sights.", "The center is a walk away.", 1.4)]
    assert [e.where for e in read.examples] == [f"{path}: record 0", f"{path}: record 1"]
    assert label_scheme(read) == LabelScheme("regression")
    # A key that holds a dot is read as it is where the object has it; a .json file of JSON Lines still reads.
    dotted = [{"text": "a", "labels.label": "x"}, {"text": "b", "labels.label": "y"}]
    lines = write(tmp_path / "lines.json", jsonl(dotted))
    assert [e.raw_label for e in read_text_file(lines, ColumnNames(label="labels.label")).examples] == ["x", "y"]


@pytest.mark.parametrize("text, columns, message", [
    (json.dumps(KLUE_STS_LIKE + [["not", "an", "object"]]), KLUE_COLUMNS,
     r"a.json: record 2: holds a JSON list; a .json file's array holds one JSON object per row"),
    ('[\n  {"sentence1": "a", "labels": {"label": 1}},\n  {"sentence1": "b", "labels": }\n]', KLUE_COLUMNS,
     r"a.json:3: not valid JSON in record 1 \(Expecting value\)"),
    ('[{"sentence1": "a", "labels": {"label": 1}} {"sentence1": "b"}]', KLUE_COLUMNS,
     r"a.json:1: expected ',' or ']' after record 0"),
    ('[{"text": "a", "label": "x"}] [', ColumnNames(), r"a.json:1: text after the array's closing '\]'"),
    (json.dumps([{"sentence1": "a", "labels": {"label": 1}}, {"labels": {"label": 2}}]),
     ColumnNames(text="sentence1", label="labels.label"),
     r"a.json: record 1: no 'sentence1' key; every row needs a text"),
    (json.dumps(KLUE_STS_LIKE), dataclasses.replace(KLUE_COLUMNS, label="labels.score"),
     r"a.json: record 0: no label column 'labels.score'; the file has \['guid', 'sentence1', 'sentence2', 'labels', "
     r"'labels.label', 'labels.binary-label'\] \(choose it with label_column\)"),
])
def test_bad_json_arrays_are_named_by_record_or_line(tmp_path, text, columns, message):
    with pytest.raises(ValueError, match=message):
        read_text_file(write(tmp_path / "a.json", text), columns)


def test_a_json_label_object_is_refused_naming_the_dotted_column(tmp_path):
    read = read_text_file(write(tmp_path / "a.json", json.dumps(KLUE_STS_LIKE)),
                          dataclasses.replace(KLUE_COLUMNS, label="labels"))
    with pytest.raises(ValueError, match=r"a.json: record 0: label holds a JSON dict; .* name it with a dot: "
                                         r"label_column=COLUMN.label"):
        label_scheme(read)
    # An evaluation file's unknown label is placed by its record.
    rows = [{"text": "a", "label": "x"}, {"text": "b", "label": "y"}]
    train = read_text_file(write(tmp_path / "t.jsonl", jsonl(rows)))
    dev = read_text_file(write(tmp_path / "d.json", json.dumps(rows[:1] + [{"text": "b", "label": "z"}])))
    with pytest.raises(ValueError, match=r"d.json: labels not in the training file: 'z' \(record 1\)"):
        check_labels(label_scheme(train), dev)


def test_klues_json_arrays_read_as_their_derived_json_lines(shared_data):
    klue = shared_data / "klue"
    array = read_text_file(str(klue / "klue-sts-v1.1_dev.json"), KLUE_COLUMNS)
    # KLUE STS as JSON Lines, its label taken from labels.label: the same rows.
    lines = read_text_file(str(klue / "klue-sts-v1.1_dev.jsonl"), ColumnNames(text="sentence1", text_b="sentence2"))
    assert len(array.examples) == 519
    assert [(e.text, e.text_b, e.raw_label) for e in array.examples] == [
        (e.text, e.text_b, e.raw_label) for e in lines.examples]
    assert label_scheme(array).problem_type == "regression"
    nli = read_text_file(str(klue / "klue-nli-v1.1_dev.json"),
                         ColumnNames(text="premise", text_b="hypothesis", label="gold_label", example_id="guid"))
    assert label_counts(label_scheme(nli), nli) == {"contradiction": 1000, "entailment": 1000, "neutral": 1000}
    assert nli.examples[2999].where.endswith(": record 2999")


# One rule for a label column with no labels, whatever the problem type: blank in every row is no labels,
# blank in some rows only is refused.
BLANK_LABELS = {
    "single.csv": "text,label\na,\nb,  \n",
    "regression.tsv": "text\tlabel\na\t\nb\t\n",
    "multi.csv": 'text,label\na,\nb,\n',
    "multi.jsonl": jsonl([{"text": "a", "label": None}, {"text": "b"}]),
    "array.json": json.dumps([{"text": "a", "label": ""}, {"text": "b", "label": None}]),
}
PARTLY_BLANK = {
    "single.csv": ("text,label\na,bug\nb,\n", r"single.csv:3: the label is empty \(column 'label'\), where line 2 "
                                              "has a label; label every row"),
    "regression.tsv": ("text\tlabel\na\t\nb\t0.5\n", r"regression.tsv:2: the label is empty .* where line 3 has"),
    "multi.csv": ('text,label\na,"[""x""]"\nb,\n', r"multi.csv:3: the label is empty .*a multi-label row with no "
                                                    r"labels holds \[\]"),
    "multi.jsonl": (jsonl([{"text": "a", "label": ["x"]}, {"text": "b"}]),
                    r"multi.jsonl:2: no 'label' key, where line 1 has a label"),
    "array.json": (json.dumps([{"text": "a", "label": ["x"]}, {"text": "b", "label": None}]),
                   r"array.json: record 1: the label is empty .* where record 0 has a label"),
}


@pytest.mark.parametrize("name", sorted(BLANK_LABELS))
def test_a_label_column_blank_in_every_row_is_no_labels(tmp_path, name):
    path = write(tmp_path / name, BLANK_LABELS[name])
    read = read_text_file(path, labelled=False)
    assert not read.has_labels and [e.raw_label for e in read.examples] == [None, None]
    for problem_type, labels in [("single_label", ("x", "y")), ("multi_label", ("x", "y")), ("regression", ())]:
        check_labels(LabelScheme(problem_type, labels), read)  # nothing to check: no labels
    with pytest.raises(ValueError, match=r"the label column 'label' is empty in every row; a training or "
                                         "evaluation file labels each row"):
        read_text_file(path)


@pytest.mark.parametrize("name", sorted(PARTLY_BLANK))
def test_a_label_column_blank_in_some_rows_is_refused_at_the_first(tmp_path, name):
    text, message = PARTLY_BLANK[name]
    path = write(tmp_path / name, text)
    for labelled in (False, True):
        with pytest.raises(ValueError, match=message) as refusal:
            read_text_file(path, labelled=labelled)
        assert "\n" not in str(refusal.value)
    # An empty list is a multi-label row's "no labels", not a blank.
    rows = [{"text": "a", "label": ["x"]}, {"text": "b", "label": []}]
    read = read_text_file(write(tmp_path / "m.jsonl", jsonl(rows)))
    assert read.has_labels and read.examples[1].raw_label == []


@pytest.mark.parametrize("problem_type", ["single_label", "multi_label", "regression"])
def test_an_unlabelled_predict_file_gets_predictions_and_no_metrics(tmp_path, monkeypatch, problem_type):
    """Through the task as the tool calls it: resolve checks the predict file, predict writes predictions and
    returns no metrics, so eval_results.json gets nothing from it."""
    from albert_tf.tasks import text_classification_task
    from albert_tf.tasks.text_classification_task import TextClassificationConfig, TextClassificationTask
    from albert_tf.training.finetuning_config import FinetuningConfig

    train = {"single_label": "text,label\na,x\nb,y\n", "multi_label": 'text,label\na,"[""x""]"\nb,"[""x"",""y""]"\n',
             "regression": "text,label\na,0.5\nb,1.5\n"}[problem_type]
    task = TextClassificationTask()
    config = FinetuningConfig(output_dir=str(tmp_path / "out"), do_train=True, do_predict=True, max_seq_length=24,
                              task=TextClassificationConfig(train_file=write(tmp_path / "train.csv", train),
                                                            predict_file=write(tmp_path / "new.csv", "id,text,label\n"
                                                                               "n1,a,\nn2,b,\n")))
    config = task.resolve(config)
    assert config.task.problem_type == problem_type
    outputs = 1 if problem_type == "regression" else 2
    monkeypatch.setattr(text_classification_task, "predict_logits", lambda *_: np.array([[2.0, -2.0]] * 2)[:, :outputs])
    monkeypatch.setattr(task, "_encode", lambda *_, **__: {})
    metrics, written = task.predict(None, None, config, str(tmp_path))
    assert metrics is None and task.eval_results(None, metrics) is None
    with open(written[0], encoding="utf-8") as f:
        assert [row["id"] for row in csv.DictReader(f)] == ["n1", "n2"]
    # The same file labelled is scored (multi-label's exact_match, single-label's accuracy, regression's mse).
    labelled = {"single_label": "x", "multi_label": '"[""x""]"', "regression": "0.5"}[problem_type]
    write(tmp_path / "new.csv", f"id,text,label\nn1,a,{labelled}\nn2,b,{labelled}\n")
    task = TextClassificationTask()
    config = task.resolve(dataclasses.replace(config, task=dataclasses.replace(config.task, problem_type=None)))
    monkeypatch.setattr(task, "_encode", lambda *_, **__: {})
    metrics, _ = task.predict(None, None, config, str(tmp_path))
    assert {"single_label": "accuracy", "multi_label": "exact_match", "regression": "mse"}[problem_type] in metrics


@pytest.mark.parametrize("name, text, texts", [
    ("cr.csv", "text,label\r\"a\rquoted\",x\rb,y\r", ["a\rquoted", "b"]),
    ("cr.tsv", "text\tlabel\ra\tx\rb\ty\r", ["a", "b"]),
    ("cr.jsonl", '{"text": "a", "label": "x"}\r{"text": "b", "label": "y"}\r', ["a", "b"]),
])
def test_cr_alone_ends_lines(tmp_path, name, text, texts):
    read = read_text_file(write(tmp_path / name, text))
    assert [e.text for e in read.examples] == texts
    lines = ["2", "4"] if name == "cr.csv" else ["2", "3"] if name == "cr.tsv" else ["1", "2"]
    assert [e.where.rsplit(":", 1)[1] for e in read.examples] == lines
    with pytest.raises(ValueError, match=r"bad.csv:3: not UTF-8 text"):
        read_text_file(write(tmp_path / "bad.csv", b"text,label\ra,x\r\xff,y\r"))


def test_json_lines_split_at_line_feeds_only(tmp_path):
    # U+2028, U+2029 and U+0085 are valid raw inside a JSON string; str.splitlines would end a line at each.
    rows = [{"text": "one\u2028two\u0085three\u2029four\x1c\x1d\x1e\x0b\x0c", "label": "x"},
            {"text": "b", "label": "y"}]
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    read = read_text_file(write(tmp_path / "u.jsonl", text))
    assert [e.text for e in read.examples] == [rows[0]["text"], "b"]
    assert read.examples[1].where.endswith("u.jsonl:2")


def test_json_nested_too_deep_is_refused_in_one_line(tmp_path):
    deep = '{"text": "a", "label": ' + "[" * 10_000 + "]" * 10_000 + "}"
    for name, text, message in [
            ("deep.jsonl", '{"text": "a", "label": "x"}\n' + deep + "\n", r"deep.jsonl:2: JSON nested deeper than "
                                                                          "Python reads .*; flatten this row"),
            ("deep.json", "[\n" + deep + "\n]", r"deep.json: record 0 \(line 2\): JSON nested deeper")]:
        with pytest.raises(ValueError, match=message) as refusal:
            read_text_file(write(tmp_path / name, text))
        assert "\n" not in str(refusal.value)
    cell = read_text_file(write(tmp_path / "deep.csv", "text,label\na,x\nb," + "[" * 10_000 + "\n"))
    with pytest.raises(ValueError, match=r"deep.csv:3: label '\[\[\[.*\.\.\.' starts like a JSON list but is none"):
        label_scheme(cell)


def test_a_header_repeated_mid_file_is_refused(tmp_path):
    joined = "id,text,label\n1,a,x\n2,b,y\nid, text ,label\n3,c,x\n"
    with pytest.raises(ValueError, match=r"joined.csv:4: repeats the header \(line 1\), as files joined with their "
                                         "headers do; delete this line"):
        read_text_file(write(tmp_path / "joined.csv", joined))
    with pytest.raises(ValueError, match=r"joined.tsv:3: repeats the header"):
        read_text_file(write(tmp_path / "joined.tsv", "text\tlabel\na\tx\ntext\tlabel\n"))


def test_files_past_the_size_bound_are_refused_early(tmp_path, monkeypatch):
    monkeypatch.setattr(labelled_texts, "MAX_TEXT_BYTES", 1000)
    monkeypatch.setattr(labelled_texts, "_READ_CHUNK", 256)
    rows = "text,label\n" + "some text,x\n" * 100  # 1,211 bytes
    with pytest.raises(ValueError, match=r"big.csv: more than 1,000 bytes of text, the most a file is read into "
                                         "memory; use a sample of it"):
        read_text_file(write(tmp_path / "big.csv", rows))
    assert len(read_text_file(write(tmp_path / "small.csv", rows[:11 + 12 * 80])).examples) == 80
    # A gzip bomb: 64 MiB of zeros in 64 KiB. Decompressing stops past the bound, so memory stays small.
    bomb = tmp_path / "bomb.csv.gz"
    bomb.write_bytes(gzip.compress(b"text,label\n" + b"0" * (64 << 20), compresslevel=1))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"bomb.csv.gz: more than 1,000 bytes of text once decompressed"):
            read_text_file(str(bomb))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    assert labelled_texts._size(1 << 30) == "1 GiB"  # the default bound, as the docs state it


@pytest.mark.slow
def test_the_tool_writes_predictions_and_no_metrics_for_blank_multi_label_cells(tmp_path, tmp_path_factory):
    """The reported case end to end: a multi-label predict file whose label cells are blank got scored as 'no
    labels' (exact_match, micro-F1 in eval_results.json); now it is predicted and not scored."""
    from albert_tf.tasks.text_classification_task import TextClassificationConfig, TextClassificationTask
    from albert_tf.training.finetuning_config import FinetuningConfig
    from albert_tf.training.finetuning_tool import run_finetuning
    from text_fixtures import tiny_pretrained_checkpoint

    train = write(tmp_path / "train.jsonl", jsonl([{"text": f"row {i} crash", "label": ["bug"] + ["urgent"] * (i % 2)}
                                                   for i in range(8)]))
    new = write(tmp_path / "new.csv", "id,text,label\nn1,it crashes,\nn2,an invoice,\n")
    config = FinetuningConfig(output_dir=str(tmp_path / "out"), init_checkpoint=tiny_pretrained_checkpoint(
        tmp_path_factory), do_train=True, do_predict=True, num_train_steps=2, max_seq_length=16, train_batch_size=4,
        iterations_per_loop=1, task=TextClassificationConfig(train_file=train, predict_file=new))
    assert run_finetuning(TextClassificationTask(), config) == 0
    with open(tmp_path / "out" / "predictions.csv", encoding="utf-8") as f:
        assert [row["id"] for row in csv.DictReader(f)] == ["n1", "n2"]
    assert not (tmp_path / "out" / "eval_results.json").exists()
