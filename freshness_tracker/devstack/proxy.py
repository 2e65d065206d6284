"""A Kafka frame proxy in front of tansu: ListOffsets v0 glue, RTT emulation, cut-off switch.

Why it exists:

* Burrow 1.2.1 (Sarama 1.22) always sends ListOffsets **v0**; tansu's v0 answer omits the mandatory
  ``old_style_offsets`` array, so Burrow never gets head offsets. The proxy rewrites those requests
  to v1 and the v1 answers back to the v0 layout. Every other frame passes through byte for byte.
* ``delay_ms`` holds every response frame that long after it arrived from the broker: a fixed added
  round trip, since ``tc netem`` is not available here.
* :meth:`KafkaProxy.stop` closes the listener and every connection, and :meth:`KafkaProxy.start`
  listens again on the same port: for tests, that is a broker going away and coming back.
* It counts request frames per API key, so benchmarks can report Fetch requests.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
import time
from collections import Counter

__all__ = [
    "API_FETCH",
    "API_LIST_OFFSETS",
    "KafkaProxy",
    "list_offsets_request_v0_to_v1",
    "list_offsets_response_v1_to_v0",
]

log = logging.getLogger(__name__)

API_FETCH = 1
API_LIST_OFFSETS = 2

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class _Reader:
    """Sequential big-endian reads over a bytes payload (raises ValueError when short)."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"frame too short: need {n} bytes at {self.pos} of {len(self.data)}")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def i16(self) -> int:
        return int(_I16.unpack(self.take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def i64(self) -> int:
        return int(_I64.unpack(self.take(8))[0])

    def string_raw(self) -> bytes:
        """A (nullable) INT16-length string, returned with its length prefix."""
        start = self.pos
        n = self.i16()
        if n > 0:
            self.take(n)
        return self.data[start : self.pos]

    def at_end(self) -> bool:
        return self.pos == len(self.data)


def list_offsets_request_v0_to_v1(payload: bytes) -> bytes:
    """Rewrite a ListOffsets v0 request payload (no length prefix) into v1.

    v1 is v0 without each partition's ``max_num_offsets``; the header keeps its correlation id.
    """
    r = _Reader(payload)
    api_key, api_version = r.i16(), r.i16()
    if api_key != API_LIST_OFFSETS or api_version != 0:
        raise ValueError(f"not a ListOffsets v0 request: key={api_key} version={api_version}")
    corr = r.i32()
    client_id = r.string_raw()
    out = bytearray(_I16.pack(API_LIST_OFFSETS) + _I16.pack(1) + _I32.pack(corr) + client_id)
    out += _I32.pack(r.i32())  # replica_id
    n_topics = r.i32()
    out += _I32.pack(max(n_topics, 0))
    for _ in range(max(n_topics, 0)):
        out += r.string_raw()
        n_parts = r.i32()
        out += _I32.pack(max(n_parts, 0))
        for _ in range(max(n_parts, 0)):
            out += _I32.pack(r.i32())  # partition
            out += _I64.pack(r.i64())  # timestamp
            r.i32()  # max_num_offsets: not in v1
    if not r.at_end():
        raise ValueError("trailing bytes after ListOffsets v0 request")
    return bytes(out)


def list_offsets_response_v1_to_v0(payload: bytes) -> bytes:
    """Rewrite a ListOffsets v1 response payload (no length prefix) into the v0 layout.

    Each partition's ``timestamp, offset`` becomes ``old_style_offsets = [offset]``, or ``[]`` when
    the partition has an error or no offset, which is what a v0 broker answers.
    """
    r = _Reader(payload)
    out = bytearray(_I32.pack(r.i32()))  # correlation id
    n_topics = r.i32()
    out += _I32.pack(max(n_topics, 0))
    for _ in range(max(n_topics, 0)):
        out += r.string_raw()
        n_parts = r.i32()
        out += _I32.pack(max(n_parts, 0))
        for _ in range(max(n_parts, 0)):
            partition, error_code = r.i32(), r.i16()
            r.i64()  # timestamp: not in v0
            offset = r.i64()
            out += _I32.pack(partition) + _I16.pack(error_code)
            if error_code == 0 and offset >= 0:
                out += _I32.pack(1) + _I64.pack(offset)
            else:
                out += _I32.pack(0)
    if not r.at_end():
        raise ValueError("trailing bytes after ListOffsets v1 response")
    return bytes(out)


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
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
    if size < 0:
        raise ValueError(f"negative frame size {size}")
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

    def __init__(self, proxy: KafkaProxy, client: socket.socket, upstream: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.rewritten: set[int] = set()
        self.lock = threading.Lock()
        self.closed = threading.Event()

    def start(self) -> None:
        for target, name in ((self._requests, "req"), (self._responses, "resp")):
            threading.Thread(target=target, name=f"kafka-proxy-{name}", daemon=True).start()

    def close(self) -> None:
        if not self.closed.is_set():
            self.closed.set()
            _close(self.client)
            _close(self.upstream)
            self.proxy._forget(self)

    def _requests(self) -> None:
        try:
            while (payload := _recv_frame(self.client)) is not None:
                if len(payload) >= 8:
                    api_key, api_version, corr = struct.unpack_from(">hhi", payload)
                    self.proxy._count(api_key)
                    if api_key == API_LIST_OFFSETS and api_version == 0:
                        payload = list_offsets_request_v0_to_v1(payload)
                        with self.lock:
                            self.rewritten.add(corr)
                _send_frame(self.upstream, payload)
        except (OSError, ValueError) as exc:
            if not self.closed.is_set():
                log.debug("proxy request pump ended: %s", exc)
        finally:
            self.close()

    def _responses(self) -> None:
        try:
            while (payload := _recv_frame(self.upstream)) is not None:
                arrived = time.monotonic()
                if len(payload) >= 4:
                    corr = int(_I32.unpack_from(payload)[0])
                    with self.lock:
                        rewrite = corr in self.rewritten
                        self.rewritten.discard(corr)
                    if rewrite:
                        payload = list_offsets_response_v1_to_v0(payload)
                delay = self.proxy.delay_ms / 1000.0
                if delay > 0:
                    wait = arrived + delay - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                _send_frame(self.client, payload)
        except (OSError, ValueError) as exc:
            if not self.closed.is_set():
                log.debug("proxy response pump ended: %s", exc)
        finally:
            self.close()


class KafkaProxy:
    """A threaded TCP proxy for Kafka frames on ``127.0.0.1:port``, forwarding to ``upstream``.

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
        """``host:port`` clients should use (the address tansu advertises)."""
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
            target=self._accept, args=(sock,), name="kafka-proxy-accept", daemon=True
        ).start()
        log.info("kafka proxy listening on %s -> %s:%d", self.address, *self.upstream)

    def stop(self) -> None:
        """Stop listening and drop every open connection, as a dead broker would."""
        sock, self._listener = self._listener, None
        if sock is not None:
            _close(sock)
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            conn.close()
        log.info("kafka proxy on %s stopped", self.address)

    def request_counts(self) -> dict[int, int]:
        """Request frames seen per API key since the last :meth:`reset_counts`."""
        with self._lock:
            return dict(self._counts)

    def reset_counts(self) -> None:
        with self._lock:
            self._counts.clear()

    def __enter__(self) -> KafkaProxy:
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
                log.warning("kafka proxy cannot reach upstream %s:%d: %s", *self.upstream, exc)
                _close(client)
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
