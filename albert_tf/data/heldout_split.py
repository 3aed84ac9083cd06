"""Splits a corpus into training and held-out documents, so that a model is evaluated on text it never saw.

Documents are separated by blank lines (both input formats of create_pretraining_data);
every `every`-th document (the 10th, 20th, ...) is held out. The corpus (.gz read
decompressed) is streamed
line by line, and each output appears complete or not at all.
"""

import gzip
import os


def split_documents(corpus, train_path, heldout_path, every=10):
    """Writes the kept and held-out documents; returns (kept, held out) document counts."""
    if every < 2:
        raise ValueError(f"every must be >= 2 (every `every`-th document is held out), got {every}")
    counts = [0, 0]
    outputs = [open(path + ".tmp", "w", encoding="utf-8") for path in (train_path, heldout_path)]
    try:
        document = []

        def flush():
            if document:
                index = int(sum(counts) % every == every - 1)
                if counts[index]:
                    outputs[index].write("\n")
                outputs[index].write("".join(document))
                counts[index] += 1
                document.clear()

        # A .gz corpus is read decompressed, as every tool that reads a corpus does.
        with (gzip.open if corpus.endswith(".gz") else open)(corpus, "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    document.append(line if line.endswith("\n") else line + "\n")
                else:
                    flush()
        flush()
    except BaseException:
        for output in outputs:
            output.close()
            os.remove(output.name)
        raise
    for output in outputs:
        output.close()
    if not counts[1]:
        for output in outputs:
            os.remove(output.name)
        raise ValueError(f"{corpus}: {counts[0]} document(s) (blank-line separated); holding out every {every}th "
                         f"needs at least {every}")
    for output, path in zip(outputs, (train_path, heldout_path)):
        os.replace(output.name, path)
    return counts[0], counts[1]
