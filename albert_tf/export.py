r"""Exports an albert_tf checkpoint as SavedModels that need only TensorFlow and tensorflow-text.

  python -m albert_tf.export --checkpoint=/ckpt/albert_base --output_dir=/exports/albert_base

writes, all or nothing:

  OUTPUT_DIR/encoder/        TF Hub-style encoder: input_word_ids, input_mask, input_type_ids ->
                             pooled_output, sequence_output, encoder_outputs; trainable variables;
                             `mlm` and `sop` signatures when the checkpoint has pretraining heads;
                             the original TF Hub module's `tokens` (input_ids, input_mask,
                             segment_ids), `sop_log_probs` and `tokenization_info` too;
                             the SentencePiece model and albert_tf.json as assets
  OUTPUT_DIR/preprocessing/  raw strings (text, optional text_b) -> the three int32 tensors, in-graph
  OUTPUT_DIR/serving/NAME/VERSION/
                             TF Serving's layout: `serve_text` (text), `serving_default` (text,
                             text_b: pairs; TF Serving fills in a left-out text_b) and
                             `serve_examples` (serialized tf.Example) -> pooled and normalized
                             embeddings (encoders, pretrainers), probabilities and labels
                             (classifiers; regression: the score), answer spans (span labelers);
                             assets.extra/tf_serving_warmup_requests, which TF Serving replays
                             at load time (--serving_warmup_batch_sizes)
  OUTPUT_DIR/albert_tf.json, spm.model

Serve with: docker run -p 8501:8501 -v OUTPUT_DIR/serving:/models -e MODEL_NAME=NAME tensorflow/serving
(an export made with --serving_xla needs the server flag --xla_cpu_compilation_enabled=true)
(request bodies: albert_tf.export_lib.serving_requests). Load in Python with
`albert_tf.load_export(OUTPUT_DIR)` (callable on a list of strings, or on two lists for pairs), or
`tf.saved_model.load(path)` after `import tensorflow_text`; albert_tf's `load_encoder(OUTPUT_DIR)`
turns the encoder back into an AlbertEncoder (fine-tuning's --init_checkpoint accepts OUTPUT_DIR).
"""

import os

from absl import flags

from albert_tf import cli
from albert_tf.export_lib.exporter import DEFAULT_WARMUP_BATCH_SIZES, export


def define_flags():
    flags.DEFINE_string("checkpoint", None, "albert_tf checkpoint directory or ckpt-N prefix: an encoder, pretrainer, "
                        "classifier, span_labeler or squad_v2_span_labeler (python -m albert_tf.convert makes one "
                        "from other formats).")
    flags.DEFINE_string("output_dir", None, "Directory to write; must not exist or be empty unless --overwrite.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model. Default: the spm.model stored in --checkpoint.")
    flags.DEFINE_integer("max_seq_length", None, "Tokens per input row of the preprocessing and serving models. "
                         "Default: the length the checkpoint records (trained or fine-tuned at), else 128. Longer "
                         "than that works up to max_position_embeddings, with a warning: those positions were never "
                         "trained.")
    flags.DEFINE_bool("do_lower_case", None, "Lowercase requests. Default: as the checkpoint records its training text "
                      "was (lowercase when it records nothing, as ALBERT v2); another casing than the recorded one "
                      "needs --force.")
    flags.DEFINE_bool("force", False, "Export with a --do_lower_case that contradicts the checkpoint's record.")
    flags.DEFINE_string("serving_name", "albert", "Model name in the TF Serving layout serving/NAME/VERSION "
                        "(default albert).")
    flags.DEFINE_integer("serving_version", 1, "Model version in the TF Serving layout (default 1).")
    flags.DEFINE_bool("serving_xla", False,
                      "Run the TF Serving model's encoder and head as XLA programs (jit_compile): 1.25-1.4x faster "
                      "per full 128-token request on CPU at albert_base; request shapes are padded up to buckets "
                      "(lengths 16, 32, 64, ..., max_seq_length; batch 1, 2, 4, 8, then multiples of 8), each "
                      "compiled on its first request. TF Serving must then run with "
                      "--xla_cpu_compilation_enabled=true (default false: plain TF graphs, any server).")
    flags.DEFINE_list("serving_outputs", None, "An encoder's or pretrainer's serving outputs, comma-separated: "
                      "pooled_output (the [CLS] vector through the pooler), embedding (the L2-normalized mean of the "
                      "token vectors). Default both; pooled_output alone computes the last layer at [CLS] only "
                      "(~1/L of the encoder less per request). Classifiers and span labelers have fixed outputs.")
    flags.DEFINE_list("serving_warmup_batch_sizes", [str(size) for size in DEFAULT_WARMUP_BATCH_SIZES],
                      "Batch sizes of the warm-up requests TF Serving replays while loading the serving model "
                      "(assets.extra/tf_serving_warmup_requests), so no client waits for a graph's first run: one "
                      "request per size and raw-text signature; with --serving_xla one per length bucket at each "
                      "size, compiling those programs at load time. Default 1,2,4,8; empty: write no warm-up requests.")
    flags.DEFINE_bool("overwrite", False, "Replace an earlier export in --output_dir once the new one is complete "
                      "(default false: refuse a non-empty directory). A directory holding anything export did not "
                      "write is refused even with it.")


FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    if not FLAGS.checkpoint or not FLAGS.output_dir:
        raise ValueError("--checkpoint and --output_dir required")
    paths = export(FLAGS.checkpoint, FLAGS.output_dir, FLAGS.spm_model_file, FLAGS.max_seq_length,
                   FLAGS.do_lower_case, FLAGS.serving_name, FLAGS.serving_version, FLAGS.overwrite,
                   FLAGS.serving_xla, FLAGS.serving_outputs, FLAGS.serving_warmup_batch_sizes, FLAGS.force)
    from albert_tf.models.model_dir import read_metadata

    written = read_metadata(FLAGS.output_dir)
    single_texts = "" if written["model"] in ("span_labeler", "squad_v2_span_labeler") else "serve_text: text; "
    print(f"Exported {FLAGS.checkpoint} to {os.path.abspath(FLAGS.output_dir)} (max_seq_length "
          f"{written['max_seq_length']}, {'lowercased' if written['lower_case'] else 'cased'} text): the TF Hub-style encoder in {paths['encoder']}, raw-text preprocessing in "
          f"{paths['preprocessing']}, and the TF Serving model in {paths['serving']} (signatures "
          f"{single_texts}serving_default: text, text_b; "
          "serve_examples: serialized tf.Example). Check them with "
          f"`saved_model_cli show --all --dir {paths['serving']}`; in Python, "
          f"`albert_tf.load_export({os.path.abspath(FLAGS.output_dir)!r})` returns a model callable on texts.")
    if FLAGS.serving_xla:
        print("The serving model's encoder is XLA-compiled: start TF Serving with --xla_cpu_compilation_enabled=true"
              + ("; its warm-up requests compile the shape buckets of batch sizes "
                 f"{','.join(FLAGS.serving_warmup_batch_sizes)} while it loads the model."
                 if FLAGS.serving_warmup_batch_sizes else "."))
    return 0


def console_main():
    """The `albert-export` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
