"""How text must be prepared for a model: the casing and sequence length its albert_tf.json records.

Like Hugging Face's tokenizer_config.json, a model directory says how its inputs were made:
  "lower_case"      whether its text was lowercased (and accents stripped), from the
                    pretraining data's metadata onward: pretraining, fine-tuning,
                    conversion and export all record it;
  "keep_accents"    whether its text kept its accents (the original strips them: absent
                    or false); recorded from the data onward like "lower_case";
  "max_seq_length"  the sequence length it was trained, fine-tuned or exported at;
  "rewrite_quotes"  whether its text had ``` `` ``` and `''` turned into `"` before tokenizing
                    (Hugging Face's rule, after XLNet's; the original keeps them): false for
                    Google's checkpoints and for the models albert_tf pretrains (recorded from the
                    data onward), true for models converted from Hugging Face; fine-tuning,
                    conversion and export carry it on, and every tokenizer follows it.
Every tool that reads a model takes these as its defaults. An explicit setting that
contradicts them is refused with the reason (a length beyond the model's
max_position_embeddings; another casing, unless forced: a cased model fed lowercased
text, or the reverse, sees pieces it was never trained on), or warned about (a length
beyond the one the model was trained at: those positions were never trained).
Directories written before these keys existed record nothing: the old defaults apply
(lowercase, the tool's own length), and for the quotes the original's rule (no rewrite),
which is said once per directory.
"""

import dataclasses
import sys

from albert_tf.settings import SettingError
from albert_tf.text.packing import check_sequence_length

# The sources already told that they record no rewrite_quotes: one line each, not one per call.
_UNRECORDED_QUOTES_SAID = set()


@dataclasses.dataclass(frozen=True)
class Preprocessing:
    lower_case: bool
    max_seq_length: int
    warnings: tuple = ()
    keep_accents: bool = False
    rewrite_quotes: bool = False


def recorded_rewrite_quotes(metadata, source="the model"):
    """Whether the text of the model of `metadata` had `` and '' rewritten as " (its "rewrite_quotes").

    A record without the key (made before albert_tf recorded it, or by another tool) gets the original's
    rule, no rewrite; that is said on stderr, once per `source` in a process.
    """
    recorded = metadata.get("rewrite_quotes")
    if recorded is not None:
        return bool(recorded)
    if metadata.get("vocabulary") == "wordpiece":
        return False  # a SentencePiece ALBERT's rule: a WordPiece model takes quotes as written, nothing to say
    if source not in _UNRECORDED_QUOTES_SAID:
        _UNRECORDED_QUOTES_SAID.add(source)
        print(f"Note: {source} records no rewrite_quotes (it predates that record, or another tool made it): its "
              "text is tokenized by the original's rule, `` and '' kept as they are.", file=sys.stderr, flush=True)
    return False


def resolve_preprocessing(metadata, lower_case=None, max_seq_length=None, default_max_seq_length=128, force=False,
                          source="the model", keep_accents=None, rewrite_quotes=None,
                          record="its albert_tf.json records"):
    """The casing and length to use with the model of `metadata` (its albert_tf.json dict).

    `lower_case`, `max_seq_length`, `keep_accents`, `rewrite_quotes`: the caller's explicit settings, None when
    not given. An explicit `rewrite_quotes` where the model records none is taken as it is.
    `default_max_seq_length`: the length when neither the caller nor the model says one.
    `record`: where `metadata`'s preprocessing keys come from, as the refusal names it (a random start's come
    from its vocabulary's pieces).
    Raises SettingError (a ValueError) for a contradiction that cannot work or that `force` does not allow.
    """
    recorded_case = metadata.get("lower_case")
    recorded_length = metadata.get("max_seq_length")
    positions = metadata["albert_config"]["max_position_embeddings"]
    warnings = []
    if lower_case is None:
        lower_case = True if recorded_case is None else bool(recorded_case)
    elif recorded_case is not None and bool(lower_case) != bool(recorded_case):
        _refuse_or_force("do_lower_case|lower_case", lower_case, "lower_case", recorded_case,
                         "lowercased text" if recorded_case else "cased text",
                         "lowercasing the input" if lower_case else "keeping the case of the input", source, force,
                         warnings, record)
    if max_seq_length is None:
        max_seq_length = min(recorded_length or default_max_seq_length, positions)
    else:
        check_sequence_length(max_seq_length)
    if max_seq_length > positions:
        raise SettingError(f"<max_seq_length>={max_seq_length} exceeds the max_position_embeddings ({positions}) "
                           f"of {source}: it has no position embeddings beyond {positions}")
    if recorded_length and max_seq_length > recorded_length:
        warnings.append(f"max_seq_length {max_seq_length} is longer than the {recorded_length} {source} was trained "
                        f"at: positions {recorded_length}-{max_seq_length - 1} were never trained")
    recorded_accents = bool(metadata.get("keep_accents", False))
    if keep_accents is not None and bool(keep_accents) != recorded_accents:
        _refuse_or_force("keep_accents", keep_accents, "keep_accents", recorded_accents,
                         "text with its accents" if recorded_accents else "text with accents stripped",
                         f"{'keeping' if keep_accents else 'stripping'} the accents of the input", source, force,
                         warnings, record)
    recorded_quotes = metadata.get("rewrite_quotes")
    if rewrite_quotes is None:
        rewrite_quotes = recorded_rewrite_quotes(metadata, source)
    elif recorded_quotes is not None and bool(rewrite_quotes) != bool(recorded_quotes):
        _refuse_or_force("rewrite_quotes", rewrite_quotes, "rewrite_quotes", recorded_quotes,
                         "text with `` and '' rewritten as \"" if recorded_quotes
                         else "text with `` and '' kept as they are",
                         f"{'rewriting' if rewrite_quotes else 'keeping'} the `` and '' of the input", source, force,
                         warnings, record)
    return Preprocessing(bool(lower_case), int(max_seq_length), tuple(warnings),
                         keep_accents=recorded_accents if keep_accents is None else bool(keep_accents),
                         rewrite_quotes=bool(rewrite_quotes))


def _refuse_or_force(setting, value, key, recorded, trained, forcing, source, force, warnings,
                     record="its albert_tf.json records"):
    """An explicit `setting` that contradicts the model's record of `key`: a SettingError naming both, or with
    `force` a warning. `trained`: the model's text ("lowercased text"); `forcing`: what the setting then does
    ("lowercasing the input")."""
    if not force:
        raise SettingError(f"<{setting}>={bool(value)} contradicts {source}, trained on {trained} ({record} "
                           f"{key}={bool(recorded)}): its vocabulary and weights expect that. Leave the "
                           "setting out to use the model's, or pass <force>")
    warnings.append(f"forced: {forcing} for {source}, which was trained on {trained}")
