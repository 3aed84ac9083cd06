"""Shared benchmark helpers: run a command, time it, and sample its process tree's memory."""

import os
import subprocess
import threading
import time

import psutil

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Real public data beside the checkout (../shared/data), used when present and never committed.
SHARED_DATA = os.path.join(os.path.dirname(REPO), "shared", "data")
SHARED_CORPUS = os.path.join(SHARED_DATA, "corpus", "corpus_paragraphs.txt")


def tree_rss(process):
    """Resident memory of a process and all its descendants, in bytes."""
    try:
        processes = [process] + process.children(recursive=True)
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for member in processes:
        try:
            total += member.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def run_measured(command, env=None, cwd=None, interval=0.05):
    """Runs `command`; returns (seconds, peak tree RSS in bytes, stdout, stderr). Raises on failure."""
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    process = psutil.Process(child.pid)
    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(process))
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = child.communicate()
    done.set()
    sampler.join()
    seconds = time.monotonic() - start
    if child.returncode:
        raise RuntimeError(f"{' '.join(command)} failed ({child.returncode}):\n{stderr[-3000:]}")
    return seconds, peak, stdout, stderr


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def write_results(results_dir, name, text, record=None, json_path=None):
    """Prints `text` and writes it to RESULTS_DIR/NAME.md; `record` goes to `json_path` (default
    RESULTS_DIR/NAME.json) when given."""
    import json

    print("\n" + text)
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, f"{name}.md"), "w") as f:
        f.write(text)
    if record is not None:
        with open(json_path or os.path.join(results_dir, f"{name}.json"), "w") as f:
            json.dump(record, f, indent=1)
