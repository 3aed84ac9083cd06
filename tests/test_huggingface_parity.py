"""Numerical parity with Hugging Face's PyTorch ALBERT, both directions of the converter."""

import dataclasses

import numpy as np
import pytest
import transformers

import huggingface_oracle as oracle
from albert_tf.albert_config import AlbertConfig
from albert_tf.models.model_io import load_pretrainer, write_model_dir
from albert_tf.checkpoints.tf1_format import write_tf1_checkpoint
from albert_tf.checkpoints.conversion import convert
from albert_tf.models.albert_pretrainer import AlbertPretrainer

TOLERANCE = 1e-4
OUTPUTS = ("sequence_output", "pooled_output", "mlm_logits", "sop_logits")

TINY_GROUPS = AlbertConfig(
    vocab_size=211, embedding_size=16, hidden_size=32, num_hidden_layers=5, num_hidden_groups=2,
    inner_group_num=2, num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
)

CONFIGS = {
    "tiny": AlbertConfig.from_preset("albert_tiny"),
    "base": AlbertConfig.from_preset("albert_base_v2"),
    "groups": TINY_GROUPS,
    "not_shared_exact_gelu": dataclasses.replace(TINY_GROUPS, sharing="none", num_hidden_groups=1,
                                                 hidden_act="gelu_exact"),
}


def padded_inputs(config, batch=3, seq=24, predictions=5, seed=0):
    """Inputs whose rows have 24, 17 and 9 real tokens; padding holds junk ids to prove masking."""
    rng = np.random.default_rng(seed)
    lengths = [seq, seq - 7, seq - 15][:batch]
    mask = (np.arange(seq)[None, :] < np.array(lengths)[:, None]).astype(np.int32)
    ids = rng.integers(5, config.vocab_size, (batch, seq)).astype(np.int32)
    types = np.stack([(np.arange(seq) >= length // 2).astype(np.int32) for length in lengths])
    positions = np.stack([rng.choice(length, predictions, replace=False) for length in lengths]).astype(np.int32)
    inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}
    return inputs, positions


def assert_outputs_match(ours, theirs):
    for name in OUTPUTS:
        difference = np.max(np.abs(np.asarray(ours[name]) - theirs[name]))
        assert difference <= TOLERANCE, f"{name}: max |difference| {difference:.2e} > {TOLERANCE}"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_huggingface_to_albert_tf(name, tmp_path):
    config = CONFIGS[name]
    hf_model = oracle.random_pretraining_model(config)
    hf_model.save_pretrained(tmp_path / "hf")
    convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "ours"))
    ours = load_pretrainer(str(tmp_path / "ours"))
    assert ours.albert_config == config

    inputs, positions = padded_inputs(config)
    assert_outputs_match(
        ours({**inputs, "masked_lm_positions": positions}),
        oracle.run_pretraining_model(hf_model, inputs, positions),
    )


def randomize(model, seed=0):
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(1.0 if "gamma" in w.path else 0.0, 0.02 if w.ndim == 2 else 0.1, w.shape)
                       .astype(np.float32) for w in model.weights])


@pytest.mark.parametrize("name", ["tiny", "groups"])
def test_albert_tf_to_huggingface(name, tmp_path):
    config = CONFIGS[name]
    ours = AlbertPretrainer(config)
    randomize(ours)
    write_model_dir(ours, tmp_path / "ours", "pretrainer")
    convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))

    hf_model, info = transformers.AlbertForPreTraining.from_pretrained(tmp_path / "hf", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    inputs, positions = padded_inputs(config, seed=1)
    assert_outputs_match(
        ours({**inputs, "masked_lm_positions": positions}),
        oracle.run_pretraining_model(hf_model.eval(), inputs, positions),
    )


def test_encoder_only_export_loads_as_huggingface_albert_model(tmp_path):
    from albert_tf.networks.albert_encoder import AlbertEncoder

    config = CONFIGS["tiny"]
    encoder = AlbertEncoder(config)
    randomize(encoder, seed=3)
    write_model_dir(encoder, tmp_path / "ours", "encoder")
    convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))
    hf_model, info = transformers.AlbertModel.from_pretrained(tmp_path / "hf", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    inputs, _ = padded_inputs(config)
    import torch

    with torch.no_grad():
        theirs = hf_model.eval()(
            input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["input_type_ids"], dtype=torch.long),
        )
    np.testing.assert_allclose(encoder(inputs)["pooled_output"], theirs.pooler_output.numpy(), atol=TOLERANCE)


@pytest.mark.parametrize("name", ["tiny", "groups"])
def test_original_tf1_checkpoint_to_albert_tf(name, tmp_path):
    """A checkpoint with the original names (and optimizer slots) converts and matches Hugging Face."""
    config = CONFIGS[name]
    hf_model = oracle.random_pretraining_model(config, seed=5)
    tensors = oracle.original_tf1_tensors(hf_model, config)
    # What the original training leaves beside the weights.
    tensors["global_step"] = np.array(125000, np.int64)
    tensors["bert/embeddings/word_embeddings/adam_m"] = np.zeros((config.vocab_size, config.embedding_size), np.float32)
    tensors["bert/pooler/dense/kernel/adam_v"] = np.zeros((config.hidden_size, config.hidden_size), np.float32)
    (tmp_path / "google").mkdir()
    write_tf1_checkpoint(tensors, str(tmp_path / "google" / "model.ckpt-best"))
    config.to_json_file(tmp_path / "google" / "albert_config.json")

    convert("tf1", "albert_tf", str(tmp_path / "google" / "model.ckpt-best"), str(tmp_path / "ours"))
    ours = load_pretrainer(str(tmp_path / "ours"))
    inputs, positions = padded_inputs(config, seed=2)
    assert_outputs_match(
        ours({**inputs, "masked_lm_positions": positions}),
        oracle.run_pretraining_model(hf_model, inputs, positions),
    )

    # And back: albert_tf -> tf1 gives the original names and values.
    convert("albert_tf", "tf1", str(tmp_path / "ours"), str(tmp_path / "tf1_again"))
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(tmp_path / "tf1_again" / "model.ckpt"))
    for tensor_name, value in tensors.items():
        if tensor_name == "global_step" or tensor_name.endswith(("/adam_m", "/adam_v")):
            continue
        np.testing.assert_array_equal(reader.get_tensor(tensor_name), value)


LABELS = ["contradiction", "entailment", "neutral"]


def classifier_outputs(hf_model, inputs, **extra):
    import torch

    with torch.no_grad():
        return hf_model.eval()(
            input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["input_type_ids"], dtype=torch.long),
            **extra,
        )


def classifier_logits(hf_model, inputs):
    return classifier_outputs(hf_model, inputs).logits.numpy()


def classifier_loss(hf_model, inputs, labels):
    """The loss Hugging Face's sequence classifier computes for `labels` (its config's problem_type decides which)."""
    import torch

    return float(classifier_outputs(hf_model, inputs, labels=torch.tensor(labels)).loss)


@pytest.mark.parametrize("head", ["labels", "regression", "multi_label"])
def test_fine_tuned_classifier_to_huggingface_and_back(head, tmp_path):
    """A fine-tuned classifier is an AlbertForSequenceClassification with its labels (or regression, or
    multi-label problem type) and logits; converted back, the same albert_tf classifier."""
    import json

    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.models.model_io import load_model

    config = CONFIGS["groups"]
    regression = head == "regression"
    classifier = AlbertClassifier(config, num_labels=1 if regression else len(LABELS))
    randomize(classifier, seed=4)
    recorded = {"label_names": ["score"], "is_regression": True} if regression else {"label_names": LABELS,
                                                                                     "is_regression": False}
    if head == "multi_label":
        recorded["problem_type"] = "multi_label"
    write_model_dir(classifier, tmp_path / "ours", "classifier", **recorded)
    assert convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))["kind"] == "classifier"

    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf_config["architectures"] == ["AlbertForSequenceClassification"]
    assert hf_config["num_labels"] == classifier.num_labels
    if regression:
        assert hf_config["problem_type"] == "regression"
    else:
        assert hf_config["problem_type"] == ("multi_label_classification" if head == "multi_label"
                                             else "single_label_classification")
        assert hf_config["id2label"] == {"0": "contradiction", "1": "entailment", "2": "neutral"}
        assert hf_config["label2id"] == {"contradiction": 0, "entailment": 1, "neutral": 2}
    hf_model, info = transformers.AlbertForSequenceClassification.from_pretrained(tmp_path / "hf",
                                                                                 output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    assert hf_model.config.num_labels == classifier.num_labels
    for seed in (4, 5):
        inputs, _ = padded_inputs(config, seed=seed)
        np.testing.assert_allclose(classifier(inputs, training=False)["logits"], classifier_logits(hf_model, inputs),
                                   atol=1e-5, rtol=0)

    convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "back"))
    model, metadata = load_model(str(tmp_path / "back"))
    assert (metadata["model"], metadata["num_labels"], metadata["is_regression"]) == (
        "classifier", classifier.num_labels, regression)
    assert metadata.get("label_names") == (None if regression else LABELS)
    assert metadata.get("problem_type") == ("multi_label" if head == "multi_label" else None)
    if head == "multi_label":  # Hugging Face's loss is then the own-data tool's: each label's sigmoid cross-entropy
        import tensorflow as tf

        from albert_tf.tasks.text_classification_task import TextClassificationTask

        inputs, _ = padded_inputs(config, seed=6)
        targets = np.random.default_rng(6).integers(0, 2, (len(inputs["input_word_ids"]), 3)).astype(np.float32)
        ours = tf.reduce_mean(TextClassificationTask().example_losses(
            {"label_ids": tf.constant(targets)}, classifier(inputs, training=False)))
        assert classifier_loss(hf_model, inputs, targets) == pytest.approx(float(ours), abs=1e-5)
    assert len(model.weights) == len(classifier.weights)
    for ours, back in zip(classifier.weights, model.weights):
        np.testing.assert_array_equal(back.numpy(), ours.numpy(), err_msg=ours.path)


def test_huggingface_sequence_classifier_to_albert_tf(tmp_path):
    """A classifier Hugging Face made (its own initialization and names) gives albert_tf the same logits."""
    from albert_tf.models.model_io import load_model

    def sequence_classifier(hf_config):
        hf_config.id2label = dict(enumerate(LABELS))
        hf_config.label2id = {name: index for index, name in enumerate(LABELS)}
        return transformers.AlbertForSequenceClassification(hf_config)

    config = CONFIGS["tiny"]
    hf_model = oracle.random_pretraining_model(config, seed=7, model_class=sequence_classifier)
    hf_model.save_pretrained(tmp_path / "hf")
    convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "ours"))
    model, metadata = load_model(str(tmp_path / "ours"))
    assert (metadata["model"], metadata["num_labels"], metadata["label_names"]) == ("classifier", 3, LABELS)
    inputs, _ = padded_inputs(config, seed=7)
    np.testing.assert_allclose(model(inputs, training=False)["logits"], classifier_logits(hf_model, inputs),
                               atol=1e-5, rtol=0)


def test_equal_widths_convert_through_an_identity_projection(tmp_path):
    """E == H: the original (and albert_tf) has no embedding_hidden_mapping_in, Hugging Face always applies one;
    the identity with a zero bias makes the two the same model, in both directions and from the original's names."""
    import torch

    config = dataclasses.replace(CONFIGS["tiny"], embedding_size=CONFIGS["tiny"].hidden_size)
    hf_model = oracle.random_pretraining_model(config, seed=7)
    with torch.no_grad():
        hf_model.albert.encoder.embedding_hidden_mapping_in.weight.copy_(torch.eye(config.hidden_size))
        hf_model.albert.encoder.embedding_hidden_mapping_in.bias.zero_()
    tensors = oracle.original_tf1_tensors(hf_model, config)
    del tensors["bert/encoder/embedding_hidden_mapping_in/kernel"], tensors["bert/encoder/embedding_hidden_mapping_in/bias"]
    (tmp_path / "google").mkdir()
    write_tf1_checkpoint(tensors, str(tmp_path / "google" / "model.ckpt"))
    config.to_json_file(tmp_path / "google" / "albert_config.json")
    convert("tf1", "albert_tf", str(tmp_path / "google" / "model.ckpt"), str(tmp_path / "ours"))
    ours = load_pretrainer(str(tmp_path / "ours"))
    assert ours.encoder.embedding_projection is None
    inputs, positions = padded_inputs(config, seed=4)
    expected = oracle.run_pretraining_model(hf_model, inputs, positions)
    assert_outputs_match(ours({**inputs, "masked_lm_positions": positions}), expected)

    convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))
    hf_again, info = transformers.AlbertForPreTraining.from_pretrained(tmp_path / "hf", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert_outputs_match(ours({**inputs, "masked_lm_positions": positions}),
                         oracle.run_pretraining_model(hf_again.eval(), inputs, positions))

    # A trained (not identity) projection has no counterpart in the original's E == H model.
    with torch.no_grad():
        hf_model.albert.encoder.embedding_hidden_mapping_in.weight.mul_(2.0)
    hf_model.save_pretrained(tmp_path / "hf_trained")
    with pytest.raises(ValueError, match="embedding_hidden_mapping_in is not the identity"):
        convert("huggingface", "albert_tf", str(tmp_path / "hf_trained"), str(tmp_path / "refused"))
    assert not (tmp_path / "refused").exists()


def test_group_assignments_that_differ_from_huggingface_are_refused(tmp_path):
    # Hugging Face computes layer 9's group as int(9 / (18 / 14)) = 6, the original int(9 / 18 * 14) = 7.
    assert (int(9 / (18 / 14)), int(9 / 18 * 14)) == (6, 7)
    config = dataclasses.replace(CONFIGS["tiny"], num_hidden_layers=18, num_hidden_groups=14, hidden_size=16,
                                 embedding_size=8, intermediate_size=32, num_attention_heads=2)
    ours = AlbertPretrainer(config)
    write_model_dir(ours, tmp_path / "ours", "pretrainer")
    with pytest.raises(ValueError, match=r"layer\(s\) \[9\] another group"):
        convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf"))
    oracle.random_pretraining_model(config).save_pretrained(tmp_path / "from_hf")
    with pytest.raises(ValueError, match=r"layer\(s\) \[9\] another group"):
        convert("huggingface", "albert_tf", str(tmp_path / "from_hf"), str(tmp_path / "refused"))


def test_token_classifier_to_albert_tf_and_back_to_huggingface(tmp_path):
    """An AlbertForTokenClassification (Hugging Face's initialization and names, no pooler) gives albert_tf's
    AlbertTokenClassifier the same logits at every position and its id2label as labels; converted back, an
    AlbertForTokenClassification again, with the same logits and id2label."""
    import json

    from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
    from albert_tf.models.model_io import load_model

    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]

    def token_classifier(hf_config):
        hf_config.id2label = dict(enumerate(tags))
        hf_config.label2id = {name: index for index, name in enumerate(tags)}
        return transformers.AlbertForTokenClassification(hf_config)

    config = CONFIGS["groups"]
    hf_model = oracle.random_pretraining_model(config, seed=8, model_class=token_classifier)
    hf_model.save_pretrained(tmp_path / "hf")
    summary = convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert summary["kind"] == "token_classifier" and summary["initialized_heads"] == []
    model, metadata = load_model(str(tmp_path / "ours"))
    assert isinstance(model, AlbertTokenClassifier) and model.labels == tags
    assert (metadata["model"], metadata["num_labels"], metadata["label_names"]) == ("token_classifier", 5, tags)
    inputs, _ = padded_inputs(config, seed=8)
    np.testing.assert_allclose(model(inputs, training=False)["logits"], classifier_logits(hf_model, inputs),
                               atol=1e-5, rtol=0)

    convert("albert_tf", "huggingface", str(tmp_path / "ours"), str(tmp_path / "hf_again"))
    hf_config = json.loads((tmp_path / "hf_again" / "config.json").read_text())
    assert hf_config["architectures"] == ["AlbertForTokenClassification"]
    assert hf_config["id2label"] == {str(index): tag for index, tag in enumerate(tags)}
    hf_again, info = transformers.AlbertForTokenClassification.from_pretrained(tmp_path / "hf_again",
                                                                              output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    assert hf_again.config.id2label == dict(enumerate(tags))
    inputs, _ = padded_inputs(config, seed=9)
    np.testing.assert_allclose(classifier_logits(hf_again, inputs), model(inputs, training=False)["logits"],
                               atol=1e-5, rtol=0)


def _without_architectures(directory):
    import json

    path = directory / "config.json"
    hf_config = json.loads(path.read_text())
    del hf_config["architectures"]
    path.write_text(json.dumps(hf_config))


def test_a_config_without_architectures_tells_the_two_classifiers_apart_by_the_pooler(tmp_path):
    """A config.json that names no architectures (written by hand, or by an older tool): a classifier head
    without a pooler is an AlbertForTokenClassification's (its names are a sequence classifier's, but only that
    one reads the pooler) and converts as a token classifier, its logits and tags Hugging Face's, without
    --model; one with a pooler stays a sequence classifier; naming the other kind is refused in one line."""
    from albert_tf.models.model_io import load_model
    from albert_tf.settings import SettingError

    tags = ["O", "B-PER", "I-PER"]

    def token_classifier(hf_config):
        hf_config.id2label = dict(enumerate(tags))
        hf_config.label2id = {name: index for index, name in enumerate(tags)}
        return transformers.AlbertForTokenClassification(hf_config)

    config = dataclasses.replace(CONFIGS["tiny"], num_hidden_layers=1)
    hf_model = oracle.random_pretraining_model(config, seed=3, model_class=token_classifier)
    hf_model.save_pretrained(tmp_path / "hf")
    _without_architectures(tmp_path / "hf")
    summary = convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert summary["kind"] == "token_classifier" and summary["initialized_heads"] == []
    model, metadata = load_model(str(tmp_path / "ours"))
    assert (metadata["model"], metadata["label_names"]) == ("token_classifier", tags)
    inputs, _ = padded_inputs(config, seed=3)
    np.testing.assert_allclose(model(inputs, training=False)["logits"], classifier_logits(hf_model, inputs),
                               atol=1e-5, rtol=0)
    with pytest.raises(SettingError, match="model_kind=classifier, but .*hf holds a 'token_classifier' model "
                                           r"\(its config.json's architectures, or its classifier head without a "
                                           "pooler, say so\): leave the setting out"):
        convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "refused"), model_kind="classifier")
    assert not (tmp_path / "refused").exists()

    sequence = oracle.random_pretraining_model(config, seed=4,
                                               model_class=transformers.AlbertForSequenceClassification)
    sequence.save_pretrained(tmp_path / "hf_sequence")
    _without_architectures(tmp_path / "hf_sequence")
    summary = convert("huggingface", "albert_tf", str(tmp_path / "hf_sequence"), str(tmp_path / "sequence"))
    assert summary["kind"] == "classifier" and summary["initialized_heads"] == []


def test_fine_tuning_takes_the_steps_hugging_face_takes_with_the_original_optimizer(tmp_path):
    """Fine-tuning trains as Hugging Face's PyTorch ALBERT does, step for step: an AlbertForTokenClassification
    converted to albert_tf, dropout off on both sides, trained ten steps on the same batch at a large rate, ends
    at the same weights through run_tagger's trainer (albert_tf.training.finetuning) and through keras fit's step
    (`train_on_batch` after `default_compile`) as through the tagging benchmark's Hugging Face loop with the
    original's optimizer (benchmarks.downstream.own_labels.huggingface_train). The batch's gradient norm is above
    the clip of 1, and every token is of segment 0: the segment table's one row is looked up batch * seq times,
    so a clip that measured those rows rather than their sum would take other steps (it did, on fit's path)."""
    import types

    import torch

    from albert_tf.models.model_io import load_model
    from albert_tf.tasks.tagging_task import TaggingObjective
    from albert_tf.training.finetuning import finetune
    from albert_tf.training.finetuning_config import FinetuningConfig
    from benchmarks.downstream.own_labels import huggingface_train

    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    config = dataclasses.replace(TINY_GROUPS, num_hidden_groups=1, inner_group_num=1, num_hidden_layers=3)

    def token_classifier(hf_config):
        hf_config.id2label = dict(enumerate(tags))
        hf_config.label2id = {name: index for index, name in enumerate(tags)}
        hf_config.classifier_dropout_prob = 0.0
        return transformers.AlbertForTokenClassification(hf_config)

    hf_model = oracle.random_pretraining_model(config, seed=3, model_class=token_classifier)
    assert hf_model.config.hidden_dropout_prob == hf_model.config.attention_probs_dropout_prob == 0.0
    hf_model.save_pretrained(tmp_path / "hf")
    convert("huggingface", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "start"))

    rng = np.random.default_rng(0)
    rows, seq, steps, learning_rate = 4, 20, 10, 1e-2
    mask = (np.arange(seq)[None] < rng.integers(6, seq + 1, (rows, 1))).astype(np.int32)
    arrays = {"input_word_ids": rng.integers(5, config.vocab_size, (rows, seq)).astype(np.int32) * mask,
              "input_mask": mask, "input_type_ids": np.zeros((rows, seq), np.int32),
              "label_ids": np.where((rng.random((rows, seq)) < 0.5) & (mask > 0),
                                    rng.integers(0, len(tags), (rows, seq)), -100).astype(np.int32)}
    names = {"input_word_ids": "input_ids", "input_mask": "attention_mask", "input_type_ids": "token_type_ids",
             "label_ids": "labels"}
    hf_inputs = {names[name]: torch.from_numpy(values.astype(np.int64)) for name, values in arrays.items()}

    def batch_loss(indices):  # every step's batch is all rows; their order leaves the token mean as it is
        return hf_model(**{name: values[indices] for name, values in hf_inputs.items()}).loss

    hf_model.train()
    batch_loss(torch.arange(rows)).backward()
    assert torch.nn.utils.clip_grad_norm_(hf_model.parameters(), float("inf")) > 1.0
    hf_model.zero_grad()
    settings = types.SimpleNamespace(steps=steps, warmup=1, batch_size=rows, learning_rate=learning_rate,
                                     eval_every=steps)
    huggingface_train(hf_model, rows, batch_loss, settings, seed=0, after_step=lambda step, loss: None,
                      original_adamw=True)
    hf_model.save_pretrained(tmp_path / "hf_trained")
    convert("huggingface", "albert_tf", str(tmp_path / "hf_trained"), str(tmp_path / "theirs"))
    theirs = {weight.path: weight.numpy() for weight in load_model(str(tmp_path / "theirs"))[0].weights}

    def without_dropout():
        model, _ = load_model(str(tmp_path / "start"))
        model.dropout.rate = 0.0
        return model

    trained = without_dropout()
    finetune(trained, arrays, None,
             FinetuningConfig(train_batch_size=rows, learning_rate=learning_rate, num_train_steps=steps,
                              num_warmup_steps=1, save_checkpoints_steps=steps, seed=1),
             str(tmp_path / "trainer"), kind="token_classifier",
             objective=TaggingObjective(None, trained.TRAINING_INPUTS), log=lambda *args, **kwargs: None)
    fitted = without_dropout()
    fitted.default_compile(steps, learning_rate=learning_rate)  # warmup: a tenth of the steps, 1
    inputs = {name: arrays[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}
    for _ in range(steps):
        fitted.train_on_batch(inputs, {"logits": arrays["label_ids"]})

    start = {weight.path: weight.numpy() for weight in without_dropout().weights}
    for model in (trained, fitted):
        for weight in model.trainable_weights:  # all but the pooler, which Hugging Face's tagger has not
            np.testing.assert_allclose(weight.numpy(), theirs[weight.path], atol=3e-5, rtol=0, err_msg=weight.path)
    assert np.abs(theirs["token_classifier/kernel"] - start["token_classifier/kernel"]).max() > 0.05
