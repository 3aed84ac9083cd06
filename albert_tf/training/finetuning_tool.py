"""The one front end of the fine-tuning tools: run_classifier (GLUE), run_squad and run_race are this, given a task.

    python -m albert_tf.run_classifier --task_name=mrpc --data_dir=glue/MRPC \
        --init_checkpoint=/ckpt/albert_base --output_dir=/tmp/mrpc --do_train --do_eval --do_predict

The task (`albert_tf.tasks.finetuning_task.FinetuningTask`) supplies its flags,
reader, head, loss, metrics and predictions. This module owns the rest, the same
for every tool:

- Flags with one name and one meaning across the tools (run_pretraining's names;
  the original google-research/albert names `--train_step`, `--warmup_step` and
  `--albert_config_file` as aliases). A flag left unset takes the task's recipe.
- The starting model: --init_checkpoint (any albert_tf checkpoint, a converted
  one, or an `albert_tf.export` directory) under a fresh task head; a model
  already fine-tuned for this task keeps its head and trains on; without
  --init_checkpoint, a random start from --albert_config.
- The SentencePiece model: --spm_model_file, else the one stored with the checkpoint.
- Steps: --num_train_steps, else --num_train_epochs over the training rows, else
  the recipe; warmup: --num_warmup_steps, else --warmup_proportion, else the recipe.
- The output layout:
    OUTPUT_DIR/checkpoints/ckpt-N   resumable training checkpoints; the directory
                                    is an albert_tf model directory (the last model)
    OUTPUT_DIR/best/                with --do_eval: the best evaluated checkpoint
    OUTPUT_DIR/eval_results.json    the metrics of --do_eval / --do_predict
    OUTPUT_DIR/train, OUTPUT_DIR/eval   TensorBoard summaries
    OUTPUT_DIR/...                  the task's predictions (--do_predict)
    OUTPUT_DIR/run_config.json      what the tool wrote here and the settings a resumed run must share
                                    (albert_tf.training.run_directory)
  One run at a time per directory (an flock). Everything (data, vocabulary,
  starting model, settings) is read and checked before anything there changes.
  Rerunning resumes from the latest checkpoint, refusing changed settings;
  --overwrite starts afresh and replaces the earlier run only when it finishes.
- Divergence: a NaN or exploding loss stops the run with status 2, saving
  nothing, and names the last good checkpoint (albert_tf.training.divergence).
"""

import math
import os

from absl import flags

from albert_tf import cli
from albert_tf.training.distribution_flags import check_distribution_flags, define_distribution_flags

FLAGS = flags.FLAGS
CHECKPOINT_SUBDIR = "checkpoints"
BEST_SUBDIR = "best"
EVAL_RESULTS_FILE = "eval_results.json"


def define_flags(task):
    """The shared flags, with the task's defaults and help, then the task's own flags."""
    flags.DEFINE_string("init_checkpoint", None, "albert_tf checkpoint (pretrainer, encoder, or a model fine-tuned "
                        "on this task), converted Google/Hugging Face checkpoint, or albert_tf.export directory. "
                        "Without it: random init from --albert_config.")
    flags.DEFINE_string("albert_config", None, "Preset or config JSON, only when there is no --init_checkpoint.")
    flags.DEFINE_alias("albert_config_file", "albert_config")  # the original scripts' name
    flags.DEFINE_string("output_dir", None, "Where checkpoints/, best/, eval_results.json, TensorBoard summaries and "
                        "predictions go.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model (default: the checkpoint's spm.model).")
    flags.DEFINE_bool("do_lower_case", None, "Lowercase the input. Default: as --init_checkpoint records its "
                      "training text was (lowercase when it records nothing); another casing needs --force.")
    flags.DEFINE_integer("max_seq_length", None, f"Tokens per sequence. Default: {task.max_seq_length} (the "
                         "original's), or the length --init_checkpoint records when that is shorter; longer than the "
                         "recorded length works with a warning, beyond max_position_embeddings not at all.")
    flags.DEFINE_bool("force", False, "Fine-tune with a --do_lower_case that contradicts --init_checkpoint's record.")
    flags.DEFINE_bool("do_train", False, "Fine-tune on the training data.")
    flags.DEFINE_bool("do_eval", False, task.do_eval_help)
    flags.DEFINE_bool("do_predict", False, task.do_predict_help)
    unit, note = task.unit, task.recipe_note
    flags.DEFINE_integer("train_batch_size", None, f"{unit} per training step. {note}")
    flags.DEFINE_integer("eval_batch_size", 8, f"{unit} per evaluation batch (original: 8).")
    flags.DEFINE_integer("predict_batch_size", 8, f"{unit} per prediction batch (original: 8).")
    flags.DEFINE_float("learning_rate", None, f"Peak AdamW learning rate. {note}")
    flags.DEFINE_integer("num_train_steps", None, f"Training steps. {note}")
    flags.DEFINE_alias("train_step", "num_train_steps")  # the original scripts' name
    flags.DEFINE_float("num_train_epochs", None, "Passes over the training data, when --num_train_steps is not "
                       f"set. {note}")
    flags.DEFINE_integer("num_warmup_steps", None, f"Linear warmup steps (at most the training steps). {note}")
    flags.DEFINE_alias("warmup_step", "num_warmup_steps")
    flags.DEFINE_float("warmup_proportion", None, "Fraction of the steps with a linear warmup from 0, when "
                       f"--num_warmup_steps is not set; the rate then decays linearly to 0. {note}")
    flags.DEFINE_integer("save_checkpoints_steps", 1000, "Checkpoint (and evaluate) every this many steps.")
    flags.DEFINE_integer("keep_checkpoint_max", task.keep_checkpoint_max, "Training checkpoints kept (default "
                         f"{task.keep_checkpoint_max}); the best is kept apart in OUTPUT_DIR/best.")
    flags.DEFINE_integer("seed", 12345, "Seed of the head's initialization (and of the encoder for a random "
                         "start), dropout and the data order.")
    flags.DEFINE_bool("overwrite", False, "Start afresh: train into a staging directory and, once the run has "
                      "finished, replace the earlier run's checkpoints, best model, results, summaries and predictions "
                      "(only what the tool wrote; a failed run leaves them as they were). Without it, training resumes "
                      "from the latest checkpoint.")
    define_distribution_flags(iterations_per_loop=100)
    task.define_flags()


def validate_flags(task):
    """ValueError naming the flag for a combination that cannot run; then the task's own checks."""
    if not FLAGS.output_dir:
        raise ValueError("--output_dir required")
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise ValueError("nothing to do: pass --do_train, --do_eval and/or --do_predict")
    if not FLAGS.init_checkpoint and not (FLAGS.do_train and FLAGS.albert_config):
        raise ValueError("--init_checkpoint required (or, to train from a random start, --albert_config)")
    for name in ("max_seq_length", "eval_batch_size", "predict_batch_size", "save_checkpoints_steps",
                 "keep_checkpoint_max", "train_batch_size", "num_train_steps"):
        value = FLAGS[name].value
        if value is not None and value < 1:
            raise ValueError(f"--{name} must be >= 1, got {value}")
    for name in ("learning_rate", "num_train_epochs"):
        value = FLAGS[name].value
        if value is not None and value <= 0:
            raise ValueError(f"--{name} must be > 0, got {value}")
    if FLAGS.num_warmup_steps is not None and FLAGS.num_warmup_steps < 0:
        raise ValueError(f"--num_warmup_steps must be >= 0, got {FLAGS.num_warmup_steps}")
    if FLAGS.warmup_proportion is not None and not 0 <= FLAGS.warmup_proportion <= 1:
        raise ValueError(f"--warmup_proportion must be in [0, 1], got {FLAGS.warmup_proportion}")
    if FLAGS.spm_model_file and not os.path.isfile(FLAGS.spm_model_file):
        raise FileNotFoundError(f"{FLAGS.spm_model_file}: no such file (--spm_model_file)")
    check_distribution_flags(FLAGS)
    resolve_preprocessing_flags(task)
    task.validate(FLAGS)


def resolve_preprocessing_flags(task):
    """Sets --do_lower_case and --max_seq_length from the starting model's record where the command line
    leaves them out, and refuses contradictions (albert_tf.models.preprocessing_contract)."""
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.model_dir import model_metadata
    from albert_tf.models.preprocessing_contract import resolve_preprocessing

    if FLAGS.init_checkpoint:
        try:
            metadata, source = model_metadata(FLAGS.init_checkpoint), FLAGS.init_checkpoint
        except (FileNotFoundError, ValueError):
            # Unreadable: loading it names the problem, after the flags' own checks have had their say.
            FLAGS.max_seq_length = FLAGS.max_seq_length or task.max_seq_length
            FLAGS.do_lower_case = True if FLAGS.do_lower_case is None else FLAGS.do_lower_case
            return
    else:
        config = AlbertConfig.from_name_or_path(FLAGS.albert_config)
        metadata, source = {"albert_config": config.to_dict()}, f"--albert_config={FLAGS.albert_config}"
    length = FLAGS.max_seq_length
    recorded = metadata.get("max_seq_length")
    if length is None and recorded:
        length = min(task.max_seq_length, recorded)  # the task's length, never beyond what the model was trained at
    preprocessing = resolve_preprocessing(metadata, FLAGS.do_lower_case, length, task.max_seq_length, FLAGS.force,
                                          source)
    for warning in preprocessing.warnings:
        print(f"Warning: {warning}.", flush=True)
    FLAGS.do_lower_case, FLAGS.max_seq_length = preprocessing.lower_case, preprocessing.max_seq_length


def training_schedule(recipe, num_rows, flags=FLAGS):
    """(learning rate, batch size, steps, warmup steps) from the flags, the task's recipe filling what is unset."""
    learning_rate = flags.learning_rate or recipe.learning_rate
    batch_size = flags.train_batch_size or recipe.train_batch_size
    if flags.num_train_steps:
        steps = flags.num_train_steps
    elif flags.num_train_epochs or not recipe.num_train_steps:
        steps = max(1, math.ceil(num_rows * (flags.num_train_epochs or recipe.num_train_epochs) / batch_size))
    else:
        steps = recipe.num_train_steps
    if flags.num_warmup_steps is not None:
        warmup = min(flags.num_warmup_steps, steps)
    elif flags.warmup_proportion is not None or recipe.num_warmup_steps is None:
        proportion = flags.warmup_proportion if flags.warmup_proportion is not None else recipe.warmup_proportion
        warmup = int(steps * proportion)
    elif steps == recipe.num_train_steps:
        warmup = recipe.num_warmup_steps
    else:
        # Fewer (or more) steps than the recipe's keep its warmup share (MRPC: 200 of 800, a quarter), so
        # a shortened run still reaches the peak rate instead of warming up to its last step.
        warmup = int(steps * recipe.num_warmup_steps / recipe.num_train_steps)
    return learning_rate, batch_size, steps, warmup


def starting_model(task, flags=FLAGS):
    """The model to fine-tune: a model already fine-tuned for this task as it is, else the encoder of
    flags.init_checkpoint (or a random one of flags.albert_config) under a fresh head of the task."""
    from albert_tf.models.model_dir import exported_encoder_dir, load_model, read_metadata, resolve_checkpoint
    from albert_tf.training.finetuning import starting_encoder

    init = flags.init_checkpoint
    if init and not exported_encoder_dir(init):
        metadata = read_metadata(resolve_checkpoint(init)[0])
        if metadata["model"] == task.model_kind and metadata.get("task_name") == task.task_name(flags):
            print(f"Continuing to fine-tune the {task.model_kind} of {init} with its head.", flush=True)
            return load_model(init)[0]
    return task.build_model(starting_encoder(init, flags.albert_config, flags.seed), flags)


def check_fits(model, tokenizer):
    """ValueError when the vocabulary or --max_seq_length do not fit the model."""
    config = model.albert_config
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(f"{tokenizer.source}: {tokenizer.vocab_size} pieces, more than the model's vocab_size "
                         f"{config.vocab_size}; pass the SentencePiece model the checkpoint was trained with")
    if FLAGS.max_seq_length > config.max_position_embeddings:
        raise ValueError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the model's max_position_embeddings "
                         f"({config.max_position_embeddings})")


def check_batch_fits(batch_size, strategy):
    """ValueError naming the flags when the global batch does not split over replicas and micro-batches."""
    parts = strategy.num_replicas_in_sync * FLAGS.gradient_accumulation_steps
    if batch_size % parts:
        raise ValueError(f"--train_batch_size={batch_size} must be divisible by the number of replicas "
                         f"({strategy.num_replicas_in_sync}) times --gradient_accumulation_steps "
                         f"({FLAGS.gradient_accumulation_steps})")


def check_vocabulary(spm):
    """ValueError when --spm_model_file is not, by content, the SentencePiece model the starting model carries
    (when it carries one): its ids would index other rows of the embedding table."""
    from albert_tf.models.model_dir import find_spm_model
    from albert_tf.file_utils import file_sha256

    if not (FLAGS.spm_model_file and FLAGS.init_checkpoint):
        return
    try:
        stored = find_spm_model(FLAGS.init_checkpoint)
    except FileNotFoundError:  # a converted checkpoint without its vocabulary: the given one is all there is
        return
    if file_sha256(stored) != file_sha256(spm):
        raise ValueError(f"--spm_model_file={FLAGS.spm_model_file} is not the SentencePiece model of --init_checkpoint "
                         f"({stored}): its ids would index other rows of the model's embeddings. Leave "
                         "--spm_model_file unset to use the checkpoint's own")


def arrays_sha256(arrays):
    """One digest of a task's training arrays (names, dtypes, shapes, values): the training data by content,
    as tokenized (so casing, sequence length and the task's windowing count too)."""
    import hashlib

    digest = hashlib.sha256()
    for name in sorted(arrays):
        value = arrays[name]
        digest.update(f"{name}:{value.dtype.str}:{value.shape}".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


def output_names(task):
    """The entries a run of the tool may write in --output_dir."""
    from albert_tf.training.run_directory import RUN_CONFIG_FILE

    from albert_tf.training.finetuning import SUMMARY_SUBDIRS

    return [CHECKPOINT_SUBDIR, BEST_SUBDIR, EVAL_RESULTS_FILE, *SUMMARY_SUBDIRS, RUN_CONFIG_FILE,
            *task.output_files(FLAGS)]


def main(task, argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])}")
    validate_flags(task)
    import keras

    from albert_tf.file_utils import exclusive_directory_lock
    from albert_tf.training.distribution_flags import PRECISIONS, strategy_from_flags
    from albert_tf.training.strategies import is_chief

    # First: a multi-worker strategy must exist before any other TensorFlow work.
    strategy = strategy_from_flags(FLAGS)
    keras.mixed_precision.set_global_policy(PRECISIONS[FLAGS.mixed_precision])
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    if not is_chief(strategy):
        return _run(task, FLAGS.output_dir, strategy, chief=False)
    # One run per output directory: two would interleave their checkpoints and replace each other's best/.
    with exclusive_directory_lock(FLAGS.output_dir, task.tool):
        return _run(task, FLAGS.output_dir, strategy)


def _worker_outputs(output_dir):
    """A worker that is not the chief computes what the chief does (the steps and evaluations are
    collective) and writes it into a directory of its own, removed at the end."""
    import contextlib
    import shutil
    import tempfile

    @contextlib.contextmanager
    def scratch():
        directory = tempfile.mkdtemp(prefix="albert_tf_worker_")
        try:
            yield directory
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    return scratch()


def _run(task, output_dir, strategy, chief=True):
    from albert_tf.models.model_dir import checkpoints_newest_first, find_spm_model
    from albert_tf.file_utils import file_sha256, write_json_atomically
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.training import TrainingDivergedError
    from albert_tf.training.finetuning import FinetuningSettings, finetune, model_for_evaluation, report_best
    from albert_tf.training.run_directory import (RUN_CONFIG_FILE, foreign_outputs, next_record, read_run_config,
                                                  resume_conflicts, run_outputs)
    from albert_tf.training.training_loop import PREEMPTED_EXIT_CODE

    # Everything is read and checked before anything in output_dir changes.
    spm = find_spm_model(FLAGS.init_checkpoint, FLAGS.spm_model_file)
    check_vocabulary(spm)
    tokenizer = AlbertTokenizer(spm, lower_case=FLAGS.do_lower_case)
    eval_data = task.read_eval(tokenizer, FLAGS) if FLAGS.do_eval else None
    record = read_run_config(output_dir)
    names = output_names(task)
    foreign = foreign_outputs(output_dir, names, record)
    if foreign:
        raise FileExistsError(f"{output_dir} holds {', '.join(foreign)}, which no earlier {task.tool} run wrote there "
                              f"(its {RUN_CONFIG_FILE} lists what it wrote); move them or choose another --output_dir")
    model = train = training = None
    if FLAGS.do_train:
        with strategy.scope():  # the model's variables live on the strategy's devices
            model = starting_model(task)
        check_fits(model, tokenizer)
        train = task.read_train(tokenizer, FLAGS)
        rows = len(next(iter(train.values())))
        learning_rate, batch_size, steps, warmup = training_schedule(task.recipe(FLAGS), rows)
        check_batch_fits(batch_size, strategy)
        training = {"task": task.title(FLAGS), "albert_config": model.albert_config.to_dict(),
                    "train_data_sha256": arrays_sha256(train), "spm_model_sha256": file_sha256(spm),
                    "do_lower_case": FLAGS.do_lower_case, "max_seq_length": FLAGS.max_seq_length,
                    "train_batch_size": batch_size, "learning_rate": learning_rate, "num_train_steps": steps,
                    "num_warmup_steps": warmup, "seed": FLAGS.seed}
        resuming = not FLAGS.overwrite and checkpoints_newest_first(os.path.join(output_dir, CHECKPOINT_SUBDIR))
        conflicts = resume_conflicts(record, training) if resuming and record else []
        if conflicts:
            raise ValueError(f"{output_dir} holds checkpoints of another run: " + "; ".join(conflicts) + ". Use the "
                             "original flags to resume, another --output_dir, or --overwrite to start afresh")

    final_best_dir = os.path.join(output_dir, BEST_SUBDIR)
    summary = []
    outputs = run_outputs(output_dir, FLAGS.overwrite, record) if chief else _worker_outputs(output_dir)
    with outputs as run_dir:
        if chief:
            write_json_atomically(os.path.join(run_dir, RUN_CONFIG_FILE),
                                  next_record(None if FLAGS.overwrite else record, task.tool, names, training))
        best_dir = os.path.join(run_dir, BEST_SUBDIR)
        best_metric = task.best_metric(FLAGS)
        if FLAGS.do_train:
            print(f"Fine-tuning on {rows:,} {task.unit.lower()}: {steps} steps of batch {batch_size}, lr "
                  f"{learning_rate:g}, {warmup} warmup steps.", flush=True)
            settings = FinetuningSettings(
                num_train_steps=steps, train_batch_size=batch_size, learning_rate=learning_rate,
                num_warmup_steps=warmup, save_checkpoints_steps=FLAGS.save_checkpoints_steps,
                keep_checkpoint_max=FLAGS.keep_checkpoint_max, seed=FLAGS.seed,
                gradient_accumulation_steps=FLAGS.gradient_accumulation_steps, jit_compile=FLAGS.jit_compile,
                iterations_per_loop=FLAGS.iterations_per_loop, max_seconds_per_loop=FLAGS.max_seconds_per_loop)
            # A worker that is not the chief resumes from the chief's checkpoints (a shared file system).
            restore_dir = os.path.join(output_dir, CHECKPOINT_SUBDIR) if not (chief or FLAGS.overwrite) else None
            try:
                result = finetune(
                    model, train, task.example_losses, settings, os.path.join(run_dir, CHECKPOINT_SUBDIR),
                    task.model_kind,
                    metadata={**task.metadata(FLAGS), "train_steps": steps, "lower_case": FLAGS.do_lower_case},
                    evaluate=(lambda m: task.evaluate(m, eval_data, FLAGS)) if FLAGS.do_eval else None,
                    best_metric=best_metric if FLAGS.do_eval else None, best_dir=best_dir, spm_model_file=spm,
                    variables=task.trainable_variables(model), summary_dir=run_dir, strategy=strategy, chief=chief,
                    restore_dir=restore_dir)
            except TrainingDivergedError as error:
                raise _divergence_advice(error, output_dir) from None
            if result["status"] == PREEMPTED_EXIT_CODE:
                resume = " without --overwrite" if FLAGS.overwrite else ""
                print(f"{task.title(FLAGS)}: stopped by SIGTERM after step {result['step']}; rerun the same command"
                      f"{resume} to resume from its checkpoint in {os.path.join(output_dir, CHECKPOINT_SUBDIR)}.",
                      flush=True)
                return PREEMPTED_EXIT_CODE
            report_best(result, best_metric, final_best_dir)
            last_model = os.path.join(output_dir, CHECKPOINT_SUBDIR)
            summary.append(f"fine-tuned for {steps} steps (the last model: {last_model})")
        with strategy.scope():  # evaluation and prediction spread over the replicas too
            if FLAGS.do_eval or FLAGS.do_predict:
                model = model_for_evaluation(best_dir, model, FLAGS.init_checkpoint, task.model_kind,
                                             task_name=task.task_name(FLAGS))
                check_fits(model, tokenizer)
            evaluation = task.evaluate(model, eval_data, FLAGS) if FLAGS.do_eval else None
            prediction = None
            if FLAGS.do_predict:
                prediction, written = task.predict(model, tokenizer, FLAGS, run_dir)
        if evaluation is not None:
            print("dev: " + task.summary(evaluation), flush=True)
        if FLAGS.do_predict:
            summary.append("predictions in " + ", ".join(os.path.join(output_dir, os.path.relpath(path, run_dir))
                                                         for path in written))
            if prediction is not None:
                summary.append(task.summary(prediction))
        results = task.eval_results(evaluation, prediction)
        if results is not None and chief:
            write_json_atomically(os.path.join(run_dir, EVAL_RESULTS_FILE), results)
            summary.append(f"metrics in {os.path.join(output_dir, EVAL_RESULTS_FILE)}")
        has_best = os.path.isdir(best_dir)
    if has_best:
        summary.append(f"the best model in {final_best_dir}")
    print(f"{task.title(FLAGS)}: " + "; ".join(summary) + ".", flush=True)
    return 0


def _divergence_advice(error, output_dir):
    """The divergence error with what to do next; a run in place records the stop, so that the rerun it
    advises may change the schedule."""
    from albert_tf.training import TrainingDivergedError
    from albert_tf.training.divergence import rerun_advice
    from albert_tf.training.run_directory import record_divergence

    if FLAGS.overwrite:
        advice = (f"The earlier run in {output_dir} is as it was (--overwrite replaces it only when a run finishes); "
                  f"{rerun_advice(None).split('; ', 1)[1]}")
    else:
        record_divergence(output_dir, str(error))
        advice = rerun_advice(error.last_good)
    return TrainingDivergedError(f"{error}. {advice}.", last_good=None if FLAGS.overwrite else error.last_good)


def run(task):
    """Runs the tool of `task` (its console script's entry point)."""
    cli.run(lambda argv: main(task, argv), lambda: define_flags(task), flag_modules=[__name__, type(task).__module__])
