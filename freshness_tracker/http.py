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
seconds is cut, one client address holds at most a share of the cap (and a smaller share of
the connections being answered), a new connection arriving at a full table takes the slot of
the oldest that has not finished its request head (from the address holding the most), as a
proxy drops its idlest upstream connection, and an answer the client stops reading is cut at
the first send timeout. A request head is bounded in bytes before anything parses it.
Failed basic-auth attempts make that client's next checks wait (refused at once meanwhile:
no request thread ever sleeps), and are logged at most once a minute.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import enum
import gzip
import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import math
import select
import socket
import ssl
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer

from prometheus_client import CollectorRegistry

from freshness_tracker.sinks.exposition import (
    Answer,
    CachedExposition,
    gzip_wanted,
    negotiate,
    only_named,
)
from freshness_tracker.sinks.status_page import CONTENT_SECURITY_POLICY
from freshness_tracker.web_settings import WebSettings

__all__ = ["LISTEN_BACKLOG", "AuthThrottle", "HealthFn", "ListenerLimits", "MetricsServer",
           "make_app", "tls_context"]

log = logging.getLogger(__name__)


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
#: A request line longer than this is refused (414), as Go's and nginx's default of 8 KiB.
MAX_REQUEST_LINE_BYTES = 8192
#: The whole request head (request line and headers) is refused beyond this (431): counted as
#: it is read, so a connection buffers no more than this before it is answered.
MAX_REQUEST_HEAD_BYTES = 32768

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
    #: requests one address may have answered at once (Prometheus uses one connection per
    #: target); beyond, its request waits for one of them to end (still evictable, holding no
    #: answer slot) for up to `answer_wait_s`, then gets 503
    max_answering_per_client: int = 16
    answer_wait_s: float = 5.0


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

    def __init__(self, interval_s: float = REJECT_LOG_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._count = 0
        self._logged_at = -math.inf

    def note(self) -> int:
        """Count one; the count to log now, or 0 (logged recently)."""
        with self._lock:
            self._count += 1
            now = self._clock()
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


#: Who the throttle counts failures against: a client address (_client_key) and a digest of
#: the user name tried.
ThrottleKey = tuple[str, bytes]


class AuthThrottle:
    """Basic-auth checks after failures, per client address and user name tried: each failure
    doubles the time before that key's next check (`FIRST_DELAY_S` up to `MAX_DELAY_S`), and
    an attempt before then is refused (429) at once with its password unchecked. No request
    thread ever waits, so guessing holds no connection slot, and an answer's timing says
    nothing about the password. Keyed by user name too, so a guesser behind a scraper's
    address (NAT, a proxy) does not lock out the scraper unless it tries the scraper's own
    user name. A correct password clears its key; failures are forgotten after `FORGET_S`
    without a new one. The table is ordered by last failure: expired records, and past
    `MAX_TRACKED` the oldest, leave from its front, O(1) per failure."""

    FIRST_DELAY_S = 0.1
    MAX_DELAY_S = 1.0
    FORGET_S = 60.0
    MAX_TRACKED = 4096

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: OrderedDict[ThrottleKey, _Failures] = OrderedDict()
        self._log = _Occasional(clock=clock)

    def _delay(self, failures: int) -> float:
        return float(min(self.FIRST_DELAY_S * 2.0 ** min(failures - 1, 30), self.MAX_DELAY_S))

    def wait(self, key: ThrottleKey) -> float:
        """0.0: check `key`'s credentials now; else the seconds before it may try again.
        A check given now holds off the next one for a delay, however many arrive together."""
        with self._lock:
            now = self._clock()
            entry = self._failures.get(key)
            if entry is None or now - entry.last_s > self.FORGET_S:
                return 0.0
            if entry.next_check_s > now:
                return entry.next_check_s - now
            entry.next_check_s = now + self._delay(entry.count)
            return 0.0

    def failed(self, key: ThrottleKey, address: str) -> None:
        with self._lock:
            now = self._clock()
            entry = self._failures.pop(key, None)
            if entry is None or now - entry.last_s > self.FORGET_S:
                entry = _Failures()
            entry.count += 1
            entry.last_s = now
            entry.next_check_s = max(entry.next_check_s, now + self._delay(entry.count))
            failures = self._failures
            failures[key] = entry  # the newest last
            while len(failures) > self.MAX_TRACKED or (
                    now - next(iter(failures.values())).last_s > self.FORGET_S):
                failures.popitem(last=False)
        count = self._log.note()
        if count:
            log.warning("http: %d failed basic-auth attempt(s) (the latest from %s); checks "
                        "for that address and user name are slowed down", count,
                        _shown(address))

    def succeeded(self, key: ThrottleKey) -> None:
        with self._lock:
            self._failures.pop(key, None)


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


class _BasicAuth:
    """web.basicAuthUsername / web.basicAuthPassword, compared as digests in constant time:
    both are always compared (a wrong user name takes as long as a wrong password)."""

    def __init__(self, username: str, password: str) -> None:
        self._user = _digest(username.encode())
        self._password = _digest(password.encode())

    @staticmethod
    def presented(header: str) -> tuple[bytes, bytes] | None:
        """Digests of the user name and the password of a Basic Authorization header; None
        for another scheme or a malformed one."""
        scheme, _, token = header.strip().partition(" ")
        try:
            decoded = base64.b64decode(token.strip(), validate=True)
        except (binascii.Error, ValueError):
            return None
        user, colon, password = decoded.partition(b":")
        return (_digest(user), _digest(password)) if scheme.lower() == "basic" and colon else None

    def matches(self, presented: tuple[bytes, bytes]) -> bool:
        same_user = hmac.compare_digest(presented[0], self._user)
        return same_user & hmac.compare_digest(presented[1], self._password)


class _Auth(enum.Enum):
    GRANTED = "granted"  # valid credentials, or no basic auth configured
    REFUSED = "refused"  # none, malformed or wrong
    THROTTLED = "throttled"  # not checked: that client failed too recently


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
        encoder, content_type = negotiate(environ.get("HTTP_ACCEPT"))
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

    def authorized(environ: dict[str, Any]) -> _Auth:
        if auth is None:
            return _Auth.GRANTED
        header = environ.get("HTTP_AUTHORIZATION")
        presented = _BasicAuth.presented(header) if header else None
        if presented is None:
            return _Auth.REFUSED
        address = str(environ.get("REMOTE_ADDR", ""))
        key = (_client_key(address), presented[0][:16])
        if guard.wait(key):
            return _Auth.THROTTLED
        if auth.matches(presented):
            guard.succeeded(key)
            return _Auth.GRANTED
        guard.failed(key, address)
        return _Auth.REFUSED

    def route(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        verdict = authorized(environ)
        if path == "/healthz":  # probes carry no credentials: they get the status, no more
            healthy, details = health()
            if verdict is not _Auth.GRANTED:
                details = {"status": details.get("status", "ok" if healthy else "failing")}
            return _json(start, healthy, details)
        if verdict is _Auth.THROTTLED:
            return _text(start, "429 Too Many Requests", b"Too many failed logins; retry later\n",
                         [("Retry-After", str(math.ceil(AuthThrottle.MAX_DELAY_S)))])
        if verdict is _Auth.REFUSED:
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
        # HEAD: the GET answer's status and headers (Content-Length included, as clients
        # checking a size expect), no body. The answer is made once, as for a GET (the
        # status page too): a HEAD never costs more than the GET anyone may send.
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

    def __init__(self, max_connections: int = 128, max_per_client: int = 64,
                 max_answering_per_client: int = 16) -> None:
        self._max = max_connections
        self._max_per_client = max_per_client
        self._max_answering = max_answering_per_client
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
        slot it could take is answering a request: refused)."""
        with self._cond:
            if self._closed:
                return None
            victim = None
            at_share = self._per_client.get(client, 0) >= self._max_per_client
            if at_share or len(self._conns) >= self._max:
                victim = self._victim(client if at_share else None)
                if victim is None:
                    return None
                self._remove(victim)
                _cut(victim.sock)
            now = time.monotonic()
            self._conns[sock] = _Conn(client, sock, now, now + seconds)
            self._per_client[client] = self._per_client.get(client, 0) + 1
            self._wake()
            return "admitted" if victim is None else "evicted"

    def _victim(self, client: str | None) -> _Conn | None:
        """The connection that gives its slot: one whose request head is not in (of `client`
        if given), of the address holding the most, first one that has sent nothing, then
        the oldest."""
        return max((c for c in self._conns.values()
                    if not c.answering and client in (None, c.client)),
                   key=lambda c: (self._per_client[c.client], not c.spoke, -c.opened_s),
                   default=None)

    def _remove(self, conn: _Conn) -> None:
        del self._conns[conn.sock]
        left = self._per_client[conn.client] - 1
        if left:
            self._per_client[conn.client] = left
        else:
            del self._per_client[conn.client]
        if conn.answering:
            self._cond.notify_all()  # a request of its address may be waiting for its turn

    def _wake(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="http-reaper", daemon=True)
            self._thread.start()
        self._cond.notify_all()

    def arm(self, sock: socket.socket, seconds: float, *, spoke: bool = False) -> None:
        """`sock` is cut `seconds` from now; `spoke`: its first byte arrived."""
        with self._cond:
            conn = self._conns.get(sock)
            if conn is None:
                _cut(sock)
                return
            conn.due_s = time.monotonic() + seconds
            conn.spoke = conn.spoke or spoke
            self._cond.notify_all()

    def answer(self, sock: socket.socket, seconds: float, wait_s: float = 0.0) -> bool:
        """`sock`'s request head is in: it is no longer evicted, and cut `seconds` from now.
        While its address has its share of answers in progress it waits, up to `wait_s`, for
        one to end, still evictable (a burst of scrapes is served a little later; a client
        that never reads its answers cannot hold more slots). False (nothing changes) if none
        ended in time or the connection was cut meanwhile."""
        deadline = time.monotonic() + wait_s
        with self._cond:
            while True:
                conn = self._conns.get(sock)
                if conn is None:
                    return False
                if sum(c.answering and c.client == conn.client
                       for c in self._conns.values()) < self._max_answering:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            conn.due_s = time.monotonic() + seconds
            conn.spoke = conn.answering = True
            self._cond.notify_all()
            return True

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
            self._cond.notify_all()
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


def send_all(sock: socket.socket, chunks: Iterable[bytes], stall_s: float | None = None) -> int:
    """Send `chunks` with vectored writes: one syscall, and one wait for the GIL after it, per
    socket buffer's worth instead of per chunk (a scrape must not queue for the interpreter
    hundreds of times while cycles keep it busy). Returns the bytes sent.

    The first write does not wait: it fills the socket buffer. Each later one waits (up to
    `stall_s`) until the client has taken a third of the buffer (POLLOUT, the progress nginx's
    send_timeout counts; the kernel growing the buffer is none), then blocks while the client
    keeps reading, for at most the socket's own send timeout. A client that takes nothing for
    `stall_s` raises TimeoutError: it is cut at that first timeout."""
    views = [memoryview(c) for c in chunks if c]
    total = 0
    first = 0
    writable = select.poll()
    writable.register(sock, select.POLLOUT)
    flags: int = socket.MSG_DONTWAIT
    while first < len(views):
        if not flags and stall_s is not None and not writable.poll(math.ceil(stall_s * 1000)):
            raise TimeoutError("the client took nothing of its answer within the send timeout")
        try:
            sent = sock.sendmsg(views[first:first + IOV_MAX], [], flags)
        except BlockingIOError:  # the buffer was full, or the send timeout ran out
            sent = 0
        flags = 0
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

    def log_exception(self, exc_info: Any) -> None:
        """An answer a client stopped reading or hung up on: one line a minute with the count
        (a flood of them must not flood the log); the traceback at DEBUG."""
        server = self.request_handler.server
        count = server.undelivered.note()
        if count:
            log.warning("http: %d answer(s) not delivered, the client stopped reading or went "
                        "away (the latest to %s: %s)", count,
                        _shown(self.request_handler.client_address[0]),
                        _shown(f"{exc_info[0].__name__}: {exc_info[1]}"))
        log.debug("http answer failed", exc_info=exc_info)

    def sendfile(self) -> bool:
        assert isinstance(self.result, Answer)
        self.send_headers()
        self._flush()
        conn = self.request_handler.connection
        with _kernel_send_timeout(conn) as stall_s:
            self.bytes_sent = send_all(conn, self.result.chunks, stall_s)
        return True


@contextlib.contextmanager
def _kernel_send_timeout(sock: socket.socket) -> Iterator[float | None]:
    """The socket's timeout applied by the kernel (SO_SNDTIMEO) instead of by Python, for one
    answer; yields that timeout, the longest `send_all` lets a client take nothing. With a
    Python timeout a send is a poll plus a non-blocking write of what the socket buffer holds,
    each followed by a wait for the interpreter; a blocking write moves the whole answer in
    one call, as long as the client reads. Each write blocks a quarter of the timeout at most,
    so a client that stops reading midway is cut within 1.25 timeouts; one that reads slowly
    but steadily is served until the reaper's response deadline, which bounds every answer."""
    timeout = sock.gettimeout()
    if timeout is None:
        yield None
        return
    seconds = max(timeout / 4, 0.001)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                    struct.pack("ll", int(seconds), int(seconds % 1 * 1e6)))
    sock.settimeout(None)
    try:
        yield timeout
    finally:
        sock.settimeout(timeout)


class _HeadReader:
    """A connection's input while its request head is read: a read past the head's byte
    budget raises LineTooLong (answered 431) before more is buffered, so a head costs at most
    the budget, whatever its lines."""

    def __init__(self, raw: Any, budget: int) -> None:
        self._raw = raw
        self._left = budget

    def readline(self, size: int = -1) -> bytes:
        line: bytes = self._raw.readline(self._left + 1 if size < 0 else
                                         min(size, self._left + 1))
        self._left -= len(line)
        if self._left < 0:
            raise http.client.LineTooLong("request head")
        return line


class _Handler(WSGIRequestHandler):
    server: _Server

    def handle(self) -> None:
        """WSGIRequestHandler.handle, with the handler above and a request head of bounded
        size (counted before anything parses it)."""
        body = self.rfile
        self.rfile = _HeadReader(body, MAX_REQUEST_HEAD_BYTES)  # type: ignore[assignment]
        try:
            self.raw_requestline = self.rfile.readline(MAX_REQUEST_LINE_BYTES + 1)
            if len(self.raw_requestline) > MAX_REQUEST_LINE_BYTES:
                self.requestline = self.command = ""
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.parse_request():
                return
        finally:
            self.rfile = body
        handler = _ServerHandler(self.rfile, self.wfile,  # type: ignore[arg-type]
                                 self.get_stderr(), self.get_environ(), multithread=False)
        handler.request_handler = self
        app = self.server.get_app()
        assert app is not None
        handler.run(app)

    def parse_request(self) -> bool:
        if len(self.raw_requestline.split()) == 2:  # HTTP/0.9: no headers, no status line
            self.requestline = self.command = ""
            self.send_error(HTTPStatus.BAD_REQUEST)
            return False
        if not super().parse_request():
            return False
        # the head is in: the answer gets its own, longer deadline, within the address' share
        limits = self.server.limits
        if self.server.reaper.answer(self.connection, limits.response_timeout_s,
                                     limits.answer_wait_s):
            return True
        self.server.busy(self.client_address)
        self.send_error(HTTPStatus.SERVICE_UNAVAILABLE)
        return False

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """Errors answered before the WSGI app (a malformed or HTTP/0.9 request line, an
        oversized head, a busy address): an HTTP/1.0 status line whatever the client sent,
        and fixed plain text, never the client's own text."""
        self.close_connection = True
        self.request_version = "HTTP/1.0"  # BaseHTTPRequestHandler omits the status line for 0.9
        body = f"{code} {HTTPStatus(code).phrase}\n".encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        if code == HTTPStatus.SERVICE_UNAVAILABLE:
            self.send_header("Retry-After", "1")
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def version_string(self) -> str:
        return SERVER_NAME

    def end_headers(self) -> None:
        for name, value in COMMON_HEADERS:
            self.send_header(name, value)
        super().end_headers()

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
        self.reaper = _Reaper(limits.max_connections, limits.max_connections_per_client,
                              limits.max_answering_per_client)
        self._rejected = _Occasional()
        self._evicted = _Occasional()
        self._busy = _Occasional()
        self.undelivered = _Occasional()
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

    def busy(self, client_address: Any) -> None:
        if count := self._busy.note():
            log.warning("http: %d request(s) answered 503 (the latest from %s): that address "
                        "already had %d answers in progress", count, _shown(client_address[0]),
                        self.limits.max_answering_per_client)

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
