"""One pretraining run: resume checks, the compiled loop with progress and checkpoints, preemption, evaluation.

`albert_tf.run_pretraining` maps its flags to a `PretrainingConfig` (its
fields carry the flag names) and calls `run`, which checks it, resolves the
model config and data files, creates the distribution strategy and takes the
output directory's lock, then calls `train_and_evaluate` with it as `settings`.
This module holds the run itself: the model, the optimizer and the training
input built (again for each checkpoint tried on resume), the shared loop
(albert_tf.training.training_loop) with pretraining's hooks, and the weights'
fingerprint at the end. What a run adds around it lives in a module each:

  - pretraining_record: run_config.json (what a resumed run must share with
    the run that wrote the checkpoints), albert_tf.json and spm.model;
  - heldout_evaluation: the held-out evaluation every `eval_every_steps`, its
    learning phase and eval_history.jsonl, and the final `do_eval`;
  - train_budget: `train_budget_hours` turned into a step count and schedule.

Resuming: the newest intact `ckpt-N` restores model, optimizer, step and input
position, after the record has checked the settings. SIGTERM or Ctrl-C (SIGINT)
stops after the current step, saves and exits with status 143 or 130
(`training_loop.PreemptionFlag`).
"""

import hashlib
import json
import os
import shutil
import tempfile
import typing

import keras
import tensorflow as tf

from albert_tf.models import model_dir_format
from albert_tf.models.model_dir_format import read_metadata, resolve_checkpoint
from albert_tf.models.model_io import build_model, copy_weights, restore_weights
from albert_tf.data import pretraining_dataset as data
from albert_tf.data.dynamic_instances import EpochInstanceMaker, make_dynamic_dataset
from albert_tf.data.pretraining_data_job import DOCUMENTS_FORMAT, CreationConfig
from albert_tf.data.pretraining_dataset import read_error
from albert_tf.settings import SettingError
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.optimization import create_optimizer
from albert_tf.training import TrainingDivergedError
from albert_tf.training.distribution_config import PRECISIONS
from albert_tf.networks.memory_estimate import check_training_fits
from albert_tf.training.divergence import rerun_advice
from albert_tf.training.heldout_evaluation import (HeldoutEvaluation, check_heldout_size, evaluate_once,
                                                  format_metrics)
from albert_tf.training.pretraining_config import PAPER_TRAIN_STEPS, PAPER_WARMUP_STEPS
from albert_tf.training.pretraining_record import (RUN_CONFIG_FILE, check_or_write_run_config, check_vocabulary_file,
                                                   write_model_metadata)
from albert_tf.training.random_state import restore_training_checkpoint, training_checkpoint
from albert_tf.tasks.pretraining_losses import PretrainingObjective
from albert_tf.training.strategies import worker_layout
from albert_tf.training.summary_files import drop_summaries_after
from albert_tf.training.train_budget import BudgetKeeper, recorded_budget_plan
from albert_tf.training.trainer import Trainer
from albert_tf.training.training_loop import LoopHooks, PreemptionFlag, run_training_loop, stops_every_step


class TrainingData(typing.NamedTuple):
    """The training files and the data set they belong to, read once: its format (static instances or
    tokenized documents) and metadata (None for files without, such as the original script's)."""
    files: list
    format: str
    metadata: dict | None

    @classmethod
    def read(cls, files):
        return cls(files, *data.data_set_format(files))

    @property
    def is_documents(self):
        return self.format == DOCUMENTS_FORMAT


def _restore_init_checkpoint(settings, model, path):
    directory, prefix = resolve_checkpoint(path)
    kind = read_metadata(directory)["model"]
    if kind == "pretrainer":
        restore_weights(model, prefix)
    else:  # an encoder, or a task model around one: take the encoder, keep fresh heads
        source = build_model(read_metadata(directory))
        restore_weights(source, prefix)
        source_encoder = getattr(source, "encoder", source)
        copy_weights(model.encoder.weights, source_encoder.weights,
                     f"{path} (its encoder, for albert_config={settings.albert_config})")
        print(f"Initialized the encoder from {path} ({kind}); the pretraining heads start fresh.", flush=True)


def _weights_fingerprint(model):
    digest = hashlib.sha256()
    for weight in model.weights:
        digest.update(weight.numpy().tobytes())
    return digest.hexdigest()[:16]


def run(settings):
    """Runs the pretraining a `PretrainingConfig` describes; returns the tool's exit status.

    Checks the settings, resolves the model config and the data's lengths (settings travel
    with the data: its lengths, unless the config says them, and then they are checked),
    creates the strategy, takes the output directory's lock and trains."""
    import contextlib
    import dataclasses

    from albert_tf.file_utils import (PRETRAINING_TOOL, exclusive_directory_lock, refuse_another_tools_directory,
                                      run_kind)
    from albert_tf.training.distribution_flags import create_strategy_for
    from albert_tf.training.strategies import is_chief

    settings = _with_warmup_steps(settings.check())
    # Before anything is read or written: an export, a data set, another tool's run are no place for checkpoints.
    refuse_another_tools_directory(settings.output_dir, PRETRAINING_TOOL, (run_kind(PRETRAINING_TOOL),))
    train_files = data.expand_data_files(settings.input_file)
    training_data = TrainingData.read(train_files)
    config = _model_config(settings, training_data.metadata)
    if settings.max_seq_length is None or settings.max_predictions_per_seq is None:
        seq_length, predictions = data.infer_shapes(train_files)
        settings = dataclasses.replace(settings, max_seq_length=settings.max_seq_length or seq_length,
                                       max_predictions_per_seq=settings.max_predictions_per_seq or predictions)
    data.check_pretraining_files(train_files, settings.max_seq_length, settings.max_predictions_per_seq,
                                 config.vocab_size, vocabulary=settings.vocabulary())
    if training_data.is_documents and not settings.vocabulary_file():
        raise SettingError(f"{settings.input_file} holds tokenized documents, made into instances while training: "
                           "pass <spm_model_file> (or <vocab_file>), the vocabulary the data was made with (its word "
                           "boundaries and pieces drive the masking)")
    eval_files = []
    if settings.do_eval or settings.eval_every_steps:
        eval_files = data.expand_data_files(settings.eval_input_file)
        if data.data_set_format(eval_files)[0] == DOCUMENTS_FORMAT:
            raise SettingError(f"<eval_input_file>={settings.eval_input_file} holds tokenized documents; evaluation "
                               "reads fixed instances, such as the PREFIX-heldout set of create_pretraining_data "
                               "--heldout_every")
        data.check_pretraining_files(eval_files, settings.max_seq_length, settings.max_predictions_per_seq,
                                     config.vocab_size)
    if settings.max_seq_length > config.max_position_embeddings:
        raise SettingError(f"<max_seq_length>={settings.max_seq_length} exceeds the config's max_position_embeddings "
                           f"({config.max_position_embeddings})")

    strategy = create_strategy_for(settings)
    if eval_files:
        # Counting reads the records with tf.data, which starts TensorFlow's runtime: only after the strategy,
        # since a multi-worker strategy must configure the runtime's collectives first.
        check_heldout_size(settings, eval_files)
    chief = is_chief(strategy)
    output_dir = settings.output_dir
    tf.io.gfile.makedirs(output_dir)
    # One run per output directory: a second one would overwrite the first one's checkpoints.
    with exclusive_directory_lock(output_dir, "run_pretraining") if chief else contextlib.nullcontext():
        return train_and_evaluate(settings, config, strategy, chief, output_dir, training_data, eval_files)


def _with_warmup_steps(settings):
    """`settings` with num_warmup_steps: as given, else as the run being resumed recorded it (its schedule must
    not change under it), else the paper's share of num_train_steps, said in one line."""
    import dataclasses

    if settings.num_warmup_steps is not None:
        return settings
    path = os.path.join(settings.output_dir, RUN_CONFIG_FILE)
    if model_dir_format.checkpoints_newest_first(settings.output_dir) and tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            recorded = json.load(f).get("config", {}).get("num_warmup_steps")
        if recorded is not None:
            return dataclasses.replace(settings, num_warmup_steps=recorded)
    settings = dataclasses.replace(settings, num_warmup_steps=settings.warmup_steps())
    print(f"Warmup: {settings.num_warmup_steps:,} of the {settings.num_train_steps:,} steps, the paper's share "
          f"({PAPER_WARMUP_STEPS:,} of {PAPER_TRAIN_STEPS:,}); num_warmup_steps sets another.", flush=True)
    return settings


def _model_config(settings, data_metadata=None):
    """albert_config with vocab_size; a preset's vocabulary size replaced by spm_model_file's, else by the one the
    training data's metadata (`data_metadata`) records, said in one line. Only an explicit vocab_size (or a
    config file's) can contradict the data, and the data check refuses that."""
    from albert_tf.albert_config import AlbertConfig, preset_names

    config = AlbertConfig.from_name_or_path(settings.albert_config)
    vocab_size = settings.vocab_size
    if vocab_size is None and settings.albert_config in preset_names():
        if settings.vocabulary_file():
            vocab_size = settings.vocabulary().tokenizer().vocab_size
            source = f"the size of {'vocab_file' if settings.vocab_file else 'spm_model_file'}"
        elif data_metadata:
            vocab_size, source = data_metadata["vocab_size"], f"the vocabulary size {settings.input_file} records"
        if vocab_size is not None and vocab_size != config.vocab_size:
            print(f"albert_config={settings.albert_config} with vocab_size {vocab_size}, {source} (the preset has "
                  f"{config.vocab_size}).", flush=True)
    if vocab_size is None or vocab_size == config.vocab_size:
        return config
    return AlbertConfig.from_dict({**config.to_dict(), "vocab_size": vocab_size},
                                  source=f"albert_config={settings.albert_config} with vocab_size={vocab_size}")


def train_and_evaluate(settings, config, strategy, chief, output_dir, training_data, eval_files):
    # Every worker saves (saving is collective under MultiWorkerMirroredStrategy); only the chief keeps its copy.
    checkpoint_dir = output_dir if chief else tempfile.mkdtemp(prefix="albert_tf_worker_ckpt_")

    keras.mixed_precision.set_global_policy(PRECISIONS[settings.mixed_precision])

    budget_plan = recorded_budget_plan(output_dir) if settings.train_budget_hours else None

    def build_training_state():
        keras.utils.set_random_seed(settings.seed)
        check_training_fits(config, strategy, settings.train_batch_size, settings.max_seq_length,
                            settings.max_predictions_per_seq)
        with strategy.scope():
            model = AlbertPretrainer(config, seq_length=settings.max_seq_length,
                                     max_predictions_per_seq=settings.max_predictions_per_seq)
            schedule_steps = settings.num_train_steps
            if settings.train_budget_hours:
                # A variable the compiled step reads, so the measured plan can set it without a retrace.
                planned = budget_plan.num_train_steps if budget_plan else settings.num_train_steps
                schedule_steps = tf.Variable(planned, dtype=tf.int64, trainable=False, name="schedule_steps")
            optimizer = create_optimizer(
                settings.learning_rate, schedule_steps, settings.num_warmup_steps, optimizer=settings.optimizer,
                weight_decay_rate=settings.weight_decay_rate, clipnorm=settings.clip_norm, gradients_are_aggregated=True)
            if settings.mixed_precision == "fp16":
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            objective = PretrainingObjective(settings.sentence_loss_weight,
                                             mask_id=data.data_special_ids(training_data.files).mask)
            trainer = Trainer(strategy, model, optimizer, objective,
                              settings.train_batch_size, settings.gradient_accumulation_steps,
                              jit_compile=settings.jit_compile)
        iterator = iter(_worker_dataset(settings, strategy, training_data))
        checkpoint = training_checkpoint(model, optimizer=optimizer, step=trainer.step, iterator=iterator)
        return model, trainer, iterator, checkpoint, schedule_steps

    model, trainer, iterator, checkpoint, schedule_steps = build_training_state()
    candidates = model_dir_format.checkpoints_newest_first(output_dir)
    check_or_write_run_config(settings, output_dir, resuming=bool(candidates), chief=chief, config=config,
                              training_data=training_data)
    check_vocabulary_file(settings, output_dir, resuming=bool(candidates))
    if candidates:
        def restore(prefix):
            # A damaged checkpoint may fail halfway through its restore: each attempt gets fresh objects,
            # so nothing of it survives into the run.
            nonlocal model, trainer, iterator, checkpoint, schedule_steps
            if prefix != candidates[0]:
                model, trainer, iterator, checkpoint, schedule_steps = build_training_state()
            restore_training_checkpoint(prefix, model, optimizer=trainer.optimizer, step=trainer.step,
                                        iterator=iterator)

        resume_from = model_dir_format.restore_newest_intact(restore, candidates)
        print(f"Resuming from {resume_from} at step {int(trainer.step.numpy())}.", flush=True)
    elif settings.init_checkpoint:
        _restore_init_checkpoint(settings, model, settings.init_checkpoint)
    manager = tf.train.CheckpointManager(checkpoint, checkpoint_dir, max_to_keep=settings.keep_checkpoint_max,
                                         step_counter=trainer.step, checkpoint_name="ckpt")
    if chief:
        write_model_metadata(settings, output_dir, config, training_data)
        for summaries in ("train", "eval"):  # what a stopped run logged past its checkpoint is done again
            drop_summaries_after(os.path.join(output_dir, summaries), int(trainer.step.numpy()))

    writer = (tf.summary.create_file_writer(os.path.join(output_dir, "train")) if chief
              else tf.summary.create_noop_writer())
    status = 0
    try:
        if settings.do_train:
            heldout = (HeldoutEvaluation(settings, trainer, strategy, eval_files, output_dir, chief)
                       if settings.eval_every_steps else None)
            budget = (BudgetKeeper(settings, schedule_steps, output_dir, chief, budget_plan, strategy)
                      if settings.train_budget_hours else None)
            with PreemptionFlag(trainer.stop_requested if stops_every_step(strategy) else None) as preemption:
                status = _train(settings, trainer, iterator, manager, writer, preemption, training_data.files,
                                heldout, budget)
        if status == 0 and settings.do_eval:
            evaluate_once(settings, trainer, strategy, eval_files, output_dir, chief)
    finally:
        if not chief:
            shutil.rmtree(checkpoint_dir, ignore_errors=True)
    print(f"Weights fingerprint: {_weights_fingerprint(model)} (step {int(trainer.step.numpy())})", flush=True)
    return status


def _worker_dataset(settings, strategy, training_data):
    """This worker's share of the training input, in batches of train_batch_size / workers."""
    workers, worker_index = worker_layout(strategy)
    context = tf.distribute.InputContext(num_input_pipelines=workers, input_pipeline_id=worker_index,
                                        num_replicas_in_sync=strategy.num_replicas_in_sync)
    train_files, metadata = training_data.files, training_data.metadata
    if training_data.is_documents:
        print(f"Instances are made afresh every epoch from {len(train_files)} document file(s), in "
              + (f"{settings.input_processes} builder processes." if settings.input_processes
                 else f"{settings.input_workers} input threads."), flush=True)
        tokenizer = settings.vocabulary().tokenizer(metadata["config"]["lower_case"],
                                                    metadata["config"].get("keep_accents", False),
                                                    metadata["config"].get("rewrite_quotes", False))
        maker = EpochInstanceMaker(CreationConfig.from_json(metadata["config"]), tokenizer.word_start_table,
                                   tokenizer.random_replacement_ids, settings.seed,
                                   processes=settings.input_processes, special_ids=tokenizer.special_ids)
        return make_dynamic_dataset(train_files, settings.train_batch_size // workers, maker, settings.seed,
                                    input_context=context if workers > 1 else None,
                                    shuffle_buffer=settings.shuffle_buffer_size, num_workers=settings.input_workers,
                                    mixed_documents=settings.input_mixed_documents)
    if settings.input_processes:
        print("Warning: input_processes applies to documents data sets; static instances are read as written.",
              flush=True)
    return data.make_pretraining_dataset(train_files, settings.train_batch_size // workers, settings.max_seq_length,
                                         settings.max_predictions_per_seq, seed=settings.seed, is_training=True,
                                         input_context=context if workers > 1 else None,
                                         shuffle_buffer=settings.shuffle_buffer_size)


def _diverged(problem, steps, last, precision):
    # fp16's narrow range is a cause of its own, which bf16 removes; other precisions have only the rate to change.
    advice = ", or use --mixed_precision=bf16 instead of fp16." if precision == "fp16" else "."
    return TrainingDivergedError(f"{problem} in {steps}; stopped without saving. {rerun_advice(last)}{advice}",
                                 last_good=last)


class _PretrainingHooks(LoopHooks):
    """Held-out evaluation every --eval_every_steps and the time budget, in the shared loop."""

    def __init__(self, settings, heldout, budget):
        self.settings = settings
        self.heldout = heldout
        self.budget = budget

    def boundaries(self):
        return [self.heldout.every] if self.heldout else []

    def start(self, step):
        if self.heldout:
            self.heldout.start(step)
            print(f"Held-out evaluation every {self.heldout.every} steps on {self.settings.eval_input_file}; its "
                  f"frequent-piece level (MLM accuracy at [MASK] from piece frequencies alone): "
                  f"{self.heldout.level:.4f}.", flush=True)

    def after_loop(self, step, num_steps, seconds, elapsed, totals):
        if self.heldout:
            self.heldout.add_training(totals)
        if self.budget and self.budget.after_loop(step, num_steps, seconds, elapsed, self.heldout):
            return self.budget.plan.num_train_steps
        return None

    def progress_suffix(self):
        return f"  phase: {self.heldout.phase.name}" if self.heldout and self.heldout.phase else ""

    def after_progress(self, step, total_steps, elapsed):
        if self.heldout and self.heldout.due(step, total_steps):
            self.heldout.run(step, elapsed)


def _train(settings, trainer, iterator, manager, writer, preemption, train_files, heldout=None, budget=None):
    total_steps = budget.total_steps(settings.num_train_steps) if budget else settings.num_train_steps
    step = int(trainer.step.numpy())
    if step < total_steps:
        print(f"Training from step {step} to {total_steps}: {trainer.strategy.num_replicas_in_sync} replica(s), "
              f"batch {settings.train_batch_size}, seq {settings.max_seq_length}."
              + (" (The step count is provisional until the step time is measured.)" if budget and not budget.plan
                 else ""), flush=True)
    return run_training_loop(
        trainer, iterator, manager, writer, preemption, total_steps,
        save_checkpoints_steps=settings.save_checkpoints_steps, iterations_per_loop=settings.iterations_per_loop,
        max_seconds_per_loop=getattr(settings, "max_seconds_per_loop", 0), format_metrics=format_metrics,
        diverged=lambda problem, steps, last: _diverged(problem, steps, last, settings.mixed_precision),
        read_error=lambda error: read_error(train_files, error, "the training data"),
        hooks=_PretrainingHooks(settings, heldout, budget))
