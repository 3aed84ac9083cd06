"""albert_tf as users install it: a wheel in a fresh virtual environment, away from this checkout."""

import pathlib
import subprocess
import sys
import sysconfig
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


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """A new venv holding the wheel (installed by pip, offline); its dependencies come from this
    test environment's site-packages through a .pth line, so nothing is downloaded."""
    root = tmp_path_factory.mktemp("venv")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True, timeout=300)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # Only the dependencies: a path line does not run the test environment's editable-install hook.
    pathlib.Path(site, "test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv, root


def run_in(installed, *args):
    venv, cwd = installed
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "TF_CPP_MIN_LOG_LEVEL": "3"})


def test_the_wheel_declares_dependencies_extras_and_scripts(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith("dist-info/METADATA"))).decode()
        entry_points = archive.read(next(n for n in names if n.endswith("dist-info/entry_points.txt"))).decode()
    for requirement in ("tensorflow<2.22,>=2.21", "tensorflow-text<2.22,>=2.21", "keras<4,>=3.15", "sentencepiece"):
        assert f"Requires-Dist: {requirement}" in metadata, requirement
    assert 'extra == "beam"' in metadata and 'extra == "plots"' in metadata and 'extra == "hf"' in metadata
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
                    "import albert_tf, albert_tf_pipelines.create_pretraining_data; "
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
