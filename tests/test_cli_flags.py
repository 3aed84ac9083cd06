"""One flag vocabulary across the training tools: the shared names, and the original scripts' names as aliases;
every tool's --help: its description, example and own flags, and nothing from TensorFlow's C++ side."""

import ast
import concurrent.futures
import functools
import os
import pathlib
import re
import subprocess
import sys
import tomllib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
# The console scripts of albert_tf's tools (pyproject.toml): {script: module}.
TOOLS = {script: target.split(":")[0] for script, target in
         tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"].items()
         if target.startswith("albert_tf.")}
# What TensorFlow's C++ side prints to stderr when it loads unquieted (albert_tf.cli.import_tensorflow_quietly).
TF_STARTUP_LOG = ("cuInit", "absl::InitializeLog", "oneDNN", "cuda", "TF_ENABLE_ONEDNN_OPTS", "computation placer",
                  "cpu_feature_guard")

# Every training tool takes these names with the same meaning.
SHARED = ("init_checkpoint", "output_dir", "spm_model_file", "max_seq_length", "train_batch_size", "learning_rate",
          "num_train_steps", "num_warmup_steps", "save_checkpoints_steps", "keep_checkpoint_max", "seed")
# The original google-research/albert names, kept as aliases where a tool's own name differs.
ALIASES = {
    "albert_tf.run_classifier": {"train_step": "num_train_steps", "warmup_step": "num_warmup_steps",
                                 "albert_config_file": "albert_config"},
    "albert_tf.run_text_classifier": {"train_step": "num_train_steps", "warmup_step": "num_warmup_steps",
                                      "albert_config_file": "albert_config"},
    "albert_tf.run_tagger": {"train_step": "num_train_steps", "warmup_step": "num_warmup_steps",
                             "albert_config_file": "albert_config"},
    "albert_tf.run_race": {"train_step": "num_train_steps", "warmup_step": "num_warmup_steps",
                           "albert_config_file": "albert_config"},
    "albert_tf.run_squad": {"train_step": "num_train_steps", "warmup_step": "num_warmup_steps",
                            "albert_config_file": "albert_config"},
    "albert_tf.run_pretraining": {"albert_config_file": "albert_config"},
    "albert_tf.convert": {"albert_config_file": "albert_config"},
    "albert_tf.params": {"albert_config_file": "albert_config"},
}
TRAINING_TOOLS = ("albert_tf.run_classifier", "albert_tf.run_text_classifier", "albert_tf.run_tagger",
                  "albert_tf.run_race", "albert_tf.run_squad", "albert_tf.run_pretraining")


def user_env():
    """The environment of a user's shell: without the tests' TF_CPP_MIN_LOG_LEVEL (tests/conftest.py)."""
    return {name: value for name, value in os.environ.items() if name != "TF_CPP_MIN_LOG_LEVEL"}


@functools.lru_cache(maxsize=None)
def run_tool(*command):
    """A tool's command line, run once per session as a user would run it."""
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=user_env())


def console_script(script):
    """The installed console script, or `python -m` of its module where the package is not installed."""
    path = pathlib.Path(sys.executable).parent / script
    return (str(path),) if path.exists() else (sys.executable, "-m", TOOLS[script])


def flag_help(tool):
    result = run_tool(sys.executable, "-m", tool, "--helpfull")
    return result.stdout + result.stderr


def listed_flags(help_text, foreign=()):
    """{flag: the module absl lists it under} of a --help/--helpfull text, without the modules whose names start
    with one of `foreign`."""
    listed, module = {}, None
    for line in help_text.split("\nflags:\n", 1)[1].splitlines():
        if re.match(r"^\S.*:$", line):
            module = line[:-1]
        elif (match := re.match(r"^\s+--(?:\[no\])?(\w+):", line)) and not module.startswith(foreign):
            listed[match.group(1)] = module
    return listed


@pytest.fixture(scope="module")
def help_runs():
    """Every tool's --help (console script; python -m too for create_pretraining_data, whose flags live in a shared
    module) and --helpfull, run in parallel: a few seconds each, most of it importing TensorFlow."""
    commands = [(*console_script(script), "--help") for script in TOOLS]
    commands.append((sys.executable, "-m", "albert_tf.create_pretraining_data", "--help"))
    commands += [(sys.executable, "-m", module, "--helpfull") for module in TOOLS.values()]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(lambda command: run_tool(*command), commands))


@pytest.mark.parametrize("tool", sorted(ALIASES))
def test_training_tools_share_flag_names(tool, help_runs):
    text = flag_help(tool)
    defined = set(re.findall(r"^\s+--(?:\[no\])?([a-z_0-9]+):", text, flags=re.MULTILINE))
    missing = [name for name in SHARED if name not in defined] if tool in TRAINING_TOOLS else []
    assert not missing, f"{tool} lacks {missing}"
    for alias, target in ALIASES[tool].items():
        assert re.search(rf"--{alias}: Alias for --{target}\.", text), f"{tool}: --{alias} is not an alias of --{target}"


def flag_default(text, name):
    """The default absl's --helpfull prints for --name (None when it prints none)."""
    match = re.search(rf"^\s+--(?:\[no\])?{name}:(?:(?!^\s+--).)*?\(default: '([^']*)'\)", text,
                      flags=re.MULTILINE | re.DOTALL)
    return match and match.group(1)


@pytest.mark.parametrize("tool", TRAINING_TOOLS)
def test_distribution_flags_default_to_the_tools_config(tool, help_runs):
    """Every training tool defines the distribution settings as flags whose defaults are its config's fields."""
    from albert_tf.training.distribution_config import DISTRIBUTION_NAMES
    from albert_tf.training.finetuning_config import FinetuningConfig
    from albert_tf.training.pretraining_config import PretrainingConfig

    config = PretrainingConfig() if tool == "albert_tf.run_pretraining" else FinetuningConfig()
    text = flag_help(tool)
    for name in DISTRIBUTION_NAMES:
        expected = getattr(config, name)
        if expected is None:
            assert re.search(rf"^\s+--{name}:", text, flags=re.MULTILINE), f"{tool} lacks --{name}"
            continue
        expected = str(expected).lower() if isinstance(expected, bool) else str(expected)
        assert flag_default(text, name) == expected, f"{tool}: --{name}"


@pytest.mark.parametrize("script", sorted(TOOLS))
def test_help_shows_the_tools_description_example_and_own_flags(script, help_runs):
    """`albert-x --help`: the tool's docstring (what it does, an example), then its own flags: --helpfull
    without absl's and TensorFlow's. stderr holds nothing of TensorFlow's C++ start-up log."""
    module = TOOLS[script]
    docstring = ast.get_docstring(ast.parse((REPO_ROOT / f"{module.replace('.', '/')}.py").read_text()), clean=False)
    expected = set(listed_flags(flag_help(module), foreign=("absl.", "tensorflow.")))
    commands = [console_script(script)]
    if script == "albert-create-pretraining-data":
        commands.append((sys.executable, "-m", module))
    for command in commands:
        result = run_tool(*command, "--help")
        assert result.returncode == 0, result.stderr
        startup_log = [line for line in result.stderr.splitlines() if any(mark in line for mark in TF_STARTUP_LOG)]
        assert not startup_log, f"{command}: TensorFlow's start-up log:\n" + "\n".join(startup_log)
        assert result.stdout.startswith(docstring), f"{command}: the help does not start with the docstring"
        assert f"python -m {module} " in result.stdout  # the example
        listed = listed_flags(result.stdout)
        assert set(listed) == expected, f"{command}: missing {expected - set(listed)}, extra {set(listed) - expected}"


def test_the_beam_pipelines_help_shows_its_description_and_the_data_flags():
    """The Beam console script runs absl itself (Beam's own options pass through): its --help too starts with
    the pipeline's docstring and lists the data flags it shares with the local tool."""
    pytest.importorskip("apache_beam")
    script = pathlib.Path(sys.executable).parent / "albert-beam-create-pretraining-data"
    command = (str(script),) if script.exists() else (sys.executable, "-m", "pipelines.create_pretraining_data")
    result = run_tool(*command, "--help")
    assert result.returncode == 0, result.stderr
    docstring = ast.get_docstring(ast.parse((REPO_ROOT / "pipelines" / "create_pretraining_data.py").read_text()),
                                  clean=False)
    assert result.stdout.startswith(docstring)
    listed = set(listed_flags(result.stdout))
    assert {"input_file", "output_file", "spm_model_file", "do_lower_case", "keep_accents", "heldout_every"} <= listed


def test_a_missing_required_flag_is_one_line():
    result = run_tool(*console_script("albert-convert"), "--to=huggingface")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("convert: error: --from is required"), result.stderr


@pytest.mark.parametrize("tool", ["albert_tf.run_classifier", "albert_tf.run_squad", "albert_tf.run_pretraining",
                                  "albert_tf.export"])
def test_help_does_not_import_tensorflow(tool):
    """A help asked for needs only the flags: TensorFlow's import (seconds, and its C++ start-up lines) stays out."""
    code = ("import runpy, sys\n"
            f"sys.argv = [{tool!r}, '--help']\n"
            "try:\n"
            f"    runpy.run_module({tool!r}, run_name='__main__')\n"
            "except SystemExit as done:\n"
            "    assert not done.code, done.code\n"
            "print('imported tensorflow:', 'tensorflow' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("imported tensorflow: False"), result.stdout[-500:]
    assert "absl::InitializeLog" not in result.stderr


@pytest.mark.parametrize("tool, args, message", [
    ("albert_tf.export", ["--checkpoint=x", "--output_dir=y", "--format=litert", "--serving_xla"],
     "--serving_xla: only for --format=savedmodel"),
    ("albert_tf.export", ["--checkpoint=x", "--output_dir=y", "--format=litert", "--serving_precision=bfloat16"],
     "--serving_precision: only for --format=savedmodel"),
    ("albert_tf.export", ["--checkpoint=x", "--output_dir=y", "--format=litert", "--quantization=int8"],
     "--quantization=int8 (weights and activations) needs --calibration_file"),
    ("albert_tf.run_classifier", ["--task_name=mrpc", "--data_dir=.", "--init_checkpoint=x", "--do_train"],
     "--output_dir required"),
    ("albert_tf.run_squad", ["--output_dir=y", "--init_checkpoint=x"], "nothing to do: pass --do_train"),
])
def test_a_command_line_refused_by_its_flags_alone_answers_before_tensorflow_is_imported(tool, args, message):
    """The checks the flags alone decide run first: the refusal comes at once (no seconds of TensorFlow import)."""
    code = ("import runpy, sys\n"
            f"sys.argv = [{tool!r}, *{args!r}]\n"
            "try:\n"
            f"    runpy.run_module({tool!r}, run_name='__main__')\n"
            "except SystemExit as done:\n"
            "    print('exit:', done.code)\n"
            "print('imported tensorflow:', 'tensorflow' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd="/tmp")
    assert result.stdout.split() == ["exit:", "1", "imported", "tensorflow:", "False"], (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{tool}: error: " in lines[0] and message in lines[0], result.stderr
