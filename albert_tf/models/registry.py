"""Model kinds: the name a checkpoint's albert_tf.json records for each model class, and how to rebuild it.

One declarative table. The classes are imported only when a model of that kind
is built or named, so loading an encoder does not import every task head, and
nothing here imports model_io (which imports this).
"""

import dataclasses
import importlib

from albert_tf.albert_config import AlbertConfig


@dataclasses.dataclass(frozen=True)
class ModelKind:
    name: str
    module: str
    class_name: str
    # Constructor arguments besides the config that albert_tf.json records (a classifier's num_labels).
    saved_arguments: tuple[str, ...] = ()
    # (argument, key) for a saved argument albert_tf.json records under another key: a token classifier's
    # `labels` are "label_names", where the tools read every classifier's label names.
    renamed: tuple[tuple[str, str], ...] = ()

    def model_class(self):
        return getattr(importlib.import_module(self.module), self.class_name)

    def recorded_keys(self) -> dict[str, str]:
        """{saved argument: its key in albert_tf.json}."""
        renamed = dict(self.renamed)
        return {argument: renamed.get(argument, argument) for argument in self.saved_arguments}


KINDS = (
    ModelKind("encoder", "albert_tf.networks.albert_encoder", "AlbertEncoder"),
    ModelKind("pretrainer", "albert_tf.models.albert_pretrainer", "AlbertPretrainer"),
    ModelKind("classifier", "albert_tf.models.albert_classifier", "AlbertClassifier", ("num_labels",)),
    ModelKind("span_labeler", "albert_tf.models.albert_span_labeler", "AlbertSpanLabeler"),
    ModelKind("squad_v2_span_labeler", "albert_tf.models.albert_squad_v2_span_labeler", "AlbertSquadV2SpanLabeler",
              ("start_n_top", "end_n_top")),
    ModelKind("multiple_choice", "albert_tf.models.albert_multiple_choice", "AlbertMultipleChoice", ("num_choices",)),
    ModelKind("token_classifier", "albert_tf.models.albert_token_classifier", "AlbertTokenClassifier",
              ("num_labels", "labels"), renamed=(("labels", "label_names"),)),
)
_BY_NAME = {kind.name: kind for kind in KINDS}
_BY_CLASS_NAME = {kind.class_name: kind for kind in KINDS}


def kind_names() -> list[str]:
    return sorted(_BY_NAME)


def describe(model) -> tuple[str, dict]:
    """(kind, {albert_tf.json key: value}) of an albert_tf model: what albert_tf.json records to rebuild it (an
    argument that is None, not recorded)."""
    kind, recorded_keys = describe_class(type(model))
    values = {key: getattr(model, argument) for argument, key in recorded_keys.items()}
    return kind, {key: value for key, value in values.items() if value is not None}


def describe_class(model_class) -> tuple[str, dict[str, str]]:
    """(kind, {saved argument: its albert_tf.json key}) of an albert_tf model class."""
    for cls in model_class.__mro__:
        kind = _BY_CLASS_NAME.get(cls.__name__)
        if kind is not None:
            return kind.name, kind.recorded_keys()
    raise ValueError(f"{model_class.__name__} is not an albert_tf model class (one of {', '.join(_BY_CLASS_NAME)})")


def recorded_arguments(kind_name: str, metadata: dict) -> dict:
    """{saved argument: value} that `metadata` (an albert_tf.json, or what stands for one) records for a model of
    `kind_name`: sizes as ints, names as lists; a key absent or null is left out."""
    arguments = {}
    for argument, key in _BY_NAME[kind_name].recorded_keys().items():
        value = metadata.get(key)
        if value is not None:
            arguments[argument] = list(value) if isinstance(value, (list, tuple)) else int(value)
    return arguments


def build(kind_name: str, albert_config: AlbertConfig, saved: dict, source: str = "metadata"):
    """A fresh model of `kind_name` with the recorded constructor arguments (those absent keep their default)."""
    kind = _BY_NAME.get(kind_name)
    if kind is None:
        raise ValueError(f"{source}: unknown model kind {kind_name!r}; known: {kind_names()}")
    model = kind.model_class()(config=albert_config, **recorded_arguments(kind_name, saved))
    # Subclassed models (multiple choice) create their variables on the first call.
    return model.build_variables() if hasattr(model, "build_variables") else model
