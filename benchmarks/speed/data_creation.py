r"""Pretraining-data creation: albert_tf vs the original google-research/albert script.

  python -m benchmarks.speed.data_creation --original_albert=/path/to/albert \
      [--corpus=../shared/data/corpus/corpus_paragraphs.txt] [--dupe_factor=5]

--original_albert is a checkout of github.com/google-research/albert (the
directory holding create_pretraining_data.py); it is run as-is under
TensorFlow's compat.v1, in the same script, on the same input. Nothing of it is
copied here. Without it, only albert_tf is measured. Its tokenization.py imports
tensorflow_hub (only to read vocabularies from TF-Hub modules, unused here),
and tensorflow_hub 0.16 no longer imports on current setuptools: the original's
process gets an empty stand-in module instead.

Both tools read the same sentence-per-line file (the corpus's paragraphs split
with albert_tf's splitter, as the original expects one sentence per line) with
the same SentencePiece model and flags. Memory is the peak resident set of the
whole process tree (workers included), sampled every 50 ms. A second run of
albert_tf on the corpus repeated 10 times shows that its memory does not grow
with the corpus.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile


from benchmarks.common import RESULTS, SHARED_CORPUS, child_env, markdown_table, portable, run_measured


def sentence_per_line(paragraph_file, output, repeat=1):
    from albert_tf.text.sentence_splitter import split_sentences

    with open(paragraph_file, encoding="utf-8") as f:
        lines = f.read().splitlines()
    with open(output, "w", encoding="utf-8") as out:
        for copy in range(repeat):
            for line in lines:
                out.write("\n".join(split_sentences(line)) + "\n" if line.strip() else "\n")
            out.write("\n")
    return output


def count_records(pattern):
    import tensorflow as tf

    files = tf.io.gfile.glob(pattern)
    return sum(1 for path in files for _ in tf.data.TFRecordDataset(path, compression_type=""))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--original_albert", help="checkout of google-research/albert")
    parser.add_argument("--corpus", default=SHARED_CORPUS,
                        help="paragraph-per-line corpus, documents separated by blank lines")
    parser.add_argument("--vocab_size", type=int, default=8000,
                        help="SentencePiece vocabulary size (one model shared by both tools)")
    parser.add_argument("--max_seq_length", type=int, default=128,
                        help="tokens per instance")
    parser.add_argument("--max_predictions_per_seq", type=int, default=20,
                        help="masked positions per instance")
    parser.add_argument("--dupe_factor", type=int, default=5,
                        help="times each document is masked differently")
    parser.add_argument("--large_repeat", type=int, default=10, help="corpus copies for the memory-growth run")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--results_dir", default=RESULTS,
                        help="writes data_creation.md (the table) here")
    args = parser.parse_args(argv)

    python = sys.executable
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3")
    work = tempfile.mkdtemp(prefix="data_creation_bench-")
    try:
        corpus = sentence_per_line(args.corpus, os.path.join(work, "corpus.txt"))
        corpus_mb = os.path.getsize(corpus) / 1e6
        spm = os.path.join(work, "spm")
        run_measured([python, "-m", "albert_tf.train_sentencepiece", f"--input={corpus}",
                      f"--vocab_size={args.vocab_size}", f"--output_prefix={spm}"], env=env)
        common = [f"--max_seq_length={args.max_seq_length}", f"--max_predictions_per_seq={args.max_predictions_per_seq}",
                  f"--dupe_factor={args.dupe_factor}", f"--spm_model_file={spm}.model"]
        results = []

        if args.original_albert:
            # The original imports itself as the package `albert`.
            parent = os.path.join(work, "original")
            shutil.copytree(args.original_albert, os.path.join(parent, "albert"),
                            ignore=shutil.ignore_patterns(".git"))
            with open(os.path.join(parent, "tensorflow_hub.py"), "w") as f:
                f.write("# Stand-in: the original imports tensorflow_hub but does not use it here.\n")
            seconds, peak, _, _ = run_measured(
                [python, "-m", "albert.create_pretraining_data", f"--input_file={corpus}",
                 f"--output_file={work}/original.tfrecord", f"--vocab_file={spm}.vocab", *common],
                env={**env, "PYTHONPATH": parent})
            instances = count_records(f"{work}/original.tfrecord")
            results.append({"tool": "google-research/albert (original)", "workers": 1, "corpus_mb": corpus_mb,
                            "seconds": seconds, "instances": instances, "peak_rss_mb": peak / 2**20})

        for workers in (1, 2):
            prefix = f"{work}/ours{workers}"
            seconds, peak, _, _ = run_measured(
                [python, "-m", "albert_tf.create_pretraining_data", f"--input_file={corpus}",
                 f"--output_file={prefix}", f"--num_workers={workers}", *common], env=env)
            with open(prefix + ".metadata.json") as f:
                instances = json.load(f)["statistics"]["instances"]
            results.append({"tool": "albert_tf", "workers": workers, "corpus_mb": corpus_mb, "seconds": seconds,
                            "instances": instances, "peak_rss_mb": peak / 2**20})

        large = sentence_per_line(args.corpus, os.path.join(work, "large.txt"), repeat=args.large_repeat)
        prefix = f"{work}/large"
        seconds, peak, _, _ = run_measured(
            [python, "-m", "albert_tf.create_pretraining_data", f"--input_file={large}", f"--output_file={prefix}",
             "--num_workers=2", "--num_output_shards=8", *common], env=env)
        with open(prefix + ".metadata.json") as f:
            instances = json.load(f)["statistics"]["instances"]
        results.append({"tool": "albert_tf", "workers": 2, "corpus_mb": os.path.getsize(large) / 1e6,
                        "seconds": seconds, "instances": instances, "peak_rss_mb": peak / 2**20})
    finally:
        shutil.rmtree(work, ignore_errors=True)

    baseline = next((r for r in results if "original" in r["tool"]), None)
    rows = []
    for r in results:
        rate = r["instances"] / r["seconds"]
        ratio = f"{rate / (baseline['instances'] / baseline['seconds']):.1f}x" if baseline else "n/a"
        memory = f"{r['peak_rss_mb'] / baseline['peak_rss_mb']:.2f}x" if baseline else "n/a"
        rows.append([r["tool"], r["workers"], f"{r['corpus_mb']:.1f}", f"{r['instances']:,}", f"{r['seconds']:.1f}",
                     f"{rate:,.0f}", ratio, f"{r['peak_rss_mb']:,.0f}", memory])
    text = (f"max_seq_length {args.max_seq_length}, max_predictions_per_seq {args.max_predictions_per_seq}, "
            f"dupe_factor {args.dupe_factor}, vocab {args.vocab_size}, {os.cpu_count()} CPU cores\n\n"
            + markdown_table(["tool", "workers", "corpus MB", "instances", "seconds", "instances/s",
                              "throughput vs original", "peak RSS MiB", "memory vs original"], rows) + "\n")
    print(text)
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "data_creation.md"), "w") as f:
        f.write(portable(text))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(portable(results), f, indent=2)


if __name__ == "__main__":
    main()
