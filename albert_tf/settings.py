"""Typed settings between the command lines and the library: the error that names a setting.

The library's run configs (`PretrainingConfig`, `FinetuningConfig`, the tasks' configs) are
dataclasses whose fields carry the tools' flag names. A setting that cannot run raises
`SettingError`, whose message writes each setting as `<name>`: the library's message says
`name`, a tool's says `--name` (`for_flags`).
"""

import dataclasses
import re

_SETTING = re.compile(r"<(\w+)>")


class SettingError(ValueError):
    """A setting (or combination) that cannot run. `template` names settings as `<name>`."""

    def __init__(self, template):
        self.template = template
        super().__init__(_SETTING.sub(r"\1", template))

    def for_flags(self):
        """The same error in a command line's words: `--name` for every setting."""
        return ValueError(_SETTING.sub(r"--\1", self.template))


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
