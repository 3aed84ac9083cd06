"""Held-out documents: every n-th blank-line-separated document, written whole, nothing half-written on failure."""

import gzip

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


def test_a_gzipped_corpus_splits_as_the_plain_one(tmp_path):
    text = "\n\n".join(f"Document {i}, café line.\nIts second line." for i in range(12)) + "\n"
    (tmp_path / "corpus.txt").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "corpus.txt.gz", "wt", encoding="utf-8") as f:
        f.write(text)
    plain = split_documents(str(tmp_path / "corpus.txt"), str(tmp_path / "a.txt"), str(tmp_path / "a_held.txt"))
    gzipped = split_documents(str(tmp_path / "corpus.txt.gz"), str(tmp_path / "b.txt"), str(tmp_path / "b_held.txt"))
    assert plain == gzipped == (11, 1)
    for a, b in (("a.txt", "b.txt"), ("a_held.txt", "b_held.txt")):
        assert (tmp_path / a).read_bytes() == (tmp_path / b).read_bytes()


def test_a_link_planted_at_the_old_temporary_name_is_not_written_through(tmp_path):
    """The outputs are written through unique, exclusively created temporaries, not PATH.tmp: a link planted at
    such a name beforehand leaves its target alone."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(f"Document {i}." for i in range(12)) + "\n", encoding="utf-8")
    victim = tmp_path / "victim.txt"
    victim.write_text("a user's file\n", encoding="utf-8")
    for name in ("train.txt.tmp", "heldout.txt.tmp"):
        (tmp_path / name).symlink_to(victim)
    assert split_documents(str(corpus), str(tmp_path / "train.txt"), str(tmp_path / "heldout.txt")) == (11, 1)
    assert victim.read_text(encoding="utf-8") == "a user's file\n"
    assert (tmp_path / "heldout.txt").read_text(encoding="utf-8") == "Document 9.\n"
