"""`make demo`: what albert_tf does today, end to end, on 2 CPU cores.

Builds the tiny preset, runs it once, and prints the parameter table of every
preset. The data pipeline, pretraining, export and serving stages are added to
this demo as they land; until then it says so instead of pretending.
"""

from absl import flags

from albert_tf import cli

STILL_TO_COME = (
    "SentencePiece training and TFRecord creation (issue: tokenizer and data pipeline)",
    "pretraining with LAMB (issue: pretraining)",
    "export and a served prediction (issue: export)",
)


def define_flags():
    flags.DEFINE_string("preset", "albert_tiny", "Preset to build and run.")


def main(argv):
    del argv
    import numpy as np

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.params import format_rows, preset_rows

    config = AlbertConfig.from_preset(flags.FLAGS.preset)
    pretrainer = AlbertPretrainer(config)
    ids = np.array([[2, 10, 11, 4, 12, 3, 20, 21, 3, 0]], np.int32)
    outputs = pretrainer({
        "input_word_ids": ids,
        "input_mask": (ids > 0).astype(np.int32),
        "input_type_ids": np.array([[0] * 6 + [1] * 4], np.int32),
        "masked_lm_positions": np.array([[3]], np.int32),
    })
    print(f"Built {flags.FLAGS.preset} ({pretrainer.count_params():,} parameters) and ran one sequence:")
    for name, value in outputs.items():
        print(f"  {name}: shape {tuple(value.shape)}")
    print("\nParameter counts of every preset (the paper's Table 2 layout):\n")
    print(format_rows(preset_rows()))
    print("\nNot in this demo yet, because albert_tf does not do it yet:")
    for stage in STILL_TO_COME:
        print(f"  - {stage}")
    return 0


if __name__ == "__main__":
    cli.run(main, define_flags)
