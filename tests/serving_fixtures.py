"""Checks shared by the tests of exported serving models."""

import numpy as np
import tensorflow as tf


def assert_every_signature_answers_alike(serving, texts, expected):
    """The pair signature with empty second segments and serve_examples (serialized tf.Examples) answer `texts`
    with `expected` ({output name: array}, serve_text's answer), every output equal."""
    pairs = serving.signatures["serving_default"](text=tf.constant(texts), text_b=tf.constant([""] * len(texts)))
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()]))})).SerializeToString()
        for text in texts]
    from_examples = serving.signatures["serve_examples"](examples=tf.constant(examples))
    for answer in (pairs, from_examples):
        for name, value in expected.items():
            np.testing.assert_array_equal(answer[name].numpy(), np.asarray(value), err_msg=name)


def intermediate_sizes(function, *requests):
    """Per request (a list of strings), {tensor name: its bytes} of every value the ops of `function(text)` compute
    at the top level of its graph (not inside loops or conditionals), traced once; a string tensor counts its
    strings' bytes, which TensorFlow's allocator does not see. Deterministic, unlike a process's memory."""
    import tensorflow as tf

    names = []

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def every_value(text):
        function(text)
        tensors = [tensor for op in tf.compat.v1.get_default_graph().get_operations() if op.type != "Placeholder"
                   for tensor in op.outputs if tensor.dtype not in (tf.resource, tf.variant)]
        names[:] = [tensor.name for tensor in tensors]
        return tensors

    def size(value):
        if value.dtype == tf.string:
            return sum(map(len, np.asarray(value.numpy(), object).ravel()))
        return np.asarray(value.numpy()).nbytes

    return [{name: size(value) for name, value in zip(names, every_value(tf.constant(texts)))} for texts in requests]


def faster_than_linear(function, text, factor=4):
    """The intermediates of `function` (`intermediate_sizes`) that grow more than linearly when the one text it
    reads grows `factor` times longer: {name: (bytes on text[:len // factor], bytes on text)}. Sizes that are a
    fixed part plus a part in proportion to the text pass; the square of its length does not."""
    small, large = intermediate_sizes(function, [text[:len(text) // factor]], [text])
    # 1.5 times the linear growth, and 4 KB, for windows and rows rounded up.
    return {name: (small[name], large[name]) for name in small if large[name] > 1.5 * factor * small[name] + 4096}
