"""albert_tf as users install it: a wheel in a fresh virtual environment, away from this checkout."""

import pathlib
import subprocess
import sys
import zipfile

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                    "-w", str(dist), str(REPO_ROOT)], check=True, cwd=dist, timeout=300)
    wheels = list(dist.glob("albert_tf-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


def wheelhouse():
    """Wheels of the pinned runtime requirements (requirements.txt + constraints.txt), built once per set of
    pins beside the test environment (its pip cache makes that a copy after `make install`)."""
    import hashlib

    pins = hashlib.sha256(b"".join((REPO_ROOT / name).read_bytes()
                                   for name in ("requirements.txt", "constraints.txt"))).hexdigest()[:16]
    directory = pathlib.Path(sys.prefix) / "wheelhouse"
    stamp = directory / f".complete-{pins}"
    if not stamp.exists():
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "-w",
                        str(directory), "-r", str(REPO_ROOT / "requirements.txt"), "-c",
                        str(REPO_ROOT / "constraints.txt")], check=True, timeout=1800)
        stamp.touch()
    return directory


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """A new venv holding the wheel with its `plots` extra and what it declares, installed by its own pip
    from the local wheelhouse only: nothing of the test environment is visible, so a dependency the wheel
    fails to declare fails here."""
    root = tmp_path_factory.mktemp("venv")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "--no-index", "--find-links", str(wheelhouse()), f"{wheel}[plots]"], check=True, timeout=1200)
    return venv, root


def run_in(installed, *args):
    venv, cwd = installed
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(cwd), "TF_CPP_MIN_LOG_LEVEL": "3"})


def test_the_wheel_declares_dependencies_extras_and_scripts(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith("dist-info/METADATA"))).decode()
        entry_points = archive.read(next(n for n in names if n.endswith("dist-info/entry_points.txt"))).decode()
    for requirement in ("tensorflow<2.22,>=2.21", "tensorflow-text<2.22,>=2.21", "keras<4,>=3.15", "sentencepiece"):
        assert f"Requires-Dist: {requirement}" in metadata, requirement
    assert 'extra == "beam"' in metadata and 'extra == "plots"' in metadata and 'extra == "hf"' in metadata
    assert "Requires-Dist: google-crc32c" in metadata and "crcmod" not in metadata
    # The tested majors only (constraints.txt): TensorFlow alone would take protobuf 7, the hf extra transformers 6.
    assert "Requires-Dist: protobuf<7,>=6.31.1\n" in metadata
    assert 'Requires-Dist: transformers<6,>=5.23; extra == "hf"' in metadata
    assert 'Requires-Dist: tokenizers<1,>=0.20; extra == "wordpiece"' in metadata
    assert not [line for line in metadata.splitlines() if line.startswith("Requires-Dist: torch")]  # the user's choice
    assert "Requires-Python: <3.14,>=3.11" in metadata
    presets = sorted(p.name for p in (REPO_ROOT / "configs").glob("*.json"))
    assert sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("albert_tf/presets/")) == presets
    # Every package of the source tree is in the wheel; no generic top-level name.
    packages = {str(p.parent.relative_to(REPO_ROOT)).replace("/", ".") for p in (REPO_ROOT / "albert_tf").rglob("__init__.py")}
    assert {p for p in packages if f"{p.replace('.', '/')}/__init__.py" not in names} == set()
    assert {n.split("/", 1)[0] for n in names if not n.startswith("albert_tf-")} == {"albert_tf", "albert_tf_pipelines"}
    for script in ("albert-run-pretraining", "albert-create-pretraining-data", "albert-export", "albert-params"):
        assert f"{script} = " in entry_points


def test_the_installed_wheel_finds_its_presets_and_runs_its_tools(installed):
    venv, _ = installed
    result = run_in(installed, str(venv / "bin" / "python"), "-c",
                    "import albert_tf, albert_tf_pipelines.console; "
                    "print(albert_tf.__file__); print(albert_tf.preset_names()); "
                    "print(albert_tf.AlbertConfig.from_preset('albert_base_v2').hidden_size)")
    assert result.returncode == 0, result.stderr
    location, presets, hidden = result.stdout.splitlines()
    assert location.startswith(str(venv)) and str(REPO_ROOT) not in location
    assert "albert_base_v2" in presets and "albert_tiny" in presets and hidden == "768"

    table = run_in(installed, str(venv / "bin" / "albert-params"))
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if line.startswith("albert_base_v2 "))
    assert "11,683,584" in row

    # --helpshort lists the tool's own flags under the console script too (absl's key flags).
    help_text = run_in(installed, str(venv / "bin" / "albert-run-pretraining"), "--helpshort")
    assert "--albert_config" in help_text.stdout and "Traceback" not in help_text.stderr, help_text.stderr


CONSOLE_SCRIPTS = ("albert-train-sentencepiece", "albert-train-wordpiece", "albert-create-pretraining-data",
                   "albert-data-stats", "albert-run-pretraining", "albert-export", "albert-convert",
                   "albert-run-classifier", "albert-run-text-classifier", "albert-run-tagger", "albert-run-squad",
                   "albert-run-race", "albert-fill-mask", "albert-embed", "albert-analyze", "albert-params",
                   "albert-demo")


def test_every_console_script_answers_help_in_a_plain_install(installed, wheel):
    venv, _ = installed
    with zipfile.ZipFile(wheel) as archive:
        entry_points = archive.read(next(n for n in archive.namelist() if n.endswith("entry_points.txt"))).decode()
    declared = {line.split(" = ")[0] for line in entry_points.splitlines() if " = " in line}
    assert declared == set(CONSOLE_SCRIPTS) | {"albert-beam-create-pretraining-data"}
    import ast
    import tomllib

    modules = {script: target.split(":")[0] for script, target in
               tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"].items()}
    for script in CONSOLE_SCRIPTS:
        result = run_in(installed, str(venv / "bin" / script), "--help")
        assert result.returncode == 0 and "Traceback" not in result.stderr, (script, result.stderr[-2000:])
        # The tool's own description and example, then its flags (not the console wrapper's empty help).
        source = REPO_ROOT / f"{modules[script].replace('.', '/')}.py"
        description = ast.get_docstring(ast.parse(source.read_text())).splitlines()[0]
        assert result.stdout.startswith(description), (script, result.stdout[:300])
        assert "\nflags:\n" in result.stdout and "--" in result.stdout.split("\nflags:\n", 1)[1], script
    beam = run_in(installed, str(venv / "bin" / "albert-beam-create-pretraining-data"), "--helpshort")
    assert beam.returncode == 1 and "Traceback" not in beam.stderr
    assert beam.stderr.strip() == ("albert-beam-create-pretraining-data: error: needs Apache Beam, which the [beam] "
                                   "extra installs: pip install 'albert_tf[beam]'")


@pytest.mark.slow
def test_the_pipeline_runs_end_to_end_from_the_installed_wheel(installed):
    """Vocabulary, data, a few pretraining steps on a preset (its vocabulary size taken from the
    SentencePiece model) and an export, all through the installed console scripts."""
    from text_fixtures import SPECIAL_LINES, write_corpus

    venv, root = installed
    corpus = write_corpus(root / "corpus.txt", num_documents=40, seed=5)
    with open(corpus, "a", encoding="utf-8") as f:
        f.write("\n" + "\n".join(SPECIAL_LINES * 3) + "\n")

    def script(name, *flags):
        result = run_in(installed, str(venv / "bin" / name), *flags)
        assert result.returncode == 0, (name, result.stderr[-3000:])
        return result

    script("albert-train-sentencepiece", f"--input={corpus}", f"--output_prefix={root / 'spm'}", "--vocab_size=400",
           "--nohard_vocab_limit")
    script("albert-create-pretraining-data", f"--input_file={corpus}", f"--output_file={root / 'data' / 'train'}",
           f"--spm_model_file={root / 'spm.model'}", "--max_seq_length=32", "--max_predictions_per_seq=5",
           "--dupe_factor=1")
    trained = script("albert-run-pretraining", f"--input_file={root / 'data' / 'train'}",
                     f"--output_dir={root / 'ckpt'}", "--albert_config=albert_tiny",
                     f"--spm_model_file={root / 'spm.model'}", "--max_seq_length=32", "--max_predictions_per_seq=5",
                     "--train_batch_size=8", "--num_train_steps=3", "--num_warmup_steps=1",
                     "--save_checkpoints_steps=3")
    assert "with vocab_size" in trained.stdout and "step 3/3" in trained.stdout
    script("albert-export", f"--checkpoint={root / 'ckpt'}", f"--output_dir={root / 'export'}", "--max_seq_length=32",
           "--serving_warmup_batch_sizes=")
    assert (root / "export" / "serving" / "albert" / "1" / "saved_model.pb").exists()
    filled = script("albert-fill-mask", f"--model={root / 'export'}", "--text=the [MASK] river", "--max_seq_length=32")
    assert "[MASK] 1:" in filled.stdout
    # The Python API from the same install: a preset with overrides, raw text into a classifier made from
    # the pretrained directory (its preprocessor attached, compiled by fit), fill-mask answers.
    api = run_in(installed, str(venv / "bin" / "python"), "-c", f"""
import albert_tf
assert albert_tf.AlbertConfig.from_preset("albert_tiny", vocab_size=123).vocab_size == 123
classifier = albert_tf.AlbertClassifier.from_preset({str(root / 'ckpt')!r}, num_labels=2, max_seq_length=32)
history = classifier.fit(x=["a good river", "a bad town"] * 4, y=[1, 0] * 4, batch_size=4, verbose=0)
print(classifier.predict(["a good river"], verbose=0)["logits"].shape, sorted(history.history))
print(albert_tf.MaskFiller({str(root / 'export')!r})("the [MASK] river", top_k=2, max_seq_length=32)[0][0]["sequence"])
""")
    assert api.returncode == 0, api.stderr[-3000:]
    shape, filled_sentence = api.stdout.strip().splitlines()[-2:]
    assert shape == "(1, 2) ['accuracy', 'loss']"
    assert filled_sentence.startswith("the") and filled_sentence.endswith(" river") and "[MASK]" not in filled_sentence


@pytest.mark.slow
def test_the_demo_runs_from_the_installed_wheel_away_from_the_checkout(installed):
    """`albert-demo` finds its preset inside the wheel (no configs/ folder here), trains on documents
    with held-out evaluation, exports and predicts; a tiny budget keeps it to about a minute."""
    venv, root = installed
    demo = [str(venv / "bin" / "albert-demo"), f"--output_dir={root / 'demo'}", "--corpus_bytes=150000",
            "--vocab_size=300", "--max_predictions_per_seq=5", "--train_batch_size=8", "--num_train_steps=8",
            "--num_workers=1"]
    result = run_in(installed, *demo, "--max_seq_length=32")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "=== 6/6" in result.stdout and "Phase reached during training:" in result.stdout
    assert (root / "demo" / "export" / "serving" / "albert_demo" / "1" / "saved_model.pb").exists()
    assert not (root / "configs").exists()
    # The closing advice is a command the wheel can run, and names no folder the wheel lacks.
    advice = result.stdout[result.stdout.index("Phase reached during training:"):]
    assert "python -m albert_tf.run_pretraining --input_file=" in advice and "--albert_config=albert_small" in advice
    assert "benchmarks" not in advice and "docs/pretraining_from_scratch.md in albert_tf's source repository" in advice
    assert "\u2581" not in result.stdout  # fill-mask proposes words, never the bare word-start piece

    # Another length: the data, the model and the export are made anew; the corpus and vocabulary are kept.
    rerun = run_in(installed, *demo, "--max_seq_length=24")
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-3000:]
    assert "--max_seq_length=32 -> 24" in rerun.stdout and "rebuilding from the data stage on" in rerun.stdout
    assert "Reusing the vocabulary" in rerun.stdout and "Reusing the train data" not in rerun.stdout
    assert '"max_seq_length": 24' in (root / "demo" / "data" / "train.metadata.json").read_text()
