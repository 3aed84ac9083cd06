r"""Converts ALBERT checkpoints between albert_tf, the original TF1 format and Hugging Face.

  # Google's original checkpoint (model.ckpt-best + albert_config.json) -> albert_tf
  python -m albert_tf.convert --from=tf1 --input=albert_base/model.ckpt-best \
      --spm_model_file=albert_base/30k-clean.model --output=/tmp/albert_base

  # A Hugging Face save_pretrained directory -> albert_tf (spiece.model, or a BertTokenizer's vocab.txt)
  python -m albert_tf.convert --from=huggingface --input=hf_albert/ --output=/tmp/albert

  # Google's Chinese ALBERT (a WordPiece vocab.txt, no SentencePiece model) -> albert_tf
  python -m albert_tf.convert --from=tf1 --input=albert_base_zh/model.ckpt-best \
      --vocab_file=albert_base_zh/vocab_chinese.txt --output=/tmp/albert_base_zh

  # albert_tf -> Hugging Face (load with AutoModelForPreTraining / AutoTokenizer.from_pretrained)
  python -m albert_tf.convert --from=albert_tf --to=huggingface --input=/tmp/albert --output=/tmp/hf

  # A fine-tuned classifier (best/ in run_classifier's --output_dir) -> AlbertForSequenceClassification
  python -m albert_tf.convert --from=albert_tf --to=huggingface --input=/tmp/mnli/best --output=/tmp/hf_mnli

  # An AlbertTokenClassifier (save_to_preset) <-> AlbertForTokenClassification, tag names as id2label
  python -m albert_tf.convert --from=albert_tf --to=huggingface --input=/tmp/ner --output=/tmp/hf_ner

  # A RACE model fine-tuned by the original run_race -> albert_tf (run_race takes it)
  python -m albert_tf.convert --from=tf1 --input=race/model.ckpt-best --model=multiple_choice \
      --albert_config=albert_base_v2 --spm_model_file=albert_base/30k-clean.model --output=/tmp/race_original

  # A SQuAD 2.0 model fine-tuned by the original run_squad_v2 -> albert_tf (run_squad --version=2.0 takes it)
  python -m albert_tf.convert --from=tf1 --input=squad2/model.ckpt-best --albert_config=albert_base_v2 \
      --spm_model_file=albert_base/30k-clean.model --output=/tmp/squad2_original

Every tensor is checked before anything is written: names the model does not
have, variables the source lacks, and shape mismatches are listed together, and
the output directory is created only once the conversion has succeeded.
"""

from absl import flags

from albert_tf import cli
from albert_tf.checkpoints.conversion import FORMATS, check_output, convert


def define_flags():
    flags.DEFINE_enum("from", None, FORMATS, "Format of --input: an albert_tf checkpoint directory (an encoder, "
                      "pretrainer, or a classifier, token classifier, SQuAD or RACE model), a Hugging Face "
                      "save_pretrained directory, or an original TF1 checkpoint prefix/directory (pretrained, or "
                      "fine-tuned by run_classifier, run_squad_v1, run_squad_v2 or run_race).")
    flags.DEFINE_enum("to", "albert_tf", FORMATS, "Format to write to --output.")
    flags.DEFINE_string("input", None, "Checkpoint to read (directory or TF1 checkpoint prefix).")
    flags.DEFINE_string("output", None, "Directory to write; must not exist or be empty unless --overwrite, and may "
                        "not be, lie inside or hold --input or another input.")
    flags.DEFINE_string("albert_config", None, "For --from=tf1: the albert_config.json (preset name or path). "
                        "Default: albert_config.json beside the checkpoint.")
    flags.DEFINE_alias("albert_config_file", "albert_config")  # the original scripts' name
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model to store with the weights (as spm.model "
                        "for albert_tf, spiece.model for Hugging Face, 30k-clean.model for tf1).")
    flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt to store with the weights instead (Google's "
                        "Chinese ALBERTs' vocab_chinese.txt): written as vocab.txt, its bytes as they are, and "
                        "recorded with its casing (--do_lower_case; accents are stripped with lowercasing, as "
                        "BERT's). Not with --spm_model_file. Default: the source's own (an albert_tf directory's "
                        "vocab.txt, a Hugging Face BertTokenizer's vocab.txt).")
    flags.DEFINE_bool("init_missing_heads", False, "Accept a source without some pretraining-head or pooler "
                      "tensors (for example Hugging Face's AlbertForMaskedLM, which has neither SOP classifier nor "
                      "pooler): they keep a fresh random initialization, and the summary lists them. Default: "
                      "such a source fails.")
    flags.DEFINE_bool("do_lower_case", None, "Whether the model's text is lowercased: recorded in albert_tf.json "
                      "(--to=albert_tf) or in the tokenizer files written beside spiece.model or vocab.txt "
                      "(--to=huggingface). "
                      "Default: what the source records (an albert_tf directory's albert_tf.json, a Hugging Face "
                      "directory's tokenizer_config.json), else lowercase (the original ALBERT models are).")
    flags.DEFINE_bool("force", False, "Convert with a --do_lower_case that contradicts the source's record.")
    flags.DEFINE_enum("model", None, ["multiple_choice", "token_classifier"], "multiple_choice: --input is a model "
                      "of the original run_race, whose output_weights [1, H] score each choice; they have the names "
                      "and shape of run_classifier's one-output head, which is what they convert to without it. "
                      "token_classifier: --input is a tf1 checkpoint of a token classifier (run_classifier's names "
                      "on every token, no pooler); a Hugging Face AlbertForTokenClassification says so itself. "
                      "Default: the kind the tensor names say (or an albert_tf directory records).")
    flags.DEFINE_bool("overwrite", False, "Replace an earlier conversion in --output once the new one is complete "
                      "(default false: refuse a non-empty directory). A directory holding anything convert did not "
                      "write is refused even with it.")


FLAGS = flags.FLAGS


def check_flags(argv):
    """What the command line alone decides (cli.run calls it before TensorFlow's import): the flags required,
    and an --output apart from every input (a conversion onto its own --input with --overwrite used to leave
    only the output) that is no directory another albert_tf tool wrote (an export, a run, a data set)."""
    del argv
    for name in ("from", "input", "output"):
        if FLAGS[name].value is None:
            raise ValueError(f"--{name} is required")
    if FLAGS.spm_model_file and FLAGS.vocab_file:
        raise ValueError("pass --spm_model_file (a SentencePiece model) or --vocab_file (a WordPiece vocab.txt), "
                         "not both")
    check_output(FLAGS.output, FLAGS.input, FLAGS.spm_model_file, FLAGS.albert_config, FLAGS.vocab_file)


def main(argv):
    del argv
    source_format = FLAGS["from"].value
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
        model_kind=FLAGS.model,
        vocab_file=FLAGS.vocab_file,
    )
    print(
        f"Converted {source_format} -> {FLAGS.to}: a {summary['kind']} with {summary['tensors']} tensors, "
        f"{summary['parameters']:,} parameters ({describe_preprocessing(summary)}), written to {summary['output']}."
    )
    if summary["initialized_heads"]:
        print("Not in the source, freshly initialized: " + ", ".join(summary["initialized_heads"]))
    return 0


def describe_preprocessing(summary):
    """What the converted model's text preparation is, as the summary line says it: for a WordPiece vocabulary
    its kind, size, casing and accents (quotes are never rewritten there); otherwise the SentencePiece ALBERT
    preprocessing's casing and quote rule."""
    casing = "lowercased" if summary["lower_case"] else "cased"
    if summary.get("vocabulary") == "wordpiece":
        # albert_tf's WordPiece tokenizer strips accents exactly when it lowercases and the model does not keep them.
        accents = "accents stripped" if summary["lower_case"] and not summary["keep_accents"] else "accents kept"
        return f"a WordPiece vocabulary of {summary['vocabulary_size']:,} pieces, {casing} text, {accents}"
    quotes = "`` and '' turned into \"" if summary["rewrite_quotes"] else "`` and '' kept"
    return f"{casing} text, {quotes}"


def console_main():
    """The `albert-convert` console script."""
    cli.run(main, define_flags, check_flags=check_flags)


if __name__ == "__main__":
    console_main()
