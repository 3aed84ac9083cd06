r"""Exports an albert_tf checkpoint as SavedModels that need only TensorFlow and tensorflow-text.

  python -m albert_tf.export --checkpoint=/ckpt/albert_base --output_dir=/exports/albert_base

writes, all or nothing:

  OUTPUT_DIR/encoder/        TF Hub-style encoder: input_word_ids, input_mask, input_type_ids ->
                             pooled_output, sequence_output, encoder_outputs; trainable variables;
                             `mlm` and `sop` signatures when the checkpoint has pretraining heads;
                             the SentencePiece model and albert_tf.json as assets
  OUTPUT_DIR/preprocessing/  raw strings (text, optional text_b) -> the three int32 tensors, in-graph
  OUTPUT_DIR/serving/NAME/VERSION/
                             TF Serving's layout: `serving_default` (text, optional text_b) and
                             `serve_examples` (serialized tf.Example) -> pooled and normalized
                             embeddings (encoders, pretrainers), probabilities and labels
                             (classifiers; regression: the score), answer spans (span labelers);
                             assets.extra/tf_serving_warmup_requests, which TF Serving replays
                             at load time (--serving_warmup_batch_sizes)
  OUTPUT_DIR/albert_tf.json, spm.model

Serve with: docker run -p 8501:8501 -v OUTPUT_DIR/serving:/models -e MODEL_NAME=NAME tensorflow/serving
(an export made with --serving_xla needs the server flag --xla_cpu_compilation_enabled=true)
(request bodies: albert_tf.export_lib.serving_requests). Load in Python with
`tf.saved_model.load(path)` after `import tensorflow_text`; albert_tf's `load_encoder(OUTPUT_DIR)`
turns the encoder back into an AlbertEncoder (fine-tuning's --init_checkpoint accepts OUTPUT_DIR).
"""

import os
import re

from absl import flags

from albert_tf import cli

# Warm-up requests' batch sizes: the small batch buckets (XLA's 1, 2, 4, 8).
DEFAULT_WARMUP_BATCH_SIZES = (1, 2, 4, 8)


def define_flags():
    flags.DEFINE_string("checkpoint", None, "albert_tf checkpoint directory or ckpt-N prefix: an encoder, pretrainer, "
                        "classifier or span_labeler (python -m albert_tf.convert makes one from other formats).")
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
                      "(assets.extra/tf_serving_warmup_requests), so no client waits for a graph's first run; with "
                      "--serving_xla one request per length bucket at each size, compiling those programs at load "
                      "time. Default 1,2,4,8; empty: write no warm-up requests.")
    flags.DEFINE_bool("overwrite", False, "Replace an earlier export in --output_dir once the new one is complete "
                      "(default false: refuse a non-empty directory). A directory holding anything export did not "
                      "write is refused even with it.")


FLAGS = flags.FLAGS

# A TF Serving model name is one directory name inside OUTPUT_DIR/serving.
_SERVING_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_serving_name(name):
    """ValueError unless `name` is one plain directory name: no separator, no '..', not absolute, so the
    serving model stays inside OUTPUT_DIR/serving."""
    if not isinstance(name, str) or not _SERVING_NAME.fullmatch(name):
        raise ValueError(f"--serving_name={name!r}: must be one directory name of letters, digits, '.', '_' and '-' "
                         "(not starting with '.' or '-'); the model goes to OUTPUT_DIR/serving/NAME/VERSION")


def export(checkpoint, output_dir, spm_model_file=None, max_seq_length=None, lower_case=None, serving_name="albert",
           serving_version=1, overwrite=False, serving_xla=False, serving_outputs=None,
           serving_warmup_batch_sizes=DEFAULT_WARMUP_BATCH_SIZES, force=False):
    """Writes the three SavedModels; returns {part: path}. `max_seq_length`, `lower_case`: None takes what
    the checkpoint records (albert_tf.models.preprocessing_contract). `serving_xla`, `serving_outputs`,
    `serving_warmup_batch_sizes`, `force`: see the flags."""
    import tensorflow as tf

    from albert_tf.models.model_dir import METADATA_FILE, SPM_MODEL_FILE, find_spm_model, load_model
    from albert_tf.models.preprocessing_contract import resolve_preprocessing
    from albert_tf.export_lib.encoder_module import EncoderModule
    from albert_tf.export_lib.preprocessing_module import Preprocessor
    from albert_tf.export_lib.serving_module import EMBEDDING_KINDS, SERVED_KINDS, ServingModule
    from albert_tf.export_lib.serving_warmup import warmup_requests, write_warmup_requests
    from albert_tf.file_utils import check_replaceable, staged_directory, write_json_atomically
    from albert_tf.text.albert_tokenizer import read_spm_model
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    check_serving_name(serving_name)
    if not isinstance(serving_version, int) or serving_version < 1:
        raise ValueError(f"--serving_version={serving_version}: must be a positive integer (TF Serving's version "
                         "directories are numbers)")
    check_replaceable(output_dir, overwrite)
    model, metadata = load_model(checkpoint)
    if metadata["model"] not in SERVED_KINDS:
        raise ValueError(f"{checkpoint}: holds a {metadata['model']!r} model; export supports {', '.join(SERVED_KINDS)}")
    spm = find_spm_model(checkpoint, spm_model_file)
    config = model.albert_config
    preprocessing = resolve_preprocessing(metadata, lower_case, max_seq_length, force=force, source=checkpoint)
    for warning in preprocessing.warnings:
        print(f"Warning: {warning}.", flush=True)
    max_seq_length, lower_case = preprocessing.max_seq_length, preprocessing.lower_case
    if not 3 <= max_seq_length <= config.max_position_embeddings:
        raise ValueError(f"--max_seq_length={max_seq_length}: must be at least 3 ([CLS] [SEP] [SEP]) and at most the "
                         f"model's max_position_embeddings ({config.max_position_embeddings})")
    model_proto = read_spm_model(spm)
    try:
        tokenizer = TFAlbertTokenizer(model_proto, lower_case=lower_case)
    except ValueError as error:
        raise ValueError(f"{spm}: {error}") from None
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(f"{spm}: has {tokenizer.vocab_size} pieces, more than the model's vocab_size "
                         f"({config.vocab_size}); "
                         "pass the SentencePiece model it was trained with (--spm_model_file)")
    encoder = getattr(model, "encoder", model)
    # Checked before anything is written.
    serving = ServingModule(tokenizer, max_seq_length, model, metadata, xla=serving_xla, outputs=serving_outputs)
    warmup = warmup_requests(serving, serving_name, serving_warmup_batch_sizes)
    with staged_directory(output_dir, overwrite=overwrite) as staging:
        metadata = {**metadata, "max_seq_length": max_seq_length, "lower_case": lower_case, "serving_xla": serving_xla}
        if metadata["model"] in EMBEDDING_KINDS:
            metadata["serving_outputs"] = list(serving.outputs)
        metadata_file = os.path.join(staging, METADATA_FILE)
        write_json_atomically(metadata_file, metadata)
        spm_copy = os.path.join(staging, SPM_MODEL_FILE)
        with open(spm_copy, "wb") as f:
            f.write(model_proto)

        pretrainer = model if metadata["model"] == "pretrainer" else None
        encoder_module = EncoderModule(encoder, pretrainer, spm_copy, metadata_file)
        encoder_module.trace()
        tf.saved_model.save(encoder_module, os.path.join(staging, "encoder"), signatures=encoder_module.signatures())

        preprocessor = Preprocessor(tokenizer, max_seq_length, spm_copy)
        preprocessor.trace()
        tf.saved_model.save(preprocessor, os.path.join(staging, "preprocessing"), signatures=preprocessor.signatures())

        serving_dir = os.path.join(staging, "serving", serving_name, str(serving_version))
        tf.saved_model.save(serving, serving_dir, signatures=serving.signatures())
        if warmup:
            write_warmup_requests(serving_dir, warmup)
    return {"encoder": os.path.join(output_dir, "encoder"), "preprocessing": os.path.join(output_dir, "preprocessing"),
            "serving": os.path.join(output_dir, "serving", serving_name, str(serving_version))}


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
    print(f"Exported {FLAGS.checkpoint} to {os.path.abspath(FLAGS.output_dir)} (max_seq_length "
          f"{written['max_seq_length']}, {'lowercased' if written['lower_case'] else 'cased'} text): the TF Hub-style encoder in {paths['encoder']}, raw-text preprocessing in "
          f"{paths['preprocessing']}, and the TF Serving model in {paths['serving']} (signatures serving_default: "
          "text, optional text_b; serve_examples: serialized tf.Example). Check them with "
          f"`saved_model_cli show --all --dir {paths['serving']}`.")
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
