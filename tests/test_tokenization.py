"""The SentencePiece vocabulary, the Python tokenizer, and the in-graph tokenizer."""

import gzip
import random
import sys
import unicodedata

import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from albert_tf.text import albert_normalization, spm_proto
from albert_tf.text.albert_normalization import albert_model_proto
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


@pytest.fixture(scope="module")
def cased_spm_model(tmp_path_factory):
    """A cased vocabulary trained with its accents kept."""
    return train_small_spm(tmp_path_factory, name="cased_spm", lower_case=False, keep_accents=True)


def test_preprocessing_follows_the_original_order():
    assert preprocess_text("  Hello   World \t\n") == "hello world"
    assert preprocess_text("``Quoted''") == "``quoted''"  # the original keeps them
    assert preprocess_text("``Quoted''", rewrite_quotes=True) == '"quoted"'  # Hugging Face's rule
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
    # The in-graph tokenizer's map scans planes 0-2 for what NFKD or lowercasing changes and for cased letters.
    beyond = [cp for cp in range(albert_normalization.SCANNED_CODEPOINTS, sys.maxunicode + 1)
              if not unicodedata.is_normalized("NFKD", chr(cp)) or chr(cp).lower() != chr(cp)
              or (" " + chr(cp) + "\u03a3").lower()[-1] == "\u03c2"]  # cased: a sigma after it ends a word
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
    # A truncated one: the file and the line reached, in the reader's words (not SentencePiece's).
    (tmp_path / "cut.txt.gz").write_bytes((tmp_path / "c.txt.gz").read_bytes()[:2000])
    with pytest.raises(ValueError, match=r"^\S*cut\.txt\.gz: the gzip data breaks off after line [1-9]"):
        train([str(tmp_path / "cut.txt.gz")], str(tmp_path / "cut"), vocab_size=300, num_threads=1)
    with pytest.raises(ValueError, match="too small for vocab_size=50000 .*; pass a smaller vocab_size or "
                                         "hard_vocab_limit=False$") as refused:
        train([str(corpus)], str(tmp_path / "big"), vocab_size=50000, num_threads=1)
    assert "pass a smaller --vocab_size or --hard_vocab_limit=False" in str(refused.value.for_flags())
    assert not list(tmp_path.glob("big*"))
    assert not list(tmp_path.glob(".*staging*"))


def test_the_summary_names_the_characters_character_coverage_left_out(tmp_path):
    """A 3,000-piece vocabulary from a 430 KB corpus once kept only the digits 1 and 8, silently: the summary
    names what became <unk>, exactly the characters the model cannot spell."""
    corpus = write_corpus(tmp_path / "c.txt", num_documents=30, seed=1)
    stats = train([str(corpus)], str(tmp_path / "vocab"), vocab_size=300, hard_vocab_limit=False, num_threads=1,
                  character_coverage=0.9995)
    processor = sentencepiece.SentencePieceProcessor(model_file=str(tmp_path / "vocab.model"))
    dropped = dict(stats.dropped_characters)
    assert "東" in dropped and len(dropped) > 5
    assert {char for char in stats.character_counts if processor.unk_id() in processor.encode(char)} == set(dropped)
    [line] = [line for line in stats.problems() if "character_coverage" in line]
    assert line.startswith(f"--character_coverage left {len(dropped)} character(s) out of the vocabulary (each "
                           "becomes <unk>): '東' 1, ")
    assert line.endswith(f" and {len(dropped) - 5} more; {sum(dropped.values())} of the text's "
                         f"{stats.characters_counted:,} characters (0.050%)")
    # Every character kept: nothing to say.
    kept = train([str(corpus)], str(tmp_path / "vocab"), vocab_size=300, hard_vocab_limit=False, num_threads=1,
                 character_coverage=1.0, overwrite=True)
    assert kept.dropped_characters == [] and not any("character_coverage" in line for line in kept.problems())


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


RELEASED_VOCABULARY = ("albert_base_v2_release", "30k-clean.model")


def released_tokenizer(shared_data):
    path = shared_data.joinpath(*RELEASED_VOCABULARY)
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return AlbertTokenizer(str(path))


def original_is_start_piece(piece):
    """create_pretraining_data.py's `_is_start_piece_sp` as it runs under Python 3, where its "€" and "£"
    entries are UTF-8 bytes and equal no character of a piece."""
    special_pieces = set('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')
    special_pieces.add("€".encode("utf-8"))
    special_pieces.add("£".encode("utf-8"))
    english_chars = set("abcdefghijklmnopqrstuvwxyz")
    return (piece.startswith("▁") or piece.startswith("<") or piece in special_pieces
            or not all(char.lower() in english_chars.union(special_pieces) for char in piece))


def test_word_start_table_is_the_originals_on_every_piece(tokenizer):
    made_up = ["€", "£", "€s", "x£", "€.", "s€", "**", "'s", "!!", "ǅ", "İ", "ß", "<x", "▁", "(", "£5"]
    assert [is_word_start_piece(piece) for piece in made_up] == [original_is_start_piece(p) for p in made_up]
    assert is_word_start_piece("€s") and is_word_start_piece("x£")  # no longer continuations
    pieces = [tokenizer.id_to_piece(i) for i in range(tokenizer.vocab_size)]
    np.testing.assert_array_equal(tokenizer.word_start_table, [original_is_start_piece(p) for p in pieces])


def test_word_start_table_is_the_originals_on_the_released_vocabulary(shared_data):
    released = released_tokenizer(shared_data)
    pieces = [released.id_to_piece(i) for i in range(released.vocab_size)]
    expected = np.array([original_is_start_piece(piece) for piece in pieces])
    assert len(pieces) == 30000 and not expected.all() and expected.any()
    np.testing.assert_array_equal(released.word_start_table, expected)


def test_random_replacements_draw_from_every_id(tokenizer):
    # The original draws from its whole vocabulary (`vocab_words[rng.randint(0, len(vocab_words) - 1)]`).
    np.testing.assert_array_equal(tokenizer.random_replacement_ids, np.arange(tokenizer.vocab_size))


def original_digit_comma_split(processor, pieces, python2=False):
    """tokenization.py `encode_pieces`' fix-up of `<digit>,` pieces. Its test for the '▁' that re-encoding
    adds (`piece[0] != SPIECE_UNDERLINE and cur_pieces[0][0] == SPIECE_UNDERLINE`) compares str with the
    bytes SPIECE_UNDERLINE under Python 3 and is never true; only under Python 2 does it drop that '▁'."""
    result = []
    for piece in pieces:
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            cur_pieces = processor.encode_as_pieces(piece[:-1].replace("▁", ""))
            if python2 and piece[0] != "▁" and cur_pieces[0][0] == "▁":
                cur_pieces = cur_pieces[1:] if len(cur_pieces[0]) == 1 else [cur_pieces[0][1:]] + cur_pieces[1:]
            result.extend(cur_pieces + [piece[-1]])
        else:
            result.append(piece)
    return result


DIGIT_COMMA_TEXTS = ["In 2010, the river rose.", "Prices rose 3.0, 12, and 1,000,000, then 7,5,",
                     "a,1, b2,c 33,,", "Mixed 1,2,3, and 4.5, 6,", "abc12, x", "1999, 2000, 2001, 12,345,678,"]


def test_digit_comma_split_drops_the_added_underline_inside_a_word(tokenizer):
    """albert_tf follows the original's intent (Python 2) on a vocabulary with mid-word `<digit>,` pieces;
    the original run under Python 3 differs there by an extra '▁' only."""
    processor = tokenizer.sp
    mid_word = [p for p in map(processor.id_to_piece, range(tokenizer.vocab_size))
                if len(p) > 1 and p.endswith(",") and p[-2].isdigit() and not p.startswith("▁")]
    assert mid_word, "the small vocabulary must have `<digit>,` pieces that continue a word"
    differs = 0
    for text in DIGIT_COMMA_TEXTS:
        raw = processor.encode_as_pieces(tokenizer.preprocess(text))
        intended = original_digit_comma_split(processor, raw, python2=True)
        python3 = original_digit_comma_split(processor, raw)
        assert tokenizer.encode(text) == [processor.piece_to_id(piece) for piece in intended], text
        def without_underlines(pieces):
            return [piece.replace("▁", "") for piece in pieces if piece != "▁"]

        assert without_underlines(python3) == without_underlines(intended)
        differs += intended != python3
    assert differs > 0


def test_digit_comma_split_is_the_originals_on_the_released_vocabulary(shared_data):
    released = released_tokenizer(shared_data)
    processor = released.sp
    assert released.tokenize("in 2010, the") == ["▁in", "▁2010", ",", "▁the"]
    digit_comma = [p for p in map(processor.id_to_piece, range(released.vocab_size))
                   if len(p) > 1 and p.endswith(",") and p[-2].isdigit()]
    # Why Python 2 and 3 agree on it: no `<digit>,` piece continues a word.
    assert len(digit_comma) == 141 and all(piece.startswith("▁") for piece in digit_comma)
    texts = DIGIT_COMMA_TEXTS + [piece.replace("▁", " ") + " x" for piece in digit_comma]
    for text in texts:
        raw = processor.encode_as_pieces(released.preprocess(text))
        expected = [processor.piece_to_id(piece) for piece in original_digit_comma_split(processor, raw)]
        assert released.encode(text) == expected, text


def assert_same_ids(tokenizer, tf_tokenizer, lines, chunk=2000):
    """In chunks: 52,622 paragraphs at once held a gigabyte that the test process never gave back."""
    python = tokenizer.encode_batch(lines)
    graph = [ids for start in range(0, len(lines), chunk)
             for ids in tf_tokenizer(tf.constant(lines[start:start + chunk])).to_list()]
    mismatches = [(line, p, g) for line, p, g in zip(lines, python, graph) if list(p) != g]
    assert not mismatches, f"{len(mismatches)} of {len(lines)} lines differ, first: {mismatches[0]}"


# Texts where the in-graph tokenizer's character map must look past one character: a Hangul syllable
# and a final consonant, compatibility jamo, halfwidth jamo and the halves of an Oriya vowel sign
# compose; the capital sigma lowercases by its neighbours; ties between segmentations of equal
# score fall after unknown characters and user-defined symbols as SentencePiece's do.
CONTEXT_TEXTS = [
    "가\u11a8", "ㅋㅋㅠㅠ", "ㄱㅏ", "\u1100\u1161\u11a8", "\uffa1\uffc2", "\u0b47\u0b3e", "ΟΔΟΣ", "Σ", "Σ = 1",
    "ΑΣ.Β", "(Σ)", "x Σ", "1Σ", "-Σ", "Σ.", "ΘΑΛΑΣΣΑ", "ΑΣΣ", "ΣΣΣΑ", "ΑΣ'Β", "本Σ", "Σωκράτης ΚΟΣΜΟΣ",
    "nnn", "☃ nnn 888", "£999", "a€999", "x–000 ‘’ nnn", "🤖 1,888,888, 000",
]


def test_in_graph_tokenizer_matches_python_on_written_text(tokenizer, spm_model):
    tf_tokenizer = TFAlbertTokenizer(spm_model.read_bytes())
    lines = SPECIAL_LINES + CONTEXT_TEXTS + [
        "", "   ", "7,", "a,1, b2,c 33,,", ",,,", "3,", "x\u200by", "À" * 50,
        "Tab\tseparated\u2028line\u2029separators\x1c\x1d\x1e\x1f", "Mixed 1,2,3, and 4.5, 6,",
    ]
    assert_same_ids(tokenizer, tf_tokenizer, lines)


@pytest.fixture(scope="module")
def corpus_paragraphs(shared_data):
    """Every paragraph of the shared 14 MB corpus (52,622)."""
    text = (shared_data / "corpus" / "corpus_paragraphs.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line]


def test_in_graph_tokenizer_matches_python_on_every_corpus_paragraph(tokenizer, spm_model, corpus_paragraphs):
    assert_same_ids(tokenizer, TFAlbertTokenizer(spm_model.read_bytes()), corpus_paragraphs)


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_in_graph_tokenizer_matches_python_on_every_corpus_paragraph_with_the_released_vocabulary(
        shared_data, corpus_paragraphs, lower_case):
    model_proto = released_tokenizer(shared_data).model_proto
    assert_same_ids(AlbertTokenizer(model_proto=model_proto, lower_case=lower_case),
                    TFAlbertTokenizer(model_proto, lower_case=lower_case), corpus_paragraphs)


FUZZ_LETTERS = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZàáâãäåæçèéêëìíîïñòóôõöøùúûüýÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑ"
                "ÒÓÔÕÖØÙÚÛÜÝßẞŒœŠšŽžŸĀāĞğİıŁłŐőŘřŞşŮůǅǈǋабвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧ"
                "ШЩЪЫЬЭЮЯαβγδεζηθικλμνξοπρστυφχψωςάέήίόύώϊϋΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΤΥΦΧΨΩΆΈΉΊΌΎΏ")
FUZZ_POOLS = {
    "combining marks": [chr(c) for c in range(0x300, 0x370)] + ["\u0483", "\u05b4", "\u064b", "\u0651", "\u20d7"],
    "full-width forms": [chr(c) for c in range(0xFF01, 0xFF5F)] + ["\u3000", "\uffe0", "\uffe5"],
    "ligatures": list("ﬀﬁﬂﬃﬄﬅﬆĲĳǄǅǆǇǈǉǊǋǌŉ™℡㎏㎞½¼¾⅓①⑴⒜Ⅻⅻ²³¹ªºµ"),
    "emoji": ["😀", "🎉", "👍🏽", "👨\u200d👩\u200d👧", "❤️", "🇫🇷", "🤖", "🔥", "✔", "☃",
              "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"],
    "right-to-left": ["שלום", "עולם", "مرحبا", "بالعالم", "\u200f", "\u200e", "\u202b", "\u202c", "\u0660\u0661",
                      "ﻻ", "ﷺ"],
    "control characters": [chr(c) for c in range(1, 32)] + ["\x7f", "\x85", "\x8f", "\x9f", "\u200b", "\u200c",
                                                             "\u200d", "\u2028", "\u2029", "\ufeff", "\u00ad",
                                                             "\u2060"],
    "quotes": ["``", "''", "`", "'", '"', "'''", "```", "“", "”", "‘", "’", "｀", "＇", "«", "»"],
    "punctuation": list(".,;:!?()[]{}-–—…/\\@#$%^&*+=<>|~£€¥§•·"),
    "letters": list(FUZZ_LETTERS),
}
FUZZ_SPACES = [" ", "  ", "\t", "\n", "\u00a0", "\u2003", "\u3000", "\u2009", "\u202f", "\x1c"]
FUZZ_GREEK_WORDS = ["ΟΔΟΣ", "ΚΟΣΜΟΣ", "ΘΑΛΑΣΣΑ", "Σωκράτης", "ΣΟΦΙΑ", "Σ", "ΣΣ", "λόγος", "ΑΣΤΥ", "ΌΣΟΣ", "ΙΣΟΣ"]


def unicode_fuzz(count, seed):
    """Seeded texts mixing letters of three scripts in both cases with and without accents, combining marks,
    full-width forms, ligatures, numbers with commas, emoji, right-to-left text, control characters,
    quotes and punctuation, joined by nothing or by any whitespace. A Greek word with a capital sigma
    stands between spaces: the sigma's other contexts are `CONTEXT_TEXTS`' and albert_normalization's."""
    rng = random.Random(seed)
    pools = list(FUZZ_POOLS.values())

    def word():
        kind = rng.randrange(len(pools) + 2)
        if kind == len(pools):  # a number, often with thousands separators and a trailing comma
            value = rng.randrange(10 ** rng.randint(1, 10))
            return (f"{value:,}" if rng.random() < 0.6 else str(value)) + rng.choice(["", "", ",", ",,", ".5", "0,"])
        if kind == len(pools) + 1:  # a letter and its combining marks
            return rng.choice(FUZZ_LETTERS) + "".join(rng.choices(FUZZ_POOLS["combining marks"], k=rng.randint(1, 3)))
        return "".join(rng.choices(pools[kind], k=rng.randint(1, 6)))

    texts = []
    for _ in range(count):
        parts = [f" {rng.choice(FUZZ_GREEK_WORDS)} " if rng.random() < 0.1
                 else word() + rng.choice(["", "", " ", rng.choice(FUZZ_SPACES)]) for _ in range(rng.randint(1, 12))]
        texts.append("".join(parts))
    return texts


SWITCHES = [(True, False, False), (True, False, True), (True, True, False), (True, True, True),
            (False, True, False), (False, True, True), (False, False, False), (False, False, True)]


@pytest.mark.parametrize("lower_case, keep_accents, rewrite_quotes", SWITCHES)
def test_in_graph_tokenizer_matches_python_on_a_unicode_fuzz_set(spm_model, cased_spm_model, lower_case,
                                                                  keep_accents, rewrite_quotes):
    """Every combination of the switches, on the vocabulary of that casing (a cased one kept its accents)."""
    model_proto = (spm_model if lower_case else cased_spm_model).read_bytes()
    switches = {"lower_case": lower_case, "keep_accents": keep_accents, "rewrite_quotes": rewrite_quotes}
    texts = unicode_fuzz(1500, seed=len(SWITCHES) + SWITCHES.index((lower_case, keep_accents, rewrite_quotes)))
    python = AlbertTokenizer(model_proto=model_proto, **switches)
    assert_same_ids(python, TFAlbertTokenizer(model_proto, **switches), texts + CONTEXT_TEXTS)
    # SentencePiece's own Python encoder runs the copy the same way; the `<digit>,` fix-up is the tokenizer's.
    copy = sentencepiece.SentencePieceProcessor(model_proto=albert_model_proto(model_proto, **switches))
    assert [python._split_digit_commas(ids) for ids in copy.encode(texts)] == python.encode_batch(texts)


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_in_graph_tokenizer_matches_python_on_a_unicode_fuzz_set_with_the_released_vocabulary(shared_data,
                                                                                               lower_case):
    model_proto = released_tokenizer(shared_data).model_proto
    assert_same_ids(AlbertTokenizer(model_proto=model_proto, lower_case=lower_case),
                    TFAlbertTokenizer(model_proto, lower_case=lower_case), unicode_fuzz(3000, seed=1) + CONTEXT_TEXTS)


def test_the_copy_changes_only_the_normalization_and_the_user_defined_scores(spm_model):
    model_proto = spm_model.read_bytes()
    copy = albert_model_proto(model_proto)
    assert albert_model_proto(model_proto) is copy  # made once per model and switches
    before, after = spm_proto.pieces(model_proto), spm_proto.pieces(copy)
    assert [(piece, piece_type) for piece, piece_type, _ in before] == [(p, t) for p, t, _ in after]
    for (piece, piece_type, score), (_, _, new_score) in zip(before, after):
        if piece_type != spm_proto.USER_DEFINED:
            assert new_score == score, piece
    assert spm_proto.precompiled_charsmap(copy) != spm_proto.precompiled_charsmap(model_proto)
    for number in (3, 4, 5):  # add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces
        assert spm_proto.normalizer_flag(copy, number) == spm_proto.normalizer_flag(model_proto, number)


@pytest.mark.filterwarnings("ignore:.*tf.lite.Interpreter is deprecated:UserWarning")  # LiteRT's is not pinned
def test_in_graph_tokenizer_converts_to_tensorflow_lite(tokenizer, spm_model):
    """Builtin ops and tensorflow-text's custom op only, and the same ids through the interpreter."""
    import tensorflow_text as tf_text
    from tensorflow.lite.python.interpreter import InterpreterWithCustomOps

    tf_tokenizer = TFAlbertTokenizer(spm_model.read_bytes())

    class Tokenize(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, texts):
            ids = tf_tokenizer(texts)
            return {"ids": ids.flat_values, "row_splits": ids.row_splits}

    module = Tokenize()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.__call__.get_concrete_function()], module)
    converter.allow_custom_ops = True
    interpreter = InterpreterWithCustomOps(model_content=converter.convert(),
                                           custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS)
    texts = SPECIAL_LINES + CONTEXT_TEXTS
    result = interpreter.get_signature_runner()(texts=np.array(texts))
    ids = tf.RaggedTensor.from_row_splits(result["ids"], result["row_splits"]).to_list()
    assert ids == tokenizer.encode_batch(texts)


def test_in_graph_tokenizer_is_a_graph_of_tf_ops(spm_model):
    tf_tokenizer = TFAlbertTokenizer(spm_model.read_bytes())
    function = tf.function(lambda texts: tf_tokenizer(texts).to_tensor())
    graph = function.get_concrete_function(tf.TensorSpec([None], tf.string)).graph
    assert not [op.type for op in graph.get_operations() if op.type in ("PyFunc", "EagerPyFunc", "PyFuncStateless")]
    assert any("Sentencepiece" in op.type for op in graph.get_operations())
    rebuilt = TFAlbertTokenizer.from_config(tf_tokenizer.get_config())
    np.testing.assert_array_equal(function(tf.constant(["Hello, world 1,"])), rebuilt(tf.constant(["Hello, world 1,"])).to_tensor())


def original_preprocess(text, lower_case=True, keep_accents=False, rewrite_quotes=False):
    """The oracle: the original's tokenization.py `preprocess_text` (collapse whitespace, NFKD and drop
    combining marks, lowercase; `` and '' untouched). `rewrite_quotes` adds Hugging Face's replacement where
    its AlbertTokenizer does it, right after the whitespace step."""
    text = " ".join(text.strip().split())
    if rewrite_quotes:
        text = text.replace("``", '"').replace("''", '"')
    if not keep_accents:
        text = "".join(char for char in unicodedata.normalize("NFKD", text) if not unicodedata.combining(char))
    return text.lower() if lower_case else text


QUOTE_TEXTS = [
    "he said ``hello'' to me", "``Quoted,'' she said -- ``twice''.", "a ``` b '''' c", "`` ''", "'''", "``",
    "it's a 'single' and ``double`` mix''", "  ``  spaced ''  ", "\uff40\uff40full-width\u2019\u2019 quotes",
    "``Café'' ``naïve''", "x``y''z", "\u00b4\u00b4acute`` ''",
]
WRITTEN_TEXTS = SPECIAL_LINES + QUOTE_TEXTS + [
    "", "   ", "7,", "a,1, b2,c 33,,", "x\u200by", "À" * 50, "Tab\tseparated\u2028line\u2029separators\x1c\x1f"]


def assert_both_tokenizers_follow_the_oracle(model_proto, lower_case, keep_accents, rewrite_quotes):
    switches = {"lower_case": lower_case, "keep_accents": keep_accents, "rewrite_quotes": rewrite_quotes}
    python = AlbertTokenizer(model_proto=model_proto, **switches)
    graph = TFAlbertTokenizer(model_proto, **switches)
    expected = [original_preprocess(text, **switches) for text in WRITTEN_TEXTS]
    assert [python.preprocess(text) for text in WRITTEN_TEXTS] == expected
    expected_ids = python.encode_preprocessed(expected)
    assert python.encode_batch(WRITTEN_TEXTS) == expected_ids
    assert graph(tf.constant(WRITTEN_TEXTS)).to_list() == expected_ids


@pytest.mark.parametrize("rewrite_quotes", [False, True])
@pytest.mark.parametrize("lower_case, keep_accents", [(True, False), (False, True)])
def test_quotes_follow_the_rule_in_both_tokenizers(spm_model, rewrite_quotes, lower_case, keep_accents):
    assert_both_tokenizers_follow_the_oracle(spm_model.read_bytes(), lower_case, keep_accents, rewrite_quotes)


@pytest.mark.parametrize("rewrite_quotes", [False, True])
def test_quotes_follow_the_rule_on_the_released_vocabulary(shared_data, rewrite_quotes):
    released = released_tokenizer(shared_data)
    assert_both_tokenizers_follow_the_oracle(released.model_proto, True, False, rewrite_quotes)
    # The original's ids (its `` is <unk> twice over, its '' two "'"), and Hugging Face's.
    expected = [24, 87, 13, 7, 11515, 7, 20, 55] if rewrite_quotes else [24, 87, 13, 1, 11515, 22, 22, 20, 55]
    tokenizer = AlbertTokenizer(model_proto=released.model_proto, rewrite_quotes=rewrite_quotes)
    assert tokenizer.encode("he said ``hello'' to me") == expected


def test_sentence_splitter():
    assert split_sentences('Mr. Smith went to Washington. "Why?" he asked! It was 3 p.m. Then he left.') == [
        "Mr. Smith went to Washington.", '"Why?" he asked!', "It was 3 p.m. Then he left."]
    assert split_sentences("J. R. R. Tolkien wrote books. The U.S. Army came.") == [
        "J. R. R. Tolkien wrote books.", "The U.S. Army came."]
    assert split_sentences("no terminal punctuation") == ["no terminal punctuation"]
    assert split_sentences("  ") == []
