"""benchmarks/ keeps working: every benchmark imports and answers --help, and the cheapest configuration
of each family (speed, learning, downstream) runs end to end for a few steps, its tables written to a
temporary results directory (ALBERT_TF_BENCHMARK_RESULTS), never over the recorded ones."""

import contextlib
import importlib
import io
import os
import pathlib
import random
import subprocess
import sys

import pytest

from test_glue import write_task

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
FAMILIES = ("speed", "learning", "downstream")
# Modules a benchmark imports for its own use, not benchmarks themselves.
HELPERS = {"benchmarks.learning.cloze", "benchmarks.speed.step_comparison",
           "benchmarks.downstream.original_adamw_torch"}


def benchmark_modules():
    return sorted(f"benchmarks.{family}.{path.stem}" for family in FAMILIES
                  for path in (REPO_ROOT / "benchmarks" / family).glob("*.py") if path.stem != "__init__")


def test_every_benchmark_imports_and_answers_help():
    modules = benchmark_modules()
    assert len(modules) >= 18 and {name.split(".")[1] for name in modules} == set(FAMILIES)
    for name in modules:
        module = importlib.import_module(name)
        if name in HELPERS:
            assert not hasattr(module, "main"), f"{name} is listed as a helper but has a main()"
            continue
        output = io.StringIO()
        with contextlib.redirect_stdout(output), pytest.raises(SystemExit) as exit_info:
            module.main(["--help"])
        assert exit_info.value.code == 0, name
        assert output.getvalue().startswith("usage:"), f"{name}: {output.getvalue()[:200]}"
    run_all = importlib.import_module("benchmarks.run_all")
    commands = {name: command for name, _, command, _ in run_all.BENCHMARKS}
    for name, command in commands.items():  # run_all's commands name modules that exist, each part of a chain too
        for part in run_all.command_parts(command):
            module = part.split()[2]
            assert part.startswith("python -m benchmarks.") and module in modules, (name, part)
    assert len(run_all.command_parts(commands["accents_ja"])) == 3


def run_benchmark(module, *args, results):
    env = dict(os.environ, ALBERT_TF_BENCHMARK_RESULTS=str(results), TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env,
                            cwd=REPO_ROOT, timeout=600)
    assert result.returncode == 0, f"{module}:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def learning(tmp_path_factory):
    """benchmarks.learning.learning_curve at its smallest: a few steps of albert_tiny on the built-in corpus."""
    from albert_tf.data.builtin_corpus import write_corpus

    work = tmp_path_factory.mktemp("learning_curve")
    results = tmp_path_factory.mktemp("results")
    corpus = work / "corpus.txt"
    write_corpus(str(corpus), max_bytes=300_000)
    run_benchmark("benchmarks.learning.learning_curve", f"--corpus={corpus}", f"--work_dir={work / 'run'}",
                  "--vocab_size=1000", "--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=1",
                  "--train_batch_size=8", "--num_train_steps=4", "--num_warmup_steps=1",
                  "--save_checkpoints_steps=2", results=results)
    return work / "run" / "pretrain", results


def test_learning_family_smoke(learning):
    _, results = learning
    table = (results / "learning_curve.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split("|")[1].strip() for row in rows] == ["2", "4"], table
    assert (results / "learning_curve.png").stat().st_size > 0


def test_downstream_family_smoke(learning, tmp_path):
    checkpoint, _ = learning
    write_task(tmp_path / "glue" / "MRPC", "mrpc", random.Random("mrpc"))
    run_benchmark("benchmarks.downstream.finetune_glue", f"--pretrained={checkpoint}", f"--glue_dir={tmp_path / 'glue'}",
                  f"--work_dir={tmp_path / 'work'}", f"--results_dir={tmp_path / 'results'}", "--tasks=mrpc",
                  "--max_steps=2", "--batch_size=4", "--max_seq_length=32", results=tmp_path / "results")
    table = (tmp_path / "results" / "finetune_glue.md").read_text()
    assert "| mrpc | pretrained |" in table and "| mrpc | random init |" in table
    assert "| mrpc | pretrained - random |" in table


def test_transfer_takes_random_init_runs_from_an_earlier_grid_only_when_they_apply(learning, tmp_path, monkeypatch):
    """benchmarks.downstream.transfer --random_init_from: the random starts of a grid for another checkpoint of the
    same model are taken, not rerun; a grid made with other settings or another vocabulary is refused."""
    import json
    import shutil

    from benchmarks.downstream import finetune_glue, transfer

    checkpoint, _ = learning
    write_task(tmp_path / "glue" / "MRPC", "mrpc", random.Random("mrpc"))
    runs = []

    def fine_tune(task, data, output, init, settings, env):  # stands in for run_classifier: (start, seed) runs
        runs.append((pathlib.Path(output).parent.name, settings.seed))
        return {"accuracy": 0.5 + 0.01 * len(runs), "f1": 0.6 + 0.01 * len(runs)}

    monkeypatch.setattr(finetune_glue, "run_classifier", fine_tune)

    def grid(name, pretrained=checkpoint, *flags):
        transfer.main([f"--pretrained={pretrained}", f"--glue_dir={tmp_path / 'glue'}", "--tasks=mrpc", "--seeds=1,2",
                       f"--work_dir={tmp_path / name}", f"--results_dir={tmp_path / name / 'results'}", *flags])
        return tmp_path / name / "results"

    first = grid("first")
    assert sorted(runs) == [("pretrained", 1), ("pretrained", 2), ("random_init", 1), ("random_init", 2)]
    recorded = json.loads((first / "transfer.json").read_text())
    runs.clear()
    second = grid("second", checkpoint, f"--random_init_from={first / 'transfer.json'}")
    assert runs == [("pretrained", 1), ("pretrained", 2)]  # the random starts were not run again
    taken = json.loads((second / "transfer.json").read_text())
    assert [r["random init"] for r in taken["records"]] == [r["random init"] for r in recorded["records"]]
    from benchmarks.common import portable_path

    assert {r["random_init_from"] for r in taken["records"]} == {portable_path(str(first / "transfer.json"))}
    assert "Random-init runs taken from" in (second / "transfer.md").read_text()

    with pytest.raises(SystemExit, match="glue_steps"):
        grid("other_settings", checkpoint, f"--random_init_from={first / 'transfer.json'}", "--glue_steps=7")
    other_vocabulary = tmp_path / "other_vocabulary"
    shutil.copytree(checkpoint, other_vocabulary)
    with open(other_vocabulary / "spm.model", "ab") as f:
        f.write(b"\0")
    with pytest.raises(SystemExit, match="another model config or vocabulary"):
        grid("other_vocabulary", other_vocabulary, f"--random_init_from={first / 'transfer.json'}")


@pytest.mark.slow
def test_speed_family_smoke(tmp_path):
    import json

    skip = "albert_tf:bf16:noxla,albert_tf:bf16:xla,albert_tf:fp32:xla"
    run_benchmark("benchmarks.speed.train_step", "--preset=albert_tiny", "--batch_size=2", "--seq_length=32",
                  "--steps=1", "--rounds=1", "--only=albert_tf", f"--skip={skip}", results=tmp_path)
    rows = [line for line in (tmp_path / "train_step.md").read_text().splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[:3] for row in rows[1:]] == [["| albert_tf", "fp32", "off"]], rows
    # The per-round figures go beside the table without --json, so a rerun never leaves stale ones there.
    record = json.loads((tmp_path / "train_step.json").read_text())
    assert record["args"]["batch_size"] == 2 and record["results"], record
    # The fine-tuning step beside Hugging Face's (KerasHub is not among the test requirements).
    skip = "albert_tf:bf16:noxla,albert_tf:bf16:xla,albert_tf:fp32:xla,huggingface:bf16:noxla"
    run_benchmark("benchmarks.speed.finetune_step", "--preset=albert_tiny", "--batch_size=2", "--seq_length=16",
                  "--steps=1", "--rounds=1", "--only=albert_tf,huggingface", f"--skip={skip}", results=tmp_path)
    rows = [line for line in (tmp_path / "finetune_step.md").read_text().splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in rows[1:]] == ["| albert_tf", "| huggingface"], rows


def test_accelerator_feed_measures_the_step_and_the_builder_in_threads_and_processes(tmp_path_factory):
    """The GPU benchmark's two parts at their smallest, on the CPU: a tiny model standing in for albert_small,
    and the instance builder on a small corpus, which builds the same epoch however it is split."""
    import json

    from text_fixtures import train_small_spm, write_corpus

    work = tmp_path_factory.mktemp("accelerator_feed")
    spm = train_small_spm(tmp_path_factory)
    corpus = write_corpus(work / "corpus.txt", num_documents=12, seed=3, paragraphs=True)
    configs = work / "configs"
    configs.mkdir()
    tiny = json.loads((REPO_ROOT / "configs" / "albert_tiny.json").read_text())
    (configs / "albert_small.json").write_text(json.dumps({**tiny, "vocab_size": 400}))
    results = work / "results"
    step_flags = (f"--configs_dir={configs}", "--models=albert_small", "--max_batches=1", "--no-compile",
                  "--warmup_steps=1", "--steps=1", f"--results_dir={results}")
    run_benchmark("benchmarks.speed.accelerator_feed", f"--corpus={corpus}", f"--spm_model_file={spm}", *step_flags,
                  "--threads=1,2", "--processes=1,2", "--builder_processes=1,2", results=results)
    record = json.loads((results / "accelerator_feed.json").read_text())
    assert [(row["model"], row["seq"], row["batch"]) for row in record["step"]] == [("albert_small", 64, 64)]
    assert record["step"][0]["sequences_per_second"] > 0
    builder = record["builder"]
    assert [(row["kind"], row["workers"]) for row in builder if row["seq"] == 64] == [
        ("threads", 1), ("threads", 2), ("processes", 1), ("processes", 2), ("builder processes", 1),
        ("builder processes", 2)]
    for seq in (64, 128, 512):
        counts = {row["instances_per_epoch"] for row in builder if row["seq"] == seq}
        assert len(counts) == 1 and counts.pop() > 0, builder
    table = (results / "accelerator_feed.md").read_text()
    assert "| albert_small | 64 | 64 | eager |" in table and "| 512 | builder processes | 2 |" in table, table
    # Measuring one part again keeps the other's recorded figures and command.
    run_benchmark("benchmarks.speed.accelerator_feed", "--parts=step", *step_flags, results=results)
    again = json.loads((results / "accelerator_feed.json").read_text())
    assert again["builder"] == builder and "--parts=step" in again["commands"]["step"]
    assert "--parts=step" not in again["commands"]["builder"]


@pytest.mark.slow
def test_huggingface_from_scratch_fits_its_steps_to_the_budget_and_resumes_at_its_end(tmp_path_factory):
    """Hugging Face's from-scratch route on a tiny work directory laid out as pretraining_recipes makes it: the
    step count fitted to the budget is recorded where benchmarks.learning.from_scratch reads it, the run ends
    there, and rerunning the command resumes at its end without training or evaluating again."""
    import json

    from albert_tf.data.local_runner import create_pretraining_data
    from albert_tf.data.masking import MaskingConfig
    from albert_tf.data.pretraining_data_job import CreationConfig
    from albert_tf.data.pretraining_instances import InstanceConfig
    from benchmarks.learning.from_scratch import HUGGING_FACE_PLAN_FILE
    from text_fixtures import train_small_spm, write_corpus

    work = tmp_path_factory.mktemp("hf_scratch_work")
    spm = train_small_spm(tmp_path_factory)
    (work / "spm.model").write_bytes(spm.read_bytes())
    write_corpus(work / "train.txt", num_documents=30, seed=4)
    heldout_text = write_corpus(work / "heldout.txt", num_documents=40, seed=5)  # over one batch of 64
    (work / "d64").mkdir()
    config = CreationConfig(instances=InstanceConfig(max_seq_length=64, dupe_factor=1,
                                                     masking=MaskingConfig(max_predictions_per_seq=10)),
                            num_output_shards=1)
    create_pretraining_data([str(heldout_text)], str(work / "d64" / "heldout"), str(spm), config, progress=False)
    tiny = json.loads((REPO_ROOT / "configs" / "albert_tiny.json").read_text())
    (work / "small8k.json").write_text(json.dumps({**tiny, "vocab_size": 400}))
    # A budget the first timed steps already spend: the plan keeps the steps run so far (the first loop and the
    # 20 timed steps after it: 5 loops of 5).
    flags = (f"--work_dir={work}", "--budget_hours=0.0002", "--warmup_steps=1", "--steps_per_loop=5")
    first = run_benchmark("benchmarks.learning.huggingface_from_scratch", *flags, results=work)
    run_dir = work / "runs" / "hf_scratch"
    plan = json.loads((run_dir / HUGGING_FACE_PLAN_FILE).read_text())
    history = (run_dir / "eval_history.jsonl").read_text().splitlines()
    steps = [json.loads(line)["step"] for line in history]
    assert plan["num_train_steps"] >= 25 and steps[-1] == plan["num_train_steps"], (plan, steps)
    assert f"-> {plan['num_train_steps']:,} steps" in first.stdout
    for line in history:
        heldout = json.loads(line)["heldout"]
        assert 0 <= heldout["masked_lm_accuracy_at_mask"] <= 1 and 0 <= heldout["masked_lm_accuracy"] <= 1
    again = run_benchmark("benchmarks.learning.huggingface_from_scratch", *flags, results=work)
    assert f"Resuming at step {plan['num_train_steps']} of {plan['num_train_steps']}" in again.stdout
    assert not [line for line in again.stdout.splitlines() if line.startswith(("step ", "eval step"))], again.stdout
    assert (run_dir / "eval_history.jsonl").read_text().splitlines() == history


def test_from_scratch_comparison_reads_the_runs_histories(tmp_path):
    """benchmarks.learning.from_scratch: figures and targets from eval_history.jsonl files as the runs write them."""
    import json

    from benchmarks.learning import from_scratch

    def write(run, points, sop=None, append=False):
        directory = tmp_path / "work" / run
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / "eval_history.jsonl", "a" if append else "w") as f:
            for step, hours, at_mask in points:
                heldout = {"masked_lm_accuracy_at_mask": at_mask, "masked_lm_accuracy": at_mask + 0.1}
                record = {"step": step, "elapsed_seconds": hours * 3600, "heldout": heldout}
                if sop:
                    heldout["sentence_order_accuracy"] = sop[0]
                    record["training"] = {"sentence_order_accuracy": sop[1]}
                f.write(json.dumps(record) + "\n")

    def plan(run, steps, hugging_face=False):  # the step count each kind of run records for its budget
        record = {"num_train_steps": steps} if hugging_face else {"train_budget": {"num_train_steps": steps}}
        (tmp_path / "work" / run / ("train_budget.json" if hugging_face else "run_config.json")).write_text(
            json.dumps(record))

    write("runs/smallA3hM", [(500, 0.5, 0.06), (1000, 1.0, 0.16), (1500, 1.5, 0.21), (2000, 3.0, 0.26)], (0.72, 0.75))
    plan("runs/smallA3hM", 2000)
    write("runs/smallA3h", [(500, 0.5, 0.06), (1000, 1.5, 0.15), (2000, 3.0, 0.19)], (0.60, 0.80))
    plan("runs/smallA3h", 2000)
    # The ablation (documents one at a time) is a row, not a speed target.
    write("runs/smallA3hD", [(500, 0.5, 0.06), (1000, 3.0, 0.17)], (0.60, 0.80))
    # Hugging Face's run has not been made: its row says so and its target cannot be judged yet.
    from_scratch.main([f"--work_dir={tmp_path / 'work'}", f"--results_dir={tmp_path / 'results'}"])
    text = (tmp_path / "results" / "from_scratch.md").read_text()
    rows = {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| albert_tf") or line.startswith("| Hugging")}
    assert rows["albert_tf, documents"][:9] == ["2,000", "3.00", "26.0", "26.0", "72.0", "75.0", "+3.0", "1.00",
                                                "1.50"]
    assert rows["albert_tf, static dupe 10"][6:9] == ["+20.0", "1.50", "-"]
    assert rows["Hugging Face, MLM only"][0] == "not run yet"
    assert rows["albert_tf, documents one at a time"][:3] == ["1,000", "3.00", "17.0"]
    assert "sooner than albert_tf, documents one at a time" not in text
    assert "- held-out accuracy at [MASK] >= 25%: met" in text
    assert "- 20% at [MASK] at least 1.5x sooner than albert_tf, static dupe 10: met" in text  # never: its 3 h
    assert "sooner than Hugging Face, MLM only: not yet measurable" in text
    assert (tmp_path / "results" / "from_scratch.png").stat().st_size > 0
    assert "inside its budget" not in text

    # Runs inside their budgets: steps say "N of M"; the candidate's end-of-budget figures wait for its end,
    # and a peer that has not reached 20% yet is judged once its hours exceed 1.5x the candidate's.
    write("runs/hf_scratch", [(500, 0.5, 0.05), (1000, 1.2, 0.10)])
    plan("runs/hf_scratch", 3000, hugging_face=True)
    plan("runs/smallA3hM", 4000)
    from_scratch.main([f"--work_dir={tmp_path / 'work'}", f"--results_dir={tmp_path / 'results'}"])
    text = (tmp_path / "results" / "from_scratch.md").read_text()
    assert "| albert_tf, documents | 2,000 of 4,000 | 3.00 |" in text and "inside its budget" in text
    assert "| Hugging Face, MLM only | 1,000 of 3,000 | 1.20 |" in text
    assert "- held-out accuracy at [MASK] >= 25%: not yet measurable" in text
    assert "sooner than albert_tf, static dupe 10: met" in text
    assert "sooner than Hugging Face, MLM only: not yet measurable" in text  # 1.2 h < 1.5 x 1.5 h, still running
    write("runs/hf_scratch", [(1500, 2.3, 0.11)], append=True)
    from_scratch.main([f"--work_dir={tmp_path / 'work'}", f"--results_dir={tmp_path / 'results'}"])
    assert "sooner than Hugging Face, MLM only: met" in (tmp_path / "results" / "from_scratch.md").read_text()


def test_every_recipe_the_docs_and_the_demo_name_exists():
    """A recipe renamed or dropped in benchmarks.learning.pretraining_recipes leaves no command in the docs, the
    README files or the demo's closing advice that the driver would refuse."""
    import re

    from benchmarks.learning.pretraining_recipes import RECIPES

    texts = [REPO_ROOT / "albert_tf" / "demo.py", REPO_ROOT / "README.md", *REPO_ROOT.glob("docs/*.md"),
             *REPO_ROOT.glob("benchmarks/**/*.md")]
    named = {(path.name, recipe) for path in texts
             for recipes in re.findall(r"--recipes=([\w,]+)", path.read_text()) for recipe in recipes.split(",")}
    assert sorted(pair for pair in named if pair[1] not in RECIPES) == []


def test_the_demo_quotes_the_large_corpus_run_as_recorded():
    """The demo's closing advice gives the figures of the recipe that learns best: the 240 MB corpus's run and
    the 14 MB corpus's at the same steps, as their results files record them, and names the benchmark that
    remakes them."""
    import json

    demo = (REPO_ROOT / "albert_tf" / "demo.py").read_text()
    assert "python -m benchmarks.learning.large_corpus" in demo
    with open(REPO_ROOT / "benchmarks" / "results" / "large_corpus.json") as f:
        final = json.load(f)["history"][-1]
    with open(REPO_ROOT / "benchmarks" / "results" / "from_scratch.json") as f:
        small = next(run for run in json.load(f)["runs"] if run["role"] == "candidate")
    quoted = [final["heldout"]["masked_lm_accuracy_at_mask"], final["heldout"]["sentence_order_accuracy"],
              small["at_mask"], small["sop"]]
    for figure in quoted:
        assert f"{figure * 100:.1f}%" in demo, figure
    assert f"({small['train_sop'] * 100:.0f}%)" in demo


def test_the_recipe_table_lists_only_recipes_with_figures(tmp_path):
    """A recipe is a row when its run is in the work directory or its curve is recorded; never-trained ones are not."""
    from benchmarks.learning.pretraining_recipes import RECIPES, figures_source

    recipe = RECIPES["small_adamw_3h"]
    recorded = {"curves": {"small_adamw_3h": [], "small_adamw": [{"step": 500}]}, "cloze": {}}
    assert figures_source(str(tmp_path), "small_adamw_3h", recipe, recorded) is None
    assert figures_source(str(tmp_path), "small_adamw", RECIPES["small_adamw"], recorded) == "recorded"
    (tmp_path / "runs" / recipe.run).mkdir(parents=True)
    assert figures_source(str(tmp_path), "small_adamw_3h", recipe, recorded) == "run"


def test_large_corpus_report_sets_the_run_beside_the_recorded_one_and_judges_its_goals(tmp_path):
    """benchmarks.learning.large_corpus --report_only: the data stages' figures, the run at equal steps beside the
    14 MB corpus's recorded run, passes from the data's token counts, and the goals judged only at the end."""
    import json

    from benchmarks.learning import large_corpus

    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "measurements.json").write_text(json.dumps({
        "data_local": {"seconds": 30.0, "peak_rss_mb": 280.0, "disk_mb": 85.0},
        "data_beam": {"seconds": 45.0, "peak_rss_mb": 2100.0, "disk_mb": 85.0, "same_bytes_as_local": True}}))
    (work / "data" / "documents.metadata.json").write_text(json.dumps({"statistics": {"tokens": 6_000_000}}))
    (work / "data" / "heldout.metadata.json").write_text(json.dumps({"statistics": {"tokens": 600_000,
                                                                                   "instances": 10_000}}))
    run = work / large_corpus.RUN
    run.mkdir(parents=True)

    def history(points):
        with open(run / "eval_history.jsonl", "w") as f:
            for step, at_mask, sop, train_sop, phase in points:
                f.write(json.dumps({"step": step, "elapsed_seconds": step / 2, "phase": phase,
                                    "heldout": {"masked_lm_accuracy_at_mask": at_mask, "sentence_order_accuracy": sop},
                                    "training": {"sentence_order_accuracy": train_sop}}) + "\n")

    history([(2000, 0.12, 0.60, 0.61, "learning"), (3000, 0.15, 0.62, 0.63, "learning")])
    large_corpus.main([f"--work_dir={work}", "--report_only", f"--results_dir={tmp_path / 'results'}"])
    text = (tmp_path / "results" / "large_corpus.md").read_text()
    assert "| training documents, Beam FnApiRunner multi-processing (2 workers) | 45 | 2,100 | 85.0 | yes |" in text
    rows = [line for line in text.splitlines() if line.startswith("| 2,000") or line.startswith("| 3,000")]
    # 2,000 steps x 64 sequences over 6M tokens / 60 tokens an instance = 1.28 passes; the recorded run's
    # figures at the same step sit beside.
    assert rows[0].split(" | ")[8] == "1.28" and rows[1].split(" | ")[3] == "15.0", rows
    recorded, _, _ = large_corpus.recorded_small_corpus()
    assert rows[0].split(" | ")[4] == f"{recorded[2000]['masked_lm_accuracy_at_mask'] * 100:.1f}"
    assert "- held-out sentence order >= 65%: not yet measurable" in text

    # At the planned end: judged; a memorizing evaluation on the way breaks its goal.
    end = large_corpus.RECORDED_STEPS
    history([(2000, 0.12, 0.60, 0.61, "memorizing"), (end, 0.26, 0.67, 0.70, "learning")])
    large_corpus.main([f"--work_dir={work}", "--report_only", f"--results_dir={tmp_path / 'results'}"])
    text = (tmp_path / "results" / "large_corpus.md").read_text()
    assert "- held-out accuracy at [MASK] >= 25%: met" in text
    assert "- held-out sentence order >= 65%: met" in text and ">= 70% (the moonshot): not met" in text
    assert "within 5 points at the end: met" in text and "never 'memorizing': not met" in text
    assert "- SQuAD v1.1 F1 at least +5 over random init: not yet measurable" in text

    # The transfer grid's summary: each task's means, gain and the noise to judge it by; SQuAD's gain judged.
    (work / "transfer").mkdir()
    summary = {"squad/pretrained": {"metric": "f1", "values": [14.0, 15.0, 16.0], "mean": 15.0, "std": 0.8},
               "squad/random init": {"metric": "f1", "values": [8.0, 9.5, 9.0], "mean": 8.83, "std": 0.6}}
    (work / "transfer" / "transfer.json").write_text(json.dumps({"summary": summary, "args": {"max_seq_length": 48}}))
    large_corpus.main([f"--work_dir={work}", "--report_only", f"--results_dir={tmp_path / 'results'}"])
    text = (tmp_path / "results" / "large_corpus.md").read_text()
    assert "| squad | f1 | 3 | 15.00 | 8.83 | +6.17 | 0.80 |" in text
    assert "- SQuAD v1.1 F1 at least +5 over random init: met" in text
    assert "SQuAD's training windows" not in text  # the grid's SQuAD split is not there
    # With the split: the share of its windows that hold the answer (here the cached count at the grid's length).
    (work / "transfer" / "squad_train.json").write_text("{}")
    (work / "squad_windows.json").write_text(json.dumps({"max_seq_length": 48, "questions": 10, "windows": 80,
                                                          "with_answer": 12}))
    large_corpus.main([f"--work_dir={work}", "--report_only", f"--results_dir={tmp_path / 'results'}"])
    text = (tmp_path / "results" / "large_corpus.md").read_text()
    assert "SQuAD's training windows at seq 48: 80 from 10 questions, 15.0% of them holding the answer" in text
    assert "Cloze sentences" not in text  # no checkpoint kept to fill them

    # Pretraining ended: the best kept checkpoint's cloze answers (here its cached ones), beside the recorded run's.
    (run / f"ckpt-{end}.index").write_text("")
    row = {"text": "the old [MASK] sat by the fire", "answer": "man", "predictions": ["man", "woman", "dog"],
           "probabilities": [0.3, 0.2, 0.1]}
    (work / "cloze.json").write_text(json.dumps({"step": end, "items": 1, "top1_accuracy": 1.0, "top5_accuracy": 1.0,
                                                 "constant_answer_accuracy": 1.0, "distinct_top1": 1, "rows": [row]}))
    large_corpus.main([f"--work_dir={work}", "--report_only", f"--results_dir={tmp_path / 'results'}"])
    text = (tmp_path / "results" / "large_corpus.md").read_text()
    assert f"filled by the checkpoint at step {end:,}" in text
    assert "| the old [MASK] sat by the fire | man | **man**, woman, dog |" in text
    with open(os.path.join(large_corpus.RESULTS, "pretraining_recipes.json")) as f:
        recorded_step = json.load(f)["cloze"][large_corpus.RECORDED_RECIPE]["step"]
    assert f"The 14 MB corpus's run at step {recorded_step:,} on its own held-out sentences" in text


def test_answer_windows_counts_the_grid_squad_windows_that_hold_the_answer(tmp_path_factory):
    """The transfer grid's SQuAD windows at its settings: a long context makes several windows per question, and
    an answer at the context's start lies in the first window alone (the windows step on by half a window)."""
    import json

    from text_fixtures import train_small_spm

    from benchmarks.downstream.transfer import answer_windows

    spm = train_small_spm(tmp_path_factory)
    context = "Alpha " + " ".join(["the river ran past the old mill and on to the sea"] * 8)
    questions = [{"id": str(i), "question": question, "answers": [{"text": "Alpha", "answer_start": 0}]}
                 for i, question in enumerate(["what came first?", "which word opens it?"])]
    train_file = tmp_path_factory.mktemp("squad") / "train.json"
    train_file.write_text(json.dumps({"version": "1.1", "data": [
        {"title": "t", "paragraphs": [{"context": context, "qas": questions}]}]}))
    counts = answer_windows(str(train_file), str(spm), max_seq_length=32)
    assert counts["questions"] == 2 and counts["with_answer"] == 2
    assert counts["windows"] % 2 == 0 and counts["windows"] >= 2 * 4, counts


def test_the_torch_original_adamw_takes_albert_tfs_steps_at_its_rates():
    """The tagging benchmark's Hugging Face run with the original optimizer: its steps are albert_tf's
    AdamWeightDecay's (no bias correction, decay inside the step, none where a group says 0), not torch's AdamW's,
    and its schedule gives albert_tf's WarmupPolynomialDecay rates."""
    import keras
    import numpy as np
    import torch

    from albert_tf.optimization.original_optimizers import AdamWeightDecay
    from albert_tf.optimization.schedules import WarmupPolynomialDecay
    from benchmarks.downstream.original_adamw_torch import OriginalAdamW, original_schedule

    rng = np.random.default_rng(0)
    start = {"kernel": rng.normal(size=(3, 2)).astype(np.float32), "bias": rng.normal(size=2).astype(np.float32)}
    gradients = [{name: rng.normal(size=value.shape).astype(np.float32) for name, value in start.items()}
                 for _ in range(4)]

    variables = {name: keras.Variable(value, name=name) for name, value in start.items()}
    ours = AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.01)
    parameters = {name: torch.nn.Parameter(torch.tensor(value)) for name, value in start.items()}
    theirs = OriginalAdamW([{"params": [parameters["kernel"]], "weight_decay": 0.01},
                            {"params": [parameters["bias"]], "weight_decay": 0.0}], lr=0.1)
    for step in gradients:
        ours.apply([step[name] for name in variables], list(variables.values()))
        for name, parameter in parameters.items():
            parameter.grad = torch.tensor(step[name])
        theirs.step()
    for name in start:
        np.testing.assert_allclose(parameters[name].detach().numpy(), variables[name].numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(variables["kernel"].numpy(), start["kernel"])

    ours = WarmupPolynomialDecay(2.0, num_train_steps=10, num_warmup_steps=3)
    optimizer = OriginalAdamW([torch.nn.Parameter(torch.zeros(1))], lr=2.0)
    schedule = original_schedule(optimizer, 3, 10)
    rates = []
    for _ in range(12):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    np.testing.assert_allclose(rates, [float(ours(step)) for step in range(12)], rtol=1e-6, atol=1e-7)


def test_the_torch_side_excludes_the_originals_decay_patterns_without_loading_tensorflow():
    """The Hugging Face run with the original's optimizer leaves out of decay what albert_tf's AdamWeightDecay does
    (every LayerNorm, full_layer_layer_norm too, and every bias), run_glue's run what run_glue does; building the
    groups loads no TensorFlow into the PyTorch process (the constant is a copy, held equal here)."""
    from albert_tf.optimization import EXCLUDE_FROM_WEIGHT_DECAY
    from benchmarks.downstream import original_adamw_torch

    assert original_adamw_torch.EXCLUDE_FROM_WEIGHT_DECAY == EXCLUDE_FROM_WEIGHT_DECAY
    script = """
import sys, torch
from benchmarks.downstream.own_labels import weight_decay_groups

class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ffn = torch.nn.Linear(2, 2)
        self.full_layer_layer_norm = torch.nn.LayerNorm(2)
        self.LayerNorm = torch.nn.LayerNorm(2)

model = Layer()
names = {id(p): n for n, p in model.named_parameters()}
for original in (True, False):
    decayed, kept = (sorted(names[id(p)] for p in group["params"]) for group in weight_decay_groups(model, original))
    print(original, decayed)
print("tensorflow" in sys.modules)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == [
        "True ['ffn.weight']", "False ['ffn.weight', 'full_layer_layer_norm.weight']", "False"]


# An absolute path of a machine (the work directory, scratch, home): what no recorded result may name.
MACHINE_PATH = r"/(?:work|tmp|root|home)/"


def test_no_recorded_result_names_a_path_of_the_machine_that_measured_it():
    """Results, their readings and the pages made of them name paths relative to the repository or the work
    directory beside it, or $TMPDIR/... for scratch: a reader on another machine has none of the measuring one's."""
    import re

    files = [path for path in (REPO_ROOT / "benchmarks" / "results").rglob("*") if path.suffix in (".md", ".json")]
    files += [REPO_ROOT / "benchmarks" / "README.md", REPO_ROOT / "docs" / "benchmark_readings.md"]
    assert len(files) > 50
    named = [f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()[:120]}" for path in files
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(MACHINE_PATH, line)]
    assert not named, "\n".join(named)


def test_results_are_written_with_paths_relative_to_the_repository_or_the_work_directory(tmp_path, monkeypatch):
    import json
    import re
    import tempfile

    from benchmarks import common

    work, repo = common.WORK, common.REPO
    # A scratch directory of its own: a checkout whose parent is the temporary directory itself (a clone in /tmp)
    # would make the work directory and the scratch one the same.
    scratch = str(tmp_path / "scratch")
    monkeypatch.setattr(tempfile, "tempdir", scratch)
    assert common.portable_path(os.path.join(repo, "benchmarks", "results")) == "benchmarks/results"
    assert common.portable_path(os.path.join(repo, "..", "shared", "data", "glue")) == "../shared/data/glue"
    assert common.portable_path(os.path.join(work, "albert_large", "spm.model")) == "../albert_large/spm.model"
    assert common.portable_path(os.path.join(scratch, "albert_recipes")) == "$TMPDIR/albert_recipes"
    assert common.portable_path("benchmarks/results") == "benchmarks/results"  # relative: as it is
    assert common.portable(f"Model: {work}/albert_large/runs/x (hidden 256). Work directory: {work}/albert_large."
                           ) == "Model: ../albert_large/runs/x (hidden 256). Work directory: ../albert_large."
    # A directory whose name only starts like the repository's is another one of the work directory.
    assert common.portable(f"--input={repo}line/a.txt") == f"--input=../{os.path.basename(repo)}line/a.txt"

    # What write_results writes, the record's fields and commands as the table's text.
    record = {"args": {"results_dir": os.path.join(repo, "benchmarks", "results"),
                       "work_dir": os.path.join(scratch, "albert_x"), "seeds": [1, 2], "steps": 3},
              "commands": [f"python -m tool --input_file={work}/shared/data/corpus.txt --work_dir={scratch}/y"]}
    results = tmp_path / "results"
    common.write_results(str(results), "example", f"Corpus: {work}/shared/data/corpus.txt\n", record)
    assert (results / "example.md").read_text() == "Corpus: ../shared/data/corpus.txt\n"
    written = json.loads((results / "example.json").read_text())
    assert written == {"args": {"results_dir": "benchmarks/results", "work_dir": "$TMPDIR/albert_x", "seeds": [1, 2],
                                "steps": 3},
                       "commands": ["python -m tool --input_file=../shared/data/corpus.txt "
                                    "--work_dir=$TMPDIR/y"]}
    assert not re.search(MACHINE_PATH, (results / "example.json").read_text())


def test_cpu_serving_compares_bfloat16_with_onnx_runtime_float32():
    """bfloat16 replaces float32 where the CPU computes it: its rows stand against ONNX Runtime's fastest fp32
    path, int8 against int8, fp32 against fp32, each side's fastest row."""
    from benchmarks.speed.cpu_serving import ratios

    def row(implementation, precision, p50_ms):
        return {"model": "encoder", "text": "short", "batch": 1, "threads": 1, "implementation": implementation,
                "precision": precision, "p50_ms": p50_ms}

    records = ratios([row("albert_tf SavedModel", "fp32", 40.0), row("albert_tf SavedModel bfloat16", "bf16", 20.0),
                      row("albert_tf SavedModel --serving_xla bfloat16", "bf16", 25.0),
                      row("albert_tf LiteRT dynamic_int8", "int8", 9.0), row("onnxruntime", "fp32", 21.6),
                      row("onnxruntime, transformers optimizer", "fp32", 30.0),
                      row("onnxruntime quantize_dynamic", "int8", 7.35)])
    by_precision = {record["precision"]: record for record in records}
    assert set(by_precision) == {"fp32", "bf16", "int8"}
    assert (by_precision["bf16"]["albert_tf"], by_precision["bf16"]["onnx"]) == (
        "albert_tf SavedModel bfloat16", "onnxruntime")
    assert by_precision["bf16"]["albert_tf_speedup"] == pytest.approx(21.6 / 20.0)
    assert by_precision["fp32"]["albert_tf_speedup"] == pytest.approx(21.6 / 40.0)
    assert by_precision["int8"]["onnx"] == "onnxruntime quantize_dynamic"


def test_cpu_serving_goals_judge_the_bfloat16_savedmodel_against_onnx_runtime_float32():
    """The bfloat16 SavedModel's goals read its rows alone: >= 1.0x ONNX Runtime fp32 in every row and >= 1.2x at
    batch 1, medium texts, 1 thread; a slow fp32 or int8 row misses only the every-precision goal."""
    from benchmarks.speed.cpu_serving import goals

    def ratio(text, precision, speedup, threads=1):
        return {"model": "encoder", "text": text, "batch": 1, "threads": threads, "precision": precision,
                "albert_tf_speedup": speedup}

    same_model = [{"max_diff_same_ids": 1e-6}]
    met = dict(goals([ratio("medium", "bf16", 1.34), ratio("short", "bf16", 1.05), ratio("short", "fp32", 0.8)],
                     same_model))
    assert list(met.values()) == [True, True, True, False]
    short_row_slow = dict(goals([ratio("medium", "bf16", 1.34), ratio("short", "bf16", 0.97)], same_model))
    assert list(short_row_slow.values()) == [True, False, True, True]
    medium_below_goal = dict(goals([ratio("medium", "bf16", 1.15), ratio("medium", "bf16", 1.5, threads=2)],
                                   same_model))
    assert list(medium_below_goal.values()) == [True, True, False, True]
    no_bf16 = list(dict(goals([ratio("medium", "fp32", 1.3)], same_model)).values())
    assert no_bf16 == [True, False, False, True]  # no bfloat16 row: its goals are not met


def test_the_accents_comparison_counts_voiced_kana_and_refuses_runs_of_unequal_length(tmp_path):
    """cjk_transfer's accents stage on two stand-in runs: a vocabulary trained with accents kept holds voiced-kana
    pieces and one trained with the original's stripping none; runs pretrained for different step counts are
    refused (their held-out accuracies would compare the steps, not the accents)."""
    import json

    from albert_tf.data.vocabulary import train
    from benchmarks.downstream import cjk_transfer

    # "Gakkou de benkyou shimasu. Panda wa zou yori chiisai desu." and friends: voiced (が, ぶ, ぞ) and semi-voiced
    # (パ) kana in words.
    lines = ["学校で勉強します。", "パンダは象より小さいです。", "ごはんを食べました。", "ぶどうとバナナが好きです。",
             "デパートで本を買いました。", "ぞうさんはどこですか。"] * 20
    corpus = tmp_path / "ja.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    work = tmp_path / "work" / "ja"

    def stand_in_run(directory, keep_accents, steps, accuracy):
        directory.mkdir(parents=True)
        train([str(corpus)], str(directory / "spm"), vocab_size=80, hard_vocab_limit=False, keep_accents=keep_accents)
        run = directory / "runs" / cjk_transfer.PRETRAINING.run
        run.mkdir(parents=True)
        (run / "run_config.json").write_text(json.dumps({"config": {"num_train_steps": steps}}))
        (run / f"ckpt-{steps}.index").write_bytes(b"")
        (run / "eval_history.jsonl").write_text(json.dumps(
            {"step": steps, "heldout": {"masked_lm_accuracy_at_mask": accuracy}, "frequent_piece_level": 0.04}) + "\n")

    stand_in_run(work, True, 10, 0.07)
    stand_in_run(tmp_path / "work" / "ja_stripped", False, 10, 0.08)
    results = tmp_path / "results"
    cjk_transfer.accents(str(work), str(results))
    figures = json.loads((results / "accents_ja.json").read_text())
    assert figures["kept"]["voiced_kana_pieces"] > 0 and figures["stripped"]["voiced_kana_pieces"] == 0, figures
    accuracies = [figures[name]["heldout_accuracy_at_mask"] for name in ("kept", "stripped")]
    assert accuracies == [0.07, 0.08], figures
    assert "| accents stripped | 0 of " in (results / "accents_ja.md").read_text()

    (work / "runs" / cjk_transfer.PRETRAINING.run / "ckpt-20.index").write_bytes(b"")
    (work / "runs" / cjk_transfer.PRETRAINING.run / "run_config.json").write_text(
        json.dumps({"config": {"num_train_steps": 20}}))
    with pytest.raises(SystemExit, match="the same --train_steps"):
        cjk_transfer.accents(str(work), str(tmp_path / "refused"))
    assert not (tmp_path / "refused").exists()


def test_a_held_out_set_smaller_than_a_batch_is_evaluated_whole(tmp_path):
    """pretraining_recipes' evaluation flags: 64 a batch, or every instance in one batch where the held-out set of a
    small corpus holds fewer (run_pretraining refuses a set of less than one batch)."""
    import json

    from benchmarks.learning.pretraining_recipes import eval_flags

    def batch_flag(instances):
        prefix = tmp_path / f"heldout{instances}"
        metadata = {"statistics": {"instances": instances}}
        (tmp_path / f"heldout{instances}.metadata.json").write_text(json.dumps(metadata))
        flags = eval_flags(str(prefix))
        assert f"--eval_input_file={prefix}" in flags, flags
        return [flag for flag in flags if flag.startswith("--eval_batch_size=")]

    assert batch_flag(12) == ["--eval_batch_size=12"]
    assert batch_flag(5000) == ["--eval_batch_size=64"]


def test_the_served_entities_check_counts_a_sentence_equal_only_when_every_span_is():
    """served_entities.compare: a sentence is equal when the served entities have the file's types and character
    spans, in order; the tagging benchmark's goal is met only when every sentence of every seed is."""
    from benchmarks.downstream.served_entities import compare
    from benchmarks.downstream.tagging import served_goal

    rows = [{"where": "test.iob2:1", "text": "张三在北京", "entities": [
                {"text": "张三", "type": "PER", "start": 0, "end": 2},
                {"text": "北京", "type": "LOC", "start": 3, "end": 5}]},
            {"where": "test.iob2:5", "text": "서울에서", "entities": [{"text": "서울", "type": "LOC", "start": 0,
                                                                   "end": 2}]},
            {"where": "test.iob2:9", "text": "no entity", "entities": []}]
    served = [[{"type": "PER", "start": 0, "end": 2, "text": "张三"}, {"type": "LOC", "start": 3, "end": 5}],
              [{"type": "LOC", "start": 0, "end": 3, "text": "서울에"}],  # one character too far
              []]
    result = compare(rows, served)
    assert (result["sentences"], result["equal"], result["entities"]) == (3, 2, 3)
    assert [difference["where"] for difference in result["differences"]] == ["test.iob2:5"]
    assert result["differences"][0]["served"] == [("LOC", 0, 3)]
    assert served_goal([{"served": result}, {"served": compare(rows, [served[0], [rows[1]["entities"][0]], []])}]
                       )["met"] is False
    goal = served_goal([{"served": compare(rows, [row["entities"] for row in rows])}] * 3)
    assert goal["met"] is True and goal["measured"].endswith("3 of 3, 3 of 3, 3 of 3")
