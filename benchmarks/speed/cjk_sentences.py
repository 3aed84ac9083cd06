r"""Sentence splitting on Chinese, Japanese and Korean text: the sentence-ending marks present against the
sentences found, before and after the CJK rules (issue #65), and the splitter's speed.

  python -m benchmarks.speed.cjk_sentences [--data_dir=../shared/data]

For each paragraph-per-line corpus (the Japanese and Chinese ones; the Korean corpus, one sentence a line,
is read a line at a time as a paragraph) it counts:
  - the runs of sentence-ending marks (。｡！？．!?…‥ and '.', with the closing brackets and quotes after
    them), by kind, and how many of them end a paragraph: every mark run inside a paragraph that ended a
    sentence adds one sentence to the paragraph's one;
  - the sentences albert_tf.text.sentence_splitter finds now, and those the splitter found before the CJK
    rules (a whitespace and a Latin capital after '.', '!', '?' or '…', kept here as `latin_only_split`);
  - for each kind of mark, how many runs inside paragraphs ended a sentence, and why the others did not
    (a Japanese quoting particle after a closing quote: 「そうか。」と; a comma-like mark; an ASCII mark or a
    full-width period not directly after a CJK character: "3．14", "Ｍ．Ｗｉｌｄｅ");
  - the sentences that end inside an open 「 or “ (the splitter ends sentences inside quotations).
Two corpora have the true sentence boundaries, which gives recall and precision: the Korean corpus (its
lines are sentences; each document's lines joined by a space, in paragraphs of --gold_group sentences) and
the Chinese Wikipedia sentences of the Universal NER GSD (Simplified) treebank (its `# text =` sentences
of each document joined without a space, as Chinese is written). The English corpus is a control: the
splitter must give the sentences it gave before on every paragraph. Speed: paragraphs per second of both
splitters on each corpus, best of --repeats runs.
"""

import argparse
import glob
import os
import re
import time

from benchmarks.common import RESULTS, SHARED_DATA, cpu_description, markdown_table, write_results

CORPORA = {  # name: (path under the data folder, what a line is)
    "Japanese (Aozora Bunko)": ("corpus_ja_aozora/corpus_paragraphs.txt", "paragraph"),
    "Chinese (modern vernacular)": ("corpus_zh_modern/corpus_paragraphs.txt", "paragraph"),
    "Korean (UD Kaist)": ("corpus_ko_ud_kaist/corpus_sentences.txt", "sentence"),
}
ENGLISH = "corpus/corpus_paragraphs.txt"
KOREAN_GOLD = "corpus_ko_ud_kaist/corpus_sentences.txt"
CHINESE_GOLD = "ner_uner_zh_gsdsimp/zh_gsdsimp-ud-*.iob2"

# The splitter before the CJK rules: a sentence ends at . ! ? … (and closers) followed by whitespace and a
# Latin capital, a digit or an opening quote, except after an abbreviation or a one-letter word.
_OLD_BOUNDARY = re.compile(r"""([.!?…]+)(["'”’)\]]*)(\s+)(?=["'“‘(\[]*[A-Z0-9À-ÖØ-Þ])""")


def latin_only_split(paragraph):
    """The sentences the splitter found before the CJK rules."""
    from albert_tf.text.sentence_splitter import _ABBREVIATIONS, _LAST_WORD

    def abbreviation(text):
        match = _LAST_WORD.search(text)
        if not match:
            return False
        word = match.group(1).lstrip("\"'“‘([").lower()
        return (len(word) == 1 and word.isalpha()) or word in _ABBREVIATIONS

    sentences, start = [], 0
    for match in _OLD_BOUNDARY.finditer(paragraph):
        if match.group(1) == "." and abbreviation(paragraph[start : match.start(1)]):
            continue
        sentence = paragraph[start : match.start(3)].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end(3)
    tail = paragraph[start:].strip()
    return sentences + [tail] if tail else sentences


_MARKS = "。｡！？．!?…‥."
_CLOSERS = "」』）)】〉》〕〗〙〛］]｝｣〟”’\"'"
# A run: marks, then any mix of marks and closing brackets and quotes ("。」", "。’……").
MARK_RUN = re.compile(rf"[{_MARKS}][{_MARKS}{re.escape(_CLOSERS)}]*")
KINDS = ("。！？ (full width)", "ASCII ! ?", "… ‥", "．(full-width period)", "ASCII .")


def mark_kind(marks):
    """Which kind a run of marks is, by its strongest mark."""
    if any(mark in "。｡！？" for mark in marks):
        return KINDS[0]
    if any(mark in "!?" for mark in marks):
        return KINDS[1]
    if any(mark in "…‥" for mark in marks):
        return KINDS[2]
    return KINDS[3] if "．" in marks else KINDS[4]


def why_not(paragraph, match):
    """Why a run of marks inside a paragraph did not end a sentence (the splitter's rules, in its order)."""
    from albert_tf.text.sentence_splitter import _CJK_CHARACTER, _QUOTING_PARTICLES

    marks = "".join(char for char in match.group() if char in _MARKS)
    closers = len(marks) < len(match.group())
    rest = paragraph[match.end() :].lstrip()
    before = paragraph[match.start() - 1] if match.start() else ""
    if rest[:1] in "、，,；;：:":
        return "a comma-like mark follows"
    if (closers or set(marks) <= set("…‥")) and rest.startswith(_QUOTING_PARTICLES):
        return "a quoting particle follows (「…。」と)"
    if set(marks) == {"."}:
        return "'.' without whitespace and a sentence start after it (3.14, f.市), or after an abbreviation"
    if not any(mark in "。｡！？" for mark in marks) and not _CJK_CHARACTER.match(before):
        return "! ? … ． not directly after a CJK character (“Ｍ．Ｗｉｌｄｅ”, 3．14, ，……)"
    return "other"


def sentence_ends(paragraph, sentences):
    """Offsets in `paragraph` where each sentence but the last ends."""
    ends, position = set(), 0
    for sentence in sentences[:-1]:
        position = paragraph.index(sentence, position) + len(sentence)
        ends.add(position)
    return ends


def measure_corpus(lines):
    """The counts of one corpus (a list of its non-blank lines)."""
    from albert_tf.text.sentence_splitter import split_sentences

    counts = {"paragraphs": len(lines), "mark_runs": 0, "ending_a_paragraph": 0, "sentences_before": 0,
              "sentences_after": 0, "inside_open_quote": 0,
              "kinds": {kind: {"inside": 0, "ended": 0} for kind in KINDS}, "held_back": {}}
    for paragraph in lines:
        paragraph = paragraph.strip()
        sentences = split_sentences(paragraph)
        counts["sentences_before"] += len(latin_only_split(paragraph))
        counts["sentences_after"] += len(sentences)
        ends = sentence_ends(paragraph, sentences)
        for match in MARK_RUN.finditer(paragraph):
            counts["mark_runs"] += 1
            if match.end() == len(paragraph):
                counts["ending_a_paragraph"] += 1
                continue
            kind = counts["kinds"][mark_kind(match.group())]
            kind["inside"] += 1
            if any(match.start() < end <= match.end() for end in ends):  # 他说。"你好 ends before the quote
                kind["ended"] += 1
            else:
                reason = why_not(paragraph, match)
                counts["held_back"][reason] = counts["held_back"].get(reason, 0) + 1
        counts["inside_open_quote"] += sum(
            1 for sentence in sentences[:-1]
            if sentence.count("「") > sentence.count("」") or sentence.count("“") > sentence.count("”"))
    return counts


def boundary_scores(paragraphs, split):
    """(true boundaries, found, correct) over (paragraph, [offsets where its true sentences end]) pairs."""
    true = found = correct = 0
    for paragraph, gold in paragraphs:
        ends = sentence_ends(paragraph, split(paragraph))
        true += len(gold)
        found += len(ends)
        correct += len(ends & set(gold))
    return true, found, correct


def joined(documents, separator, group):
    """(paragraph, offsets of its inner sentence ends) for every `group` consecutive sentences of a document."""
    paragraphs = []
    for sentences in documents:
        for start in range(0, len(sentences), group):
            part = sentences[start : start + group]
            offsets, position = [], 0
            for sentence in part[:-1]:
                position += len(sentence)
                offsets.append(position)
                position += len(separator)
            paragraphs.append((separator.join(part), offsets))
    return paragraphs


def korean_documents(path):
    with open(path, encoding="utf-8") as f:
        blocks = f.read().split("\n\n")
    return [[line.strip() for line in block.splitlines() if line.strip()] for block in blocks if block.strip()]


def chinese_gold_documents(pattern):
    documents = []
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("# newdoc") or not documents:
                    documents.append([])
                if line.startswith("# text = "):
                    documents[-1].append(line[len("# text = ") :].strip())
    return [document for document in documents if document]


def paragraphs_per_second(split, lines, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for line in lines:
            split(line)
        best = min(best, time.perf_counter() - start)
    return len(lines) / best


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def percent(part, whole):
    return f"{100 * part / whole:.1f}%" if whole else "-"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data_dir", default=SHARED_DATA, help="the folder holding the staged corpora "
                        "(default: ../shared/data beside the checkout); a corpus it lacks is left out")
    parser.add_argument("--gold_group", type=int, default=5,
                        help="sentences joined into one paragraph for the recall and precision (default 5)")
    parser.add_argument("--repeats", type=int, default=3, help="timing runs per splitter (best kept)")
    parser.add_argument("--results_dir", default=RESULTS, help="writes cjk_sentences.md/.json here")
    args = parser.parse_args(argv)
    from albert_tf.text.sentence_splitter import split_sentences

    record = {"cpu": cpu_description(), "corpora": {}, "gold": {}, "english": None}
    rows, kind_rows, held_rows, speed_rows = [], [], [], []
    for name, (relative, unit) in CORPORA.items():
        path = os.path.join(args.data_dir, relative)
        if not os.path.exists(path):
            print(f"{name}: {path} is absent, left out")
            continue
        lines = read_lines(path)
        counts = measure_corpus(lines)
        counts.update(path=relative, line=unit)
        counts["paragraphs_per_second"] = {
            "before": round(paragraphs_per_second(latin_only_split, lines, args.repeats)),
            "after": round(paragraphs_per_second(split_sentences, lines, args.repeats))}
        record["corpora"][name] = counts
        paragraphs, inside = counts["paragraphs"], counts["mark_runs"] - counts["ending_a_paragraph"]
        rows.append([name, f"{paragraphs:,} {unit}s", f"{counts['mark_runs']:,}", f"{inside:,}",
                     f"{paragraphs + inside:,}", f"{counts['sentences_before']:,}",
                     f"{counts['sentences_after']:,}", f"{counts['sentences_before'] / paragraphs:.2f}",
                     f"{counts['sentences_after'] / paragraphs:.2f}", f"{counts['inside_open_quote']:,}"])
        for kind, kind_counts in counts["kinds"].items():
            if kind_counts["inside"]:
                kind_rows.append([name, kind, f"{kind_counts['inside']:,}", f"{kind_counts['ended']:,}",
                                  percent(kind_counts["ended"], kind_counts["inside"])])
        for reason, count in sorted(counts["held_back"].items(), key=lambda item: -item[1]):
            held_rows.append([name, reason, f"{count:,}"])
        speed_rows.append([name, f"{counts['paragraphs_per_second']['before']:,}",
                           f"{counts['paragraphs_per_second']['after']:,}"])
        print(name, {key: value for key, value in counts.items() if key != "kinds"}, flush=True)

    gold_rows = []
    gold_sets = [("Korean (UD Kaist), joined with a space", KOREAN_GOLD, korean_documents, " "),
                 ("Chinese Wikipedia (UD GSD Simplified), joined without a space", CHINESE_GOLD,
                  chinese_gold_documents, "")]
    for name, relative, reader, separator in gold_sets:
        pattern = os.path.join(args.data_dir, relative)
        if not glob.glob(pattern):
            continue
        documents = reader(pattern)
        paragraphs = joined(documents, separator, args.gold_group)
        scores = {}
        for label, split in (("before", latin_only_split), ("after", split_sentences)):
            true, found, correct = boundary_scores(paragraphs, split)
            scores[label] = {"true": true, "found": found, "correct": correct}
            gold_rows.append([name, label, f"{true:,}", f"{found:,}", f"{correct:,}", percent(correct, true),
                              percent(correct, found)])
        record["gold"][name] = {"path": relative, "sentences": sum(map(len, documents)),
                                "paragraphs": len(paragraphs), **scores}

    english = os.path.join(args.data_dir, ENGLISH)
    english_text = ""
    if os.path.exists(english):
        lines = read_lines(english)
        differing = sum(1 for line in lines if split_sentences(line) != latin_only_split(line))
        sentences = sum(len(split_sentences(line)) for line in lines)
        speeds = {"before": round(paragraphs_per_second(latin_only_split, lines, args.repeats)),
                  "after": round(paragraphs_per_second(split_sentences, lines, args.repeats))}
        record["english"] = {"path": ENGLISH, "paragraphs": len(lines), "sentences": sentences,
                             "paragraphs_split_differently": differing, "paragraphs_per_second": speeds}
        english_text = (f"\nEnglish control ({ENGLISH}): {len(lines):,} paragraphs, {sentences:,} sentences; "
                        f"paragraphs split differently from before: {differing:,}.\n")
        speed_rows.append(["English (control)", f"{speeds['before']:,}", f"{speeds['after']:,}"])

    text = (f"Corpora from the data folder: {', '.join(record['corpora']) or 'none found'}; CPU: {record['cpu']}. "
            "Mark runs: maximal runs of 。｡！？．!?…‥. with the closing brackets and quotes after them. Every run "
            "inside a paragraph that ends a sentence adds a sentence to the paragraph's one, so paragraphs + runs "
            "inside is the count if every mark ended a sentence.\n\n"
            + markdown_table(["corpus", "lines", "mark runs", "inside a paragraph", "paragraphs + runs inside",
                              "sentences before", "sentences after", "per line before", "per line after",
                              "ending inside an open 「 or “"], rows)
            + "\n\nMark runs inside a paragraph, by kind, and how many ended a sentence:\n\n"
            + markdown_table(["corpus", "mark", "inside a paragraph", "ended a sentence", "share"], kind_rows)
            + "\n\nRuns inside a paragraph that did not end a sentence, and why:\n\n"
            + markdown_table(["corpus", "reason", "runs"], held_rows)
            + f"\n\nTrue sentence boundaries (sentences of a document joined into paragraphs of {args.gold_group}), "
            "before and after the CJK rules:\n\n"
            + markdown_table(["sentences", "splitter", "true boundaries", "found", "correct", "recall",
                              "precision"], gold_rows)
            + "\n" + english_text
            + "\nParagraphs split per second (one process), before and after:\n\n"
            + markdown_table(["corpus", "before", "after"], speed_rows) + "\n")
    write_results(args.results_dir, "cjk_sentences", text, record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
