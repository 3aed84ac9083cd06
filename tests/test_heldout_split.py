"""Held-out documents: every n-th blank-line-separated document, written whole, nothing half-written on failure."""

import pytest

from albert_tf.data.heldout_split import split_documents


def test_every_tenth_document_is_held_out_whole(tmp_path):
    documents = [f"Document {i} first line.\nDocument {i} second line." for i in range(23)]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n\n".join(documents) + "\n", encoding="utf-8")  # extra blank lines are separators too
    counts = split_documents(str(corpus), str(tmp_path / "train.txt"), str(tmp_path / "heldout.txt"), every=10)
    assert counts == (21, 2)
    assert (tmp_path / "heldout.txt").read_text(encoding="utf-8") == documents[9] + "\n\n" + documents[19] + "\n"
    kept = [d for i, d in enumerate(documents) if i not in (9, 19)]
    assert (tmp_path / "train.txt").read_text(encoding="utf-8") == "\n\n".join(kept) + "\n"


def test_too_few_documents_is_an_error_that_writes_nothing(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one document\n\nand another\n", encoding="utf-8")
    with pytest.raises(ValueError, match="2 document\\(s\\).*needs at least 10"):
        split_documents(str(corpus), str(tmp_path / "train.txt"), str(tmp_path / "heldout.txt"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt"]
