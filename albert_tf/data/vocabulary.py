"""Training a SentencePiece unigram vocabulary with ALBERT's special ids.

<pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4 and the original's user-defined
symbols, trained on text preprocessed exactly as AlbertTokenizer preprocesses it
(lowercased unless asked otherwise, accents stripped), as the original 30k-clean model was. Lines are
streamed to the trainer, which keeps a uniform random sample of
`input_sentence_size` sentences (reservoir sampling), so memory stays bounded;
the seed makes that sample and the model reproducible. The model appears only
once complete (trained in a staging directory, then renamed).
"""

import os
import shutil

from albert_tf.settings import SettingError, SettingFileExists

# From the ALBERT README's spm_train command for 30k-clean.model.
ORIGINAL_USER_DEFINED_SYMBOLS = ["(", ")", '"', "-", ".", "–", "£", "€"]


def preprocessed_sentences(paths, input_format, stats, lower_case=True, keep_accents=False):
    """Yields preprocessed, non-empty sentences of `paths`, counting into `stats`."""
    from albert_tf.data.corpus_reader import iter_file_lines
    from albert_tf.text.preprocessing import preprocess_text
    from albert_tf.text.sentence_splitter import split_sentences

    for path in paths:
        for line in iter_file_lines(path, stats):
            units = split_sentences(line) if input_format == "paragraphs" else [line]
            for unit in units:
                text = preprocess_text(unit, lower_case=lower_case, keep_accents=keep_accents)
                if text:
                    stats.sentences += 1
                    yield text


def _last_sentence(message):
    """SentencePiece's own explanation, without its source location."""
    return message.rsplit("]", 1)[-1].strip()


def train(paths, output_prefix, vocab_size=30000, input_format="sentences", input_sentence_size=10_000_000,
          character_coverage=0.99995, user_defined_symbols=ORIGINAL_USER_DEFINED_SYMBOLS,
          hard_vocab_limit=True, seed=12345, num_threads=1, overwrite=False, lower_case=True, keep_accents=False):
    """Trains and writes OUTPUT_PREFIX.{model,vocab}; returns a stats dict.

    `lower_case`: train on lowercased text (a lowercase vocabulary, as 30k-clean) or on the text's
    own casing (a cased vocabulary). The pieces themselves record which
    (`albert_tokenizer.vocabulary_casing`), and the data tool refuses data of the other casing.
    `keep_accents`: keep accents instead of stripping them as the original does (then make the data with
    the same setting).

    Refuses to replace an existing PREFIX.model or PREFIX.vocab unless `overwrite`:
    data sets and checkpoints made with the old model would no longer match it.
    """
    import sentencepiece

    from albert_tf.data.corpus_reader import CorpusStats

    existing = [f"{output_prefix}.{extension}" for extension in ("model", "vocab")
                if os.path.exists(f"{output_prefix}.{extension}")]
    if existing and not overwrite:
        raise SettingFileExists(f"{existing[0]} exists (data made with it would no longer match): choose another "
                                "<output_prefix> or pass <overwrite>")
    stats = CorpusStats()
    output_dir = os.path.dirname(os.path.abspath(output_prefix))
    os.makedirs(output_dir, exist_ok=True)
    sentencepiece.set_random_generator_seed(seed)
    # The model records the prefix it was trained to; a staging name derived
    # from the output (not a random temp name) keeps the bytes reproducible.
    staging = os.path.join(output_dir, f".{os.path.basename(output_prefix)}.spm-staging")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    try:
        staged_prefix = os.path.join(staging, "spm")
        try:
            sentencepiece.SentencePieceTrainer.train(
                sentence_iterator=preprocessed_sentences(paths, input_format, stats, lower_case, keep_accents),
                model_prefix=staged_prefix,
                model_type="unigram",
                vocab_size=vocab_size,
                pad_id=0,
                unk_id=1,
                bos_id=-1,
                eos_id=-1,
                control_symbols=["[CLS]", "[SEP]", "[MASK]"],
                user_defined_symbols=user_defined_symbols,
                input_sentence_size=input_sentence_size,
                shuffle_input_sentence=True,
                character_coverage=character_coverage,
                hard_vocab_limit=hard_vocab_limit,
                # Paragraph-long "sentences" stay in the sample instead of being dropped.
                max_sentence_length=1 << 16,
                num_threads=num_threads,
                minloglevel=2,
            )
        except RuntimeError as error:
            message = str(error).strip()
            if stats.sentences == 0 or "!sentences_.empty()" in message:
                raise ValueError(f"no text in {', '.join(paths)}: nothing to train a vocabulary on") from None
            if "smaller than required_chars" in message:
                raise SettingError(
                    f"<vocab_size>={vocab_size} is too small: the corpus's characters and the special pieces "
                    f"alone need more ({_last_sentence(message)}); pass a larger <vocab_size>, or lower "
                    "<character_coverage>") from None
            if "Vocabulary size too high" in message:
                raise SettingError(
                    f"the corpus is too small for <vocab_size>={vocab_size} ({_last_sentence(message)}); "
                    "pass a smaller <vocab_size> or <hard_vocab_limit>=False") from None
            raise ValueError(f"SentencePiece training failed: {message}") from None
        if stats.sentences == 0:
            raise ValueError(f"no text in {', '.join(paths)}: nothing to train a vocabulary on")
        for extension in ("model", "vocab"):
            os.replace(f"{staged_prefix}.{extension}", f"{output_prefix}.{extension}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return stats
