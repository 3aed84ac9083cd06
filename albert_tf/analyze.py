r"""The paper's analyses for any checkpoint: Figure 2 (how each layer changes its input) and Table 2.

  python -m albert_tf.analyze --checkpoint=ALBERT=/ckpt/albert_base,BERT-style=/ckpt/not_shared \
      --input_file=text.txt --output_dir=/tmp/analysis

Figure 2 of Lan et al. plots, for every layer, the L2 distance and the angle
(cosine similarity, in degrees) between the layer's input and output
embeddings, averaged over tokens: ALBERT's shared layers move their input
smoothly, BERT's oscillate. This tool computes both for each checkpoint on real
text (non-padding tokens of up to --num_sequences sequences), saves
figure2_l2.png, figure2_cosine.png and figure2.json, and prints the numbers.
It also prints the parameter table (Table 2) of the checkpoints' configs.

Without --input_file, the text is the standard library's docstring prose (what
`make demo` trains on). Each checkpoint directory needs its spm.model, or pass
--spm_model_file.
"""

import json
import os

from absl import flags

from albert_tf import cli


def define_flags():
    flags.DEFINE_list("checkpoint", None, "albert_tf checkpoint directories to compare, each as PATH or LABEL=PATH.")
    flags.DEFINE_string("input_file", None, "Text, one passage per line (default: the built-in corpus).")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model (default: each checkpoint's spm.model).")
    flags.DEFINE_integer("max_seq_length", 128, "Tokens per sequence.")
    flags.DEFINE_integer("num_sequences", 64, "Sequences of text to average over.")
    flags.DEFINE_string("output_dir", "analysis", "Where the PNG plots and figure2.json go.")


FLAGS = flags.FLAGS


def parse_checkpoints(values):
    checkpoints = []
    for value in values:
        label, _, path = value.rpartition("=")
        checkpoints.append((label or os.path.basename(os.path.normpath(path)), path))
    return checkpoints


def pack_passages(passages, tokenizer, max_seq_length, num_sequences):
    """Passages -> [CLS] tokens [SEP] int32 arrays, passages concatenated to fill sequences."""
    import numpy as np

    from albert_tf.text.albert_tokenizer import CLS_ID, PAD_ID, SEP_ID

    ids, mask = [], []
    buffer = []
    for passage in passages:
        buffer.extend(tokenizer.encode(passage))
        while len(buffer) >= max_seq_length - 2 and len(ids) < num_sequences:
            ids.append([CLS_ID] + buffer[: max_seq_length - 2] + [SEP_ID])
            mask.append([1] * max_seq_length)
            buffer = buffer[max_seq_length - 2 :]
        if len(ids) >= num_sequences:
            break
    if not ids and buffer:
        pad = max_seq_length - 2 - len(buffer)
        ids.append([CLS_ID] + buffer + [SEP_ID] + [PAD_ID] * pad)
        mask.append([1] * (len(buffer) + 2) + [0] * pad)
    if not ids:
        raise ValueError("the input text holds no tokens")
    ids = np.array(ids, "int32")
    return {"input_word_ids": ids, "input_mask": np.array(mask, "int32"), "input_type_ids": np.zeros_like(ids)}


def layer_transitions(encoder, inputs):
    """Per layer: mean L2 distance and mean angle (degrees) between its input and output token embeddings."""
    import numpy as np

    outputs = encoder(inputs, training=False)
    first_input = encoder.embedding_projection(encoder.embeddings(inputs["input_word_ids"], inputs["input_type_ids"]))
    states = [np.asarray(first_input, "float64")] + [np.asarray(x, "float64") for x in outputs["encoder_outputs"]]
    valid = inputs["input_mask"].astype(bool)
    l2, angle = [], []
    for before, after in zip(states[:-1], states[1:]):
        before, after = before[valid], after[valid]
        l2.append(float(np.linalg.norm(after - before, axis=-1).mean()))
        cosine = (before * after).sum(-1) / (np.linalg.norm(before, axis=-1) * np.linalg.norm(after, axis=-1))
        angle.append(float(np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0))).mean()))
    return {"l2_distance": l2, "cosine_angle_degrees": angle}


def plot(results, key, ylabel, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4))
    for label, values in results.items():
        axis.plot(range(1, len(values[key]) + 1), values[key], marker="o", label=label)
    axis.set(xlabel="layer", ylabel=ylabel, title=f"Input vs output embedding of each layer: {ylabel}")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def read_passages(path):
    if path is None:
        import tempfile

        from albert_tf.data.builtin_corpus import write_corpus

        with tempfile.TemporaryDirectory() as directory:
            corpus = os.path.join(directory, "corpus.txt")
            write_corpus(corpus, max_bytes=200_000)
            return read_passages(corpus)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such --input_file")
    with open(path, encoding="utf-8", errors="replace") as f:
        return [line.strip() for line in f if line.strip()]


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    if not FLAGS.checkpoint:
        raise ValueError("--checkpoint required (one or more albert_tf checkpoint directories)")
    try:  # checked before the work, not when its figures are drawn
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("albert-analyze draws its figures with matplotlib, which the [plots] extra installs: "
                          "pip install 'albert_tf[plots]'") from None
    from albert_tf.models.model_dir import find_spm_model, load_encoder
    from albert_tf.params import format_rows, parameter_breakdown, shape_only_pretrainer
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    passages = read_passages(FLAGS.input_file)
    results, rows = {}, []
    for label, path in parse_checkpoints(FLAGS.checkpoint):
        encoder = load_encoder(path)
        tokenizer = AlbertTokenizer(find_spm_model(path, FLAGS.spm_model_file))
        inputs = pack_passages(passages, tokenizer, FLAGS.max_seq_length, FLAGS.num_sequences)
        results[label] = layer_transitions(encoder, inputs)
        rows.append({"model": label, **parameter_breakdown(shape_only_pretrainer(encoder.albert_config)), "paper": ""})
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    plot(results, "l2_distance", "L2 distance", os.path.join(FLAGS.output_dir, "figure2_l2.png"))
    plot(results, "cosine_angle_degrees", "cosine similarity (degrees)", os.path.join(FLAGS.output_dir, "figure2_cosine.png"))
    with open(os.path.join(FLAGS.output_dir, "figure2.json"), "w") as f:
        json.dump(results, f, indent=2)
    print("Table 2 (parameters):\n" + format_rows(rows) + "\n")
    for label, values in results.items():
        print(f"Figure 2, {label}:")
        for layer, (l2, angle) in enumerate(zip(values["l2_distance"], values["cosine_angle_degrees"]), start=1):
            print(f"  layer {layer:2d}  L2 {l2:8.3f}  angle {angle:6.2f} deg")
    print(f"Plots: {os.path.join(FLAGS.output_dir, 'figure2_l2.png')}, "
          f"{os.path.join(FLAGS.output_dir, 'figure2_cosine.png')}")
    return 0


def console_main():
    """The `albert-analyze` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
