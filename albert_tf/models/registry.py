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

    def model_class(self):
        return getattr(importlib.import_module(self.module), self.class_name)


KINDS = (
    ModelKind("encoder", "albert_tf.networks.albert_encoder", "AlbertEncoder"),
    ModelKind("pretrainer", "albert_tf.models.albert_pretrainer", "AlbertPretrainer"),
    ModelKind("classifier", "albert_tf.models.albert_classifier", "AlbertClassifier", ("num_labels",)),
    ModelKind("span_labeler", "albert_tf.models.albert_span_labeler", "AlbertSpanLabeler"),
    ModelKind("squad_v2_span_labeler", "albert_tf.models.albert_squad_v2_span_labeler", "AlbertSquadV2SpanLabeler",
              ("start_n_top", "end_n_top")),
    ModelKind("multiple_choice", "albert_tf.models.albert_multiple_choice", "AlbertMultipleChoice", ("num_choices",)),
)
_BY_NAME = {kind.name: kind for kind in KINDS}
_BY_CLASS_NAME = {kind.class_name: kind for kind in KINDS}


def kind_names() -> list[str]:
    return sorted(_BY_NAME)


def describe(model) -> tuple[str, dict]:
    """(kind, {saved argument: value}) of an albert_tf model: what albert_tf.json records to rebuild it."""
    kind, saved_arguments = describe_class(type(model))
    return kind, {argument: getattr(model, argument) for argument in saved_arguments}


def describe_class(model_class) -> tuple[str, tuple[str, ...]]:
    """(kind, saved arguments) of an albert_tf model class."""
    for cls in model_class.__mro__:
        kind = _BY_CLASS_NAME.get(cls.__name__)
        if kind is not None:
            return kind.name, kind.saved_arguments
    raise ValueError(f"{model_class.__name__} is not an albert_tf model class (one of {', '.join(_BY_CLASS_NAME)})")


def build(kind_name: str, albert_config: AlbertConfig, saved: dict, source: str = "metadata"):
    """A fresh model of `kind_name` with the recorded constructor arguments (those absent keep their default)."""
    kind = _BY_NAME.get(kind_name)
    if kind is None:
        raise ValueError(f"{source}: unknown model kind {kind_name!r}; known: {kind_names()}")
    arguments = {argument: int(saved[argument]) for argument in kind.saved_arguments if argument in saved}
    model = kind.model_class()(config=albert_config, **arguments)
    # Subclassed models (multiple choice) create their variables on the first call.
    return model.build_variables() if hasattr(model, "build_variables") else model
