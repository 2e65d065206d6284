"""A plain Kafka frame proxy in front of one broker: added round trip, cut-off switch, counts.

Why: no ``tc netem`` here, and a test needs a broker that is alive but unreachable, or far away.

* ``delay_ms`` holds every response frame that long after it arrived from the broker: a fixed
  added round trip (frames stay in order; pipelined responses are not delayed cumulatively).
* :meth:`FrameProxy.stop` closes the listener and every connection; :meth:`FrameProxy.start`
  listens again on the same port: a network cut and its repair, the broker untouched.
* Request frames are counted per API key, so a benchmark can tell Fetch requests per broker.

Frames pass through byte for byte (no rewriting: Kafka 4 and the clients agree on versions).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable

__all__ = ["API_FETCH", "API_LIST_OFFSETS", "FrameProxy"]

log = logging.getLogger(__name__)

API_FETCH = 1
API_LIST_OFFSETS = 2

_I32 = struct.Struct(">i")
_MAX_FRAME = 256 * 1024 * 1024


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv_frame(sock: socket.socket) -> bytes | None:
    """One length-prefixed frame's payload, or None at EOF."""
    head = _recv_exact(sock, 4)
    if head is None:
        return None
    size = int(_I32.unpack(head)[0])
    if not 0 <= size <= _MAX_FRAME:
        raise ValueError(f"bad frame size {size}")
    return _recv_exact(sock, size)


def _send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_I32.pack(len(payload)) + payload)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class _Connection:
    """One client connection and its upstream, pumped by two threads."""

    def __init__(self, proxy: FrameProxy, client: socket.socket, upstream: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.closed = threading.Event()

    def start(self) -> None:
        for target, name in ((self._requests, "req"), (self._responses, "resp")):
            threading.Thread(target=target, name=f"frame-proxy-{name}", daemon=True).start()

    def close(self) -> None:
        if not self.closed.is_set():
            self.closed.set()
            _close(self.client)
            _close(self.upstream)
            self.proxy._forget(self)

    def _requests(self) -> None:
        self._pump(self.client, self.upstream, "request", self._count_request)

    def _responses(self) -> None:
        self._pump(self.upstream, self.client, "response", self._delay_response)

    def _pump(self, source: socket.socket, sink: socket.socket, what: str,
              on_frame: Callable[[bytes], None]) -> None:
        """Forward frames from ``source`` to ``sink`` (``on_frame`` sees each one first) until
        either side ends; then the whole connection closes, both ways."""
        try:
            while (payload := _recv_frame(source)) is not None:
                on_frame(payload)
                _send_frame(sink, payload)
        except (OSError, ValueError) as exc:
            if not self.closed.is_set():
                log.debug("proxy %s pump ended: %s", what, exc)
        finally:
            self.close()

    def _count_request(self, payload: bytes) -> None:
        if len(payload) >= 2:
            self.proxy._count(int(struct.unpack_from(">h", payload)[0]))

    def _delay_response(self, payload: bytes) -> None:
        arrived = time.monotonic()
        delay = self.proxy.delay_ms / 1000.0
        if delay > 0:
            wait = arrived + delay - time.monotonic()
            if wait > 0:
                time.sleep(wait)


class FrameProxy:
    """A threaded proxy on ``host:port`` forwarding Kafka frames to ``upstream``.

    ``port=0`` picks a free port at the first :meth:`start`; later starts reuse it.
    ``delay_ms`` may be changed while running.
    """

    def __init__(
        self,
        upstream: tuple[str, int],
        port: int = 0,
        delay_ms: float = 0.0,
        host: str = "127.0.0.1",
    ) -> None:
        self.upstream = upstream
        self.host = host
        self.port = port
        self.delay_ms = delay_ms
        self._listener: socket.socket | None = None
        self._conns: set[_Connection] = set()
        self._lock = threading.Lock()
        self._counts: Counter[int] = Counter()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._listener is not None

    def start(self) -> None:
        """Listen (again) on the same port; a no-op when already running."""
        if self._listener is not None:
            return
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        self._listener = sock
        threading.Thread(
            target=self._accept, args=(sock,), name="frame-proxy-accept", daemon=True
        ).start()
        log.debug("frame proxy listening on %s -> %s:%d", self.address, *self.upstream)

    def stop(self) -> None:
        """Stop listening and drop every open connection, as an unreachable broker would."""
        sock, self._listener = self._listener, None
        if sock is not None:
            _close(sock)
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            conn.close()

    def request_counts(self) -> dict[int, int]:
        """Request frames seen per API key since the last :meth:`reset_counts`."""
        with self._lock:
            return dict(self._counts)

    def reset_counts(self) -> None:
        with self._lock:
            self._counts.clear()

    def __enter__(self) -> FrameProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _count(self, api_key: int) -> None:
        with self._lock:
            self._counts[api_key] += 1

    def _forget(self, conn: _Connection) -> None:
        with self._lock:
            self._conns.discard(conn)

    def _accept(self, listener: socket.socket) -> None:
        while self._listener is listener:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError as exc:
                log.debug("frame proxy cannot reach %s:%d: %s", *self.upstream, exc)
                _close(client)  # the broker is down: so is its address
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(self, client, upstream)
            with self._lock:
                if self._listener is not listener:
                    conn.close()
                    return
                self._conns.add(conn)
            conn.start()
