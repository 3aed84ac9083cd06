"""What pretraining TFRecords hold, read from the records themselves: the checks that the data is what
ALBERT expects.

Instances, tokens, fraction masked, masked spans by length in words (vs the 6/11,
3/11, 2/11 n-gram proposal), the [MASK]/keep/random split of masked tokens (vs
80/10/10), SOP (or NSP) label balance, the sequence-length histogram and the
fraction of short sequences; beside them, when the creation metadata is present,
its exact counts (the accepted span lengths, before adjacent spans merge; short
target lengths).
"""

import numpy as np



def span_lengths_in_words(positions, token_boundary, separators=frozenset()):
    """Words per maximal run of consecutive masked positions (one sequence).

    Adjacent spans chosen separately merge into one run here: the files do not
    record span boundaries. A run goes on across a [SEP] (its position in
    `separators`), as words and spans do in the original's masking: a
    continuation piece right after [SEP] is part of A's last word.
    """
    lengths = []
    run_words = 0
    previous = None
    for position in positions:
        if previous is not None and (position == previous + 1
                                     or (position == previous + 2 and previous + 1 in separators)):
            run_words += int(token_boundary[position])
        else:
            if previous is not None:
                lengths.append(run_words)
            run_words = 1
        previous = position
    if previous is not None:
        lengths.append(run_words)
    return lengths


def compute_stats(files, max_instances=0, batch_size=1024):
    """Statistics of the records; a corrupt or truncated file is reported by name (ValueError)."""
    import tensorflow as tf

    from albert_tf.data.pretraining_dataset import read_error

    try:
        return _compute_stats(files, max_instances, batch_size)
    except tf.errors.OpError as error:
        raise read_error(files, error) from None


def _compute_stats(files, max_instances, batch_size):
    import tensorflow as tf

    from albert_tf.data.pretraining_dataset import compression_of, data_special_ids, feature_spec, infer_shapes

    max_seq_length, max_predictions = infer_shapes(files)
    special_ids = data_special_ids(files)  # the data's vocabulary's [MASK] and [SEP]
    spec = feature_spec(max_seq_length, max_predictions, with_token_boundary=True)
    dataset = tf.data.Dataset.from_tensor_slices(files).interleave(
        lambda path: tf.data.TFRecordDataset(path, compression_type=compression_of(files[0])), cycle_length=1
    )
    if max_instances:
        dataset = dataset.take(max_instances)
    dataset = dataset.batch(batch_size).map(lambda records: tf.io.parse_example(records, spec))

    instances = tokens = masked = 0
    replacements = np.zeros(3, np.int64)
    labels = np.zeros(2, np.int64)
    length_histogram = np.zeros(max_seq_length + 1, np.int64)
    run_lengths = {}
    largest_id = 0
    for batch in dataset.as_numpy_iterator():
        mask = batch["input_mask"]
        lengths = mask.sum(axis=1)
        weights = batch["masked_lm_weights"] > 0
        instances += len(mask)
        tokens += int(lengths.sum())
        masked += int(weights.sum())
        length_histogram += np.bincount(lengths, minlength=max_seq_length + 1)
        labels += np.bincount(batch["next_sentence_labels"][:, 0], minlength=2)[:2]
        largest_id = max(largest_id, int(batch["input_ids"].max()), int(batch["masked_lm_ids"].max()))
        rows, slots = np.nonzero(weights)
        positions = batch["masked_lm_positions"][rows, slots]
        shown = batch["input_ids"][rows, positions]
        truth = batch["masked_lm_ids"][rows, slots]
        at_mask = shown == special_ids.mask
        replacements += [at_mask.sum(), (~at_mask & (shown == truth)).sum(), (~at_mask & (shown != truth)).sum()]
        for row in range(len(mask)):
            row_positions = sorted(batch["masked_lm_positions"][row][weights[row]].tolist())
            separators = set(np.flatnonzero(batch["input_ids"][row] == special_ids.sep).tolist())
            for words in span_lengths_in_words(row_positions, batch["token_boundary"][row], separators):
                run_lengths[words] = run_lengths.get(words, 0) + 1
    if instances == 0:
        raise ValueError(f"{files[0]}: no instances")
    return {
        "files": len(files),
        "max_seq_length": max_seq_length,
        "max_predictions_per_seq": max_predictions,
        "instances": instances,
        "tokens": tokens,
        "masked_tokens": masked,
        "fraction_masked": masked / tokens,
        "largest_token_id": largest_id,
        "masked_runs_by_words": {str(k): run_lengths[k] for k in sorted(run_lengths)},
        "replacements": dict(zip(("mask", "keep", "random"), replacements.tolist())),
        "labels": {"0": int(labels[0]), "1": int(labels[1])},
        "length_histogram": {str(length): int(count) for length, count in enumerate(length_histogram) if count},
        "fraction_full_length": float(length_histogram[max_seq_length] / instances),
        "fraction_short": float(length_histogram[: max_seq_length // 2].sum() / instances),
    }


def _fractions(counts):
    total = sum(counts.values())
    return {key: value / total for key, value in counts.items()} if total else {}


def format_report(stats, metadata=None):
    from albert_tf.data.masking import MaskingConfig

    lines = [
        f"Files: {stats['files']}   max_seq_length {stats['max_seq_length']}, max_predictions_per_seq "
        f"{stats['max_predictions_per_seq']}",
        f"Instances: {stats['instances']:,}   tokens: {stats['tokens']:,} "
        f"(mean length {stats['tokens'] / stats['instances']:.1f})   largest token id: {stats['largest_token_id']}",
        f"Masked: {stats['masked_tokens']:,} tokens = {stats['fraction_masked']:.2%} of tokens "
        f"({stats['masked_tokens'] / stats['instances']:.1f} per sequence)",
    ]
    replacement = _fractions(stats["replacements"])
    lines.append("Masked tokens shown as: " + ", ".join(
        f"{name} {replacement[name]:.1%}" for name in ("mask", "keep", "random")) + "   (target 80% / 10% / 10%)")
    ngram = 3
    if metadata:
        ngram = metadata["config"]["instances"]["masking"]["ngram"]
        favor = metadata["config"]["instances"]["masking"]["favor_shorter_ngram"]
    else:
        favor = True
    target = MaskingConfig(ngram=ngram, favor_shorter_ngram=favor).ngram_probabilities()
    runs = _fractions({int(k): v for k, v in stats["masked_runs_by_words"].items()})
    lines.append("Masked runs by words (adjacent spans merge): " + ", ".join(
        f"{n}: {runs.get(n, 0):.1%}" for n in range(1, ngram + 2)) + f" ({ngram + 1}+ merged)")
    lines.append("  n-gram proposal p(n) ∝ 1/n: " + ", ".join(f"{n}: {p:.1%}" for n, p in enumerate(target, 1))
                 + " (overlaps and the budget reject long spans more often, as in the original)")
    if metadata:
        chosen = _fractions({int(k): v for k, v in metadata["statistics"]["ngram_lengths"].items()})
        lines.append("  spans accepted at creation, in words: " + ", ".join(
            f"{n}: {chosen.get(n, 0):.1%}" for n in range(1, ngram + 1)))
    labels = stats["labels"]
    total = labels["0"] + labels["1"]
    lines.append(f"Labels: 0 (in order) {labels['0'] / total:.1%}, 1 (swapped / random next) "
                 f"{labels['1'] / total:.1%}   (target 50% / 50%)")
    lines.append(f"Full-length sequences: {stats['fraction_full_length']:.1%}   shorter than half: "
                 f"{stats['fraction_short']:.1%}")
    if metadata:
        short = metadata["statistics"]["short_target_instances"] / metadata["statistics"]["instances"]
        lines.append(f"  drawn a short target length at creation: {short:.1%} (short_seq_prob "
                     f"{metadata['config']['instances']['short_seq_prob']})")
    histogram = {int(k): v for k, v in stats["length_histogram"].items()}
    bucket = max(1, stats["max_seq_length"] // 8)
    lines.append("Sequence lengths:")
    for low in range(0, stats["max_seq_length"] + 1, bucket):
        high = min(low + bucket - 1, stats["max_seq_length"])
        count = sum(v for k, v in histogram.items() if low <= k <= high)
        bar = "#" * int(round(40 * count / stats["instances"]))
        lines.append(f"  {low:4d}-{high:4d}: {count / stats['instances']:6.1%} {bar}")
    if metadata and stats["largest_token_id"] >= metadata["vocab_size"]:
        lines.append(f"WARNING: token id {stats['largest_token_id']} >= vocab_size {metadata['vocab_size']}")
    return "\n".join(lines)
