"""The fine-tuning loop every task CLI shares (GLUE, SQuAD, RACE): one device, AdamW, resumable.

    encoder = starting_encoder(init_checkpoint)          # or a fresh one: starting_encoder(None, "albert_tiny")
    model = AlbertClassifier(encoder, num_labels=2)
    result = finetune(model, arrays, loss_fn, num_train_steps=..., batch_size=..., learning_rate=...,
                      num_warmup_steps=..., checkpoint_dir=..., kind="classifier", evaluate=evaluate_fn,
                      best_metric="accuracy", best_dir=..., spm_model_file=...)

- `arrays`: dict of equal-length numpy arrays: the three encoder inputs (the
  model gets only those) plus labels; shuffled with `seed`, repeated as needed.
  A resumed run skips the batches already seen.
- `loss_fn(batch, outputs)` -> scalar float32 loss.
- Optimizer: the original fine-tuning AdamW (`create_optimizer(optimizer="adamw")`:
  no bias correction, weight decay 0.01 with LayerNorm/bias excluded, global
  norm clipped to 1.0), linear warmup then linear decay.
- Every step passes the divergence check (`albert_tf.training.divergence`: a
  NaN or infinite loss, or one grown past 10x its level); a failing step stops
  the run with `TrainingDivergedError` naming the last good checkpoint, and no
  checkpoint is saved (or evaluated, or kept as the best) unless its weights
  are finite too.
- Checkpoints (model, optimizer, step) every `save_checkpoints_steps` and at the
  end in `checkpoint_dir` (with albert_tf.json and the SentencePiece model, so
  `load_model` reads it as a model directory); rerunning resumes from the latest.
- `evaluate(model) -> {metric: value}` runs at every checkpoint (history in
  checkpoint_dir/evaluations.json); the checkpoint with the highest
  `best_metric` is copied to `best_dir` as an albert_tf model directory (with
  the SentencePiece model when given) and its results are returned.
- Variables without a gradient path to the loss (the pooler under a span head)
  are left out of the update.
- With `summary_dir`, TensorBoard summaries: loss and learning rate per step in
  SUMMARY_DIR/train, the evaluation metrics per checkpoint in SUMMARY_DIR/eval
  (`tensorboard --logdir OUTPUT_DIR`).
"""

import json
import os

import tensorflow as tf

from albert_tf.models.model_dir import SPM_MODEL_FILE, write_metadata, write_model_dir
from albert_tf.networks.albert_encoder import ENCODER_INPUTS
from albert_tf.progress import Progress
from albert_tf.text.albert_tokenizer import copy_spm_model
from albert_tf.training import TrainingDivergedError
from albert_tf.training.divergence import DivergenceGuard

EVALUATIONS_FILE = "evaluations.json"
SUMMARY_SUBDIRS = ("train", "eval")  # in summary_dir: the per-step and the per-evaluation TensorBoard summaries


def finetune(model, arrays, loss_fn, num_train_steps, batch_size, learning_rate, num_warmup_steps, checkpoint_dir,
             kind, metadata=None, save_checkpoints_steps=1000, keep_checkpoint_max=3, seed=12345, evaluate=None,
             best_metric=None, best_dir=None, spm_model_file=None, variables=None, summary_dir=None, log=print):
    """Trains `model` in place; returns {"loss": last loss, "evaluations": [...], "best": {...} or None}."""
    from albert_tf.optimization import create_optimizer

    if evaluate is not None and not best_metric:
        raise ValueError("finetune: `evaluate` needs the `best_metric` that picks the best checkpoint")
    metadata = metadata or {}
    optimizer = create_optimizer(learning_rate=learning_rate, num_train_steps=num_train_steps,
                                 num_warmup_steps=num_warmup_steps, optimizer="adamw", weight_decay_rate=0.01,
                                 clipnorm=1.0)
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step)
    manager = tf.train.CheckpointManager(checkpoint, checkpoint_dir, max_to_keep=keep_checkpoint_max,
                                         step_counter=step, checkpoint_name="ckpt")
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
        log(f"Resuming from {manager.latest_checkpoint}", flush=True)
    write_metadata(checkpoint_dir, kind, model.albert_config, **metadata)
    spm_copy = os.path.join(checkpoint_dir, SPM_MODEL_FILE)
    # So that checkpoint_dir alone is a complete model directory.
    if spm_model_file and not (os.path.exists(spm_copy) and os.path.samefile(spm_model_file, spm_copy)):
        copy_spm_model(spm_model_file, spm_copy)
    train_writer, eval_writer = (
        (tf.summary.create_file_writer(os.path.join(summary_dir, name)) for name in SUMMARY_SUBDIRS) if summary_dir
        else (tf.summary.create_noop_writer(), tf.summary.create_noop_writer()))
    history_file = os.path.join(checkpoint_dir, EVALUATIONS_FILE)
    evaluations = []
    if os.path.exists(history_file):
        with open(history_file) as f:
            evaluations = json.load(f)

    def evaluate_checkpoint(done):
        results = {"step": done, **evaluate(model)}
        log("eval at step {}: {}".format(done, "  ".join(
            f"{k} {v:.4f}" for k, v in results.items() if k != "step" and isinstance(v, float))), flush=True)
        evaluations.append(results)
        with eval_writer.as_default(step=done):
            for name, value in results.items():
                if name != "step" and isinstance(value, (int, float)):
                    tf.summary.scalar(name, value)
        eval_writer.flush()
        with open(history_file + ".tmp", "w") as f:
            json.dump(evaluations, f, indent=2)
        os.replace(history_file + ".tmp", history_file)
        if best_dir and max(evaluations, key=lambda r: r[best_metric]) is results:
            files = {SPM_MODEL_FILE: spm_model_file} if spm_model_file else None
            write_model_dir(model, best_dir, kind, overwrite=True, files=files, **metadata, best_step=done,
                            best_results=results)

    done = int(step.numpy())
    # A run stopped between saving a checkpoint and evaluating it evaluates it now.
    if evaluate is not None and done and done not in {r["step"] for r in evaluations}:
        evaluate_checkpoint(done)

    if variables is None:
        variables = model.trainable_variables
    count = len(next(iter(arrays.values())))
    dataset = (tf.data.Dataset.from_tensor_slices(arrays).shuffle(count, seed=seed).repeat()
               .batch(batch_size).prefetch(tf.data.AUTOTUNE))

    # albert_tf's task models compute for training only what the loss reads (the same values).
    forward = getattr(model, "head_outputs", None) or (lambda inputs, training: model(inputs, training=training))

    @tf.function
    def train_step(batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(batch, forward({name: batch[name] for name in ENCODER_INPUTS}, training=True))
        gradients = tape.gradient(loss, variables)
        pairs = [(tf.convert_to_tensor(g), v) for g, v in zip(gradients, variables) if g is not None]
        optimizer.apply([g for g, _ in pairs], [v for _, v in pairs])
        step.assign_add(1)
        return loss

    first, loss = done, float("nan")
    guard = DivergenceGuard(variables)

    def diverged(problem):
        return TrainingDivergedError(f"{problem} at step {done}; stopped without saving",
                                     last_good=manager.latest_checkpoint)

    progress = Progress(num_train_steps, lambda steps, elapsed: (
        f"step {steps}/{num_train_steps}  loss {loss:.4f}  "
        f"{(steps - first) * batch_size / max(elapsed, 1e-9):.1f} examples/s"))
    for batch in dataset.skip(done).take(max(num_train_steps - done, 0)):
        loss = float(train_step(batch))
        done = int(step.numpy())
        problem = guard.loss_problem(loss)
        if problem:
            raise diverged(problem)
        with train_writer.as_default(step=done):
            tf.summary.scalar("loss", loss)
            tf.summary.scalar("learning_rate", float(optimizer.learning_rate))
        if done < num_train_steps:
            progress.update(done)
        if done % save_checkpoints_steps == 0 or done == num_train_steps:
            problem = guard.weights_problem()
            if problem:
                raise diverged(problem)
            manager.save(checkpoint_number=done)
            if evaluate is not None:
                evaluate_checkpoint(done)
    train_writer.flush()
    if done > first:
        progress.finish(done)
    best = max(evaluations, key=lambda r: r[best_metric]) if evaluations and best_metric else None
    return {"loss": loss, "evaluations": evaluations, "best": best}


def model_for_evaluation(best_dir, trained_model, init_checkpoint, kind, task_name=None):
    """The model a task CLI evaluates and predicts with: the best checkpoint (`best_dir`) when there is
    one, else the model just trained, else the fine-tuned `kind` model given as `init_checkpoint`
    (ValueError naming what it holds when it is not one, or not for `task_name`)."""
    from albert_tf.models.inference_model import open_for_inference
    from albert_tf.models.model_dir import exported_encoder_dir

    if best_dir and os.path.isdir(best_dir):
        return open_for_inference(best_dir, tokenizer=False).model
    if trained_model is not None:
        return trained_model
    if not init_checkpoint:
        raise ValueError(f"nothing to evaluate: pass --do_train or a fine-tuned {kind} as --init_checkpoint")
    if exported_encoder_dir(init_checkpoint):
        raise ValueError(f"{init_checkpoint}: holds an exported encoder; evaluating needs a {kind} "
                         "(fine-tune one with --do_train)")
    opened = open_for_inference(init_checkpoint, tokenizer=False)
    loaded = opened.metadata
    if loaded["model"] != kind or (task_name and loaded.get("task_name", task_name) != task_name):
        held = " ".join(filter(None, (loaded.get("task_name"), repr(loaded["model"]))))
        wanted = " ".join(filter(None, (task_name, kind)))
        raise ValueError(f"{init_checkpoint}: holds a {held} model; evaluating needs a {wanted} "
                         "(fine-tune one with --do_train)")
    return opened.model


def report_best(result, best_metric, best_dir, log=print):
    """Prints which checkpoint `finetune` kept as the best, if any."""
    if result["best"]:
        log(f"Best checkpoint: step {result['best']['step']} ({best_metric} {result['best'][best_metric]:.4f}), "
            f"kept in {best_dir}", flush=True)


def starting_encoder(init_checkpoint=None, albert_config=None, seed=12345):
    """The encoder fine-tuning starts from: a checkpoint's (any albert_tf kind, or an export's encoder),
    or a freshly initialized one of `albert_config` (a preset name or config JSON)."""
    import keras

    from albert_tf.models.model_dir import load_encoder

    keras.utils.set_random_seed(seed)
    if init_checkpoint:
        return load_encoder(init_checkpoint)
    if not albert_config:
        raise ValueError("--init_checkpoint (or, for a random start, --albert_config) required")
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.networks.albert_encoder import AlbertEncoder

    return AlbertEncoder(AlbertConfig.from_name_or_path(albert_config))
