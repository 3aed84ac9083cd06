"""Typed settings between the command lines and the library: the error that names a setting.

The library's run configs (`PretrainingConfig`, `FinetuningConfig`, the tasks' configs) are
dataclasses whose fields carry the tools' flag names. A setting that cannot run raises
`SettingError`, whose message writes each setting as `<name>`: the library's message says
`name`, a tool's says `--name` (`for_flags`). Where a Python parameter is named otherwise than
its flag (a flag named after a Python keyword, such as convert's --from), `<flag|parameter>`
says `parameter` in the library's words and `--flag` in a command line's.
"""

import dataclasses
import difflib
import math
import numbers
import re

_SETTING = re.compile(r"<(\w+)(?:\|(\w+))?>")


class SettingError(ValueError):
    """A setting (or combination) that cannot run. `template` names settings as `<name>` or `<flag|parameter>`."""

    def __init__(self, template):
        self.template = template
        super().__init__(_SETTING.sub(lambda setting: setting[2] or setting[1], template))

    def for_flags(self):
        """The same error in a command line's words: `--name` (`--flag`) for every setting."""
        return ValueError(_SETTING.sub(r"--\1", self.template))


class SettingFileNotFound(SettingError, FileNotFoundError):
    """A file a setting names, or must name, is missing (still a FileNotFoundError to callers)."""


class SettingFileExists(SettingError, FileExistsError):
    """An output a setting names exists and the settings do not allow replacing it (still a FileExistsError)."""


def field_default(config_class, name):
    """The default of a dataclass field (what a tool's flag of the same name defaults to)."""
    field = config_class.__dataclass_fields__[name]
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


@dataclasses.dataclass(frozen=True)
class NumberRange:
    """The values a numeric setting may take: a finite number (an integer where `integer`) from `low` to
    `high`, each end included unless `low_open` / `high_open`; a None end leaves that side unbounded.

    NaN and infinity never pass: NaN compares false with every bound, so a plain `if rate <= 0` lets it
    through to train on NaN, and no rate, weight or length is meant to be infinite. Nor do booleans
    (True is an int to Python, never a count or a rate to a user) or strings.

    >>> PROBABILITY.problem("masked_lm_prob", float("nan"))  # what `check` raises as a SettingError
    '<masked_lm_prob> must be a finite number in [0, 1], got nan'
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False

    def __str__(self):
        return self._described("")

    def admits(self, value) -> bool:
        if not _is_number(value) or not _is_finite(value) or (self.integer and not isinstance(value, numbers.Integral)):
            return False
        below = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        above = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        return not (below or above)

    def requirement(self, value) -> str | None:
        """None when `value` lies in the range, else what it must be: "> 0", "an integer >= 3", and
        "a finite number > 0" for NaN or infinity (whose "got nan" alone would not say what is wrong)."""
        if self.admits(value):
            return None
        if not _is_number(value):
            return self._described("a number")
        return self._described("" if _is_finite(value) else "a finite number")

    def problem(self, name, value, why="") -> str | None:
        """None when `value` lies in the range, else the message naming setting `name` (as `<name>`)."""
        requirement = self.requirement(value)
        if requirement is None:
            return None
        shown = value if _is_number(value) else repr(value)
        return f"<{name}> must be {requirement}{f' ({why})' if why else ''}, got {shown}"

    def check(self, name, value, allow_none=False, why=""):
        """`value`, or SettingError naming setting `name` when it lies outside (None passes when allowed)."""
        problem = None if value is None and allow_none else self.problem(name, value, why)
        if problem:
            raise SettingError(problem)
        return value

    def check_fields(self, config, names, allow_none=True):
        """SettingError for the first of `config`'s fields `names` outside the range."""
        for name in names:
            self.check(name, getattr(config, name), allow_none)

    def _described(self, noun):
        """The range in words, after `noun` ("a finite number") where the bounds alone would not say it."""
        if self.integer and self.low == 1 and not self.low_open and self.high is None:
            return "a positive integer"
        if self.low is not None and self.high is not None:
            bounds = f"in {'(' if self.low_open else '['}{self.low}, {self.high}{')' if self.high_open else ']'}"
        elif self.low is not None:
            bounds = f"{'>' if self.low_open else '>='} {self.low}"
        elif self.high is not None:
            bounds = f"{'<' if self.high_open else '<='} {self.high}"
        else:
            bounds = ""
        noun = "an integer" if self.integer else noun or ("" if bounds else "a finite number")
        return " ".join(part for part in (noun, bounds) if part)


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_finite(value):
    # An int always is (and math.isfinite cannot convert one beyond a float's range).
    return isinstance(value, numbers.Integral) or math.isfinite(value)


# The ranges most settings share.
POSITIVE = NumberRange(low=0, low_open=True)  # rates, norms, epochs
NON_NEGATIVE = NumberRange(low=0)  # weights, decay rates, hours
PROBABILITY = NumberRange(low=0, high=1)
DROPOUT_RATE = NumberRange(low=0, high=1, high_open=True)  # 1 would drop everything (Keras divides by 1 - rate)
POSITIVE_INTEGER = NumberRange(low=1, integer=True)  # counts: steps, batches, examples


def raise_problems(problems):
    """One SettingError for every problem of `problems` (messages from `NumberRange.problem`; None for none)."""
    problems = [problem for problem in problems if problem]
    if problems:
        raise SettingError("; ".join(problems))


def check_at_least(config, names, minimum, allow_none=True):
    """SettingError for the first of `names` whose value is not a finite number >= `minimum` (None passes
    when allowed)."""
    NumberRange(low=minimum).check_fields(config, names, allow_none)


# What keras.Model's functional constructor itself takes; every other keyword it drops silently.
KERAS_ARGUMENTS = ("name", "trainable")


def refuse_unknown_keywords(caller: str, given, accepted) -> None:
    """TypeError naming each of `given` not in `accepted` (with the nearest accepted name), and the accepted ones."""
    unknown = [name for name in given if name not in accepted]
    if not unknown:
        return
    named = []
    for name in unknown:
        nearest = difflib.get_close_matches(name, accepted, n=1)
        named.append(f"{name!r}" + (f" (did you mean {nearest[0]!r}?)" if nearest else ""))
    raise TypeError(f"{caller} got unknown keyword argument{'s' if len(unknown) > 1 else ''} {', '.join(named)}; "
                    f"accepted: {', '.join(sorted(accepted))}")


def merge_synonyms(caller: str, arguments: dict, synonyms: dict) -> dict:
    """`arguments` with each other library's name (`synonyms`: theirs -> ours) moved to ours; TypeError when
    both are given with different values."""
    merged = dict(arguments)
    for theirs, ours in synonyms.items():
        if theirs not in merged:
            continue
        value = merged.pop(theirs)
        if value is None:
            continue
        if merged.get(ours) is not None and merged[ours] != value:
            raise TypeError(f"{caller}: {theirs}={value!r} and {ours}={merged[ours]!r} disagree; {theirs} is "
                            f"KerasHub's name for {ours}: pass one of them")
        merged[ours] = value
    return merged
