"""Pretraining data + a tiny model config that fits it, made by the tests."""

import dataclasses
import json
import pathlib

from text_fixtures import train_small_spm, write_corpus

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SEQ_LENGTH = 32
PREDICTIONS = 5


@dataclasses.dataclass
class PretrainingData:
    directory: pathlib.Path
    spm_model: pathlib.Path
    prefix: str  # create_pretraining_data's output prefix
    config_file: pathlib.Path  # albert_tiny with the vocabulary's size

    def files(self):
        return sorted(str(p) for p in self.directory.glob("train-*-of-*.tfrecord"))


def make_pretraining_data(tmp_path_factory, num_documents=60, shards=2, output_format="instances", heldout_every=0,
                          lower_case=True, keep_accents=False):
    from albert_tf.data.local_runner import create_pretraining_data
    from albert_tf.data.masking import MaskingConfig
    from albert_tf.data.pretraining_data_job import CreationConfig
    from albert_tf.data.pretraining_instances import InstanceConfig
    from albert_tf.text.albert_tokenizer import AlbertTokenizer

    # Cased data needs a cased vocabulary (the data tool refuses the other).
    spm_model = train_small_spm(tmp_path_factory, name="pretraining_spm", lower_case=lower_case,
                                keep_accents=keep_accents)
    directory = tmp_path_factory.mktemp("pretraining_data")
    corpus = write_corpus(directory / "corpus.txt", num_documents=num_documents, seed=3)
    config = CreationConfig(
        instances=InstanceConfig(max_seq_length=SEQ_LENGTH, dupe_factor=2,
                                 masking=MaskingConfig(max_predictions_per_seq=PREDICTIONS)),
        num_output_shards=shards,
        output_format=output_format,
        heldout_every=heldout_every,
        lower_case=lower_case,
        keep_accents=keep_accents,
    )
    prefix = str(directory / "train")
    create_pretraining_data([str(corpus)], prefix, str(spm_model), config, progress=False)
    model_config = json.loads((REPO_ROOT / "configs" / "albert_tiny.json").read_text())
    model_config["vocab_size"] = AlbertTokenizer(str(spm_model)).vocab_size
    config_file = directory / "albert_tiny_small_vocab.json"
    config_file.write_text(json.dumps(model_config))
    return PretrainingData(directory, spm_model, prefix, config_file)


def loss_by_step(output_dir):
    """{step: loss} from a run's TensorBoard summaries (OUTPUT_DIR/train), full float precision; a resumed
    run's later events replace the killed run's for the steps it redid."""
    import tensorflow as tf
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(pathlib.Path(output_dir) / "train"), size_guidance={"tensors": 0})
    accumulator.Reload()
    return {event.step: float(tf.make_ndarray(event.tensor_proto)) for event in accumulator.Tensors("loss")}


def assert_trained_alike(output_dir, stdout, reference_dir, reference_stdout):
    """A resumed run ended where the uninterrupted reference did: the same weights bit for bit, or, when
    TensorFlow's multi-threaded CPU kernels rounded some step differently (measured here in 1 of 15 to
    40 runs, uninterrupted runs included, more often under load), the same loss at every step to a
    relative 1e-5. Resuming at another data position, without the optimizer's state or on another
    learning-rate schedule changes the loss by 1e-3 or more within a few steps."""
    def fingerprint(text):
        return [line for line in text.splitlines() if line.startswith("Weights fingerprint:")][-1:]

    assert fingerprint(stdout), stdout
    if fingerprint(stdout) == fingerprint(reference_stdout):
        return
    mine, theirs = loss_by_step(output_dir), loss_by_step(reference_dir)
    assert mine.keys() == theirs.keys(), (sorted(mine), sorted(theirs))
    apart = {step: (mine[step], theirs[step]) for step in mine
             if abs(mine[step] - theirs[step]) > 1e-5 * abs(theirs[step])}
    assert not apart, f"losses that differ from the uninterrupted run's: {apart}"
