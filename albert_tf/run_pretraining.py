r"""Pretrains ALBERT (masked n-gram LM + sentence-order prediction) on create_pretraining_data's TFRecords.

  python -m albert_tf.run_pretraining --input_file=/data/albert-* \
      --albert_config=albert_base_v2 --output_dir=/ckpt/albert_base \
      --train_batch_size=4096 --max_seq_length=512 --num_train_steps=125000

  # A Cloud TPU (VM: --tpu=local); data and output_dir on Cloud Storage
  python -m albert_tf.run_pretraining --tpu=local --mixed_precision=bf16 \
      --input_file=gs://bucket/data/albert-* --output_dir=gs://bucket/albert_base ...

The defaults are the paper's recipe (LAMB, lr 0.00176, batch 4096, 125k steps,
3125 warmup steps, seq 512). Run the same command again to resume: the latest
`ckpt-N` in --output_dir restores the model, optimizer, step and the input
position, so a killed or preempted run continues exactly. SIGTERM saves a
checkpoint and exits with status 143. A NaN or infinite loss stops the run,
keeping the last good checkpoint.

--output_dir is an albert_tf checkpoint directory: `albert_tf.load_pretrainer`
and `albert_tf.load_encoder` read it, during training and after; TensorBoard
summaries go to OUTPUT_DIR/train and OUTPUT_DIR/eval.
"""

import concurrent.futures
import contextlib
import hashlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time

from absl import flags

from albert_tf import cli
from albert_tf.file_utils import exclusive_directory_lock, file_sha256

STRATEGY_NAMES = ("one_device", "mirrored", "multi_worker", "tpu")
PRECISIONS = {"none": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
RUN_CONFIG_FILE = "run_config.json"
# Flags a resumed run must share with the run that wrote the checkpoints.
_RESUME_INVARIANTS = ("albert_config", "train_batch_size", "max_seq_length", "max_predictions_per_seq", "optimizer",
                      "gradient_accumulation_steps", "seed", "sentence_loss_weight")
# What a run_config.json written before an invariant existed implies for it.
_INVARIANT_DEFAULTS = {"sentence_loss_weight": 1.0}
PREEMPTED_EXIT_CODE = 143  # 128 + SIGTERM, what schedulers expect of a terminated job


def define_flags():
    flags.DEFINE_string("input_file", None, "Training TFRecords: a glob, comma-separated globs, or the --output_file "
                        "prefix given to create_pretraining_data. gs:// paths work.")
    flags.DEFINE_string("albert_config", "albert_base_v2", "A preset name (see `python -m albert_tf.params`) or an "
                        "albert_config.json path.")
    flags.DEFINE_string("init_checkpoint", None, "Start from this albert_tf checkpoint (pretrainer or encoder; "
                        "convert Google or Hugging Face checkpoints first). Ignored when --output_dir already "
                        "holds a checkpoint to resume from.")
    flags.DEFINE_string("output_dir", None, "Where checkpoints, summaries and albert_tf.json go; rerun with the same "
                        "directory to resume.")
    flags.DEFINE_string("spm_model_file", None, "The SentencePiece model the data was made with; copied into "
                        "--output_dir as spm.model so the checkpoint can be exported and fine-tuned on its own.")
    flags.DEFINE_bool("do_train", True, "Train for --num_train_steps (resuming if a checkpoint exists).")
    flags.DEFINE_bool("do_eval", False, "After training, evaluate the four metrics on --eval_input_file.")
    flags.DEFINE_string("eval_input_file", None, "Held-out TFRecords for --do_eval (same forms as --input_file).")
    flags.DEFINE_integer("train_batch_size", 4096, "Sequences per optimizer step, over all devices and "
                         "accumulation micro-batches (paper: 4096).")
    flags.DEFINE_integer("eval_batch_size", 8, "Sequences per evaluation batch (original: 8).")
    flags.DEFINE_integer("max_eval_steps", 100, "Evaluation batches at most (original: 100).")
    flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the data (checked against the files).")
    flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence in the data (checked).")
    flags.DEFINE_integer("num_train_steps", 125000, "Optimizer steps in total (paper: 125k).")
    flags.DEFINE_integer("num_warmup_steps", 3125, "Linear warmup steps from 0 to --learning_rate (paper: 3125).")
    flags.DEFINE_float("learning_rate", 0.00176, "Peak learning rate; decays linearly to 0 at --num_train_steps "
                       "(paper: 0.00176 with LAMB at batch 4096).")
    flags.DEFINE_enum("optimizer", "lamb", ["lamb", "adamw"], "LAMB (paper) or AdamW, both as in the original code: "
                      "no bias correction, eps 1e-6, weight decay 0.01, LayerNorm and biases excluded.")
    flags.DEFINE_float("weight_decay_rate", 0.01, "Weight decay inside the update (original: 0.01).")
    flags.DEFINE_float("clip_norm", 1.0, "Clip the global gradient norm (over all replicas) to this.")
    flags.DEFINE_integer("save_checkpoints_steps", 5000, "Save a checkpoint every this many steps (and at the end).")
    flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept in --output_dir (older ones are deleted).")
    flags.DEFINE_integer("iterations_per_loop", 1000, "Steps per compiled loop; progress, summaries and the NaN "
                         "check happen between loops.")
    flags.DEFINE_enum("mixed_precision", "none", list(PRECISIONS), "bf16: bfloat16 compute, float32 variables (TPU, "
                      "Ampere+ GPUs, AMX CPUs). fp16: float16 with dynamic loss scaling (older GPUs). LayerNorm, "
                      "softmax and losses stay float32.")
    flags.DEFINE_bool("jit_compile", False, "XLA-compile the forward and backward pass (the default on TPU; usually "
                      "faster on GPU; on CPU measure first).")
    flags.DEFINE_integer("gradient_accumulation_steps", 1, "Micro-batches per step: the step's gradient is the exact "
                         "gradient of the whole --train_batch_size batch, with 1/N of the activation memory.")
    flags.DEFINE_enum("strategy", "one_device", list(STRATEGY_NAMES), "one_device; mirrored (all local GPUs); "
                      "multi_worker (MultiWorkerMirroredStrategy, cluster from TF_CONFIG); tpu (TPUStrategy).")
    flags.DEFINE_string("tpu", None, "TPU name or grpc:// address (Cloud TPU VM: local); implies --strategy=tpu.")
    flags.DEFINE_float("sentence_loss_weight", 1.0, "Weight of the sentence-level loss (SOP, or NSP for data made "
                       "with --random_next_sentence) added to the MLM loss; the original: 1. 0 trains MLM only "
                       "(the paper's Table 5 'None' row).")
    flags.DEFINE_integer("seed", 12345, "Seed for initialization and input order.")
    flags.DEFINE_integer("shuffle_buffer_size", 10000, "Records in the training shuffle buffer.")


FLAGS = flags.FLAGS


class TrainingDivergedError(RuntimeError):
    pass


class _PreemptionFlag:
    """Set by SIGTERM; the running loop stops after its current step, saves a checkpoint and exits.

    A TPU preemption notice leaves about 30 s, less than a loop of --iterations_per_loop
    steps may take, so the handler also sets the trainer's `stop_requested`, which the
    compiled loop reads before every step. (Multi-worker runs stop at loop boundaries:
    all workers must run the same steps.)
    """

    def __init__(self, stop_variable=None):
        self.raised = False
        self.stop_variable = stop_variable

    def install(self):
        signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum, frame):
        self.raised = True
        if self.stop_variable is not None:
            self.stop_variable.assign(True)


def _call_interruptibly(function):
    """Runs `function` in a thread so that signal handlers run meanwhile, and returns its result.

    Python runs signal handlers in the main thread between bytecodes; a main thread
    blocked in a long TF call would hear SIGTERM only after the whole loop.
    """
    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        future = executor.submit(function)
        while True:
            try:
                return future.result(timeout=0.5)
            except concurrent.futures.TimeoutError:
                continue


def _validate_flags():
    required = {"input_file": FLAGS.input_file, "output_dir": FLAGS.output_dir}
    missing = [f"--{name}" for name, value in required.items() if not value]
    if missing:
        raise ValueError(f"{' and '.join(missing)} required")
    positive = ("train_batch_size", "eval_batch_size", "max_seq_length", "max_predictions_per_seq", "num_train_steps",
                "save_checkpoints_steps", "keep_checkpoint_max", "iterations_per_loop", "gradient_accumulation_steps")
    for name in positive:
        if FLAGS[name].value < 1:
            raise ValueError(f"--{name} must be >= 1, got {FLAGS[name].value}")
    if FLAGS.num_warmup_steps < 0 or FLAGS.num_warmup_steps > FLAGS.num_train_steps:
        raise ValueError(f"--num_warmup_steps must be in [0, --num_train_steps={FLAGS.num_train_steps}]")
    if FLAGS.learning_rate <= 0:
        raise ValueError(f"--learning_rate must be > 0, got {FLAGS.learning_rate}")
    if FLAGS.sentence_loss_weight < 0:
        raise ValueError(f"--sentence_loss_weight must be >= 0, got {FLAGS.sentence_loss_weight}")
    if FLAGS.do_eval and not FLAGS.eval_input_file:
        raise ValueError("--do_eval needs --eval_input_file")
    if FLAGS.spm_model_file and not os.path.isfile(FLAGS.spm_model_file):
        raise FileNotFoundError(f"{FLAGS.spm_model_file}: no such SentencePiece model (--spm_model_file)")


def _run_config(config, train_files):
    run_config = {name: FLAGS[name].value for name in _RESUME_INVARIANTS}
    # The resolved model config, not the flag's string: a JSON edited in place between runs
    # (4 -> 12 layers keeps every variable's shape) must not relabel the old checkpoints.
    run_config["albert_config"] = config.to_dict()
    # The checkpointed input position is a position in these files; it means nothing in others.
    run_config["input_files"] = list(train_files)
    return run_config


def _check_or_write_run_config(output_dir, resuming, chief, config, train_files):
    import tensorflow as tf

    path = os.path.join(output_dir, RUN_CONFIG_FILE)
    current = _run_config(config, train_files)
    if resuming and tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            previous = json.load(f)
        changed = []
        for key in _RESUME_INVARIANTS:
            if key == "albert_config":
                if isinstance(previous.get(key), dict) and previous[key] != current[key]:
                    fields = sorted(k for k in set(previous[key]) | set(current[key])
                                    if previous[key].get(k) != current[key].get(k))
                    changed.append(f"--albert_config={FLAGS.albert_config} resolves to another model ("
                                   + ", ".join(f"{k}={current[key].get(k)}, was {previous[key].get(k)}"
                                               for k in fields) + ")")
                elif isinstance(previous.get(key), str) and previous[key] != FLAGS.albert_config:
                    changed.append(f"--albert_config={FLAGS.albert_config} (the checkpoints were made with "
                                   f"{previous[key]})")
            elif previous.get(key, _INVARIANT_DEFAULTS.get(key)) != current[key]:
                changed.append(f"--{key}={current[key]} (the checkpoints were made with {previous.get(key)})")
        if changed:
            raise ValueError(f"{output_dir} holds checkpoints of another run: " + "; ".join(changed) +
                             ". Use another --output_dir, or the original flags to resume.")
        # By path, not by name: the checkpointed input iterator holds these paths and reads from them.
        if "input_files" in previous and previous["input_files"] != current["input_files"]:
            raise ValueError(
                f"{output_dir}: the training files changed since its checkpoints were written "
                f"({len(previous['input_files'])} file(s) then, e.g. {previous['input_files'][0]}; "
                f"{len(current['input_files'])} now), and the saved input position is a position in those files. "
                "Resume with the same --input_file at the same path, or continue training on the new data in a "
                f"new --output_dir with --init_checkpoint={output_dir}")
    elif chief:
        with tf.io.gfile.GFile(path, "w") as f:
            json.dump(current, f, indent=2, sort_keys=True)


def _check_spm_model_file(output_dir, resuming):
    """On resume, --spm_model_file must be the model the run started with (it is copied into output_dir)."""
    import tensorflow as tf

    from albert_tf.checkpoints import model_dir

    stored = os.path.join(output_dir, model_dir.SPM_MODEL_FILE)
    if not (resuming and FLAGS.spm_model_file and tf.io.gfile.exists(stored)):
        return
    if file_sha256(stored) != file_sha256(FLAGS.spm_model_file):
        raise ValueError(f"--spm_model_file={FLAGS.spm_model_file} is not the SentencePiece model this run started "
                         f"with ({stored}); pass that one, or train into a new --output_dir")


def _write_model_metadata(output_dir, config):
    import tensorflow as tf

    from albert_tf.checkpoints import model_dir

    metadata = {"format": "albert_tf", "format_version": model_dir.FORMAT_VERSION, "model": "pretrainer",
                "albert_config": config.to_dict(), "max_seq_length": FLAGS.max_seq_length,
                "max_predictions_per_seq": FLAGS.max_predictions_per_seq}
    # gfile, so gs:// output directories work; small enough that a partial write is not a concern.
    with tf.io.gfile.GFile(os.path.join(output_dir, model_dir.METADATA_FILE), "w") as f:
        f.write(json.dumps(metadata, indent=2, sort_keys=True) + "\n")
    if FLAGS.spm_model_file:
        tf.io.gfile.copy(FLAGS.spm_model_file, os.path.join(output_dir, model_dir.SPM_MODEL_FILE), overwrite=True)


def _restore_init_checkpoint(model, path):
    from albert_tf.checkpoints.model_dir import read_metadata, resolve_checkpoint, restore_weights

    directory, prefix = resolve_checkpoint(path)
    kind = read_metadata(directory)["model"]
    if kind == "pretrainer":
        restore_weights(model, prefix)
    else:  # an encoder, or a task model around one: take the encoder, keep fresh heads
        from albert_tf.checkpoints.model_dir import build_model

        source = build_model(read_metadata(directory))
        restore_weights(source, prefix)
        source_encoder = getattr(source, "encoder", source)
        if len(source_encoder.weights) != len(model.encoder.weights):
            raise ValueError(f"{path}: its encoder does not match --albert_config={FLAGS.albert_config}")
        for target, value in zip(model.encoder.weights, source_encoder.weights):
            if tuple(target.shape) != tuple(value.shape):
                raise ValueError(f"{path}: {value.path} has shape {tuple(value.shape)}, the model {tuple(target.shape)}")
            target.assign(value)
        print(f"Initialized the encoder from {path} ({kind}); the pretraining heads start fresh.", flush=True)


def _weights_fingerprint(model):
    digest = hashlib.sha256()
    for weight in model.weights:
        digest.update(weight.numpy().tobytes())
    return digest.hexdigest()[:16]


def _format_metrics(metrics):
    return (f"loss {metrics['masked_lm_loss'] + metrics['sentence_order_loss']:.4f}  "
            f"mlm_loss {metrics['masked_lm_loss']:.4f}  mlm_acc {metrics['masked_lm_accuracy']:.4f}  "
            f"sop_loss {metrics['sentence_order_loss']:.4f}  sop_acc {metrics['sentence_order_accuracy']:.4f}")


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    _validate_flags()
    import tensorflow as tf

    from albert_tf.albert_config import AlbertConfig
    from albert_tf.data import pretraining_dataset as data
    from albert_tf.training.strategies import create_strategy, is_chief

    config = AlbertConfig.from_name_or_path(FLAGS.albert_config)
    train_files = data.expand_data_files(FLAGS.input_file)
    data.check_pretraining_files(train_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, config.vocab_size,
                                 spm_model_file=FLAGS.spm_model_file)
    eval_files = []
    if FLAGS.do_eval:
        eval_files = data.expand_data_files(FLAGS.eval_input_file)
        data.check_pretraining_files(eval_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, config.vocab_size)
    if FLAGS.max_seq_length > config.max_position_embeddings:
        raise ValueError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the config's max_position_embeddings "
                         f"({config.max_position_embeddings})")

    strategy = create_strategy(FLAGS.strategy, tpu=FLAGS.tpu)
    chief = is_chief(strategy)
    output_dir = FLAGS.output_dir
    tf.io.gfile.makedirs(output_dir)
    # One run per output directory: a second one would overwrite the first one's checkpoints.
    with exclusive_directory_lock(output_dir, "run_pretraining") if chief else contextlib.nullcontext():
        return _run(config, strategy, chief, output_dir, train_files, eval_files)


def _run(config, strategy, chief, output_dir, train_files, eval_files):
    import keras
    import tensorflow as tf

    from albert_tf.data import pretraining_dataset as data
    from albert_tf.models.albert_pretrainer import AlbertPretrainer
    from albert_tf.optimization import create_optimizer
    from albert_tf.progress import format_duration
    from albert_tf.tasks.pretraining_losses import metrics_from_sums
    from albert_tf.checkpoints import model_dir
    from albert_tf.training.pretraining_trainer import PretrainingTrainer

    # Every worker saves (saving is collective under MultiWorkerMirroredStrategy); only the chief keeps its copy.
    checkpoint_dir = output_dir if chief else tempfile.mkdtemp(prefix="albert_tf_worker_ckpt_")

    keras.mixed_precision.set_global_policy(PRECISIONS[FLAGS.mixed_precision])

    def build_training_state():
        keras.utils.set_random_seed(FLAGS.seed)
        with strategy.scope():
            model = AlbertPretrainer(config, seq_length=FLAGS.max_seq_length,
                                     max_predictions_per_seq=FLAGS.max_predictions_per_seq)
            optimizer = create_optimizer(
                FLAGS.learning_rate, FLAGS.num_train_steps, FLAGS.num_warmup_steps, optimizer=FLAGS.optimizer,
                weight_decay_rate=FLAGS.weight_decay_rate, clipnorm=FLAGS.clip_norm, gradients_are_aggregated=True)
            if FLAGS.mixed_precision == "fp16":
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            trainer = PretrainingTrainer(strategy, model, optimizer, FLAGS.train_batch_size,
                                         FLAGS.gradient_accumulation_steps, jit_compile=FLAGS.jit_compile,
                                         sentence_loss_weight=FLAGS.sentence_loss_weight)
        iterator = iter(_worker_dataset(strategy, train_files, data))
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=trainer.step, iterator=iterator)
        return model, trainer, iterator, checkpoint

    model, trainer, iterator, checkpoint = build_training_state()
    candidates = model_dir.checkpoints_newest_first(output_dir)
    _check_or_write_run_config(output_dir, resuming=bool(candidates), chief=chief, config=config,
                               train_files=train_files)
    _check_spm_model_file(output_dir, resuming=bool(candidates))
    if candidates:
        def restore(prefix):
            # A damaged checkpoint may fail halfway through its restore: each attempt gets fresh objects,
            # so nothing of it survives into the run.
            nonlocal model, trainer, iterator, checkpoint
            if prefix != candidates[0]:
                model, trainer, iterator, checkpoint = build_training_state()
            checkpoint.restore(prefix).assert_existing_objects_matched()

        resume_from = model_dir.restore_newest_intact(restore, candidates)
        print(f"Resuming from {resume_from} at step {int(trainer.step.numpy())}.", flush=True)
    elif FLAGS.init_checkpoint:
        _restore_init_checkpoint(model, FLAGS.init_checkpoint)
    manager = tf.train.CheckpointManager(checkpoint, checkpoint_dir, max_to_keep=FLAGS.keep_checkpoint_max,
                                         step_counter=trainer.step, checkpoint_name="ckpt")
    if chief:
        _write_model_metadata(output_dir, config)

    writer = (tf.summary.create_file_writer(os.path.join(output_dir, "train")) if chief
              else tf.summary.create_noop_writer())
    per_step_stop = not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
    preemption = _PreemptionFlag(trainer.stop_requested if per_step_stop else None)
    preemption.install()
    status = 0
    try:
        if FLAGS.do_train:
            status = _train(trainer, strategy, iterator, manager, writer, preemption, train_files, metrics_from_sums,
                            format_duration)
        if status == 0 and FLAGS.do_eval:
            _evaluate(trainer, strategy, eval_files, output_dir, chief, data, metrics_from_sums)
    finally:
        if not chief:
            shutil.rmtree(checkpoint_dir, ignore_errors=True)
    print(f"Weights fingerprint: {_weights_fingerprint(model)} (step {int(trainer.step.numpy())})", flush=True)
    return status


def _worker_dataset(strategy, train_files, data):
    """This worker's share of the training input, in batches of train_batch_size / workers."""
    import tensorflow as tf

    from albert_tf.training.strategies import worker_layout

    workers, worker_index = worker_layout(strategy)
    context = tf.distribute.InputContext(num_input_pipelines=workers, input_pipeline_id=worker_index,
                                        num_replicas_in_sync=strategy.num_replicas_in_sync)
    return data.make_pretraining_dataset(train_files, FLAGS.train_batch_size // workers, FLAGS.max_seq_length,
                                         FLAGS.max_predictions_per_seq, seed=FLAGS.seed, is_training=True,
                                         input_context=context if workers > 1 else None,
                                         shuffle_buffer=FLAGS.shuffle_buffer_size)


def _any_worker_preempted(strategy, preemption):
    """Whether any worker got SIGTERM: all must stop at the same step."""
    import tensorflow as tf

    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        flag = strategy.run(lambda: tf.constant(1.0 if preemption.raised else 0.0))
        return float(strategy.reduce(tf.distribute.ReduceOp.SUM, flag, axis=None)) > 0
    return preemption.raised


def _train(trainer, strategy, iterator, manager, writer, preemption, train_files, metrics_from_sums, format_duration):
    import tensorflow as tf

    from albert_tf.data.pretraining_dataset import read_error

    total_steps = FLAGS.num_train_steps
    step = int(trainer.step.numpy())
    if step >= total_steps:
        print(f"Already trained for {step} steps (--num_train_steps={total_steps}).", flush=True)
        return 0
    start_step, start_time = step, time.monotonic()
    print(f"Training from step {step} to {total_steps}: {strategy.num_replicas_in_sync} replica(s), "
          f"batch {FLAGS.train_batch_size}, seq {FLAGS.max_seq_length}.", flush=True)
    preempted = False
    saved_step = step if step else None  # a resumed run starts from a checkpoint of its first step
    while step < total_steps:
        to_checkpoint = FLAGS.save_checkpoints_steps - step % FLAGS.save_checkpoints_steps
        num_steps = min(FLAGS.iterations_per_loop, total_steps - step, to_checkpoint)
        loop_start = time.monotonic()
        try:
            totals, gradient_norm, learning_rate = _call_interruptibly(
                lambda: trainer.train_loop(iterator, tf.constant(num_steps)))
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
            raise read_error(train_files, error, "the training data") from None
        seconds = time.monotonic() - loop_start
        previous_step, step = step, int(trainer.step.numpy())
        num_steps = step - previous_step  # fewer than asked when SIGTERM stopped the loop
        if num_steps == 0:  # SIGTERM came before the loop's first step
            preempted = True
            break
        metrics = metrics_from_sums({k: v.numpy() for k, v in totals.items()})
        loss = metrics["masked_lm_loss"] + metrics["sentence_order_loss"]
        if not all(map(lambda x: x == x and abs(x) != float("inf"), [loss, float(gradient_norm)])):
            last = manager.latest_checkpoint or "none yet"
            raise TrainingDivergedError(
                f"the loss became {loss} (gradient norm {float(gradient_norm)}) in steps {step - num_steps + 1}-{step}; "
                f"stopped without saving. Last good checkpoint: {last}. Lower --learning_rate, raise "
                f"--num_warmup_steps, or use --mixed_precision=bf16 instead of fp16.")
        sequences_per_second = num_steps * FLAGS.train_batch_size / max(seconds, 1e-9)
        elapsed = time.monotonic() - start_time
        eta = elapsed / (step - start_step) * (total_steps - step)
        print(f"step {step}/{total_steps}  {_format_metrics(metrics)}  lr {float(learning_rate):.3g}  "
              f"grad_norm {float(gradient_norm):.3g}  {sequences_per_second:.1f} seq/s  "
              f"elapsed {format_duration(elapsed)}  ETA {format_duration(eta)}", flush=True)
        with writer.as_default(step=step):
            for name, value in metrics.items():
                tf.summary.scalar(name, value)
            tf.summary.scalar("loss", loss)
            tf.summary.scalar("learning_rate", float(learning_rate))
            tf.summary.scalar("gradient_norm", float(gradient_norm))
            tf.summary.scalar("sequences_per_second", sequences_per_second)
        writer.flush()
        if step % FLAGS.save_checkpoints_steps == 0 or step == total_steps:
            _save(manager, step)
            saved_step = step
        if _any_worker_preempted(strategy, preemption):
            preempted = True
            break
    if preempted:
        if saved_step != step:
            _save(manager, step)
        print(f"SIGTERM: saved a checkpoint at step {step}; rerun the same command to resume.", flush=True)
        return PREEMPTED_EXIT_CODE
    return 0


def _save(manager, step):
    """Saves ckpt-`step`; a failed save (disk full, read-only, quota) stops the run with the reason."""
    import tensorflow as tf

    try:
        manager.save(checkpoint_number=step)
    except (tf.errors.OpError, OSError) as error:
        message = getattr(error, "message", None) or str(error)
        previous = manager.latest_checkpoint or "none"
        raise OSError(f"could not save the checkpoint of step {step} in {manager.directory} "
                      f"({message.strip().splitlines()[0]}). The previous checkpoint ({previous}) is intact: free "
                      "space or fix the directory, then rerun the same command to resume from it") from None


def _evaluate(trainer, strategy, eval_files, output_dir, chief, data, metrics_from_sums):
    import tensorflow as tf

    def eval_dataset_fn(input_context):
        per_replica = input_context.get_per_replica_batch_size(FLAGS.eval_batch_size)
        return data.make_pretraining_dataset(eval_files, per_replica, FLAGS.max_seq_length,
                                             FLAGS.max_predictions_per_seq, is_training=False,
                                             input_context=input_context)

    if FLAGS.eval_batch_size % strategy.num_replicas_in_sync:
        raise ValueError(f"--eval_batch_size={FLAGS.eval_batch_size} must be divisible by the number of replicas "
                         f"({strategy.num_replicas_in_sync})")
    dataset = strategy.distribute_datasets_from_function(eval_dataset_fn)
    totals = trainer.evaluate(dataset, max_steps=FLAGS.max_eval_steps)
    if totals["sequences"] == 0:
        raise ValueError(f"{FLAGS.eval_input_file}: fewer than --eval_batch_size={FLAGS.eval_batch_size} records")
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


def run(argv):
    try:
        return main(argv)
    except TrainingDivergedError as error:
        print(f"albert_tf.run_pretraining: error: {error}", file=sys.stderr)
        return 2


def console_main():
    """The `albert-run-pretraining` console script."""
    cli.run(run, define_flags)


if __name__ == "__main__":
    console_main()
