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

How it is laid out: one task reads each input file (document numbering is per
file, so a huge single file is read by one worker: shard big corpora into many
files). Its documents are grouped into the same work units as the local tool,
redistributed, and turned into instances by the same `UnitProcessor`; each
instance's sort key picks its output shard, each shard is sorted and written
under a temporary name, and a final step renames every shard into place and
writes the metadata. Nothing appears under the output names unless all of it
was written.
"""

import json
import os
import sys
import typing
import uuid

import apache_beam as beam
from absl import flags, logging
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from albert_tf import cli
from albert_tf.data.creation_flags import config_from_flags, define_data_flags
from albert_tf.data import data_set_files
from albert_tf.data import pretraining_data_job as job
from albert_tf.data.corpus_reader import CorpusStats
from albert_tf.data.pretraining_data_job import UnitProcessor
from albert_tf.data.pretraining_instances import InstanceStats
from albert_tf.settings import SettingError
from albert_tf.text.albert_tokenizer import AlbertTokenizer, check_vocabulary_casing

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


def _open_uncompressed(path):
    # Decompression (.gz) is the corpus reader's job, exactly as in the local tool.
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _create(path):
    return FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED)


def read_units(indexed_path, config):
    """(file index, path) -> work units of its documents, and its CorpusStats (tagged)."""
    file_index, path = indexed_path
    stats = CorpusStats()
    yield from job.group_into_units(job.iter_file(path, file_index, config, stats, opener=_open_uncompressed),
                                config.instances)
    yield beam.pvalue.TaggedOutput("corpus_stats", stats)


# Declared: Beam would otherwise infer the main output's type from a generator
# that also yields the tagged statistics.
@beam.typehints.with_output_types(typing.Tuple[typing.Tuple[int, int], typing.Any])
class ProcessUnit(beam.DoFn):
    """A work unit -> ((output set, shard), (sort tuple, example)) records, plus its [training, held-out]
    InstanceStats (tagged)."""

    def __init__(self, model_proto, config):
        self.model_proto = model_proto
        self.config = config

    def setup(self):
        self.processor = UnitProcessor(self.model_proto, self.config)

    def process(self, unit):
        stats, heldout_stats = InstanceStats(), InstanceStats()
        for output_set, shard, sort_tuple, example in self.processor.process(unit, stats, heldout_stats):
            yield (output_set, shard), (sort_tuple, example)
        yield beam.pvalue.TaggedOutput("instance_stats", (stats, heldout_stats))


def _merge_all(items, make):
    merged = make()
    for item in items:
        merged.merge(item)
    return merged


class _SetStats:
    """[training set, held-out set] InstanceStats, merged pairwise (a Beam combine's accumulator)."""

    def __init__(self):
        self.sets = [InstanceStats(), InstanceStats()]

    def merge(self, other):
        for mine, theirs in zip(self.sets, getattr(other, "sets", other)):
            mine.merge(theirs)


def write_shard_to_temp(shard_records, final_paths, compression, attempt):
    """((output set, shard), records) -> (output set, shard, temporary path, count)."""
    (output_set, shard), records = shard_records
    temporary = f"{final_paths[output_set][shard]}.beam-temp-{attempt}"
    count = job.write_shard(list(records), temporary, compression, create=_create)
    return output_set, shard, temporary, count


def finalize(_, written, set_stats, corpus_stats, final_paths, sets, config, model_proto, vocab_size,
             input_paths, overwrite):
    """Renames every shard of every output set into place (writing empty shards no record went to), then the
    metadata; returns the training set's metadata."""
    job.check_outputs_made(config, set_stats.sets, input_paths, corpus_stats)
    previous = [existing_outputs(prefix) for prefix, _ in sets]
    if any(previous) and not overwrite:
        raise FileExistsError(f"{[p for paths in previous for p in paths][0]} exists: choose another --output_file "
                              "or pass --overwrite")
    staged = []  # (prefix, temporaries, final paths, metadata) of every output set
    for output_set, (prefix, set_config) in enumerate(sets):
        paths = final_paths[output_set]
        counts, temporaries = [0] * len(paths), {}
        for written_set, shard, temporary, count in written:
            if written_set == output_set:
                counts[shard] = count
                temporaries[shard] = temporary
        for shard, final_path in enumerate(paths):
            if shard not in temporaries:
                temporaries[shard] = f"{final_path}.beam-temp-empty"
                job.write_shard([], temporaries[shard], config.compression, create=_create)
        ordered = [temporaries[s] for s in range(len(paths))]
        sizes = [m.size_in_bytes for result in FileSystems.match(ordered) for m in result.metadata_list]
        metadata = job.build_metadata(set_config, model_proto, vocab_size, input_paths, corpus_stats,
                                      set_stats.sets[output_set], counts, paths, sizes)
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
    return staged[0][3]


def _write_metadata(output_prefix, metadata):
    """Writes PREFIX.metadata.json through a temporary name and a rename."""
    with _create(output_prefix + data_set_files.METADATA_SUFFIX + ".beam-temp") as f:
        f.write((json.dumps(metadata, indent=2, sort_keys=True) + "\n").encode())
    FileSystems.rename([output_prefix + data_set_files.METADATA_SUFFIX + ".beam-temp"], [output_prefix + data_set_files.METADATA_SUFFIX])


def build_pipeline(pipeline, input_paths, output_prefix, model_proto, config, overwrite=False):
    """Adds the whole job to `pipeline`; returns the PCollection holding the final metadata."""
    vocab_size = AlbertTokenizer(model_proto=model_proto, lower_case=config.lower_case).vocab_size
    sets = job.output_sets(config, output_prefix)
    final_paths = [data_set_files.shard_paths(prefix, config.num_output_shards, config.compression)
                   for prefix, _ in sets]
    read = (
        pipeline
        | "Files" >> beam.Create(list(enumerate(input_paths)))
        | "ReadUnits" >> beam.FlatMap(read_units, config).with_outputs("corpus_stats", main="units")
    )
    processed = (
        read.units
        | "Redistribute" >> beam.Reshuffle()
        | "MakeInstances" >> beam.ParDo(ProcessUnit(model_proto, config)).with_outputs("instance_stats", main="records")
    )
    written = (
        processed.records
        | "GroupByShard" >> beam.GroupByKey()
        | "WriteShards" >> beam.Map(write_shard_to_temp, final_paths, config.compression, uuid.uuid4().hex)
    )
    set_stats = processed.instance_stats | "InstanceStats" >> beam.CombineGlobally(_merge_all, _SetStats)
    corpus_stats = read.corpus_stats | "CorpusStats" >> beam.CombineGlobally(_merge_all, CorpusStats)
    return (
        pipeline
        | "Once" >> beam.Create([None])
        | "Finalize" >> beam.Map(
            finalize,
            written=beam.pvalue.AsList(written),
            set_stats=beam.pvalue.AsSingleton(set_stats),
            corpus_stats=beam.pvalue.AsSingleton(corpus_stats),
            final_paths=final_paths,
            sets=sets,
            config=config,
            model_proto=model_proto,
            vocab_size=vocab_size,
            input_paths=input_paths,
            overwrite=overwrite,
        )
    )


def run(argv, beam_args):
    del argv
    for name in ("input_file", "output_file", "spm_model_file"):
        if not FLAGS[name].value:
            raise ValueError(f"--{name} is required")
    options = PipelineOptions(beam_args)
    runner = options.view_as(StandardOptions).runner
    if not runner:
        raise ValueError("name the Beam runner: --runner=FnApiRunner (local, offline), DirectRunner, "
                         "DataflowRunner, FlinkRunner or SparkRunner")
    config = config_from_flags(FLAGS)
    input_paths, skipped = job.without_own_outputs(expand_patterns(FLAGS.input_file), config, FLAGS.output_file)
    if skipped:
        print(f"Skipped {len(skipped)} file(s) that --input_file matches but this run writes, e.g. {skipped[0]}.")
    existing = [path for prefix, _ in job.output_sets(config, FLAGS.output_file) for path in existing_outputs(prefix)]
    if existing and not FLAGS.overwrite:  # checked again when renaming; this saves a wasted run
        raise FileExistsError(f"{existing[0]} exists: choose another --output_file or pass --overwrite")
    with FileSystems.open(FLAGS.spm_model_file) as f:
        model_proto = f.read()
    check_vocabulary_casing(AlbertTokenizer(model_proto=model_proto), config.lower_case, FLAGS.spm_model_file,
                            keep_accents=config.keep_accents)
    with beam.Pipeline(options=options) as pipeline:
        build_pipeline(pipeline, input_paths, FLAGS.output_file, model_proto, config, FLAGS.overwrite)
    print(f"Wrote {FLAGS.output_file}-*-of-{config.num_output_shards:05d}* and "
          f"{FLAGS.output_file}.metadata.json with the {runner}"
          + (f"; held-out set {job.heldout_prefix(FLAGS.output_file)}-*." if config.heldout_every else "."))
    return 0


def main():
    define_data_flags()
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
        except (FileNotFoundError, FileExistsError, ValueError) as error:
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
