"""What every benchmark shares: where things are, running a command (timed, its process tree's memory
sampled), this machine's CPU flags, and writing a result table."""

import json
import os
import subprocess
import threading
import time

import psutil

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Each benchmark writes RESULTS/NAME.md (the table run_all puts in the README) and often NAME.json;
# ALBERT_TF_BENCHMARK_RESULTS sends them elsewhere (the smoke tests do, leaving the recorded ones alone).
RESULTS = os.environ.get("ALBERT_TF_BENCHMARK_RESULTS") or os.path.join(REPO, "benchmarks", "results")
# The work directory: the checkout's parent, which holds the public data (../shared/data) and the long runs' work
# directories beside the checkout.
WORK = os.path.dirname(REPO)
# Real public data beside the checkout (../shared/data), used when present and never committed.
SHARED_DATA = os.path.join(WORK, "shared", "data")
SHARED_CORPUS = os.path.join(SHARED_DATA, "corpus", "corpus_paragraphs.txt")


def module_command(module_name, *args):
    """The command that runs module `module_name` (a benchmark, to measure in a fresh process, or an
    albert_tf tool) with this interpreter; run it with cwd=REPO or child_env()."""
    import sys

    return [sys.executable, "-m", module_name, *args]


def child_env(**overrides):
    """The environment of a benchmark's child processes: this one's, with this checkout first on PYTHONPATH
    (they import albert_tf from it) and whatever the caller set behind it (packages installed outside the
    interpreter's site-packages), then `overrides` (TF_CPP_MIN_LOG_LEVEL="3", say)."""
    pythonpath = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": pythonpath, **overrides}


# The CPU features that decide what a speed figure means: AVX-512 widens every kernel, and only
# avx512_bf16 or AMX (amx_bf16) make bf16 arithmetic native rather than emulated.
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16")


def cpu_description(cpuinfo_path="/proc/cpuinfo"):
    """'MODEL, N cores; flags: ... (not: ...)' for the benchmark tables; the model alone without /proc/cpuinfo."""
    import platform

    info = {}
    try:
        with open(cpuinfo_path) as f:
            for line in f:
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())  # the first core's entry
    except OSError:
        pass
    text = f"{info.get('model name') or platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    if "flags" in info:
        flags = set(info["flags"].split())
        has = " ".join(flag for flag in CPU_FLAGS if flag in flags) or "none"
        lacks = " ".join(flag for flag in CPU_FLAGS if flag not in flags) or "none"
        text += f"; flags: {has} (not: {lacks})"
    return text


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


def run_measured(command, env=None, cwd=None, interval=0.05, also=()):
    """Runs `command`; returns (seconds, peak tree RSS in bytes, stdout, stderr). Raises on failure.

    `also`: running psutil.Processes (a cluster's scheduler and workers, say) whose trees count in the peak
    beside the command's."""
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    process = psutil.Process(child.pid)
    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(process) + sum(tree_rss(other) for other in also))
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


def cached_json(path, key, compute):
    """The JSON object at `path` when it holds `key`'s items, else `compute()` with them added, written there:
    a result worth minutes, kept beside a run and redone only when what it depends on (`key`) changed."""
    if os.path.exists(path):
        with open(path) as f:
            cached = json.load(f)
        if all(cached.get(name) == value for name, value in key.items()):
            return cached
    result = {**key, **compute()}
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    return result


def installed_versions(*packages):
    """{package: its installed version, or None where it is not installed} (distribution names, e.g.
    "ai-edge-litert"), read without importing the packages."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for package in packages:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return versions


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _path_prefixes():
    """(absolute directory, what stands for it in a result), the most specific first: the repository (.), the work
    directory beside it (..), the temporary directory ($TMPDIR) and the home directory (~)."""
    import tempfile

    prefixes = [(REPO, "."), (WORK, ".."), (tempfile.gettempdir(), "$TMPDIR"), ("/tmp", "$TMPDIR"),
                (os.path.expanduser("~"), "~")]
    prefixes = [(os.path.normpath(directory), stand_in) for directory, stand_in in prefixes
                if os.path.isabs(directory) and os.path.normpath(directory) != "/"]
    return sorted(prefixes, key=lambda prefix: -len(prefix[0]))  # a scratch directory inside the work one too


def portable_path(path):
    """`path` as a result records it: relative to the repository (../ the work directory beside it: ../shared/data,
    ../albert_large), $TMPDIR/... or ~/... for a scratch or home directory; relative paths and any other kept as
    they are. A result read on another machine then names no path of the one that measured it."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return path
    normal = os.path.normpath(path)
    for directory, stand_in in _path_prefixes():
        if normal == directory:
            return stand_in
        if normal.startswith(directory + os.sep):
            rest = normal[len(directory) + 1:]
            return rest if stand_in == "." else f"{stand_in}/{rest}"
    return path


def portable(value):
    """`value` (a result's text, or a record of dicts, lists and strings) with every absolute path in it that lies
    in the repository, the work directory, the temporary or the home directory written as `portable_path` writes
    it: in commands (--work_dir=...) and sentences as in path fields."""
    import re

    if isinstance(value, dict):
        return {key: portable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(portable(item) for item in value)
    if not isinstance(value, str):
        return value
    alternatives = "|".join(re.escape(directory) for directory, _ in _path_prefixes())
    # A path starts the text or follows a separator (space, =, quote, bracket, colon) and runs to one; the lookahead
    # keeps /work/main from matching the start of /work/mainline.
    pattern = rf"(?<![^\s=\"'`(\[:,])(?:{alternatives})(?:/[^\s\"'`()\[\],;]*)?(?![^\s\"'`()\[\],;])"
    return re.sub(pattern, lambda match: portable_path(match.group(0)), value)


def write_results(results_dir, name, text, record=None, json_path=None):
    """Prints `text` and writes it to RESULTS_DIR/NAME.md; `record` goes to `json_path` (default
    RESULTS_DIR/NAME.json) when given. Both as `portable` writes them: no path of this machine."""
    import json

    print("\n" + text)
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, f"{name}.md"), "w") as f:
        f.write(portable(text))
    if record is not None:
        with open(json_path or os.path.join(results_dir, f"{name}.json"), "w") as f:
            json.dump(portable(record), f, indent=1)


def dump_results_json(record, path, **arguments):
    """json.dump of `record` to `path` as `portable` writes it (a benchmark's NAME.json written beside
    write_results): keyword `arguments` (indent=...) go to json.dump."""
    import json

    with open(path, "w") as f:
        json.dump(portable(record), f, **arguments)


def huggingface_config(config):
    """transformers.AlbertConfig with the architecture of an albert_tf AlbertConfig (through the converter's
    own mapping, as a user converting a checkpoint gets it)."""
    import transformers

    from albert_tf.checkpoints.huggingface_format import albert_config_to_huggingface

    return transformers.AlbertConfig(**albert_config_to_huggingface(config, with_heads=True))
