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


def mean_pool(sequence_output, input_mask):
    import numpy as np

    mask = np.asarray(input_mask, "float32")[..., None]
    return (np.asarray(sequence_output) * mask).sum(1) / np.maximum(mask.sum(1), 1.0)


def cosine_similarities(embeddings):
    import numpy as np

    unit = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
    return unit @ unit.T


class Embedder:
    def __init__(self, model_path, spm_model_file=None, max_seq_length=None):
        from albert_tf.models.model_dir import exported_encoder_dir, model_metadata
        from albert_tf.models.preprocessing_contract import resolve_preprocessing

        # The casing and default length the model records (albert_tf.models.preprocessing_contract).
        self.preprocessing = resolve_preprocessing(model_metadata(model_path), max_seq_length=max_seq_length,
                                                   source=str(model_path))
        self.max_seq_length = self.preprocessing.max_seq_length

        # An export directory (encoder/ + preprocessing/), or an albert_tf checkpoint directory.
        self.export = exported_encoder_dir(model_path) == os.path.join(model_path, "encoder")
        if self.export:
            import tensorflow as tf
            import tensorflow_text  # noqa: F401  (registers the ops of exported graphs)

            self.preprocessing = tf.saved_model.load(os.path.join(model_path, "preprocessing"))
            self.encoder = tf.saved_model.load(os.path.join(model_path, "encoder"))
        else:
            from albert_tf.models.model_dir import find_spm_model, load_encoder
            from albert_tf.text.albert_tokenizer import AlbertTokenizer

            self.encoder = load_encoder(model_path)
            self.tokenizer = AlbertTokenizer(find_spm_model(model_path, spm_model_file),
                                             lower_case=self.preprocessing.lower_case)

    def inputs(self, texts):
        if self.export:
            import tensorflow as tf

            return self.preprocessing(tf.constant(texts))
        from albert_tf.text.packing import pack_batch

        return pack_batch(self.tokenizer, texts, None, self.max_seq_length)

    def embed(self, texts, pooling="mean"):
        import numpy as np

        inputs = self.inputs(texts)
        outputs = self.encoder(inputs) if self.export else self.encoder(inputs, training=False)
        if pooling == "pooled":
            return np.asarray(outputs["pooled_output"])
        return mean_pool(outputs["sequence_output"], inputs["input_mask"])


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
