"""The Beam pipeline on a distributed engine: a Dask cluster (a scheduler and two worker processes, on this
machine's loopback as they would be on many machines) writes the bytes of Beam's local runner."""

import dataclasses
import os
import signal
import subprocess
import sys
import time

import pytest

distributed = pytest.importorskip("distributed", reason="Beam's Dask runner needs apache-beam[dask] "
                                                        "(requirements-dev.txt installs it)")
import apache_beam as beam  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402
from apache_beam.runners.runner import PipelineState  # noqa: E402

from albert_tf.data.local_runner import create_pretraining_data  # noqa: E402
from albert_tf.data.masking import MaskingConfig  # noqa: E402
from albert_tf.data.pretraining_data_job import CreationConfig  # noqa: E402
from albert_tf.data.pretraining_instances import InstanceConfig  # noqa: E402
from pipelines.create_pretraining_data import build_pipeline  # noqa: E402
from text_fixtures import corpus_files_and_vocabulary, write_corpus  # noqa: E402

DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"
# Both output sets (training and held-out), compressed shards.
CONFIG = CreationConfig(
    instances=InstanceConfig(max_seq_length=64, dupe_factor=2, masking=MaskingConfig(max_predictions_per_seq=10)),
    num_output_shards=4,
    compression="gzip",
    heldout_every=3,
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return corpus_files_and_vocabulary(tmp_path_factory, "beam_dask")


def loopback_cluster(**scheduler_kwargs):
    """A scheduler and two single-threaded worker processes (each under a nanny, which restarts it if it dies),
    listening on 127.0.0.1 only (the scheduler's HTTP routes on a free port, no dashboard)."""
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                    dashboard_address=None,
                                    scheduler_kwargs={"dashboard_address": "127.0.0.1:0", **scheduler_kwargs})


@pytest.fixture(scope="module")
def dask_cluster():
    """loopback_cluster, shut down after the module's tests, passed or failed."""
    cluster = loopback_cluster()
    try:
        yield cluster
    finally:
        cluster.close()


def outputs(directory):
    return {name: open(os.path.join(directory, name), "rb").read() for name in sorted(os.listdir(directory))}


def test_a_dask_cluster_writes_the_bytes_of_the_local_runner(tmp_path, inputs, dask_cluster):
    paths, spm_model = inputs
    pipeline = beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"]))
    build_pipeline(pipeline, paths, str(tmp_path / "local" / "data"), open(spm_model, "rb").read(), CONFIG)
    assert pipeline.run().wait_until_finish() == PipelineState.DONE

    address = dask_cluster.scheduler_address
    assert address.startswith("tcp://127.0.0.1:")
    with distributed.Client(address) as client, distributed.get_task_stream(client) as task_stream:
        # Two readers per file, each its own Dask task (the runner's default puts 128 elements in one).
        result = subprocess.run(
            [sys.executable, "-m", "pipelines.create_pretraining_data", f"--runner={DASK_RUNNER}",
             f"--dask_client_address={address}", "--dask_partition_size=1", "--readers_per_file=2",
             f"--input_file={','.join(paths)}", f"--output_file={tmp_path / 'dask' / 'data'}",
             f"--spm_model_file={spm_model}", "--max_seq_length=64", "--max_predictions_per_seq=10",
             "--dupe_factor=2", "--num_output_shards=4", "--compression=gzip", "--heldout_every=3"],
            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert f"with the {DASK_RUNNER}" in result.stdout
    local, from_dask = outputs(tmp_path / "local"), outputs(tmp_path / "dask")
    assert "data-heldout-00003-of-00004.tfrecord.gz" in local and "data.metadata.json" in local
    assert list(local) == list(from_dask)
    assert local == from_dask
    # Both worker processes did part of the job.
    assert {task["worker"] for task in task_stream.data} == set(dask_cluster.scheduler_info["workers"])


# --- A worker lost mid-run ------------------------------------------------------------------------------------

# Units of 4 documents (other-document segments come from a unit's pool), 10 per file: each reading task spools
# a unit at a time for a few seconds, so a worker can be killed in the middle of one.
KILL_CONFIG = dataclasses.replace(
    CONFIG, heldout_every=0, num_output_shards=2,
    instances=dataclasses.replace(CONFIG.instances, dupe_factor=10, single_segment="other_document",
                                  random_document_pool=4))
KILL_FLAGS = ["--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=10", "--num_output_shards=2",
              "--compression=gzip", "--single_segment=other_document", "--random_document_pool=4"]


@pytest.fixture(scope="module")
def kill_inputs(tmp_path_factory, inputs):
    """(corpus paths, vocabulary, the local tool's output files) for KILL_CONFIG."""
    directory = tmp_path_factory.mktemp("kill_corpus")
    paths = [str(write_corpus(directory / f"part{i}.txt", num_documents=40, seed=20 + i)) for i in range(2)]
    _, spm_model = inputs
    create_pretraining_data(paths, str(directory / "local" / "data"), spm_model, KILL_CONFIG, progress=False)
    return paths, spm_model, outputs(directory / "local")


def kill_a_busy_worker_once_a_unit_is_spooled(client, output_dir, still_running):
    """SIGKILLs (as the OOM killer would) a worker that is running a task, as soon as the first spool file
    appears under `output_dir`, while `still_running()`; returns its pid."""
    pids = client.run(os.getpid)
    deadline = time.monotonic() + 120
    while True:
        assert still_running(), "the job ended before any spool file appeared"
        assert time.monotonic() < deadline, "no spool file appeared"
        if list(output_dir.glob(".data.beam-temp-*/spool-*")):
            busy = [worker for worker, keys in client.processing().items() if keys]
            if busy:
                break
        time.sleep(0.02)
    assert still_running(), "the job ended before the kill"
    os.kill(pids[busy[0]], signal.SIGKILL)
    return pids[busy[0]]


def wait_until_idle(client, timeout=120):
    """Until no worker runs a task (a task the scheduler gave up on runs to its end on its worker)."""
    deadline = time.monotonic() + timeout
    while any(client.run(lambda dask_worker: dask_worker.state.executing_count).values()):
        assert time.monotonic() < deadline, "the workers never went idle"
        time.sleep(0.1)


@pytest.mark.slow
def test_a_worker_killed_mid_run_costs_a_retry_not_the_bytes(tmp_path, kill_inputs, dask_cluster):
    """The scheduler reruns the tasks the dead worker ran or held; they rewrite the same spool files, and the job
    ends with the local tool's bytes, its spool folder removed."""
    paths, spm_model, local = kill_inputs
    address = dask_cluster.scheduler_address
    pipeline = beam.Pipeline(options=PipelineOptions([f"--runner={DASK_RUNNER}", f"--dask_client_address={address}",
                                                      "--dask_partition_size=1"]))
    build_pipeline(pipeline, paths, str(tmp_path / "data"), open(spm_model, "rb").read(), KILL_CONFIG)
    result = pipeline.run()  # the Dask runner returns while the cluster works
    try:
        with distributed.Client(address) as client:
            victim = kill_a_busy_worker_once_a_unit_is_spooled(
                client, tmp_path, lambda: not all(future.done() for future in result.futures))
            assert result.wait_until_finish() == PipelineState.DONE
            assert victim not in client.run(os.getpid).values()  # its nanny started another
    finally:
        result.client.close()
    assert outputs(tmp_path) == local


@pytest.mark.slow
def test_a_worker_lost_for_good_fails_the_run_in_one_line_and_the_rerun_writes_the_bytes(tmp_path, kill_inputs):
    """A scheduler that allows no retry (allowed_failures=0) fails the task the dead worker ran: the tool says so in
    one line, writes nothing under the output names, and the same command again removes what the run left and
    writes the local tool's bytes."""
    paths, spm_model, local = kill_inputs
    cluster = loopback_cluster(allowed_failures=0)
    try:
        command = [sys.executable, "-m", "pipelines.create_pretraining_data", f"--runner={DASK_RUNNER}",
                   f"--dask_client_address={cluster.scheduler_address}", "--dask_partition_size=1",
                   f"--input_file={','.join(paths)}", f"--output_file={tmp_path / 'data'}",
                   f"--spm_model_file={spm_model}", *KILL_FLAGS]
        with distributed.Client(cluster.scheduler_address) as client:
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            kill_a_busy_worker_once_a_unit_is_spooled(client, tmp_path, lambda: process.poll() is None)
            stdout, stderr = process.communicate(timeout=120)
            assert process.returncode == 1, stdout + stderr
            [error] = [line for line in stderr.splitlines() if "error:" in line]
            assert error.startswith(f"pipelines.create_pretraining_data: error: the {DASK_RUNNER} stopped the job: "
                                    "KilledWorker: "), stderr
            assert "Traceback" not in stderr, stderr
            assert not [name for name in os.listdir(tmp_path) if name.startswith("data")]  # hidden spool folder only
            wait_until_idle(client)
        rerun = subprocess.run(command, capture_output=True, text=True)
        assert rerun.returncode == 0, rerun.stderr
        assert ("Removed 1 temporary file(s) and spool folder(s) left by a run that was stopped, "
                f"e.g. {tmp_path}/.data.beam-temp-") in rerun.stdout
        assert outputs(tmp_path) == local
    finally:
        cluster.close()


def test_the_scaling_benchmark_judges_dask_at_its_largest_size_against_its_smallest_and_the_local_runner():
    from benchmarks.speed.data_creation_dask import judged_goals

    def row(runner, corpus_mb, seconds, peak_rss_mb, same_bytes=None):
        return {"runner": runner, "corpus_mb": corpus_mb, "seconds": seconds, "seconds_per_mb": seconds / corpus_mb,
                "peak_rss_mb": peak_rss_mb, "same_bytes": same_bytes}

    rows = [row("local", 24, 24, 300), row("dask", 24, 60, 1000, True), row("local", 240, 240, 400),
            row("dask", 240, 300, 1100, True), row("local", 960, 960, 500), row("dask", 960, 1400, 1240, True)]
    assert [(measured, met) for _, measured, met in judged_goals(rows)] == [
        ("1.24x (1,240 / 1,000 MiB)", True), ("1.46x (1.46 / 1.00 s/MB)", True), ("3 of 3 sizes", True)]
    rows[-1].update(peak_rss_mb=1260, seconds=1560, seconds_per_mb=1560 / 960)
    rows[3]["same_bytes"] = False
    assert [(measured, met) for _, measured, met in judged_goals(rows)] == [
        ("1.26x (1,260 / 1,000 MiB)", False), ("1.62x (1.62 / 1.00 s/MB)", False), ("2 of 3 sizes", False)]
