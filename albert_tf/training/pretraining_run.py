"""One pretraining run: resume checks, the compiled loop with progress and checkpoints, preemption, evaluation.

`albert_tf.run_pretraining` maps its flags to a `PretrainingConfig` (its
fields carry the flag names) and calls `run`, which checks it, resolves the
model config and data files, creates the distribution strategy and takes the
output directory's lock, then calls `train_and_evaluate` with it as `settings`.

Held-out evaluation while training (`eval_every_steps`): every N steps the
held-out records are evaluated (at most `max_eval_steps` batches), printed
beside the progress line with the learning phase they show
(albert_tf.training.learning_phase), written to TensorBoard's eval/ and
appended to OUTPUT_DIR/eval_history.jsonl.

Resuming: the newest intact `ckpt-N` restores model, optimizer, step and input
position; run_config.json holds what a resumed run must share with the run that
wrote the checkpoints (the resolved model config, batch, lengths, optimizer,
seed, loss weights, the input files by path). SIGTERM stops after the current
step, saves and exits with status 143 (`training_loop.PREEMPTED_EXIT_CODE`).
"""

import hashlib
import json
import os
import shutil
import tempfile
import time
import typing

import keras
import tensorflow as tf

from albert_tf.models import model_dir
from albert_tf.models.model_dir import build_model, copy_weights, read_metadata, resolve_checkpoint, restore_weights
from albert_tf.models.preprocessing_contract import recorded_rewrite_quotes
from albert_tf.data import pretraining_dataset as data
from albert_tf.data.dynamic_instances import EpochInstanceMaker, make_dynamic_dataset
from albert_tf.data.pretraining_data_job import DOCUMENTS_FORMAT, CreationConfig
from albert_tf.data.pretraining_dataset import read_error
from albert_tf.file_utils import file_sha256, write_json
from albert_tf.settings import SettingError
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.optimization import create_optimizer
from albert_tf.text.albert_tokenizer import AlbertTokenizer, copy_spm_model
from albert_tf.training import TrainingDivergedError
from albert_tf.training.distribution_config import PRECISIONS
from albert_tf.networks.memory_estimate import check_training_fits
from albert_tf.training.divergence import rerun_advice
from albert_tf.training.pretraining_config import PAPER_TRAIN_STEPS, PAPER_WARMUP_STEPS
from albert_tf.training.random_state import restore_training_checkpoint, training_checkpoint
from albert_tf.training.run_directory import PRETRAINING_TOOL, refuse_another_tools_directory
from albert_tf.tasks.pretraining_losses import SUM_KEYS, PretrainingObjective, metrics_from_sums
from albert_tf.training.learning_phase import TREND_EVALUATIONS, Phase, learning_phase
from albert_tf.training.strategies import worker_layout
from albert_tf.training.train_budget import BudgetPlan, StepTimer, plan_budget
from albert_tf.training.trainer import Trainer
from albert_tf.training.training_loop import LoopHooks, PreemptionFlag, run_training_loop, stops_every_step

RUN_CONFIG_FILE = "run_config.json"
EVAL_HISTORY_FILE = "eval_history.jsonl"
# Flags a resumed run must share with the run that wrote the checkpoints.
_RESUME_INVARIANTS = ("albert_config", "train_batch_size", "max_seq_length", "max_predictions_per_seq", "optimizer",
                      "gradient_accumulation_steps", "seed", "sentence_loss_weight", "train_budget_hours",
                      "input_mixed_documents")
# What a run_config.json written before an invariant existed implies for it (a documents run before
# input_mixed_documents read one document's instances after another; static data has no such setting).
_INVARIANT_DEFAULTS = {"sentence_loss_weight": 1.0, "train_budget_hours": 0.0, "input_mixed_documents": 1}


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


def _run_config(settings, config, training_data):
    run_config = {"tool": PRETRAINING_TOOL, **{name: getattr(settings, name) for name in _RESUME_INVARIANTS}}
    if not training_data.is_documents:
        run_config["input_mixed_documents"] = None  # the order of static instances does not depend on it
    # The resolved model config, not the flag's string: a JSON edited in place between runs
    # (4 -> 12 layers keeps every variable's shape) must not relabel the old checkpoints.
    run_config["albert_config"] = config.to_dict()
    # The checkpointed input position is a position in these files; it means nothing in others.
    run_config["input_files"] = list(training_data.files)
    # And the whole config the run started with, as resolved (the lengths from the data).
    run_config["config"] = settings.to_json()
    return run_config


def _recorded(previous, key, current):
    """A resume invariant as the earlier run_config.json records it, or as its absence implies."""
    if key in previous:
        return previous[key]
    if key == "input_mixed_documents" and current[key] is None:
        return None  # static data, recorded before the setting existed
    return _INVARIANT_DEFAULTS.get(key)


def _check_or_write_run_config(settings, output_dir, resuming, chief, config, training_data):
    path = os.path.join(output_dir, RUN_CONFIG_FILE)
    current = _run_config(settings, config, training_data)
    if resuming and tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            previous = json.load(f)
        changed = []
        for key in _RESUME_INVARIANTS:
            if key == "albert_config":
                if isinstance(previous.get(key), dict) and previous[key] != current[key]:
                    fields = sorted(k for k in set(previous[key]) | set(current[key])
                                    if previous[key].get(k) != current[key].get(k))
                    changed.append(f"<albert_config>={settings.albert_config} resolves to another model ("
                                   + ", ".join(f"{k}={current[key].get(k)}, was {previous[key].get(k)}"
                                               for k in fields) + ")")
                elif isinstance(previous.get(key), str) and previous[key] != settings.albert_config:
                    changed.append(f"<albert_config>={settings.albert_config} (the checkpoints were made with "
                                   f"{previous[key]})")
            elif _recorded(previous, key, current) != current[key]:
                changed.append(f"<{key}>={current[key]} (the checkpoints were made with "
                               f"{_recorded(previous, key, current)})")
        if changed:
            raise SettingError(f"{output_dir} holds checkpoints of another run: " + "; ".join(changed) +
                               ". Use another <output_dir>, or the original settings to resume.")
        # By path, not by name: the checkpointed input iterator holds these paths and reads from them.
        if "input_files" in previous and previous["input_files"] != current["input_files"]:
            raise SettingError(
                f"{output_dir}: the training files changed since its checkpoints were written "
                f"({len(previous['input_files'])} file(s) then, e.g. {previous['input_files'][0]}; "
                f"{len(current['input_files'])} now), and the saved input position is a position in those files. "
                "Resume with the same <input_file> at the same path, or continue training on the new data in a "
                f"new <output_dir> with <init_checkpoint>={output_dir}")
        _say_schedule_changes(previous.get("config") or {}, settings)
    elif chief:
        write_json(path, current)


# Settings a resumed run may change (the schedule and the arithmetic go on from the checkpoint's step),
# said in one line each so that a changed flag is never taken silently.
_NOTED_ON_RESUME = ("learning_rate", "num_train_steps", "num_warmup_steps", "mixed_precision")


def _say_schedule_changes(previous_config, settings):
    for name in _NOTED_ON_RESUME:
        if name in previous_config and previous_config[name] != getattr(settings, name):
            print(f"Note: resuming with {name}={getattr(settings, name)}; the checkpoints were made with "
                  f"{previous_config[name]}: from the resumed step on the run follows the new value.", flush=True)


def _check_spm_model_file(settings, output_dir, resuming):
    """On resume, spm_model_file must be the model the run started with (it is copied into output_dir)."""
    stored = os.path.join(output_dir, model_dir.SPM_MODEL_FILE)
    if not (resuming and settings.spm_model_file and tf.io.gfile.exists(stored)):
        return
    if file_sha256(stored) != file_sha256(settings.spm_model_file):
        raise SettingError(f"<spm_model_file>={settings.spm_model_file} is not the SentencePiece model this run "
                           f"started with ({stored}); pass that one, or train into a new <output_dir>")


def _write_model_metadata(settings, output_dir, config, training_data):
    # The preprocessing contract (albert_tf.models.preprocessing_contract): the length, and the casing and
    # quote rule the data was made with (data without metadata, such as the original script's, records none).
    data_config = training_data.metadata["config"] if training_data.metadata else None
    casing = ({"lower_case": data_config["lower_case"], "keep_accents": data_config.get("keep_accents", False),
               "rewrite_quotes": recorded_rewrite_quotes(data_config, f"the data {settings.input_file}")}
              if data_config else {})
    model_dir.write_metadata(output_dir, "pretrainer", config, max_seq_length=settings.max_seq_length,
                             max_predictions_per_seq=settings.max_predictions_per_seq, **casing)
    if not settings.spm_model_file:
        return
    stored = os.path.join(output_dir, model_dir.SPM_MODEL_FILE)
    if "://" in settings.spm_model_file or "://" in output_dir:
        tf.io.gfile.copy(settings.spm_model_file, stored, overwrite=True)
    else:
        copy_spm_model(settings.spm_model_file, stored)


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


def _format_metrics(metrics):
    return (f"loss {metrics['masked_lm_loss'] + metrics['sentence_order_loss']:.4f}  "
            f"mlm_loss {metrics['masked_lm_loss']:.4f}  mlm_acc {metrics['masked_lm_accuracy']:.4f} "
            f"(at [MASK] {metrics['masked_lm_accuracy_at_mask']:.4f})  "
            f"sop_loss {metrics['sentence_order_loss']:.4f}  sop_acc {metrics['sentence_order_accuracy']:.4f}")


def run(settings):
    """Runs the pretraining a `PretrainingConfig` describes; returns the tool's exit status.

    Checks the settings, resolves the model config and the data's lengths (settings travel
    with the data: its lengths, unless the config says them, and then they are checked),
    creates the strategy, takes the output directory's lock and trains."""
    import contextlib
    import dataclasses

    from albert_tf.file_utils import exclusive_directory_lock
    from albert_tf.training.distribution_flags import create_strategy_for
    from albert_tf.training.strategies import is_chief

    settings = _with_warmup_steps(settings.check())
    _refuse_another_tools_directory(settings.output_dir)
    config = _model_config(settings)
    train_files = data.expand_data_files(settings.input_file)
    if settings.max_seq_length is None or settings.max_predictions_per_seq is None:
        seq_length, predictions = data.infer_shapes(train_files)
        settings = dataclasses.replace(settings, max_seq_length=settings.max_seq_length or seq_length,
                                       max_predictions_per_seq=settings.max_predictions_per_seq or predictions)
    data.check_pretraining_files(train_files, settings.max_seq_length, settings.max_predictions_per_seq,
                                 config.vocab_size, spm_model_file=settings.spm_model_file)
    training_data = TrainingData.read(train_files)
    if training_data.is_documents and not settings.spm_model_file:
        raise SettingError(f"{settings.input_file} holds tokenized documents, made into instances while training: "
                           "pass <spm_model_file>, the SentencePiece model the data was made with (its word "
                           "boundaries and vocabulary drive the masking)")
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
    chief = is_chief(strategy)
    output_dir = settings.output_dir
    tf.io.gfile.makedirs(output_dir)
    # One run per output directory: a second one would overwrite the first one's checkpoints.
    with exclusive_directory_lock(output_dir, "run_pretraining") if chief else contextlib.nullcontext():
        return train_and_evaluate(settings, config, strategy, chief, output_dir, training_data, eval_files)


def _refuse_another_tools_directory(output_dir):
    """Before anything is read or written: an output directory another tool's run (a fine-tuned model, say)
    records as its own is refused, its record untouched."""
    path = os.path.join(output_dir, RUN_CONFIG_FILE)
    if not tf.io.gfile.exists(path):
        return
    try:
        with tf.io.gfile.GFile(path) as f:
            record = json.load(f)
    except ValueError as error:
        raise SettingError(f"{path}: not valid JSON ({error}); restore it, or choose another <output_dir>") from None
    refuse_another_tools_directory(output_dir, record if isinstance(record, dict) else None, PRETRAINING_TOOL)


def _with_warmup_steps(settings):
    """`settings` with num_warmup_steps: as given, else as the run being resumed recorded it (its schedule must
    not change under it), else the paper's share of num_train_steps, said in one line."""
    import dataclasses

    if settings.num_warmup_steps is not None:
        return settings
    path = os.path.join(settings.output_dir, RUN_CONFIG_FILE)
    if model_dir.checkpoints_newest_first(settings.output_dir) and tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            recorded = json.load(f).get("config", {}).get("num_warmup_steps")
        if recorded is not None:
            return dataclasses.replace(settings, num_warmup_steps=recorded)
    settings = dataclasses.replace(settings, num_warmup_steps=settings.warmup_steps())
    print(f"Warmup: {settings.num_warmup_steps:,} of the {settings.num_train_steps:,} steps, the paper's share "
          f"({PAPER_WARMUP_STEPS:,} of {PAPER_TRAIN_STEPS:,}); num_warmup_steps sets another.", flush=True)
    return settings


def _model_config(settings):
    """albert_config with vocab_size, or a preset's vocabulary size replaced by spm_model_file's."""
    from albert_tf.albert_config import AlbertConfig, preset_names

    config = AlbertConfig.from_name_or_path(settings.albert_config)
    vocab_size = settings.vocab_size
    if vocab_size is None and settings.spm_model_file and settings.albert_config in preset_names():
        pieces = AlbertTokenizer(settings.spm_model_file).vocab_size
        if pieces != config.vocab_size:
            print(f"albert_config={settings.albert_config} with vocab_size {pieces}, the size of spm_model_file "
                  f"(the preset has {config.vocab_size}).", flush=True)
            vocab_size = pieces
    if vocab_size is None or vocab_size == config.vocab_size:
        return config
    return AlbertConfig.from_dict({**config.to_dict(), "vocab_size": vocab_size},
                                  source=f"albert_config={settings.albert_config} with vocab_size={vocab_size}")


def train_and_evaluate(settings, config, strategy, chief, output_dir, training_data, eval_files):
    # Every worker saves (saving is collective under MultiWorkerMirroredStrategy); only the chief keeps its copy.
    checkpoint_dir = output_dir if chief else tempfile.mkdtemp(prefix="albert_tf_worker_ckpt_")

    keras.mixed_precision.set_global_policy(PRECISIONS[settings.mixed_precision])

    budget_plan = _recorded_budget_plan(output_dir) if settings.train_budget_hours else None

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
            trainer = Trainer(strategy, model, optimizer, PretrainingObjective(settings.sentence_loss_weight),
                              settings.train_batch_size, settings.gradient_accumulation_steps,
                              jit_compile=settings.jit_compile)
        iterator = iter(_worker_dataset(settings, strategy, training_data))
        checkpoint = training_checkpoint(model, optimizer=optimizer, step=trainer.step, iterator=iterator)
        return model, trainer, iterator, checkpoint, schedule_steps

    model, trainer, iterator, checkpoint, schedule_steps = build_training_state()
    candidates = model_dir.checkpoints_newest_first(output_dir)
    _check_or_write_run_config(settings, output_dir, resuming=bool(candidates), chief=chief, config=config,
                               training_data=training_data)
    _check_spm_model_file(settings, output_dir, resuming=bool(candidates))
    if candidates:
        def restore(prefix):
            # A damaged checkpoint may fail halfway through its restore: each attempt gets fresh objects,
            # so nothing of it survives into the run.
            nonlocal model, trainer, iterator, checkpoint, schedule_steps
            if prefix != candidates[0]:
                model, trainer, iterator, checkpoint, schedule_steps = build_training_state()
            restore_training_checkpoint(prefix, model, optimizer=trainer.optimizer, step=trainer.step,
                                        iterator=iterator)

        resume_from = model_dir.restore_newest_intact(restore, candidates)
        print(f"Resuming from {resume_from} at step {int(trainer.step.numpy())}.", flush=True)
    elif settings.init_checkpoint:
        _restore_init_checkpoint(settings, model, settings.init_checkpoint)
    manager = tf.train.CheckpointManager(checkpoint, checkpoint_dir, max_to_keep=settings.keep_checkpoint_max,
                                         step_counter=trainer.step, checkpoint_name="ckpt")
    if chief:
        _write_model_metadata(settings, output_dir, config, training_data)

    writer = (tf.summary.create_file_writer(os.path.join(output_dir, "train")) if chief
              else tf.summary.create_noop_writer())
    preemption = PreemptionFlag(trainer.stop_requested if stops_every_step(strategy) else None)
    preemption.install()
    status = 0
    try:
        if settings.do_train:
            heldout = (HeldoutEvaluation(settings, trainer, strategy, eval_files, output_dir, chief)
                       if settings.eval_every_steps else None)
            budget = (BudgetKeeper(settings, schedule_steps, output_dir, chief, budget_plan, strategy)
                      if settings.train_budget_hours else None)
            status = _train(settings, trainer, iterator, manager, writer, preemption, training_data.files, heldout,
                            budget)
        if status == 0 and settings.do_eval:
            _evaluate(settings, trainer, strategy, eval_files, output_dir, chief)
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
        tokenizer = AlbertTokenizer(settings.spm_model_file, lower_case=metadata["config"]["lower_case"],
                                    keep_accents=metadata["config"].get("keep_accents", False),
                                    rewrite_quotes=metadata["config"].get("rewrite_quotes", False))
        maker = EpochInstanceMaker(CreationConfig.from_json(metadata["config"]), tokenizer.word_start_table,
                                   tokenizer.random_replacement_ids, settings.seed,
                                   processes=settings.input_processes)
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


class HeldoutEvaluation:
    """Evaluates the held-out records every `eval_every_steps` during training, and says the learning phase.

    Each evaluation reads the first `max_eval_steps` batches of `eval_batch_size` (the same
    records every time), prints one line, writes TensorBoard's eval/ and appends a line to
    OUTPUT_DIR/eval_history.jsonl: step, elapsed seconds, the held-out metrics, the training
    metrics since the previous evaluation, the phase and its reason.
    """

    def __init__(self, settings, trainer, strategy, eval_files, output_dir, chief):
        self.settings = settings
        self.trainer = trainer
        self.every = settings.eval_every_steps
        self.chief = chief
        self.dataset = _eval_dataset(settings, strategy, eval_files)
        self.level = data.frequent_piece_level(eval_files, batch_size=settings.eval_batch_size,
                                               max_batches=settings.max_eval_steps)
        self.history_path = os.path.join(output_dir, EVAL_HISTORY_FILE)
        self.writer = (tf.summary.create_file_writer(os.path.join(output_dir, "eval")) if chief
                       else tf.summary.create_noop_writer())
        self.training_totals = None
        self.phase = None
        self.last_seconds = 0.0
        self.last_step = None
        self.history = []  # the lines of eval_history.jsonl (the chief writes it)
        self.earlier_heldout = []  # the last TREND_EVALUATIONS evaluations' held-out figures, oldest first

    def start(self, step):
        """Keeps the history lines of steps up to `step` (a run resumed from an earlier checkpoint redoes the rest),
        and takes the held-out trend and the phase up from them, so that a resumed run judges its phase as the
        uninterrupted run does."""
        self.history = []
        if tf.io.gfile.exists(self.history_path):
            with tf.io.gfile.GFile(self.history_path) as f:
                self.history = [line for line in f if line.strip() and json.loads(line)["step"] <= step]
            if self.chief:
                self._write_history()
        records = [json.loads(line) for line in self.history]
        self.earlier_heldout = [record["heldout"] for record in records][-TREND_EVALUATIONS:]
        self.phase = Phase(records[-1]["phase"], records[-1]["phase_reason"]) if records else None

    def _write_history(self):
        # Rewritten whole through a temporary name, not appended: Cloud Storage files cannot be appended to.
        with tf.io.gfile.GFile(self.history_path + ".tmp", "w") as f:
            f.write("".join(self.history))
        tf.io.gfile.rename(self.history_path + ".tmp", self.history_path, overwrite=True)

    def add_training(self, totals):
        if self.training_totals is None:
            self.training_totals = {key: 0.0 for key in SUM_KEYS}
        for key in SUM_KEYS:
            self.training_totals[key] += float(totals[key])

    def due(self, step, total_steps):
        return step != self.last_step and (step % self.every == 0 or step >= total_steps)

    def run(self, step, elapsed):
        start = time.monotonic()
        totals = self.trainer.evaluate(self.dataset, max_steps=self.settings.max_eval_steps)
        if totals["sequences"] == 0:
            raise SettingError(f"{self.settings.eval_input_file}: fewer than <eval_batch_size>="
                             f"{self.settings.eval_batch_size} records")
        heldout = metrics_from_sums(totals)
        heldout["loss"] = heldout["masked_lm_loss"] + heldout["sentence_order_loss"]
        training = metrics_from_sums(self.training_totals) if self.training_totals else None
        self.training_totals = None
        self.phase = learning_phase(heldout, training, self.level, self.earlier_heldout,
                                    self.phase.name if self.phase else None)
        self.earlier_heldout = (self.earlier_heldout + [heldout])[-TREND_EVALUATIONS:]
        self.last_seconds = time.monotonic() - start
        self.last_step = step
        print(f"eval step {step}  held-out {_format_metrics(heldout)}  phase: {self.phase.name} "
              f"({self.phase.reason})", flush=True)
        with self.writer.as_default(step=step):
            for name, value in heldout.items():
                tf.summary.scalar(name, value)
            tf.summary.scalar("phase", self.phase.index)
            tf.summary.scalar("frequent_piece_level", self.level)
            tf.summary.text("phase", f"{self.phase.name}: {self.phase.reason}")
        self.writer.flush()
        if self.chief:
            record = {"step": step, "elapsed_seconds": round(elapsed, 1), "heldout": heldout, "training": training,
                      "phase": self.phase.name, "phase_reason": self.phase.reason,
                      "frequent_piece_level": self.level}
            self.history.append(json.dumps(record, sort_keys=True) + "\n")
            self._write_history()


class BudgetKeeper:
    """Measures the step time, then fixes the step count and the schedule to end at --train_budget_hours."""

    def __init__(self, settings, schedule_steps, output_dir, chief, plan, strategy=None):
        self.settings = settings
        self.strategy = strategy
        self.schedule_steps = schedule_steps  # the variable the learning-rate schedule reads its T from
        self.path = os.path.join(output_dir, RUN_CONFIG_FILE)
        self.chief = chief
        self.plan = plan
        self.timer = StepTimer()

    def total_steps(self, default):
        return self.plan.num_train_steps if self.plan else default

    def after_loop(self, step, num_steps, seconds, elapsed, heldout):
        """Returns the plan once, when the step time has just been measured."""
        if self.plan:
            return None
        self.timer.add(num_steps, seconds)
        if not self.timer.ready:
            return None
        eval_seconds = 0.0
        if heldout:  # its cost counts in the budget: measure one evaluation now
            heldout.run(step, elapsed)
            eval_seconds = heldout.last_seconds
            elapsed += eval_seconds
        settings = self.settings
        # Every worker must plan the same step count: they plan from the workers' mean figures.
        step_seconds, eval_seconds, elapsed = (_workers_mean(self.strategy, value)
                                               for value in (self.timer.step_seconds, eval_seconds, elapsed))
        self.plan = plan_budget(settings.train_budget_hours, elapsed, step, step_seconds, eval_seconds,
                                settings.eval_every_steps, settings.num_train_steps, settings.num_warmup_steps)
        self.schedule_steps.assign(self.plan.num_train_steps)
        if self.chief:
            with tf.io.gfile.GFile(self.path) as f:
                run_config = json.load(f)
            run_config["train_budget"] = self.plan.to_json()
            write_json(self.path, run_config)
        print(self.plan.describe(), flush=True)
        return self.plan


def _workers_mean(strategy, value):
    """The mean of every worker's `value` under MultiWorkerMirroredStrategy (a collective: every worker gets
    the same number); else `value`."""
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        per_replica = strategy.run(lambda: tf.constant(float(value), tf.float64))
        return float(strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None))
    return value


def _recorded_budget_plan(output_dir):
    """The budget plan a run that was interrupted after measuring its step time recorded, or None."""
    path = os.path.join(output_dir, RUN_CONFIG_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        recorded = json.load(f).get("train_budget")
    return BudgetPlan.from_json(recorded) if recorded else None


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
        max_seconds_per_loop=getattr(settings, "max_seconds_per_loop", 0), format_metrics=_format_metrics,
        diverged=lambda problem, steps, last: _diverged(problem, steps, last, settings.mixed_precision),
        read_error=lambda error: read_error(train_files, error, "the training data"),
        hooks=_PretrainingHooks(settings, heldout, budget))


def _eval_dataset(settings, strategy, eval_files):
    """The held-out records, distributed over the replicas (the same records on every pass)."""
    def eval_dataset_fn(input_context):
        per_replica = input_context.get_per_replica_batch_size(settings.eval_batch_size)
        return data.make_pretraining_dataset(eval_files, per_replica, settings.max_seq_length,
                                             settings.max_predictions_per_seq, is_training=False,
                                             input_context=input_context)

    if settings.eval_batch_size % strategy.num_replicas_in_sync:
        raise SettingError(f"<eval_batch_size>={settings.eval_batch_size} must be divisible by the number of replicas "
                         f"({strategy.num_replicas_in_sync})")
    return strategy.distribute_datasets_from_function(eval_dataset_fn)


def _evaluate(settings, trainer, strategy, eval_files, output_dir, chief):
    dataset = _eval_dataset(settings, strategy, eval_files)
    totals = trainer.evaluate(dataset, max_steps=settings.max_eval_steps)
    if totals["sequences"] == 0:
        raise SettingError(f"{settings.eval_input_file}: fewer than <eval_batch_size>={settings.eval_batch_size} "
                           "records")
    metrics = metrics_from_sums(totals)
    metrics["loss"] = metrics["masked_lm_loss"] + metrics["sentence_order_loss"]
    step = int(trainer.step.numpy())
    print(f"eval at step {step} on {int(totals['sequences'])} sequences: {_format_metrics(metrics)}", flush=True)
    if chief:
        with tf.io.gfile.GFile(os.path.join(output_dir, "eval_results.txt"), "w") as f:
            for name in sorted(metrics):
                f.write(f"{name} = {metrics[name]}\n")
            f.write(f"global_step = {step}\n")
        with tf.summary.create_file_writer(os.path.join(output_dir, "eval")).as_default(step=step):
            for name, value in metrics.items():
                tf.summary.scalar(name, value)
    return metrics
