"""The exception hierarchy, nothing else.

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

__all__ = [
    "BurrowError",
    "BurrowNotFound",
    "BurrowResponseError",
    "BurrowUnavailable",
    "ClusterUnavailable",
    "ConfigError",
    "FreshnessTrackerError",
    "KafkaError",
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
