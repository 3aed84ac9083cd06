r"""`make demo`: the whole pipeline, raw text to a served prediction, in minutes on 2 CPU cores.

  python -m albert_tf.demo [--output_dir=demo_output] [--input_file=my_corpus.txt --input_format=paragraphs]

Stages (each one a real albert_tf command, printed before it runs so you can
rerun or scale it; a stage whose output exists is reused, so a second
`make demo` is quick):

  1. corpus      the standard library's docstring prose (present in every Python
                 installation), or your --input_file; every 10th document is held out
  2. vocabulary  python -m albert_tf.train_sentencepiece
  3. data        python -m albert_tf.create_pretraining_data: the training documents,
                 tokenized once (pairs and masks are made anew every epoch while
                 training), and the held-out documents as masked n-gram + SOP instances
  4. pretrain    python -m albert_tf.run_pretraining (albert_tiny, LAMB), evaluated on
                 the held-out documents every quarter of the run, with the learning
                 phase each evaluation shows, and at the end (--do_eval)
  5. export      python -m albert_tf.export (encoder, preprocessing and serving SavedModels)
  6. predict     fill-in-the-mask and sentence similarity from the exported SavedModels,
                 and what the run learned, measured on the held-out documents

A few minutes of pretraining on 2 CPU cores teach a tiny model word
frequencies, not yet the use of context; step 6 measures which, against the
level that always answering the most frequent word reaches, and names the
recipe that gets further.
"""

import json
import os
import subprocess
import sys
import time

from absl import flags

from albert_tf import cli

# The source checkout the demo runs from, if it does (benchmarks/ and docs/ are not in the wheel).
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELD_OUT_EVERY = 10
EVAL_BATCH_SIZE = 32
# Accuracy at [MASK] this far above the frequent-piece level counts as using the context (as the
# pretraining-recipe benchmark judges "left the frequent-piece level").
LEARNED_MARGIN = 0.05
FILL_MASK_EXAMPLES = (
    "Return a new [MASK] containing the items of the iterable.",
    "This module provides functions for working with [MASK] and directories.",
)
SIMILARITY_EXAMPLES = (
    "Return the number of items in the list.",
    "Return how many elements the sequence holds.",
    "The socket connection to the server was closed.",
)


def define_flags():
    flags.DEFINE_string("output_dir", "demo_output", "Where every stage writes; reused by a second run.")
    flags.DEFINE_string("input_file", None, "Your corpus instead of the built-in one (comma-separated globs).")
    flags.DEFINE_enum("input_format", "paragraphs", ["sentences", "paragraphs"], "Format of --input_file (see "
                      "create_pretraining_data --helpfull); the built-in corpus is paragraphs.")
    flags.DEFINE_integer("corpus_bytes", 1_200_000, "Size of the built-in corpus taken.")
    flags.DEFINE_integer("vocab_size", 4000, "SentencePiece vocabulary size (ALBERT: 30000; small here for speed).")
    flags.DEFINE_integer("max_seq_length", 64, "Sequence length of the data and the model (ALBERT: 512).")
    flags.DEFINE_integer("max_predictions_per_seq", 10, "Masked positions per sequence.")
    flags.DEFINE_enum("data_format", "documents", ["documents", "instances"], "documents: new pairs and masks "
                      "every epoch; instances: --dupe_factor static copies (the original's format).")
    flags.DEFINE_integer("dupe_factor", 2, "Copies of the corpus with different masks, for --data_format=instances.")
    flags.DEFINE_integer("train_batch_size", 32, "Pretraining batch size (paper: 4096).")
    flags.DEFINE_integer("num_train_steps", 800, "Pretraining steps (paper: 125000).")
    # LAMB's trust ratio makes the learning rate a relative step per layer (lr x |w|); at batch 32 the
    # paper's 1.76e-3 (for batch 4096) leaves a tiny model at the unigram plateau for thousands of steps.
    flags.DEFINE_float("learning_rate", 1e-2, "LAMB peak learning rate (paper: 1.76e-3 at batch 4096).")
    flags.DEFINE_integer("num_workers", 2, "Processes for create_pretraining_data.")


FLAGS = flags.FLAGS


def step(number, title):
    print(f"\n=== {number}/6 {title} ===", flush=True)


def run_tool(module, *args):
    command = [sys.executable, "-m", module, *args]
    print("$ python -m " + module + " " + " ".join(args), flush=True)
    returncode = subprocess.run(command, env={**os.environ, "PYTHONUNBUFFERED": "1"}).returncode
    if returncode:  # the tool has said why, above; a traceback of this script would only bury it
        raise StageFailed(f"python -m {module} failed (exit status {returncode}); its message is above")


class StageFailed(RuntimeError):
    exit_code = 1  # cli.run reports it in one line


# The flags each stage's output depends on, stage by stage: a stage is rebuilt, with every stage after it, when
# one of its own or an earlier stage's settings differs from what the last run in --output_dir recorded.
STAGE_SETTINGS = (
    ("corpus", ("input_file", "input_format", "corpus_bytes")),
    ("vocabulary", ("vocab_size",)),
    ("data", ("max_seq_length", "max_predictions_per_seq", "data_format", "dupe_factor")),
    ("pretraining", ("train_batch_size", "num_train_steps", "learning_rate")),
)
SETTINGS_FILE = "demo_settings.json"


def stage_outputs(out):
    """What each stage writes, under `out` (removed when its settings change)."""
    return {
        "corpus": [os.path.join(out, name) for name in ("corpus.txt", "corpus.train.txt", "corpus.heldout.txt")],
        "vocabulary": [os.path.join(out, name) for name in ("spm.model", "spm.vocab")],
        "data": [os.path.join(out, "data")],
        "pretraining": [os.path.join(out, name) for name in ("pretrain", "albert_tiny_demo.json", "export")],
    }


def forget_changed_stages(out):
    """Removes the outputs of the first stage whose settings changed since the last run, and of every stage
    after it, and records this run's settings: a rerun with other settings rebuilds what they change."""
    import shutil

    settings = {stage: {name: FLAGS[name].value for name in names} for stage, names in STAGE_SETTINGS}
    path = os.path.join(out, SETTINGS_FILE)
    recorded = {}
    if os.path.exists(path):
        with open(path) as f:
            recorded = json.load(f)
    stages = [stage for stage, _ in STAGE_SETTINGS]
    outputs = stage_outputs(out)
    changed = next((stage for stage in stages if recorded.get(stage) != settings[stage]), None)
    if changed is not None:
        existing = [p for stage in stages[stages.index(changed):] for p in outputs[stage] if os.path.exists(p)]
        if existing:
            differences = [f"--{name}={recorded.get(stage, {}).get(name, '?')} -> {settings[stage][name]}"
                           for stage in stages for name in settings[stage]
                           if recorded.get(stage, {}).get(name) != settings[stage][name]] if recorded else []
            print(f"Settings differ from the last run in {out} ({', '.join(differences) or 'no record of them'}): "
                  f"rebuilding from the {changed} stage on.", flush=True)
            for existing_path in existing:
                shutil.rmtree(existing_path) if os.path.isdir(existing_path) else os.remove(existing_path)
    with open(path, "w") as f:
        json.dump(settings, f, indent=2)


def reuse(path, what):
    if os.path.exists(path):
        print(f"Reusing {what}: {path}", flush=True)
        return True
    return False


def demo_config(path, vocab_size):
    """albert_tiny with the demo vocabulary's size, as a config file the printed commands can name.

    From the preset, not the checkout's configs/: the installed wheel has no checkout.
    """
    from albert_tf.albert_config import AlbertConfig

    AlbertConfig.from_preset("albert_tiny", vocab_size=vocab_size).to_json_file(path)
    return path


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    start = time.monotonic()
    out = os.path.abspath(FLAGS.output_dir)
    os.makedirs(out, exist_ok=True)
    forget_changed_stages(out)

    step(1, "corpus")
    source, corpus_format = FLAGS.input_file, FLAGS.input_format
    if not source:
        source, corpus_format = os.path.join(out, "corpus.txt"), "paragraphs"
        if not reuse(source, "the corpus"):
            from albert_tf.data.builtin_corpus import write_corpus

            documents, size = write_corpus(source, max_bytes=FLAGS.corpus_bytes)
            print(f"Wrote {size / 1e6:.1f} MB of docstring prose from {documents} standard-library modules "
                  f"to {source}", flush=True)
    corpus, heldout_text = hold_out_documents(source, out)

    step(2, "SentencePiece vocabulary")
    spm = os.path.join(out, "spm")
    if not reuse(spm + ".model", "the vocabulary"):
        run_tool("albert_tf.train_sentencepiece", f"--input={corpus}", f"--input_format={corpus_format}",
                 f"--vocab_size={FLAGS.vocab_size}", f"--output_prefix={spm}", "--nohard_vocab_limit")
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    vocab_size = AlbertTokenizer(spm + ".model").vocab_size

    step(3, "pretraining data")
    data = os.path.join(out, "data", "train")
    shapes = [f"--max_seq_length={FLAGS.max_seq_length}", f"--max_predictions_per_seq={FLAGS.max_predictions_per_seq}"]
    heldout = os.path.join(out, "data", "heldout")
    for prefix, text, dupe_factor, shards, output_format in (
            (data, corpus, FLAGS.dupe_factor, 4, FLAGS.data_format), (heldout, heldout_text, 1, 1, "instances")):
        if not reuse(prefix + ".metadata.json", f"the {os.path.basename(prefix)} data"):
            run_tool("albert_tf.create_pretraining_data", f"--input_file={text}", f"--input_format={corpus_format}",
                     f"--output_file={prefix}", f"--spm_model_file={spm}.model", f"--dupe_factor={dupe_factor}",
                     f"--num_workers={FLAGS.num_workers}", f"--num_output_shards={shards}",
                     f"--output_format={output_format}", *shapes)

    step(4, "pretraining (albert_tiny, LAMB)")
    config = demo_config(os.path.join(out, "albert_tiny_demo.json"), vocab_size)
    checkpoint = os.path.join(out, "pretrain")
    # run_pretraining resumes by itself, and does nothing when the run is complete.
    run_tool("albert_tf.run_pretraining", f"--input_file={data}", f"--albert_config={config}",
             f"--output_dir={checkpoint}", f"--spm_model_file={spm}.model",
             f"--train_batch_size={FLAGS.train_batch_size}", f"--num_train_steps={FLAGS.num_train_steps}",
             f"--num_warmup_steps={FLAGS.num_train_steps // 10}", f"--learning_rate={FLAGS.learning_rate}",
             f"--save_checkpoints_steps={FLAGS.num_train_steps // 4}", "--iterations_per_loop=50", "--do_eval",
             f"--eval_input_file={heldout}", f"--eval_batch_size={EVAL_BATCH_SIZE}", "--max_eval_steps=100000",
             f"--eval_every_steps={max(1, FLAGS.num_train_steps // 4)}", *shapes)

    step(5, "export")
    export = os.path.join(out, "export")
    if not reuse(os.path.join(export, "encoder", "saved_model.pb"), "the export"):
        run_tool("albert_tf.export", f"--checkpoint={checkpoint}", f"--output_dir={export}",
                 f"--max_seq_length={FLAGS.max_seq_length}", "--serving_name=albert_demo")

    step(6, "predictions from the exported SavedModels, and what the run learned")
    predict(export)
    report_learning(checkpoint, heldout, held_out=heldout_text != corpus,
                    paths={"out": out, "data": data, "heldout": heldout, "spm": spm + ".model"})
    print(f"\nDone in {time.monotonic() - start:.0f} s. Everything is in {out}:")
    for name, path in (("corpus", corpus), ("held out", heldout_text), ("vocabulary", spm + ".model"),
                       ("data", data + "-*"), ("held-out data", heldout + "-*"),
                       ("checkpoint", checkpoint), ("TensorBoard", os.path.join(checkpoint, "train")),
                       ("export", export)):
        print(f"  {name:13s} {path}")
    print(f"Serve it: docker run -p 8501:8501 -v {export}/serving:/models -e MODEL_NAME=albert_demo "
          f"tensorflow/serving  ({documentation('pipeline.md')}: Export and serve)")
    return 0


def predict(export):
    from albert_tf.models.embedder import Embedder, cosine_similarities
    from albert_tf.models.mask_filler import MaskFiller

    filler = MaskFiller(export)
    print("Fill in the mask (encoder SavedModel, `mlm` signature):")
    for text in FILL_MASK_EXAMPLES:
        answer = filler(text, top_k=5, max_seq_length=FLAGS.max_seq_length)
        print(f"  {filler.best_sequence(text, answer)}")
        print("    candidates: " + ", ".join(f"{c['token_str']} ({c['score']:.2f})" for c in answer[0]))
    embeddings = Embedder(export).embed(list(SIMILARITY_EXAMPLES))
    similarities = cosine_similarities(embeddings)
    print("Sentence similarity (preprocessing + encoder SavedModels, mean pooling):")
    for i, text in enumerate(SIMILARITY_EXAMPLES):
        print(f"  [{i}] {text}")
    print(f"  cos([0], [1]) = {similarities[0, 1]:.3f}   cos([0], [2]) = {similarities[0, 2]:.3f}")


def hold_out_documents(corpus, out):
    """(training text, held-out text): every 10th document of `corpus` held out; with fewer than 10
    documents, nothing is held out and the evaluation reads the training text (and says so)."""
    from albert_tf.data.corpus_reader import expand_input_patterns
    from albert_tf.data.heldout_split import split_documents

    train_text, heldout_text = os.path.join(out, "corpus.train.txt"), os.path.join(out, "corpus.heldout.txt")
    if os.path.exists(train_text) and os.path.exists(heldout_text):
        return train_text, heldout_text
    files = expand_input_patterns(corpus)
    if len(files) != 1 or files[0].endswith(".gz"):
        print("Nothing held out (the demo splits one uncompressed file): the evaluation reads the training text.",
              flush=True)
        return corpus, corpus
    try:
        kept, held = split_documents(files[0], train_text, heldout_text, every=HELD_OUT_EVERY)
    except ValueError as error:
        print(f"Nothing held out ({error}): the evaluation reads the training text.", flush=True)
        return corpus, corpus
    print(f"Held out every {HELD_OUT_EVERY}th document for evaluation: {kept} to train on, {held} held out "
          f"({heldout_text}).", flush=True)
    return train_text, heldout_text


def report_learning(checkpoint, heldout, held_out, paths):
    """What the run learned, measured: the held-out evaluation against the frequent-piece level; then the
    recipe that gets further (`paths`: the demo's out, data, heldout and spm)."""
    from albert_tf.data.pretraining_dataset import frequent_piece_level

    with open(os.path.join(checkpoint, "eval_results.txt")) as f:
        metrics = {name: float(value) for name, value in (line.split(" = ") for line in f if " = " in line)}
    level = frequent_piece_level(heldout, batch_size=EVAL_BATCH_SIZE)
    at_mask, order = metrics["masked_lm_accuracy_at_mask"], metrics["sentence_order_accuracy"]
    where = "held-out documents" if held_out else "training text (nothing could be held out)"
    print(f"What {int(metrics['global_step'])} steps learned, on the {where}: the model fills "
          f"{at_mask:.1%} of the words hidden behind [MASK] (always answering the most frequent piece fills "
          f"{level:.1%}) and puts {order:.1%} of the sentence pairs in the right order (chance: 50%).")
    history_path = os.path.join(checkpoint, "eval_history.jsonl")
    if os.path.exists(history_path):
        with open(history_path) as f:
            history = [json.loads(line) for line in f if line.strip()]
        if history:
            phases = " -> ".join(f"{record['phase']} (step {record['step']})" for record in history)
            print(f"Phase reached during training: {history[-1]['phase']} ({history[-1]['phase_reason']}). "
                  f"Evaluations: {phases}. What each phase means and what to change: "
                  f"{documentation('pretraining_from_scratch.md')}.")
    # Said so that a user does not mistake an undertrained model for a broken pipeline, or the reverse.
    if at_mask >= level + LEARNED_MARGIN:
        verdict = "It has begun to predict from the context, well short of what a long run reaches."
    else:
        verdict = ("So far it has learned which pieces are frequent, not yet how to use the context: small ALBERTs "
                   "sit at this level for their first ~150,000 sequences, more than a demo can afford.")
    # The recipe that learned best in the 3-hour runs measured on 2 CPU cores, with its measured figures
    # (benchmarks/results/large_corpus.md; the 14 MB corpus's run: from_scratch.md).
    print(verdict + " The recipe that learns best on 2 CPU cores: albert_small on documents (new pairs and masks "
          "every epoch), AdamW 5e-4, XLA, evaluated on held-out documents, with a 3-hour budget (resumable: rerun "
          "the same command after an interruption), on a corpus large enough not to be learned by heart. On 240 MB "
          "of public-domain books (1.5 passes in 3 hours on 2 cores) it fills 26.2% of the held-out words behind [MASK] "
          "and puts 71.5% of held-out sentence pairs in order, never memorizing; on a 14 MB corpus (36 passes) the "
          "same recipe ends at 22.6% and 59.3%, having learned its training documents' sentence order by heart "
          "(82%). This demo's corpus is smaller still: make the vocabulary and data from yours (the commands above, or "
          "this demo with --input_file), then train (shown here on the demo's data and vocabulary):", flush=True)
    print("  python -m albert_tf.run_pretraining " + " ".join(small_recipe_flags(paths)), flush=True)
    if os.path.isdir(os.path.join(CHECKOUT, "benchmarks", "learning")):  # a source checkout, not the wheel
        print("Its measured curves and cloze answers: benchmarks/README.md (`python -m benchmarks.learning.large_corpus "
              "--corpus=YOUR_CORPUS.txt.gz` remakes the whole path: vocabulary, data, 3 hours of pretraining, "
              "transfer).", flush=True)
    print(f"How to read and steer it: {documentation('pretraining_from_scratch.md')}.", flush=True)


def small_recipe_flags(paths):
    """run_pretraining's flags for the 3-hour albert_small recipe on the demo's own data."""
    return [f"--input_file={paths['data']}", "--albert_config=albert_small", f"--spm_model_file={paths['spm']}",
            f"--output_dir={os.path.join(paths['out'], 'albert_small_3h')}", "--optimizer=adamw",
            "--learning_rate=5e-4", "--num_warmup_steps=1000", "--train_batch_size=64",
            f"--max_seq_length={FLAGS.max_seq_length}", f"--max_predictions_per_seq={FLAGS.max_predictions_per_seq}",
            "--jit_compile", "--train_budget_hours=3", f"--eval_input_file={paths['heldout']}",
            "--eval_every_steps=500"]


def documentation(name):
    """Where a user finds docs/NAME: the checkout's file when the demo runs from one; an installed wheel
    ships no docs/, so then the source repository's."""
    path = os.path.join(CHECKOUT, "docs", name)
    return path if os.path.isfile(path) else f"docs/{name} in albert_tf's source repository"


def console_main():
    """The `albert-demo` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
