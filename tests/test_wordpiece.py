"""The WordPiece tokenizer of Google's Chinese ALBERTs and every ALBERT that ships a vocab.txt: ids and character
offsets equal to Hugging Face's BertTokenizer (the Rust one, and the Python one where the text is in NFC) on
Chinese, Japanese, Korean and English text and a Unicode fuzz set, with each documented difference shown."""

import unicodedata

import pytest

from albert_tf.data.wordpiece_vocabulary import bert_layout, train
from albert_tf.settings import SettingError
from albert_tf.text.special_ids import SpecialIds
from albert_tf.text.wordpiece_tokenizer import WordPieceTokenizer
from test_tokenization import unicode_fuzz
from text_fixtures import SPECIAL_LINES, random_sentence

WRITTEN = [
    "北京欢迎你！我们今天去公园散步。", "這是繁體中文的句子，鲁迅是作家。", "吾輩は猫である。名前はまだ無い。",
    "パンダとハンダは違う言葉です。ｶﾞｷﾞｸﾞ", "배송이 정말 좋았어요. 대한민국의 수도는 서울이다.",
    "Café déjà vu: naïve coöperation, ΟΔΟΣ Straße.", "Prices rose 3.0, 12, and 1,000,000 units!",
]


def _written_corpus(path):
    import random

    rng = random.Random(0)
    lines = WRITTEN * 20 + [random_sentence(rng) for _ in range(400)] + SPECIAL_LINES * 5
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def vocabularies(tmp_path_factory):
    """{lower_case: vocab.txt} trained with albert_tf's trainer on written CJK and English text."""
    directory = tmp_path_factory.mktemp("wordpiece")
    corpus = _written_corpus(directory / "corpus.txt")
    made = {}
    for lower_case in (True, False):
        made[lower_case] = directory / f"vocab_{lower_case}.txt"
        train([corpus], str(made[lower_case]), vocab_size=900, lower_case=lower_case, min_frequency=1)
    return made


def huggingface_rust_tokenizer(pieces, lower_case, max_input_chars_per_word=200):
    """transformers' BertTokenizer(Fast) pipeline (tokenizers' BertNormalizer, BertPreTokenizer, WordPiece)."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordPiece

    tokenizer = Tokenizer(WordPiece({piece: i for i, piece in enumerate(pieces)}, unk_token="[UNK]",
                                    max_input_chars_per_word=max_input_chars_per_word))
    tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                      strip_accents=None, lowercase=lower_case)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tokenizer


def huggingface_python_ids(vocab_file, lower_case, texts):
    """transformers' Python BertTokenizer (`BertTokenizerLegacy` in transformers 5), special tokens as text."""
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    legacy = BertTokenizerLegacy(str(vocab_file), do_lower_case=lower_case)
    return [legacy.convert_tokens_to_ids(legacy.tokenize(text, split_special_tokens=True)) for text in texts]


def assert_like_huggingface(tokenizer, texts):
    """Every id and offset equal, but on the texts of a documented difference: a capital sigma lowercased (the
    Rust tokenizer never makes it final) and, for the Python tokenizer, text not in NFC."""
    if tokenizer.lower_case:
        texts = [text for text in texts if "\u03a3" not in text]
    rust = huggingface_rust_tokenizer(tokenizer.pieces, tokenizer.lower_case)
    encodings = rust.encode_batch(texts, add_special_tokens=False)
    for text, encoding in zip(texts, encodings):
        ids, starts, ends = tokenizer.encode_with_offsets(text)
        assert ids == encoding.ids, text
        assert list(zip(starts, ends)) == [tuple(offsets) for offsets in encoding.offsets], text
    nfc = [text for text in texts if unicodedata.is_normalized("NFC", text)]
    assert huggingface_python_ids(tokenizer.source, tokenizer.lower_case, nfc) == tokenizer.encode_batch(nfc)


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_ids_and_offsets_equal_hugging_faces_on_written_text_and_a_fuzz_set(vocabularies, lower_case):
    tokenizer = WordPieceTokenizer(str(vocabularies[lower_case]), lower_case=lower_case)
    texts = WRITTEN + SPECIAL_LINES + unicode_fuzz(800, seed=21) + ["", " ", "\x00a\ufffdb\x07", "a\u2028b\u0085c"]
    ids = [piece for row in tokenizer.encode_batch(WRITTEN) for piece in row]
    assert ids.count(tokenizer.unk_id) < 0.05 * len(ids)  # the vocabulary knows the text: the test means something
    assert_like_huggingface(tokenizer, texts)


STAGED = ["corpus_ja_aozora/corpus_paragraphs.txt", "corpus_zh_modern/corpus_paragraphs.txt",
          "corpus_ko_ud_kaist/corpus_sentences.txt", "corpus/corpus_paragraphs.txt"]


def _staged_lines(shared_data, relative, count, skip=0):
    lines = [line for line in (shared_data / relative).read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[skip : skip + count]


@pytest.mark.slow
@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_ids_and_offsets_equal_hugging_faces_on_the_staged_corpora(shared_data, tmp_path, lower_case):
    """A vocabulary trained on Japanese, Chinese, Korean and English text; 300 held-out lines of each, and the
    staged evaluation sets' texts (CMRC 2018 contexts, KLUE-NER sentences)."""
    tokenizer, texts = staged_vocabulary_and_texts(shared_data, tmp_path, lower_case)
    assert_like_huggingface(tokenizer, texts)


def staged_vocabulary_and_texts(shared_data, tmp_path, lower_case):
    """(a WordPieceTokenizer of an 8,000-line vocabulary trained on 1,000 lines of each staged corpus, texts it
    never saw: 300 later lines of each corpus and 200 CMRC 2018 dev contexts)."""
    import json

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(line for relative in STAGED for line in _staged_lines(shared_data, relative, 1000)),
                      encoding="utf-8")
    train([str(corpus)], str(tmp_path / "vocab.txt"), vocab_size=8000, lower_case=lower_case)
    tokenizer = WordPieceTokenizer(str(tmp_path / "vocab.txt"), lower_case=lower_case)
    held_out = [line for relative in STAGED for line in _staged_lines(shared_data, relative, 300, skip=3000)]
    cmrc = json.loads((shared_data / "cmrc2018" / "cmrc2018_dev.json").read_text(encoding="utf-8"))
    contexts = [paragraph["context"] for article in cmrc["data"] for paragraph in article["paragraphs"]][:200]
    return tokenizer, held_out + contexts


@pytest.fixture
def greek_and_long():
    """A vocabulary made by hand for the documented differences."""
    pieces = bert_layout(["οδος", "οδοσ", "a", "##a", "cafe", "café", "e", "##\u0301", "[", "]", "sep", "x"])
    return WordPieceTokenizer(pieces=pieces, lower_case=True), WordPieceTokenizer(pieces=pieces, lower_case=False)


def test_the_documented_differences_from_hugging_face(greek_and_long, tmp_path):
    uncased, cased = greek_and_long
    rust = huggingface_rust_tokenizer(uncased.pieces, lower_case=True)
    # str.lower gives a word-final capital sigma as ς; the Rust tokenizer lowercases letter by letter.
    assert uncased.tokenize("ΟΔΟΣ") == ["οδος"] and rust.encode("ΟΔΟΣ", add_special_tokens=False).tokens == ["οδοσ"]
    # Words over 100 characters: [UNK] to Hugging Face, pieces to the original (its limit is 200).
    word = "a" * 150
    assert uncased.tokenize(word) == ["a"] + ["##a"] * 149
    assert rust.encode(word, add_special_tokens=False).ids == uncased.encode(word)  # the same limit: the same
    default = huggingface_rust_tokenizer(uncased.pieces, lower_case=True, max_input_chars_per_word=100)
    assert default.encode(word, add_special_tokens=False).tokens == ["[UNK]"]
    assert WordPieceTokenizer(pieces=uncased.pieces, max_input_chars_per_word=100).tokenize(word) == ["[UNK]"]
    assert uncased.tokenize("a" * 201) == ["[UNK]"]
    # The Python BertTokenizer composes text to NFC first: an e and a combining acute stay two characters here.
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("".join(piece + "\n" for piece in cased.pieces), encoding="utf-8")
    decomposed = "cafe\u0301"
    assert cased.tokenize(decomposed) == ["cafe", "##\u0301"]
    assert huggingface_python_ids(vocab_file, False, [decomposed]) == [[cased.piece_to_id("café")]]
    # A literal [SEP] is text to the original.
    assert uncased.tokenize("x [SEP] x") == ["x", "[", "sep", "]", "x"]


def test_special_ids_come_from_the_vocabulary(greek_and_long):
    uncased, _ = greek_and_long
    assert uncased.special_ids == SpecialIds(pad=0, unk=100, cls=101, sep=102, mask=103)
    moved = WordPieceTokenizer(pieces=["[UNK]", "[SEP]", "[CLS]", "[MASK]", "[PAD]", "x", "##y"])
    assert moved.special_ids == SpecialIds(pad=4, unk=0, cls=2, sep=1, mask=3)
    assert moved.word_start_table.tolist() == [True, True, True, True, True, True, False]  # `##` continues a word
    with pytest.raises(ValueError, match=r"^<pieces>: not a BERT WordPiece vocabulary: no \[CLS\], \[MASK\] line"):
        WordPieceTokenizer(pieces=["[PAD]", "[UNK]", "[SEP]", "x"])


def test_the_trainer_writes_berts_layout_once_complete(vocabularies, tmp_path):
    pieces = vocabularies[True].read_text(encoding="utf-8").splitlines()
    assert pieces[0] == "[PAD]" and pieces[1:100] == [f"[unused{i}]" for i in range(1, 100)]
    assert pieces[100:104] == ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] and len(pieces) == len(set(pieces))
    assert "北" in pieces and any(piece.startswith("##") for piece in pieces)
    with pytest.raises(SettingError, match="exists"):
        train([str(tmp_path / "unused.txt")], str(vocabularies[True]))
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="no text in"):
        train([str(tmp_path / "empty.txt")], str(tmp_path / "never.txt"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["empty.txt"]  # nothing half-written


def assert_in_graph_equals_python(tokenizer, texts):
    """The in-graph tokenizer's ids and offsets (bytes, read here as characters) are the Python tokenizer's."""
    import tensorflow as tf

    from albert_tf.text.tf_wordpiece_tokenizer import TFWordPieceTokenizer

    in_graph = TFWordPieceTokenizer(tokenizer.pieces, lower_case=tokenizer.lower_case,
                                    strip_accents=tokenizer.strip_accents,
                                    max_input_chars_per_word=tokenizer.max_input_chars_per_word)
    ids, starts, ends = in_graph.tokenize_with_offsets(tf.constant(texts))
    assert in_graph(tf.constant(texts)).to_list() == ids.to_list()
    for text, row_ids, row_starts, row_ends in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        raw = text.encode("utf-8")
        characters = [[len(raw[:offset].decode("utf-8")) for offset in offsets] for offsets in (row_starts, row_ends)]
        assert (row_ids, *characters) == tuple(tokenizer.encode_with_offsets(text)), text


@pytest.mark.parametrize("lower_case, strip_accents", [(True, None), (False, None), (True, False), (False, True)])
def test_the_in_graph_tokenizer_gives_the_python_ids_and_offsets(vocabularies, lower_case, strip_accents):
    """Final sigmas and letters that lowercase to two characters (a row lowercased whole, or letter by letter),
    removed controls between letters, words over the limit, Python's extra whitespace, a fuzz set."""
    tokenizer = WordPieceTokenizer(str(vocabularies[lower_case]), lower_case=lower_case, strip_accents=strip_accents)
    texts = (WRITTEN + SPECIAL_LINES + unicode_fuzz(600, seed=23)
             + ["", " ", "ΟΔΟΣ ΑΣ.Β ΑΣ\x07Β", "İstanbul ΣΑΣ", "a" * 250, "x\u2028y\u0085z", "北京ΑΣ中"])
    assert_in_graph_equals_python(tokenizer, texts)


@pytest.mark.slow
def test_the_in_graph_tokenizer_gives_the_python_ids_and_offsets_on_the_staged_corpora(shared_data, vocabularies):
    held_out = [line for relative in STAGED for line in _staged_lines(shared_data, relative, 200, skip=3000)]
    for lower_case in (True, False):
        assert_in_graph_equals_python(WordPieceTokenizer(str(vocabularies[lower_case]), lower_case=lower_case),
                                      held_out)


def test_a_repeated_line_takes_its_last_id_as_the_original_and_hugging_face_do(tmp_path):
    """The original's load_vocab and transformers' assign a dict line by line: a piece listed twice is the later
    line's id, in Python and in-graph alike."""
    import tensorflow as tf

    from albert_tf.text.tf_wordpiece_tokenizer import TFWordPieceTokenizer

    pieces = bert_layout(["x", "##y", "x", "z"])
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(pieces) + "\n", encoding="utf-8")
    tokenizer = WordPieceTokenizer(str(vocab_file))
    later = len(pieces) - 2
    assert tokenizer.encode("xy z x") == [later, later - 1, later + 1, later]
    assert huggingface_python_ids(vocab_file, True, ["xy z x"]) == [tokenizer.encode("xy z x")]
    in_graph = TFWordPieceTokenizer(pieces)(tf.constant(["xy z x"]))
    assert in_graph.to_list() == [tokenizer.encode("xy z x")]


def test_the_training_tool_writes_a_vocabulary_in_berts_layout(tmp_path):
    """albert-train-wordpiece: BERT's reserved lines, then pieces the tokenizer finds the written text in; the
    summary says the size and casing; an existing file is kept unless --overwrite."""
    import subprocess
    import sys

    corpus = _written_corpus(tmp_path / "corpus.txt")
    output = tmp_path / "vocab" / "vocab.txt"
    command = [sys.executable, "-m", "albert_tf.train_wordpiece", f"--input={corpus}", f"--output_file={output}",
               "--vocab_size=5000", "--nodo_lower_case", "--min_frequency=1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = output.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "[PAD]" and lines[100:104] == ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert f"Wrote {output} ({len(lines):,} lines, cased)" in result.stdout
    assert "fewer pieces than --vocab_size" in result.stdout  # 5,000 is more than this corpus holds
    tokenizer = WordPieceTokenizer(str(output), lower_case=False)
    ids = [piece for text in WRITTEN for piece in tokenizer.encode(text)]
    assert ids.count(tokenizer.unk_id) == 0 and tokenizer.encode("パンダ") != tokenizer.encode("ハンダ")
    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert again.returncode != 0 and "exists" in again.stderr.strip().splitlines()[-1]


def test_the_keras_preprocessor_takes_a_wordpiece_vocabulary(vocabularies, tmp_path):
    """AlbertPreprocessor.from_vocab_file / from_model_dir with a vocab.txt: the Python tokenizer's ids packed
    with the vocabulary's [CLS] and [SEP], pairs too; its config rebuilds it."""
    import shutil

    import numpy as np
    import tensorflow as tf

    import albert_tf
    from albert_tf.text.packing import pack_batch

    vocab_file = str(vocabularies[False])
    tokenizer = WordPieceTokenizer(vocab_file, lower_case=False)
    preprocessor = albert_tf.AlbertPreprocessor.from_vocab_file(vocab_file, seq_length=24, lower_case=False)
    second = ["서울", "", "Straße"] + [""] * (len(WRITTEN) - 3)
    expected = pack_batch(tokenizer, WRITTEN, second, 24)
    got = preprocessor((WRITTEN, second))
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
        np.testing.assert_array_equal(got[name].numpy(), expected[name])
    assert got["input_word_ids"].numpy()[0, 0] == tokenizer.special_ids.cls == 101
    clone = albert_tf.AlbertPreprocessor.from_config(preprocessor.get_config())
    np.testing.assert_array_equal(clone(tf.constant(WRITTEN))["input_word_ids"].numpy(),
                                  pack_batch(tokenizer, WRITTEN, None, 24)["input_word_ids"])
    (tmp_path / "model").mkdir()
    shutil.copy(vocab_file, tmp_path / "model" / "vocab.txt")
    from_directory = albert_tf.AlbertPreprocessor.from_model_dir(str(tmp_path / "model"), seq_length=24,
                                                                 lower_case=False)
    assert from_directory.vocabulary == "wordpiece"
    np.testing.assert_array_equal(from_directory(tf.constant(WRITTEN))["input_word_ids"].numpy(),
                                  pack_batch(tokenizer, WRITTEN, None, 24)["input_word_ids"])


def test_a_wordpiece_model_directory_gives_its_keras_model_a_wordpiece_preprocessor(vocabularies, tmp_path):
    """AlbertClassifier.from_preset(directory) of a model that keeps a vocab.txt takes raw text with it."""
    import numpy as np

    import albert_tf
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.networks.albert_encoder import AlbertEncoder
    from albert_tf.text.packing import pack_batch

    vocab_file = str(vocabularies[True])
    tokenizer = WordPieceTokenizer(vocab_file, lower_case=True)
    config = AlbertConfig.from_dict({**AlbertConfig.from_name_or_path("albert_tiny").to_dict(),
                                     "vocab_size": tokenizer.vocab_size})
    write_model_dir(albert_tf.AlbertClassifier(AlbertEncoder(config), num_labels=2), tmp_path / "classifier",
                    files={"vocab.txt": vocab_file}, vocabulary="wordpiece", max_seq_length=20, lower_case=True)
    classifier = albert_tf.AlbertClassifier.from_preset(str(tmp_path / "classifier"))
    assert classifier.preprocessor.vocabulary == "wordpiece"
    np.testing.assert_array_equal(classifier.preprocessor(WRITTEN)["input_word_ids"].numpy(),
                                  pack_batch(tokenizer, WRITTEN, None, 20)["input_word_ids"])
