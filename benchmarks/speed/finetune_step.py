r"""Fine-tuning step throughput: albert_tf vs KerasHub's AlbertTextClassifier.fit vs Hugging Face's PyTorch ALBERT.

  python -m benchmarks.speed.finetune_step [--preset=albert_base_v2] [--batch_size=32] [--seq_length=128] \
      [--steps=5] [--rounds=2] [--json=PATH]

SST-2-shaped batches (one sentence of 8 to 60 pieces per row, padded to
--seq_length, two labels), the same model (the preset's architecture, random
weights) and one optimizer step per training step, on whatever this machine has.
Each configuration runs in its own fresh process, the configurations are
interleaved over --rounds rounds, and the median sequences/s is reported with its
ratio to albert_tf fp32 and its model-FLOPs utilization against a matmul peak
measured in the same run (benchmarks/speed/step_comparison.py).

  albert_tf    the fine-tuning tools' step: AlbertClassifier under the one Trainer with the GLUE task's
               loss (FinetuningObjective) and the original AdamW, fp32/bf16, XLA off/on; every layer runs
               on the unpadded positions alone and the last one at [CLS] alone
  albert_tf_padded  the same step with every layer on every position (padding included), as the step was
               before it skipped the padding: what skipping it gains
  KerasHub     AlbertTextClassifier (no preprocessor) compiled with keras.optimizers.AdamW and trained
               by its own fit(), fp32/bf16, XLA off/on (compile(jit_compile=...))
  Hugging Face AlbertForSequenceClassification, torch AdamW, fp32 / bf16 autocast, eager

All three use dropout 0.1 before the classifier, as the original recipe does. The FLOPs per sequence count
every position, as the peers compute them; albert_tf's step skips the padding (SST-2-shaped rows are about a
quarter text at seq 128), so its achieved GFLOP/s and MFU are the padded step's equivalent, not its own.
"""

import argparse
import os

from benchmarks.speed.step_comparison import add_arguments, compare, print_peak, print_result, time_steps

CONFIGS = [
    ("albert_tf", "fp32", False), ("albert_tf", "bf16", False), ("albert_tf", "fp32", True), ("albert_tf", "bf16", True),
    ("keras_hub", "fp32", False), ("keras_hub", "bf16", False), ("keras_hub", "fp32", True), ("keras_hub", "bf16", True),
    ("huggingface", "fp32", False), ("huggingface", "bf16", False),
    ("albert_tf_padded", "fp32", False), ("albert_tf_padded", "bf16", False),
]
LEARNING_RATE = 1e-5  # SST-2's recipe


def sst2_batch(config, batch_size, seq_length, seed=0):
    """[CLS] sentence [SEP] rows of 8 to 60 pieces, padded; binary labels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lengths = rng.integers(8, min(60, seq_length - 2) + 1, batch_size) + 2
    mask = (np.arange(seq_length)[None, :] < lengths[:, None]).astype("int32")
    ids = rng.integers(5, config.vocab_size, (batch_size, seq_length)).astype("int32") * mask
    ids[:, 0] = 2  # [CLS]
    ids[np.arange(batch_size), lengths - 1] = 3  # [SEP]
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids),
            "label_ids": rng.integers(0, 2, batch_size).astype("int32")}


def finetune_flops_per_sequence(config, seq_length):
    """Forward+backward FLOPs of one padded sequence (3x forward; every peer computes all positions), the
    shared block counted once per layer: the encoder, the pooler and the classifier."""
    h, e, i = config.hidden_size, config.embedding_size, config.intermediate_size
    per_token_layer = 2 * (4 * h * h + 2 * h * i)  # QKV + output projections, FFN
    attention = 2 * 2 * seq_length * h  # scores and weighted sum, per token
    forward = seq_length * (config.num_hidden_layers * (per_token_layer + attention) + 2 * e * h)
    forward += 2 * h * h + 2 * h * 2  # pooler, classifier
    return 3 * forward


def albert_tf_step(config, batch, precision, xla, skip_padding=True):
    """A callable running one step of albert_tf's fine-tuning tools (and waiting for it); `skip_padding` False:
    with every layer computed on every position."""
    import keras
    import tensorflow as tf

    from albert_tf.models.albert_classifier import AlbertClassifier
    from albert_tf.networks.albert_encoder import ENCODER_INPUTS, AlbertEncoder
    from albert_tf.optimization import create_optimizer
    from albert_tf.tasks.finetuning_task import FinetuningObjective
    from albert_tf.tasks.glue_task import GlueTask
    from albert_tf.training.trainer import Trainer

    keras.mixed_precision.set_global_policy("mixed_bfloat16" if precision == "bf16" else "float32")
    strategy = tf.distribute.get_strategy()
    class PaddedAlbertClassifier(AlbertClassifier):
        def head_outputs(self, inputs, training=True):
            pooled = self.encoder.first_token_pooled_output({name: inputs[name] for name in ENCODER_INPUTS},
                                                            training=training, skip_padding=False)
            return {"logits": self.classifier(self.dropout(pooled, training=training))}

    model = (AlbertClassifier if skip_padding else PaddedAlbertClassifier)(AlbertEncoder(config), num_labels=2,
                                                                           dropout=0.1)
    # As finetuning.finetune builds it: the original AdamW, the all-reduced gradient clipped to norm 1.
    optimizer = create_optimizer(LEARNING_RATE, 1000, 100, optimizer="adamw", weight_decay_rate=0.01, clipnorm=1.0,
                                 gradients_are_aggregated=True)
    trainer = Trainer(strategy, model, optimizer, FinetuningObjective(GlueTask().example_losses),
                      len(batch["input_word_ids"]), jit_compile=xla, input_is_global=True)
    iterator = iter(tf.data.Dataset.from_tensors({k: tf.constant(v) for k, v in batch.items()}).repeat())
    one = tf.constant(1)
    return lambda: trainer.train_loop(iterator, one)[0]["examples"].numpy()


def run_keras_hub(config, batch, precision, xla, steps):
    """Seconds for `steps` steps of KerasHub's AlbertTextClassifier.fit (after 2 warm-up steps)."""
    import time

    import keras
    import keras_hub
    import tensorflow as tf

    keras.mixed_precision.set_global_policy("mixed_bfloat16" if precision == "bf16" else "float32")
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers, num_heads=config.num_attention_heads,
        embedding_dim=config.embedding_size, hidden_dim=config.hidden_size, intermediate_dim=config.intermediate_size,
        num_groups=config.num_hidden_groups, num_inner_repetitions=config.inner_group_num, dropout=0.0,
        max_sequence_length=config.max_position_embeddings)
    classifier = keras_hub.models.AlbertTextClassifier(backbone, num_classes=2, preprocessor=None, dropout=0.1)
    classifier.compile(optimizer=keras.optimizers.AdamW(LEARNING_RATE, weight_decay=0.01, global_clipnorm=1.0),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=xla)
    inputs = {"token_ids": batch["input_word_ids"], "segment_ids": batch["input_type_ids"],
              "padding_mask": batch["input_mask"].astype(bool)}
    dataset = tf.data.Dataset.from_tensors((inputs, batch["label_ids"])).repeat()
    classifier.fit(dataset, steps_per_epoch=2, epochs=1, verbose=0)  # builds, traces and warms up
    start = time.perf_counter()
    classifier.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0)
    return time.perf_counter() - start


def run_huggingface(config, batch, precision, steps):
    import torch
    import transformers

    from benchmarks.common import huggingface_config

    torch.set_num_threads(os.cpu_count())
    hf_config = huggingface_config(config)
    hf_config.num_labels = 2
    hf_config.classifier_dropout_prob = 0.1
    model = transformers.AlbertForSequenceClassification(hf_config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
    tensors = dict(input_ids=torch.tensor(batch["input_word_ids"], dtype=torch.long),
                   attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                   token_type_ids=torch.tensor(batch["input_type_ids"], dtype=torch.long),
                   labels=torch.tensor(batch["label_ids"], dtype=torch.long))

    def step():
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = model(**tensors).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return time_steps(step, steps, warmup=2)


def worker(args):
    from albert_tf.albert_config import AlbertConfig

    peer, precision, xla = args.worker.split(":")
    if peer == "peak":
        return print_peak(precision)
    config = AlbertConfig.from_name_or_path(args.preset)
    batch = sst2_batch(config, args.batch_size, args.seq_length)
    if peer == "huggingface":
        seconds = run_huggingface(config, batch, precision, args.steps)
    elif peer == "keras_hub":
        seconds = run_keras_hub(config, batch, precision, xla == "xla", args.steps)
    else:
        seconds = time_steps(albert_tf_step(config, batch, precision, xla == "xla",
                                            skip_padding=peer != "albert_tf_padded"), args.steps, warmup=2)
    print_result(args.steps * args.batch_size / seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser, "finetune_step")
    parser.set_defaults(batch_size=32)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)

    from albert_tf.albert_config import AlbertConfig

    config = AlbertConfig.from_name_or_path(args.preset)
    compare(args, __spec__.name, CONFIGS, finetune_flops_per_sequence(config, args.seq_length),
            f"{args.preset}, SST-2-shaped batches of {args.batch_size}, seq {args.seq_length}, 2 labels", parser)


if __name__ == "__main__":
    main()
