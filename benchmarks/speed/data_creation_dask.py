r"""Pretraining data at scale: the local tool vs the Beam pipeline on a Dask cluster, same corpus and flags.

  python -m benchmarks.speed.data_creation_dask \
      [--corpus=../shared/data/corpus_large/corpus_paragraphs.txt.gz] [--max_mb=20] \
      [--spm_model_file=../shared/data/albert_base_v2_release/30k-clean.model]

`python -m albert_tf.create_pretraining_data --num_workers=2` and `python -m
pipelines.create_pretraining_data` on Beam's Dask runner read the same corpus
with the same vocabulary and flags. The Dask cluster is started here, on the
loopback interface, as it would be on machines of its own: `dask scheduler`
and two `dask worker` processes of one thread each (each under its nanny).
Seconds are each tool's wall time (the cluster is up before and after);
memory is the peak resident set, sampled every 50 ms, of the tool's process
tree plus, for Dask, the scheduler's and the workers' (the idle cluster's is
given beside it). The two outputs are compared byte for byte. --max_mb takes
the corpus's first whole documents up to that many MB, to time a slice first.
"""

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

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


class LoopbackCluster:
    """A dask.distributed scheduler and `workers` single-threaded workers, as processes listening on 127.0.0.1."""

    def __init__(self, work, workers, env):
        import distributed

        scheduler_file = os.path.join(work, "scheduler.json")
        self.log = open(os.path.join(work, "cluster.log"), "w")
        self.processes = []
        try:
            self._start(["scheduler", "--host=127.0.0.1", "--port=0", "--no-dashboard",
                         "--dashboard-address=127.0.0.1:0", f"--scheduler-file={scheduler_file}"], env)
            for worker in range(workers):
                self._start(["worker", f"--scheduler-file={scheduler_file}", "--host=127.0.0.1", "--nthreads=1",
                             "--no-dashboard", f"--name=worker-{worker}",
                             f"--local-directory={os.path.join(work, f'worker-{worker}')}"], env)
            with distributed.Client(scheduler_file=scheduler_file, timeout=120) as client:
                client.wait_for_workers(workers, timeout=120)
                self.address = client.scheduler.address
        except BaseException:
            self.close()
            raise

    def _start(self, arguments, env):
        self.processes.append(subprocess.Popen(module_command("dask", *arguments), env=env, stdout=self.log,
                                               stderr=subprocess.STDOUT))

    def rss(self):
        return sum(tree_rss(psutil.Process(process.pid)) for process in self.processes)

    def close(self):
        for process in reversed(self.processes):  # workers first, then the scheduler
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.log.close()


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


def summarize(run, prefix, corpus_mb, seconds, peak):
    with open(prefix + ".metadata.json") as f:
        instances = json.load(f)["statistics"]["instances"]
    files = output_files(prefix)
    output_mb = sum(size for name, (size, _) in files.items() if ".tfrecord" in name) / 2**20
    return {"run": run, "corpus_mb": corpus_mb, "instances": instances, "seconds": seconds,
            "peak_rss_mb": peak / 2**20, "output_mib": output_mb, "files": files}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=LARGE_CORPUS,
                        help="paragraph-per-line corpus (.gz read as is), documents separated by blank lines "
                             "(default: the 240 MB corpus of ../shared/data)")
    parser.add_argument("--max_mb", type=float, default=0,
                        help="only the corpus's first whole documents up to this many MB (default 0: all of it)")
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
    parser.add_argument("--work_dir", help="keeps the corpus slice, outputs and cluster log here (default: a "
                                           "temporary directory, removed after)")
    parser.add_argument("--json", help="writes the results here (default: RESULTS_DIR/data_creation_dask.json)")
    parser.add_argument("--results_dir", default=RESULTS, help="writes data_creation_dask.md (the table) here")
    args = parser.parse_args(argv)

    env = child_env(TF_CPP_MIN_LOG_LEVEL="3")
    work = args.work_dir or tempfile.mkdtemp(prefix="data_creation_dask-")
    os.makedirs(work, exist_ok=True)
    try:
        corpus = corpus_slice(args.corpus, args.max_mb, os.path.join(work, "corpus.txt")) if args.max_mb else args.corpus
        corpus_mb = text_mb(corpus)
        common = [f"--input_file={corpus}", "--input_format=paragraphs", f"--spm_model_file={args.spm_model_file}",
                  f"--max_seq_length={args.max_seq_length}",
                  f"--max_predictions_per_seq={args.max_predictions_per_seq}", f"--dupe_factor={args.dupe_factor}",
                  f"--num_output_shards={args.num_output_shards}"]
        results = []

        local = os.path.join(work, "local", "data")
        seconds, peak, _, _ = run_measured(
            module_command("albert_tf.create_pretraining_data", f"--output_file={local}",
                           f"--num_workers={args.workers}", *common), env=env, cwd=REPO)
        results.append(summarize(f"albert_tf local runner, --num_workers={args.workers}", local, corpus_mb, seconds,
                                 peak))
        print(f"local runner: {seconds:.1f} s, peak {peak / 2**20:,.0f} MiB", flush=True)

        cluster = LoopbackCluster(work, args.workers, env)
        try:
            idle = cluster.rss()
            on_dask = os.path.join(work, "dask", "data")
            seconds, peak, _, _ = run_measured(
                module_command("pipelines.create_pretraining_data", f"--runner={DASK_RUNNER}",
                               f"--dask_client_address={cluster.address}", "--dask_partition_size=1",
                               f"--readers_per_file={args.readers_per_file}", f"--output_file={on_dask}", *common),
                env=env, cwd=REPO, also=[psutil.Process(process.pid) for process in cluster.processes])
        finally:
            cluster.close()
        row = summarize(f"Beam on Dask: scheduler + {args.workers} workers, --readers_per_file="
                        f"{args.readers_per_file}", on_dask, corpus_mb, seconds, peak)
        row["idle_cluster_rss_mb"] = idle / 2**20
        results.append(row)
        print(f"Dask: {seconds:.1f} s, peak {peak / 2**20:,.0f} MiB (idle cluster {idle / 2**20:,.0f} MiB)",
              flush=True)
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)

    base = results[0]
    rows = []
    for r in results:
        same = "(reference)" if r is base else ("yes" if r["files"] == base["files"] else "NO")
        memory = f"{r['peak_rss_mb']:,.0f}" + (f" (idle cluster {r['idle_cluster_rss_mb']:,.0f})"
                                                if "idle_cluster_rss_mb" in r else "")
        rows.append([r["run"], f"{r['corpus_mb']:.1f}", f"{r['instances']:,}", f"{r['seconds']:.1f}",
                     f"{r['instances'] / r['seconds']:,.0f}", f"{base['seconds'] / r['seconds']:.2f}x", memory,
                     f"{r['peak_rss_mb'] / base['peak_rss_mb']:.2f}x", f"{r['output_mib']:,.1f}", same])
    text = (f"max_seq_length {args.max_seq_length}, max_predictions_per_seq {args.max_predictions_per_seq}, "
            f"dupe_factor {args.dupe_factor}, {args.num_output_shards} output shards, vocabulary "
            f"{os.path.basename(args.spm_model_file)}; {cpu_description()}\n\n"
            + markdown_table(["run", "corpus MB", "instances", "seconds", "instances/s", "speed vs local",
                              "peak RSS MiB", "memory vs local", "output MiB", "same bytes as local"], rows) + "\n")
    write_results(args.results_dir, "data_creation_dask", text, record=results, json_path=args.json)


if __name__ == "__main__":
    main()
