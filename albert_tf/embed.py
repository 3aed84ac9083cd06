r"""Sentence embeddings and their cosine similarities: a quick look at an encoder.

  python -m albert_tf.embed --model=/ckpt/albert_base --text="A cat sat." --text="A dog slept." --text="Stocks fell."
  python -m albert_tf.embed --model=/exports/albert_base --input_file=sentences.txt

--model is any albert_tf checkpoint directory (its encoder is used), or a
directory written by `python -m albert_tf.export` (then its preprocessing and
encoder SavedModels compute the embeddings: the path TF Serving users take).
Prints the similarity matrix; --output writes the embeddings as .npy.
"""

import os

from absl import flags

from albert_tf import cli


def define_flags():
    flags.DEFINE_string("model", None, "albert_tf checkpoint directory or albert_tf.export directory.")
    flags.DEFINE_multi_string("text", None, "A text to embed; repeat the flag for several.")
    flags.DEFINE_string("input_file", None, "Texts to embed, one per line (instead of or besides --text).")
    flags.DEFINE_enum("pooling", "mean", ["mean", "pooled"], "mean: the average of the last layer's token vectors "
                      "(better for similarity); pooled: the pooler's tanh([CLS]) vector.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model (default: the one stored with --model).")
    flags.DEFINE_integer("max_seq_length", None, "Tokens per text; longer texts are cut. Default: the length the "
                         "model records (an export's is fixed), else 128.")
    flags.DEFINE_string("output", None, "Also save the embeddings here (.npy, one row per text).")


FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    texts = list(FLAGS.text or [])
    if FLAGS.input_file:
        if not os.path.isfile(FLAGS.input_file):
            raise FileNotFoundError(f"{FLAGS.input_file}: no such --input_file")
        with open(FLAGS.input_file, encoding="utf-8") as f:
            texts.extend(line.strip() for line in f if line.strip())
    if not FLAGS.model or not texts:
        raise ValueError("--model and at least one --text or --input_file line required")
    import numpy as np

    from albert_tf.models.embedder import Embedder, cosine_similarities

    embeddings = Embedder(FLAGS.model, FLAGS.spm_model_file, FLAGS.max_seq_length).embed(texts, FLAGS.pooling)
    similarities = cosine_similarities(embeddings)
    print(f"{len(texts)} embeddings of size {embeddings.shape[1]} ({FLAGS.pooling} pooling); cosine similarities:")
    for i, text in enumerate(texts):
        cells = " ".join(f"{similarities[i, j]:6.3f}" for j in range(len(texts)))
        print(f"  [{i}] {cells}  {text[:60]}")
    if FLAGS.output:
        np.save(FLAGS.output, embeddings)
        print(f"Embeddings: {FLAGS.output}")
    return 0


def console_main():
    """The `albert-embed` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
