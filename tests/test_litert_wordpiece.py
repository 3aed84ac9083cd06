"""LiteRT files of WordPiece models: tensorflow-text's FastBertNormalize and FastWordpieceTokenize ops, given a
normalizer table built from BERT's rules, give the Python tokenizer's ids on every assigned code point, on a
fuzz set and on written Chinese, Japanese and Korean, with each documented difference shown; an exported
WordPiece model answers on the device as its SavedModel does."""

import sys
import unicodedata

import numpy as np
import pytest

from albert_tf.data.wordpiece_vocabulary import bert_layout
from albert_tf.text.bert_normalizer_model import left_to_the_kernel, normalized_character, normalizer_model
from albert_tf.text.wordpiece_tokenizer import WordPieceTokenizer
from test_tokenization import unicode_fuzz
from test_wordpiece import WRITTEN, staged_vocabulary_and_texts, vocabularies  # noqa: F401 (a fixture)
from text_fixtures import SPECIAL_LINES


def assigned_code_points():
    """Every code point the normalizer table holds or leaves unchanged (neither surrogates nor those it leaves to
    the kernel)."""
    return [c for c in range(1, sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF and not left_to_the_kernel(c)]


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_the_normalizer_table_maps_every_code_point_as_the_python_rules(lower_case):
    import tensorflow as tf
    import tensorflow_text as tf_text

    normalizer = tf_text.FastBertNormalizer(model_buffer=normalizer_model(lower_case, None))
    code_points = [0] + assigned_code_points()
    normalized = normalizer.normalize(tf.constant([chr(c).encode("utf-8") for c in code_points])).numpy()
    wrong = [hex(c) for c, text in zip(code_points, normalized)
             if text.decode("utf-8") != normalized_character(chr(c), lower_case, lower_case)]
    assert not wrong
    # tensorflow-text's own table folds full-width punctuation into ASCII and makes control characters spaces.
    full_width = "你好，世界！a\x01b"
    assert normalizer.normalize(tf.constant([full_width])).numpy()[0].decode() == "你好，世界！ab"
    theirs = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=lower_case)
    assert theirs.normalize(tf.constant([full_width])).numpy()[0].decode() != "你好，世界！ab"


def litert_layer(tokenizer):
    from albert_tf.text.litert_wordpiece_tokenizer import LiteRTWordPieceTokenizer

    return LiteRTWordPieceTokenizer(tokenizer.pieces, lower_case=tokenizer.lower_case,
                                    strip_accents=tokenizer.strip_accents)


def device_ids(layer, texts):
    import tensorflow as tf

    return [list(row) for row in layer(tf.constant([text.encode("utf-8") for text in texts])).to_list()]


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_ids_equal_the_python_tokenizers_on_every_code_point_and_written_text(vocabularies, lower_case):
    tokenizer = WordPieceTokenizer(str(vocabularies[lower_case]), lower_case=lower_case)
    layer = litert_layer(tokenizer)
    characters = [chr(c) for c in assigned_code_points()]
    texts = ([f"a{c}b" for c in characters] + [f"东{c}京 x" for c in characters[::7]] + WRITTEN + SPECIAL_LINES
             + unicode_fuzz(800, seed=21) + ["", " ", "\x00a\ufffdb\x07", "a\u2028b\u0085c", "ab\uffffrepeated3"])
    expected = tokenizer.encode_batch([per_character_sigma(text, lower_case) for text in texts])
    assert sum(row.count(tokenizer.unk_id) for row in expected[-900:]) < sum(map(len, expected[-900:]))
    assert device_ids(layer, texts) == [list(row) for row in expected]


def per_character_sigma(text, lower_case):
    """`text` as the device lowercases it: a capital sigma is σ wherever it stands (the documented difference:
    `str.lower` makes a word-final one ς). Written out here, not read from the layer, so a change there shows."""
    return text.replace("Σ", "σ") if lower_case else text


@pytest.mark.slow
@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_ids_equal_the_python_tokenizers_on_the_staged_corpora(shared_data, tmp_path, lower_case):
    """300 held-out lines of Japanese, Chinese, Korean and English each and 200 CMRC 2018 contexts."""
    tokenizer, texts = staged_vocabulary_and_texts(shared_data, tmp_path, lower_case)
    expected = tokenizer.encode_batch([per_character_sigma(text, lower_case) for text in texts])
    assert device_ids(litert_layer(tokenizer), texts) == [list(row) for row in expected]


def test_the_documented_differences():
    """A word-final capital sigma, an unassigned code point, and the word limit counted in bytes."""
    pieces = bert_layout(["οδος", "οδοσ", "a", "##a", "한", "##한", "x"])
    tokenizer = WordPieceTokenizer(pieces=pieces, lower_case=True)
    layer = litert_layer(tokenizer)
    [sigma, unassigned, ascii_word] = device_ids(layer, ["ΟΔΟΣ", "a\U000e0fffa x", "a" * 200])
    assert tokenizer.encode("ΟΔΟΣ") == [tokenizer.piece_to_id("οδος")]
    assert sigma == [tokenizer.piece_to_id("οδοσ")]
    assert unicodedata.category("\U000e0fff") == "Cn"
    assert tokenizer.encode("a\U000e0fffa x") == [tokenizer.piece_to_id("a"), tokenizer.piece_to_id("##a"),
                                                  tokenizer.piece_to_id("x")]
    assert unassigned == [tokenizer.unk_id, tokenizer.piece_to_id("x")]
    assert ascii_word == tokenizer.encode("a" * 200) and device_ids(layer, ["a" * 201]) == [[tokenizer.unk_id]]
    # (Cased: lowercasing strips accents too, and NFD takes Hangul syllables apart into letters.)
    cased = WordPieceTokenizer(pieces=pieces, lower_case=False)
    [hangul_word, shorter] = device_ids(litert_layer(cased), ["한" * 67, "한" * 66])
    assert cased.encode("한" * 67) != [cased.unk_id] and hangul_word == [cased.unk_id]
    assert shorter == cased.encode("한" * 66) != [cased.unk_id]


def test_a_vocabulary_read_without_cjk_splitting_is_refused():
    from albert_tf.text.litert_wordpiece_tokenizer import LiteRTWordPieceTokenizer

    with pytest.raises(ValueError, match="sets every CJK ideograph apart"):
        LiteRTWordPieceTokenizer(bert_layout(["a"]), tokenize_chinese_chars=False)


def cosines(a, b):
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


@pytest.mark.slow
def test_a_wordpiece_encoder_answers_on_the_device_as_its_savedmodel(vocabularies, tmp_path):
    """albert-export --format=litert of a WordPiece encoder: the vocab.txt travels, model.tflite holds the two
    tensorflow-text ops, its ids are training's, and its pooled outputs on held-out CJK text are the SavedModel's
    (min cosine 0.999 float32 and dynamic int8 alike); LiteModel counts lengths with the vocab.txt."""
    import json

    import tensorflow as tf

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.export_lib.exporter import export
    from albert_tf.export_lib.litert_export import export_litert, packing_model
    from albert_tf.models.lite_model import LiteModel, lite_interpreter
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.networks.albert_encoder import AlbertEncoder
    from albert_tf.text.packing import pack_batch

    vocab_file = vocabularies[True]
    tokenizer = WordPieceTokenizer(str(vocab_file), lower_case=True)
    config = AlbertConfig.from_dict({**AlbertConfig.from_name_or_path("albert_tiny").to_dict(),
                                     "vocab_size": tokenizer.vocab_size})
    write_model_dir(AlbertEncoder(config), tmp_path / "encoder", files={"vocab.txt": str(vocab_file)},
                    vocabulary="wordpiece", max_seq_length=64, lower_case=True)
    held_out = ["北京是中國的首都，人口很多！", "パンダとハンダは違う。", "서울은 대한민국의 수도이다.",
                "ＡＢＣ１２３，你好。", "Café déjà vu, naïve!"]
    served = tf.saved_model.load(export(str(tmp_path / "encoder"), str(tmp_path / "savedmodel"))["serving"])
    reference = served.signatures["serve_text"](text=tf.constant(held_out))["pooled_output"].numpy()
    for quantization in ("float32", "dynamic_int8"):
        output = tmp_path / f"litert_{quantization}"
        record = export_litert(str(tmp_path / "encoder"), str(output), quantization=quantization)["litert"]
        assert (output / "vocab.txt").read_bytes() == vocab_file.read_bytes() and not (output / "spm.model").exists()
        assert record["files"]["model.tflite"]["custom_ops"] == ["FastBertNormalize",
                                                               "FastWordpieceTokenizeWithOffsets"]
        assert json.loads((output / "albert_tf.json").read_text())["vocabulary"] == "wordpiece"
        model = LiteModel(str(output))
        pooled = np.stack([model([text])["pooled_output"][0] for text in held_out])
        assert cosines(pooled, reference).min() >= 0.999, quantization
        batched = model(held_out, max_batch_tokens=64)["pooled_output"]
        np.testing.assert_allclose(batched, pooled, atol=1e-4)
    packing = lite_interpreter(packing_model(litert_layer(tokenizer), 64)).get_signature_runner()
    device = packing(text=np.array([t.encode() for t in held_out], dtype=object),
                     text_b=np.array([b""] * len(held_out), dtype=object))
    np.testing.assert_array_equal(device["input_word_ids"], pack_batch(tokenizer, held_out, None, 64)["input_word_ids"]
                                  [:, :device["input_word_ids"].shape[1]])


@pytest.mark.slow
def test_a_wordpiece_tagger_finds_on_the_device_the_entities_its_savedmodel_serves(vocabularies, tmp_path):
    """A random WordPiece token classifier exported to LiteRT: model.tflite gives each piece's byte offsets, unit
    starts and tag probabilities, and LiteModel's entities equal the Python unit rule's (which the SavedModel
    serves) on Chinese, Japanese, Korean and English text, one call per text or in batches; a text longer
    than the file reads is said to be cut. (A SentencePiece tagger stays refused, its op giving no offsets:
    test_tagger_export.)"""
    import keras

    from albert_tf.export_lib.litert_export import export_litert
    from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
    from albert_tf.models.lite_model import LiteModel
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.networks.albert_encoder import AlbertEncoder
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.text.entities import text_entities, text_units, unit_tables
    from albert_tf.text.word_pieces import text_windows, window_arrays

    vocab_file = vocabularies[True]
    tokenizer = WordPieceTokenizer(str(vocab_file), lower_case=True)
    tags = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    keras.utils.set_random_seed(5)
    config = AlbertConfig.from_dict({**AlbertConfig.from_name_or_path("albert_tiny").to_dict(),
                                     "vocab_size": tokenizer.vocab_size})
    model = AlbertTokenClassifier(AlbertEncoder(config), labels=tags)
    kernel, _ = model.classifier.get_weights()
    model.classifier.set_weights([20 * kernel, np.array([3.0, 0, 0, 0, 0], np.float32)])
    # (A word-final capital sigma tokenizes otherwise on the device: test_the_documented_differences.)
    texts = [text for text in WRITTEN if "Σ" not in text] + ["", "  北京  ", "Ångström und Zürich, 東京!"]
    seq = 64
    tables = unit_tables(tokenizer)
    expected = []
    for text in texts:
        units = text_units(tokenizer, text, tables)
        if not units.first_pieces:
            expected.append([])
            continue
        [window] = text_windows([units], None, seq, None, special_ids=tokenizer.special_ids)
        inputs = {name: value for name, value in window_arrays([window]).items() if name != "label_ids"}
        logits = model(inputs, training=False)["logits"].numpy()[0]
        expected.append(text_entities(units, logits[np.array(units.reading_pieces) + 1], tags))
    assert sum(map(len, expected)) > 5

    write_model_dir(model, tmp_path / "tagger", files={"vocab.txt": str(vocab_file)}, vocabulary="wordpiece",
                    max_seq_length=seq, lower_case=True)
    record = export_litert(str(tmp_path / "tagger"), str(tmp_path / "litert"), quantization="float32")["litert"]
    assert record["files"]["model.tflite"]["outputs"] == ["probabilities", "unit_starts", "piece_starts",
                                                          "piece_ends"]
    lite = LiteModel(str(tmp_path / "litert"))
    strip = lambda rows: [[{k: v for k, v in entity.items() if k != "score"} for entity in row] for row in rows]
    for found in (lite(texts)["entities"], lite(texts, max_batch_tokens=256)["entities"]):
        assert strip(found) == strip(expected)
        assert all(abs(a["score"] - b["score"]) < 1e-4 for row, rows in zip(found, expected) for a, b in zip(row, rows))
        assert all(entity["text"] == text[entity["start"]:entity["end"]] for text, row in zip(texts, found)
                   for entity in row)
    with pytest.warns(UserWarning, match="longer than the 64 pieces model.tflite reads"):
        lite(["北京欢迎你" * 20])


def test_full_int8_of_a_tagger_is_gated_on_the_tags_of_its_units():
    """The gate reads the tag at each unit's first piece: other tags there fail it, other tags elsewhere (the
    pieces that continue a unit, padding) do not count."""
    from albert_tf.export_lib.litert_module import INT8_MIN_LABEL_AGREEMENT, TokenClassifierRequests

    rng = np.random.default_rng(0)
    reference = {"probabilities": rng.random((4, 30, 5)), "unit_starts": (rng.random((4, 30)) < 0.5).astype(int)}
    starts = reference["unit_starts"] > 0
    # (Rolled one tag along: every argmax moves.)
    rolled = np.roll(reference["probabilities"], 1, axis=-1)
    elsewhere = {**reference, "probabilities": np.where(starts[..., None], reference["probabilities"], rolled)}
    passed, measured = TokenClassifierRequests.int8_gate(None, elsewhere, reference)
    assert passed and measured.startswith("unit tag agreement with the float model 100.00%")
    flipped = {**reference, "probabilities": reference["probabilities"].copy()}
    first_unit = tuple(np.argwhere(starts)[0])
    flipped["probabilities"][first_unit] = rolled[first_unit]
    passed, measured = TokenClassifierRequests.int8_gate(None, flipped, reference)
    assert not passed and f"(needs {INT8_MIN_LABEL_AGREEMENT:.1%})" in measured



def test_the_layer_names_its_lowercasing_difference(vocabularies):
    tokenizer = WordPieceTokenizer(str(vocabularies[True]), lower_case=True)
    layer = litert_layer(tokenizer)
    text = "ΟΔΟΣ Σ ΣΑ café"
    assert layer.as_lowercased_here(text) == per_character_sigma(text, True)
    assert device_ids(layer, [text]) == [tokenizer.encode(layer.as_lowercased_here(text))]
    cased = litert_layer(WordPieceTokenizer(str(vocabularies[False]), lower_case=False))
    assert cased.as_lowercased_here(text) == text
