"""The Beam pipeline on a distributed engine: a Dask cluster (a scheduler and two worker processes, on this
machine's loopback as they would be on many machines) writes the bytes of Beam's local runner."""

import os
import subprocess
import sys

import pytest

distributed = pytest.importorskip("distributed", reason="Beam's Dask runner needs apache-beam[dask] "
                                                        "(requirements-dev.txt installs it)")
import apache_beam as beam  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402
from apache_beam.runners.runner import PipelineState  # noqa: E402

from albert_tf.data.masking import MaskingConfig  # noqa: E402
from albert_tf.data.pretraining_data_job import CreationConfig  # noqa: E402
from albert_tf.data.pretraining_instances import InstanceConfig  # noqa: E402
from pipelines.create_pretraining_data import build_pipeline  # noqa: E402
from text_fixtures import corpus_files_and_vocabulary  # noqa: E402

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


@pytest.fixture(scope="module")
def dask_cluster():
    """A scheduler and two single-threaded worker processes, listening on 127.0.0.1 only (the scheduler's HTTP
    routes on a free port, no dashboard); shut down after the module's tests, passed or failed."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
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
