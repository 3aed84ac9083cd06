r"""Fills in [MASK] pieces with a pretrained model's masked-LM head: a quick look at what it learned.

  python -m albert_tf.fill_mask --model=/ckpt/albert_base --text="The capital of France is [MASK]."
  python -m albert_tf.fill_mask --model=/exports/albert_base --text="..."   # an albert_tf.export directory

Each [MASK] stands for one SentencePiece piece. --model is an albert_tf
checkpoint directory with pretraining heads (run_pretraining's output, or a
converted Google or Hugging Face checkpoint), or a directory written by
`python -m albert_tf.export` (its encoder SavedModel's `mlm` signature).
"""

from absl import flags

from albert_tf import cli

MASK = "[MASK]"


def define_flags():
    flags.DEFINE_string("model", None, "albert_tf checkpoint directory (pretrainer) or albert_tf.export directory.")
    flags.DEFINE_multi_string("text", None, f"Text with one or more {MASK}; repeat the flag for several texts.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model (default: the one stored with --model).")
    flags.DEFINE_integer("top_k", 5, "Candidates shown per mask.")
    flags.DEFINE_integer("max_seq_length", 128, "Tokens per sequence; longer texts are cut.")


FLAGS = flags.FLAGS


def encode_with_masks(text, tokenizer, max_seq_length):
    """(input dict of int32 [1, seq], mask positions) for text whose [MASK]s become the [MASK] id."""
    from albert_tf.text.albert_tokenizer import MASK_ID
    from albert_tf.text.packing import pack

    parts = text.split(MASK)
    if len(parts) < 2:
        raise ValueError(f"no {MASK} in {text!r}")

    ids = []
    for index, part in enumerate(parts):
        if part.strip():
            ids.extend(tokenizer.encode(part))
        if index < len(parts) - 1:
            ids.append(MASK_ID)
    word_ids, mask, type_ids = pack(ids, None, max_seq_length)
    positions = [i for i, token in enumerate(word_ids) if token == MASK_ID]
    if not positions:
        raise ValueError(f"every {MASK} of {text!r} lies beyond --max_seq_length={max_seq_length}")
    return {"input_word_ids": word_ids[None], "input_mask": mask[None], "input_type_ids": type_ids[None]}, positions


class MaskFiller:
    """Top-k pieces for each [MASK], from a checkpoint directory or an export directory."""

    def __init__(self, model_path, spm_model_file=None):
        from albert_tf.text.albert_tokenizer import AlbertTokenizer

        from albert_tf.checkpoints.model_dir import exported_encoder_dir, find_spm_model

        self.export = exported_encoder_dir(model_path)
        if self.export:
            import tensorflow as tf
            import tensorflow_text  # noqa: F401  (registers the ops of exported graphs)

            self.module = tf.saved_model.load(self.export)
            if "mlm" not in self.module.signatures:
                raise ValueError(f"{self.export}: exported without pretraining heads (no `mlm` signature)")
        else:
            from albert_tf.checkpoints.model_dir import load_pretrainer

            self.model = load_pretrainer(model_path)
        self.tokenizer = AlbertTokenizer(find_spm_model(self.export or model_path, spm_model_file))

    def logits(self, inputs, positions):
        import numpy as np

        padded = np.zeros((1, max(len(positions), 1)), "int32")
        padded[0, : len(positions)] = positions
        if self.export:
            outputs = self.module.signatures["mlm"](masked_lm_positions=padded, **inputs)
        else:
            outputs = self.model({**inputs, "masked_lm_positions": padded}, training=False)
        return np.array(outputs["mlm_logits"])[0, : len(positions)]

    def fill(self, text, top_k=5, max_seq_length=128):
        """[(position, [(piece, probability), ...])] per mask, best first."""
        import numpy as np

        inputs, positions = encode_with_masks(text, self.tokenizer, max_seq_length)
        logits = self.logits(inputs, positions)
        logits[:, :5] = -np.inf  # never propose <pad>, <unk>, [CLS], [SEP], [MASK]
        probabilities = np.exp(logits - logits.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        results = []
        for position, row in zip(positions, probabilities):
            best = np.argsort(-row)[:top_k]
            results.append((position, [(self.tokenizer.id_to_piece(int(i)), float(row[i])) for i in best]))
        return results


def filled_text(text, results):
    for _, candidates in results:
        piece = candidates[0][0].replace("\u2581", " ").strip() or candidates[0][0]
        text = text.replace(MASK, f"<{piece}>", 1)
    return text


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    if not FLAGS.model or not FLAGS.text:
        raise ValueError("--model and --text required")
    filler = MaskFiller(FLAGS.model, FLAGS.spm_model_file)
    for text in FLAGS.text:
        results = filler.fill(text, FLAGS.top_k, FLAGS.max_seq_length)
        print(filled_text(text, results))
        for number, (_, candidates) in enumerate(results, start=1):
            print(f"  mask {number}: " + ", ".join(f"{piece} {p:.3f}" for piece, p in candidates))
    return 0


def console_main():
    """The `albert-fill-mask` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
