"""Whole-word masking for CJK text: Korean words are the pieces from one '▁' to the next; Chinese and Japanese
words come from a segmenter's spaces (--pre_segmented), removed before tokenizing; the same bytes from the
local tool and Beam."""

import dataclasses
import json
import re
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.data.corpus_reader import Document
from albert_tf.data.masking import MaskingConfig
from albert_tf.data.pretraining_data_job import CreationConfig
from albert_tf.data.pretraining_instances import InstanceBuilder, InstanceConfig, InstanceStats, tokenize_documents
from albert_tf.settings import SettingError
from albert_tf.text.albert_tokenizer import CLS_ID, SEP_ID, AlbertTokenizer, is_word_start_piece
from albert_tf.text.segmented_text import encode_segmented, join_words, split_segmented_sentences
from albert_tf.text.sentence_splitter import split_sentences
from test_cjk_sentences import write_cjk_corpus

KOREAN = [
    "대한민국의 수도는 서울이다. 서울에는 다리도 많았습니다.", "한국어 문장을 토큰으로 나눕니다.",
    "옛날의 서울의 모습이 몹시 그립습니다.", "이른 아침과 밤 늦게 종로 보신각의 종소리를 듣고 잠을 잤다.",
    "그 오간수다리에는 쇠창살이 설치되어 있었다.", "본래 한양 근처는 처녀림 밀림지대였으므로 목재는 얼마든지 있었다.",
]
# Chinese as a segmenter writes it: words separated by spaces (two Latin words keep theirs).
SEGMENTED_CHINESE = [
    "我 喜欢 自然 语言 处理 。", "北京 是 中国 的 首都 。", "人工 智能 正在 改变 世界 。", "我们 今天 去 公园 散步 。",
    "他 在 图书馆 学习 机器 学习 和 deep learning 。", "鲁迅 是 中国 现代 文学 的 奠基人 。",
    "大学生 们 在 操场 上 踢 足球 。", "这个 城市 的 交通 非常 方便 。",
]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    """A small vocabulary of the unsegmented Chinese and of Korean, whose words are several pieces."""
    from albert_tf.data.vocabulary import train

    directory = tmp_path_factory.mktemp("cjk_spm")
    corpus = directory / "corpus.txt"
    corpus.write_text("\n".join([join_words(s)[0] for s in SEGMENTED_CHINESE] + KOREAN) * 20 + "\n",
                      encoding="utf-8")
    train([str(corpus)], str(directory / "spm"), vocab_size=200, hard_vocab_limit=False, num_threads=1,
          keep_accents=False)
    return AlbertTokenizer(str(directory / "spm.model"))


def test_hangul_pieces_continue_their_word_and_other_pieces_keep_the_original_rule():
    assert not is_word_start_piece("문장") and not is_word_start_piece("ᄀ")  # syllables, jamo
    assert is_word_start_piece("▁문장") and is_word_start_piece(".") and is_word_start_piece("3월")
    assert is_word_start_piece("北京") and is_word_start_piece("です")  # Chinese, Japanese: unchanged
    assert not is_word_start_piece("ing") and is_word_start_piece("é")


def masked_rows(builder, documents, pool=None):
    """[(original ids, masked flags, token_boundary)] of every instance built from `documents`."""
    rows = []
    for document in documents:
        for _, ints, floats in builder.build(document, pool or documents, InstanceStats()):
            for row in range(len(ints["input_ids"])):
                ids = ints["input_ids"][row].copy()
                chosen = floats["masked_lm_weights"][row] > 0
                positions = ints["masked_lm_positions"][row][chosen]
                ids[positions] = ints["masked_lm_ids"][row][chosen]
                masked = np.zeros(len(ids), bool)
                masked[positions] = True
                length = int(ints["input_mask"][row].sum())
                rows.append((ids[:length], masked[:length], ints["token_boundary"][row][:length].astype(bool)))
    return rows


def word_groups(ids, continues):
    """Lists of positions, one per word: a position whose token `continues(position)` joins the word before it;
    [CLS] and [SEP] belong to none and end none (a word may reach across [SEP], as the original groups them)."""
    words = []
    for position, token in enumerate(ids):
        if token in (CLS_ID, SEP_ID):
            continue
        if words and continues(position):
            words[-1].append(position)
        else:
            words.append([position])
    return words


def builder_of(tokenizer, seed=7):
    config = InstanceConfig(max_seq_length=48, dupe_factor=6, short_seq_prob=0.3,
                            masking=MaskingConfig(masked_lm_prob=0.4, max_predictions_per_seq=20))
    return InstanceBuilder(config, tokenizer.word_start_table, tokenizer.random_replacement_ids, seed,
                           special_ids=tokenizer.special_ids)


def assert_whole_words(rows, words_of):
    """Every word of every row is masked whole or not at all; some masked words have several pieces."""
    multi_piece = 0
    for ids, masked, boundary in rows:
        for word in words_of(ids, boundary):
            assert masked[word].all() or not masked[word].any(), (ids, word, masked)
            multi_piece += len(word) > 1 and masked[word].all()
    assert multi_piece > 10


def test_korean_masking_never_splits_a_word(tokenizer):
    sentences = [sentence for paragraph in KOREAN for sentence in split_sentences(paragraph)]
    documents = tokenize_documents(tokenizer, [Document(0, d, tuple(sentences[d:] + sentences[:d])) for d in range(3)])
    pieces = [tokenizer.id_to_piece(i) for i in range(tokenizer.vocab_size)]
    hangul_only = re.compile("[가-힣]+")
    rows = masked_rows(builder_of(tokenizer), documents)

    # A Korean word: a piece with '▁' and the Hangul pieces without one after it (read from the pieces' text).
    def words_of(ids, _):
        return word_groups(ids, lambda p: not pieces[ids[p]].startswith("▁") and bool(hangul_only.fullmatch(
            pieces[ids[p]])))

    assert_whole_words(rows, words_of)


def test_pre_segmented_chinese_gives_the_unsegmented_ids(tokenizer):
    for segmented in SEGMENTED_CHINESE:
        unsegmented = segmented.replace(" ", "").replace("deeplearning", "deep learning")
        [(ids, _)] = encode_segmented(tokenizer, [segmented])
        assert ids.tolist() == tokenizer.encode(unsegmented)
    unsegmented_documents = [Document(0, 0, tuple(join_words(s)[0] for s in SEGMENTED_CHINESE))]
    segmented_documents = [Document(0, 0, tuple(SEGMENTED_CHINESE))]
    [plain] = tokenize_documents(tokenizer, unsegmented_documents)
    [segmented] = tokenize_documents(tokenizer, segmented_documents, pre_segmented=True)
    np.testing.assert_array_equal(segmented.tokens, plain.tokens)
    np.testing.assert_array_equal(segmented.offsets, plain.offsets)
    assert plain.word_starts is None and segmented.word_starts.shape == segmented.tokens.shape


def test_pre_segmented_word_starts_are_the_segmenters_words(tokenizer):
    """Each piece is placed in the segmenter's words by its text; a word's first piece (or the '▁' alone before
    it) starts it, every other piece continues it."""
    for sentence in SEGMENTED_CHINESE:
        joined, starts = join_words(sentence)
        [(ids, word_starts)] = encode_segmented(tokenizer, [sentence])
        word_of, offset = [], 0
        for piece in (tokenizer.id_to_piece(i) for i in ids):
            text = piece.lstrip("▁")
            if text:
                offset = joined.index(text, offset)
                word_of.append(np.searchsorted(starts, offset, side="right") - 1)
                offset += len(text)
            else:
                word_of.append(None)  # a '▁' alone: part of the word after it
        word_of = [word if word is not None else next(w for w in word_of[i:] if w is not None)
                   for i, word in enumerate(word_of)]
        expected = [i == 0 or word_of[i] != word_of[i - 1] for i in range(len(ids))]
        assert word_starts.tolist() == expected, (sentence, [tokenizer.id_to_piece(i) for i in ids])
        # The original rule takes every piece with a Han character for a word.
        han = [i for i, piece_id in enumerate(ids) if re.search("[一-龥]", tokenizer.id_to_piece(piece_id))]
        assert tokenizer.word_start_table[ids[han]].all() and not word_starts[han].all()


def test_pre_segmented_masking_masks_whole_words(tokenizer):
    documents = tokenize_documents(tokenizer, [Document(0, d, tuple(SEGMENTED_CHINESE[d:] + SEGMENTED_CHINESE[:d]))
                                               for d in range(3)], pre_segmented=True)
    rows = masked_rows(builder_of(tokenizer), documents)
    # token_boundary carries the segmenter's words: each segment's (ids, boundary) run is one of a document's.
    document_pairs = ["".join(f"{t},{int(s)};" for t, s in zip(d.tokens, d.word_starts)) for d in documents]
    for ids, _, boundary in rows:
        separator = list(ids).index(SEP_ID)
        for segment in (slice(1, separator), slice(separator + 1, len(ids) - 1)):
            run = "".join(f"{t},{int(s)};" for t, s in zip(ids[segment], boundary[segment]))
            assert any(run in pairs for pairs in document_pairs)
    assert_whole_words(rows, lambda ids, boundary: word_groups(ids, lambda p: not boundary[p]))
    han = re.compile("[一-龥]")
    masked_han_words = sum(
        masked[word].all() and sum(bool(han.search(tokenizer.id_to_piece(ids[p]))) for p in word) > 1
        for ids, masked, boundary in rows for word in word_groups(ids, lambda p: not boundary[p]))
    assert masked_han_words > 10  # words of several Han pieces (自 然), masked whole
    # Without the segmentation every Han piece is a word: no masked word of several Han pieces.
    plain = tokenize_documents(tokenizer, [Document(0, d, tuple(join_words(s)[0] for s in SEGMENTED_CHINESE))
                                           for d in range(3)])
    for ids, masked, boundary in masked_rows(builder_of(tokenizer), plain):
        assert boundary[[i for i, t in enumerate(ids) if re.search("[一-龥]", tokenizer.id_to_piece(t))]].all()


def test_segmented_paragraphs_are_split_where_the_unsegmented_text_ends_sentences():
    paragraph = "「 そう か 。 」 と 彼 は 言っ た 。 雨 が 降る ！ 本当 ？ 他 说 。 \"你 来 了 。\""
    sentences = split_segmented_sentences(paragraph, split_sentences)
    assert sentences == ["「 そう か 。 」 と 彼 は 言っ た 。", "雨 が 降る ！", "本当 ？", "他 说 。", "\"你 来 了 。\""]
    assert [join_words(s)[0] for s in sentences] == split_sentences(join_words(paragraph)[0])


def test_the_documents_format_refuses_pre_segmented_text():
    with pytest.raises(SettingError, match="pre_segmented needs output_format=instances"):
        CreationConfig(output_format="documents", pre_segmented=True)


def test_local_tool_and_beam_write_the_same_bytes_for_pre_segmented_text(tmp_path, tokenizer):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from albert_tf.data.local_runner import create_pretraining_data
    from pipelines.create_pretraining_data import build_pipeline
    from test_beam_pipeline import CONFIG, outputs

    corpus = write_cjk_corpus(tmp_path / "segmented.txt", segmented=True)
    spm_model = tmp_path / "spm.model"
    spm_model.write_bytes(tokenizer.model_proto)
    config = dataclasses.replace(CONFIG, input_format="paragraphs", pre_segmented=True)
    create_pretraining_data([corpus], str(tmp_path / "local" / "data"), str(spm_model), config, num_workers=2,
                            progress=False)
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as pipeline:
        build_pipeline(pipeline, [corpus], str(tmp_path / "beam" / "data"), tokenizer.model_proto, config)
    local, from_beam = outputs(tmp_path / "local"), outputs(tmp_path / "beam")
    assert len(local) == config.num_output_shards + 1 and local == from_beam
    assert json.loads(local["data.metadata.json"])["config"]["pre_segmented"] is True
    # The segmentation changes what is masked (the same file read unsegmented gives other records).
    create_pretraining_data([corpus], str(tmp_path / "plain" / "data"), str(spm_model),
                            dataclasses.replace(config, pre_segmented=False), progress=False)
    plain = outputs(tmp_path / "plain")
    assert [plain[name] != local[name] for name in local if "tfrecord" in name] == [True] * config.num_output_shards


def test_the_flag_reaches_the_data_and_is_refused_with_the_documents_format(tmp_path, tokenizer):
    corpus = write_cjk_corpus(tmp_path / "segmented.txt", segmented=True)
    spm_model = tmp_path / "spm.model"
    spm_model.write_bytes(tokenizer.model_proto)
    command = [sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={corpus}",
               f"--spm_model_file={spm_model}", "--input_format=paragraphs", "--pre_segmented", "--nokeep_accents",
               "--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=1", "--num_workers=1"]
    result = subprocess.run([*command, f"--output_file={tmp_path / 'out' / 'data'}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "out" / "data.metadata.json").read_text())["config"]["pre_segmented"] is True
    refused = subprocess.run([*command, f"--output_file={tmp_path / 'docs' / 'data'}", "--output_format=documents"],
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "--pre_segmented needs --output_format=instances" in refused.stderr
