"""The Hugging Face tokenizer files for an ALBERT SentencePiece model.

`convert --to=huggingface` writes, beside spiece.model, a `tokenizer.json` (the
`tokenizers` library's serialization) and a `tokenizer_config.json`, so that
`AutoTokenizer.from_pretrained` loads the tokenizer directly. Without
tokenizer.json, transformers converts spiece.model itself, which needs the
protobuf package at the gencode version its own `sentencepiece_model_pb2` was
generated with (7.x); Apache Beam pins protobuf below 7, so in an environment
with both the conversion fails. Writing the JSON here needs neither protobuf
nor the `tokenizers` package: the one field of the model proto it needs (the
normalizer's precompiled character map) is read from the wire format.

The JSON pipeline reproduces `AlbertTokenizer` (the original ALBERT
tokenization), not only transformers' own conversion of it:
  - the original collapses every Python whitespace character (`str.split()`),
    not only spaces, and drops combining marks by `unicodedata.combining`;
    both are written as explicit character classes computed from Python's
    Unicode database, as the in-graph tokenizer does;
  - Python's `str.lower` turns a word-final capital sigma into "ς"; the
    `tokenizers` Lowercase maps characters one by one ("σ"), so a Replace with
    the final-sigma context runs first;
  - the original re-encodes pieces that end in "<digit>," without the comma;
    as in transformers' own AlbertConverter, such pieces get a score 100 lower,
    so the Unigram search never picks them.
"""

import base64
import json
import os

from albert_tf.text.albert_tokenizer import SPECIAL_PIECES, AlbertTokenizer, ends_with_digit_comma
from albert_tf.text.preprocessing import combining_codepoints, re2_class, whitespace_codepoints

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"

# The penalty transformers' AlbertConverter gives "<digit>," pieces.
DIGIT_COMMA_PENALTY = 100.0


def _varint(data, position):
    value = shift = 0
    while True:
        if position >= len(data):
            raise ValueError("truncated varint")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def _fields(data):
    """Yields (field number, wire type, value) of one protobuf message; bytes for length-delimited fields."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, position = _varint(data, position)
        elif wire_type == 1:
            value, position = data[position:position + 8], position + 8
        elif wire_type == 2:
            length, position = _varint(data, position)
            value, position = data[position:position + length], position + length
        elif wire_type == 5:
            value, position = data[position:position + 4], position + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type}")
        if position > len(data):
            raise ValueError("truncated field")
        yield number, wire_type, value


# sentencepiece_model.proto: ModelProto.normalizer_spec = 3,
# NormalizerSpec.precompiled_charsmap = 2; TrainerSpec = 2, its model_type = 3 (1 = UNIGRAM).
_NORMALIZER_SPEC, _PRECOMPILED_CHARSMAP = 3, 2
_TRAINER_SPEC, _MODEL_TYPE, _UNIGRAM = 2, 3, 1


def precompiled_charsmap(model_proto):
    """The normalizer's precompiled character map of a serialized SentencePiece model (b"" if none)."""
    for number, wire_type, value in _fields(model_proto):
        if number == _NORMALIZER_SPEC and wire_type == 2:
            for inner_number, inner_type, inner_value in _fields(value):
                if inner_number == _PRECOMPILED_CHARSMAP and inner_type == 2:
                    return bytes(inner_value)
    return b""


def model_type(model_proto):
    """SentencePiece's TrainerSpec.model_type (1 = unigram, the default when unset)."""
    for number, wire_type, value in _fields(model_proto):
        if number == _TRAINER_SPEC and wire_type == 2:
            for inner_number, inner_type, inner_value in _fields(value):
                if inner_number == _MODEL_TYPE and inner_type == 0:
                    return inner_value
    return _UNIGRAM


def _replace(pattern, content):
    return {"type": "Replace", "pattern": {"Regex": pattern}, "content": content}


def _normalizers(tokenizer, charsmap):
    # tokenizers' regexes are Oniguruma's, which read RE2's `\x{...}` ranges the same way.
    steps = [
        _replace(re2_class(whitespace_codepoints()) + "+", " "),
        {"type": "Strip", "strip_left": True, "strip_right": True},
        {"type": "Replace", "pattern": {"String": "``"}, "content": '"'},
        {"type": "Replace", "pattern": {"String": "''"}, "content": '"'},
    ]
    if not tokenizer.keep_accents:
        steps += [{"type": "NFKD"}, _replace(re2_class(combining_codepoints()), "")]
    if tokenizer.lower_case:
        # str.lower's Final_Sigma: after a letter and not before one.
        steps += [_replace("(?<=\\p{L})\u03a3(?!\\p{L})", "\u03c2"), {"type": "Lowercase"}]
    if charsmap:
        steps.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")})
    return {"type": "Sequence", "normalizers": steps}


def _metaspace():
    return {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}


def _post_processor():
    cls, sep = SPECIAL_PIECES["[CLS]"], SPECIAL_PIECES["[SEP]"]

    def special(name, type_id):
        return {"SpecialToken": {"id": name, "type_id": type_id}}

    def sequence(name, type_id):
        return {"Sequence": {"id": name, "type_id": type_id}}

    return {
        "type": "TemplateProcessing",
        "single": [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)],
        "pair": [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0), sequence("B", 1), special("[SEP]", 1)],
        "special_tokens": {
            "[CLS]": {"id": "[CLS]", "ids": [cls], "tokens": ["[CLS]"]},
            "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]},
        },
    }


def tokenizer_json(tokenizer):
    """The `tokenizers` serialization (a dict) of an `AlbertTokenizer`."""
    if model_type(tokenizer.model_proto) != _UNIGRAM:
        raise ValueError(f"{tokenizer.source}: not a unigram SentencePiece model; ALBERT's tokenizer.json "
                         "describes a unigram vocabulary")
    sp = tokenizer.sp
    vocab = []
    for piece_id in range(sp.get_piece_size()):
        piece, score = sp.id_to_piece(piece_id), float(sp.get_score(piece_id))
        if ends_with_digit_comma(piece):
            score -= DIGIT_COMMA_PENALTY
        vocab.append([piece, score])
    added = [
        {"id": piece_id, "content": piece, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for piece, piece_id in sorted(SPECIAL_PIECES.items(), key=lambda item: item[1])
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": _normalizers(tokenizer, precompiled_charsmap(tokenizer.model_proto)),
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, _metaspace()]},
        "post_processor": _post_processor(),
        "decoder": _metaspace(),
        "model": {"type": "Unigram", "unk_id": SPECIAL_PIECES["<unk>"], "vocab": vocab, "byte_fallback": False},
    }


def _special_tokens():
    return {"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "<unk>", "sep_token": "[SEP]",
            "pad_token": "<pad>", "cls_token": "[CLS]", "mask_token": "[MASK]"}


def tokenizer_config(tokenizer, model_max_length):
    """tokenizer_config.json: the class, the preprocessing switches and the special tokens.

    The class is the generic `PreTrainedTokenizerFast` (transformers 5 calls it
    `TokenizersBackend`), which runs tokenizer.json as written; transformers'
    `AlbertTokenizer` would rebuild its own normalizer and lose the differences
    listed in the module docstring.
    """
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "do_lower_case": tokenizer.lower_case,
        "keep_accents": tokenizer.keep_accents,
        "remove_space": True,
        "model_max_length": model_max_length,
        # Segment ids matter to ALBERT (sentence pairs); transformers' AlbertTokenizer leaves them out.
        "model_input_names": ["input_ids", "token_type_ids", "attention_mask"],
        **_special_tokens(),
    }


def write_tokenizer_files(spm_model_file, directory, model_max_length, lower_case=True, keep_accents=False):
    """Writes tokenizer.json, tokenizer_config.json and special_tokens_map.json into `directory`."""
    tokenizer = AlbertTokenizer(spm_model_file, lower_case=lower_case, keep_accents=keep_accents)
    files = {
        TOKENIZER_FILE: tokenizer_json(tokenizer),
        TOKENIZER_CONFIG_FILE: tokenizer_config(tokenizer, model_max_length),
        SPECIAL_TOKENS_MAP_FILE: _special_tokens(),
    }
    for name, content in files.items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            json.dump(content, f, indent=2, ensure_ascii=False)
            f.write("\n")
