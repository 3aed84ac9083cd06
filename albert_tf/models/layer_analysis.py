"""The paper's Figure 2 for any encoder: how much each layer changes its input.

For every layer, the L2 distance and the angle (cosine similarity, in degrees)
between the layer's input and output token embeddings, averaged over real
(non-padding) tokens of text packed into full sequences; plotted per layer, one
line per model. ALBERT's shared layers move their input smoothly, BERT's oscillate.
"""

import os

from albert_tf.settings import SettingFileNotFound


def pack_passages(passages, tokenizer, max_seq_length, num_sequences):
    """Passages -> [CLS] tokens [SEP] int32 arrays, passages concatenated to fill sequences."""
    import numpy as np

    from albert_tf.text.special_ids import PADDING_ID

    cls, sep = tokenizer.special_ids.cls, tokenizer.special_ids.sep
    ids, mask = [], []
    buffer = []
    for passage in passages:
        buffer.extend(tokenizer.encode(passage))
        while len(buffer) >= max_seq_length - 2 and len(ids) < num_sequences:
            ids.append([cls] + buffer[: max_seq_length - 2] + [sep])
            mask.append([1] * max_seq_length)
            buffer = buffer[max_seq_length - 2 :]
        if len(ids) >= num_sequences:
            break
    if not ids and buffer:
        pad = max_seq_length - 2 - len(buffer)
        ids.append([cls] + buffer + [sep] + [PADDING_ID] * pad)
        mask.append([1] * (len(buffer) + 2) + [0] * pad)
    if not ids:
        raise ValueError("the input text holds no tokens")
    ids = np.array(ids, "int32")
    return {"input_word_ids": ids, "input_mask": np.array(mask, "int32"), "input_type_ids": np.zeros_like(ids)}


def layer_transitions(encoder, inputs):
    """Per layer: mean L2 distance and mean angle (degrees) between its input and output token embeddings."""
    import numpy as np

    outputs = encoder(inputs, training=False)
    first_input = encoder.project(encoder.embeddings(inputs["input_word_ids"], inputs["input_type_ids"]))
    # encoder_outputs holds every block's output: a layer's is the last of its inner_group_num blocks.
    inner = encoder.albert_config.inner_group_num
    layer_outputs = outputs["encoder_outputs"][inner - 1 :: inner]
    states = [np.asarray(first_input, "float64")] + [np.asarray(x, "float64") for x in layer_outputs]
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
        raise SettingFileNotFound(f"{path}: no such <input_file>")
    with open(path, encoding="utf-8", errors="replace") as f:
        return [line.strip() for line in f if line.strip()]
