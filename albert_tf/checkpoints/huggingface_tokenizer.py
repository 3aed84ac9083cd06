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
    so the Unigram search never picks them;
  - transformers' conversion always turns ``` `` ``` and `''` into `"`; the
    original keeps them. The Replace steps are written only for a model whose
    record says its text had them (`rewrite_quotes`: a model converted from
    Hugging Face), and tokenizer_config.json says which rule it is, so a
    conversion back records it again.
"""

import base64
import json
import os
import unicodedata

from albert_tf.text.albert_tokenizer import SPECIAL_PIECES, AlbertTokenizer, ends_with_digit_comma
from albert_tf.text.preprocessing import combining_codepoints, re2_class, whitespace_codepoints
from albert_tf.text.spm_proto import UNIGRAM, model_type, precompiled_charsmap

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"

# The penalty transformers' AlbertConverter gives "<digit>," pieces.
DIGIT_COMMA_PENALTY = 100.0


def _replace(pattern, content):
    return {"type": "Replace", "pattern": {"Regex": pattern}, "content": content}


def _normalizers(tokenizer, charsmap):
    # tokenizers' regexes are Oniguruma's, which read RE2's `\x{...}` ranges the same way.
    steps = [
        _replace(re2_class(whitespace_codepoints()) + "+", " "),
        {"type": "Strip", "strip_left": True, "strip_right": True},
    ]
    if tokenizer.rewrite_quotes:
        steps += [{"type": "Replace", "pattern": {"String": quotes}, "content": '"'} for quotes in ("``", "''")]
    if tokenizer.keep_accents:
        # A kana and its (han)dakuten written apart (か + U+3099, ｶ + ﾞ): SentencePiece's map composes them (が);
        # tokenizers' Precompiled step looks up a grapheme whole only under 6 bytes, and these are 6.
        steps += [{"type": "Replace", "pattern": {"String": pair}, "content": composed}
                  for pair, composed in _kana_compositions()]
    else:
        # NFC after the marks are gone composes what NFKD split without a mark: Hangul syllables, which NFKD
        # turns into two or three jamo. SentencePiece's own normalizer composes them again (its map is matched
        # longest first over the whole text); the Precompiled step would leave a syllable of three jamo (9
        # bytes) as jamo, each <unk> to the model.
        steps += [{"type": "NFKD"}, _replace(re2_class(combining_codepoints()), ""), {"type": "NFC"}]
    if tokenizer.lower_case:
        # str.lower's Final_Sigma: after a letter and not before one.
        steps += [_replace("(?<=\\p{L})\u03a3(?!\\p{L})", "\u03c2"), {"type": "Lowercase"}]
    if charsmap:
        steps.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")})
    return {"type": "Sequence", "normalizers": steps}


def _kana_compositions():
    """[(kana + voicing mark, the one character NFKC makes of them)] for full- and half-width kana and marks."""
    kana = [chr(c) for c in [*range(0x3041, 0x3097), *range(0x30A1, 0x30FB), *range(0xFF66, 0xFF9E)]]
    pairs = [(base + mark, unicodedata.normalize("NFKC", base + mark))
             for base in kana for mark in ("\u3099", "\u309a", "\uff9e", "\uff9f")]
    return [(pair, composed) for pair, composed in pairs if len(composed) == 1]


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
    if model_type(tokenizer.model_proto) != UNIGRAM:
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
        # albert_tf's own key: whether tokenizer.json turns `` and '' into " (transformers' tokenizer always does).
        "rewrite_quotes": tokenizer.rewrite_quotes,
        "remove_space": True,
        "model_max_length": model_max_length,
        # Segment ids matter to ALBERT (sentence pairs); transformers' AlbertTokenizer leaves them out.
        "model_input_names": ["input_ids", "token_type_ids", "attention_mask"],
        **_special_tokens(),
    }


def write_tokenizer_files(spm_model_file, directory, model_max_length, lower_case=True, keep_accents=False,
                          rewrite_quotes=False):
    """Writes tokenizer.json, tokenizer_config.json and special_tokens_map.json into `directory`."""
    tokenizer = AlbertTokenizer(spm_model_file, lower_case=lower_case, keep_accents=keep_accents,
                                rewrite_quotes=rewrite_quotes)
    files = {
        TOKENIZER_FILE: tokenizer_json(tokenizer),
        TOKENIZER_CONFIG_FILE: tokenizer_config(tokenizer, model_max_length),
        SPECIAL_TOKENS_MAP_FILE: _special_tokens(),
    }
    for name, content in files.items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            json.dump(content, f, indent=2, ensure_ascii=False)
            f.write("\n")
