"""Exported SavedModels: what TF Serving and TensorFlow-only users get.

Nothing here runs a model server (none exists where tests run): serving
readiness is checked through the SavedModels themselves (signatures, op audit,
a TensorFlow-only process) and through well-formed request bodies.
"""

import json
import os
import pathlib
import random
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.models.model_io import load_encoder, write_model_dir
from albert_tf.export_lib.exporter import export
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.text.piece_alignment import tokenize_with_alignment
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from albert_tf.text.packing import pack_batch, truncated_lengths
from text_fixtures import SPECIAL_LINES, WORDS, random_sentence, train_small_spm

SEQ = 32
REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = pathlib.Path(sys.executable).parent
# Strings the alignment and packing must get right beyond ordinary words.
EDGE_TEXTS = ["", "   ", "  leading and trailing  ", "\u0301starts with a combining mark", "a ``` b '''' c",
              "x \u00a8 y", "3.0, 4,5, 12,", "\ufffd replaced"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    import keras

    spm = train_small_spm(tmp_path_factory)
    tokenizer = AlbertTokenizer(str(spm))
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=tokenizer.vocab_size)
    keras.utils.set_random_seed(5)
    model = AlbertPretrainer(config)
    directory = tmp_path_factory.mktemp("export")
    checkpoint = write_model_dir(model, str(directory / "checkpoint"), "pretrainer", files={"spm.model": str(spm)})
    paths = export(checkpoint, str(directory / "export"), max_seq_length=SEQ, serving_name="tiny")
    return {"model": model, "tokenizer": tokenizer, "checkpoint": checkpoint, "root": directory / "export", **paths}


def sample_texts():
    rng = random.Random(5)
    return SPECIAL_LINES + EDGE_TEXTS + [random_sentence(rng, 3, 40) for _ in range(9)]


def run_fresh(code, *args):
    """`code` in a fresh Python process, from / with a bare environment: it imports only what it says."""
    env = {"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": os.environ.get("PATH", "")}
    result = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env,
                            cwd="/")
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def saved_model_cli(*args):
    result = subprocess.run([str(BIN / "saved_model_cli"), "show", *args], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def signature_defs(directory):
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel.FromString((pathlib.Path(directory) / "saved_model.pb").read_bytes())
    return saved_model.meta_graphs[0].signature_def


# A TensorFlow-only process: every output the tests compare with the Keras model, then a
# fine-tuning loop on the encoder.
FRESH = r"""
import json, sys
import numpy as np, tensorflow as tf, tensorflow_text  # noqa: F401
serving_dir, preprocessing_dir, encoder_dir, texts_file, out = sys.argv[1:]
texts = json.loads(open(texts_file, encoding="utf-8").read())
text, text_b = tf.constant(texts), tf.constant(texts[::-1])
serving = tf.saved_model.load(serving_dir)
preprocessing = tf.saved_model.load(preprocessing_dir)
encoder = tf.saved_model.load(encoder_dir)
results = {}
single = serving.signatures["serving_default"](text=text, text_b=tf.constant([], tf.string))
by_default = serving.serve(text)  # the tf.function: text_b left out
pairs = serving.signatures["serving_default"](text=text, text_b=text_b)
results.update(pooled=single["pooled_output"], embedding=single["embedding"],
               embedding_by_default=by_default["embedding"], pooled_pairs=pairs["pooled_output"],
               embedding_pairs=pairs["embedding"])
for prefix, ids in (("single_", preprocessing(text)), ("pairs_", preprocessing(text, text_b))):
    results.update({prefix + name: value for name, value in ids.items()})
inputs = preprocessing(text, text_b)
outputs = encoder(inputs)
results.update(sequence_output=outputs["sequence_output"], encoder_pooled=outputs["pooled_output"],
               encoder_outputs=tf.stack(outputs["encoder_outputs"]))
positions = tf.constant(np.arange(len(texts) * 3).reshape(len(texts), 3) % 7 + 1, tf.int32)
results["mlm_logits"] = encoder.signatures["mlm"](masked_lm_positions=positions, **inputs)["mlm_logits"]
results["sop_logits"] = encoder.signatures["sop"](**inputs)["sop_logits"]
results["positions"] = positions
assert "albert_tf" not in sys.modules and "keras_hub" not in sys.modules

rng = np.random.default_rng(0)
ids = rng.integers(5, 300, (16, 16)).astype("int32")
labels = (ids[:, 1] > 150).astype("int32")
train_inputs = {"input_word_ids": tf.constant(ids), "input_mask": tf.ones_like(ids), "input_type_ids": tf.zeros_like(ids)}
hidden = encoder(train_inputs)["pooled_output"].shape[-1]
head = tf.Variable(rng.normal(0, 0.1, (hidden, 2)).astype("float32"))  # not zeros: those stop the gradient
variables = list(encoder.trainable_variables) + [head]
losses, encoder_gradients = [], []
for step in range(8):
    with tf.GradientTape() as tape:
        logits = encoder(train_inputs)["pooled_output"] @ head
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    gradients = tape.gradient(loss, variables)
    encoder_gradients.append(sum(g is not None and float(tf.norm(tf.convert_to_tensor(g))) > 0
                                 for g in gradients[:-1]))
    for variable, gradient in zip(variables, gradients):
        if gradient is not None:
            variable.assign_sub(0.01 * tf.convert_to_tensor(gradient))
    losses.append(float(loss))
np.savez(out + ".npz", **{name: np.asarray(value) for name, value in results.items()})
json.dump({"losses": losses, "encoder_gradients": encoder_gradients, "variables": len(encoder.variables),
           "trainable_variables": len(encoder.trainable_variables)}, open(out + ".json", "w"))
"""


@pytest.fixture(scope="module")
def fresh(exported, tmp_path_factory):
    directory = tmp_path_factory.mktemp("fresh")
    texts = sample_texts()
    (directory / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    run_fresh(FRESH, exported["serving"], exported["preprocessing"], exported["encoder"], directory / "texts.json",
              directory / "out")
    return {"texts": texts, "arrays": np.load(directory / "out.npz"),
            "fine_tuning": json.loads((directory / "out.json").read_text())}


def test_truncation_closed_form_matches_the_original_loop():
    import tensorflow as tf

    from albert_tf.text.tf_packing import truncated_lengths as in_graph

    def original(a, b, budget):
        while a + b > budget:
            if a > b:
                a -= 1
            else:
                b -= 1
        return a, b

    grid = [(a, b, budget) for a in range(25) for b in range(25) for budget in range(1, 30)]
    a, b, budget = (tf.constant(column, tf.int32) for column in zip(*grid))
    graph_a, graph_b = in_graph(a, b, budget)
    for (length_a, length_b, limit), got_a, got_b in zip(grid, graph_a.numpy(), graph_b.numpy()):
        assert truncated_lengths(length_a, length_b, limit) == original(length_a, length_b, limit)
        assert (got_a, got_b) == original(length_a, length_b, limit)


def test_layout_and_signatures(exported):
    root = exported["root"]
    assert (root / "serving" / "tiny" / "1" / "saved_model.pb").exists()
    assert (root / "encoder" / "assets" / "spm.model").exists()
    assert (root / "encoder" / "assets" / "albert_tf.json").exists() and (root / "albert_tf.json").exists()
    assert json.loads((root / "albert_tf.json").read_text())["max_seq_length"] == SEQ

    serving = saved_model_cli("--dir", exported["serving"], "--all")
    for expected in ("signature_def['serving_default']", "signature_def['serve_text']",
                     "signature_def['serve_examples']", "inputs['text']", "inputs['text_b']", "inputs['examples']",
                     "outputs['embedding']", "outputs['pooled_output']"):
        assert expected in serving, expected
    encoder = saved_model_cli("--dir", exported["encoder"], "--all")
    for expected in ("signature_def['serving_default']", "signature_def['mlm']", "signature_def['sop']",
                     "inputs['input_word_ids']", "inputs['input_mask']", "inputs['input_type_ids']",
                     "inputs['masked_lm_positions']", "outputs['mlm_logits']", "outputs['sop_logits']",
                     "outputs['sequence_output']"):
        assert expected in encoder, expected

    # text_b is optional for TF Serving: its SignatureDef carries a default (no second segments).
    for directory in (exported["serving"], exported["preprocessing"]):
        signature = signature_defs(directory)["serving_default"]
        assert set(signature.inputs) == {"text", "text_b"} and list(signature.defaults) == ["text_b"]
        assert signature.defaults["text_b"].tensor_shape.dim[0].size == 0
    # Single texts have a signature of their own, with nothing to leave out.
    signature = signature_defs(exported["serving"])["serve_text"]
    assert set(signature.inputs) == {"text"} and not signature.defaults
    assert set(signature.outputs) == {"pooled_output", "embedding"}


def test_graphs_hold_only_core_tf_and_tensorflow_text_ops(exported, tmp_path):
    import tensorflow as tf

    from albert_tf.export_lib.op_audit import audit_all

    class WithPythonOp(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def __call__(self, x):
            return tf.py_function(lambda v: v * 2, [x], tf.float32)

    tf.saved_model.save(WithPythonOp(), str(tmp_path / "python_op"))
    parts = {part: exported[part] for part in ("serving", "preprocessing", "encoder")}
    audits = audit_all([*parts.values(), str(tmp_path / "python_op")])
    for part, directory in parts.items():
        classes = audits[directory]
        assert not classes["python"] and not classes["unknown"], (part, classes)
        assert len(classes["core"]) > 20
    for part in ("serving", "preprocessing"):  # the tokenizer is one op: no resource, no regular expressions
        assert audits[parts[part]]["tensorflow_text"] == ["TFText>FastSentencepieceTokenize"], part
        assert not {"StaticRegexReplace", "RegexReplace"} & set(audits[parts[part]]["core"]), part
    assert audits[str(tmp_path / "python_op")]["python"] == ["EagerPyFunc"]  # the audit does catch them


def test_fresh_tensorflow_process_matches_the_keras_model(exported, fresh):
    texts, result = fresh["texts"], fresh["arrays"]
    model = exported["model"]
    single = pack_batch(exported["tokenizer"], texts, None, SEQ)
    pairs = pack_batch(exported["tokenizer"], texts, texts[::-1], SEQ)
    for name, value in single.items():
        np.testing.assert_array_equal(result["single_" + name], value, err_msg=name)
        np.testing.assert_array_equal(result["pairs_" + name], pairs[name], err_msg=name)

    def embedding(outputs, inputs):
        mask = inputs["input_mask"][..., None]
        mean = (np.asarray(outputs["sequence_output"]) * mask).sum(1) / mask.sum(1)
        return mean / np.linalg.norm(mean, axis=1, keepdims=True)

    single_outputs = model.encoder(single, training=False)
    np.testing.assert_allclose(result["pooled"], single_outputs["pooled_output"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(result["embedding"], embedding(single_outputs, single), atol=1e-5, rtol=0)
    np.testing.assert_array_equal(result["embedding_by_default"], result["embedding"])
    pair_outputs = model.encoder(pairs, training=False)
    np.testing.assert_allclose(result["pooled_pairs"], pair_outputs["pooled_output"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(result["embedding_pairs"], embedding(pair_outputs, pairs), atol=1e-5, rtol=0)

    keras = model({**pairs, "masked_lm_positions": result["positions"]}, training=False)
    np.testing.assert_allclose(result["sequence_output"], pair_outputs["sequence_output"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(result["encoder_pooled"], pair_outputs["pooled_output"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(result["encoder_outputs"], np.stack(pair_outputs["encoder_outputs"]), atol=1e-5, rtol=0)
    assert result["encoder_outputs"].shape[0] == model.albert_config.num_hidden_layers
    np.testing.assert_allclose(result["mlm_logits"], keras["mlm_logits"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(result["sop_logits"], keras["sop_logits"], atol=1e-5, rtol=0)


def test_encoder_fine_tunes_in_a_tensorflow_only_process(exported, fresh):
    fine_tuning = fresh["fine_tuning"]
    encoder = exported["model"].encoder
    assert fine_tuning["trainable_variables"] == len(encoder.trainable_variables) > 0
    assert fine_tuning["variables"] == len(encoder.weights)
    # Every encoder variable gets a non-zero gradient on every step, and the loss goes down.
    assert fine_tuning["encoder_gradients"] == [len(encoder.trainable_variables)] * 8
    losses = fine_tuning["losses"]
    assert losses[-1] < losses[0] - 0.05 and np.mean(losses[-3:]) < np.mean(losses[:3]), losses


def test_preprocessing_truncates_pairs_longest_first(exported):
    import tensorflow as tf

    preprocessing = tf.saved_model.load(exported["preprocessing"])
    rng = random.Random(7)
    lengths = [0, 1, 2, 5, 13, 14, 15, 16, 29, 30, 40]
    pairs = [(" ".join(rng.choice(WORDS) for _ in range(a)), " ".join(rng.choice(WORDS) for _ in range(b)))
             for a in lengths for b in lengths]
    texts, texts_b = [a for a, _ in pairs], [b for _, b in pairs]
    result = preprocessing(tf.constant(texts), tf.constant(texts_b))
    expected = pack_batch(exported["tokenizer"], texts, texts_b, SEQ)
    for name, value in expected.items():
        np.testing.assert_array_equal(result[name].numpy(), value, err_msg=name)
    assert (result["input_mask"].numpy().sum(1) == SEQ).sum() > len(pairs) // 3  # truncation was exercised


def test_preprocessing_and_offsets_match_python_on_real_text(exported, shared_data):
    import tensorflow as tf

    from albert_tf.export_lib.token_offsets import tokenize_with_offsets
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    lines = [line for line in (shared_data / "corpus" / "corpus_paragraphs.txt").read_text(encoding="utf-8")
             .splitlines()[::97] if line.strip()][:300]
    preprocessing = tf.saved_model.load(exported["preprocessing"])
    result = preprocessing(tf.constant(lines), tf.constant(lines[1:] + lines[:1]))
    expected = pack_batch(exported["tokenizer"], lines, lines[1:] + lines[:1], SEQ)
    for name, value in expected.items():
        np.testing.assert_array_equal(result[name].numpy(), value, err_msg=name)
    check_offsets(exported["tokenizer"], TFAlbertTokenizer(exported["tokenizer"].model_proto), lines[:100],
                  tokenize_with_offsets)


def check_offsets(tokenizer, tf_tokenizer, texts, tokenize_with_offsets):
    """In-graph ids and byte offsets == piece_alignment.tokenize_with_alignment's ids and character spans."""
    import tensorflow as tf

    ids, starts, ends = tokenize_with_offsets(tf_tokenizer, tf.constant(texts))
    for text, row_ids, row_starts, row_ends in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        aligned = tokenize_with_alignment(tokenizer, text)
        raw = text.encode("utf-8")
        assert row_ids == aligned.ids, text
        assert [len(raw[:offset].decode("utf-8")) for offset in row_starts] == aligned.starts, text
        assert [len(raw[:offset].decode("utf-8")) for offset in row_ends] == aligned.ends, text


OFFSET_TEXTS = [
    "he said ``hello'' to me", "x``y''z ''' ``` `` ''", "``Café'' ``naïve''",
    "a ☃☃ b", "x☃y", "a \u200b b", "\x17ﬀ ends", "w\x16\x04\x1d\x0f", "Ǉﬄ\r\x15", "ľ̑ and l\u030c\u0311",
    "x ¨ y", "\u202bﷺ\u200f٠١", "２，３, 1,000,", "ǅ͌ z", "가나 다", "ΟΔΟΣ ΣΟΦΙΑ",
    "\x00", "The\x00River rose", "ab\x00", "\x00ab", "a \x00 b", "\x00\x01\x02\x7f\x1b", "A\x00B\x01C\x7fD\x1bE",
]


def control_character_texts(count, seed):
    """Seeded texts of every C0 control (NUL included), DEL and every C1 control, alone, in runs and
    among words, spaces and quotes."""
    rng = random.Random(seed)
    controls = [chr(code) for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)]]
    words = ["the", "River", "café", "``", "''", "½", " ", "  ", "1,000,"]

    def part():
        return rng.choice(controls) * rng.randint(1, 3) if rng.random() < 0.5 else rng.choice(words)

    return ["".join(part() for _ in range(rng.randint(1, 8))) for _ in range(count)]


@pytest.mark.parametrize("lower_case, keep_accents, rewrite_quotes",
                         [(True, False, False), (True, False, True), (False, True, False), (True, True, True)])
def test_token_offsets_match_the_python_alignment(exported, lower_case, keep_accents, rewrite_quotes):
    """On unknown characters and their runs, removed and space-making characters, NFKC's expansions and
    compositions (`½`, `ﬄ`, `l` + caron), final sigmas, digit-comma splits of full-width forms, control
    characters (a NUL once cut the lowercased text short: every later offset moved), and a Unicode fuzz
    set."""
    from albert_tf.export_lib.token_offsets import tokenize_with_offsets
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer
    from test_tokenization import unicode_fuzz

    model_proto = exported["tokenizer"].model_proto
    switches = {"lower_case": lower_case, "keep_accents": keep_accents, "rewrite_quotes": rewrite_quotes}
    check_offsets(AlbertTokenizer(model_proto=model_proto, **switches), TFAlbertTokenizer(model_proto, **switches),
                  sample_texts() + OFFSET_TEXTS + control_character_texts(60, seed=3) + unicode_fuzz(300, seed=11),
                  tokenize_with_offsets)


def test_token_offsets_keep_the_trained_ids_on_ties(shared_data):
    """Where segmentations tie in score, the offsets' ids are the tokenizer's. The ties are found as the
    texts on which tensorflow-text's resource-based SentencePiece op (which offsets were once taken
    from) breaks them otherwise, with Google's 30k-clean.model."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    from albert_tf.export_lib.token_offsets import tokenize_with_offsets
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    tokenizer = AlbertTokenizer(str(shared_data / "albert_base_v2_release" / "30k-clean.model"))
    rng = random.Random(0)
    numbers = sorted({"".join(rng.choices("0123456789", k=rng.randint(3, 7))) + rng.choice(["", "m", "s", ","])
                      for _ in range(20000)})
    other_op = tf_text.SentencepieceTokenizer(model=tokenizer.model_proto, out_type=tf.int32)
    ties = [text for text, ids in zip(numbers, other_op.tokenize(tf.constant(numbers)).to_list())
            if ids != tokenizer.sp.encode(tokenizer.preprocess(text))]
    assert ties, "no tie found: the test would prove nothing"
    texts = ties + [f"In {tie} the river rose." for tie in ties]
    check_offsets(tokenizer, TFAlbertTokenizer(tokenizer.model_proto), texts, tokenize_with_offsets)


def test_load_encoder_reads_an_export(exported):
    inputs = pack_batch(exported["tokenizer"], ["the garden window", "a river"], None, SEQ)
    expected = exported["model"].encoder(inputs, training=False)["sequence_output"]
    for path in (exported["root"], exported["root"] / "encoder"):
        encoder = load_encoder(str(path))
        for ours, theirs in zip(encoder.weights, exported["model"].encoder.weights):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        np.testing.assert_allclose(encoder(inputs, training=False)["sequence_output"], expected, atol=1e-6)


def test_encoder_also_serves_the_original_hub_modules_names(exported, tmp_path):
    import shutil

    import tensorflow as tf

    signatures = signature_defs(exported["encoder"])
    names = {name: (set(signature.inputs), set(signature.outputs)) for name, signature in signatures.items()}
    ours = {"input_word_ids", "input_mask", "input_type_ids"}
    assert names["serving_default"] == (ours, {"pooled_output", "sequence_output"})
    assert names["mlm"] == (ours | {"masked_lm_positions"}, {"mlm_logits"})
    # The original module's: export_to_tfhub.py's `tokens`, `sop` (sop_log_probs) and `tokenization_info`.
    assert names["tokens"] == ({"input_ids", "input_mask", "segment_ids"}, {"sequence_output", "pooled_output"})
    assert names["sop"] == (ours, {"sop_logits", "sop_log_probs"})
    assert names["tokenization_info"] == (set(), {"vocab_file", "do_lower_case", "keep_accents", "rewrite_quotes"})

    # Loaded from a copy: the vocabulary path is the copy's asset, as with the original's module.
    copy = shutil.copytree(exported["encoder"], tmp_path / "moved")
    encoder = tf.saved_model.load(str(copy))
    inputs = {name: tf.constant(value) for name, value in
              pack_batch(exported["tokenizer"], ["the garden window", "a river"], ["by the bridge", ""], SEQ).items()}
    by_default = encoder.signatures["serving_default"](**inputs)
    tokens = encoder.signatures["tokens"](input_ids=inputs["input_word_ids"], input_mask=inputs["input_mask"],
                                          segment_ids=inputs["input_type_ids"])
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(tokens[name], by_default[name])
    sop = encoder.signatures["sop"](**inputs)
    logits = sop["sop_logits"].numpy().astype(np.float64)
    expected = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    np.testing.assert_allclose(sop["sop_log_probs"], expected, atol=1e-6)
    info = encoder.signatures["tokenization_info"]()
    vocab_file = pathlib.Path(info["vocab_file"].numpy().decode("utf-8"))
    assert vocab_file.parent == copy / "assets" and vocab_file.is_file()
    assert vocab_file.read_bytes() == exported["tokenizer"].model_proto
    record = json.loads((exported["root"] / "albert_tf.json").read_text())
    assert bool(info["do_lower_case"].numpy()) is record["lower_case"] is True
    assert bool(info["keep_accents"].numpy()) is record["keep_accents"] is False
    assert bool(info["rewrite_quotes"].numpy()) is record["rewrite_quotes"] is False


def test_bad_requests_have_defined_results(exported):
    import tensorflow as tf

    serving = tf.saved_model.load(exported["serving"])
    preprocessing = tf.saved_model.load(exported["preprocessing"])
    huge = "word " * 20_000  # 100k characters
    odd = [b"", b"x" * 100_000, "café ünïcode".encode(), huge.encode(), b"   "]
    out = serving.signatures["serving_default"](text=tf.constant(odd), text_b=tf.constant([], tf.string))
    assert out["embedding"].shape == (5, 128) and np.isfinite(out["embedding"].numpy()).all()

    ids = {name: value.numpy() for name, value in preprocessing(tf.constant(odd)).items()}
    # The Python tokenizer's packing, huge texts truncated to max_seq_length.
    decoded = [text.decode("utf-8") for text in odd]
    for name, value in pack_batch(exported["tokenizer"], decoded, None, SEQ).items():
        np.testing.assert_array_equal(ids[name], value, err_msg=name)
    assert ids["input_mask"].sum(axis=1).tolist() == [2, SEQ, ids["input_mask"][2].sum(), SEQ, 2]

    # Invalid UTF-8 fails the request (INVALID_ARGUMENT), naming the row, in text and in text_b,
    # instead of being answered as some other text.
    broken = [b"fine", b"caf\xc3 \xff\xfe broken utf-8"]
    for call in (lambda: serving.signatures["serving_default"](text=tf.constant(broken), text_b=tf.constant([], tf.string)),
                 lambda: serving.signatures["serving_default"](text=tf.constant(["a", "b"]), text_b=tf.constant(broken)),
                 lambda: preprocessing(tf.constant(broken))):
        with pytest.raises(tf.errors.InvalidArgumentError, match="not valid UTF-8"):
            call()

    # A whitespace-only second segment is a (empty) second segment, as in Python; "" is none.
    pairs = preprocessing(tf.constant(["the river", "the river"]), tf.constant(["   ", ""]))
    expected = pack_batch(exported["tokenizer"], ["the river", "the river"], ["   ", ""], SEQ)
    np.testing.assert_array_equal(pairs["input_word_ids"].numpy(), expected["input_word_ids"])
    assert pairs["input_mask"].numpy().sum(1).tolist() == [5, 4]

    for call in (lambda: serving.signatures["serving_default"](text=tf.constant(["a", "b"]), text_b=tf.constant(["c"])),
                 lambda: preprocessing(tf.constant(["a"]), tf.constant(["b", "c"]))):
        with pytest.raises(tf.errors.InvalidArgumentError, match="text_b must be left out .or empty. or hold one"):
            call()
    empty = serving.signatures["serving_default"](text=tf.constant([], tf.string), text_b=tf.constant([], tf.string))
    assert empty["embedding"].shape == (0, 128) and empty["pooled_output"].shape == (0, 128)

    def example(**features):
        return tf.train.Example(features=tf.train.Features(feature={
            name: tf.train.Feature(bytes_list=tf.train.BytesList(value=[value])) for name, value in features.items()
        })).SerializeToString()

    examples = serving.signatures["serve_examples"](examples=tf.constant([
        example(text=b"the garden"), example(text=b"the garden", text_b=b"a river")]))
    by_text = serving.serve(tf.constant(["the garden", "the garden"]), tf.constant(["", "a river"]))
    np.testing.assert_allclose(examples["embedding"], by_text["embedding"], atol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="text"):
        serving.signatures["serve_examples"](examples=tf.constant([example(text_b=b"no text")]))
    with pytest.raises(tf.errors.InvalidArgumentError):
        serving.signatures["serve_examples"](examples=tf.constant([b"not a tf.Example"]))


def test_single_text_signature_needs_no_text_b(exported):
    import tensorflow as tf

    serving = tf.saved_model.load(exported["serving"])
    texts = tf.constant(["the river runs", "a quiet town"])
    alone = serving.serve(texts)["embedding"].numpy()  # the restored function keeps text_b's default
    signature = serving.signatures["serving_default"](text=texts, text_b=tf.constant([], tf.string))
    np.testing.assert_array_equal(alone, signature["embedding"].numpy())
    single = serving.signatures["serve_text"](text=texts)
    assert set(single) == {"pooled_output", "embedding"}
    for name, value in single.items():
        np.testing.assert_array_equal(value.numpy(), signature[name].numpy(), err_msg=name)
    paired = serving.serve(texts, tf.constant(["by the hill", "at night"]))["embedding"].numpy()
    assert not np.allclose(alone, paired)
    with pytest.raises(TypeError, match="text_b"):  # what README says: signatures take every input
        serving.signatures["serving_default"](text=texts)


# A fresh process that never imports tensorflow_text itself: load_export must register its ops.
LOAD_EXPORT = r"""
import sys
import numpy as np
import albert_tf
root, out = sys.argv[1:]
model = albert_tf.load_export(root)
assert "tensorflow_text" in sys.modules and "keras_hub" not in sys.modules
texts = ["the garden window", "a river by the hill"]
calls = {"single": model(texts), "one": model("the garden window"), "pairs": model(texts, ["by the hill", ""])}
np.savez(out, **{f"{call}_{name}": value for call, outputs in calls.items() for name, value in outputs.items()})
"""


def test_load_export_in_a_process_that_never_imported_tensorflow_text(exported, tmp_path):
    run_fresh("import sys; assert 'tensorflow_text' not in sys.modules\n" + LOAD_EXPORT, exported["root"],
              tmp_path / "out.npz")
    result = np.load(tmp_path / "out.npz")
    texts, texts_b = ["the garden window", "a river by the hill"], ["by the hill", ""]
    encoder = exported["model"].encoder
    for call, text_b in (("single", None), ("pairs", texts_b)):
        inputs = pack_batch(exported["tokenizer"], texts, text_b, SEQ)
        outputs = encoder(inputs, training=False)
        mask = inputs["input_mask"][..., None]
        mean = (np.asarray(outputs["sequence_output"]) * mask).sum(1) / mask.sum(1)
        np.testing.assert_allclose(result[f"{call}_pooled_output"], outputs["pooled_output"], atol=1e-5, rtol=0)
        np.testing.assert_allclose(result[f"{call}_embedding"], mean / np.linalg.norm(mean, axis=1, keepdims=True),
                                   atol=1e-5, rtol=0)
    assert not np.allclose(result["pairs_embedding"][0], result["single_embedding"][0])
    # One text is a batch of one (its own trimmed length: float32 round-off apart).
    np.testing.assert_allclose(result["one_embedding"], result["single_embedding"][:1], atol=1e-6, rtol=0)


def test_load_export_finds_and_calls_the_part_a_path_names(exported, task_exports, tmp_path):
    import shutil

    from albert_tf import load_export
    from albert_tf.export_lib.exported_model import ExportedModel, saved_model_dir

    root = str(exported["root"])
    for path in (root, os.path.join(root, "serving"), os.path.join(root, "serving", "tiny"), exported["serving"]):
        assert saved_model_dir(path) == exported["serving"], path
    # The newest version by number, not by name; one model name must be chosen among several.
    for version in ("9", "10"):
        os.makedirs(tmp_path / "serving" / "qa" / version)
        (tmp_path / "serving" / "qa" / version / "saved_model.pb").write_bytes(b"")
    assert saved_model_dir(str(tmp_path)) == str(tmp_path / "serving" / "qa" / "10")
    os.makedirs(tmp_path / "serving" / "other")
    with pytest.raises(ValueError, match="several serving models \\(other, qa\\); pass .*serving/NAME"):
        saved_model_dir(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no SavedModel; pass an albert_tf export"):
        saved_model_dir(str(tmp_path / "serving" / "other"))

    texts, texts_b = ["the garden window", "a river by the hill"], ["by the hill", ""]
    preprocessing = load_export(os.path.join(root, "preprocessing"))
    assert preprocessing.part == "preprocessing"
    for text_b in (None, texts_b):
        ids = preprocessing(texts, text_b)
        for name, value in pack_batch(exported["tokenizer"], texts, text_b, SEQ).items():
            np.testing.assert_array_equal(ids[name], value, err_msg=name)
    encoder = load_export(os.path.join(root, "encoder"))
    assert encoder.part == "encoder"
    outputs = encoder(texts, texts_b)
    expected = exported["model"].encoder(pack_batch(exported["tokenizer"], texts, texts_b, SEQ), training=False)
    np.testing.assert_allclose(outputs["sequence_output"], expected["sequence_output"], atol=1e-5, rtol=0)
    assert len(outputs["encoder_outputs"]) == exported["model"].albert_config.num_hidden_layers
    with pytest.raises(ValueError, match="2 texts but 1 second segments"):
        encoder(texts, ["one"])
    shutil.copytree(os.path.join(root, "encoder"), tmp_path / "alone" / "encoder")
    with pytest.raises(FileNotFoundError, match="an encoder takes token ids, and no preprocessing SavedModel"):
        load_export(str(tmp_path / "alone" / "encoder"))

    # String outputs come back as str.
    labels = ExportedModel(task_exports["classifier_serving"], "serving")(["the garden is green", "Ångström"])["label"]
    assert all(type(label) is str for label in labels) and set(labels.tolist()) <= set(LABELS)


def test_serving_requests_are_well_formed(exported):
    """The bodies name the signature's inputs with its dtypes and shapes; fed to the signature the way TF
    Serving decodes them, they give the same outputs as a direct call."""
    import tensorflow as tf
    from tensorflow.core.framework import types_pb2

    from albert_tf.export_lib.serving_requests import grpc_predict_request, rest_predict_body

    signatures = signature_defs(exported["serving"])
    signature = signatures["serving_default"]
    serving = tf.saved_model.load(exported["serving"])
    texts, texts_b = ["the garden window", "Café, 3.0, and more"], ["a river", ""]
    direct = serving.serve(tf.constant(texts), tf.constant(texts_b))

    body = json.loads(json.dumps(rest_predict_body(texts, texts_b)))
    assert body == {"signature_name": "serving_default", "instances": [
        {"text": "the garden window", "text_b": "a river"}, {"text": "Café, 3.0, and more", "text_b": ""}]}
    single = json.loads(json.dumps(rest_predict_body(texts)))
    assert single["signature_name"] == "serve_text"
    assert [set(instance) for instance in single["instances"]] == [{"text"}, {"text"}]
    for request_body in (body, single):
        # Every input of the addressed signature, nothing left to a server's defaults.
        columns = {name: [instance[name] for instance in request_body["instances"]]
                   for name in request_body["instances"][0]}
        assert set(columns) == set(signatures[request_body["signature_name"]].inputs)
        served = serving.signatures[request_body["signature_name"]](
            **{name: tf.constant(values) for name, values in columns.items()})
        reference = direct if "text_b" in columns else serving.serve(tf.constant(texts))
        np.testing.assert_allclose(served["embedding"], reference["embedding"], atol=1e-6)

    request = grpc_predict_request("tiny", texts, texts_b, version=1)
    assert request.model_spec.name == "tiny" and request.model_spec.version.value == 1
    assert request.model_spec.signature_name == "serving_default"
    for name, tensor in request.inputs.items():
        assert tensor.dtype == types_pb2.DT_STRING == signature.inputs[name].dtype
        assert [d.size for d in tensor.tensor_shape.dim] == [2]
        assert len(signature.inputs[name].tensor_shape.dim) == 1
    decoded = {name: tf.make_ndarray(tensor) for name, tensor in request.inputs.items()}
    assert decoded["text"].tolist() == [t.encode() for t in texts]
    np.testing.assert_allclose(serving.signatures["serving_default"](**decoded)["embedding"], direct["embedding"],
                               atol=1e-6)
    single_request = grpc_predict_request("tiny", texts)
    assert set(single_request.inputs) == {"text"} and single_request.model_spec.signature_name == "serve_text"
    with pytest.raises(ValueError, match="2 texts but 1 second segments"):
        rest_predict_body(["a", "b"], ["c"])


def tf_serving_inputs(signature, body=None, grpc_inputs=None):
    """{input name: numpy array}: what TF Serving feeds `signature` (a SignatureDef) for a REST predict
    `body` (util/json_tensor.cc: each instance, or the `inputs` object, must name every input of the
    signature) or for gRPC PredictRequest inputs (saved_model/util.cc's GetInputValues: an input left
    out takes the signature's default). Raises ValueError with TF Serving's message where it refuses."""
    import tensorflow as tf

    names = set(signature.inputs)
    if body is not None and "instances" in body:
        rows = body["instances"]
        if not isinstance(rows[0], dict):  # a plain list, for a signature of one input
            rows = [{next(iter(names)): row} for row in rows]
        for index, row in enumerate(rows):
            if set(row) != names:
                raise ValueError(f"Failed to process element: {index} of 'instances' list. JSON object: {row} keys "
                                 f"must be equal to: {','.join(sorted(names))}")
        return {name: np.array([row[name] for row in rows], object) for name in names}
    if body is not None:
        missing = sorted(names - set(body["inputs"]))
        if missing:
            raise ValueError(f"Missing named input: {missing[0]} in 'inputs' object.")
        return {name: np.array(body["inputs"][name], object) for name in names}
    return {name: tf.make_ndarray(grpc_inputs[name] if name in grpc_inputs else signature.defaults[name])
            for name in names}


def test_the_documented_rest_bodies_and_a_grpc_request_without_text_b(exported):
    """Every REST body docs/pipeline.md shows, decoded as TF Serving decodes it and fed to its signature,
    answers as the direct call; the same pairs without text_b are refused over REST; over gRPC a request
    to serving_default without text_b is answered as single texts (the signature's default)."""
    import re

    import tensorflow as tf

    signatures = signature_defs(exported["serving"])
    serving = tf.saved_model.load(exported["serving"])
    docs = (REPO_ROOT / "docs" / "pipeline.md").read_text(encoding="utf-8")
    bodies = [json.loads(body) for body in re.findall(r"curl -d '(.*?)'", docs)]
    assert {body["signature_name"] for body in bodies} == {"serve_text", "serving_default"}
    assert {"instances", "inputs"} <= {key for body in bodies for key in body}

    def served(name, inputs):
        return serving.signatures[name](**{key: tf.constant(value, tf.string) for key, value in inputs.items()})

    for body in bodies:
        inputs = tf_serving_inputs(signatures[body["signature_name"]], body=body)
        direct = serving.serve(tf.constant(inputs["text"], tf.string), tf.constant(inputs.get("text_b", []), tf.string))
        np.testing.assert_allclose(served(body["signature_name"], inputs)["embedding"], direct["embedding"], atol=1e-6)

    pairs = next(body for body in bodies if "instances" in body and body["signature_name"] == "serving_default")
    texts = [row["text"] for row in pairs["instances"]]
    with pytest.raises(ValueError, match="keys must be equal to: text,text_b"):
        tf_serving_inputs(signatures["serving_default"], body={"instances": [{"text": text} for text in texts]})
    with pytest.raises(ValueError, match="Missing named input: text_b in 'inputs' object"):
        tf_serving_inputs(signatures["serving_default"], body={"inputs": {"text": texts}})

    inputs = tf_serving_inputs(signatures["serving_default"],
                               grpc_inputs={"text": tf.make_tensor_proto(texts, dtype=tf.string)})
    assert inputs["text_b"].shape == (0,)  # the signature's default: no second segments
    np.testing.assert_allclose(served("serving_default", inputs)["embedding"],
                               served("serve_text", {"text": texts})["embedding"], atol=1e-6)


def test_export_cli_errors_and_atomicity(exported, tmp_path, monkeypatch):
    import tensorflow as tf

    result = subprocess.run([sys.executable, "-m", "albert_tf.export", f"--checkpoint={tmp_path / 'none'}",
                             f"--output_dir={tmp_path / 'out'}"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode == 1 and "no such checkpoint directory" in result.stderr
    assert not (tmp_path / "out").exists()
    result = subprocess.run([sys.executable, "-m", "albert_tf.export", f"--checkpoint={exported['checkpoint']}",
                             f"--output_dir={exported['root']}"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode == 1 and "not empty" in result.stderr and "--overwrite" in result.stderr

    with pytest.raises(ValueError, match="^max_seq_length=1000 exceeds the max_position_embeddings"):
        export(exported["checkpoint"], str(tmp_path / "long"), max_seq_length=1000)
    with pytest.raises(FileNotFoundError, match="no such SentencePiece model"):
        export(exported["checkpoint"], str(tmp_path / "spm"), spm_model_file=str(tmp_path / "missing.model"))

    # A failure while writing the last SavedModel leaves nothing behind.
    save = tf.saved_model.save

    def failing_save(obj, path, signatures=None):
        if "serving" in path:
            raise OSError("disk full")
        return save(obj, path, signatures=signatures)

    monkeypatch.setattr(tf.saved_model, "save", failing_save)
    with pytest.raises(OSError, match="disk full"):
        export(exported["checkpoint"], str(tmp_path / "partial"), max_seq_length=SEQ)
    assert os.listdir(tmp_path) == []


def test_fill_mask_and_embed_read_exports_and_checkpoints_alike(exported):
    from albert_tf.models.embedder import Embedder
    from albert_tf.models.mask_filler import MaskFiller

    checkpoint = exported["checkpoint"]
    text = "The river [MASK] of the [MASK] garden."
    from_export = MaskFiller(str(exported["root"])).fill(text, top_k=3, max_seq_length=SEQ)
    from_checkpoint = MaskFiller(checkpoint).fill(text, top_k=3, max_seq_length=SEQ)
    assert len(from_export) == 2 and [p for p, _ in from_export] == [p for p, _ in from_checkpoint]
    for (_, a), (_, b) in zip(from_export, from_checkpoint):
        assert [piece for piece, _ in a] == [piece for piece, _ in b]
        np.testing.assert_allclose([p for _, p in a], [p for _, p in b], atol=1e-5)
    sentences = ["the garden window", "a letter in the morning", "the river"]
    np.testing.assert_allclose(Embedder(str(exported["root"])).embed(sentences),
                               Embedder(checkpoint, max_seq_length=SEQ).embed(sentences), atol=1e-5)
    with pytest.raises(ValueError, match=r"no \[MASK\]"):
        MaskFiller(checkpoint).fill("nothing to fill")


def test_fill_mask_says_how_many_masks_lie_beyond_the_window(exported):
    """300 masks in a 32-token window: the tool's last line says how many were answered, and why."""
    from albert_tf.fill_mask import answer_lines
    from albert_tf.models.mask_filler import MaskFiller

    filler = MaskFiller(exported["checkpoint"])
    text = "the river [MASK] " * 300
    lines = answer_lines(filler, text, 1, SEQ)
    answered = sum(line.startswith("  [MASK] ") for line in lines)
    # [CLS], then "the river [MASK]" three pieces at a time, cut before [SEP].
    assert answered == (SEQ - 2) // 3
    assert lines[-1] == (f"  {answered} of the 300 [MASK]s answered: the other {300 - answered} lie beyond "
                         f"max_seq_length={SEQ} tokens, where the text is cut (the model takes up to "
                         f"{exported['model'].albert_config.max_position_embeddings}).")
    assert answer_lines(filler, "the river [MASK].", 1, SEQ)[-1].startswith("  [MASK] 1: ")


LABELS = ["contradiction", "entailment", "neutral"]


@pytest.fixture(scope="module")
def task_exports(exported, tmp_path_factory):
    """A classifier and a span labeler on the exported encoder, each exported."""
    import tensorflow as tf

    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.models.albert_span_labeler import AlbertSpanLabeler

    directory = tmp_path_factory.mktemp("tasks")
    spm = str(exported["root"] / "spm.model")
    encoder = exported["model"].encoder
    classifier = AlbertClassifier(encoder, len(LABELS))
    classifier_dir = write_model_dir(classifier, str(directory / "classifier"), "classifier", files={"spm.model": spm},
                                     num_labels=len(LABELS), label_names=LABELS, is_regression=False)
    classifier_serving = export(classifier_dir, str(directory / "classifier_export"), max_seq_length=SEQ)["serving"]
    labeler = AlbertSpanLabeler(encoder)
    span_dir = write_model_dir(labeler, str(directory / "span"), "span_labeler", files={"spm.model": spm})
    span_serving = export(span_dir, str(directory / "span_export"), max_seq_length=SEQ)["serving"]
    return {"classifier": classifier, "classifier_serving": tf.saved_model.load(classifier_serving),
            "labeler": labeler, "span_serving": tf.saved_model.load(span_serving),
            "classifier_dir": classifier_dir, "span_dir": span_dir}


def test_classifier_serves_probabilities_and_labels(exported, task_exports):
    import tensorflow as tf

    serving = task_exports["classifier_serving"]
    premises, hypotheses = ["the garden is green", "a window", "Ångström"], ["it rains", "", "the river"]
    out = serving.signatures["serving_default"](text=tf.constant(premises), text_b=tf.constant(hypotheses))
    inputs = pack_batch(exported["tokenizer"], premises, hypotheses, SEQ)
    logits = np.asarray(task_exports["classifier"](inputs, training=False)["logits"])
    expected = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    np.testing.assert_allclose(out["probabilities"], expected, atol=1e-5)
    assert out["label_id"].numpy().tolist() == expected.argmax(1).tolist()
    assert [label.decode() for label in out["label"].numpy()] == [LABELS[i] for i in expected.argmax(1)]
    # Single texts: serve_text is the pair signature with no second segments.
    single = serving.signatures["serve_text"](text=tf.constant(premises))
    no_pairs = serving.signatures["serving_default"](text=tf.constant(premises), text_b=tf.constant([""] * 3))
    assert set(single) == {"probabilities", "label_id", "label"}
    for name, value in single.items():
        np.testing.assert_array_equal(value.numpy(), no_pairs[name].numpy(), err_msg=name)


def test_load_export_says_once_that_a_pair_classifier_got_single_texts(exported, task_exports, tmp_path):
    """A classifier whose record says it was fine-tuned on pairs (takes_pairs) answers single texts, but load_export
    warns once, naming the call to make; a pair call, and a classifier whose record says nothing, stay silent."""
    import warnings

    import tensorflow as tf

    from albert_tf import load_export
    from albert_tf.export_lib.exported_model import ExportedModel
    from albert_tf.export_lib.serving_module import serving_module
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    serving = serving_module(TFAlbertTokenizer(exported["tokenizer"].model_proto), SEQ, task_exports["classifier"],
                             {"model": "classifier", "num_labels": len(LABELS), "label_names": LABELS,
                              "takes_pairs": True})
    tf.saved_model.save(serving, str(tmp_path / "1"), signatures=serving.signatures())
    model = load_export(tmp_path / "1")
    with pytest.warns(UserWarning, match=r"fine-tuned on text pairs \(its albert_tf.json records takes_pairs\).*"
                                         r"pass each text's second text, \"\" where it has none: "
                                         r"model\(texts, texts_b\)$"):
        alone = model(["the garden is green"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model(["the garden is green"])  # once per loaded model
        assert model(["the garden is green"], [""])["label"].tolist() == alone["label"].tolist()
        ExportedModel(task_exports["classifier_serving"], "serving")(["the garden is green"])


def test_serving_runs_the_encoder_on_the_longest_row_only(exported):
    import tensorflow as tf

    from albert_tf.export_lib.serving_module import trim_padding

    texts = ["a short one", "a somewhat longer text about the garden and the river"]
    inputs = pack_batch(exported["tokenizer"], texts, None, SEQ)
    longest = int(inputs["input_mask"].sum(1).max())
    assert longest < SEQ
    trimmed = trim_padding({name: tf.constant(value) for name, value in inputs.items()})
    assert {name: tuple(value.shape) for name, value in trimmed.items()} == {
        name: (2, longest) for name in inputs}
    for name, value in trimmed.items():
        np.testing.assert_array_equal(value, inputs[name][:, :longest])
    # The padded keys' attention weights are exactly zero: the pooled output does not change.
    encoder = exported["model"].encoder
    np.testing.assert_allclose(encoder(trimmed, training=False)["pooled_output"],
                               encoder(inputs, training=False)["pooled_output"], atol=1e-6, rtol=0)


def test_xla_shape_buckets_pad_with_empty_rows_and_padded_keys():
    import tensorflow as tf

    from albert_tf.export_lib.serving_module import length_buckets, pad_to_buckets

    assert length_buckets(128) == [16, 32, 64, 128]
    assert length_buckets(100) == [16, 32, 64, 100]
    assert length_buckets(16) == [16] and length_buckets(12) == [12]
    rng = np.random.default_rng(0)
    for (batch, length), padded in {(0, 1): (1, 16), (1, 5): (1, 16), (3, 17): (4, 32), (8, 64): (8, 64),
                                    (9, 65): (16, 128), (17, 128): (24, 128), (24, 100): (24, 128)}.items():
        inputs = {name: rng.integers(1, 50, (batch, length)).astype("int32")
                  for name in ("input_word_ids", "input_mask", "input_type_ids")}
        out = pad_to_buckets({name: tf.constant(value) for name, value in inputs.items()}, 128)
        for name, value in out.items():
            assert tuple(value.shape) == padded, (batch, length, name)
            np.testing.assert_array_equal(value[:batch, :length], inputs[name])
            assert int(tf.reduce_sum(tf.abs(value))) == int(np.abs(inputs[name]).sum())  # the rest is zeros


@pytest.mark.slow
def test_serving_xla_gives_the_plain_graphs_outputs(exported, task_exports, tmp_path):
    """--serving_xla: the same outputs for every served kind, and the SavedModel marks the model part for XLA."""
    import tensorflow as tf

    from albert_tf.export_lib.serving_module import serving_module
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    tokenizer = TFAlbertTokenizer(exported["tokenizer"].model_proto)
    texts = tf.constant(["the garden is green", "a window", "Ångström " * 40])  # batch 3 -> 4, length 32
    texts_b = tf.constant(["it rains", "", "the river by the garden"])
    kinds = {"pretrainer": (exported["model"], {"model": "pretrainer"}),
             "classifier": (task_exports["classifier"], {"model": "classifier", "num_labels": len(LABELS),
                                                         "label_names": LABELS}),
             "span_labeler": (task_exports["labeler"], {"model": "span_labeler"})}
    for kind, (model, metadata) in kinds.items():
        modules = [serving_module(tokenizer, SEQ, model, metadata, xla=xla) for xla in (False, True)]
        plain, compiled = (module.serve(texts, texts_b) for module in modules)
        assert set(plain) == set(compiled)
        for name, value in plain.items():
            if value.dtype.is_floating:
                np.testing.assert_allclose(compiled[name], value, atol=1e-5, rtol=1e-5, err_msg=f"{kind} {name}")
            else:
                np.testing.assert_array_equal(compiled[name], value, err_msg=f"{kind} {name}")
    plain, compiled = (serving_module(tokenizer, SEQ, exported["model"], {"model": "pretrainer"}, xla=xla)
                       for xla in (False, True))
    np.testing.assert_allclose(compiled.serve(tf.constant(["a window"]))["pooled_output"],  # the length-16 bucket
                               plain.serve(tf.constant(["a window"]))["pooled_output"], atol=1e-5, rtol=1e-5)
    empty = compiled.serve(tf.constant([], tf.string))  # padded to one empty row, cut off again
    assert {name: tuple(value.shape) for name, value in empty.items()} == {
        name: (0, exported["model"].albert_config.hidden_size) for name in ("pooled_output", "embedding")}

    paths = export(exported["checkpoint"], str(tmp_path / "xla"), max_seq_length=SEQ, serving_xla=True)
    from tensorflow.core.protobuf import saved_model_pb2

    with open(os.path.join(paths["serving"], "saved_model.pb"), "rb") as f:
        functions = saved_model_pb2.SavedModel.FromString(f.read()).meta_graphs[0].graph_def.library.function
    assert any(function.attr["_XlaMustCompile"].b for function in functions)
    served = tf.saved_model.load(paths["serving"]).signatures["serving_default"](text=texts,
                                                                                 text_b=tf.constant([""] * 3))
    expected = plain.serve(texts)
    for name in ("pooled_output", "embedding"):
        np.testing.assert_allclose(served[name], expected[name], atol=1e-5, rtol=1e-5)


def test_serving_outputs_pooled_alone(exported, task_exports, tmp_path):
    """--serving_outputs=pooled_output: the same pooled vectors (last layer at [CLS] only), plain or XLA;
    bad choices are refused before anything is written."""
    import tensorflow as tf

    from albert_tf.export_lib.serving_module import serving_module
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    tokenizer = TFAlbertTokenizer(exported["tokenizer"].model_proto)
    texts = tf.constant(["the garden is green", "a window", "Ångström " * 40])
    full = serving_module(tokenizer, SEQ, exported["model"], {"model": "pretrainer"})
    expected = full.serve(texts)["pooled_output"]
    for xla in (False, True):
        pooled = serving_module(tokenizer, SEQ, exported["model"], {"model": "pretrainer"}, xla=xla,
                               outputs=["pooled_output"])
        out = pooled.serve(texts)
        assert set(out) == {"pooled_output"}
        np.testing.assert_allclose(out["pooled_output"], expected, atol=1e-5, rtol=1e-5)
    embedding_only = serving_module(tokenizer, SEQ, exported["model"], {"model": "pretrainer"}, outputs=["embedding"])
    np.testing.assert_allclose(embedding_only.serve(texts)["embedding"], full.serve(texts)["embedding"], atol=1e-6)

    with pytest.raises(ValueError, match="choose from pooled_output, embedding"):
        export(exported["checkpoint"], str(tmp_path / "bad"), max_seq_length=SEQ, serving_outputs=["cls"])
    assert not (tmp_path / "bad").exists()
    with pytest.raises(ValueError, match="outputs \\(none\\): choose from"):
        serving_module(tokenizer, SEQ, exported["model"], {"model": "pretrainer"}, outputs=[])
    with pytest.raises(ValueError, match="outputs are fixed"):
        serving_module(tokenizer, SEQ, task_exports["classifier"],
                      {"model": "classifier", "num_labels": len(LABELS)}, outputs=["pooled_output"])


def read_warmup_requests(serving_dir):
    """TF Serving's warm-up file of an export, parsed with TF Serving's own protos: the PredictRequests."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    path = os.path.join(serving_dir, "assets.extra", "tf_serving_warmup_requests")
    logs = [prediction_log_pb2.PredictionLog.FromString(record.numpy()) for record in tf.data.TFRecordDataset(path)]
    assert all(log.WhichOneof("log_type") == "predict_log" for log in logs)
    return [log.predict_log.request for log in logs]


@pytest.mark.slow
def test_warmup_requests_fill_every_shape_bucket(exported, task_exports, tmp_path):
    """The warm-up records TF Serving replays at load time: one request per batch size and, for XLA exports,
    per length bucket, so every program the chosen batch sizes need is compiled before traffic."""
    import tensorflow as tf

    from albert_tf.export_lib.serving_module import serving_module
    from albert_tf.export_lib.serving_warmup import warmup_requests
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    def inputs(request):
        """The request's inputs, as TF Serving decodes them."""
        return {name: tf.constant(tf.make_ndarray(tensor)) for name, tensor in request.inputs.items()}

    # Plain graphs (the module fixture's export, default batch sizes): one short request per batch size for
    # each raw-text signature, naming every input of it; the pair signature's second segments are all "".
    plain = read_warmup_requests(exported["serving"])
    signatures = signature_defs(exported["serving"])
    assert [(len(request.inputs["text"].string_val), request.model_spec.signature_name) for request in plain] == [
        (size, signature) for size in (1, 2, 4, 8) for signature in ("serve_text", "serving_default")]
    assert {request.model_spec.name for request in plain} == {"tiny"}
    for request in plain:
        assert set(request.inputs) == set(signatures[request.model_spec.signature_name].inputs)
        if "text_b" in request.inputs:
            assert set(tf.make_ndarray(request.inputs["text_b"]).tolist()) == {b""}

    # XLA: every (batch bucket, length bucket) of batch sizes 1, 3, 9 and lengths up to SEQ = 32, per signature.
    paths = export(exported["checkpoint"], str(tmp_path / "xla"), max_seq_length=SEQ, serving_xla=True,
                   serving_warmup_batch_sizes=["1", "3", "9"])
    requests = read_warmup_requests(paths["serving"])
    preprocessing = tf.saved_model.load(exported["preprocessing"])
    serving = tf.saved_model.load(paths["serving"])
    buckets = set()
    for request in requests:
        texts = inputs(request)["text"]
        length = int(tf.reduce_max(tf.reduce_sum(preprocessing(texts)["input_mask"], axis=1)))
        batch = len(texts)
        batch_bucket = min(size for size in (1, 2, 4, 8) if size >= batch) if batch <= 8 else -(-batch // 8) * 8
        buckets.add((request.model_spec.signature_name, batch_bucket, 16 if length <= 16 else 32))
        outputs = serving.signatures[request.model_spec.signature_name](**inputs(request))  # replayed as TF Serving does
        assert outputs["pooled_output"].shape[0] == batch
    assert buckets == {(signature, batch, length) for signature in ("serve_text", "serving_default")
                       for batch in (1, 4, 16) for length in (16, 32)}
    assert len(requests) == len(buckets)

    # A span labeler packs every row to max_seq_length: one request per batch size, with contexts.
    tokenizer = TFAlbertTokenizer(exported["tokenizer"].model_proto)
    labeler = serving_module(tokenizer, SEQ, task_exports["labeler"], {"model": "span_labeler"}, xla=True)
    requests = warmup_requests(labeler, "qa", [2, 2, 5])
    assert [len(request.inputs["text_b"].string_val) for request in requests] == [2, 5]
    assert labeler.serve(**inputs(requests[1]))["start"].shape == (5,)
    with pytest.raises(ValueError, match="1001 warm-up requests .* at most 1000"):
        warmup_requests(labeler, "qa", range(1, 1002))
    encoder = serving_module(tokenizer, SEQ, exported["model"], {"model": "pretrainer"})
    with pytest.raises(ValueError, match="1002 warm-up requests .* x 2 signatures\\): TF Serving reads at most 1000"):
        warmup_requests(encoder, "tiny", range(1, 502))

    # No batch sizes, no file; a bad one is refused before anything is written.
    paths = export(exported["checkpoint"], str(tmp_path / "none"), max_seq_length=SEQ, serving_warmup_batch_sizes=[])
    assert not os.path.exists(os.path.join(paths["serving"], "assets.extra"))
    for bad in (["0"], ["two"]):
        with pytest.raises(ValueError, match=f"warm-up batch size '{bad[0]}': must be a positive integer"):
            export(exported["checkpoint"], str(tmp_path / "bad"), max_seq_length=SEQ, serving_warmup_batch_sizes=bad)
        assert not (tmp_path / "bad").exists()


def test_regression_serves_the_score(exported):
    import tensorflow as tf

    from albert_tf.export_lib.serving_module import serving_module
    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    regressor = AlbertClassifier(exported["model"].encoder, 1)
    metadata = {"model": "classifier", "num_labels": 1, "label_names": ["score"], "is_regression": True}
    serving = serving_module(TFAlbertTokenizer(exported["tokenizer"].model_proto), SEQ, regressor, metadata)
    texts, texts_b = ["a man is playing a guitar", "the river"], ["a man plays music", "the garden"]
    out = serving.serve(tf.constant(texts), tf.constant(texts_b))
    assert set(out) == {"score"}
    logits = regressor(pack_batch(exported["tokenizer"], texts, texts_b, SEQ), training=False)["logits"]
    np.testing.assert_allclose(out["score"], np.asarray(logits)[:, 0], atol=1e-5)


def test_span_labeler_serves_answers_in_the_contexts_own_text(exported, task_exports):
    import tensorflow as tf

    tokenizer, labeler = exported["tokenizer"], task_exports["labeler"]
    questions = ["Where is the garden?", "What rose?", "Anything?", "Where?", "Where is it?"]
    contexts = ["The Garden of the Café is by the River, in the Village.",
                "Prices rose 3.0, 12, and  1,000,000 units in the ``old'' market.",
                "",
                "word " * 20_000,
                "The\x00Garden\x01 of\x02 the\x7f Café\x1b is by the \x00River, in the Village."]
    serving = task_exports["span_serving"]
    assert "serve_text" not in serving.signatures  # a question alone has nowhere to find its answer
    out = {name: value.numpy() for name, value in serving.signatures["serving_default"](
        text=tf.constant(questions), text_b=tf.constant(contexts)).items()}
    inputs = pack_batch(tokenizer, questions, contexts, SEQ)
    outputs = labeler(inputs, training=False)
    for row, (question, context) in enumerate(zip(questions, contexts)):
        start_logits, end_logits = (np.asarray(outputs[name])[row] for name in ("start_logits", "end_logits"))
        in_context = [i for i in range(SEQ) if inputs["input_type_ids"][row, i] == 1][:-1]  # not the last [SEP]
        if not in_context:
            assert (out["start"][row], out["end"][row], out["answer"][row]) == (-1, -1, b"")
            continue
        best = max(((s, e) for s in in_context for e in in_context if s <= e < s + 30),
                   key=lambda span: start_logits[span[0]] + end_logits[span[1]])
        assert (out["start"][row], out["end"][row]) == best
        np.testing.assert_allclose(out["score"][row], start_logits[best[0]] + end_logits[best[1]], atol=1e-5)
        aligned = tokenize_with_alignment(tokenizer, context)
        first = in_context[0]
        answer = context[aligned.starts[best[0] - first] : aligned.ends[best[1] - first]]
        assert out["answer"][row].decode() == answer and answer
    # How much of each context the answer was searched in: all of it where every token fit beside the question,
    # else up to the last token that did (characters, Python str indices).
    read = []
    for row, context in enumerate(contexts):
        aligned, kept = tokenize_with_alignment(tokenizer, context), int(inputs["input_type_ids"][row].sum()) - 1
        read.append(len(context) if max(kept, 0) == len(aligned.ids) else aligned.ends[kept - 1])
    assert out["context_characters_read"].dtype == np.int32 and out["context_characters_read"].tolist() == read
    assert read[0] == len(contexts[0]) and 0 < read[3] < len(contexts[3]) and read[2] == 0
    # load_export warns, naming each context its answer did not search whole.
    from albert_tf.export_lib.exported_model import ExportedModel

    cut = [row for row, context in enumerate(contexts) if read[row] < len(context)]
    assert 3 in cut and 0 not in cut
    with pytest.warns(UserWarning, match="read only the beginning of " + ", ".join(
            rf"context {row} \(the first {read[row]} of its {len(contexts[row])} characters\)" for row in cut)
            + ": its answer comes from them alone"):
        ExportedModel(serving, "serving")(questions, contexts)
    # The context's own case and accents, not the lowercased pieces.
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"Which?"])),
        "text_b": tf.train.Feature(bytes_list=tf.train.BytesList(value=["CAFÉ ÅNGSTRÖM".encode()]))}))]
    answer = serving.signatures["serve_examples"](examples=tf.constant([e.SerializeToString() for e in examples]))
    assert answer["answer"].numpy()[0].decode() in "CAFÉ ÅNGSTRÖM" and answer["answer"].numpy()[0].decode().isupper()


def test_tf_hub_contract_training_flag_and_separate_preprocessing_halves(exported, tmp_path):
    """TF Hub's encoder `__call__(inputs, training=)` runs dropout when fine-tuning; its preprocessors expose
    `tokenize` and `bert_pack_inputs(segments, seq_length=)` for any length, not just the exported one."""
    import keras
    import tensorflow as tf

    from albert_tf.networks.albert_encoder import AlbertEncoder

    config = AlbertConfig.from_dict({**exported["model"].albert_config.to_dict(), "hidden_dropout_prob": 0.1,
                                     "attention_probs_dropout_prob": 0.1})
    keras.utils.set_random_seed(3)
    model = AlbertEncoder(config)
    spm = os.path.join(exported["checkpoint"], "spm.model")
    checkpoint = write_model_dir(model, str(tmp_path / "checkpoint"), files={"spm.model": spm})
    paths = export(checkpoint, str(tmp_path / "export"), max_seq_length=16)
    encoder = tf.saved_model.load(paths["encoder"])
    preprocessing = tf.saved_model.load(paths["preprocessing"])

    texts = ["the river runs by the hill", "a quiet town at night, 3.0, café"]
    inputs = preprocessing(tf.constant(texts))
    reference = model(inputs, training=False)["sequence_output"].numpy()
    np.testing.assert_allclose(encoder(inputs)["sequence_output"].numpy(), reference, atol=1e-5)
    np.testing.assert_allclose(encoder(inputs, training=False)["sequence_output"].numpy(), reference, atol=1e-5)
    with_dropout = [encoder(inputs, training=True)["sequence_output"].numpy() for _ in range(2)]
    assert not np.allclose(with_dropout[0], reference) and not np.allclose(with_dropout[0], with_dropout[1])

    # Fine-tuning through the export with dropout on: gradients reach the encoder and the loss falls.
    labels = tf.constant([0, 1])
    head = tf.Variable(np.random.default_rng(0).normal(0, 0.1, (config.hidden_size, 2)).astype("float32"))
    variables = list(encoder.trainable_variables) + [head]
    optimizer = keras.optimizers.Adam(1e-3)
    losses = []
    for _ in range(10):
        with tf.GradientTape() as tape:
            logits = encoder(inputs, training=True)["pooled_output"] @ head
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        gradients = tape.gradient(loss, variables)
        assert all(g is not None for g in gradients)
        optimizer.apply([tf.convert_to_tensor(g) for g in gradients], variables)
        losses.append(float(loss))
    assert losses[-1] < losses[0], losses

    # tokenize + bert_pack_inputs at another length than the export's 16 = the Python packing at 24.
    tokenizer = AlbertTokenizer(spm)
    ids_a = preprocessing.tokenize(tf.constant(texts))
    ids_b = preprocessing.tokenize(tf.constant(texts[::-1]))
    assert ids_a.to_list() == [tokenizer.encode(text) for text in texts]
    for segments, text_b in (([ids_a], None), ([ids_a, ids_b], texts[::-1])):
        packed = preprocessing.bert_pack_inputs(segments, seq_length=tf.constant(24))
        for name, value in pack_batch(tokenizer, texts, text_b, 24).items():
            np.testing.assert_array_equal(packed[name].numpy(), value, err_msg=name)


def test_serving_refuses_requests_above_its_row_limit_and_load_export_splits_them(exported, tmp_path):
    """A request of a hundred thousand rows once ran until the server's memory was gone: the serving model takes
    at most --serving_max_batch_size texts (recorded), refuses more with a message naming the limit in every
    signature, and load_export sends larger batches as several requests with the same outputs."""
    import tensorflow as tf

    from albert_tf.export_lib.exported_model import load_export
    from albert_tf.settings import SettingError

    root = tmp_path / "limited"
    paths = export(exported["checkpoint"], str(root), max_seq_length=SEQ, serving_max_batch_size=3,
                   serving_warmup_batch_sizes=(1, 2))
    assert json.loads((root / "albert_tf.json").read_text())["serving_max_batch_size"] == 3
    serving = tf.saved_model.load(paths["serving"])
    texts = [f"the river number {i}" for i in range(7)]
    for name, inputs in (("serve_text", {"text": tf.constant(texts[:4])}),
                         ("serving_default", {"text": tf.constant(texts[:4]), "text_b": tf.constant([], tf.string)})):
        with pytest.raises(tf.errors.InvalidArgumentError, match="a request of.*4.*at most 3 per request"):
            serving.signatures[name](**inputs)
    assert serving.signatures["serve_text"](text=tf.constant(texts[:3]))["embedding"].shape[0] == 3
    split = load_export(root)(texts)["embedding"]
    one_by_one = np.concatenate([load_export(root)([text])["embedding"] for text in texts])
    assert split.shape[0] == 7
    np.testing.assert_allclose(split, one_by_one, atol=1e-5)
    with pytest.raises(SettingError, match="serving_warmup_batch_sizes.*8 above .*serving_max_batch_size.*=3"):
        export(exported["checkpoint"], str(tmp_path / "x"), serving_max_batch_size=3)
    with pytest.raises(SettingError, match="must be a positive integer"):
        export(exported["checkpoint"], str(tmp_path / "x"), serving_max_batch_size=0,
               serving_warmup_batch_sizes=())
    assert not (tmp_path / "x").exists()
