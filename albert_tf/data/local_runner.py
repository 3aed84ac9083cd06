"""The local runner of create_pretraining_data: one machine, `num_workers` processes, outputs all or nothing.

Documents are read one at a time and handed to worker processes in small units
(pretraining_data_job.group_into_units); each worker turns its units into records
and spools them to its own files, with the (sort key, file, document, ...) tuples that
make the output independent of the number of workers. At the end every output
set's shards are sorted (in bounded memory: `sorted_records`) and assembled in a
staging directory beside the outputs, and only
then renamed over the old ones: a run that fails or is killed leaves the previous
outputs as they were (their metadata says "incomplete" during the renames).
The Beam pipeline in pipelines/ writes the same bytes from the same job module.
"""

import concurrent.futures
import contextlib
import itertools
import multiprocessing
import operator
import os
import shutil
import signal

from albert_tf.file_utils import make_owned_staging, remove_stale_staging, write_json_atomically
from albert_tf.settings import SettingFileExists

STAGING_PREFIX = ".create_pretraining_data-"
# Examples a shard is sorted by in memory at a time; a larger shard is sorted in runs on disk and merged, so the
# tool's memory stays flat whatever the shard's size (records of a 960 MB corpus's shard took 1.4 GB at once).
SORT_BUDGET_BYTES = 128 << 20
# Python's share of one record held for sorting (its tuple, the sort tuple's integers, the bytes object).
RECORD_OVERHEAD_BYTES = 200
# The most run files one merge reads at once (each open file holds a read buffer).
MERGE_FAN_IN = 256

# A worker process's state, set once by its initializer (ProcessPoolExecutor passes work to module-level
# functions only); in-process runs (num_workers 1) set and clear it around the job.
_worker = {}


def _init_worker(vocabulary, config, spool_directory):
    from albert_tf.data.pretraining_data_job import ShardSpool, UnitProcessor

    if multiprocessing.parent_process() is not None:
        # Ctrl-C in a terminal reaches the workers too: the parent stops the run (and kills them), one line.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker["processor"] = UnitProcessor(vocabulary, config)
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
    """A worker process died (killed by a signal): nothing was written."""


def create_pretraining_data(input_paths, output_prefix, vocabulary, config, num_workers=1, overwrite=False,
                            progress=True):
    """Runs the whole job; returns the metadata dict (also written to PREFIX.metadata.json). `vocabulary`: a
    `vocabularies.Vocabulary`, or the path of a SentencePiece model."""
    from albert_tf.data import data_set_files
    from albert_tf.data import pretraining_data_job as job
    from albert_tf.data.corpus_reader import CorpusStats
    from albert_tf.data.pretraining_instances import InstanceStats
    from albert_tf.progress import Progress
    from albert_tf.text.albert_tokenizer import check_vocabulary_casing
    from albert_tf.text.vocabularies import SENTENCEPIECE, Vocabulary

    if not isinstance(vocabulary, Vocabulary):
        vocabulary = Vocabulary.read(vocabulary, SENTENCEPIECE)
    job.check_vocabulary_settings(config, vocabulary)
    tokenizer = vocabulary.tokenizer(config.lower_case, config.keep_accents, config.rewrite_quotes)
    check_vocabulary_casing(tokenizer, config.lower_case, keep_accents=config.keep_accents)
    sets = job.output_sets(config, output_prefix)
    previous = [job.existing_outputs(prefix) for prefix, _ in sets]
    if any(previous) and not overwrite:
        found = [path for paths in previous for path in paths]
        raise SettingFileExists(f"{found[0]} (and {len(found) - 1} more) exist: choose another "
                                "<output_file|output_prefix> or pass <overwrite>")
    output_dir = os.path.dirname(os.path.abspath(output_prefix))
    os.makedirs(output_dir, exist_ok=True)
    for stale in remove_stale_staging(output_dir, STAGING_PREFIX):
        print(f"Removed {stale}, left by a run that was killed.", flush=True)
    # Progress compares the input files' bytes read with their sizes, both as stored (compressed, for .gz).
    total_bytes = sum(os.path.getsize(path) for path in input_paths)
    corpus_stats = CorpusStats()
    set_stats = [InstanceStats(), InstanceStats()]  # training set, held-out set

    def describe(done, elapsed):
        made = sum(stats.instances for stats in set_stats)
        parts = [f"{done / 1e6:,.1f}/{total_bytes / 1e6:,.1f} MB of input"]
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
            _init_worker(vocabulary, config, staging)
            for unit in units:
                merge(_process_unit(unit))
                meter and meter.update(corpus_stats.file_bytes)
            _worker.pop("spool").close()
        else:
            # concurrent.futures, not multiprocessing.Pool: when a worker dies (SIGKILL, the OOM killer)
            # the executor fails every pending unit with BrokenProcessPool, where a Pool would silently
            # replace the worker and wait forever for the unit it lost.
            pool = concurrent.futures.ProcessPoolExecutor(
                num_workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker,
                initargs=(vocabulary, config, staging))
            in_flight = []
            try:
                for unit in units:
                    # A unit is done when its result is merged: the input read up to it is then done.
                    in_flight.append((pool.submit(_process_unit, unit), corpus_stats.file_bytes))
                    # Bounded: the reader never runs more than two units per worker ahead.
                    while len(in_flight) >= 2 * num_workers:
                        result, done_bytes = in_flight.pop(0)
                        merge(result.result())
                        meter and meter.update(done_bytes)
                for result, done_bytes in in_flight:
                    merge(result.result())
                    meter and meter.update(done_bytes)
            except concurrent.futures.process.BrokenProcessPool:
                raise WorkerDiedError(
                    "a worker process died (killed by a signal, e.g. by the out-of-memory killer); nothing was "
                    f"written to {output_prefix}. Rerun with fewer workers or more memory") from None
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
                with sorted_records(job.spool_files_of(staging, output_set, shard),
                                    os.path.join(staging, f"run-{output_set}-{shard:05d}")) as records:
                    counts.append(job.write_sorted_shard(records, os.path.join(staging, os.path.basename(final_path)),
                                                         config.compression))
            sizes = [os.path.getsize(os.path.join(staging, os.path.basename(path))) for path in final_paths]
            metadata = job.build_metadata(set_config, vocabulary, tokenizer.vocab_size, tokenizer.special_ids,
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
            try:
                spool.close()
            except OSError:
                pass  # its data is being thrown away; what failed the run (a full disk, say) is already raised
        _worker.clear()
        shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def sorted_records(spool_paths, run_prefix, budget_bytes=None):
    """The (sort tuple, example) records of a shard's spool files, in sort order, with bounded memory: read in
    chunks of about `budget_bytes` (SORT_BUDGET_BYTES) of examples, each sorted and written to a run file
    RUN_PREFIX-N, then merged as they are consumed (`merge_spools`, one record of each run in memory; runs past
    MERGE_FAN_IN merged in steps). A shard within one chunk is sorted in memory, as before. The sort tuples are
    unique, so the order, and the shard's bytes, are those of one sort of everything."""
    from albert_tf.data import pretraining_data_job as job

    budget_bytes = SORT_BUDGET_BYTES if budget_bytes is None else budget_bytes
    runs, chunk, size = [], [], 0
    names = itertools.count()

    def write_run(records):
        path = f"{run_prefix}-{next(names)}"
        with open(path, "xb") as f:
            for sort_tuple, data in records:
                f.write(job.spool_record(sort_tuple, data))
        runs.append(path)

    for spool_path in spool_paths:
        with open(spool_path, "rb") as f:
            for record in job.iter_spool(f):
                chunk.append(record)
                size += len(record[1]) + RECORD_OVERHEAD_BYTES
                if size >= budget_bytes:
                    chunk.sort(key=operator.itemgetter(0))
                    write_run(chunk)
                    chunk, size = [], 0
    chunk.sort(key=operator.itemgetter(0))
    if not runs:
        yield iter(chunk)
        return
    if chunk:
        write_run(chunk)
    del chunk
    with contextlib.ExitStack() as files:
        while len(runs) > MERGE_FAN_IN:  # no merge opens more files than a process may
            merged = [files.enter_context(open(path, "rb")) for path in runs[:MERGE_FAN_IN]]
            first, runs = runs[:MERGE_FAN_IN], runs[MERGE_FAN_IN:]
            write_run(job.merge_spools(merged))
            for f in merged:
                f.close()
            for path in first:
                os.remove(path)
        yield job.merge_spools([files.enter_context(open(path, "rb")) for path in runs])
    for path in runs:
        os.remove(path)


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

    lines += [f"  {problem}" for problem in CorpusStats.from_json(corpus).problems()]
    if stats.get("skipped_chunks"):
        lines.append(f"  skipped {stats['skipped_chunks']:,} one-token chunk(s) that cannot form a pair")
    return lines
