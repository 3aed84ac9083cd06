r"""Fills in [MASK] pieces with a pretrained model's masked-LM head: a quick look at what it learned.

  python -m albert_tf.fill_mask --model=/ckpt/albert_base --text="The capital of France is [MASK]."
  python -m albert_tf.fill_mask --model=/exports/albert_base --text="..."   # an albert_tf.export directory

Prints, for each text, the text with every [MASK] filled with its best candidate,
then per [MASK] its candidates as words with their probabilities (what Hugging
Face's fill-mask pipeline gives). Each [MASK] stands for one SentencePiece piece;
a text is cut at --max_seq_length tokens, and a line says how many [MASK]s lay
beyond the cut, unanswered.
--model is an albert_tf model directory with pretraining heads (run_pretraining's
output, or a converted Google or Hugging Face checkpoint), or a directory written
by `python -m albert_tf.export`. From Python: `albert_tf.MaskFiller(model)(texts)`.
"""

from absl import flags

from albert_tf import cli


def define_flags():
    flags.DEFINE_string("model", None, "albert_tf checkpoint directory (pretrainer) or albert_tf.export directory.")
    flags.DEFINE_multi_string("text", None, "Text with one or more [MASK]; repeat the flag for several texts.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model (default: the one stored with --model).")
    flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt, for a model trained with one (default: the one "
                        "stored with --model).")
    flags.DEFINE_integer("top_k", 5, "Candidates shown per mask (at least 1).", lower_bound=1)
    flags.DEFINE_integer("max_seq_length", None, "Tokens per sequence; longer texts are cut. Default: the length the "
                         "model records, else 128.")


FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    if not FLAGS.model or not FLAGS.text:
        raise ValueError("--model and --text required")
    from albert_tf.models.mask_filler import MaskFiller

    filler = MaskFiller(FLAGS.model, FLAGS.spm_model_file, FLAGS.vocab_file)
    for text in FLAGS.text:
        print("\n".join(answer_lines(filler, text, FLAGS.top_k, FLAGS.max_seq_length)))
    return 0


def answer_lines(filler, text, top_k, max_seq_length):
    """What the tool prints for one text: it filled in, the candidates of each [MASK], and a line for the
    [MASK]s beyond max_seq_length, which get none."""
    answer = filler(text, top_k, max_seq_length)
    lines = [filler.best_sequence(text, answer)]
    for number, candidates in enumerate(answer, start=1):
        lines.append(f"  [MASK] {number}: " + ", ".join(f"{c['token_str']} {c['score']:.3f}" for c in candidates))
    note = filler.unanswered_note(text, answer, max_seq_length)
    return lines + ([f"  {note}."] if note else [])


def console_main():
    """The `albert-fill-mask` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
