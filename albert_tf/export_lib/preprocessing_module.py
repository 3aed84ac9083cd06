"""In-graph preprocessing: raw strings -> input_word_ids, input_mask, input_type_ids.

Only TensorFlow and tensorflow-text ops (the tokenizer is `TFAlbertTokenizer`),
so TF Serving runs it, and the ids are those of the Python tokenizer and
`albert_tf.text.packing`: [CLS] A [SEP] (B [SEP]), pairs truncated the original
way (the longer segment loses tokens from its end).

Any length is accepted (truncated to max_seq_length tokens), and an empty
second segment ("") means a single-segment input. Errors: text that is not
valid UTF-8, and a `text_b` that is neither empty nor one string per `text`.

As TF Hub's BERT preprocessors, the SavedModel also has the two halves
separately, for other sequence lengths than the exported one and more control:

  preprocessor = tf.saved_model.load("export/preprocessing")
  ids_a = preprocessor.tokenize(tf.constant(["first segment"]))        # ragged int32 [batch, (tokens)]
  ids_b = preprocessor.tokenize(tf.constant(["second segment"]))
  inputs = preprocessor.bert_pack_inputs([ids_a, ids_b], seq_length=tf.constant(64))
"""

import tensorflow as tf

from albert_tf.text.tf_packing import NO_SECOND_SEGMENTS, TEXT_B_SPEC, TEXT_SPEC, clean_text, encode_text, pack


class Preprocessor(tf.Module):
    """The preprocessing SavedModel's root: `__call__(text, text_b=[])` -> the three int32 tensors.

    Args:
      tokenizer: a `TFAlbertTokenizer`.
      max_seq_length: length of every output row.
      spm_model_file: the SentencePiece model, stored as an asset.
    """

    def __init__(self, tokenizer, max_seq_length, spm_model_file=None, name="preprocessor"):
        super().__init__(name=name)
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.spm_model = tf.saved_model.Asset(spm_model_file) if spm_model_file else None

    @tf.function(input_signature=[TEXT_SPEC, TEXT_B_SPEC])
    def __call__(self, text, text_b=NO_SECOND_SEGMENTS):
        return encode_text(self.tokenizer, text, text_b, self.max_seq_length)

    @tf.function(input_signature=[TEXT_SPEC])
    def tokenize(self, text):
        """Raw strings -> ragged int32 piece ids [batch, (tokens)], no [CLS]/[SEP]."""
        return tf.cast(self.tokenizer(clean_text(text)), tf.int32)

    @tf.function
    def bert_pack_inputs(self, segments, seq_length):
        """[ids_a] or [ids_a, ids_b] (from `tokenize`) -> the encoder's three int32 tensors of
        `seq_length` columns: [CLS] A [SEP] (B [SEP]), the longer segment truncated first."""
        if len(segments) == 1:
            ids_b, has_b = segments[0][:, :0], tf.zeros([segments[0].nrows()], tf.bool)
        else:
            ids_b, has_b = segments[1], tf.ones([segments[0].nrows()], tf.bool)
        return pack(segments[0], ids_b, has_b, seq_length, self.tokenizer.special_ids)

    def trace(self):
        """Traces `bert_pack_inputs` for one and for two segments, so the SavedModel holds both."""
        ids = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1)
        for count in (1, 2):
            self.bert_pack_inputs.get_concrete_function([ids] * count, tf.TensorSpec([], tf.int32))

    def signatures(self):
        return {"serving_default": self.__call__}
