r"""Does pretraining on a small Chinese (or Japanese) corpus transfer? A small ALBERT pretrained on
../shared/data/corpus_zh_modern (or corpus_ja_aozora) against the same model from random init, fine-tuned on
the staged CJK sets.

  # stage 1 (hours, resumable: rerun the same command to continue): vocabulary, data, pretraining
  python -m benchmarks.downstream.cjk_transfer --language=zh --stages=pretrain [--work_dir=../cjk_transfer]
  # stage 2: CMRC 2018 from the checkpoint and from random init, and the table (entity tagging: below)
  python -m benchmarks.downstream.cjk_transfer --language=zh --stages=cmrc [--seeds=1]

Pretraining goes through the real CLIs, as benchmarks.learning.pretraining_recipes does (that module's
helpers): every 10th document held out, a SentencePiece vocabulary of 8,000 pieces trained on the rest
(`--input_format=paragraphs`: Chinese and Japanese sentences split at 。！？; accents kept where stripping would
rewrite the text, as the vocabulary tool decides), create_pretraining_data on documents (new sentence-order
pairs and masks every epoch), run_pretraining of albert_small (H 256, E 128, 4 layers) at sequence length 128
(a Chinese character is about one piece, and UNER Chinese's sentences hold 40 on average), batch 64, AdamW
5e-4 with XLA, its schedule fitted to --budget_hours on this machine, the held-out documents evaluated every
500 steps.

Fine-tuning, each from the pretraining checkpoint and from random init (the same config, vocabulary, casing and
recipe):
  - entity tagging, Universal NER Chinese GSDSimp (trained on train, the weights best on dev scored on test),
    beside Hugging Face's AlbertForTokenClassification converted from the same checkpoint: run by
    benchmarks.downstream.tagging (its docstring gives the command for this checkpoint);
  - span QA, CMRC 2018 (--stages=cmrc): run_squad trained on the trial set (1,002 questions) for --cmrc_epochs,
    predicting the dev set (3,219 questions), scored by CMRC 2018's own metric (F1, EM); windows of the length
    pretraining used (128: the position embeddings past it were never trained), half a window apart; writes
    RESULTS_DIR/cmrc2018.{json,md}.

Every finished run is kept under WORK_DIR/LANGUAGE and reused when the command is rerun.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

from benchmarks.common import (REPO, RESULTS, SHARED_DATA, WORK, child_env, cpu_description, markdown_table,
                               portable)
from benchmarks.learning import pretraining_recipes

# The pretraining recipe: albert_small at sequence length 128 on documents, its schedule fitted to a budget.
PRETRAINING = pretraining_recipes.Recipe(
    "small", 128, 20, 1, 64, "adamw", 5e-4, 1000, 200000, "pretrain",
    "albert_small on documents at sequence length 128, the schedule fitted to the budget", True, "documents", 1.5)

CORPORA = {"zh": os.path.join(SHARED_DATA, "corpus_zh_modern", "corpus_paragraphs.txt"),
           "ja": os.path.join(SHARED_DATA, "corpus_ja_aozora", "corpus_paragraphs.txt")}


def pretrain(work, corpus, budget_hours):
    """Vocabulary, data and the pretraining run under `work` (each stage resumes); the run directory."""
    recipe = PRETRAINING._replace(budget_hours=budget_hours)
    train_text, heldout_text, spm = pretraining_recipes.prepare(work, corpus)
    pretraining_recipes.make_data(work, recipe, (train_text, heldout_text), spm)
    if pretraining_recipes.train(work, recipe, spm) != 0:
        print("run_pretraining stopped; rerun the same command to resume", flush=True)
    return os.path.join(work, "runs", recipe.run)


def cmrc_run(work, start, seed, epochs, pretrained):
    """run_squad trained on CMRC 2018's trial set and predicting its dev set, from `start` ("pretrained": the
    checkpoint `pretrained`; "random init": its config and vocabulary); eval_results.json (kept, reused)."""
    output = os.path.join(work, "cmrc2018", start.replace(" ", "_"), f"seed{seed}")
    results = os.path.join(output, "eval_results.json")
    if not os.path.exists(results):
        data = os.path.join(SHARED_DATA, "cmrc2018")
        init = ([f"--init_checkpoint={pretrained}"] if start == "pretrained" else
                [f"--albert_config={os.path.join(work, 'small8k.json')}",
                 f"--spm_model_file={os.path.join(work, 'spm.model')}", "--do_lower_case"])
        command = [sys.executable, "-m", "albert_tf.run_squad", "--version=1.1", "--do_train", "--do_predict",
                   f"--train_file={data}/cmrc2018_trial.json", f"--predict_file={data}/cmrc2018_dev.json",
                   "--metric=cmrc2018", f"--output_dir={output}", f"--max_seq_length={PRETRAINING.seq_length}",
                   f"--doc_stride={PRETRAINING.seq_length // 2}", "--max_query_length=32",
                   "--train_batch_size=32", "--learning_rate=1e-4", f"--num_train_epochs={epochs}",
                   "--predict_batch_size=64", f"--seed={seed}", "--overwrite", *init]
        print("+ " + " ".join(command[1:]), flush=True)
        subprocess.run(command, check=True, cwd=REPO, env=child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1"))
    with open(results) as f:
        return json.load(f)


def cmrc(work, seeds, epochs, results_dir):
    """Both starts over `seeds` on CMRC 2018; the table."""
    pretrained = os.path.join(work, "runs", PRETRAINING.run)
    figures = {start: [cmrc_run(work, start, seed, epochs, pretrained) for seed in seeds]
               for start in ("pretrained", "random init")}

    def cell(runs, key):
        values = [run[key] for run in runs]
        return f"{statistics.mean(values):.2f}" + (f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else "")

    rows = [[start, str(len(runs)), cell(runs, "f1"), cell(runs, "exact"), cell(runs, "average")]
            for start, runs in figures.items()]
    with open(os.path.join(pretrained, "run_config.json")) as f:
        steps = json.load(f).get("train_budget", {}).get("num_train_steps")
    text = (f"CMRC 2018 (Chinese span extraction): run_squad trained on cmrc2018_trial.json (1,002 questions) for "
            f"{epochs:g} epochs (batch 32, lr 1e-4, seq {PRETRAINING.seq_length} as pretrained, stride "
            f"{PRETRAINING.seq_length // 2}, questions cut to 32 pieces), predicting cmrc2018_dev.json (3,219 "
            f"questions), scored by CMRC 2018's official metric; albert_small pretrained on corpus_zh_modern "
            f"({steps or '?'} planned steps of batch 64, seq 128; the newest checkpoint) and from random init; seeds "
            f"{','.join(map(str, seeds))}; {cpu_description()}.\n\n"
            + markdown_table(["start", "seeds", "F1", "EM", "average"], rows) + "\n")
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "cmrc2018.md"), "w") as f:
        f.write(portable(text))
    with open(os.path.join(results_dir, "cmrc2018.json"), "w") as f:
        json.dump(portable({"runs": figures, "seeds": seeds, "epochs": epochs}), f, indent=1)
    print(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--language", choices=sorted(CORPORA), default="zh", help="which staged corpus to pretrain on")
    parser.add_argument("--work_dir", default=os.path.join(WORK, "cjk_transfer"),
                        help="holds each language's split, vocabulary, data, runs and fine-tuning results; reused "
                             "when rerun")
    parser.add_argument("--stages", default="pretrain", help="comma-separated: pretrain, cmrc")
    parser.add_argument("--budget_hours", type=float, default=PRETRAINING.budget_hours,
                        help="pretraining's wall-clock budget; its schedule is fitted to it")
    parser.add_argument("--seeds", default="1", help="comma-separated fine-tuning seeds")
    parser.add_argument("--cmrc_epochs", type=float, default=2.0, help="passes over CMRC 2018's trial set")
    parser.add_argument("--results_dir", default=RESULTS, help="where the tables go")
    args = parser.parse_args(argv)
    work = os.path.join(args.work_dir, args.language)
    os.makedirs(os.path.join(work, "runs"), exist_ok=True)
    stages = [stage for stage in args.stages.split(",") if stage]
    unknown = sorted(set(stages) - {"pretrain", "cmrc"})
    if unknown:
        parser.error(f"unknown stage(s) {', '.join(unknown)}; known: pretrain, cmrc")
    if "pretrain" in stages:
        pretrain(work, CORPORA[args.language], args.budget_hours)
    if "cmrc" in stages:
        if args.language != "zh":
            parser.error("CMRC 2018 is Chinese: --language=zh")
        cmrc(work, [int(seed) for seed in args.seeds.split(",") if seed], args.cmrc_epochs, args.results_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
