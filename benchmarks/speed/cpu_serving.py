r"""On a CPU server: albert_tf's serving SavedModel and LiteRT files against ONNX Runtime, fp32 and int8.

  python -m benchmarks.speed.cpu_serving [--work_dir=/tmp/albert_cpu_serving] [--threads=1,2] \
      [--calls_batch1=100] [--calls_batch32=6]
  python -m benchmarks.speed.cpu_serving --quick --preset=albert_tiny --results_dir=/tmp/cpu_serving_check

Two models of --preset's shapes (default albert_base_v2) with random weights (latency does not depend
on them; --classifier takes a fine-tuned one instead), Google's 30k-clean.model, seq 128:

  encoder             raw text -> the pooled output
  SST-2 classifier    raw text -> two logits (albert_tf's serving model answers probabilities and the
                      label; ONNX Runtime's requests add the softmax and argmax in numpy)

each served in one process by

  albert_tf SavedModel                 albert_tf.export's TF Serving model, its `serve_text` signature
                                       (the encoder's exported with --serving_outputs=pooled_output)
  albert_tf SavedModel --serving_xla   the same export with the encoder and head as XLA programs
  ..., bfloat16                        the same exports with --serving_precision=bfloat16 (weights stored and
                                       products computed in bfloat16; compared with ONNX Runtime fp32, the
                                       precision it replaces); an export its accuracy gate refuses (a
                                       random-weight classifier's near-tied labels can flip) is said and left out
  albert_tf LiteRT float32, dynamic_int8   albert_tf.export --format=litert, run by albert_tf.LiteModel
                                       (one interpreter call per text; XNNPack, num_threads)
  ..., LiteModel max_batch_tokens      the same model.tflite given a batch-32 request as an app gives it:
                                       LiteModel(texts, max_batch_tokens=SERVER_MAX_BATCH_TOKENS), texts of
                                       like length sent together, up to that many padded pieces a call (batch
                                       32 only)
  onnxruntime                          the checkpoint converted by albert_tf.convert --to=huggingface,
                                       the Hugging Face model exported by torch.onnx.export (TorchScript
                                       exporter, opset 17, batch and length dynamic), run by an
                                       onnxruntime CPU session at its default level (ORT_ENABLE_ALL)
  onnxruntime, transformers optimizer  the same exported with eager attention and fused by
                                       onnxruntime.transformers.optimizer (model_type bert: Attention,
                                       SkipLayerNormalization, FastGelu), as Optimum's ORTOptimizer does
  ... quantize_dynamic                 each ONNX model through onnxruntime.quantization.quantize_dynamic:
                                       int8 weights (QInt8), activations quantized at run time

Every ONNX Runtime request is tokenized inside the timed call by the converted directory's fast tokenizer
(transformers AlbertTokenizerFast: padding to the longest row, truncation at 128), as albert_tf's requests
run its in-graph tokenizer. The texts: SST-2 dev sentences and the 14 MB corpus's paragraphs of about 10
(short), 40 (medium) and 128+ tokens (long, truncated to fill 128), picked as benchmarks.speed.litert
picks them, --quality_texts of each kind. Requests of batch 1 (the kind's first 32 texts in turn) and of
batch 32 (those 32 at once).

Threads: each --threads count measured in its own fresh process, with TensorFlow's intra- and inter-op
pools, the LiteRT interpreters' num_threads, ONNX Runtime's intra_op_num_threads (inter-op 1,
sequential execution) and the fast tokenizer's pool (RAYON_NUM_THREADS) all set to it. In each, after
--warmup untimed calls (which compile the XLA programs), the calls of every implementation are
interleaved in two rounds, so drift in machine load hits all; p50 and p99 by nearest rank (with fewer
than 100 calls, p99 is the slowest call).

Outputs, on every quality text (before the timing): the fast tokenizer's ids against albert_tf's
preprocessing; albert_tf's float model (the Keras model on albert_tf's ids) against ONNX Runtime fp32 on
the same ids (the conversion and ONNX export alone) and end to end; every implementation's outputs
against albert_tf's float model; every int8 or bf16 path's label agreement and largest |logit| (encoder:
|pooled output|) difference against its float model (albert_tf's LiteRT int8 against albert_tf's float
model, ONNX Runtime int8 against the fp32 model it was quantized from), which its latency rows carry.

Ratios: per model, text, batch, threads and precision, the p50 of ONNX Runtime's fastest path over
albert_tf's fastest (> 1: albert_tf is faster). Writes RESULTS_DIR/cpu_serving.{md,json}. Needs
benchmarks/requirements.txt (onnx, onnxruntime) and ../shared/data (30k-clean.model, SST-2, the corpus).
"""

import argparse
import json
import os
import random
import subprocess
import time

import numpy as np

from benchmarks.common import RESULTS, SHARED_CORPUS, SHARED_DATA, child_env, cpu_description, module_command
from benchmarks.common import markdown_table, write_results
from benchmarks.speed.litert import LENGTHS, OFFICIAL_VOCABULARY, read_sst2
from benchmarks.speed.serving_latency import percentile

SST2_DEV = os.path.join(SHARED_DATA, "glue", "SST-2", "dev.tsv")
SEQ_LENGTH = 128
REQUEST_TEXTS = 32  # per text kind: the batch-32 request, and the texts batch-1 requests take in turn
MODELS = {"encoder": "pooled_output", "SST-2 classifier": "logits"}  # model: the output compared
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

# implementation: (precision, how it is made). albert_tf's names start with "albert_tf", ONNX Runtime's hold "onnx".
IMPLEMENTATIONS = {
    "albert_tf SavedModel": ("fp32", {"savedmodel": {}}),
    "albert_tf SavedModel --serving_xla": ("fp32", {"savedmodel": {"serving_xla": True}}),
    "albert_tf SavedModel bfloat16": ("bf16", {"savedmodel": {"serving_precision": "bfloat16"}}),
    "albert_tf SavedModel --serving_xla bfloat16": ("bf16", {"savedmodel": {"serving_xla": True,
                                                                             "serving_precision": "bfloat16"}}),
    "albert_tf LiteRT float32": ("fp32", {"litert": "float32"}),
    "albert_tf LiteRT dynamic_int8": ("int8", {"litert": "dynamic_int8"}),
    "albert_tf LiteRT float32, LiteModel max_batch_tokens": ("fp32", {"litert": "float32", "batched": True}),
    "albert_tf LiteRT dynamic_int8, LiteModel max_batch_tokens": ("int8", {"litert": "dynamic_int8",
                                                                            "batched": True}),
    "onnxruntime": ("fp32", {"onnx": "sdpa"}),
    "onnxruntime quantize_dynamic": ("int8", {"onnx": "sdpa", "quantized": True}),
    "onnxruntime, transformers optimizer": ("fp32", {"onnx": "fused"}),
    "onnxruntime, transformers optimizer, quantize_dynamic": ("int8", {"onnx": "fused", "quantized": True}),
}
# Each int8 path's float model: what its label agreement and largest difference are measured against.
FLOAT_OF = {"albert_tf LiteRT dynamic_int8": "albert_tf float",
            "albert_tf LiteRT dynamic_int8, LiteModel max_batch_tokens": "albert_tf float",
            "onnxruntime quantize_dynamic": "onnxruntime",
            "onnxruntime, transformers optimizer, quantize_dynamic": "onnxruntime, transformers optimizer"}
REFERENCE = "albert_tf float"  # the Keras model on albert_tf's preprocessing ids
# Precisions below float32, whose rows carry their agreement with their float model; and the ONNX Runtime
# precision each albert_tf precision is compared with (bfloat16 replaces float32 where the CPU computes it).
REDUCED_PRECISIONS = ("int8", "bf16")
PEER_PRECISION = {"bf16": "fp32"}
GOAL_EVERY_ROW, GOAL_MEDIUM_BATCH1 = 1.0, 1.2
INT8_CPU_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
SAME_MODEL_TOLERANCE = 1e-4  # the converted model in ONNX Runtime fp32 against albert_tf's float model, same ids


# --- Making the models --------------------------------------------------------------------------


def checkpoints(args, directory):
    """{model: albert_tf checkpoint}: random weights of --preset's shapes (seed 0), Google's vocabulary."""
    import keras

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.models.model_io import write_model_dir
    from albert_tf.networks.albert_encoder import AlbertEncoder
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    config = AlbertConfig.from_preset(args.preset, vocab_size=AlbertTokenizer(OFFICIAL_VOCABULARY).vocab_size)
    recorded = {"max_seq_length": SEQ_LENGTH, "lower_case": True, "rewrite_quotes": False}
    paths = {"encoder": os.path.join(directory, "encoder"),
             "SST-2 classifier": args.classifier or os.path.join(directory, "classifier")}
    keras.utils.set_random_seed(0)
    if not os.path.isdir(paths["encoder"]):
        write_model_dir(AlbertEncoder(config), paths["encoder"], "encoder", files={"spm.model": OFFICIAL_VOCABULARY},
                        **recorded)
    if not os.path.isdir(paths["SST-2 classifier"]):
        write_model_dir(AlbertClassifier(AlbertEncoder(config), 2), paths["SST-2 classifier"],
                        files={"spm.model": OFFICIAL_VOCABULARY}, is_regression=False, task_name="sst-2", **recorded)
    return paths


def export_albert_tf(model, checkpoint, directory):
    """{albert_tf implementation: its export directory} (made once, reused when rerun)."""
    from albert_tf.export_lib.bfloat16_export import BFloat16GateError
    from albert_tf.export_lib.exporter import export
    from albert_tf.export_lib.litert_export import export_litert

    paths = {}
    for name, (_, how) in IMPLEMENTATIONS.items():
        path = os.path.join(directory, name.replace(" ", "_").replace("-", ""))
        if how.get("batched"):
            continue  # the per-text path's file
        if "savedmodel" in how:
            arguments = dict(how["savedmodel"])
            if model == "encoder":  # what ONNX Runtime's encoder answers: the pooled output alone
                arguments["serving_outputs"] = ["pooled_output"]
            refused = path + ".refused.txt"
            if not os.path.isdir(path) and not os.path.exists(refused):
                try:
                    export(checkpoint, path, max_seq_length=SEQ_LENGTH, serving_warmup_batch_sizes=(), **arguments)
                except BFloat16GateError as error:
                    with open(refused, "w") as f:
                        f.write(str(error))
            if os.path.exists(refused):
                with open(refused) as f:
                    print(f"{model}, {name}: left out, the export's accuracy gate refused it: {f.read()}",
                          flush=True)
                continue
            paths[name] = os.path.join(path, "serving")
        elif "litert" in how:
            if not os.path.isdir(path):
                export_litert(checkpoint, path, quantization=how["litert"], max_seq_length=SEQ_LENGTH)
            paths[name] = path
    return paths


def export_onnx(model, checkpoint, directory):
    """(Hugging Face directory, {"sdpa"|"fused": {"fp32"|"int8": .onnx path}}): the checkpoint through
    albert_tf.convert, torch.onnx.export, the transformers optimizer and quantize_dynamic (made once)."""
    from albert_tf.checkpoints.conversion import convert

    huggingface = os.path.join(directory, "huggingface")
    if not os.path.isdir(huggingface):
        convert("albert_tf", "huggingface", checkpoint, huggingface)
    files = {variant: {"fp32": os.path.join(directory, f"{variant}.onnx"),
                       "int8": os.path.join(directory, f"{variant}_int8.onnx")} for variant in ("sdpa", "fused")}
    if not all(os.path.isfile(path) for paths in files.values() for path in paths.values()):
        _write_onnx(model, huggingface, directory, files)
    return huggingface, files


def _write_onnx(model, huggingface, directory, files):
    import warnings

    import onnx
    import torch
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    output = MODELS[model]
    model_class = transformers.AlbertModel if model == "encoder" else transformers.AlbertForSequenceClassification

    class ServedOutput(torch.nn.Module):
        def __init__(self, network):
            super().__init__()
            self.network = network

        def forward(self, input_ids, attention_mask, token_type_ids):
            outputs = self.network(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return outputs.pooler_output if output == "pooled_output" else outputs.logits

    example = tuple(torch.ones(2, 16, dtype=torch.long) for _ in ONNX_INPUTS)
    axes = {name: {0: "batch", 1: "sequence"} for name in ONNX_INPUTS}
    # sdpa: what from_pretrained gives by default; eager: the attention pattern the optimizer fuses into one op.
    for variant, attention in (("sdpa", "sdpa"), ("fused", "eager")):
        network = model_class.from_pretrained(huggingface, attn_implementation=attention)
        exported = files[variant]["fp32"] if variant == "sdpa" else os.path.join(directory, "eager.onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
            torch.onnx.export(ServedOutput(network).eval(), example, exported, dynamo=False, opset_version=17,
                              input_names=list(ONNX_INPUTS), output_names=[output],
                              dynamic_axes={**axes, output: {0: "batch"}})
        if variant == "fused":
            config = network.config
            fused = optimize_model(exported, model_type="bert", num_heads=config.num_attention_heads,
                                   hidden_size=config.hidden_size)
            fused.save_model_to_file(files[variant]["fp32"])
            print(f"{model}: the transformers optimizer fused {fused.get_fused_operator_statistics()}", flush=True)
        # The fused ops (com.microsoft domain) defeat ONNX's shape inference: their outputs are float.
        quantize_dynamic(files[variant]["fp32"], files[variant]["int8"], weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


# --- Requests -----------------------------------------------------------------------------------


def request_functions(model, plan, threads):
    """{implementation: texts -> outputs (numpy)}: one request each, as a server answers it."""
    import onnxruntime
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SavedModels' tokenizer ops)
    import transformers

    from albert_tf.export_lib.exported_model import saved_model_dir
    from albert_tf.models.lite_model import SERVER_MAX_BATCH_TOKENS, LiteModel

    paths = plan["models"][model]
    functions = {}
    for name, (_, how) in IMPLEMENTATIONS.items():
        if name.startswith("albert_tf") and name.split(",")[0] not in paths["albert_tf"]:
            continue  # its export was refused (export_albert_tf)
        if "savedmodel" in how:
            signature = tf.saved_model.load(saved_model_dir(paths["albert_tf"][name])).signatures["serve_text"]
            functions[name] = lambda texts, signature=signature: {
                key: value.numpy() for key, value in signature(text=tf.constant(texts, tf.string)).items()}
        elif "litert" in how and how.get("batched"):
            lite_model = LiteModel(paths["albert_tf"][name.split(",")[0]], num_threads=threads)
            functions[name] = lambda texts, lite_model=lite_model: lite_model(
                texts, max_batch_tokens=SERVER_MAX_BATCH_TOKENS)
        elif "litert" in how:
            functions[name] = LiteModel(paths["albert_tf"][name], num_threads=threads)
        else:
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
            onnx_file = paths["onnx"][how["onnx"]]["int8" if how.get("quantized") else "fp32"]
            session = onnxruntime.InferenceSession(onnx_file, options, providers=["CPUExecutionProvider"])
            tokenizer = transformers.AlbertTokenizerFast.from_pretrained(paths["huggingface"])
            functions[name] = onnx_request(tokenizer, session, MODELS[model])
    return functions


def onnx_request(tokenizer, session, output):
    """texts -> {output, and a classifier's probabilities and label_id}: tokenized by the fast tokenizer."""

    def request(texts):
        encoded = tokenizer(list(texts), padding=True, truncation=True, max_length=SEQ_LENGTH, return_tensors="np")
        values = session.run([output], {name: encoded[name] for name in ONNX_INPUTS})[0]
        if output != "logits":
            return {output: values}
        exponentials = np.exp(values - values.max(-1, keepdims=True))
        return {"logits": values, "probabilities": exponentials / exponentials.sum(-1, keepdims=True),
                "label_id": values.argmax(-1)}

    return request


# --- Texts and outputs --------------------------------------------------------------------------


def texts_by_kind(count):
    """{short/medium/long: `count` texts}: SST-2 dev sentences and corpus paragraphs whose token counts (Python
    tokenizer, 30k-clean.model) fall in benchmarks.speed.litert's LENGTHS; longer ones cut to length."""
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    missing = [path for path in (OFFICIAL_VOCABULARY, SST2_DEV, SHARED_CORPUS) if not os.path.isfile(path)]
    if missing:
        raise SystemExit(f"{', '.join(missing)}: not found; this benchmark needs ../shared/data beside the checkout")
    tokenizer = AlbertTokenizer(OFFICIAL_VOCABULARY)
    candidates = [text for text, _ in read_sst2(SST2_DEV)]
    with open(SHARED_CORPUS, encoding="utf-8") as f:
        candidates += [line.strip() for _, line in zip(range(3000), f) if line.strip()]
    rng = random.Random(0)
    chosen = {}
    for kind, (low, high) in LENGTHS.items():
        pool = [text for text in candidates if low <= len(tokenizer.encode(text)) <= high]
        cut = (" ".join(text.split()[:max(1, int(low * 0.8))]) for text in candidates if len(text.split()) > low)
        pool += [text for text in cut if low <= len(tokenizer.encode(text)) <= high]
        pool = list(dict.fromkeys(pool))
        if len(pool) < count:
            raise SystemExit(f"only {len(pool)} {kind} texts ({low}-{high} tokens) for --quality_texts={count}")
        chosen[kind] = rng.sample(pool, count)
    return chosen


def in_batches(function, texts, size=REQUEST_TEXTS):
    """function's outputs on `texts`, called on `size` texts at a time, concatenated."""
    parts = [function(texts[start:start + size]) for start in range(0, len(texts), size)]
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0] if name != "label"}


def quality(model, checkpoint, plan, texts):
    """Records per (implementation, text kind) of the outputs' agreement (module docstring), and the
    tokenizer and conversion checks, for one model."""
    import onnxruntime
    import transformers

    from albert_tf.export_lib.exported_model import load_export
    from albert_tf.models.model_io import load_model

    output = MODELS[model]
    paths = plan["models"][model]
    keras_model, _ = load_model(checkpoint)
    preprocessing = load_export(os.path.join(os.path.dirname(paths["albert_tf"]["albert_tf SavedModel"]),
                                             "preprocessing"))
    tokenizer = transformers.AlbertTokenizerFast.from_pretrained(paths["huggingface"])
    onnx_fp32 = onnxruntime.InferenceSession(paths["onnx"]["sdpa"]["fp32"], providers=["CPUExecutionProvider"])
    functions = request_functions(model, plan, threads=os.cpu_count())
    records, checks = [], []
    for kind, kind_texts in texts.items():
        ids = in_batches(preprocessing, kind_texts)
        reference = np.concatenate([
            keras_model({name: ids[name][start:start + REQUEST_TEXTS]
                         for name in ("input_word_ids", "input_mask", "input_type_ids")}, training=False)[output]
            .numpy() for start in range(0, len(kind_texts), REQUEST_TEXTS)])
        hf_ids = tokenizer(kind_texts, truncation=True, max_length=SEQ_LENGTH)["input_ids"]
        equal_ids = [list(row[:int(mask.sum())]) == list(hf_row)
                     for row, mask, hf_row in zip(ids["input_word_ids"], ids["input_mask"], hf_ids)]
        same_ids = onnx_fp32.run([output], {"input_ids": ids["input_word_ids"].astype(np.int64),
                                            "attention_mask": ids["input_mask"].astype(np.int64),
                                            "token_type_ids": ids["input_type_ids"].astype(np.int64)})[0]
        outputs = {name: in_batches(function, kind_texts) for name, function in functions.items()}
        end_to_end = np.abs(outputs["onnxruntime"][output] - reference).max(-1)
        checks.append({"model": model, "text": kind, "texts": len(kind_texts), "ids_equal": int(sum(equal_ids)),
                       "max_diff_same_ids": float(np.abs(same_ids - reference).max()),
                       "max_diff_end_to_end": float(end_to_end.max()),
                       "max_diff_end_to_end_equal_ids": float(end_to_end[equal_ids].max()) if any(equal_ids) else None,
                       # Random weights can answer one label for every text: label agreement then says little.
                       "label_1_share": float(np.mean(reference.argmax(-1) == 1)) if output == "logits" else None})
        floats = {REFERENCE: reference, **{name: values.get(output) for name, values in outputs.items()}}
        for name, values in outputs.items():
            versus = FLOAT_OF.get(name, REFERENCE)
            if output in values:
                compared, against = output, floats[versus]
            else:  # albert_tf's serving classifier answers probabilities, not logits
                compared, against = "probabilities", softmax(floats[versus])
            record = {"model": model, "implementation": name, "text": kind, "versus": versus, "output": compared,
                      "max_abs_diff": float(np.abs(values[compared] - against).max())}
            if output == "logits":
                record["label_agreement"] = float(np.mean(values[compared].argmax(-1) == against.argmax(-1)))
            records.append(record)
    return records, checks


def softmax(logits):
    exponentials = np.exp(logits - logits.max(-1, keepdims=True))
    return exponentials / exponentials.sum(-1, keepdims=True)


# --- Timing (in a fresh process per thread count) -----------------------------------------------


def worker(args):
    """Times every implementation of every model at --threads (one count) and prints RESULT [records]."""
    threads = int(args.threads)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    with open(args.worker) as f:
        plan = json.load(f)
    records = []
    for model in MODELS:
        functions = request_functions(model, plan, threads)
        for kind, texts in plan["texts"].items():
            texts = texts[:REQUEST_TEXTS]
            for batch, calls in ((1, args.calls_batch1), (REQUEST_TEXTS, args.calls_batch32)):
                seconds = time_interleaved(functions, texts, batch, calls, args.warmup)
                for name, values in seconds.items():
                    records.append({"implementation": name, "model": model, "text": kind, "batch": batch,
                                    "threads": threads, "precision": IMPLEMENTATIONS[name][0], "calls": len(values),
                                    "p50_ms": percentile(values, 0.5) * 1e3, "p99_ms": percentile(values, 0.99) * 1e3})
                print(f"{threads} thread(s): {model}, {kind} texts, batch {batch} done", flush=True)
    print("RESULT " + json.dumps(records))


def time_interleaved(functions, texts, batch, calls, warmup):
    """{implementation: [seconds]}: `calls` requests each, in two interleaved rounds after `warmup` untimed ones;
    batch 1 takes the texts in turn, a larger batch the first `batch` texts."""
    def request(index):
        return [texts[index % len(texts)]] if batch == 1 else texts[:batch]

    if batch == 1:  # the same call as the per-text path
        functions = {name: function for name, function in functions.items()
                     if not IMPLEMENTATIONS[name][1].get("batched")}
    for function in functions.values():
        for index in range(warmup):
            function(request(index))
    seconds = {name: [] for name in functions}
    for round_calls in (calls // 2, calls - calls // 2):
        for name, function in functions.items():
            for _ in range(round_calls):
                texts_now = request(len(seconds[name]))
                start = time.perf_counter()
                function(texts_now)
                seconds[name].append(time.perf_counter() - start)
    return seconds


def measure(args, plan_path, threads):
    """The worker's records for one thread count, run in a fresh process."""
    command = [*module_command("benchmarks.speed.cpu_serving"), f"--worker={plan_path}", f"--threads={threads}",
               f"--calls_batch1={args.calls_batch1}", f"--calls_batch32={args.calls_batch32}",
               f"--warmup={args.warmup}"]
    env = child_env(TF_CPP_MIN_LOG_LEVEL="3", RAYON_NUM_THREADS=str(threads))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    result = None
    for line in process.stdout:
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
        else:
            print(line, end="", flush=True)
    stderr = process.stderr.read()
    if process.wait() or result is None:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}):\n{stderr[-3000:]}")
    return result


# --- The report ---------------------------------------------------------------------------------


def ratios(rows):
    """Per (model, text, batch, threads, precision): albert_tf's fastest p50 against ONNX Runtime's fastest (of
    the same precision; bf16 against fp32)."""
    groups = {}
    for row in rows:
        side = "albert_tf" if row["implementation"].startswith("albert_tf") else "onnx"
        # ONNX Runtime's rows also stand against each albert_tf precision that is compared with theirs.
        precisions = [row["precision"]] + ([own for own, peer in PEER_PRECISION.items() if peer == row["precision"]]
                                           if side == "onnx" else [])
        for precision in precisions:
            key = (row["model"], row["text"], row["batch"], row["threads"], precision)
            best = groups.setdefault(key, {}).get(side)
            if best is None or row["p50_ms"] < best["p50_ms"]:
                groups[key][side] = row
    records = []
    for (model, text, batch, threads, precision), best in groups.items():
        if "albert_tf" in best and "onnx" in best:
            records.append({"model": model, "text": text, "batch": batch, "threads": threads, "precision": precision,
                            "albert_tf": best["albert_tf"]["implementation"],
                            "albert_tf_p50_ms": best["albert_tf"]["p50_ms"],
                            "onnx": best["onnx"]["implementation"], "onnx_p50_ms": best["onnx"]["p50_ms"],
                            "albert_tf_speedup": best["onnx"]["p50_ms"] / best["albert_tf"]["p50_ms"]})
    return records


def goals(ratio_records, checks):
    """[(goal, met)]: after the check that the outputs are the same model's, the bfloat16 SavedModel's two goals
    (against ONNX Runtime's fastest fp32 path, the precision it replaces) and the earlier goal of every precision."""
    same_model = all(c["max_diff_same_ids"] <= SAME_MODEL_TOLERANCE for c in checks)
    bf16 = [r for r in ratio_records if r["precision"] == "bf16"]
    bf16_medium = [r for r in bf16 if (r["text"], r["batch"], r["threads"]) == ("medium", 1, 1)]
    others = [r for r in ratio_records if r["precision"] != "bf16"]
    return [(f"check: albert_tf's float model and ONNX Runtime fp32 within {SAME_MODEL_TOLERANCE:g} on albert_tf's "
             "ids (every model and text kind)", same_model),
            (f"albert_tf's bfloat16 SavedModel >= {GOAL_EVERY_ROW:g}x ONNX Runtime's fastest fp32 in every row",
             bool(bf16) and all(r["albert_tf_speedup"] >= GOAL_EVERY_ROW for r in bf16)),
            (f"albert_tf's bfloat16 SavedModel >= {GOAL_MEDIUM_BATCH1:g}x ONNX Runtime's fastest fp32 at batch 1, "
             "medium texts, 1 thread (each model)",
             bool(bf16_medium) and all(r["albert_tf_speedup"] >= GOAL_MEDIUM_BATCH1 for r in bf16_medium)),
            (f"albert_tf's fastest fp32 and int8 paths >= {GOAL_EVERY_ROW:g}x ONNX Runtime's fastest at the same "
             "precision in every row", all(r["albert_tf_speedup"] >= GOAL_EVERY_ROW for r in others))]


def report(record):
    versions_text = ", ".join(f"{name} {version}" for name, version in record["versions"].items())
    kinds = ", ".join(f"{kind} {low}-{high}" for kind, (low, high) in record["tokens_per_text"].items())
    classifier = f"; the classifier: {record['classifier']}" if record["classifier"] else ""
    lines = [f"{record['preset']} shapes, random weights (latency does not depend on them{classifier}), "
             f"30k-clean.model, seq {SEQ_LENGTH}; CPU: {record['cpu']}; int8 flags: {record['int8_cpu_flags']}; "
             f"{versions_text}; 5-minute load average at the end: {record['load_average_5min']:.1f}. "
             f"Texts (tokens with [CLS] and [SEP]): {kinds}.", ""]
    quality_by_row = {(q["model"], q["implementation"], q["text"]): q for q in record["quality"]}
    body = []
    for row in record["results"]:
        q = quality_by_row.get((row["model"], row["implementation"], row["text"]), {})
        reduced = row["precision"] in REDUCED_PRECISIONS
        agreement = f"{q['label_agreement'] * 100:.1f}%" if reduced and "label_agreement" in q else "-"
        body.append([row["model"], row["text"], row["batch"], row["threads"], row["implementation"],
                     row["precision"], f"{row['p50_ms']:,.2f}", f"{row['p99_ms']:,.2f}",
                     f"{row['batch'] / row['p50_ms'] * 1e3:,.1f}", agreement,
                     f"{q['max_abs_diff']:.2g}" if reduced and q else "-"])
    lines.append(markdown_table(["model", "text", "batch", "threads", "implementation", "precision", "p50 ms",
                                 "p99 ms", "texts/s at p50", "int8, bf16: label agreement with the float model",
                                 "int8, bf16: max abs logit (encoder: pooled) diff"], body))
    lines += ["", "albert_tf's fastest path against ONNX Runtime's fastest at equal precision, bf16 against ONNX "
              "Runtime fp32 (> 1: albert_tf faster):", ""]
    lines.append(markdown_table(
        ["model", "text", "batch", "threads", "precision", "albert_tf's fastest", "p50 ms", "ONNX Runtime's fastest",
         "p50 ms", "albert_tf speed"],
        [[r["model"], r["text"], r["batch"], r["threads"], r["precision"], r["albert_tf"],
          f"{r['albert_tf_p50_ms']:,.2f}", r["onnx"], f"{r['onnx_p50_ms']:,.2f}", f"{r['albert_tf_speedup']:.2f}x"]
         for r in record["ratios"]]))
    lines += ["", f"Outputs on {record['quality_texts']} texts of each kind: the fast tokenizer's ids against "
              "albert_tf's preprocessing, and albert_tf's float model against ONNX Runtime fp32 on albert_tf's ids "
              "(the conversion and the ONNX export) and end to end:", ""]
    lines.append(markdown_table(
        ["model", "text", "ids equal", "max abs diff, same ids", "max abs diff, end to end",
         "end to end, rows with equal ids", "albert_tf float's label 1 share"],
        [[c["model"], c["text"], f"{c['ids_equal']}/{c['texts']}", f"{c['max_diff_same_ids']:.2g}",
          f"{c['max_diff_end_to_end']:.2g}",
          "-" if c["max_diff_end_to_end_equal_ids"] is None else f"{c['max_diff_end_to_end_equal_ids']:.2g}",
          "-" if c["label_1_share"] is None else f"{c['label_1_share'] * 100:.0f}%"] for c in record["checks"]]))
    if any(c["label_1_share"] in (0.0, 1.0) for c in record["checks"]):
        lines += ["", "The classifier answers one label for every text of a kind (random weights): its label "
                  "agreement says nothing there; the largest logit difference does."]
    lines += ["", "Every implementation's outputs against its float model (int8) or albert_tf's float model:", ""]
    lines.append(markdown_table(
        ["model", "implementation", "text", "against", "output", "max abs diff", "label agreement"],
        [[q["model"], q["implementation"], q["text"], q["versus"], q["output"], f"{q['max_abs_diff']:.2g}",
          f"{q['label_agreement'] * 100:.1f}%" if "label_agreement" in q else "-"] for q in record["quality"]]))
    lines += ["", "\n".join(f"- {goal}: {'met' if met else 'not met'}" for goal, met in record["goals"]),
              "", f"{record['seconds']:.0f} s in all, {record['setup_seconds']:.0f} s of it the exports and the "
              "output checks."]
    return "\n".join(lines) + "\n"


def int8_cpu_flags(cpuinfo_path="/proc/cpuinfo"):
    """Which of the CPU features int8 matmuls use (VNNI, AMX int8) this CPU has: 'a b (not: c)', or 'unknown'."""
    try:
        with open(cpuinfo_path) as f:
            flags = set(next(line for line in f if line.startswith("flags")).partition(":")[2].split())
    except (OSError, StopIteration):
        return "unknown"
    has = " ".join(flag for flag in INT8_CPU_FLAGS if flag in flags) or "none"
    return has + f" (not: {' '.join(flag for flag in INT8_CPU_FLAGS if flag not in flags) or 'none'})"


def versions():
    import onnxruntime
    import tensorflow as tf
    import torch
    import transformers

    return {"tensorflow": tf.__version__, "onnxruntime": onnxruntime.__version__,
            "torch": torch.__version__.split("+")[0], "transformers": transformers.__version__}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="albert_base_v2", help="model shapes (default albert_base_v2)")
    parser.add_argument("--classifier", help="an albert_tf 2-label single-text classifier checkpoint "
                                             "(run_classifier's best/) to serve instead of random weights, so the "
                                             "int8 label agreement means something (default: random weights)")
    parser.add_argument("--work_dir", default="/tmp/albert_cpu_serving",
                        help="checkpoints and exports, under WORK_DIR/PRESET (default /tmp/albert_cpu_serving); "
                             "what is there is reused when rerun: after changing albert_tf's export code or "
                             "--classifier, pass a new one")
    parser.add_argument("--threads", help="comma-separated thread counts (default 1,2; with --quick 1)")
    parser.add_argument("--calls_batch1", type=int, default=100,
                        help="timed calls per implementation at batch 1 and each text kind (default 100)")
    parser.add_argument("--calls_batch32", type=int, default=6,
                        help="timed calls per implementation at batch 32 and each text kind (default 6)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="untimed calls per implementation first, at each batch and text kind (default 2)")
    parser.add_argument("--quality_texts", type=int, default=100,
                        help=f"texts of each kind the outputs are compared on (default 100, at least {REQUEST_TEXTS})")
    parser.add_argument("--quick", action="store_true",
                        help="a check of the script: 4 calls at batch 1, 2 at batch 32, 1 warm-up call, "
                             f"{REQUEST_TEXTS} quality texts (use with --preset=albert_tiny and a scratch "
                             "--results_dir)")
    parser.add_argument("--results_dir", default=RESULTS, help="where RESULTS_NAME.{md,json} go")
    parser.add_argument("--results_name", default="cpu_serving",
                        help="the results files' name (default cpu_serving; cpu_serving_amx on a CPU with AMX)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.quick:
        args.calls_batch1, args.calls_batch32, args.warmup, args.quality_texts = 4, 2, 1, REQUEST_TEXTS
    args.threads = args.threads or ("1" if args.quick else "1,2")
    if args.quality_texts < REQUEST_TEXTS:
        parser.error(f"--quality_texts={args.quality_texts}: at least {REQUEST_TEXTS} (the batch-32 request's texts)")
    thread_counts = [int(value) for value in args.threads.split(",")]

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    started = time.perf_counter()
    work = os.path.join(os.path.abspath(args.work_dir), args.preset)
    os.makedirs(work, exist_ok=True)
    texts = texts_by_kind(args.quality_texts)
    plan = {"texts": texts, "models": {}}
    models = checkpoints(args, work)
    for model, checkpoint in models.items():
        directory = os.path.join(work, model.split()[-1] + "_exports")
        print(f"{model}: exports in {directory}...", flush=True)
        huggingface, onnx_files = export_onnx(model, checkpoint, directory)
        plan["models"][model] = {"albert_tf": export_albert_tf(model, checkpoint, directory),
                                 "huggingface": huggingface, "onnx": onnx_files}
    plan_path = os.path.join(work, "plan.json")
    with open(plan_path, "w") as f:
        json.dump(plan, f, indent=1)
    quality_records, checks = [], []
    for model, checkpoint in models.items():
        records, model_checks = quality(model, checkpoint, plan, texts)
        quality_records += records
        checks += model_checks
    setup_seconds = time.perf_counter() - started
    rows = []
    for threads in thread_counts:
        rows += measure(args, plan_path, threads)
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    tokenizer = AlbertTokenizer(OFFICIAL_VOCABULARY)
    counts = {kind: [min(len(tokenizer.encode(text)), SEQ_LENGTH - 2) + 2 for text in kind_texts[:REQUEST_TEXTS]]
              for kind, kind_texts in texts.items()}
    ratio_records = ratios(rows)
    record = {"args": vars(args), "preset": args.preset, "classifier": args.classifier, "cpu": cpu_description(),
              "int8_cpu_flags": int8_cpu_flags(),
              "versions": versions(), "load_average_5min": os.getloadavg()[1], "quality_texts": args.quality_texts,
              "tokens_per_text": {kind: (min(values), max(values)) for kind, values in counts.items()},
              "results": rows, "ratios": ratio_records, "quality": quality_records, "checks": checks}
    record["goals"] = goals(ratio_records, checks)
    record["seconds"], record["setup_seconds"] = time.perf_counter() - started, setup_seconds
    write_results(args.results_dir, args.results_name, report(record), record)


if __name__ == "__main__":
    main()
