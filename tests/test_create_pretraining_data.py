"""create_pretraining_data end to end: determinism, the original format, bad input, data_stats."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data.local_runner import create_pretraining_data
from albert_tf.data import pretraining_data_job as job
from albert_tf.data.corpus_reader import CorpusStats, expand_input_patterns
from albert_tf.data.masking import MaskingConfig
from albert_tf.data.pretraining_data_job import CreationConfig
from albert_tf.data.pretraining_dataset import expand_data_files, feature_spec, to_model_inputs
from albert_tf.data.pretraining_instances import InstanceConfig
from albert_tf.data.data_set_report import compute_stats, span_lengths_in_words
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from text_fixtures import train_small_spm, write_corpus

SMALL = CreationConfig(
    instances=InstanceConfig(max_seq_length=64, dupe_factor=3, masking=MaskingConfig(max_predictions_per_seq=10)),
    num_output_shards=3,
)


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return str(train_small_spm(tmp_path_factory))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    directory = tmp_path_factory.mktemp("corpus")
    write_corpus(directory / "a.txt", num_documents=25, seed=2)
    write_corpus(directory / "b.txt", num_documents=15, seed=3, paragraphs=False)
    return directory


def shard_bytes(prefix):
    return {os.path.basename(path): open(path, "rb").read() for path in sorted(expand_data_files(prefix))}


def test_same_seed_gives_identical_bytes_for_one_and_several_workers(tmp_path, corpus, spm_model):
    paths = expand_input_patterns(str(corpus / "*.txt"))
    outputs = {}
    for workers in (1, 2):
        prefix = str(tmp_path / f"w{workers}" / "data")
        create_pretraining_data(paths, prefix, spm_model, SMALL, num_workers=workers, progress=False)
        outputs[workers] = shard_bytes(prefix)
        outputs[f"meta{workers}"] = open(prefix + ".metadata.json").read()
    assert len(outputs[1]) == 3 and all(outputs[1].values())
    assert outputs[1] == outputs[2]
    assert outputs["meta1"] == outputs["meta2"]
    other_seed = str(tmp_path / "seed" / "data")
    create_pretraining_data(paths, other_seed, spm_model, CreationConfig(**{**SMALL.__dict__, "seed": 1}),
                            progress=False)
    assert shard_bytes(other_seed) != outputs[1]


def test_a_shard_larger_than_the_sort_budget_is_sorted_in_runs_and_merged(tmp_path, monkeypatch):
    """Memory stays flat whatever a shard's size: its records are sorted in runs on disk and merged (in steps past
    the fan-in), giving the order of one sort of everything; the runs are gone afterwards."""
    import random

    from albert_tf.data import local_runner
    from albert_tf.data.local_runner import sorted_records

    monkeypatch.setattr(local_runner, "MERGE_FAN_IN", 3)

    rng = random.Random(0)
    records = [((rng.getrandbits(63), rng.randrange(3), rng.randrange(50), ordinal), rng.randbytes(rng.randrange(90)))
               for ordinal in range(600)]
    spools = []
    for part in range(3):
        spools.append(tmp_path / f"spool-{part}")
        spools[-1].write_bytes(b"".join(job.spool_record(*record) for record in records[part::3]))
    with sorted_records([str(path) for path in spools], str(tmp_path / "run"), budget_bytes=8_000) as merged:
        runs = [name for name in os.listdir(tmp_path) if name.startswith("run-")]
        assert list(merged) == sorted(records)
    assert len(runs) >= 2  # sorted in runs (the last merge's inputs), not in memory
    assert sorted(os.listdir(tmp_path)) == ["spool-0", "spool-1", "spool-2"]
    with sorted_records([str(path) for path in spools], str(tmp_path / "all"), budget_bytes=1 << 30) as merged:
        assert list(merged) == sorted(records) and sorted(os.listdir(tmp_path)) == ["spool-0", "spool-1", "spool-2"]


def test_a_shard_sorted_in_runs_on_disk_is_the_same_bytes(tmp_path, corpus, spm_model, monkeypatch):
    from albert_tf.data import local_runner

    paths = expand_input_patterns(str(corpus / "*.txt"))
    in_memory = str(tmp_path / "memory" / "data")
    create_pretraining_data(paths, in_memory, spm_model, SMALL, num_workers=2, progress=False)
    monkeypatch.setattr(local_runner, "SORT_BUDGET_BYTES", 20_000)
    monkeypatch.setattr(local_runner, "MERGE_FAN_IN", 3)
    in_runs = str(tmp_path / "runs" / "data")
    create_pretraining_data(paths, in_runs, spm_model, SMALL, num_workers=2, progress=False)
    assert shard_bytes(in_runs) == shard_bytes(in_memory)
    assert sorted(os.listdir(tmp_path / "runs")) == sorted(os.listdir(tmp_path / "memory"))  # no run left behind


def test_gzip_output_is_deterministic_too(tmp_path, corpus, spm_model):
    paths = expand_input_patterns(str(corpus / "a.txt"))
    config = CreationConfig(**{**SMALL.__dict__, "compression": "gzip", "num_output_shards": 1})
    first, second = str(tmp_path / "a" / "d"), str(tmp_path / "b" / "d")
    create_pretraining_data(paths, first, spm_model, config, num_workers=2, progress=False)
    create_pretraining_data(paths, second, spm_model, config, num_workers=1, progress=False)
    assert list(shard_bytes(first)) == ["d-00000-of-00001.tfrecord.gz"]
    assert list(shard_bytes(first).values()) == list(shard_bytes(second).values())
    assert compute_stats(expand_data_files(first))["instances"] > 0


def test_records_have_the_original_features_and_map_to_model_inputs(tmp_path, corpus, spm_model):
    prefix = str(tmp_path / "d")
    metadata = create_pretraining_data(expand_input_patterns(str(corpus / "a.txt")), prefix, spm_model, SMALL,
                                       progress=False)
    files = expand_data_files(prefix)
    record = next(iter(tf.data.TFRecordDataset(files[0])))
    example = tf.train.Example.FromString(record.numpy())
    assert set(example.features.feature) == {
        "input_ids", "input_mask", "segment_ids", "token_boundary", "masked_lm_positions", "masked_lm_ids",
        "masked_lm_weights", "next_sentence_labels"}
    # The original run_pretraining.py's parsing spec reads it.
    parsed = tf.io.parse_single_example(record, feature_spec(64, 10))
    inputs = to_model_inputs(parsed)
    assert inputs["input_word_ids"].shape == (64,) and inputs["masked_lm_positions"].shape == (10,)
    assert inputs["input_word_ids"].dtype == tf.int32 and inputs["masked_lm_weights"].dtype == tf.float32
    total = sum(1 for path in files for _ in tf.data.TFRecordDataset(path))
    assert total == metadata["statistics"]["instances"] == sum(s["instances"] for s in metadata["shards"])
    tokenizer = AlbertTokenizer(spm_model)
    assert metadata["vocab_size"] == tokenizer.vocab_size
    assert metadata["max_seq_length"] == 64 and metadata["max_predictions_per_seq"] == 10


def test_masked_labels_are_the_text_and_pairs_decode_to_corpus_text(tmp_path, corpus, spm_model):
    prefix = str(tmp_path / "d")
    create_pretraining_data([str(corpus / "a.txt")], prefix, spm_model, SMALL, progress=False)
    tokenizer = AlbertTokenizer(spm_model)
    corpus_text = " ".join(tokenizer.preprocess(line) for line in (corpus / "a.txt").read_text().splitlines())
    spec = feature_spec(64, 10, with_token_boundary=True)
    checked = 0
    for path in expand_data_files(prefix):
        for record in tf.data.TFRecordDataset(path).take(30):
            features = {k: v.numpy() for k, v in tf.io.parse_single_example(record, spec).items()}
            ids = features["input_ids"].copy()
            count = int(features["masked_lm_weights"].sum())
            ids[features["masked_lm_positions"][:count]] = features["masked_lm_ids"][:count]  # undo the masking
            length = int(features["input_mask"].sum())
            separators = np.flatnonzero(ids[:length] == 3)
            segment_a, segment_b = ids[1 : separators[0]], ids[separators[0] + 1 : length - 1]
            for segment in (segment_a, segment_b):
                # Front truncation can cut into a word: drop the first piece, decode the rest.
                text = tokenizer.decode(segment[1:]).strip()
                if len(text) > 8:
                    assert text in corpus_text, text
                    checked += 1
    assert checked > 20


def test_bad_inputs_are_skipped_and_counted(tmp_path, spm_model):
    good = write_corpus(tmp_path / "good.txt", num_documents=6, seed=4, sentences=(3, 15))
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blank.txt").write_text("\n\n   \n")
    (tmp_path / "binary.bin").write_bytes(b"\x7fELF\x00\x01\x02" + bytes(range(256)) * 10)
    broken = tmp_path / "broken.txt"
    broken.write_bytes(b"Valid first sentence here.\nBad \xff\xfe bytes here.\n" + ("x" * 2_000_000).encode()
                       + b"\nAnother fine sentence follows.\nAnd one more sentence now.\n")
    no_breaks = tmp_path / "no_breaks.txt"
    no_breaks.write_text("\n".join(f"Sentence number {i} of a long text." for i in range(50)))
    config = CreationConfig(**{**SMALL.__dict__, "max_document_sentences": 20, "num_output_shards": 1})
    paths = [str(p) for p in (good, tmp_path / "empty.txt", tmp_path / "blank.txt", tmp_path / "binary.bin",
                              broken, no_breaks)]
    metadata = create_pretraining_data(paths, str(tmp_path / "out" / "d"), spm_model, config, progress=False)
    corpus = metadata["corpus"]
    assert corpus["skipped_files"] == {
        str(tmp_path / "binary.bin"): "binary (NUL bytes)",
        str(tmp_path / "blank.txt"): "empty (no text)",
        str(tmp_path / "empty.txt"): "empty (no text)",
    }
    assert corpus["skipped_lines"] == {"longer than 1,048,576 bytes": 1, "not valid UTF-8": 1}
    assert corpus["documents_cut"] == 2  # 50 sentences without a break -> parts of 20, 20, 10
    assert metadata["statistics"]["instances"] > 0


def test_a_truncated_gzip_corpus_is_one_line_naming_the_file_and_the_line_reached(tmp_path, corpus, spm_model):
    import gzip

    packed = gzip.compress((corpus / "a.txt").read_bytes())
    (tmp_path / "a.txt.gz").write_bytes(packed[: len(packed) // 2])
    with pytest.raises(ValueError, match=r"^.*a\.txt\.gz: the gzip data breaks off after line [1-9]\d* \([\d,]+ "
                                         r"bytes of text\): Compressed file ended .*; the file is truncated or "
                                         r"corrupt: restore it or leave it out of the input$"):
        create_pretraining_data([str(tmp_path / "a.txt.gz")], str(tmp_path / "d"), spm_model, SMALL, progress=False)
    (tmp_path / "b.txt.gz").write_bytes(b"plain text named .gz")
    stats = CorpusStats()
    assert list(job.iter_file(str(tmp_path / "b.txt.gz"), 0, SMALL, stats)) == []
    assert stats.skipped_files == {str(tmp_path / "b.txt.gz"): "not gzip data (the name ends in .gz)"}


def test_progress_on_gzip_input_compares_like_with_like(tmp_path, corpus, spm_model, monkeypatch):
    """The progress line once read "0.4/0.1 MB": text read against the compressed files' size. Both are now the
    files' bytes as stored."""
    import functools
    import gzip

    from albert_tf.progress import Progress

    (tmp_path / "a.txt.gz").write_bytes(gzip.compress((corpus / "a.txt").read_bytes()))
    paths = [str(tmp_path / "a.txt.gz"), str(corpus / "b.txt")]
    shown = []
    monkeypatch.setattr(Progress, "update", lambda meter, done, force=False: shown.append((done, meter.total)))
    monkeypatch.setattr(job, "group_into_units", functools.partial(job.group_into_units, unit_bytes=4000))
    create_pretraining_data(paths, str(tmp_path / "d"), spm_model, SMALL, num_workers=1)
    total = sum(os.path.getsize(path) for path in paths)
    done = [done for done, _ in shown]
    assert {shown_total for _, shown_total in shown} == {total} and len(done) > 5
    assert done == sorted(done) and done[-2] == total  # the last unit's update, then finish()


def test_the_data_tools_say_when_accent_stripping_rewrites_kana(tmp_path):
    """が becomes か: one line with the fix; Hangul is composed again by the model's normalizer, Latin accents
    are what stripping is for, and keep_accents keeps every mark (the tool's summary:
    test_cli_writes_data_and_a_summary)."""
    import dataclasses

    (tmp_path / "ja_ko.txt").write_text("ゲームです。\n한국어.\n")
    (tmp_path / "latin.txt").write_text("Café déjà vu, naïve coöperation.\n")

    def problems(name, keep_accents=False):
        stats = CorpusStats()
        config = dataclasses.replace(SMALL, keep_accents=keep_accents)
        list(job.iter_file(str(tmp_path / name), 0, config, stats))
        return CorpusStats.from_json(stats.to_json()).problems()  # as the metadata records it

    [line] = problems("ja_ko.txt")
    assert line == ("accent stripping (the original's rule) rewrote 2 character(s) in 1 sentence(s) of scripts whose "
                    "marks carry meaning (Hiragana 1, Katakana 1; が becomes か): train the vocabulary without "
                    "--nokeep_accents (or with --keep_accents) to keep them")
    assert problems("ja_ko.txt", keep_accents=True) == [] and problems("latin.txt") == []


def test_nothing_usable_is_an_error_and_leaves_nothing(tmp_path, spm_model):
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(ValueError, match="no instances could be made.*skipped file .*empty.txt: empty"):
        create_pretraining_data([str(tmp_path / "empty.txt")], str(tmp_path / "d"), spm_model, SMALL, progress=False)
    assert sorted(os.listdir(tmp_path)) == ["empty.txt"]


def test_missing_inputs_and_models_are_named(tmp_path, spm_model):
    with pytest.raises(FileNotFoundError, match="nothing\\*.txt: no such file"):
        expand_input_patterns(str(tmp_path / "nothing*.txt"))
    with pytest.raises(IsADirectoryError, match="is a directory"):
        expand_input_patterns(str(tmp_path))
    corpus = write_corpus(tmp_path / "c.txt", num_documents=3)
    with pytest.raises(FileNotFoundError, match="missing.model: no such SentencePiece model"):
        create_pretraining_data([str(corpus)], str(tmp_path / "d"), str(tmp_path / "missing.model"), SMALL)


def test_existing_outputs_are_kept_unless_overwrite(tmp_path, corpus, spm_model):
    paths = [str(corpus / "a.txt")]
    prefix = str(tmp_path / "d")
    create_pretraining_data(paths, prefix, spm_model, SMALL, progress=False)
    before = shard_bytes(prefix)
    with pytest.raises(FileExistsError, match="exist: choose another output_prefix or pass overwrite$") as refused:
        create_pretraining_data(paths, prefix, spm_model, SMALL, progress=False)
    assert str(refused.value.for_flags()).endswith("choose another --output_file or pass --overwrite")
    assert shard_bytes(prefix) == before
    one_shard = CreationConfig(**{**SMALL.__dict__, "num_output_shards": 1})
    create_pretraining_data(paths, prefix, spm_model, one_shard, progress=False, overwrite=True)
    assert list(shard_bytes(prefix)) == ["d-00000-of-00001.tfrecord"]  # the old 3 shards are gone


def test_readers_refuse_a_stopped_writers_temporary_files_beside_a_data_set(tmp_path, corpus, spm_model):
    """A killed Beam driver's *.beam-temp-* shards stayed beside the rerun's output and were read as more
    training data (every instance twice): a file whose name continues a shard's is named and refused."""
    from albert_tf.data.data_set_files import IncompleteDataSetError

    prefix = str(tmp_path / "d")
    create_pretraining_data([str(corpus / "a.txt")], prefix, spm_model, SMALL, progress=False)
    shards = expand_data_files(prefix)
    for stray, pattern in ((f"{shards[0]}.beam-temp-0f1e2d", prefix), (f"{shards[1]}.orig", prefix),
                           (f"{prefix}.metadata.json.beam-temp", f"{prefix}*")):
        with open(stray, "wb") as f:
            f.write(open(shards[0], "rb").read())
        refusal = f"^{re.escape(stray)}: not a shard of the data set {re.escape(prefix)} .*; remove it"
        with pytest.raises(IncompleteDataSetError, match=refusal):
            expand_data_files(pattern)
        os.remove(stray)
    assert expand_data_files(prefix) == shards


def test_a_failure_while_writing_leaves_no_partial_output(tmp_path, corpus, spm_model, monkeypatch):
    calls = []

    def failing_write_shard(records, path, compression):
        calls.append(path)
        if len(calls) == 2:
            raise OSError("disk full")
        return original(records, path, compression)

    original = job.write_sorted_shard
    monkeypatch.setattr(job, "write_sorted_shard", failing_write_shard)
    with pytest.raises(OSError, match="disk full"):
        create_pretraining_data([str(corpus / "a.txt")], str(tmp_path / "d"), spm_model, SMALL, progress=False)
    assert os.listdir(tmp_path) == []


def test_a_full_disk_while_spooling_leaves_no_staging_directory(tmp_path, corpus, spm_model, monkeypatch):
    """The disk fills while the instances are spooled: the run fails with the disk's error, and its staging
    directory goes too (the cleanup's own close() meets the full disk again: it once stopped there)."""
    import errno

    class FullDisk:
        def __init__(self, path, mode):
            self.name = path
            open(path, mode).close()

        def write(self, data):
            return len(data)  # buffered: the disk is hit on flush

        def flush(self):
            raise OSError(errno.ENOSPC, "No space left on device")

        close = flush

    monkeypatch.setattr(job, "open", FullDisk, raising=False)
    with pytest.raises(OSError, match="No space left on device"):
        create_pretraining_data([str(corpus / "a.txt")], str(tmp_path / "d"), spm_model, SMALL, progress=False)
    assert os.listdir(tmp_path) == []


def test_cli_writes_data_and_a_summary(tmp_path, corpus, spm_model):
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={corpus / '*.txt'}",
         f"--output_file={tmp_path / 'd'}", f"--spm_model_file={spm_model}", "--max_seq_length=64",
         "--max_predictions_per_seq=10", "--dupe_factor=2", "--num_workers=2", "--num_output_shards=2"],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "instances" in result.stdout and "into 2 shard(s)" in result.stdout
    assert "[100.0%]" in result.stderr  # progress
    # a.txt holds 東京と大阪は日本の都市です。, whose で accent stripping turns into て: said in one line.
    assert "\n  accent stripping (the original's rule) rewrote 1 character(s) in 1 sentence(s) of scripts whose " \
           "marks carry meaning (Hiragana 1; " in result.stdout
    assert len(expand_data_files(str(tmp_path / "d"))) == 2
    result = subprocess.run([sys.executable, "-m", "albert_tf.create_pretraining_data",
                             f"--input_file={tmp_path / 'none.txt'}", f"--output_file={tmp_path / 'x'}",
                             f"--spm_model_file={spm_model}"], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.strip() == f"albert_tf.create_pretraining_data: error: {tmp_path / 'none.txt'}: no such file (the pattern matches nothing)"


def test_a_glob_that_matches_the_runs_own_outputs_skips_them(tmp_path, corpus, spm_model):
    """'data/*' with the output in data/: a rerun must not read the first run's TFRecords as text."""
    import shutil

    shutil.copy(corpus / "a.txt", tmp_path / "a.txt")
    command = [sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={tmp_path / '*'}",
               f"--output_file={tmp_path / 'train'}", f"--spm_model_file={spm_model}", "--max_seq_length=64",
               "--dupe_factor=1", "--num_workers=1", "--heldout_every=5", "--overwrite"]
    first = subprocess.run(command, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    written = {name: shard_bytes(str(tmp_path / name)) for name in ("train", "train-heldout")}
    second = subprocess.run(command, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert "Skipped 4 file(s) that --input_file matches but this run writes" in second.stdout
    assert {name: shard_bytes(str(tmp_path / name)) for name in written} == written
    assert json.loads((tmp_path / "train.metadata.json").read_text())["corpus"]["files"] == 1
    only_outputs = subprocess.run([*command[:3], f"--input_file={tmp_path / 'train*'}", *command[4:]],
                                  capture_output=True, text=True)
    assert only_outputs.returncode == 1 and "matches only this run's own outputs" in only_outputs.stderr


# --- data_stats ----------------------------------------------------------------


def write_known_records(path):
    """Two hand-made instances whose statistics are known."""
    def example(ids, boundary, positions, labels, label):
        length = len(ids)
        pad = lambda values, width: list(values) + [0] * (width - len(values))  # noqa: E731
        return tf.train.Example(features=tf.train.Features(feature={
            "input_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=pad(ids, 12))),
            "input_mask": tf.train.Feature(int64_list=tf.train.Int64List(value=pad([1] * length, 12))),
            "segment_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[0] * 12)),
            "token_boundary": tf.train.Feature(int64_list=tf.train.Int64List(value=pad(boundary, 12))),
            "masked_lm_positions": tf.train.Feature(int64_list=tf.train.Int64List(value=pad(positions, 4))),
            "masked_lm_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=pad(labels, 4))),
            "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=pad([1.0] * len(positions), 4))),
            "next_sentence_labels": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
        })).SerializeToString()

    with tf.io.TFRecordWriter(str(path)) as writer:
        # Masked 2,3 (one 2-word run: both word starts), and 6 (a 1-word run).
        # Shown: 2 -> [MASK], 3 -> kept (11 == label 11), 6 -> random (50 != 16).
        writer.write(example([2, 10, 4, 11, 12, 3, 50, 3], [1, 1, 1, 1, 1, 1, 1, 1], [2, 3, 6], [20, 11, 16], 1))
        # Masked 1,2 where 2 continues 1's word: one 1-word run. Full length 12.
        writer.write(example([2, 4, 4, 13, 14, 15, 3, 16, 17, 18, 19, 3], [1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1],
                             [1, 2], [30, 31], 0))


def test_data_stats_on_known_records(tmp_path):
    path = tmp_path / "known.tfrecord"
    write_known_records(path)
    stats = compute_stats([str(path)])
    assert stats["instances"] == 2 and stats["tokens"] == 20 and stats["masked_tokens"] == 5
    assert stats["replacements"] == {"mask": 3, "keep": 1, "random": 1}
    assert stats["masked_runs_by_words"] == {"1": 2, "2": 1}
    assert stats["labels"] == {"0": 1, "1": 1}
    assert stats["length_histogram"] == {"8": 1, "12": 1}
    assert stats["fraction_full_length"] == 0.5
    assert span_lengths_in_words([4, 5, 6, 9], np.array([0, 0, 0, 0, 1, 0, 1, 0, 0, 1])) == [2, 1]
    # [CLS] ▁a b [SEP] c ▁d [SEP]: c continues A's last word across the [SEP]; ▁d is a word of its own.
    boundary = np.array([1, 1, 0, 1, 0, 1, 1])
    assert span_lengths_in_words([1, 2, 4], boundary, separators={3, 6}) == [1]
    assert span_lengths_in_words([1, 2, 4, 5], boundary, separators={3, 6}) == [2]
    assert span_lengths_in_words([1, 2, 4], boundary) == [1, 1]


def test_data_stats_cli_reports_generated_data(tmp_path, corpus, spm_model):
    prefix = str(tmp_path / "d")
    config = CreationConfig(instances=InstanceConfig(
        max_seq_length=128, dupe_factor=4, masking=MaskingConfig(max_predictions_per_seq=20)))
    create_pretraining_data(expand_input_patterns(str(corpus / "*.txt")), prefix, spm_model, config, progress=False)
    result = subprocess.run([sys.executable, "-m", "albert_tf.data_stats", prefix, "--format=json"],
                            capture_output=True, text=True, check=True)
    report = json.loads(result.stdout)
    records, creation = report["records"], report["creation"]
    assert records["instances"] == creation["instances"]
    assert records["masked_tokens"] == creation["masked_tokens"]
    assert abs(records["fraction_masked"] - 0.15) < 0.02
    shown = records["replacements"]
    total = sum(shown.values())
    assert abs(shown["mask"] / total - 0.8) < 0.03 and abs(shown["keep"] / total - 0.1) < 0.03
    labels = records["labels"]
    assert abs(labels["1"] / (labels["0"] + labels["1"]) - 0.5) < 0.05
    # Runs of masked words can merge adjacent spans: never fewer words than spans.
    run_words = sum(int(k) * v for k, v in records["masked_runs_by_words"].items())
    span_words = sum(int(k) * v for k, v in creation["ngram_lengths"].items())
    assert run_words == span_words
    text = subprocess.run([sys.executable, "-m", "albert_tf.data_stats", prefix], capture_output=True, text=True,
                          check=True).stdout
    for expected in ("Masked tokens shown as:", "n-gram proposal p(n) ∝ 1/n: 1: 54.5%, 2: 27.3%, 3: 18.2%",
                     "Labels:", "Sequence lengths:", "spans accepted at creation"):
        assert expected in text
