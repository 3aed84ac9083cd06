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
                             (classifiers; multi-label: each label's sigmoid, `predicted` at the
                             recorded threshold and `label_names`; regression: the score),
                             answer spans (span labelers, with context_characters_read: how
                             much of each context was searched), entities with character
                             offsets (token classifiers: entity_count, entity_type,
                             entity_text, entity_start, entity_end, entity_score, padded per
                             text, and characters_read: a text is read up to 20,000 characters);
                             assets.extra/tf_serving_warmup_requests, which TF Serving replays
                             at load time (--serving_warmup_batch_sizes)
  OUTPUT_DIR/albert_tf.json, spm.model (or vocab.txt)

--serving_precision=bfloat16 makes the serving model's weights bfloat16 (for CPUs with native
bfloat16), written only if it answers as float32 on built-in texts and those of --calibration_file
(the figures go to albert_tf.json).

With --format=litert it writes LiteRT files for phones and other devices instead, all or nothing:

  OUTPUT_DIR/model.tflite        raw text in (text; text_b too for sentence-pair classifiers) ->
                                 logits and probabilities (classifiers, multi-label ones' each
                                 label's sigmoid; regression: score) or
                                 pooled_output (encoders, pretrainers); the tokenizer inside as
                                 tensorflow-text's custom ops (FastSentencepieceTokenize; a
                                 WordPiece vocab.txt: FastBertNormalize and
                                 FastWordpieceTokenizeWithOffsets)
  OUTPUT_DIR/encoder_ids.tflite  the same from token ids (input_word_ids, input_mask,
                                 input_type_ids), built-in ops only
  OUTPUT_DIR/albert_tf.json, spm.model (or vocab.txt)

A token classifier of a WordPiece model answers each piece's tag probabilities, unit start and
byte offsets (LiteModel reads them into entities); one of a SentencePiece model is refused there:
its entities need character offsets, which the SentencePiece op does not give (export it as a
SavedModel).

  python -m albert_tf.export --format=litert --checkpoint=/runs/sst2/best --output_dir=/exports/sst2_lite

Run them from Python with `albert_tf.LiteModel(OUTPUT_DIR)(["a text"])` (pip install 'albert_tf[litert]'
for ai-edge-litert's interpreter; TensorFlow's tf.lite one serves otherwise).

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
from albert_tf.export_lib.bfloat16_export import DEFAULT_PRECISION, PRECISIONS
from albert_tf.export_lib.exporter import DEFAULT_WARMUP_BATCH_SIZES, check_output_dir, export
from albert_tf.export_lib.litert_export import DEFAULT_QUANTIZATION, QUANTIZATIONS, check_quantization
from albert_tf.export_lib.serving_requests import DEFAULT_MAX_BATCH_SIZE


FORMATS = ("savedmodel", "litert")
# Flags that shape only one format's files: given with the other format, they are refused, not ignored.
SAVEDMODEL_ONLY_FLAGS = ("serving_name", "serving_version", "serving_xla", "serving_outputs",
                         "serving_warmup_batch_sizes", "serving_max_batch_size", "serving_precision")
LITERT_ONLY_FLAGS = ("quantization", "pad_to")


def define_flags():
    flags.DEFINE_enum("format", "savedmodel", list(FORMATS), "savedmodel (default): the TF Hub-style encoder, the "
                      "preprocessing model and the TF Serving model. litert: .tflite files for phones and other "
                      "devices (raw text in, and token ids in).")
    flags.DEFINE_enum("quantization", DEFAULT_QUANTIZATION, list(QUANTIZATIONS),
                      "--format=litert: dynamic_int8 (default: int8 weights, float activations; albert_base's file is "
                      "27% of float32's, small models' a larger share, as the tokenizer and float tensors stay), "
                      "float16, float32, or int8 (weights and activations; needs --calibration_file and is written "
                      "only if it keeps the float model's answers, else refused with what was measured).")
    flags.DEFINE_integer("pad_to", None, "--format=litert: pad every request to this many tokens (at most "
                         "--max_seq_length), for runtimes that need static shapes. Default: inputs as long as the "
                         "text, capped at --max_seq_length.")
    flags.DEFINE_string("calibration_file", None, "Texts like the requests the model will get, one per line (sentence "
                        "pairs and questions with their contexts: text<TAB>text_b). --format=litert "
                        "--quantization=int8: at least 200 distinct, which calibrate the activations' ranges and "
                        "measure the accuracy gate. --serving_precision=bfloat16: the bfloat16 model's accuracy gate "
                        "measures on them besides its own 32 texts.")
    flags.DEFINE_string("checkpoint", None, "albert_tf checkpoint directory or ckpt-N prefix: an encoder, pretrainer, "
                        "classifier, span_labeler, squad_v2_span_labeler or token_classifier (python -m "
                        "albert_tf.convert makes one from other formats). --format=litert takes an encoder, "
                        "pretrainer or classifier.")
    flags.DEFINE_string("output_dir", None, "Directory to write; must not exist or be empty unless --overwrite, and "
                        "may not be, lie inside or hold --checkpoint or another input.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model. Default: the spm.model stored in --checkpoint.")
    flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt, for a model whose vocabulary is one. Default: the "
                        "vocab.txt stored in --checkpoint. Its exports serve encoders and classifiers so far, and "
                        "make no LiteRT file yet.")
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
                      "per full 128-token request at albert_base on an AVX2 CPU, but no faster on an AVX-512 Zen 4 "
                      "and slower with --serving_precision=bfloat16 (XLA on a CPU does not use the bfloat16 "
                      "instructions): measure on your CPU. Request shapes are padded up to buckets "
                      "(lengths 16, 32, 64, ..., max_seq_length; batch 1, 2, 4, 8, then multiples of 8), each "
                      "compiled on its first request. TF Serving must then run with "
                      "--xla_cpu_compilation_enabled=true (default false: plain TF graphs, any server).")
    flags.DEFINE_enum("serving_precision", DEFAULT_PRECISION, list(PRECISIONS),
                      "The TF Serving model's weights and matrix products: float32 (default) or bfloat16 (weights "
                      "stored in bfloat16, half the size; LayerNorm, softmax, task heads and outputs stay float32; "
                      "~1.5-2x faster on CPUs with native bfloat16, avx512_bf16 or amx_bf16, slower elsewhere, "
                      "which export and load_export say). Written only if it answers as float32 does on built-in "
                      "texts (encoders: cosine mean >= 0.999, min >= 0.99; labels, answer spans, entities: 99% "
                      "agreement), the figures recorded in albert_tf.json; else refused. encoder/ stays float32.")
    flags.DEFINE_list("serving_outputs", None, "An encoder's or pretrainer's serving outputs, comma-separated: "
                      "pooled_output (the [CLS] vector through the pooler), embedding (the L2-normalized mean of the "
                      "token vectors). Default both; pooled_output alone computes the last layer at [CLS] only "
                      "(~1/L of the encoder less per request). Classifiers and span labelers have fixed outputs.")
    flags.DEFINE_list("serving_warmup_batch_sizes", [str(size) for size in DEFAULT_WARMUP_BATCH_SIZES],
                      "Batch sizes of the warm-up requests TF Serving replays while loading the serving model "
                      "(assets.extra/tf_serving_warmup_requests), so no client waits for a graph's first run: one "
                      "request per size and raw-text signature; with --serving_xla one per length bucket at each "
                      "size, compiling those programs at load time. Default 1,2,4,8; empty: write no warm-up requests.")
    flags.DEFINE_integer("serving_max_batch_size", DEFAULT_MAX_BATCH_SIZE,
                         "Texts per request the serving model accepts at most (default "
                         f"{DEFAULT_MAX_BATCH_SIZE}); a larger request fails with INVALID_ARGUMENT and this limit in "
                         "its message, instead of running until the server runs out of memory. "
                         "albert_tf.load_export splits larger batches itself.")
    flags.DEFINE_bool("overwrite", False, "Replace an earlier export in --output_dir once the new one is complete "
                      "(default false: refuse a non-empty directory). A directory holding anything export did not "
                      "write is refused even with it.")


FLAGS = flags.FLAGS


def check_flags(argv):
    """What the command line alone decides (cli.run calls it before TensorFlow's import)."""
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    if not FLAGS.checkpoint or not FLAGS.output_dir:
        raise ValueError("--checkpoint and --output_dir required")
    misplaced = [name for name in (LITERT_ONLY_FLAGS if FLAGS.format == "savedmodel" else SAVEDMODEL_ONLY_FLAGS)
                 if FLAGS[name].present]
    if misplaced:
        other = "litert" if FLAGS.format == "savedmodel" else "savedmodel"
        raise ValueError(f"{', '.join('--' + name for name in misplaced)}: only for --format={other} (this export "
                         f"is --format={FLAGS.format})")
    if FLAGS.format == "litert":
        check_quantization(FLAGS.quantization, FLAGS.calibration_file)
    check_output_dir(FLAGS.output_dir, FLAGS.checkpoint, spm_model_file=FLAGS.spm_model_file,
                     vocab_file=FLAGS.vocab_file, calibration_file=FLAGS.calibration_file)


def main(argv):
    if FLAGS.format == "litert":
        return export_litert_files()
    paths = export(FLAGS.checkpoint, FLAGS.output_dir, FLAGS.spm_model_file, FLAGS.max_seq_length,
                   FLAGS.do_lower_case, FLAGS.serving_name, FLAGS.serving_version, FLAGS.overwrite,
                   FLAGS.serving_xla, FLAGS.serving_outputs, FLAGS.serving_warmup_batch_sizes, FLAGS.force,
                   FLAGS.serving_max_batch_size, FLAGS.serving_precision, FLAGS.calibration_file, FLAGS.vocab_file)
    from albert_tf.models.model_dir_format import read_metadata

    written = read_metadata(FLAGS.output_dir)
    single_texts = "" if written["model"] in ("span_labeler", "squad_v2_span_labeler") else "serve_text: text; "
    print(f"Exported {FLAGS.checkpoint} to {os.path.abspath(FLAGS.output_dir)} (max_seq_length "
          f"{written['max_seq_length']}, {'lowercased' if written['lower_case'] else 'cased'} text): the TF Hub-style encoder in {paths['encoder']}, raw-text preprocessing in "
          f"{paths['preprocessing']}, and the TF Serving model in {paths['serving']} (signatures "
          f"{single_texts}serving_default: text, text_b; "
          "serve_examples: serialized tf.Example). Check them with "
          f"`saved_model_cli show --all --dir {paths['serving']}`; in Python, "
          + python_call_hint(written, f"albert_tf.load_export({os.path.abspath(FLAGS.output_dir)!r})"))
    for line in xla_notes(FLAGS.serving_xla, FLAGS.serving_precision, FLAGS.serving_warmup_batch_sizes):
        print(line)
    return 0


def xla_notes(serving_xla, serving_precision, warmup_batch_sizes):
    """What a user of an XLA-compiled serving model must know: the server flag, the warm-up's compilations, and,
    with bfloat16 weights, that XLA throws their speed away on a CPU."""
    if not serving_xla:
        return []
    notes = ["The serving model's encoder is XLA-compiled: start TF Serving with --xla_cpu_compilation_enabled=true"
             + ("; its warm-up requests compile the shape buckets of batch sizes "
                f"{','.join(warmup_batch_sizes)} while it loads the model." if warmup_batch_sizes else ".")]
    if serving_precision == "bfloat16":
        # XLA:CPU lowers bfloat16 dots without the avx512_bf16/amx_bf16 instructions oneDNN uses, so the bfloat16
        # XLA export measured the slowest of the four SavedModels (benchmarks/speed/cpu_serving).
        notes.append("Note: XLA on a CPU does not use the bfloat16 instructions, so this bfloat16 export runs slower "
                     "than the same export without --serving_xla; for speed on CPUs leave out --serving_xla with "
                     "--serving_precision=bfloat16.")
    return notes


def python_call_hint(metadata, model):
    """The sentence that shows how to call the export from Python (`model`: the expression that loads it): a
    classifier fine-tuned on pairs (its albert_tf.json records takes_pairs) with its second texts, as it was trained."""
    if metadata.get("model") == "classifier" and metadata.get("takes_pairs") is True:
        return (f"`{model}(['a text'], ['its second text'])` answers pairs; this classifier was fine-tuned on pairs, "
                "so pass each text's second text (\"\" where it has none), not the texts alone.")
    if metadata.get("model") in ("span_labeler", "squad_v2_span_labeler"):
        return f"`{model}(['a question'], ['its context'])` answers each question from its context."
    return f"`{model}(['a text'])` answers a list of texts."


def export_litert_files():
    from albert_tf.export_lib.litert_export import export_litert
    from albert_tf.models.model_dir_format import read_metadata

    result = export_litert(FLAGS.checkpoint, FLAGS.output_dir, FLAGS.quantization, FLAGS.pad_to, FLAGS.spm_model_file,
                           FLAGS.max_seq_length, FLAGS.do_lower_case, FLAGS.force, FLAGS.calibration_file,
                           FLAGS.overwrite, FLAGS.vocab_file)
    record = result["litert"]
    files = record["files"]
    text_file, ids_file = files["model.tflite"], files["encoder_ids.tflite"]
    print(f"Exported {FLAGS.checkpoint} to {os.path.abspath(FLAGS.output_dir)} as LiteRT ({record['quantization']}"
          f"{', padded to ' + str(record['pad_to']) if record['pad_to'] else ''}): model.tflite "
          f"({text_file['bytes'] / 1e6:.1f} MB; {', '.join(text_file['inputs'])} -> {', '.join(text_file['outputs'])};"
          f" needs tensorflow-text's {text_file['custom_ops'][0]} kernel) and encoder_ids.tflite "
          f"({ids_file['bytes'] / 1e6:.1f} MB; token ids in, built-in ops only). Checked against the float model: "
          f"{text_file['check_error']:.2g} and {ids_file['check_error']:.2g}"
          + (f"; int8 gate: {record['int8_gate']['measured']}" if record["int8_gate"] else "")
          + ". In Python, " + python_call_hint(read_metadata(FLAGS.output_dir),
                                               f"albert_tf.LiteModel({os.path.abspath(FLAGS.output_dir)!r})"))
    return 0


def console_main():
    """The `albert-export` console script."""
    cli.run(main, define_flags, check_flags=check_flags)


if __name__ == "__main__":
    console_main()
