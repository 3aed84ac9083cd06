"""One flag vocabulary across the training tools: the shared names, and the original scripts' names as aliases."""

import re
import subprocess
import sys

import pytest

# Every training tool takes these names with the same meaning.
SHARED = ("init_checkpoint", "output_dir", "spm_model_file", "max_seq_length", "train_batch_size", "learning_rate",
          "num_train_steps", "num_warmup_steps", "save_checkpoints_steps", "keep_checkpoint_max", "seed")
# The original google-research/albert names, kept as aliases where a tool's own name differs.
ALIASES = {
    "albert_tf.run_classifier": {"train_step": "num_train_steps", "warmup_step": "num_warmup_steps",
                                 "albert_config_file": "albert_config"},
    "albert_tf.run_race": {"train_step": "num_train_steps", "warmup_step": "num_warmup_steps",
                           "albert_config_file": "albert_config"},
    "albert_tf.run_squad": {"train_step": "num_train_steps", "warmup_step": "num_warmup_steps",
                            "albert_config_file": "albert_config"},
    "albert_tf.run_pretraining": {"albert_config_file": "albert_config"},
    "albert_tf.convert": {"albert_config_file": "albert_config"},
    "albert_tf.params": {"albert_config_file": "albert_config"},
}
TRAINING_TOOLS = ("albert_tf.run_classifier", "albert_tf.run_race", "albert_tf.run_squad", "albert_tf.run_pretraining")


def flag_help(tool):
    result = subprocess.run([sys.executable, "-m", tool, "--helpfull"], capture_output=True, text=True, timeout=120)
    return result.stdout + result.stderr


@pytest.mark.parametrize("tool", sorted(ALIASES))
def test_training_tools_share_flag_names(tool):
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
def test_distribution_flags_default_to_the_tools_config(tool):
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
