"""The exception hierarchy, and how an error describes a configured value (`described`).

    FreshnessTrackerError
    ├── ConfigError             key path + problem + fix; the CLI exits 2
    ├── BurrowError
    │   ├── BurrowUnavailable   connect/timeout/5xx after retries
    │   ├── BurrowNotFound      404 NOTFOUND: group or cluster gone; never retried
    │   └── BurrowResponseError an unexpected body (URL + short excerpt)
    └── KafkaError
        └── ClusterUnavailable  no broker of the cluster answered
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from dateutil.relativedelta import relativedelta

__all__ = [
    "BurrowError",
    "BurrowNotFound",
    "BurrowResponseError",
    "BurrowUnavailable",
    "ClusterUnavailable",
    "ConfigError",
    "FreshnessTrackerError",
    "KafkaError",
    "described",
    "scalar_kind",
]


class FreshnessTrackerError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigError(FreshnessTrackerError):
    """The configuration is wrong; the message names the HOCON key and the fix."""

    def __init__(self, key: str, problem: str, fix: str = "") -> None:
        self.key = key
        self.problem = problem
        self.fix = fix
        super().__init__(f"{key}: {problem}" + (f"; {fix}" if fix else ""))


def described(value: Any) -> str:
    """A value for an error, by its kind and length, never as written: a setting's value may
    come from a substitution (`${SOME_PASSWORD}` in a numeric setting), and errors are
    logged. The one way every config reader names a value it refuses."""
    if isinstance(value, str):
        return f"a string of {len(value)} characters" if value.strip() else "an empty string"
    if value is None:
        return "null"
    return scalar_kind(value)


def scalar_kind(value: Any) -> str:
    """What an unquoted value was read as, without the value (it may be a secret)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, relativedelta | timedelta):
        return "a duration"
    return f"a {type(value).__name__}"


class BurrowError(FreshnessTrackerError):
    """Burrow could not give a usable answer."""

    def __init__(self, message: str, url: str = "") -> None:
        self.url = url
        super().__init__(message)


class BurrowUnavailable(BurrowError):
    """Connection refused, timeout or 5xx, after the configured retries."""


class BurrowNotFound(BurrowError):
    """HTTP 404: Burrow no longer knows the cluster or group."""


class BurrowResponseError(BurrowError):
    """The body is not the JSON shape Burrow v3 documents (HTML, truncated, wrong types)."""


class KafkaError(FreshnessTrackerError):
    """Kafka could not be read."""


class ClusterUnavailable(KafkaError):
    """No broker of a cluster could be reached (bootstrap, auth or TLS failure)."""
