r"""Does pretraining on a small Chinese, Japanese or Korean corpus transfer? A small ALBERT pretrained on
../shared/data/corpus_zh_modern (corpus_ja_aozora, corpus_ko_ud_kaist) against the same model from random init,
fine-tuned on the staged CJK sets.

  # stage 1 (hours, resumable: rerun the same command to continue): vocabulary, data, pretraining
  python -m benchmarks.downstream.cjk_transfer --language=zh --stages=pretrain [--work_dir=../cjk_transfer]
  # stage 2: CMRC 2018 from the checkpoint and from random init, and the table (entity tagging: below)
  python -m benchmarks.downstream.cjk_transfer --language=zh --stages=cmrc [--seeds=1]

  # WordPiece against SentencePiece on Chinese (after stage 1): the same recipe with a WordPiece vocab.txt for
  # the SentencePiece run's step count, then both fine-tuned on UNER zh and CMRC 2018 (writes vocabularies_zh)
  python -m benchmarks.downstream.cjk_transfer --language=zh --vocabulary=wordpiece --stages=pretrain
  python -m benchmarks.downstream.cjk_transfer --language=zh --stages=vocabularies --seeds=1,2,3

  # Japanese and Korean: pretraining, then semantic similarity (JSTS, KorSTS: run_text_classifier as a regression,
  # the dev set's Spearman), pretrained against random init (writes sts_LANG). Japanese for the Chinese run's 4,962
  # steps; Korean for 1,000 (its corpus holds 95k pieces, 1/13 of the Chinese one: 4,962 steps of 64 rows of 128
  # would read it about 400 times, 1,000 read it about 80, the Chinese run read its own about 34)
  python -m benchmarks.downstream.cjk_transfer --language=ja --stages=pretrain --train_steps=4962
  python -m benchmarks.downstream.cjk_transfer --language=ja --stages=sts --seeds=1,2,3
  python -m benchmarks.downstream.cjk_transfer --language=ko --stages=pretrain --train_steps=1000
  python -m benchmarks.downstream.cjk_transfer --language=ko --stages=sts --seeds=1,2,3
  # Japanese with accents kept and with the original's stripping (under WORK_DIR/ja_stripped), both for the same
  # steps (1,000 here, in a work dir of their own), then compared: voiced-kana pieces and held-out accuracy at
  # [MASK] (writes accents_ja)
  python -m benchmarks.downstream.cjk_transfer --language=ja --stages=pretrain --train_steps=1000 \
      --work_dir=../cjk_transfer_1k
  python -m benchmarks.downstream.cjk_transfer --language=ja --stages=pretrain --train_steps=1000 --accents=strip \
      --work_dir=../cjk_transfer_1k
  python -m benchmarks.downstream.cjk_transfer --language=ja --stages=accents --work_dir=../cjk_transfer_1k

Pretraining goes through the real CLIs, as benchmarks.learning.pretraining_recipes does (that module's
helpers): every 10th document held out, a SentencePiece vocabulary of 8,000 pieces trained on the rest
(`--input_format=paragraphs`: Chinese and Japanese sentences split at 。！？; accents kept where stripping would
rewrite the text, as the vocabulary tool decides), create_pretraining_data on documents (new sentence-order
pairs and masks every epoch), run_pretraining of albert_small (H 256, E 128, 4 layers) at sequence length 128
(a Chinese character is about one piece, and UNER Chinese's sentences hold 40 on average), batch 64, AdamW
5e-4 with XLA, its schedule fitted to --budget_hours on this machine, the held-out documents evaluated every
500 steps.

Fine-tuning, each from the pretraining checkpoint and from random init (the same config, vocabulary, casing and
recipe):
  - entity tagging, Universal NER Chinese GSDSimp (trained on train, the weights best on dev scored on test),
    beside Hugging Face's AlbertForTokenClassification converted from the same checkpoint: run by
    benchmarks.downstream.tagging (its docstring gives the command for this checkpoint);
  - span QA, CMRC 2018 (--stages=cmrc): run_squad trained on the trial set (1,002 questions) for --cmrc_epochs,
    predicting the dev set (3,219 questions), scored by CMRC 2018's own metric (F1, EM); windows of the length
    pretraining used (128: the position embeddings past it were never trained), half a window apart; writes
    RESULTS_DIR/cmrc2018.{json,md}.

The vocabularies stage (Chinese; Google chose WordPiece for its Chinese ALBERTs, its maintainers reporting that
SentencePiece did worse on reading comprehension): the WordPiece run (--vocabulary=wordpiece, under
WORK_DIR/zh_wordpiece: the same split, a vocab.txt in BERT's layout trained by albert_tf.data.wordpiece_vocabulary
with the SentencePiece model's 8,000 as its size, lowercased as Google's) and the SentencePiece run, each
  - measured for the share of UNER zh entity boundaries and CMRC 2018 answer boundaries that fall inside one of
    its pieces (where no tagger or span labeler of that vocabulary can place them) and its characters per piece;
  - fine-tuned from its checkpoint on UNER Chinese GSDSimp (run_tagger, benchmarks.downstream.tagging's recipe:
    --tagging_epochs, lr 1e-4, batch 32, dev every tenth of the steps, test scored with the weights best on dev)
    and on CMRC 2018 (as stage 2), over --seeds;
and each checkpoint exported as LiteRT files (float32, float16, dynamic int8) and a SavedModel: model.tflite's
ids against the trained ids and its pooled_output cosine against the SavedModel's on held-out lines. Writes
RESULTS_DIR/vocabularies_zh.{json,md}.

Every finished run is kept under WORK_DIR/LANGUAGE and reused when the command is rerun.
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

from benchmarks.common import (REPO, RESULTS, SHARED_DATA, WORK, child_env, cpu_description, markdown_table,
                               portable)
from benchmarks.learning import pretraining_recipes

# The pretraining recipe: albert_small at sequence length 128 on documents, its schedule fitted to a budget.
PRETRAINING = pretraining_recipes.Recipe(
    "small", 128, 20, 1, 64, "adamw", 5e-4, 1000, 200000, "pretrain",
    "albert_small on documents at sequence length 128, the schedule fitted to the budget", True, "documents", 1.5)

# Each language's corpus and its layout (--input_format of the vocabulary and data tools).
Corpus = collections.namedtuple("Corpus", "path input_format")
CORPORA = {"zh": Corpus(os.path.join(SHARED_DATA, "corpus_zh_modern", "corpus_paragraphs.txt"), "paragraphs"),
           "ja": Corpus(os.path.join(SHARED_DATA, "corpus_ja_aozora", "corpus_paragraphs.txt"), "paragraphs"),
           "ko": Corpus(os.path.join(SHARED_DATA, "corpus_ko_ud_kaist", "corpus_sentences.txt"), "sentences")}


def pretrain(work, corpus, budget_hours, steps=0, vocabulary_flags=()):
    """Vocabulary (train_sentencepiece with `vocabulary_flags`), data and the pretraining run under `work` (each
    stage resumes), for `steps` steps or, with none, the step count fitted to `budget_hours`; the run directory."""
    recipe = (PRETRAINING._replace(budget_hours=0.0, steps=steps) if steps
              else PRETRAINING._replace(budget_hours=budget_hours))
    train_text, heldout_text, spm = pretraining_recipes.prepare(work, corpus.path, vocabulary_flags,
                                                                corpus.input_format)
    pretraining_recipes.make_data(work, recipe, (train_text, heldout_text), spm, input_format=corpus.input_format)
    if pretraining_recipes.train(work, recipe, spm) != 0:
        print("run_pretraining stopped; rerun the same command to resume", flush=True)
    return os.path.join(work, "runs", recipe.run)


def sentencepiece_steps(sentencepiece_work):
    """The step count the SentencePiece run's budget was fitted to: the WordPiece run's equal budget."""
    path = os.path.join(sentencepiece_work, "runs", PRETRAINING.run, "run_config.json")
    if not os.path.exists(path):
        sys.exit(f"{path} is missing: pretrain with SentencePiece first (--vocabulary=sentencepiece), whose "
                 "fitted step count the WordPiece run takes as its budget")
    with open(path) as f:
        steps = json.load(f).get("train_budget", {}).get("num_train_steps")
    if not steps:
        sys.exit(f"{path} records no fitted step count (train_budget.num_train_steps): its run has not planned yet")
    return steps


def pretrain_wordpiece(work, corpus, sentencepiece_work):
    """The same corpus split, model and recipe as `pretrain`, with a WordPiece vocab.txt of as many lines as the
    SentencePiece vocabulary has pieces (BERT's layout, lowercased as Google's Chinese vocabulary), trained for the
    SentencePiece run's step count; the run directory."""
    from albert_tf.data.heldout_split import split_documents
    from albert_tf.data.wordpiece_vocabulary import train as train_wordpiece

    train_text, heldout_text = os.path.join(work, "train.txt"), os.path.join(work, "heldout.txt")
    if not os.path.exists(heldout_text):
        split_documents(corpus.path, train_text, heldout_text)
    vocab_file = os.path.join(work, "vocab.txt")
    if not os.path.exists(vocab_file):
        train_wordpiece([train_text], vocab_file, vocab_size=pretraining_recipes.VOCAB_SIZE, lower_case=True)
    config_path = os.path.join(work, f"{PRETRAINING.model}8k.json")
    if not os.path.exists(config_path):
        with open(os.path.join(sentencepiece_work, f"{PRETRAINING.model}8k.json")) as f:
            config = json.load(f)
        with open(vocab_file, encoding="utf-8") as f:
            config["vocab_size"] = sum(1 for _ in f)
        with open(config_path, "w") as f:
            json.dump(config, f, indent=2)
    steps = sentencepiece_steps(sentencepiece_work)
    recipe = PRETRAINING._replace(budget_hours=0.0, steps=steps)
    pretraining_recipes.make_data(work, recipe, (train_text, heldout_text), vocab_file,
                                  input_format=corpus.input_format)
    if pretraining_recipes.train(work, recipe, vocab_file) != 0:
        print("run_pretraining stopped; rerun the same command to resume", flush=True)
    return os.path.join(work, "runs", recipe.run)


def run_tool(command):
    """Runs a fine-tuning tool's command (printed first) from the repository, failing loudly."""
    print("+ " + " ".join(command[1:]), flush=True)
    subprocess.run(command, check=True, cwd=REPO, env=child_env(TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1"))


def cmrc_run(work, start, seed, epochs, pretrained):
    """run_squad trained on CMRC 2018's trial set and predicting its dev set, from `start` ("pretrained": the
    checkpoint `pretrained`; "random init": its config and vocabulary); eval_results.json (kept, reused)."""
    output = os.path.join(work, "cmrc2018", start.replace(" ", "_"), f"seed{seed}")
    results = os.path.join(output, "eval_results.json")
    if not os.path.exists(results):
        data = os.path.join(SHARED_DATA, "cmrc2018")
        vocabulary = next(path for path in (os.path.join(work, name) for name in ("vocab.txt", "spm.model"))
                          if os.path.exists(path))
        init = ([f"--init_checkpoint={pretrained}"] if start == "pretrained" else
                [f"--albert_config={os.path.join(work, 'small8k.json')}",
                 pretraining_recipes.vocabulary_flag(vocabulary), "--do_lower_case"])
        command = [sys.executable, "-m", "albert_tf.run_squad", "--version=1.1", "--do_train", "--do_predict",
                   f"--train_file={data}/cmrc2018_trial.json", f"--predict_file={data}/cmrc2018_dev.json",
                   "--metric=cmrc2018", f"--output_dir={output}", f"--max_seq_length={PRETRAINING.seq_length}",
                   f"--doc_stride={PRETRAINING.seq_length // 2}", "--max_query_length=32",
                   "--train_batch_size=32", "--learning_rate=1e-4", f"--num_train_epochs={epochs}",
                   "--predict_batch_size=64", f"--seed={seed}", "--overwrite", *init]
        run_tool(command)
    with open(results) as f:
        return json.load(f)


def cmrc(work, seeds, epochs, results_dir):
    """Both starts over `seeds` on CMRC 2018; the table."""
    pretrained = os.path.join(work, "runs", PRETRAINING.run)
    figures = {start: [cmrc_run(work, start, seed, epochs, pretrained) for seed in seeds]
               for start in ("pretrained", "random init")}

    def cell(runs, key):
        values = [run[key] for run in runs]
        return f"{statistics.mean(values):.2f}" + (f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else "")

    rows = [[start, str(len(runs)), cell(runs, "f1"), cell(runs, "exact"), cell(runs, "average")]
            for start, runs in figures.items()]
    with open(os.path.join(pretrained, "run_config.json")) as f:
        steps = json.load(f).get("train_budget", {}).get("num_train_steps")
    text = (f"CMRC 2018 (Chinese span extraction): run_squad trained on cmrc2018_trial.json (1,002 questions) for "
            f"{epochs:g} epochs (batch 32, lr 1e-4, seq {PRETRAINING.seq_length} as pretrained, stride "
            f"{PRETRAINING.seq_length // 2}, questions cut to 32 pieces), predicting cmrc2018_dev.json (3,219 "
            f"questions), scored by CMRC 2018's official metric; albert_small pretrained on corpus_zh_modern "
            f"({steps or '?'} planned steps of batch 64, seq 128; the newest checkpoint) and from random init; seeds "
            f"{','.join(map(str, seeds))}; {cpu_description()}.\n\n"
            + markdown_table(["start", "seeds", "F1", "EM", "average"], rows) + "\n")
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "cmrc2018.md"), "w") as f:
        f.write(portable(text))
    with open(os.path.join(results_dir, "cmrc2018.json"), "w") as f:
        json.dump(portable({"runs": figures, "seeds": seeds, "epochs": epochs}), f, indent=1)
    print(text)


# Each language's semantic-similarity set: (title, train file, dev file, run_text_classifier's column flags).
STS_SETS = {
    "ja": ("JSTS (JGLUE v1.3)", os.path.join(SHARED_DATA, "jglue", "jsts-v1.3", "train-v1.3.json"),
           os.path.join(SHARED_DATA, "jglue", "jsts-v1.3", "valid-v1.3.json"),
           ["--text_column=sentence1", "--text_b_column=sentence2", "--label_column=label",
            "--id_column=sentence_pair_id"]),
    "ko": ("KorSTS", os.path.join(SHARED_DATA, "korsts", "sts-train.tsv"),
           os.path.join(SHARED_DATA, "korsts", "sts-dev.tsv"),
           ["--text_column=sentence1", "--text_b_column=sentence2", "--label_column=score", "--id_column=id",
            "--quoting=none"]),
}


def sts_run(work, language, start, seed, epochs, pretrained):
    """run_text_classifier as a regression on the language's STS set (train, its dev set evaluated every tenth of
    the steps, the weights with the best Spearman kept and scored) from `start` ("pretrained": the checkpoint
    `pretrained`; "random init": its config and vocabulary); eval_results.json (kept, reused)."""
    output = os.path.join(work, "sts", start.replace(" ", "_"), f"seed{seed}")
    results = os.path.join(output, "eval_results.json")
    if not os.path.exists(results):
        _, train_file, dev_file, columns = STS_SETS[language]
        init = ([f"--init_checkpoint={pretrained}"] if start == "pretrained" else
                [f"--albert_config={os.path.join(work, PRETRAINING.model + '8k.json')}",
                 pretraining_recipes.vocabulary_flag(os.path.join(work, "spm.model"))])
        command = [sys.executable, "-m", "albert_tf.run_text_classifier", "--do_train", "--do_eval",
                   f"--train_file={train_file}", f"--eval_file={dev_file}", *columns, "--problem_type=regression",
                   "--metric=spearman", f"--output_dir={output}", f"--max_seq_length={PRETRAINING.seq_length}",
                   "--train_batch_size=32", "--learning_rate=1e-4", f"--num_train_epochs={epochs}",
                   "--eval_batch_size=64", f"--seed={seed}", "--overwrite", *init]
        run_tool(command)
    with open(results) as f:
        return json.load(f)


def sts(work, language, seeds, epochs, results_dir):
    """Both starts over `seeds` on the language's STS set; RESULTS_DIR/sts_LANGUAGE.{md,json}."""
    pretrained = os.path.join(work, "runs", PRETRAINING.run)
    if finished_step(pretrained) is None:
        sys.exit(f"{pretrained}: pretraining has not finished; run --language={language} --stages=pretrain to its "
                 "end first")
    figures = {start: [sts_run(work, language, start, seed, epochs, pretrained) for seed in seeds]
               for start in ("pretrained", "random init")}

    def cell(runs, key):
        values = [100 * run[key] for run in runs]
        return f"{statistics.mean(values):.2f}" + (f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else "")

    rows = [[start, str(len(runs)), cell(runs, "spearman"), cell(runs, "pearson")] for start, runs in figures.items()]
    gain = (statistics.mean(run["spearman"] for run in figures["pretrained"])
            - statistics.mean(run["spearman"] for run in figures["random init"]))
    title, train_file, dev_file, _ = STS_SETS[language]
    text = (f"{title}: run_text_classifier as a regression, trained on {os.path.basename(train_file)} for "
            f"{epochs:g} epochs (batch 32, lr 1e-4, seq {PRETRAINING.seq_length} as pretrained), "
            f"{os.path.basename(dev_file)} evaluated every tenth of the steps and the weights with the best "
            f"Spearman scored (the dev set both picks and scores: no test labels are used); albert_small pretrained "
            f"on {os.path.basename(os.path.dirname(CORPORA[language].path))} ({finished_step(pretrained):,} steps of "
            f"batch 64, seq 128) and from random init (the same config and vocabulary); seeds "
            f"{','.join(map(str, seeds))}; {cpu_description()}. Pretrained minus random init: {100 * gain:+.2f} "
            f"Spearman.\n\n" + markdown_table(["start", "seeds", "Spearman x 100", "Pearson x 100"], rows) + "\n")
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, f"sts_{language}.md"), "w") as f:
        f.write(portable(text))
    with open(os.path.join(results_dir, f"sts_{language}.json"), "w") as f:
        json.dump(portable({"runs": figures, "seeds": seeds, "epochs": epochs}), f, indent=1)
    print(text)


def heldout_accuracy(run_dir):
    """(held-out accuracy at [MASK], its frequent-piece level) of the run's newest held-out evaluation."""
    with open(os.path.join(run_dir, "eval_history.jsonl")) as f:
        last = [json.loads(line) for line in f if line.strip()][-1]
    return last["heldout"]["masked_lm_accuracy_at_mask"], last["frequent_piece_level"]


def voiced_kana_pieces(spm_model):
    """How many of the SentencePiece model's pieces hold a voiced or semi-voiced kana (が, パ, ...: the letters
    accent stripping rewrites), and how many pieces it has."""
    import unicodedata

    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=spm_model)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    # A voiced kana decomposes into its plain kana and the combining (semi-)voiced sound mark, U+3099 / U+309A.
    voiced = sum(any(mark in unicodedata.normalize("NFD", piece) for mark in ("\u3099", "\u309a"))
                 for piece in pieces)
    return voiced, len(pieces)


def accents(work, results_dir):
    """The Japanese runs with accents kept (the vocabulary tool's default for kana) and stripped (the original's
    rule, --accents=strip), both finished: voiced-kana pieces and held-out accuracy at [MASK];
    RESULTS_DIR/accents_ja.{md,json}."""
    works = {"kept": work, "stripped": work + "_stripped"}
    figures = {}
    for name, directory in works.items():
        run = os.path.join(directory, "runs", PRETRAINING.run)
        if finished_step(run) is None:
            flag = " --accents=strip" if name == "stripped" else ""
            sys.exit(f"{run}: pretraining has not finished; run --language=ja --stages=pretrain{flag} to its end "
                     "first")
        voiced, pieces = voiced_kana_pieces(os.path.join(directory, "spm.model"))
        accuracy, level = heldout_accuracy(run)
        figures[name] = {"voiced_kana_pieces": voiced, "pieces": pieces, "steps": finished_step(run),
                         "heldout_accuracy_at_mask": accuracy, "frequent_piece_level": level}
    if figures["kept"]["steps"] != figures["stripped"]["steps"]:
        # Held-out accuracy grows with the steps trained: runs of unequal length say nothing about the accents.
        sys.exit(f"the runs trained for {figures['kept']['steps']:,} (accents kept) and "
                 f"{figures['stripped']['steps']:,} (stripped) steps: pretrain both with the same --train_steps "
                 "under one --work_dir")
    rows = [[f"accents {name}", f"{figure['voiced_kana_pieces']:,} of {figure['pieces']:,}",
             f"{figure['heldout_accuracy_at_mask']:.4f}", f"{figure['frequent_piece_level']:.4f}",
             f"{figure['heldout_accuracy_at_mask'] - figure['frequent_piece_level']:+.4f}"]
            for name, figure in figures.items()]
    text = (f"Japanese with and without accent stripping: albert_small pretrained on corpus_ja_aozora for "
            f"{figures['kept']['steps']:,} steps each (the same split and recipe), with an 8,000-piece SentencePiece "
            f"vocabulary trained with accents kept (the vocabulary tool's default where stripping would rewrite the "
            f"text) and with --nokeep_accents (the original's NFKD rule, which turns が into か and パ into ハ). Held-out "
            f"accuracy at [MASK] is over each vocabulary's own pieces (a stripped vocabulary predicts the stripped "
            f"text, an easier target), so it is read beside its frequent-piece level; {cpu_description()}.\n\n"
            + markdown_table(["vocabulary", "pieces holding a voiced kana", "held-out accuracy at [MASK]",
                              "frequent-piece level", "above the level"], rows) + "\n")
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "accents_ja.md"), "w") as f:
        f.write(portable(text))
    with open(os.path.join(results_dir, "accents_ja.json"), "w") as f:
        json.dump(portable(figures), f, indent=1)
    print(text)


UNER_ZH = os.path.join(SHARED_DATA, "ner_uner_zh_gsdsimp")
VOCABULARY_NAMES = {"sentencepiece": "SentencePiece (spm.model)", "wordpiece": "WordPiece (vocab.txt)"}
# Held-out lines the WordPiece model's LiteRT files are compared with its SavedModel on.
LITERT_TEXTS = 500


def run_tokenizer(run_dir):
    """The Python tokenizer a pretraining run's model directory records (its vocabulary and casing)."""
    from albert_tf.models.model_dir_format import find_vocabulary, model_metadata

    metadata = model_metadata(run_dir)
    return find_vocabulary(run_dir).tokenizer(bool(metadata.get("lower_case", True)),
                                              bool(metadata.get("keep_accents", False)))


def finished_step(run_dir):
    """The step of the run's newest checkpoint when it is the last its schedule planned, else None."""
    from albert_tf.models.model_dir_format import checkpoints_newest_first

    config_path = os.path.join(run_dir, "run_config.json")
    if not os.path.exists(config_path) or not checkpoints_newest_first(run_dir):
        return None
    with open(config_path) as f:
        config = json.load(f)
    # A budgeted run records the steps its budget was fitted to; a fixed one, its flag's in "config".
    planned = config.get("train_budget", {}).get("num_train_steps") or config.get("config", {}).get("num_train_steps")
    newest = int(checkpoints_newest_first(run_dir)[0].rsplit("-", 1)[1])
    return newest if planned and newest >= planned else None


def boundaries_inside_pieces(tokenizer, spans_by_text):
    """(boundaries inside a piece, boundaries): each span's start and end counted once per span, inside a piece
    when some piece of the text's tokenization begins before it and ends after it (the boundary cannot be a
    piece boundary, so a tagger or span labeler can only place it at one of that piece's ends)."""
    inside = total = 0
    for text, spans in spans_by_text.items():
        aligned = tokenizer.aligned(text)
        pieces = [(start, end) for start, end in zip(aligned.starts, aligned.ends) if end > start]
        for start, end in spans:
            for boundary in (start, end):
                total += 1
                inside += any(a < boundary < b for a, b in pieces)
    return inside, total


def gold_spans():
    """{"UNER zh entities": {text: [(start, end)]}, "CMRC 2018 answers": {context: [(start, end)]}}: UNER Chinese
    GSDSimp's dev and test entities as character spans of each sentence's text, and CMRC 2018 dev's distinct gold
    answers in their contexts (those its file places at -1 left out)."""
    from albert_tf.tasks.tagged_texts import entity_char_spans, read_tagged_file, sentence_text

    entities = {}
    for name in ("zh_gsdsimp-ud-dev.iob2", "zh_gsdsimp-ud-test.iob2"):
        for sentence in read_tagged_file(os.path.join(UNER_ZH, name)).sentences:
            text, token_spans = sentence_text(sentence)
            spans = [(start, end) for _, start, end in entity_char_spans(sentence, token_spans)]
            if spans:
                entities.setdefault(text, set()).update(spans)
    with open(os.path.join(SHARED_DATA, "cmrc2018", "cmrc2018_dev.json"), encoding="utf-8") as f:
        cmrc = json.load(f)
    answers = {}
    for article in cmrc["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for question in paragraph["qas"]:
                for answer in question["answers"]:
                    start = answer["answer_start"]
                    if start >= 0 and context[start:start + len(answer["text"])] == answer["text"]:
                        answers.setdefault(context, set()).add((start, start + len(answer["text"])))
    return {"UNER zh entities": entities, "CMRC 2018 answers": answers}


def tagging_run(work, run_dir, seed, epochs):
    """run_tagger on UNER Chinese GSDSimp from the pretraining run (benchmarks.downstream.tagging's recipe for its
    albert_tf run: train, dev every tenth of the steps, test scored with the weights best on dev); the scores."""
    import types

    from benchmarks.downstream import tagging
    from albert_tf.tasks.tagged_texts import read_tagged_file, tag_labels
    from albert_tf.tasks.tagging_task import tagged_data

    output = os.path.join(work, "tagging_vocabularies", f"seed{seed}")
    results = output + ".json"
    if not os.path.exists(results):
        data = {split: os.path.join(UNER_ZH, f"zh_gsdsimp-ud-{split}.iob2") for split in ("train", "dev")}
        data["eval"] = os.path.join(UNER_ZH, "zh_gsdsimp-ud-test.iob2")
        train = read_tagged_file(data["train"])
        labels = tag_labels(train).labels
        windows = tagged_data(train, run_tokenizer(run_dir), labels, PRETRAINING.seq_length).windows
        settings = tagging.recipe(len(windows), types.SimpleNamespace(
            epochs=epochs, batch_size=32, learning_rate=1e-4, max_seq_length=PRETRAINING.seq_length,
            threads=os.cpu_count(), dev_file=data["dev"]))
        result = tagging.albert_tf_run(seed, data, [f"--init_checkpoint={run_dir}"], settings, output, labels)
        with open(results, "w") as f:
            json.dump(result, f, indent=1)
    with open(results) as f:
        return json.load(f)


LITERT_QUANTIZATIONS = ("float32", "float16", "dynamic_int8")


def litert_agreement(run_dir, texts, output_dir):
    """A pretrained run on a device against its SavedModel: albert-export of the run as a SavedModel and as LiteRT
    files of each of LITERT_QUANTIZATIONS, each held-out text's pooled_output compared (cosine), and model.tflite's
    ids against the Python tokenizer's; {"texts", "ids_equal", quantization: figures}."""
    import numpy as np
    import tensorflow as tf

    from albert_tf.export_lib.exporter import export
    from albert_tf.export_lib.litert_export import export_litert, litert_tokenizer
    from albert_tf.models.lite_model import LiteModel
    from albert_tf.models.model_dir_format import find_vocabulary, model_metadata
    from albert_tf.text.vocabularies import tf_tokenizer

    paths = export(run_dir, os.path.join(output_dir, "savedmodel"), max_seq_length=PRETRAINING.seq_length,
                   overwrite=True)
    serving = tf.saved_model.load(paths["serving"]).signatures["serve_text"]
    reference = np.concatenate([serving(text=tf.constant(texts[i:i + 64]))["pooled_output"].numpy()
                                for i in range(0, len(texts), 64)])
    metadata = model_metadata(run_dir)
    settings = (bool(metadata.get("lower_case", True)), bool(metadata.get("keep_accents", False)),
                bool(metadata.get("rewrite_quotes", False)))
    vocabulary = find_vocabulary(run_dir)
    device_tokenizer = litert_tokenizer(tf_tokenizer(vocabulary, *settings))[0]
    device_ids = device_tokenizer(tf.constant(texts)).to_list()
    trained_ids = [vocabulary.tokenizer(*settings).encode(text) for text in texts]
    figures = {"texts": len(texts), "ids_equal": sum(list(a) == list(b) for a, b in zip(device_ids, trained_ids))}
    for quantization in LITERT_QUANTIZATIONS:
        output = os.path.join(output_dir, f"litert_{quantization}")
        record = export_litert(run_dir, output, quantization=quantization, max_seq_length=PRETRAINING.seq_length,
                               overwrite=True)["litert"]
        pooled = LiteModel(output)(texts, max_batch_tokens=512)["pooled_output"]
        cosines = (pooled * reference).sum(-1) / np.linalg.norm(pooled, axis=-1) / np.linalg.norm(reference, axis=-1)
        figures[quantization] = {"min_cosine": float(cosines.min()), "mean_cosine": float(cosines.mean()),
                                 "below_0.999": int((cosines < 0.999).sum()),
                                 "bytes": record["files"]["model.tflite"]["bytes"]}
    return figures


def compare_vocabularies(sentencepiece_work, seeds, cmrc_epochs, tagging_epochs, results_dir):
    """The SentencePiece and the WordPiece run side by side: boundaries inside pieces, UNER zh entity F1 and CMRC
    2018 F1/EM from each pretrained checkpoint over `seeds`; writes RESULTS_DIR/vocabularies_zh.{md,json}."""
    works = {"sentencepiece": sentencepiece_work, "wordpiece": sentencepiece_work + "_wordpiece"}
    runs = {kind: os.path.join(work, "runs", PRETRAINING.run) for kind, work in works.items()}
    for kind, run in runs.items():
        if finished_step(run) is None:
            sys.exit(f"{run}: pretraining has not finished; run --stages=pretrain --vocabulary={kind} to its end first")
    spans = gold_spans()
    figures = {}
    for kind, run in runs.items():
        tokenizer = run_tokenizer(run)
        figure = {"pieces": tokenizer.vocab_size, "steps": finished_step(run)}
        for name, by_text in spans.items():
            inside, total = boundaries_inside_pieces(tokenizer, by_text)
            figure[name] = {"inside": inside, "boundaries": total}
        contexts = list(spans["CMRC 2018 answers"])
        figure["characters_per_piece"] = sum(map(len, contexts)) / sum(len(tokenizer.encode(c)) for c in contexts)
        figure["uner"] = [tagging_run(works[kind], run, seed, tagging_epochs) for seed in seeds]
        figure["cmrc"] = [cmrc_run(works[kind], "pretrained", seed, cmrc_epochs, run) for seed in seeds]
        figures[kind] = figure
    with open(os.path.join(works["wordpiece"], "heldout.txt"), encoding="utf-8") as f:
        held_out = [line.strip() for line in f if line.strip()][:LITERT_TEXTS]
    for kind, run in runs.items():
        figures[kind]["litert"] = litert_agreement(run, held_out, os.path.join(works[kind], "exports"))

    def cell(values):
        return f"{statistics.mean(values):.2f}" + (f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else "")

    rows = []
    for kind, figure in figures.items():
        share = {name: f"{figure[name]['inside']:,} of {figure[name]['boundaries']:,} "
                       f"({100 * figure[name]['inside'] / figure[name]['boundaries']:.2f}%)" for name in spans}
        rows.append([VOCABULARY_NAMES[kind], f"{figure['pieces']:,}", f"{figure['characters_per_piece']:.2f}",
                     share["UNER zh entities"], share["CMRC 2018 answers"],
                     cell([100 * run["f1"] for run in figure["uner"]]),
                     cell([run["f1"] for run in figure["cmrc"]]), cell([run["exact"] for run in figure["cmrc"]])])
    held_out_count = figures["wordpiece"]["litert"]["texts"]
    device_rows = [[VOCABULARY_NAMES[kind], f"{figure['litert']['ids_equal']} of {figure['litert']['texts']}"]
                   + [f"{figure['litert'][q]['min_cosine']:.6f} / {figure['litert'][q]['mean_cosine']:.6f} "
                      f"({figure['litert'][q]['below_0.999']}), {figure['litert'][q]['bytes'] / 1e6:.1f} MB"
                      for q in LITERT_QUANTIZATIONS] for kind, figure in figures.items()]
    text = (f"SentencePiece against WordPiece on Chinese: albert_small pretrained on corpus_zh_modern with each "
            f"vocabulary for the same {figures['sentencepiece']['steps']:,} steps of batch 64 at seq 128 (the same "
            f"split, data recipe and optimizer), then fine-tuned from each checkpoint on UNER Chinese GSDSimp (run_"
            f"tagger, {tagging_epochs:g} epochs, the test split scored with the weights best on dev) and CMRC 2018 "
            f"(run_squad on the trial set for {cmrc_epochs:g} epochs, its dev set scored by CMRC's metric); seeds "
            f"{','.join(map(str, seeds))}. \"Inside a piece\": entity or answer boundaries (start and end, from UNER "
            f"zh dev and test, and CMRC dev's distinct gold answers) that fall strictly inside one of the text's "
            f"pieces, where no tagger or span labeler of that vocabulary can place them; {cpu_description()}.\n\n"
            + markdown_table(["vocabulary", "pieces", "characters per piece (CMRC contexts)",
                              "entity boundaries inside a piece", "answer boundaries inside a piece",
                              "UNER zh entity F1", "CMRC F1", "CMRC EM"], rows) + "\n\n"
            f"On a device: each checkpoint exported by albert-export as a SavedModel and as LiteRT files "
            f"(model.tflite tokenizing raw text in the file: SentencePiece's kernel, or WordPiece's through tensorflow-"
            f"text's FastBertNormalize and FastWordpieceTokenizeWithOffsets), on {held_out_count} held-out lines of "
            f"the corpus: model.tflite's ids against the trained ids, and its pooled_output cosine against the "
            f"SavedModel's per quantization.\n\n"
            + markdown_table(["vocabulary", "ids equal"]
                             + [f"{quantization}: min / mean cosine (lines below 0.999), size"
                                for quantization in LITERT_QUANTIZATIONS], device_rows) + "\n")
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "vocabularies_zh.md"), "w") as f:
        f.write(portable(text))
    with open(os.path.join(results_dir, "vocabularies_zh.json"), "w") as f:
        json.dump(portable({"figures": figures, "seeds": seeds, "cmrc_epochs": cmrc_epochs,
                            "tagging_epochs": tagging_epochs}), f, indent=1)
    print(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--language", choices=sorted(CORPORA), default="zh", help="which staged corpus to pretrain on")
    parser.add_argument("--work_dir", default=os.path.join(WORK, "cjk_transfer"),
                        help="holds each language's split, vocabulary, data, runs and fine-tuning results; reused "
                             "when rerun")
    parser.add_argument("--stages", default="pretrain",
                        help="comma-separated: pretrain, cmrc (zh), vocabularies (zh: the SentencePiece and the "
                             "WordPiece runs compared; both pretrained first), sts (ja: JSTS, ko: KorSTS; "
                             "pretrained against random init), accents (ja: the runs with accents kept and "
                             "stripped compared; both pretrained first)")
    parser.add_argument("--vocabulary", choices=("sentencepiece", "wordpiece"), default="sentencepiece",
                        help="sentencepiece: an 8,000-piece SentencePiece model, the run fitted to --budget_hours; "
                             "wordpiece: a WordPiece vocab.txt of as many lines (BERT's layout, as Google's Chinese "
                             "ALBERTs), trained for the SentencePiece run's step count (an equal budget), under "
                             "WORK_DIR/LANGUAGE_wordpiece")
    parser.add_argument("--budget_hours", type=float, default=PRETRAINING.budget_hours,
                        help="pretraining's wall-clock budget; its schedule is fitted to it")
    parser.add_argument("--train_steps", type=int, default=0,
                        help="pretrain for this many steps instead of fitting the step count to --budget_hours "
                             "(a run the same length as another language's, whatever else the machine runs)")
    parser.add_argument("--accents", choices=("auto", "strip"), default="auto",
                        help="auto: the vocabulary tool's default (accents kept where stripping would rewrite the "
                             "text, as Japanese kana's voicing marks); strip: --nokeep_accents, the original's rule, "
                             "under WORK_DIR/LANGUAGE_stripped (the accents stage compares the two)")
    parser.add_argument("--seeds", default="1", help="comma-separated fine-tuning seeds")
    parser.add_argument("--cmrc_epochs", type=float, default=2.0, help="passes over CMRC 2018's trial set")
    parser.add_argument("--sts_epochs", type=float, default=3.0, help="passes over the STS training set")
    parser.add_argument("--tagging_epochs", type=float, default=3.0,
                        help="passes over UNER Chinese GSDSimp's training sentences (the vocabularies stage)")
    parser.add_argument("--results_dir", default=RESULTS, help="where the tables go")
    args = parser.parse_args(argv)
    work = os.path.join(args.work_dir, args.language)
    if args.vocabulary == "wordpiece":
        sentencepiece_work, work = work, work + "_wordpiece"
    if args.accents == "strip":
        if args.vocabulary == "wordpiece":
            parser.error("--accents=strip is a SentencePiece vocabulary's setting (WordPiece strips with lowercasing)")
        work += "_stripped"
    os.makedirs(os.path.join(work, "runs"), exist_ok=True)
    stages = [stage for stage in args.stages.split(",") if stage]
    known = ("pretrain", "cmrc", "vocabularies", "sts", "accents")
    unknown = sorted(set(stages) - set(known))
    if unknown:
        parser.error(f"unknown stage(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if "pretrain" in stages:
        if args.vocabulary == "wordpiece":
            pretrain_wordpiece(work, CORPORA[args.language], sentencepiece_work)
        else:
            pretrain(work, CORPORA[args.language], args.budget_hours, args.train_steps,
                     ["--nokeep_accents"] if args.accents == "strip" else [])
    if "cmrc" in stages:
        if args.language != "zh":
            parser.error("CMRC 2018 is Chinese: --language=zh")
        cmrc(work, [int(seed) for seed in args.seeds.split(",") if seed], args.cmrc_epochs, args.results_dir)
    if "vocabularies" in stages:
        if args.language != "zh":
            parser.error("the vocabularies are compared on Chinese: --language=zh")
        compare_vocabularies(os.path.join(args.work_dir, args.language),
                             [int(seed) for seed in args.seeds.split(",") if seed], args.cmrc_epochs,
                             args.tagging_epochs, args.results_dir)
    if "sts" in stages:
        if args.language not in STS_SETS:
            parser.error(f"the sts stage has a set for {' and '.join(sorted(STS_SETS))}: --language=ja (JSTS) or "
                         "--language=ko (KorSTS)")
        sts(work, args.language, [int(seed) for seed in args.seeds.split(",") if seed], args.sts_epochs,
            args.results_dir)
    if "accents" in stages:
        if args.language != "ja":
            parser.error("the accents stage compares the Japanese runs: --language=ja")
        accents(os.path.join(args.work_dir, args.language), args.results_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
