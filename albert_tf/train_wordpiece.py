r"""Trains a WordPiece vocabulary (a vocab.txt in BERT's layout), for models that tokenize as Google's Chinese
ALBERTs do.

  python -m albert_tf.train_wordpiece --input='corpus/*.txt' --vocab_size=21128 --output_file=vocab/vocab.txt

writes vocab/vocab.txt: [PAD] at id 0, [unused1] ... [unused99], [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103
(BERT's layout, as vocab_chinese.txt), then the pieces Hugging Face's tokenizers trainer learned (`##` marks
a piece that continues a word). The trainer sees the text as the tokenizer will split it: controls removed,
each CJK ideograph a word of its own, words split at whitespace and punctuation, lowercased and accents
stripped as --do_lower_case and --keep_accents say. Pass the same flags and the file as --vocab_file to
create_pretraining_data. The file appears only once complete.
"""

import os
import sys
import time

from absl import flags

from albert_tf import cli
from albert_tf.file_utils import DATA_SET, VOCABULARY, check_output_apart, refuse_another_tools_directory


def define_flags():
    flags.DEFINE_list("input", None, "Text files (comma-separated globs), as create_pretraining_data reads them; "
                      "blank lines are skipped.")
    flags.DEFINE_string("output_file", None, "The vocab.txt to write.")
    flags.DEFINE_integer("vocab_size", 21128, "Lines of the vocabulary, BERT's 104 reserved ones included "
                         "(21128: Google's Chinese vocabulary). A small corpus may give fewer: the summary says.")
    flags.DEFINE_bool("do_lower_case", True, "Train on lowercased text (an uncased vocabulary, as Google's "
                      "Chinese one); --nodo_lower_case keeps capitals (a cased vocabulary, as kykim's Korean one). "
                      "Pass the same to create_pretraining_data.")
    flags.DEFINE_bool("keep_accents", False, "With --do_lower_case, keep accents (Hugging Face's strip_accents "
                      "false) instead of stripping them as the original does (NFD, marks of category Mn dropped, "
                      "which also takes Hangul syllables apart into letters and drops kana's dakuten). Pass the "
                      "same to create_pretraining_data.")
    flags.DEFINE_integer("min_frequency", 2, "Occurrences a piece needs to be learned.")
    flags.DEFINE_bool("overwrite", False, "Replace an existing --output_file.")


def main(argv):
    del argv
    from albert_tf.data.corpus_reader import expand_input_patterns
    from albert_tf.data.wordpiece_vocabulary import train

    FLAGS = flags.FLAGS
    for name in ("input", "output_file"):
        if not FLAGS[name].value:
            raise ValueError(f"--{name} is required")
    paths = expand_input_patterns(FLAGS.input)
    check_output_apart({"output_file": [FLAGS.output_file]}, {"input": paths})
    refuse_another_tools_directory(os.path.dirname(FLAGS.output_file) or ".", "albert_tf.train_wordpiece",
                                   (DATA_SET, VOCABULARY), setting="output_file")
    start = time.time()
    print(f"Training a {FLAGS.vocab_size}-line WordPiece vocabulary on {len(paths)} file(s)...", file=sys.stderr)
    strip_accents = FLAGS.do_lower_case and not FLAGS.keep_accents
    lines = train(paths, FLAGS.output_file, vocab_size=FLAGS.vocab_size, lower_case=FLAGS.do_lower_case,
                  strip_accents=strip_accents, min_frequency=FLAGS.min_frequency, overwrite=FLAGS.overwrite)
    casing = ("uncased" if FLAGS.do_lower_case else "cased") + (", accents stripped" if strip_accents else "")
    print(f"Wrote {FLAGS.output_file} ({lines:,} lines, {casing}) in {time.time() - start:.1f}s.")
    if lines < FLAGS.vocab_size:
        print(f"  The corpus gave {FLAGS.vocab_size - lines:,} fewer pieces than --vocab_size: every word it holds "
              f"at least --min_frequency={FLAGS.min_frequency} times is already a piece (a model config's vocab_size "
              f"must be at least {lines:,}).")
    return 0


def console_main():
    """The `albert-train-wordpiece` console script."""
    cli.run(main, define_flags, uses_tensorflow=False)


if __name__ == "__main__":
    console_main()
