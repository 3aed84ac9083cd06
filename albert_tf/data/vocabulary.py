"""Training a SentencePiece unigram vocabulary with ALBERT's special ids.

<pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4 and the original's user-defined
symbols, trained on text preprocessed exactly as AlbertTokenizer preprocesses it
(lowercased unless asked otherwise, accents stripped), as the original 30k-clean model was; accents are
kept instead where stripping would change what the text says (Japanese kana, Indic, Arabic, Hebrew or
Thai text: `choose_keep_accents`), unless the caller decides. Lines are
streamed to the trainer, which keeps a uniform random sample of
`input_sentence_size` sentences (reservoir sampling), so memory stays bounded;
the seed makes that sample and the model reproducible. The model appears only
once complete (trained in a staging directory, then renamed).
"""

import collections
import dataclasses
import os
import shutil
import unicodedata

from albert_tf.data import marked_scripts
from albert_tf.data.corpus_reader import CorpusStats
from albert_tf.settings import SettingError, SettingFileExists

# From the ALBERT README's spm_train command for 30k-clean.model.
ORIGINAL_USER_DEFINED_SYMBOLS = ["(", ")", '"', "-", ".", "–", "£", "€"]
# The characters counted to find what --character_coverage dropped: the corpus's first 16M (about a second
# of counting), a sample that bounds the time on big corpora.
CHARACTER_SAMPLE = 1 << 24
_DROPPED_SHOWN = 5


@dataclasses.dataclass
class VocabularyStats(CorpusStats):
    """What vocabulary training read (CorpusStats), and the characters of the text it trained on: counted on
    the first CHARACTER_SAMPLE, and those of them no piece holds (dropped by character_coverage: <unk>)."""

    character_counts: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    characters_counted: int = 0
    dropped_characters: list = dataclasses.field(default_factory=list)  # [(character, count)], most frequent first
    keep_accents: bool = False  # what the vocabulary was trained with
    accents_chosen: str = None  # the line that says why, where train chose it (keep_accents=None)

    def count_characters(self, text):
        if self.characters_counted < CHARACTER_SAMPLE:
            # As the model sees them: NFC composes the Hangul syllables that NFKD (accent stripping) split into
            # jamo, as the model's own NFKC normalizer does; counted apart, each jamo would look like an <unk>.
            seen = text if text.isascii() else unicodedata.normalize("NFC", text)
            self.character_counts.update(seen)
            self.characters_counted += len(seen)  # the report's total: the same characters as its counts

    def find_dropped(self, model):
        """Notes the counted characters that no piece of `model` (a SentencePieceProcessor) holds, once the
        model's own normalization has run on them (as it does on the text)."""
        covered = set("".join(_text_pieces(model)))
        self.dropped_characters = [
            (char, count) for char, count in self.character_counts.most_common()
            if not set(model.normalize(char)) - {"\u2581"} <= covered]  # ▁ is a space, never dropped

    def problems(self):
        lines = super().problems()
        if self.dropped_characters:
            lines.append(self._dropped_line())
        return lines

    def _dropped_line(self):
        occurrences = sum(count for _, count in self.dropped_characters)
        shown = ", ".join(f"{char!r} {count:,}" for char, count in self.dropped_characters[:_DROPPED_SHOWN])
        more = len(self.dropped_characters) - _DROPPED_SHOWN
        counted = ("the text's" if self.characters_counted < CHARACTER_SAMPLE else "the first") + \
            f" {self.characters_counted:,} characters"
        return (f"--character_coverage left {len(self.dropped_characters):,} character(s) out of the vocabulary "
                f"(each becomes <unk>): {shown}{f' and {more:,} more' if more > 0 else ''}; {occurrences:,} of "
                f"{counted} ({occurrences / self.characters_counted:.3%})")


def preprocessed_sentences(paths, input_format, stats, lower_case=True, keep_accents=False, pre_segmented=False):
    """Yields preprocessed, non-empty sentences of `paths`, counting into `stats` (a VocabularyStats): where
    accents are stripped, also the characters that rewrites in scripts whose marks carry meaning.
    `pre_segmented`: Chinese or Japanese text whose words a segmenter separated with spaces, trained on without
    those spaces (the text the data tool's --pre_segmented tokenizes)."""
    from albert_tf.data.corpus_reader import iter_file_lines
    from albert_tf.text.preprocessing import preprocess_text
    from albert_tf.text.segmented_text import join_words
    from albert_tf.text.sentence_splitter import split_sentences

    for path in paths:
        for line in iter_file_lines(path, stats):
            if pre_segmented:
                line = join_words(line)[0]
            units = split_sentences(line) if input_format == "paragraphs" else [line]
            for unit in units:
                if not keep_accents:
                    stats.count_marked(unit)
                text = preprocess_text(unit, lower_case=lower_case, keep_accents=keep_accents)
                if text:
                    stats.sentences += 1
                    stats.count_characters(text)
                    yield text


def choose_keep_accents(paths):
    """(keep_accents, the line that says why): keep accents where stripping them would rewrite
    marked_scripts.KEEP_ACCENTS_SHARE or more of the first CHARACTER_SAMPLE characters of `paths` (kana's
    dakuten and the like, as the model would see the text); strip them, as the original does, otherwise."""
    from albert_tf.data.corpus_reader import iter_file_lines

    counts, characters = collections.Counter(), 0
    for path in paths:
        for line in iter_file_lines(path, CorpusStats()):
            marked_scripts.count_marked(line, counts)
            characters += len(line)
            if characters >= CHARACTER_SAMPLE:
                break
        if characters >= CHARACTER_SAMPLE:
            break
    rewritten = sum(counts.values())
    scripts = ", ".join(f"{script} {count:,}" for script, count in counts.most_common())
    if marked_scripts.keeps_meaningful_marks(counts, characters):
        return True, (f"accents kept: stripping them (the original's rule) would rewrite {rewritten:,} of the text's "
                      f"{'first ' if characters >= CHARACTER_SAMPLE else ''}{characters:,} characters "
                      f"({rewritten / characters:.1%}; {scripts}; が would become か); --nokeep_accents strips them")
    return False, None


def _remembering_errors(sentences, errors):
    """`sentences`, noting in `errors` what reading them raised (SentencePiece re-raises it as its RuntimeError)."""
    try:
        yield from sentences
    except Exception as error:
        errors.append(error)
        raise


def _text_pieces(model):
    """The pieces of a SentencePiece model that text can become (not <unk> nor the control pieces)."""
    return [model.id_to_piece(i) for i in range(model.get_piece_size())
            if not (model.is_unknown(i) or model.is_control(i))]


def _last_sentence(message):
    """SentencePiece's own explanation, without its source location."""
    return message.rsplit("]", 1)[-1].strip()


def train(paths, output_prefix, vocab_size=30000, input_format="sentences", input_sentence_size=10_000_000,
          character_coverage=0.99995, user_defined_symbols=ORIGINAL_USER_DEFINED_SYMBOLS,
          hard_vocab_limit=True, seed=12345, num_threads=1, overwrite=False, lower_case=True, keep_accents=None,
          pre_segmented=False):
    """Trains and writes OUTPUT_PREFIX.{model,vocab}; returns its VocabularyStats.

    `lower_case`: train on lowercased text (a lowercase vocabulary, as 30k-clean) or on the text's
    own casing (a cased vocabulary). The pieces themselves record which
    (`albert_tokenizer.vocabulary_casing`), and the data tool refuses data of the other casing.
    `keep_accents`: keep accents instead of stripping them as the original does; None (the default) keeps them
    where stripping would change what the text says (`choose_keep_accents`), and the returned stats say so. The
    vocabulary's pieces record the choice (`albert_tokenizer.vocabulary_has_accents`), and the data tool
    follows it. `pre_segmented`: as `preprocessed_sentences`.

    Refuses to replace an existing PREFIX.model or PREFIX.vocab unless `overwrite`:
    data sets and checkpoints made with the old model would no longer match it.
    """
    import sentencepiece

    existing = [f"{output_prefix}.{extension}" for extension in ("model", "vocab")
                if os.path.exists(f"{output_prefix}.{extension}")]
    if existing and not overwrite:
        raise SettingFileExists(f"{existing[0]} exists (data made with it would no longer match): choose another "
                                "<output_prefix> or pass <overwrite>")
    accents_chosen = None
    if keep_accents is None:
        keep_accents, accents_chosen = choose_keep_accents(paths)
    stats = VocabularyStats(keep_accents=bool(keep_accents), accents_chosen=accents_chosen)
    output_dir = os.path.dirname(os.path.abspath(output_prefix))
    os.makedirs(output_dir, exist_ok=True)
    sentencepiece.set_random_generator_seed(seed)
    # The model records the prefix it was trained to; a staging name derived
    # from the output (not a random temp name) keeps the bytes reproducible.
    staging = os.path.join(output_dir, f".{os.path.basename(output_prefix)}.spm-staging")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    reading_errors = []
    try:
        staged_prefix = os.path.join(staging, "spm")
        try:
            sentencepiece.SentencePieceTrainer.train(
                sentence_iterator=_remembering_errors(
                    preprocessed_sentences(paths, input_format, stats, lower_case, keep_accents, pre_segmented),
                    reading_errors),
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
            if reading_errors:  # the corpus's own error (a file named), which SentencePiece wraps in its words
                raise reading_errors[0] from None
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
        stats.find_dropped(sentencepiece.SentencePieceProcessor(model_file=f"{staged_prefix}.model"))
        for extension in ("model", "vocab"):
            os.replace(f"{staged_prefix}.{extension}", f"{output_prefix}.{extension}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return stats
