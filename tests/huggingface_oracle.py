"""Hugging Face's PyTorch ALBERT as an independent numerical oracle (test-only).

Everything here is written against the Hugging Face API and the original TF1
names of docs/reference.md, "Original checkpoint names" directly, not through albert_tf's converter tables, so a
mistake in those tables shows up as a mismatch.
"""

import numpy as np
import torch
import transformers

torch.set_num_threads(2)

_ACTIVATION = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu"}


def huggingface_config(config):
    """transformers.AlbertConfig with the architecture of an albert_tf AlbertConfig."""
    return transformers.AlbertConfig(
        vocab_size=config.vocab_size,
        embedding_size=config.embedding_size,
        hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers,
        num_hidden_groups=config.num_groups,
        inner_group_num=config.inner_group_num,
        num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size,
        hidden_act=_ACTIVATION[config.hidden_act],
        hidden_dropout_prob=config.hidden_dropout_prob,
        attention_probs_dropout_prob=config.attention_probs_dropout_prob,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        initializer_range=config.initializer_range,
        layer_norm_eps=1e-12,
    )


def random_pretraining_model(config, seed=0, model_class=transformers.AlbertForPreTraining):
    """A Hugging Face model whose every tensor is random (biases and LayerNorms too)."""
    torch.manual_seed(seed)
    model = model_class(huggingface_config(config))
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            if "LayerNorm" in name or "layer_norm" in name:
                parameter.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * noise)
            elif name.endswith("bias"):
                parameter.copy_(0.1 * noise)
            else:
                parameter.copy_(config.initializer_range * noise)
    return model.eval()


def run_pretraining_model(model, inputs, positions):
    """Outputs of AlbertForPreTraining in albert_tf's names, MLM logits gathered at `positions`."""
    with torch.no_grad():
        output = model(
            input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["input_type_ids"], dtype=torch.long),
            output_hidden_states=True,
        )
        base = model.albert(
            input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["input_type_ids"], dtype=torch.long),
        )
    logits = output.prediction_logits.numpy()
    return {
        "sequence_output": base.last_hidden_state.numpy(),
        "pooled_output": base.pooler_output.numpy(),
        "mlm_logits": np.take_along_axis(logits, positions[:, :, None].astype(np.int64), axis=1),
        "sop_logits": output.sop_logits.numpy(),
    }


def original_tf1_tensors(model, config):
    """The tensors of a Hugging Face AlbertForPreTraining under the original TF1 names and layouts."""
    state = {name: tensor.numpy() for name, tensor in model.state_dict().items()}

    def dense(hf_prefix, tf1_prefix):
        return {f"{tf1_prefix}/kernel": state[f"{hf_prefix}.weight"].T, f"{tf1_prefix}/bias": state[f"{hf_prefix}.bias"]}

    def layer_norm(hf_prefix, tf1_prefix):
        return {f"{tf1_prefix}/gamma": state[f"{hf_prefix}.weight"], f"{tf1_prefix}/beta": state[f"{hf_prefix}.bias"]}

    tensors = {
        "bert/embeddings/word_embeddings": state["albert.embeddings.word_embeddings.weight"],
        "bert/embeddings/position_embeddings": state["albert.embeddings.position_embeddings.weight"],
        "bert/embeddings/token_type_embeddings": state["albert.embeddings.token_type_embeddings.weight"],
        **layer_norm("albert.embeddings.LayerNorm", "bert/embeddings/LayerNorm"),
        **dense("albert.encoder.embedding_hidden_mapping_in", "bert/encoder/embedding_hidden_mapping_in"),
        **dense("albert.pooler", "bert/pooler/dense"),
        **dense("predictions.dense", "cls/predictions/transform/dense"),
        **layer_norm("predictions.LayerNorm", "cls/predictions/transform/LayerNorm"),
        "cls/predictions/output_bias": state["predictions.bias"],
        "cls/seq_relationship/output_weights": state["sop_classifier.classifier.weight"],
        "cls/seq_relationship/output_bias": state["sop_classifier.classifier.bias"],
    }
    for group in range(config.num_groups):
        for inner in range(config.inner_group_num):
            hf = f"albert.encoder.albert_layer_groups.{group}.albert_layers.{inner}"
            tf1 = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
            for projection in ("query", "key", "value"):
                tensors.update(dense(f"{hf}.attention.{projection}", f"{tf1}/attention_1/self/{projection}"))
            tensors.update(dense(f"{hf}.attention.dense", f"{tf1}/attention_1/output/dense"))
            tensors.update(layer_norm(f"{hf}.attention.LayerNorm", f"{tf1}/LayerNorm"))
            tensors.update(dense(f"{hf}.ffn", f"{tf1}/ffn_1/intermediate/dense"))
            tensors.update(dense(f"{hf}.ffn_output", f"{tf1}/ffn_1/intermediate/output/dense"))
            tensors.update(layer_norm(f"{hf}.full_layer_layer_norm", f"{tf1}/LayerNorm_1"))
    return tensors
