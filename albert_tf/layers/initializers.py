"""The initializer every ALBERT weight matrix uses."""

import keras


def truncated_normal(stddev):
    # Truncated at two standard deviations, like tf.compat.v1's
    # truncated_normal_initializer in the original code.
    return keras.initializers.TruncatedNormal(stddev=stddev)
