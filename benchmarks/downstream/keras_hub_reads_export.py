r"""KerasHub reading albert_tf's Hugging Face export: do its AlbertBackbone's outputs match ours?

  python -m benchmarks.downstream.keras_hub_reads_export [--presets=albert_base_v2,albert_large_v2]

A random-weight albert_tf pretrainer of the preset is written as an albert_tf
model directory, converted with `albert_tf.convert --to=huggingface`, and loaded
by `keras_hub.models.AlbertBackbone.from_preset(<that directory>)` (KerasHub's own
Hugging Face reader). Both encoders then run the same batch: two rows of
--seq_length tokens, two segments, the second row padded from 5/8 on. Prints the
largest absolute difference of sequence_output (real positions) and pooled_output
per preset, and writes them to results/keras_hub_reads_export.md. KerasHub is a
benchmark peer, not an albert_tf requirement (benchmarks/requirements.txt).
"""

import argparse
import os
import tempfile

from benchmarks.common import RESULTS


def compare(preset, seq_length, seed):
    """(keras-hub version, max |diff| of sequence_output at real positions, of pooled_output)."""
    import keras
    import keras_hub
    import numpy as np

    import albert_tf
    from albert_tf.checkpoints.conversion import convert

    keras.utils.set_random_seed(seed)
    config = albert_tf.AlbertConfig.from_preset(preset)
    pretrainer = albert_tf.AlbertPretrainer(config)
    with tempfile.TemporaryDirectory() as work:
        albert_tf.write_model_dir(pretrainer, os.path.join(work, "albert_tf"))
        convert("albert_tf", "huggingface", os.path.join(work, "albert_tf"), os.path.join(work, "hf"))
        backbone = keras_hub.models.AlbertBackbone.from_preset(os.path.join(work, "hf"))
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, config.vocab_size, (2, seq_length)).astype("int32")
    mask = np.ones((2, seq_length), "int32")
    mask[1, seq_length * 5 // 8:] = 0
    types = np.zeros((2, seq_length), "int32")
    types[:, seq_length // 2:] = 1
    ours = pretrainer.encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    theirs = backbone({"token_ids": ids, "padding_mask": mask, "segment_ids": types})
    sequence = np.abs(np.array(ours["sequence_output"]) - np.array(theirs["sequence_output"]))[mask.astype(bool)]
    pooled = np.abs(np.array(ours["pooled_output"]) - np.array(theirs["pooled_output"]))
    return keras_hub.__version__, float(sequence.max()), float(pooled.max())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="albert_base_v2,albert_large_v2",
                        help="albert_tf presets, comma-separated (default albert_base_v2,albert_large_v2).")
    parser.add_argument("--seq_length", type=int, default=128, help="Tokens per row (default 128).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the weights and the batch (default 0).")
    args = parser.parse_args(argv)
    rows = ["| preset | seq | KerasHub | max abs diff, sequence_output | max abs diff, pooled_output |",
            "|---|---|---|---|---|"]
    for preset in args.presets.split(","):
        version, sequence, pooled = compare(preset, args.seq_length, args.seed)
        rows.append(f"| {preset} | {args.seq_length} | keras-hub {version} | {sequence:.2e} | {pooled:.2e} |")
        print(rows[-1], flush=True)
    with open(os.path.join(RESULTS, "keras_hub_reads_export.md"), "w") as f:
        f.write("\n".join(rows) + "\n\nRandom weights, float32 on CPU; both read the same converted files, so the "
                "differences are float rounding of two implementations of the same math.\n")


if __name__ == "__main__":
    main()
