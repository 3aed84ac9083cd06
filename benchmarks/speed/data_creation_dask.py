r"""Pretraining data at scale: the local tool vs the Beam pipeline on a Dask cluster, at several corpus sizes.

  python -m benchmarks.speed.data_creation_dask [--sizes=24,240,960] \
      [--corpus=../shared/data/corpus_large/corpus_paragraphs.txt.gz] \
      [--spm_model_file=../shared/data/albert_base_v2_release/30k-clean.model]

For each of --sizes (MB of text) a corpus is made from --corpus: below its
size, its first whole documents up to that many MB; a whole multiple of it,
that many copies of it as files of their own (960 MB: the 240 MB corpus four
times over, four files, each numbered and so masked as a file of its own).
`python -m albert_tf.create_pretraining_data --num_workers=2` and `python -m
pipelines.create_pretraining_data` on Beam's Dask runner read it with the same
vocabulary and flags. A fresh Dask cluster is started for each size, on the
loopback interface, as it would be on machines of its own: `dask scheduler`
and two `dask worker` processes of one thread each (each under its nanny).
Seconds are each tool's wall time (the cluster is up before and after);
memory is the peak resident set, sampled every 50 ms, of the tool's process
tree plus, for Dask, the scheduler's and the workers' (the idle cluster's and
each process's own peak are given beside it). The outputs are compared byte
for byte (SHA-256 of every file).

The goals it judges: Dask's peak memory at the largest size within 1.25x of
its peak at the smallest (memory that does not grow with the corpus); Dask's
seconds per MB within 1.5x of the local runner's on the same cores, at the
largest size; the same bytes at every size.
"""

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading

import psutil

from benchmarks.common import (
    REPO,
    RESULTS,
    SHARED_DATA,
    child_env,
    cpu_description,
    markdown_table,
    module_command,
    run_measured,
    tree_rss,
    write_results,
)

DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"
LARGE_CORPUS = os.path.join(SHARED_DATA, "corpus_large", "corpus_paragraphs.txt.gz")
OFFICIAL_VOCABULARY = os.path.join(SHARED_DATA, "albert_base_v2_release", "30k-clean.model")


def corpus_slice(corpus, max_mb, output):
    """The first whole documents of `corpus` (gzip read decompressed) up to `max_mb` MB, as a text file."""
    opener = gzip.open if corpus.endswith(".gz") else open
    limit, size = max_mb * 1e6, 0
    with opener(corpus, "rt", encoding="utf-8") as lines, open(output, "w", encoding="utf-8") as out:
        for line in lines:
            if size >= limit and not line.strip():  # a blank line ends a document
                break
            out.write(line)
            size += len(line.encode("utf-8"))
    return output


def text_mb(path):
    """The size of a text file in MB (of a .gz file, decompressed)."""
    if not path.endswith(".gz"):
        return os.path.getsize(path) / 1e6
    size = 0
    with gzip.open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            size += len(chunk)
    return size / 1e6


def corpus_of_size(corpus, corpus_mb, size_mb, directory):
    """(input files, their MB of text) holding `size_mb` MB of text from `corpus` (of `corpus_mb` MB): its first
    whole documents below its size, `size_mb / corpus_mb` copies of it (links, as files of their own) at a whole
    multiple."""
    os.makedirs(directory, exist_ok=True)
    copies = round(size_mb / corpus_mb)
    if copies >= 1 and abs(size_mb - copies * corpus_mb) <= 0.01 * size_mb:
        suffix = ".txt.gz" if corpus.endswith(".gz") else ".txt"
        paths = [os.path.join(directory, f"corpus-{copy}{suffix}") for copy in range(copies)]
        for path in paths:
            os.symlink(os.path.abspath(corpus), path)
        return paths, copies * corpus_mb
    if size_mb > corpus_mb:
        raise SystemExit(f"--sizes: {size_mb:g} MB is neither below the corpus's {corpus_mb:.1f} MB nor a whole "
                         "multiple of it")
    prefix = corpus_slice(corpus, size_mb, os.path.join(directory, "corpus.txt"))
    return [prefix], text_mb(prefix)


class LoopbackCluster:
    """A dask.distributed scheduler and `workers` single-threaded workers, as processes listening on 127.0.0.1."""

    def __init__(self, work, workers, env):
        import distributed

        scheduler_file = os.path.join(work, "scheduler.json")
        self.log = open(os.path.join(work, "cluster.log"), "w")
        self.processes = {}  # name: Popen
        try:
            self._start("scheduler", ["scheduler", "--host=127.0.0.1", "--port=0", "--no-dashboard",
                                      "--dashboard-address=127.0.0.1:0", f"--scheduler-file={scheduler_file}"], env)
            for worker in range(workers):
                self._start(f"worker-{worker}", [
                    "worker", f"--scheduler-file={scheduler_file}", "--host=127.0.0.1", "--nthreads=1",
                    "--no-dashboard", f"--name=worker-{worker}",
                    f"--local-directory={os.path.join(work, f'worker-{worker}')}"], env)
            with distributed.Client(scheduler_file=scheduler_file, timeout=120) as client:
                client.wait_for_workers(workers, timeout=120)
                self.address = client.scheduler.address
        except BaseException:
            self.close()
            raise

    def _start(self, name, arguments, env):
        self.processes[name] = subprocess.Popen(module_command("dask", *arguments), env=env, stdout=self.log,
                                                stderr=subprocess.STDOUT)

    def psutil_processes(self):
        """{name: psutil.Process} of the scheduler and each worker (its nanny; the worker is its child)."""
        return {name: psutil.Process(process.pid) for name, process in self.processes.items()}

    def rss(self):
        return sum(tree_rss(process) for process in self.psutil_processes().values())

    def close(self):
        for process in reversed(list(self.processes.values())):  # workers first, then the scheduler
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.log.close()


class PeakPerProcess:
    """Samples, every `interval` s while open, the resident memory of each of `processes` ({name:
    psutil.Process}) with its descendants; `peaks_mb()`: each one's peak in MiB."""

    def __init__(self, processes, interval=0.05):
        self.processes, self.interval = processes, interval
        self.peaks = dict.fromkeys(processes, 0)
        self.done = threading.Event()
        self.sampler = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self.done.is_set():
            for name, process in self.processes.items():
                self.peaks[name] = max(self.peaks[name], tree_rss(process))
            self.done.wait(self.interval)

    def __enter__(self):
        self.sampler.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.sampler.join()

    def peaks_mb(self):
        return {name: peak / 2**20 for name, peak in self.peaks.items()}


def output_files(prefix):
    """{file name: (size, sha256)} of the shards and metadata a run wrote under `prefix`."""
    directory, stem = os.path.split(prefix)
    files = {}
    for name in sorted(os.listdir(directory)):
        if name.startswith(stem):
            with open(os.path.join(directory, name), "rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
            files[name] = (os.path.getsize(os.path.join(directory, name)), digest)
    return files


def measured_row(runner, run, prefix, corpus_mb, seconds, peak, keep):
    """A result row: what the run at `prefix` wrote (its files' sizes and SHA-256), time and peak memory; the
    outputs are deleted unless `keep` (960 MB of text makes 8 GB of them)."""
    with open(prefix + ".metadata.json") as f:
        instances = json.load(f)["statistics"]["instances"]
    files = output_files(prefix)
    if not keep:
        shutil.rmtree(os.path.dirname(prefix))
    output_mib = sum(size for name, (size, _) in files.items() if ".tfrecord" in name) / 2**20
    return {"runner": runner, "run": run, "corpus_mb": corpus_mb, "instances": instances, "seconds": seconds,
            "seconds_per_mb": seconds / corpus_mb, "peak_rss_mb": peak / 2**20, "output_mib": output_mib,
            "files": files}


def judged_goals(rows):
    """[(goal, measured, met)] of the rows of every size: Dask's peak memory at the largest size within 1.25x of
    its peak at the smallest, its seconds per MB at the largest size within 1.5x of the local runner's, and the
    same bytes at every size."""
    dask = sorted((row for row in rows if row["runner"] == "dask"), key=lambda row: row["corpus_mb"])
    local = {row["corpus_mb"]: row for row in rows if row["runner"] == "local"}
    smallest, largest = dask[0], dask[-1]
    memory = largest["peak_rss_mb"] / smallest["peak_rss_mb"]
    speed = largest["seconds_per_mb"] / local[largest["corpus_mb"]]["seconds_per_mb"]
    same = [row["same_bytes"] for row in dask]
    return [
        (f"Dask peak memory at {largest['corpus_mb']:,.1f} MB within 1.25x of its peak at "
         f"{smallest['corpus_mb']:,.1f} MB", f"{memory:.2f}x ({largest['peak_rss_mb']:,.0f} / "
                                            f"{smallest['peak_rss_mb']:,.0f} MiB)", memory <= 1.25),
        (f"Dask seconds per MB within 1.5x of the local runner's at {largest['corpus_mb']:,.1f} MB",
         f"{speed:.2f}x ({largest['seconds_per_mb']:.2f} / {local[largest['corpus_mb']]['seconds_per_mb']:.2f} s/MB)",
         speed <= 1.5),
        ("the local runner's bytes at every size", f"{sum(same)} of {len(same)} sizes", all(same)),
    ]


def measure_size(args, size_mb, corpus_mb_whole, work, env):
    """The local runner's row and Dask's for a corpus of `size_mb` MB."""
    inputs, corpus_mb = corpus_of_size(args.corpus, corpus_mb_whole, size_mb, os.path.join(work, "corpus"))
    common = [f"--input_file={','.join(inputs)}", "--input_format=paragraphs",
              f"--spm_model_file={args.spm_model_file}", f"--max_seq_length={args.max_seq_length}",
              f"--max_predictions_per_seq={args.max_predictions_per_seq}", f"--dupe_factor={args.dupe_factor}",
              f"--num_output_shards={args.num_output_shards}"]
    keep = bool(args.work_dir)

    local = os.path.join(work, "local", "data")
    seconds, peak, _, _ = run_measured(
        module_command("albert_tf.create_pretraining_data", f"--output_file={local}", f"--num_workers={args.workers}",
                       *common), env=env, cwd=REPO)
    local_row = measured_row("local", f"albert_tf local runner, --num_workers={args.workers}", local, corpus_mb,
                             seconds, peak, keep)
    local_row["same_bytes"] = None  # the reference
    print(f"{corpus_mb:,.1f} MB, local runner: {seconds:.1f} s, peak {peak / 2**20:,.0f} MiB", flush=True)

    cluster = LoopbackCluster(work, args.workers, env)
    try:
        idle = cluster.rss()
        on_dask = os.path.join(work, "dask", "data")
        with PeakPerProcess(cluster.psutil_processes()) as per_process:
            seconds, peak, _, _ = run_measured(
                module_command("pipelines.create_pretraining_data", f"--runner={DASK_RUNNER}",
                               f"--dask_client_address={cluster.address}", "--dask_partition_size=1",
                               f"--readers_per_file={args.readers_per_file}", f"--output_file={on_dask}", *common),
                env=env, cwd=REPO, also=list(cluster.psutil_processes().values()))
    finally:
        cluster.close()
    dask_row = measured_row("dask", f"Beam on Dask: scheduler + {args.workers} workers, --readers_per_file="
                                    f"{args.readers_per_file}", on_dask, corpus_mb, seconds, peak, keep)
    dask_row["idle_cluster_rss_mb"] = idle / 2**20
    dask_row["peak_rss_mb_by_process"] = per_process.peaks_mb()
    dask_row["same_bytes"] = dask_row["files"] == local_row["files"]
    print(f"{corpus_mb:,.1f} MB, Dask: {seconds:.1f} s, peak {peak / 2**20:,.0f} MiB (idle cluster "
          f"{idle / 2**20:,.0f} MiB), same bytes: {dask_row['same_bytes']}", flush=True)
    if not keep:
        shutil.rmtree(os.path.join(work, "corpus"))
    return [local_row, dask_row]


def table(rows):
    lines = []
    local = {row["corpus_mb"]: row for row in rows if row["runner"] == "local"}
    for r in rows:
        base = local[r["corpus_mb"]]
        memory = f"{r['peak_rss_mb']:,.0f}"
        if r["runner"] == "dask":
            workers = [peak for name, peak in r["peak_rss_mb_by_process"].items() if name.startswith("worker")]
            memory += (f" (idle cluster {r['idle_cluster_rss_mb']:,.0f}; each worker <= {max(workers):,.0f}, "
                       f"scheduler {r['peak_rss_mb_by_process']['scheduler']:,.0f})")
        same = "(reference)" if r["same_bytes"] is None else ("yes" if r["same_bytes"] else "NO")
        lines.append([r["run"], f"{r['corpus_mb']:,.1f}", f"{r['instances']:,}", f"{r['seconds']:.1f}",
                      f"{r['seconds_per_mb']:.2f}", f"{r['seconds_per_mb'] / base['seconds_per_mb']:.2f}x", memory,
                      f"{r['output_mib']:,.1f}", same])
    return markdown_table(["run", "corpus MB", "instances", "seconds", "s/MB", "s/MB vs local", "peak RSS MiB",
                           "output MiB", "same bytes as local"], lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="24,240,960",
                        help="corpus sizes in MB of text, comma-separated: below --corpus's size, its first whole "
                             "documents; a whole multiple of it, that many copies as files (default 24,240,960)")
    parser.add_argument("--corpus", default=LARGE_CORPUS,
                        help="paragraph-per-line corpus (.gz read as is), documents separated by blank lines "
                             "(default: the 240 MB corpus of ../shared/data)")
    parser.add_argument("--spm_model_file", default=OFFICIAL_VOCABULARY,
                        help="SentencePiece model (default: Google's 30k-clean.model of ALBERT v2)")
    parser.add_argument("--max_seq_length", type=int, default=128, help="tokens per instance (default 128)")
    parser.add_argument("--max_predictions_per_seq", type=int, default=20,
                        help="masked positions per instance (default 20)")
    parser.add_argument("--dupe_factor", type=int, default=5, help="times each document is masked (default 5)")
    parser.add_argument("--num_output_shards", type=int, default=8, help="output files (default 8)")
    parser.add_argument("--workers", type=int, default=2,
                        help="local tool's --num_workers and Dask worker processes (default 2)")
    parser.add_argument("--readers_per_file", type=int, default=4,
                        help="the Beam pipeline's --readers_per_file: Dask tasks that share each file (default 4)")
    parser.add_argument("--work_dir", help="keeps the corpora, outputs and cluster logs here, under one folder per "
                                           "size (default: a temporary directory, removed after)")
    parser.add_argument("--json", help="writes the results here (default: RESULTS_DIR/data_creation_dask.json)")
    parser.add_argument("--results_dir", default=RESULTS, help="writes data_creation_dask.md (the table) here")
    args = parser.parse_args(argv)
    sizes = sorted(float(size) for size in args.sizes.split(","))

    env = child_env(TF_CPP_MIN_LOG_LEVEL="3")
    corpus_mb = text_mb(args.corpus)
    work = args.work_dir or tempfile.mkdtemp(prefix="data_creation_dask-")
    os.makedirs(work, exist_ok=True)
    rows = []
    try:
        for size in sizes:
            rows += measure_size(args, size, corpus_mb, os.path.join(work, f"{size:g}MB"), env)
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)

    goals = judged_goals(rows)
    text = (f"max_seq_length {args.max_seq_length}, max_predictions_per_seq {args.max_predictions_per_seq}, "
            f"dupe_factor {args.dupe_factor}, {args.num_output_shards} output shards, vocabulary "
            f"{os.path.basename(args.spm_model_file)}, corpora from {os.path.basename(args.corpus)} "
            f"({corpus_mb:,.1f} MB); {cpu_description()}\n\n" + table(rows) + "\n\n"
            + markdown_table(["goal", "measured", "met"], [[goal, measured, "yes" if met else "NO"]
                                                           for goal, measured, met in goals]) + "\n")
    record = {"rows": rows,
              "goals": [{"goal": goal, "measured": measured, "met": met} for goal, measured, met in goals]}
    write_results(args.results_dir, "data_creation_dask", text, record=record, json_path=args.json)


if __name__ == "__main__":
    main()
