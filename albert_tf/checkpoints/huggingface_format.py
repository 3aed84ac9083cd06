"""Hugging Face ALBERT checkpoints (`save_pretrained` directories), both ways.

One declarative table maps original TF1 names to Hugging Face names. Each rule is
a pair of templates whose `{placeholders}` match the same values on both sides,
and whether the tensor is transposed (torch Linear weights are [out, in]).
"""

import dataclasses
import json
import os
import re

import numpy as np

from albert_tf.albert_config import LAYER_NORM_EPSILON, AlbertConfig
from albert_tf.file_utils import describe_json_value
from albert_tf.text.special_ids import ALBERT_SPECIAL_IDS

HF_CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX_FILE = "model.safetensors.index.json"
PYTORCH_FILE = "pytorch_model.bin"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"

# The original run_classifier's (classifier_utils.create_model's) names for a classifier's head.
CLASSIFIER_WEIGHTS = "output_weights"
CLASSIFIER_BIAS = "output_bias"
CLASSIFIER_ARCHITECTURE = "AlbertForSequenceClassification"
# A token classifier's head has the same names (classifier.weight [num_labels, H], classifier.bias) on the
# sequence output, and no pooler: its config.json's architectures tell the two apart.
TOKEN_CLASSIFIER_ARCHITECTURE = "AlbertForTokenClassification"

_PLACEHOLDERS = {"group": r"\d+", "inner": r"\d+", "projection": "query|key|value"}


@dataclasses.dataclass(frozen=True)
class Rule:
    original: str
    huggingface: str
    transpose: bool = False


def _dense(original, huggingface):
    return (
        Rule(f"{original}/kernel", f"{huggingface}.weight", transpose=True),
        Rule(f"{original}/bias", f"{huggingface}.bias"),
    )


def _layer_norm(original, huggingface):
    return (Rule(f"{original}/gamma", f"{huggingface}.weight"), Rule(f"{original}/beta", f"{huggingface}.bias"))


_LAYER = "bert/encoder/transformer/group_{group}/inner_group_{inner}"
_HF_LAYER = "albert.encoder.albert_layer_groups.{group}.albert_layers.{inner}"

RULES = (
    Rule("bert/embeddings/word_embeddings", "albert.embeddings.word_embeddings.weight"),
    Rule("bert/embeddings/position_embeddings", "albert.embeddings.position_embeddings.weight"),
    Rule("bert/embeddings/token_type_embeddings", "albert.embeddings.token_type_embeddings.weight"),
    *_layer_norm("bert/embeddings/LayerNorm", "albert.embeddings.LayerNorm"),
    *_dense("bert/encoder/embedding_hidden_mapping_in", "albert.encoder.embedding_hidden_mapping_in"),
    *_dense(f"{_LAYER}/attention_1/self/{{projection}}", f"{_HF_LAYER}.attention.{{projection}}"),
    *_dense(f"{_LAYER}/attention_1/output/dense", f"{_HF_LAYER}.attention.dense"),
    *_layer_norm(f"{_LAYER}/LayerNorm", f"{_HF_LAYER}.attention.LayerNorm"),
    *_dense(f"{_LAYER}/ffn_1/intermediate/dense", f"{_HF_LAYER}.ffn"),
    *_dense(f"{_LAYER}/ffn_1/intermediate/output/dense", f"{_HF_LAYER}.ffn_output"),
    *_layer_norm(f"{_LAYER}/LayerNorm_1", f"{_HF_LAYER}.full_layer_layer_norm"),
    *_dense("bert/pooler/dense", "albert.pooler"),
    *_dense("cls/predictions/transform/dense", "predictions.dense"),
    *_layer_norm("cls/predictions/transform/LayerNorm", "predictions.LayerNorm"),
    Rule("cls/predictions/output_bias", "predictions.bias"),
    # Both sides store the SOP matrix as [2, H]: no transpose.
    Rule("cls/seq_relationship/output_weights", "sop_classifier.classifier.weight"),
    Rule("cls/seq_relationship/output_bias", "sop_classifier.classifier.bias"),
    # A fine-tuned classifier's head: the original run_classifier's names, [num_labels, H] on both sides.
    Rule(CLASSIFIER_WEIGHTS, "classifier.weight"),
    Rule(CLASSIFIER_BIAS, "classifier.bias"),
)

# Hugging Face tensors that duplicate others (tied) or are buffers, not weights.
_TIED_OR_BUFFERS = {
    "predictions.decoder.weight": "albert.embeddings.word_embeddings.weight",
    "predictions.decoder.bias": "predictions.bias",
    "albert.embeddings.position_ids": None,
    "albert.embeddings.token_type_ids": None,
}


def _template_regex(template):
    pattern = re.escape(template)
    for name, value in _PLACEHOLDERS.items():
        pattern = pattern.replace(re.escape("{" + name + "}"), f"(?P<{name}>{value})")
    return re.compile(pattern + r"\Z")


_COMPILED = [(rule, _template_regex(rule.original), _template_regex(rule.huggingface)) for rule in RULES]


def original_to_huggingface(name):
    """(Hugging Face name, transpose) for an original name, or None."""
    for rule, original_regex, _ in _COMPILED:
        match = original_regex.match(name)
        if match:
            return rule.huggingface.format(**match.groupdict()), rule.transpose
    return None


def huggingface_to_original(name):
    """(original name, transpose) for a Hugging Face name, or None."""
    for rule, _, huggingface_regex in _COMPILED:
        match = huggingface_regex.match(name)
        if match:
            return rule.original.format(**match.groupdict()), rule.transpose
    return None


# --- Configs ---------------------------------------------------------------

_HF_TO_OUR_ACTIVATION = {
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_fast": None,  # a different approximation: refuse rather than drift
    "gelu": "gelu_exact",  # Hugging Face's "gelu" is the erf form
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}
_OUR_TO_HF_ACTIVATION = {"gelu": "gelu_new", "gelu_new": "gelu_new", "gelu_exact": "gelu", "relu": "relu",
                         "tanh": "tanh", "linear": "linear"}


def _check_huggingface_types(hf_config, source):
    """ValueError naming `source` and the key for a value of the wrong JSON type (a size written as the string
    "768" by a hand edit or another tool), before any of them is compared or used."""
    if not isinstance(hf_config, dict):
        raise ValueError(f"{source}: expected a JSON object (a Hugging Face config), got "
                         f"{describe_json_value(hf_config)}")
    for key, value in hf_config.items():
        if key in _HF_SIZE_KEYS and (isinstance(value, bool) or not isinstance(value, int)):
            expected = "an integer"
        elif key in _HF_NUMBER_KEYS and (isinstance(value, bool) or not isinstance(value, (int, float))):
            expected = "a number"
        elif key in _HF_STRING_KEYS and not isinstance(value, str):
            expected = "a string"
        else:
            continue
        raise ValueError(f'{source}: "{key}" must be {expected}, got {describe_json_value(value)}')


# The keys albert_config_from_huggingface reads, by the JSON type Hugging Face writes them as.
_HF_SIZE_KEYS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
                 "inner_group_num", "num_attention_heads", "intermediate_size", "max_position_embeddings",
                 "type_vocab_size")
_HF_NUMBER_KEYS = ("layer_norm_eps", "hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range")
_HF_STRING_KEYS = ("model_type", "hidden_act", "position_embedding_type")


def albert_config_from_huggingface(hf_config, source=HF_CONFIG_FILE):
    """AlbertConfig for a Hugging Face ALBERT config dict; refuses what we cannot match exactly."""
    _check_huggingface_types(hf_config, source)
    if hf_config.get("model_type", "albert") != "albert":
        raise ValueError(f"{source}: model_type is {hf_config.get('model_type')!r}, not 'albert'")
    epsilon = hf_config.get("layer_norm_eps", LAYER_NORM_EPSILON)
    if epsilon != LAYER_NORM_EPSILON:
        raise ValueError(f"{source}: layer_norm_eps={epsilon}; ALBERT uses {LAYER_NORM_EPSILON}")
    position_type = hf_config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(f"{source}: position_embedding_type={position_type!r}; only 'absolute' is ALBERT")
    activation = hf_config.get("hidden_act", "gelu_new")
    if _HF_TO_OUR_ACTIVATION.get(activation) is None:
        raise ValueError(f"{source}: hidden_act={activation!r} is not supported")
    num_layers = hf_config.get("num_hidden_layers", 12)
    num_groups = hf_config.get("num_hidden_groups", 1)
    # One group per layer is the not-shared (BERT-style) model of the paper.
    not_shared = num_layers > 1 and num_groups == num_layers
    values = {
        "vocab_size": hf_config.get("vocab_size", 30000),
        "embedding_size": hf_config.get("embedding_size", 128),
        "hidden_size": hf_config.get("hidden_size", 4096),
        "num_hidden_layers": num_layers,
        "num_hidden_groups": 1 if not_shared else num_groups,
        "inner_group_num": hf_config.get("inner_group_num", 1),
        "num_attention_heads": hf_config.get("num_attention_heads", 64),
        "intermediate_size": hf_config.get("intermediate_size", 16384),
        "hidden_act": _HF_TO_OUR_ACTIVATION[activation],
        "hidden_dropout_prob": hf_config.get("hidden_dropout_prob", 0.0),
        "attention_probs_dropout_prob": hf_config.get("attention_probs_dropout_prob", 0.0),
        "max_position_embeddings": hf_config.get("max_position_embeddings", 512),
        "type_vocab_size": hf_config.get("type_vocab_size", 2),
        "initializer_range": hf_config.get("initializer_range", 0.02),
        "sharing": "none" if not_shared else "all",
    }
    config = AlbertConfig.from_dict(values, source=source)
    check_same_layer_groups(config, source)
    return config


def check_same_layer_groups(config, source="the model"):
    """Refuses a config whose layers Hugging Face would give other groups than the original does.

    Hugging Face's AlbertTransformer picks layer l's group as int(l / (L / G)), the original (and
    albert_tf) as int(l / L * G); in floating point the two differ for some (L, G), e.g. L = 18,
    G = 14 at layer 9 (group 6 there, 7 here), and a converted model would then compute something else.
    """
    if config.sharing != "all":
        return
    layers, groups = config.num_hidden_layers, config.num_groups
    differing = [layer for layer in range(layers)
                 if int(layer / (layers / groups)) != config.group_of_layer(layer)]
    if differing:
        raise ValueError(f"{source}: with num_hidden_layers={layers} and num_hidden_groups={groups} Hugging Face's "
                         f"ALBERT gives layer(s) {differing} another group than the original's int(l / L * G) "
                         "(it computes int(l / (L / G))): no conversion between them is exact")


def albert_config_to_huggingface(config, with_heads, special_ids=ALBERT_SPECIAL_IDS, tokenizer_class=None):
    """A Hugging Face config dict for `config` (sharing "all" or "none"). `special_ids`: the vocabulary's
    (pad_token_id, and [CLS] and [SEP] as bos_token_id and eos_token_id, as Hugging Face's ALBERT configs name
    them); `tokenizer_class`: written where the tokenizer is not ALBERT's own (a WordPiece vocabulary's
    BertTokenizer), as the WordPiece ALBERTs on the Hub name it in config.json too."""
    if config.sharing not in ("all", "none"):
        raise ValueError(f'sharing="{config.sharing}" cannot be expressed as a Hugging Face ALBERT config')
    check_same_layer_groups(config)
    return {
        "architectures": ["AlbertForPreTraining" if with_heads else "AlbertModel"],
        "model_type": "albert",
        "vocab_size": config.vocab_size,
        "embedding_size": config.embedding_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_hidden_groups": config.num_groups,
        "inner_group_num": config.inner_group_num,
        "num_attention_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size,
        "hidden_act": _OUR_TO_HF_ACTIVATION[config.hidden_act],
        "hidden_dropout_prob": config.hidden_dropout_prob,
        "attention_probs_dropout_prob": config.attention_probs_dropout_prob,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size,
        "initializer_range": config.initializer_range,
        "layer_norm_eps": LAYER_NORM_EPSILON,
        "position_embedding_type": "absolute",
        "classifier_dropout_prob": 0.1,
        "pad_token_id": special_ids.pad,
        "bos_token_id": special_ids.cls,
        "eos_token_id": special_ids.sep,
        "tie_word_embeddings": True,
        **({"tokenizer_class": tokenizer_class} if tokenizer_class else {}),
    }


# albert_tf's key in a sequence classifier's config.json: whether it answers sentence pairs (text, text_b).
TAKES_PAIRS_KEY = "takes_pairs"


def classifier_config(num_labels, label_names=None, is_regression=False, takes_pairs=None, multi_label=False):
    """What AlbertForSequenceClassification's config.json adds to the encoder's: the architecture,
    num_labels, id2label/label2id (`label_names`, else Hugging Face's own LABEL_i), problem_type
    "regression" for a regression head, "multi_label_classification" for a multi-label one (Hugging Face's
    loss then takes each label's sigmoid) and "single_label_classification" otherwise (a one-output head
    without it reads back as a regression), and albert_tf's "takes_pairs" where it is known (Hugging Face
    keeps a key it does not know; a round trip brings it back)."""
    config = {"architectures": [CLASSIFIER_ARCHITECTURE], **_label_maps(num_labels, label_names)}
    if is_regression:
        if num_labels != 1:
            raise ValueError(f"a regression head has one output, not num_labels={num_labels}")
        config["problem_type"] = "regression"
    elif multi_label:
        config["problem_type"] = "multi_label_classification"
    else:
        config["problem_type"] = "single_label_classification"
    if takes_pairs is not None:
        config[TAKES_PAIRS_KEY] = bool(takes_pairs)
    return config


def token_classifier_config(num_labels, label_names=None):
    """What AlbertForTokenClassification's config.json adds to the encoder's: the architecture, num_labels and
    id2label/label2id (the tag names `label_names`, else Hugging Face's own LABEL_i)."""
    return {"architectures": [TOKEN_CLASSIFIER_ARCHITECTURE], **_label_maps(num_labels, label_names)}


def _label_maps(num_labels, label_names):
    """num_labels, id2label and label2id of a config.json: `label_names`, else Hugging Face's LABEL_i."""
    num_labels = int(num_labels)
    names = list(label_names) if label_names else [f"LABEL_{index}" for index in range(num_labels)]
    if len(names) != num_labels:
        raise ValueError(f"label_names has {len(names)} names for num_labels={num_labels}")
    if len(set(names)) != len(names):
        raise ValueError(f"label_names {names}: repeated names cannot be Hugging Face's label2id keys")
    return {"num_labels": num_labels, "id2label": {str(index): name for index, name in enumerate(names)},
            "label2id": {name: index for index, name in enumerate(names)}}


def is_token_classifier(directory, has_pooler=True):
    """Whether a save_pretrained directory holds an AlbertForTokenClassification: its config.json's architectures
    say so, or, where it names none (a config written by hand or by an older tool), its weights (`has_pooler`
    False): the head's names are a sequence classifier's, but only a sequence classifier reads the pooler, which
    AlbertForTokenClassification lacks."""
    architectures = _read_config(directory).get("architectures") or []
    return TOKEN_CLASSIFIER_ARCHITECTURE in architectures or (not architectures and not has_pooler)


def recorded_tag_names(directory, num_labels):
    """{"label_names": [...]} of a token classifier's config.json (names other than Hugging Face's default
    LABEL_i), else {}."""
    path = os.path.join(directory, HF_CONFIG_FILE)
    names = _label_names(_read_config(directory), num_labels, path)
    return {"label_names": names} if names else {}


def _read_config(directory):
    with open(os.path.join(directory, HF_CONFIG_FILE), encoding="utf-8") as f:
        return json.load(f)


def recorded_labels(directory, num_labels):
    """{"label_names": [...]} (names other than Hugging Face's default LABEL_i) or {"is_regression": True}
    from a sequence classifier's config.json; a one-output head without a problem_type is a regression,
    as Hugging Face's loss takes it. With "takes_pairs" where the file says it (albert_tf writes it)."""
    path = os.path.join(directory, HF_CONFIG_FILE)
    hf_config = _read_config(directory)
    return {**_recorded_labels(hf_config, num_labels, path), **_recorded_pairs(hf_config, path)}


def _recorded_pairs(hf_config, path):
    pairs = hf_config.get(TAKES_PAIRS_KEY)
    if pairs is None:
        return {}
    if not isinstance(pairs, bool):
        raise ValueError(f'{path}: "{TAKES_PAIRS_KEY}" must be true or false (whether the classifier answers '
                         f"sentence pairs), got {pairs!r}")
    return {"takes_pairs": pairs}


def _recorded_labels(hf_config, num_labels, path):
    problem_type = hf_config.get("problem_type")
    if problem_type == "regression" or (problem_type is None and num_labels == 1):
        return {"is_regression": True}
    if problem_type not in (None, "single_label_classification", "multi_label_classification"):
        raise ValueError(f"{path}: problem_type={problem_type!r}; albert_tf's classifier is single-label "
                         "(softmax), multi-label (sigmoid) or a one-output regression")
    multi_label = {"problem_type": "multi_label"} if problem_type == "multi_label_classification" else {}
    names = _label_names(hf_config, num_labels, path)
    return {**({"label_names": names} if names else {}), "is_regression": False, **multi_label}


def _label_names(hf_config, num_labels, path):
    """The label names of a config.json's id2label, or None where it names none but Hugging Face's LABEL_i (or
    does not name each of the `num_labels` once)."""
    try:
        id2label = {int(index): str(name) for index, name in (hf_config.get("id2label") or {}).items()}
    except (ValueError, AttributeError) as error:
        raise ValueError(f"{path}: id2label is not a map of label ids to names ({error})") from None
    names = [id2label.get(index) for index in range(num_labels)]
    if None in names or len(id2label) != num_labels or names == [f"LABEL_{index}" for index in range(num_labels)]:
        return None
    return names


# --- Reading ---------------------------------------------------------------


def _load_safetensors(path):
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        return load_file(path)
    except (SafetensorError, ValueError, OverflowError) as error:
        # A truncated download or a damaged file: say which file, not a safetensors traceback.
        raise ValueError(f"{path}: corrupt or truncated safetensors file ({error})") from None


def _is_inside(path, directory):
    return os.path.commonpath([path, directory]) == directory


def _confined_shard(directory, index_path, name):
    """The path of the shard `name` that the index at `index_path` lists, refused (one line naming the index
    and the entry) unless it is a file of `directory`: no absolute path, no `..`, no link leading out. A
    Hugging Face cache snapshot (`.../snapshots/<revision>/`) links every file into its repository's
    `blobs/`, which is where such a link may lead."""
    outside = ValueError(f"{index_path}: its weight_map names {name!r}, which is not a file of {directory}; a "
                         "shard index lists files of its own directory only: restore the index, or ask whoever "
                         "made the directory")
    if not isinstance(name, str) or not name or os.path.isabs(name) or os.path.normpath(name).split(os.sep)[0] == "..":
        raise outside
    home = os.path.realpath(directory)
    allowed = [home]
    if os.path.basename(os.path.dirname(home)) == "snapshots":
        allowed.append(os.path.join(os.path.dirname(os.path.dirname(home)), "blobs"))
    resolved = os.path.realpath(os.path.join(directory, name))
    if not any(_is_inside(resolved, root) for root in allowed):
        raise outside
    if not os.path.isfile(resolved):
        raise FileNotFoundError(f"{index_path}: its weight_map names {name!r}, which is no file in {directory}")
    return os.path.join(directory, name)


def _read_shards(directory, index_path):
    try:
        with open(index_path, encoding="utf-8") as f:
            names = json.load(f)["weight_map"].values()
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{index_path}: not a safetensors index ({error})") from None
    shards = {_confined_shard(directory, index_path, name) for name in names}
    state = {}
    for shard in sorted(shards):
        state.update(_load_safetensors(shard))
    return state


def _load_pytorch_pickle(path):
    """The state dict of a pytorch_model.bin, read by torch.load's weights-only unpickler: a pickle holding
    anything but tensors (code it would run on loading) is refused in one line, as is a damaged file."""
    import pickle

    try:
        import torch
    except ImportError:
        raise ImportError(
            f"{path}: reading pytorch_model.bin needs torch (pip install torch==2.13.0), "
            "or save the model with safetensors"
        ) from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        # torch's message is a page that ends by saying how to load the file unsafely; its reason is one line.
        reason = re.search(r"WeightsUnpickler error:\s*(.+?)(?:\.\s|\n|$)", str(error))
        raise ValueError(f"{path}: a pickle that holds more than tensors ({reason[1] if reason else 'refused'}); "
                         "loading it could run code, and torch.load(weights_only=True) refuses it: ask for the "
                         "model as model.safetensors (save_pretrained(..., safe_serialization=True)) and convert "
                         "that") from None
    except (RuntimeError, EOFError) as error:
        raise ValueError(f"{path}: corrupt or truncated PyTorch file ({str(error).split('. ')[0]})") from None
    if not isinstance(state, dict):
        raise ValueError(f"{path}: holds a {type(state).__name__}, not a state dict of named tensors")
    return {name: tensor.float().numpy() for name, tensor in state.items()}


def _read_state_dict(directory):
    safetensors_path = os.path.join(directory, SAFETENSORS_FILE)
    index_path = os.path.join(directory, SAFETENSORS_INDEX_FILE)
    pytorch_path = os.path.join(directory, PYTORCH_FILE)
    if os.path.isfile(safetensors_path):
        return _load_safetensors(safetensors_path)
    if os.path.isfile(index_path):
        return _read_shards(directory, index_path)
    if os.path.isfile(pytorch_path):
        return _load_pytorch_pickle(pytorch_path)
    raise FileNotFoundError(
        f"{directory}: no {SAFETENSORS_FILE}, {SAFETENSORS_INDEX_FILE} or {PYTORCH_FILE}"
    )


def read_huggingface_dir(directory):
    """(AlbertConfig, {original name: array}, [HF names without a rule]) for a save_pretrained dir."""
    config_path = os.path.join(directory, HF_CONFIG_FILE)
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"{directory}: no {HF_CONFIG_FILE}; expected a save_pretrained directory")
    try:
        with open(config_path, encoding="utf-8") as f:
            hf_config = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{config_path}: not valid JSON ({error})") from None
    config = albert_config_from_huggingface(hf_config, source=config_path)
    state = _read_state_dict(directory)
    # A bare AlbertModel saves its tensors without the "albert." prefix.
    if not any(name.startswith("albert.") for name in state):
        state = {f"albert.{name}": tensor for name, tensor in state.items()}
    tensors, unmapped = {}, []
    for name, tensor in state.items():
        if name in _TIED_OR_BUFFERS:
            tied_to = _TIED_OR_BUFFERS[name]
            if tied_to in state and not np.array_equal(np.asarray(tensor), np.asarray(state[tied_to])):
                unmapped.append(f"{name} (not equal to {tied_to}, which it should be tied to)")
            continue
        translated = huggingface_to_original(name)
        if translated is None:
            unmapped.append(name)
            continue
        original_name, transpose = translated
        array = np.asarray(tensor, dtype=np.float32)
        tensors[original_name] = array.T if transpose else array
    if not config.has_embedding_projection:
        _drop_identity_projection(tensors, directory)
    return config, tensors, unmapped


_PROJECTION = "bert/encoder/embedding_hidden_mapping_in"


def _identity_projection(size):
    """Hugging Face's AlbertModel always applies embedding_hidden_mapping_in; the original (and albert_tf)
    has none when embedding_size == hidden_size, which the identity with a zero bias reproduces exactly."""
    return {f"{_PROJECTION}/kernel": np.eye(size, dtype=np.float32),
            f"{_PROJECTION}/bias": np.zeros(size, np.float32)}


def _drop_identity_projection(tensors, directory):
    """Removes an E == H model's projection, which must be the identity to mean the original's model."""
    kernel, bias = tensors.pop(f"{_PROJECTION}/kernel", None), tensors.pop(f"{_PROJECTION}/bias", None)
    if kernel is None and bias is None:
        return
    if kernel is None or bias is None or not (np.array_equal(kernel, np.eye(kernel.shape[0], dtype=kernel.dtype))
                                             and not np.any(bias)):
        raise ValueError(f"{directory}: embedding_size == hidden_size, and its embedding_hidden_mapping_in is not "
                         "the identity: the original ALBERT (and albert_tf) has no projection when E == H, so this "
                         "model cannot be converted exactly")


# --- Writing ---------------------------------------------------------------


def write_huggingface_dir(config, tensors, directory, with_heads, classifier=None, special_ids=ALBERT_SPECIAL_IDS,
                          tokenizer_class=None):
    """Writes config.json + model.safetensors for {original name: array}: AlbertForPreTraining's with the
    pretraining heads, AlbertForSequenceClassification's or AlbertForTokenClassification's with `classifier`
    (classifier_config() or token_classifier_config()), else AlbertModel's. `special_ids` and `tokenizer_class`:
    the vocabulary's, as albert_config_to_huggingface writes them."""
    from safetensors.numpy import save_file

    if not config.has_embedding_projection:
        tensors = {**tensors, **_identity_projection(config.hidden_size)}
    state = {}
    for name, array in tensors.items():
        translated = original_to_huggingface(name)
        if translated is None:
            raise ValueError(f"{name}: no Hugging Face name for this tensor")
        hf_name, transpose = translated
        state[hf_name] = np.ascontiguousarray(array.T if transpose else array)
    if not with_heads and classifier is None:
        # AlbertModel.from_pretrained expects its own names, without "albert.".
        state = {name.removeprefix("albert."): array for name, array in state.items()}
    os.makedirs(directory, exist_ok=True)
    from safetensors import SafetensorError

    path = os.path.join(directory, SAFETENSORS_FILE)
    try:
        save_file(state, path, metadata={"format": "pt"})
    except SafetensorError as error:
        # safetensors reports a full disk or a missing directory as its own error (not OSError), which a command
        # line would print as a traceback: the same one line as any other write failure.
        raise OSError(f"{path}: could not write the weights ({str(error).splitlines()[0]})") from None
    with open(os.path.join(directory, HF_CONFIG_FILE), "w") as f:
        json.dump({**albert_config_to_huggingface(config, with_heads, special_ids, tokenizer_class),
                   **(classifier or {})}, f, indent=2, sort_keys=True)
        f.write("\n")


def recorded_casing(directory):
    """{"lower_case": bool, "keep_accents": bool, "rewrite_quotes": bool} from a Hugging Face directory's
    tokenizer_config.json (its do_lower_case and keep_accents; rewrite_quotes only albert_tf writes, for a model
    whose text kept `` and ''), each where it says it."""
    path = os.path.join(directory, TOKENIZER_CONFIG_FILE)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            tokenizer_config = json.load(f)
        values = {"lower_case": tokenizer_config.get("do_lower_case"),
                  "keep_accents": tokenizer_config.get("keep_accents"),
                  "rewrite_quotes": tokenizer_config.get("rewrite_quotes")}
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as error:
        raise ValueError(f"{path}: not a readable tokenizer config ({error})") from None
    return {key: value for key, value in values.items() if isinstance(value, bool)}
