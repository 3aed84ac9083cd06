"""Test-session set-up that must happen before TensorFlow runs any op."""

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# Deterministic kernels, so runs that should match bit for bit do.
os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")

import pytest  # noqa: E402

from albert_tf.cli import import_tensorflow_quietly  # noqa: E402

# TensorFlow's C++ side prints start-up lines to fd 2 before its log level applies; pytest's capture hides
# them in a plain run, not in pytest-xdist's controller process.
import_tensorflow_quietly()
import tensorflow as tf  # noqa: E402

# MirroredStrategy tests need two CPU devices; logical devices can only be
# configured before the runtime initializes.
_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(_cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def two_cpu_strategy():
    """MirroredStrategy over the two logical CPU devices: one for the whole session, since every new
    MirroredStrategy over the same devices numbers its collective ops from the same keys, and a second
    one's all-reduce would meet the first one's of another shape."""
    devices = [device.name for device in tf.config.list_logical_devices("CPU")]
    assert len(devices) == 2, "the CPU is split into two logical devices above"
    return tf.distribute.MirroredStrategy(devices)
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data():
    """../shared/data when present (real public data); tests using it skip otherwise."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} not present")
    return SHARED_DATA


@pytest.fixture
def umask_022():
    """The usual umask for the test, whatever the runner's: file modes are asserted against it."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.fixture(autouse=True, scope="module")
def release_memory_after_each_file():
    """What a test file made and no longer holds is given back before the next file, so that a pytest worker's
    memory does not grow with the files it has run: Keras's global state and TensorFlow's kernel cache are
    cleared (keras.backend.clear_session, which also collects garbage), and the C heap's free pages are returned
    to the system (glibc keeps them otherwise)."""
    yield
    import ctypes
    import ctypes.util

    import keras

    keras.backend.clear_session()
    libc = ctypes.util.find_library("c")
    if libc and hasattr(ctypes.CDLL(libc), "malloc_trim"):
        ctypes.CDLL(libc).malloc_trim(0)


def pytest_runtest_logfinish(nodeid, location):
    """With ALBERT_TF_TEST_MEMORY=DIR, each worker appends every test's resident and peak memory (MiB) to
    DIR/memory-PID.tsv: where the suite's memory goes, test by test."""
    directory = os.environ.get("ALBERT_TF_TEST_MEMORY")
    if not directory:
        return
    import resource

    import psutil

    resident = psutil.Process().memory_info().rss / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open(os.path.join(directory, f"memory-{os.getpid()}.tsv"), "a") as f:
        f.write(f"{nodeid}\t{resident:.0f}\t{peak:.0f}\n")
