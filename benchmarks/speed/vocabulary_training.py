r"""SentencePiece vocabulary training on a large corpus: time and peak memory by sample size.

  python -m benchmarks.speed.vocabulary_training \
      [--corpus=../shared/data/corpus_large/corpus_paragraphs.txt.gz] [--sample_sizes=1000000,10000000]

Runs `python -m albert_tf.train_sentencepiece` on the corpus (a .gz file read as
is, paragraphs split into sentences) once per --input_sentence_size: the corpus
is streamed to SentencePiece's trainer, which keeps a uniform random sample of
that many sentences (reservoir sampling), so memory follows the sample, not the
corpus; 10,000,000 is the original's `spm_train --input_sentence_size`, which on
this corpus keeps every sentence. Seconds are wall time; memory is the peak
resident set of the tool's process, sampled every 50 ms.
"""

import argparse
import os
import re
import shutil
import tempfile

from benchmarks.common import (REPO, RESULTS, SHARED_DATA, child_env, cpu_description, markdown_table,
                               module_command, run_measured, write_results)

LARGE_CORPUS = os.path.join(SHARED_DATA, "corpus_large", "corpus_paragraphs.txt.gz")
_SUMMARY = re.compile(r"from ([\d,]+) sentences of \d+ file\(s\) \(([\d,]+) sampled\)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=LARGE_CORPUS,
                        help="paragraph-per-line corpus, .gz read as is (default: the 240 MB corpus of ../shared/data)")
    parser.add_argument("--sample_sizes", default="1000000,10000000",
                        help="comma-separated --input_sentence_size values, one run each (default 1M and the "
                             "original's 10M)")
    parser.add_argument("--vocab_size", type=int, default=30000, help="pieces (default 30000, ALBERT's)")
    parser.add_argument("--work_dir", help="keeps the vocabularies here (default: a temporary directory, removed)")
    parser.add_argument("--results_dir", default=RESULTS, help="writes vocabulary_training.md/.json here")
    args = parser.parse_args(argv)

    work = args.work_dir or tempfile.mkdtemp(prefix="vocabulary_training-")
    os.makedirs(work, exist_ok=True)
    rows, record = [], {"corpus": args.corpus, "vocab_size": args.vocab_size, "cpu": cpu_description(), "runs": []}
    try:
        for size in (int(value) for value in args.sample_sizes.split(",")):
            prefix = os.path.join(work, f"spm_{size}")
            seconds, peak, stdout, _ = run_measured(
                module_command("albert_tf.train_sentencepiece", f"--input={args.corpus}", "--input_format=paragraphs",
                               f"--vocab_size={args.vocab_size}", f"--input_sentence_size={size}",
                               f"--output_prefix={prefix}", "--overwrite"),
                env=child_env(), cwd=REPO)
            match = _SUMMARY.search(stdout)
            sentences, sampled = (int(match.group(1).replace(",", "")), int(match.group(2).replace(",", ""))) if (
                match) else (None, None)
            run = {"input_sentence_size": size, "seconds": round(seconds, 1), "peak_rss_mib": round(peak / 2**20),
                   "sentences": sentences, "sampled": sampled}
            record["runs"].append(run)
            print(run, flush=True)
            rows.append([f"{size:,}", f"{sentences:,}" if sentences else "?", f"{sampled:,}" if sampled else "?",
                         f"{seconds:,.0f}", f"{peak / 2**20:,.0f}"])
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    text = (f"Corpus: {args.corpus} (paragraphs split into sentences), vocabulary {args.vocab_size:,} pieces, "
            f"unigram; CPU: {record['cpu']}.\n\n"
            + markdown_table(["--input_sentence_size", "sentences read", "sentences sampled", "seconds",
                              "peak RSS MiB"], rows) + "\n")
    write_results(args.results_dir, "vocabulary_training", text, record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
