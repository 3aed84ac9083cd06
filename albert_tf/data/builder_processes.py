"""Building a document's epoch instances, in the calling thread or in separate processes.

The documents reader (dynamic_instances) runs the data tool's InstanceBuilder on
every document of every epoch. Its per-sequence loops hold Python's GIL, so the
reader's threads do not add up: on a 16-core host, threads built under 39,000
seq-64 instances/s however many there were, where an H200 consumes about 100,000
of albert_small's sequences/s at batch 1024 (benchmarks/speed/accelerator_feed.py).
BuilderProcesses runs the builder in child processes instead, each with its own
GIL; the reader's threads then only hand documents over and wait.

The children are plain `python -m albert_tf.data.builder_processes` programs
speaking length-prefixed pickles over their stdin and stdout, not
multiprocessing workers: those would fork a process that runs TensorFlow's
threads (unsafe), or import the training program's main module, and with it
TensorFlow, in every child. This module needs NumPy and the builder only. A
child exits when its stdin closes, so none outlives the training process.
"""

import atexit
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import traceback

import numpy as np

from albert_tf.data.pretraining_instances import FLOAT_FEATURES, INT_FEATURES, InstanceStats, TokenizedDocument

_LENGTH = struct.Struct("<Q")


def feature_widths(max_seq_length, max_predictions_per_seq):
    """{original feature name: the length of one instance's feature}."""
    widths = {name: max_seq_length for name in INT_FEATURES + FLOAT_FEATURES}
    widths.update({name: max_predictions_per_seq for name in widths if name.startswith("masked_lm")})
    widths["next_sentence_labels"] = 1
    return widths


def epoch_instances(builder, widths, epoch, token_ids, sentence_offsets, document_id):
    """One document's instances in `epoch`: {original feature name: array [n, width]} (int32 ids, float32
    weights), as the data tool writes them at dupe factor 1. `widths`: each feature's length."""
    document = TokenizedDocument(int(document_id[0]), int(document_id[1]), np.asarray(token_ids, np.int32),
                                 np.asarray(sentence_offsets, np.int64))
    batches = list(builder.build(document, [document], InstanceStats(), epoch=int(epoch)))
    features = {}
    for name in INT_FEATURES + FLOAT_FEATURES:
        parts = [ints.get(name, floats.get(name)) for _, ints, floats in batches]
        dtype = np.float32 if name in FLOAT_FEATURES else np.int32
        features[name] = np.concatenate(parts).astype(dtype) if parts else np.zeros((0, widths[name]), dtype)
    return features


def _write(stream, value):
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _read(stream):
    """The next message, or EOFError when the other side has closed the pipe."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        raise EOFError
    data = stream.read(_LENGTH.unpack(header)[0])
    if len(data) < _LENGTH.unpack(header)[0]:
        raise EOFError
    return pickle.loads(data)


class BuilderProcesses:
    """`count` child processes building documents' epoch instances with `builder` (started on first use).

    `instances` may be called from many threads at once (tf.data's map threads): each call takes an idle
    child, sends it the document and waits for its instances, the GIL released while it waits.
    """

    def __init__(self, builder, widths, count):
        if count < 1:
            raise ValueError(f"count must be at least 1, got {count}")
        self._setup = (builder, widths)
        self.count = count
        self._children = []
        self._idle = queue.Queue()
        self._start_lock = threading.Lock()
        self._closed = False

    def _start(self):
        with self._start_lock:
            if self._closed:
                raise RuntimeError("the instance builder processes are closed")
            if self._children:
                return
            package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_parent,
                                                                         os.environ.get("PYTHONPATH")])))
            started = []
            try:
                for _ in range(self.count):
                    started.append(subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                                    stdout=subprocess.PIPE, env=env))
                    try:
                        _write(started[-1].stdin, self._setup)
                    except OSError as error:  # it died at start-up (its stderr, this process's, says why)
                        raise RuntimeError(f"an instance builder process (pid {started[-1].pid}) did not start: "
                                           f"exit code {started[-1].wait()}") from error
            except BaseException:
                for child in started:
                    child.kill()
                    child.wait()
                raise
            self._children = started
            for child in started:
                self._idle.put(child)
            atexit.register(self.close)

    def instances(self, epoch, token_ids, sentence_offsets, document_id):
        """epoch_instances(builder, widths, ...) computed in a child process."""
        if not self._children:
            self._start()
        child = self._idle.get()
        try:
            _write(child.stdin, (epoch, token_ids, sentence_offsets, document_id))
            status, value = _read(child.stdout)
        except (EOFError, BrokenPipeError, OSError) as error:
            code = child.poll()
            raise RuntimeError(f"an instance builder process (pid {child.pid}) stopped"
                               + (f" with exit code {code}" if code is not None else "")) from error
        finally:
            self._idle.put(child)
        if status == "error":
            raise RuntimeError(f"the instance builder failed in process {child.pid}:\n{value}")
        return value

    def close(self):
        """Ends the children (each exits when its stdin closes)."""
        with self._start_lock:
            self._closed = True
            children, self._children = self._children, []
        for child in children:
            try:
                child.stdin.close()
            except OSError:
                pass
        for child in children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            child.stdout.close()


def serve(requests, replies):
    """A child's loop: the (builder, widths) message, then one document in, its instances (or the error) out,
    until `requests` closes."""
    builder, widths = _read(requests)
    while True:
        try:
            request = _read(requests)
        except EOFError:
            return
        try:
            reply = ("ok", epoch_instances(builder, widths, *request))
        except Exception:  # reported to the training process, which raises it in the input pipeline
            reply = ("error", traceback.format_exc())
        _write(replies, reply)


def main():
    # Ctrl-C reaches the whole process group: the training process handles it, and its children end with it
    # (their stdin closes) instead of each printing a KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print must not corrupt the replies
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
