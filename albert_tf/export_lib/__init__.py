"""The pieces `python -m albert_tf.export` assembles into SavedModels.

  preprocessing_module  raw strings -> input_word_ids, input_mask, input_type_ids (in-graph)
  token_offsets         in-graph token ids with byte offsets into the raw strings (answer text)
  encoder_module        the TF Hub-style encoder (trainable; `mlm` and `sop` signatures, and the
                        original hub module's `tokens` and `tokenization_info`)
  serving_module        TF Serving's raw-text signatures, outputs by model kind
  op_audit              which ops a SavedModel needs, classified in a fresh process
  serving_requests      REST and gRPC request bodies for the serving SavedModel
  serving_warmup        the warm-up requests TF Serving replays while loading
  exported_model        load_export(): an export loaded in Python, called on raw text
  exporter              export(): a checkpoint checked, then written as the three SavedModels
"""
