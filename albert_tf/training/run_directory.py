"""A fine-tuning output directory: its record of the run, what may not change on resume, and --overwrite.

OUTPUT_DIR/run_config.json records

  - `tool` and `outputs`: the entries the tool writes in OUTPUT_DIR (checkpoints/,
    best/, eval_results.json, the summaries, the predictions, run_config.json).
    `--overwrite` replaces those and nothing else: a user's own files beside
    them stay, and a name the tool would write that it did not write before is
    refused instead of replaced.
  - `training`: the settings a resumed run must share with the run that wrote
    the checkpoints (task, training data by content, vocabulary by content,
    casing, sequence length, batch, learning rate, steps, warmup, seed, starting
    model). A rerun that differs is refused, naming each setting.
  - `diverged`: where a run stopped on its divergence check. The next run may
    then change --learning_rate and --num_warmup_steps (the point of rerunning),
    resumes from the last good checkpoint with the new schedule, and records the
    change in `schedule_changes`.

With --overwrite a run writes into a staging directory inside OUTPUT_DIR and
the earlier run's outputs are replaced only when the new run has finished: a
failure (bad data found late, a divergence, a full disk) or a kill leaves the
earlier run as it was. A killed run's staging directory is removed by the next
run in OUTPUT_DIR, and a run killed while it swapped its outputs in has its
swap finished by the next one.
"""

import contextlib
import json
import os
import shutil

from albert_tf.file_utils import (RUN_CONFIG_FILE, RUN_STAGING_PREFIXES, make_owned_staging, remove_stale_staging,
                                  staging_owner_alive, write_json_atomically)
from albert_tf.settings import SettingError

STAGING_PREFIX, _RETIRED_PREFIX = RUN_STAGING_PREFIXES
# Settings that --learning_rate's purpose after a divergence stop allows to change.
SCHEDULE_SETTINGS = ("learning_rate", "num_warmup_steps")


def read_run_config(output_dir):
    """The directory's run_config.json as a dict, or None when there is none."""
    path = os.path.join(output_dir, RUN_CONFIG_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            record = json.load(f)
    except ValueError as error:
        raise SettingError(f"{path}: not valid JSON ({error}); it records what was written in {output_dir} and "
                           "how: restore it, or choose another <output_dir>") from None
    if not isinstance(record, dict):
        raise SettingError(f"{path}: not a run record; restore it, or choose another <output_dir>")
    outputs = record.get("outputs", [])
    if not isinstance(outputs, list) or not all(isinstance(name, str) for name in outputs):
        raise SettingError(f"{path}: its outputs are not a list of names; restore it, or choose another <output_dir>")
    # --overwrite moves what `outputs` names: only entries of this very directory, never a path leading out of it.
    outside = [name for name in outputs if name in ("", ".", "..") or os.sep in name or "/" in name
               or (os.altsep and os.altsep in name)]
    if outside:
        raise SettingError(f"{path}: lists {outside[0]!r} among the run's outputs, which is not an entry of "
                           f"{output_dir}; restore the record, or choose another <output_dir>")
    return record


def resume_conflicts(previous, current):
    """The settings of `current` (a `training` record) that differ from `previous`'s, each in words that
    name the setting as `<name>` (albert_tf.settings.SettingError); after a divergence stop the schedule
    settings may differ."""
    exempt = SCHEDULE_SETTINGS if previous.get("diverged") else ()
    before = previous.get("training") or {}
    return [_describe_change(name, before[name], current[name]) for name in current
            if name in before and before[name] != current[name] and name not in exempt]


def _describe_change(name, before, now):
    if name == "task":
        return f"the task ({now}; the checkpoints were made for {before})"
    if name == "train_data_sha256":
        return "the training data (its tokenized content differs)"
    if name == "spm_model_sha256":
        return "the SentencePiece model (its content differs)"
    if name == "vocab_file_sha256":
        return "the WordPiece vocabulary (its content differs)"
    if name == "albert_config":
        fields = sorted(key for key in set(before) | set(now) if before.get(key) != now.get(key))
        return "the starting model's config (" + ", ".join(f"{key} {now.get(key)}, was {before.get(key)}"
                                                          for key in fields) + ")"
    return f"<{name}>={now} (the checkpoints were made with {before})"


def foreign_outputs(output_dir, names, record):
    """Of the entries a run will write (`names`), those already in `output_dir` that no earlier run of the
    tool wrote (its record's `outputs`)."""
    owned = set((record or {}).get("outputs", ()))
    return [name for name in names if os.path.lexists(os.path.join(output_dir, name)) and name not in owned]


def next_record(previous, tool, names, training, config=None):
    """The run_config.json of a run writing `names`: its config (`FinetuningConfig.to_json()`, as given)
    and its resolved `training` settings (None: this run does not train, and the earlier training record
    stays)."""
    record = dict(previous or {})
    record["tool"] = tool
    if config is not None:
        record["config"] = config
    record["outputs"] = sorted(set(record.get("outputs", ())) | set(names))
    if training is not None:
        before = record.get("training") or {}
        if record.pop("diverged", None):
            changes = {name: {"from": before[name], "to": training[name]} for name in SCHEDULE_SETTINGS
                       if name in before and before[name] != training[name]}
            if changes:
                record["schedule_changes"] = record.get("schedule_changes", []) + [changes]
        record["training"] = training
    return record


def record_divergence(output_dir, message):
    """Notes in run_config.json that the run stopped on its divergence check (`message`: where and why)."""
    record = read_run_config(output_dir) or {}
    record["diverged"] = message
    write_json_atomically(os.path.join(output_dir, RUN_CONFIG_FILE), record)


# In a finished staging directory, the swap it is about to make: the earlier outputs it sets aside ("retire"),
# the entries it brings in ("bring") and the directory the earlier ones wait in ("retired"); with it a swap that
# a kill cut halfway is finished by the next run. It and the staging's "owner" are no entries of the output.
_PLAN_FILE = "swap_plan.json"
_STAGING_RECORDS = ("owner", _PLAN_FILE)


@contextlib.contextmanager
def run_outputs(output_dir, overwrite, previous, replaces_run=True):
    """Yields the directory a run writes into: `output_dir` itself, or with `overwrite` a staging directory
    whose entries replace the earlier run's outputs (the `outputs` of its record `previous`, and nothing
    else) once the block has finished. `replaces_run` False (a run that evaluates or predicts without
    training): only the earlier outputs it wrote anew are replaced; the model it evaluated stays.

    The swap is a rename per entry; a run killed in the middle of it leaves its plan in the staging directory,
    and the next run in `output_dir` finishes it first (`finish_interrupted_swap`): never half the earlier
    run's outputs and half the new one's."""
    finish_interrupted_swap(output_dir)
    remove_stale_staging(output_dir, STAGING_PREFIX)
    remove_stale_staging(output_dir, _RETIRED_PREFIX)
    if not overwrite:
        yield output_dir
        return
    staging = make_owned_staging(output_dir, STAGING_PREFIX)
    try:
        yield staging
        written = sorted(name for name in os.listdir(staging) if name not in _STAGING_RECORDS)
        retired = make_owned_staging(output_dir, _RETIRED_PREFIX)
        plan = {"retire": [name for name in (previous or {}).get("outputs", ()) if replaces_run or name in written],
                "bring": written, "retired": os.path.basename(retired)}
        write_json_atomically(os.path.join(staging, _PLAN_FILE), plan)
        _swap(output_dir, staging, plan)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _swap(output_dir, staging, plan):
    """Sets the earlier outputs of `plan` aside and brings the staged ones in; done again after a kill, it does
    what is left (an entry still staged is not in yet: what `output_dir` holds under its name is the earlier one)."""
    retired = os.path.join(output_dir, plan["retired"])
    os.makedirs(retired, exist_ok=True)
    for name in plan["retire"]:
        if os.path.lexists(os.path.join(output_dir, name)) and (
                name not in plan["bring"] or os.path.lexists(os.path.join(staging, name))):
            os.replace(os.path.join(output_dir, name), os.path.join(retired, name))
    for name in plan["bring"]:
        if os.path.lexists(os.path.join(staging, name)):
            os.replace(os.path.join(staging, name), os.path.join(output_dir, name))
    shutil.rmtree(retired, ignore_errors=True)


def finish_interrupted_swap(output_dir):
    """Finishes the swap of a killed --overwrite run that had begun to replace the earlier outputs (its staging
    directory holds its plan, and its owner is gone); returns the staging directories it finished."""
    finished = []
    try:
        names = sorted(os.listdir(output_dir))
    except FileNotFoundError:
        return finished
    for name in names:
        staging = os.path.join(output_dir, name)
        plan_file = os.path.join(staging, _PLAN_FILE)
        if not name.startswith(STAGING_PREFIX) or not os.path.isfile(plan_file):
            continue
        if staging_owner_alive(staging):
            continue
        with open(plan_file) as f:
            plan = json.load(f)
        _swap(output_dir, staging, plan)
        shutil.rmtree(staging, ignore_errors=True)
        finished.append(staging)
    return finished
