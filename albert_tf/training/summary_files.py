"""A run's TensorBoard event files, read back: what a resumed run keeps of them, and which steps they hold.

A run stopped after its last checkpoint had logged the steps past it; the run that resumes from the checkpoint
does those steps again and logs them again. TensorBoard drops such orphaned events only where a TF1 SessionLog
says the run restarted, which TF2's writers never write, so it would show those steps twice. The resumed run
first drops the events past its checkpoint's step (`drop_summaries_after`), as it drops eval_history.jsonl's
lines past it.
"""

import os

import tensorflow as tf

from albert_tf.file_utils import atomic_output_path

# Where an event file is rewritten before it replaces the original: a name TensorBoard does not read (it
# reads every file whose name holds "tfevents"), so that a rewrite killed halfway leaves nothing it shows.
_REWRITE_STAGING = ".events-rewrite.tmp"


def event_files(directory):
    return sorted(tf.io.gfile.glob(os.path.join(directory, "events.out.tfevents.*")))


def read_events(path):
    """(the events of an event file, whether it ended whole): a writer killed mid-record leaves a torn last one."""
    events = []
    try:
        for record in tf.data.TFRecordDataset(path):  # an event file is TFRecords of Event protos
            events.append(tf.compat.v1.Event.FromString(record.numpy()))
    except tf.errors.DataLossError:
        return events, False
    return events, True


def drop_summaries_after(directory, step):
    """Rewrites each event file in `directory` that holds events past `step` (or a torn last record) without
    them, through a staging name, so that a kill meanwhile leaves the file as it was."""
    for path in event_files(directory):
        events, whole = read_events(path)
        kept = [event for event in events if event.step <= step]
        if whole and len(kept) == len(events):
            continue
        if "://" in path:  # an object store: no links to follow, and a rename of a whole object
            staging = os.path.join(directory, _REWRITE_STAGING)
            with tf.io.TFRecordWriter(staging) as writer:
                for event in kept:
                    writer.write(event.SerializeToString())
            tf.io.gfile.rename(staging, path, overwrite=True)
            continue
        # Locally a temporary of a unique name, created exclusively: a link planted at a fixed one is written through.
        with atomic_output_path(path, prefix=_REWRITE_STAGING + ".") as staging:
            with tf.io.TFRecordWriter(staging) as writer:
                for event in kept:
                    writer.write(event.SerializeToString())


def logged_steps(directory, tag):
    """The steps at which the event files in `directory` hold a summary named `tag`."""
    return {event.step for path in event_files(directory) for event in read_events(path)[0]
            if any(value.tag == tag for value in event.summary.value)}
