"""Loads tensors named by original TF1 names into a model, checking everything first."""

from albert_tf.checkpoints.original_names import HEAD_PREFIX, POOLER_PREFIX, model_variables


class CheckpointMismatchError(ValueError):
    """The source tensors and the model disagree; lists every offending name."""

    def __init__(self, source, missing=(), unmapped=(), mismatched=()):
        self.missing = sorted(missing)
        self.unmapped = sorted(unmapped)
        self.mismatched = sorted(mismatched)
        parts = []
        if self.missing:
            parts.append(f"missing from the source ({len(self.missing)}): {', '.join(self.missing)}")
        if self.unmapped:
            parts.append(f"not mapped to any model variable ({len(self.unmapped)}): {', '.join(self.unmapped)}")
        if self.mismatched:
            parts.append(f"shape mismatches ({len(self.mismatched)}): {', '.join(self.mismatched)}")
        super().__init__(f"{source}: checkpoint does not fit the model; " + "; ".join(parts))


def has_pretraining_heads(names):
    return any(name.startswith(HEAD_PREFIX) for name in names)


def check_and_assign(model, tensors, source, initialize_missing_heads=False):
    """Assigns `tensors` ({original name: array}) to `model`'s variables.

    Nothing is assigned unless every model variable has a tensor of the right
    shape and every tensor has a variable. With `initialize_missing_heads`, head
    variables (cls/...) and the pooler, which only heads use, keep their fresh
    initialization when the source lacks them (Hugging Face's AlbertForMaskedLM
    has neither pooler nor SOP classifier); they are returned for reporting.
    """
    variables = model_variables(model)
    missing = [name for name in variables if name not in tensors]
    if initialize_missing_heads:
        left_initialized = [name for name in missing if name.startswith((HEAD_PREFIX, POOLER_PREFIX))]
        missing = [name for name in missing if name not in left_initialized]
    else:
        left_initialized = []
    unmapped = [name for name in tensors if name not in variables]
    mismatched = [
        f"{name} (source {tuple(tensor.shape)}, model {variables[name].original_shape})"
        for name, tensor in tensors.items()
        if name in variables and tuple(tensor.shape) != variables[name].original_shape
    ]
    if missing or unmapped or mismatched:
        raise CheckpointMismatchError(source, missing, unmapped, mismatched)
    for name, tensor in tensors.items():
        variables[name].assign(tensor)
    return sorted(left_initialized)


def read_model_tensors(model):
    """{original name: numpy array} of every variable of `model`."""
    return {name: mapped.read() for name, mapped in model_variables(model).items()}
