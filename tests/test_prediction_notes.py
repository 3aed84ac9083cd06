"""Fine-tuning says in one line when a model answers every input alike, and when its starting checkpoint embeds
every text alike; a model that tells inputs apart gets no note."""

import types

import numpy as np

from albert_tf.tasks import prediction_notes


def test_a_single_label_model_that_predicts_one_class_is_named():
    note = prediction_notes.single_class_note([1, 1, 1, 1], [0, 1, 2, 1], ["neg", "pos", "neutral"], "dev.csv")
    assert note.startswith("the model predicts one label, 'pos', for all 4 examples of dev.csv: it has learned how "
                           "often each label occurs, not the texts; try more steps")
    assert prediction_notes.single_class_note([1, 0, 1, 1], [0, 1, 2, 1], ["a", "b", "c"], "dev.csv") is None
    assert prediction_notes.single_class_note([1, 1], [1, 1], ["a", "b"], "dev.csv") is None  # so was the gold


def test_multi_label_regression_and_tagging_notes():
    none = np.zeros((3, 2), bool)
    assert "predicts no label for all 3 examples" in prediction_notes.constant_label_set_note(
        none, [[1, 0], [0, 1], [0, 0]], "dev.jsonl")
    assert prediction_notes.constant_label_set_note([[1, 0], [0, 0], [0, 0]], [[1, 0], [0, 1], [0, 0]], "d") is None
    assert "nearly one score (2.5" in prediction_notes.constant_score_note([2.5, 2.5001, 2.4999], [0, 2.5, 5], "d")
    assert prediction_notes.constant_score_note([1.0, 2.5, 4.0], [0, 2.5, 5], "d") is None
    gold = [["B-PER", "O"], ["O", "B-LOC", "I-LOC"]]
    assert prediction_notes.only_outside_note([["O", "O"], ["O", "O", "O"]], gold, "test.iob2").startswith(
        "the model tags all 5 words of test.iob2 O")
    assert prediction_notes.only_outside_note([["B-PER", "O"], ["O", "O", "O"]], gold, "test.iob2") is None


def test_a_starting_encoder_that_embeds_every_text_alike_is_named():
    rng = np.random.default_rng(0)
    alike = np.ones((8, 16)) + 1e-4 * rng.normal(size=(8, 16))
    assert "ckpt/pretrained embeds every text alike (mean cosine 1.0000 between the pooled outputs of 8" in (
        prediction_notes.constant_encoder_note(alike, "ckpt/pretrained"))
    assert prediction_notes.constant_encoder_note(rng.normal(size=(8, 16)), "ckpt/pretrained") is None


def test_the_starting_encoder_is_sampled_on_distinct_training_rows():
    """A real encoder: random weights tell texts apart; an encoder whose pooler is made constant does not."""
    import keras

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.albert_classifier import AlbertClassifier

    keras.utils.set_random_seed(1)
    model = AlbertClassifier(AlbertConfig.from_preset("albert_tiny", vocab_size=60, num_hidden_layers=1),
                             num_labels=2)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 60, (40, 12)).astype("int32")
    arrays = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    assert prediction_notes.encoder_sample_note(model, arrays, "ckpt") is None
    pooler = model.encoder.pooler
    pooler.kernel.assign(np.zeros(pooler.kernel.shape, "float32"))
    pooler.bias.assign(np.ones(pooler.bias.shape, "float32"))
    assert "ckpt embeds every text alike" in prediction_notes.encoder_sample_note(model, arrays, "ckpt")


def test_the_tools_say_when_the_recipe_suits_a_larger_model():
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.training.finetuning_tool import small_model_note

    tiny, base = AlbertConfig.from_preset("albert_tiny"), AlbertConfig.from_preset("albert_base_v2")
    settings = types.SimpleNamespace(learning_rate=None)
    assert "(hidden size 128) learns faster at about --learning_rate=3e-4" in small_model_note(tiny, settings)
    assert small_model_note(base, settings) is None
    assert small_model_note(tiny, types.SimpleNamespace(learning_rate=3e-4)) is None


def test_the_note_is_said_once_beside_the_evaluations_that_show_it(capsys):
    from albert_tf.training.finetuning_tool import noting_evaluation

    notes = iter([None, "the model tags all 5 words of test.iob2 O", "the model tags all 5 words of test.iob2 O"])
    task = types.SimpleNamespace(evaluate=lambda model, data, config: {"f1": 0.0},
                                 evaluation_note=lambda config: next(notes))
    evaluate = noting_evaluation(task, None, None)
    assert [evaluate(None) for _ in range(3)] == [{"f1": 0.0}] * 3
    assert capsys.readouterr().out == "Note: the model tags all 5 words of test.iob2 O.\n"
