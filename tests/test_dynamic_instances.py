"""The documents format, the held-out split, and instances made afresh every epoch in the input pipeline."""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data.local_runner import create_pretraining_data
from albert_tf.data import pretraining_data_job as job
from albert_tf.data.corpus_reader import expand_input_patterns
from albert_tf.data.dynamic_instances import EpochInstanceMaker, make_dynamic_dataset
from albert_tf.data.masking import MaskingConfig
from albert_tf.data.pretraining_data_job import CreationConfig
from albert_tf.data.pretraining_dataset import expand_data_files, feature_spec
from albert_tf.data.pretraining_instances import FLOAT_FEATURES, INT_FEATURES, InstanceConfig
from albert_tf.data.tfrecord_io import ExampleEncoder
from albert_tf.text.albert_tokenizer import AlbertTokenizer
from text_fixtures import train_small_spm, write_corpus

CONFIG = CreationConfig(
    instances=InstanceConfig(max_seq_length=48, dupe_factor=1, masking=MaskingConfig(max_predictions_per_seq=8)),
    num_output_shards=2,
)
HELDOUT_EVERY = 5


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return str(train_small_spm(tmp_path_factory))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    directory = tmp_path_factory.mktemp("corpus")
    write_corpus(directory / "a.txt", num_documents=22, seed=5)
    write_corpus(directory / "b.txt", num_documents=11, seed=6, paragraphs=True)
    return expand_input_patterns(str(directory / "*.txt"))


@pytest.fixture(scope="module")
def data_sets(tmp_path_factory, corpus, spm_model):
    """Static instances at dupe_factor 1 and documents, both with a held-out split, from one corpus and seed."""
    directory = tmp_path_factory.mktemp("sets")
    made = {}
    for output_format in ("instances", "documents"):
        prefix = str(directory / output_format)
        config = dataclasses.replace(CONFIG, output_format=output_format, heldout_every=HELDOUT_EVERY)
        made[output_format] = (prefix, create_pretraining_data(corpus, prefix, spm_model, config, progress=False))
    return made


def records(prefix):
    return [record.numpy() for record in tf.data.TFRecordDataset(expand_data_files(prefix))]


def maker_for(spm_model, seed=CONFIG.seed, processes=0):
    tokenizer = AlbertTokenizer(spm_model, lower_case=CONFIG.lower_case)
    return EpochInstanceMaker(CONFIG, tokenizer.word_start_table, tokenizer.random_replacement_ids, seed,
                              processes=processes, special_ids=tokenizer.special_ids)


def epoch_instances(prefix, maker, epoch):
    """Every instance the maker makes from the documents set in `epoch`, serialized as the static tool does."""
    encoder = ExampleEncoder(INT_FEATURES, FLOAT_FEATURES)
    examples = []
    for record in records(prefix):
        document = tf.train.Example.FromString(record).features.feature
        features = maker.instances(epoch, *(np.array(document[name].int64_list.value)
                                            for name in ("token_ids", "sentence_offsets", "document_id")))
        examples += encoder.encode_batch({name: features[name] for name in INT_FEATURES},
                                         {name: features[name] for name in FLOAT_FEATURES})
    return examples


def test_epoch_zero_is_the_static_tools_output_byte_for_byte(data_sets, spm_model):
    static_prefix, _ = data_sets["instances"]
    documents_prefix, _ = data_sets["documents"]
    static = records(static_prefix)
    dynamic = epoch_instances(documents_prefix, maker_for(spm_model), epoch=0)
    assert len(static) > 50
    assert sorted(dynamic) == sorted(static)


def test_later_epochs_draw_new_pairs_and_masks_from_the_same_documents(data_sets, spm_model):
    documents_prefix, _ = data_sets["documents"]
    maker = maker_for(spm_model)
    epoch0, epoch1 = (set(epoch_instances(documents_prefix, maker, epoch)) for epoch in (0, 1))
    assert len(epoch1 & epoch0) < 0.05 * len(epoch0)
    assert epoch_instances(documents_prefix, maker, 1) == epoch_instances(documents_prefix, maker_for(spm_model), 1)
    # Another run seed is another stream, even in epoch 0.
    assert set(epoch_instances(documents_prefix, maker_for(spm_model, seed=7), 0)).isdisjoint(epoch0)


def test_documents_and_heldout_sets_hold_every_document_once_and_the_metadata_says_so(data_sets, corpus, spm_model):
    documents_prefix, metadata = data_sets["documents"]
    assert metadata["format"] == job.DOCUMENTS_FORMAT
    ids = [tuple(tf.train.Example.FromString(r).features.feature["document_id"].int64_list.value)
           for r in records(documents_prefix)]
    assert len(ids) == len(set(ids)) == metadata["statistics"]["documents"]
    assert sum(shard["documents"] for shard in metadata["shards"]) == len(ids)
    # Held-out documents (index 4, 9, ... of each file) never reach the training set, and are the held-out set.
    assert all(document % HELDOUT_EVERY != HELDOUT_EVERY - 1 for _, document in ids)
    heldout_prefix = job.heldout_prefix(documents_prefix)
    heldout_metadata = json.load(open(heldout_prefix + ".metadata.json"))
    assert metadata["heldout"]["output_file"] == os.path.basename(heldout_prefix)
    assert heldout_metadata["heldout_of"] == os.path.basename(documents_prefix)
    assert heldout_metadata["format"] == job.INSTANCES_FORMAT and heldout_metadata["config"]["instances"]["dupe_factor"] == 1
    spec = feature_spec(CONFIG.instances.max_seq_length, CONFIG.instances.masking.max_predictions_per_seq)
    heldout_records = records(heldout_prefix)
    assert len(heldout_records) == heldout_metadata["statistics"]["instances"] > 0
    # The held-out set does not depend on the training set's format.
    assert heldout_records == records(job.heldout_prefix(data_sets["instances"][0]))
    tf.io.parse_example(heldout_records, spec)  # readable as ordinary instances
    # 22 + 11 documents; every 5th of each file held out: 4 + 2.
    assert metadata["statistics"]["documents"] == 33 - 6
    # Smaller on disk than even one static copy of the pairs.
    documents_bytes = sum(shard["bytes"] for shard in metadata["shards"])
    static_bytes = sum(shard["bytes"] for shard in data_sets["instances"][1]["shards"])
    assert documents_bytes < static_bytes / 3


def test_documents_output_is_byte_identical_for_one_and_two_workers(tmp_path, corpus, spm_model):
    config = dataclasses.replace(CONFIG, output_format="documents", heldout_every=HELDOUT_EVERY)
    outputs = []
    for workers in (1, 2):
        prefix = str(tmp_path / f"w{workers}" / "data")
        create_pretraining_data(corpus, prefix, spm_model, config, num_workers=workers, progress=False)
        outputs.append([open(p, "rb").read() for p in expand_data_files(prefix) + expand_data_files(prefix + "-heldout")]
                       + [open(prefix + ".metadata.json").read()])
    assert outputs[0] == outputs[1]


def test_cli_writes_documents_and_a_heldout_set_and_says_where(tmp_path, corpus, spm_model):
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={','.join(corpus)}",
         f"--output_file={tmp_path / 'd'}", f"--spm_model_file={spm_model}", "--max_seq_length=48",
         "--output_format=documents", "--heldout_every=5", "--num_workers=1"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "27 tokenized documents" in result.stdout
    assert f"--eval_input_file={tmp_path / 'd'}-heldout" in result.stdout
    assert expand_data_files(str(tmp_path / "d")) and expand_data_files(str(tmp_path / "d") + "-heldout")
    stats = subprocess.run([sys.executable, "-m", "albert_tf.data_stats", str(tmp_path / "d")], capture_output=True,
                           text=True)
    assert stats.returncode == 0 and "27 documents" in stats.stdout and "PREFIX-heldout" in stats.stdout


def test_heldout_and_format_settings_are_checked(tmp_path, corpus, spm_model):
    with pytest.raises(ValueError, match="heldout_every must be 0"):
        CreationConfig(heldout_every=1)
    with pytest.raises(ValueError, match="single_segment=other_document need output_format=instances$") as refused:
        CreationConfig(output_format="documents", instances=InstanceConfig(random_next_sentence=True))
    assert str(refused.value.for_flags()).endswith(  # as create_pretraining_data says it
        "NSP (--random_next_sentence) and --single_segment=other_document need --output_format=instances")
    # Too few documents per file to hold any out: refused before anything is written.
    config = dataclasses.replace(CONFIG, heldout_every=1000)
    with pytest.raises(ValueError, match="no document was held out"):
        create_pretraining_data(corpus, str(tmp_path / "x"), spm_model, config, progress=False)
    assert [name for name in os.listdir(tmp_path) if not name.startswith(".")] == []


def test_creation_config_round_trips_through_metadata(data_sets):
    _, metadata = data_sets["documents"]
    config = CreationConfig.from_json(metadata["config"])
    assert config == dataclasses.replace(CONFIG, output_format="documents", heldout_every=HELDOUT_EVERY)


def batches_of(dataset, count):
    return [{name: value.numpy() for name, value in batch.items()} for batch in dataset.take(count)]


# The features a model input batch holds, in the original names (token_boundary is not a model input).
MODEL_FEATURES = [name for name in INT_FEATURES if name != "token_boundary"]
MODEL_INPUT_NAMES = {"input_ids": "input_word_ids", "segment_ids": "input_type_ids",
                     "next_sentence_labels": "sentence_order_labels"}


def as_examples(features):
    """Serialized examples of model-input features (original names), comparable across both routes."""
    return ExampleEncoder(MODEL_FEATURES, FLOAT_FEATURES).encode_batch(
        {name: np.reshape(features[name], (len(features[name]), -1)) for name in MODEL_FEATURES}, features)


def from_model_inputs(batch):
    return {name: batch[MODEL_INPUT_NAMES.get(name, name)] for name in MODEL_FEATURES + list(FLOAT_FEATURES)}


def document_instances(prefix, maker, epoch):
    """[serialized model-input examples] of each document of the set, in file order, made in `epoch`."""
    made = []
    for record in records(prefix):
        document = tf.train.Example.FromString(record).features.feature
        made.append(as_examples(maker.instances(epoch, *(np.array(document[name].int64_list.value)
                                                         for name in ("token_ids", "sentence_offsets", "document_id")))))
    return made


def stream(files, maker, count, **options):
    """The first `count` instances of the documents pipeline (batches of 1, no shuffle buffer), serialized."""
    batches = batches_of(make_dynamic_dataset(files, 1, maker, seed=CONFIG.seed, shuffle_buffer=1, **options), count)
    return [example for batch in batches for example in as_examples(from_model_inputs(batch))]


def test_input_pipeline_yields_every_epoch_zero_instance_then_new_epochs_deterministically(data_sets, spm_model):
    documents_prefix, _ = data_sets["documents"]
    files = expand_data_files(documents_prefix)
    maker = maker_for(spm_model)
    expected = [example for document in document_instances(documents_prefix, maker, 0) for example in document]
    per_epoch = len(expected)
    got = stream(files, maker, 3 * per_epoch, num_workers=2)
    # Documents are drawn from in turn across the end of an epoch, so epoch 0 and 1 overlap a little;
    # every instance of epoch 0 comes exactly once, and the rest are new.
    epoch_zero = set(expected)
    assert sorted(example for example in got if example in epoch_zero) == sorted(expected)
    later = [example for example in got if example not in epoch_zero]
    assert len(later) >= per_epoch and len(set(later)) == len(later)
    # The stream is the same with another number of input workers.
    assert stream(files, maker, 3 * per_epoch, num_workers=1) == got


def test_builder_processes_make_the_same_stream_and_end_with_the_maker(data_sets, spm_model):
    files = expand_data_files(data_sets["documents"][0])
    in_threads = stream(files, maker_for(spm_model), 120, num_workers=2)
    maker = maker_for(spm_model, processes=2)
    try:
        assert stream(files, maker, 120, num_workers=1) == in_threads  # (2 map threads: one per process)
        children = maker.processes._children
        assert len(children) == 2 and all(child.poll() is None for child in children)
    finally:
        maker.close()
    assert all(child.returncode == 0 for child in children)
    with pytest.raises(RuntimeError, match="closed"):
        maker.instances(0, [5, 6, 7], [0, 3], [0, 0])


def test_a_builder_process_failure_is_raised_in_the_training_process(spm_model):
    maker = maker_for(spm_model, processes=1)
    try:
        with pytest.raises(RuntimeError, match="the instance builder failed in process(.|\\n)*IndexError"):
            maker.instances(0, [5, 6, 7], [0, 3], [])  # no document id
        assert maker.instances(0, [5, 6, 7], [0, 3], [0, 0])["input_ids"].shape[1:] == (CONFIG.instances.max_seq_length,)
        child = maker.processes._children[0]
        child.kill()
        child.wait()
        with pytest.raises(RuntimeError, match=f"instance builder process \\(pid {child.pid}\\) stopped"):
            maker.instances(0, [5, 6, 7], [0, 3], [0, 0])
    finally:
        maker.close()


def test_a_killed_builder_process_reaches_the_training_loop_as_one_line(spm_model):
    """Through the input pipeline the builder's error arrives inside TensorFlow's UnknownError with a traceback;
    the training loop turns it into one line with the exit code (run_pretraining once printed the traceback)."""
    import numpy as np
    import tensorflow as tf

    from albert_tf.training.training_loop import input_process_failure

    maker = maker_for(spm_model, processes=1)
    try:
        maker.instances(0, [5, 6, 7], [0, 3], [0, 0])
        child = maker.processes._children[0]
        child.kill()
        child.wait()

        def build(_):
            return np.int64(len(maker.instances(0, [5, 6, 7], [0, 3], [0, 0])["input_ids"]))

        dataset = tf.data.Dataset.range(1).map(lambda x: tf.numpy_function(build, [x], tf.int64))
        with pytest.raises(tf.errors.UnknownError) as raised:
            next(iter(dataset))
        assert input_process_failure(raised.value) == (f"an instance builder process (pid {child.pid}) stopped with "
                                                       "exit code -9")
        assert input_process_failure(tf.errors.UnknownError(None, None, "something else")) is None
    finally:
        maker.close()


def test_builder_processes_that_cannot_start_say_so_and_do_not_hang(spm_model, monkeypatch):
    maker = maker_for(spm_model, processes=2)
    monkeypatch.setattr("sys.executable", "/bin/false")  # every child exits at once with code 1
    try:
        for _ in range(2):  # a second call tries again rather than waiting for children that never came
            with pytest.raises(RuntimeError, match=r"instance builder process \(pid \d+\) (did not start|stopped)"):
                maker.instances(0, [5, 6, 7], [0, 3], [0, 0])
    finally:
        maker.close()


def test_batches_draw_from_many_documents_in_turn(data_sets, spm_model):
    """A document's instances are made together; the stream takes one from each of `mixed_documents` documents
    in turn, so that a long document cannot fill the shuffle buffer and most of a stretch of batches."""
    documents_prefix, _ = data_sets["documents"]
    files = expand_data_files(documents_prefix)
    maker = maker_for(spm_model)
    owner = {example: index for index, document in enumerate(document_instances(documents_prefix, maker, 0))
             for example in document}
    in_turn = [owner[example] for example in stream(files, maker, 40, mixed_documents=4)]
    assert len(set(in_turn[:4])) == 4 and in_turn[4:8] == in_turn[:4]  # one from each, then again
    one_after_another = [owner[example] for example in stream(files, maker, 40, mixed_documents=1)]
    runs = 1 + sum(a != b for a, b in zip(one_after_another, one_after_another[1:]))
    assert runs == len(set(one_after_another)) < 40  # each document's instances together


def test_run_pretraining_mixes_as_many_documents_as_the_reader_by_default():
    from albert_tf.data.dynamic_instances import MIXED_DOCUMENTS
    from albert_tf.training.pretraining_config import PretrainingConfig

    assert PretrainingConfig().input_mixed_documents == MIXED_DOCUMENTS > 1


def test_iterator_checkpoint_resumes_at_the_same_instance(data_sets, spm_model, tmp_path):
    files = expand_data_files(data_sets["documents"][0])
    maker = maker_for(spm_model)

    def dataset():
        return make_dynamic_dataset(files, 4, maker, seed=3, shuffle_buffer=64, num_workers=2)

    uninterrupted = batches_of(dataset(), 60)
    iterator = iter(dataset())
    for _ in range(25):
        next(iterator)
    checkpoint_path = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))
    restored = iter(dataset())
    tf.train.Checkpoint(iterator=restored).restore(checkpoint_path).assert_consumed()
    resumed = [{name: value.numpy() for name, value in next(restored).items()} for _ in range(35)]
    for expected, got in zip(uninterrupted[25:], resumed):
        for name in expected:
            np.testing.assert_array_equal(expected[name], got[name])
