"""albert-export --serving_precision=bfloat16: every served model kind in bfloat16, its accuracy gate, and an export
that fails the gate writes nothing."""

import json
import types

import numpy as np
import pytest

from albert_tf.export_lib import bfloat16_export
from albert_tf.export_lib.bfloat16_export import BFloat16GateError, cpu_bfloat16_support, emulation_note
from albert_tf.export_lib.exporter import export
from albert_tf.export_lib.serving_module import SERVING_BY_KIND
# The float32 exports' fixtures, reused: a pretrainer (encoder), a classifier and a span labeler on it, and a
# tagger.
from test_export import SEQ, exported, task_exports  # noqa: F401
from test_tagger_export import tagger  # noqa: F401

TEXTS = ["the garden is green", "Ångström", "", "a window by the river in the summer morning"]


def serving_of(paths):
    import tensorflow as tf

    return tf.saved_model.load(paths["serving"])


def float_dtypes(saved_model_dir):
    """The dtypes of a SavedModel's floating-point variables, as its checkpoint stores them."""
    import os

    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(saved_model_dir, "variables", "variables"))
    return {dtype.name for dtype in reader.get_variable_to_dtype_map().values() if dtype.is_floating}


def check_bfloat16_export(checkpoint, root, float_serving, request, **settings):
    """Exports `checkpoint` in bfloat16 to `root`; checks its record, its weights, and that it answers `request`
    (keyword arguments of serving_default) as `float_serving` does: the same labels or spans, close scores."""
    paths = export(checkpoint, str(root), serving_precision="bfloat16", **settings)
    with open(root / "albert_tf.json") as f:
        record = json.load(f)
    assert record["serving_precision"] == "bfloat16" and record["bfloat16_gate"]["passed"]
    assert record["made_on_cpu"] == bfloat16_export.cpu_bfloat16_support()
    serving = serving_of(paths)
    # Weights stored in bfloat16, LayerNorm's (and the heads') kept float32.
    assert float_dtypes(paths["serving"]) == {"bfloat16", "float32"}
    ours = serving.signatures["serving_default"](**request)
    theirs = float_serving.signatures["serving_default"](**request)
    assert set(ours) == set(theirs)
    for name, value in theirs.items():
        assert ours[name].dtype == value.dtype, name  # outputs float32 as ever
        if value.dtype.is_floating:
            np.testing.assert_allclose(ours[name].numpy(), value.numpy(), atol=0.05, rtol=0.05, err_msg=name)
        else:
            np.testing.assert_array_equal(ours[name].numpy(), value.numpy(), err_msg=name)
    return paths, record


@pytest.mark.slow
def test_bfloat16_encoder_classifier_and_span_labeler_answer_as_float32(exported, task_exports, tmp_path,  # noqa: F811
                                                                         monkeypatch, capsys):
    import warnings

    import tensorflow as tf

    from albert_tf import load_export

    # A CPU without native bfloat16 (AVX2 only), as /proc/cpuinfo would say: export and load_export say so once.
    monkeypatch.setattr(bfloat16_export, "cpu_bfloat16_support", lambda: {"native_bfloat16": False, "cpu_flags": []})
    single = {"text": tf.constant(TEXTS), "text_b": tf.constant([""] * len(TEXTS))}
    _, record = check_bfloat16_export(exported["checkpoint"], tmp_path / "encoder", serving_of(exported), single,
                                      max_seq_length=SEQ)
    assert capsys.readouterr().out.count("Note: this CPU has no native bfloat16") == 1
    assert record["made_on_cpu"] == {"native_bfloat16": False, "cpu_flags": []}
    figures = record["bfloat16_gate"]["figures"]
    assert figures["pooled_output_min_cosine"] >= 0.99 and figures["embedding_mean_cosine"] >= 0.999
    # load_export and the encoder/ part are unchanged: the TF Hub-style encoder stays float32.
    with pytest.warns(UserWarning, match="no native bfloat16") as said:
        model = load_export(tmp_path / "encoder")
    assert sum("no native bfloat16" in str(warning.message) for warning in said) == 1
    assert model(TEXTS)["embedding"].shape[0] == len(TEXTS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_export(exported["root"])  # a float32 export: nothing to say
    monkeypatch.undo()
    assert float_dtypes(str(tmp_path / "encoder" / "encoder")) == {"float32"}

    classifier = task_exports["classifier_dir"]
    check_bfloat16_export(classifier, tmp_path / "classifier", task_exports["classifier_serving"], single,
                          max_seq_length=SEQ)
    questions = {"text": tf.constant(["where is the garden", "who"]),
                 "text_b": tf.constant(["the garden is green and by the river", "a window"])}
    check_bfloat16_export(task_exports["span_dir"], tmp_path / "span", task_exports["span_serving"], questions,
                          max_seq_length=SEQ)


@pytest.mark.slow
def test_bfloat16_own_data_classifiers_and_tagger_answer_as_float32(exported, tagger, tmp_path):  # noqa: F811
    """A multi-label and a regression classifier on the exported encoder (their heads' biases set so no label sits
    at the threshold, where any rounding flips it), and the tagger."""
    import tensorflow as tf

    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.models.model_io import write_model_dir

    spm = {"spm.model": str(exported["root"] / "spm.model")}
    single = {"text": tf.constant(TEXTS), "text_b": tf.constant([""] * len(TEXTS))}
    rng = np.random.default_rng(0)
    hidden = exported["model"].encoder.pooler.units
    multi_label = AlbertClassifier(exported["model"].encoder, 4)
    multi_label.classifier.set_weights([rng.normal(0, 0.02, (hidden, 4)).astype(np.float32),
                                        np.array([1.5, -1.5, 0.0, 2.0], np.float32)])
    # Scores around 2.5, as on STS-B's 0-5 scale.
    regression = AlbertClassifier(exported["model"].encoder, 1)
    regression.classifier.set_weights([rng.normal(0, 0.02, (hidden, 1)).astype(np.float32),
                                       np.array([2.5], np.float32)])
    for name, model, record in (
            ("multi_label", multi_label, dict(num_labels=4, label_names=["a", "b", "c", "d"], is_regression=False,
                                              problem_type="multi_label", multi_label_threshold=0.4)),
            ("regression", regression, dict(num_labels=1, is_regression=True))):
        checkpoint = write_model_dir(model, str(tmp_path / name), "classifier", files=spm, takes_pairs=False,
                                     **record)
        float_paths = export(checkpoint, str(tmp_path / f"{name}_float32"), max_seq_length=SEQ)
        check_bfloat16_export(checkpoint, tmp_path / f"{name}_bfloat16", serving_of(float_paths), single,
                              max_seq_length=SEQ)
    tagged = {"text": tf.constant(["John Smith lives in Paris with Mary", "Ångström", ""]),
              "text_b": tf.constant([""] * 3)}
    # The tagger trained (120 steps): the shared fixture's random head, whose tags change from unit to unit, puts
    # some of the gate texts' hundreds of units at a near tie, where any rounding flips them (as the classifiers'
    # biases keep their labels off the threshold above). Half as many steps left one calibration text at a tie
    # (seed 0); 120 pass with seeds 0 and 1.
    import keras

    model = tagger["model"]
    keras.utils.set_random_seed(0)
    model.default_compile(num_train_steps=120, learning_rate=3e-3)
    words = [["John", "Smith", "lives", "in", "Paris", "with", "Mary"], ["Mary", "visited", "Berlin", "today"]]
    tags = [["B-PER", "I-PER", "O", "O", "B-LOC", "O", "B-PER"], ["B-PER", "O", "B-LOC", "O"]]
    model.fit(words * 8, tags * 8, batch_size=4, epochs=30, verbose=0)
    directory = write_model_dir(model, str(tmp_path / "tagger"), lower_case=False,
                                max_seq_length=model.preprocessor.seq_length)
    float_paths = export(directory, str(tmp_path / "tagger_float32"))
    served = serving_of(float_paths).signatures["serving_default"](**tagged)
    assert int(served["entity_count"].numpy().sum()) > 0
    # The gate also measures on the user's texts (--calibration_file), in parts of GATE_BATCH requests, the tagger's
    # entity columns of each part padded to the widest.
    calibration = tmp_path / "calibration.txt"
    texts = [f"{name} visited {place} in {year}." for name in ("John", "Mary", "Peter", "Zoë")
             for place in ("Paris", "Berlin", "東京", "서울에서") for year in range(2001, 2006)]
    calibration.write_text("\n".join(texts * 2) + "\n", encoding="utf-8")  # copies count once in the minimum only
    _, record = check_bfloat16_export(directory, tmp_path / "tagger_bfloat16", serving_of(float_paths), tagged,
                                      calibration_file=str(calibration))
    gate = record["bfloat16_gate"]
    assert gate["calibration_texts"] == 2 * len(texts) > 2 * bfloat16_export.GATE_BATCH
    assert gate["texts"] == len(bfloat16_export.GATE_TEXTS) + 2 * len(texts)


@pytest.mark.slow
def test_a_bfloat16_model_that_fails_the_gate_is_not_written(task_exports, tmp_path, monkeypatch,  # noqa: F811
                                                            capsys):
    """The bfloat16 copy's classifier head made to answer otherwise (its logits negated): the gate refuses it, naming
    what it measured, and neither the output directory nor a staging directory beside it is left."""
    from albert_tf.export_lib import bfloat16_export

    real = bfloat16_export.bfloat16_model

    def disagreeing(model, metadata):
        copy = real(model, metadata)
        kernel, bias = copy.classifier.get_weights()
        copy.classifier.set_weights([-kernel, -bias])
        return copy

    monkeypatch.setattr(bfloat16_export, "bfloat16_model", disagreeing)
    output = tmp_path / "out"
    with pytest.raises(BFloat16GateError, match=r"fails its accuracy gate on 32 texts: label agreement with "
                                                r"float32 0.00% \(needs 99%\); nothing was written"):
        export(task_exports["classifier_dir"], str(output), max_seq_length=SEQ, serving_precision="bfloat16")
    assert not output.exists() and list(tmp_path.iterdir()) == []
    assert "bfloat16 gate on" in capsys.readouterr().out


def test_the_gate_refuses_outputs_that_disagree():
    """Each kind's gate: the float32 outputs themselves pass; outputs made to disagree on one text in ten fail."""
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(10, 8)).astype(np.float32)
    turned = vectors.copy()
    turned[3] = rng.normal(size=8)
    labels = np.arange(10) % 3
    flipped = labels.copy()
    flipped[3] = (labels[3] + 1) % 3
    spans = {"start": np.arange(10), "end": np.arange(10) + 2}
    moved = {"start": spans["start"].copy(), "end": spans["end"] + np.eye(10, dtype=int)[3]}
    entities = {"entity_count": np.ones(10, int), "entity_type": np.full((10, 1), b"PER"),
                "entity_start": np.zeros((10, 1), int), "entity_end": np.full((10, 1), 4)}
    shifted = {**entities, "entity_end": entities["entity_end"] + np.eye(10, dtype=int)[3][:, None]}
    scores = np.linspace(-2, 2, 10)
    classifier = {"is_regression": False, "multi_label": False}
    cases = [("encoder", {}, {"pooled_output": vectors}, {"pooled_output": turned}),
             ("classifier", classifier, {"label_id": labels}, {"label_id": flipped}),
             ("classifier", {**classifier, "multi_label": True}, {"predicted": labels[:, None] == 1},
              {"predicted": flipped[:, None] == 1}),
             ("classifier", {**classifier, "is_regression": True}, {"score": scores}, {"score": scores + 0.1}),
             ("span_labeler", {}, spans, moved),
             ("squad_v2_span_labeler", {}, spans, moved),
             ("token_classifier", {}, entities, shifted)]
    for kind, settings, reference, disagreeing in cases:
        # Each kind's serving class measures its own answers (its settings, without building a model).
        serving = types.SimpleNamespace(**settings)
        agreement_with = SERVING_BY_KIND[kind].agreement_with
        assert agreement_with(serving, reference, reference)[0], kind
        passed, figures, measured = agreement_with(serving, disagreeing, reference)
        assert not passed and ("needs" in measured or "at most" in measured), (kind, measured)


def test_a_cpu_without_native_bfloat16_is_named_in_one_line(tmp_path):
    plain = tmp_path / "cpuinfo"
    plain.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f\n")
    native = tmp_path / "native"
    native.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n")
    assert cpu_bfloat16_support(str(plain)) == {"native_bfloat16": False, "cpu_flags": []}
    assert cpu_bfloat16_support(str(native)) == {"native_bfloat16": True, "cpu_flags": ["avx512_bf16"]}
    assert cpu_bfloat16_support(str(tmp_path / "none"))["native_bfloat16"] is None
    note = emulation_note(cpu_bfloat16_support(str(plain)), made_for=["avx512_bf16"])
    assert "\n" not in note and "emulated" in note and "--serving_precision=float32" in note
    assert emulation_note(cpu_bfloat16_support(str(native))) is None
    assert emulation_note(cpu_bfloat16_support(str(tmp_path / "none"))) is None


def test_an_xla_bfloat16_export_is_told_that_xla_throws_the_bfloat16_speed_away():
    from albert_tf.export import xla_notes

    assert xla_notes(False, "bfloat16", ["1"]) == []
    (server,) = xla_notes(True, "float32", ["1", "2"])
    assert "--xla_cpu_compilation_enabled=true" in server and "batch sizes 1,2" in server
    server, advice = xla_notes(True, "bfloat16", [])
    assert server.endswith("--xla_cpu_compilation_enabled=true.") and "\n" not in advice
    assert "leave out --serving_xla" in advice


def test_calibration_texts_are_for_the_bfloat16_gate_alone(exported, tmp_path):  # noqa: F811
    """A float32 export refuses --calibration_file (it measures nothing there) before anything is read or written."""
    from albert_tf.settings import SettingError

    calibration = tmp_path / "calibration.txt"
    calibration.write_text("a text\n", encoding="utf-8")
    with pytest.raises(SettingError, match="calibration_file is for serving_precision=bfloat16"):
        export(exported["checkpoint"], str(tmp_path / "out"), calibration_file=str(calibration))
    assert not (tmp_path / "out").exists()


def test_answers_in_parts_join_with_their_entity_columns_padded():
    parts = [np.array([[1, 2], [3, -1]], np.int32), np.array([[4], [5]], np.int32)]
    assert bfloat16_export._joined(parts).tolist() == [[1, 2], [3, -1], [4, -1], [5, -1]]
    names = [np.array([[b"PER"]], object), np.array([[b"LOC", b"ORG"]], object)]
    assert bfloat16_export._joined(names).tolist() == [[b"PER", b""], [b"LOC", b"ORG"]]
    assert bfloat16_export._joined([np.ones(2), np.zeros(1)]).tolist() == [1, 1, 0]
