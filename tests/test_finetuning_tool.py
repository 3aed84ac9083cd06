"""The one fine-tuning front end: step and warmup resolution, one-line errors (end-to-end runs: test_glue,
test_race, test_squad)."""

import os
import re
import subprocess
import sys

import pytest

from albert_tf.tasks.finetuning_task import Recipe
from albert_tf.tasks.glue_task import RECIPES
from albert_tf.tasks.race_task import RaceTask
from albert_tf.training.finetuning_config import FinetuningConfig
from albert_tf.training.finetuning_tool import MANY_EPOCHS, many_epochs_warning, training_schedule
from test_cli_flags import user_env


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    """A one-layer albert_tiny pretrainer checkpoint with its SentencePiece model, recording length 32 and the
    original's quote rule, as albert_tf's pretraining does."""
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from text_fixtures import train_small_spm

    spm = train_small_spm(tmp_path_factory)
    config = AlbertConfig.from_preset("albert_tiny", num_hidden_layers=1,
                                       vocab_size=AlbertTokenizer(str(spm)).vocab_size)
    return write_model_dir(AlbertPretrainer(config), str(tmp_path_factory.mktemp("ckpt") / "pretrained"),
                           "pretrainer", files={"spm.model": str(spm)}, max_seq_length=32, lower_case=True,
                           rewrite_quotes=False)


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


def test_a_recipes_steps_keep_their_epochs_on_other_data():
    """A recipe's step count was set for the task's real training set: other rows, or another batch, get the
    epochs those steps make of it (SST-2: 20,935 x 32 / 67,349 rows, about 10), its warmup its share."""
    sst2 = RECIPES["sst-2"]  # 1e-5, batch 32, 20935 steps, 1256 warmup, for 67,349 rows
    assert schedule(sst2, 67349) == (1e-5, 32, 20935, 1256)
    assert schedule(sst2, 200) == (1e-5, 32, 63, 3)  # ceil(200 x 20935 / 67349): 10 epochs, not 3,350
    assert schedule(sst2, 67349, train_batch_size=64) == (1e-5, 64, 10468, 628)
    assert schedule(sst2, 200, num_train_epochs=3.0)[2] == 19
    assert schedule(sst2, 200, num_train_steps=20935) == (1e-5, 32, 20935, 1256)  # given steps win
    assert schedule(RaceTask().recipe(None), 87866) == (1e-5, 32, 12000, 1000)
    assert schedule(RaceTask().recipe(None), 25421)[2] == 3472  # the middle-school questions alone


def test_a_plan_of_many_epochs_is_said_before_it_starts():
    plain = FinetuningConfig()
    assert many_epochs_warning(200, 32, 63, plain, "Examples") is None
    assert many_epochs_warning(200, 32, 20935, FinetuningConfig(num_train_steps=20935), "Examples") == (
        "Warning: 20,935 steps of batch 32 make 3,350 epochs of the 200 examples; --num_train_epochs (or fewer "
        "--num_train_steps) trains less.")
    assert many_epochs_warning(100, 10, MANY_EPOCHS * 10, plain, "Questions") is None  # 50 epochs: not yet
    assert "51 epochs of the 100 questions" in many_epochs_warning(100, 10, 510, plain, "Questions")
    assert many_epochs_warning(200, 32, 625, FinetuningConfig(num_train_epochs=100.0), "Examples") is None  # asked


def test_a_recipe_sets_steps_or_epochs_and_warmup_steps_or_proportion():
    with pytest.raises(ValueError, match="exactly one of num_train_steps and num_train_epochs"):
        Recipe(1e-5, 8, num_train_steps=10, num_train_epochs=1.0, num_warmup_steps=1)
    with pytest.raises(ValueError, match="exactly one of num_warmup_steps and warmup_proportion"):
        Recipe(1e-5, 8, num_train_steps=10)
    with pytest.raises(ValueError, match="with num_train_steps sets train_rows"):
        Recipe(1e-5, 8, num_train_steps=10, num_warmup_steps=1)
    with pytest.raises(ValueError, match="with num_train_steps sets train_rows"):
        Recipe(1e-5, 8, num_train_epochs=2.0, warmup_proportion=0.1, train_rows=100)


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
        # As a user runs it, without TF_CPP_MIN_LOG_LEVEL: the error is all of stderr, no TensorFlow start-up log.
        result = subprocess.run([sys.executable, "-m", tool, *args], capture_output=True, text=True, env=user_env())
        assert result.returncode == 1, (tool, result.stderr)
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(f"{tool}: error: ") and message in line, (tool, result.stderr)


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


def test_checkpoint_intervals_are_the_originals():
    """run_glue.sh saves (and so evaluates for the best on dev) every 100 steps, QNLI every 200; RACE's README
    every 100."""
    original = {"cola": 100, "sst-2": 100, "mrpc": 100, "sts-b": 100, "qqp": 100, "mnli": 100, "qnli": 200,
                "rte": 100}
    assert {task: RECIPES[task].save_checkpoints_steps for task in original} == original
    assert RaceTask().recipe(None).save_checkpoints_steps == 100
    from albert_tf.tasks.squad_task import SquadConfig, SquadTask

    for version in ("1.1", "2.0"):  # the original README runs run_squad_v1/v2.py with 5000
        squad = FinetuningConfig(task=SquadConfig(version=version, train_file="train.json"))
        assert SquadTask().recipe(squad).save_checkpoints_steps == 5000
    assert FinetuningConfig().save_checkpoints_steps is None  # unset: the recipe's


def test_a_run_is_configured_in_python_without_flags(pretrained, tmp_path, monkeypatch):
    """The library path the tools take, given configs directly: it trains, evaluates (at the recipe's
    checkpoint interval, none being set), and records the config (with what it resolved: the casing and
    length of the starting model) in run_config.json."""
    import dataclasses
    import json
    import random

    from albert_tf.tasks.glue_task import GlueConfig, GlueTask
    from albert_tf.training.finetuning_tool import run_finetuning
    from test_glue import write_task

    monkeypatch.setitem(RECIPES, "mrpc", dataclasses.replace(RECIPES["mrpc"], save_checkpoints_steps=2))
    data = write_task(tmp_path / "MRPC", "mrpc", random.Random(0))
    run = FinetuningConfig(output_dir=str(tmp_path / "out"), init_checkpoint=pretrained, do_train=True,
                           do_eval=True, num_train_steps=4, num_warmup_steps=1, train_batch_size=8,
                           iterations_per_loop=2, task=GlueConfig(task_name="MRPC", data_dir=str(data)))
    assert run_finetuning(GlueTask(), run) == 0
    record = json.loads((tmp_path / "out" / "run_config.json").read_text())
    expected = {**run.to_json(), "max_seq_length": 32, "do_lower_case": True, "keep_accents": False,
                "rewrite_quotes": False, "keep_checkpoint_max": 5}
    assert record["config"] == json.loads(json.dumps(expected))
    history = json.loads((tmp_path / "out" / "checkpoints" / "evaluations.json").read_text())
    assert [h["step"] for h in history] == [2, 4] and "accuracy" in history[0]


def test_the_recipe_trains_a_small_data_set_for_its_epochs_not_its_steps(pretrained, tmp_path):
    """`albert-run-classifier --task_name=sst-2` on 200 rows: the recipe's 10 epochs (63 steps of batch 32),
    not SST-2's 20,935 steps (3,350 epochs), and nothing from TensorFlow's C++ side on stderr."""
    import random

    from text_fixtures import random_sentence

    rng = random.Random(0)
    data = tmp_path / "SST-2"
    data.mkdir()
    rows = [f"{random_sentence(rng, 3, 8)}\t{rng.randrange(2)}" for _ in range(200)]
    (data / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n", encoding="utf-8")
    script = os.path.join(os.path.dirname(sys.executable), "albert-run-classifier")
    command = [script] if os.path.exists(script) else [sys.executable, "-m", "albert_tf.run_classifier"]
    result = subprocess.run([*command, "--task_name=sst-2", f"--data_dir={data}", f"--init_checkpoint={pretrained}",
                             f"--output_dir={tmp_path / 'out'}", "--do_train", "--max_seq_length=16",
                             "--save_checkpoints_steps=100"], capture_output=True, text=True, env=user_env(),
                            timeout=300)  # the 20,935 steps of the recipe would run for an hour
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Fine-tuning on 200 examples: 63 steps of batch 32 (10.1 epochs), lr 1e-05, 3 warmup steps." in (
        result.stdout.splitlines())
    assert "Warning" not in result.stdout and result.stderr == "", result.stdout + result.stderr
