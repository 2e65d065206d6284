"""Where the listener listens and whom it lets in: a plain value, importing no HTTP stack (the
config package builds it without loading the listener); defaults from reference.conf."""

from __future__ import annotations

from dataclasses import dataclass, field

from freshness_tracker.reference import default

__all__ = ["WebSettings"]


@dataclass(frozen=True, slots=True)
class WebSettings:
    """The listener's settings (HOCON `port`, `listenAddress`, `web.*`; defaults from
    reference.conf)."""

    listen_address: str = default("listenAddress")
    port: int = default("port")
    tls_cert_file: str = default("web.tlsCertFile")
    tls_key_file: str = default("web.tlsKeyFile")
    basic_auth_username: str = default("web.basicAuthUsername")
    basic_auth_password: str = field(default=default("web.basicAuthPassword"), repr=False)
