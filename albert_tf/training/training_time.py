"""How long a run has trained, across kills and resumes.

A run's elapsed time (training, evaluations and saves; not the time it lay dead between a kill
and its restart) is what its progress lines, held-out history and time budget speak in. Each
checkpoint's elapsed time is recorded in OUTPUT_DIR/training_time.json, {"step": seconds}, so a
resumed run continues the clock from its checkpoint's reading: curves of accuracy against hours
stay true for a run that spans several sessions.
"""

import json
import os

import tensorflow as tf

from albert_tf.file_utils import write_json

TRAINING_TIME_FILE = "training_time.json"


def recorded_seconds(directory, step):
    """The elapsed seconds recorded for the checkpoint of `step` in `directory`, or None (none recorded:
    a run older than this record, or step 0)."""
    path = os.path.join(directory, TRAINING_TIME_FILE)
    if not step or not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        return json.load(f).get(str(step))


def record_seconds(directory, step, seconds, keep_steps):
    """Records `seconds` for the checkpoint of `step`, keeping the entries of `keep_steps` (the checkpoints
    still on disk) beside it."""
    path = os.path.join(directory, TRAINING_TIME_FILE)
    recorded = {}
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            recorded = json.load(f)
    keep_steps = set(keep_steps)
    kept = {key: value for key, value in recorded.items() if int(key) in keep_steps}
    kept[str(step)] = round(seconds, 1)
    write_json(path, dict(sorted(kept.items(), key=lambda item: int(item[0]))))
