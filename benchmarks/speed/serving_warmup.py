r"""First-request latency of an XLA serving export, with and without its warm-up records replayed.

  python -m benchmarks.speed.serving_warmup [--preset=albert_base_v2] [--seq_length=128]

Exports a random-weight encoder with `python -m albert_tf.export --serving_xla`
(default warm-up batch sizes 1, 2, 4, 8), then in two fresh processes loads the
serving SavedModel and times the first request of each request shape: "cold"
calls the model straight after loading; "warmed" first replays the export's
assets.extra/tf_serving_warmup_requests through the signature, as TF Serving
does while it loads a model (the replay time is what the server's load takes
longer). Then the second request of each shape, the steady state, for reference.
Random weights (latency does not depend on them); SentencePiece trained as in
serving_latency.py.
"""

import argparse
import json
import os
import subprocess
import tempfile
import time

from benchmarks.common import REPO, RESULTS, markdown_table, module_command, write_results
from benchmarks.speed.serving_latency import VOCAB_SIZE, make_corpus

# (batch size, words per text): full rows (truncated to --seq_length) and short ones, at warmed batch sizes.
SHAPES = ((1, 400), (1, 10), (8, 400), (8, 10))


def measure(serving_dir, replay):
    """Runs in a fresh process: {load_s, replay_s, first_ms, second_ms per shape}."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401
    from tensorflow_serving.apis import prediction_log_pb2

    from albert_tf.export_lib.serving_warmup import WARMUP_FILE

    started = time.perf_counter()
    signature = tf.saved_model.load(serving_dir).signatures["serving_default"]
    result = {"load_s": time.perf_counter() - started, "replay_s": 0.0, "requests": 0}
    no_second_segments = tf.constant([], tf.string)
    if replay:
        started = time.perf_counter()
        path = os.path.join(serving_dir, WARMUP_FILE)
        for record in tf.data.TFRecordDataset(path):
            request = prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
            inputs = {name: tf.constant(tf.make_ndarray(tensor)) for name, tensor in request.inputs.items()}
            signature(**{"text_b": no_second_segments, **inputs})
            result["requests"] += 1
        result["replay_s"] = time.perf_counter() - started
    for batch, words in SHAPES:
        texts = tf.constant([" ".join(["serving"] * words)] * batch)
        for call in ("first_ms", "second_ms"):
            started = time.perf_counter()
            signature(text=texts, text_b=no_second_segments)["pooled_output"].numpy()
            result.setdefault(call, []).append(1000 * (time.perf_counter() - started))
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="albert_base_v2", help="model architecture (default albert_base_v2)")
    parser.add_argument("--seq_length", type=int, default=128, help="the export's max_seq_length (default 128)")
    parser.add_argument("--results_dir", default=RESULTS,
                        help="where serving_warmup.{md,json} go")
    parser.add_argument("--measure", choices=["cold", "warmed"], help=argparse.SUPPRESS)  # the child processes
    parser.add_argument("--serving_dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.measure:
        print(json.dumps(measure(args.serving_dir, replay=args.measure == "warmed")))
        return

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.export_lib.exporter import DEFAULT_WARMUP_BATCH_SIZES, export
    from albert_tf.networks.albert_encoder import AlbertEncoder
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.data.vocabulary import train

    work = tempfile.mkdtemp(prefix="serving_warmup-")
    corpus, corpus_source = make_corpus(work)
    train([corpus], os.path.join(work, "spm"), vocab_size=VOCAB_SIZE, input_format="paragraphs",
          hard_vocab_limit=False, num_threads=os.cpu_count())
    spm_file = os.path.join(work, "spm.model")
    config = AlbertConfig.from_dict({**AlbertConfig.from_name_or_path(args.preset).to_dict(),
                                     "vocab_size": AlbertTokenizer(spm_file).vocab_size})
    checkpoint = write_model_dir(AlbertEncoder(config), os.path.join(work, "checkpoint"), "encoder",
                                 files={"spm.model": spm_file})
    serving_dir = export(checkpoint, os.path.join(work, "export"), max_seq_length=args.seq_length,
                         serving_xla=True)["serving"]
    results = {}
    for mode in ("cold", "warmed"):
        output = subprocess.run([*module_command(__spec__.name), f"--measure={mode}", f"--serving_dir={serving_dir}"],
                                capture_output=True, text=True, check=True, cwd=REPO).stdout
        results[mode] = json.loads(output.strip().splitlines()[-1])

    cold, warmed = results["cold"], results["warmed"]
    rows = [(batch, f"{'full' if words * 2 > args.seq_length else 'short'} ({words} words)",
             f"{cold['first_ms'][index]:,.0f}", f"{warmed['first_ms'][index]:,.0f}",
             f"{warmed['second_ms'][index]:,.0f}") for index, (batch, words) in enumerate(SHAPES)]
    text = (f"{args.preset} (random weights), `--serving_xla` export at max_seq_length {args.seq_length}, "
            f"{os.cpu_count()} CPU cores; loading took {cold['load_s']:.1f} s cold and {warmed['load_s']:.1f} s + "
            f"{warmed['replay_s']:.1f} s replaying the {warmed['requests']} warm-up requests (batch sizes "
            f"{', '.join(map(str, DEFAULT_WARMUP_BATCH_SIZES))} at each length bucket) warmed.\n\n"
            + markdown_table(["batch", "tokens per row", "first request, cold (ms)", "first request, warmed (ms)",
                              "second request (ms)"], rows)
            + f"\n\nSentencePiece trained on {corpus_source}.\n")
    write_results(args.results_dir, "serving_warmup", text, {"args": vars(args), "corpus": corpus_source, **results})


if __name__ == "__main__":
    main()
