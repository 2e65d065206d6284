"""Burrow's REST API over pooled keep-alive connections, with hard deadlines and bounded retries.

Connection errors, timeouts and 5xx are retried with exponential backoff; a 404 is an answer
("Burrow does not know this"), never retried. Every transport/JSON error is mapped here to a
BurrowError, so the rest of the code never sees a third-party exception.

The transport is `burrow.http1` on connections this module pools and lends to one request at a
time: a `/lag` call costs a few socket calls, not a general-purpose HTTP stack's per-request
work (a cycle makes one call per group: 5,000 for 100,000 partitions). Nothing is read from the
environment: no proxy variables, no netrc, no CA bundle variable; TLS verifies against
`burrow.caFile` when set, else the system's CA store (OpenSSL's default paths: `SSL_CERT_FILE`
/ `SSL_CERT_DIR` if set), and `burrow.tlsVerify = false` turns verification off.

`burrow.timeout` bounds a whole response (connect, headers and body), not each socket read: a
per-read timeout restarts with every byte, so a body dripped one byte a second never trips it.
A reaper thread shuts the socket down at the deadline, whatever the connect, TLS handshake or
read is doing (every socket is attached to its request before anything waits on it), and no
request outlives the cycle's deadline either (`freshness_tracker.deadline`). The name lookup,
which nothing can interrupt, runs on a resolver thread the request stops waiting for at its
deadline. Bodies are decoded here, so their decoded size is bounded while it grows: a 1 MB gzip
that expands to 1 GiB costs `burrow.maxResponseBytes`, not the process.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import heapq
import http.client
import itertools
import json
import logging
import math
import re
import select
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import Any
from urllib.parse import quote, urlsplit

from freshness_tracker import __version__
from freshness_tracker.burrow import parse
from freshness_tracker.burrow.http1 import Connection, Response
from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.burrow.url import split_credentials
from freshness_tracker.deadline import current as current_deadline
from freshness_tracker.deadline import cycle_deadline
from freshness_tracker.domain.model import ClusterLags, GroupLags
from freshness_tracker.domain.names import escaped, usable_group_names
from freshness_tracker.errors import (
    BurrowError,
    BurrowNotFound,
    BurrowResponseError,
    BurrowUnavailable,
)

__all__ = ["BurrowClient", "fan_out"]

log = logging.getLogger(__name__)

#: Encodings we decode ourselves (so the decoded size is bounded as it grows); nothing else is
#: asked for, and a body in another one is refused.
_ACCEPT_ENCODING = "gzip, deflate"
#: How long cluster_lags() waits for its workers past the cycle deadline (their requests are
#: cut at that deadline by the reaper; this only covers a worker that is slow to notice).
_JOIN_SLACK_S = 2.0
#: How long a resolved address of Burrow's host is reused.
_RESOLVED_TTL_S = 60.0
#: The probe of cluster_lags(): at most this many answers, or as many as take this long, are
#: asked by one worker alone before the fan-out is sized (`fan_out`); that worker then asks
#: on with the others.
_PROBE_ANSWERS = 8
_PROBE_WALL_S = 0.05
#: How long cluster_lags() waits for the probe's verdict before sending every worker, and how
#: long a request may wait for Burrow before it no longer counts as a worker.
_PROBE_WAIT_S = 0.2
#: What a request target cannot hold: it would split the request line.
_UNSENDABLE = re.compile(rb"[\x00-\x20\x7f]")
#: The longest backoff between two attempts, whatever burrow.backoff and the attempt number.
_MAX_BACKOFF_S = 5.0
#: What a broken exchange raises: sockets, TLS (ssl.SSLError is an OSError) and HTTP framing.
_READ_ERRORS = (OSError, http.client.HTTPException, ValueError)
#: A kept-alive connection the server closed while it was idle fails like this before any
#: answer: the request is sent once more on a new connection (GETs only, no answer was seen).
_STALE_ERRORS = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                 ConnectionAbortedError)


class _InFlight:
    """One request: its hard deadline and, once it has one, its socket."""

    __slots__ = ("_lock", "cut", "deadline", "done", "sock")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.sock: socket.socket | None = None
        self.cut = False
        self.done = False
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def attach(self, sock: socket.socket) -> None:
        """The socket the request now waits on (connect, TLS handshake, then the exchange).
        TimeoutError when the reaper already cut the request: it fired while no socket was
        there to shut (a slow name lookup), and must not be forgotten."""
        with self._lock:
            if self.cut:
                raise TimeoutError("the deadline was reached before the connection was made")
            self.sock = sock

    def finish(self) -> None:
        """No cut after this: called before the connection goes back to the pool, where
        another request may take it."""
        with self._lock:
            self.done = True

    def cut_off(self) -> None:
        """Shut the socket down: a read, a connect or a TLS handshake blocked in any library
        returns at once."""
        with self._lock:
            if self.done:
                return
            self.cut = True
            sock = self.sock
            if sock is not None:
                # socket.socket's shutdown, not SSLSocket's: that one also drops the TLS state
                # under the reading thread (a ValueError there, not an OSError). Only the
                # syscall is wanted: it wakes the blocked call.
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Reaper:
    """One daemon thread that cuts off every request still running at its deadline.

    It sleeps until the earliest deadline it holds and is woken only when a new request's
    deadline is earlier than that (rare: deadlines are `now + burrow.timeout`, in order), so
    watching a request costs a heap push, not a thread switch.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _InFlight]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(self, inflight: _InFlight) -> None:
        with self._cond:
            heapq.heappush(self._heap, (inflight.deadline, next(self._seq), inflight))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="burrow-reaper",
                                                daemon=True)
                self._thread.start()
            elif self._heap[0][2] is inflight:  # earlier than what the reaper sleeps until
                self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                while self._heap and (self._heap[0][2].done or self._heap[0][0] <= now):
                    inflight = heapq.heappop(self._heap)[2]
                    if not inflight.done:
                        inflight.cut_off()
                wait = self._heap[0][0] - now if self._heap else None
                self._cond.wait(wait)


class _Pool:
    """Idle keep-alive connections to Burrow's one origin, each lent to one request at a time."""

    def __init__(self, scheme: str, host: str, port: int, max_idle: int,
                 tls: Callable[[], ssl.SSLContext], request_head: bytes) -> None:
        self._scheme, self._host, self._port = scheme, host, port
        self._request_head = request_head
        self._max_idle = max_idle
        self._tls = tls
        self._resolver = _Resolver()
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def new(self, inflight: _InFlight) -> Connection:
        """A connected connection, every step bounded by the request's deadline: the name
        lookup (on a resolver thread: getaddrinfo honours no timeout and no reaper can wake
        it), the TCP connect and the TLS handshake (on a socket the reaper can shut down)."""
        addresses = self._resolver.resolve(self._host, self._port, inflight.remaining())
        sock = _connect(addresses, inflight)
        try:
            if self._scheme == "https":
                sock = self._tls().wrap_socket(sock, server_hostname=self._host,
                                               do_handshake_on_connect=False)
                inflight.attach(sock)  # the live TLS socket, so a cut reaches the handshake
                sock.settimeout(max(inflight.remaining(), 0.001))
                sock.do_handshake()
            return Connection(sock, self._request_head)
        except BaseException:
            sock.close()
            raise

    def take(self) -> Connection | None:
        """An idle connection the server has not closed, or None."""
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if _still_open(conn):
                return conn
            conn.close()

    def give(self, conn: Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


_Address = tuple[int, int, int, Any]  # (family, type, proto, sockaddr)


class _Resolver:
    """Name lookups with a deadline. getaddrinfo blocks for as long as the system resolver
    takes (5 s x attempts x nameservers, or forever on a broken NSS module) and nothing can
    interrupt it, so it runs on a daemon thread the request stops waiting for at its deadline;
    answers are reused for _RESOLVED_TTL_S (Burrow is one origin: one lookup per minute, not
    one per connection). A lookup still running is shared, not started again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, int], tuple[float, list[_Address]]] = {}
        self._running: dict[tuple[str, int], Future[list[_Address]]] = {}

    def resolve(self, host: str, port: int, timeout_s: float) -> list[_Address]:
        key = (host, port)
        with self._lock:
            cached = self._answers.get(key)
            if cached is not None and cached[0] > time.monotonic():
                return cached[1]
            future = self._running.get(key)
            if future is None:
                future = Future()
                self._running[key] = future
                threading.Thread(target=self._lookup, args=(key, future), daemon=True,
                                 name="burrow-resolver").start()
        try:
            return future.result(timeout=max(timeout_s, 0.0))
        except TimeoutError:
            raise TimeoutError(f"the name lookup of {host} did not finish within "
                               f"{max(timeout_s, 0.0):.3g}s") from None

    def _lookup(self, key: tuple[str, int], future: Future[list[_Address]]) -> None:
        try:
            infos = socket.getaddrinfo(key[0], key[1], type=socket.SOCK_STREAM)
            answer: list[_Address] = [(int(family), int(kind), proto, addr)
                                      for family, kind, proto, _, addr in infos]
        except BaseException as exc:
            with self._lock:
                self._running.pop(key, None)
            future.set_exception(exc)
            return
        with self._lock:
            self._running.pop(key, None)
            self._answers[key] = (time.monotonic() + _RESOLVED_TTL_S, answer)
        future.set_result(answer)


def _connect(addresses: Sequence[_Address], inflight: _InFlight) -> socket.socket:
    """A TCP connection to the first address that accepts, within the request's deadline;
    each socket is attached to the request first, so the reaper can cut a hanging connect."""
    error: OSError = OSError("the name resolved to no address")
    for family, kind, proto, addr in addresses:
        sock = socket.socket(family, kind, proto)
        try:
            inflight.attach(sock)
            remaining = inflight.remaining()
            if remaining <= 0:
                raise TimeoutError("the deadline was reached while connecting")
            sock.settimeout(remaining)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.connect(addr)
            return sock
        except TimeoutError:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            error = exc
    raise error


def _still_open(conn: Connection) -> bool:
    """An idle keep-alive socket with nothing to read: the server has not closed it (nor sent
    anything unasked, which would desynchronise the next answer)."""
    if conn.unread:
        return False
    sock = conn.sock
    try:
        if not hasattr(select, "poll"):  # not on Windows; select() takes any socket there
            return not select.select([sock], [], [], 0)[0]
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return not poller.poll(0)
    except (OSError, ValueError):
        return False


class BurrowClient:
    """The calls a cycle needs: health, clusters, servers, consumers, per-group lag."""

    def __init__(self, settings: BurrowSettings,
                 clock: Callable[[], int] | None = None) -> None:
        self.settings = settings
        #: With a clock (the cycle's: the exporter and the Spark job pass theirs), each `/lag`
        #: answer is stamped when it arrives (`GroupLags.observed_ms`); without one the cycle
        #: uses the moment all of them had arrived.
        self._clock = clock
        # Credentials in the URL (https://user:pass@burrow) are used as basic auth and removed
        # from the URL, which appears in every error message and log line.
        self._base, url_auth = _split_userinfo(settings.url.rstrip("/"))
        parts = urlsplit(self._base)
        scheme = parts.scheme.lower()
        #: Everything before the path: what a request's path is cut from.
        self._origin_length = len(f"{parts.scheme}://{parts.netloc}")
        auth = (settings.username, settings.password) if settings.username else url_auth
        port = parts.port or (443 if scheme == "https" else 80)
        headers = {"Host": _host_header(parts.hostname or "", port, scheme),
                   "Accept-Encoding": _ACCEPT_ENCODING, "Accept": "application/json",
                   "User-Agent": f"freshness-tracker/{__version__}"}
        if auth is not None:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        request_head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        self._tls_lock = threading.Lock()
        self._tls_context: ssl.SSLContext | None = None
        # Keep-alive connections for the per-cluster pools of several clusters at once.
        self._pool = _Pool(scheme, parts.hostname or "", port, 4 * max(settings.concurrency, 4),
                           self._tls, request_head.encode("latin-1"))
        # One pool of `concurrency` /lag workers per cluster: a bulkhead, so one cluster whose
        # /lag answers are slow cannot queue another cluster's requests behind its own.
        self._executors: dict[str, ThreadPoolExecutor] = {}
        self._executors_lock = threading.Lock()
        self._reaper = _Reaper()
        self._closed = False

    @property
    def url(self) -> str:
        """Burrow's base URL without credentials: safe to print."""
        return self._base

    def close(self) -> None:
        self._closed = True
        with self._executors_lock:
            executors, self._executors = list(self._executors.values()), {}
        for executor in executors:
            executor.shutdown(wait=False, cancel_futures=True)
        self._reaper.close()
        self._pool.close()

    def _executor_for(self, cluster: str) -> ThreadPoolExecutor:
        with self._executors_lock:
            executor = self._executors.get(cluster)
            if executor is None:
                executor = ThreadPoolExecutor(max_workers=max(self.settings.concurrency, 1),
                                              thread_name_prefix=f"burrow-{cluster}")
                self._executors[cluster] = executor
            return executor

    def _tls(self) -> ssl.SSLContext:
        """The TLS context, built once: `burrow.caFile` wins over `burrow.tlsVerify`."""
        with self._tls_lock:
            if self._tls_context is None:
                ca_file = self.settings.ca_file
                context = ssl.create_default_context(cafile=ca_file or None)
                if not ca_file and not self.settings.tls_verify:
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                self._tls_context = context
            return self._tls_context

    # --- HTTP -------------------------------------------------------------------------

    def _url(self, *parts: str) -> str:
        return self._base + "/" + "/".join(quote(p, safe="") for p in parts)

    def _get(self, url: str) -> tuple[int, bytes]:
        """(HTTP status, decoded body) within min(burrow.timeout, the cycle's deadline)."""
        cycle = current_deadline()
        limit_s = self.settings.timeout_s
        if cycle is not None:
            limit_s = min(limit_s, cycle.remaining())
        if limit_s <= 0:
            raise BurrowUnavailable(f"not asking Burrow for {url}: the cycle deadline was "
                                    "reached", url)
        inflight = _InFlight(time.monotonic() + limit_s)
        self._reaper.watch(inflight)
        conn: Connection | None = None
        try:
            conn, response = self._exchange(_target(url[self._origin_length:]), inflight)
            status = response.status
            if status >= 500:
                raise BurrowUnavailable(f"Burrow answered HTTP {status} for {url}", url)
            if status == 404:
                body = b""
            else:
                body = self._read_body(response, url)
                if response.complete and not response.will_close:
                    inflight.finish()  # no cut from here: the connection may be lent again
                    if not inflight.cut:
                        self._pool.give(conn)
                        conn = None
        except BurrowError:
            raise
        except TimeoutError as exc:  # socket.timeout: connect or a read past the limit
            raise BurrowUnavailable(f"Burrow did not answer {url} within {limit_s:g}s",
                                    url) from exc
        except _READ_ERRORS as exc:
            if inflight.cut:
                raise BurrowUnavailable(f"Burrow did not finish answering {url} within "
                                        f"{limit_s:g}s (connection cut)", url) from exc
            raise BurrowUnavailable(f"cannot reach Burrow at {url}: {_reason(exc)}", url) from exc
        finally:
            inflight.finish()
            if conn is not None:
                conn.close()
        if inflight.cut:  # the deadline hit as the body ended: do not trust what was read
            raise BurrowUnavailable(f"Burrow did not finish answering {url} within "
                                    f"{limit_s:g}s", url)
        return status, body

    def _exchange(self, target: bytes, inflight: _InFlight) -> tuple[Connection, Response]:
        """Send the GET and read the status line and headers, on an idle connection if there
        is one (a new one if the server had closed it meanwhile) or on a new connection."""
        conn = self._pool.take()
        while True:
            reused = conn is not None
            if conn is None:
                conn = self._pool.new(inflight)
            else:
                try:
                    inflight.attach(conn.sock)
                except TimeoutError:
                    conn.close()
                    raise
            conn.sock.settimeout(max(inflight.remaining(), 0.001))
            try:
                return conn, conn.get(target)
            except _STALE_ERRORS:
                conn.close()
                if not reused or inflight.cut:
                    raise
            except BaseException:
                conn.close()
                raise
            conn = None  # the idle connection was closed by the server: once more, new

    def _read_body(self, response: Response, url: str) -> bytes:
        """The body, decoded here with its decoded size bounded as it grows."""
        limit = self.settings.max_response_bytes
        encoding = (response.header("content-encoding") or "").strip().lower()
        decoder: Any = None
        if encoding in ("gzip", "x-gzip", "deflate"):
            decoder = zlib.decompressobj(32 + zlib.MAX_WBITS)  # gzip or zlib framing
        elif encoding not in ("", "identity"):
            raise BurrowResponseError(f"Burrow answered {url} in Content-Encoding {encoding!r}, "
                                      f"which was not asked for", url)
        too_large = (f"Burrow's answer to {url} is larger than burrow.maxResponseBytes "
                     f"({limit} bytes decoded)")
        if decoder is None and response.length is not None and response.length > limit:
            raise BurrowResponseError(f"{too_large}; raise it if a group really has that many "
                                      "partitions", url)
        out = bytearray()
        try:
            for pending in response.body():
                while pending:
                    if decoder is None:
                        data, pending = pending, b""
                    else:
                        data = decoder.decompress(pending, limit + 1 - len(out))
                        pending = decoder.unconsumed_tail
                    out += data
                    if len(out) > limit:
                        raise BurrowResponseError(f"{too_large}; raise it if a group really "
                                                  "has that many partitions", url)
            if decoder is not None:
                out += decoder.flush()
        except zlib.error as exc:
            raise BurrowResponseError(f"Burrow answered {url} with a body that does not "
                                      f"decode as {encoding}: {exc}", url) from exc
        if len(out) > limit:
            raise BurrowResponseError(too_large, url)
        return bytes(out)

    def _get_json(self, url: str, typed: Callable[[bytes], Any] | None = None) -> Any:
        """`_get_json_once`, again after a backoff while Burrow is unavailable (connection
        errors, timeouts, 5xx): `burrow.retries` more times at most, never past the cycle's
        deadline. Backoff: burrow.backoff × 2^(attempt − 1), at most 5 s."""
        attempt = 1
        while True:
            try:
                return self._get_json_once(url, typed)
            except BurrowUnavailable:
                deadline = current_deadline()
                if attempt > self.settings.retries or (
                        deadline is not None and deadline.remaining() < 0.1):
                    raise
                backoff = min(self.settings.backoff_s * 2 ** (attempt - 1), _MAX_BACKOFF_S)
                time.sleep(_capped_by_deadline(max(backoff, 0.0)))
                attempt += 1

    def _get_json_once(self, url: str, typed: Callable[[bytes], Any] | None = None) -> Any:
        """The JSON body of a GET, or what `typed` decodes a 200 body into when it can (it
        returns None for a body it cannot take, which is then decoded and checked as JSON)."""
        status, raw = self._get(url)
        if status == 404:
            raise BurrowNotFound(f"Burrow does not know {url} (HTTP 404)", url)
        if typed is not None and status == 200:
            decoded = typed(raw)
            if decoded is not None:
                return decoded
        try:
            body = json.loads(raw)
        except ValueError as exc:
            excerpt = raw[:120].decode(errors="replace").replace("\n", " ")
            raise BurrowResponseError(
                f"Burrow answered {url} with HTTP {status} and a body that is not JSON: "
                f"{excerpt!r}", url) from exc
        except RecursionError:  # JSON nested thousands deep: never let it escape as a crash
            raise BurrowResponseError(f"Burrow answered {url} with JSON nested too deep to "
                                      "parse", url) from None
        if status != 200:
            raise BurrowResponseError(f"Burrow answered HTTP {status} for {url}", url)
        if isinstance(body, dict) and body.get("error") is True:
            raise BurrowResponseError(f"Burrow reported an error for {url}", url)
        return body

    # --- API --------------------------------------------------------------------------

    def health(self) -> str | None:
        """None when `GET /burrow/admin` answers exactly `GOOD` (every Burrow version does),
        else what happened instead: refused, no answer in time, the HTTP status and body."""
        url = self._base + "/burrow/admin"
        try:
            status, body = self._get(url)
        except BurrowError as exc:
            return str(exc)
        if status == 200 and body.strip() == b"GOOD":
            return None
        excerpt = " ".join(body[:120].decode(errors="replace").split())
        return f"{url} answered HTTP {status}" + (
            f" with {excerpt!r}, not GOOD" if excerpt else " with no body, not GOOD")

    def clusters(self) -> list[str]:
        url = self._url("v3", "kafka")
        return parse.parse_cluster_list(self._get_json(url), url)

    def cluster_servers(self, cluster: str) -> list[str]:
        url = self._url("v3", "kafka", cluster)
        return parse.parse_cluster_servers(self._get_json(url), url)

    def consumers(self, cluster: str) -> list[str]:
        url = self._url("v3", "kafka", cluster, "consumer")
        return parse.parse_consumer_list(self._get_json(url), url)

    def group_lag(self, cluster: str, group: str) -> GroupLags:
        """All partitions of one group; BurrowNotFound when Burrow no longer knows it."""
        url = self._url("v3", "kafka", cluster, "consumer", group, "lag")
        body = self._get_json(url, parse.decode_lag_answer)
        observed = self._clock() if self._clock is not None else None
        # The offsets are Burrow's as of this answer: freshness is measured at this moment,
        # whatever the Kafka reads that follow cost.
        return parse.parse_group_lag(body, cluster, group, url, observed)

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        """`/lag` for every group, at most `concurrency` at a time on kept-alive connections.

        A group that 404s went away between the list and the lag call: it is reported as
        missing (its series disappear). A group whose lag cannot be read, for whatever reason
        (any exception of its request or its parse), is reported failed: one group never costs
        the others or the cycle. A name that is no usable group id is never asked for; it is
        reported rejected.

        Workers of the cluster's own pool take the groups one after another (one task per
        worker, not one per group: 5,000 groups cost a few hand-offs between threads, not 5,000
        futures and wake-ups). How many: one worker first asks a few groups alone and
        `fan_out` sizes the rest from what they cost, so a Burrow that answers at once is not
        asked by 8 threads that only take turns on the interpreter; that worker then asks on
        with them. A request Burrow keeps waiting past `_PROBE_WAIT_S` (the probe's own
        included) adds a worker while groups are left, so slow groups never hold the others
        back; never more than `concurrency` in all. No group is asked once the
        cycle's deadline has passed, the client was closed, or this call stopped waiting
        (deadline plus a little slack, once).
        """
        names, rejected = usable_group_names(groups)
        executor = self._executor_for(cluster)
        deadline = current_deadline()
        pending = collections.deque(names)
        outcomes: dict[str, GroupLags | Exception] = {}
        stop = threading.Event()

        limit = max(self.settings.concurrency, 1)
        asking: dict[int, float] = {}  # worker thread → when its request in flight started
        sized: list[int] = []  # the probe's verdict: how many workers in all
        probed = threading.Event()

        def ask(group: str) -> None:
            me = threading.get_ident()
            asking[me] = time.monotonic()
            try:
                outcomes[group] = self.group_lag(cluster, group)
            except Exception as exc:  # classified below, per group
                outcomes[group] = exc
            finally:
                del asking[me]

        def work(probing: bool = False) -> None:
            """Ask groups until none is left. The first worker probes: it asks a few alone,
            and what they cost sizes the fan-out (`fan_out`)."""
            wall = cpu = 0.0
            asked = 0
            with cycle_deadline(deadline):
                while not stop.is_set() and not self._closed:
                    if probing and (asked >= _PROBE_ANSWERS or wall >= _PROBE_WALL_S):
                        sized.append(fan_out(wall, cpu, limit))
                        probed.set()
                        probing = False
                    try:
                        group = pending.popleft()
                    except IndexError:
                        break
                    started_wall, started_cpu = time.monotonic(), time.thread_time()
                    ask(group)
                    wall += time.monotonic() - started_wall
                    cpu += time.thread_time() - started_cpu
                    asked += 1
            if probing:  # every group was asked within the probe
                sized.append(fan_out(wall, cpu, limit))
                probed.set()

        # One absolute end for every wait: past the deadline, the slack is granted once.
        end = None if deadline is None else (
            time.monotonic() + max(deadline.remaining(), 0.0) + _JOIN_SLACK_S)

        def left() -> float | None:
            return None if end is None else max(end - time.monotonic(), 0.0)

        workers: list[Future[None]] = []
        not_asked = "not asked: the Burrow client was closed"
        try:
            if names:
                workers.append(executor.submit(work, True))
                # No verdict yet: Burrow keeps the probe waiting, so every worker goes.
                probed.wait(_PROBE_WAIT_S)
                target = sized[0] if sized else limit
                # Until every group is handed out: a request Burrow keeps waiting past
                # _PROBE_WAIT_S does not count as a worker, so slow groups never hold the
                # others back (at most `limit` workers in all).
                while pending and not stop.is_set() and not self._closed:
                    now = time.monotonic()
                    slow = sum(now - t > _PROBE_WAIT_S for t in list(asking.values()))
                    busy = sum(not w.done() for w in workers)
                    for _ in range(min(min(target + slow, limit) - busy, len(pending))):
                        workers.append(executor.submit(work))
                    remaining = left()
                    if remaining == 0.0:
                        break
                    futures_wait(workers, _PROBE_WAIT_S if remaining is None
                                 else min(_PROBE_WAIT_S, remaining))
                log.debug("cluster=%s /lag fan-out: %d workers (%d after the probe)", cluster,
                          len(workers), target)
        except RuntimeError as exc:  # the client was closed under the cycle (or Python exits)
            if not self._closed:
                not_asked = f"not asked: {exc}"
        futures_wait(workers, timeout=left())
        stop.set()
        answered = dict(outcomes)  # workers still running past this point are not waited for
        late = "no answer from Burrow before the cycle deadline"
        found: list[GroupLags] = []
        missing: list[str] = []
        failed: list[tuple[str, str]] = []
        for group in names:
            outcome = answered.get(group)
            if isinstance(outcome, GroupLags):
                found.append(outcome)
            elif outcome is None:
                failed.append((group, late if workers and not self._closed else not_asked))
            elif isinstance(outcome, BurrowNotFound):
                missing.append(group)
            elif isinstance(outcome, BurrowError):
                failed.append((group, str(outcome)))
            else:  # one group's body must never cost the other groups
                log.debug("cluster=%s group %s: unexpected %s", cluster, escaped(group),
                          type(outcome).__name__,
                          exc_info=None if isinstance(outcome, RecursionError) else outcome)
                failed.append((group, f"unusable answer from Burrow: {type(outcome).__name__}"))
        # A failed group's exception holds its traceback, whose `work` frame holds `outcomes`:
        # a reference cycle that would keep every answer of the cycle alive until the cyclic
        # collector's next middle collection. Cleared, reference counting frees them now.
        outcomes.clear()
        return ClusterLags(cluster, tuple(found), tuple(missing), tuple(failed), tuple(rejected))


def fan_out(wall_s: float, cpu_s: float, limit: int) -> int:
    """How many workers ask Burrow at once, from what the probe's answers cost: `wall_s` in
    all, `cpu_s` of it this process's work (the request, the JSON, the domain values).

    A worker waits `wall_s - cpu_s` for Burrow while another can use the interpreter, so
    `wall_s / cpu_s` workers keep it busy, and more only take turns on it, spending more CPU
    for the same wall time when Burrow answers at once (docs/scale.md).
    At least 1, at most `limit` (`burrow.concurrency`); `limit` when nothing was measured.
    """
    limit = max(limit, 1)
    if cpu_s <= 0 or wall_s <= 0:
        return limit
    return max(1, min(limit, math.ceil(wall_s / cpu_s) + 1))


def _split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """(the URL without `user:password@`, (user, password) or None).

    Split at the last `@` before anything parses the URL: urlsplit ends the host at a `#`, `/`
    or `?` inside the password and would leave the credentials in the URL that gets printed.
    """
    base, user, password = split_credentials(url)
    return base, (None if user is None else (user, password or ""))


def _host_header(host: str, port: int, scheme: str) -> str:
    """`Host` as http.client wrote it: the name in IDNA, an IPv6 address in brackets, the port
    unless it is the scheme's default."""
    name = f"[{host}]" if ":" in host else host.encode("idna").decode("ascii")
    return name if port == (443 if scheme == "https" else 80) else f"{name}:{port}"


def _target(path: str) -> bytes:
    """The request target: `/` for an empty path. ValueError for what cannot be sent (not
    ASCII, or a control character or space, which would split the request line)."""
    target = (path or "/").encode("ascii")
    if _UNSENDABLE.search(target):
        raise ValueError("the URL's path holds a space or control character")
    return target


def _capped_by_deadline(seconds: float) -> float:
    """A backoff never sleeps past the cycle's deadline."""
    deadline = current_deadline()
    return seconds if deadline is None else max(0.0, min(seconds, deadline.remaining()))


def _reason(exc: BaseException) -> str:
    """The innermost cause's type and, for an OS error, its errno text ("Connection refused"):
    never an exception's own text, which may carry the URL."""
    cause: BaseException = exc
    while cause.__cause__ is not None or cause.__context__ is not None:
        nxt = cause.__cause__ or cause.__context__
        if nxt is None:
            break
        cause = nxt
    name = type(cause).__name__
    if isinstance(cause, OSError) and isinstance(cause.strerror, str) and cause.strerror:
        return f"{cause.strerror} ({name})"  # the C library's words: "Connection refused"
    return name
