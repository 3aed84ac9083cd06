"""Cloze sentences from held-out text, and how a pretrained checkpoint fills them.

Does the model predict from context? Sentences are drawn from held-out documents
(fixed seed, so every checkpoint gets the same list), one word in each is
replaced by [MASK], and the checkpoint's top predictions (via
`albert_tf.fill_mask`) are compared with the word that was there:

  - the word is a content word: a single vocabulary piece (so one [MASK] stands
    for it), alphabetic, at least 3 letters, not among the held-out text's 50
    most frequent words, and not the sentence's first word;
  - top-1 / top-5 accuracy over the list, next to the best constant answer
    (always guessing the list's most frequent masked word);
  - how many different top-1 answers the list gets: a model that ignores the
    context gives one answer everywhere.
"""

import collections
import random
import re

NUM_ITEMS = 60
MIN_WORDS, MAX_WORDS = 8, 24
_WORD = re.compile(r"^[a-z]{3,}$")


def _sentences(heldout_path):
    from albert_tf.text.sentence_splitter import split_sentences

    with open(heldout_path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                yield from split_sentences(line)


def cloze_items(heldout_path, tokenizer, num_items=NUM_ITEMS, seed=0):
    """[(masked sentence, answer word)], deterministic for a held-out file, tokenizer and seed."""
    sentences = [s for s in _sentences(heldout_path) if MIN_WORDS <= len(s.split()) <= MAX_WORDS and '"' not in s]
    counts = collections.Counter(word.lower().strip(".,;:!?'()") for s in sentences for word in s.split())
    frequent = {word for word, _ in counts.most_common(50)}
    rng = random.Random(seed)
    rng.shuffle(sentences)
    items = []
    for sentence in sentences:
        words = sentence.split()
        candidates = [
            index for index, word in enumerate(words[1:], start=1)
            if _WORD.match(word) and word not in frequent and tokenizer.tokenize(word) == ["\u2581" + word]
        ]
        if not candidates:
            continue
        index = rng.choice(candidates)
        answer = words[index]
        words[index] = "[MASK]"
        items.append((" ".join(words), answer))
        if len(items) == num_items:
            break
    return items


def score(filler, items, max_seq_length, top_k=5):
    """Accuracy figures and the per-item predictions of an `albert_tf.MaskFiller`."""
    rows = []
    for text, answer in items:
        (_, candidates), = filler.fill(text, top_k=top_k, max_seq_length=max_seq_length)
        predictions = [piece.replace("\u2581", "") for piece, _ in candidates]
        rows.append({"text": text, "answer": answer, "predictions": predictions,
                     "probabilities": [round(p, 4) for _, p in candidates]})
    answers = collections.Counter(answer for _, answer in items)
    return {
        "items": len(rows),
        "top1_accuracy": sum(r["predictions"][0] == r["answer"] for r in rows) / len(rows),
        "top5_accuracy": sum(r["answer"] in r["predictions"][:5] for r in rows) / len(rows),
        "constant_answer_accuracy": answers.most_common(1)[0][1] / len(rows),
        "distinct_top1": len({r["predictions"][0] for r in rows}),
        "rows": rows,
    }


def checkpoint_answers(checkpoint, spm_model_file, heldout_path, max_seq_length, cache_path):
    """`score` of the checkpoint (a ckpt-N prefix) on `heldout_path`'s cloze items, cached at `cache_path` for its
    step."""
    from benchmarks.common import cached_json

    def answers():
        from albert_tf.models.mask_filler import MaskFiller

        filler = MaskFiller(checkpoint, spm_model_file=spm_model_file)
        return score(filler, cloze_items(heldout_path, filler.tokenizer), max_seq_length)

    return cached_json(cache_path, {"step": int(checkpoint.rsplit("-", 1)[1])}, answers)


def markdown(result, shown=12):
    lines = [f"{result['items']} cloze sentences from held-out documents: top-1 {result['top1_accuracy']:.2f}, "
             f"top-5 {result['top5_accuracy']:.2f} (best constant answer {result['constant_answer_accuracy']:.2f}); "
             f"{result['distinct_top1']} different top-1 answers.", "",
             "| sentence | answer | top predictions |", "|---|---|---|"]
    for row in result["rows"][:shown]:
        predictions = ", ".join(f"**{p}**" if p == row["answer"] else p for p in row["predictions"][:3])
        lines.append(f"| {row['text']} | {row['answer']} | {predictions} |")
    return "\n".join(lines) + "\n"
