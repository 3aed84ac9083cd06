r"""English entity tagging before and after units: does tagging each sentence's text whole (units: a word, a
punctuation mark, a piece of text without spaces) score as well on English as tagging each word alone did?

  git worktree add ../tagging_baseline <the commit before units>     # the checkout that tags words
  python -m benchmarks.downstream.tagging_units --baseline=../tagging_baseline [--seeds=1,2,3]

Both checkouts run their own `albert_tf.run_tagger` on Universal NER English-EWT (../shared/data/ner_uner_en_ewt:
trained on the dev split, evaluated on the test split after the last step, as benchmarks.downstream.tagging
does) from the same random initialization: albert_small's config (H 256, E 128, 4 layers) over a cased
SentencePiece vocabulary of 8,000 pieces trained here on ../shared/data/corpus (its first 2 MB), 325 steps of
batch 32 at sequence length 64, AdamW 1e-4 with 32 warmup steps, per seed. The baseline tags each word, each
tokenized alone, and scores the words' tags with conlleval; this checkout tags units of the text tokenized
whole and scores the entities as character spans of the text (for English tokens found in their `# text =`
line, the same entities). No pretrained English checkpoint is kept in the repository; random init is the run
any checkout can repeat, and benchmarks/results/tagging.md's random-init row (22.43 +- 1.37 F1 over 5 seeds,
another vocabulary) is its earlier figure.

Every finished run is kept (WORK_DIR/CHECKOUT/seedN/eval_results.json) and reused. Writes
RESULTS_DIR/tagging_units.{json,md}.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

from benchmarks.common import REPO, RESULTS, SHARED_DATA, WORK, child_env, cpu_description, markdown_table, portable

STEPS, WARMUP, BATCH, SEQ, LEARNING_RATE = 325, 32, 32, 64, 1e-4
TRAIN_FILE, EVAL_FILE = "en_ewt-ud-dev.iob2", "en_ewt-ud-test.iob2"
CORPUS_BYTES = 2 << 20


def vocabulary(work):
    """A cased 8,000-piece vocabulary of the English corpus's first 2 MB, and albert_small's config for it."""
    spm = os.path.join(work, "spm.model")
    if not os.path.exists(spm):
        corpus = os.path.join(work, "corpus.txt")
        with open(os.path.join(SHARED_DATA, "corpus", "corpus_paragraphs.txt"), encoding="utf-8") as source:
            text = source.read(CORPUS_BYTES)
        with open(corpus, "w", encoding="utf-8") as f:
            f.write(text[:text.rfind("\n") + 1])
        subprocess.run([sys.executable, "-m", "albert_tf.train_sentencepiece", f"--input={corpus}",
                        "--input_format=paragraphs", "--vocab_size=8000", "--nodo_lower_case",
                        f"--output_prefix={spm[:-len('.model')]}"], check=True, cwd=REPO, env=child_env())
    config = os.path.join(work, "small8k.json")
    with open(os.path.join(REPO, "configs", "albert_small.json")) as f:
        settings = json.load(f)
    with open(config, "w") as f:
        json.dump({**settings, "vocab_size": 8000}, f, indent=2)
    return spm, config


def run(checkout, output, seed, spm, config, data_dir):
    """run_tagger of `checkout` (its own code first on PYTHONPATH); its eval_results.json."""
    results = os.path.join(output, "eval_results.json")
    if not os.path.exists(results):
        command = [sys.executable, "-m", "albert_tf.run_tagger", f"--train_file={data_dir}/{TRAIN_FILE}",
                   f"--eval_file={data_dir}/{EVAL_FILE}", f"--albert_config={config}", f"--spm_model_file={spm}",
                   "--do_lower_case=false", "--do_train", "--do_eval", f"--output_dir={output}",
                   f"--max_seq_length={SEQ}", f"--train_batch_size={BATCH}", f"--learning_rate={LEARNING_RATE}",
                   f"--num_train_steps={STEPS}", f"--num_warmup_steps={WARMUP}", f"--save_checkpoints_steps={STEPS}",
                   "--iterations_per_loop=100", "--eval_batch_size=64", f"--seed={seed}", "--overwrite"]
        print("+ " + " ".join(command[1:]), flush=True)
        env = {**child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1"), "PYTHONPATH": checkout}
        subprocess.run(command, check=True, cwd=checkout, env=env)
    with open(results) as f:
        return json.load(f)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="a checkout of the commit before units (tags words)")
    parser.add_argument("--data_dir", default=os.path.join(SHARED_DATA, "ner_uner_en_ewt"),
                        help="holds en_ewt-ud-dev.iob2 and en_ewt-ud-test.iob2")
    parser.add_argument("--work_dir", default=os.path.join(WORK, "tagging_units"), help="vocabulary and runs (reused)")
    parser.add_argument("--results_dir", default=RESULTS, help="where tagging_units.{json,md} go")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated fine-tuning seeds")
    args = parser.parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    spm, config = vocabulary(args.work_dir)
    seeds = [int(seed) for seed in args.seeds.split(",") if seed]
    checkouts = {"words (baseline)": os.path.abspath(args.baseline), "units (this checkout)": REPO}
    figures = {}
    for name, checkout in checkouts.items():
        runs = [run(checkout, os.path.join(args.work_dir, name.split()[0], f"seed{seed}"), seed, spm, config,
                    args.data_dir) for seed in seeds]
        figures[name] = {metric: [100 * r[metric] for r in runs] for metric in ("f1", "precision", "recall")}
        figures[name].update({f"{entity_type} F1": [100 * r["per_type"].get(entity_type, {"f1": 0})["f1"]
                                                    for r in runs] for entity_type in ("LOC", "ORG", "PER")})

    def cell(values):
        return f"{statistics.mean(values):.2f} ± {statistics.stdev(values) if len(values) > 1 else 0:.2f}"

    metrics = list(next(iter(figures.values())))
    difference = statistics.mean(figures["units (this checkout)"]["f1"]) - statistics.mean(
        figures["words (baseline)"]["f1"])
    rows = [[name, str(len(seeds)), *(cell(values[metric]) for metric in metrics)] for name, values in figures.items()]
    text = (f"Universal NER English-EWT, trained on {TRAIN_FILE}, evaluated on {EVAL_FILE} after the last step; "
            f"albert_small from random init, a cased 8,000-piece vocabulary of the English corpus's first 2 MB, "
            f"{STEPS} steps of batch {BATCH}, seq {SEQ}, lr {LEARNING_RATE:g}, {WARMUP} warmup steps; seeds "
            f"{args.seeds}; {cpu_description()}.\n\n"
            + markdown_table(["tagging", "seeds", *(f"{metric} %" for metric in metrics)], rows)
            + f"\n\nunits - words: {difference:+.2f} entity F1\n")
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "tagging_units.md"), "w") as f:
        f.write(portable(text))
    with open(os.path.join(args.results_dir, "tagging_units.json"), "w") as f:
        json.dump(portable({"figures": figures, "seeds": seeds}), f, indent=1)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
