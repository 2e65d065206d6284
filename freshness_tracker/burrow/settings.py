"""Where Burrow is and how patiently to ask it: a plain value, importing no HTTP stack."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BurrowSettings"]


@dataclass(frozen=True, slots=True)
class BurrowSettings:
    """Where Burrow is and how patiently to ask it."""

    url: str = "http://127.0.0.1:8000"
    timeout_s: float = 10.0
    retries: int = 2  # extra attempts after the first, for connection errors and 5xx only
    backoff_s: float = 0.2
    concurrency: int = 8  # parallel /lag requests per cluster
    username: str = ""
    password: str = field(default="", repr=False)
    ca_file: str = ""
    tls_verify: bool = True
    max_response_bytes: int = 16 * 1024 * 1024  # decoded; a bigger body is a failed request
