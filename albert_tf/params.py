r"""Prints the parameter counts of ALBERT presets, in the layout of the paper's Tables 2 and 3.

  python -m albert_tf.params                       # every preset in configs/, then Table 3
  python -m albert_tf.params --presets=albert_base_v2,bert_base --format=markdown
  python -m albert_tf.params --albert_config=my_config.json
  python -m albert_tf.params --presets=albert_base_v2 --embedding_sizes=32,64

Table 3 of the paper varies the embedding size E of ALBERT-base (H 768, 12
layers, vocabulary 30,000), not shared (BERT-style) and all-shared; the second
table lists those configurations (`--embedding_sizes`, empty to leave it out).

Counts are read off a real model built from the config (variables created with
shapes only, so even xxlarge takes no memory), broken down into the embeddings
(V*E + positions + segments + LayerNorm), the E->H projection, the distinct
transformer weights, the pooler, and the pretraining heads (the MLM head's
transform + LayerNorm + vocabulary bias, its output matrix being the tied
embeddings; the SOP classifier 2*H + 2).
"""

from absl import flags

from albert_tf import cli


def define_flags():
    flags.DEFINE_list("presets", None, "Preset names to list (default: every preset in configs/).")
    flags.DEFINE_string("albert_config", None, "A config JSON file to list instead of presets.")
    flags.DEFINE_alias("albert_config_file", "albert_config")  # the original scripts' name
    flags.DEFINE_enum("format", "text", ["text", "markdown", "json"], "Output format.")
    flags.DEFINE_list("embedding_sizes", ["64", "128", "256", "768"], "Embedding sizes E of the Table 3 listing "
                      "(albert_base_v2 with each E, not shared and all-shared); empty (--embedding_sizes=) for none.")


FLAGS = flags.FLAGS


def main(argv):
    del argv
    from albert_tf.models.parameter_breakdown import TABLE3_BASE, embedding_size_rows, format_rows, preset_rows

    try:
        embedding_sizes = [int(size) for size in FLAGS.embedding_sizes]
    except ValueError:
        raise ValueError(f"--embedding_sizes: integers expected, got {','.join(FLAGS.embedding_sizes)}") from None
    rows = preset_rows(FLAGS.presets, FLAGS.albert_config)
    table3 = embedding_size_rows(embedding_sizes) if embedding_sizes else []
    if FLAGS.format == "json":
        print(format_rows(rows + table3, "json"))
        return
    print(format_rows(rows, FLAGS.format))
    if table3:
        print(f"\nTable 3: {TABLE3_BASE} by embedding size E, not shared and all-shared\n")
        print(format_rows(table3, FLAGS.format))


def console_main():
    """The `albert-params` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
