"""albert_tf: ALBERT (Lan et al., 2019) in TensorFlow 2 / Keras 3, from raw text to a served model.

Heavy submodules (TensorFlow, Keras) load on first use, so data-pipeline
processes that never touch the model do not pay for them. TensorFlow's C++
start-up and device-probe lines are hidden, as the command-line tools hide them,
unless TF_CPP_MIN_LOG_LEVEL is set before (0 shows every C++ log).

>>> import albert_tf
>>> config = albert_tf.AlbertConfig.from_preset("albert_tiny")
>>> pretrainer = albert_tf.AlbertPretrainer(config)
"""

import importlib
import os
import sys

__version__ = "0.1.0"

_LAZY_EXPORTS = {
    "AlbertConfig": "albert_tf.albert_config",
    "preset_names": "albert_tf.albert_config",
    "AlbertEncoder": "albert_tf.networks.albert_encoder",
    "AlbertPretrainer": "albert_tf.models.albert_pretrainer",
    "TransformerBlock": "albert_tf.layers.transformer_block",
    "load_encoder": "albert_tf.models.model_io",
    "load_pretrainer": "albert_tf.models.model_io",
    "load_model": "albert_tf.models.model_io",
    "write_model_dir": "albert_tf.models.model_io",
    "load_export": "albert_tf.export_lib.exported_model",
    "AlbertClassifier": "albert_tf.models.albert_classifier",
    "AlbertSpanLabeler": "albert_tf.models.albert_span_labeler",
    "AlbertSquadV2SpanLabeler": "albert_tf.models.albert_squad_v2_span_labeler",
    "AlbertMultipleChoice": "albert_tf.models.albert_multiple_choice",
    "AlbertTokenClassifier": "albert_tf.models.albert_token_classifier",
    "AlbertTokenizer": "albert_tf.text.albert_tokenizer",
    "TFAlbertTokenizer": "albert_tf.text.tf_albert_tokenizer",
    "AlbertPreprocessor": "albert_tf.text.albert_preprocessor",
    "MaskFiller": "albert_tf.models.mask_filler",
    "Embedder": "albert_tf.models.embedder",
    "LiteModel": "albert_tf.models.lite_model",
    "create_optimizer": "albert_tf.optimization",
}

__all__ = sorted(_LAZY_EXPORTS)


def __getattr__(name):
    if name in _LAZY_EXPORTS:
        if "tensorflow" in sys.modules:
            return getattr(importlib.import_module(_LAZY_EXPORTS[name]), name)
        from albert_tf.cli import quiet_native_logs

        # What TensorFlow's C++ side prints at import (before any log level applies) and at its first op
        # (CUDA probes on a machine without a GPU), as the tools do (cli.import_tensorflow_quietly).
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        with quiet_native_logs():
            return getattr(importlib.import_module(_LAZY_EXPORTS[name]), name)
    raise AttributeError(f"module 'albert_tf' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
