"""`AlbertConfig`: the architecture of an ALBERT model, validated when made.

The fields are those of the original `albert_config.json` (google-research/albert),
so an original config file loads unchanged, plus `sharing`, which selects the
cross-layer parameter-sharing mode of the paper's Table 4 ablation.

>>> config = AlbertConfig.from_preset("albert_base_v2")
>>> config.hidden_size, config.num_hidden_layers
(768, 12)
>>> AlbertConfig.from_dict(config.to_dict()) == config
True
"""

import dataclasses
import json
import os
from pathlib import Path

from albert_tf.settings import POSITIVE, NumberRange

# The original code uses tf.contrib's layer_norm default; all three later
# implementations agree on it. It is a constant of the architecture, not a knob.
LAYER_NORM_EPSILON = 1e-12

# Additive attention bias for padded keys, as in the original `modeling.py`.
ATTENTION_MASK_BIAS = -10000.0

SHARING_MODES = ("all", "attention", "ffn", "none")

# A dropout probability: at 1 nothing would pass.
DROPOUT_RATE = NumberRange(low=0, high=1, high_open=True)

# "gelu" means the tanh approximation, as in the original ALBERT code (and
# Hugging Face's "gelu_new"); "gelu_exact" is the erf form.
ACTIVATIONS = ("gelu", "gelu_new", "gelu_exact", "relu", "tanh", "linear")

# Keys of the original albert_config.json files (v1 and v2) that the released model code never reads
# (modeling.py stores whatever a config file holds, and builds the same network whatever these say).
# Accepted with their released values and dropped; another value asks for a structure the released
# code does not have (memory blocks, another net structure, gaps, down-scaling, dropped layers), which
# would silently be the plain network there, so it is refused here.
_ORIGINAL_NOOP_KEYS = {
    "down_scale_factor": 1,
    "gap_size": 0,
    "net_structure_type": 0,
    "num_memory_blocks": 0,
    "layers_to_keep": [],
}

# Settings users pass to a config that belong elsewhere, and where they go.
_MISPLACED_KEYS = {
    "max_seq_length": "a setting of the preprocessor, the tools and a task model's from_preset; the longest "
                      "sequence a config allows is max_position_embeddings",
}

# Fields a config file must state: left out, a default would silently pick an architecture (a config
# without hidden_size would train ALBERT-base's 768). The others default as the original code does.
REQUIRED_FIELDS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                   "intermediate_size")

# Upper bounds, far above every published ALBERT/BERT configuration (xxlarge: H 4096, FFN 16384;
# BERT-xlarge not shared: 1.27B parameters), checked before anything is allocated: a typo such as
# num_hidden_layers 1000000000 otherwise builds a graph until the OOM killer ends the process.
# Set ALBERT_TF_TRUST_CONFIG=1 to lift them for a truly huge model.
SIZE_LIMITS = {
    "vocab_size": 1_048_576,
    "embedding_size": 65_536,
    "hidden_size": 65_536,
    "num_hidden_layers": 1_024,
    "num_hidden_groups": 1_024,
    "inner_group_num": 64,
    "num_attention_heads": 1_024,
    "intermediate_size": 262_144,
    "max_position_embeddings": 65_536,
    "type_vocab_size": 1_024,
}
MAX_PARAMETERS = 20_000_000_000
TRUST_CONFIG_VARIABLE = "ALBERT_TF_TRUST_CONFIG"


def _presets_dir():
    # An installed wheel ships the presets as albert_tf/presets; a source checkout keeps them in
    # the top-level configs/ (pyproject.toml maps one onto the other).
    packaged = Path(__file__).resolve().parent / "presets"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / "configs"


PRESETS_DIR = _presets_dir()


@dataclasses.dataclass(frozen=True)
class AlbertConfig:
    """Architecture of an ALBERT encoder (defaults: ALBERT-base v2).

    Attributes:
      vocab_size: SentencePiece vocabulary size V.
      embedding_size: width E of the factorized token embedding. With E == H
        there is no E -> H projection (the original builds it only when E != H).
      hidden_size: width H of the transformer.
      num_hidden_layers: number L of transformer layers applied.
      num_hidden_groups: number G of parameter groups; layer l uses group
        int(l / L * G), computed in floating point as the original does (see
        `group_of_layer`). Only for `sharing="all"` (or "none", where it is L).
      inner_group_num: number R of transformer blocks inside a group, applied
        one after the other each time the group is used.
      num_attention_heads: attention heads; must divide hidden_size.
      intermediate_size: inner width of the feed-forward network.
      hidden_act: activation of the FFN and MLM transform ("gelu" is the tanh
        approximation, as in the original code).
      hidden_dropout_prob: dropout on embeddings and sublayer outputs.
      attention_probs_dropout_prob: dropout on attention probabilities.
      max_position_embeddings: longest sequence the position table covers.
      type_vocab_size: number of segment (token type) ids.
      initializer_range: stddev of the truncated-normal initializer.
      sharing: "all" (ALBERT), "attention" or "ffn" (only that sublayer is
        shared across layers), or "none" (every layer owns its weights, BERT).
    """

    vocab_size: int = 30000
    embedding_size: int = 128
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    sharing: str = "all"

    def __post_init__(self):
        errors = []
        for name in (
            "vocab_size",
            "embedding_size",
            "hidden_size",
            "num_hidden_layers",
            "num_hidden_groups",
            "inner_group_num",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                errors.append(f"{name} must be a positive integer, got {value!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not DROPOUT_RATE.admits(value):
                errors.append(f"{name} must be {DROPOUT_RATE.requirement(value)}, got {value!r}")
        # NaN or infinity here draws every weight as NaN.
        if not POSITIVE.admits(self.initializer_range):
            errors.append(f"initializer_range must be {POSITIVE.requirement(self.initializer_range)}, "
                          f"got {self.initializer_range!r}")
        if self.hidden_act not in ACTIVATIONS:
            errors.append(f"hidden_act must be one of {ACTIVATIONS}, got {self.hidden_act!r}")
        if self.sharing not in SHARING_MODES:
            errors.append(f"sharing must be one of {SHARING_MODES}, got {self.sharing!r}")
        if not errors:
            errors.extend(self._structure_errors())
        if not errors and os.environ.get(TRUST_CONFIG_VARIABLE, "") in ("", "0"):
            errors.extend(self._size_errors())
        if errors:
            raise ValueError("Invalid AlbertConfig: " + "; ".join(errors))

    def _structure_errors(self):
        errors = []
        if self.hidden_size % self.num_attention_heads:
            errors.append(
                f"hidden_size {self.hidden_size} is not a multiple of "
                f"num_attention_heads {self.num_attention_heads}"
            )
        if self.num_hidden_groups > self.num_hidden_layers:
            errors.append(
                f"num_hidden_groups {self.num_hidden_groups} exceeds "
                f"num_hidden_layers {self.num_hidden_layers}: some groups would never be used"
            )
        if self.sharing == "none" and self.num_hidden_groups not in (1, self.num_hidden_layers):
            errors.append(
                f'sharing="none" gives every layer its own weights (one group per layer); '
                f"num_hidden_groups must be 1 or {self.num_hidden_layers}, got {self.num_hidden_groups}"
            )
        if self.sharing in ("attention", "ffn") and (
            self.num_hidden_groups != 1 or self.inner_group_num != 1
        ):
            errors.append(
                f'sharing="{self.sharing}" shares one sublayer across all layers; it needs '
                f"num_hidden_groups=1 and inner_group_num=1, got {self.num_hidden_groups} and "
                f"{self.inner_group_num}"
            )
        return errors

    def _size_errors(self):
        errors = [f"{name} {getattr(self, name):,} exceeds the limit {limit:,}" for name, limit in SIZE_LIMITS.items()
                  if getattr(self, name) > limit]
        if not errors and self.parameter_estimate() > MAX_PARAMETERS:
            errors.append(f"about {self.parameter_estimate():,} parameters exceed the limit {MAX_PARAMETERS:,}")
        if errors:
            errors[-1] += f" (set {TRUST_CONFIG_VARIABLE}=1 to lift the size limits)"
        return errors

    def parameter_estimate(self) -> int:
        """Parameters of the encoder, counted from the sizes alone (nothing is built): embeddings,
        projection (only when E != H), the distinct layers' attention and FFN, pooler."""
        e, h, i = self.embedding_size, self.hidden_size, self.intermediate_size
        projection = e * h + h if self.has_embedding_projection else 0
        embeddings = (self.vocab_size + self.max_position_embeddings + self.type_vocab_size + 2) * e + projection
        attention, ffn = 4 * (h * h + h) + 2 * h, (h * i + i) + (i * h + h) + 2 * h
        blocks = len(self.used_groups) * self.inner_group_num
        copies = {"attention": (1, self.num_hidden_layers), "ffn": (self.num_hidden_layers, 1)}.get(
            self.sharing, (blocks, blocks))
        return embeddings + copies[0] * attention + copies[1] * ffn + h * h + h

    # --- Derived structure -------------------------------------------------

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def num_groups(self) -> int:
        """Number of distinct parameter groups the encoder holds."""
        return self.num_hidden_layers if self.sharing == "none" else self.num_hidden_groups

    def group_of_layer(self, layer_index: int) -> int:
        """Group used by layer `layer_index` (0-based).

        The original computes int(l / L * G) in floating point, and a checkpoint's variables follow
        it: for a few configs with G == L (L = 22, 23, 26, 39, 43, ...) the rounding gives one layer
        the group of the layer before (with L = G = 22, layers 14 and 15 both use group 14) and
        group 15 never exists. The exact floor(l * G / L) would differ there, so it is not used.
        `sharing="none"` (one block per layer, albert_tf's name for the not-shared model) maps layer
        l to block l, as Hugging Face does for G == L.
        """
        if self.sharing == "none":
            return layer_index
        return int(layer_index / self.num_hidden_layers * self.num_groups)

    @property
    def used_groups(self) -> tuple:
        """The groups some layer uses, ascending: the groups whose blocks exist (the original creates a
        group's variables only when a layer uses it)."""
        return tuple(sorted({self.group_of_layer(layer) for layer in range(self.num_hidden_layers)}))

    @property
    def has_embedding_projection(self) -> bool:
        """Whether the E -> H projection exists: only when E != H, as in the original, whose checkpoints
        of E == H models have no embedding_hidden_mapping_in."""
        return self.embedding_size != self.hidden_size

    # --- Serialization ------------------------------------------------------

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str | os.PathLike) -> None:
        with open(path, "w") as f:
            f.write(self.to_json_string())

    @classmethod
    def from_dict(cls, values: dict, source: str = "config") -> "AlbertConfig":
        """Builds a config from our JSON or an original albert_config.json."""
        if not isinstance(values, dict):
            raise ValueError(f"{source}: expected a JSON object, got {type(values).__name__}")
        values = dict(values)
        for key, noop_value in _ORIGINAL_NOOP_KEYS.items():
            if key in values:
                value = values.pop(key)
                if value != noop_value:
                    raise ValueError(
                        f"{source}: {key}={value!r} asks for a structure Google's released ALBERT code "
                        f"never implemented (its model ignores {key}); only {noop_value!r}, the value of "
                        "every released config, is accepted"
                    )
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            hints = "".join(f" ({key}: {_MISPLACED_KEYS[key]})" for key in unknown if key in _MISPLACED_KEYS)
            raise ValueError(f"{source}: unknown AlbertConfig keys {unknown}{hints}; known keys: {sorted(known)}")
        missing = [name for name in REQUIRED_FIELDS if name not in values]
        if missing:
            raise ValueError(f"{source}: missing {', '.join(missing)}; a config must state "
                             f"{', '.join(REQUIRED_FIELDS)} (the others default as in the original albert_config.json)")
        try:
            return cls(**values)
        except ValueError as error:
            raise ValueError(f"{source}: {error}") from None

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> "AlbertConfig":
        try:
            with open(path) as f:
                values = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: config file not found") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from None
        return cls.from_dict(values, source=str(path))

    @classmethod
    def from_preset(cls, name: str, **overrides) -> "AlbertConfig":
        """A named preset, with any field replaced: `from_preset("albert_tiny", vocab_size=1000)`
        (KerasHub's `from_preset(name, **kwargs)`). Unknown fields and invalid values are refused."""
        # Only a listed name: joined unchecked, "../../x" would read any JSON file as a preset.
        if name not in preset_names():
            raise ValueError(f"Unknown preset {name!r}; presets: {', '.join(preset_names())} (a config file is "
                             "read with AlbertConfig.from_json_file)")
        path = PRESETS_DIR / f"{name}.json"
        if not overrides:
            return cls.from_json_file(path)
        return cls.from_dict({**cls.from_json_file(path).to_dict(), **overrides},
                             source=f"preset {name} with {', '.join(sorted(overrides))}")

    @classmethod
    def from_name_or_path(cls, name_or_path: str) -> "AlbertConfig":
        """A preset name (`albert_base_v2`) or the path of a JSON config file."""
        if os.path.exists(name_or_path) or name_or_path.endswith(".json"):
            return cls.from_json_file(name_or_path)
        return cls.from_preset(name_or_path)


def preset_names() -> list[str]:
    """Names of the JSON presets shipped in `configs/`, sorted."""
    return sorted(path.stem for path in PRESETS_DIR.glob("*.json"))
