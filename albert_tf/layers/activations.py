"""Activation functions by the names ALBERT configs use."""

import keras


def gelu_tanh(x):
    """GELU, tanh approximation: the original ALBERT/BERT `gelu`.

    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The exact erf form drifts
    by ~6e-4 from checkpoints trained with this one.
    """
    return keras.activations.gelu(x, approximate=True)


def gelu_exact(x):
    return keras.activations.gelu(x, approximate=False)


_ACTIVATIONS = {
    "gelu": gelu_tanh,
    "gelu_new": gelu_tanh,
    "gelu_exact": gelu_exact,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "linear": keras.activations.linear,
}


def get_activation(name):
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"Unknown activation {name!r}; known: {sorted(_ACTIVATIONS)}") from None
