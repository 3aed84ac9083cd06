r"""Hugging Face's standard from-scratch route on the recipes' text, evaluated on the same held-out records.

  python -m benchmarks.learning.pretraining_recipes --recipes=...   # first: the split, vocabulary and held-out records
  python -m benchmarks.learning.huggingface_from_scratch [--work_dir=/tmp/albert_recipes] [--budget_hours=3]

What a Hugging Face user runs to pretrain ALBERT from scratch (transformers' run_mlm.py route):
  - transformers.AlbertForMaskedLM with albert_small's architecture and the recipes' 8,000-piece
    vocabulary; MLM only (run_mlm has no sentence-order head);
  - the training text (WORK/train.txt, every 10th document held out) tokenized by that vocabulary
    through AutoTokenizer, loading the tokenizer files albert_tf writes for Hugging Face (those of
    `albert-convert --to=huggingface`), concatenated and cut into blocks of 64 tokens
    ([CLS] + 62 pieces + [SEP]) as run_mlm's group_texts does;
  - DataCollatorForLanguageModeling: 15% of tokens chosen afresh for every batch, 80% [MASK],
    10% random, 10% kept;
  - the Trainer's AdamW recipe (betas 0.9/0.999, eps 1e-8, weight decay 0.01 except biases and
    LayerNorm, linear warmup then linear decay to 0) at the albert_tf recipe's peak 5e-4, batch 64,
    1,000 warmup steps.
The step count is fitted to --budget_hours from the step time measured after the first steps and
one evaluation, as run_pretraining --train_budget_hours does. Every 500 steps the model is
evaluated on WORK/d64/heldout, the records every albert_tf recipe is evaluated on (MLM accuracy over
all masked positions and at [MASK] inputs); each evaluation is a line of
WORK/runs/hf_scratch/eval_history.jsonl, and the fitted step count goes to train_budget.json beside
it. A checkpoint every 500 steps: rerun the same command to
resume (batches and masks are functions of the step, so a resumed run continues exactly).

Needs torch and transformers (requirements-dev.txt).
"""

import argparse
import json
import os
import time


import numpy as np


BATCH, SEQ, PEAK, EVERY = 64, 64, 5e-4, 500


def blocks(train_text, tokenizer):
    """[N, SEQ] int64 token blocks of the whole training text, in order."""
    with open(train_text, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    ids = [i for row in tokenizer(lines, add_special_tokens=False)["input_ids"] for i in row]
    body = SEQ - 2
    count = len(ids) // body
    pieces = np.array(ids[: count * body], dtype=np.int64).reshape(count, body)
    return np.concatenate([np.full((count, 1), tokenizer.cls_token_id), pieces,
                           np.full((count, 1), tokenizer.sep_token_id)], axis=1)


def batch_rows(step, num_blocks, seed):
    """The block indexes of batch `step`: epochs of a permutation drawn from (seed, epoch)."""
    start = step * BATCH
    rows = []
    while len(rows) < BATCH:
        epoch, offset = divmod(start + len(rows), num_blocks)
        order = np.random.default_rng([seed, epoch]).permutation(num_blocks)
        rows.extend(order[offset: offset + BATCH - len(rows)].tolist())
    return rows


def learning_rate(step, total, warmup):
    """transformers' linear schedule: warmup from 0, then a straight line to 0 at `total`."""
    if step < warmup:
        return PEAK * step / warmup
    return PEAK * max(0.0, (total - step) / max(1, total - warmup))


def evaluate(model, heldout):
    """MLM accuracy over the held-out records' masked positions, and at those whose input is [MASK]."""
    import torch

    from albert_tf.text.albert_tokenizer import MASK_ID

    sums = np.zeros(4)
    model.eval()
    with torch.no_grad():
        for batch in heldout:
            ids = batch["input_word_ids"].numpy()
            logits = model(input_ids=torch.tensor(ids, dtype=torch.long),
                           attention_mask=torch.tensor(batch["input_mask"].numpy(), dtype=torch.long),
                           token_type_ids=torch.tensor(batch["input_type_ids"].numpy(), dtype=torch.long)).logits
            positions = batch["masked_lm_positions"].numpy()
            predicted = np.take_along_axis(logits.argmax(-1).numpy(), positions, axis=1)
            weights = batch["masked_lm_weights"].numpy()
            correct = (predicted == batch["masked_lm_ids"].numpy()) * weights
            at_mask = (np.take_along_axis(ids, positions, axis=1) == MASK_ID) * weights
            sums += [correct.sum(), weights.sum(), (correct * at_mask).sum(), at_mask.sum()]
    model.train()
    return {"masked_lm_accuracy": sums[0] / sums[1], "masked_lm_accuracy_at_mask": sums[2] / sums[3]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work_dir", default="/tmp/albert_recipes", help="pretraining_recipes.py's --work_dir")
    parser.add_argument("--budget_hours", type=float, default=3.0, help="wall-clock budget the steps are fitted to")
    parser.add_argument("--seed", type=int, default=12345, help="initialization, data order and masks")
    parser.add_argument("--warmup_steps", type=int, default=1000, help="linear warmup (the albert_tf recipe's 1,000)")
    parser.add_argument("--steps_per_loop", type=int, default=50,
                        help="steps between progress lines and step-time readings (default 50; the budget is fitted "
                             "after the first loop and 20 more steps)")
    args = parser.parse_args(argv)

    import torch
    import transformers

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.checkpoints.huggingface_tokenizer import write_tokenizer_files
    from albert_tf.data.pretraining_dataset import expand_data_files, make_pretraining_dataset
    from albert_tf.training.train_budget import StepTimer, plan_budget
    from benchmarks.common import huggingface_config

    torch.set_num_threads(os.cpu_count() or 1)
    work = args.work_dir
    heldout_prefix = os.path.join(work, "d64", "heldout")
    if not os.path.exists(heldout_prefix + ".metadata.json"):
        parser.error(f"{heldout_prefix}: no held-out records; run benchmarks/learning/pretraining_recipes.py first")
    run_dir = os.path.join(work, "runs", "hf_scratch")
    tokenizer_dir = os.path.join(run_dir, "tokenizer")
    os.makedirs(tokenizer_dir, exist_ok=True)
    write_tokenizer_files(os.path.join(work, "spm.model"), tokenizer_dir, SEQ)
    tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer_dir)
    tokenizer.model_max_length = 1 << 30  # lines are tokenized whole, then cut into blocks of SEQ
    data = blocks(os.path.join(work, "train.txt"), tokenizer)
    collator = transformers.DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm_probability=0.15,
                                                            return_tensors="pt")
    heldout = list(make_pretraining_dataset(expand_data_files(heldout_prefix), 64, SEQ, 10, is_training=False))

    torch.manual_seed(args.seed)
    config = AlbertConfig.from_name_or_path(os.path.join(work, "small8k.json"))
    model = transformers.AlbertForMaskedLM(huggingface_config(config))
    no_decay = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
    decay = [p for n, p in model.named_parameters() if not ("bias" in n or "LayerNorm" in n)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=0.0, betas=(0.9, 0.999), eps=1e-8)
    checkpoint_path = os.path.join(run_dir, "checkpoint.pt")
    history_path = os.path.join(run_dir, "eval_history.jsonl")
    step, plan, previous_seconds = 0, None, 0.0
    if os.path.exists(checkpoint_path):
        state = torch.load(checkpoint_path, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, plan = state["step"], state["plan"]
        previous_seconds = state.get("elapsed_seconds", 0.0)  # the clock continues across resumes
        print(f"Resuming at step {step}" + (f" of {plan['num_train_steps']}" if plan else ""), flush=True)
    if plan:
        write_plan(run_dir, plan)
    if os.path.exists(history_path):  # drop evaluations of steps after the checkpoint: they are redone
        with open(history_path) as f:
            kept = [line for line in f if line.strip() and json.loads(line)["step"] <= step]
        with open(history_path, "w") as f:
            f.writelines(kept)
    total = plan["num_train_steps"] if plan else 10**6
    timer, start = StepTimer(), time.monotonic() - previous_seconds
    print(f"{len(data):,} blocks of {SEQ} tokens; AlbertForMaskedLM with "
          f"{sum(p.numel() for p in model.parameters()):,} parameters", flush=True)
    model.train()
    while step < total:
        loop_start, loop_steps = time.monotonic(), 0
        while loop_steps < args.steps_per_loop and step < total:
            torch.manual_seed(args.seed * 1_000_003 + step)  # masks and dropout: functions of the step
            batch = collator([{"input_ids": row} for row in data[batch_rows(step, len(data), args.seed)]])
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(step, total, args.warmup_steps)
            loss = model(input_ids=batch["input_ids"], labels=batch["labels"]).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
            step += 1
            loop_steps += 1
        timer.add(loop_steps, time.monotonic() - loop_start)
        elapsed = time.monotonic() - start
        print(f"step {step}/{total}  mlm_loss {loss.item():.4f}  lr {learning_rate(step, total, args.warmup_steps):.3g}  "
              f"elapsed {elapsed:.0f}s", flush=True)
        evaluate_now = step % EVERY == 0 or step >= total or (plan is None and timer.ready)
        if evaluate_now:
            eval_start = time.monotonic()
            metrics = evaluate(model, heldout)
            eval_seconds = time.monotonic() - eval_start
            print(f"eval step {step}  {json.dumps(metrics)}", flush=True)
            with open(history_path, "a") as f:
                f.write(json.dumps({"step": step, "elapsed_seconds": round(elapsed, 1), "heldout": metrics}) + "\n")
            if plan is None:
                plan = plan_budget(args.budget_hours, elapsed + eval_seconds, step, timer.step_seconds, eval_seconds,
                                   EVERY, 10**6, args.warmup_steps).to_json()
                total = plan["num_train_steps"]
                write_plan(run_dir, plan)
                print(f"Budget {args.budget_hours:g} h: {timer.step_seconds * 1000:.0f} ms/step -> {total:,} steps",
                      flush=True)
        if step % EVERY == 0 or step >= total:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step, "plan": plan,
                        "elapsed_seconds": time.monotonic() - start}, checkpoint_path + ".tmp")
            os.replace(checkpoint_path + ".tmp", checkpoint_path)


def write_plan(run_dir, plan):
    """The budget plan beside the run, where benchmarks.learning.from_scratch reads the planned step count
    (run_pretraining keeps it in run_config.json)."""
    from albert_tf.file_utils import write_json_atomically
    from benchmarks.learning.from_scratch import HUGGING_FACE_PLAN_FILE

    write_json_atomically(os.path.join(run_dir, HUGGING_FACE_PLAN_FILE), plan)


if __name__ == "__main__":
    main()
