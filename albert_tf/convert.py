r"""Converts ALBERT checkpoints between albert_tf, the original TF1 format and Hugging Face.

  # Google's original checkpoint (model.ckpt-best + albert_config.json) -> albert_tf
  python -m albert_tf.convert --from=tf1 --input=albert_base/model.ckpt-best \
      --spm_model_file=albert_base/30k-clean.model --output=/tmp/albert_base

  # A Hugging Face save_pretrained directory -> albert_tf
  python -m albert_tf.convert --from=huggingface --input=hf_albert/ --output=/tmp/albert

  # albert_tf -> Hugging Face (load with AutoModelForPreTraining / AutoTokenizer.from_pretrained)
  python -m albert_tf.convert --from=albert_tf --to=huggingface --input=/tmp/albert --output=/tmp/hf

Every tensor is checked before anything is written: names the model does not
have, variables the source lacks, and shape mismatches are listed together, and
the output directory is created only once the conversion has succeeded.
"""

import os

from absl import app, flags

from albert_tf import cli

FORMATS = ("albert_tf", "huggingface", "tf1")


def define_flags():
    flags.DEFINE_enum("from", None, FORMATS, "Format of --input: an albert_tf checkpoint directory, a Hugging "
                      "Face save_pretrained directory, or an original TF1 checkpoint prefix/directory.")
    flags.DEFINE_enum("to", "albert_tf", FORMATS, "Format to write to --output.")
    flags.DEFINE_string("input", None, "Checkpoint to read (directory or TF1 checkpoint prefix).")
    flags.DEFINE_string("output", None, "Directory to write; must not exist or be empty unless --overwrite.")
    flags.DEFINE_string("albert_config", None, "For --from=tf1: the albert_config.json (preset name or path). "
                        "Default: albert_config.json beside the checkpoint.")
    flags.DEFINE_alias("albert_config_file", "albert_config")  # the original scripts' name
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model to store with the weights (as spm.model "
                        "for albert_tf, spiece.model for Hugging Face, 30k-clean.model for tf1).")
    flags.DEFINE_bool("init_missing_heads", False, "Accept a source without some pretraining-head or pooler "
                      "tensors (for example Hugging Face's AlbertForMaskedLM, which has neither SOP classifier nor "
                      "pooler): they keep a fresh random initialization, and the summary lists them. Default: "
                      "such a source fails.")
    flags.DEFINE_bool("do_lower_case", None, "Whether the model's text is lowercased: recorded in albert_tf.json "
                      "(--to=albert_tf) or in the tokenizer files written beside spiece.model (--to=huggingface). "
                      "Default: what the source records (an albert_tf directory's albert_tf.json, a Hugging Face "
                      "directory's tokenizer_config.json), else lowercase (the original ALBERT models are).")
    flags.DEFINE_bool("force", False, "Convert with a --do_lower_case that contradicts the source's record.")
    flags.DEFINE_bool("overwrite", False, "Replace an earlier conversion in --output once the new one is complete "
                      "(default false: refuse a non-empty directory). A directory holding anything convert did not "
                      "write is refused even with it.")


FLAGS = flags.FLAGS

_SPM_NAMES = {"albert_tf": "spm.model", "huggingface": "spiece.model", "tf1": "30k-clean.model"}


def read_source(source_format, path, albert_config=None):
    """(AlbertConfig, {original name: array}, spm model path or None, {recorded preprocessing}) from any format.

    The recorded preprocessing: "lower_case" and "max_seq_length" where the source says them
    (albert_tf.json; a Hugging Face tokenizer_config.json's do_lower_case).
    """
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.checkpoints import huggingface_format, tf1_format
    from albert_tf.checkpoints.assign import CheckpointMismatchError, read_model_tensors
    from albert_tf.models.model_dir import load_model, spm_model_path

    if source_format == "albert_tf":
        model, metadata = load_model(path)
        if metadata["model"] not in ("encoder", "pretrainer"):
            raise ValueError(f"{path}: a {metadata['model']!r} model; only encoders and pretrainers convert")
        directory = path if os.path.isdir(path) else os.path.dirname(path)
        recorded = {key: metadata[key] for key in ("lower_case", "max_seq_length") if key in metadata}
        return model.albert_config, read_model_tensors(model), spm_model_path(directory), recorded
    if source_format == "huggingface":
        config, tensors, unmapped = huggingface_format.read_huggingface_dir(path)
        if unmapped:
            raise CheckpointMismatchError(path, unmapped=unmapped)
        spm = os.path.join(path, "spiece.model")
        # A link (a Hugging Face cache snapshot links into blobs/) is followed and checked when it is copied.
        return config, tensors, spm if os.path.lexists(spm) else None, huggingface_format.recorded_casing(path)
    prefix = tf1_format.resolve_tf1_checkpoint(path)
    config_source = albert_config or os.path.join(os.path.dirname(prefix), tf1_format.ORIGINAL_CONFIG_FILE)
    if not albert_config and not os.path.isfile(config_source):
        raise FileNotFoundError(f"{config_source}: not found; pass --albert_config=PATH or a preset name")
    return AlbertConfig.from_name_or_path(config_source), tf1_format.read_tf1_checkpoint(prefix), None, {}


def build_checked_model(config, tensors, source, init_missing_heads=False):
    """(model, kind, heads left initialized): the model that holds `tensors`, fully checked."""
    from albert_tf.checkpoints.assign import check_and_assign, has_pretraining_heads
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.networks.albert_encoder import AlbertEncoder

    with_heads = has_pretraining_heads(tensors)
    model = AlbertPretrainer(config) if with_heads else AlbertEncoder(config)
    initialized = check_and_assign(model, tensors, source, initialize_missing_heads=init_missing_heads)
    return model, "pretrainer" if with_heads else "encoder", initialized


def convert(source_format, target_format, input_path, output_dir, albert_config=None, spm_model_file=None,
            init_missing_heads=False, overwrite=False, do_lower_case=None, force=False):
    """Converts and writes; returns a dict summary. Nothing is written on failure.

    The casing (and, from an albert_tf source, the sequence length) travels with the model:
    `do_lower_case` None takes the source's record (albert_tf.models.preprocessing_contract).

    For Hugging Face with a SentencePiece model, tokenizer.json and
    tokenizer_config.json are written too (`AutoTokenizer` loads them without
    converting spiece.model, which would need protobuf 7).
    """
    from albert_tf.checkpoints import huggingface_format, huggingface_tokenizer, tf1_format
    from albert_tf.checkpoints.assign import read_model_tensors
    from albert_tf.models.model_dir import SPM_MODEL_FILE, write_model_dir
    from albert_tf.models.preprocessing_contract import resolve_preprocessing
    from albert_tf.file_utils import check_replaceable, staged_directory
    from albert_tf.text.albert_tokenizer import copy_spm_model, read_spm_model

    if source_format == target_format:
        raise ValueError(f"--from and --to are both {source_format!r}; nothing to convert")
    check_replaceable(output_dir, overwrite)
    config, tensors, source_spm, recorded = read_source(source_format, input_path, albert_config)
    preprocessing = resolve_preprocessing({**recorded, "albert_config": config.to_dict()}, do_lower_case, force=force,
                                          source=input_path)
    for warning in preprocessing.warnings:
        print(f"Warning: {warning}.", flush=True)
    recorded = {**recorded, "lower_case": preprocessing.lower_case}
    spm_model_file = spm_model_file or source_spm
    if spm_model_file:
        read_spm_model(spm_model_file)  # resolved and checked before the weights are converted
    model, kind, initialized = build_checked_model(config, tensors, input_path, init_missing_heads)

    if target_format == "albert_tf":
        files = {SPM_MODEL_FILE: spm_model_file} if spm_model_file else {}
        write_model_dir(model, output_dir, kind, overwrite=overwrite, files=files, **recorded)
    else:
        tensors = read_model_tensors(model)
        with staged_directory(output_dir, overwrite=overwrite) as staging:
            if target_format == "huggingface":
                huggingface_format.write_huggingface_dir(config, tensors, staging, with_heads=kind == "pretrainer")
            else:
                tf1_format.write_tf1_checkpoint(tensors, os.path.join(staging, "model.ckpt"))
                config.to_json_file(os.path.join(staging, tf1_format.ORIGINAL_CONFIG_FILE))
            if spm_model_file:
                copy_spm_model(spm_model_file, os.path.join(staging, _SPM_NAMES[target_format]))
                if target_format == "huggingface":
                    huggingface_tokenizer.write_tokenizer_files(
                        spm_model_file, staging, model_max_length=config.max_position_embeddings,
                        lower_case=preprocessing.lower_case)
    return {
        "kind": kind,
        "tensors": len(tensors),
        "parameters": int(sum(v.size for v in tensors.values())),
        "initialized_heads": initialized,
        "output": os.path.abspath(output_dir),
        "lower_case": preprocessing.lower_case,
    }


def main(argv):
    del argv
    source_format = FLAGS["from"].value
    for name in ("from", "input", "output"):
        if FLAGS[name].value is None:
            raise app.UsageError(f"--{name} is required")
    summary = convert(
        source_format,
        FLAGS.to,
        FLAGS.input,
        FLAGS.output,
        albert_config=FLAGS.albert_config,
        spm_model_file=FLAGS.spm_model_file,
        init_missing_heads=FLAGS.init_missing_heads,
        overwrite=FLAGS.overwrite,
        do_lower_case=FLAGS.do_lower_case,
        force=FLAGS.force,
    )
    print(
        f"Converted {source_format} -> {FLAGS.to}: a {summary['kind']} with {summary['tensors']} tensors, "
        f"{summary['parameters']:,} parameters ({'lowercased' if summary['lower_case'] else 'cased'} text), written to "
        f"{summary['output']}."
    )
    if summary["initialized_heads"]:
        print("Not in the source, freshly initialized: " + ", ".join(summary["initialized_heads"]))
    return 0


def console_main():
    """The `albert-convert` console script."""
    cli.run(main, define_flags)


if __name__ == "__main__":
    console_main()
