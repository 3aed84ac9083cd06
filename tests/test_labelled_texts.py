"""A user's own labelled files: every format and encoding detail read, every bad input refused by file and line."""

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.settings import SettingError
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
    with pytest.raises(ValueError, match=r"mixes scores \('0.5' at 2\) with names \('bug' at 3\)"):
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
