"""`MaskFiller`: what a pretrained model's masked-LM head puts in place of each [MASK].

>>> filler = MaskFiller("ckpt/albert_base")                           # doctest: +SKIP
>>> filler("The capital of France is [MASK].", top_k=2)               # doctest: +SKIP
[[{'score': 0.41, 'token': 1162, 'token_str': 'paris', 'sequence': 'The capital of France is paris.'},
  {'score': 0.07, 'token': 5183, 'token_str': 'lyon', 'sequence': 'The capital of France is lyon.'}]]

The answer for one text is a list per [MASK] of its candidates, best first, each
as Hugging Face's fill-mask pipeline gives them: `score` (probability), `token`
(the piece id), `token_str` (the piece as a word) and `sequence` (the text with
that [MASK] filled in; other [MASK]s stay). A list of texts gives a list of such
answers. Each [MASK] stands for one piece of the model's vocabulary. A text is cut at
max_seq_length tokens: a [MASK] beyond the cut gets no list (`unanswered_note`
says how many). The model is an albert_tf
model directory with pretraining heads (run_pretraining's output, or a converted
Google or Hugging Face checkpoint), or an `albert_tf.export` directory (its encoder
SavedModel's `mlm` signature).
"""

import dataclasses
import os

import numpy as np

from albert_tf.models.inference_model import open_for_inference
from albert_tf.text.packing import check_sequence_length, pack

MASK = "[MASK]"


def encode_with_masks(text, tokenizer, max_seq_length):
    """(input dict of int32 [1, seq], mask positions) for text whose [MASK]s become the [MASK] id."""
    parts = text.split(MASK)
    if len(parts) < 2:
        raise ValueError(f"no {MASK} in {text!r}")
    mask_id = tokenizer.special_ids.mask
    ids = []
    for index, part in enumerate(parts):
        if part.strip():
            ids.extend(tokenizer.encode(part))
        if index < len(parts) - 1:
            ids.append(mask_id)
    word_ids, mask, type_ids = pack(ids, None, max_seq_length, tokenizer.special_ids)
    positions = [i for i, token in enumerate(word_ids) if token == mask_id]
    if not positions:
        raise ValueError(f"every {MASK} of {text!r} lies beyond max_seq_length={max_seq_length}")
    return {"input_word_ids": word_ids[None], "input_mask": mask[None], "input_type_ids": type_ids[None]}, positions


def _fill_one(text, mask_index, tokenizer, token):
    """`text` with its `mask_index`-th [MASK] replaced by piece `token` as a word (a piece that continues a
    word joins the text before it)."""
    word, starts_word = tokenizer.piece_as_word(token)
    word = word or tokenizer.id_to_piece(token)
    parts = text.split(MASK)
    before = MASK.join(parts[:mask_index + 1])
    if not starts_word:
        before = before.rstrip(" ")
    return before + word + MASK.join(parts[mask_index + 1:])


class MaskFiller:
    """Top-k pieces for each [MASK], from a model directory or an export directory (see the module)."""

    def __init__(self, model_path: str | os.PathLike, spm_model_file: str | None = None,
                 vocab_file: str | None = None):
        self.opened = open_for_inference(model_path, "pretrainer", spm_model_file, vocab_file=vocab_file)
        self.export = self.opened.export_dir
        if self.export and "mlm" not in self.opened.saved_model.signatures:
            raise ValueError(f"{self.export}: exported without pretraining heads (no `mlm` signature)")
        # The casing and default length the model records (albert_tf.models.preprocessing_contract).
        self.preprocessing = self.opened.preprocessing
        self.tokenizer = self.opened.tokenizer
        # Never proposed: the vocabulary's padding, [UNK], [CLS], [SEP] and [MASK], and pieces with no text of
        # their own (the bare word-start piece '▁', which shows as nothing, or as a stray '▁' in the filled-in
        # sentence).
        special = set(dataclasses.astuple(self.tokenizer.special_ids))
        self._never_proposed = np.array(sorted(special | {
            token for token in range(self.tokenizer.vocab_size) if not self.tokenizer.piece_as_word(token)[0]}),
            dtype=np.int64)

    def __call__(self, texts: str | list[str], top_k: int = 5, max_seq_length: int | None = None) -> list:
        """The candidates for every [MASK] of `texts` (a string, or a list of them), as the module says.
        `max_seq_length`: default, the length the model records (else 128)."""
        single = isinstance(texts, str)
        answers = []
        for text in [texts] if single else texts:
            answers.append([
                [{"score": probability, "token": token, "token_str": self._word(token),
                  "sequence": _fill_one(text, index, self.tokenizer, token)}
                 for token, probability in candidates]
                for index, (_, candidates) in enumerate(self._top(text, top_k, max_seq_length))])
        return answers[0] if single else answers

    def unanswered_note(self, text, answer, max_seq_length=None):
        """One line saying how many of `text`'s [MASK]s `answer` (this filler's answer for it, at
        `max_seq_length`) leaves out and why; None when it answers them all."""
        masks = text.count(MASK)
        if len(answer) == masks:
            return None
        length = max_seq_length or self.preprocessing.max_seq_length
        positions = self.opened.metadata["albert_config"]["max_position_embeddings"]
        return (f"{len(answer)} of the {masks} [MASK]s answered: the other {masks - len(answer)} lie beyond "
                f"max_seq_length={length} tokens, where the text is cut (the model takes up to {positions})")

    def best_sequence(self, text, answer):
        """`text` with every [MASK] filled with its best candidate in `answer` (this filler's answer for it)."""
        for candidates in answer:  # each fill removes the first [MASK] left
            text = _fill_one(text, 0, self.tokenizer, candidates[0]["token"])
        return text

    def fill(self, text, top_k=5, max_seq_length=None):
        """[(position, [(piece, probability), ...])] per mask, best first: the vocabulary's raw pieces."""
        return [(position, [(self.tokenizer.id_to_piece(token), probability) for token, probability in candidates])
                for position, candidates in self._top(text, top_k, max_seq_length)]

    def _word(self, token):
        return self.tokenizer.piece_as_word(token)[0] or self.tokenizer.id_to_piece(token)

    def _logits(self, inputs, positions):
        padded = np.zeros((1, max(len(positions), 1)), "int32")
        padded[0, : len(positions)] = positions
        if self.export:
            outputs = self.opened.saved_model.signatures["mlm"](masked_lm_positions=padded, **inputs)
        else:
            outputs = self.opened.model({**inputs, "masked_lm_positions": padded}, training=False)
        return np.array(outputs["mlm_logits"])[0, : len(positions)]

    def _top(self, text, top_k, max_seq_length):
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
            raise ValueError(f"top_k={top_k!r}: must be a whole number of candidates, at least 1")
        if max_seq_length is None:
            max_seq_length = self.preprocessing.max_seq_length
        model_positions = self.opened.metadata["albert_config"]["max_position_embeddings"]
        check_sequence_length(max_seq_length, positions=model_positions)
        inputs, positions = encode_with_masks(text, self.tokenizer, max_seq_length)
        logits = self._logits(inputs, positions)
        logits[:, self._never_proposed] = -np.inf
        logits[:, self.tokenizer.vocab_size:] = -np.inf  # rows of a model larger than its vocabulary: no piece
        proposable = int(np.isfinite(logits[0]).sum())
        probabilities = np.exp(logits - logits.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        return [(position, [(int(i), float(row[i])) for i in np.argsort(-row, kind="stable")[:min(top_k, proposable)]])
                for position, row in zip(positions, probabilities)]
