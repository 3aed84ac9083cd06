r"""create_pretraining_data as an Apache Beam pipeline, for corpora too big for one machine.

Same flags and same output as `python -m albert_tf.create_pretraining_data`
(byte for byte, for the same inputs and --random_seed), on any Beam runner.
The runner must be named; Beam options go through untouched:

  # Locally (FnApiRunner: no download; DirectRunner would first fetch Prism)
  python -m pipelines.create_pretraining_data --runner=FnApiRunner \
      --direct_num_workers=2 --direct_running_mode=multi_processing \
      --input_file='corpus/*.txt' --output_file=out/train --spm_model_file=30k-clean.model

  # Dataflow: ship albert_tf to the workers as a wheel
  pip wheel --no-deps -w dist .
  python -m pipelines.create_pretraining_data --runner=DataflowRunner \
      --project=PROJECT --region=REGION --temp_location=gs://BUCKET/tmp \
      --extra_package=dist/albert_tf-0.1.0-py3-none-any.whl \
      --requirements_file=pipelines/requirements-workers.txt \
      --input_file='gs://BUCKET/corpus/*.txt' --output_file=gs://BUCKET/data/train \
      --spm_model_file=gs://BUCKET/30k-clean.model --num_output_shards=1024

  # Flink / Spark: --runner=FlinkRunner --flink_master=HOST:PORT, or
  #                --runner=SparkRunner --spark_master_url=spark://HOST:7077

  # Dask (pip install 'apache-beam[dask]'; a scheduler from `dask scheduler`,
  # workers from `dask worker SCHEDULER`; Beam's Dask runner is named by its path)
  python -m pipelines.create_pretraining_data \
      --runner=apache_beam.runners.dask.dask_runner.DaskRunner \
      --dask_client_address=tcp://HOST:8786 --dask_partition_size=1 --readers_per_file=4 \
      --input_file='corpus/*.txt' --output_file=out/train --spm_model_file=30k-clean.model

How it is laid out: each input file is read by --readers_per_file tasks
(document numbering is per file, so every one of them parses the whole file and
keeps every Nth of its work units; the units are the local tool's). Data leaves
a worker as files, not as elements, in a folder beside the output
(.PREFIX.beam-temp-RUN, on the output's filesystem: local, gs://, ...), and only
their paths travel through the shuffle: a reader writes each of its units (about
1 MB of text) to a unit file; the units' paths are redistributed and each unit
is turned into instances by the same `UnitProcessor`, each instance's sort key
picking its output shard; the unit's records go to one spool file per (unit,
output set, shard), sorted. The folder holds about the corpus's text besides
the spooled records until the job ends. Each shard's writer streams a merge of
its spool files into the shard under a temporary name, so no process holds more
than one unit, its records, or one record per spool file: memory does not grow
with the corpus. A final step
renames every shard into place, writes the metadata and removes the spool
folder. Nothing appears under the output names unless all of it was written.
A unit or spool file's name says which unit (and shard) it holds and it appears
only whole (written under a temporary name, then renamed), so a task retried after
its worker died rewrites the same file; what a stopped run leaves (spool
folder, temporary shards) is never read again and is removed by the next run
with the same --output_file.

Only the transforms every runner has: Create, Map/FlatMap/ParDo with one
output, Reshuffle and GroupByKey. The file statistics and each unit's instance
statistics travel with the spool files' paths, under a key of their own, to the
one final step. Beam 2.77's Dask runner mixes the outputs of a multi-output ParDo
(`with_outputs`) into one collection, recomputes a side input's whole upstream
inside each task that reads it, drops what a DoFn emits from `finish_bundle`
(so Beam's own file sinks leave empty files there), computes only what the
last transform depends on, makes Reshuffle a no-op and puts up to 128 of a
Create's elements into one task (hence --dask_partition_size=1 and, for few
big files, --readers_per_file).
"""

import collections
import contextlib
import dataclasses
import json
import operator
import os
import pickle
import sys
import typing
import uuid

import apache_beam as beam
from absl import flags, logging
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineState

from albert_tf import cli
from albert_tf.data.creation_flags import config_from_flags, define_data_flags, vocabulary_setting
from albert_tf.data import data_set_files
from albert_tf.data import pretraining_data_job as job
from albert_tf.data.corpus_reader import CorpusStats
from albert_tf.data.pretraining_data_job import RunStatistics, UnitProcessor
from albert_tf.data.pretraining_instances import InstanceStats
from albert_tf.file_utils import DATA_SET, VOCABULARY, refuse_another_tools_directory
from albert_tf.settings import SettingError
from albert_tf.text.albert_tokenizer import check_vocabulary_casing, vocabulary_has_accents
from albert_tf.text.vocabularies import SENTENCEPIECE, Vocabulary

FLAGS = flags.FLAGS


def expand_patterns(patterns):
    """Sorted files for comma-separated globs, on any Beam filesystem (local, gs://, ...)."""
    paths = set()
    for pattern in patterns:
        matches = FileSystems.match([pattern])[0].metadata_list
        if not matches:
            raise FileNotFoundError(f"{pattern}: no such file (the pattern matches nothing)")
        paths.update(match.path for match in matches)
    return sorted(paths)


def existing_outputs(output_prefix):
    """Outputs of an earlier run with this prefix, on any Beam filesystem."""
    return sorted(m.path for result in FileSystems.match(job.output_patterns(output_prefix)) for m in result.metadata_list)


# What the shards and the metadata are written as before finalize renames them.
TEMPORARY_SUFFIX = ".beam-temp"
# The most spool files one merge reads at once (each open file holds a read buffer, and a process may open
# about 1,000 files); a shard with more first merges some of them into intermediate spool files.
MERGE_FAN_IN = 512


def spool_directory(output_prefix, run_id):
    """The folder beside the output where the run `run_id` spools its records (hidden: a glob of the output's
    folder, such as --input_file='data/*', does not take it for text)."""
    directory, name = FileSystems.split(output_prefix)
    return FileSystems.join(directory, f".{name}{TEMPORARY_SUFFIX}-{run_id}")


def temporary_files(output_prefix):
    """(files, spool folders) a run with this prefix writes and finalize renames or removes (write_group's
    shards, finalize's empty shards and metadata), on any Beam filesystem: a run stopped before leaves them."""
    file_patterns = [f"{output_prefix}-?????-of-?????.tfrecord*{TEMPORARY_SUFFIX}-*",
                     f"{output_prefix}{data_set_files.METADATA_SUFFIX}{TEMPORARY_SUFFIX}"]
    spooled = FileSystems.join(spool_directory(output_prefix, "*"), "*")
    files = sorted(m.path for result in FileSystems.match(file_patterns) for m in result.metadata_list)
    folders = sorted({FileSystems.split(m.path)[0] for m in FileSystems.match([spooled])[0].metadata_list})
    return files, folders


def remove_temporary_files(output_prefixes):
    """Deletes what `temporary_files` finds for each of `output_prefixes`; returns the paths, files first."""
    files, folders = [], []
    for prefix in output_prefixes:
        prefix_files, prefix_folders = temporary_files(prefix)
        files += prefix_files
        folders += prefix_folders
    if files:
        FileSystems.delete(files)
    if folders:
        _delete_folders(folders)
    return files + folders


def _delete_folders(folders):
    """Deletes folders with all they hold, on any Beam filesystem (on one without folders, such as GCS, a
    folder is the objects whose names continue its name and a '/')."""
    FileSystems.delete([folder if FileSystems.get_filesystem(folder).has_dirs() else folder + "/"
                        for folder in folders])


def _open_uncompressed(path):
    # Decompression (.gz) is the corpus reader's job, exactly as in the local tool.
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _create(path):
    return FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED)


def read_units(reading_task, config, readers_per_file, spool_directory):
    """(file index, path, reader) -> ((file index, unit ordinal), the path of its unit file) for every
    `readers_per_file`-th work unit of the file from the reader-th on, each unit written to its file (`read_unit`
    reads it); the first reader then yields the file's CorpusStats (every reader reads all of the file to find
    its units). The pair names the unit in every run and attempt, and so does its file's name.

    Units leave as files because a runner may hold a step's whole output in memory (Beam's Dask runner makes
    each task's output a list): as elements, the units of a 960 MB corpus would sit in the workers at once."""
    file_index, path, reader = reading_task
    stats = CorpusStats()
    units = job.group_into_units(job.iter_file(path, file_index, config, stats, opener=_open_uncompressed),
                                 config.instances)
    for ordinal, unit in enumerate(units):
        if ordinal % readers_per_file == reader:
            unit_path = FileSystems.join(spool_directory, f"unit-{file_index}-{ordinal}")
            _write_whole(unit_path, [pickle.dumps(unit, protocol=pickle.HIGHEST_PROTOCOL)])
            yield (file_index, ordinal), unit_path
    if reader == 0:
        yield stats


def read_unit(unit_path):
    """The work unit `read_units` wrote to `unit_path`."""
    with _open_uncompressed(unit_path) as f:
        return pickle.loads(f.read())


# The key under which the statistics travel with the records (no output set is negative).
STATISTICS_KEY = (-1, -1)


# Declared: Beam would otherwise infer the output's type from a generator that also yields the statistics.
@beam.typehints.with_output_types(typing.Tuple[typing.Tuple[int, int], typing.Any])
class ProcessUnit(beam.DoFn):
    """(unit id, the path of its unit file) -> ((output set, shard), the path of its spool file) for every shard it has records
    for, each spool file holding the unit's records of that shard sorted, then (STATISTICS_KEY, its
    RunStatistics); a file's CorpusStats (what read_units yields last) passes on as (STATISTICS_KEY,
    RunStatistics). The records stay in files: what the shuffle moves, and a worker holds between steps, is
    paths (a Dask cluster once held 2.5 times the output as elements)."""

    def __init__(self, vocabulary, config, spool_directory):
        self.vocabulary = vocabulary
        self.config = config
        self.spool_directory = spool_directory

    def setup(self):
        self.processor = UnitProcessor(self.vocabulary, self.config)

    def process(self, element):
        if isinstance(element, CorpusStats):
            yield STATISTICS_KEY, RunStatistics(corpus=element)
            return
        (file_index, ordinal), unit_path = element
        unit = read_unit(unit_path)
        stats, heldout_stats = InstanceStats(), InstanceStats()
        by_shard = collections.defaultdict(list)
        for output_set, shard, sort_tuple, example in self.processor.process(unit, stats, heldout_stats):
            by_shard[output_set, shard].append((sort_tuple, example))
        for output_set, shard in sorted(by_shard):
            records = sorted(by_shard[output_set, shard], key=operator.itemgetter(0))
            path = FileSystems.join(self.spool_directory,
                                    job.spool_name(output_set, f"{file_index}-{ordinal}", shard))
            _write_whole(path, (job.spool_record(*record) for record in records))
            yield (output_set, shard), path
        yield STATISTICS_KEY, RunStatistics(sets=[stats, heldout_stats])


def _write_whole(path, chunks):
    """Writes `chunks` (bytes) to `path` through a temporary name of this attempt's and a rename: the file
    appears whole or not at all, and attempts that run at once (a retry beside a straggler) each write their own
    file and rename the same bytes into place."""
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    with _create(temporary) as f:
        for chunk in chunks:
            f.write(chunk)
    FileSystems.rename([temporary], [path])


def merged_records(spool_paths, merge_name, fan_in=MERGE_FAN_IN):
    """The records of sorted spool files, as one stream in sort order. Beyond `fan_in` files, the first ones
    are merged into intermediate spool files (`merge_name(step)` names the step-th), no more of them than
    brings the count down to `fan_in`, so no merge opens more than `fan_in` files and as few records as
    possible are written twice."""
    paths = sorted(spool_paths)
    step = 0
    while len(paths) > fan_in:
        merged, count = merge_name(step), min(fan_in, len(paths) - fan_in + 1)
        with contextlib.ExitStack() as files:
            records = job.merge_spools([files.enter_context(_open_uncompressed(path)) for path in paths[:count]])
            _write_whole(merged, (job.spool_record(*record) for record in records))
        paths, step = paths[count:] + [merged], step + 1
    with contextlib.ExitStack() as files:
        yield from job.merge_spools([files.enter_context(_open_uncompressed(path)) for path in paths])


def write_group(keyed_group, final_paths, compression, spool_directory, run_id):
    """((output set, shard), spool file paths) -> ((output set, shard), (temporary path, count)), the merge of
    the spool files streamed into the shard under a temporary name; (STATISTICS_KEY, RunStatistics) ->
    (STATISTICS_KEY, their merge)."""
    key, values = keyed_group
    if key == STATISTICS_KEY:
        merged = RunStatistics()
        for statistics in values:
            merged.merge(statistics)
        return key, merged
    output_set, shard = key
    temporary = f"{final_paths[output_set][shard]}{TEMPORARY_SUFFIX}-{run_id}"
    records = merged_records(values, lambda step: FileSystems.join(spool_directory,
                                                                   f"merge-{output_set}-{shard:05d}-{step}"))
    return key, (temporary, job.write_sorted_shard(records, temporary, compression, create=_create))


def finalize(gathered, final_paths, sets, config, vocabulary, vocab_size, special_ids, input_paths, overwrite,
             spool_directory):
    """(None, what write_group returned for every key) -> renames every shard of every output set into place
    (writing empty shards no record went to), then the metadata, and removes the spool folder; returns the
    training set's metadata."""
    _, results = gathered
    written, statistics = {}, RunStatistics()
    for key, value in results:
        if key == STATISTICS_KEY:
            statistics.merge(value)
        else:
            written[key] = value
    corpus_stats = statistics.corpus
    previous = [existing_outputs(prefix) for prefix, _ in sets]
    try:
        job.check_outputs_made(config, statistics.sets, input_paths, corpus_stats)
        if any(previous) and not overwrite:
            raise FileExistsError(f"{[p for paths in previous for p in paths][0]} exists: choose another "
                                  "--output_file or pass --overwrite")
    except (ValueError, FileExistsError):
        # Nothing of this run is kept: its shards written under temporary names, and its spool folder.
        temporaries = [temporary for temporary, _ in written.values()]
        if temporaries:
            FileSystems.delete(temporaries)
        _delete_folders([spool_directory])
        raise
    staged = []  # (prefix, temporaries, final paths, metadata) of every output set
    for output_set, (prefix, set_config) in enumerate(sets):
        paths = final_paths[output_set]
        counts, ordered = [], []
        for shard, final_path in enumerate(paths):
            if (output_set, shard) in written:
                temporary, count = written[output_set, shard]
            else:
                temporary, count = f"{final_path}{TEMPORARY_SUFFIX}-empty", 0
                job.write_shard([], temporary, config.compression, create=_create)
            counts.append(count)
            ordered.append(temporary)
        sizes = [m.size_in_bytes for result in FileSystems.match(ordered) for m in result.metadata_list]
        metadata = job.build_metadata(set_config, vocabulary, vocab_size, special_ids, input_paths, corpus_stats,
                                      statistics.sets[output_set], counts, paths, sizes)
        staged.append((prefix, ordered, paths, metadata))
    job.link_heldout_set([(prefix, paths, metadata) for prefix, _, paths, metadata in staged])
    # Every new shard is written; the old sets are replaced only now, behind "incomplete" markers
    # that readers refuse, so an interrupted swap never passes for a whole data set.
    for prefix, _, _, _ in staged:
        _write_metadata(prefix, job.incomplete_marker(prefix))
    for (prefix, ordered, paths, metadata), old_paths in zip(staged, previous):
        FileSystems.rename(ordered, list(paths))
        stale = sorted(set(old_paths) - set(paths) - {prefix + data_set_files.METADATA_SUFFIX})
        if stale:
            FileSystems.delete(stale)
        _write_metadata(prefix, metadata)
    _delete_folders([spool_directory])
    return staged[0][3]


def _write_metadata(output_prefix, metadata):
    """Writes PREFIX.metadata.json through a temporary name and a rename."""
    path = output_prefix + data_set_files.METADATA_SUFFIX
    with _create(path + TEMPORARY_SUFFIX) as f:
        f.write((json.dumps(metadata, indent=2, sort_keys=True) + "\n").encode())
    FileSystems.rename([path + TEMPORARY_SUFFIX], [path])


def _under_one_key(element):
    return None, element


def build_pipeline(pipeline, input_paths, output_prefix, vocabulary, config, overwrite=False, readers_per_file=1):
    """Adds the whole job to `pipeline`; returns the PCollection holding the final metadata.

    One chain of single-output steps, no side inputs: what Beam's Dask runner runs right (the module's
    docstring says what it lacks), and every other runner too."""
    if readers_per_file < 1:
        raise SettingError(f"<readers_per_file> must be at least 1, got {readers_per_file}")
    if not isinstance(vocabulary, Vocabulary):  # a SentencePiece model's bytes, as this function took before
        vocabulary = Vocabulary(SENTENCEPIECE, vocabulary)
    job.check_vocabulary_settings(config, vocabulary)
    tokenizer = vocabulary.tokenizer(config.lower_case, config.keep_accents, config.rewrite_quotes)
    sets = job.output_sets(config, output_prefix)
    final_paths = [data_set_files.shard_paths(prefix, config.num_output_shards, config.compression)
                   for prefix, _ in sets]
    run_id = uuid.uuid4().hex
    spooled = spool_directory(output_prefix, run_id)
    reading_tasks = [(file_index, path, reader) for file_index, path in enumerate(input_paths)
                     for reader in range(readers_per_file)]
    return (
        pipeline
        | "Files" >> beam.Create(reading_tasks)
        # Declared: Beam's inference of the union of (unit id, unit) pairs and CorpusStats sometimes failed
        # (a ValueError from its schema code while the pipeline was built, seen on paragraph input).
        | "ReadUnits" >> beam.FlatMap(read_units, config, readers_per_file, spooled).with_output_types(typing.Any)
        | "Redistribute" >> beam.Reshuffle()
        | "MakeInstances" >> beam.ParDo(ProcessUnit(vocabulary, config, spooled))
        | "GroupByShard" >> beam.GroupByKey()
        | "WriteShards" >> beam.Map(write_group, final_paths, config.compression, spooled, run_id)
        | "OneKey" >> beam.Map(_under_one_key)
        | "GatherAll" >> beam.GroupByKey()
        | "Finalize" >> beam.Map(finalize, final_paths=final_paths, sets=sets, config=config, vocabulary=vocabulary,
                                 vocab_size=tokenizer.vocab_size, special_ids=tokenizer.special_ids,
                                 input_paths=input_paths, overwrite=overwrite,
                                 spool_directory=spooled)
    )


def checked_input_paths(input_patterns, output_prefix, config):
    """The files `input_patterns` match, less those this run writes; SettingError, before any is read, when
    the output's directory holds what another albert_tf tool wrote (a gs:// one: its run record says so)."""
    refuse_another_tools_directory(os.path.dirname(output_prefix) or ".", "pipelines.create_pretraining_data",
                                   (DATA_SET, VOCABULARY), setting="output_file")
    input_paths, skipped = job.without_own_outputs(expand_patterns(input_patterns), config, output_prefix)
    if skipped:
        print(f"Skipped {len(skipped)} file(s) that --input_file matches but this run writes, e.g. {skipped[0]}.")
    return input_paths


def run(argv, beam_args):
    del argv
    for name in ("input_file", "output_file"):
        if not FLAGS[name].value:
            raise ValueError(f"--{name} is required")
    vocabulary_setting(FLAGS)  # exactly one vocabulary, before anything else is checked
    options = PipelineOptions(beam_args)
    runner = options.view_as(StandardOptions).runner
    if not runner:
        raise ValueError("name the Beam runner: --runner=FnApiRunner (local, offline), DirectRunner, "
                         "DataflowRunner, FlinkRunner, SparkRunner or apache_beam.runners.dask.dask_runner.DaskRunner")
    config = config_from_flags(FLAGS)
    input_paths = checked_input_paths(FLAGS.input_file, FLAGS.output_file, config)
    existing = [path for prefix, _ in job.output_sets(config, FLAGS.output_file) for path in existing_outputs(prefix)]
    if existing and not FLAGS.overwrite:  # checked again when renaming; this saves a wasted run
        raise FileExistsError(f"{existing[0]} exists: choose another --output_file or pass --overwrite")
    stale = remove_temporary_files([prefix for prefix, _ in job.output_sets(config, FLAGS.output_file)])
    if stale:
        print(f"Removed {len(stale)} temporary file(s) and spool folder(s) left by a run that was stopped, "
              f"e.g. {stale[0]}.")
    kind, vocabulary_path = vocabulary_setting(FLAGS)
    with FileSystems.open(vocabulary_path) as f:
        vocabulary = Vocabulary(kind, f.read(), vocabulary_path)
    tokenizer = vocabulary.tokenizer()
    if FLAGS.keep_accents is None:  # as the vocabulary was trained (a path config_from_flags may not open)
        config = dataclasses.replace(config, keep_accents=vocabulary_has_accents(tokenizer))
    check_vocabulary_casing(tokenizer, config.lower_case, vocabulary_path, keep_accents=config.keep_accents)
    pipeline = beam.Pipeline(options=options)
    build_pipeline(pipeline, input_paths, FLAGS.output_file, vocabulary, config, FLAGS.overwrite,
                   FLAGS.readers_per_file)
    try:
        state = pipeline.run().wait_until_finish()
    except (FileNotFoundError, FileExistsError, ValueError):
        raise  # the job's own checks (no instances, an output written meanwhile), which say what to do
    except Exception as error:  # whatever else the runner raises: a task that failed on every retry, a lost worker
        raise PipelineFailedError(
            f"the {runner} stopped the job: {type(error).__name__}: {_first_line(error)} "
            f"({FLAGS.output_file}: nothing new, or readers refuse it as incomplete; the same command again "
            "removes this run's temporary files)") from error
    # A runner can report success for work it skipped (Beam 2.77's Dask runner does for WriteToText, whose
    # files it leaves empty): the state is checked, and that the last step wrote the metadata.
    metadata_path = FLAGS.output_file + data_set_files.METADATA_SUFFIX
    if state != PipelineState.DONE or not FileSystems.exists(metadata_path):
        raise PipelineFailedError(f"the {runner} ended in state {state} but did not write {metadata_path}")
    print(f"Wrote {FLAGS.output_file}-*-of-{config.num_output_shards:05d}* and "
          f"{FLAGS.output_file}.metadata.json with the {runner}"
          + (f"; held-out set {job.heldout_prefix(FLAGS.output_file)}-*." if config.heldout_every else "."))
    with FileSystems.open(metadata_path) as f:
        corpus = json.load(f)["corpus"]
    for problem in CorpusStats.from_json(corpus).problems():
        print(f"  {problem}")
    return 0


class PipelineFailedError(RuntimeError):
    """The runner did not finish the job."""


def _first_line(error):
    lines = str(error).strip().splitlines()
    return lines[0] if lines else "(no message)"


def main():
    define_data_flags()
    flags.DEFINE_integer("readers_per_file", 1, "Tasks that read each input file, each keeping every Nth of its work "
                         "units (default 1). Each parses the whole file: use more only where the runner cannot "
                         "redistribute units (Beam's Dask runner, whose Reshuffle is a no-op) and the corpus is a "
                         "few big files; the output is the same whatever N.")
    cli.show_tool_in_help(__name__)
    beam_args = []

    def parse(argv):
        # Our flags are ours; everything else (--runner, --project, ...) is Beam's.
        remaining = FLAGS(argv, known_only=True)
        beam_args.extend(remaining[1:])
        return remaining[:1]

    def wrapped(argv):
        if not FLAGS["verbosity"].present:
            logging.set_verbosity(logging.WARNING)
        try:
            return run(argv, beam_args)
        except (FileNotFoundError, FileExistsError, ValueError, PipelineFailedError) as error:
            if isinstance(error, SettingError):  # albert_tf names a setting; this command line says its flag
                error = error.for_flags()
            print(f"pipelines.create_pretraining_data: error: {error}", file=sys.stderr)
            return 1

    cli.run_absl(wrapped, flags_parser=parse)


def console_main():
    """The `albert-beam-create-pretraining-data` console script."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    main()


if __name__ == "__main__":
    console_main()
