r"""Creates ALBERT pretraining data: masked n-gram MLM + sentence-order pairs as TFRecords.

  python -m albert_tf.create_pretraining_data --input_file='corpus/*.txt' \
      --output_file=data/train --spm_model_file=vocab/30k-clean.model \
      --max_seq_length=128 --max_predictions_per_seq=20 --num_workers=8 --num_output_shards=16

writes data/train-00000-of-00016.tfrecord ... and data/train.metadata.json (the
settings, exact statistics and per-shard counts). The features and their names
are the original's, so files made by google-research/albert's script and by this
one are interchangeable.

--output_format=documents writes the tokenized documents once instead (a small
fraction of the disk of --dupe_factor copies): run_pretraining then makes new
sentence-order pairs and masks every epoch. --heldout_every=N also writes
PREFIX-heldout: every Nth document of each file, never trained on, as static
instances for evaluating during training (run_pretraining --eval_input_file).

Streaming and parallel: documents are read one at a time and handed to
--num_workers processes in small units; memory stays bounded by one unit per
worker and, at the end, one output shard. The same --random_seed gives
byte-identical files for any --num_workers (and from the Beam pipeline in
pipelines/). Outputs appear only once complete: everything is written under
temporary names and renamed at the end.

Chinese, Japanese and Korean: --input_format=paragraphs splits their sentences
too (no whitespace needed after 。！？; albert_tf.text.sentence_splitter), and
whole-word masking masks a Korean word (from one '▁' to the next) whole. Chinese
and Japanese words are known only from a segmenter: --pre_segmented reads its
output (words separated by spaces), removes the spaces before tokenizing and
masks those words whole (albert_tf.text.segmented_text).

Differences from the original script, on purpose (docs/reference.md, "Pretraining data"): seeded
everywhere (the original used numpy's global RNG for n-gram lengths); a
one-sentence chunk is split at a random word boundary instead of taking B from
another document (--single_segment=other_document restores that). As in the
original, a random replacement token is drawn uniformly from the whole
vocabulary, special pieces included.
"""

import os
import signal
import time

from absl import flags

from albert_tf import cli
from albert_tf.data.creation_flags import config_from_flags, define_data_flags, vocabulary_setting


def define_flags():
    define_data_flags()
    flags.DEFINE_integer("num_workers", os.cpu_count() or 1, "Worker processes (1 = run in this process).")


def _raise_on_sigterm(signum, frame):
    # SystemExit unwinds through the `finally` blocks that remove the staging directory.
    raise SystemExit(128 + signum)


def main(argv):
    del argv
    from albert_tf.data.corpus_reader import expand_input_patterns

    FLAGS = flags.FLAGS
    for name in ("input_file", "output_file"):
        if not FLAGS[name].value:
            raise ValueError(f"--{name} is required")
    kind, vocabulary_path = vocabulary_setting(FLAGS)
    config = config_from_flags(FLAGS)
    from albert_tf.data.pretraining_data_job import without_own_outputs
    from albert_tf.file_utils import DATA_SET, VOCABULARY, refuse_another_tools_directory

    paths, skipped = without_own_outputs(expand_input_patterns(FLAGS.input_file), config, FLAGS.output_file)
    refuse_another_tools_directory(os.path.dirname(FLAGS.output_file) or ".",
                                   "albert_tf.create_pretraining_data", (DATA_SET, VOCABULARY), setting="output_file")
    if skipped:
        print(f"Skipped {len(skipped)} file(s) that --input_file matches but this run writes, e.g. {skipped[0]}.")
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    start = time.time()
    from albert_tf.data.local_runner import create_pretraining_data, summary_lines
    from albert_tf.text.vocabularies import Vocabulary

    metadata = create_pretraining_data(paths, FLAGS.output_file, Vocabulary.read(vocabulary_path, kind), config,
                                       num_workers=FLAGS.num_workers, overwrite=FLAGS.overwrite)
    print("\n".join(summary_lines(metadata, FLAGS.output_file, time.time() - start)))
    return 0


def console_main():
    """The `albert-create-pretraining-data` console script."""
    cli.run(main, define_flags, uses_tensorflow=False)


if __name__ == "__main__":
    console_main()
