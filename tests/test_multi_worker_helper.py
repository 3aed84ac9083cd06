"""The helper that runs the tests' worker clusters: ports that no concurrent cluster or outgoing connection is
handed, and a worker that failed stops its peers at once (they would wait for it forever) with its stderr shown."""

import signal
import sys

import pytest

from multi_worker import cluster_ports, ephemeral_port_floor, finish_workers, port_is_free, start_logged


def test_cluster_ports_are_distinct_free_and_below_the_ephemeral_range():
    ports = cluster_ports(4)
    assert len(set(ports)) == 4
    assert all(1024 < port < ephemeral_port_floor() and port_is_free(port) for port in ports)


def test_a_failed_worker_kills_its_waiting_peer_and_shows_its_stderr(tmp_path):
    commands = [[sys.executable, "-c", "import sys; sys.exit('Could not start gRPC server')"],
                [sys.executable, "-c", "import time; time.sleep(600)"]]  # a peer waiting in a collective
    logs = [tmp_path / "failing", tmp_path / "waiting"]
    processes = [start_logged(args, log, env=None, cwd=tmp_path) for args, log in zip(commands, logs)]
    reported = "worker 0 exit code 1:\nCould not start gRPC server\n+worker 1 killed, a peer having failed"
    with pytest.raises(pytest.fail.Exception, match=reported):
        finish_workers(processes, logs, timeout=600)
    assert processes[1].returncode == -signal.SIGKILL


def test_workers_past_the_timeout_are_killed(tmp_path):
    logs = [tmp_path / "slow"]
    processes = [start_logged([sys.executable, "-c", "import time; time.sleep(600)"], logs[0], None, tmp_path)]
    with pytest.raises(pytest.fail.Exception, match="ran past 1 s\nworker 0 killed at the timeout"):
        finish_workers(processes, logs, timeout=1)
    assert processes[0].returncode == -signal.SIGKILL


def test_workers_that_succeed_return_their_stdouts(tmp_path):
    logs = [tmp_path / f"worker{index}" for index in range(2)]
    processes = [start_logged([sys.executable, "-c", f"print('worker {index}')"], log, None, tmp_path)
                 for index, log in enumerate(logs)]
    assert finish_workers(processes, logs, timeout=600) == ["worker 0\n", "worker 1\n"]
