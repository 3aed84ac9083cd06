r"""Would the documents reader keep a GPU fed? An accelerator's appetite against the instance builder's rate.

  python -m benchmarks.speed.accelerator_feed --corpus=TRAIN_TEXT --spm_model_file=SPM_MODEL \
      [--parts=step,builder] [--threads=1,2,4,8] [--processes=1,2,4,8,16] [--builder_processes=1,2,4,8,16]

benchmarks/speed/dynamic_input.py measures the reader against albert_tf's own step on the development
machine's 2 CPU cores, where the step is slow (141 sequences/s for albert_small) and the reader about
150x faster. The question that matters for users with accelerators is whether the reader keeps up with a
GPU's step. The GPU machine lent to this project has PyTorch but no TensorFlow (TensorFlow's GPU wheel and
CUDA 12 libraries cannot be carried there), so this script measures the two sides separately, with no
TensorFlow at all:

  1. step: how many sequences a GPU consumes per second for the same architectures, shapes and objective,
     with Hugging Face's PyTorch ALBERT (AlbertModel, its MLM head applied at the masked positions only, as
     albert_tf does, and its SOP head; AdamW; bf16 autocast): albert_small (configs/albert_small.json) at
     seq 64 and albert_base (configs/albert_base_v2.json) at seq 128 and 512, several batch sizes, eager
     and torch.compile'd. A lower bound on what albert_tf's XLA step would consume on the same GPU.
  2. builder: instances/s of the reader's instance builder (albert_tf.data.pretraining_instances, the code
     every input worker of run_pretraining's documents pipeline runs: pairs, truncation, n-gram masking) on
     this machine's host CPU, over a corpus tokenized as create_pretraining_data does, with 1..N threads (how
     tf.data's input workers run it: NumPy releases the GIL only part of the time), 1..N processes each
     building its share of the documents (what processes could reach at best), and 1..N builder processes fed
     document by document from as many threads, as run_pretraining --input_processes runs them
     (albert_tf.data.builder_processes: each document and its instances cross a pipe as a pickle).
The reader's own pipeline (record parsing, round-robin, shuffle, batching) is TensorFlow and is measured by
dynamic_input.py; on the development machine it made 21,000-31,000 instances/s, about the builder's rate on
one thread there, so the builder is the reader's ceiling.

Writes benchmarks/results/accelerator_feed.{json,md} (--results_dir elsewhere), part by part as each ends;
the recorded figures of a part not measured are kept.
Needs torch and transformers for `step` (a CUDA GPU, else it runs on the CPU and says so), sentencepiece and
NumPy for `builder`.
"""

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:  # run as a file on a machine where the checkout is not installed
    sys.path.insert(0, REPO)

from benchmarks.common import RESULTS, cpu_description, markdown_table, portable, write_results  # noqa: E402

PARTS = ("step", "builder")
# (model, config file, seq, max predictions per sequence, batch sizes): albert_small as the 3-hour recipe
# trains it; albert_base at the paper's two phases' lengths (128 for 90% of the steps, then 512).
STEP_SHAPES = (
    ("albert_small", "albert_small.json", 64, 10, (64, 256, 1024)),
    ("albert_base", "albert_base_v2.json", 128, 20, (64, 256)),
    ("albert_base", "albert_base_v2.json", 512, 80, (32, 128)),
)
# Builder lengths and predictions, as the step shapes' data would be made.
BUILDER_SHAPES = ((64, 10), (128, 20), (512, 80))


# --- 1. the accelerator's step ---------------------------------------------------------------------------


def huggingface_config(config_path):
    """transformers.AlbertConfig of an albert_tf config file (dropout off, as the recipes train)."""
    from transformers import AlbertConfig

    with open(config_path) as f:
        values = json.load(f)
    names = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
             "num_attention_heads", "intermediate_size", "inner_group_num", "max_position_embeddings",
             "type_vocab_size", "initializer_range")
    # albert_tf's "gelu" is the original's tanh approximation, Hugging Face's "gelu_new".
    return AlbertConfig(**{name: values[name] for name in names}, hidden_act="gelu_new",
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def pretraining_step(model, optimizer, compiled_loss):
    """One optimizer step of MLM (at the masked positions) + SOP on a batch; returns the step function."""
    import torch

    def step(batch):
        with torch.autocast(device_type=batch["input_ids"].device.type, dtype=torch.bfloat16):
            loss = compiled_loss(model, batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    return step


def pretraining_loss(model, batch):
    """MLM cross-entropy at the masked positions (gathered before the vocabulary projection, as albert_tf's
    head does) plus SOP cross-entropy."""
    import torch
    import torch.nn.functional as F

    outputs = model.albert(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                           attention_mask=batch["attention_mask"])
    sequence = outputs.last_hidden_state
    positions = batch["masked_positions"].unsqueeze(-1).expand(-1, -1, sequence.shape[-1])
    logits = model.predictions(torch.gather(sequence, 1, positions))
    mlm = F.cross_entropy(logits.float().flatten(0, 1), batch["masked_ids"].flatten())
    sop = F.cross_entropy(model.sop_classifier(outputs.pooler_output).float(), batch["sop_labels"])
    return mlm + sop


def random_batch(batch, seq, predictions, vocab_size, device, seed=0):
    import torch

    generator = torch.Generator().manual_seed(seed)
    positions = torch.stack([torch.randperm(seq - 1, generator=generator)[:predictions] + 1 for _ in range(batch)])
    values = {
        "input_ids": torch.randint(5, vocab_size, (batch, seq), generator=generator),
        "token_type_ids": (torch.arange(seq) >= seq // 2).long().expand(batch, seq).contiguous(),
        "attention_mask": torch.ones(batch, seq, dtype=torch.long),
        "masked_positions": positions.sort(dim=1).values,
        "masked_ids": torch.randint(5, vocab_size, (batch, predictions), generator=generator),
        "sop_labels": torch.randint(0, 2, (batch,), generator=generator),
    }
    return {name: value.to(device) for name, value in values.items()}


def step_rate(config_path, seq, predictions, batch, compile_step, device, warmup, steps):
    """Sequences/s of the training step (median of 3 timed stretches of `steps` steps, after `warmup`)."""
    import torch
    from transformers import AlbertForPreTraining

    torch.manual_seed(0)
    config = huggingface_config(config_path)
    model = AlbertForPreTraining(config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    torch._dynamo.reset()  # each shape compiles afresh, never against another model's cache entries
    loss_function = torch.compile(pretraining_loss) if compile_step else pretraining_loss
    step = pretraining_step(model, optimizer, loss_function)
    inputs = random_batch(batch, seq, predictions, config.vocab_size, device)
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    started = time.perf_counter()
    for _ in range(warmup):
        step(inputs)
    synchronize()
    warmup_seconds = time.perf_counter() - started
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(steps):
            step(inputs)
        synchronize()
        rates.append(steps * batch / (time.perf_counter() - start))
    memory = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None
    del model, optimizer
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return {"sequences_per_second": statistics.median(rates), "warmup_seconds": warmup_seconds,
            "peak_memory_gib": memory}


def measure_steps(args, record, save, compiled):
    """Eager: every batch size of every shape. Compiled: the largest batch of each shape (compiling costs a
    minute or so a shape)."""
    import torch
    import transformers

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    record["step_device"] = torch.cuda.get_device_name(0) if device.type == "cuda" else "CPU (no CUDA device)"
    record["step_versions"] = {"torch": torch.__version__, "transformers": transformers.__version__}
    torch.backends.cuda.matmul.allow_tf32 = True
    rows = record.setdefault("step", [])
    for model_name, config_file, seq, predictions, batches in STEP_SHAPES:
        if args.models and model_name not in args.models:
            continue
        batches = batches[: args.max_batches]
        for batch in batches[-1:] if compiled else batches:
            figures = step_rate(os.path.join(args.configs_dir, config_file), seq, predictions, batch, compiled,
                                device, args.warmup_steps, args.steps)
            rows.append({"model": model_name, "seq": seq, "batch": batch, "compiled": compiled, **figures})
            print(f"step {model_name} seq {seq} batch {batch} compiled={compiled}: "
                  f"{figures['sequences_per_second']:,.0f} seq/s (warm-up {figures['warmup_seconds']:.0f} s)",
                  flush=True)
            save()


# --- 2. the instance builder on the host CPU ----------------------------------------------------------------

# What each builder process works on: set in the parent just before the pool forks, inherited by the children.
_shares = None


def tokenized_documents(corpus, spm_model_file, lower_case=True):
    """The corpus's documents (paragraph per line, blank-line documents) as create_pretraining_data tokenizes
    them (TokenizedDocument), with no TensorFlow."""
    from albert_tf.data.corpus_reader import CorpusStats, iter_documents
    from albert_tf.data.pretraining_instances import tokenize_documents
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    tokenizer = AlbertTokenizer(spm_model_file, lower_case=lower_case)
    documents = list(iter_documents(corpus, 0, CorpusStats(), input_format="paragraphs"))
    return tokenize_documents(tokenizer, documents), tokenizer


def make_builder(tokenizer, seq, predictions, seed=12345):
    """The builder run_pretraining's documents reader runs (dupe factor 1, the recipes' masking)."""
    from albert_tf.data.masking import MaskingConfig
    from albert_tf.data.pretraining_instances import InstanceBuilder, InstanceConfig

    config = InstanceConfig(max_seq_length=seq, dupe_factor=1,
                            masking=MaskingConfig(max_predictions_per_seq=predictions))
    return InstanceBuilder(config, tokenizer.word_start_table, tokenizer.random_replacement_ids, seed,
                           special_ids=tokenizer.special_ids)


def build_instances(builder, documents, epoch):
    """Builds `documents`' instances for `epoch` as the reader does (one document at a time); their count."""
    from albert_tf.data.pretraining_instances import InstanceStats

    count = 0
    for document in documents:
        for keys, _, _ in builder.build(document, [document], InstanceStats(), epoch=epoch):
            count += len(keys)
    return count


def _build_share(worker):
    builder, documents, workers, epoch = _shares
    return build_instances(builder, documents[worker::workers], epoch)


def through_builder_processes(builder, documents, workers, epoch, seq, predictions):
    """Instances/s of `workers` BuilderProcesses children fed one document at a time from as many threads."""
    from albert_tf.data.builder_processes import BuilderProcesses, feature_widths

    children = BuilderProcesses(builder, feature_widths(seq, predictions), workers)

    def build(share):
        return sum(len(children.instances(epoch, document.tokens, document.offsets,
                                          [document.file_index, document.document_index])["input_ids"])
                   for document in share)

    try:
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            list(pool.map(build, [documents[-workers:][worker:worker + 1] for worker in range(workers)]))  # start
            start = time.perf_counter()
            counts = list(pool.map(build, [documents[worker::workers] for worker in range(workers)]))
        return sum(counts) / (time.perf_counter() - start), sum(counts)
    finally:
        children.close()


def builder_rate(documents, tokenizer, seq, predictions, workers, kind, epoch=1):
    """Instances/s of `workers` threads, processes or builder processes building one epoch of `documents`
    (largest first, dealt round-robin, so that one book does not leave the others idle)."""
    global _shares
    ordered = sorted(documents, key=lambda document: -len(document.tokens))
    builder = make_builder(tokenizer, seq, predictions)
    if kind == "builder processes":
        return through_builder_processes(builder, ordered, workers, epoch, seq, predictions)
    if kind == "threads":
        build_instances(builder, ordered[:workers], epoch)  # warm-up: first calls into NumPy and the builder
        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            counts = list(pool.map(lambda worker: build_instances(builder, ordered[worker::workers], epoch),
                                   range(workers)))
        return sum(counts) / (time.perf_counter() - start), sum(counts)
    _shares = (builder, ordered, workers, epoch)
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        pool.map(_build_share, range(workers))  # warm-up: the children start and touch their documents
        start = time.perf_counter()
        counts = pool.map(_build_share, range(workers))
    return sum(counts) / (time.perf_counter() - start), sum(counts)


def measure_builder(args, record, save):
    record["builder_cpu"] = cpu_description()
    started = time.perf_counter()
    documents, tokenizer = tokenized_documents(args.corpus, args.spm_model_file)
    record["builder_corpus"] = {"documents": len(documents), "pieces": int(sum(len(d.tokens) for d in documents)),
                                "tokenize_seconds": time.perf_counter() - started}
    rows = record.setdefault("builder", [])
    for seq, predictions in BUILDER_SHAPES:
        for kind, counts in (("threads", args.threads), ("processes", args.processes),
                             ("builder processes", args.builder_processes)):
            for workers in counts:
                rate, instances = builder_rate(documents, tokenizer, seq, predictions, workers, kind)
                rows.append({"seq": seq, "kind": kind, "workers": workers, "instances_per_second": rate,
                             "instances_per_epoch": instances})
                print(f"builder seq {seq} {workers} {kind}: {rate:,.0f} instances/s", flush=True)
                save()


# --- tables ----------------------------------------------------------------------------------------------


def recorded_figures(results_dir):
    """The recorded results (each part with the command that measured it), to keep the parts not measured."""
    record = {"commands": {}}
    path = os.path.join(results_dir, "accelerator_feed.json")
    if os.path.exists(path):
        with open(path) as f:
            record.update(json.load(f))
    if "command" in record:  # the first recording: one command measured both parts
        command = record.pop("command")
        record["commands"] = {part: command for part in PARTS if record.get(part)}
    return record


def results_text(record):
    parts = []
    if record.get("step"):
        parts.append(f"The step: Hugging Face's PyTorch ALBERT (MLM at the masked positions + SOP, AdamW, bf16 "
                     f"autocast) on {record['step_device']} ({', '.join(f'{k} {v}' for k, v in record['step_versions'].items())})")
        rows = [(row["model"], row["seq"], row["batch"], "compiled" if row["compiled"] else "eager",
                 f"{row['sequences_per_second']:,.0f}",
                 "" if row["peak_memory_gib"] is None else f"{row['peak_memory_gib']:.1f}")
                for row in record["step"]]
        parts.append(markdown_table(("model", "seq", "batch", "step", "sequences/s consumed", "peak GiB"), rows))
    if record.get("builder"):
        corpus = record["builder_corpus"]
        parts.append(f"The instance builder on the host CPU: {record['builder_cpu']}; {corpus['documents']} "
                     f"documents, {corpus['pieces']:,} pieces; one epoch (epoch 1) per measurement")
        rows = [(row["seq"], row["kind"], row["workers"], f"{row['instances_per_second']:,.0f}")
                for row in record["builder"]]
        parts.append(markdown_table(("seq", "workers are", "workers", "instances/s built"), rows))
    return "\n\n".join(parts) + "\n"


def integers(text):
    return [int(value) for value in text.split(",") if value]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default=",".join(PARTS), help=f"which parts to measure, of {','.join(PARTS)}")
    parser.add_argument("--corpus", help="training text, paragraph per line, blank-line documents (builder)")
    parser.add_argument("--spm_model_file", help="the SentencePiece model the corpus is tokenized with (builder)")
    parser.add_argument("--configs_dir", default=os.path.join(REPO, "configs"), help="albert_tf model configs")
    parser.add_argument("--models", default="", help="step: only these models (comma-separated); all by default")
    parser.add_argument("--max_batches", type=int, default=3, help="step: at most this many batch sizes per shape")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True,
                        help="step: also measure the torch.compile'd loss, at the largest batch of each shape")
    parser.add_argument("--warmup_steps", type=int, default=10, help="step: untimed steps first")
    parser.add_argument("--steps", type=int, default=20, help="step: steps per timed stretch (3 stretches)")
    parser.add_argument("--threads", type=integers, default=[1, 2, 4, 8], help="builder: thread counts")
    parser.add_argument("--processes", type=integers, default=[1, 2, 4, 8, 16],
                        help="builder: process counts, each process building its share of the documents")
    parser.add_argument("--builder_processes", type=integers, default=[1, 2, 4, 8, 16],
                        help="builder: albert_tf.data.builder_processes children, fed from as many threads")
    parser.add_argument("--results_dir", default=RESULTS, help="where accelerator_feed.{json,md} go")
    args = parser.parse_args(argv)
    parts = [part for part in args.parts.split(",") if part]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown --parts {unknown}; choose from {list(PARTS)}")
    if "builder" in parts and not (args.corpus and args.spm_model_file):
        parser.error("the builder part needs --corpus and --spm_model_file")
    args.models = [name for name in args.models.split(",") if name]

    record = recorded_figures(args.results_dir)
    command = " ".join(["python -m benchmarks.speed.accelerator_feed"] + (argv or sys.argv[1:]))
    for part in parts:
        record["commands"][part] = command
        record[part] = []

    def save():  # after every measurement, so that a run cut short keeps what it measured
        os.makedirs(args.results_dir, exist_ok=True)
        with open(os.path.join(args.results_dir, "accelerator_feed.json"), "w") as f:
            json.dump(portable(record), f, indent=1)

    # Eager steps, the builder, then the compiled steps: compiling is the slowest and the least needed part.
    if "step" in parts:
        measure_steps(args, record, save, compiled=False)
    if "builder" in parts:
        measure_builder(args, record, save)
    if "step" in parts and args.compile:
        measure_steps(args, record, save, compiled=True)
    write_results(args.results_dir, "accelerator_feed", results_text(record), record)


if __name__ == "__main__":
    main()
