"""The packaged reference.conf: the one place every default is written.

HOCON users get these values by merging their file over it (`config/load.py`); code that builds
settings directly (tests, the Spark workers, embedders) gets them as the settings types' field
defaults, which read them here. Environment overrides (`${?VAR}`) are not applied here: a type's
default is the documented value, never the environment of the importing process.

Light on purpose (pyhocon and the standard library only): every settings module imports it.
"""

from __future__ import annotations

import functools
import re
from datetime import timedelta
from importlib import resources
from typing import Any

from dateutil.relativedelta import relativedelta
from pyhocon import ConfigFactory, ConfigTree

from freshness_tracker.errors import ConfigError, described

__all__ = ["default", "default_seconds", "parse_duration", "reference_text", "reference_tree"]

#: Read as a resource of the top package, not of `freshness_tracker.config`: that would import
#: the config package, whose parser imports every settings type, which import this. A resource
#: (not a path) so a package shipped as a zip (`--py-files`) reads it too.
_REFERENCE = ("config", "reference.conf")
_ENV_OVERRIDE = re.compile(r"^\s*[\w.\"-]+\s*=\s*\$\{\?\w+\}\s*$", re.MULTILINE)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_UNITS = {"": 1.0, "ms": 1e-3, "millis": 1e-3, "milliseconds": 1e-3, "s": 1.0, "second": 1.0,
          "seconds": 1.0, "m": 60.0, "minute": 60.0, "minutes": 60.0, "h": 3600.0,
          "hour": 3600.0, "hours": 3600.0, "d": 86400.0, "day": 86400.0, "days": 86400.0}


@functools.cache
def reference_text() -> str:
    """The packaged reference.conf: every key with its default."""
    return resources.files("freshness_tracker").joinpath(*_REFERENCE).read_text(encoding="utf-8")


@functools.cache
def reference_tree() -> ConfigTree:
    """The reference parsed once per process: the defaults, and every known key (what the
    config's unknown-key check compares a user's file with)."""
    return ConfigFactory.parse_string(_ENV_OVERRIDE.sub("", reference_text()), resolve=True)


def default(key: str) -> Any:
    """The reference value of a HOCON key (`lookup.batchSize`), as HOCON parsed it."""
    value = reference_tree().get(key)
    return list(value) if isinstance(value, list) else value


def default_seconds(key: str) -> float:
    """The reference value of a duration key, in seconds."""
    return parse_duration(default(key), key)


def parse_duration(value: Any, key: str) -> float:
    """Seconds from a number or a HOCON duration ("10s", "500ms", "5m").

    A refused value is described by its kind and length, never quoted: it may have come from
    a substitution of a secret, and the error is logged."""
    if isinstance(value, relativedelta):
        if value.months or value.years:  # pyhocon keeps them apart: they have no fixed length
            raise ConfigError(key, "months and years have no fixed length",
                              "write the duration in days, e.g. 30d")
        base = value.days * 86400 + value.hours * 3600 + value.minutes * 60 + value.seconds
        return float(base + value.microseconds / 1e6)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool):
        raise ConfigError(key, f"expected a duration, got {described(value)}",
                          "write e.g. 10s, 500ms or 5m")
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION.match(str(value))
    if match and match.group(2).lower() in _UNITS:
        return float(match.group(1)) * _UNITS[match.group(2).lower()]
    raise ConfigError(key, f"expected a duration, got {described(value)}",
                      "write e.g. 10s, 500ms or 5m")
