"""`--serving_precision=bfloat16`: a TF Serving model whose weights are stored, and matrix products computed,
in bfloat16.

The served model is a second copy of the checkpoint's model built under Keras's "bfloat16" dtype policy, its
weights the float32 model's cast to bfloat16 (`bfloat16_model`). The layers that need float32 for accuracy keep
it under that policy, as under mixed precision: every LayerNorm, the attention softmax, the residual sums and the
task heads (classifier, span and token-classifier Dense layers) are float32 layers (the embedding tables are
stored in bfloat16 too: a gather reads them, and their sum is normalized in float32); the serving outputs are cast
to float32, and the in-graph tokenizer is the float32 export's. Only the serving model changes: the TF Hub-style
encoder/ (for fine-tuning) and preprocessing/ stay as a float32 export writes them.

The accuracy gate (`gate`) runs both serving models on GATE_TEXTS and writes the export only when the bfloat16 one
answers as the float32 one within the thresholds below; else BFloat16GateError, with the figures, and nothing is
written.

bfloat16 pays on CPUs with native bfloat16 dot products (x86 flags avx512_bf16 or amx_bf16); elsewhere TensorFlow
emulates it, slower than float32 (`cpu_bfloat16_support`, said at export and at load).
"""

import numpy as np

PRECISIONS = ("float32", "bfloat16")
DEFAULT_PRECISION = "float32"
# CPU flags (Linux /proc/cpuinfo) of native bfloat16 arithmetic.
NATIVE_BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")
# The gate's thresholds on GATE_TEXTS. bfloat16 keeps 8 bits of mantissa (relative rounding 2^-9, 0.2%), and sums,
# LayerNorm and softmax stay float32. Measured on random-weight models (albert_tiny-sized; albert_base_v2 for the
# classifier): pooled_output cosine to float32 mean 0.99997, min 0.99996 (embedding: 1.00000, 0.99999); no label,
# answer span, multi-label decision or tagger entity changed, and regression scores around 2.5 moved 0.02% of the
# largest (1.7% where a random head's scores all sit near 0, so any error is large beside them). The thresholds
# leave a real checkpoint's sharper outputs that room while refusing a model whose answers moved: encoders' outputs
# (each served one) keep a mean cosine of MIN_MEAN_COSINE and none below MIN_COSINE; classifiers keep the float32
# label (multi-label: each label's predicted or not) on MIN_AGREEMENT of the texts, span labelers the same span
# (start and end), taggers the same entities (type, start, end) per text; regression scores stay within
# MAX_SCORE_ERROR of the largest float32 score. (A label at a near-tie flips under any rounding: on 32 texts, 99%
# allows none to change.)
MIN_MEAN_COSINE = 0.999
MIN_COSINE = 0.99
MIN_AGREEMENT = 0.99
MAX_SCORE_ERROR = 0.02
# What the gate runs both serving models on: ordinary sentences of several lengths, questions with contexts for span
# labelers, names and places for taggers, and the edge cases (empty, digits, accents, emoji).
GATE_TEXTS = (
    "The film was a delight from start to finish.",
    "It is not good, not good at all.",
    "In 1998, 2,000 people met in Zürich (Switzerland) for the premiere.",
    "Ångström ☃ 東京 😀",
    "",
    "The service was slow and the food arrived cold.",
    "I would happily stay at this hotel again next summer.",
    "Marie Curie was born in Warsaw and worked in Paris.",
    "Barack Obama met Angela Merkel in Berlin on Tuesday.",
    "The new phone's battery lasts two days, but the camera is disappointing.",
    "Who wrote the novel that the committee praised?",
    "Shares of Apple fell 3% after the earnings report from Cupertino.",
    "Please refund my order; the package never arrived.",
    "What a waste of time and money.",
    "The river Thames flows through London to the North Sea.",
    "He said the meeting would start at 10:30 in room B.",
    "An absolutely wonderful, moving and funny performance.",
    "The committee will publish its report in March 2024.",
    "Why is the sky blue during the day but red at sunset?",
    "Tolstoy's War and Peace follows five aristocratic families.",
    "Nothing about this product works as advertised.",
    "Our team won the championship in Madrid last year.",
    "The algorithm sorts the list in linear time.",
    "She moved from Toronto to Sydney to study marine biology.",
    "Mediocre acting, a predictable plot, and far too long.",
    "The European Central Bank raised interest rates again.",
    "Can you tell me where the nearest train station is?",
    "The museum in Florence holds paintings by Botticelli.",
    "I'm not sure whether I liked it or not.",
    "Heavy rain flooded the streets of Mumbai on Monday.",
    "Great value for the price, and delivery was quick.",
)
# And one text longer than any max_seq_length (truncated; a tagger reads it in windows): the others joined. (Not a
# word repeated: a text of one word over and over puts a random model's outputs at near-ties, unlike requests.)
GATE_TEXTS += (" ".join(GATE_TEXTS * 3),)
# Span labelers: each text above as a question about this context (and the context alone as its own question).
GATE_CONTEXT = ("Marie Curie was born in Warsaw in 1867. She moved to Paris, where she studied physics and chemistry, "
                "and in 1903 she shared the Nobel Prize in Physics with Pierre Curie and Henri Becquerel.")


class BFloat16GateError(RuntimeError):
    """The bfloat16 serving model's answers moved beyond the gate: nothing was written. Command lines exit with
    status 3."""

    exit_code = 3


def check_precision(precision):
    """SettingError unless `precision` is one of PRECISIONS."""
    from albert_tf.settings import SettingError

    if precision not in PRECISIONS:
        raise SettingError(f"<serving_precision>={precision!r}: choose one of {', '.join(PRECISIONS)}")


def cpu_bfloat16_support(cpuinfo="/proc/cpuinfo"):
    """{"native_bfloat16": True/False/None (unknown: no /proc/cpuinfo, as on macOS or Windows), "cpu_flags": the
    native bfloat16 flags found}."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            flags = set()
            for line in f:
                if line.startswith("flags"):
                    flags.update(line.partition(":")[2].split())
    except OSError:
        return {"native_bfloat16": None, "cpu_flags": []}
    found = [flag for flag in NATIVE_BFLOAT16_FLAGS if flag in flags]
    return {"native_bfloat16": bool(found), "cpu_flags": found}


def emulation_note(support, made_for=None):
    """One line saying that this CPU has no native bfloat16 (None where it has, or where that is unknown)."""
    if support["native_bfloat16"] is not False:
        return None
    made = f" (the model was exported on a CPU with {', '.join(made_for)})" if made_for else ""
    return ("albert_tf: this CPU has no native bfloat16 (neither avx512_bf16 nor amx_bf16), so the bfloat16 serving "
            f"model runs emulated, slower than float32{made}; export with --serving_precision=float32 for this machine")


def bfloat16_model(model, metadata):
    """A copy of `model` (the kind `metadata` records) built under the "bfloat16" dtype policy, its weights
    `model`'s cast to each variable's dtype (float32 layers keep float32)."""
    import keras
    import tensorflow as tf

    from albert_tf.models.model_io import build_model

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("bfloat16")
    try:
        copy = build_model(metadata)  # builds every variable, as load_model's restore needs
    finally:
        keras.config.set_dtype_policy(previous)
    targets, sources = copy.weights, model.weights
    if [tuple(v.shape) for v in targets] != [tuple(v.shape) for v in sources]:  # same architecture, same order
        raise ValueError(f"the bfloat16 copy of the {metadata['model']} has other weights than the checkpoint's model")
    for target, source in zip(targets, sources):
        target.assign(tf.cast(source, target.dtype))
    if getattr(model, "preprocessor", None) is not None:  # as load_model gives it (a tagger's serving reads it)
        copy.preprocessor = model.preprocessor
    return copy


def gate_requests(serving, requests=()):
    """(text, text_b) lists the gate sends to a serving module of `serving`'s kind: GATE_TEXTS, and `requests`
    ([(text, text_b)], the user's texts like the requests the model will get: --calibration_file) after them."""
    texts = list(GATE_TEXTS)
    if serving.takes_context:
        texts, texts_b = texts + [GATE_CONTEXT], [GATE_CONTEXT] * (len(texts) + 1)
    else:
        texts_b = [""] * len(texts)
    return texts + [text for text, _ in requests], texts_b + [text_b for _, text_b in requests]


def _cosines(a, b):
    norms = np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)
    return (a * b).sum(-1) / norms


def cosine_agreement(served, reference):
    """(passed, figures, one line) for outputs that are vectors (an encoder's): each output's cosine with float32,
    its mean and its minimum over the texts."""
    figures, passed = {}, True
    for name in sorted(reference):
        cosine = _cosines(served[name], reference[name])
        figures[f"{name}_mean_cosine"] = float(cosine.mean())
        figures[f"{name}_min_cosine"] = float(cosine.min())
        passed &= bool(cosine.mean() >= MIN_MEAN_COSINE and cosine.min() >= MIN_COSINE)
    line = "; ".join(f"{name} cosine mean {figures[name + '_mean_cosine']:.5f}, min "
                     f"{figures[name + '_min_cosine']:.5f}" for name in sorted(reference))
    return passed, figures, f"{line} (needs mean >= {MIN_MEAN_COSINE}, min >= {MIN_COSINE})"


def score_agreement(served, reference):
    """(passed, figures, one line) for scores (a regression head's): the largest error, as a share of the largest
    float32 score."""
    error = float(np.abs(served - reference).max() / max(float(np.abs(reference).max()), 1e-3))
    return (error <= MAX_SCORE_ERROR, {"score_error": error},
            f"score error {error:.3g} of the largest score (at most {MAX_SCORE_ERROR:g})")


def answer_agreement(same, what):
    """(passed, figures, one line) for answers compared whole (labels, spans, a text's entities): `same`, per
    answer, whether bfloat16 gave float32's; `what` names them."""
    agreement = float(np.mean(same))
    return (agreement >= MIN_AGREEMENT, {"agreement": agreement},
            f"{what} with float32 {agreement:.2%} (needs {MIN_AGREEMENT:.0%})")


# Requests per serve call of the gate: a --calibration_file of thousands of texts runs in parts.
GATE_BATCH = 64


def _joined(parts):
    """One array of per-request outputs answered in parts: rows joined, padded columns (a tagger's entities per
    text, as many as the part's most) padded alike to the widest part."""
    import numpy as np

    if parts[0].ndim < 2 or len({part.shape[1] for part in parts}) == 1:
        return np.concatenate(parts)
    width = max(part.shape[1] for part in parts)
    padding = b"" if parts[0].dtype == object else -1  # past each row's entity_count: never read
    return np.concatenate([np.pad(part, [(0, 0), (0, width - part.shape[1])] + [(0, 0)] * (part.ndim - 2),
                                  constant_values=padding) for part in parts])


def gate(serving, reference_serving, metadata, requests=()):
    """The gate's record ({"texts", "measured", "figures", "thresholds", "passed"}) of the bfloat16 `serving` module
    against the float32 `reference_serving`, both run on GATE_TEXTS and the user's `requests` ([(text, text_b)])
    through their `serve` function, in batches of at most the module's max_batch_size."""
    import tensorflow as tf

    texts, texts_b = gate_requests(serving, requests)

    def run(module):
        parts = [{name: value.numpy() for name, value in module.serve(
            tf.constant(texts[start:start + GATE_BATCH]), tf.constant(texts_b[start:start + GATE_BATCH])).items()}
            for start in range(0, len(texts), GATE_BATCH)]
        return {name: _joined([part[name] for part in parts]) for name in parts[0]}

    passed, figures, measured = serving.agreement_with(run(serving), run(reference_serving))
    return {"texts": len(texts), "calibration_texts": len(requests), "measured": measured, "figures": figures,
            "passed": passed,
            "thresholds": {"min_mean_cosine": MIN_MEAN_COSINE, "min_cosine": MIN_COSINE,
                           "min_agreement": MIN_AGREEMENT, "max_score_error": MAX_SCORE_ERROR}}
