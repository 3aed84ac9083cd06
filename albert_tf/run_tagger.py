r"""Fine-tunes ALBERT to tag entities in CoNLL-style files or JSON Lines, in any language: entities are found in
each sentence's text as the served model finds them in raw text (inside runs without spaces too: Chinese,
Japanese, a Korean word with its particle); evaluates every checkpoint as conlleval scores entities, keeps the
best, writes metrics, the files with predicted tags and each sentence's entities.

  python -m albert_tf.run_tagger --train_file=train.conll --eval_file=dev.conll --predict_file=test.conll \
      --init_checkpoint=/ckpt/albert_cased --output_dir=/tmp/ner --do_train --do_eval --do_predict

Files (UTF-8, each optionally .gz): column files (.conll, .iob2, .txt, ...: one token per line, a blank line
between sentences, `#` comment lines, -DOCSTART- lines skipped; KLUE-NER's one character a line, its spaces as
tokens, reads as it is), or JSON Lines (.jsonl, .json: {"tokens": [...], "tags": [...]} per line, an optional
"text"; Hugging Face's {"tokens", "ner_tags"} as `datasets` exports them, integer tags named by --tag_names or
--tag_names_file; other keys by --tokens_key and --tags_key). The token and tag columns (--token_column,
--tag_column, 0-based) are detected where not given: CoNLL-2003's `EU NNP B-NP B-ORG` and CoNLL-U-like
`1<TAB>EU<TAB>B-ORG<TAB>...` both read without flags. Tags in IOB2, IOB1 or BIOES (--scheme, else detected) are
read as IOB2, the scheme the model predicts. The label set is the training file's ("O", then B- and I- of each
type, types sorted), recorded with the model. Bad input is refused before anything is trained or written,
naming the file and line.

Each sentence's text is its `# text =` line (CoNLL-U) or "text" where its tokens are found in it, KLUE-NER's
characters joined, else its tokens joined (a space between words, none between Chinese or Japanese
characters). The text is tokenized whole by the model's own tokenizer (its casing: entity tagging wants a cased
vocabulary, from train_sentencepiece --nodo_lower_case) and its pieces grouped into units: a word, a
punctuation mark, or a piece of text without spaces. Each unit is tagged by the gold entities (character spans)
it overlaps and the loss is on each unit's reading piece; texts longer than --max_seq_length pieces are cut into
overlapping windows (--doc_stride apart) and merged back, each unit read from the window where it has the most
context.

Writes OUTPUT_DIR/checkpoints/ckpt-N (resumable), OUTPUT_DIR/best (the best model by entity F1: an albert_tf
token classifier directory for albert-export and albert-convert), eval_results.json (precision, recall and F1
of entities as character spans, per entity type and overall under "f1", accuracy over the characters; for
KLUE-NER's files KLUE's entity and character macro F1 too), eval_report.txt, eval_predictions.EXT and
predictions.EXT (the input with each token's predicted tag as a last column, which conlleval reads; JSON Lines
gain a "predicted_tags" list), and eval_predictions.entities.jsonl and predictions.entities.jsonl (each
sentence's text and its entities with character offsets, as the served model returns them). Flags and output
layout are those of every fine-tuning tool.
"""

from absl import flags

from albert_tf.settings import field_default
from albert_tf.tasks.tagged_texts import SCHEMES
from albert_tf.training import finetuning_flags

# The task module is imported in the functions: its TensorFlow-using parts, after cli.run has imported
# TensorFlow quietly (past the checks the flags alone decide). The file reader imports no TensorFlow.


def define_tagging_flags():
    from albert_tf.tasks.tagging_task import TaggingConfig

    flags.DEFINE_string("train_file", None, "Tagged training sentences: a column file or .jsonl (optionally .gz).")
    flags.DEFINE_string("eval_file", None, "Tagged sentences evaluated at every checkpoint (--do_eval); their entity "
                        "types must all occur in the training file.")
    flags.DEFINE_string("predict_file", None, "Sentences to tag (--do_predict); tags optional (with them, the "
                        "predictions are scored too).")
    flags.DEFINE_integer("token_column", None, "The column of the tokens, 0-based. Default: detected (the first "
                         "column that is not an index and not the tag column).")
    flags.DEFINE_integer("tag_column", None, "The column of the tags, 0-based. Default: detected (the last column "
                         "where most values are tags: O, or B-/I-/E-/S- and a type).")
    flags.DEFINE_string("tokens_key", None, "JSON Lines: the key of each object's token list. Default: tokens.")
    flags.DEFINE_string("tags_key", None, "JSON Lines: the key of each object's tag list. Default: tags, or ner_tags "
                        "where the first object has no tags key (Hugging Face's token classification data, as "
                        "`datasets` exports it).")
    flags.DEFINE_list("tag_names", None, "JSON Lines whose tags are integer ids (`datasets`' ClassLabel): the tag "
                      "names in id order, comma-separated (O,B-PER,I-PER,...: the ner_tags feature's names). "
                      "Default: none (integer tags are then refused; tags given as names need none).")
    flags.DEFINE_string("tag_names_file", None, "The same names from a file, one a line in id order (line 1 names "
                        "id 0), instead of --tag_names. Default: none.")
    flags.DEFINE_enum("scheme", None, SCHEMES, "The tag scheme of the files, converted to IOB2 on reading. Default: "
                      "detected (bioes where some tag is E- or S-; iob1 where some I- starts an entity; else iob2).")
    flags.DEFINE_integer("doc_stride", None, "Pieces between the starts of a long sentence's windows. Default: half "
                         "a window, so each piece is seen twice.")
    flags.DEFINE_float("dropout", field_default(TaggingConfig, "dropout"), "Dropout before the tag layer "
                       "(original: 0.1).")


def tagging_config():
    from albert_tf.tasks.tagging_task import TaggingConfig

    values = flags.FLAGS
    return TaggingConfig(train_file=values.train_file, eval_file=values.eval_file, predict_file=values.predict_file,
                         token_column=values.token_column, tag_column=values.tag_column, scheme=values.scheme,
                         tokens_key=values.tokens_key, tags_key=values.tags_key,
                         tag_names=tuple(values.tag_names) if values.tag_names is not None else None,
                         tag_names_file=values.tag_names_file,
                         doc_stride=values.doc_stride, dropout=values.dropout)


def console_main():
    """The `albert-run-tagger` console script."""
    from albert_tf.tasks.tagging_task import TaggingTask

    finetuning_flags.run(TaggingTask(), define_tagging_flags, tagging_config)


if __name__ == "__main__":
    console_main()
