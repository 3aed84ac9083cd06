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

Existing figures in --output_dir are replaced only with --overwrite (checked before
any work).

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
    flags.DEFINE_integer("max_seq_length", None, "Tokens per sequence. Default: the length each checkpoint records, "
                         "else 128.")
    flags.DEFINE_integer("num_sequences", 64, "Sequences of text to average over.")
    flags.DEFINE_string("output_dir", "analysis", "Where the PNG plots and figure2.json go.")
    flags.DEFINE_bool("overwrite", False, "Replace figure2.json and the plots where --output_dir holds them.")


FLAGS = flags.FLAGS
FIGURE_FILES = ("figure2_l2.png", "figure2_cosine.png", "figure2.json")


def parse_checkpoints(values):
    checkpoints = []
    for value in values:
        label, _, path = value.rpartition("=")
        checkpoints.append((label or os.path.basename(os.path.normpath(path)), path))
    return checkpoints


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
    from albert_tf.file_utils import check_file_replaceable, staged_file

    # Before the work: a user's earlier figures (or a file of that name) are replaced only with --overwrite.
    outputs = [os.path.join(FLAGS.output_dir, name) for name in FIGURE_FILES]
    for path in outputs:
        check_file_replaceable(path, FLAGS.overwrite)
    from albert_tf.models.inference_model import open_for_inference
    from albert_tf.models.layer_analysis import layer_transitions, pack_passages, plot, read_passages
    from albert_tf.models.parameter_breakdown import format_rows, parameter_breakdown, shape_only_pretrainer

    passages = read_passages(FLAGS.input_file)
    results, rows = {}, []
    for label, path in parse_checkpoints(FLAGS.checkpoint):
        # The checkpoint's recorded casing and length (an export's encoder becomes a Keras encoder).
        opened = open_for_inference(path, "encoder", FLAGS.spm_model_file, max_seq_length=FLAGS.max_seq_length,
                                    saved_model=False)
        encoder = opened.model
        inputs = pack_passages(passages, opened.tokenizer, opened.preprocessing.max_seq_length, FLAGS.num_sequences)
        results[label] = layer_transitions(encoder, inputs)
        rows.append({"model": label, **parameter_breakdown(shape_only_pretrainer(encoder.albert_config)), "paper": ""})
    l2_path, cosine_path, json_path = outputs
    with staged_file(l2_path, FLAGS.overwrite) as f:
        plot(results, "l2_distance", "L2 distance", f)
    with staged_file(cosine_path, FLAGS.overwrite) as f:
        plot(results, "cosine_angle_degrees", "cosine similarity (degrees)", f)
    with staged_file(json_path, FLAGS.overwrite) as f:
        f.write(json.dumps(results, indent=2).encode())
    print("Table 2 (parameters):\n" + format_rows(rows) + "\n")
    for label, values in results.items():
        print(f"Figure 2, {label}:")
        for layer, (l2, angle) in enumerate(zip(values["l2_distance"], values["cosine_angle_degrees"]), start=1):
            print(f"  layer {layer:2d}  L2 {l2:8.3f}  angle {angle:6.2f} deg")
    print(f"Plots: {l2_path}, {cosine_path}")
    return 0


def console_main():
    """The `albert-analyze` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
