"""The one fine-tuning front end: step and warmup resolution, one-line errors (end-to-end runs: test_glue,
test_race, test_squad)."""

import os
import re
import subprocess
import sys
import types

import pytest

from albert_tf.tasks.finetuning_task import Recipe
from albert_tf.tasks.glue_task import RECIPES
from albert_tf.training.finetuning_tool import training_schedule

UNSET = dict(learning_rate=None, train_batch_size=None, num_train_steps=None, num_train_epochs=None,
             num_warmup_steps=None, warmup_proportion=None)


def schedule(recipe, rows, **flags):
    return training_schedule(recipe, rows, types.SimpleNamespace(**{**UNSET, **flags}))


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
