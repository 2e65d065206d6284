"""The HTTP listener: /metrics (Prometheus), /healthz, /readyz and a landing page at /.

The standard library's WSGI server, no web framework. /metrics serves the bytes a
`CachedExposition` rendered once per snapshot (a scrape copies them); given a plain registry
instead, it is prometheus_client's own WSGI app (tests, small tools).
Optional TLS and basic auth follow the Prometheus exporter-toolkit conventions.

No client can wedge the listener: the accept thread only accepts (the TLS handshake runs on the
connection's own thread), every phase of a connection has a hard deadline enforced by a reaper
that shuts the socket down whatever the thread is blocked in (a per-read timeout alone never
cuts a client that drips a byte at a time), and the number of connection threads is capped.
"""

from __future__ import annotations

import base64
import contextlib
import hmac
import io
import json
import logging
import socket
import ssl
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app

from freshness_tracker.reference import default
from freshness_tracker.sinks.exposition import Answer, CachedExposition

__all__ = ["LISTEN_BACKLOG", "HealthFn", "ListenerLimits", "MetricsServer", "make_app",
           "tls_context"]

log = logging.getLogger(__name__)


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

#: Returns (healthy, JSON-able details).
HealthFn = Callable[[], tuple[bool, dict[str, Any]]]
#: The status page for a query (``cluster``, ``group``): HTML bytes.
StatusPageFn = Callable[[Mapping[str, str]], bytes]

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

#: Connections the kernel queues before accept(). Python's default of 5 overflowed with 50
#: concurrent scrapers (dropped SYNs, retried by clients after 1 s, 3 s, 7 s). Like Go, ask for
#: the system's maximum: the kernel clamps it to net.core.somaxconn.
LISTEN_BACKLOG = max(128, socket.SOMAXCONN)

#: Buffers one sendmsg() call takes at most (Linux's IOV_MAX).
IOV_MAX = 1024

#: The interpreter's thread switch interval while the listener runs. A scrape waits for the GIL
#: after each syscall; cycles keep dozens of threads busy (each cluster's Burrow workers), and at
#: Python's default 5 ms those waits made the p99 of a scrape 5–14 s with 20 clusters cycling,
#: 0.4 s at 1 ms, with no measurable change in a cycle's CPU time (docs/scale.md).
SWITCH_INTERVAL_S = 0.001

#: A repeated rejection is logged at most this often, with the count since the last line.
REJECT_LOG_INTERVAL_S = 60.0

LANDING = b"""<html><head><title>freshness-tracker</title></head><body>
<h1>freshness-tracker</h1><p>How far behind, in time, every Kafka consumer group is.</p>
<ul><li><a href="/metrics">/metrics</a></li><li><a href="/healthz">/healthz</a></li>
<li><a href="/readyz">/readyz</a></li></ul></body></html>"""


@dataclass(frozen=True, slots=True)
class ListenerLimits:
    """How long and how many: each deadline covers a whole phase, however the bytes trickle."""

    handshake_timeout_s: float = 10.0  # TLS handshake, from accept
    request_timeout_s: float = 10.0  # request line and headers, after the handshake
    response_timeout_s: float = 60.0  # the rest: rendering and writing the answer
    io_timeout_s: float = 10.0  # any single read or write (a client that stops reading)
    max_connections: int = 128  # connection threads; beyond, new connections are closed


def _json(start: StartResponse, ok: bool, body: dict[str, Any]) -> list[bytes]:
    start("200 OK" if ok else "503 Service Unavailable", [("Content-Type", "application/json")])
    return [json.dumps(body, sort_keys=True).encode()]


def _exposition_app(exposition: CachedExposition) -> WsgiApp:
    """/metrics from cached bytes, answering methods and parameters as prometheus_client's
    WSGI app does (OPTIONS, 405, `name[]`, Accept and Accept-Encoding negotiation)."""

    def app(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        if method == "OPTIONS":
            start("200 OK", [("Allow", "OPTIONS,GET")])
            return [b""]
        if method != "GET":
            start("405 Method Not Allowed", [("Allow", "OPTIONS,GET")])
            return [f"# HTTP 405 Method Not Allowed: {method}; use OPTIONS or GET\n".encode()]
        names = parse_qs(environ.get("QUERY_STRING", "")).get("name[]")
        answer = exposition.answer(environ.get("HTTP_ACCEPT"),
                                   environ.get("HTTP_ACCEPT_ENCODING"), names)
        gzip = [("Content-Encoding", "gzip")] if answer.gzip else []
        start("200 OK", [("Content-Type", answer.content_type), *gzip,
                         ("Content-Length", str(answer.length))])
        return answer  # the Answer itself: the listener sends it with vectored writes

    return app


def make_app(
    metrics_source: CachedExposition | CollectorRegistry,
    health: HealthFn,
    ready: HealthFn,
    web: WebSettings | None = None,
    status_page: StatusPageFn | None = None,
) -> WsgiApp:
    """Route requests; with basic auth configured every path but /healthz needs credentials.
    ``status_page`` renders `/` from the query string (a plain landing page without it)."""
    metrics = (_exposition_app(metrics_source) if isinstance(metrics_source, CachedExposition)
               else make_wsgi_app(metrics_source))
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
            return metrics(environ, start)
        if path == "/readyz":
            return _json(start, *ready())
        if path == "/":
            if status_page is None:
                start("200 OK", [("Content-Type", "text/html")])
                return [LANDING]
            query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
            start("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                             ("Cache-Control", "no-store")])
            return [status_page(query)]
        start("404 Not Found", [("Content-Type", "text/plain")])
        return [b"Not Found\n"]

    return app


def tls_context(web: WebSettings) -> ssl.SSLContext:
    """The listener's server context (raises ssl.SSLError / OSError on unusable files)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(web.tls_cert_file, web.tls_key_file)
    return context


def _cut(sock: socket.socket) -> None:
    # socket.socket's own shutdown, not SSLSocket's: that one also drops the TLS state under
    # the feet of the thread still reading it. Only the syscall is wanted: it wakes that thread.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Reaper:
    """One thread that shuts down every connection still open past its current deadline.

    Cuts happen under the lock, and a connection is disarmed (under the lock) before it is
    closed, so a cut can never hit a file descriptor the kernel has already reused.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[socket.socket, float] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    def arm(self, sock: socket.socket, seconds: float) -> None:
        with self._cond:
            if self._closed:
                _cut(sock)
                return
            self._due[sock] = time.monotonic() + seconds
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="http-reaper",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def disarm(self, sock: socket.socket) -> None:
        with self._cond:
            self._due.pop(sock, None)

    def close(self) -> None:
        """Cut every open connection (their threads end at once) and stop the thread."""
        with self._cond:
            self._closed = True
            for sock in self._due:
                _cut(sock)
            self._due.clear()
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                for sock, due in list(self._due.items()):
                    if due <= now:
                        del self._due[sock]
                        _cut(sock)
                soonest = min(self._due.values(), default=None)
                self._cond.wait(None if soonest is None else max(soonest - now, 0.0))


class _ErrorLog(io.StringIO):
    """wsgiref prints a failed request's traceback to stderr: one log line instead (a scraper
    that stopped reading is worth a line, not a traceback); the traceback at DEBUG."""

    def flush(self) -> None:
        text = self.getvalue().strip()
        if text:
            log.warning("http request failed: %s", text.splitlines()[-1])
            log.debug("http request failed:\n%s", text)
        self.seek(0)
        self.truncate()


def send_all(sock: socket.socket, chunks: Iterable[bytes]) -> int:
    """Send `chunks` with vectored writes: one syscall, and one wait for the GIL after it, per
    socket buffer's worth instead of per chunk (a scrape must not queue for the interpreter
    hundreds of times while cycles keep it busy). Returns the bytes sent."""
    views = [memoryview(c) for c in chunks if c]
    total = 0
    first = 0
    while first < len(views):
        sent = sock.sendmsg(views[first:first + IOV_MAX])
        total += sent
        while sent:
            size = len(views[first])
            if sent >= size:
                sent -= size
                first += 1
            else:
                views[first] = views[first][sent:]
                sent = 0
    return total


class _ServerHandler(ServerHandler):
    """wsgiref's handler, sending a cached /metrics `Answer` with vectored writes (its hook for
    "platform-specific file transmission"); TLS sockets have no sendmsg: chunk by chunk."""

    request_handler: _Handler
    result: Any

    def result_is_file(self) -> bool:
        return isinstance(self.result, Answer) and not isinstance(
            self.request_handler.connection, ssl.SSLSocket)

    def sendfile(self) -> bool:
        assert isinstance(self.result, Answer)
        self.send_headers()
        self._flush()
        conn = self.request_handler.connection
        with _kernel_send_timeout(conn):
            self.bytes_sent = send_all(conn, self.result.chunks)
        return True


@contextlib.contextmanager
def _kernel_send_timeout(sock: socket.socket) -> Iterator[None]:
    """The socket's timeout applied by the kernel (SO_SNDTIMEO) instead of by Python, for one
    answer. With a Python timeout a send is a poll plus a non-blocking write of what the socket
    buffer holds, each followed by a wait for the interpreter; a blocking write moves the whole
    answer in one call, as long as the client reads. The kernel's timer restarts with each
    write that moved bytes: a client that stops reading is cut after two or three timeouts
    (the last write moves nothing: EAGAIN), one that reads slowly but steadily is served until
    the reaper's response deadline, which bounds every answer."""
    timeout = sock.gettimeout()
    if timeout is None:
        yield
        return
    seconds = max(timeout, 0.001)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                    struct.pack("ll", int(seconds), int(seconds % 1 * 1e6)))
    sock.settimeout(None)
    try:
        yield
    finally:
        sock.settimeout(timeout)


class _Handler(WSGIRequestHandler):
    server: _Server

    def handle(self) -> None:
        """WSGIRequestHandler.handle, with the handler above."""
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536:
            self.requestline = ""
            self.request_version = ""
            self.command = ""
            self.send_error(414)
            return
        if not self.parse_request():
            return
        handler = _ServerHandler(self.rfile, self.wfile,  # type: ignore[arg-type]
                                 self.get_stderr(), self.get_environ(), multithread=False)
        handler.request_handler = self
        app = self.server.get_app()
        assert app is not None
        handler.run(app)

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        if parsed:  # the head is in: the answer gets its own, longer deadline
            self.server.reaper.arm(self.connection, self.server.limits.response_timeout_s)
        return parsed

    def get_stderr(self) -> _ErrorLog:
        return _ErrorLog()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http %s", format % args)


class _Server(ThreadingMixIn, WSGIServer):
    """A WSGI server that only accepts on its own thread; everything else is per connection."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address: tuple[str, int], tls: ssl.SSLContext | None,
                 limits: ListenerLimits) -> None:
        self.tls = tls
        self.limits = limits
        self.reaper = _Reaper()
        self.active = 0
        self._lock = threading.Lock()
        self._rejected = 0
        self._rejected_logged_at = float("-inf")
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            full = self.active >= self.limits.max_connections
            if not full:
                self.active += 1
        if full:
            self._reject(client_address)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        conn: socket.socket = request
        try:
            conn.settimeout(self.limits.io_timeout_s)
            if self.tls is not None:
                conn = self.tls.wrap_socket(request, server_side=True,
                                            do_handshake_on_connect=False)
                self.reaper.arm(conn, self.limits.handshake_timeout_s)
                conn.do_handshake()
            self.reaper.arm(conn, self.limits.request_timeout_s)
            self.finish_request(conn, client_address)
        except OSError as exc:  # timeouts, resets, handshake failures, cut by the reaper
            log.debug("http connection from %s ended: %s", client_address[0], exc)
        except Exception:
            log.warning("http connection from %s failed", client_address[0], exc_info=True)
        finally:
            self.reaper.disarm(conn)
            self.shutdown_request(conn)
            self._release()

    def _release(self) -> None:
        with self._lock:
            self.active -= 1

    def _reject(self, client_address: Any) -> None:
        with self._lock:
            self._rejected += 1
            now = time.monotonic()
            if now - self._rejected_logged_at < REJECT_LOG_INTERVAL_S:
                return
            count, self._rejected, self._rejected_logged_at = self._rejected, 0, now
        log.warning("http: %d connection(s) closed unserved (the latest from %s): %d are open, "
                    "the limit", count, client_address[0], self.limits.max_connections)


class MetricsServer:
    """Serves a WSGI app on its own thread; `port=0` picks a free port (tests)."""

    def __init__(self, app: WsgiApp, web: WebSettings,
                 limits: ListenerLimits | None = None) -> None:
        tls = tls_context(web) if web.tls_cert_file else None
        self.web = web
        self._server = _Server((web.listen_address, web.port), tls, limits or ListenerLimits())
        self._server.set_app(app)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.2}, name="http", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def connections(self) -> int:
        """Connections being served now (each on a thread of its own)."""
        return self._server.active

    def set_app(self, app: WsgiApp) -> None:
        """Serve `app` from the next request on (a config reload; the listener stays up)."""
        self._server.set_app(app)

    def set_tls(self, web: WebSettings) -> None:
        """Load `web`'s certificate and key again for new connections (a rotated certificate)."""
        self._server.tls = tls_context(web)
        self.web = web

    def start(self) -> MetricsServer:
        if sys.getswitchinterval() > SWITCH_INTERVAL_S:
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting and cut every open connection; safe on a server never started."""
        started = self._thread.ident is not None
        if started and self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        self._server.reaper.close()
        if started:
            self._thread.join(timeout=2)
