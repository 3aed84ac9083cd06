"""Splits a corpus into training and held-out documents, so that a model is evaluated on text it never saw.

Documents are separated by blank lines (both input formats of create_pretraining_data);
every `every`-th document (the 10th, 20th, ...) is held out. The corpus (.gz read
decompressed) is streamed
line by line, and each output appears complete or not at all.
"""

import contextlib
import gzip


def split_documents(corpus, train_path, heldout_path, every=10):
    """Writes the kept and held-out documents; returns (kept, held out) document counts."""
    from albert_tf.file_utils import atomic_output

    if every < 2:
        raise ValueError(f"every must be >= 2 (every `every`-th document is held out), got {every}")
    counts = [0, 0]
    # Both outputs through exclusive temporaries, renamed only once the whole corpus is read and the split
    # holds out something: a failure (or a refusal below) leaves neither.
    with contextlib.ExitStack() as files:
        outputs = [files.enter_context(atomic_output(path)) for path in (train_path, heldout_path)]
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
        if not counts[1]:
            raise ValueError(f"{corpus}: {counts[0]} document(s) (blank-line separated); holding out every {every}th "
                             f"needs at least {every}")
    return counts[0], counts[1]
