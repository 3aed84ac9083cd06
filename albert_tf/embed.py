r"""Sentence embeddings and their cosine similarities: a quick look at an encoder.

  python -m albert_tf.embed --model=/ckpt/albert_base --text="A cat sat." --text="A dog slept." --text="Stocks fell."
  python -m albert_tf.embed --model=/exports/albert_base --input_file=sentences.txt

--model is any albert_tf checkpoint directory (its encoder is used), or a
directory written by `python -m albert_tf.export` (then its preprocessing and
encoder SavedModels compute the embeddings: the path TF Serving users take).
Prints the similarity matrix; --output writes the embeddings as .npy (an
existing file only with --overwrite).
"""

import io
import os

from absl import flags

from albert_tf import cli
from albert_tf.file_utils import check_file_replaceable, read_utf8_text, staged_file


def define_flags():
    flags.DEFINE_string("model", None, "albert_tf checkpoint directory or albert_tf.export directory.")
    flags.DEFINE_multi_string("text", None, "A text to embed; repeat the flag for several.")
    flags.DEFINE_string("input_file", None, "Texts to embed, one per line (instead of or besides --text).")
    flags.DEFINE_enum("pooling", "mean", ["mean", "pooled"], "mean: the average of the last layer's token vectors "
                      "(better for similarity); pooled: the pooler's tanh([CLS]) vector.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model (default: the one stored with --model).")
    flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt, for a model trained with one (default: the one "
                        "stored with --model).")
    flags.DEFINE_integer("max_seq_length", None, "Tokens per text; longer texts are cut. Default: the length the "
                         "model records (an export's is fixed), else 128.")
    flags.DEFINE_string("output", None, "Also save the embeddings here (.npy, one row per text; .npy is added to a "
                        "name without it, as numpy.save does).")
    flags.DEFINE_bool("overwrite", False, "Replace an existing --output file (without it, an existing one is "
                      "refused before anything is computed).")


FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    texts = list(FLAGS.text or [])
    if FLAGS.input_file:
        if not os.path.isfile(FLAGS.input_file):
            raise FileNotFoundError(f"{FLAGS.input_file}: no such --input_file")
        # Lines split as a file opened in text mode splits them (\n, \r\n or \r; str.splitlines splits at more).
        lines = io.StringIO(read_utf8_text(FLAGS.input_file), newline=None)
        texts.extend(line.strip() for line in lines if line.strip())
    if not FLAGS.model or not texts:
        raise ValueError("--model and at least one --text or --input_file line required")
    output = output_file(FLAGS.output) if FLAGS.output else None
    if output:
        check_file_replaceable(output, FLAGS.overwrite)  # before the model is loaded and run
    import numpy as np

    from albert_tf.models.embedder import Embedder, cosine_similarities

    embeddings = Embedder(FLAGS.model, FLAGS.spm_model_file, FLAGS.max_seq_length,
                          FLAGS.vocab_file).embed(texts, FLAGS.pooling)
    similarities = cosine_similarities(embeddings)
    print(f"{len(texts)} embeddings of size {embeddings.shape[1]} ({FLAGS.pooling} pooling); cosine similarities:")
    for i, text in enumerate(texts):
        cells = " ".join(f"{similarities[i, j]:6.3f}" for j in range(len(texts)))
        print(f"  [{i}] {cells}  {text[:60]}")
    if output:
        with staged_file(output, FLAGS.overwrite) as f:
            np.save(f, embeddings)
        print(f"Embeddings: {output}")
    return 0


def output_file(name):
    """The file --output names: .npy added to a name without it, as numpy.save does with a name (`--output=emb`
    writes emb.npy), so that the file checked, written and reported is the one numpy users expect."""
    return name if name.endswith(".npy") else name + ".npy"


def console_main():
    """The `albert-embed` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
