"""Runs a tool as the workers of one MultiWorkerMirroredStrategy cluster, each its own process.

Ports: each cluster's addresses come from below the kernel's ephemeral port range, from a block of its own
for each pytest-xdist worker, and are checked free. A port from bind(("localhost", 0)) is released before
TensorFlow binds it again, and that range is where the kernel hands out ports to every other socket, so a
concurrent test's cluster (or any outgoing connection) could take it meanwhile: two clusters sharing a port
connect each other's workers, or one worker fails to start and leaves its peer waiting for it forever.

Waiting: a worker that failed leaves its peers blocked in a collective, so as soon as one exits non-zero the
others are killed, and at the timeout all are; the failure shows every worker's stderr.
"""

import json
import os
import pathlib
import random
import socket
import subprocess
import time

import pytest

LOWEST_PORT = 10000
BLOCKS = 8  # pytest-xdist workers that get a block of their own; more share them, checked free either way


def ephemeral_port_floor():
    """The lowest port the kernel picks for bind(0) and outgoing connections (Linux; 49152 elsewhere)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152  # the IANA dynamic range, which macOS and Windows use


def port_is_free(port):
    with socket.socket() as s:  # no SO_REUSEADDR: a port still in TIME_WAIT counts as taken
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def cluster_ports(count):
    """`count` distinct free ports from this pytest-xdist worker's block below the ephemeral range."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    block = (ephemeral_port_floor() - LOWEST_PORT) // BLOCKS
    first = LOWEST_PORT + (int(worker) % BLOCKS if worker.isdigit() else 0) * block
    ports = []
    for port in random.Random().sample(range(first, first + block), 200):  # not the last cluster's, just released
        if port_is_free(port):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise AssertionError(f"fewer than {count} free ports among 200 tried in {first}..{first + block - 1}")


def start_logged(args, log, env, cwd):
    """Starts `args` with stdout and stderr into `log`.out and `log`.err: a worker blocked on a full pipe while
    its peer waits for it in a collective would hang both."""
    with open(f"{log}.out", "w") as out, open(f"{log}.err", "w") as err:
        return subprocess.Popen(args, stdout=out, stderr=err, text=True, env=env, cwd=cwd)


def finish_workers(processes, logs, timeout):
    """The workers' stdouts once all exited 0; fails as soon as one did not, or at `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        codes = [process.poll() for process in processes]
        failed = any(code not in (None, 0) for code in codes)
        if not failed and None not in codes:
            return [pathlib.Path(f"{log}.out").read_text() for log in logs]
        if failed or time.monotonic() > deadline:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                process.wait()
            ends = [f"exit code {code}" if code is not None else "killed, a peer having failed" if failed
                    else "killed at the timeout" for code in codes]
            reports = [f"worker {index} {end}:\n{pathlib.Path(f'{log}.err').read_text()[-3000:]}"
                       for index, (end, log) in enumerate(zip(ends, logs))]
            pytest.fail(f"a worker {'failed' if failed else f'ran past {timeout} s'}\n" + "\n".join(reports))
        time.sleep(0.2)


def run_cluster(commands, logs, environment, cwd, timeout):
    """Runs commands[i] as worker i of one cluster (TF_CONFIG added by `environment(TF_CONFIG=...)`); returns
    their stdouts after checking every worker succeeded."""
    cluster = {"worker": [f"localhost:{port}" for port in cluster_ports(len(commands))]}
    processes = []
    try:
        for index, (args, log) in enumerate(zip(commands, logs)):
            tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
            processes.append(start_logged(args, log, environment(TF_CONFIG=tf_config), cwd))
    except BaseException:
        for process in processes:
            process.kill()
        raise
    return finish_workers(processes, logs, timeout)
