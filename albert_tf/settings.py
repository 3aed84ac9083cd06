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


def check_at_least(config, names, minimum, allow_none=True):
    """SettingError for the first of `names` whose value is below `minimum` (None passes when allowed)."""
    for name in names:
        value = getattr(config, name)
        if value is None and allow_none:
            continue
        if value is None or value < minimum:
            raise SettingError(f"<{name}> must be >= {minimum}, got {value}")


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
