"""Special ids belong to the vocabulary: [CLS], [SEP] and [MASK] are read from the tokenizer (or the data set's
metadata) wherever ids are built or read, so a WordPiece vocab.txt (BERT's layout: [CLS] 101, [SEP] 102, [MASK]
103) packs, masks, windows and reports as its own ids say; SentencePiece's layout (0-4) is one such vocabulary."""

import ast
import pathlib

import numpy as np
import pytest

from albert_tf.data.corpus_reader import Document
from albert_tf.data.masking import MaskingConfig
from albert_tf.data.pretraining_instances import InstanceBuilder, InstanceConfig, InstanceStats, tokenize_documents
from albert_tf.data.wordpiece_vocabulary import bert_layout
from albert_tf.text.packing import pack_batch
from albert_tf.text.special_ids import ALBERT_SPECIAL_IDS, SpecialIds, recorded_special_ids
from albert_tf.text.wordpiece_tokenizer import WordPieceTokenizer

REPO = pathlib.Path(__file__).resolve().parent.parent
FIXED_IDS = {"PAD_ID", "UNK_ID", "CLS_ID", "SEP_ID", "MASK_ID", "SPECIAL_PIECES"}
# The SentencePiece tokenizer defines ALBERT's layout; the Hugging Face writer of a SentencePiece tokenizer.json
# names it (both are SentencePiece-only by what they are).
SENTENCEPIECE_ONLY = {"albert_tf/text/albert_tokenizer.py", "albert_tf/checkpoints/huggingface_tokenizer.py"}
WORDS = ["北", "京", "欢", "迎", "你", "我", "们", "the", "capital", "of", "france", "is", "paris", "##s", ".", "！",
         "。", "[", "]", "sep", "who", "lives", "there", "?"]


def test_no_module_uses_sentencepieces_fixed_ids():
    """Every module but the SentencePiece ones asks the vocabulary: none imports ALBERT's fixed ids."""
    offenders = []
    for path in sorted([*REPO.glob("albert_tf/**/*.py"), *REPO.glob("pipelines/**/*.py")]):
        relative = path.relative_to(REPO).as_posix()
        if relative in SENTENCEPIECE_ONLY:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and FIXED_IDS & {alias.name for alias in node.names}:
                offenders.append(f"{relative}:{node.lineno}")
    assert not offenders, offenders


@pytest.fixture(scope="module")
def wordpiece():
    return WordPieceTokenizer(pieces=bert_layout(WORDS), lower_case=True)


def test_packing_uses_the_vocabularys_cls_and_sep(wordpiece):
    assert wordpiece.special_ids == SpecialIds(pad=0, unk=100, cls=101, sep=102, mask=103)
    packed = pack_batch(wordpiece, ["北京欢迎你", "the capital"], ["", "who lives there?"], max_seq_length=12)
    ids = packed["input_word_ids"].tolist()
    assert ids[0] == [101, *wordpiece.encode("北京欢迎你"), 102] + [0] * 5
    assert ids[1] == [101, *wordpiece.encode("the capital"), 102, *wordpiece.encode("who lives there?"), 102] + [0] * 3
    assert packed["input_type_ids"][1].tolist() == [0] * 4 + [1] * 5 + [0] * 3


def test_in_graph_packing_equals_python_packing_with_a_wordpiece_vocabulary(wordpiece):
    import tensorflow as tf

    from albert_tf.text.tf_packing import encode_text
    from albert_tf.text.tf_wordpiece_tokenizer import TFWordPieceTokenizer

    texts, texts_b = ["北京欢迎你！", "The capital of France is Paris.", "who"], ["我们", "", "lives there?"]
    in_graph = encode_text(TFWordPieceTokenizer(wordpiece.pieces), tf.constant(texts), tf.constant(texts_b), 10)
    python = pack_batch(wordpiece, texts, texts_b, max_seq_length=10)
    for name, array in python.items():
        np.testing.assert_array_equal(in_graph[name].numpy(), array, err_msg=name)


def test_squad_windows_and_a_literal_separator_take_the_vocabularys_ids(wordpiece):
    from albert_tf.tasks.squad import SquadExample, convert_examples_to_features

    context = "北京 [SEP] the capital of france is paris."
    example = SquadExample("q1", "who lives there?", context, "paris", context.index("paris"))
    [feature] = convert_examples_to_features([example], wordpiece, max_seq_length=32, doc_stride=8,
                                             max_query_length=8)
    ids = [i for i, m in zip(feature.input_word_ids, feature.input_mask) if m]
    question = wordpiece.encode("who lives there?")
    assert ids[: len(question) + 2] == [101, *question, 102] and ids[-1] == 102
    context_ids = ids[len(question) + 2 : -1]
    assert context_ids == [*wordpiece.encode("北京"), 102, *wordpiece.encode("the capital of france is paris.")]
    start, end = feature.start_position, feature.end_position
    assert wordpiece.decode(feature.input_word_ids[start : end + 1]) == "paris"


def test_pretraining_instances_and_masks_take_the_vocabularys_ids(wordpiece):
    sentences = ("北京欢迎你！", "the capital of france is paris.", "who lives there?", "我们欢迎你。") * 3
    documents = tokenize_documents(wordpiece, [Document(0, d, sentences[d:] + sentences[:d]) for d in range(3)])
    config = InstanceConfig(max_seq_length=24, dupe_factor=4, short_seq_prob=0.0,
                            masking=MaskingConfig(masked_lm_prob=0.3, max_predictions_per_seq=8))
    builder = InstanceBuilder(config, wordpiece.word_start_table, wordpiece.random_replacement_ids, seed=3,
                              special_ids=wordpiece.special_ids)
    shown_at_masked = []
    for document in documents:
        for _, ints, floats in builder.build(document, documents, InstanceStats()):
            for row in range(len(ints["input_ids"])):
                length = int(ints["input_mask"][row].sum())
                ids = ints["input_ids"][row][:length]
                assert ids[0] == 101 and ids[-1] == 102 and (ids == 102).sum() == 2
                chosen = floats["masked_lm_weights"][row] > 0
                shown_at_masked.extend(ids[ints["masked_lm_positions"][row][chosen]].tolist())
    shown = np.array(shown_at_masked)
    assert len(shown) > 50 and 0.7 < (shown == 103).mean() < 0.9  # 80% become the vocabulary's [MASK]


def test_fill_mask_encodes_the_vocabularys_mask(wordpiece):
    from albert_tf.models.mask_filler import encode_with_masks

    inputs, positions = encode_with_masks("the capital of france is [MASK].", wordpiece, 16)
    ids = inputs["input_word_ids"][0]
    assert ids[0] == 101 and [ids[p] for p in positions] == [103]
    assert wordpiece.piece_as_word(wordpiece.piece_to_id("##s")) == ("s", False)


def test_data_sets_record_their_vocabularys_ids_and_readers_use_them(tmp_path):
    from albert_tf.data.pretraining_dataset import data_special_ids

    recorded = SpecialIds(pad=0, unk=100, cls=101, sep=102, mask=103)
    assert recorded_special_ids({"special_ids": recorded.to_json()}, "m") == recorded
    assert recorded_special_ids({}, "m") == ALBERT_SPECIAL_IDS  # data made before the record: SentencePiece
    with pytest.raises(ValueError, match=r'^m: "special_ids": expected an object of non-negative integer ids'):
        recorded_special_ids({"special_ids": {"cls": 1}}, "m")
    import json

    shard = tmp_path / "data-00000-of-00001.tfrecord"
    shard.write_bytes(b"")
    (tmp_path / "data.metadata.json").write_text(json.dumps({"special_ids": recorded.to_json()}))
    assert data_special_ids([str(shard)]) == recorded
