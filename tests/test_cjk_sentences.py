"""Sentences of Chinese, Japanese and Korean paragraphs: where they end without whitespace, what stays with
them, what does not end one, English as before; the same bytes from the local tool and Beam; the benchmark."""

import dataclasses
import json
import os
import re

import pytest

from albert_tf.text.sentence_splitter import split_sentences
from benchmarks.speed.cjk_sentences import latin_only_split
from text_fixtures import WORDS, random_sentence

JAPANESE_PARAGRAPHS = [
    "ぶらりと両手を垂げたまま、圭さんが帰って来る。「どこへ行ったね」「ちょっと、町を歩行いて来た」",
    "「そうか。」と彼は言った。雨が降る！本当？\u3000それは困る。",
    "円周率は３．１４です。この鳥は……と思った。しかし彼は……何も言わなかった。",
]
CHINESE_PARAGRAPHS = [
    "我在年青时候也曾经做过许多梦。所谓回忆者，……多不是容易办到的东西！然而我的父亲终于亡故了。",
    "“你好。”我说。“好！？”他答道。他说。\"你来了。\"",
    "英国王尔德（Ｏ．Ｗｉｌｄｅ，1854—1900）是作家。mr．朱可放心。",
]
# Korean sentences as UD Korean-Kaist writes them, one a line.
KOREAN_SENTENCES = ["내 고향은 서울입니다.", "옛날의 서울의 모습이 몹시 그립습니다.", "서울에는 다리도 많았습니다.",
                    "아주 잘 꾸며 놨었지요.", "왜놈들을 잡아 먹는 겁니다.", "먹을 때 다 먹지 않고 반쯤 남기지요.",
                    "하며 소리치지요.", "정말 그래?"]
KOREAN_PARAGRAPHS = [
    "첫 문장입니다. 두 번째 문장입니다.",
    "정말 해. 그래서 갔다! 왜? 몰라. 3.14는 수이다.",
    "Mr. 김이 왔다. 그는 갔다.",
]


@pytest.mark.parametrize("paragraph, sentences", [
    # Full-width marks end a sentence with no whitespace after them, closers stay with theirs.
    ("雨が降る！本当？それは困る。", ["雨が降る！", "本当？", "それは困る。"]),
    ("“你好。”我说。", ["“你好。”", "我说。"]),
    ("「どこへ行ったね」「寺が一軒あった。」そこで", ["「どこへ行ったね」「寺が一軒あった。」", "そこで"]),
    # A quoting particle after the closing bracket keeps the quotation in its sentence; a bare 。 ends one.
    ("「そうか。」と彼は言った。", ["「そうか。」と彼は言った。"]),
    ("見たかった。ところが", ["見たかった。", "ところが"]),
    # Inside a quotation a 。 still ends a sentence.
    ("「石が敷き詰めてあった。細長い寺だった」", ["「石が敷き詰めてあった。", "細長い寺だった」"]),
    # Runs of marks are one end; an ellipsis ends one only directly after a CJK character, not after a comma,
    # and not before a quoting particle.
    ("好！？走吧……然后呢。", ["好！？", "走吧……", "然后呢。"]),
    ("芦根，……多不是东西。", ["芦根，……多不是东西。"]),
    ("この鳥は……と思った。", ["この鳥は……と思った。"]),
    # Full-width periods and ASCII marks need a CJK character before them: numbers and initials go on.
    ("円周率は３．１４です。次に3.14も！", ["円周率は３．１４です。", "次に3.14も！"]),
    ("（Ｍ．Ｗｉｌｄｅ）是作家。mr．朱可放心。", ["（Ｍ．Ｗｉｌｄｅ）是作家。", "mr．朱可放心。"]),
    ("である．次に", ["である．", "次に"]),
    ("本当!?嘘だ", ["本当!?", "嘘だ"]),
    # A straight quote after a mark closes an open quotation, or opens the next one.
    ('他说。"你来了。"她笑了。', ["他说。", '"你来了。"', "她笑了。"]),
    # A comma-like mark after the marks goes on; whitespace after them is dropped.
    ("他问：“真的？”，我点头。", ["他问：“真的？”，我点头。"]),
    ("本当？\u3000それは困る。", ["本当？", "それは困る。"]),
    ("「そうか。」。次", ["「そうか。」。", "次"]),
    # Korean: '.', '!', '?' then whitespace and Hangul; a one-syllable word before '.' is no initial.
    ("첫 문장입니다. 두 번째 문장입니다.", ["첫 문장입니다.", "두 번째 문장입니다."]),
    ("정말 해. 그래서 갔다! 왜? 몰라.", ["정말 해.", "그래서 갔다!", "왜?", "몰라."]),
    ("3.14는 수이다. Mr. 김이 왔다.", ["3.14는 수이다.", "Mr. 김이 왔다."]),
    ('"가자." 그가 말했다.', ['"가자."', "그가 말했다."]),
    # English followed by Chinese, and a German phrase quoted in Japanese before its particle.
    ("I like Beijing. 北京欢迎你！", ["I like Beijing.", "北京欢迎你！"]),
    ("それは Grob ! と言ったように", ["それは Grob ! と言ったように"]),
])
def test_cjk_sentence_ends(paragraph, sentences):
    assert split_sentences(paragraph) == sentences


def test_the_modules_examples_hold():
    import doctest

    from albert_tf.text import segmented_text, sentence_splitter

    for module in (sentence_splitter, segmented_text):
        failed, attempted = doctest.testmod(module)
        assert attempted and not failed, module.__name__


def test_english_is_split_as_before():
    """The CJK rules change nothing where there is no CJK character: the splitter before them (kept in the
    benchmark) gives the same sentences on every paragraph."""
    import random

    rng = random.Random(65)
    paragraphs = [" ".join(random_sentence(rng) for _ in range(rng.randint(1, 6))) for _ in range(300)]
    paragraphs += ['Mr. Smith went to Washington. "Why?" he asked! It was 3 p.m. Then he left.',
                   "J. R. R. Tolkien wrote books. The U.S. Army came… (Later.) [Yes!] 'No?' Right.",
                   "Wait... what?! 3.14 is pi. e.g. This one. St. Louis. A. B. See."]
    assert len(set(WORDS)) > 100
    differing = [p for p in paragraphs if split_sentences(p) != latin_only_split(p)]
    assert not differing
    assert sum(len(split_sentences(p)) for p in paragraphs) > len(paragraphs) * 2  # it did split them


def test_english_corpus_is_split_as_before(shared_data):
    path = shared_data / "corpus" / "corpus_paragraphs.txt"
    if not path.exists():
        pytest.skip(f"{path} not present")
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line, _ in zip(f, range(5000)) if line.strip()]
    assert [split_sentences(line) for line in lines] == [latin_only_split(line) for line in lines]


# A full-width 。！？ directly followed by a character that is none of: a mark, a closer, a comma-like mark,
# whitespace (skipped) or a Japanese quoting particle (only after closers, and a bare 。 has none).
_BARE_END = re.compile(r"[。！？](?=[^\s」』）)】〉》〕”’\"'、，,；;：:。！？!?…‥．])")


@pytest.mark.parametrize("relative", ["corpus_ja_aozora/corpus_paragraphs.txt",
                                      "corpus_zh_modern/corpus_paragraphs.txt"])
def test_staged_corpora_keep_their_text_and_end_a_sentence_at_every_bare_mark(shared_data, relative):
    path = shared_data / relative
    if not path.exists():
        pytest.skip(f"{path} not present")
    with open(path, encoding="utf-8") as f:
        paragraphs = [line.strip() for line, _ in zip(f, range(3000)) if line.strip()]
    found = bare = 0
    for paragraph in paragraphs:
        sentences = split_sentences(paragraph)
        assert re.sub(r"\s+", "", "".join(sentences)) == re.sub(r"\s+", "", paragraph)  # nothing lost or added
        ends, position = set(), 0
        for sentence in sentences:
            position = paragraph.index(sentence, position) + len(sentence)
            ends.add(position)
        for match in _BARE_END.finditer(paragraph):
            bare += 1
            found += match.end() in ends
    assert bare > 1000 and found == bare
    assert sum(len(split_sentences(p)) for p in paragraphs) > 2 * len(paragraphs)


def write_cjk_corpus(path, segmented=False):
    """Paragraphs of Japanese, Chinese and Korean, a document each, then a mixed one; `segmented` puts a space
    between the Chinese and Japanese characters (each a word)."""
    documents = [JAPANESE_PARAGRAPHS * 3, CHINESE_PARAGRAPHS * 3, KOREAN_PARAGRAPHS * 3,
                 [JAPANESE_PARAGRAPHS[0], CHINESE_PARAGRAPHS[1], KOREAN_PARAGRAPHS[0], "An English line. Another."]]
    if segmented:
        from albert_tf.text.segmented_text import _UNSPACED

        documents = [[" ".join(re.sub(f"({_UNSPACED.pattern})", r" \1 ", paragraph).split())
                      for paragraph in document] for document in documents]
    path.write_text("\n\n".join("\n".join(document) for document in documents) + "\n", encoding="utf-8")
    return str(path)


def cjk_vocabulary(directory, corpus):
    from albert_tf.data.vocabulary import train

    prefix = directory / "spm"
    train([corpus], str(prefix), vocab_size=250, input_format="paragraphs", hard_vocab_limit=False, num_threads=1,
          keep_accents=False)
    return str(prefix) + ".model"


def test_local_tool_and_beam_write_the_same_bytes_for_cjk_paragraphs(tmp_path):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from albert_tf.data.corpus_reader import CorpusStats, iter_documents
    from albert_tf.data.local_runner import create_pretraining_data
    from pipelines.create_pretraining_data import build_pipeline
    from test_beam_pipeline import CONFIG, outputs

    corpus = write_cjk_corpus(tmp_path / "cjk.txt")
    spm_model = cjk_vocabulary(tmp_path, corpus)
    config = dataclasses.replace(CONFIG, input_format="paragraphs")
    # The documents hold the split sentences, many more than the paragraphs.
    documents = list(iter_documents(corpus, 0, CorpusStats(), "paragraphs"))
    assert sum(len(document.sentences) for document in documents) > 2 * sum(
        len(paragraphs) for paragraphs in (JAPANESE_PARAGRAPHS, CHINESE_PARAGRAPHS, KOREAN_PARAGRAPHS)) * 3
    create_pretraining_data([corpus], str(tmp_path / "local" / "data"), spm_model, config, progress=False)
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as pipeline:
        build_pipeline(pipeline, [corpus], str(tmp_path / "beam" / "data"), open(spm_model, "rb").read(), config)
    local, from_beam = outputs(tmp_path / "local"), outputs(tmp_path / "beam")
    assert len(local) == config.num_output_shards + 1 and local == from_beam


def test_the_benchmark_counts_marks_and_sentences(tmp_path):
    from benchmarks.speed import cjk_sentences

    data = tmp_path / "data"
    for relative, lines in (("corpus_ja_aozora/corpus_paragraphs.txt", JAPANESE_PARAGRAPHS),
                            ("corpus_zh_modern/corpus_paragraphs.txt", CHINESE_PARAGRAPHS),
                            ("corpus_ko_ud_kaist/corpus_sentences.txt", KOREAN_SENTENCES)):
        os.makedirs(data / os.path.dirname(relative), exist_ok=True)
        (data / relative).write_text("\n".join(lines) + "\n", encoding="utf-8")
    results = tmp_path / "results"
    assert cjk_sentences.main([f"--data_dir={data}", f"--results_dir={results}", "--repeats=1"]) == 0
    record = json.loads((results / "cjk_sentences.json").read_text())
    japanese = record["corpora"]["Japanese (Aozora Bunko)"]
    assert japanese["paragraphs"] == 3 and japanese["sentences_before"] == 3
    assert japanese["sentences_after"] == sum(len(split_sentences(p)) for p in JAPANESE_PARAGRAPHS)
    assert japanese["held_back"]["a quoting particle follows (「…。」と)"] == 2  # 「そうか。」と, ……と
    # The Korean lines are sentences: joined five at a time, every true boundary is found, none was before.
    [korean] = record["gold"].values()
    assert korean["after"]["true"] == len(KOREAN_SENTENCES) - 2  # two paragraphs: 5 and 3 sentences
    assert korean["after"]["correct"] == korean["after"]["found"] == korean["after"]["true"]
    assert korean["before"]["found"] == 0
    assert "| Japanese (Aozora Bunko) |" in (results / "cjk_sentences.md").read_text()
