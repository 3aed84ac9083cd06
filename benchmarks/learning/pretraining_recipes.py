r"""Which small-scale pretraining recipe learns? Trains each recipe on the real corpus, evaluates every checkpoint.

  python -m benchmarks.learning.pretraining_recipes --recipes=small_lamb,small_adamw [--work_dir=/tmp/albert_recipes]
  python -m benchmarks.learning.pretraining_recipes --evaluate_only      # tables and plots from what exists so far

Every 10th document of the corpus is held out (the learning curve's split). The
rest goes through the real CLIs: train_sentencepiece (8,000 pieces) ->
create_pretraining_data (per sequence length and dupe factor, cached) ->
run_pretraining, one output directory per recipe. Rerunning resumes every
stage, so a recipe can run in the background for hours across sessions (kill
it any time; the same command continues). Each checkpoint is evaluated once on
the held-out documents' instances (cached beside the run):

  - masked-LM accuracy over all masked positions, and at positions whose input is
    [MASK]: the part that needs context (10% of masked positions keep their own
    token, which a model learns to copy without context);
  - sentence-order accuracy.

A recipe whose run directory is not in WORK_DIR (trained on another machine: the
checkpoints are not kept in the repository) keeps the curve and cloze answers
recorded in benchmarks/results/pretraining_recipes.json.

The newest checkpoint of each recipe also fills the cloze sentences of
benchmarks/learning/cloze.py (held-out sentences, one content word masked); the best
recipe's answers are printed under the table.

"Frequent-piece level" is the accuracy at [MASK] inputs of always answering the
held-out data's most frequent masked piece; a recipe "leaves" it at the first
checkpoint at least 5 points above it.

Writes benchmarks/results/pretraining_recipes.{json,md,png}.
"""

import argparse
import collections
import json
import os
import subprocess
import sys


from benchmarks.learning import cloze
from benchmarks.learning.from_scratch import planned_steps as budget_steps
from benchmarks.learning.learning_curve import evaluate_checkpoints
from benchmarks.common import REPO, RESULTS, SHARED_CORPUS, child_env, portable

from albert_tf.data.data_set_files import read_metadata
from albert_tf.data.heldout_split import split_documents
from albert_tf.data.pretraining_dataset import frequent_piece_level

VOCAB_SIZE = 8000
LEFT_LEVEL_MARGIN = 0.05

# The model presets, with the recipe's vocabulary.
MODELS = {"tiny": "albert_tiny", "small": "albert_small"}

# Each recipe: model, sequence length, masked positions, dupe factor, batch, optimizer, peak lr, warmup, steps.
# `run` names its output directory under WORK_DIR/runs.
# `jit_compile`: XLA for the forward and backward pass (1.24x albert_small's step on a 2-core AVX2 CPU).
# `data_format`: "instances" (static, dupe_factor copies) or "documents" (new pairs and masks every epoch,
# made by run_pretraining's input pipeline; dupe_factor unused), evaluated on the held-out set while training.
# `budget_hours`: run_pretraining --train_budget_hours (the step count and schedule fitted to it after the first
# steps; `steps` is then only an upper bound). `flags`: further run_pretraining flags. `heldout_eval`: evaluate the
# held-out set while training (always so with documents or a budget).
Recipe = collections.namedtuple(
    "Recipe", "model seq_length predictions dupe_factor batch optimizer learning_rate warmup steps run note jit_compile "
    "data_format budget_hours flags heldout_eval", defaults=(False, "instances", 0.0, (), False))
RECIPES = {
    "tiny_adamw": Recipe("tiny", 64, 10, 10, 64, "adamw", 2e-3, 400, 20000, "tinyA",
                         "AdamW at a high rate: collapses to one constant prediction"),
    "small_lamb": Recipe("small", 64, 10, 10, 64, "lamb", 1e-2, 1000, 30000, "smallL",
                         "albert_small (H 256, E 128, 4 heads), LAMB at the learning curve's rate"),
    "small_adamw": Recipe("small", 64, 10, 10, 64, "adamw", 5e-4, 1000, 30000, "smallA",
                          "albert_small with AdamW at BERT-small's usual rate"),
    "small_adamw_6k": Recipe("small", 64, 10, 10, 64, "adamw", 5e-4, 1000, 6000, "smallA6k",
                             "small_adamw with XLA and a schedule that decays to 0 within 2 hours on a 2-core "
                             "AVX2 CPU (about 1 step/s)", True),
    "small_adamw_6k_dynamic": Recipe("small", 64, 10, 1, 64, "adamw", 5e-4, 1000, 6000, "smallA6kD",
                                     "small_adamw_6k on documents: new pairs and masks every epoch", True,
                                     "documents"),
    "small_adamw_3h_dynamic": Recipe("small", 64, 10, 1, 64, "adamw", 5e-4, 1000, 200000, "smallA3hD",
                                     "small_adamw on documents, one document's instances after another (the reader "
                                     "before round-robin), its schedule fitted to a 3-hour budget", True,
                                     "documents", 3.0, ("--input_mixed_documents=1",)),
    "small_adamw_3h_mixed": Recipe("small", 64, 10, 1, 64, "adamw", 5e-4, 1000, 200000, "smallA3hM",
                                   "small_adamw_3h_dynamic as run_pretraining reads documents by default: instances "
                                   "drawn from 16 documents in turn", True, "documents", 3.0),
    "small_adamw_3h": Recipe("small", 64, 10, 10, 64, "adamw", 5e-4, 1000, 200000, "smallA3h",
                             "small_adamw on static dupe-10 instances, its schedule fitted to a 3-hour budget "
                             "(the baseline of small_adamw_3h_dynamic)", True, "instances", 3.0),
    # The checkpoints of a run are not kept in the repository; this remakes small_adamw_3h's on any machine:
    # the step count its budget was fitted to (22,168 on a 2-core Zen 4) fixed, so the schedule is the same.
    "small_adamw_3h_steps": Recipe("small", 64, 10, 10, 64, "adamw", 5e-4, 1000, 22168, "smallA3hS",
                                   "small_adamw_3h's schedule with its fitted step count fixed: its checkpoint "
                                   "remade whatever the machine's speed", True, heldout_eval=True),
}

# Recipes evaluated on the held-out set while they train (documents, or a time budget: their curves are
# compared in hours by benchmarks.learning.from_scratch): every 500 steps, all held-out records in batches
# of 64, the records benchmarks.learning.huggingface_from_scratch evaluates on.
EVAL_EVERY_STEPS = 500
EVAL_BATCH_SIZE = 64
EVAL_FLAGS = ("--eval_every_steps=500", f"--eval_batch_size={EVAL_BATCH_SIZE}", "--max_eval_steps=100000")


def vocabulary_flag(vocabulary):
    """The tools' flag for a vocabulary file: a WordPiece vocab.txt or a SentencePiece model."""
    return (f"--vocab_file={vocabulary}" if vocabulary.endswith(".txt") else f"--spm_model_file={vocabulary}")


def tool(*args):
    print("+ python -m " + " ".join(args), flush=True)
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", *args], env=env, cwd=REPO).returncode


def prepare(work, corpus, vocabulary_flags=(), input_format="paragraphs"):
    """The held-out split, the vocabulary (train_sentencepiece with `vocabulary_flags` besides the recipe's), and
    the model configs with its size; `input_format`: the corpus's layout (the tools' --input_format)."""
    train_text, eval_text = os.path.join(work, "train.txt"), os.path.join(work, "heldout.txt")
    if not os.path.exists(eval_text):
        split_documents(corpus, train_text, eval_text)
    spm = os.path.join(work, "spm")
    if not os.path.exists(spm + ".model"):
        tool("albert_tf.train_sentencepiece", f"--input={train_text}", f"--input_format={input_format}",
             f"--vocab_size={VOCAB_SIZE}", f"--output_prefix={spm}", *vocabulary_flags)
    for model, preset in MODELS.items():
        path = os.path.join(work, f"{model}8k.json")
        if not os.path.exists(path):
            with open(os.path.join(REPO, "configs", f"{preset}.json")) as f:
                config = json.load(f)
            config["vocab_size"] = VOCAB_SIZE
            with open(path, "w") as f:
                json.dump(config, f, indent=2)
    return train_text, eval_text, spm + ".model"


def data_prefix(work, recipe, name, nsp=False):
    """WORK/dSEQ/train<dupe>, WORK/dSEQ/documents and WORK/dSEQ/heldout; `nsp` data sets (next-sentence pairs)
    end in _nsp."""
    if name == "train" and recipe.data_format == "documents":
        return os.path.join(work, f"d{recipe.seq_length}", "documents")
    suffix = (f"{recipe.dupe_factor}" if name == "train" else "") + ("_nsp" if nsp else "")
    return os.path.join(work, f"d{recipe.seq_length}", name + suffix)


def make_data(work, recipe, texts, spm, nsp=False, input_format="paragraphs"):
    """The training and held-out data sets (made once); `nsp`: NSP pairs (--random_next_sentence) instead of SOP.
    `spm`: the vocabulary file (a SentencePiece model, or a WordPiece vocab.txt); `input_format`: the texts'
    layout."""
    for name, text, dupe in (("train", texts[0], recipe.dupe_factor), ("heldout", texts[1], 1)):
        prefix = data_prefix(work, recipe, name, nsp)
        if not os.path.exists(prefix + ".metadata.json"):
            tool("albert_tf.create_pretraining_data", f"--input_file={text}", f"--input_format={input_format}",
                 f"--output_file={prefix}", vocabulary_flag(spm), f"--dupe_factor={dupe}", "--num_workers=2",
                 f"--num_output_shards={8 if name == 'train' else 1}", f"--max_seq_length={recipe.seq_length}",
                 f"--max_predictions_per_seq={recipe.predictions}", *(["--random_next_sentence"] if nsp else []),
                 f"--output_format={recipe.data_format if name == 'train' else 'instances'}")


def eval_flags(heldout_prefix):
    """run_pretraining's held-out evaluation flags (EVAL_FLAGS) for the data set at `heldout_prefix`; a set of fewer
    than EVAL_BATCH_SIZE instances (a small corpus whose every tenth document is short: Korean's UD-KAIST holds 17)
    is read in one batch of them all, which run_pretraining then says is noise, rather than refused."""
    flags = [f"--eval_input_file={heldout_prefix}", *EVAL_FLAGS]
    instances = (read_metadata(heldout_prefix) or {}).get("statistics", {}).get("instances", EVAL_BATCH_SIZE)
    if instances < EVAL_BATCH_SIZE:
        flags = [f"--eval_batch_size={instances}" if flag.startswith("--eval_batch_size=") else flag for flag in flags]
    return flags


def train(work, recipe, spm, data=None, albert_config=None, output_dir=None, steps=None, save_checkpoints_steps=500,
          extra_flags=()):
    """run_pretraining with the recipe's settings (resuming); the keywords replace the recipe's own data,
    model config, run directory or budget (the warmup stays within half the budget)."""
    steps = steps or recipe.steps
    return tool("albert_tf.run_pretraining", f"--input_file={data or data_prefix(work, recipe, 'train')}",
                f"--albert_config={albert_config or os.path.join(work, recipe.model + '8k.json')}",
                f"--output_dir={output_dir or os.path.join(work, 'runs', recipe.run)}", vocabulary_flag(spm),
                f"--max_seq_length={recipe.seq_length}", f"--max_predictions_per_seq={recipe.predictions}",
                f"--train_batch_size={recipe.batch}", f"--optimizer={recipe.optimizer}",
                f"--learning_rate={recipe.learning_rate}", f"--num_warmup_steps={min(recipe.warmup, steps // 2)}",
                f"--num_train_steps={steps}", f"--save_checkpoints_steps={save_checkpoints_steps}",
                "--keep_checkpoint_max=200", "--iterations_per_loop=100",
                *(["--jit_compile"] if recipe.jit_compile else []),
                *(eval_flags(data_prefix(work, recipe, "heldout"))
                  if recipe.data_format == "documents" or recipe.budget_hours or recipe.heldout_eval else []),
                *([f"--train_budget_hours={recipe.budget_hours}"] if recipe.budget_hours else []), *recipe.flags,
                *extra_flags)


def evaluated_curve(run_dir, evaluate_steps):
    """[metrics per checkpoint step] of a run, evaluating only checkpoints not in RUN_DIR.eval.json yet.

    `evaluate_steps(set of steps)` returns the metrics dicts (each with its "step") of those checkpoints.
    """
    cache_path = run_dir + ".eval.json"
    cache = {}
    if os.path.exists(cache_path):
        with open(cache_path) as f:
            cache = {m["step"]: m for m in json.load(f)}
    if not os.path.isdir(run_dir):
        return []
    from albert_tf.models.model_dir_format import checkpoints_newest_first

    new_steps = {int(p.rsplit("-", 1)[1]) for p in checkpoints_newest_first(run_dir)} - set(cache)
    if new_steps:
        for metrics in evaluate_steps(new_steps):
            cache[metrics["step"]] = metrics
        with open(cache_path, "w") as f:
            json.dump(sorted(cache.values(), key=lambda m: m["step"]), f, indent=1)
    return sorted(cache.values(), key=lambda m: m["step"])


def evaluate(work, recipe):
    """{step: metrics} for every checkpoint of the recipe's run, evaluating only new ones."""
    run_dir = os.path.join(work, "runs", recipe.run)
    return evaluated_curve(run_dir, lambda steps: evaluate_checkpoints(
        run_dir, data_prefix(work, recipe, "heldout"), recipe.seq_length, recipe.predictions, only_steps=steps))


def evaluate_cloze(work, recipe, curve):
    """Cloze results of the recipe's newest evaluated checkpoint (cached beside the run), or None."""
    if not curve:
        return None
    run_dir = os.path.join(work, "runs", recipe.run)
    return cloze.checkpoint_answers(os.path.join(run_dir, f"ckpt-{curve[-1]['step']}"),
                                    os.path.join(work, "spm.model"), os.path.join(work, "heldout.txt"),
                                    recipe.seq_length, run_dir + ".cloze.json")


def figures_source(work, name, recipe, recorded):
    """Where a recipe's figures come from: "run" (its run directory in `work`), "recorded" (the results
    file's curve, from a run whose checkpoints are not kept), or None (never trained)."""
    if os.path.isdir(os.path.join(work, "runs", recipe.run)):
        return "run"
    return "recorded" if recorded["curves"].get(name) else None


def planned_steps(work, recipe):
    """The recipe's step count: its own, or the one its run fitted to its time budget (once measured)."""
    if recipe.budget_hours:
        return budget_steps(os.path.join(work, "runs", recipe.run)) or recipe.steps
    return recipe.steps


def summarize(name, recipe, curve, level, steps=None):
    row = {"recipe": name, **recipe._asdict(), "frequent_piece_level": level, "steps_done": 0}
    row["steps"] = steps or recipe.steps
    if not curve:
        return row
    last = curve[-1]
    left = next((m["step"] for m in curve if m["masked_lm_accuracy_at_mask"] >= level + LEFT_LEVEL_MARGIN), None)
    row.update(steps_done=last["step"], sequences_seen=last["step"] * recipe.batch, left_level_at_step=left,
               masked_lm_accuracy=last["masked_lm_accuracy"],
               masked_lm_accuracy_at_mask=last["masked_lm_accuracy_at_mask"],
               masked_lm_loss=last["masked_lm_loss"], sentence_order_accuracy=last["sentence_order_accuracy"],
               best_at_mask=max(m["masked_lm_accuracy_at_mask"] for m in curve),
               best_sentence_order=max(m["sentence_order_accuracy"] for m in curve))
    return row


def plot(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for name, (recipe, curve) in curves.items():
        if not curve:
            continue
        seen = [m["step"] * recipe.batch / 1000 for m in curve]
        left.plot(seen, [m["masked_lm_accuracy_at_mask"] for m in curve], marker=".", label=name)
        right.plot(seen, [m["sentence_order_accuracy"] for m in curve], marker=".", label=name)
    left.set(title="held-out MLM accuracy at [MASK] inputs", xlabel="thousand sequences seen", ylabel="accuracy")
    right.axhline(0.5, color="grey", linestyle="--", label="chance")
    right.set(title="held-out sentence-order accuracy", xlabel="thousand sequences seen", ylim=(0.4, 1.0))
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def write_results(rows, curves, clozes):
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "pretraining_recipes.json"), "w") as f:
        json.dump(portable({"rows": rows, "curves": {name: curve for name, (_, curve) in curves.items()},
                            "cloze": clozes}), f, indent=1)
    plot(curves, os.path.join(RESULTS, "pretraining_recipes.png"))

    def cell(value, digits=3):
        return "" if value is None else (f"{value:.{digits}f}" if isinstance(value, float) else str(value))

    lines = ["| recipe | model | seq | batch | optimizer | lr | warmup | steps done / planned | sequences | "
             "left the frequent-piece level at step | MLM acc | at [MASK] (level) | SOP acc | best at [MASK] / SOP |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['recipe']} | {row['model']} | {row['seq_length']} | {row['batch']} | {row['optimizer']} | "
            f"{row['learning_rate']:g} | {row['warmup']} | {row['steps_done']:,} / {row['steps']:,} | "
            f"{row.get('sequences_seen', 0):,} | {cell(row.get('left_level_at_step')) or 'not yet'} | "
            f"{cell(row.get('masked_lm_accuracy'))} | {cell(row.get('masked_lm_accuracy_at_mask'))} "
            f"({row['frequent_piece_level']:.3f}) | {cell(row.get('sentence_order_accuracy'))} | "
            f"{cell(row.get('best_at_mask'))} / {cell(row.get('best_sentence_order'))} |")
    text = "\n".join(lines) + "\n"
    scored = [row for row in rows if clozes.get(row["recipe"])]
    if scored:
        best = max(scored, key=lambda row: row["masked_lm_accuracy_at_mask"])
        result = clozes[best["recipe"]]
        text += (f"\nCloze sentences, {best['recipe']} at step {result['step']:,} "
                 "(answers in bold where predicted):\n\n" + cloze.markdown(result))
        for row in scored:
            other = clozes[row["recipe"]]
            text += (f"\n- {row['recipe']} at step {other['step']:,}: top-1 {other['top1_accuracy']:.2f}, "
                     f"top-5 {other['top5_accuracy']:.2f}, {other['distinct_top1']} different top-1 answers")
        text += "\n"
    with open(os.path.join(RESULTS, "pretraining_recipes.md"), "w") as f:
        f.write(portable(text))
    print(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=SHARED_CORPUS,
                        help="paragraph-per-line corpus, documents separated by blank lines")
    parser.add_argument("--work_dir", default="/tmp/albert_recipes",
                        help="holds the split, vocabulary, TFRecords, runs and evaluations; reused when rerun")
    parser.add_argument("--recipes", default="",
                        help=f"comma-separated recipes to train (resuming): {', '.join(RECIPES)}")
    parser.add_argument("--evaluate_only", action="store_true",
                        help="train nothing: evaluate new checkpoints of every recipe and rewrite the results")
    args = parser.parse_args(argv)
    work = args.work_dir
    os.makedirs(os.path.join(work, "runs"), exist_ok=True)
    unknown = [name for name in args.recipes.split(",") if name and name not in RECIPES]
    if unknown:
        parser.error(f"unknown recipe(s) {', '.join(unknown)}; known: {', '.join(RECIPES)}")
    texts_and_spm = prepare(work, args.corpus)
    for name in [n for n in args.recipes.split(",") if n] if not args.evaluate_only else []:
        recipe = RECIPES[name]
        make_data(work, recipe, texts_and_spm[:2], texts_and_spm[2])
        if train(work, recipe, texts_and_spm[2]) != 0:
            print(f"{name}: run_pretraining stopped; rerun to resume", flush=True)
    rows, curves, levels, clozes = [], {}, {}, {}
    recorded = {"curves": {}, "cloze": {}}
    if os.path.exists(os.path.join(RESULTS, "pretraining_recipes.json")):
        with open(os.path.join(RESULTS, "pretraining_recipes.json")) as f:
            recorded = json.load(f)
    for name, recipe in RECIPES.items():
        heldout = data_prefix(work, recipe, "heldout")
        if not os.path.exists(heldout + ".metadata.json"):
            continue
        if heldout not in levels:
            levels[heldout] = frequent_piece_level(heldout)
        source = figures_source(work, name, recipe, recorded)
        if source is None:  # never trained here nor recorded: no row of zeros
            continue
        if source == "run":
            curve = evaluate(work, recipe)
            clozes[name] = evaluate_cloze(work, recipe, curve)
        else:  # trained on another machine (the checkpoints are not kept): its recorded figures stand
            curve, clozes[name] = recorded["curves"][name], recorded["cloze"].get(name)
        curves[name] = (recipe, curve)
        rows.append(summarize(name, recipe, curve, levels[heldout], planned_steps(work, recipe)))
    write_results(rows, curves, clozes)


if __name__ == "__main__":
    main()
