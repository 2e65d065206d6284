"""The HTTP listener: /metrics (Prometheus), /healthz, /readyz and a landing page at /.

The standard library's WSGI server, no web framework. /metrics serves the bytes a
`CachedExposition` rendered once per snapshot (a scrape copies them); given a plain registry
instead, it is prometheus_client's own WSGI app (tests, small tools).
Optional TLS and basic auth follow the Prometheus exporter-toolkit conventions.

No client can wedge the listener: the accept thread only accepts (the TLS handshake runs on the
connection's own thread), every phase of a connection has a hard deadline enforced by a reaper
that shuts the socket down whatever the thread is blocked in (a per-read timeout alone never
cuts a client that drips a byte at a time), and the number of connection threads is capped.
Held connections cannot starve the probes: a connection that has not sent a byte within a few
seconds is cut, one client address holds at most a share of the cap, and a new connection
arriving at a full table takes the slot of the oldest that has not finished its request head
(from the address holding the most), as a proxy drops its idlest upstream connection.
Failed basic-auth attempts slow that address's next checks down, and are logged at most once
a minute.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gzip
import hashlib
import hmac
import io
import ipaddress
import json
import logging
import math
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

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from freshness_tracker.reference import default
from freshness_tracker.sinks.exposition import (
    Answer,
    CachedExposition,
    gzip_wanted,
    negotiable_accept,
    only_named,
)
from freshness_tracker.sinks.status_page import CONTENT_SECURITY_POLICY

__all__ = ["LISTEN_BACKLOG", "AuthThrottle", "HealthFn", "ListenerLimits", "MetricsServer",
           "make_app", "tls_context"]

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

#: The `Server:` header: the product, no version of it or of the interpreter.
SERVER_NAME = "freshness-tracker"
#: Every response: browsers must not guess a type from the bytes (a label value is not HTML).
COMMON_HEADERS = [("X-Content-Type-Options", "nosniff")]
#: HTML responses (`/`): no script, no framing, no referrer leaving with a click.
HTML_HEADERS = [("Content-Security-Policy", CONTENT_SECURITY_POLICY), ("X-Frame-Options", "DENY"),
                ("Referrer-Policy", "no-referrer")]
ALLOWED_METHODS = ("GET", "HEAD")

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
    first_byte_timeout_s: float = 3.0  # from accept to the client's first byte
    max_connections_per_client: int = 64  # per client address (an IPv6 /64): a share of the cap


def _shown(text: object, limit: int = 200) -> str:
    """Client-given text for a log line: control characters escaped, length bounded."""
    return repr(str(text)[:limit])[1:-1]


def _client_key(address: str) -> str:
    """Who a connection counts against: its IPv4 address, or its IPv6 /64 (one host is given a
    whole /64, so counting single IPv6 addresses would give one client thousands of shares)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class _Occasional:
    """Counts an event; says when to log it: at most once per interval, with the count since."""

    def __init__(self, interval_s: float = REJECT_LOG_INTERVAL_S) -> None:
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._count = 0
        self._logged_at = -math.inf

    def note(self) -> int:
        """Count one; the count to log now, or 0 (logged recently)."""
        with self._lock:
            self._count += 1
            now = time.monotonic()
            if now - self._logged_at < self._interval_s:
                return 0
            count, self._count, self._logged_at = self._count, 0, now
            return count


def _json(start: StartResponse, ok: bool, body: dict[str, Any]) -> list[bytes]:
    start("200 OK" if ok else "503 Service Unavailable", [("Content-Type", "application/json")])
    return [json.dumps(body, sort_keys=True).encode()]


def _text(start: StartResponse, status: str, text: bytes,
          headers: Iterable[tuple[str, str]] = ()) -> list[bytes]:
    start(status, [("Content-Type", "text/plain; charset=utf-8"), *headers])
    return [text]


@dataclass(slots=True)
class _Failures:
    count: int = 0
    last_s: float = -math.inf
    next_check_s: float = -math.inf


class AuthThrottle:
    """Basic-auth checks per client address after failures: each failure doubles the wait
    before that address's next check (`FIRST_DELAY_S` up to `MAX_DELAY_S`); attempts arriving
    together queue one behind another, and one that would wait past `MAX_WAIT_S` is refused
    (429) unchecked. The wait comes before the check, so an answer's timing says nothing about
    the password, and no lock is held while waiting: another address is never slowed down.
    A correct password clears its address; failures are forgotten after `FORGET_S` of quiet."""

    FIRST_DELAY_S = 0.1
    MAX_DELAY_S = 1.0
    MAX_WAIT_S = 2.0
    FORGET_S = 60.0
    MAX_TRACKED = 4096

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._failures: dict[str, _Failures] = {}
        self._log = _Occasional()

    def _delay(self, failures: int) -> float:
        return float(min(self.FIRST_DELAY_S * 2.0 ** min(failures - 1, 30), self.MAX_DELAY_S))

    def turn(self, client: str, wait: bool = True) -> bool:
        """Wait for `client`'s turn to have credentials checked; False: no check now (the
        queue is too long, or `wait` is off and a wait would be needed)."""
        with self._lock:
            now = self._clock()
            entry = self._failures.get(client)
            if entry is None or now - entry.last_s > self.FORGET_S:
                return True
            slot = max(now, entry.next_check_s)
            if slot - now > (self.MAX_WAIT_S if wait else 0.0):
                return False
            entry.next_check_s = slot + self._delay(entry.count)
        if slot > now:
            self._sleep(slot - now)
        return True

    def failed(self, client: str, address: str) -> None:
        with self._lock:
            now = self._clock()
            entry = self._failures.pop(client, None)
            if entry is None or now - entry.last_s > self.FORGET_S:
                entry = _Failures()
            entry.count += 1
            entry.last_s = now
            entry.next_check_s = max(entry.next_check_s, now + self._delay(entry.count))
            self._failures[client] = entry  # the newest last
            if len(self._failures) > self.MAX_TRACKED:
                self._failures = {k: v for k, v in self._failures.items()
                                  if now - v.last_s <= self.FORGET_S}
                while len(self._failures) > self.MAX_TRACKED:
                    del self._failures[next(iter(self._failures))]
        count = self._log.note()
        if count:
            log.warning("http: %d failed basic-auth attempt(s) (the latest from %s); checks "
                        "for that address are slowed down", count, _shown(address))

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._failures.pop(client, None)


class _BasicAuth:
    """web.basicAuthUsername / web.basicAuthPassword, compared in constant time: both digests
    are always compared (a wrong user name takes as long as a wrong password)."""

    def __init__(self, username: str, password: str) -> None:
        self._user = hashlib.sha256(username.encode()).digest()
        self._password = hashlib.sha256(password.encode()).digest()

    def matches(self, header: str) -> bool:
        scheme, _, token = header.strip().partition(" ")
        try:
            decoded = base64.b64decode(token.strip(), validate=True)
        except (binascii.Error, ValueError):
            decoded = b""
        user, colon, password = decoded.partition(b":")
        same_user = hmac.compare_digest(hashlib.sha256(user).digest(), self._user)
        same_password = hmac.compare_digest(hashlib.sha256(password).digest(), self._password)
        return bool(scheme.lower() == "basic" and colon) & same_user & same_password


def _secured(start: StartResponse) -> StartResponse:
    """`start` adding the headers every response carries, and HTML's own."""

    def secured(status: str, headers: list[tuple[str, str]], *exc_info: Any) -> Any:
        extra = list(COMMON_HEADERS)
        if any(k.lower() == "content-type" and v.startswith("text/html") for k, v in headers):
            extra += HTML_HEADERS
        return start(status, [*headers, *extra], *exc_info)

    return secured


def _registry_app(registry: CollectorRegistry) -> WsgiApp:
    """/metrics from a plain registry (tests, small tools), negotiated as the cached one."""

    def app(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        try:
            encoder, content_type = choose_encoder(negotiable_accept(environ.get("HTTP_ACCEPT")))
        except (ValueError, TypeError, LookupError):
            encoder, content_type = choose_encoder("")
        names = parse_qs(environ.get("QUERY_STRING", "")).get("name[]")
        body = encoder(registry if names is None else only_named(registry, names))
        headers = [("Content-Type", content_type)]
        if gzip_wanted(environ.get("HTTP_ACCEPT_ENCODING")):
            body = gzip.compress(body)
            headers.append(("Content-Encoding", "gzip"))
        start("200 OK", [*headers, ("Content-Length", str(len(body)))])
        return [body]

    return app


def _exposition_app(exposition: CachedExposition) -> WsgiApp:
    """/metrics from cached bytes, answering parameters as prometheus_client's WSGI app does
    (`name[]`, Accept and Accept-Encoding negotiation)."""

    def app(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
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
    throttle: AuthThrottle | None = None,
) -> WsgiApp:
    """Route GET and HEAD (any other method: 405); with basic auth configured every path but
    /healthz needs credentials, and /healthz without them says only its status (its details
    name clusters, Burrow and Kafka addresses). ``status_page`` renders `/` from the query
    string (a plain landing page without it); ``throttle`` slows failed credentials down."""
    metrics = (_exposition_app(metrics_source) if isinstance(metrics_source, CachedExposition)
               else _registry_app(metrics_source))
    auth = (_BasicAuth(web.basic_auth_username, web.basic_auth_password)
            if web is not None and web.basic_auth_username else None)
    guard = throttle or AuthThrottle()

    def authorized(environ: dict[str, Any], wait: bool) -> bool | None:
        """True: valid credentials; False: none or wrong; None: not checked now (throttled)."""
        header = environ.get("HTTP_AUTHORIZATION")
        if auth is None:
            return True
        if not header:
            return False
        address = str(environ.get("REMOTE_ADDR", ""))
        client = _client_key(address)
        if not guard.turn(client, wait):
            return None
        if auth.matches(header):
            guard.succeeded(client)
            return True
        guard.failed(client, address)
        return False

    def route(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/healthz":  # probes carry no credentials: they get the status, no more
            healthy, details = health()
            if not authorized(environ, wait=False):
                details = {"status": details.get("status", "ok" if healthy else "failing")}
            return _json(start, healthy, details)
        verdict = authorized(environ, wait=True)
        if verdict is None:
            return _text(start, "429 Too Many Requests", b"Too many failed logins; retry later\n",
                         [("Retry-After", str(math.ceil(AuthThrottle.MAX_WAIT_S)))])
        if not verdict:
            return _text(start, "401 Unauthorized", b"Unauthorized\n",
                         [("WWW-Authenticate", 'Basic realm="freshness-tracker"')])
        if path == "/metrics":
            return metrics(environ, start)
        if path == "/readyz":
            return _json(start, *ready())
        if path == "/":
            if status_page is None:
                start("200 OK", [("Content-Type", "text/html; charset=utf-8")])
                return [LANDING]
            query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
            start("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                             ("Cache-Control", "no-store")])
            return [status_page(query)]
        return _text(start, "404 Not Found", b"Not Found\n")

    def app(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        start = _secured(start)
        method = environ.get("REQUEST_METHOD", "GET")
        if method not in ALLOWED_METHODS:
            return _text(start, "405 Method Not Allowed", b"Method Not Allowed\n",
                         [("Allow", ", ".join(ALLOWED_METHODS))])
        if method == "GET":
            return route(environ, start)
        # HEAD: the GET answer's status and headers, no body
        answered: list[tuple[str, list[tuple[str, str]]]] = []
        body = route({**environ, "REQUEST_METHOD": "GET"},
                     lambda status, headers, *exc: answered.append((status, list(headers))))
        length = body.length if isinstance(body, Answer) else sum(len(c) for c in body)
        status, headers = answered[0]
        if not any(k.lower() == "content-length" for k, _ in headers):
            headers.append(("Content-Length", str(length)))
        start(status, headers)
        return []

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


@dataclass(eq=False, slots=True)
class _Conn:
    client: str  # _client_key of its address
    sock: socket.socket  # the TLS socket once wrapped
    opened_s: float
    due_s: float
    spoke: bool = False  # its first byte arrived
    answering: bool = False  # its request head is in: never evicted for a newcomer


class _Reaper:
    """One thread that shuts down every connection still open past its current deadline, and
    the table of open connections that decides who gets a slot (`admit`).

    Cuts happen under the lock, and a connection leaves the table (under the lock) before it is
    closed, so a cut can never hit a file descriptor the kernel has already reused. A socket
    no longer in the table (evicted or past its deadline) is cut whenever it is armed again.
    """

    def __init__(self, max_connections: int = 128, max_per_client: int = 64) -> None:
        self._max = max_connections
        self._max_per_client = max_per_client
        self._cond = threading.Condition()
        self._conns: dict[socket.socket, _Conn] = {}
        self._per_client: dict[str, int] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    def __len__(self) -> int:
        return len(self._conns)

    def admit(self, sock: socket.socket, client: str, seconds: float) -> str | None:
        """Give `sock` a slot, cut at `seconds` unless armed again: "admitted", "evicted" (the
        slot of a connection that had not sent its request head was taken), or None (every
        slot answering a request: refused)."""
        with self._cond:
            if self._closed:
                return None
            victim = None
            if self._per_client.get(client, 0) >= self._max_per_client:
                victim = min((c for c in self._conns.values()
                              if c.client == client and not c.answering),
                             key=lambda c: (c.spoke, c.opened_s), default=None)
                if victim is None:
                    return None
            elif len(self._conns) >= self._max:
                victim = max((c for c in self._conns.values() if not c.answering),
                             key=lambda c: (self._per_client[c.client], not c.spoke,
                                            -c.opened_s), default=None)
                if victim is None:
                    return None
            if victim is not None:
                self._remove(victim)
                _cut(victim.sock)
            now = time.monotonic()
            self._conns[sock] = _Conn(client, sock, now, now + seconds)
            self._per_client[client] = self._per_client.get(client, 0) + 1
            self._wake()
            return "admitted" if victim is None else "evicted"

    def _remove(self, conn: _Conn) -> None:
        del self._conns[conn.sock]
        left = self._per_client[conn.client] - 1
        if left:
            self._per_client[conn.client] = left
        else:
            del self._per_client[conn.client]

    def _wake(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="http-reaper", daemon=True)
            self._thread.start()
        self._cond.notify()

    def arm(self, sock: socket.socket, seconds: float, *, spoke: bool = False,
            answering: bool = False) -> None:
        """`sock` is cut `seconds` from now; `spoke`: its first byte arrived; `answering`: its
        request head is in."""
        with self._cond:
            conn = self._conns.get(sock)
            if conn is None:
                _cut(sock)
                return
            conn.due_s = time.monotonic() + seconds
            conn.spoke = conn.spoke or spoke or answering
            conn.answering = conn.answering or answering
            self._cond.notify()

    def swap(self, old: socket.socket, new: socket.socket) -> None:
        """The connection of `old` goes on as `new` (wrapped in TLS, which detaches `old`)."""
        with self._cond:
            conn = self._conns.pop(old, None)
            if conn is None:
                _cut(new)
                return
            conn.sock = new
            self._conns[new] = conn

    def release(self, sock: socket.socket) -> None:
        """`sock` is about to be closed: it leaves the table (no-op if it already has)."""
        with self._cond:
            conn = self._conns.get(sock)
            if conn is not None:
                self._remove(conn)

    def close(self) -> None:
        """Cut every open connection (their threads end at once) and stop the thread."""
        with self._cond:
            self._closed = True
            for sock in self._conns:
                _cut(sock)
            self._conns.clear()
            self._per_client.clear()
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                for conn in list(self._conns.values()):
                    if conn.due_s <= now:
                        self._remove(conn)
                        _cut(conn.sock)
                soonest = min((c.due_s for c in self._conns.values()), default=None)
                self._cond.wait(None if soonest is None else max(soonest - now, 0.0))


class _ErrorLog(io.StringIO):
    """wsgiref prints a failed request's traceback to stderr: one log line instead (a scraper
    that stopped reading is worth a line, not a traceback); the traceback at DEBUG."""

    def flush(self) -> None:
        text = self.getvalue().strip()
        if text:
            log.warning("http request failed: %s", _shown(text.splitlines()[-1]))
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
    server_software = SERVER_NAME

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

    #: Errors answered before the WSGI app (a malformed request line, oversized headers): plain
    #: text, never HTML built from what the client sent.
    error_content_type = "text/plain; charset=utf-8"
    error_message_format = "%(code)d %(message)s\n"

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        if parsed:  # the head is in: the answer gets its own, longer deadline
            self.server.reaper.arm(self.connection, self.server.limits.response_timeout_s,
                                   answering=True)
        return parsed

    def version_string(self) -> str:
        return SERVER_NAME

    def end_headers(self) -> None:
        for name, value in COMMON_HEADERS:
            self.send_header(name, value)
        super().end_headers()

    def get_stderr(self) -> _ErrorLog:
        return _ErrorLog()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http %s", _shown(format % args, 1000))


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
        self.reaper = _Reaper(limits.max_connections, limits.max_connections_per_client)
        self._rejected = _Occasional()
        self._evicted = _Occasional()
        super().__init__(address, _Handler)

    @property
    def active(self) -> int:
        return len(self.reaper)

    def process_request(self, request: Any, client_address: Any) -> None:
        verdict = self.reaper.admit(request, _client_key(str(client_address[0])),
                                    self.limits.first_byte_timeout_s)
        if verdict is None:
            self._reject(client_address)
            self.shutdown_request(request)
            return
        if verdict == "evicted" and (count := self._evicted.note()):
            log.warning("http: %d connection(s) that had not sent a request closed to make "
                        "room (the latest for %s): %d are open, the limit", count,
                        _shown(client_address[0]), self.limits.max_connections)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.reaper.release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        conn: socket.socket = request
        limits = self.limits
        try:
            conn.settimeout(limits.io_timeout_s)
            if not conn.recv(1, socket.MSG_PEEK):  # closed, or cut before its first byte
                return
            if self.tls is not None:
                wrapped = self.tls.wrap_socket(request, server_side=True,
                                               do_handshake_on_connect=False)
                self.reaper.swap(conn, wrapped)
                conn = wrapped
                self.reaper.arm(conn, limits.handshake_timeout_s, spoke=True)
                conn.do_handshake()
            self.reaper.arm(conn, limits.request_timeout_s, spoke=True)
            self.finish_request(conn, client_address)
        except OSError as exc:  # timeouts, resets, handshake failures, cut by the reaper
            log.debug("http connection from %s ended: %s", _shown(client_address[0]),
                      _shown(exc))
        except Exception:
            log.warning("http connection from %s failed", _shown(client_address[0]),
                        exc_info=True)
        finally:
            self.reaper.release(conn)
            self.shutdown_request(conn)

    def _reject(self, client_address: Any) -> None:
        count = self._rejected.note()
        if count:
            log.warning("http: %d connection(s) closed unserved (the latest from %s): every "
                        "slot is answering a request (%d at most, %d per client)", count,
                        _shown(client_address[0]), self.limits.max_connections,
                        self.limits.max_connections_per_client)


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
