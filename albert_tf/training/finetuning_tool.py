"""The one front end of fine-tuning: run_classifier (GLUE), run_squad and run_race are this, given a task.

    run_finetuning(GlueTask(), FinetuningConfig(output_dir="mrpc", init_checkpoint="ckpt/albert_base",
                                                do_train=True, do_eval=True,
                                                task=GlueConfig(task_name="mrpc", data_dir="glue/MRPC")))

The tools map their flags to the `FinetuningConfig` (`finetuning_flags`); the
task (`albert_tf.tasks.finetuning_task.FinetuningTask`) supplies its settings'
checks, reader, head, loss, metrics and predictions. This module owns the rest,
the same for every task:

- Settings with one name and one meaning across the tools (run_pretraining's
  names). A setting left None takes the task's recipe.
- The starting model: init_checkpoint (any albert_tf checkpoint, a converted
  one, or an `albert_tf.export` directory) under a fresh task head; a model
  already fine-tuned for this task keeps its head and trains on; without
  init_checkpoint, a random start from albert_config.
- The vocabulary: spm_model_file (or vocab_file, a WordPiece vocab.txt), else the one stored with the checkpoint.
- Steps: num_train_steps, else num_train_epochs over the training rows (what
  the task counts as an epoch: SQuAD's questions, as the original), else
  the recipe's epochs (a recipe's step count, set for the task's real training
  set, scaled to these rows and this batch); warmup: num_warmup_steps, else
  warmup_proportion, else the recipe's share of the steps. A plan of more than
  MANY_EPOCHS epochs that num_train_epochs did not ask for is said before it starts.
- The output layout:
    OUTPUT_DIR/checkpoints/ckpt-N   resumable training checkpoints; the directory
                                    is an albert_tf model directory (the last model)
    OUTPUT_DIR/best/                with do_eval: the best evaluated checkpoint
    OUTPUT_DIR/eval_results.json    the metrics of do_eval / do_predict
    OUTPUT_DIR/train, OUTPUT_DIR/eval   TensorBoard summaries
    OUTPUT_DIR/...                  the task's predictions (do_predict)
    OUTPUT_DIR/run_config.json      what the tool wrote here and the settings a resumed run must share
                                    (albert_tf.training.run_directory)
  One run at a time per directory (an flock). Everything (data, vocabulary,
  starting model, settings) is read and checked before anything there changes.
  Rerunning resumes from the latest checkpoint, refusing changed settings;
  overwrite starts afresh and replaces the earlier run only when it finishes.
- Divergence: a NaN or exploding loss stops the run with status 2, saving
  nothing, and names the last good checkpoint (albert_tf.training.divergence).
"""

import dataclasses
import math
import os

from albert_tf.settings import SettingError

CHECKPOINT_SUBDIR = "checkpoints"
BEST_SUBDIR = "best"
EVAL_RESULTS_FILE = "eval_results.json"
# More passes over the training data than fine-tuning takes (the recipes make 2 to 25): a plan beyond
# this is most likely a step count meant for a larger data set, and is said before it starts.
MANY_EPOCHS = 50


def checked_config(task, config):
    """`config` checked (SettingError naming the setting), with the casing and length the starting model
    records filled in; then the task's own checks, and its settings filled in from that record. An output_dir
    that another albert_tf tool wrote (an export, a conversion, a data set, another tool's run) is refused first."""
    from albert_tf.file_utils import refuse_another_tools_directory, run_kind

    config.check()
    refuse_another_tools_directory(config.output_dir, task.tool, (run_kind(task.tool),))
    if config.keep_checkpoint_max is None:
        config = dataclasses.replace(config, keep_checkpoint_max=task.keep_checkpoint_max)
    config = resolve_preprocessing_settings(task, config)
    task.validate(config)
    return task.resolve(config)


def resolve_preprocessing_settings(task, config):
    """`config` with do_lower_case, keep_accents, rewrite_quotes and max_seq_length from the starting model's
    record where it leaves them out; contradictions refused (albert_tf.models.preprocessing_contract). A random
    start records nothing: the quotes follow the original's rule unless rewrite_quotes says otherwise."""
    from albert_tf.albert_config import AlbertConfig
    from albert_tf.models.model_dir_format import model_metadata
    from albert_tf.models.preprocessing_contract import resolve_preprocessing

    if config.init_checkpoint:
        try:
            metadata, source = model_metadata(config.init_checkpoint), config.init_checkpoint
        except (FileNotFoundError, ValueError):
            # Unreadable: loading it names the problem, after the settings' own checks have had their say.
            return dataclasses.replace(config, max_seq_length=config.max_seq_length or task.max_seq_length,
                                       do_lower_case=True if config.do_lower_case is None else config.do_lower_case,
                                       keep_accents=bool(config.keep_accents),
                                       rewrite_quotes=bool(config.rewrite_quotes))
    else:
        model_config = AlbertConfig.from_name_or_path(config.albert_config)
        metadata, source = {"albert_config": model_config.to_dict()}, f"albert_config={config.albert_config}"
        metadata.update(vocabulary_preprocessing(config))
        source, record = f"the vocabulary {config.spm_model_file or config.vocab_file}", "its pieces say"
    length = config.max_seq_length
    recorded = metadata.get("max_seq_length")
    if length is None and recorded:
        length = min(task.max_seq_length, recorded)  # the task's length, never beyond what the model was trained at
    # A random start has no record to take the quote rule from: the setting, or the original's rule, silently.
    rewrite_quotes = config.rewrite_quotes if config.init_checkpoint else bool(config.rewrite_quotes)
    preprocessing = resolve_preprocessing(metadata, config.do_lower_case, length, task.max_seq_length, config.force,
                                          source, keep_accents=config.keep_accents, rewrite_quotes=rewrite_quotes,
                                          **({} if config.init_checkpoint else {"record": record}))
    for warning in preprocessing.warnings:
        print(f"Warning: {warning}.", flush=True)
    return dataclasses.replace(config, do_lower_case=preprocessing.lower_case,
                               keep_accents=preprocessing.keep_accents, rewrite_quotes=preprocessing.rewrite_quotes,
                               max_seq_length=preprocessing.max_seq_length)


def vocabulary_preprocessing(config):
    """What a random start's vocabulary (spm_model_file or vocab_file) says of the text it was trained on, as
    albert_tf.json keys: its casing and whether it kept accents, read from its pieces; a setting where the pieces
    say nothing (no letter with case; no accented piece, which text without accents gives too) is taken as it is."""
    from albert_tf.models.model_dir_format import find_vocabulary
    from albert_tf.text.albert_tokenizer import vocabulary_casing, vocabulary_has_accents

    try:
        tokenizer = find_vocabulary(None, config.spm_model_file, config.vocab_file).tokenizer()
    except (OSError, TypeError, ValueError):
        return {}  # no readable vocabulary: loading it names the problem
    casing = vocabulary_casing(tokenizer)
    recorded = {"keep_accents": True if vocabulary_has_accents(tokenizer) else bool(config.keep_accents)}
    if casing != "caseless":
        recorded["lower_case"] = casing == "lowercase"
    return recorded


def training_schedule(recipe, num_rows, config, epoch_steps=None):
    """(learning rate, batch size, steps, warmup steps) from the config, the task's recipe filling what is unset.

    `epoch_steps(num_rows, epochs, batch_size)`: the steps of a number of epochs (the task's
    `FinetuningTask.epoch_steps`); default: the rows' share of the batches, rounded up."""
    learning_rate = config.learning_rate or recipe.learning_rate
    batch_size = config.train_batch_size or recipe.train_batch_size
    if config.num_train_steps:
        steps = config.num_train_steps
    elif config.num_train_epochs or not recipe.num_train_steps:
        epochs = config.num_train_epochs or recipe.num_train_epochs
        steps = (epoch_steps(num_rows, epochs, batch_size) if epoch_steps else
                 max(1, math.ceil(num_rows * epochs / batch_size)))
    else:
        # The epochs the recipe's steps make of the task's real training set, over these rows at this batch;
        # in integers, so that the real data at the recipe's batch gets exactly the recipe's steps.
        examples = recipe.num_train_steps * recipe.train_batch_size * num_rows
        steps = max(1, -(-examples // (recipe.train_rows * batch_size)))
    if config.num_warmup_steps is not None:
        warmup = min(config.num_warmup_steps, steps)
    elif config.warmup_proportion is not None or recipe.num_warmup_steps is None:
        proportion = config.warmup_proportion if config.warmup_proportion is not None else recipe.warmup_proportion
        warmup = int(steps * proportion)
    elif steps == recipe.num_train_steps:
        warmup = recipe.num_warmup_steps
    else:
        # Fewer (or more) steps than the recipe's keep its warmup share (MRPC: 200 of 800, a quarter), so
        # a shortened run still reaches the peak rate instead of warming up to its last step.
        warmup = int(steps * recipe.num_warmup_steps / recipe.num_train_steps)
    return learning_rate, batch_size, steps, warmup


# Models this narrow or narrower learn poorly under the recipes, whose learning rates suit albert_base (H=768):
# albert_tiny on a user's labels reached 0.62 accuracy at the recipe's rate and 0.91 at 3e-4 over 10 epochs.
SMALL_MODEL_HIDDEN_SIZE = 384


def small_model_note(albert_config, config):
    """The line that says the recipe's learning rate suits larger models, for a small model trained without a
    learning rate of the user's own; else None."""
    if config.learning_rate or albert_config.hidden_size > SMALL_MODEL_HIDDEN_SIZE:
        return None
    return (f"Note: the recipe's learning rate is tuned for albert_base (hidden size 768); a model this small "
            f"(hidden size {albert_config.hidden_size}) learns faster at about --learning_rate=3e-4 over "
            "--num_train_epochs=10.")


def many_epochs_warning(num_rows, batch_size, steps, config, unit):
    """The line that says a plan of more than MANY_EPOCHS passes over the training rows, or None (also when
    num_train_epochs asked for them)."""
    epochs = steps * batch_size / num_rows
    if epochs <= MANY_EPOCHS or (config.num_train_epochs and not config.num_train_steps):
        return None
    return (f"Warning: {steps:,} steps of batch {batch_size} make {_number(epochs)} epochs of the {num_rows:,} "
            f"{unit.lower()}; --num_train_epochs (or fewer --num_train_steps) trains less.")


def _number(value):
    """3 significant digits, without an exponent: 0.125, 10.1, 3,350."""
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def starting_model(task, config):
    """The model to fine-tune: a model already fine-tuned for this task as it is, else the encoder of
    config.init_checkpoint (or a random one of config.albert_config) under a fresh head of the task."""
    from albert_tf.models.model_dir_format import exported_encoder_dir, read_metadata, resolve_checkpoint
    from albert_tf.models.model_io import load_model
    from albert_tf.training.finetuning import starting_encoder

    init = config.init_checkpoint
    if init and not exported_encoder_dir(init):
        metadata = read_metadata(resolve_checkpoint(init)[0])
        if task.continues(metadata, config):
            print(f"Continuing to fine-tune the {task.kind(config)} of {init} with its head.", flush=True)
            return load_model(init)[0]
    return task.build_model(starting_encoder(init, config.albert_config, config.seed), config)


def check_fits(model, tokenizer, config):
    """ValueError when the vocabulary or max_seq_length do not fit the model."""
    model_config = model.albert_config
    if tokenizer.vocab_size > model_config.vocab_size:
        raise ValueError(f"{tokenizer.source}: {tokenizer.vocab_size} pieces, more than the model's vocab_size "
                         f"{model_config.vocab_size}; pass the vocabulary the checkpoint was trained with")
    if config.max_seq_length > model_config.max_position_embeddings:
        raise SettingError(f"<max_seq_length>={config.max_seq_length} exceeds the model's max_position_embeddings "
                           f"({model_config.max_position_embeddings})")


def check_batch_fits(batch_size, strategy, config):
    """SettingError when the global batch does not split over replicas and micro-batches."""
    parts = strategy.num_replicas_in_sync * config.gradient_accumulation_steps
    if batch_size % parts:
        raise SettingError(f"<train_batch_size>={batch_size} must be divisible by the number of replicas "
                           f"({strategy.num_replicas_in_sync}) times <gradient_accumulation_steps> "
                           f"({config.gradient_accumulation_steps})")


def check_vocabulary(vocabulary, config):
    """SettingError when spm_model_file (or vocab_file) is not, by kind and content, the vocabulary the starting
    model carries (when it carries one): its ids would index other rows of the embedding table."""
    from albert_tf.models.inference_model import check_same_vocabulary

    if (config.spm_model_file or config.vocab_file) and config.init_checkpoint:
        check_same_vocabulary(config.init_checkpoint, vocabulary, model_setting="init_checkpoint")


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


def output_names(task, config):
    """The entries a run of the tool may write in --output_dir."""
    from albert_tf.training.run_directory import RUN_CONFIG_FILE

    from albert_tf.training.finetuning import SUMMARY_SUBDIRS

    return [CHECKPOINT_SUBDIR, BEST_SUBDIR, EVAL_RESULTS_FILE, *SUMMARY_SUBDIRS, RUN_CONFIG_FILE,
            *task.output_files(config)]


def run_finetuning(task, config):
    """Runs the fine-tuning `config` describes for `task`; returns the tool's exit status (0, or 143 after
    SIGTERM and 130 after Ctrl-C, with a checkpoint saved). Raises SettingError naming a setting that cannot run."""
    import keras

    from albert_tf.file_utils import exclusive_directory_lock
    from albert_tf.training.distribution_config import PRECISIONS
    from albert_tf.training.distribution_flags import create_strategy_for
    from albert_tf.training.strategies import is_chief

    config = checked_config(task, config)
    # First: a multi-worker strategy must exist before any other TensorFlow work.
    strategy = create_strategy_for(config)
    keras.mixed_precision.set_global_policy(PRECISIONS[config.mixed_precision])
    os.makedirs(config.output_dir, exist_ok=True)
    if not is_chief(strategy):
        return _run(task, config, strategy, chief=False)
    # One run per output directory: two would interleave their checkpoints and replace each other's best/.
    with exclusive_directory_lock(config.output_dir, task.tool):
        return _run(task, config, strategy)


def _worker_outputs():
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


def _run(task, config, strategy, chief=True):
    from albert_tf.data.pretraining_data_job import VOCABULARY_HASH_KEYS
    from albert_tf.models.model_dir_format import checkpoints_newest_first, find_vocabulary
    from albert_tf.file_utils import recover_replacement, write_json_atomically
    from albert_tf.training import TrainingDivergedError
    from albert_tf.networks.memory_estimate import check_training_fits, weight_bytes
    from albert_tf.training.finetuning import finetune, model_for_evaluation, report_best
    from albert_tf.training.run_directory import (RUN_CONFIG_FILE, foreign_outputs, next_record, read_run_config,
                                                  resume_conflicts, run_outputs)

    output_dir = config.output_dir
    # Everything is read and checked before anything in output_dir changes.
    vocabulary = find_vocabulary(config.init_checkpoint, config.spm_model_file, config.vocab_file)
    check_vocabulary(vocabulary, config)
    task.check_vocabulary(vocabulary)
    tokenizer = vocabulary.tokenizer(config.do_lower_case, config.keep_accents, config.rewrite_quotes)
    eval_data = task.read_eval(tokenizer, config) if config.do_eval else None
    # The chief checks the directory; the other workers write nothing there (and might read it mid-write).
    record = read_run_config(output_dir) if chief else None
    names = output_names(task, config)
    foreign = foreign_outputs(output_dir, names, record) if chief else []
    if foreign:
        raise SettingError(f"{output_dir} holds {', '.join(foreign)}, which no earlier {task.tool} run wrote there "
                           f"(its {RUN_CONFIG_FILE} lists what it wrote); move them or choose another <output_dir>")
    model = train = training = None
    if config.do_train:
        with strategy.scope():  # the model's variables live on the strategy's devices
            model = starting_model(task, config)
        check_fits(model, tokenizer, config)
        train = task.read_train(tokenizer, config)
        rows, rows_unit = task.epoch_size(train, config)
        learning_rate, batch_size, steps, warmup = training_schedule(task.recipe(config), rows, config,
                                                                     task.epoch_steps)
        check_batch_fits(batch_size, strategy, config)
        check_training_fits(model.albert_config, strategy, batch_size // config.gradient_accumulation_steps,
                            config.max_seq_length, already_allocated=weight_bytes(model.albert_config))
        training = {"task": task.title(config), "albert_config": model.albert_config.to_dict(),
                    "train_data_sha256": arrays_sha256(train), VOCABULARY_HASH_KEYS[vocabulary.kind]: vocabulary.sha256,
                    "do_lower_case": config.do_lower_case, "keep_accents": config.keep_accents,
                    "rewrite_quotes": config.rewrite_quotes, "max_seq_length": config.max_seq_length,
                    "train_batch_size": batch_size, "learning_rate": learning_rate, "num_train_steps": steps,
                    "num_warmup_steps": warmup, "seed": config.seed, "mixed_precision": config.mixed_precision,
                    "gradient_accumulation_steps": config.gradient_accumulation_steps,
                    **({"dropout": config.task.dropout} if hasattr(config.task, "dropout") else {})}
        resuming = not config.overwrite and checkpoints_newest_first(os.path.join(output_dir, CHECKPOINT_SUBDIR))
        conflicts = resume_conflicts(record, training) if resuming and record else []
        if conflicts:
            raise SettingError(f"{output_dir} holds checkpoints of another run: " + "; ".join(conflicts) + ". Use the "
                               "original settings to resume, another <output_dir>, or <overwrite> to start afresh")

    final_best_dir = os.path.join(output_dir, BEST_SUBDIR)
    if chief:
        # A swap of best/ that a kill cut halfway is undone before anything reads best/ (this run holds the lock).
        recover_replacement(final_best_dir, exclusive=True)
    summary = []
    # Only a run that trains replaces the earlier run; an evaluation with --overwrite replaces what it
    # writes (its results, predictions, record), never the model it evaluated.
    replaces_run = config.overwrite and config.do_train
    outputs = run_outputs(output_dir, config.overwrite, record, replaces_run=config.do_train) if chief else (
        _worker_outputs())
    with outputs as run_dir:
        if chief:
            write_json_atomically(os.path.join(run_dir, RUN_CONFIG_FILE),
                                  next_record(None if replaces_run else record, task.tool, names, training,
                                              config.to_json()))
        best_dir = os.path.join(run_dir, BEST_SUBDIR)
        best_metric = task.best_metric(config)
        if config.do_train:
            for line in (many_epochs_warning(rows, batch_size, steps, config, rows_unit),
                         small_model_note(model.albert_config, config), starting_encoder_note(model, train, config)):
                if line:
                    print(line, flush=True)
            print(f"Fine-tuning on {rows:,} {rows_unit.lower()}: {steps} steps of batch {batch_size} "
                  f"({_number(steps * batch_size / rows)} epochs), lr {learning_rate:g}, {warmup} warmup steps.",
                  flush=True)
            schedule = dataclasses.replace(
                config, num_train_steps=steps, train_batch_size=batch_size, learning_rate=learning_rate,
                num_warmup_steps=warmup,
                save_checkpoints_steps=config.save_checkpoints_steps or task.checkpoint_steps(config, steps))
            # A worker that is not the chief resumes from the chief's checkpoints (a shared file system).
            restore_dir = os.path.join(output_dir, CHECKPOINT_SUBDIR) if not (chief or config.overwrite) else None
            try:
                result = finetune(
                    model, train, task.example_losses, schedule, os.path.join(run_dir, CHECKPOINT_SUBDIR),
                    task.kind(config),
                    metadata={**task.metadata(config), "train_steps": steps, "lower_case": config.do_lower_case,
                              "keep_accents": config.keep_accents, "rewrite_quotes": config.rewrite_quotes,
                              **({"vocabulary": vocabulary.kind} if vocabulary.kind != "sentencepiece" else {})},
                    evaluate=noting_evaluation(task, eval_data, config) if config.do_eval else None,
                    best_metric=best_metric if config.do_eval else None, best_dir=best_dir, vocabulary=vocabulary,
                    variables=task.trainable_variables(model), summary_dir=run_dir, strategy=strategy, chief=chief,
                    restore_dir=restore_dir, objective=task.objective(model))
            except TrainingDivergedError as error:
                raise _divergence_advice(error, config) from None
            if result["status"]:
                resume = " without --overwrite" if config.overwrite else ""
                stopped_by = result["signal"] or "another worker's signal"
                checkpoints = os.path.join(output_dir, CHECKPOINT_SUBDIR)
                print(f"{task.title(config)}: stopped by {stopped_by} after step {result['step']}; rerun the same "
                      f"command{resume} to resume from its checkpoint in {checkpoints}.", flush=True)
                return result["status"]
            report_best(result, best_metric, final_best_dir)
            last_model = os.path.join(output_dir, CHECKPOINT_SUBDIR)
            summary.append(f"fine-tuned for {steps} steps (the last model: {last_model})")
        with strategy.scope():  # evaluation and prediction spread over the replicas too
            if config.do_eval or config.do_predict:
                model = model_for_evaluation(best_dir, model, config.init_checkpoint, task.kind(config),
                                             task_name=task.task_name(config))
                check_fits(model, tokenizer, config)
            evaluation = task.evaluate(model, eval_data, config) if config.do_eval else None
            prediction = None
            if config.do_predict:
                prediction, written = task.predict(model, tokenizer, config, run_dir)
        if evaluation is not None:
            print(f"{evaluated_data(config)}: " + task.summary(evaluation), flush=True)
            note = task.evaluation_note(config)
            if note:
                print(f"Note: {note}.", flush=True)
        # The metrics first: a report or plot that fails (memory, a font) leaves them written.
        results = task.eval_results(evaluation, prediction)
        if results is not None and chief:
            write_json_atomically(os.path.join(run_dir, EVAL_RESULTS_FILE), results)
        if evaluation is not None and chief:
            reports = task.write_evaluation_report(evaluation, config, run_dir)
            if reports:
                summary.append("the evaluation shown in " + ", ".join(
                    os.path.join(output_dir, os.path.relpath(path, run_dir)) for path in reports))
        if config.do_predict:
            summary.append("predictions in " + ", ".join(os.path.join(output_dir, os.path.relpath(path, run_dir))
                                                         for path in written))
            if prediction is not None:
                summary.append(task.summary(prediction))
        if results is not None and chief:
            summary.append(f"metrics in {os.path.join(output_dir, EVAL_RESULTS_FILE)}")
        has_best = os.path.isdir(best_dir)
    if has_best:
        summary.append(f"the best model in {final_best_dir}")
    print(f"{task.title(config)}: " + "; ".join(summary) + ".", flush=True)
    return 0


def noting_evaluation(task, eval_data, config):
    """The evaluation a training run makes at its checkpoints: `task.evaluate`, and the first time the model
    answers every input alike (`FinetuningTask.evaluation_note`), one line that says so."""
    said = set()

    def evaluate(model):
        results = task.evaluate(model, eval_data, config)
        note = task.evaluation_note(config)
        if note and note not in said:
            said.add(note)
            print(f"Note: {note}.", flush=True)
        return results

    return evaluate


def starting_encoder_note(model, train, config):
    """The line that says a pretrained starting checkpoint embeds every training text alike, or None (and None
    for a random start, which is no one's pretraining)."""
    from albert_tf.tasks.prediction_notes import encoder_sample_note

    if not config.init_checkpoint or not hasattr(model, "encoder"):
        return None
    note = encoder_sample_note(model, train, config.init_checkpoint)
    return f"Note: {note}." if note else None


def evaluated_data(config):
    """What a run's evaluation line names as the data it evaluated: the eval_file as the user gave it (a tagger's or
    own-data classifier's: it may well be a test set), else "dev" (the dev split of GLUE and RACE)."""
    eval_file = getattr(config.task, "eval_file", None)
    return eval_file or "dev"


def _divergence_advice(error, config):
    output_dir = config.output_dir
    """The divergence error with what to do next; a run in place records the stop, so that the rerun it
    advises may change the schedule."""
    from albert_tf.training import TrainingDivergedError
    from albert_tf.training.divergence import rerun_advice
    from albert_tf.training.run_directory import record_divergence

    if config.overwrite:
        advice = (f"The earlier run in {output_dir} is as it was (--overwrite replaces it only when a run finishes); "
                  f"{rerun_advice(None).split('; ', 1)[1]}")
    else:
        record_divergence(output_dir, str(error))
        advice = rerun_advice(error.last_good)
    return TrainingDivergedError(f"{error}. {advice}.", last_good=None if config.overwrite else error.last_good)


