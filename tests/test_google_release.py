"""Google's ALBERT-base v2 release as it ships: its albert_config.json, its 30k-clean.model and the tensor list of
its model.ckpt-best.index (the weights file is not here, so the values are random; names, dtypes and shapes are
the release's)."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf
import transformers

import huggingface_oracle as oracle
from albert_tf.checkpoints.conversion import convert
from albert_tf.checkpoints.tf1_format import write_tf1_checkpoint
from albert_tf.models.model_io import load_pretrainer


def release_tensor_list(release, work):
    """{name: (dtype, shape)} read from the release's own .index (TensorFlow reads it without the data file)."""
    index_only = work / "index_only"
    index_only.mkdir()
    shutil.copy(release / "model.ckpt-best.index", index_only / "model.ckpt-best.index")
    reader = tf.train.load_checkpoint(str(index_only / "model.ckpt-best"))
    dtypes = reader.get_variable_to_dtype_map()
    return {name: (dtypes[name], shape) for name, shape in reader.get_variable_to_shape_map().items()}


@pytest.fixture(scope="module")
def release_checkpoint(shared_data, tmp_path_factory):
    """A TF1 checkpoint with exactly the release's tensors (random values) beside the shipped config and vocabulary."""
    shipped = shared_data / "albert_base_v2_release"
    work = tmp_path_factory.mktemp("release")
    listed = release_tensor_list(shipped, work)
    assert len(listed) == 33 and listed["global_step"][0] == tf.int64  # 32 model tensors and the step
    rng = np.random.default_rng(0)
    tensors = {name: (np.array(125000, np.int64) if dtype == tf.int64
                      else rng.normal(0.0, 0.05, shape).astype(dtype.as_numpy_dtype))
               for name, (dtype, shape) in listed.items()}
    for name in tensors:
        if name.endswith("/gamma"):
            tensors[name] += 1.0
    google = work / "albert_base"
    google.mkdir()
    write_tf1_checkpoint(tensors, str(google / "model.ckpt-best"))
    for name in ("albert_config.json", "30k-clean.model"):
        shutil.copy(shipped / name, google / name)
    return work, google, tensors


def test_release_converts_and_back_to_the_same_bytes(release_checkpoint):
    """--from=tf1 with the shipped config and vocabulary, then --to=tf1: every tensor comes back with its name,
    dtype, shape and bytes (so its crc32c, which TensorFlow's reader checks on every read, is the source's)."""
    work, google, tensors = release_checkpoint
    convert("tf1", "albert_tf", str(google / "model.ckpt-best"), str(work / "ours"),
            albert_config=str(google / "albert_config.json"), spm_model_file=str(google / "30k-clean.model"))
    convert("albert_tf", "tf1", str(work / "ours"), str(work / "tf1_again"))
    again = tf.train.load_checkpoint(str(work / "tf1_again" / "model.ckpt"))
    written = again.get_variable_to_dtype_map()
    model_tensors = {name for name in tensors if name != "global_step"}
    assert set(written) - {"global_step"} == model_tensors
    for name in sorted(model_tensors):
        value = again.get_tensor(name)
        assert written[name] == tf.as_dtype(tensors[name].dtype) and value.shape == tensors[name].shape, name
        assert value.tobytes() == tensors[name].tobytes(), name
    assert (work / "tf1_again" / "30k-clean.model").read_bytes() == (google / "30k-clean.model").read_bytes()
    # The config written beside it gives the original's code (which reads every key) the shipped values.
    shipped = json.loads((google / "albert_config.json").read_text())
    written_config = json.loads((work / "tf1_again" / "albert_config.json").read_text())
    structure_keys = {"num_memory_blocks", "net_structure_type", "gap_size", "down_scale_factor"}
    assert {key: written_config[key] for key in shipped if key not in structure_keys} == {
        key: value for key, value in shipped.items() if key not in structure_keys}


def test_release_exports_to_huggingface_with_equal_outputs(release_checkpoint):
    work, google, _ = release_checkpoint
    ours_dir = work / "ours_for_hf"
    convert("tf1", "albert_tf", str(google / "model.ckpt-best"), str(ours_dir),
            albert_config=str(google / "albert_config.json"), spm_model_file=str(google / "30k-clean.model"))
    convert("albert_tf", "huggingface", str(ours_dir), str(work / "hf"))
    hf_model, info = transformers.AlbertForPreTraining.from_pretrained(work / "hf", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    ours = load_pretrainer(str(ours_dir))
    rng = np.random.default_rng(1)
    mask = (np.arange(20)[None, :] < np.array([[20], [13]])).astype(np.int32)
    inputs = {"input_word_ids": rng.integers(5, 30000, (2, 20)).astype(np.int32) * mask, "input_mask": mask,
              "input_type_ids": (np.arange(20)[None, :] >= 8).astype(np.int32).repeat(2, 0)}
    positions = np.array([[1, 5, 9], [2, 3, 12]], np.int32)
    expected = oracle.run_pretraining_model(hf_model.eval(), inputs, positions)
    got = ours({**inputs, "masked_lm_positions": positions})
    for name, value in expected.items():
        np.testing.assert_allclose(np.asarray(got[name]), value, atol=2e-4, rtol=1e-4, err_msg=name)


def original_ids(sp, text):
    """The released tokenization.py's ids, restated: preprocess_text (whitespace collapsed, NFKD with combining
    marks dropped, lowercased; quotes kept), SentencePiece's pieces, then every piece ending in "<digit>," encoded
    again without the comma (a "▁" the re-encoding adds dropped when the piece had none) and the comma added."""
    import unicodedata

    text = " ".join(text.strip().split())
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()
    pieces = []
    for piece in sp.encode_as_pieces(text):
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            again = sp.encode_as_pieces(piece[:-1].replace("\u2581", ""))
            if piece[0] != "\u2581" and again[0][0] == "\u2581":
                again = [again[0][1:]] + again[1:] if len(again[0]) > 1 else again[1:]
            pieces += again + [piece[-1]]
        else:
            pieces.append(piece)
    return [sp.piece_to_id(piece) for piece in pieces]


def release_texts(shared_data, count=3000):
    """The corpus's first paragraphs, and texts that stress what tokenizers get wrong (digits before commas,
    punctuation that is a piece of its own, quotes, accents, full-width forms)."""
    with open(shared_data / "corpus" / "corpus_paragraphs.txt", encoding="utf-8") as f:
        paragraphs = [line.strip() for line, _ in zip(f, range(count)) if line.strip()]
    return paragraphs + ["In 1998, 2,000 people (about 3.5%) came.", 'He said "yes" - then left.',
                         "He said ``hello'' to me.", "Café NAÏVE Ｆｕｌｌ-width ﬁne.", "(a)(b) -x- .y.", "1,2,3, go"]


def test_the_tokenizer_json_albert_tf_writes_gives_the_originals_ids_on_the_official_vocabulary(shared_data, tmp_path):
    import sentencepiece
    from tokenizers import Tokenizer

    from albert_tf.checkpoints.huggingface_tokenizer import write_tokenizer_files
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    vocabulary = str(shared_data / "albert_base_v2_release" / "30k-clean.model")
    sp = sentencepiece.SentencePieceProcessor(model_file=vocabulary)
    write_tokenizer_files(vocabulary, tmp_path, model_max_length=512)
    written = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ours = AlbertTokenizer(vocabulary)
    texts = release_texts(shared_data)
    expected = [original_ids(sp, text) for text in texts]
    assert ours.encode_batch(texts) == expected
    assert [encoding.ids for encoding in written.encode_batch(texts, add_special_tokens=False)] == expected

