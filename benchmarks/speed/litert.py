r"""On a device: albert_tf's LiteRT files beside its SavedModel, on SST-2 and at albert_base_v2's shapes.

  python -m benchmarks.speed.litert --pretrained=/work/albert_large/runs/smallA_large [--work_dir=/tmp/albert_litert]
  python -m benchmarks.speed.litert --classifier=sst2/best        # an SST-2 classifier you already have

Two models, each exported by `albert_tf.export` as a SavedModel (the TF Serving model) and by
`albert_tf.export --format=litert` as float32, float16, dynamic-range int8 (the default) and full
int8 (calibrated on 1,000 SST-2 training sentences; written only if it passes its gate, else its
refusal is reported):

  - an SST-2 classifier fine-tuned from the project's own pretrained albert_small (--pretrained:
    run_classifier on 5,000 training sentences, 500 steps, seq 64, batch 32, AdamW 1e-4: the
    transfer benchmark's settings), or --classifier;
  - albert_base_v2's shapes with random weights, Google's 30k-clean.model (../shared/data) and
    seq 128: sizes and latency only (skipped without the release files).

On the whole SST-2 dev set (872 sentences), for the classifier: whether model.tflite's tokenizer
and packing give the Python tokenizer's ids (a .tflite of them alone, compared row by row); each
file's accuracy, its label agreement with the SavedModel, its largest |logit| difference from the
float model in TensorFlow and its largest |probability| difference from the SavedModel's.
Latency: single requests (batch 1) on 1 thread (TensorFlow's intra- and inter-op pools set to 1,
the LiteRT interpreter's num_threads=1), texts of about 10, 40 and 128+ tokens (truncated at the
model's length), the SavedModel's `serve_text` and every .tflite called in turn, two rounds
interleaved; p50 and p90 in milliseconds.

Goals (the issue's): ids 100% equal; float32 within 1e-4; dynamic-range int8 label agreement >= 99.5%
and accuracy within 0.5 point of the SavedModel; albert_base_v2 dynamic-range int8 <= 13 MB and >= 3x
faster than the SavedModel at 1 thread on medium texts.

Writes RESULTS/litert.{md,json}.
"""

import argparse
import json
import os
import random
import time

import numpy as np

from benchmarks.common import (RESULTS, SHARED_CORPUS, SHARED_DATA, child_env, cpu_description, markdown_table,
                               portable)
from benchmarks.downstream import finetune_glue, transfer
from benchmarks.speed.serving_latency import percentile

VARIANTS = ("float32", "float16", "dynamic_int8", "int8")
OFFICIAL_VOCABULARY = os.path.join(SHARED_DATA, "albert_base_v2_release", "30k-clean.model")
LENGTHS = {"short": (8, 12), "medium": (36, 44), "long": (130, 10_000)}
FINETUNING = {"max_steps": 500, "max_seq_length": 64, "learning_rate": 1e-4, "batch_size": 32, "seed": 1}
CALIBRATION_SENTENCES = 1000
GOAL_AGREEMENT, GOAL_ACCURACY_POINTS, GOAL_BASE_MB, GOAL_BASE_SPEEDUP = 0.995, 0.5, 13.0, 3.0


def read_sst2(path):
    """[(sentence, label)] of an SST-2 TSV with a header."""
    with open(path, encoding="utf-8-sig") as f:
        rows = [line.rstrip("\n").split("\t") for line in f.read().splitlines()[1:] if line.strip()]
    return [(row[0], int(row[1])) for row in rows]


def finetuned_classifier(args, work):
    """An SST-2 classifier fine-tuned from --pretrained (cached in WORK/sst2)."""
    output = os.path.join(work, "sst2")
    if os.path.exists(os.path.join(output, "best", "albert_tf.json")):
        return os.path.join(output, "best")
    data = os.path.join(work, "sst2_data")
    transfer.sst2_subset(os.path.join(args.glue_dir, "SST-2"), data, 5000)
    settings = argparse.Namespace(**FINETUNING)
    finetune_glue.run_classifier("sst-2", data, output, [f"--init_checkpoint={args.pretrained}"], settings,
                                 child_env(TF_CPP_MIN_LOG_LEVEL="3"))
    return os.path.join(output, "best")


def export_all(checkpoint, directory, calibration_file, variants=VARIANTS):
    """{variant: export directory or the refusal's message} and the SavedModel's serving directory."""
    from albert_tf.export_lib.exporter import export
    from albert_tf.export_lib.litert_export import LiteRTExportError, export_litert

    os.makedirs(directory, exist_ok=True)
    saved = os.path.join(directory, "savedmodel")
    if not os.path.isdir(saved):
        export(checkpoint, saved, serving_warmup_batch_sizes=())
    exports = {}
    for variant in variants:
        path = os.path.join(directory, variant)
        if not os.path.isdir(path):
            try:
                export_litert(checkpoint, path, quantization=variant,
                              calibration_file=calibration_file if variant == "int8" else None)
            except LiteRTExportError as refusal:
                exports[variant] = str(refusal)
                continue
        exports[variant] = path
    return exports, os.path.join(saved, "serving", "albert", "1")


def directory_mb(path):
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names) / 1e6


def texts_by_length(tokenizer, candidates, seed=0):
    """{short/medium/long: 20 texts whose token counts fall in LENGTHS}, from sentences and paragraphs."""
    rng = random.Random(seed)
    chosen = {}
    for name, (low, high) in LENGTHS.items():
        pool = [text for text in candidates if low <= len(tokenizer.encode(text)) <= high]
        if len(pool) < 20:  # cut longer texts to length
            pool += [" ".join(text.split()[:max(1, int(low * 0.8))]) for text in candidates
                     if len(text.split()) > low][:200]
            pool = [text for text in pool if low <= len(tokenizer.encode(text)) <= high]
        chosen[name] = rng.sample(pool, min(20, len(pool)))
    return chosen


def latency(callables, texts, calls):
    """{(variant, length): [seconds]} of single-text calls, variants and lengths in turn, two rounds."""
    seconds = {}
    for _ in range(2):
        for variant, call in callables.items():
            for length, pool in texts.items():
                call(pool[0])  # warm: first call of a shape
                for index in range(calls // 2):
                    start = time.perf_counter()
                    call(pool[index % len(pool)])
                    seconds.setdefault((variant, length), []).append(time.perf_counter() - start)
    return seconds


def latency_rows(model_name, seconds, sizes):
    rows = []
    for (variant, length), values in seconds.items():
        rows.append({"model": model_name, "variant": variant, "length": length, "mb": sizes[variant],
                     "p50_ms": percentile(values, 0.5) * 1000, "p90_ms": percentile(values, 0.9) * 1000})
    return rows


def callables_for(serving_dir, exports):
    import tensorflow as tf

    from albert_tf.models.lite_model import LiteModel

    serve = tf.saved_model.load(serving_dir).signatures["serve_text"]
    calls = {"SavedModel": lambda text: serve(text=tf.constant([text]))}
    for variant, path in exports.items():
        if os.path.isdir(path):
            model = LiteModel(path, num_threads=1)
            calls[variant] = lambda text, model=model: model([text])
    return calls


def sizes_of(serving_dir, exports):
    sizes = {"SavedModel": directory_mb(serving_dir)}
    for variant, path in exports.items():
        if os.path.isdir(path):
            sizes[variant] = os.path.getsize(os.path.join(path, "model.tflite")) / 1e6
            sizes[variant + " ids"] = os.path.getsize(os.path.join(path, "encoder_ids.tflite")) / 1e6
    return sizes


def classifier_quality(checkpoint, serving_dir, exports, dev):
    """Per variant: accuracy, agreement with the SavedModel, max |logit| and |probability| differences; and the
    ids comparison."""
    import tensorflow as tf

    from albert_tf.export_lib.exported_model import load_export
    from albert_tf.export_lib.litert_export import packing_model
    from albert_tf.export_lib.litert_module import LiteRTModule
    from albert_tf.models.lite_model import LiteModel, lite_interpreter
    from albert_tf.models.model_io import load_model
    from albert_tf.models.preprocessing_contract import resolve_preprocessing
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.text.packing import pack_batch
    from albert_tf.text.tf_albert_tokenizer import TFAlbertTokenizer

    sentences, labels = [text for text, _ in dev], np.array([label for _, label in dev])
    model, metadata = load_model(checkpoint)
    contract = resolve_preprocessing(metadata)
    spm = os.path.join(checkpoint, "spm.model")
    python_tokenizer = AlbertTokenizer(spm, lower_case=contract.lower_case, keep_accents=contract.keep_accents,
                                       rewrite_quotes=contract.rewrite_quotes)
    with open(spm, "rb") as f:
        tf_tokenizer = TFAlbertTokenizer(f.read(), lower_case=contract.lower_case, keep_accents=contract.keep_accents,
                                         rewrite_quotes=contract.rewrite_quotes)
    seq = contract.max_seq_length
    packer = lite_interpreter(packing_model(tf_tokenizer, seq), num_threads=1).get_signature_runner()
    expected = pack_batch(python_tokenizer, sentences, None, seq)
    equal = 0
    for row, text in enumerate(sentences):
        out = packer(text=np.array([text.encode()], dtype=object), text_b=np.array([b""], dtype=object))
        length = int(expected["input_mask"][row].sum())
        equal += all(out[name][0].tolist() == expected[name][row][:length].tolist()
                     for name in ("input_word_ids", "input_type_ids", "input_mask"))
    module = LiteRTModule(tf_tokenizer, model, metadata, seq)
    second = [tf.constant([""])] if module.pairs else []
    reference = np.concatenate([module.text_function(tf.constant([text]), *second)["logits"].numpy()
                                for text in sentences])
    served = load_export(serving_dir)(sentences)  # as many requests as the serving model's row limit needs
    served_probabilities, served_labels = served["probabilities"], served["label_id"]
    rows = [{"variant": "SavedModel", "accuracy": float(np.mean(served_labels == labels)), "agreement": 1.0,
             "max_logit_diff": None, "max_probability_diff": 0.0}]
    for variant, path in exports.items():
        if not os.path.isdir(path):
            rows.append({"variant": variant, "refused": path})
            continue
        outputs = LiteModel(path, num_threads=1)(sentences)
        rows.append({"variant": variant, "accuracy": float(np.mean(outputs["label_id"] == labels)),
                     "agreement": float(np.mean(outputs["label_id"] == served_labels)),
                     "max_logit_diff": float(np.abs(outputs["logits"] - reference).max()),
                     "max_probability_diff": float(np.abs(outputs["probabilities"] - served_probabilities).max())})
    return {"ids_equal": equal, "ids_total": len(sentences), "seq_length": seq, "rows": rows}, python_tokenizer


def base_checkpoint(directory):
    """albert_base_v2's shapes, random weights, Google's vocabulary, an SST-2-like classifier head."""
    import keras

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.networks.albert_encoder import AlbertEncoder

    path = os.path.join(directory, "checkpoint")
    if not os.path.isdir(path):
        keras.utils.set_random_seed(0)
        classifier = AlbertClassifier(AlbertEncoder(AlbertConfig.from_preset("albert_base_v2")), 2)
        write_model_dir(classifier, path, files={"spm.model": OFFICIAL_VOCABULARY}, is_regression=False,
                        task_name="sst-2", max_seq_length=128, rewrite_quotes=False, lower_case=True)
    return path


def calibration_file(glue_dir, work):
    path = os.path.join(work, "calibration.txt")
    if not os.path.exists(path):
        sentences = [text for text, _ in read_sst2(os.path.join(glue_dir, "SST-2", "train.tsv"))]
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(random.Random(1).sample(sentences, CALIBRATION_SENTENCES)) + "\n")
    return path


def goals(quality, sizes_base, latency_table):
    def p50(model, variant, length):
        return next((row["p50_ms"] for row in latency_table if (row["model"], row["variant"], row["length"])
                     == (model, variant, length)), None)

    rows = {row["variant"]: row for row in quality["rows"]}
    saved = rows["SavedModel"]
    results = [("ids of the Python tokenizer on every dev sentence", quality["ids_equal"] == quality["ids_total"]),
               ("float32 max |logit difference| <= 1e-4", (rows.get("float32") or {}).get("max_logit_diff", 1) <= 1e-4)]
    int8 = rows.get("dynamic_int8") or {}
    results.append((f"dynamic-range int8 label agreement >= {GOAL_AGREEMENT:.1%}",
                    int8.get("agreement", 0) >= GOAL_AGREEMENT))
    results.append((f"dynamic-range int8 accuracy within {GOAL_ACCURACY_POINTS} point of the SavedModel",
                    abs(int8.get("accuracy", 0) - saved["accuracy"]) * 100 <= GOAL_ACCURACY_POINTS))
    if sizes_base:
        results.append((f"albert_base_v2 dynamic-range int8 model.tflite <= {GOAL_BASE_MB:g} MB",
                        sizes_base.get("dynamic_int8", 1e9) <= GOAL_BASE_MB))
        saved_ms = p50("albert_base_v2", "SavedModel", "medium")
        int8_ms = p50("albert_base_v2", "dynamic_int8", "medium")
        faster = bool(saved_ms and int8_ms and saved_ms / int8_ms >= GOAL_BASE_SPEEDUP)
        results.append((f"albert_base_v2 dynamic-range int8 >= {GOAL_BASE_SPEEDUP:g}x the SavedModel's speed on "
                        "medium texts, 1 thread", faster))
    return results


def report(record):
    quality = record["classifier"]
    lines = [f"CPU: {record['cpu']}. Classifier: {record['classifier_checkpoint']} (seq {quality['seq_length']}); "
             f"model.tflite's tokenizer and packing give the Python tokenizer's ids on {quality['ids_equal']} of "
             f"{quality['ids_total']} SST-2 dev sentences.", ""]
    sizes = record["sizes"]["sst2"]
    body = []
    for row in quality["rows"]:
        variant = row["variant"]
        if "refused" in row:
            body.append([variant, "-", "-", "-", "-", "-", "refused: " + row["refused"].split(": ", 1)[-1][:160]])
            continue
        logit = "-" if row["max_logit_diff"] is None else f"{row['max_logit_diff']:.2g}"
        ids_size = sizes.get(variant + " ids")
        body.append([variant, f"{sizes[variant]:.1f}" + (f" ({ids_size:.1f})" if ids_size else ""),
                     f"{row['accuracy'] * 100:.2f}", f"{row['agreement'] * 100:.2f}", logit,
                     f"{row['max_probability_diff']:.2g}", ""])
    lines.append(markdown_table(["SST-2 classifier", "MB (encoder_ids.tflite)", "dev accuracy %",
                                 "label agreement with the SavedModel %", "max abs logit diff from float TF",
                                 "max abs probability diff from the SavedModel", "note"], body))
    if record["sizes"].get("albert_base_v2"):
        base = record["sizes"]["albert_base_v2"]
        lines += ["", "albert_base_v2 shapes (random weights, 30k-clean.model, seq 128), MB: " + ", ".join(
            f"{name} {value:.1f}" for name, value in base.items())]
    lines.append("")
    table = []
    for row in record["latency"]:
        table.append([row["model"], row["variant"], row["length"], f"{row['p50_ms']:.2f}", f"{row['p90_ms']:.2f}"])
    lines.append(markdown_table(["model", "file", "text", "p50 ms", "p90 ms"], table))
    lines += ["", "\n".join(f"- {goal}: {'met' if met else 'not met'}" for goal, met in record["goals"])]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pretrained", help="albert_tf pretrained checkpoint (directory or ckpt-N) to fine-tune "
                                             "the SST-2 classifier from")
    parser.add_argument("--classifier", help="an SST-2 classifier checkpoint instead of fine-tuning one")
    parser.add_argument("--glue_dir", default=os.path.join(SHARED_DATA, "glue"), help="holds SST-2/")
    parser.add_argument("--work_dir", default="/tmp/albert_litert", help="fine-tuning run and exports (reused)")
    parser.add_argument("--calls", type=int, default=100, help="timed calls per file and text length (default 100)")
    parser.add_argument("--skip_base", action="store_true", help="leave out the albert_base_v2 shapes")
    parser.add_argument("--results_dir", default=RESULTS, help="where litert.{md,json} go")
    args = parser.parse_args(argv)
    if not args.pretrained and not args.classifier:
        parser.error("pass --pretrained (to fine-tune SST-2 from) or --classifier")

    import tensorflow as tf

    # One thread for TensorFlow, as for the interpreters: single requests as on a phone's core.
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    work = os.path.abspath(args.work_dir)
    os.makedirs(work, exist_ok=True)
    classifier = args.classifier or finetuned_classifier(args, work)
    calibration = calibration_file(args.glue_dir, work)
    exports, serving = export_all(classifier, os.path.join(work, "sst2_exports"), calibration)
    dev = read_sst2(os.path.join(args.glue_dir, "SST-2", "dev.tsv"))
    quality, tokenizer = classifier_quality(classifier, serving, exports, dev)
    candidates = [text for text, _ in dev]
    if os.path.isfile(SHARED_CORPUS):
        with open(SHARED_CORPUS, encoding="utf-8") as f:
            candidates += [line.strip() for _, line in zip(range(3000), f) if line.strip()]
    record = {"cpu": cpu_description(), "classifier_checkpoint": os.path.abspath(classifier), "classifier": quality,
              "sizes": {"sst2": sizes_of(serving, exports)}, "latency": []}
    texts = texts_by_length(tokenizer, candidates)
    record["latency"] += latency_rows("SST-2 classifier", latency(callables_for(serving, exports), texts, args.calls),
                                      record["sizes"]["sst2"])
    if not args.skip_base and os.path.isfile(OFFICIAL_VOCABULARY):
        from albert_tf.text.albert_tokenizer import AlbertTokenizer

        base_dir = os.path.join(work, "base")
        # (Full int8 needs a trained model to calibrate and gate on: not on random weights.)
        base_exports, base_serving = export_all(base_checkpoint(base_dir), base_dir, None, VARIANTS[:3])
        record["sizes"]["albert_base_v2"] = sizes_of(base_serving, base_exports)
        base_texts = texts_by_length(AlbertTokenizer(OFFICIAL_VOCABULARY), candidates)
        record["latency"] += latency_rows("albert_base_v2", latency(callables_for(base_serving, base_exports),
                                                                    base_texts, args.calls),
                                          record["sizes"]["albert_base_v2"])
    record["goals"] = goals(quality, record["sizes"].get("albert_base_v2"), record["latency"])
    text = report(record)
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "litert.md"), "w") as f:
        f.write(portable(text))
    with open(os.path.join(args.results_dir, "litert.json"), "w") as f:
        json.dump(portable(record), f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
