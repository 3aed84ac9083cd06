r"""Trains a SentencePiece unigram vocabulary with ALBERT's special ids.

  python -m albert_tf.train_sentencepiece --input='corpus/*.txt' --vocab_size=30000 \
      --output_prefix=vocab/30k-clean

writes vocab/30k-clean.model and vocab/30k-clean.vocab, with <pad>=0, <unk>=1,
[CLS]=2, [SEP]=3, [MASK]=4 and the original's user-defined symbols, trained on
text preprocessed exactly as AlbertTokenizer preprocesses it (lowercased, accents
stripped), as the original 30k-clean model was.

Memory stays bounded on big corpora: lines are streamed to the trainer, which
keeps a uniform random sample of --input_sentence_size sentences (reservoir
sampling); --seed makes that sample and the model reproducible.
"""

import os
import shutil
import sys
import time

from absl import flags

from albert_tf import cli

# From the ALBERT README's spm_train command for 30k-clean.model.
ORIGINAL_USER_DEFINED_SYMBOLS = ["(", ")", '"', "-", ".", "–", "£", "€"]


def define_flags():
    flags.DEFINE_list("input", None, "Text files (comma-separated globs). Same formats as "
                      "create_pretraining_data; blank lines are skipped.")
    flags.DEFINE_enum("input_format", "sentences", ["sentences", "paragraphs"], "'sentences': one sentence per "
                      "line (the original format); 'paragraphs': one paragraph per line, split into sentences.")
    flags.DEFINE_integer("vocab_size", 30000, "Vocabulary size, special pieces included (ALBERT: 30000).")
    flags.DEFINE_string("output_prefix", None, "Writes PREFIX.model and PREFIX.vocab.")
    flags.DEFINE_integer("input_sentence_size", 10_000_000, "Sentences sampled for training (reservoir "
                         "sampling; 0 = all). Bounds memory on big corpora (original: 10M).")
    flags.DEFINE_float("character_coverage", 0.99995, "Fraction of characters covered by the vocabulary "
                       "(original: 0.99995).")
    flags.DEFINE_list("user_defined_symbols", ORIGINAL_USER_DEFINED_SYMBOLS, "Pieces always kept whole "
                      "(original: ( ) \" - . – £ €).")
    flags.DEFINE_bool("hard_vocab_limit", True, "Fail when the corpus is too small for --vocab_size; with "
                      "--nohard_vocab_limit the vocabulary may come out smaller.")
    flags.DEFINE_integer("seed", 12345, "Seed of the sentence sampling.")
    flags.DEFINE_integer("num_threads", os.cpu_count() or 1, "Trainer threads.")
    flags.DEFINE_bool("overwrite", False, "Replace an existing PREFIX.model / PREFIX.vocab.")


def preprocessed_sentences(paths, input_format, stats):
    """Yields preprocessed, non-empty sentences of `paths`, counting into `stats`."""
    from albert_tf.data.corpus_reader import iter_file_lines
    from albert_tf.text.preprocessing import preprocess_text
    from albert_tf.text.sentence_splitter import split_sentences

    for path in paths:
        for line in iter_file_lines(path, stats):
            units = split_sentences(line) if input_format == "paragraphs" else [line]
            for unit in units:
                text = preprocess_text(unit)
                if text:
                    stats.sentences += 1
                    yield text


def _last_sentence(message):
    """SentencePiece's own explanation, without its source location."""
    return message.rsplit("]", 1)[-1].strip()


def train(paths, output_prefix, vocab_size=30000, input_format="sentences", input_sentence_size=10_000_000,
          character_coverage=0.99995, user_defined_symbols=ORIGINAL_USER_DEFINED_SYMBOLS,
          hard_vocab_limit=True, seed=12345, num_threads=1, overwrite=False):
    """Trains and writes OUTPUT_PREFIX.{model,vocab}; returns a stats dict.

    Refuses to replace an existing PREFIX.model or PREFIX.vocab unless `overwrite`:
    data sets and checkpoints made with the old model would no longer match it.
    """
    import sentencepiece

    from albert_tf.data.corpus_reader import CorpusStats

    existing = [f"{output_prefix}.{extension}" for extension in ("model", "vocab")
                if os.path.exists(f"{output_prefix}.{extension}")]
    if existing and not overwrite:
        raise FileExistsError(f"{existing[0]} exists (data made with it would no longer match): choose another "
                              "--output_prefix or pass --overwrite")
    stats = CorpusStats()
    output_dir = os.path.dirname(os.path.abspath(output_prefix))
    os.makedirs(output_dir, exist_ok=True)
    sentencepiece.set_random_generator_seed(seed)
    # The model records the prefix it was trained to; a staging name derived
    # from the output (not a random temp name) keeps the bytes reproducible.
    staging = os.path.join(output_dir, f".{os.path.basename(output_prefix)}.spm-staging")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    try:
        staged_prefix = os.path.join(staging, "spm")
        try:
            sentencepiece.SentencePieceTrainer.train(
                sentence_iterator=preprocessed_sentences(paths, input_format, stats),
                model_prefix=staged_prefix,
                model_type="unigram",
                vocab_size=vocab_size,
                pad_id=0,
                unk_id=1,
                bos_id=-1,
                eos_id=-1,
                control_symbols=["[CLS]", "[SEP]", "[MASK]"],
                user_defined_symbols=user_defined_symbols,
                input_sentence_size=input_sentence_size,
                shuffle_input_sentence=True,
                character_coverage=character_coverage,
                hard_vocab_limit=hard_vocab_limit,
                # Paragraph-long "sentences" stay in the sample instead of being dropped.
                max_sentence_length=1 << 16,
                num_threads=num_threads,
                minloglevel=2,
            )
        except RuntimeError as error:
            message = str(error).strip()
            if stats.sentences == 0 or "!sentences_.empty()" in message:
                raise ValueError(f"no text in {', '.join(paths)}: nothing to train a vocabulary on") from None
            if "smaller than required_chars" in message:
                raise ValueError(
                    f"--vocab_size={vocab_size} is too small: the corpus's characters and the special pieces "
                    f"alone need more ({_last_sentence(message)}); pass a larger --vocab_size, or lower "
                    "--character_coverage") from None
            if "Vocabulary size too high" in message:
                raise ValueError(
                    f"the corpus is too small for --vocab_size={vocab_size} ({_last_sentence(message)}); "
                    "pass a smaller --vocab_size or --nohard_vocab_limit") from None
            raise ValueError(f"SentencePiece training failed: {message}") from None
        if stats.sentences == 0:
            raise ValueError(f"no text in {', '.join(paths)}: nothing to train a vocabulary on")
        for extension in ("model", "vocab"):
            os.replace(f"{staged_prefix}.{extension}", f"{output_prefix}.{extension}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return stats


def main(argv):
    del argv
    from albert_tf.data.corpus_reader import expand_input_patterns
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    FLAGS = flags.FLAGS
    for name in ("input", "output_prefix"):
        if not FLAGS[name].value:
            raise ValueError(f"--{name} is required")
    paths = expand_input_patterns(FLAGS.input)
    start = time.time()
    print(f"Training a {FLAGS.vocab_size}-piece unigram SentencePiece model on {len(paths)} file(s)...",
          file=sys.stderr)
    stats = train(
        paths, FLAGS.output_prefix, vocab_size=FLAGS.vocab_size, input_format=FLAGS.input_format,
        input_sentence_size=FLAGS.input_sentence_size, character_coverage=FLAGS.character_coverage,
        user_defined_symbols=FLAGS.user_defined_symbols, hard_vocab_limit=FLAGS.hard_vocab_limit,
        seed=FLAGS.seed, num_threads=FLAGS.num_threads, overwrite=FLAGS.overwrite,
    )
    tokenizer = AlbertTokenizer(f"{FLAGS.output_prefix}.model")
    sampled = min(stats.sentences, FLAGS.input_sentence_size or stats.sentences)
    print(
        f"Wrote {FLAGS.output_prefix}.model and .vocab ({tokenizer.vocab_size} pieces) in "
        f"{time.time() - start:.1f}s from {stats.sentences:,} sentences of {stats.files} file(s) "
        f"({sampled:,} sampled)."
    )
    for problem in stats.problems():
        print(f"  {problem}")
    return 0


def console_main():
    """The `albert-train-sentencepiece` console script."""
    cli.run(main, define_flags, uses_tensorflow=False)


if __name__ == "__main__":
    console_main()
