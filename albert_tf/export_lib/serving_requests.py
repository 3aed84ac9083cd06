"""Requests for an exported model under TF Serving: a REST JSON body and a gRPC PredictRequest.

  body = rest_predict_body(["How are you?"])   # POST to http://HOST:8501/v1/models/NAME:predict
  request = grpc_predict_request("albert", ["How are you?"])  # PredictionServiceStub(channel).Predict(request)
  pairs = rest_predict_body(["A man plays."], ["Someone makes music."])

Single texts address the `serve_text` signature (text), pairs `serving_default`
(text, text_b): each request names every input of its signature, as TF Serving's
REST reader requires (it fills in no signature default; only a gRPC request may
leave `text_b` out, and is then answered as single texts).
"""

# The raw-text signatures of the serving SavedModel (serving_module).
SIGNATURE = "serving_default"
TEXT_SIGNATURE = "serve_text"
# Texts per request a serving model accepts at most, unless its export says otherwise
# (--serving_max_batch_size): far above what interactive clients send (TF Serving's own batching merges
# requests below it), far below what exhausts a server's memory.
DEFAULT_MAX_BATCH_SIZE = 256


def _check_pairs(texts, texts_b):
    if texts_b is not None and len(texts_b) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(texts_b)} second segments; pass one per text (\"\" for none)")


def _signature(signature_name, texts_b):
    if signature_name is not None:
        return signature_name
    return TEXT_SIGNATURE if texts_b is None else SIGNATURE


def rest_predict_body(texts, texts_b=None, signature_name=None):
    """The JSON body (a dict) of TF Serving's REST predict API, row ("instances") format:
    every instance names the same inputs, so second segments are given for all rows or none.
    `signature_name` None: serve_text for single texts, serving_default for pairs."""
    _check_pairs(texts, texts_b)
    if texts_b is None:
        instances = [{"text": text} for text in texts]
    else:
        instances = [{"text": text, "text_b": text_b} for text, text_b in zip(texts, texts_b)]
    return {"signature_name": _signature(signature_name, texts_b), "instances": instances}


def grpc_predict_request(model_name, texts, texts_b=None, signature_name=None, version=None):
    """A tensorflow_serving.apis.predict_pb2.PredictRequest for a raw-text signature
    (`signature_name` None: as rest_predict_body)."""
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    _check_pairs(texts, texts_b)
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = _signature(signature_name, texts_b)
    if version is not None:
        request.model_spec.version.value = version
    request.inputs["text"].CopyFrom(tf.make_tensor_proto(list(texts), dtype=tf.string, shape=[len(texts)]))
    if texts_b is not None:
        request.inputs["text_b"].CopyFrom(tf.make_tensor_proto(list(texts_b), dtype=tf.string, shape=[len(texts_b)]))
    return request
