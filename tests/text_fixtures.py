"""Small corpora, data files and SentencePiece models the tests make themselves."""

import gzip
import json
import random

WORDS = (
    "the of and to in is was that for it with as his on be at by had are but from or have an they which one "
    "you were her all she there would their we him been has when who will more no if out so said what up its "
    "about into than them can only other new some could time these two may then do first any my now such like "
    "our over man me even most made after also did many before must through back years where much your way "
    "well down should because each just those people mr how too little state good very make world still own "
    "see men work long get here between both life being under never day same another know while last might "
    "us great old year off come since against go came right used take three river garden window morning "
    "letter evening mountain village question answer country island summer winter bridge market"
).split()

SPECIAL_LINES = [
    "Café déjà vu: naïve coöperation, Ångström and Œuvre.",
    "``Quoted,'' she said -- ``twice''.",
    "Prices rose 3.0, 12, 1,000,000, and 7,5 units; version 2.1, not 2.10,",
    "Tabs\tand   many   spaces,\u00a0non-breaking\u2003em space\u3000ideographic.",
    "東京と大阪は日本の都市です。 北京欢迎你！",
    "Emoji 😀🎉 and symbols ™ © ½ ﬁ ligatures.",
    "İstanbul ΟΔΟΣ Straße ǅ Ⅻ — Greek and Turkish.",
]


def random_sentence(rng, min_words=4, max_words=18):
    words = [rng.choice(WORDS) for _ in range(rng.randint(min_words, max_words))]
    if rng.random() < 0.2:
        words.insert(rng.randrange(len(words)), f"{rng.randint(1, 999)},")
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice([".", ".", ".", "?", "!"])


def write_corpus(path, num_documents=12, seed=0, sentences=(3, 40), paragraphs=False):
    """A sentence-per-line (or paragraph-per-line) corpus with blank lines between documents."""
    rng = random.Random(seed)
    lines = []
    for document in range(num_documents):
        count = rng.randint(*sentences)
        sentences_of_document = [random_sentence(rng) for _ in range(count)]
        if document % 4 == 0:
            sentences_of_document.insert(0, SPECIAL_LINES[document // 4 % len(SPECIAL_LINES)])
        if paragraphs:
            for start in range(0, len(sentences_of_document), 4):
                lines.append(" ".join(sentences_of_document[start : start + 4]))
        else:
            lines.extend(sentences_of_document)
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def train_small_spm(tmp_path_factory, name="spm", vocab_size=400, lower_case=True, keep_accents=False):
    from albert_tf.data.vocabulary import train

    directory = tmp_path_factory.mktemp(name)
    corpus = write_corpus(directory / "corpus.txt", num_documents=40, seed=1)
    with open(corpus, "a", encoding="utf-8") as f:
        f.write("\n" + "\n".join(SPECIAL_LINES * 3) + "\n")
    prefix = directory / "spm"
    train([str(corpus)], str(prefix), vocab_size=vocab_size, hard_vocab_limit=False, num_threads=1,
          lower_case=lower_case, keep_accents=keep_accents)
    return prefix.with_suffix(".model")


def corpus_files_and_vocabulary(tmp_path_factory, name):
    """(sorted paths, SentencePiece model path): three small corpus files and an empty one, as the Beam
    pipeline's tests feed every runner, and a vocabulary trained for them."""
    directory = tmp_path_factory.mktemp(name)
    paths = [str(write_corpus(directory / f"part{i}.txt", num_documents=8, seed=10 + i)) for i in range(3)]
    (directory / "empty.txt").write_text("")
    return sorted(paths + [str(directory / "empty.txt")]), str(train_small_spm(tmp_path_factory, f"{name}_spm"))



def tiny_pretrained_checkpoint(tmp_path_factory):
    """An albert_tiny pretrainer (random weights) over `train_small_spm`'s vocabulary, with its spm.model: the
    starting model of the fine-tuning tests."""
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    spm = train_small_spm(tmp_path_factory)
    config = AlbertConfig.from_preset("albert_tiny", vocab_size=AlbertTokenizer(str(spm)).vocab_size)
    return write_model_dir(AlbertPretrainer(config), str(tmp_path_factory.mktemp("ckpt") / "pretrained"), "pretrainer",
                           files={"spm.model": str(spm)})


def write_data_file(path, text, encoding="utf-8"):
    """Writes `text` (str in `encoding`, or bytes) to `path`, gzipped where its name ends in .gz; returns the
    path as a string."""
    data = text.encode(encoding) if isinstance(text, str) else text
    if str(path).endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return str(path)


def jsonl(rows):
    """JSON Lines text of `rows`."""
    return "".join(json.dumps(row) + "\n" for row in rows)
