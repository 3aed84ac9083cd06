"""Every numeric setting checked (#46): NaN, infinity, zero, negative or absurdly large numbers get a one-line
error naming the setting (SettingError: `name` in the library's words, `--name` in a command line's), never a
Keras or TensorFlow traceback from deep inside nor a run that trains on nonsense."""

import os
import subprocess
import sys

import numpy as np
import pytest

import albert_tf
from albert_tf.albert_config import AlbertConfig
from albert_tf.settings import (NON_NEGATIVE, POSITIVE, POSITIVE_INTEGER, PROBABILITY, NumberRange, SettingError,
                                check_at_least)
from text_fixtures import train_small_spm

NAN, INF = float("nan"), float("inf")


def refused(match, call, *args, error=SettingError, **kwargs):
    """The error `call` raises: of class `error`, one line, matching `match` (a regular expression)."""
    with pytest.raises(error, match=match) as raised:
        call(*args, **kwargs)
    assert "\n" not in str(raised.value)
    return raised.value


# --- the range every check uses -------------------------------------------------------------------------


def test_a_range_refuses_nan_infinity_booleans_and_strings_and_says_what_it_takes():
    assert POSITIVE.problem("learning_rate", NAN) == "<learning_rate> must be a finite number > 0, got nan"
    assert POSITIVE.problem("learning_rate", -INF) == "<learning_rate> must be a finite number > 0, got -inf"
    assert POSITIVE.problem("learning_rate", 0) == "<learning_rate> must be > 0, got 0"
    assert NON_NEGATIVE.problem("weight", True) == "<weight> must be a number >= 0, got True"
    assert PROBABILITY.problem("p", "0.5") == "<p> must be a number in [0, 1], got '0.5'"
    assert POSITIVE_INTEGER.problem("steps", 2.0) == "<steps> must be a positive integer, got 2.0"
    assert NumberRange(0, 1, low_open=True).problem("p", 0.0) == "<p> must be in (0, 1], got 0.0"
    assert NumberRange(3, 64, integer=True).problem("n", 10**400).startswith("<n> must be an integer in [3, 64]")
    assert POSITIVE.problem("learning_rate", np.float32(1e-5)) is None
    assert POSITIVE_INTEGER.problem("steps", np.int64(3)) is None
    assert POSITIVE.check("clipnorm", None, allow_none=True) is None
    error = refused("^learning_rate must be a finite number > 0, got nan$", POSITIVE.check, "learning_rate", NAN)
    assert str(error.for_flags()) == "--learning_rate must be a finite number > 0, got nan"


def test_check_at_least_no_longer_lets_nan_or_infinity_through():
    class Settings:
        steps, hours = NAN, INF

    refused("^steps must be a finite number >= 1, got nan$", check_at_least, Settings, ("steps",), 1)
    refused("^hours must be a finite number >= 0, got inf$", check_at_least, Settings, ("hours",), 0)


# --- the optimizer factory and the training settings ---------------------------------------------------


@pytest.mark.parametrize("arguments, message", [
    ({"learning_rate": NAN}, "learning_rate must be a finite number > 0, got nan"),
    ({"learning_rate": INF}, "learning_rate must be a finite number > 0, got inf"),
    ({"learning_rate": 0.0}, "learning_rate must be > 0, got 0.0"),
    ({"num_train_steps": NAN}, "num_train_steps must be a positive integer, got nan"),
    ({"num_train_steps": 0}, "num_train_steps must be a positive integer, got 0"),
    ({"num_warmup_steps": -1}, r"num_warmup_steps must be an integer in \[0, 10\] \(at most num_train_steps\), got -1"),
    ({"weight_decay_rate": NAN}, "weight_decay_rate must be a finite number >= 0, got nan"),
    ({"clipnorm": -1.0}, "clipnorm must be > 0, got -1.0"),
    ({"epsilon": 0.0}, "epsilon must be > 0, got 0.0"),
    ({"beta_2": 1.0}, r"beta_2 must be in \[0, 1\), got 1.0"),
    ({"end_learning_rate": -1e-5}, "end_learning_rate must be >= 0, got -1e-05"),
])
def test_the_optimizer_factory_names_the_argument_it_cannot_use(arguments, message):
    from albert_tf.optimization import create_optimizer

    refused(f"^{message}$", create_optimizer, **{"learning_rate": 1e-3, "num_train_steps": 10, **arguments})


def test_pretraining_settings_refuse_nan_and_infinite_numbers():
    from albert_tf.training.pretraining_config import PretrainingConfig

    def check(**settings):
        PretrainingConfig(input_file="data", output_dir="out", **settings).check()

    for value in (NAN, INF):
        error = refused(f"^learning_rate must be a finite number > 0, got {value}$", check, learning_rate=value)
        assert str(error.for_flags()) == f"--learning_rate must be a finite number > 0, got {value}"
    refused("^clip_norm must be a finite number > 0, got nan$", check, clip_norm=NAN)
    refused("^clip_norm must be > 0, got -1.0$", check, clip_norm=-1.0)
    refused("^weight_decay_rate must be >= 0, got -0.01$", check, weight_decay_rate=-0.01)
    refused("^sentence_loss_weight must be a finite number >= 0, got nan$", check, sentence_loss_weight=NAN)
    refused("^train_budget_hours must be a finite number >= 0, got inf$", check, train_budget_hours=INF)
    refused("^shuffle_buffer_size must be >= 1, got 0$", check, shuffle_buffer_size=0)
    refused("^max_eval_steps must be >= 1, got 0$", check, max_eval_steps=0)
    refused("^max_seconds_per_loop must be a finite number >= 0, got nan$", check, max_seconds_per_loop=NAN)
    refused(r"^num_warmup_steps must be in \[0, num_train_steps=125000\]$", check, num_warmup_steps=-1)
    refused("^num_train_steps must be >= 1, got 0$", check, num_train_steps=0)
    check()  # the defaults run
    from albert_tf.tasks.pretraining_losses import PretrainingObjective

    refused("^sentence_loss_weight must be a finite number >= 0, got nan$", PretrainingObjective, NAN, mask_id=4)


def test_finetuning_settings_refuse_nan_and_infinite_numbers():
    from albert_tf.training.finetuning_config import FinetuningConfig

    def check(**settings):
        FinetuningConfig(output_dir="out", init_checkpoint="ckpt", do_train=True, **settings).check()

    refused("^learning_rate must be a finite number > 0, got nan$", check, learning_rate=NAN)
    refused("^num_train_epochs must be a finite number > 0, got inf$", check, num_train_epochs=INF)
    refused(r"^warmup_proportion must be a finite number in \[0, 1\], got nan$", check, warmup_proportion=NAN)
    refused("^num_warmup_steps must be >= 0, got -1$", check, num_warmup_steps=-1)
    refused("^num_train_steps must be >= 1, got 0$", check, num_train_steps=0)

    def check_schedule(**settings):  # what `finetune` checks of the schedule it is given
        FinetuningConfig(num_train_steps=10, train_batch_size=8, **settings).check_schedule()

    refused("^learning_rate must be a finite number > 0, got inf$", check_schedule, learning_rate=INF)
    refused(r"^num_warmup_steps must be in \[0, num_train_steps=10\], got -1$", check_schedule, learning_rate=1e-5,
            num_warmup_steps=-1)
    refused("^fine-tuning needs learning_rate$", check_schedule)
    check(learning_rate=2e-5, num_train_epochs=3.0, warmup_proportion=0.1)


def user_env():
    return {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}


def test_a_fine_tuning_tool_says_the_flag_of_a_nan_learning_rate(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.run_classifier", "--task_name=rte", f"--data_dir={tmp_path}",
         f"--output_dir={tmp_path}", "--do_train", "--albert_config=albert_tiny", "--learning_rate=nan"],
        capture_output=True, text=True, env=user_env(), timeout=300)
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip() == ("albert_tf.run_classifier: error: --learning_rate must be a finite number > 0, "
                                     "got nan")


@pytest.mark.parametrize("rate", ["1.5", "1", "-0.1", "nan"])
def test_a_dropout_outside_zero_to_one_is_refused_before_the_run_directory_exists(tmp_path, rate):
    """--dropout=1.5 once answered in Keras's words after creating the output directory; --dropout=1 trained
    and failed with 'None values not supported'. The task's checks refuse it first, naming the flag."""
    from albert_tf.tasks.glue_task import GlueConfig, GlueTask
    from albert_tf.tasks.race_task import RaceConfig, RaceTask
    from albert_tf.training.finetuning_config import FinetuningConfig

    for task, task_config in ((GlueTask(), GlueConfig(task_name="rte", data_dir=str(tmp_path), dropout=float(rate))),
                              (RaceTask(), RaceConfig(data_dir=str(tmp_path), dropout=float(rate)))):
        config = FinetuningConfig(output_dir=str(tmp_path / "out"), task=task_config)
        with pytest.raises(SettingError, match=rf"^dropout must be (a finite number )?in \[0, 1\), got {float(rate)}"):
            task.validate(config)
    with pytest.raises(SettingError, match="dropout"):
        from albert_tf.models.albert_classifier import AlbertClassifier

        AlbertClassifier(AlbertConfig.from_preset("albert_tiny"), 2, dropout=float(rate))
    if rate == "1.5":  # and the command line says the flag, leaving nothing behind
        result = subprocess.run(
            [sys.executable, "-m", "albert_tf.run_classifier", "--task_name=rte", f"--data_dir={tmp_path}",
             f"--output_dir={tmp_path / 'run'}", "--do_train", "--albert_config=albert_tiny", f"--dropout={rate}"],
            capture_output=True, text=True, env=user_env(), timeout=300)
        assert result.returncode == 1 and result.stderr.strip() == (
            "albert_tf.run_classifier: error: --dropout must be in [0, 1), got 1.5")
        assert not (tmp_path / "run").exists()


# --- pretraining data ---------------------------------------------------------------------------------


def test_masking_settings_refuse_no_masking_and_nan():
    from albert_tf.data.masking import MaskingConfig
    from albert_tf.data.pretraining_instances import InstanceConfig

    # 0 made instances without a single prediction: a pretraining run on them learns nothing from its masked LM.
    refused(r"^masked_lm_prob must be in \(0, 1\], got 0.0$", MaskingConfig, masked_lm_prob=0.0)
    refused(r"^masked_lm_prob must be in \(0, 1\], got 1.5$", MaskingConfig, masked_lm_prob=1.5)
    refused(r"^masked_lm_prob must be a finite number in \(0, 1\], got nan$", MaskingConfig, masked_lm_prob=NAN)
    refused("^max_predictions_per_seq must be a positive integer, got 0; ngram must be a positive integer, got 0$",
            MaskingConfig, max_predictions_per_seq=0, ngram=0)
    assert MaskingConfig(masked_lm_prob=1.0).masked_lm_prob == 1.0
    refused(r"^short_seq_prob must be a finite number in \[0, 1\], got nan$", InstanceConfig, short_seq_prob=NAN)
    # An absurd length would exhaust memory padding the first batch; no ALBERT model has that many positions.
    refused(r"^max_seq_length must be an integer in \[5, 65536\], got 1000000000$", InstanceConfig,
            max_seq_length=10**9)
    refused(r"^max_seq_length must be an integer in \[5, 65536\], got nan$", InstanceConfig, max_seq_length=NAN)


def test_the_data_tool_says_the_flag_of_a_zero_masked_lm_prob(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={tmp_path / 'a.txt'}",
         f"--output_file={tmp_path / 'data'}", f"--spm_model_file={tmp_path / 'spm.model'}", "--masked_lm_prob=0"],
        capture_output=True, text=True, env=user_env(), timeout=300)
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip() == ("albert_tf.create_pretraining_data: error: --masked_lm_prob must be in (0, 1], "
                                     "got 0.0")


# --- the architecture ----------------------------------------------------------------------------------


def test_a_config_refuses_a_nan_initializer_range_and_says_where_a_sequence_length_goes():
    for value in (NAN, INF):
        refused(f"initializer_range must be a finite number > 0, got {value}$", AlbertConfig.from_preset,
                "albert_tiny", initializer_range=value, error=ValueError)
    refused(r"hidden_dropout_prob must be a finite number in \[0, 1\), got nan$", AlbertConfig.from_preset,
            "albert_tiny", hidden_dropout_prob=NAN, error=ValueError)
    refused(r"unknown AlbertConfig keys \['max_seq_length'\] \(max_seq_length: .*the longest sequence a config allows "
            r"is max_position_embeddings\)", AlbertConfig.from_preset, "albert_tiny", max_seq_length=100000,
            error=ValueError)
    refused("max_position_embeddings 100,000 exceeds the limit 65,536", AlbertConfig.from_preset, "albert_tiny",
            max_position_embeddings=100000, error=ValueError)


# --- the Keras task models and the fill-mask API -------------------------------------------------------


@pytest.fixture(scope="module")
def spm(tmp_path_factory):
    return str(train_small_spm(tmp_path_factory))


def tiny_classifier(spm, num_labels=2):
    with pytest.warns(UserWarning, match="random parameters"):
        return albert_tf.AlbertClassifier.from_preset("albert_tiny", spm_model_file=spm, max_seq_length=16,
                                                      num_hidden_layers=1, num_labels=num_labels)


def test_a_task_model_from_a_preset_refuses_a_length_no_text_fits(spm):
    for value in (0, -1, NAN, 16.0):
        refused(rf"^max_seq_length must be an integer >= 3 \(room for \[CLS\], a token and \[SEP\]\), got {value}$",
                albert_tf.AlbertClassifier.from_preset, "albert_tiny", spm_model_file=spm, max_seq_length=value)
    refused("^seq_length must be an integer >= 3", albert_tf.AlbertPreprocessor.from_spm_file, spm, seq_length=NAN)


def test_fit_evaluate_and_predict_refuse_nothing_to_work_on_and_counts_that_are_no_counts(spm):
    classifier = tiny_classifier(spm)
    texts, labels = ["a good river", "a bad town"], [0, 1]

    def fit(match, **arguments):
        refused(match, classifier.fit, **{"x": texts, "y": labels, "verbose": 0, **arguments}, error=ValueError)

    fit(r"^y: label 0\.5 is not a class id; the head \(num_labels=2\) takes integers 0\.\.1", y=[0.5, 1.2])
    fit(r"^fit: batch_size=0 must be a positive integer \(or None for 32\)$", batch_size=0)
    fit(r"^fit: batch_size=-1 must be a positive integer", batch_size=-1)
    # Keras runs no epoch at epochs <= 0 and no step at steps_per_epoch 0, and returns as if it had trained.
    fit("^fit: epochs=0 must be a positive integer$", epochs=0)
    fit("^fit: epochs=nan must be a positive integer$", epochs=NAN)
    fit(r"^fit: steps_per_epoch=0 must be a positive integer \(or None for every batch of x\)$", steps_per_epoch=0)
    # No examples at all: Keras' own error is a KeyError ('pop from an empty set').
    fit("^fit: no x given, nothing to train on; pass at least one example$", x=None, y=None)
    fit("^fit: x holds no examples, nothing to train on; pass at least one$", x=[], y=[])
    refused("^predict: x holds no examples, nothing to predict on", classifier.predict, [], error=ValueError)
    refused("^evaluate: x holds no examples, nothing to evaluate", classifier.evaluate, [], error=ValueError)
    refused("^fit: validation_data holds no examples, nothing to validate on", classifier.fit, texts, labels,
            validation_data=([], []), error=ValueError)
    assert not classifier.compiled  # all refused before the recipe compiled it, let alone trained


def test_a_regression_head_refuses_scores_that_are_not_finite(spm):
    regression = tiny_classifier(spm, num_labels=1)
    for score in (NAN, INF):
        refused(rf"^y: score {score} is not a finite number; a regression head \(num_labels=1\) trains on finite "
                "scores$", regression.fit, ["a good river", "a bad town"], [score, 1.0], verbose=0, error=ValueError)
    assert not regression.compiled


def test_fill_mask_refuses_a_length_beyond_the_models_positions_or_below_any_text(spm, tmp_path):
    from albert_tf.models.model_io import write_model_dir

    config = AlbertConfig.from_preset("albert_tiny", vocab_size=albert_tf.AlbertTokenizer(spm).vocab_size,
                                      num_hidden_layers=1, max_position_embeddings=64)
    directory = write_model_dir(albert_tf.AlbertPretrainer(config), str(tmp_path / "pretrainer"),
                                files={"spm.model": spm})
    filler = albert_tf.MaskFiller(directory)
    for value in (100000, 65, 2, 0, NAN):  # was a Keras traceback, a silent default, or a TypeError
        refused(rf"^max_seq_length must be an integer in \[3, 64\] \(room for \[CLS\], a token and \[SEP\]; at most "
                rf"the model's max_position_embeddings\), got {value}$", filler.fill, "the [MASK] river",
                max_seq_length=value)
    for top_k in (0, -1):
        refused(f"^top_k={top_k}: must be a whole number of candidates, at least 1$", filler.fill, "the [MASK] river",
                top_k=top_k, error=ValueError)
    assert len(filler.fill("the [MASK] river", top_k=2, max_seq_length=64)[0][1]) == 2


def test_an_explicit_length_for_a_model_must_hold_text():
    from albert_tf.models.preprocessing_contract import resolve_preprocessing

    metadata = {"albert_config": AlbertConfig.from_preset("albert_tiny").to_dict(), "rewrite_quotes": False}
    refused(r"^max_seq_length must be an integer >= 3 .*, got 0$", resolve_preprocessing, metadata, max_seq_length=0)
    assert resolve_preprocessing(metadata, max_seq_length=32).max_seq_length == 32
    assert resolve_preprocessing(metadata).max_seq_length == 128
