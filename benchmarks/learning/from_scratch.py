r"""Pretraining from scratch on a time budget: does albert_tf on documents learn more per CPU-hour?

Runs of the same model (albert_small, the recipes' 8,000-piece vocabulary, seq 64, batch 64,
AdamW 5e-4), each given the same wall-clock budget and run alone on the machine, one after the other:

  python -m benchmarks.learning.pretraining_recipes --recipes=small_adamw_3h_mixed --work_dir=W
  python -m benchmarks.learning.pretraining_recipes --recipes=small_adamw_3h_dynamic --work_dir=W
  python -m benchmarks.learning.pretraining_recipes --recipes=small_adamw_3h --work_dir=W
  python -m benchmarks.learning.huggingface_from_scratch --work_dir=W --budget_hours=3
  python -m benchmarks.learning.from_scratch --work_dir=W          # this table and the curves

  - albert_tf on documents (create_pretraining_data --output_format=documents: new sentence-order
    pairs and masks every epoch), as run_pretraining reads them by default (instances drawn from 16
    documents in turn): the run the targets are for;
  - the same with one document's instances after another (--input_mixed_documents=1, the reader
    before round-robin): what the round-robin changes;
  - albert_tf on the original's static instances (10 masked copies of the corpus);
  - Hugging Face's from-scratch route (AlbertForMaskedLM, DataCollatorForLanguageModeling: dynamic
    masks, no sentence-order task).
Each fits its step count and decay to the budget from its measured step time, and evaluates all
held-out records (every 10th document of the corpus) every 500 steps into
RUN/eval_history.jsonl with the elapsed time. Each run resumes when its command is rerun, so a budget
can span sessions; the elapsed time is what the run itself measured.

This reads those histories and reports, per run: steps, held-out accuracy at [MASK] inputs (the part
that needs context) and sentence order, training-vs-held-out sentence order (the gap a memorizing
run opens), and the hours to first reach 15% and 20% at [MASK]; then the targets below, met or not.

Writes RESULTS/from_scratch.{md,json,png}.
"""

import argparse
import json
import os

from benchmarks.common import RESULTS, markdown_table, portable

# (label, run directory under WORK_DIR, role): the targets are the first run's; "peer" runs are what its
# speed is compared with, an "ablation" the same recipe without one of its choices.
RUNS = (
    ("albert_tf, documents", os.path.join("runs", "smallA3hM"), "candidate"),
    ("albert_tf, documents one at a time", os.path.join("runs", "smallA3hD"), "ablation"),
    ("albert_tf, static dupe 10", os.path.join("runs", "smallA3h"), "peer"),
    ("Hugging Face, MLM only", os.path.join("runs", "hf_scratch"), "peer"),
)
THRESHOLDS = (0.15, 0.20)
# What the documents run should reach within the budget (issue #29's targets).
TARGET_AT_MASK, TARGET_SOP, TARGET_SOP_GAP, TARGET_SPEEDUP = 0.25, 0.70, 0.05, 1.5


def read_history(path):
    """The evaluation records of an eval_history.jsonl, by step; [] when there is none."""
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return sorted(records, key=lambda record: record["step"])


# Where benchmarks.learning.huggingface_from_scratch records its budget plan (run_pretraining: run_config.json).
HUGGING_FACE_PLAN_FILE = "train_budget.json"


def planned_steps(run_dir):
    """The step count a run fitted to its budget, or None before it measured its step time: run_pretraining
    records it in run_config.json ("train_budget"), the Hugging Face script in HUGGING_FACE_PLAN_FILE."""
    for name, key in (("run_config.json", "train_budget"), (HUGGING_FACE_PLAN_FILE, None)):
        path = os.path.join(run_dir, name)
        if os.path.isfile(path):
            with open(path) as f:
                plan = json.load(f)
            plan = plan.get(key) if key else plan
            if plan:
                return plan["num_train_steps"]
    return None


def hours_to_reach(history, threshold):
    """Elapsed hours at the first evaluation with held-out accuracy at [MASK] >= threshold, or None."""
    for record in history:
        if record["heldout"]["masked_lm_accuracy_at_mask"] >= threshold:
            return record["elapsed_seconds"] / 3600
    return None


def summarize(label, history, role="peer", planned=None):
    """One run's row of figures (None where the run has no such figure). `planned`: the run's step count
    (planned_steps); a run whose last evaluation is before it is still inside its budget."""
    if not history:
        return {"run": label, "role": role, "evaluations": 0}
    last = history[-1]
    finished = planned is None or last["step"] >= planned
    heldout, training = last["heldout"], last.get("training") or {}
    sop = heldout.get("sentence_order_accuracy")
    train_sop = training.get("sentence_order_accuracy")
    return {
        "run": label,
        "role": role,
        "evaluations": len(history),
        "steps": last["step"],
        "planned_steps": planned,
        "finished": finished,
        "hours": last["elapsed_seconds"] / 3600,
        "at_mask": heldout["masked_lm_accuracy_at_mask"],
        "best_at_mask": max(record["heldout"]["masked_lm_accuracy_at_mask"] for record in history),
        "sop": sop,
        "train_sop": train_sop,
        "sop_gap": None if sop is None or train_sop is None else train_sop - sop,
        **{f"hours_to_{int(t * 100)}": hours_to_reach(history, t) for t in THRESHOLDS},
        "curve": [(record["elapsed_seconds"] / 3600, record["heldout"]["masked_lm_accuracy_at_mask"])
                  for record in history],
    }


def targets(rows):
    """[(target, met: bool or None when not measurable yet)] for the documents run (the first row); its
    speed against the peer runs. The end-of-budget figures of a run still inside its budget are judged
    at the end: None until then."""
    documents, others = rows[0], [row for row in rows[1:] if row.get("role") == "peer"]
    if not documents.get("evaluations"):
        return []

    def final(figure, met):
        return None if figure is None or not documents["finished"] else met

    result = [
        (f"held-out accuracy at [MASK] >= {TARGET_AT_MASK:.0%}",
         final(documents["at_mask"], documents["at_mask"] >= TARGET_AT_MASK)),
        (f"held-out sentence order >= {TARGET_SOP:.0%}",
         final(documents["sop"], documents["sop"] is not None and documents["sop"] >= TARGET_SOP)),
        (f"training and held-out sentence order within {TARGET_SOP_GAP * 100:.0f} points",
         final(documents["sop_gap"], documents["sop_gap"] is not None and abs(documents["sop_gap"]) <= TARGET_SOP_GAP)),
    ]
    mine = documents["hours_to_20"]
    for other in others:
        theirs = other.get("hours_to_20")
        if not other.get("evaluations") or (mine is None and not documents["finished"]):
            met = None
        elif mine is None:
            met = False
        elif theirs is not None:
            met = theirs >= TARGET_SPEEDUP * mine
        elif other["finished"] or other["hours"] >= TARGET_SPEEDUP * mine:
            # a run that never reached 20% took longer than its whole budget
            met = other["hours"] >= TARGET_SPEEDUP * mine
        else:
            met = None
        result.append((f"20% at [MASK] at least {TARGET_SPEEDUP}x sooner than {other['run']}", met))
    return result


def fmt(value, kind):
    if value is None:
        return "-"
    return {"pct": f"{value * 100:.1f}", "hours": f"{value:.2f}", "points": f"{value * 100:+.1f}",
            "int": f"{value:,}"}[kind]


def table(rows):
    header = ["run", "steps", "hours", "at [MASK] %", "best at [MASK] %", "SOP %", "training SOP %",
              "SOP gap (points)", "hours to 15%", "hours to 20%"]
    body = []
    for row in rows:
        if not row.get("evaluations"):
            body.append([row["run"], "not run yet", *["-"] * (len(header) - 2)])
            continue
        steps = fmt(row["steps"], "int") + ("" if row["finished"] else f" of {fmt(row['planned_steps'], 'int')}")
        body.append([row["run"], steps, fmt(row["hours"], "hours"), fmt(row["at_mask"], "pct"),
                     fmt(row["best_at_mask"], "pct"), fmt(row["sop"], "pct"), fmt(row["train_sop"], "pct"),
                     fmt(row["sop_gap"], "points"), fmt(row["hours_to_15"], "hours"),
                     fmt(row["hours_to_20"], "hours")])
    return markdown_table(header, body)


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    for row in rows:
        if row.get("curve"):
            hours, accuracy = zip(*row["curve"])
            axis.plot(hours, [a * 100 for a in accuracy], marker=".", label=row["run"])
    for threshold in THRESHOLDS:
        axis.axhline(threshold * 100, color="gray", linewidth=0.5, linestyle=":")
    axis.set(xlabel="hours (each run alone on the machine)", ylabel="held-out accuracy at [MASK] (%)",
             title="Pretraining albert_small from scratch on a time budget")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work_dir", default="/tmp/albert_recipes",
                        help="the recipes' work directory, holding the runs (runs/smallA3hM, runs/smallA3hD, "
                             "runs/smallA3h, runs/hf_scratch)")
    parser.add_argument("--results_dir", default=RESULTS, help="where from_scratch.{md,json,png} go")
    args = parser.parse_args(argv)

    rows = [summarize(label, read_history(os.path.join(args.work_dir, run, "eval_history.jsonl")), role,
                      planned_steps(os.path.join(args.work_dir, run)))
            for label, run, role in RUNS]
    goals = targets(rows)
    lines = [table(rows)]
    if not all(row.get("finished", True) for row in rows):
        lines.append("Steps \"N of M\": the run is still inside its budget (M steps fitted to it); its figures are "
                     "those of its last evaluation.")
    if goals:
        lines.append("\n".join(f"- {goal}: {'met' if met else 'not yet measurable' if met is None else 'not met'}"
                               for goal, met in goals))
    text = "\n\n".join(lines) + "\n"
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "from_scratch.md"), "w") as f:
        f.write(portable(text))
    with open(os.path.join(args.results_dir, "from_scratch.json"), "w") as f:
        json.dump(portable({"work_dir": args.work_dir, "runs": rows, "targets": goals}), f, indent=1)
    if any(row.get("curve") for row in rows):
        try:
            plot(rows, os.path.join(args.results_dir, "from_scratch.png"))
        except ImportError:
            print("(no plot: matplotlib, from the [plots] extra, is not installed)")
    print(text)


if __name__ == "__main__":
    main()
