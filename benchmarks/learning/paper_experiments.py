r"""The paper's controlled experiments at small scale: sharing (Table 4), SOP vs NSP vs none (Table 5), Figure 2.

  python -m benchmarks.learning.paper_experiments --variants=all,none,attention,ffn,nsp,mlm_only   # trains, resuming
  python -m benchmarks.learning.paper_experiments --evaluate_only [--downstream]                # tables from what exists

Every variant uses the recipe small_adamw_6k of benchmarks/learning/pretraining_recipes.py
(albert_small with the 8,000-piece vocabulary, seq 64, batch 64, dupe factor 10,
AdamW 5e-4 with 1,000 warmup steps, XLA) and the same data, held-out split, seed
and budget: --steps, default 6,000, the recipe's own schedule (the learning rate
decays to 0 at the budget, so each run ends at a finished schedule). With that
budget the all-shared SOP variant IS the recipe, so its run from
pretraining_recipes.py (WORK_DIR/runs/smallA6k) is reused, and the five others
take about 70 minutes each alone on a 2-core AVX2 CPU (about 1.4 steps/s). It
shares the recipe benchmark's work directory: the split, vocabulary and SOP data
are made once.

  Table 4 (cross-layer sharing, all with SOP): all-shared (ALBERT), attention only,
    FFN only, not shared (BERT) at the same E and H.
  Table 5 (sentence-level task, all-shared): SOP, NSP (data made with
    --random_next_sentence: B is a random other document's text for half the
    pairs) and none (--sentence_loss_weight=0: MLM only; its sentence head stays
    at initialization, so its SOP/NSP scores show chance).

Each variant's checkpoints are evaluated on the same held-out documents: MLM
accuracy at [MASK] inputs and sentence-order accuracy on SOP pairs, and
next-sentence accuracy on NSP pairs made from the same documents.
`--downstream` adds the SST-2 score of benchmarks/downstream/transfer.py (5,000 training
examples, seed 1) for each variant's final checkpoint. Figure 2 comes from
`albert_tf.analyze` on the all-shared and not-shared checkpoints.

Writes benchmarks/results/paper_experiments.{json,md} and the figure PNGs.
Rerunning reuses finished runs, evaluations and fine-tunings.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import types

from benchmarks.learning import pretraining_recipes as recipes
from benchmarks.learning.learning_curve import evaluate_checkpoints
from benchmarks.common import REPO, RESULTS, SHARED_CORPUS, SHARED_DATA, child_env, portable

BASE = recipes.RECIPES["small_adamw_6k"]

Variant = collections.namedtuple("Variant", "sharing sentence_task sentence_loss_weight label")
VARIANTS = {
    "all": Variant("all", "sop", 1.0, "ALBERT all-shared, SOP"),
    "attention": Variant("attention", "sop", 1.0, "shared attention"),
    "ffn": Variant("ffn", "sop", 1.0, "shared FFN"),
    "none": Variant("none", "sop", 1.0, "not shared (BERT), SOP"),
    "nsp": Variant("all", "nsp", 1.0, "all-shared, NSP"),
    "mlm_only": Variant("all", "sop", 0.0, "all-shared, MLM only"),
}
TABLE4 = ("all", "attention", "ffn", "none")
TABLE5 = ("mlm_only", "nsp", "all")

# What the paper reports (ALBERT-base, full scale). Table 5's intrinsic accuracies (%):
PAPER_TABLE5 = {"mlm_only": {"mlm": 54.9, "nsp": 52.4, "sop": 53.3},
                "nsp": {"mlm": 54.5, "nsp": 90.5, "sop": 52.0},
                "all": {"mlm": 54.0, "nsp": 78.9, "sop": 86.5}}
PAPER_TABLE4_READING = ("sharing the FFN costs most, sharing attention costs little; all-shared is a little "
                        "below not-shared at a fraction of the parameters")


def variant_config(work, name, variant):
    path = os.path.join(work, "paper", f"{name}.json")
    if not os.path.exists(path):
        with open(os.path.join(work, f"{BASE.model}8k.json")) as f:
            config = json.load(f)
        config["sharing"] = variant.sharing
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(config, f, indent=2)
    return path


def run_dir(work, name):
    return os.path.join(work, "paper", "runs", name)


def reuse_recipe_run(work, name, steps):
    """The all-shared SOP variant with the recipe's own budget is the recipe's run: link it (finished or
    not: rerunning with the same flags resumes it) instead of training it twice."""
    recipe_run = os.path.join(work, "runs", BASE.run)
    if name != "all" or steps != BASE.steps or not os.path.isdir(recipe_run) or os.path.lexists(run_dir(work, name)):
        return
    os.makedirs(os.path.dirname(run_dir(work, name)), exist_ok=True)
    os.symlink(recipe_run, run_dir(work, name))
    print(f"all: the recipe's run {recipe_run} is this variant (same recipe, data, seed and budget)", flush=True)


def train(work, name, variant, spm, steps):
    reuse_recipe_run(work, name, steps)
    data = recipes.data_prefix(work, BASE, "train", nsp=variant.sentence_task == "nsp")
    return recipes.train(work, BASE, spm, data=data,
                         albert_config=variant_config(work, name, variant), output_dir=run_dir(work, name), steps=steps,
                         save_checkpoints_steps=500,
                         extra_flags=[f"--sentence_loss_weight={variant.sentence_loss_weight}"])


def evaluate(work, name):
    """{step: metrics} on SOP and NSP held-out pairs for every checkpoint (cached beside the run)."""
    directory = run_dir(work, name)

    def on_both(steps):
        on_sop = evaluate_checkpoints(directory, recipes.data_prefix(work, BASE, "heldout"), BASE.seq_length,
                                      BASE.predictions, only_steps=steps)
        nsp_heldout = recipes.data_prefix(work, BASE, "heldout", nsp=True)
        on_nsp = {m["step"]: m for m in evaluate_checkpoints(directory, nsp_heldout, BASE.seq_length,
                                                             BASE.predictions, only_steps=steps)}
        for metrics in on_sop:
            metrics["next_sentence_accuracy"] = on_nsp[metrics["step"]]["sentence_order_accuracy"]
        return on_sop

    return recipes.evaluated_curve(directory, on_both)


def downstream(work, name, args, stored_only=False):
    """SST-2 accuracy (seed 1) of fine-tuning the variant's newest checkpoint, via transfer.py's runner.

    stored_only=True fine-tunes nothing: the stored score for these settings, or None."""
    import transfer

    settings = types.SimpleNamespace(pretrained=run_dir(work, name), glue_steps=args.glue_steps,
                                     max_seq_length=BASE.seq_length, learning_rate=1e-4, batch_size=32,
                                     work_dir=os.path.join(work, "paper", "sst-2", name))
    data = os.path.join(work, "paper", "sst-2", "data")
    if not stored_only and not os.path.exists(os.path.join(data, "dev.tsv")):
        transfer.sst2_subset(os.path.join(args.glue_dir, "SST-2"), data, 5000)
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    results = transfer.glue_runs("sst-2", settings, 1, env, data, variant_config(work, name, VARIANTS[name]),
                                 os.path.join(work, "spm.model"), starts=("pretrained",), stored_only=stored_only)
    return results["pretrained"]["accuracy"] if "pretrained" in results else None


def parameters(work, name):
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.parameter_breakdown import parameter_breakdown, shape_only_pretrainer

    config = AlbertConfig.from_json_file(variant_config(work, name, VARIANTS[name]))
    return parameter_breakdown(shape_only_pretrainer(config))["encoder"]


def figure2(work, finished, results_dir):
    """albert_tf.analyze on the all-shared and not-shared checkpoints; returns its JSON or None."""
    if not {"all", "none"} <= finished:
        return None
    output = os.path.join(results_dir, "paper_figure2")
    code = recipes.tool("albert_tf.analyze",
                        f"--checkpoint=ALBERT={run_dir(work, 'all')},BERT={run_dir(work, 'none')}",
                        f"--input_file={os.path.join(work, 'heldout.txt')}", f"--max_seq_length={BASE.seq_length}",
                        f"--output_dir={output}")
    if code != 0:
        return None
    with open(os.path.join(output, "figure2.json")) as f:
        return json.load(f)


def parameter_tables():
    """`python -m albert_tf.params --format=markdown`: every preset (Table 2), then Table 3's E sweep."""
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-m", "albert_tf.params", "--format=markdown"], capture_output=True,
                            text=True, env=env, cwd=REPO, check=True)
    return result.stdout.strip()


def percent(value):
    return "" if value is None else f"{100 * value:.1f}"


def plot_curves(rows, path):
    """Held-out accuracy at [MASK], SOP and NSP per checkpoint, one line per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("masked_lm_accuracy_at_mask", "MLM accuracy at [MASK] inputs"),
              ("sentence_order_accuracy", "sentence-order accuracy (SOP pairs)"),
              ("next_sentence_accuracy", "next-sentence accuracy (NSP pairs)"))
    figure, axes = plt.subplots(1, len(panels), figsize=(15, 4))
    for axis, (key, title) in zip(axes, panels):
        for name, row in rows.items():
            curve = row["curve"]
            axis.plot([m["step"] for m in curve], [m[key] for m in curve], marker=".", label=VARIANTS[name].label)
        if key != "masked_lm_accuracy_at_mask":
            axis.axhline(0.5, color="grey", linestyle="--", label="chance")
        axis.set(title=f"held-out {title}", xlabel="step")
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def write_results(args, rows, figure):
    os.makedirs(args.results_dir, exist_ok=True)
    lines = [f"Budget: {args.steps:,} steps per variant (batch {BASE.batch}, seq {BASE.seq_length}); figures at the "
             "newest evaluated checkpoint, held-out documents. Accuracies in %.", "",
             "Table 4, cross-layer sharing (all with SOP):", "",
             "| variant | encoder parameters | steps done | MLM at [MASK] | SOP | SST-2 |", "|---|---|---|---|---|---|"]
    for name in TABLE4:
        row = rows.get(name)
        if row:
            lines.append(f"| {VARIANTS[name].label} | {row['parameters']:,} | {row['step']:,} | "
                         f"{percent(row.get('at_mask'))} | {percent(row.get('sop'))} | {percent(row.get('sst2'))} |")
    lines += ["", f"The paper (ALBERT-base): {PAPER_TABLE4_READING}.", "",
              "Table 5, sentence-level task (all-shared), each model evaluated on both tasks:", "",
              "| trained with | steps done | MLM at [MASK] | NSP | SOP | SST-2 | paper: MLM / NSP / SOP |",
              "|---|---|---|---|---|---|---|"]
    for name in TABLE5:
        row = rows.get(name)
        if row:
            paper = PAPER_TABLE5[name]
            lines.append(f"| {VARIANTS[name].label} | {row['step']:,} | {percent(row.get('at_mask'))} | "
                         f"{percent(row.get('nsp'))} | {percent(row.get('sop'))} | {percent(row.get('sst2'))} | "
                         f"{paper['mlm']} / {paper['nsp']} / {paper['sop']} |")
    lines.append("")
    if rows:
        plot_curves(rows, os.path.join(args.results_dir, "paper_curves.png"))
        lines += ["![held-out curves per variant](results/paper_curves.png)", ""]
    if figure:
        lines += ["Figure 2 on held-out text (per layer; `albert_tf.analyze`):", "",
                  "![L2](results/paper_figure2/figure2_l2.png) ![cosine](results/paper_figure2/figure2_cosine.png)", ""]
    lines += ["Tables 2 and 3, parameter counts (no training; `python -m albert_tf.params --format=markdown`, "
              "the paper's rounded figures in the Paper column):", "", parameter_tables(), ""]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.results_dir, "paper_experiments.md"), "w") as f:
        f.write(portable(text))
    with open(os.path.join(args.results_dir, "paper_experiments.json"), "w") as f:
        json.dump(portable({"args": vars(args), "rows": rows, "figure2": figure}), f, indent=1)
    print(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=SHARED_CORPUS,
                        help="paragraph-per-line corpus, documents separated by blank lines")
    parser.add_argument("--work_dir", default="/tmp/albert_recipes",
                        help="the recipe benchmark's work directory (split, vocabulary, data); runs go to paper/")
    parser.add_argument("--variants", default="", help=f"comma-separated variants to train (resuming): "
                        f"{', '.join(VARIANTS)}")
    parser.add_argument("--steps", type=int, default=BASE.steps,
                        help="training steps per variant (the budget; default the recipe's 6,000: about 70 minutes "
                        "each on 2 AVX2 cores)")
    parser.add_argument("--evaluate_only", action="store_true", help="train nothing; evaluate and write the tables")
    parser.add_argument("--downstream", action="store_true",
                        help="also fine-tune each finished variant on SST-2 (5,000); without it, scores already "
                        "stored for the same settings are still reported")
    parser.add_argument("--glue_steps", type=int, default=500, help="SST-2 fine-tuning steps for --downstream")
    parser.add_argument("--results_dir", default=RESULTS, help="where paper_experiments.{json,md} and the plots go")
    parser.add_argument("--glue_dir", default=os.path.join(SHARED_DATA, "glue"),
                        help="holds SST-2/ for --downstream")
    args = parser.parse_args(argv)
    work = args.work_dir
    chosen = [name for name in args.variants.split(",") if name]
    unknown = [name for name in chosen if name not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    train_text, heldout_text, spm = recipes.prepare(work, args.corpus)
    recipes.make_data(work, BASE, (train_text, heldout_text), spm)
    recipes.make_data(work, BASE, (train_text, heldout_text), spm, nsp=True)
    for name in [] if args.evaluate_only else chosen:
        if train(work, name, VARIANTS[name], spm, args.steps) != 0:
            print(f"{name}: run_pretraining stopped; rerun to resume", flush=True)

    rows, finished = {}, set()
    for name in VARIANTS:
        curve = evaluate(work, name)
        if not curve:
            continue
        last = curve[-1]
        if last["step"] >= args.steps:
            finished.add(name)
        rows[name] = {"step": last["step"], "parameters": parameters(work, name),
                      "at_mask": last["masked_lm_accuracy_at_mask"], "sop": last["sentence_order_accuracy"],
                      "nsp": last["next_sentence_accuracy"], "curve": curve}
        if name in finished:
            # Without --downstream, scores already fine-tuned for these settings are still reported.
            sst2 = downstream(work, name, args, stored_only=not args.downstream)
            if sst2 is not None:
                rows[name]["sst2"] = sst2
    write_results(args, rows, figure2(work, finished, args.results_dir))


if __name__ == "__main__":
    main()
