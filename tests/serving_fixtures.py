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
