r"""Reports what pretraining TFRecords hold: the checks that the data is what ALBERT expects.

  python -m albert_tf.data_stats data/train            # an output prefix of create_pretraining_data
  python -m albert_tf.data_stats 'data/*.tfrecord*'    # or any files, ours or the original script's

Read from the records themselves: instances, tokens, fraction masked, masked
spans by length in words (vs the 6/11, 3/11, 2/11 n-gram proposal), the
[MASK]/keep/random split of masked tokens (vs 80/10/10), SOP (or NSP) label
balance, the sequence-length histogram and the fraction of short sequences.
When the creation metadata is present, its exact counts (the accepted span
lengths, before adjacent spans merge; short target lengths) are shown beside.
"""

import json

from absl import flags

from albert_tf import cli


def define_flags():
    flags.DEFINE_enum("format", "text", ["text", "json"], "Report format.")
    flags.DEFINE_integer("max_instances", 0, "Read at most this many instances (0 = all).")


def main(argv):
    from albert_tf.data.data_set_files import read_metadata, shard_prefix
    from albert_tf.data.data_set_report import compute_stats, format_report
    from albert_tf.data.pretraining_data_job import DOCUMENTS_FORMAT
    from albert_tf.data.pretraining_dataset import data_set_format, expand_data_files

    if len(argv) != 2:
        raise ValueError("usage: python -m albert_tf.data_stats PREFIX_OR_GLOB")
    files = expand_data_files(argv[1])
    data_format, documents = data_set_format(files)
    if data_format == DOCUMENTS_FORMAT:  # no masks or pairs until run_pretraining makes them
        counts = documents["statistics"]
        print(f"{argv[1]}: tokenized documents (create_pretraining_data --output_format=documents): "
              f"{counts['documents']:,} documents, {counts['sentences']:,} sentences, {counts['tokens']:,} tokens; "
              "run_pretraining makes their pairs and masks every epoch. Masking and pair statistics: run this on "
              "static instances, such as the held-out set (PREFIX-heldout).")
        return 0
    stats = compute_stats(files, flags.FLAGS.max_instances)
    prefix = shard_prefix(files[0])
    metadata = read_metadata(prefix) if prefix else None
    if flags.FLAGS.format == "json":
        print(json.dumps({"records": stats, "creation": metadata and metadata["statistics"]}, indent=2))
    else:
        print(format_report(stats, metadata))
    return 0


def console_main():
    """The `albert-data-stats` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
