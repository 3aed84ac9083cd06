"""A token classifier served: raw text in, entities with character offsets out, from the TF Serving model (its
signatures, load_export, its warm-up file) and from AlbertTokenClassifier.predict_entities in Python, which read
entities by the same rule (`albert_tf.text.entities`, whose unit rule tests/test_text_units.py checks by hand);
LiteRT refuses taggers with the reason."""

import numpy as np
import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.export_lib.exporter import export
from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
from albert_tf.models.model_io import write_model_dir
from albert_tf.text.albert_preprocessor import AlbertPreprocessor
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from test_export import read_warmup_requests
from serving_fixtures import assert_every_signature_answers_alike, faster_than_linear
from text_fixtures import train_small_spm

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
SEQ = 16  # the long text takes several windows
# Texts per request the export takes: load_export splits the texts below into several requests.
MAX_BATCH = 2
LONG_TEXT = " ".join(["the old village by the river garden in the summer morning with John and Mary"] * 3)
TEXTS = ["John Smith lives in Paris with Mary",
         "Zoë and Ångström visited Zürich near 東京 and 😀 Berlin today",
         "Dr. O'Neil  (Paris)\tmet «Cafe\u0301» at 3,000 m; ¿Qué?",
         "", "  \t ", "东京和北京欢迎你！我住在大阪。", "東京と大阪は日本の都市です。", "서울에서 김철수를 만났다.", LONG_TEXT]
def without_scores(entities):
    return [[{key: value for key, value in entity.items() if key != "score"} for entity in row] for row in entities]


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    """A tiny cased token classifier with a random head, its model directory, and the entities the word-list path
    reads."""
    import keras

    spm = train_small_spm(tmp_path_factory, "tagger_spm", lower_case=False)
    tokenizer = AlbertTokenizer(str(spm), lower_case=False)
    keras.utils.set_random_seed(4)
    config = AlbertConfig(vocab_size=tokenizer.vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    with open(spm, "rb") as f:
        preprocessor = AlbertPreprocessor(f.read(), seq_length=SEQ, lower_case=False)
    model = AlbertTokenClassifier(config, labels=TAGS, preprocessor=preprocessor)
    # Tags that change from word to word (the random head's logits spread 20 times wider), O for about half the
    # words (its bias raised).
    kernel, _ = model.classifier.get_weights()
    model.classifier.set_weights([20 * kernel, np.array([4.0, 0, 0, 0, 0], np.float32)])
    expected = model.predict_entities(TEXTS, verbose=0)
    # What the texts must exercise: units tagged I- that continue an entity, and I- tags that start one after O
    # and after another type; entities of several words, of non-ASCII text and after it, and in the long text's later
    # windows.
    tags = [["O", *[TAGS[tag] for tag in scores.argmax(-1)]] for scores in model.unit_logits(model._units(TEXTS),
                                                                                             verbose=0)]
    follows = [(before, tag) for row in tags for before, tag in zip(row, row[1:]) if tag.startswith("I-")]
    assert any(before[2:] == tag[2:] for before, tag in follows) and any(before == "O" for before, tag in follows)
    assert any(before != "O" and before[2:] != tag[2:] for before, tag in follows)
    # Units inside text without spaces: entities that begin or end inside the Chinese and Japanese runs.
    for text in TEXTS[5:7]:
        row = expected[TEXTS.index(text)]
        assert row and any(0 < entity["start"] or entity["end"] < len(text.rstrip("。！")) for entity in row)
    flat = [entity for row in expected for entity in row]
    assert any(" " in entity["text"] for entity in flat)
    assert any(not entity["text"].isascii() for entity in flat)
    assert any(not text[:entity["start"]].isascii() for text, row in zip(TEXTS, expected) for entity in row)
    assert len(tokenizer.encode(LONG_TEXT)) > 2 * SEQ and expected[-1][-1]["start"] > len(LONG_TEXT) // 2
    directory = write_model_dir(model, str(tmp_path_factory.mktemp("tagger") / "model"), lower_case=False,
                                max_seq_length=SEQ)
    return {"model": model, "directory": directory, "expected": expected}


@pytest.fixture(scope="module")
def exported(tagger, tmp_path_factory):
    """The export, and its serving model loaded (load_export's)."""
    from albert_tf import load_export

    root = tmp_path_factory.mktemp("export") / "ner"
    paths = export(tagger["directory"], str(root), serving_name="ner", serving_max_batch_size=MAX_BATCH,
                   serving_warmup_batch_sizes=(1, MAX_BATCH))
    return {"root": root, "loaded": load_export(root), **paths}


def test_served_entities_slice_their_texts(tagger, exported):
    served = exported["loaded"](TEXTS)  # several requests: more texts than MAX_BATCH
    assert len(TEXTS) > MAX_BATCH and len(served) == len(TEXTS)
    assert sum(map(len, served)) > 5
    for text, entities in zip(TEXTS, served):
        for entity in entities:
            assert entity["text"] == text[entity["start"]:entity["end"]] and entity["text"] == entity["text"].strip()
            assert 0 < entity["score"] <= 1


def test_python_predict_entities_gives_the_served_entities(tagger, exported):
    python = tagger["model"].predict_entities(TEXTS, verbose=0)
    served = exported["loaded"](TEXTS)
    assert without_scores(python) == without_scores(served)
    np.testing.assert_allclose([entity["score"] for row in python for entity in row],
                               [entity["score"] for row in served for entity in row], atol=1e-5)
    assert tagger["model"].predict_entities(TEXTS[0], verbose=0) == python[:1]  # a str is one text
    assert tagger["model"].predict(TEXTS, verbose=0) == python  # predict on raw text answers the same


def test_serving_outputs_are_rows_padded_to_the_requests_most_entities(tagger, exported):
    import tensorflow as tf

    serving = exported["loaded"].saved_model
    texts = TEXTS[:2]
    outputs = {name: value.numpy() for name, value in serving.signatures["serve_text"](text=tf.constant(texts)).items()}
    counts = [len(row) for row in tagger["expected"][:2]]
    width = max(counts)
    assert set(outputs) == {"entity_count", "entity_type", "entity_text", "entity_start", "entity_end",
                            "entity_score", "characters_read"}
    assert outputs["characters_read"].dtype == np.int32 and outputs["characters_read"].tolist() == list(map(len, texts))
    assert outputs["entity_count"].dtype == np.int32 and outputs["entity_count"].tolist() == counts
    assert outputs["entity_start"].dtype == outputs["entity_end"].dtype == np.int32
    assert outputs["entity_score"].dtype == np.float32
    for name in ("entity_type", "entity_text", "entity_start", "entity_end", "entity_score"):
        assert outputs[name].shape == (len(texts), width), name
    row = counts.index(min(counts))
    assert outputs["entity_start"][row, counts[row]:].tolist() == [-1] * (width - counts[row])
    assert outputs["entity_type"][row, counts[row]:].tolist() == [b""] * (width - counts[row])
    # No entity anywhere in the request: one padding column, so every output still has a row per text.
    empty = serving.signatures["serve_text"](text=tf.constant(["", " "]))
    assert empty["entity_count"].numpy().tolist() == [0, 0] and empty["entity_start"].shape == (2, 1)
    # The pair signature with empty second segments, and serialized tf.Examples, answer the same.
    assert_every_signature_answers_alike(serving, texts, outputs)
    with pytest.raises(tf.errors.InvalidArgumentError, match="a token classifier tags single texts"):
        serving.signatures["serving_default"](text=tf.constant(texts), text_b=tf.constant(["a", ""]))


def test_a_text_cut_at_the_character_limit_says_so(exported):
    """Serving reads a text's first MAX_CHARACTERS characters: the response says how many it read
    (characters_read), and load_export warns naming the text, so an entity after them is not silently missing."""
    import tensorflow as tf

    from albert_tf.text.tf_packing import MAX_CHARACTERS

    long_text = "the " * (MAX_CHARACTERS // 4) + "John Smith flew to Paris."
    texts = ["John Smith", long_text, "Mary"]  # the long one in load_export's second request (MAX_BATCH 2)
    served = exported["loaded"].saved_model.signatures["serve_text"](text=tf.constant(texts[1:]))
    assert served["characters_read"].numpy().tolist() == [MAX_CHARACTERS, 4] and MAX_CHARACTERS < len(long_text)
    with pytest.warns(UserWarning, match=rf"read only the beginning of text 1 \(the first {MAX_CHARACTERS} of its "
                                         rf"{len(long_text)} characters\): no entity after them is found; tag a "
                                         rf"longer text in parts of at most {MAX_CHARACTERS} characters$"):
        entities = exported["loaded"](texts)
    assert all(entity["end"] <= MAX_CHARACTERS for entity in entities[1])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exported["loaded"](texts[:1] + texts[2:])  # nothing cut: no warning


def test_an_entity_ending_in_a_nul_keeps_it(exported):
    """A NUL the tokenizer drops belongs to the word before it, so an entity can end with one: load_export keeps it
    (numpy's fixed-width strings drop trailing NULs), and text == texts[i][start:end] holds."""
    text = "\x00 ".join(TEXTS[0].split()) + "\x00"
    entities = exported["loaded"]([text])[0]
    assert any(entity["text"].endswith("\x00") for entity in entities)
    for entity in entities:
        assert entity["text"] == text[entity["start"]:entity["end"]]


def test_a_long_texts_intermediates_grow_linearly_with_its_length(tagger):
    """Every value the served tagger computes for one text (top-level ops: tokenization, offsets, entities)
    grows linearly with the text: a copy of the whole text per character (the lowercased final sigma's lookup)
    or per entity (cutting out its text) once made one 20,000-character text cost 400 MB, and a full request
    crash the server. Lowercasing on, and entities in about half the words."""
    import tensorflow as tf

    from albert_tf.export_lib.serving_module import serving_module
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer
    from albert_tf.text.tf_packing import NO_SECOND_SEGMENTS

    model = tagger["model"]
    serving = serving_module(TFAlbertTokenizer(model.preprocessor.model_proto, lower_case=True), SEQ, model,
                             {"model": "token_classifier", "num_labels": len(TAGS), "label_names": TAGS})
    text = " ".join([TEXTS[0], TEXTS[1]] * 40)[:4000]
    assert serving.serve_text(tf.constant([text[:1000]]))["entity_count"].numpy()[0] > 30
    assert faster_than_linear(lambda texts: serving._respond(texts, NO_SECOND_SEGMENTS), text) == {}


def test_warmup_requests_replay_on_the_tagger(exported):
    import tensorflow as tf

    serving = exported["loaded"].saved_model
    requests = read_warmup_requests(exported["serving"])
    assert {request.model_spec.signature_name for request in requests} == {"serve_text", "serving_default"}
    assert {len(request.inputs["text"].string_val) for request in requests} == {1, MAX_BATCH}
    for request in requests:
        inputs = {name: tf.constant(tf.make_ndarray(tensor)) for name, tensor in request.inputs.items()}
        outputs = serving.signatures[request.model_spec.signature_name](**inputs)
        assert outputs["entity_count"].shape == (len(inputs["text"]),)


def test_entities_need_iob2_tag_names(tagger):
    """A head whose names say no entity types (Hugging Face's LABEL_i) is refused by the export and by
    predict_entities, before anything is computed."""
    from albert_tf.export_lib.serving_module import serving_module
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    model = tagger["model"]
    tokenizer = TFAlbertTokenizer(model.preprocessor.model_proto, lower_case=False)
    metadata = {"model": "token_classifier", "num_labels": len(TAGS), "label_names": [f"LABEL_{i}" for i in range(5)]}
    with pytest.raises(ValueError, match=r"\['LABEL_0', .*\] are not IOB2 tags"):
        serving_module(tokenizer, SEQ, model, metadata)
    with pytest.raises(ValueError, match="records 0 label_names for num_labels=5"):
        serving_module(tokenizer, SEQ, model, {**metadata, "label_names": None})
    unnamed = AlbertTokenClassifier(model.encoder, num_labels=len(TAGS), preprocessor=model.preprocessor)
    with pytest.raises(ValueError, match="are not IOB2 tags"):
        unnamed.predict_entities(TEXTS)
    with pytest.raises(ValueError, match="texts must be a string or a list of strings"):
        model.predict_entities([["John", "Smith"]])


def test_litert_export_refuses_a_token_classifier_naming_what_is_missing(tagger, tmp_path):
    from albert_tf.export_lib.litert_export import export_litert

    with pytest.raises(ValueError, match=r"holds a 'token_classifier' model, which a LiteRT export cannot serve: its "
                                         r"entities need each piece's character offsets.*FastSentencepieceTokenize.*"
                                         r"gives ids only.*export a SavedModel instead"):
        export_litert(tagger["directory"], str(tmp_path / "lite"))
    assert not (tmp_path / "lite").exists()


@pytest.mark.slow
def test_xla_serving_gives_the_same_entities(tagger):
    """--serving_xla pads each model run's windows up to shape buckets; the entities stay those Python finds."""
    import tensorflow as tf

    from albert_tf.export_lib.exported_model import _numpy, _text_entities
    from albert_tf.export_lib.serving_module import serving_module
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    model = tagger["model"]
    serving = serving_module(TFAlbertTokenizer(model.preprocessor.model_proto, lower_case=False), SEQ, model,
                             {"model": "token_classifier", "num_labels": len(TAGS), "label_names": TAGS}, xla=True,
                             max_batch_size=len(TEXTS))
    served = _text_entities({name: _numpy(value) for name, value in serving.serve_text(tf.constant(TEXTS)).items()})
    assert without_scores(served) == without_scores(tagger["expected"])
    np.testing.assert_allclose([entity["score"] for row in served for entity in row],
                               [entity["score"] for row in tagger["expected"] for entity in row], atol=1e-5)


def test_the_served_windows_take_the_stride_the_tagger_recorded(tagger):
    """A tagger loaded from its directory does not carry its stride: the export reads the one its albert_tf.json
    records for the same window length, as evaluation and Python prediction do; at another length, the default."""
    from albert_tf.export_lib.serving_module import TokenClassifierServing
    from albert_tf.models.model_dir_format import read_metadata
    from albert_tf.models.model_io import load_model
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer
    from albert_tf.text.word_pieces import default_doc_stride

    model = load_model(tagger["directory"])[0]
    assert getattr(model, "doc_stride", None) is None
    tokenizer = TFAlbertTokenizer(model.preprocessor.tokenizer.model_proto, lower_case=False)
    metadata = {**read_metadata(tagger["directory"]), "doc_stride": 3, "max_seq_length": SEQ}
    assert TokenClassifierServing(tokenizer, SEQ, model, metadata).stride == 3 != default_doc_stride(SEQ)
    assert TokenClassifierServing(tokenizer, 2 * SEQ, model, metadata).stride == default_doc_stride(2 * SEQ)
