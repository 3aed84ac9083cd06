"""Chinese, Japanese and Korean text left as it is written, from the vocabulary to a converted tokenizer: accents
kept where stripping would rewrite kana, no false alarm for Hangul (which SentencePiece composes again), the
choice followed by the data and fine-tuning tools, and Hugging Face's tokenizer.json giving the model's ids."""

import json
import types

import pytest

from albert_tf.data.creation_flags import _keep_accents
from albert_tf.data.vocabulary import VocabularyStats, preprocessed_sentences, train
from albert_tf.text.albert_tokenizer import AlbertTokenizer, vocabulary_has_accents
from albert_tf.settings import SettingError

JAPANESE = [
    "吾輩は猫である。名前はまだ無い。", "どこで生れたかとんと見当がつかぬ。", "パンダとハンダは違う言葉です。",
    "ゲームを始めましょう、とジョバンニが言いました。", "がぎぐげご、ざじずぜぞ、だぢづでど、ばびぶべぼ、ぱぴぷぺぽ。",
    "ｶﾞｷﾞｸﾞ（半角カナ）も全角になります。", "東京駅から電車で行きます。", "雨がザーザー降っている。",
]
KOREAN = [
    "배송이 정말 좋았어요.", "첫 문장입니다. 대한민국의 수도는 서울이다.", "한국어 문장을 토큰으로 나눕니다.",
    "값싼 물건은 없었습니다.", "읽고 싶은 책이 많다.", "ㅋㅋㅋ 정말 웃겨요!", "닭볶음탕을 먹었다.",
]
CHINESE = [
    "北京欢迎你！", "我们今天去公园散步。", "鲁迅是中国现代文学的奠基人。", "這是繁體中文的句子。",
    "他说：“你好吗？”", "１２３４５全角数字。", "人工智能正在改变世界。",
]
ENGLISH = ["The quick brown fox jumps over the lazy dog.", "Café déjà vu: naïve coöperation.",
           "A sentence with more words in it than the others have."]


def _corpus(path, lines, repeat=12):
    path.write_text("\n".join(lines * repeat) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def cjk_vocabularies(tmp_path_factory):
    """{language: (model path, VocabularyStats)} trained with the defaults on each language's text (plus English)."""
    directory = tmp_path_factory.mktemp("cjk_vocabularies")
    made = {}
    for language, lines in (("ja", JAPANESE), ("ko", KOREAN), ("zh", CHINESE)):
        corpus = _corpus(directory / f"{language}.txt", lines + ENGLISH)
        stats = train([corpus], str(directory / language), vocab_size=500, hard_vocab_limit=False, num_threads=1)
        made[language] = (directory / f"{language}.model", stats)
    return made


def test_the_vocabulary_tool_keeps_accents_where_stripping_would_rewrite_kana(cjk_vocabularies):
    model, stats = cjk_vocabularies["ja"]
    assert stats.keep_accents and stats.accents_chosen.startswith("accents kept: stripping them (the original's rule) "
                                                                  "would rewrite ")
    assert "--nokeep_accents strips them" in stats.accents_chosen
    tokenizer = AlbertTokenizer(str(model), keep_accents=True)
    assert vocabulary_has_accents(tokenizer)  # the choice the later tools read
    assert tokenizer.tokenize("パンダ") != tokenizer.tokenize("ハンダ")
    assert not any("accent stripping" in line for line in stats.problems())


def test_korean_and_chinese_keep_the_originals_rule_without_a_false_alarm(cjk_vocabularies):
    """Hangul syllables split into jamo by NFKD are composed again by SentencePiece: nothing is rewritten, no
    character is counted as left out (the coverage report counts characters as the model sees them)."""
    for language in ("ko", "zh"):
        model, stats = cjk_vocabularies[language]
        assert not stats.keep_accents and stats.accents_chosen is None
        assert stats.problems() == [], language
        tokenizer = AlbertTokenizer(str(model))
        ids = tokenizer.encode_batch(KOREAN if language == "ko" else CHINESE)
        assert 1 not in {piece for row in ids for piece in row}, language  # no <unk>
    korean = AlbertTokenizer(str(cjk_vocabularies["ko"][0]))
    pieces = "".join(korean.tokenize("닭볶음탕을 먹었다. 값싼 물건"))
    assert not any("\u1100" <= char <= "\u11ff" for char in pieces)  # syllables, not jamo


def test_english_text_keeps_the_originals_accent_stripping(tmp_path):
    """A few kana in an English corpus stay below the share that keeps accents: é is stripped as the original does."""
    corpus = _corpus(tmp_path / "en.txt", ENGLISH * 40 + ["A word in Japanese: がっこう."], repeat=3)
    stats = train([corpus], str(tmp_path / "en"), vocab_size=120, hard_vocab_limit=False, num_threads=1)
    assert not stats.keep_accents and stats.accents_chosen is None
    assert not vocabulary_has_accents(AlbertTokenizer(str(tmp_path / "en.model")))
    [line] = [line for line in stats.problems() if "accent stripping" in line]
    assert "(Hiragana 3; が becomes か)" in line and "--keep_accents" in line


def test_an_explicit_choice_is_kept_and_stripped_kana_is_said(tmp_path):
    corpus = _corpus(tmp_path / "ja.txt", JAPANESE)
    stats = train([corpus], str(tmp_path / "stripped"), vocab_size=300, hard_vocab_limit=False, num_threads=1,
                  keep_accents=False)
    assert not stats.keep_accents and stats.accents_chosen is None
    assert not vocabulary_has_accents(AlbertTokenizer(str(tmp_path / "stripped.model")))
    assert any(line.startswith("accent stripping (the original's rule) rewrote") for line in stats.problems())


def test_the_stripping_notice_counts_kana_and_never_hangul(tmp_path):
    (tmp_path / "ja_ko.txt").write_text("がっこうへ行きます。\nゲームです。\n\n한국어 문장입니다.\nplain text\n")
    stats = VocabularyStats()
    list(preprocessed_sentences([str(tmp_path / "ja_ko.txt")], "sentences", stats))
    assert stats.problems() == [
        "accent stripping (the original's rule) rewrote 3 character(s) in 2 sentence(s) of scripts whose marks "
        "carry meaning (Hiragana 2, Katakana 1; が becomes か): train the vocabulary without --nokeep_accents (or "
        "with --keep_accents) to keep them"]
    assert stats.character_counts["한"] == 1 and "\u1112" not in stats.character_counts  # counted composed
    # The coverage report's total counts the same composed characters as its counts (not NFKD's jamo, 2-3 each).
    assert stats.characters_counted == sum(stats.character_counts.values())


def test_the_data_tool_follows_the_vocabularys_choice(cjk_vocabularies):
    def keep(language, setting=None):
        return _keep_accents(types.SimpleNamespace(keep_accents=setting, spm_model_file=str(cjk_vocabularies[language][0]),
                                                   vocab_file=None))

    assert keep("ja") is True and keep("ko") is False and keep("zh") is False
    assert keep("ja", False) is False and keep("ko", True) is True  # explicit settings win (and are checked later)


def _random_start(spm, **settings):
    from albert_tf.training.finetuning_config import FinetuningConfig
    from albert_tf.training.finetuning_tool import resolve_preprocessing_settings

    config = FinetuningConfig(output_dir="unused", albert_config="albert_tiny", spm_model_file=str(spm),
                              do_train=True, **settings)
    return resolve_preprocessing_settings(types.SimpleNamespace(max_seq_length=64), config)


def test_fine_tuning_from_a_random_start_takes_the_vocabularys_accents(cjk_vocabularies):
    japanese, korean = cjk_vocabularies["ja"][0], cjk_vocabularies["ko"][0]
    assert _random_start(japanese).keep_accents is True
    with pytest.raises(SettingError, match=r"keep_accents=False contradicts the vocabulary .*ja\.model, trained on "
                                           r"text with its accents \(its pieces say keep_accents=True\)"):
        _random_start(japanese, keep_accents=False)
    # A vocabulary without accented pieces says nothing: either choice is the user's, and not refused.
    assert _random_start(korean).keep_accents is False
    assert _random_start(korean, keep_accents=True).keep_accents is True


def _huggingface_ids(tokenizer, texts):
    import tokenizers

    from albert_tf.checkpoints.huggingface_tokenizer import tokenizer_json

    converted = tokenizers.Tokenizer.from_str(json.dumps(tokenizer_json(tokenizer)))
    return [encoding.ids for encoding in converted.encode_batch(texts, add_special_tokens=False)]


@pytest.mark.parametrize("keep_accents", [False, True])
def test_the_converted_tokenizer_gives_the_models_ids_on_cjk_text(cjk_vocabularies, keep_accents):
    """The tokenizer.json that convert --to=huggingface writes: Korean syllables composed again after stripping
    (tokenizers' Precompiled step alone leaves three-jamo syllables as jamo, <unk> to the model)."""
    texts = JAPANESE + KOREAN + CHINESE + ENGLISH + ["닭 읽 값 앉다 ㄱㅏ \u1100\u1161\u11a8 ｶﾞ"]
    for language, (model, _) in cjk_vocabularies.items():
        if language == "ja" and not keep_accents:
            continue  # refused by every tool: the vocabulary kept its accents
        tokenizer = AlbertTokenizer(str(model), keep_accents=keep_accents)
        assert _huggingface_ids(tokenizer, texts) == tokenizer.encode_batch(texts), language


def _staged_lines(shared_data, relative, count, skip=0):
    lines = [line for line in (shared_data / relative).read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[skip : skip + count]


STAGED = {"ja": "corpus_ja_aozora/corpus_paragraphs.txt", "zh": "corpus_zh_modern/corpus_paragraphs.txt",
          "ko": "corpus_ko_ud_kaist/corpus_sentences.txt"}


@pytest.fixture(scope="module")
def staged_vocabularies(shared_data, tmp_path_factory):
    """{language: (AlbertTokenizer as the tools build it, held-out lines)}: a vocabulary trained with the defaults on
    the first 1,500 lines of each staged corpus, and 300 later lines it never saw."""
    directory = tmp_path_factory.mktemp("staged_vocabularies")
    made = {}
    for language, relative in STAGED.items():
        corpus = directory / f"{language}.txt"
        corpus.write_text("\n".join(_staged_lines(shared_data, relative, 1500)) + "\n", encoding="utf-8")
        stats = train([str(corpus)], str(directory / language), vocab_size=3000, hard_vocab_limit=False,
                      num_threads=1, input_format="paragraphs" if language != "ko" else "sentences")
        made[language] = (AlbertTokenizer(str(directory / f"{language}.model"), keep_accents=stats.keep_accents),
                          _staged_lines(shared_data, relative, 300, skip=3000))
    return made


def test_on_the_staged_corpora_japanese_keeps_accents_and_korean_has_no_unknowns(staged_vocabularies):
    assert [language for language, (tokenizer, _) in staged_vocabularies.items() if tokenizer.keep_accents] == ["ja"]
    korean, held_out = staged_vocabularies["ko"]
    ids = [piece for row in korean.encode_batch(held_out) for piece in row]
    # <unk> only for the rare syllables a 3,000-piece vocabulary of 1,500 sentences never saw (1.1%); stripped
    # text that stayed jamo would make most words <unk>.
    assert ids.count(1) < 0.02 * len(ids)
    assert not any("\u1100" <= char <= "\u11ff" for piece in map(korean.id_to_piece, set(ids)) for char in piece)


def test_the_converted_tokenizer_gives_the_models_ids_on_the_staged_corpora(staged_vocabularies):
    for language, (tokenizer, held_out) in staged_vocabularies.items():
        assert _huggingface_ids(tokenizer, held_out) == tokenizer.encode_batch(held_out), language


def test_served_ids_equal_trained_ids_on_held_out_cjk_text(staged_vocabularies):
    """The in-graph tokenizer a SavedModel serves with, built with the vocabulary's own accent setting."""
    import tensorflow as tf

    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    for language, (tokenizer, held_out) in staged_vocabularies.items():
        served = TFAlbertTokenizer(tokenizer.model_proto, keep_accents=tokenizer.keep_accents)
        assert served(tf.constant(held_out)).to_list() == tokenizer.encode_batch(held_out), language


@pytest.fixture(scope="module")
def cjk_only_vocabularies(tmp_path_factory):
    """{language: model path} of vocabularies that know no ASCII digit or Latin letter: Chinese, Korean."""
    directory = tmp_path_factory.mktemp("cjk_only_vocabularies")
    made = {}
    for language, lines in (("zh", [line for line in CHINESE if "１" not in line]), ("ko", KOREAN)):
        train([_corpus(directory / f"{language}.txt", lines)], str(directory / language), vocab_size=300,
              hard_vocab_limit=False, num_threads=1, user_defined_symbols=[])
        made[language] = directory / f"{language}.model"
    return made


def test_in_graph_offsets_work_with_a_vocabulary_without_latin_pieces(cjk_only_vocabularies):
    """A tagger or span labeler of Chinese-only or Korean-only text exports: offsets are measured against a
    character of the vocabulary's own, and equal the Python alignment's."""
    from test_export import check_offsets

    from albert_tf.export_lib.token_offsets import PieceTable, tokenize_with_offsets
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    texts = {"zh": CHINESE + ["北京 欢迎你！ 他说：“你好吗？”  x 1,2", "鲁迅\u3000是 中国人。"],
             "ko": KOREAN + ["닭볶음탕을  먹었다. ㄱㅏ \u1100\u1161\u11a8 각\u11a8", "값 싼 物 건"]}
    for language, model in cjk_only_vocabularies.items():
        tokenizer = AlbertTokenizer(str(model))
        assert tokenizer.encode("0") == tokenizer.encode("x") and 1 in tokenizer.encode("x")  # no Latin piece
        probe = PieceTable(TFAlbertTokenizer(tokenizer.model_proto)).probe
        assert probe not in "0123456789xqzkjvwbcdfghlmnprstyaeiou", language
        check_offsets(tokenizer, TFAlbertTokenizer(tokenizer.model_proto), texts[language], tokenize_with_offsets)


def test_a_vocabulary_with_no_character_to_measure_against_is_refused_in_one_line(tmp_path):
    from albert_tf.export_lib.token_offsets import PieceTable
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    corpus = _corpus(tmp_path / "kana.txt", ["ひらがなとカタカナだけ。", "ぱぴぷぺぽ、ガギグゲゴ。"])
    train([corpus], str(tmp_path / "kana"), vocab_size=60, hard_vocab_limit=False, num_threads=1,
          user_defined_symbols=[])
    with pytest.raises(ValueError, match=r"^the vocabulary has no piece of an ASCII digit or lower-case letter, a "
                                         r"CJK ideograph or a Hangul syllable with a final consonant; in-graph "
                                         r"offsets need one"):
        PieceTable(TFAlbertTokenizer((tmp_path / "kana.model").read_bytes(), keep_accents=True))


def test_the_vocabulary_tool_reads_segmented_text_as_the_data_tool_tokenizes_it(tmp_path):
    (tmp_path / "segmented.txt").write_text("我 喜欢 自然 语言 。 ALBERT 很 好 。\n吾輩 は 猫 で ある 。\n",
                                            encoding="utf-8")
    stats = VocabularyStats()
    read = list(preprocessed_sentences([str(tmp_path / "segmented.txt")], "paragraphs", stats, keep_accents=True,
                                       pre_segmented=True))
    assert read == ["我喜欢自然语言。", "albert很好。", "吾輩は猫である。"]
