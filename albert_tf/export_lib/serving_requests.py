"""Requests for an exported model under TF Serving: a REST JSON body and a gRPC PredictRequest.

  body = rest_predict_body(["How are you?"])   # POST to http://HOST:8501/v1/models/NAME:predict
  request = grpc_predict_request("albert", ["How are you?"])  # PredictionServiceStub(channel).Predict(request)

Both address the `serving_default` signature (text, optional text_b); a request
without second segments leaves `text_b` out and TF Serving uses the
signature's default.
"""

SIGNATURE = "serving_default"


def _check_pairs(texts, texts_b):
    if texts_b is not None and len(texts_b) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(texts_b)} second segments; pass one per text (\"\" for none)")


def rest_predict_body(texts, texts_b=None, signature_name=SIGNATURE):
    """The JSON body (a dict) of TF Serving's REST predict API, row ("instances") format:
    every instance names the same inputs, so second segments are given for all rows or none."""
    _check_pairs(texts, texts_b)
    if texts_b is None:
        instances = [{"text": text} for text in texts]
    else:
        instances = [{"text": text, "text_b": text_b} for text, text_b in zip(texts, texts_b)]
    return {"signature_name": signature_name, "instances": instances}


def grpc_predict_request(model_name, texts, texts_b=None, signature_name=SIGNATURE, version=None):
    """A tensorflow_serving.apis.predict_pb2.PredictRequest for the raw-text signature."""
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    _check_pairs(texts, texts_b)
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = signature_name
    if version is not None:
        request.model_spec.version.value = version
    request.inputs["text"].CopyFrom(tf.make_tensor_proto(list(texts), dtype=tf.string, shape=[len(texts)]))
    if texts_b is not None:
        request.inputs["text_b"].CopyFrom(tf.make_tensor_proto(list(texts_b), dtype=tf.string, shape=[len(texts_b)]))
    return request
