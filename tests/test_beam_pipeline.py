"""The Beam pipeline produces the local tool's output, byte for byte."""

import dataclasses
import os
import subprocess
import sys

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from albert_tf.data.local_runner import create_pretraining_data
from albert_tf.data.masking import MaskingConfig
from albert_tf.data.pretraining_data_job import CreationConfig
from albert_tf.data.pretraining_instances import InstanceConfig
from albert_tf.file_utils import staged_directory
from albert_tf.settings import SettingError
from albert_tf.text.vocabularies import SENTENCEPIECE, Vocabulary
from pipelines import create_pretraining_data as beam_job
from pipelines.create_pretraining_data import build_pipeline, checked_input_paths, remove_temporary_files
from text_fixtures import corpus_files_and_vocabulary

CONFIG = CreationConfig(
    instances=InstanceConfig(max_seq_length=64, dupe_factor=2, masking=MaskingConfig(max_predictions_per_seq=10)),
    num_output_shards=4,
    compression="gzip",
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return corpus_files_and_vocabulary(tmp_path_factory, "beam")


def outputs(directory):
    return {name: open(os.path.join(directory, name), "rb").read() for name in sorted(os.listdir(directory))}


def test_beam_output_equals_the_local_tool(tmp_path, inputs):
    paths, spm_model = inputs
    create_pretraining_data(paths, str(tmp_path / "local" / "data"), spm_model, CONFIG, num_workers=2, progress=False)
    options = PipelineOptions(["--runner=FnApiRunner", "--direct_num_workers=2",
                               "--direct_running_mode=multi_threading"])
    with beam.Pipeline(options=options) as pipeline:
        build_pipeline(pipeline, paths, str(tmp_path / "beam" / "data"), open(spm_model, "rb").read(), CONFIG)
    local, from_beam = outputs(tmp_path / "local"), outputs(tmp_path / "beam")
    assert list(local) == list(from_beam) == [
        "data-00000-of-00004.tfrecord.gz", "data-00001-of-00004.tfrecord.gz", "data-00002-of-00004.tfrecord.gz",
        "data-00003-of-00004.tfrecord.gz", "data.metadata.json"]
    assert local == from_beam

    # Gzipped inputs are read as they are: the same records as from the plain files.
    import gzip
    import shutil

    compressed = []
    for path in paths:
        with open(path, "rb") as plain, gzip.open(path + ".gz", "wb") as packed:
            shutil.copyfileobj(plain, packed)
        compressed.append(path + ".gz")
    with beam.Pipeline(options=options) as pipeline:
        build_pipeline(pipeline, compressed, str(tmp_path / "gz" / "data"), open(spm_model, "rb").read(), CONFIG)
    from_gz = outputs(tmp_path / "gz")
    assert {name: data for name, data in from_gz.items() if ".tfrecord" in name} == {
        name: data for name, data in local.items() if ".tfrecord" in name}


@pytest.mark.parametrize("output_format", ["instances", "documents"])
def test_beam_writes_the_held_out_set_and_the_documents_format_as_the_local_tool(tmp_path, inputs, output_format):
    paths, spm_model = inputs
    config = dataclasses.replace(CONFIG, output_format=output_format, heldout_every=3)
    create_pretraining_data(paths, str(tmp_path / "local" / "data"), spm_model, config, progress=False)
    options = PipelineOptions(["--runner=FnApiRunner", "--direct_num_workers=2",
                               "--direct_running_mode=multi_threading"])
    with beam.Pipeline(options=options) as pipeline:
        build_pipeline(pipeline, paths, str(tmp_path / "beam" / "data"), open(spm_model, "rb").read(), config)
    local, from_beam = outputs(tmp_path / "local"), outputs(tmp_path / "beam")
    assert "data-heldout-00000-of-00004.tfrecord.gz" in local and "data-heldout.metadata.json" in local
    assert len(local) == 10
    assert local == from_beam


def test_paragraph_input_gives_the_local_tools_bytes_too(tmp_path, inputs):
    """Paragraph-per-line input (the benchmarks' large corpus) through Beam, one shard."""
    paths, spm_model = inputs
    config = dataclasses.replace(CONFIG, input_format="paragraphs", num_output_shards=1)
    create_pretraining_data(paths, str(tmp_path / "local" / "data"), spm_model, config, progress=False)
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as pipeline:
        build_pipeline(pipeline, paths, str(tmp_path / "beam" / "data"), open(spm_model, "rb").read(), config)
    local, from_beam = outputs(tmp_path / "local"), outputs(tmp_path / "beam")
    assert list(local) == ["data-00000-of-00001.tfrecord.gz", "data.metadata.json"] and local == from_beam


def test_a_unit_leaves_its_worker_as_sorted_spool_files_that_a_retry_rewrites(tmp_path, inputs):
    """What travels through the shuffle is a path per (output set, shard) the unit has records for; the records
    are in that file, sorted (the shard's writer merges them as a stream). A retried task writes the same files."""
    import collections

    from albert_tf.data import pretraining_data_job as job
    from albert_tf.data.corpus_reader import CorpusStats
    from albert_tf.data.pretraining_instances import InstanceStats

    paths, spm_model = inputs
    config = dataclasses.replace(CONFIG, heldout_every=3)
    spool_folder = tmp_path / ".data.beam-temp-run"
    [(unit_id, unit_path), corpus_stats] = beam_job.read_units((2, paths[2], 0), config, readers_per_file=1,
                                                               spool_directory=str(spool_folder))
    assert unit_id == (2, 0) and isinstance(corpus_stats, CorpusStats)
    # The unit itself stays in a file (a runner may hold a step's whole output in memory): the local tool's unit.
    assert unit_path == str(spool_folder / "unit-2-0") and os.listdir(spool_folder) == ["unit-2-0"]
    [unit] = job.group_into_units(job.iter_file(paths[2], 2, config, CorpusStats()), config.instances)
    assert beam_job.read_unit(unit_path) == unit
    expected = collections.defaultdict(list)
    for output_set, shard, sort_tuple, example in job.UnitProcessor(Vocabulary.read(spm_model, SENTENCEPIECE), config).process(
            unit, InstanceStats(), InstanceStats()):
        expected[output_set, shard].append((sort_tuple, example))
    assert {output_set for output_set, _ in expected} == {0, 1}

    process_unit = beam_job.ProcessUnit(Vocabulary.read(spm_model, SENTENCEPIECE), config, str(spool_folder))
    process_unit.setup()
    first = list(process_unit.process((unit_id, unit_path)))
    *spooled, (statistics_key, _) = first
    assert statistics_key == beam_job.STATISTICS_KEY
    assert [key for key, _ in spooled] == sorted(expected)
    for (output_set, shard), path in spooled:
        assert path == str(spool_folder / f"spool-{output_set}-2-0-{shard:05d}")
        assert job.read_spool(path) == sorted(expected[output_set, shard])
    written = {name: (spool_folder / name).read_bytes() for name in os.listdir(spool_folder)}
    assert len(written) == len(spooled) + 1  # and the unit file; no temporary name is left
    again = list(process_unit.process((unit_id, unit_path)))
    assert again[:-1] == spooled
    assert {name: (spool_folder / name).read_bytes() for name in os.listdir(spool_folder)} == written


def test_a_shard_of_more_spool_files_than_the_fan_in_is_merged_in_steps(tmp_path, monkeypatch):
    """No merge opens more than MERGE_FAN_IN files (a process may open about 1,000, and a shard has a spool file
    per unit); the records still come out in sort order."""
    import random

    from albert_tf.data import pretraining_data_job as job

    rng = random.Random(3)
    records = [((rng.getrandbits(63), rng.randrange(4), rng.randrange(50), ordinal), rng.randbytes(rng.randrange(30)))
               for ordinal in range(200)]
    paths = []
    for run in range(5):
        path = tmp_path / f"spool-0-{run}-0-00000"
        path.write_bytes(b"".join(job.spool_record(*record) for record in sorted(records[run::5])))
        paths.append(str(path))
    open_now, most_open = set(), []
    original_open = beam_job._open_uncompressed

    def counting_open(path):
        f = original_open(path)
        open_now.add(f)
        most_open.append(len([f for f in open_now if not f.closed]))
        return f

    monkeypatch.setattr(beam_job, "_open_uncompressed", counting_open)
    merged = list(beam_job.merged_records(paths, lambda step: str(tmp_path / f"merge-{step}"), fan_in=2))
    assert merged == sorted(records)
    assert max(most_open) == 2
    # 5 files -> 4 -> 3 -> 2, merged into the shard.
    assert sorted(name for name in os.listdir(tmp_path) if name.startswith("merge")) == [
        "merge-0", "merge-1", "merge-2"]
    # 5 files with 4 at a time: the first 2 are merged (5 -> 4), the rest read once.
    for name in ("merge-0", "merge-1", "merge-2"):
        os.remove(tmp_path / name)
    most_open.clear()
    merged = list(beam_job.merged_records(paths, lambda step: str(tmp_path / f"merge-{step}"), fan_in=4))
    assert merged == sorted(records) and max(most_open) == 4
    assert [name for name in os.listdir(tmp_path) if name.startswith("merge")] == ["merge-0"]
    assert len(job.read_spool(str(tmp_path / "merge-0"))) == 80  # 2 files of 40 records


def test_a_rerun_removes_the_temporary_files_a_stopped_run_left(tmp_path):
    """A killed driver leaves its shards under temporary names, and its spool folder; they once stayed beside
    the rerun's output."""
    prefix = str(tmp_path / "train")
    left = [f"{prefix}-00000-of-00002.tfrecord.gz.beam-temp-4f9a",
            f"{prefix}-00001-of-00002.tfrecord.gz.beam-temp-empty", f"{prefix}.metadata.json.beam-temp",
            f"{prefix}-heldout-00000-of-00001.tfrecord.beam-temp-4f9a"]
    spool_folder = tmp_path / ".train.beam-temp-4f9a"
    spool_folder.mkdir()
    for name in ("spool-0-2-0-00001", "spool-1-0-3-00000.tmp-77aa"):  # a whole spool file, and a killed write
        (spool_folder / name).write_bytes(b"x")
    other_run = tmp_path / ".other.beam-temp-4f9a"  # another output's spool folder
    other_run.mkdir()
    (other_run / "spool-0-0-0-00000").write_bytes(b"x")
    kept = [f"{prefix}-00000-of-00002.tfrecord.gz", f"{prefix}.metadata.json", f"{prefix}-notes.txt",
            str(tmp_path / "other-00000-of-00001.tfrecord.beam-temp-4f9a"), str(other_run)]
    for path in left + kept[:-1]:
        open(path, "wb").close()
    assert remove_temporary_files([prefix, f"{prefix}-heldout"]) == sorted(left[:3]) + left[3:] + [str(spool_folder)]
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(path) for path in kept)


@pytest.mark.parametrize("failure", ["no_held_out_document", "output_written_meanwhile"])
def test_a_failed_final_check_leaves_nothing_of_the_run(tmp_path, inputs, failure):
    """The check after every shard is written (a held-out set that came out empty; an output that appeared
    while the job ran) removes the run's spool folder and temporary shards before it raises."""
    paths, spm_model = inputs
    config = dataclasses.replace(CONFIG, heldout_every=1000 if failure == "no_held_out_document" else 0)
    (tmp_path / "out").mkdir()
    prefix = str(tmp_path / "out" / "data")
    options = PipelineOptions(["--runner=FnApiRunner"])
    if failure == "output_written_meanwhile":
        pipeline = beam.Pipeline(options=options)
        build_pipeline(pipeline, paths, prefix, open(spm_model, "rb").read(), config)
        open(f"{prefix}.metadata.json", "w").close()  # after the start's check, before finalize's
        expected, kept = FileExistsError, ["data.metadata.json"]
    else:
        expected, kept = SettingError, []
    with pytest.raises(expected):
        if failure == "output_written_meanwhile":
            pipeline.run().wait_until_finish()
        else:
            with beam.Pipeline(options=options) as pipeline:
                build_pipeline(pipeline, paths, prefix, open(spm_model, "rb").read(), config)
    assert sorted(os.listdir(tmp_path / "out")) == kept


def test_the_output_goes_into_no_directory_another_tool_wrote(tmp_path, inputs):
    """`--output_file=<a SavedModel export>/train` used to add shards beside the export; the local tool refused."""
    paths, _ = inputs
    export_dir = tmp_path / "export"
    with staged_directory(str(export_dir)) as staging:
        for entry in ("encoder", "preprocessing", "serving"):
            os.mkdir(os.path.join(staging, entry))
    before = sorted(os.listdir(export_dir))
    with pytest.raises(SettingError, match=f"^{export_dir} holds a SavedModel export .*; "
                                           "pipelines.create_pretraining_data writes into a directory of its own"):
        checked_input_paths(paths, f"{export_dir}/train", CONFIG)
    assert sorted(os.listdir(export_dir)) == before
    data_dir = tmp_path / "data"  # a data set's directory is this tool's own: an earlier run's shards are skipped
    data_dir.mkdir()
    own_output = data_dir / "train-00000-of-00004.tfrecord.gz"
    for path in (own_output, data_dir / "train.metadata.json"):
        path.write_bytes(b"")
    assert checked_input_paths(paths + [str(own_output)], f"{data_dir}/train", CONFIG) == sorted(paths)


def test_cli_requires_a_named_runner_and_passes_beam_options(tmp_path, inputs):
    paths, spm_model = inputs
    corpus = [path for path in paths if "part0" in path][0]
    # A stopped run's temporary shard, which the run that succeeds removes; and text in kana, whose accent
    # stripping the summary mentions (part0's Latin accents are not).
    stopped_run = tmp_path / "d-00000-of-00001.tfrecord.beam-temp-0f1e2d"
    stopped_run.write_bytes(b"partial")
    (tmp_path / "kana.txt").write_text("ゲームです。\nがっこうへ行きます。\n")
    corpus = f"{corpus},{tmp_path / 'kana.txt'}"
    base = [sys.executable, "-m", "pipelines.create_pretraining_data", f"--input_file={corpus}",
            f"--output_file={tmp_path / 'd'}", f"--spm_model_file={spm_model}", "--max_seq_length=64",
            "--max_predictions_per_seq=10", "--dupe_factor=1"]
    result = subprocess.run(base, capture_output=True, text=True)
    assert result.returncode == 1 and "name the Beam runner: --runner=FnApiRunner" in result.stderr
    # albert_tf's checks name settings; this command line says them as flags.
    result = subprocess.run(base + ["--runner=FnApiRunner", "--heldout_every=1"], capture_output=True, text=True)
    assert result.returncode == 1 and "error: --heldout_every must be 0 (no held-out set) or >= 2" in result.stderr
    result = subprocess.run(base + ["--runner=FnApiRunner", "--direct_num_workers=1"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert os.path.exists(tmp_path / "d-00000-of-00001.tfrecord") and os.path.exists(tmp_path / "d.metadata.json")
    assert not stopped_run.exists()
    assert (f"Removed 1 temporary file(s) and spool folder(s) left by a run that was stopped, e.g. {stopped_run}."
            in result.stdout)
    assert "\n  accent stripping (the original's rule) rewrote 3 character(s) in 2 sentence(s) of scripts whose " \
           "marks carry meaning (Hiragana 2, Katakana 1; " in result.stdout
    result = subprocess.run(base + ["--runner=FnApiRunner"], capture_output=True, text=True)
    assert result.returncode == 1 and "exists: choose another --output_file or pass --overwrite" in result.stderr


def test_cli_in_multi_processing_mode_writes_the_local_tools_bytes(tmp_path, inputs):
    """The module docstring's local command: worker processes unpickle what the pipeline sends them, which
    must not be a class of the script running as __main__ (it once was: the run stopped at 'MakeInstances')."""
    paths, spm_model = inputs
    flags = [f"--input_file={','.join(paths)}", f"--spm_model_file={spm_model}", "--max_seq_length=64",
             "--max_predictions_per_seq=10", "--dupe_factor=2", "--num_output_shards=2"]
    local = subprocess.run([sys.executable, "-m", "albert_tf.create_pretraining_data", *flags,
                            f"--output_file={tmp_path / 'local' / 'data'}"], capture_output=True, text=True)
    assert local.returncode == 0, local.stderr[-2000:]
    beam_run = subprocess.run([sys.executable, "-m", "pipelines.create_pretraining_data", *flags,
                               f"--output_file={tmp_path / 'beam' / 'data'}", "--runner=FnApiRunner",
                               "--direct_num_workers=2", "--direct_running_mode=multi_processing"],
                              capture_output=True, text=True)
    assert beam_run.returncode == 0, beam_run.stderr[-2000:]
    from_local, from_beam = outputs(tmp_path / "local"), outputs(tmp_path / "beam")
    assert len(from_local) == 3 and from_local == from_beam
