"""Where Burrow is and how patiently to ask it: a plain value, importing no HTTP stack; defaults
from reference.conf."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from freshness_tracker.burrow.url import split_credentials
from freshness_tracker.reference import default, default_seconds

__all__ = ["BurrowSettings"]


@dataclass(frozen=True, slots=True)
class BurrowSettings:
    """Where Burrow is and how patiently to ask it."""

    url: str = default("burrow.url")
    timeout_s: float = default_seconds("burrow.timeout")
    # extra attempts after the first, for connection errors and 5xx only
    retries: int = default("burrow.retries")
    backoff_s: float = 0.2  # a fixed policy, not a setting: no key
    concurrency: int = default("burrow.concurrency")  # parallel /lag requests per cluster
    username: str = default("burrow.username")
    password: str = field(default=default("burrow.password"), repr=False)
    ca_file: str = default("burrow.caFile")
    tls_verify: bool = default("burrow.tlsVerify")
    # decoded; a bigger body is a failed request
    max_response_bytes: int = default("burrow.maxResponseBytes")

    def __repr__(self) -> str:
        """Without secrets: the password is never shown, nor credentials left in the URL (the
        config strips them; settings built in code may carry them)."""
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        shown["url"] = split_credentials(self.url)[0]
        return "BurrowSettings(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"
