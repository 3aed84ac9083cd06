"""Entities as character spans of a sentence's raw text (Chinese, Japanese and Korean, written without spaces
between words): KLUE-NER's character-per-line files read with their spaces as tokens, CoNLL-U's `# text =`
lines and JSON Lines' "text" kept, each token's span found, gold entities given as spans and predicted spans
written back as tags."""

import pytest

from albert_tf.tasks.tagged_texts import (TaggedSentence, entity_char_spans, entity_counts, read_tagged_file,
                                          sentence_text, text_source)
from albert_tf.tasks.tagging_metrics import entity_spans
from albert_tf.text.entities import span_tags
from text_fixtures import jsonl, write_data_file as write


def spans_and_texts(sentence):
    """The gold entities as (type, start, end, the text they cover)."""
    text, token_spans = sentence_text(sentence)
    return [(kind, start, end, text[start:end]) for kind, start, end in entity_char_spans(sentence, token_spans)]


def round_trips(sentence):
    _, token_spans = sentence_text(sentence)
    return span_tags(token_spans, entity_char_spans(sentence), sentence.tokens) == list(sentence.tags)


# KLUE-NER's layout: `## ` headers (one holding a tab), a `## <id><TAB><annotated sentence>` line before each
# sentence, one character a line and each space a line ` <TAB>O`; a `#` of the text is a token line.
KLUE = """## 토큰, 띄어쓰기 구분자 : \t
## 칼럼명 : CHAR\tNE_TAG
## klue-1\t<서울:LC>에서 <김철수:PS>를 만났다
서\tB-LC
울\tI-LC
에\tO
서\tO
 \tO
김\tB-PS
철\tI-PS
수\tI-PS
를\tO
 \tO
만\tO
났\tO
다\tO

## klue-2\t<한국 은행:OG> #<1:QT>위
한\tB-OG
국\tI-OG
  \tI-OG
은\tI-OG
행\tI-OG
 \tO
#\tO
1\tB-QT
위\tO
"""


def test_klue_layout_reads_spaces_as_tokens_and_entities_as_character_spans(tmp_path):
    read = read_tagged_file(write(tmp_path / "klue-ner-dev.tsv", KLUE))
    first, second = read.sentences
    assert first.tokens == tuple("서울에서 김철수를 만났다")  # the comment lines are no tokens
    assert second.tokens == ("한", "국", " ", "은", "행", " ", "#", "1", "위")  # two spaces in the cell: one " "
    assert first.tags[4] == "O" and second.tags[2] == "I-OG"
    assert first.text is None and first.token_lines[0] == 4
    assert entity_counts(read) == {"LC": 1, "OG": 1, "PS": 1, "QT": 1}
    assert sentence_text(first) == ("서울에서 김철수를 만났다", tuple((i, i + 1) for i in range(13)))
    assert text_source(first) == text_source(second) == "characters"
    # `<서울:LC>에서`: the entity ends inside the space-delimited word.
    assert spans_and_texts(first) == [("LC", 0, 2, "서울"), ("PS", 5, 8, "김철수")]
    assert spans_and_texts(second) == [("OG", 0, 5, "한국 은행"), ("QT", 7, 8, "1")]
    assert round_trips(first) and round_trips(second)


def test_a_space_tagged_at_an_entitys_edge_is_left_out_of_its_span(tmp_path):
    read = read_tagged_file(write(tmp_path / "klue.tsv", "서\tB-LC\n울\tI-LC\n \tI-LC\n에\tO\n \tB-PS\n김\tI-PS\n"))
    sentence = read.sentences[0]
    assert spans_and_texts(sentence) == [("LC", 0, 2, "서울"), ("PS", 5, 6, "김")]
    # Written back, the spaces are outside the entities.
    assert span_tags(sentence_text(sentence)[1], entity_char_spans(sentence), sentence.tokens) == [
        "B-LC", "I-LC", "O", "O", "O", "B-PS"]


def test_a_space_only_token_needs_tabs_and_an_empty_cell_is_still_refused(tmp_path):
    with pytest.raises(ValueError, match=r"empty.tsv:2: the token column \(0\) is empty"):
        read_tagged_file(write(tmp_path / "empty.tsv", "서\tB-LC\n\tO\n"))
    # Separated by spaces, ` O` is a line of one column: no space token.
    with pytest.raises(ValueError, match=r"spaced.txt:2: 1 column\(s\), too few"):
        read_tagged_file(write(tmp_path / "spaced.txt", "서 B-LC\n  O\n"))


# The staged UNER files' layout: index, token, tag, two unused columns; CoNLL-U comments.
UNER_ZH = """# newdoc id = doc-1
# sent_id = doc-1-0001
# text = 自从2004年提出了兴建人文大楼的构想。
1\t自从\tO\t-\t-
2\t2004\tO\t-\t-
3\t年\tO\t-\t-
4\t提出\tO\t-\t-
5\t了\tO\t-\t-
6\t兴建\tO\t-\t-
7\t人文\tB-LOC\t-\tlinpq
8\t大楼\tI-LOC\t-\tlinpq
9\t的\tO\t-\t-
10\t构想\tO\t-\t-
11\t。\tO\t-\t-

# sent_id = doc-1-0002
1\t我\tO\t-\t-
2\t住在\tO\t-\t-
3\t北京\tB-LOC\t-\t-
4\t。\tO\t-\t-
"""


def test_uner_zh_keeps_the_text_line_and_finds_the_tokens_in_it(tmp_path):
    first, second = read_tagged_file(write(tmp_path / "zh-test.iob2", UNER_ZH)).sentences
    assert first.text == "自从2004年提出了兴建人文大楼的构想。"
    assert text_source(first) == "text"
    assert sentence_text(first)[1][:3] == ((0, 2), (2, 6), (6, 7))
    assert spans_and_texts(first) == [("LOC", 12, 16, "人文大楼")]
    # The second sentence has no `# text` line (the first's is not carried over): its tokens joined, no spaces.
    assert second.text is None and text_source(second) == "joined"
    assert sentence_text(second) == ("我住在北京。", ((0, 1), (1, 3), (3, 5), (5, 6)))
    assert spans_and_texts(second) == [("LOC", 3, 5, "北京")]
    assert round_trips(first) and round_trips(second)


def test_english_tokens_align_to_the_text_line_with_and_without_spaces(tmp_path):
    file = "# sent_id = 1\n# text = I flew to  Paris.\n1\tI\tO\n2\tflew\tO\n3\tto\tO\n4\tParis\tB-LOC\n5\t.\tO\n"
    sentence = read_tagged_file(write(tmp_path / "en.iob2", file)).sentences[0]
    assert sentence.text == "I flew to  Paris."
    assert sentence_text(sentence) == ("I flew to  Paris.", ((0, 1), (2, 6), (7, 9), (11, 16), (16, 17)))
    assert text_source(sentence) == "text"
    assert spans_and_texts(sentence) == [("LOC", 11, 16, "Paris")]
    assert round_trips(sentence)


def test_the_last_text_line_before_the_first_token_is_the_sentences_exactly(tmp_path):
    file = ("# text = not this one\n# text =  我 住在北京。 \n1\t我\tO\n# text = inside: ignored\n2\t住在\tO\n"
            "3\t北京\tB-LOC\n4\t。\tO\n\n1\tParis\tB-LOC\n")
    first, second = read_tagged_file(write(tmp_path / "t.iob2", file)).sentences
    assert first.text == " 我 住在北京。 "  # only the line end stripped; the spaces around are whitespace
    assert sentence_text(first) == (" 我 住在北京。 ", ((1, 2), (3, 5), (5, 7), (7, 8)))
    assert second.text is None  # the text line inside the first sentence belongs to no sentence
    assert sentence_text(second) == ("Paris", ((0, 5),))


@pytest.mark.parametrize("text", ["我住在上海。", "我住在北京。谢谢", "谢谢我住在北京。", "我住在北京"])
def test_a_text_line_the_tokens_are_not_found_in_falls_back_to_joining_them(tmp_path, text):
    file = f"# text = {text}\n1\t我\tO\n2\t住在\tO\n3\t北京\tB-LOC\n4\t。\tO\n"
    sentence = read_tagged_file(write(tmp_path / "t.iob2", file)).sentences[0]
    assert sentence.text == text
    assert text_source(sentence) == "joined"
    assert sentence_text(sentence)[0] == "我住在北京。"
    assert spans_and_texts(sentence) == [("LOC", 3, 5, "北京")]


def test_tokens_without_a_text_line_are_joined_as_segmented_text_is(tmp_path):
    file = "我 O\n喜欢 O\nALBERT B-MISC\n模型 O\n\nParis B-LOC\nis O\nnice O\n"
    mixed, english = read_tagged_file(write(tmp_path / "mixed.txt", file)).sentences
    assert sentence_text(mixed) == ("我喜欢ALBERT模型", ((0, 1), (1, 3), (3, 9), (9, 11)))
    assert spans_and_texts(mixed) == [("MISC", 3, 9, "ALBERT")]
    assert sentence_text(english) == ("Paris is nice", ((0, 5), (6, 8), (9, 13)))
    assert [text_source(sentence) for sentence in (mixed, english)] == ["joined", "joined"]
    assert round_trips(mixed) and round_trips(english)


def test_a_japanese_sentence_is_joined_without_spaces():
    sentence = TaggedSentence(("東京", "に", "行き", "ます", "。"), ("B-LOC", "O", "O", "O", "O"), "ja:1", ())
    assert sentence_text(sentence) == ("東京に行きます。", ((0, 2), (2, 3), (3, 5), (5, 7), (7, 8)))
    assert spans_and_texts(sentence) == [("LOC", 0, 2, "東京")]
    assert round_trips(sentence)


def test_tokens_holding_spaces_are_joined_with_one_space_each(tmp_path):
    sentence = read_tagged_file(write(tmp_path / "t.iob2", "1\tNew York\tB-LOC\n2\t北京\tB-LOC\n")).sentences[0]
    assert sentence_text(sentence) == ("New York 北京", ((0, 8), (9, 11)))
    assert spans_and_texts(sentence) == [("LOC", 0, 8, "New York"), ("LOC", 9, 11, "北京")]
    assert round_trips(sentence)


def test_json_lines_keep_a_text_string_and_refuse_another_value(tmp_path):
    rows = [{"tokens": ["我", "住在", "北京"], "tags": ["O", "O", "B-LOC"], "text": "我住在 北京"},
            {"tokens": ["北京"], "tags": ["B-LOC"]}]
    first, second = read_tagged_file(write(tmp_path / "t.jsonl", jsonl(rows))).sentences
    assert (first.text, second.text) == ("我住在 北京", None)
    assert spans_and_texts(first) == [("LOC", 4, 6, "北京")]
    with pytest.raises(ValueError, match=r'bad.jsonl:2: "text" must be a string'):
        read_tagged_file(write(tmp_path / "bad.jsonl", jsonl([rows[1], dict(rows[1], text=["北京"])])))


def test_untagged_sentences_have_no_entities():
    assert entity_char_spans(TaggedSentence(("北京",), None, "p:1", ())) == []


def test_predicted_spans_become_tags_of_the_tokens_they_overlap():
    tokens = tuple("서울 시청에서")  # 서 울 ' ' 시 청 에 서
    spans = tuple((i, i + 1) for i in range(len(tokens)))
    # A span reaching into a token takes the whole token; a span's edge on a space leaves the space O.
    assert span_tags(spans, [("LC", 0, 3)], tokens) == ["B-LC", "I-LC", "O", "O", "O", "O", "O"]
    assert span_tags(spans, [("LC", 2, 5)], tokens) == ["O", "O", "O", "B-LC", "I-LC", "O", "O"]
    # A space with the entity's tokens on both sides is inside it.
    assert span_tags(spans, [("OG", 0, 5)], tokens) == ["B-OG"] + ["I-OG"] * 4 + ["O", "O"]
    # Two entities side by side each start with B-; a token overlapping two takes the first one listed.
    assert span_tags(spans, [("LC", 0, 2), ("LC", 3, 5)], tokens) == [
        "B-LC", "I-LC", "O", "B-LC", "I-LC", "O", "O"]
    assert span_tags(spans, [("PS", 1, 4), ("LC", 0, 2)], tokens) == [
        "B-LC", "B-PS", "I-PS", "I-PS", "O", "O", "O"]
    # Word tokens in joined text: a span inside a word tags the word.
    assert span_tags(((0, 1), (1, 3), (3, 5)), [("LOC", 4, 5)]) == ["O", "O", "B-LOC"]
    assert span_tags(((0, 1),), []) == ["O"]


def test_staged_klue_and_uner_zh_files_read_as_character_spans(shared_data):
    klue = read_tagged_file(str(shared_data / "klue" / "klue-ner-v1.1_dev.tsv"))
    assert len(klue.sentences) == 5000
    assert sum(entity_counts(klue).values()) == 14257
    assert {text_source(sentence) for sentence in klue.sentences} == {"characters"} and len(klue.sentences) == 5000
    assert all(len(token) == 1 for sentence in klue.sentences for token in sentence.tokens)
    assert sum(1 for sentence in klue.sentences if round_trips(sentence)) == 4998  # two entities start at a space

    zh = read_tagged_file(str(shared_data / "ner_uner_zh_gsdsimp" / "zh_gsdsimp-ud-test.iob2"))
    assert {text_source(sentence) for sentence in zh.sentences} == {"text"}
    entities = 0
    for sentence in zh.sentences:
        text, token_spans = sentence_text(sentence)
        assert text == sentence.text
        for (_, start, end), (_, first, stop) in zip(entity_char_spans(sentence, token_spans),
                                                     entity_spans(sentence.tags)):
            entities += 1
            # Latin names keep their spaces in the text (`Kate Moss`), which the tokens lack.
            assert "".join(text[start:end].split()) == "".join(sentence.tokens[first:stop]), sentence.where
            assert text[start:end].startswith(sentence.tokens[first]), sentence.where
        assert round_trips(sentence), sentence.where
    assert entities == sum(entity_counts(zh).values())
