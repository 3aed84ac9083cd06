r"""The in-graph tokenizer as one op against the string-op tokenizer it replaced: speed, and ids.

  python -m benchmarks.speed.in_graph_tokenizer [--paragraphs=2000] [--rounds=5]

Both tokenize the same paragraphs of the 14 MB public-domain corpus (every Nth, so they
span it) with Google's 30k-clean vocabulary (../shared/data), each inside a tf.function,
after a warm-up call:

  one op      albert_tf's TFAlbertTokenizer: tensorflow-text's FastSentencepieceTokenizer on
              the copy of the model whose normalization is ALBERT's preprocessing, then the
              `<digit>,` table
  string ops  the tokenizer it replaced, written out here as it was: TensorFlow's regex ops,
              tensorflow-text's NormalizeUTF8 and resource-based SentencepieceTokenizer, the
              `<digit>,` pieces re-encoded with ragged and regex ops
  Python      AlbertTokenizer.encode_batch, the reference (outside any graph)

Two shapes: all the paragraphs in one batch (throughput), and one paragraph per call
over the first 200 (a serving request's latency). Rounds are interleaved; medians. The
last column counts the paragraphs whose ids equal AlbertTokenizer's.

A second table times what the SQuAD serving model adds, ids with each id's byte offsets in
the raw context (`albert_tf.export_lib.token_offsets.tokenize_with_offsets`, the same
one op for ids), on every context of SQuAD v1.1 dev, against the ids alone and against the
Python alignment it mirrors (`albert_tf.text.piece_alignment.tokenize_with_alignment`), and counts
the contexts whose ids and character spans equal the Python alignment's.
"""

import argparse
import os
import statistics
import time

from benchmarks.common import RESULTS, SHARED_CORPUS, SHARED_DATA, cpu_description, markdown_table, write_results

VOCABULARY = os.path.join(SHARED_DATA, "albert_base_v2_release", "30k-clean.model")
SQUAD_DEV = os.path.join(SHARED_DATA, "squad", "dev-v1.1.json")
SINGLE_CALLS = 200


def string_op_tokenizer(model_proto, python_tokenizer):
    """The replaced in-graph tokenizer: raw strings [batch] -> ragged int32 ids."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    from albert_tf.text.albert_tokenizer import SPIECE_UNDERLINE
    from albert_tf.text.preprocessing import combining_codepoints, re2_class, whitespace_codepoints

    sentencepiece = tf_text.SentencepieceTokenizer(model=model_proto, out_type=tf.int32)
    needs_comma_split = tf.constant(python_tokenizer._needs_comma_split)
    comma_id = python_tokenizer.piece_to_id(",")

    def preprocess(texts):
        texts = tf.strings.regex_replace(texts, re2_class(whitespace_codepoints()) + "+", " ")
        texts = tf.strings.regex_replace(texts, "^ | $", "")
        texts = tf.strings.regex_replace(tf_text.normalize_utf8(texts, "NFKD"), re2_class(combining_codepoints()), "")
        return tf.strings.lower(texts, encoding="utf-8")

    def fix_leading_underline(pieces, sub_ids):
        first_ids = sub_ids[:, :1].to_tensor(default_value=0, shape=[None, 1])[:, 0]
        first = sentencepiece.id_to_string(first_ids)
        has_first = sub_ids.row_lengths() > 0
        fix = (has_first & ~tf.strings.regex_full_match(pieces, SPIECE_UNDERLINE + ".*")
               & tf.strings.regex_full_match(first, SPIECE_UNDERLINE + ".*"))
        stripped = tf.strings.regex_replace(first, "^" + SPIECE_UNDERLINE, "")
        drop_first = fix & tf.equal(stripped, "")
        replaced_first = tf.where(fix & ~drop_first, sentencepiece.string_to_id(stripped), first_ids)
        first_column = tf.RaggedTensor.from_row_lengths(tf.boolean_mask(replaced_first, has_first & ~drop_first),
                                                        tf.cast(has_first & ~drop_first, tf.int64))
        return tf.concat([first_column, sub_ids[:, 1:]], axis=1)

    def split_digit_commas(ids):
        flat = ids.flat_values
        needs = tf.gather(needs_comma_split, flat)
        where = tf.where(needs)[:, 0]
        pieces = sentencepiece.id_to_string(tf.gather(flat, where))
        prefixes = tf.strings.regex_replace(pieces, ",$", "")
        sub_ids = sentencepiece.tokenize(tf.strings.regex_replace(prefixes, SPIECE_UNDERLINE, ""))
        sub_ids = fix_leading_underline(pieces, sub_ids)
        comma = tf.fill([tf.shape(where)[0], 1], comma_id)
        replacements = tf.concat([sub_ids, tf.RaggedTensor.from_tensor(comma)], axis=1)
        count = tf.shape(flat, out_type=tf.int64)[0]
        replacement_lengths = tf.scatter_nd(where[:, None], replacements.row_lengths(), [count])
        expanded = tf.RaggedTensor.from_row_lengths(replacements.flat_values, replacement_lengths)
        kept = tf.RaggedTensor.from_row_lengths(tf.boolean_mask(flat, ~needs), tf.cast(~needs, tf.int64))
        per_token = tf.concat([expanded, kept], axis=1)
        return tf.RaggedTensor.from_row_splits(per_token, ids.row_splits).merge_dims(1, 2)

    return lambda texts: split_digit_commas(sentencepiece.tokenize(preprocess(texts)))


def corpus_sample(count):
    with open(SHARED_CORPUS, encoding="utf-8") as f:
        paragraphs = [line for line in f.read().splitlines() if line]
    return paragraphs[::max(1, len(paragraphs) // count)][:count]


def graph_path(function, batch, singles):
    """(the whole batch, one call per single text) through a tf.function, each output fetched."""
    def fetch(outputs):
        return [value.numpy() for value in output_tensors(outputs)]

    return (lambda: fetch(function(batch)), lambda: [fetch(function(single)) for single in singles])


def output_tensors(outputs):
    """A tf.function's outputs as a list of tensors (a ragged tensor: its values)."""
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    return [getattr(output, "flat_values", output) for output in outputs]


def interleaved_rounds(paths, single_calls, rounds):
    """{name: {"batch_s": [...], "single_ms": [...]}}: each path's two callables (the whole batch, then one call
    per single text) timed in turn, path after path, `rounds` times."""
    times = {name: {"batch_s": [], "single_ms": []} for name in paths}
    for _ in range(rounds):
        for name, (whole_batch, one_per_call) in paths.items():
            started = time.perf_counter()
            whole_batch()
            times[name]["batch_s"].append(time.perf_counter() - started)
            started = time.perf_counter()
            one_per_call()
            times[name]["single_ms"].append(1000 * (time.perf_counter() - started) / single_calls)
    return times


def squad_contexts():
    import json

    with open(SQUAD_DEV, encoding="utf-8") as f:
        return [paragraph["context"] for article in json.load(f)["data"] for paragraph in article["paragraphs"]]


def offsets_table(tf_tokenizer, python, rounds):
    """Markdown and record: ids with offsets in-graph against ids alone and the Python alignment."""
    import tensorflow as tf

    from albert_tf.export_lib.token_offsets import tokenize_with_offsets
    from albert_tf.text.piece_alignment import tokenize_with_alignment

    contexts = squad_contexts()
    offsets = tf.function(lambda batch: tokenize_with_offsets(tf_tokenizer, batch))
    # Every output is fetched: a tf.function runs only the ops its outputs need.
    functions = {"ids alone (TFAlbertTokenizer)": tf.function(lambda batch: [tf_tokenizer(batch).flat_values]),
                 "ids and offsets (tokenize_with_offsets)":
                     tf.function(lambda batch: [value.flat_values for value in offsets(batch)])}
    batch = tf.constant(contexts)
    singles = [tf.constant([text]) for text in contexts[:SINGLE_CALLS]]
    ids, starts, ends = (value.to_list() for value in offsets(batch))
    equal = 0
    for text, row_ids, row_starts, row_ends in zip(contexts, ids, starts, ends):
        aligned = tokenize_with_alignment(python, text)
        raw = text.encode("utf-8")
        equal += (row_ids == aligned.ids and [len(raw[:o].decode("utf-8")) for o in row_starts] == aligned.starts
                  and [len(raw[:o].decode("utf-8")) for o in row_ends] == aligned.ends)
    for function in functions.values():
        function(batch)
        function(singles[0])
    paths = {name: graph_path(function, batch, singles) for name, function in functions.items()}
    paths["Python (tokenize_with_alignment)"] = (
        lambda: [tokenize_with_alignment(python, text) for text in contexts],
        lambda: [tokenize_with_alignment(python, text) for text in contexts[:SINGLE_CALLS]])
    times = interleaved_rounds(paths, len(singles), rounds)
    medians = {name: {key: statistics.median(values) for key, values in row.items()} for name, row in times.items()}
    reference = medians["ids and offsets (tokenize_with_offsets)"]
    rows = [(name, f"{len(contexts) / row['batch_s']:,.0f}", f"{row['batch_s'] / reference['batch_s']:.2f}x",
             f"{row['single_ms']:.2f}", f"{row['single_ms'] / reference['single_ms']:.2f}x")
            for name, row in medians.items()]
    text = (f"\nIds with byte offsets (what SQuAD serving runs) on all {len(contexts):,} contexts of SQuAD v1.1 dev; "
            f"one context per call over the first {SINGLE_CALLS}; ids and character spans equal to the Python "
            f"alignment's on {equal:,} of {len(contexts):,} contexts.\n\n"
            + markdown_table(["path", "contexts/s (one batch)", "time vs ids and offsets",
                              "ms per context (one per call)", "time vs ids and offsets"], rows) + "\n")
    return text, {"contexts": len(contexts), "equal_to_python": equal, "times": times, "medians": medians}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paragraphs", type=int, default=2000, help="corpus paragraphs tokenized (default 2000)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default 5)")
    parser.add_argument("--results_dir", default=RESULTS, help="where in_graph_tokenizer.{md,json} go")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    texts = corpus_sample(args.paragraphs)
    with open(VOCABULARY, "rb") as f:
        model_proto = f.read()
    python = AlbertTokenizer(model_proto=model_proto)
    started = time.perf_counter()
    one_op = TFAlbertTokenizer(model_proto)
    build_s = time.perf_counter() - started
    graphs = {"one op (TFAlbertTokenizer)": one_op, "string ops (replaced)": string_op_tokenizer(model_proto, python)}
    functions = {name: tf.function(lambda batch, tokenize=tokenize: tokenize(batch))
                 for name, tokenize in graphs.items()}
    batch = tf.constant(texts)
    singles = [tf.constant([text]) for text in texts[:SINGLE_CALLS]]
    expected = python.encode_batch(texts)
    equal = {}
    for name, function in functions.items():  # warm-up: traces, and the ids to compare
        got = function(batch).to_list()
        equal[name] = sum(list(want) == row for want, row in zip(expected, got))
        function(singles[0])
    paths = {name: graph_path(function, batch, singles) for name, function in functions.items()}
    paths["Python (AlbertTokenizer)"] = (lambda: python.encode_batch(texts),
                                         lambda: [python.encode(text) for text in texts[:SINGLE_CALLS]])
    times = interleaved_rounds(paths, len(singles), args.rounds)
    medians = {name: {key: statistics.median(values) for key, values in row.items()} for name, row in times.items()}
    reference = medians["string ops (replaced)"]
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    rows = [(name, f"{len(texts) / row['batch_s']:,.0f}", f"{megabytes / row['batch_s']:.2f}",
             f"{reference['batch_s'] / row['batch_s']:.2f}x", f"{row['single_ms']:.2f}",
             f"{reference['single_ms'] / row['single_ms']:.2f}x",
             f"{equal[name]:,} / {len(texts):,}" if name in equal else "(reference)")
            for name, row in medians.items()]
    text = (f"{len(texts):,} paragraphs of the 14 MB corpus ({megabytes:.1f} MB), vocabulary 30k-clean.model, "
            f"lowercased, accents stripped; median of {args.rounds} interleaved rounds; one paragraph per call over "
            f"the first {SINGLE_CALLS}; {cpu_description()}. Building the one-op tokenizer (its model copy and "
            f"table) took {build_s:.1f} s in this process.\n\n"
            + markdown_table(["tokenizer", "paragraphs/s (one batch)", "MB/s", "speed vs string ops",
                              "ms per paragraph (one per call)", "speed vs string ops", "ids equal to Python's"],
                             rows) + "\n")
    offsets_text, offsets_record = offsets_table(one_op, python, args.rounds)
    write_results(args.results_dir, "in_graph_tokenizer", text + offsets_text,
                  {"args": vars(args), "paragraphs": len(texts), "megabytes": megabytes, "build_s": build_s,
                   "times": times, "medians": medians, "ids_equal": equal, "offsets": offsets_record,
                   "cpu": cpu_description()})


if __name__ == "__main__":
    main()
