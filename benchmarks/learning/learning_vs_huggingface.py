r"""Is the learning curve what the architecture gives? The same run in Hugging Face's PyTorch ALBERT.

  python -m benchmarks.learning.learning_curve                 # first: the data, vocabulary and albert_tf's run
  python -m benchmarks.learning.learning_vs_huggingface [--work_dir=/tmp/albert_learning_curve] [--steps=2000]

Trains transformers.AlbertForPreTraining, built from the same config, on the
same TFRecords with the same recipe as learning_curve.py's albert_tf run (pass
the same --learning_rate, --num_warmup_steps, --num_train_steps if you changed
them there): the
original LAMB (written out below in PyTorch from docs/reference.md, "Pretraining recipe and LAMB", independently of
albert_tf's Keras optimizer: no bias correction, decay inside the trust ratio,
LayerNorm and biases excluded), global-norm clipping at 1.0, the same warmup and
linear decay over the same total number of steps, the same batch size. It stops
after --steps and compares held-out accuracies with albert_tf's checkpoint of
that step, both evaluated by the code below on the same held-out instances:
masked-LM accuracy over all masked positions, over the positions whose input is
[MASK] (the part that needs context: 10% of masked positions keep their own
token, which a model can learn to copy), and sentence-order accuracy. The data
order differs (each side shuffles its own way), so expect agreement within
noise, not equality.

Writes benchmarks/results/learning_vs_huggingface.{md,json}. Needs torch and
transformers (requirements-dev.txt).
"""

import argparse
import json
import os
import time

from benchmarks.common import RESULTS, portable

EXCLUDED = ("LayerNorm", "layer_norm", "bias")  # docs/reference.md, "Pretraining recipe and LAMB": no decay, no trust ratio


def learning_rate(step, peak, warmup, total):
    """The original schedule: linear warmup, then linear decay measured from step 0."""
    if step < warmup:
        return peak * step / warmup
    return peak * (1.0 - min(step, total) / total)


class OriginalLamb:
    """LAMB as the original ALBERT code applies it (docs/reference.md, "Pretraining recipe and LAMB"), on PyTorch tensors."""

    def __init__(self, named_parameters, beta_1=0.9, beta_2=0.999, epsilon=1e-6, weight_decay_rate=0.01):
        import torch

        self.parameters = [(name, p) for name, p in named_parameters if p.requires_grad]
        self.state = {name: (torch.zeros_like(p), torch.zeros_like(p)) for name, p in self.parameters}
        self.beta_1, self.beta_2, self.epsilon, self.weight_decay_rate = beta_1, beta_2, epsilon, weight_decay_rate

    def step(self, lr):
        import torch

        with torch.no_grad():
            for name, p in self.parameters:
                if p.grad is None:
                    continue
                m, v = self.state[name]
                m.mul_(self.beta_1).add_(p.grad, alpha=1 - self.beta_1)
                v.mul_(self.beta_2).addcmul_(p.grad, p.grad, value=1 - self.beta_2)
                update = m / (v.sqrt() + self.epsilon)
                excluded = any(part in name for part in EXCLUDED)
                ratio = 1.0
                if not excluded:
                    update = update + self.weight_decay_rate * p
                    w_norm, u_norm = p.norm(), update.norm()
                    ratio = float(w_norm / u_norm) if w_norm > 0 and u_norm > 0 else 1.0
                p.sub_(lr * ratio * update)


def to_torch(batch):
    import torch

    ids = batch["input_word_ids"].numpy()
    labels = torch.full(ids.shape, -100, dtype=torch.long)
    positions = batch["masked_lm_positions"].numpy()
    weights = batch["masked_lm_weights"].numpy()
    targets = batch["masked_lm_ids"].numpy()
    for row in range(ids.shape[0]):
        for position, target, weight in zip(positions[row], targets[row], weights[row]):
            if weight > 0:
                labels[row, position] = int(target)
    return dict(input_ids=torch.tensor(ids, dtype=torch.long),
                attention_mask=torch.tensor(batch["input_mask"].numpy(), dtype=torch.long),
                token_type_ids=torch.tensor(batch["input_type_ids"].numpy(), dtype=torch.long),
                labels=labels,
                sentence_order_label=torch.tensor(batch["sentence_order_labels"].numpy(), dtype=torch.long))


def accuracies(batches_of_predictions):
    """Held-out accuracies from (mlm predictions [B,P], sop predictions [B], batch) triples."""
    import numpy as np

    from albert_tf.text.albert_tokenizer import MASK_ID

    sums = dict(correct=0.0, weight=0.0, at_mask_correct=0.0, at_mask_weight=0.0, sop_correct=0.0, sequences=0.0)
    for mlm, sop, batch in batches_of_predictions:
        weights = batch["masked_lm_weights"].numpy()
        targets = batch["masked_lm_ids"].numpy()
        inputs = np.take_along_axis(batch["input_word_ids"].numpy(), batch["masked_lm_positions"].numpy(), axis=1)
        correct = (mlm == targets) * weights
        at_mask = (inputs == MASK_ID) * weights
        sums["correct"] += correct.sum()
        sums["weight"] += weights.sum()
        sums["at_mask_correct"] += (correct * at_mask).sum()
        sums["at_mask_weight"] += at_mask.sum()
        sums["sop_correct"] += (sop == batch["sentence_order_labels"].numpy()).sum()
        sums["sequences"] += len(sop)
    return {"masked_lm_accuracy": sums["correct"] / sums["weight"],
            "masked_lm_accuracy_at_mask": sums["at_mask_correct"] / sums["at_mask_weight"],
            "sentence_order_accuracy": sums["sop_correct"] / sums["sequences"],
            "sequences": int(sums["sequences"])}


def evaluate_albert_tf(checkpoint, eval_dataset):
    import tensorflow as tf

    from albert_tf.models.model_io import load_pretrainer
    from albert_tf.tasks.pretraining_losses import MODEL_INPUTS

    model = load_pretrainer(checkpoint)
    predict = tf.function(lambda batch: model({name: batch[name] for name in MODEL_INPUTS}, training=False))

    def triples():
        for batch in eval_dataset:
            outputs = predict(batch)
            yield (tf.argmax(outputs["mlm_logits"], -1).numpy(), tf.argmax(outputs["sop_logits"], -1).numpy(), batch)

    return accuracies(triples())


def evaluate_huggingface(model, eval_dataset):
    import torch

    def triples():
        model.eval()
        with torch.no_grad():
            for batch in eval_dataset:
                inputs = to_torch(batch)
                outputs = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                                token_type_ids=inputs["token_type_ids"])
                positions = torch.tensor(batch["masked_lm_positions"].numpy(), dtype=torch.long)
                logits = torch.gather(outputs.prediction_logits, 1,
                                      positions[:, :, None].expand(-1, -1, outputs.prediction_logits.shape[-1]))
                yield logits.argmax(-1).numpy(), outputs.sop_logits.argmax(-1).numpy(), batch
        model.train()

    return accuracies(triples())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work_dir", default="/tmp/albert_learning_curve",
                        help="learning_curve.py's --work_dir (data, config and albert_tf's checkpoints)")
    parser.add_argument("--steps", type=int, default=2000,
                        help="train Hugging Face this many steps; albert_tf's checkpoint of this step must exist")
    parser.add_argument("--learning_rate", type=float, default=1e-2, help="learning_curve.py's --learning_rate")
    parser.add_argument("--num_warmup_steps", type=int, default=400, help="learning_curve.py's --num_warmup_steps")
    parser.add_argument("--num_train_steps", type=int, default=8000,
                        help="learning_curve.py's --num_train_steps (the length the schedule decays over)")
    parser.add_argument("--seed", type=int, default=12345, help="PyTorch initialization and data order")
    parser.add_argument("--results_dir", default=RESULTS, help="where learning_vs_huggingface.{md,json} go")
    args = parser.parse_args(argv)

    import tensorflow as tf
    import torch
    import transformers

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.data.pretraining_dataset import expand_data_files, make_pretraining_dataset
    from benchmarks.common import huggingface_config

    pretrain_dir = os.path.join(args.work_dir, "pretrain")
    if not os.path.exists(os.path.join(pretrain_dir, "run_config.json")):
        parser.error(f"{pretrain_dir}: no albert_tf pretraining run (run_config.json); run "
                     f"`python -m benchmarks.learning.learning_curve --work_dir={args.work_dir}` first")
    with open(os.path.join(pretrain_dir, "run_config.json")) as f:
        run = json.load(f)
    checkpoint = os.path.join(pretrain_dir, f"ckpt-{args.steps}")
    if not tf.io.gfile.exists(checkpoint + ".index"):
        parser.error(f"{checkpoint}: no albert_tf checkpoint of step {args.steps} (run learning_curve.py first, "
                     "or pick a step it saved)")
    if run.get("optimizer", "lamb") != "lamb":
        parser.error(f"{pretrain_dir} was trained with {run['optimizer']}; this script replays the LAMB recipe")
    config = AlbertConfig.from_name_or_path(run["albert_config"])
    seq_length, predictions, batch_size = run["max_seq_length"], run["max_predictions_per_seq"], run["train_batch_size"]
    peak, warmup, total = args.learning_rate, args.num_warmup_steps, args.num_train_steps

    data = os.path.join(args.work_dir, "data")
    train = make_pretraining_dataset(expand_data_files(os.path.join(data, "train")), batch_size, seq_length,
                                     predictions, seed=args.seed)
    held_out = make_pretraining_dataset(expand_data_files(os.path.join(data, "heldout")), 64, seq_length,
                                        predictions, is_training=False)

    torch.manual_seed(args.seed)
    torch.set_num_threads(os.cpu_count())
    model = transformers.AlbertForPreTraining(huggingface_config(config)).train()
    optimizer = OriginalLamb(model.named_parameters())
    start = time.time()
    for step, batch in zip(range(args.steps), train):
        model.zero_grad(set_to_none=True)
        loss = model(**to_torch(batch)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step(learning_rate(step, peak, warmup, total))
        if (step + 1) % 100 == 0:
            elapsed = time.time() - start
            print(f"huggingface step {step + 1}/{args.steps}  loss {loss.item():.4f}  "
                  f"{(step + 1) * batch_size / elapsed:.1f} seq/s", flush=True)

    results = {"albert_tf": evaluate_albert_tf(checkpoint, held_out),
               "huggingface": evaluate_huggingface(model, held_out)}
    rows = "\n".join(f"| {name} | {r['masked_lm_accuracy']:.3f} | {r['masked_lm_accuracy_at_mask']:.3f} | "
                     f"{r['sentence_order_accuracy']:.3f} |" for name, r in results.items())
    text = (f"Step {args.steps} of the learning curve's recipe (LAMB lr {peak}, warmup {warmup}, decay over {total} "
            f"steps, batch {batch_size}, seq {seq_length}); held-out: {results['albert_tf']['sequences']:,} "
            "sequences.\n\n| implementation | MLM accuracy | MLM accuracy at [MASK] inputs | SOP accuracy |\n"
            "|---|---|---|---|\n" + rows + "\n")
    print("\n" + text)
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "learning_vs_huggingface.md"), "w") as f:
        f.write(portable(text))
    with open(os.path.join(args.results_dir, "learning_vs_huggingface.json"), "w") as f:
        json.dump(portable({"args": vars(args), "recipe": run, "results": results}), f, indent=2, default=float)


if __name__ == "__main__":
    main()
