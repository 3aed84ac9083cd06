"""Our variables under the original TF1 checkpoint names (docs/reference.md, "Original checkpoint names").

The original names are the hub every converter goes through: the TF1 reader uses
them directly, and the Hugging Face rules translate them. Tensors are given in the
original layout; the only variable stored differently by us is the SOP kernel
(original `cls/seq_relationship/output_weights` is [2, H], a Keras Dense kernel
is [H, 2]).
"""

import dataclasses

from albert_tf.networks.albert_encoder import AlbertEncoder


@dataclasses.dataclass(frozen=True)
class MappedVariable:
    variable: object  # keras.Variable
    transposed: bool = False  # stored transposed relative to the original layout

    def read(self):
        value = self.variable.numpy()
        return value.T if self.transposed else value

    def assign(self, value):
        self.variable.assign(value.T if self.transposed else value)

    @property
    def original_shape(self):
        shape = tuple(self.variable.shape)
        return shape[::-1] if self.transposed else shape


def _dense(prefix, dense):
    return {f"{prefix}/kernel": MappedVariable(dense.kernel), f"{prefix}/bias": MappedVariable(dense.bias)}


def _layer_norm(prefix, layer_norm):
    return {f"{prefix}/gamma": MappedVariable(layer_norm.gamma), f"{prefix}/beta": MappedVariable(layer_norm.beta)}


def encoder_variables(encoder):
    """{original name: MappedVariable} for an `AlbertEncoder`.

    Raises ValueError for the attention-only and FFN-only sharing modes, which no
    original or Hugging Face checkpoint can hold.
    """
    config = encoder.albert_config
    if config.sharing not in ("all", "none"):
        raise ValueError(
            f'sharing="{config.sharing}" has no counterpart in the original or Hugging Face '
            "checkpoint formats; only sharing=\"all\" (with groups) and \"none\" convert"
        )
    embeddings = encoder.embeddings
    names = {
        "bert/embeddings/word_embeddings": MappedVariable(embeddings.word_embeddings),
        "bert/embeddings/position_embeddings": MappedVariable(embeddings.position_embeddings),
        "bert/embeddings/token_type_embeddings": MappedVariable(embeddings.token_type_embeddings),
        **_layer_norm("bert/embeddings/LayerNorm", embeddings.layer_norm),
        **_dense("bert/pooler/dense", encoder.pooler),
    }
    if encoder.embedding_projection is not None:
        names.update(_dense("bert/encoder/embedding_hidden_mapping_in", encoder.embedding_projection))
    for index, block in enumerate(encoder.transformer_blocks):
        group_position, inner = divmod(index, config.inner_group_num)
        group = config.used_groups[group_position]
        prefix = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
        attention = block.attention_block
        feed_forward = block.feed_forward_block
        for projection in ("query", "key", "value"):
            names.update(_dense(f"{prefix}/attention_1/self/{projection}", getattr(attention, projection)))
        names.update(_dense(f"{prefix}/attention_1/output/dense", attention.output_dense))
        names.update(_layer_norm(f"{prefix}/LayerNorm", attention.layer_norm))
        names.update(_dense(f"{prefix}/ffn_1/intermediate/dense", feed_forward.intermediate_dense))
        names.update(_dense(f"{prefix}/ffn_1/intermediate/output/dense", feed_forward.output_dense))
        names.update(_layer_norm(f"{prefix}/LayerNorm_1", feed_forward.layer_norm))
    return names


def pretrainer_head_variables(pretrainer):
    """{original name: MappedVariable} for the MLM and SOP heads."""
    mlm = pretrainer.masked_lm_head
    sop = pretrainer.sentence_order_head
    return {
        **_dense("cls/predictions/transform/dense", mlm.transform_dense),
        **_layer_norm("cls/predictions/transform/LayerNorm", mlm.layer_norm),
        "cls/predictions/output_bias": MappedVariable(mlm.output_bias),
        "cls/seq_relationship/output_weights": MappedVariable(sop.kernel, transposed=True),
        "cls/seq_relationship/output_bias": MappedVariable(sop.bias),
    }


def squad_v2_head_variables(labeler):
    """{original name: MappedVariable} for an `AlbertSquadV2SpanLabeler`'s head: the variable scopes of the
    original run_squad_v2 (start_logits, end_logits, answer_class), each Keras kernel in the original's layout."""
    head = labeler.squad_v2_head
    return {
        **_dense("start_logits/dense", head.start_dense),
        **_dense("end_logits/dense_0", head.end_dense_0),
        **_layer_norm("end_logits/LayerNorm", head.end_layer_norm),
        **_dense("end_logits/dense_1", head.end_dense_1),
        **_dense("answer_class/dense_0", head.answer_dense_0),
        "answer_class/dense_1/kernel": MappedVariable(head.answer_dense_1.kernel),  # no bias
    }


# The original run_squad_v1's head (squad_utils.create_v1_model): one [2, H] matrix giving each position a start
# and an end logit.
SQUAD_V1_WEIGHTS = "cls/squad/output_weights"
SQUAD_V1_BIAS = "cls/squad/output_bias"


def squad_v1_head_variables(labeler):
    """{original name: MappedVariable} for an `AlbertSpanLabeler`'s head: run_squad_v1's cls/squad/output_weights
    [2, H] (a Keras kernel is [H, 2]) and cls/squad/output_bias [2]."""
    return {SQUAD_V1_WEIGHTS: MappedVariable(labeler.span_head.kernel, transposed=True),
            SQUAD_V1_BIAS: MappedVariable(labeler.span_head.bias)}


HEAD_PREFIX = "cls/"
POOLER_PREFIX = "bert/pooler/"


def model_variables(model):
    """{original name: MappedVariable} for an encoder or a pretrainer."""
    if isinstance(model, AlbertEncoder):
        return encoder_variables(model)
    return {**encoder_variables(model.encoder), **pretrainer_head_variables(model)}
