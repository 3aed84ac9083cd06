r"""Entity tagging on Universal NER English-EWT: albert_tf's run_tagger from a pretrained checkpoint and from random
init, beside Hugging Face's AlbertForTokenClassification trained from the same checkpoint, over several seeds.

  python -m benchmarks.downstream.tagging --pretrained=/work/albert_large_cased/runs/smallA_large \
      [--seeds=1,2,3] [--work_dir=/tmp/albert_tagging]

  # a check of the plumbing in a few minutes (a tiny model tags no entity at this size): a tiny checkpoint, 200
  # sentences each way, one seed, two epochs
  python -m benchmarks.downstream.tagging --pretrained=/tmp/albert_learning_curve/pretrain --seeds=1 \
      --max_train_sentences=200 --max_eval_sentences=200 --epochs=2 --work_dir=/tmp/tag_check \
      --results_dir=/tmp/tag_check

The data (../shared/data/ner_uner_en_ewt, CC BY-SA 4.0): PER, LOC and ORG in IOB2 over the English Web Treebank's
tokens, in their original case. Its train split is not available offline, so the dev split (2,001 sentences)
trains and the test split (2,077) evaluates. --max_train_sentences and --max_eval_sentences draw subsets (fixed
seed), written as JSON Lines (WORK_DIR/data).

Four runs per seed, the same recipe (--epochs over the training windows at --batch_size, 10% warmup then linear
decay, --learning_rate, --max_seq_length, seed) and threads:
  - albert_tf from --pretrained: `python -m albert_tf.run_tagger --init_checkpoint=...` (the casing it records);
  - albert_tf from random init: run_tagger with --albert_config and --spm_model_file (the checkpoint's config,
    vocabulary and casing);
  - Hugging Face from --pretrained: the checkpoint converted by `python -m albert_tf.convert --to=huggingface`,
    AlbertForTokenClassification.from_pretrained with the label set as num_labels/id2label, trained in a
    run_glue-style loop: torch AdamW (weight decay 0.01, LayerNorm weights and biases excluded; epsilon 1e-8),
    gradients clipped to norm 1, transformers.get_linear_schedule_with_warmup;
  - Hugging Face from --pretrained with the original's optimizer, albert_tf's: AdamW without bias correction,
    epsilon 1e-6, the schedule's decay measured from step 0 (benchmarks.downstream.original_adamw_torch) and
    the original's decay exclusions (every LayerNorm, where run_glue's rule decays full_layer_layer_norm's
    weight); the loop otherwise the same: the same recipe to the update rule. A test trains both sides from the
    same weights on the same batches, dropout off, and finds the same weights after every step.
Both implementations see the same inputs, so what is compared is the training, not the tokenization: the Hugging
Face side's windows are made by albert_tf.tasks.tagging_task.tagged_data, as run_tagger makes them (each
sentence's text tokenized whole, its pieces grouped into units, each unit's tag at its reading piece, -100
elsewhere, a long sentence cut into overlapping windows), and its logits are read into entities by the same
rule the served model applies (albert_tf.text.entities); both are scored by the same metrics: conlleval's
entity-level precision, recall and F1 over the entities' character spans, and accuracy over the characters. The
converted Hugging Face tokenizer gives these pieces too: the results say on how many of the sentences. What
differs is each library's own: albert_tf's AdamW is the original's (no bias correction, epsilon
1e-6), torch's corrects the bias, so at the same rate albert_tf's updates are larger while its second moment is
still filling (by (1 - 0.9^t) / sqrt(1 - 0.999^t): about 3.2x at step 100, 1.9x at step 325); the heads'
initializations and the data orders are each library's; and the original's schedule decays from step 0, so after
warmup its rate is 10% below transformers' at every step. The fourth run takes the optimizer out of the comparison:
albert_tf's parity with Hugging Face is judged against it, and the difference from torch's AdamW and transformers'
schedule is reported beside it.

Each run is evaluated once, after its last step: with the test split as the only held-out data, choosing a
checkpoint on it (the tool's every-tenth-of-the-steps recipe keeps the best) would tune on the test set. Where a
data set has a dev split (--dev_file), each run evaluates it every tenth of its steps and the test split is
scored with the weights best on it, on both sides:

  python -m benchmarks.downstream.tagging --pretrained=../cjk_transfer/zh/runs/pretrain \
      --data_dir=../shared/data/ner_uner_zh_gsdsimp --train_file=zh_gsdsimp-ud-train.iob2 \
      --dev_file=zh_gsdsimp-ud-dev.iob2 --eval_file=zh_gsdsimp-ud-test.iob2 --epochs=3 --gain_goal=5 \
      --results_name=tagging_zh --work_dir=../cjk_transfer/zh/tagging

Time per training step, both in --threads threads (TF_NUM_INTRAOP_THREADS for the tool, torch.set_num_threads for
PyTorch; default: this machine's cores): albert_tf's from its progress lines (each loop's windows/s; loops of
100 steps, the first, which traces the graph, left out), Hugging Face's from the same steps of its loop (batch,
forward, backward and update; evaluation left out). Time it on an otherwise idle machine.

Every finished run is kept (WORK_DIR/IMPLEMENTATION/START/seedN.json) and reused when the command is rerun with
the same settings, checkpoint and data, so the grid can run across sessions. Writes RESULTS_DIR/tagging.{json,md}:
per run kind the mean, standard deviation and range over seeds of entity F1 overall and per type, precision,
recall and token accuracy, the time per step, and the judged goals: pretrained beats random init by >= 10 F1;
albert_tf within 1 F1 of Hugging Face from the same weights and optimizer; albert_tf's time per step no more than
Hugging Face's (with torch's AdamW, run_glue's); albert_tf serves what it measured: each pretrained run's best
model, exported as a SavedModel, finds on the raw test texts the entities of its predictions file, sentence by
sentence (benchmarks.downstream.served_entities; kept as WORK_DIR/albert_tf/pretrained/seedN.served.json).
"""

import argparse
import hashlib
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import types

from benchmarks.common import (REPO, RESULTS, SHARED_DATA, child_env, cpu_description, markdown_table,
                               module_command, write_results)
from benchmarks.downstream.own_labels import (ITERATIONS_PER_LOOP, huggingface_train, library_versions,
                                              run_finetuning_tool, spread, starting_points)
from benchmarks.downstream.transfer import cached

# (implementation, start) of each run of a seed.
HUGGING_FACE, HUGGING_FACE_ORIGINAL_OPTIMIZER = "Hugging Face", "Hugging Face, original optimizer"
RUNS = (("albert_tf", "pretrained"), ("albert_tf", "random init"), (HUGGING_FACE, "pretrained"),
        (HUGGING_FACE_ORIGINAL_OPTIMIZER, "pretrained"))
TRAIN_FILE, EVAL_FILE = "en_ewt-ud-dev.iob2", "en_ewt-ud-test.iob2"
EVAL_BATCH_SIZE = 64
# The staged data sets' names for the table's title, by directory.
DATA_SET_TITLES = {"ner_uner_en_ewt": "Universal NER English-EWT",
                   "ner_uner_zh_gsdsimp": "Universal NER Chinese GSDSimp",
                   "ner_uner_zh_gsd": "Universal NER Chinese GSD (Traditional)"}
PRETRAINING_GAIN_GOAL = 10.0  # entity F1 points pretrained must beat random init by
PARITY_GOAL = 1.0  # entity F1 points albert_tf may lie from Hugging Face


def file_sha256(path):
    """Hex sha256 of a file (albert_tf.file_utils' imports TensorFlow, which this process, running PyTorch, leaves
    to the tool's)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def split_file(source, directory, name, max_sentences):
    """(path the runs read, its TaggedFile): `source` itself, or `max_sentences` of its sentences drawn with a fixed
    seed, written as DIRECTORY/NAME.jsonl."""
    from albert_tf.tasks.tagged_texts import read_tagged_file

    tagged = read_tagged_file(source)
    if not max_sentences or max_sentences >= len(tagged.sentences):
        return source, tagged
    chosen = sorted(random.Random(0).sample(range(len(tagged.sentences)), max_sentences))
    path = os.path.join(directory, f"{name}.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for index in chosen:
            sentence = tagged.sentences[index]
            row = {"tokens": list(sentence.tokens), "tags": list(sentence.tags)}
            if sentence.text is not None:  # the raw sentence the tool tags, as the file's `# text =` line gives it
                row["text"] = sentence.text
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path, read_tagged_file(path)


def described(tagged, windows):
    from albert_tf.tasks.tagged_texts import entity_counts

    entities = ", ".join(f"{name} {count:,}" for name, count in entity_counts(tagged).items())
    return (f"{len(tagged.sentences):,} sentences, {sum(len(s.tokens) for s in tagged.sentences):,} tokens, "
            f"{len(windows):,} windows; entities {entities}")


def recipe(train_windows, args):
    """The settings all runs train with: one evaluation, after the last step; with a dev file, one every tenth of
    the steps."""
    steps = max(1, math.ceil(train_windows * args.epochs / args.batch_size))
    eval_every = max(1, math.ceil(steps / 10)) if args.dev_file else steps
    return types.SimpleNamespace(epochs=args.epochs, steps=steps, warmup=int(steps * 0.1), eval_every=eval_every,
                                 learning_rate=args.learning_rate, batch_size=args.batch_size,
                                 max_seq_length=args.max_seq_length, threads=args.threads)


def scores(metrics):
    """The figures kept of a metrics dict: overall entity F1, precision, recall, character accuracy and each type's
    F1, precision, recall and support."""
    return {"f1": metrics["f1"], "precision": metrics["precision"], "recall": metrics["recall"],
            "accuracy": metrics["accuracy"],
            "per_type": {name: {key: row[key] for key in ("f1", "precision", "recall", "support")}
                         for name, row in metrics["per_type"].items()}}


def albert_tf_run(seed, data, init_flags, settings, output, labels):
    """Fine-tunes with run_tagger; its evaluation (after the last step, or of the checkpoint best on the dev file
    where there is one) and its time per step."""
    files = ([f"--train_file={data['train']}", f"--eval_file={data['dev']}", f"--predict_file={data['eval']}",
              "--do_predict"] if "dev" in data else [f"--train_file={data['train']}", f"--eval_file={data['eval']}"])
    seconds, seconds_per_step, timed_steps = run_finetuning_tool(
        "albert_tf.run_tagger", files, seed, init_flags, settings, output, labels,
        extra_flags=["--max_seconds_per_loop=0"])
    with open(os.path.join(output, "eval_results.json")) as f:
        evaluation = json.load(f)
    if "dev" in data:
        evaluation = evaluation["predict"]
    return {**scores(evaluation), "seconds_per_step": seconds_per_step, "timed_steps": timed_steps,
            "seconds": round(seconds, 1)}


def huggingface_inputs(arrays):
    """window_arrays' columns under AlbertForTokenClassification's argument names, as int64 tensors."""
    import torch

    names = {"input_word_ids": "input_ids", "input_mask": "attention_mask", "input_type_ids": "token_type_ids",
             "label_ids": "labels"}
    return {names[name]: torch.from_numpy(values.astype("int64")) for name, values in arrays.items()}


def huggingface_evaluate(model, eval_data, labels):
    """The metrics of the model's entities on `eval_data` (tagging_task.TaggedData), its logits merged and read
    into entities as run_tagger and the served model read them."""
    import numpy as np
    import torch

    from albert_tf.text.word_pieces import window_arrays

    inputs = huggingface_inputs(window_arrays(eval_data.windows))
    inputs.pop("labels")
    model.eval()
    logits = []
    with torch.no_grad():
        for begin in range(0, len(eval_data.windows), EVAL_BATCH_SIZE):
            batch = {name: values[begin:begin + EVAL_BATCH_SIZE] for name, values in inputs.items()}
            logits.append(model(**batch).logits.float().numpy())
    model.train()
    return eval_data.metrics(eval_data.entities_of_logits(np.concatenate(logits), list(labels)), labels)


def huggingface_run(seed, hf_dir, data, settings, labels, original_adamw=False):
    """Fine-tunes AlbertForTokenClassification in a run_glue-style loop on the training windows of `data` (each
    split's tagging_task.TaggedData; with the original's AdamW and schedule, albert_tf's, where `original_adamw`);
    its evaluation (after the last step, or, with a dev split, of the weights best on it, evaluated every
    settings.eval_every steps as the tool's checkpoints are) and its time per step."""
    import copy

    import numpy as np
    import torch
    import transformers

    from albert_tf.text.word_pieces import window_arrays

    torch.set_num_threads(settings.threads)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = transformers.AlbertForTokenClassification.from_pretrained(
        hf_dir, num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id={name: index for index, name in enumerate(labels)})
    train = huggingface_inputs(window_arrays(data["train"].windows))
    best = {"f1": -1.0, "state": None}

    def progress(step, loss):
        if step % ITERATIONS_PER_LOOP == 0 or step == settings.steps:
            print(f"Hugging Face seed {seed}: step {step}/{settings.steps}  loss {loss.item():.4f}", flush=True)
        if "dev" in data and (step % settings.eval_every == 0 or step == settings.steps):
            f1 = huggingface_evaluate(model, data["dev"], labels)["f1"]
            if f1 > best["f1"]:
                best.update(f1=f1, state=copy.deepcopy(model.state_dict()))

    step_seconds = huggingface_train(
        model, len(data["train"].windows),
        lambda rows: model(**{name: values[rows] for name, values in train.items()}).loss, settings, seed, progress,
        original_adamw=original_adamw)
    if best["state"] is not None:
        model.load_state_dict(best["state"])
    evaluation = huggingface_evaluate(model, data["eval"], labels)
    print(f"Hugging Face seed {seed}: entity F1 {evaluation['f1']:.4f}  token accuracy {evaluation['accuracy']:.4f}",
          flush=True)
    return {**scores(evaluation), "seconds_per_step": statistics.mean(step_seconds), "timed_steps": len(step_seconds)}


def tokenizer_agreement(hf_dir, tokenizer, texts):
    """(texts, of `texts`) whose ids from the converted Hugging Face tokenizer are [CLS], `tokenizer`'s pieces of
    the text, [SEP]."""
    import transformers

    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    theirs = hf_tokenizer(list(texts))["input_ids"]
    cls, sep = tokenizer.special_ids.cls, tokenizer.special_ids.sep
    same = sum(ids == [cls, *tokenizer.encode(text), sep] for text, ids in zip(texts, theirs))
    return same, len(texts)


def run_name(implementation, start):
    return f"{implementation}/{start}"


def served_check(output, key, threads):
    """Does albert_tf's run in `output` serve what it measured? Its best model exported, its test texts served
    and the entities compared with its predictions file (benchmarks.downstream.served_entities, in a process of
    its own, as TensorFlow is the tool's); that module's result, kept beside the run's as OUTPUT.served.json."""
    def check():
        result_file = os.path.join(output, "served.json")
        command = module_command("benchmarks.downstream.served_entities", f"--model={os.path.join(output, 'best')}",
                                 f"--predictions={os.path.join(output, 'predictions.entities.jsonl')}",
                                 f"--export_dir={os.path.join(output, 'served')}", f"--result={result_file}")
        print("+ " + " ".join(command[1:]), flush=True)
        subprocess.run(command, check=True, cwd=REPO,
                       env=child_env(TF_CPP_MIN_LOG_LEVEL="3", TF_NUM_INTRAOP_THREADS=str(threads)))
        with open(result_file, encoding="utf-8") as f:
            return json.load(f)

    return cached(output + ".served.json", key, check)


def served_goal(records):
    """The judged goal that every albert_tf run from the pretrained checkpoint serves its predictions file's
    entities on every test sentence."""
    checks = [record["served"] for record in records]
    per_seed = ", ".join(f"{check['equal']:,} of {check['sentences']:,}" for check in checks)
    return {"goal": "albert_tf serves what it measured: its SavedModel's entities on the raw test texts equal its "
                    "predictions file's on every sentence",
            "met": all(check["equal"] == check["sentences"] for check in checks),
            "measured": f"sentences equal, each seed's pretrained run: {per_seed}"}


def summarize(records, types_, gain_goal=PRETRAINING_GAIN_GOAL):
    """({run name: figures}, goals): metrics in percent, time per step in milliseconds."""
    summary = {}
    for implementation, start in RUNS:
        runs = [r[run_name(implementation, start)] for r in records]
        summary[run_name(implementation, start)] = {
            **{metric: spread([100 * r[metric] for r in runs]) for metric in ("f1", "precision", "recall",
                                                                              "accuracy")},
            "per_type_f1": {name: spread([100 * r["per_type"].get(name, {"f1": 0.0})["f1"] for r in runs])
                            for name in types_},
            "ms_per_step": spread([1000 * r["seconds_per_step"] for r in runs])}
    pretrained, random_init, huggingface, same_optimizer = (summary[run_name(*run)]["f1"] for run in RUNS)
    gain = pretrained["mean"] - random_init["mean"]
    difference = pretrained["mean"] - same_optimizer["mean"]
    torch_difference = pretrained["mean"] - huggingface["mean"]
    ours = summary[run_name(*RUNS[0])]["ms_per_step"]["mean"]
    theirs = summary[run_name(*RUNS[2])]["ms_per_step"]["mean"]
    goals = [
        {"goal": f"albert_tf: pretrained beats random init by >= {gain_goal:g} entity F1",
         "met": gain >= gain_goal,
         "measured": f"pretrained - random init {gain:+.2f} (largest std "
                     f"{max(pretrained['std'], random_init['std']):.2f})"},
        {"goal": f"albert_tf within {PARITY_GOAL:g} entity F1 of Hugging Face from the same weights and recipe "
                 "(the original's AdamW and schedule on both sides)",
         "met": abs(difference) <= PARITY_GOAL,
         "measured": f"albert_tf - Hugging Face {difference:+.2f} (largest std "
                     f"{max(pretrained['std'], same_optimizer['std']):.2f})"},
        {"goal": f"(not judged: another optimizer) albert_tf within {PARITY_GOAL:g} entity F1 of Hugging Face "
                 "trained with torch's AdamW and transformers' schedule", "met": None,
         "measured": f"albert_tf - Hugging Face {torch_difference:+.2f} (largest std "
                     f"{max(pretrained['std'], huggingface['std']):.2f})"},
        {"goal": "albert_tf's time per step <= Hugging Face's", "met": ours <= theirs,
         "measured": f"{ours:.1f} ms vs {theirs:.1f} ms (Hugging Face / albert_tf {theirs / ours:.2f}x)"}]
    return summary, goals


def tables(summary, goals, types_):
    def cell(figures, with_range=False):
        text = f"{figures['mean']:.2f} ± {figures['std']:.2f}"
        return f"{text} ({figures['min']:.2f} - {figures['max']:.2f})" if with_range else text

    rows = []
    for implementation, start in RUNS:
        figures = summary[run_name(implementation, start)]
        rows.append((implementation, start, len(figures["f1"]["values"]), cell(figures["f1"], with_range=True),
                     *(cell(figures["per_type_f1"][name]) for name in types_), cell(figures["precision"]),
                     cell(figures["recall"]), cell(figures["accuracy"]), f"{figures['ms_per_step']['mean']:.1f}"))
    results = markdown_table(["implementation", "initialization", "seeds", "entity F1 %",
                              *(f"{name} F1 %" for name in types_), "precision %", "recall %", "character accuracy %",
                              "ms / step"], rows)
    verdict = {True: "met", False: "missed", None: "-"}
    judged = markdown_table(["goal", "measured", ""], [(g["goal"], g["measured"], verdict[g["met"]]) for g in goals])
    return f"{results}\n\n{judged}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pretrained", required=True, help="albert_tf checkpoint or model directory with spm.model")
    parser.add_argument("--data_dir", default=os.path.join(SHARED_DATA, "ner_uner_en_ewt"),
                        help="holds --train_file, --eval_file and --dev_file")
    parser.add_argument("--train_file", default=TRAIN_FILE, help=f"trained on (default {TRAIN_FILE})")
    parser.add_argument("--eval_file", default=EVAL_FILE, help=f"scored (default {EVAL_FILE})")
    parser.add_argument("--dev_file", default=None,
                        help="where given, every run evaluates it every tenth of its steps and --eval_file is scored "
                             "with the weights best on it (default: none; --eval_file scored after the last step)")
    parser.add_argument("--title", default=None,
                        help="the data set's name in the table (default: the staged UNER sets' names, else the data "
                             "directory's)")
    parser.add_argument("--results_name", default="tagging", help="writes RESULTS_DIR/NAME.{json,md}")
    parser.add_argument("--gain_goal", type=float, default=PRETRAINING_GAIN_GOAL,
                        help="entity F1 points pretrained must beat random init by (default 10)")
    parser.add_argument("--work_dir", default="/tmp/albert_tagging", help="data, runs and per-run results (reused)")
    parser.add_argument("--results_dir", default=RESULTS, help="where tagging.{json,md} go")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated fine-tuning seeds (default 1,2,3)")
    parser.add_argument("--epochs", type=float, default=5.0,
                        help="passes over the training windows (default 5: the 2,001 training sentences make 2,079 "
                             "windows at seq 64, 65 steps of batch 32 an epoch, so 5 epochs give 325 steps, a quarter "
                             "of the steps of run_ner's 3 epochs over CoNLL-2003's 14,041 sentences at that batch; the "
                             "tool's own 3 epochs would give 195)")
    parser.add_argument("--learning_rate", type=float, default=1e-4,
                        help="peak AdamW rate (default 1e-4, for small models; the tool's own 2e-5 suits base size)")
    parser.add_argument("--batch_size", type=int, default=32, help="windows per step (default 32)")
    parser.add_argument("--max_seq_length", type=int, default=None,
                        help="pieces per window. Default: the length --pretrained records it was pretrained at (so no "
                             "position embedding is used that pretraining never trained), else 128")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help=f"threads of both implementations (default: this machine's {os.cpu_count()} cores)")
    parser.add_argument("--max_train_sentences", type=int, default=0,
                        help=f"train on this many sentences drawn from {TRAIN_FILE} (default 0: all 2,001); for a "
                             "quick check")
    parser.add_argument("--max_eval_sentences", type=int, default=0,
                        help=f"evaluate on this many sentences drawn from {EVAL_FILE} (default 0: all 2,077); for a "
                             "quick check")
    args = parser.parse_args(argv)
    args.title = args.title or DATA_SET_TITLES.get(os.path.basename(os.path.normpath(args.data_dir)),
                                                   os.path.basename(os.path.normpath(args.data_dir)))

    from albert_tf.models.preprocessing_contract import resolve_preprocessing
    from albert_tf.tasks.tagged_texts import tag_labels
    from albert_tf.tasks.tagging_task import tagged_data
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    metadata_file, spm = (os.path.join(args.pretrained, name) for name in ("albert_tf.json", "spm.model"))
    for path in (metadata_file, spm):
        if not os.path.isfile(path):
            sys.exit(f"{path}: missing; --pretrained must be an albert_tf checkpoint directory with spm.model")
    for name in filter(None, (args.train_file, args.eval_file, args.dev_file)):
        if not os.path.isfile(os.path.join(args.data_dir, name)):
            sys.exit(f"{os.path.join(args.data_dir, name)}: missing; pass --data_dir=<the directory holding it>")
    seeds = [int(s) for s in args.seeds.split(",") if s]
    with open(metadata_file) as f:
        metadata = json.load(f)
    # The casing and length run_tagger takes from the checkpoint, for the windows of the Hugging Face side.
    preprocessing = resolve_preprocessing(metadata, max_seq_length=args.max_seq_length, source=args.pretrained)
    args.max_seq_length = preprocessing.max_seq_length
    tokenizer = AlbertTokenizer(spm, lower_case=preprocessing.lower_case, keep_accents=preprocessing.keep_accents,
                                rewrite_quotes=preprocessing.rewrite_quotes)

    data_dir = os.path.join(args.work_dir, "data")
    os.makedirs(data_dir, exist_ok=True)
    data, tagged = {}, {}
    splits = (("train", args.train_file, args.max_train_sentences), ("eval", args.eval_file, args.max_eval_sentences),
              *((("dev", args.dev_file, 0),) if args.dev_file else ()))
    for split, name, limit in splits:
        data[split], tagged[split] = split_file(os.path.join(args.data_dir, name), data_dir, split, limit)
    labels = tag_labels(tagged["train"])
    # The windows both implementations read: each sentence's text tokenized whole, grouped into units, as
    # run_tagger and the served model do (albert_tf.tasks.tagging_task.tagged_data).
    prepared = {split: tagged_data(tagged[split], tokenizer, labels.labels, args.max_seq_length) for split in tagged}
    train_windows, eval_windows = prepared["train"].windows, prepared["eval"].windows
    settings = recipe(len(train_windows), args)

    init_flags, identities, hf_dir = starting_points(args, metadata, spm)
    same_ids, compared = tokenizer_agreement(hf_dir, tokenizer, [text for split in prepared
                                                                  for text in prepared[split].texts])
    data_key = {**{f"{split}_sha256": file_sha256(path) for split, path in data.items()},
                "labels": list(labels.labels), "tagging": "units of the text"}

    records = []
    for seed in seeds:
        record = {"seed": seed}
        for implementation, start in RUNS:
            output = os.path.join(args.work_dir, re.sub(r"\W+", "_", implementation), start.replace(" ", "_"),
                                  f"seed{seed}")
            os.makedirs(os.path.dirname(output), exist_ok=True)
            key = {"implementation": implementation, "start": start, "seed": seed, **identities[start],
                   **vars(settings), **data_key}
            if implementation == HUGGING_FACE_ORIGINAL_OPTIMIZER:
                # Runs before 2026-11-30 decayed full_layer_layer_norm's weight (run_glue's exclusions): redone.
                key["weight_decay_exclusions"] = "original"
            if implementation == "albert_tf":
                result = cached(output + ".json", key, lambda: albert_tf_run(
                    seed, data, init_flags[start], settings, output, labels.labels))
            else:
                result = cached(output + ".json", key, lambda: huggingface_run(
                    seed, hf_dir, prepared, settings, labels.labels,
                    original_adamw=implementation == HUGGING_FACE_ORIGINAL_OPTIMIZER))
            record[run_name(implementation, start)] = result
            if (implementation, start) == RUNS[0]:
                record["served"] = served_check(output, key, settings.threads)
        records.append(record)
        print(f"seed {seed}: " + ", ".join(
            f"{name} entity F1 {record[name]['f1']:.4f} {1000 * record[name]['seconds_per_step']:.1f} ms/step"
            for name in (run_name(*run) for run in RUNS)), flush=True)

    summary, goals = summarize(records, labels.types, args.gain_goal)
    goals.append(served_goal(records))
    config = metadata["albert_config"]
    vocabulary_casing = "uncased" if preprocessing.lower_case else "cased"
    scored = "evaluated after the last step"
    if "dev" in data:
        dev = described(tagged["dev"], prepared["dev"].windows)
        scored = (f"the weights best on {os.path.basename(data['dev'])} ({dev}, evaluated every tenth of the steps) "
                  "scored")
    title = (f"{args.title}, trained on {os.path.basename(data['train'])} "
             f"({described(tagged['train'], train_windows)}), evaluated on {os.path.basename(data['eval'])} "
             f"({described(tagged['eval'], eval_windows)}). Model: {args.pretrained} (hidden {config['hidden_size']}, "
             f"{config['num_hidden_layers']} layers, {vocabulary_casing} vocabulary of {config['vocab_size']}: its "
             f"albert_tf.json records lower_case {json.dumps(metadata.get('lower_case'))}) and the same config from "
             f"random init; "
             f"{settings.steps} steps ({args.epochs:g} epochs) of batch {settings.batch_size}, seq "
             f"{settings.max_seq_length}, lr {settings.learning_rate:g}, {settings.warmup} warmup steps, {scored}; "
             f"seeds {args.seeds}; {settings.threads} threads each on {cpu_description()}. Entities are scored as "
             f"character spans of each sentence's text, found as the served model finds them. Hugging Face's "
             f"converted tokenizer gives albert_tf's ids on {same_ids:,} of {compared:,} sentences.")
    write_results(args.results_dir, args.results_name, f"{title}\n\n{tables(summary, goals, labels.types)}\n", record={
        "args": vars(args), "settings": vars(settings), "labels": list(labels.labels),
        "vocabulary": {"lower_case": metadata.get("lower_case"), "keep_accents": metadata.get("keep_accents")},
        "tokenizer_agreement": {"same_ids": same_ids, "sentences": compared}, "cpu": cpu_description(),
        "versions": library_versions(), "records": records, "summary": summary, "goals": goals})


if __name__ == "__main__":
    main()
