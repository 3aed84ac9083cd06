r"""Pretraining on a corpus 17x larger: the whole path on 2 cores, beside the 14 MB corpus's recorded run.

  nohup python -m benchmarks.learning.large_corpus --work_dir=/work/albert_large > large.log 2>&1 &
  python -m benchmarks.learning.large_corpus --work_dir=/work/albert_large --report_only

The corpus: ../shared/data/corpus_large (651 public-domain books, 240 MB, read gzipped). Each stage
is done once and kept in WORK_DIR; rerunning the command resumes where it stopped (a killed
pretraining run continues from its last checkpoint), so the whole path can span sessions:

  1. split: every 10th document held out (albert_tf.data.heldout_split), as the recipes' benchmark;
  2. vocabulary: albert_tf.train_sentencepiece on the training documents, 8,000 pieces (the recipes'
     size, so the model is the 14 MB run's), from a uniform sample of 1,000,000 sentences;
  3. data: the training documents in the documents format (new pairs and masks every epoch), made
     twice and measured (wall time, peak resident memory of the whole process tree, disk): by the local
     tool (create_pretraining_data, 2 worker processes) and by the Beam pipeline on Beam's local
     runner in multi-processing mode (the FnApiRunner, the DirectRunner's Python engine, with 2
     worker processes); the two outputs must be the same bytes. The held-out documents become
     instances once (seq 64, dupe 1);
  4. pretraining: albert_small on the documents with the recipe of the 14 MB corpus's documents run
     (pretraining_recipes' small_adamw_3h_mixed: AdamW 5e-4, warmup 1,000, batch 64, seq 64, XLA,
     instances drawn from 16 documents in turn), its step count fixed at the 22,854 steps that run fitted
     to its 3-hour budget: the same schedule, compared at equal steps (and, on this machine alone, about
     equal hours) whatever else shares the CPU meanwhile. Held-out evaluation every 500 steps on the first
     100 batches of 64 held-out sequences (6,400 of the shuffled held-out instances);
  5. transfer: benchmarks.downstream.transfer from the checkpoint with the best held-out accuracy at
     [MASK] (SST-2, MRPC, SQuAD v1.1; 3 seeds; against random init), its runs under WORK_DIR/transfer.
     Once pretraining has ended, the same checkpoint fills the cloze sentences of
     benchmarks/learning/cloze.py drawn from the held-out documents (cached in WORK_DIR/cloze.json),
     beside the 14 MB run's recorded answers to its own held-out sentences.

The report sets the run beside the 14 MB corpus's recorded run (benchmarks/results:
pretraining_recipes.json's small_adamw_3h_mixed curve, from_scratch.json's hours) at equal steps, and
judges the goals: held-out accuracy at [MASK] >= 25%, held-out sentence order >= 65% (70% the
moonshot), training and held-out sentence order within 5 points at the end, the learning phase
never "memorizing", SQuAD F1 +5 over random init. Writes RESULTS/large_corpus.{md,json,png}.
"""

import argparse
import glob
import json
import os
import sys

from benchmarks.common import (REPO, RESULTS, SHARED_DATA, cached_json, child_env, cpu_description,
                               markdown_table, module_command, portable, run_measured)
from benchmarks.learning import cloze, pretraining_recipes
from benchmarks.learning.pretraining_recipes import tool
from benchmarks.speed.data_creation_dask import output_files
from benchmarks.learning.from_scratch import read_history

from albert_tf.data.heldout_split import split_documents

LARGE_CORPUS = os.path.join(SHARED_DATA, "corpus_large", "corpus_paragraphs.txt.gz")
RECIPE = pretraining_recipes.RECIPES["small_adamw_3h_mixed"]
# The 14 MB corpus's documents run: its recorded curves, and the step count it fitted to 3 hours.
RECORDED_RECIPE = "small_adamw_3h_mixed"
RECORDED_STEPS = 22854
VOCAB_SIZE = pretraining_recipes.VOCAB_SIZE
VOCAB_SAMPLE_SENTENCES = 1_000_000
EVAL_BATCHES = 100
RUN = os.path.join("runs", "smallA_large")
TRANSFER_SEEDS = "1,2,3"
# The goals of the 3-hour run.
GOAL_AT_MASK, GOAL_SOP, MOONSHOT_SOP, GOAL_SOP_GAP, GOAL_SQUAD_F1_GAIN = 0.25, 0.65, 0.70, 0.05, 5.0


def case_flags(cased):
    """The tools' flags for a cased run (the vocabulary and the data keep capitals) or none (lowercased)."""
    return ["--nodo_lower_case"] if cased else []


def check_casing(work, cased):
    """A work directory holds one casing: the first run records it, a later run with the other is refused."""
    path = os.path.join(work, "casing.json")
    if not os.path.exists(path):
        if os.path.exists(os.path.join(work, "spm.model")) and cased:
            sys.exit(f"{work}: holds a lowercased run; a cased one needs another --work_dir")
        with open(path, "w") as f:
            json.dump({"cased": cased}, f)
        return
    with open(path) as f:
        recorded = json.load(f)["cased"]
    if recorded != cased:
        sys.exit(f"{work}: holds a {'cased' if recorded else 'lowercased'} run; "
                 f"{'drop' if recorded else 'add'} --cased or pass another --work_dir")


def prepare(work, corpus, cased=False):
    """The split and the vocabulary (each made once): (train text, held-out text, spm model)."""
    train_text, heldout_text = os.path.join(work, "train.txt"), os.path.join(work, "heldout.txt")
    if not os.path.exists(heldout_text):
        kept, held = split_documents(corpus, train_text, heldout_text)
        print(f"split: {kept} training documents, {held} held out", flush=True)
    spm = os.path.join(work, "spm")
    if not os.path.exists(spm + ".model"):
        record = measured_tool("vocabulary", "albert_tf.train_sentencepiece", f"--input={train_text}",
                               "--input_format=paragraphs", f"--vocab_size={VOCAB_SIZE}",
                               f"--input_sentence_size={VOCAB_SAMPLE_SENTENCES}", f"--output_prefix={spm}",
                               *case_flags(cased))
        save_measurement(work, "vocabulary", record)
    config_path = os.path.join(work, "small8k.json")
    if not os.path.exists(config_path):
        with open(os.path.join(REPO, "configs", "albert_small.json")) as f:
            config = json.load(f)
        config["vocab_size"] = VOCAB_SIZE
        with open(config_path, "w") as f:
            json.dump(config, f, indent=2)
    return train_text, heldout_text, spm + ".model"


def measured_tool(name, module, *args, output_prefix=None):
    """Runs a tool measured: {seconds, peak_rss_mb, disk_mb (of output_prefix's files)}."""
    print(f"+ [{name}, measured] python -m {module} " + " ".join(args), flush=True)
    seconds, peak, _, _ = run_measured(module_command(module, *args),
                                       env=child_env(TF_CPP_MIN_LOG_LEVEL="3"), cwd=REPO)
    record = {"seconds": round(seconds, 1), "peak_rss_mb": round(peak / 2**20, 1), "command": " ".join(args)}
    if output_prefix:
        record["disk_mb"] = round(sum(size for size, _ in output_files(output_prefix).values()) / 1e6, 1)
    return record


def save_measurement(work, name, record):
    path = os.path.join(work, "measurements.json")
    measurements = load_measurements(work)
    measurements[name] = record
    with open(path + ".tmp", "w") as f:
        json.dump(measurements, f, indent=1)
    os.replace(path + ".tmp", path)


def load_measurements(work):
    path = os.path.join(work, "measurements.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def data_flags(text, prefix, output_format, shards, spm, cased=False):
    return [*case_flags(cased), f"--input_file={text}", "--input_format=paragraphs", f"--output_file={prefix}",
            f"--spm_model_file={spm}",
            f"--max_seq_length={RECIPE.seq_length}", f"--max_predictions_per_seq={RECIPE.predictions}",
            "--dupe_factor=1", f"--num_output_shards={shards}", f"--output_format={output_format}"]


def make_data(work, train_text, heldout_text, spm, cased=False):
    """The training documents (local tool and Beam, measured and compared) and the held-out instances."""
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    train_prefix, beam_prefix = os.path.join(data, "documents"), os.path.join(data, "beam", "documents")
    heldout_prefix = os.path.join(data, "heldout")
    if not os.path.exists(train_prefix + ".metadata.json"):
        record = measured_tool("data, local tool", "albert_tf.create_pretraining_data",
                               *data_flags(train_text, train_prefix, "documents", 8, spm, cased), "--num_workers=2",
                               output_prefix=train_prefix)
        save_measurement(work, "data_local", record)
    if "data_beam" not in load_measurements(work):
        os.makedirs(os.path.dirname(beam_prefix), exist_ok=True)
        record = measured_tool("data, Beam", "pipelines.create_pretraining_data",
                               *data_flags(train_text, beam_prefix, "documents", 8, spm, cased), "--overwrite",
                               "--runner=FnApiRunner", "--direct_num_workers=2",
                               "--direct_running_mode=multi_processing", output_prefix=beam_prefix)
        record["same_bytes_as_local"] = output_files(beam_prefix) == output_files(train_prefix)  # sizes, sha256
        for path in glob.glob(beam_prefix + "*"):  # measured and compared: a second copy is not needed
            os.remove(path)
        save_measurement(work, "data_beam", record)
    if not os.path.exists(heldout_prefix + ".metadata.json"):
        record = measured_tool("held-out instances", "albert_tf.create_pretraining_data",
                               *data_flags(heldout_text, heldout_prefix, "instances", 1, spm, cased), "--num_workers=2",
                               output_prefix=heldout_prefix)
        save_measurement(work, "data_heldout", record)
    return train_prefix, heldout_prefix


def pretrain(work, train_prefix, heldout_prefix, spm):
    """run_pretraining with the recipe (resuming); its exit status."""
    return tool("albert_tf.run_pretraining", f"--input_file={train_prefix}",
                f"--albert_config={os.path.join(work, 'small8k.json')}", f"--output_dir={os.path.join(work, RUN)}",
                f"--spm_model_file={spm}", f"--max_seq_length={RECIPE.seq_length}",
                f"--max_predictions_per_seq={RECIPE.predictions}", f"--train_batch_size={RECIPE.batch}",
                f"--optimizer={RECIPE.optimizer}", f"--learning_rate={RECIPE.learning_rate}",
                f"--num_warmup_steps={RECIPE.warmup}", f"--num_train_steps={RECORDED_STEPS}",
                "--save_checkpoints_steps=500", "--keep_checkpoint_max=200", "--iterations_per_loop=100",
                "--jit_compile", f"--eval_input_file={heldout_prefix}", "--eval_every_steps=500",
                f"--eval_batch_size={RECIPE.batch}", f"--max_eval_steps={EVAL_BATCHES}", *RECIPE.flags)


def best_checkpoint(work, history):
    """The kept checkpoint whose evaluation had the best held-out accuracy at [MASK], or None."""
    run_dir = os.path.join(work, RUN)
    kept = [record for record in history if os.path.exists(os.path.join(run_dir, f"ckpt-{record['step']}.index"))]
    if not kept:
        return None
    best = max(kept, key=lambda record: record["heldout"]["masked_lm_accuracy_at_mask"])
    return os.path.join(run_dir, f"ckpt-{best['step']}")


def cloze_answers(work, history):
    """The cloze results of the best checkpoint once pretraining has ended (cached in WORK_DIR/cloze.json
    for its step), else None."""
    checkpoint = best_checkpoint(work, history)
    if checkpoint is None or not history or history[-1]["step"] < RECORDED_STEPS:
        return None
    return cloze.checkpoint_answers(checkpoint, os.path.join(work, "spm.model"), os.path.join(work, "heldout.txt"),
                                    RECIPE.seq_length, os.path.join(work, "cloze.json"))


def squad_windows(work):
    """{questions, windows, with_answer, max_seq_length} of the transfer grid's SQuAD training windows (cached in
    WORK_DIR/squad_windows.json), or None before the grid has recorded its SQuAD runs."""
    from benchmarks.downstream.transfer import answer_windows

    train_file = os.path.join(work, "transfer", "squad_train.json")
    record_path = os.path.join(work, "transfer", "transfer.json")
    if not (os.path.isfile(train_file) and os.path.isfile(record_path)):
        return None
    with open(record_path) as f:
        max_seq_length = json.load(f).get("args", {}).get("max_seq_length", 64)
    return cached_json(os.path.join(work, "squad_windows.json"), {"max_seq_length": max_seq_length},
                       lambda: answer_windows(train_file, os.path.join(work, "spm.model"), max_seq_length))


def transfer(work, checkpoint):
    return tool("benchmarks.downstream.transfer", f"--pretrained={checkpoint}", f"--seeds={TRANSFER_SEEDS}",
                f"--work_dir={os.path.join(work, 'transfer')}", f"--results_dir={os.path.join(work, 'transfer')}")


def best_model_directory(work):
    """A directory holding the best checkpoint alone (with the run's albert_tf.json and spm.model), for the
    transfer grid's --pretrained; made once per best step."""
    import shutil

    run_dir = os.path.join(work, RUN)
    checkpoint = best_checkpoint(work, read_history(os.path.join(run_dir, "eval_history.jsonl")))
    if checkpoint is None:
        raise RuntimeError(f"{run_dir}: no evaluated checkpoint to transfer from")
    step = checkpoint.rsplit("-", 1)[1]
    directory = os.path.join(work, f"best-{step}")
    if not os.path.isdir(directory):
        staging = directory + ".staging"
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        for name in ("albert_tf.json", "spm.model"):
            shutil.copy(os.path.join(run_dir, name), staging)
        for path in glob.glob(checkpoint + ".*"):
            shutil.copy(path, staging)
        os.replace(staging, directory)
    return directory


def recorded_small_corpus():
    """The 14 MB corpus's documents run as recorded: ({step: held-out metrics}, {step: hours}, instances an epoch)."""
    with open(os.path.join(RESULTS, "pretraining_recipes.json")) as f:
        curve = {m["step"]: m for m in json.load(f)["curves"][RECORDED_RECIPE]}
    with open(os.path.join(RESULTS, "from_scratch.json")) as f:
        run = next(row for row in json.load(f)["runs"] if row["role"] == "candidate")
    hours = dict(zip(sorted(curve), (hours for hours, _ in run["curve"])))
    with open(os.path.join(RESULTS, "dynamic_input.json")) as f:
        epoch = json.load(f)["mixing"]["instances_per_epoch"]
    return curve, hours, epoch


def instances_per_epoch(work):
    """The training documents' tokens over the held-out instances' tokens per instance (same lengths and rules):
    about the instances one epoch of the documents makes."""
    with open(os.path.join(work, "data", "documents.metadata.json")) as f:
        tokens = json.load(f)["statistics"]["tokens"]
    with open(os.path.join(work, "data", "heldout.metadata.json")) as f:
        heldout = json.load(f)["statistics"]
    return tokens / (heldout["tokens"] / heldout["instances"])


def goals(history, transfer_rows):
    """[(goal, met: bool, or None while not measurable)] of the run's last evaluation and its transfer."""
    if not history:
        return []
    finished = history[-1]["step"] >= RECORDED_STEPS
    last = history[-1]
    heldout, training = last["heldout"], last.get("training") or {}

    def final(met):
        return met if finished else None

    sop, train_sop = heldout["sentence_order_accuracy"], training.get("sentence_order_accuracy")
    result = [
        (f"held-out accuracy at [MASK] >= {GOAL_AT_MASK:.0%}", final(heldout["masked_lm_accuracy_at_mask"]
                                                                   >= GOAL_AT_MASK)),
        (f"held-out sentence order >= {GOAL_SOP:.0%}", final(sop >= GOAL_SOP)),
        (f"held-out sentence order >= {MOONSHOT_SOP:.0%} (the moonshot)", final(sop >= MOONSHOT_SOP)),
        (f"training and held-out sentence order within {GOAL_SOP_GAP * 100:.0f} points at the end",
         final(train_sop is not None and abs(train_sop - sop) <= GOAL_SOP_GAP)),
        ("the learning phase never 'memorizing'", final(all(r.get("phase") != "memorizing" for r in history))),
    ]
    squad = next((row for row in transfer_rows if row["task"] == "squad"), None)
    result.append((f"SQuAD v1.1 F1 at least +{GOAL_SQUAD_F1_GAIN:g} over random init",
                   None if squad is None else squad["gain"] >= GOAL_SQUAD_F1_GAIN))
    return result


def transfer_rows(work):
    """[{task, metric, pretrained, random, gain}] of the transfer grid's results, [] before it ran."""
    path = os.path.join(work, "transfer", "transfer.json")
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        record = json.load(f)
    summary, rows = record.get("summary", {}), []
    for task in dict.fromkeys(key.split("/")[0] for key in summary):
        pretrained, random_init = summary.get(f"{task}/pretrained"), summary.get(f"{task}/random init")
        if pretrained and random_init:
            rows.append({"task": task, "metric": pretrained["metric"], "pretrained": pretrained["mean"],
                         "random": random_init["mean"], "gain": pretrained["mean"] - random_init["mean"],
                         "seeds": len(pretrained["values"]),
                         "largest_std": max(pretrained["std"], random_init["std"])})
    return rows


def plot(history, recorded, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for label, steps, at_mask, sop in (
            ("240 MB corpus", [r["step"] for r in history],
             [r["heldout"]["masked_lm_accuracy_at_mask"] for r in history],
             [r["heldout"]["sentence_order_accuracy"] for r in history]),
            ("14 MB corpus (recorded)", sorted(recorded), [recorded[s]["masked_lm_accuracy_at_mask"] for s in
                                                           sorted(recorded)],
             [recorded[s]["sentence_order_accuracy"] for s in sorted(recorded)])):
        left.plot(steps, [a * 100 for a in at_mask], marker=".", label=label)
        right.plot(steps, [a * 100 for a in sop], marker=".", label=label)
    left.axhline(GOAL_AT_MASK * 100, color="gray", linewidth=0.5, linestyle=":")
    right.axhline(GOAL_SOP * 100, color="gray", linewidth=0.5, linestyle=":")
    left.set(title="held-out accuracy at [MASK] inputs (%)", xlabel="step")
    right.set(title="held-out sentence order (%)", xlabel="step")
    left.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def report(work, results_dir, name="large_corpus"):
    """Writes RESULTS/NAME.{md,json,png} from what WORK_DIR holds."""
    measurements = load_measurements(work)
    history = read_history(os.path.join(work, RUN, "eval_history.jsonl"))
    recorded, recorded_hours, recorded_epoch = recorded_small_corpus()
    lines = [f"CPU: {cpu_description()}. Work directory: {work}.", ""]
    stages = (("vocabulary", "vocabulary (8,000 pieces, 1M-sentence sample)"),
              ("data_local", "training documents, local tool (2 workers)"),
              ("data_beam", "training documents, Beam FnApiRunner multi-processing (2 workers)"),
              ("data_heldout", "held-out instances (seq 64, dupe 1), local tool"))
    body = [[label, f"{m['seconds']:.0f}", f"{m['peak_rss_mb']:,.0f}", f"{m['disk_mb']:.1f}" if "disk_mb" in m else "-",
             {True: "yes", False: "NO"}.get(m.get("same_bytes_as_local"), "-")]
            for name, label in stages if (m := measurements.get(name))]
    if body:
        lines += [markdown_table(["stage", "seconds", "peak RSS MB", "disk MB", "same bytes as the local tool"], body),
                  ""]
    if history:
        epoch = instances_per_epoch(work)
        rows = []
        for record in history:
            step = record["step"]
            if step % 2000 and step != history[-1]["step"]:
                continue
            small = recorded.get(step)
            rows.append([f"{step:,}", f"{record['elapsed_seconds'] / 3600:.2f}",
                         "-" if step not in recorded_hours else f"{recorded_hours[step]:.2f}",
                         f"{record['heldout']['masked_lm_accuracy_at_mask'] * 100:.1f}",
                         "-" if small is None else f"{small['masked_lm_accuracy_at_mask'] * 100:.1f}",
                         f"{record['heldout']['sentence_order_accuracy'] * 100:.1f}",
                         "-" if small is None else f"{small['sentence_order_accuracy'] * 100:.1f}",
                         f"{(record.get('training') or {}).get('sentence_order_accuracy', float('nan')) * 100:.1f}",
                         f"{step * RECIPE.batch / epoch:.2f}", f"{step * RECIPE.batch / recorded_epoch:.1f}",
                         record.get("phase", "-")])
        lines += [f"albert_small, documents recipe, {RECORDED_STEPS:,} steps planned; held-out: "
                  f"{EVAL_BATCHES * RECIPE.batch:,} sequences of the 240 MB corpus's held-out documents, all 1,536 "
                  "of the 14 MB corpus's. Hours: each run's own measure of its training time (the 14 MB run alone "
                  "on the machine; this one beside other work where the note says so).", "",
                  markdown_table(["step", "hours (240 MB)", "hours (14 MB)", "at [MASK] % (240 MB)", "(14 MB)",
                                  "SOP % (240 MB)", "(14 MB)", "training SOP % (240 MB)", "passes (240 MB)",
                                  "passes (14 MB)", "phase (240 MB)"], rows), ""]
    transfers = transfer_rows(work)
    if transfers:
        lines += [f"Transfer from the best checkpoint by held-out accuracy at [MASK]: fine-tuned against random init "
                  "with the same flags (benchmarks.downstream.transfer; its table in "
                  f"{os.path.join(work, 'transfer', 'transfer.md')}).", "",
                  markdown_table(["task", "metric", "seeds", "pretrained (mean)", "random init (mean)", "gain",
                                  "largest std"],
                                 [[r["task"], r["metric"], str(r["seeds"]), f"{r['pretrained']:.2f}",
                                   f"{r['random']:.2f}", f"{r['gain']:+.2f}", f"{r['largest_std']:.2f}"]
                                  for r in transfers]), ""]
        windows = squad_windows(work)
        if windows:
            lines += [f"SQuAD's training windows at seq {windows['max_seq_length']}: {windows['windows']:,} from "
                      f"{windows['questions']:,} questions, {windows['with_answer'] / windows['windows']:.1%} of them "
                      "holding the answer (the others are labeled [CLS]).", ""]
    answers = cloze_answers(work, history)
    if answers:
        with open(os.path.join(RESULTS, "pretraining_recipes.json")) as f:
            recorded_cloze = json.load(f)["cloze"].get(RECORDED_RECIPE)
        lines += [f"Cloze sentences from the 240 MB corpus's held-out documents, filled by the checkpoint at step "
                  f"{answers['step']:,} (answers in bold where predicted):", "", cloze.markdown(answers)]
        if recorded_cloze:
            lines += [f"The 14 MB corpus's run at step {recorded_cloze['step']:,} on its own held-out sentences "
                      f"(recorded): top-1 {recorded_cloze['top1_accuracy']:.2f}, top-5 "
                      f"{recorded_cloze['top5_accuracy']:.2f} (best constant answer "
                      f"{recorded_cloze['constant_answer_accuracy']:.2f}); {recorded_cloze['distinct_top1']} "
                      "different top-1 answers.", ""]
    achieved = goals(history, transfers)
    if achieved:
        lines.append("\n".join(f"- {goal}: {'met' if met else 'not yet measurable' if met is None else 'not met'}"
                               for goal, met in achieved))
    text = "\n".join(lines) + "\n"
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, name + ".md"), "w") as f:
        f.write(portable(text))
    with open(os.path.join(results_dir, name + ".json"), "w") as f:
        json.dump(portable({"measurements": measurements, "history": history, "transfer": transfers,
                            "cloze": answers, "goals": achieved}), f, indent=1)
    if history:
        try:
            plot(history, recorded, os.path.join(results_dir, name + ".png"))
        except ImportError:
            print("(no plot: matplotlib, from the [plots] extra, is not installed)")
    print(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=LARGE_CORPUS,
                        help="paragraph-per-line corpus (.gz read decompressed), documents separated by blank lines "
                             "(default: the 240 MB corpus of ../shared/data/corpus_large)")
    parser.add_argument("--work_dir", default="/tmp/albert_large",
                        help="holds the split, vocabulary, data, run and transfer runs; reused when rerun")
    parser.add_argument("--results_dir", default=RESULTS, help="where large_corpus.{md,json,png} go")
    parser.add_argument("--report_only", action="store_true",
                        help="run nothing: write the report from what WORK_DIR holds so far")
    parser.add_argument("--skip_transfer", action="store_true", help="stop after pretraining (then report)")
    parser.add_argument("--cased", action="store_true",
                        help="keep capitals (a cased vocabulary and data, for tasks such as entity tagging); the "
                             "report is then RESULTS/large_corpus_cased.*. A work directory holds one casing")
    args = parser.parse_args(argv)
    work = os.path.abspath(args.work_dir)
    os.makedirs(work, exist_ok=True)
    check_casing(work, args.cased)
    if not args.report_only:
        if not os.path.exists(args.corpus):
            sys.exit(f"{args.corpus}: no such corpus (pass --corpus)")
        train_text, heldout_text, spm = prepare(work, args.corpus, args.cased)
        train_prefix, heldout_prefix = make_data(work, train_text, heldout_text, spm, args.cased)
        if pretrain(work, train_prefix, heldout_prefix, spm) != 0:
            print("run_pretraining stopped; rerun this command to resume", flush=True)
            return 1
        if not args.skip_transfer and transfer(work, best_model_directory(work)) != 0:
            print("the transfer grid stopped; rerun this command to resume", flush=True)
            return 1
    report(work, args.results_dir, "large_corpus_cased" if args.cased else "large_corpus")
    return 0


if __name__ == "__main__":
    sys.exit(main())
