"""How text must be prepared for a model: the casing and sequence length its albert_tf.json records.

Like Hugging Face's tokenizer_config.json, a model directory says how its inputs were made:
  "lower_case"      whether its text was lowercased (and accents stripped), from the
                    pretraining data's metadata onward: pretraining, fine-tuning,
                    conversion and export all record it;
  "keep_accents"    whether its text kept its accents (the original strips them: absent
                    or false); recorded from the data onward like "lower_case";
  "max_seq_length"  the sequence length it was trained, fine-tuned or exported at.
Every tool that reads a model takes these as its defaults. An explicit setting that
contradicts them is refused with the reason (a length beyond the model's
max_position_embeddings; another casing, unless forced: a cased model fed lowercased
text, or the reverse, sees pieces it was never trained on), or warned about (a length
beyond the one the model was trained at: those positions were never trained).
Directories written before these keys existed record nothing: the old defaults apply
(lowercase, the tool's own length).
"""

import dataclasses

from albert_tf.settings import SettingError


@dataclasses.dataclass(frozen=True)
class Preprocessing:
    lower_case: bool
    max_seq_length: int
    warnings: tuple = ()
    keep_accents: bool = False


def resolve_preprocessing(metadata, lower_case=None, max_seq_length=None, default_max_seq_length=128, force=False,
                          source="the model", keep_accents=None):
    """The casing and length to use with the model of `metadata` (its albert_tf.json dict).

    `lower_case`, `max_seq_length`, `keep_accents`: the caller's explicit settings, None when not given.
    `default_max_seq_length`: the length when neither the caller nor the model says one.
    Raises SettingError (a ValueError) for a contradiction that cannot work or that `force` does not allow.
    """
    recorded_case = metadata.get("lower_case")
    recorded_length = metadata.get("max_seq_length")
    positions = metadata["albert_config"]["max_position_embeddings"]
    warnings = []
    if lower_case is None:
        lower_case = True if recorded_case is None else bool(recorded_case)
    elif recorded_case is not None and bool(lower_case) != bool(recorded_case):
        trained = "lowercased" if recorded_case else "cased"
        if not force:
            raise SettingError(f"<do_lower_case|lower_case>={bool(lower_case)} contradicts {source}, trained on "
                               f"{trained} text (its albert_tf.json records lower_case={bool(recorded_case)}): its "
                               "vocabulary and weights expect that casing. Leave the setting out to use the model's, "
                               "or pass <force>")
        warnings.append(f"forced: {'lowercasing' if lower_case else 'keeping the case of'} the input for {source}, "
                        f"which was trained on {trained} text")
    if max_seq_length is None:
        max_seq_length = min(recorded_length or default_max_seq_length, positions)
    if max_seq_length > positions:
        raise SettingError(f"<max_seq_length>={max_seq_length} exceeds the max_position_embeddings ({positions}) "
                           f"of {source}: it has no position embeddings beyond {positions}")
    if recorded_length and max_seq_length > recorded_length:
        warnings.append(f"max_seq_length {max_seq_length} is longer than the {recorded_length} {source} was trained "
                        f"at: positions {recorded_length}-{max_seq_length - 1} were never trained")
    recorded_accents = bool(metadata.get("keep_accents", False))
    if keep_accents is not None and bool(keep_accents) != recorded_accents:
        trained = "with its accents" if recorded_accents else "with accents stripped"
        if not force:
            raise SettingError(f"<keep_accents>={bool(keep_accents)} contradicts {source}, trained on text {trained}: "
                               "its vocabulary and weights expect that. Leave the setting out to use the model's, "
                               "or pass <force>")
        warnings.append(f"forced: {'keeping' if keep_accents else 'stripping'} the accents of the input for "
                        f"{source}, which was trained on text {trained}")
    return Preprocessing(bool(lower_case), int(max_seq_length), tuple(warnings),
                         keep_accents=recorded_accents if keep_accents is None else bool(keep_accents))
