"""A run touches nothing outside its output directory: not through a `.lock` that links elsewhere, nor
through a run record whose `outputs` name a path out of the directory. And a tool writes nothing onto what it
reads (an output that is, lies inside or holds an input), nor into a directory another albert_tf tool wrote."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from albert_tf import file_utils
from albert_tf.file_utils import exclusive_directory_lock, staged_directory
from albert_tf.settings import SettingError
from albert_tf.training.run_directory import RUN_CONFIG_FILE, read_run_config

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_the_lock_does_not_follow_a_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / ".lock").symlink_to(victim)
    with pytest.raises(OSError, match=r"\.lock is a symbolic link .*victim\.txt.*remove it"):
        with exclusive_directory_lock(str(run_dir), "a run"):
            pass
    assert victim.read_text() == "precious\n"

    (run_dir / ".lock").unlink()
    with exclusive_directory_lock(str(run_dir), "a run"):  # a plain lock file still works
        assert (run_dir / ".lock").read_text().startswith("a run (pid ")


@pytest.mark.parametrize("name", ["../../victim.txt", "../victim.txt", "/tmp/victim.txt", "..", "sub/entry"])
def test_a_record_naming_a_path_outside_is_refused(tmp_path, name):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run_dir = tmp_path / "a" / "run"
    run_dir.mkdir(parents=True)
    (run_dir / RUN_CONFIG_FILE).write_text(json.dumps({"tool": "run_classifier", "outputs": [name, "best"]}))
    with pytest.raises(ValueError, match="which is not an entry of"):
        read_run_config(str(run_dir))
    assert victim.read_text() == "precious\n"


# --- An output apart from every input -----------------------------------------------------------------


@pytest.mark.parametrize("output, source, relation", [
    ("model", "model", "is"), ("model/lite", "model", "lies inside"), (".", "model/ckpt-5", "contains"),
    ("model/../model", "model", "is"), ("gs://b/model/", "gs://b/model", "is")])
def test_an_output_that_is_lies_inside_or_holds_an_input_is_refused(tmp_path, monkeypatch, output, source, relation):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SettingError, match=f"^output_dir={output} {relation} checkpoint={source}, which this run "
                                           "reads: writing there would replace it"):
        file_utils.check_output_apart({"output_dir": output}, {"spm_model_file": None, "checkpoint": source})


def test_an_output_beside_its_inputs_passes_and_a_link_does_not_hide_one(tmp_path):
    (tmp_path / "model").mkdir()
    file_utils.check_output_apart({"output_dir": str(tmp_path / "model_lite")},
                                  {"checkpoint": str(tmp_path / "model"), "calibration_file": None})
    (tmp_path / "link").symlink_to(tmp_path / "model")
    with pytest.raises(SettingError, match="link is checkpoint="):
        file_utils.check_output_apart({"output_dir": str(tmp_path / "link")}, {"checkpoint": str(tmp_path / "model")})


# --- Which albert_tf tool wrote a directory ------------------------------------------------------------


def written_whole(directory, *entries):
    """A directory as the exports, conversions and saved models leave it (staged, with its manifest)."""
    with staged_directory(str(directory)) as staging:
        for entry in entries:
            (pathlib.Path(staging) / entry).mkdir() if "." not in entry else (pathlib.Path(staging) / entry).touch()
    return directory


def run_directory(directory, tool, outputs=()):
    directory.mkdir(parents=True)
    (directory / RUN_CONFIG_FILE).write_text(json.dumps({"tool": tool, "outputs": list(outputs)}))
    return directory


def files(directory, *names):
    directory.mkdir(parents=True)
    for name in names:
        (directory / name).touch()
    return directory


KINDS = {  # what albert_tf writes: how `written_as` tells it, and the file it names
    "SavedModel export": (lambda path: written_whole(path, "encoder", "preprocessing", "serving", "albert_tf.json"),
                          file_utils.SAVEDMODEL_EXPORT, ".albert_tf_manifest.json"),
    "LiteRT export": (lambda path: written_whole(path, "model.tflite", "encoder_ids.tflite", "albert_tf.json"),
                      file_utils.LITERT_EXPORT, ".albert_tf_manifest.json"),
    "conversion": (lambda path: written_whole(path, "config.json", "model.safetensors", "spiece.model"),
                   file_utils.MODEL_DIRECTORY, ".albert_tf_manifest.json"),
    "pretraining run": (lambda path: run_directory(path, "albert_tf.run_pretraining"),
                        "a albert_tf.run_pretraining run", RUN_CONFIG_FILE),
    "fine-tuning run": (lambda path: run_directory(path, "albert_tf.run_classifier", ["best", "checkpoints"]),
                        "a albert_tf.run_classifier run", RUN_CONFIG_FILE),
    "fine-tuning run's best model": (
        lambda path: written_whole(run_directory(path, "albert_tf.run_classifier", ["best"]) / "best", "a.json"),
        "part of a albert_tf.run_classifier run", RUN_CONFIG_FILE),
    "data set": (lambda path: files(path, "train-00000-of-00001.tfrecord", "train.metadata.json"),
                 file_utils.DATA_SET, "train.metadata.json"),
    "vocabulary": (lambda path: files(path, "30k-clean.model", "30k-clean.vocab"), file_utils.VOCABULARY,
                   "30k-clean.model"),
}


@pytest.mark.parametrize("kind", KINDS)
def test_every_directory_albert_tf_writes_is_told_by_its_record(tmp_path, kind):
    make, what, evidence = KINDS[kind]
    directory = make(tmp_path / "out")
    found = file_utils.written_as(str(directory))
    assert found[0] == what and found[1].endswith(evidence), found


def test_a_directory_no_tool_wrote_is_anyones(tmp_path):
    assert file_utils.written_as(str(tmp_path / "absent")) is None
    assert file_utils.written_as(str(files(tmp_path / "mine", "notes.txt", "spm.model", "x.metadata.json"))) is None


# --- Every writing tool refuses the others' directories, before anything is read or written ---------------


def tree(directory):
    return sorted((str(path.relative_to(directory)), path.stat().st_size) for path in directory.rglob("*"))


def refused_in_process(write, directory):
    before = tree(directory)
    with pytest.raises(SettingError, match=f"^{directory} holds .* says so\\); albert_tf.\\w+ writes into a directory "
                                           "of its own"):
        write(str(directory))
    assert tree(directory) == before, "nothing written there, not even a lock"


@pytest.mark.parametrize("kind", ["SavedModel export", "LiteRT export", "conversion", "fine-tuning run",
                                  "fine-tuning run's best model", "data set", "vocabulary"])
def test_pretraining_refuses_every_other_tools_directory(tmp_path, kind):
    """`run_pretraining --output_dir=<an export>` used to replace the export's albert_tf.json and add checkpoints."""
    from albert_tf.training.pretraining_config import PretrainingConfig
    from albert_tf.training.pretraining_run import run

    directory = KINDS[kind][0](tmp_path / "out")
    refused_in_process(lambda output_dir: run(PretrainingConfig(input_file="data/train", output_dir=output_dir,
                                                                num_warmup_steps=0)), directory)


@pytest.mark.parametrize("kind", ["SavedModel export", "LiteRT export", "conversion", "pretraining run",
                                  "fine-tuning run's best model", "data set", "vocabulary"])
def test_fine_tuning_refuses_every_other_tools_directory(tmp_path, kind):
    from albert_tf.tasks.glue_task import GlueConfig, GlueTask
    from albert_tf.training.finetuning_config import FinetuningConfig
    from albert_tf.training.finetuning_tool import checked_config

    directory = KINDS[kind][0](tmp_path / "out")
    refused_in_process(lambda output_dir: checked_config(GlueTask(), FinetuningConfig(
        output_dir=output_dir, albert_config="albert_tiny", do_train=True,
        task=GlueConfig(task_name="mrpc", data_dir=str(tmp_path)))), directory)


def run_tool(module, *flags):
    return subprocess.run([sys.executable, "-m", module, *flags], capture_output=True, text=True, cwd=REPO_ROOT,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=120)


def refused_by_tool(result, directory, before, *fragments):
    """One `tool: error:` line holding every fragment, and `directory` as it was."""
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert ": error: " in error and all(fragment in error for fragment in fragments), error
    assert tree(directory) == before


def test_export_and_convert_onto_their_own_input_are_refused_whatever_overwrite_says(tmp_path):
    """`albert-export --format=litert --checkpoint=ftd/best --output_dir=ftd/best --overwrite` used to exit 0 and leave
    only the .tflite files; the SavedModel export and `albert-convert --input=X --output=X --overwrite` the same."""
    from albert_tf.export_lib.exporter import export

    best = KINDS["fine-tuning run's best model"][0](tmp_path / "ftd")
    before = tree(tmp_path)
    for output in (best, best / "lite"):
        refused_by_tool(run_tool("albert_tf.export", "--format=litert", f"--checkpoint={best}",
                                 f"--output_dir={output}", "--overwrite"), tmp_path, before,
                        f"--output_dir={output} ", f"--checkpoint={best}", "Choose another --output_dir")
    with pytest.raises(SettingError, match=f"^output_dir={best} is checkpoint={best}"):
        export(str(best), str(best), overwrite=True)
    refused_by_tool(run_tool("albert_tf.convert", "--from=albert_tf", "--to=huggingface", f"--input={best}",
                             f"--output={tmp_path / 'ftd'}", "--overwrite"), tmp_path, before,
                    f"--output={tmp_path / 'ftd'} contains --input={best}")
    assert tree(tmp_path) == before


def test_export_convert_and_the_data_tools_refuse_another_tools_directory(tmp_path):
    export_dir = KINDS["SavedModel export"][0](tmp_path / "export")
    run_dir = KINDS["pretraining run"][0](tmp_path / "run")
    model_dir = KINDS["conversion"][0](tmp_path / "converted")
    corpus = files(tmp_path / "corpus", "words.vocab") / "words.vocab"  # a corpus named as a vocabulary's output
    corpus.write_text("One sentence.\nAnother one.\n")
    before = tree(tmp_path)
    refused_by_tool(run_tool("albert_tf.export", f"--checkpoint={model_dir}", f"--output_dir={run_dir}",
                             "--overwrite"), tmp_path, before, "holds a albert_tf.run_pretraining run")
    refused_by_tool(run_tool("albert_tf.export", f"--checkpoint={export_dir}", f"--output_dir={model_dir}",
                             "--overwrite"), tmp_path, before, "holds an albert_tf model directory")
    refused_by_tool(run_tool("albert_tf.convert", "--from=albert_tf", f"--input={model_dir}",
                             f"--output={export_dir}", "--overwrite"), tmp_path, before, "holds a SavedModel export")
    refused_by_tool(run_tool("albert_tf.create_pretraining_data", f"--input_file={corpus}",
                             f"--output_file={export_dir}/train", f"--spm_model_file={corpus}"), tmp_path, before,
                    "holds a SavedModel export", "choose another --output_file")
    refused_by_tool(run_tool("albert_tf.train_sentencepiece", f"--input={corpus}", f"--output_prefix={run_dir}/spm"),
                    tmp_path, before, "holds a albert_tf.run_pretraining run", "choose another --output_prefix")
    refused_by_tool(run_tool("albert_tf.train_sentencepiece", f"--input={corpus}",
                             f"--output_prefix={tmp_path}/corpus/words", "--overwrite"), tmp_path, before,
                    f"--output_prefix={corpus} is --input={corpus}")
