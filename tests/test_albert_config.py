import json

import pytest

from albert_tf.albert_config import AlbertConfig, preset_names

EXPECTED_PRESETS = {
    "albert_base_v1", "albert_base_v2", "albert_large_v1", "albert_large_v2", "albert_xlarge_v1",
    "albert_xlarge_v2", "albert_xxlarge_v1", "albert_xxlarge_v2", "bert_base", "bert_large", "albert_tiny",
}


def test_every_preset_loads_and_round_trips(tmp_path):
    assert EXPECTED_PRESETS <= set(preset_names())
    for name in preset_names():
        config = AlbertConfig.from_preset(name)
        assert AlbertConfig.from_dict(config.to_dict()) == config
        path = tmp_path / f"{name}.json"
        config.to_json_file(path)
        assert AlbertConfig.from_json_file(path) == config


def test_preset_architectures_follow_the_paper():
    base = AlbertConfig.from_preset("albert_base_v2")
    assert (base.embedding_size, base.hidden_size, base.num_hidden_layers) == (128, 768, 12)
    assert base.hidden_dropout_prob == 0.0 and AlbertConfig.from_preset("albert_base_v1").hidden_dropout_prob == 0.1
    assert AlbertConfig.from_preset("albert_xxlarge_v1").hidden_dropout_prob == 0.0
    xxlarge = AlbertConfig.from_preset("albert_xxlarge_v2")
    assert (xxlarge.hidden_size, xxlarge.num_attention_heads, xxlarge.intermediate_size) == (4096, 64, 16384)
    bert = AlbertConfig.from_preset("bert_base")
    assert bert.sharing == "none" and bert.embedding_size == bert.hidden_size


def test_original_albert_config_json_loads(tmp_path):
    # The file shipped with Google's albert_base v2 checkpoint, field for field.
    original = {
        "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
        "embedding_size": 128, "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
        "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
        "num_hidden_groups": 1, "net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0,
        "inner_group_num": 1, "down_scale_factor": 1, "type_vocab_size": 2, "vocab_size": 30000,
    }
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(original))
    assert AlbertConfig.from_json_file(path) == AlbertConfig.from_preset("albert_base_v2")
    for key, other in (("num_memory_blocks", 2), ("net_structure_type", 1), ("gap_size", 3)):
        path.write_text(json.dumps({**original, key: other}))
        with pytest.raises(ValueError, match=f"{key}={other} asks for a structure Google's released ALBERT code "
                                             "never implemented"):
            AlbertConfig.from_json_file(path)


def test_googles_release_config_loads_as_shipped(shared_data):
    shipped = shared_data / "albert_base_v2_release" / "albert_config.json"
    assert "num_memory_blocks" in shipped.read_text()
    assert AlbertConfig.from_json_file(shipped) == AlbertConfig.from_preset("albert_base_v2")


def test_noop_original_keys_must_hold_noop_values():
    with pytest.raises(ValueError, match="down_scale_factor=2"):
        AlbertConfig.from_dict({"down_scale_factor": 2})


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"hidden_size": 100, "num_attention_heads": 12}, "hidden_size 100 is not a multiple of num_attention_heads 12"),
        ({"num_hidden_groups": 13}, "num_hidden_groups 13 exceeds num_hidden_layers 12"),
        ({"sharing": "attention", "num_hidden_groups": 2}, "num_hidden_groups=1 and inner_group_num=1"),
        ({"sharing": "none", "num_hidden_groups": 3}, "must be 1 or 12"),
        ({"sharing": "some"}, "sharing must be one of"),
        ({"hidden_act": "swish"}, "hidden_act must be one of"),
        ({"vocab_size": 0}, "vocab_size must be a positive integer"),
        ({"hidden_dropout_prob": 1.0}, r"hidden_dropout_prob must be in \[0, 1\)"),
        ({"initializer_range": 0}, "initializer_range must be > 0"),
    ],
)
def test_invalid_configs_fail_at_construction_with_the_numbers(overrides, message):
    with pytest.raises(ValueError, match=message):
        AlbertConfig(**overrides)


def test_unknown_keys_and_presets_are_named():
    with pytest.raises(ValueError, match="unknown AlbertConfig keys \\['hiden_size'\\]"):
        AlbertConfig.from_dict({"hiden_size": 768})
    with pytest.raises(ValueError, match="Unknown preset 'albert_huge'"):
        AlbertConfig.from_preset("albert_huge")


def test_bad_json_file_is_named(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="broken.json: not valid JSON"):
        AlbertConfig.from_json_file(path)


def test_group_of_layer_is_the_originals_truncated_float_quotient():
    config = AlbertConfig(num_hidden_layers=5, num_hidden_groups=2)
    assert [config.group_of_layer(layer) for layer in range(5)] == [0, 0, 0, 1, 1]
    # int(15 / 22 * 22) is 14 in floating point (the original's rule), not the exact 15.
    assert AlbertConfig(num_hidden_layers=22, num_hidden_groups=22).group_of_layer(15) == 14
    assert 15 not in AlbertConfig(num_hidden_layers=22, num_hidden_groups=22).used_groups
    none = AlbertConfig(num_hidden_layers=3, sharing="none")
    assert none.num_groups == 3 and [none.group_of_layer(layer) for layer in range(3)] == [0, 1, 2]
