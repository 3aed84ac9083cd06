r"""Trains a SentencePiece unigram vocabulary with ALBERT's special ids.

  python -m albert_tf.train_sentencepiece --input='corpus/*.txt' --vocab_size=30000 \
      --output_prefix=vocab/30k-clean

writes vocab/30k-clean.model and vocab/30k-clean.vocab, with <pad>=0, <unk>=1,
[CLS]=2, [SEP]=3, [MASK]=4 and the original's user-defined symbols, trained on
text preprocessed exactly as AlbertTokenizer preprocesses it (lowercased, accents
stripped), as the original 30k-clean model was. --nodo_lower_case keeps the
text's capitals: a cased vocabulary, for data made with the same flag
(create_pretraining_data refuses a vocabulary whose casing contradicts its data's).

Memory stays bounded on big corpora: lines are streamed to the trainer, which
keeps a uniform random sample of --input_sentence_size sentences (reservoir
sampling); --seed makes that sample and the model reproducible.

Accents are stripped as the original does (NFKD, combining marks dropped: é becomes e),
except where that would change what the text says: when 0.1% or more of the corpus's
first 16M characters are letters of scripts whose marks carry meaning (Japanese kana's
dakuten: が would become か; Indic, Arabic, Hebrew, Thai marks), accents are kept and
the summary says so. --keep_accents / --nokeep_accents decide instead. The vocabulary's
pieces record the choice, and create_pretraining_data follows it. Hangul is unaffected
either way (SentencePiece's normalizer composes the jamo that stripping splits).

The summary names the characters --character_coverage left out of the vocabulary
(they become <unk>, counted as the model sees the text) with their counts, and, where
accents are stripped, counts the characters that stripping rewrote in scripts whose
marks carry meaning.
"""

import os
import sys
import time

from absl import flags

from albert_tf import cli
from albert_tf.data.vocabulary import ORIGINAL_USER_DEFINED_SYMBOLS, train
from albert_tf.file_utils import DATA_SET, VOCABULARY, check_output_apart, refuse_another_tools_directory


def define_flags():
    flags.DEFINE_list("input", None, "Text files (comma-separated globs). Same formats as "
                      "create_pretraining_data; blank lines are skipped.")
    flags.DEFINE_enum("input_format", "sentences", ["sentences", "paragraphs"], "'sentences': one sentence per "
                      "line (the original format); 'paragraphs': one paragraph per line, split into sentences.")
    flags.DEFINE_bool("do_lower_case", True, "Train on lowercased text (a lowercase vocabulary, as the original "
                      "30k-clean); --nodo_lower_case keeps capitals (a cased vocabulary). Pass the same to "
                      "create_pretraining_data.")
    flags.DEFINE_bool("keep_accents", None, "Keep accents (--keep_accents) or strip them as the original does "
                      "(--nokeep_accents: NFKD, combining marks dropped, which also drops kana's dakuten). Default: "
                      "kept where stripping would rewrite 0.1% or more of the corpus's characters (kana, Indic, "
                      "Arabic, Hebrew, Thai text), stripped otherwise; the summary says which. The vocabulary "
                      "records it and create_pretraining_data follows it.")
    flags.DEFINE_bool("pre_segmented", False, "Chinese or Japanese input whose words a segmenter (jieba, MeCab) "
                      "separated with spaces: trained on without those spaces, the text create_pretraining_data "
                      "--pre_segmented tokenizes.")
    flags.DEFINE_integer("vocab_size", 30000, "Vocabulary size, special pieces included (ALBERT: 30000).")
    flags.DEFINE_string("output_prefix", None, "Writes PREFIX.model and PREFIX.vocab.")
    flags.DEFINE_integer("input_sentence_size", 10_000_000, "Sentences sampled for training (reservoir "
                         "sampling; 0 = all). Bounds memory on big corpora (original: 10M).")
    flags.DEFINE_float("character_coverage", 0.99995, "Fraction of characters covered by the vocabulary "
                       "(original: 0.99995); the summary names those left out (they become <unk>).")
    flags.DEFINE_list("user_defined_symbols", ORIGINAL_USER_DEFINED_SYMBOLS, "Pieces always kept whole "
                      "(original: ( ) \" - . – £ €).")
    flags.DEFINE_bool("hard_vocab_limit", True, "Fail when the corpus is too small for --vocab_size; with "
                      "--nohard_vocab_limit the vocabulary may come out smaller.")
    flags.DEFINE_integer("seed", 12345, "Seed of the sentence sampling.")
    flags.DEFINE_integer("num_threads", os.cpu_count() or 1, "Trainer threads.")
    flags.DEFINE_bool("overwrite", False, "Replace an existing PREFIX.model / PREFIX.vocab.")


def main(argv):
    del argv
    from albert_tf.data.corpus_reader import expand_input_patterns
    from albert_tf.text.albert_tokenizer import AlbertTokenizer, vocabulary_casing

    FLAGS = flags.FLAGS
    for name in ("input", "output_prefix"):
        if not FLAGS[name].value:
            raise ValueError(f"--{name} is required")
    paths = expand_input_patterns(FLAGS.input)
    check_output_apart({"output_prefix": [f"{FLAGS.output_prefix}.model", f"{FLAGS.output_prefix}.vocab"]},
                       {"input": paths})
    refuse_another_tools_directory(os.path.dirname(FLAGS.output_prefix) or ".",
                                   "albert_tf.train_sentencepiece", (DATA_SET, VOCABULARY), setting="output_prefix")
    start = time.time()
    print(f"Training a {FLAGS.vocab_size}-piece unigram SentencePiece model on {len(paths)} file(s)...",
          file=sys.stderr)
    stats = train(
        paths, FLAGS.output_prefix, vocab_size=FLAGS.vocab_size, input_format=FLAGS.input_format,
        input_sentence_size=FLAGS.input_sentence_size, character_coverage=FLAGS.character_coverage,
        user_defined_symbols=FLAGS.user_defined_symbols, hard_vocab_limit=FLAGS.hard_vocab_limit,
        seed=FLAGS.seed, num_threads=FLAGS.num_threads, overwrite=FLAGS.overwrite, lower_case=FLAGS.do_lower_case,
        keep_accents=FLAGS.keep_accents, pre_segmented=FLAGS.pre_segmented,
    )
    tokenizer = AlbertTokenizer(f"{FLAGS.output_prefix}.model", lower_case=FLAGS.do_lower_case,
                                keep_accents=stats.keep_accents)
    sampled = min(stats.sentences, FLAGS.input_sentence_size or stats.sentences)
    print(
        f"Wrote {FLAGS.output_prefix}.model and .vocab ({tokenizer.vocab_size} pieces, "
        f"{vocabulary_casing(tokenizer)}{', accents kept' if stats.keep_accents else ''}) in "
        f"{time.time() - start:.1f}s from {stats.sentences:,} sentences of {stats.files} file(s) "
        f"({sampled:,} sampled)."
    )
    for line in ([stats.accents_chosen] if stats.accents_chosen else []) + stats.problems():
        print(f"  {line}")
    return 0


def console_main():
    """The `albert-train-sentencepiece` console script."""
    cli.run(main, define_flags, uses_tensorflow=False)


if __name__ == "__main__":
    console_main()
