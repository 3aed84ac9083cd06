r"""Creates ALBERT pretraining data: masked n-gram MLM + sentence-order pairs as TFRecords.

  python -m albert_tf.create_pretraining_data --input_file='corpus/*.txt' \
      --output_file=data/train --spm_model_file=vocab/30k-clean.model \
      --max_seq_length=128 --max_predictions_per_seq=20 --num_workers=8 --num_output_shards=16

writes data/train-00000-of-00016.tfrecord ... and data/train.metadata.json (the
settings, exact statistics and per-shard counts). The features and their names
are the original's, so files made by google-research/albert's script and by this
one are interchangeable.

--output_format=documents writes the tokenized documents once instead (a small
fraction of the disk of --dupe_factor copies): run_pretraining then makes new
sentence-order pairs and masks every epoch. --heldout_every=N also writes
PREFIX-heldout: every Nth document of each file, never trained on, as static
instances for evaluating during training (run_pretraining --eval_input_file).

Streaming and parallel: documents are read one at a time and handed to
--num_workers processes in small units; memory stays bounded by one unit per
worker and, at the end, one output shard. The same --random_seed gives
byte-identical files for any --num_workers (and from the Beam pipeline in
pipelines/). Outputs appear only once complete: everything is written under
temporary names and renamed at the end.

Differences from the original script, on purpose (docs/reference.md, "Pretraining data"): seeded
everywhere (the original used numpy's global RNG for n-gram lengths); a
one-sentence chunk is split at a random word boundary instead of taking B from
another document (--single_segment=other_document restores that); random
replacement tokens are ordinary pieces, never <pad>/[CLS]/[SEP]/[MASK]/<unk>.
"""

import concurrent.futures
import multiprocessing
import os
import shutil
import signal
import time

from absl import flags

from albert_tf import cli
from albert_tf.file_utils import make_owned_staging, remove_stale_staging, write_json_atomically

STAGING_PREFIX = ".create_pretraining_data-"

_worker = {}


def define_data_flags():
    """The flags that determine the data (shared with the Beam pipeline)."""
    flags.DEFINE_list("input_file", None, "Input text files (.gz read decompressed): comma-separated globs. "
                      "Format: see --input_format.")
    flags.DEFINE_string("output_file", None, "Output prefix: writes PREFIX-NNNNN-of-NNNNN.tfrecord[.gz] and "
                        "PREFIX.metadata.json.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model (from albert_tf.train_sentencepiece or the "
                        "original 30k-clean.model).")
    flags.DEFINE_enum("input_format", "sentences", ["sentences", "paragraphs"], "'sentences': one sentence per "
                      "line, blank line between documents (the original). 'paragraphs': one paragraph per line, "
                      "split into sentences; blank line between documents.")
    flags.DEFINE_bool("do_lower_case", True, "Lowercase (and strip accents from) the input, as the original.")
    flags.DEFINE_integer("max_seq_length", 512, "Tokens per sequence, [CLS] and [SEP]s included (original: 512).")
    flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence at most (original: 20). "
                         "Note: 20 at max_seq_length 512 masks only ~4% of tokens; for the paper's 15% use "
                         "round(0.15 * max_seq_length), e.g. 77 at 512, 20 at 128. 20 is kept as the default "
                         "only to reproduce the original.")
    flags.DEFINE_float("masked_lm_prob", 0.15, "Fraction of tokens to mask, before the cap above.")
    flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter random target length (original: 0.1).")
    flags.DEFINE_integer("dupe_factor", 40, "Times each document is used, with different masks (original: 40).")
    flags.DEFINE_integer("ngram", 3, "Longest masked n-gram, in words (original: 3).")
    flags.DEFINE_bool("favor_shorter_ngram", True, "p(n) proportional to 1/n (6/11, 3/11, 2/11); off reverses it.")
    flags.DEFINE_bool("do_whole_word_mask", True, "Mask whole words (all pieces of a word together).")
    flags.DEFINE_bool("random_next_sentence", False, "NSP instead of SOP: B is a random other document's "
                      "segment with probability 0.5 (label 1), the paper's Table 5 ablation.")
    flags.DEFINE_enum("single_segment", "split", ["split", "other_document"], "A chunk of one sentence: split "
                      "it at a random word boundary (pure SOP, default), or take B from a random other document "
                      "(the original's behaviour, which mixes NSP negatives into SOP data).")
    flags.DEFINE_integer("random_document_pool", 100, "Other-document segments (NSP, --single_segment="
                         "other_document) come from the same pool of this many consecutive documents of a file.")
    flags.DEFINE_integer("random_seed", 12345, "Seed; the same seed gives byte-identical output.")
    flags.DEFINE_integer("num_output_shards", 1, "Output files. Each shard is sorted in memory at the end: "
                         "keep shards under ~1 GB (e.g. one per 2 GB of input text at dupe_factor 40).")
    flags.DEFINE_enum("compression", "none", ["none", "gzip"], "Output TFRecord compression.")
    flags.DEFINE_integer("max_line_bytes", 1 << 20, "Lines longer than this are skipped (and counted).")
    flags.DEFINE_integer("max_document_sentences", 100_000, "Documents longer than this many sentences (e.g. a "
                         "file without blank lines) are cut into parts (and counted).")
    flags.DEFINE_enum("output_format", "instances", ["instances", "documents"], "instances: masked pairs, every "
                      "document --dupe_factor times (the original's format). documents: the tokenized documents once "
                      "(no dupe factor; a fraction of the disk); run_pretraining makes new pairs and masks from them "
                      "every epoch with this run's settings, epoch 0 exactly as instances at --dupe_factor=1.")
    flags.DEFINE_integer("heldout_every", 0, "Also write a held-out set: every Nth document of each input file "
                         "(index N-1, 2N-1, ...) is left out of the training output and made into instances once, "
                         "at PREFIX-heldout-*, for run_pretraining --eval_input_file. 0: none.")
    flags.DEFINE_bool("overwrite", False, "Replace existing outputs with this prefix.")


def define_flags():
    define_data_flags()
    flags.DEFINE_integer("num_workers", os.cpu_count() or 1, "Worker processes (1 = run in this process).")


def _init_worker(model_proto, config, spool_directory):
    from albert_tf.data.pretraining_data_job import ShardSpool, UnitProcessor

    _worker["processor"] = UnitProcessor(model_proto, config)
    _worker["spool"] = ShardSpool(spool_directory, config.num_output_shards, owner=os.getpid())


def _process_unit(unit):
    """(training set stats, held-out set stats) of one unit, whose records are in this worker's spool."""
    from albert_tf.data.pretraining_instances import InstanceStats

    stats, heldout_stats = InstanceStats(), InstanceStats()
    spool = _worker["spool"]
    for output_set, shard, sort_tuple, example in _worker["processor"].process(unit, stats, heldout_stats):
        spool.write(output_set, shard, sort_tuple, example)
    spool.flush()  # the data must be on disk before the parent hears the unit is done
    return stats, heldout_stats


class WorkerDiedError(ChildProcessError):
    pass


def _raise_on_sigterm(signum, frame):
    # SystemExit unwinds through the `finally` blocks that remove the staging directory.
    raise SystemExit(128 + signum)


def _unit_bytes(unit):
    return sum(len(sentence) for document in unit for sentence in document.sentences)


def create_pretraining_data(input_paths, output_prefix, spm_model_file, config, num_workers=1, overwrite=False,
                            progress=True):
    """Runs the whole job; returns the metadata dict (also written to PREFIX.metadata.json)."""
    from albert_tf.data import data_set_files
    from albert_tf.data import pretraining_data_job as job
    from albert_tf.data.corpus_reader import CorpusStats
    from albert_tf.data.pretraining_instances import InstanceStats
    from albert_tf.progress import Progress
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    tokenizer = AlbertTokenizer(spm_model_file, lower_case=config.lower_case)  # validates the model early
    sets = job.output_sets(config, output_prefix)
    previous = [job.existing_outputs(prefix) for prefix, _ in sets]
    if any(previous) and not overwrite:
        found = [path for paths in previous for path in paths]
        raise FileExistsError(f"{found[0]} (and {len(found) - 1} more) exist: choose another --output_file "
                              "or pass --overwrite")
    output_dir = os.path.dirname(os.path.abspath(output_prefix))
    os.makedirs(output_dir, exist_ok=True)
    for stale in remove_stale_staging(output_dir, STAGING_PREFIX):
        print(f"Removed {stale}, left by a run that was killed.", flush=True)
    total_bytes = sum(os.path.getsize(path) for path in input_paths)
    corpus_stats = CorpusStats()
    set_stats = [InstanceStats(), InstanceStats()]  # training set, held-out set
    done_bytes = 0

    def describe(done, elapsed):
        made = sum(stats.instances for stats in set_stats)
        parts = [f"{done / 1e6:,.1f}/{total_bytes / 1e6:,.1f} MB of text"]
        if config.output_format == "documents":
            parts.append(f"{set_stats[0].documents:,} documents")
        if made or config.output_format == "instances":
            parts.append(f"{made:,} instances ({made / elapsed if elapsed else 0.0:,.0f}/s)")
        return ", ".join(parts)

    def merge(unit_stats):
        for mine, theirs in zip(set_stats, unit_stats):
            mine.merge(theirs)

    meter = Progress(total_bytes, describe) if progress else None
    units = job.group_into_units(job.iter_corpus(input_paths, config, corpus_stats), config.instances)
    pool = None
    staging = make_owned_staging(output_dir, STAGING_PREFIX)
    try:
        if num_workers <= 1:
            _init_worker(tokenizer.model_proto, config, staging)
            for unit in units:
                merge(_process_unit(unit))
                done_bytes += _unit_bytes(unit)
                meter and meter.update(done_bytes)
            _worker.pop("spool").close()
        else:
            # concurrent.futures, not multiprocessing.Pool: when a worker dies (SIGKILL, the OOM killer)
            # the executor fails every pending unit with BrokenProcessPool, where a Pool would silently
            # replace the worker and wait forever for the unit it lost.
            pool = concurrent.futures.ProcessPoolExecutor(
                num_workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker,
                initargs=(tokenizer.model_proto, config, staging))
            in_flight = []
            try:
                for unit in units:
                    in_flight.append((pool.submit(_process_unit, unit), _unit_bytes(unit)))
                    # Bounded: the reader never runs more than two units per worker ahead.
                    while len(in_flight) >= 2 * num_workers:
                        result, size = in_flight.pop(0)
                        merge(result.result())
                        done_bytes += size
                        meter and meter.update(done_bytes)
                for result, size in in_flight:
                    merge(result.result())
                    done_bytes += size
                    meter and meter.update(done_bytes)
            except concurrent.futures.process.BrokenProcessPool:
                raise WorkerDiedError(
                    "a worker process died (killed by a signal, e.g. by the out-of-memory killer); nothing was "
                    f"written to {output_prefix}. Rerun with fewer --num_workers or more memory") from None
            pool.shutdown()
            pool = None
        if meter:
            meter.finish(total_bytes)
        job.check_outputs_made(config, set_stats, input_paths, corpus_stats)

        written = []  # (prefix, final paths, metadata) of every output set
        for output_set, (prefix, set_config) in enumerate(sets):
            final_paths = data_set_files.shard_paths(prefix, config.num_output_shards, config.compression)
            counts = []
            for shard, final_path in enumerate(final_paths):
                records = []
                for spool_path in job.spool_files_of(staging, output_set, shard):
                    records.extend(job.read_spool(spool_path))
                counts.append(job.write_shard(records, os.path.join(staging, os.path.basename(final_path)),
                                              config.compression))
            sizes = [os.path.getsize(os.path.join(staging, os.path.basename(path))) for path in final_paths]
            metadata = job.build_metadata(set_config, tokenizer.model_proto, tokenizer.vocab_size,
                                          input_paths, corpus_stats, set_stats[output_set], counts, final_paths, sizes)
            written.append((prefix, final_paths, metadata))
        job.link_heldout_set(written)
        # Every new set is complete in staging; only now are the old ones touched. Their metadata first
        # says "incomplete", so a kill during the renames leaves sets readers refuse, never a mix.
        for prefix, _, _ in written:
            write_json_atomically(prefix + data_set_files.METADATA_SUFFIX, job.incomplete_marker(prefix))
        for (prefix, final_paths, metadata), old_paths in zip(written, previous):
            for final_path in final_paths:
                os.replace(os.path.join(staging, os.path.basename(final_path)), final_path)
            for path in set(old_paths) - set(final_paths) - {prefix + data_set_files.METADATA_SUFFIX}:
                os.remove(path)
            write_json_atomically(prefix + data_set_files.METADATA_SUFFIX, metadata)
        return written[0][2]
    finally:
        if pool is not None:
            for process in list(getattr(pool, "_processes", {}).values()):
                process.kill()  # nothing of theirs is wanted any more; don't wait for their units
            pool.shutdown(wait=True, cancel_futures=True)
        spool = _worker.pop("spool", None)
        if spool:
            spool.close()
        _worker.clear()
        shutil.rmtree(staging, ignore_errors=True)


def config_from_flags(FLAGS):
    from albert_tf.data.masking import MaskingConfig
    from albert_tf.data.pretraining_data_job import CreationConfig
    from albert_tf.data.pretraining_instances import InstanceConfig

    return CreationConfig(
        instances=InstanceConfig(
            max_seq_length=FLAGS.max_seq_length,
            short_seq_prob=FLAGS.short_seq_prob,
            dupe_factor=FLAGS.dupe_factor,
            random_next_sentence=FLAGS.random_next_sentence,
            single_segment=FLAGS.single_segment,
            random_document_pool=FLAGS.random_document_pool,
            masking=MaskingConfig(
                masked_lm_prob=FLAGS.masked_lm_prob,
                max_predictions_per_seq=FLAGS.max_predictions_per_seq,
                ngram=FLAGS.ngram,
                favor_shorter_ngram=FLAGS.favor_shorter_ngram,
                do_whole_word_mask=FLAGS.do_whole_word_mask,
            ),
        ),
        seed=FLAGS.random_seed,
        num_output_shards=FLAGS.num_output_shards,
        compression=FLAGS.compression,
        input_format=FLAGS.input_format,
        lower_case=FLAGS.do_lower_case,
        max_line_bytes=FLAGS.max_line_bytes,
        max_document_sentences=FLAGS.max_document_sentences,
        output_format=FLAGS.output_format,
        heldout_every=FLAGS.heldout_every,
    )


def summary_lines(metadata, output_prefix, seconds):
    import psutil

    stats = metadata["statistics"]
    corpus = metadata["corpus"]
    peak = psutil.Process().memory_info().rss
    shards = f"{len(metadata['shards'])} shard(s) {output_prefix}-*-of-{len(metadata['shards']):05d}*"
    if "documents" in stats:
        what = (f"{stats['documents']:,} tokenized documents ({stats['sentences']:,} sentences, {stats['tokens']:,} "
                f"tokens; run_pretraining makes their pairs and masks anew every epoch)")
    else:
        what = (f"{stats['instances']:,} instances ({stats['tokens']:,} tokens, {stats['masked_tokens']:,} masked) "
                f"from {corpus['documents']:,} documents")
    size = sum(shard["bytes"] for shard in metadata["shards"])
    lines = [
        f"Wrote {what} in {corpus['files']} file(s) into {shards} ({size / 2**20:,.1f} MiB) in {seconds:.1f}s "
        f"(main process RSS {peak / 2**20:,.0f} MiB).",
        f"Metadata and statistics: {output_prefix}.metadata.json"
        + ("." if "documents" in stats else f" (python -m albert_tf.data_stats {output_prefix} for the full report)."),
    ]
    if "heldout" in metadata:
        heldout = os.path.join(os.path.dirname(output_prefix), metadata["heldout"]["output_file"])
        lines.append(f"Held out every {metadata['heldout']['every']}th document of each file: {heldout}-* "
                     f"(instances, once each), for run_pretraining --eval_input_file={heldout}.")
    from albert_tf.data.corpus_reader import CorpusStats

    problems = CorpusStats(skipped_files=corpus["skipped_files"], documents_cut=corpus["documents_cut"])
    problems.skipped_lines.update(corpus["skipped_lines"])
    lines += [f"  {problem}" for problem in problems.problems()]
    if stats.get("skipped_chunks"):
        lines.append(f"  skipped {stats['skipped_chunks']:,} one-token chunk(s) that cannot form a pair")
    return lines


def main(argv):
    del argv
    from albert_tf.data.corpus_reader import expand_input_patterns

    FLAGS = flags.FLAGS
    for name in ("input_file", "output_file", "spm_model_file"):
        if not FLAGS[name].value:
            raise ValueError(f"--{name} is required")
    config = config_from_flags(FLAGS)
    paths = expand_input_patterns(FLAGS.input_file)
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    start = time.time()
    metadata = create_pretraining_data(paths, FLAGS.output_file, FLAGS.spm_model_file, config,
                                       num_workers=FLAGS.num_workers, overwrite=FLAGS.overwrite)
    print("\n".join(summary_lines(metadata, FLAGS.output_file, time.time() - start)))
    return 0


def console_main():
    """The `albert-create-pretraining-data` console script."""
    cli.run(main, define_flags, uses_tensorflow=False)


if __name__ == "__main__":
    console_main()
