"""The one fine-tuning front end: step and warmup resolution, one-line errors (end-to-end runs: test_glue,
test_race, test_squad)."""

import os
import re
import subprocess
import sys
import pytest

from albert_tf.tasks.finetuning_task import Recipe
from albert_tf.tasks.glue_task import RECIPES
from albert_tf.training.finetuning_config import FinetuningConfig
from albert_tf.training.finetuning_tool import training_schedule


def schedule(recipe, rows, **settings):
    return training_schedule(recipe, rows, FinetuningConfig(**settings))


def test_unset_flags_take_the_recipe_and_set_ones_replace_it():
    mrpc = RECIPES["mrpc"]  # 2e-5, batch 32, 800 steps, 200 warmup
    assert schedule(mrpc, 3668) == (2e-5, 32, 800, 200)
    assert schedule(mrpc, 3668, num_train_steps=100) == (2e-5, 32, 100, 25)  # the recipe's quarter, not 100 of 100
    assert schedule(mrpc, 3668, num_train_steps=16)[3] == 4  # a short run still reaches the peak rate
    assert schedule(mrpc, 3668, num_train_steps=100, warmup_proportion=0.1) == (2e-5, 32, 100, 10)
    assert schedule(mrpc, 3668, num_train_steps=100, num_warmup_steps=7, warmup_proportion=0.5)[3] == 7
    # Epochs replace the recipe's steps: 3668 rows, 2 epochs of batch 16 -> ceil(458.5).
    assert schedule(mrpc, 3668, num_train_epochs=2.0, train_batch_size=16, learning_rate=1e-4) == (1e-4, 16, 459, 114)


def test_an_epoch_recipe_counts_steps_from_the_rows():
    squad = Recipe(5e-5, 48, num_train_epochs=2.0, warmup_proportion=0.1)
    assert schedule(squad, 1000) == (5e-5, 48, 42, 4)
    assert schedule(squad, 1000, num_train_epochs=0.5) == (5e-5, 48, 11, 1)
    assert schedule(squad, 1000, num_train_steps=30, num_warmup_steps=3) == (5e-5, 48, 30, 3)
    assert schedule(squad, 1, train_batch_size=48) == (5e-5, 48, 1, 0)


def test_a_recipe_sets_steps_or_epochs_and_warmup_steps_or_proportion():
    with pytest.raises(ValueError, match="exactly one of num_train_steps and num_train_epochs"):
        Recipe(1e-5, 8, num_train_steps=10, num_train_epochs=1.0, num_warmup_steps=1)
    with pytest.raises(ValueError, match="exactly one of num_warmup_steps and warmup_proportion"):
        Recipe(1e-5, 8, num_train_steps=10)


def test_every_tool_refuses_a_bad_combination_in_one_line(tmp_path):
    for tool, args, message in (
            ("albert_tf.run_classifier", ["--task_name=mrpc", f"--output_dir={tmp_path}", "--do_train",
                                          "--albert_config=albert_tiny"],
             "--data_dir required"),
            ("albert_tf.run_race", [f"--data_dir={tmp_path}", f"--output_dir={tmp_path}"], "nothing to do"),
            ("albert_tf.run_squad", ["--version=1.1", f"--output_dir={tmp_path}", "--do_train",
                                     "--albert_config=albert_tiny", "--train_file=x.json"], "x.json: no such file"),
            ("albert_tf.run_squad", ["--version=1.1", f"--output_dir={tmp_path}", "--do_eval",
                                     "--init_checkpoint=x"], "--predict_file required"),
            ("albert_tf.run_classifier", ["--task_name=rte", f"--data_dir={tmp_path}", f"--output_dir={tmp_path}",
                                          "--do_train", "--albert_config=albert_tiny", "--warmup_proportion=2"],
             "--warmup_proportion must be in [0, 1]")):
        result = subprocess.run([sys.executable, "-m", tool, *args], capture_output=True, text=True,
                                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        assert result.returncode == 1, (tool, result.stderr)
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith(f"{tool}: error: ") and message in last, (tool, last)


def test_short_help_lists_the_shared_and_the_task_flags():
    result = subprocess.run([sys.executable, "-m", "albert_tf.run_squad", "--helpshort"], capture_output=True,
                            text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    listed = set(re.findall(r"^\s+--(?:\[no\])?([a-z_0-9]+):", result.stdout, flags=re.MULTILINE))
    assert {"num_train_steps", "warmup_proportion", "overwrite", "do_eval", "version", "doc_stride"} <= listed


def test_settings_errors_name_settings_and_the_tools_say_flags():
    from albert_tf.settings import SettingError
    from albert_tf.tasks.squad_task import SquadConfig, SquadTask
    from albert_tf.training.pretraining_config import PretrainingConfig

    with pytest.raises(SettingError) as info:
        FinetuningConfig(output_dir="out", init_checkpoint="ckpt", do_train=True, max_seq_length=0).check()
    assert str(info.value) == "max_seq_length must be >= 1, got 0"
    assert str(info.value.for_flags()) == "--max_seq_length must be >= 1, got 0"
    with pytest.raises(SettingError, match=r"^num_warmup_steps must be in \[0, num_train_steps=2\]$"):
        PretrainingConfig(input_file="data", output_dir="out", num_train_steps=2, num_warmup_steps=5).check()
    with pytest.raises(SettingError, match=r"^strategy must be one of"):
        FinetuningConfig(output_dir="out", init_checkpoint="ckpt", do_eval=True, strategy="gpus").check()
    squad = FinetuningConfig(output_dir="out", init_checkpoint="ckpt", do_predict=True, max_seq_length=64,
                             task=SquadConfig(version="2.0"))
    with pytest.raises(SettingError) as info:
        SquadTask().validate(squad)
    assert str(info.value) == "predict_file required" and str(info.value.for_flags()) == "--predict_file required"


def test_a_run_is_configured_in_python_without_flags(tmp_path):
    """The library path the tools take, given configs directly: it trains, evaluates, and records the
    config (with what it resolved: the casing and length of the starting model) in run_config.json."""
    import json
    import random

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.models.model_dir import write_model_dir
    from albert_tf.tasks.glue_task import GlueConfig, GlueTask
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.training.finetuning_tool import run_finetuning
    from test_glue import write_task
    from text_fixtures import train_small_spm

    class Factory:  # train_small_spm wants a tmp_path_factory
        @staticmethod
        def mktemp(name):
            path = tmp_path / name
            path.mkdir()
            return path

    spm = train_small_spm(Factory(), name="spm")
    config = AlbertConfig.from_dict({**AlbertConfig.from_preset("albert_tiny").to_dict(), "num_hidden_layers": 1,
                                     "vocab_size": AlbertTokenizer(str(spm)).vocab_size})
    checkpoint = write_model_dir(AlbertPretrainer(config), str(tmp_path / "pretrained"), "pretrainer",
                                 files={"spm.model": str(spm)}, max_seq_length=32, lower_case=True)
    data = write_task(tmp_path / "MRPC", "mrpc", random.Random(0))
    run = FinetuningConfig(output_dir=str(tmp_path / "out"), init_checkpoint=checkpoint, do_train=True,
                           do_eval=True, num_train_steps=4, num_warmup_steps=1, train_batch_size=8,
                           save_checkpoints_steps=2, iterations_per_loop=2,
                           task=GlueConfig(task_name="MRPC", data_dir=str(data)))
    assert run_finetuning(GlueTask(), run) == 0
    record = json.loads((tmp_path / "out" / "run_config.json").read_text())
    expected = {**run.to_json(), "max_seq_length": 32, "do_lower_case": True, "keep_checkpoint_max": 5}
    assert record["config"] == json.loads(json.dumps(expected))
    history = json.loads((tmp_path / "out" / "checkpoints" / "evaluations.json").read_text())
    assert [h["step"] for h in history] == [2, 4] and "accuracy" in history[0]
