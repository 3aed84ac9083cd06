r"""Training-step throughput: albert_tf vs KerasHub's ALBERT vs Hugging Face's PyTorch ALBERT.

  python -m benchmarks.speed.train_step [--preset=albert_base_v2] [--batch_size=8] [--seq_length=128] \
      [--steps=5] [--rounds=2] [--json=PATH]

Same model (the preset's architecture, random weights), same input shapes, one
optimizer step per training step, on whatever this machine has. Each
configuration runs in its own fresh process (so TensorFlow and PyTorch never
share threads), the configurations are interleaved over --rounds rounds, and
the median sequences/s is reported with its ratio to albert_tf fp32.

  albert_tf   Trainer + PretrainingObjective (MLM at the masked positions + SOP, LAMB), fp32/bf16, XLA off/on
  KerasHub    AlbertBackbone + AlbertMaskedLM head, GradientTape step with keras.optimizers.Lamb
              (KerasHub has no SOP head), fp32/bf16, XLA off/on
  Hugging Face AlbertForPreTraining (MLM over all positions, as its head does, + SOP), torch AdamW
              (torch has no LAMB), fp32 / bf16 autocast, eager

Model FLOPs per sequence use the standard 6 * (dense matmul parameters applied
per token) * tokens + attention terms, counting the shared block once per layer.
Model-FLOPs utilization (MFU) divides the achieved FLOP/s by a matmul peak
measured in the same run, in its own process between the configurations: the
best of TensorFlow float32 and bfloat16 matmuls of a few large square sizes on
all cores, the most this machine's TensorFlow gets out of a matmul (every
precision is held to the best of both).
"""

import argparse
import os

from benchmarks.speed.step_comparison import add_arguments, compare, print_peak, print_result, time_steps

CONFIGS = [
    ("albert_tf", "fp32", False), ("albert_tf", "bf16", False), ("albert_tf", "fp32", True), ("albert_tf", "bf16", True),
    ("keras_hub", "fp32", False), ("keras_hub", "bf16", False), ("keras_hub", "fp32", True), ("keras_hub", "bf16", True),
    ("huggingface", "fp32", False), ("huggingface", "bf16", False),
]
PREDICTIONS = 20


def random_batch(config, batch_size, seq_length, seed=0, predictions=PREDICTIONS):
    import numpy as np

    rng = np.random.default_rng(seed)
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq_length), predictions, replace=False)
                                  for _ in range(batch_size)]), axis=1)
    return {
        "input_word_ids": rng.integers(5, config.vocab_size, (batch_size, seq_length)).astype("int32"),
        "input_mask": np.ones((batch_size, seq_length), "int32"),
        "input_type_ids": (np.arange(seq_length)[None, :] >= seq_length // 2).repeat(batch_size, 0).astype("int32"),
        "masked_lm_positions": positions.astype("int32"),
        "masked_lm_ids": rng.integers(5, config.vocab_size, (batch_size, predictions)).astype("int32"),
        "masked_lm_weights": np.ones((batch_size, predictions), "float32"),
        "sentence_order_labels": rng.integers(0, 2, (batch_size,)).astype("int32"),
    }


def train_flops_per_sequence(config, seq_length):
    """Forward+backward FLOPs of one sequence (3x forward), the shared block counted once per layer."""
    h, e, i, v = config.hidden_size, config.embedding_size, config.intermediate_size, config.vocab_size
    per_token_layer = 2 * (4 * h * h + 2 * h * i)  # QKV + output projections, FFN
    attention = 2 * 2 * seq_length * h  # scores and weighted sum, per token
    forward = seq_length * (config.num_hidden_layers * (per_token_layer + attention) + 2 * e * h)
    forward += PREDICTIONS * 2 * (h * e + e * v) + 2 * h * h + 2 * h * 2  # MLM head at masked positions, pooler, SOP
    return 3 * forward


def albert_tf_step(config, batch, precision, xla, optimizer="lamb"):
    """A callable running one albert_tf pretraining step (and waiting for it)."""
    import keras
    import tensorflow as tf

    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.optimization import create_optimizer
    from albert_tf.tasks.pretraining_losses import PretrainingObjective
    from albert_tf.text.special_ids import ALBERT_SPECIAL_IDS
    from albert_tf.training.trainer import Trainer

    keras.mixed_precision.set_global_policy("mixed_bfloat16" if precision == "bf16" else "float32")
    seq_length = batch["input_word_ids"].shape[1]
    strategy = tf.distribute.get_strategy()
    model = AlbertPretrainer(config, seq_length=seq_length, max_predictions_per_seq=PREDICTIONS)
    optimizer = create_optimizer(1e-4, 1000, 10, optimizer=optimizer, gradients_are_aggregated=True)
    trainer = Trainer(strategy, model, optimizer, PretrainingObjective(mask_id=ALBERT_SPECIAL_IDS.mask), len(batch["input_word_ids"]), jit_compile=xla)
    iterator = iter(tf.data.Dataset.from_tensors({k: tf.constant(v) for k, v in batch.items()}).repeat())
    one = tf.constant(1)
    return lambda: trainer.train_loop(iterator, one)[0]["sequences"].numpy()


def keras_hub_step(config, batch, precision, xla):
    """A callable running one KerasHub AlbertMaskedLM training step (and waiting for it)."""
    import keras
    import keras_hub
    import tensorflow as tf

    keras.mixed_precision.set_global_policy("mixed_bfloat16" if precision == "bf16" else "float32")
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers, num_heads=config.num_attention_heads,
        embedding_dim=config.embedding_size, hidden_dim=config.hidden_size, intermediate_dim=config.intermediate_size,
        num_groups=config.num_hidden_groups, num_inner_repetitions=config.inner_group_num, dropout=0.0,
        max_sequence_length=config.max_position_embeddings)
    model = keras_hub.models.AlbertMaskedLM(backbone)
    optimizer = keras.optimizers.Lamb(1e-4)
    inputs = {"token_ids": tf.constant(batch["input_word_ids"]), "segment_ids": tf.constant(batch["input_type_ids"]),
              "padding_mask": tf.constant(batch["input_mask"].astype(bool)),
              "mask_positions": tf.constant(batch["masked_lm_positions"])}
    labels = tf.constant(batch["masked_lm_ids"])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=False)

    @tf.function(jit_compile=xla)
    def gradients():
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, tf.cast(model(inputs, training=True), tf.float32))
        return tape.gradient(loss, model.trainable_variables)

    @tf.function
    def step():
        # The backbone's pooler gets no gradient from an MLM-only loss.
        pairs = [(tf.convert_to_tensor(g), v) for g, v in zip(gradients(), model.trainable_variables) if g is not None]
        optimizer.apply_gradients(pairs)
        return optimizer.iterations

    return lambda: step().numpy()


# The TensorFlow peers' steps, also profiled by benchmarks/speed/profile_step.py.
TF_STEPS = {"albert_tf": albert_tf_step, "keras_hub": keras_hub_step}


def run_huggingface(config, batch, precision, xla, steps):
    import torch
    import transformers

    torch.set_num_threads(os.cpu_count())
    from benchmarks.common import huggingface_config

    model = transformers.AlbertForPreTraining(huggingface_config(config)).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    labels = torch.full(batch["input_word_ids"].shape, -100, dtype=torch.long)
    rows = torch.arange(labels.shape[0])[:, None]
    labels[rows, torch.tensor(batch["masked_lm_positions"], dtype=torch.long)] = torch.tensor(
        batch["masked_lm_ids"], dtype=torch.long)
    tensors = dict(input_ids=torch.tensor(batch["input_word_ids"], dtype=torch.long),
                   attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                   token_type_ids=torch.tensor(batch["input_type_ids"], dtype=torch.long),
                   labels=labels, sentence_order_label=torch.tensor(batch["sentence_order_labels"], dtype=torch.long))

    def step():
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = model(**tensors).loss
        loss.backward()
        optimizer.step()

    return time_steps(step, steps, warmup=2)


def worker(args):
    from albert_tf.albert_config import AlbertConfig

    peer, precision, xla = args.worker.split(":")
    if peer == "peak":
        return print_peak(precision)
    config = AlbertConfig.from_name_or_path(args.preset)
    batch = random_batch(config, args.batch_size, args.seq_length)
    if peer == "huggingface":
        seconds = run_huggingface(config, batch, precision, xla == "xla", args.steps)
    else:
        seconds = time_steps(TF_STEPS[peer](config, batch, precision, xla == "xla"), args.steps, warmup=2)
    print_result(args.steps * args.batch_size / seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser, "train_step")
    args = parser.parse_args(argv)
    if args.seq_length <= PREDICTIONS:
        # Each row masks PREDICTIONS distinct positions after [CLS]; a shorter row cannot hold them, and every
        # worker would fail with an empty table.
        parser.error(f"--seq_length={args.seq_length}: a row masks {PREDICTIONS} positions after [CLS], so it needs "
                     f"at least {PREDICTIONS + 1} positions")
    if args.worker:
        return worker(args)

    from albert_tf.albert_config import AlbertConfig

    config = AlbertConfig.from_name_or_path(args.preset)
    compare(args, __spec__.name, CONFIGS, train_flops_per_sequence(config, args.seq_length),
            f"{args.preset}, batch {args.batch_size}, seq {args.seq_length}, {PREDICTIONS} masked positions", parser)


if __name__ == "__main__":
    main()
