"""Hugging Face's BertTokenizer files for the ALBERTs whose vocabulary is a WordPiece vocab.txt, both ways.

Google's Chinese ALBERTs (albert_*_zh), brightmart's albert_zh ports, ckiplab's and kykim's models ship a BERT
vocab.txt instead of a SentencePiece model, and name transformers' `BertTokenizer` or `BertTokenizerFast` as
their tokenizer (tokenizer_config.json's or config.json's "tokenizer_class"). An albert_tf model directory
records such a vocabulary as vocab.txt (its exact bytes) with "vocabulary": "wordpiece", "lower_case" and
"keep_accents" in albert_tf.json; `albert_tf.text.vocabularies` builds the tokenizer from them, with accents
stripped exactly when `lower_case and not keep_accents`.

Reading maps Hugging Face's switches onto that record: lower_case is do_lower_case (BertTokenizer's default:
true), and the accents are stripped as strip_accents says, or where it says nothing (null) as do_lower_case
(the original BERT's rule). What the record cannot express is refused, naming the file and the key: accents
stripped from text that is not lowercased, CJK ideographs left unsplit, other special tokens than BERT's.

Writing gives transformers' `BertTokenizer` exactly those switches: vocab.txt, tokenizer_config.json (with
strip_accents spelled out, so nothing depends on the reader's default) and special_tokens_map.json.
"""

import json
import os

from albert_tf.file_utils import describe_json_value
from albert_tf.settings import SettingError
from albert_tf.text.wordpiece_tokenizer import SPECIAL_TOKENS

VOCAB_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"
HF_CONFIG_FILE = "config.json"
# transformers' names of BERT's WordPiece tokenizer (5.x makes BertTokenizerFast an alias of BertTokenizer).
BERT_TOKENIZER_CLASSES = ("BertTokenizer", "BertTokenizerFast")
WRITTEN_TOKENIZER_CLASS = "BertTokenizer"
# BertTokenizer's arguments for its special tokens, and the lines of BERT's vocab.txt they name.
_SPECIAL_TOKEN_KEYS = dict(zip(("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"), SPECIAL_TOKENS))


def _read_json_object(path):
    """The JSON object in `path`, or None where there is no such file; ValueError naming it when it is not one."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected a JSON object, got {describe_json_value(value)}")
    return value


def named_tokenizer_class(directory):
    """(tokenizer class, file that names it) of a save_pretrained directory: its tokenizer_config.json's
    "tokenizer_class", else its config.json's (ckiplab's models name it there); (None, None) where neither does."""
    for name in (TOKENIZER_CONFIG_FILE, HF_CONFIG_FILE):
        path = os.path.join(directory, name)
        named = (_read_json_object(path) or {}).get("tokenizer_class")
        if named is not None:
            if not isinstance(named, str):
                raise ValueError(f'{path}: "tokenizer_class" must be a string, got {describe_json_value(named)}')
            return named, path
    return None, None


def is_bert_tokenizer(tokenizer_class):
    return tokenizer_class in BERT_TOKENIZER_CLASSES


def refuse_other_tokenizer(tokenizer_class, said_by, vocab_file):
    """SettingError for a vocab.txt whose directory names another tokenizer than BERT's (and has no spiece.model):
    albert_tf reads a vocab.txt by BERT's WordPiece rules only, which another class need not follow."""
    raise SettingError(f'{said_by}: "tokenizer_class" is {tokenizer_class!r}, but the vocabulary beside it is '
                       f"{vocab_file}, which albert_tf reads as BERT's WordPiece ({' or '.join(BERT_TOKENIZER_CLASSES)}"
                       "); a vocab.txt of another tokenizer does not convert")


def _optional_bool(tokenizer_config, key, path):
    value = tokenizer_config.get(key)
    if value is not None and not isinstance(value, bool):
        raise SettingError(f'{path}: "{key}" must be true, false or null, got {describe_json_value(value)}')
    return value


def _token_text(value):
    """A special token's text: a string, or the "content" of a serialized AddedToken."""
    return value.get("content") if isinstance(value, dict) else value


def read_settings(directory):
    """(the recorded casing, strip_accents) of a BertTokenizer's tokenizer_config.json in `directory`.

    The recorded casing is {"lower_case": do_lower_case} where the file says it ({} without the file or the
    key: BertTokenizer's default, lowercasing, applies as the converter's default), with "rewrite_quotes"
    false: a WordPiece vocabulary takes quotes as the text writes them. strip_accents is the file's (None:
    as lower_case). Refused in one line, naming the file and the key: tokenize_chinese_chars false (the
    record always splits CJK ideographs), special tokens other than BERT's, and values of the wrong type.
    """
    path = os.path.join(directory, TOKENIZER_CONFIG_FILE)
    tokenizer_config = _read_json_object(path) or {}
    recorded = {"rewrite_quotes": False}
    lower_case = _optional_bool(tokenizer_config, "do_lower_case", path)
    if lower_case is not None:
        recorded["lower_case"] = lower_case
    strip_accents = _optional_bool(tokenizer_config, "strip_accents", path)
    if _optional_bool(tokenizer_config, "tokenize_chinese_chars", path) is False:
        raise SettingError(f'{path}: "tokenize_chinese_chars" is false (CJK ideographs tokenized as parts of the '
                           "words around them); an albert_tf model records a WordPiece vocabulary with each CJK "
                           "ideograph its own word (BERT's rule), so this tokenizer cannot be recorded")
    for key, token in _SPECIAL_TOKEN_KEYS.items():
        named = _token_text(tokenizer_config.get(key))
        if named is not None and named != token:
            # The value is not quoted: a SettingError would read a token such as <unk> as a setting's name.
            raise SettingError(f'{path}: "{key}" is not "{token}"; an albert_tf model records a WordPiece vocabulary '
                               f"with BERT's special tokens ({', '.join(SPECIAL_TOKENS)}), so this tokenizer cannot "
                               "be recorded")
    return recorded, strip_accents


def strip_accents_of(lower_case, keep_accents):
    """Whether a WordPiece model's tokenizer strips accents: as albert_tf.text.vocabularies builds it."""
    return bool(lower_case and not keep_accents)


def tokenizer_config(lower_case, strip_accents, model_max_length):
    """tokenizer_config.json for transformers' BertTokenizer with albert_tf's switches."""
    return {
        "tokenizer_class": WRITTEN_TOKENIZER_CLASS,
        "do_lower_case": bool(lower_case),
        # Spelled out: null would mean "as do_lower_case", which is the same only where lowercasing strips accents.
        "strip_accents": bool(strip_accents),
        "tokenize_chinese_chars": True,
        "model_max_length": model_max_length,
        # Segment ids matter to ALBERT (sentence pairs).
        "model_input_names": ["input_ids", "token_type_ids", "attention_mask"],
        **special_tokens(),
    }


def special_tokens():
    return dict(_SPECIAL_TOKEN_KEYS)


def write_tokenizer_files(vocabulary_bytes, directory, model_max_length, lower_case, keep_accents):
    """Writes vocab.txt (`vocabulary_bytes`, the model's vocab.txt as it is), tokenizer_config.json and
    special_tokens_map.json into `directory`."""
    with open(os.path.join(directory, VOCAB_FILE), "wb") as f:
        f.write(vocabulary_bytes)
    files = {
        TOKENIZER_CONFIG_FILE: tokenizer_config(lower_case, strip_accents_of(lower_case, keep_accents),
                                                model_max_length),
        SPECIAL_TOKENS_MAP_FILE: special_tokens(),
    }
    for name, content in files.items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            json.dump(content, f, indent=2, ensure_ascii=False)
            f.write("\n")
