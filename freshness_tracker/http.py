"""The HTTP listener: /metrics (Prometheus), /healthz, /readyz and a landing page at /.

Built on prometheus_client's WSGI app and the standard library's WSGI server: no web framework.
Optional TLS and basic auth follow the Prometheus exporter-toolkit conventions.
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import ssl
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from freshness_tracker.config.settings import WebSettings

__all__ = ["HealthFn", "MetricsServer", "make_app"]

log = logging.getLogger(__name__)

#: Returns (healthy, JSON-able details).
HealthFn = Callable[[], tuple[bool, dict[str, Any]]]

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

LANDING = b"""<html><head><title>freshness-tracker</title></head><body>
<h1>freshness-tracker</h1><p>How far behind, in time, every Kafka consumer group is.</p>
<ul><li><a href="/metrics">/metrics</a></li><li><a href="/healthz">/healthz</a></li>
<li><a href="/readyz">/readyz</a></li></ul></body></html>"""


def _json(start: StartResponse, ok: bool, body: dict[str, Any]) -> list[bytes]:
    start("200 OK" if ok else "503 Service Unavailable", [("Content-Type", "application/json")])
    return [json.dumps(body, sort_keys=True).encode()]


def make_app(
    registry: CollectorRegistry,
    health: HealthFn,
    ready: HealthFn,
    web: WebSettings | None = None,
) -> WsgiApp:
    """Route requests; with basic auth configured every path but /healthz needs credentials."""
    metrics = make_wsgi_app(registry)
    expected = b""
    if web is not None and web.basic_auth_username:
        token = f"{web.basic_auth_username}:{web.basic_auth_password}".encode()
        expected = b"Basic " + base64.b64encode(token)

    def app(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/healthz":  # probes carry no credentials
            return _json(start, *health())
        if expected:
            given = environ.get("HTTP_AUTHORIZATION", "").encode()
            if not hmac.compare_digest(given, expected):
                start("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="freshness-tracker"'),
                                           ("Content-Type", "text/plain")])
                return [b"Unauthorized\n"]
        if path == "/metrics":
            served: Iterable[bytes] = metrics(environ, start)
            return served
        if path == "/readyz":
            return _json(start, *ready())
        if path == "/":
            start("200 OK", [("Content-Type", "text/html")])
            return [LANDING]
        start("404 Not Found", [("Content-Type", "text/plain")])
        return [b"Not Found\n"]

    return app


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http %s", format % args)


class MetricsServer:
    """Serves a WSGI app on its own thread; `port=0` picks a free port (tests)."""

    def __init__(self, app: WsgiApp, web: WebSettings) -> None:
        self._server = make_server(web.listen_address, web.port, app,
                                   server_class=_ThreadingServer, handler_class=_QuietHandler)
        if web.tls_cert_file:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(web.tls_cert_file, web.tls_key_file)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.2}, name="http", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=2)
