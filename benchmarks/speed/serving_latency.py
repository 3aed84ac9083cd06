r"""Serving latency: albert_tf's exported serving SavedModel vs KerasHub's ALBERT exported the same way.

  python -m benchmarks.speed.serving_latency [--preset=albert_base_v2] [--seq_length=128] \
      [--calls_batch1=30] [--calls_batch32=6] [--json=results.json]

All are raw text in -> pooled embedding out, tokenized in-graph (tensorflow-text
SentencePiece, the same model), saved as SavedModels, reloaded with
`tf.saved_model.load` and called through their signatures in one process on the
same texts: rows long enough to fill --seq_length tokens, and short rows (the
first --short_words words of the same paragraphs, as a query or a title would be):

  albert_tf  `python -m albert_tf.export`'s serving/NAME/1 `serving_default`: the
             original ALBERT normalization (whitespace, quotes, NFKD, accents,
             lowercase, digit-comma split), packing, encoder, pooled output and
             the L2-normalized mean embedding
  albert_tf --serving_xla  the same export with the encoder as XLA programs on
             bucketed shapes (lengths 16, 32, 64, 128; batch 1, 2, 4, 8, 16, 24, 32);
             with --serving_outputs=pooled_output it returns what KerasHub's
             does, the pooled output alone (the last layer computed at [CLS] only)
  KerasHub   keras_hub.models.AlbertBackbone (same config) behind
             AlbertTextClassifierPreprocessor, exported with
             keras.export.ExportArchive; its tokenizer runs SentencePiece only
             (no ALBERT normalization): slightly less work per request
  KerasHub, backbone in XLA  the same with the backbone call wrapped in
             tf.function(jit_compile=True) by this script (KerasHub has no such
             option; its preprocessor pads to --seq_length, so one shape per batch)

The warm-up calls compile the XLA programs; the timed calls reuse them.

Random weights (latency does not depend on them). The SentencePiece model is
trained on the fly: on ../shared/data/corpus when present, else on the
docstring corpus albert_tf generates (albert_tf.data.builtin_corpus). Calls of
all five are interleaved in two rounds, so drift in machine load hits all.
Reports p50 and p99 (nearest rank: with fewer than 100 calls, the slowest call)
per batch size, and the p50 ratios against KerasHub's export and against the
faster of the two KerasHub configurations.
"""

import argparse
import json
import math
import os
import tempfile
import time


from benchmarks.common import RESULTS, SHARED_CORPUS, portable

CORPUS_BYTES = 3_000_000
VOCAB_SIZE = 8000


def percentile(values, fraction):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def time_calls(function, texts, calls):
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        function(texts)
        seconds.append(time.perf_counter() - start)
    return seconds


def make_corpus(directory):
    """(corpus path, where it came from): the first CORPUS_BYTES of the shared corpus, else a generated one."""
    path = os.path.join(directory, "corpus.txt")
    if os.path.isfile(SHARED_CORPUS):
        with open(SHARED_CORPUS, encoding="utf-8") as source, open(path, "w", encoding="utf-8") as target:
            target.write(source.read(CORPUS_BYTES))
        return path, f"{SHARED_CORPUS} (first {CORPUS_BYTES // 1_000_000} MB)"
    from albert_tf.data.builtin_corpus import write_corpus

    write_corpus(path, max_bytes=CORPUS_BYTES)
    return path, "albert_tf's generated docstring corpus"


ALBERT_TF_EXPORTS = {  # implementation name: export() arguments
    "albert_tf": {},
    "albert_tf --serving_xla": {"serving_xla": True},
    "albert_tf --serving_xla --serving_outputs=pooled_output": {"serving_xla": True,
                                                                "serving_outputs": ["pooled_output"]},
}


def export_albert_tf(config, spm_file, seq_length, directory):
    """{implementation name: export paths} for ALBERT_TF_EXPORTS, from one checkpoint."""
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.export_lib.exporter import export
    from albert_tf.networks.albert_encoder import AlbertEncoder

    checkpoint = write_model_dir(AlbertEncoder(config), os.path.join(directory, "checkpoint"), "encoder",
                                 files={"spm.model": spm_file})
    return {name: export(checkpoint, os.path.join(directory, f"export_{index}"), max_seq_length=seq_length, **arguments)
            for index, (name, arguments) in enumerate(ALBERT_TF_EXPORTS.items())}


def export_keras_hub(config, spm_file, seq_length, directory, xla=False):
    import keras
    import keras_hub
    import tensorflow as tf

    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers, num_heads=config.num_attention_heads,
        embedding_dim=config.embedding_size, hidden_dim=config.hidden_size, intermediate_dim=config.intermediate_size,
        num_groups=config.num_hidden_groups, num_inner_repetitions=config.inner_group_num,
        max_sequence_length=config.max_position_embeddings, num_segments=config.type_vocab_size, dropout=0.0)
    with open(spm_file, "rb") as f:
        tokenizer = keras_hub.models.AlbertTokenizer(proto=f.read())
    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(tokenizer, sequence_length=seq_length)
    preprocessor.build(None)
    archive = keras.export.ExportArchive()
    archive.track(backbone)
    archive.track(preprocessor)

    def pooled_output(inputs):
        return backbone(inputs)["pooled_output"]

    # With xla the backbone runs as one XLA program (its tokenizer cannot: string ops); KerasHub has no
    # such export option, so this is our wrapping: the peer's best configuration, not its default.
    encode = tf.function(pooled_output, jit_compile=True) if xla else pooled_output

    def serve(text):
        return {"pooled_output": encode(preprocessor(text))}

    archive.add_endpoint("serve", serve, input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    path = os.path.join(directory, "keras_hub_xla" if xla else "keras_hub")
    archive.write_out(path, verbose=False)
    return path, preprocessor


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="albert_base_v2", help="model architecture (default albert_base_v2)")
    parser.add_argument("--seq_length", type=int, default=128, help="tokens per request row (default 128)")
    parser.add_argument("--calls_batch1", type=int, default=30, help="timed calls per model at batch 1 (default 30)")
    parser.add_argument("--calls_batch32", type=int, default=6, help="timed calls per model at batch 32 (default 6)")
    parser.add_argument("--short_words", type=int, default=16,
                        help="words per short request row (default 16); 0 leaves the short rows out")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per model and batch first (default 2)")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--results_dir", default=RESULTS,
                        help="writes serving_latency.md (the table) here")
    args = parser.parse_args(argv)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.data.vocabulary import train

    started = time.perf_counter()
    work = tempfile.mkdtemp(prefix="serving_latency-")
    corpus, corpus_source = make_corpus(work)
    train([corpus], os.path.join(work, "spm"), vocab_size=VOCAB_SIZE, input_format="paragraphs",
          hard_vocab_limit=False, num_threads=os.cpu_count())
    spm_file = os.path.join(work, "spm.model")
    tokenizer = AlbertTokenizer(spm_file)
    config = AlbertConfig.from_dict({**AlbertConfig.from_name_or_path(args.preset).to_dict(),
                                     "vocab_size": tokenizer.vocab_size})
    with open(corpus, encoding="utf-8") as f:
        paragraphs = [line for line in f.read().splitlines() if len(line.split()) > 2 * args.seq_length]
    if len(paragraphs) < 32:
        raise SystemExit(f"{corpus_source}: only {len(paragraphs)} paragraphs fill {args.seq_length} tokens; need 32")
    print(f"SentencePiece ({tokenizer.vocab_size} pieces) trained on {corpus_source}; exporting...", flush=True)

    exports = export_albert_tf(config, spm_file, args.seq_length, work)
    ours_paths = exports["albert_tf"]
    peer_path, peer_preprocessor = export_keras_hub(config, spm_file, args.seq_length, work)
    peer_xla_path, _ = export_keras_hub(config, spm_file, args.seq_length, work, xla=True)
    no_second_segments = tf.constant([], tf.string)

    def albert_tf_call(paths):
        signature = tf.saved_model.load(paths["serving"]).signatures["serving_default"]
        return lambda texts: signature(text=texts, text_b=no_second_segments)["pooled_output"].numpy()

    def keras_hub_call(path):
        signature = tf.saved_model.load(path).signatures["serve"]
        return lambda texts: signature(text=texts)["pooled_output"].numpy()

    implementations = {name: albert_tf_call(paths) for name, paths in exports.items()}
    implementations["KerasHub"] = keras_hub_call(peer_path)
    implementations["KerasHub, backbone in XLA"] = keras_hub_call(peer_xla_path)
    # Every request row fills seq_length tokens in both.
    sample = tf.constant(paragraphs[:32])
    ours_lengths = tf.saved_model.load(ours_paths["preprocessing"])(sample)["input_mask"].numpy().sum(1)
    peer_lengths = np.asarray(peer_preprocessor(sample)["padding_mask"]).sum(1)
    assert set(ours_lengths) == set(peer_lengths) == {args.seq_length}, (ours_lengths, peer_lengths)
    setup_seconds = time.perf_counter() - started

    short_texts = [" ".join(p.split()[:args.short_words]) for p in paragraphs[:32]]
    short_tokens = (tf.saved_model.load(ours_paths["preprocessing"])(tf.constant(short_texts))["input_mask"]
                    .numpy().sum(1)) if args.short_words else None
    kinds = [("full", paragraphs, f"{args.seq_length} (full)")]
    if args.short_words:
        kinds.append(("short", short_texts, f"{short_tokens.min()}-{short_tokens.max()} ({args.short_words} words)"))

    # What a request costs outside the encoder: albert_tf's preprocessing SavedModel alone (normalization,
    # SentencePiece, packing to seq_length), the same graph as the serving model's first part.
    preprocessing = tf.saved_model.load(ours_paths["preprocessing"])

    def preprocess(texts):
        return preprocessing(texts)["input_mask"].numpy()

    fastest = list(ALBERT_TF_EXPORTS)[-1]

    records, rows, outside_rows = [], [], []
    for (kind, source, tokens), (batch, calls) in ((k, b) for k in kinds
                                                    for b in ((1, args.calls_batch1), (32, args.calls_batch32))):
        texts = tf.constant(source[:batch])
        for function in implementations.values():
            time_calls(function, texts, args.warmup)
        timings = {name: [] for name in implementations}
        for round_calls in (calls // 2, calls - calls // 2):
            for name, function in implementations.items():
                timings[name].extend(time_calls(function, texts, round_calls))
        peer_p50 = percentile(timings["KerasHub"], 0.5)
        best_peer_p50 = min(percentile(timings[name], 0.5) for name in ("KerasHub", "KerasHub, backbone in XLA"))
        for name, seconds in timings.items():
            p50, p99 = percentile(seconds, 0.5), percentile(seconds, 0.99)
            records.append({"implementation": name, "rows": kind, "tokens_per_row": tokens, "batch": batch,
                            "calls": calls, "p50_ms": p50 * 1e3,
                            "p99_ms": p99 * 1e3, "texts_per_second_at_p50": batch / p50,
                            "p50_speedup_vs_keras_hub": peer_p50 / p50,
                            "p50_speedup_vs_best_keras_hub": best_peer_p50 / p50})
            rows.append(f"| {name} | {tokens} | {batch} | {calls} | {p50 * 1e3:,.1f} | {p99 * 1e3:,.1f} | {batch / p50:,.1f} | "
                        f"{peer_p50 / p50:.2f}x | {best_peer_p50 / p50:.2f}x |")
        time_calls(preprocess, texts, args.warmup)
        outside = percentile(time_calls(preprocess, texts, calls), 0.5)
        shares = {name: outside / percentile(timings[name], 0.5) for name in ("albert_tf", fastest)}
        records.append({"implementation": "albert_tf preprocessing alone", "rows": kind, "tokens_per_row": tokens,
                        "batch": batch, "calls": calls, "p50_ms": outside * 1e3,
                        "share_of_p50": shares})
        outside_rows.append(f"| {tokens} | {batch} | {outside * 1e3:,.1f} | {100 * shares['albert_tf']:.0f}% | "
                            f"{100 * shares[fastest]:.0f}% |")
        print(f"{kind} rows, batch {batch} done", flush=True)

    load = os.getloadavg()[1]  # other processes' share of the CPU shows in every figure
    header = (f"{args.preset} (random weights, vocab {config.vocab_size}), seq {args.seq_length}, raw text in -> pooled "
              f"embedding, TF {tf.__version__}, {os.cpu_count()} CPU cores (5-minute load average at the end: "
              f"{load:.1f}); {args.warmup} warm-up calls, then calls interleaved in 2 rounds.\n\n"
              "| implementation | tokens per row | batch | calls | p50 ms | p99 ms | texts/s at p50 | "
              "p50 speed vs KerasHub's export | vs the faster KerasHub |\n"
              "|---|---|---|---|---|---|---|---|---|\n")
    outside_table = ("\n\nOutside the encoder: albert_tf's preprocessing SavedModel alone (normalization, SentencePiece, "
                     "packing), p50, and its share of the serving p50 above:\n\n"
                     f"| tokens per row | batch | preprocessing p50 ms | share of albert_tf | share of {fastest} |\n"
                     "|---|---|---|---|---|\n" + "\n".join(outside_rows))
    text = (header + "\n".join(rows) + outside_table + f"\n\n{time.perf_counter() - started:.0f} s in all, {setup_seconds:.0f} s of "
            f"it SentencePiece training and the five exports; SentencePiece trained on {corpus_source}.\n")
    print("\n" + text)
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "serving_latency.md"), "w") as f:
        f.write(portable(text))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(portable({"args": vars(args), "vocab_size": config.vocab_size, "corpus": corpus_source,
                                "tensorflow": tf.__version__, "cpu_count": os.cpu_count(),
                                "load_average_5min": load, "results": records}), f, indent=2)


if __name__ == "__main__":
    main()
