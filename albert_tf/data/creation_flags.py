"""The command-line face of `CreationConfig`: the flags that determine pretraining data, and the config
they make. The local tool (albert_tf.create_pretraining_data) and the Beam pipeline
(pipelines/create_pretraining_data.py) define the same flags from here, so the same
command line gives the same bytes from either."""

from absl import flags


def define_data_flags():
    """The flags that determine the data (shared with the Beam pipeline)."""
    flags.DEFINE_list("input_file", None, "Input text files (.gz read decompressed): comma-separated globs. "
                      "Format: see --input_format.")
    flags.DEFINE_string("output_file", None, "Output prefix: writes PREFIX-NNNNN-of-NNNNN.tfrecord[.gz] and "
                        "PREFIX.metadata.json.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model (from albert_tf.train_sentencepiece or the "
                        "original 30k-clean.model). Pass it or --vocab_file.")
    flags.DEFINE_string("vocab_file", None, "A WordPiece vocab.txt in BERT's layout, instead of --spm_model_file: "
                        "the vocabulary of Google's Chinese ALBERTs (vocab_chinese.txt) and of brightmart's, ckiplab's "
                        "and kykim's models, or one from albert_tf.data.wordpiece_vocabulary. Text is tokenized as "
                        "BERT's FullTokenizer does (Chinese characters one per piece; accents stripped when "
                        "lowercasing, unless --keep_accents); a piece starts a word unless it begins with ##, as the "
                        "original's whole-word masking reads it; [CLS], [SEP] and [MASK] are the file's own lines.")
    flags.DEFINE_enum("input_format", "sentences", ["sentences", "paragraphs"], "'sentences': one sentence per "
                      "line, blank line between documents (the original). 'paragraphs': one paragraph per line, "
                      "split into sentences; blank line between documents.")
    flags.DEFINE_bool("pre_segmented", False, "Chinese or Japanese input whose words a segmenter separated with "
                      "spaces (jieba, MeCab -Owakati, ...): a space next to a Han, kana or full-width character "
                      "marks a word boundary and is removed before tokenizing (the pieces are the unsegmented "
                      "text's; a space between two other words, Latin ones say, stays), and whole-word masking "
                      "masks those words whole. Without it every piece holding a Han or kana character is a word "
                      "of its own, as in the original. Needs --output_format=instances.")
    flags.DEFINE_bool("do_lower_case", True, "Lowercase the input, as the original (accents as --keep_accents "
                      "says). --nodo_lower_case needs a cased vocabulary (train_sentencepiece "
                      "--nodo_lower_case): a vocabulary of the other casing is refused.")
    flags.DEFINE_bool("keep_accents", None, "Keep accents (the original strips them, which also drops kana's "
                      "dakuten: the summary counts such text). Default: as the vocabulary was trained (its pieces "
                      "say: train_sentencepiece keeps accents for kana, Indic, Arabic, Hebrew or Thai text); "
                      "--nokeep_accents with a vocabulary trained with them kept is refused. Recorded, and every "
                      "later tool keeps them too.")
    flags.DEFINE_integer("max_seq_length", 512, "Tokens per sequence, [CLS] and [SEP]s included (original: 512).")
    flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence at most (original: 20). "
                         "Note: 20 at max_seq_length 512 masks only ~4% of tokens; for the paper's 15% use "
                         "round(0.15 * max_seq_length), e.g. 77 at 512, 20 at 128. 20 is kept as the default "
                         "only to reproduce the original.")
    flags.DEFINE_float("masked_lm_prob", 0.15, "Fraction of tokens to mask, before the cap above.")
    flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter random target length (original: 0.1).")
    flags.DEFINE_integer("dupe_factor", 40, "Times each document is used, with different masks (original: 40).")
    flags.DEFINE_integer("ngram", 3, "Longest masked n-gram, in words (original: 3).")
    flags.DEFINE_bool("favor_shorter_ngram", True, "p(n) proportional to 1/n (6/11, 3/11, 2/11); off reverses it.")
    flags.DEFINE_bool("do_whole_word_mask", True, "Mask whole words (all pieces of a word together).")
    flags.DEFINE_bool("random_next_sentence", False, "NSP instead of SOP: B is a random other document's "
                      "segment with probability 0.5 (label 1), the paper's Table 5 ablation.")
    flags.DEFINE_enum("single_segment", "split", ["split", "other_document"], "A chunk of one sentence: split "
                      "it at a random word boundary (pure SOP, default), or take B from a random other document "
                      "(the original's behaviour, which mixes NSP negatives into SOP data).")
    flags.DEFINE_integer("random_document_pool", 100, "Other-document segments (NSP, --single_segment="
                         "other_document) come from the same pool of this many consecutive documents of a file.")
    flags.DEFINE_integer("random_seed", 12345, "Seed; the same seed gives byte-identical output.")
    flags.DEFINE_integer("num_output_shards", 1, "Output files. Any shard size works: the local tool sorts a "
                         "shard in runs of 128 MiB of examples and merges them, the Beam pipeline merges sorted spool "
                         "files, so memory stays flat either way.")
    flags.DEFINE_enum("compression", "none", ["none", "gzip"], "Output TFRecord compression.")
    flags.DEFINE_integer("max_line_bytes", 1 << 20, "Lines longer than this are skipped (and counted).")
    flags.DEFINE_integer("max_document_sentences", 100_000, "Documents longer than this many sentences (e.g. a "
                         "file without blank lines) are cut into parts (and counted).")
    flags.DEFINE_enum("output_format", "instances", ["instances", "documents"], "instances: masked pairs, every "
                      "document --dupe_factor times (the original's format). documents: the tokenized documents once "
                      "(no dupe factor; a fraction of the disk); run_pretraining makes new pairs and masks from them "
                      "every epoch with this run's settings, epoch 0 exactly as instances at --dupe_factor=1.")
    flags.DEFINE_integer("heldout_every", 0, "Also write a held-out set: every Nth document of each input file "
                         "(index N-1, 2N-1, ...) is left out of the training output and made into instances once, "
                         "at PREFIX-heldout-*, for run_pretraining --eval_input_file. 0: none.")
    flags.DEFINE_bool("overwrite", False, "Replace existing outputs with this prefix.")


def vocabulary_setting(FLAGS):
    """(kind, path) of the vocabulary the flags name: --spm_model_file or --vocab_file, exactly one."""
    from albert_tf.settings import SettingError
    from albert_tf.text.vocabularies import SENTENCEPIECE, WORDPIECE

    if FLAGS.spm_model_file and FLAGS.vocab_file:
        raise SettingError("pass <spm_model_file> (a SentencePiece model) or <vocab_file> (a WordPiece vocab.txt), "
                           "not both")
    if not (FLAGS.spm_model_file or FLAGS.vocab_file):
        raise SettingError("<spm_model_file> (a SentencePiece model) or <vocab_file> (a WordPiece vocab.txt) is "
                           "required")
    return (WORDPIECE, FLAGS.vocab_file) if FLAGS.vocab_file else (SENTENCEPIECE, FLAGS.spm_model_file)


def _keep_accents(FLAGS):
    """--keep_accents, or where it is left out what the vocabulary was trained with: its pieces say."""
    from albert_tf.text.albert_tokenizer import vocabulary_has_accents
    from albert_tf.text.vocabularies import Vocabulary

    if FLAGS.keep_accents is not None:
        return FLAGS.keep_accents
    try:
        kind, path = vocabulary_setting(FLAGS)
        return vocabulary_has_accents(Vocabulary.read(path, kind).tokenizer())
    except (OSError, TypeError, ValueError):
        return False  # no readable vocabulary: the tool's own check of its vocabulary names the problem


def config_from_flags(FLAGS):
    """The `CreationConfig` of the parsed flags that define_data_flags defined."""
    from albert_tf.data.masking import MaskingConfig
    from albert_tf.data.pretraining_data_job import CreationConfig
    from albert_tf.data.pretraining_instances import InstanceConfig

    return CreationConfig(
        instances=InstanceConfig(
            max_seq_length=FLAGS.max_seq_length,
            short_seq_prob=FLAGS.short_seq_prob,
            dupe_factor=FLAGS.dupe_factor,
            random_next_sentence=FLAGS.random_next_sentence,
            single_segment=FLAGS.single_segment,
            random_document_pool=FLAGS.random_document_pool,
            masking=MaskingConfig(
                masked_lm_prob=FLAGS.masked_lm_prob,
                max_predictions_per_seq=FLAGS.max_predictions_per_seq,
                ngram=FLAGS.ngram,
                favor_shorter_ngram=FLAGS.favor_shorter_ngram,
                do_whole_word_mask=FLAGS.do_whole_word_mask,
            ),
        ),
        seed=FLAGS.random_seed,
        num_output_shards=FLAGS.num_output_shards,
        compression=FLAGS.compression,
        input_format=FLAGS.input_format,
        lower_case=FLAGS.do_lower_case,
        keep_accents=_keep_accents(FLAGS),
        max_line_bytes=FLAGS.max_line_bytes,
        max_document_sentences=FLAGS.max_document_sentences,
        output_format=FLAGS.output_format,
        heldout_every=FLAGS.heldout_every,
        pre_segmented=FLAGS.pre_segmented,
    )
