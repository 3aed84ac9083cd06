"""The SentencePiece vocabulary, the Python tokenizer, and the in-graph tokenizer."""

import gzip
import sys
import unicodedata

import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from albert_tf.text.albert_tokenizer import AlbertTokenizer, is_word_start_piece
from albert_tf.text.preprocessing import SCANNED_CODEPOINTS, preprocess_text
from albert_tf.text.sentence_splitter import split_sentences
from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer
from albert_tf.data.vocabulary import train
from text_fixtures import SPECIAL_LINES, train_small_spm, write_corpus


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return train_small_spm(tmp_path_factory)


@pytest.fixture(scope="module")
def tokenizer(spm_model):
    return AlbertTokenizer(str(spm_model))


def test_preprocessing_follows_the_original_order():
    assert preprocess_text("  Hello   World \t\n") == "hello world"
    assert preprocess_text("``Quoted''") == '"quoted"'
    assert preprocess_text("Café Ångström naïve") == "cafe angstrom naive"
    # NFKD also decomposes compatibility characters; the original keeps their result.
    assert preprocess_text("ﬁ ½") == "fi 1⁄2"
    assert preprocess_text("Café", lower_case=False, keep_accents=True) == "Café"
    # Whitespace is collapsed before NFKD, as in the original: a no-break space
    # becomes a space only afterwards and is not collapsed again.
    assert preprocess_text("a\u00a0 b") == "a b"


def test_character_classes_cover_every_plane():
    # preprocessing scans only planes 0-1 for combining marks, whitespace and digits.
    beyond = [cp for cp in range(SCANNED_CODEPOINTS, sys.maxunicode + 1)
              if unicodedata.combining(chr(cp)) or chr(cp).isspace() or chr(cp).isdigit()]
    assert beyond == []


def test_vocabulary_has_albert_ids_and_the_original_symbols(spm_model):
    processor = sentencepiece.SentencePieceProcessor(model_file=str(spm_model))
    assert [processor.id_to_piece(i) for i in range(5)] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    assert all(processor.is_control(i) for i in (2, 3, 4))
    for symbol in ["(", ")", '"', "-", ".", "–", "£", "€"]:
        assert processor.piece_to_id(symbol) not in (0, 1), symbol
    # Trained on preprocessed text: no upper-case pieces.
    assert not any(any(ch.isupper() for ch in processor.id_to_piece(i)) for i in range(5, processor.get_piece_size()))


def test_training_is_reproducible_and_atomic(tmp_path, spm_model):
    corpus = write_corpus(tmp_path / "c.txt", num_documents=30, seed=1)
    models = []
    for _ in range(2):
        train([str(corpus)], str(tmp_path / "vocab"), vocab_size=300, hard_vocab_limit=False, num_threads=1,
              input_sentence_size=200, seed=7, overwrite=True)
        models.append((tmp_path / "vocab.model").read_bytes())
    assert models[0] == models[1]
    # A gzipped corpus is read as it is: the same vocabulary, byte for byte.
    with open(corpus, "rb") as plain, gzip.open(tmp_path / "c.txt.gz", "wb") as compressed:
        compressed.write(plain.read())
    train([str(tmp_path / "c.txt.gz")], str(tmp_path / "vocab"), vocab_size=300, hard_vocab_limit=False, num_threads=1,
          input_sentence_size=200, seed=7, overwrite=True)
    assert (tmp_path / "vocab.model").read_bytes() == models[0]
    with pytest.raises(ValueError, match="too small for vocab_size=50000 .*; pass a smaller vocab_size or "
                                         "hard_vocab_limit=False$") as refused:
        train([str(corpus)], str(tmp_path / "big"), vocab_size=50000, num_threads=1)
    assert "pass a smaller --vocab_size or --hard_vocab_limit=False" in str(refused.value.for_flags())
    assert not list(tmp_path.glob("big*"))
    assert not list(tmp_path.glob(".*staging*"))


def test_foreign_vocabulary_is_refused(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", num_documents=10)
    sentencepiece.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "plain"),
                                             vocab_size=200, hard_vocab_limit=False, minloglevel=2)
    with pytest.raises(ValueError, match="not an ALBERT vocabulary"):
        AlbertTokenizer(str(tmp_path / "plain.model"))
    with pytest.raises(FileNotFoundError, match="nowhere.model: SentencePiece model not found"):
        AlbertTokenizer(str(tmp_path / "nowhere.model"))


def test_digit_comma_pieces_are_split(tokenizer):
    processor = tokenizer.sp
    text = "Prices rose 3.0, 12, and 1,000,000, then 7,5,"
    raw_pieces = processor.encode_as_pieces(tokenizer.preprocess(text))
    pieces = tokenizer.tokenize(text)
    joined = [piece for piece in raw_pieces if len(piece) > 1 and piece.endswith(",") and piece[-2].isdigit()]
    assert joined, "the test text must produce pieces the rule applies to"
    for piece in pieces:
        assert not (len(piece) > 1 and piece.endswith(",") and piece[-2].isdigit()), piece
    # Nothing is lost: the pieces still spell the same text.
    assert "".join(pieces) == "".join(raw_pieces)


def test_word_start_pieces_follow_the_original_rule():
    assert is_word_start_piece("▁the")
    assert is_word_start_piece("<unk>")
    assert is_word_start_piece(",")
    assert is_word_start_piece("12")  # digits are outside a-z: a piece of their own
    assert is_word_start_piece("é")
    assert not is_word_start_piece("ing")
    assert not is_word_start_piece("s")


def real_lines(shared_data, limit=4000):
    path = shared_data / "corpus" / "corpus_paragraphs.txt"
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for _, line in zip(range(200_000), f)]
    step = max(1, len(lines) // limit)
    return lines[::step]


def assert_same_ids(tokenizer, tf_tokenizer, lines):
    python = tokenizer.encode_batch(lines)
    graph = tf_tokenizer(tf.constant(lines)).to_list()
    mismatches = [(line, p, g) for line, p, g in zip(lines, python, graph) if list(p) != g]
    assert not mismatches, f"{len(mismatches)} of {len(lines)} lines differ, first: {mismatches[0]}"


def test_in_graph_tokenizer_matches_python_on_written_text(tokenizer, spm_model):
    tf_tokenizer = TFAlbertTokenizer(spm_model.read_bytes())
    lines = SPECIAL_LINES + [
        "", "   ", "7,", "a,1, b2,c 33,,", ",,,", "3,", "x\u200by", "À" * 50,
        "Tab\tseparated\u2028line\u2029separators\x1c\x1d\x1e\x1f", "Mixed 1,2,3, and 4.5, 6,",
    ]
    assert_same_ids(tokenizer, tf_tokenizer, lines)


def test_in_graph_tokenizer_matches_python_on_real_text(tokenizer, spm_model, shared_data):
    tf_tokenizer = TFAlbertTokenizer(spm_model.read_bytes())
    assert_same_ids(tokenizer, tf_tokenizer, real_lines(shared_data))


def test_in_graph_tokenizer_is_a_graph_of_tf_ops(spm_model):
    tf_tokenizer = TFAlbertTokenizer(spm_model.read_bytes())
    function = tf.function(lambda texts: tf_tokenizer(texts).to_tensor())
    graph = function.get_concrete_function(tf.TensorSpec([None], tf.string)).graph
    assert not [op.type for op in graph.get_operations() if op.type in ("PyFunc", "EagerPyFunc", "PyFuncStateless")]
    assert any("Sentencepiece" in op.type for op in graph.get_operations())
    rebuilt = TFAlbertTokenizer.from_config(tf_tokenizer.get_config())
    np.testing.assert_array_equal(function(tf.constant(["Hello, world 1,"])), rebuilt(tf.constant(["Hello, world 1,"])).to_tensor())


def test_sentence_splitter():
    assert split_sentences('Mr. Smith went to Washington. "Why?" he asked! It was 3 p.m. Then he left.') == [
        "Mr. Smith went to Washington.", '"Why?" he asked!', "It was 3 p.m. Then he left."]
    assert split_sentences("J. R. R. Tolkien wrote books. The U.S. Army came.") == [
        "J. R. R. Tolkien wrote books.", "The U.S. Army came."]
    assert split_sentences("no terminal punctuation") == ["no terminal punctuation"]
    assert split_sentences("  ") == []
