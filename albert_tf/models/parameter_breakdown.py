"""Parameter counts of an ALBERT model by component, and the paper's Tables 2 and 3 beside them.

Counts are read off a real model built from the config (variables created with
shapes only, so even xxlarge takes no memory), broken down into the embeddings
(V*E + positions + segments + LayerNorm), the E->H projection, the distinct
transformer weights, the pooler, and the pretraining heads (the MLM head's
transform + LayerNorm + vocabulary bias, its output matrix being the tied
embeddings; the SOP classifier 2*H + 2). Tied weights count once.
"""

import json

# The paper's Table 2 (rounded) for the presets it lists.
PAPER_PARAMETERS = {
    "albert_base_v2": "12M",
    "albert_large_v2": "18M",
    "albert_xlarge_v2": "60M",
    "albert_xxlarge_v2": "235M",
    "bert_base": "108M",
    "bert_large": "334M",
}

# The paper's Table 3 (rounded): ALBERT-base by embedding size, (sharing, E) -> parameters.
PAPER_TABLE3 = {
    ("none", 64): "87M", ("none", 128): "89M", ("none", 256): "93M", ("none", 768): "108M",
    ("all", 64): "10M", ("all", 128): "12M", ("all", 256): "16M", ("all", 768): "31M",
}
TABLE3_BASE = "albert_base_v2"

COLUMNS = (
    ("model", "Model"),
    ("layers", "Layers"),
    ("hidden", "Hidden"),
    ("embedding", "Embedding"),
    ("sharing", "Sharing"),
    ("embeddings", "Embeddings"),
    ("projection", "Projection"),
    ("transformer", "Transformer"),
    ("pooler", "Pooler"),
    ("encoder", "Encoder total"),
    ("paper", "Paper"),
    ("mlm_head", "MLM head"),
    ("sop_head", "SOP head"),
    ("total", "With heads"),
)


def _count(variables):
    unique = {id(v): v for v in variables}
    total = 0
    for variable in unique.values():
        size = 1
        for dim in variable.shape:
            size *= int(dim)
        total += size
    return total


def parameter_breakdown(pretrainer):
    """Parameter counts of an `AlbertPretrainer`, by component (tied weights counted once)."""
    encoder = pretrainer.encoder
    config = encoder.albert_config
    blocks = [v for block in encoder.transformer_blocks for v in block.weights]
    embeddings = _count(encoder.embeddings.weights)
    projection = _count(encoder.embedding_projection.weights) if encoder.embedding_projection is not None else 0
    transformer = _count(blocks)
    pooler = _count(encoder.pooler.weights)
    embedding_ids = {id(v) for v in encoder.embeddings.weights}
    mlm_head = _count([v for v in pretrainer.masked_lm_head.weights if id(v) not in embedding_ids])
    sop_head = _count(pretrainer.sentence_order_head.weights)
    encoder_total = embeddings + projection + transformer + pooler
    return {
        "layers": config.num_hidden_layers,
        "hidden": config.hidden_size,
        "embedding": config.embedding_size,
        "sharing": config.sharing,
        "embeddings": embeddings,
        "projection": projection,
        "transformer": transformer,
        "pooler": pooler,
        "encoder": encoder_total,
        "mlm_head": mlm_head,
        "sop_head": sop_head,
        "total": encoder_total + mlm_head + sop_head,
    }


def shape_only_pretrainer(config):
    """An `AlbertPretrainer` whose variables have shapes but no values (no memory)."""
    import keras

    from albert_tf.models.albert_pretrainer import AlbertPretrainer

    # Variables created in a StatelessScope that does not initialize them stay
    # shape-only; this model is for counting and must never be run.
    with keras.StatelessScope(initialize_variables=False):
        return AlbertPretrainer(config)


def preset_rows(presets=None, config_path=None):
    """One row per preset (default every preset), or for the config file at `config_path`."""
    from albert_tf.albert_config import AlbertConfig, preset_names

    if config_path:
        configs = {config_path: AlbertConfig.from_json_file(config_path)}
    else:
        configs = {name: AlbertConfig.from_preset(name) for name in (presets or preset_names())}
    rows = []
    for name, config in configs.items():
        row = {"model": name, **parameter_breakdown(shape_only_pretrainer(config))}
        row["paper"] = PAPER_PARAMETERS.get(name, "")
        rows.append(row)
    return rows


def embedding_size_rows(embedding_sizes, base=TABLE3_BASE):
    """The paper's Table 3 grid: `base` with each embedding size, not shared and all-shared."""
    import dataclasses

    from albert_tf.albert_config import AlbertConfig

    rows = []
    for sharing, label in (("none", "not-shared"), ("all", "all-shared")):
        for embedding_size in embedding_sizes:
            config = dataclasses.replace(AlbertConfig.from_preset(base), embedding_size=embedding_size, sharing=sharing)
            row = {"model": f"{base} {label} E={embedding_size}",
                   **parameter_breakdown(shape_only_pretrainer(config))}
            row["paper"] = PAPER_TABLE3.get((sharing, embedding_size), "")
            rows.append(row)
    return rows


def format_rows(rows, output_format="text"):
    """The rows as an aligned text table, a markdown table or JSON."""
    if output_format == "json":
        return json.dumps(rows, indent=2)
    cells = [[title for _, title in COLUMNS]]
    for row in rows:
        cells.append([f"{row[key]:,}" if isinstance(row[key], int) and key not in ("layers", "hidden", "embedding")
                      else str(row[key]) for key, _ in COLUMNS])
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    if output_format == "markdown":
        lines = ["| " + " | ".join(cells[0]) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
        lines += ["| " + " | ".join(line) + " |" for line in cells[1:]]
        return "\n".join(lines)
    def render(line):
        return "  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                         for i, (cell, width) in enumerate(zip(line, widths)))
    return "\n".join([render(cells[0]), "  ".join("-" * w for w in widths)] + [render(line) for line in cells[1:]])
