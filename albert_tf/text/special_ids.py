"""The ids of the pieces that packing and masking put into a sequence, as a vocabulary lays them out.

A SentencePiece ALBERT vocabulary has them at 0-4 (<pad>, <unk>, [CLS], [SEP], [MASK]); a WordPiece vocab.txt
wherever its lines put them (BERT's layout: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103). Every module
that builds or reads ids asks the tokenizer (`tokenizer.special_ids`) or the data set's metadata for them, so
one package serves both kinds of vocabulary.

Sequences are padded with 0 whatever the vocabulary, as the original pads (`input_ids.append(0)`): padded
positions are masked out of attention and losses, so their id is never read as a piece. `pad` is the
vocabulary's own padding piece (what decoding skips, what a converted tokenizer names pad_token); every
vocabulary seen has it at 0.
"""

import dataclasses

PADDING_ID = 0


@dataclasses.dataclass(frozen=True)
class SpecialIds:
    """The vocabulary's ids of its padding piece, [UNK], [CLS], [SEP] and [MASK]."""

    pad: int
    unk: int
    cls: int
    sep: int
    mask: int

    def to_json(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, value, source="special_ids"):
        """SpecialIds of a recorded dict (a data set's or a model's metadata); ValueError naming `source` when it
        is not one."""
        names = [field.name for field in dataclasses.fields(cls)]
        if (not isinstance(value, dict) or sorted(value) != sorted(names)
                or not all(isinstance(value[name], int) and not isinstance(value[name], bool) and value[name] >= 0
                           for name in names)):
            raise ValueError(f"{source}: expected an object of non-negative integer ids {', '.join(names)}, "
                             f"got {value!r}")
        return cls(**value)


# A SentencePiece ALBERT vocabulary's layout (albert_tf.text.albert_tokenizer checks every model against it).
ALBERT_SPECIAL_IDS = SpecialIds(pad=0, unk=1, cls=2, sep=3, mask=4)


def recorded_special_ids(metadata, source):
    """The special ids a data set's or a model's metadata records; ALBERT's SentencePiece layout when it records
    none (everything written before WordPiece vocabularies was SentencePiece)."""
    recorded = (metadata or {}).get("special_ids")
    return ALBERT_SPECIAL_IDS if recorded is None else SpecialIds.from_json(recorded, f"{source}: \"special_ids\"")
