"""The listener under hostile or heavy clients: no client wedges it, and none holds a thread
forever (issue 9). `MetricsServer` on a free port with a tiny registry, in this process."""

from __future__ import annotations

import base64
import contextlib
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge

from freshness_tracker.http import ListenerLimits, MetricsServer, WebSettings, make_app
from freshness_tracker.sinks.exposition import Answer
from tests.faults.harness import Certs, make_certs
from tests.stack_support import poll, unavailable

pytestmark = pytest.mark.timeout(120)

USER, PASSWORD = "prometheus", "listener-pw"
#: Generous client timeout: only a wedged listener exceeds it, never a loaded machine.
CLIENT_TIMEOUT_S = 5.0


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("listener-certs"))


def _web(certs: Certs | None, auth: bool = False) -> WebSettings:
    return WebSettings(listen_address="127.0.0.1", port=0,
                       tls_cert_file=str(certs.cert) if certs else "",
                       tls_key_file=str(certs.key) if certs else "",
                       basic_auth_username=USER if auth else "",
                       basic_auth_password=PASSWORD if auth else "")


def _app(web: WebSettings) -> Any:
    registry = CollectorRegistry()
    Gauge("listener_test_value", "a value", registry=registry).set(42)
    return make_app(registry, lambda: (True, {"status": "ok"}),
                    lambda: (True, {"status": "ready"}), web)


@contextlib.contextmanager
def serving(certs: Certs | None, *, auth: bool = False, app: Any = None,
            limits: ListenerLimits | None = None, start: bool = True) -> Iterator[MetricsServer]:
    web = _web(certs, auth)
    server = MetricsServer(app or _app(web), web, limits)
    if start:
        server.start()
    try:
        yield server
    finally:
        server.stop()


class Client:
    def __init__(self, server: MetricsServer, certs: Certs | None, auth: bool = False) -> None:
        scheme = "https" if certs else "http"
        self.base = f"{scheme}://127.0.0.1:{server.port}"
        self.context = ssl.create_default_context(cafile=str(certs.ca)) if certs else None
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}"} if auth else {}

    def get(self, path: str, timeout_s: float = CLIENT_TIMEOUT_S) -> tuple[int, bytes, float]:
        began = time.monotonic()
        request = urllib.request.Request(self.base + path, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s, context=self.context) as r:
                return int(r.status), r.read(), time.monotonic() - began
        except urllib.error.HTTPError as err:
            return int(err.code), err.read(), time.monotonic() - began


def closed_by_peer_within(sock: socket.socket, timeout_s: float,
                          drip: bytes = b"") -> float | None:
    """Seconds until the server closes `sock` (EOF or reset) while we send `drip` a byte every
    0.2 s; None if it is still open after `timeout_s`."""
    began = time.monotonic()
    sock.settimeout(0.2)
    sent = 0
    while time.monotonic() - began < timeout_s:
        try:
            if sent < len(drip):
                sock.send(drip[sent:sent + 1])
                sent += 1
            if not sock.recv(65536):
                return time.monotonic() - began
        except TimeoutError:  # nothing to read (a TLS session ticket read as no data, too)
            continue
        except OSError:  # reset, or sending into a socket the server shut down
            return time.monotonic() - began
    return None


def test_an_idle_tcp_connection_does_not_block_tls_clients(certs: Certs) -> None:
    # The TLS handshake used to run in the accept thread: one connection that never spoke
    # blocked every other client for as long as it was held.
    with serving(certs, auth=True) as server:
        client = Client(server, certs, auth=True)
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(3)]
        try:
            time.sleep(0.3)  # the accept thread has taken them
            for path in ("/healthz", "/metrics", "/healthz", "/metrics"):
                status, body, seconds = client.get(path)
                assert status == 200 and seconds < 2.0, (path, status, seconds)
            assert b"listener_test_value 42.0" in body
        finally:
            for sock in idle:
                sock.close()


@pytest.mark.parametrize("drip", [b"", b"\x16\x03\x01\x02\x00" + b"\x01" * 200],
                         ids=["silent", "dripping-client-hello"])
def test_a_client_that_never_finishes_its_handshake_is_cut_at_the_deadline(
        certs: Certs, drip: bytes) -> None:
    limits = ListenerLimits(handshake_timeout_s=1.0, io_timeout_s=30.0)
    with serving(certs, limits=limits) as server:
        sock = socket.create_connection(("127.0.0.1", server.port))
        try:
            # a byte every 0.2 s: no single read ever times out, only the deadline cuts it
            seconds = closed_by_peer_within(sock, 15.0, drip)
        finally:
            sock.close()
        assert seconds is not None, "the half-open TLS connection was never closed"
        assert 0.9 <= seconds < 8.0, seconds
        poll(lambda: server.connections == 0, 5.0, "the connection thread to end")
        status, _, _ = Client(server, certs).get("/healthz")
        assert status == 200


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_request_headers_dripped_forever_are_cut_at_the_deadline(certs: Certs,
                                                                 tls: bool) -> None:
    limits = ListenerLimits(request_timeout_s=1.0, io_timeout_s=30.0)
    with serving(certs if tls else None, limits=limits) as server:
        raw = socket.create_connection(("127.0.0.1", server.port), timeout=CLIENT_TIMEOUT_S)
        sock = ssl.create_default_context(cafile=str(certs.ca)).wrap_socket(
            raw, server_hostname="127.0.0.1") if tls else raw
        try:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            seconds = closed_by_peer_within(sock, 15.0, b"X-Slow: " + b"a" * 200)
        finally:
            sock.close()
        assert seconds is not None, "a slow-loris client held its connection thread"
        assert seconds < 8.0, seconds
        poll(lambda: server.connections == 0, 5.0, "the connection thread to end")


MIB = b"x" * 1_048_576


def _huge_chunks(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
    start("200 OK", [("Content-Type", "text/plain")])
    return (MIB for _ in range(256))  # far more than the socket buffers


def _huge_answer(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
    start("200 OK", [("Content-Type", "text/plain")])
    return Answer("text/plain", False, (MIB,) * 256, 256 * len(MIB))  # one blocking write


@pytest.mark.parametrize("huge", [_huge_chunks, _huge_answer], ids=["chunks", "cached-answer"])
def test_a_client_that_never_reads_the_answer_is_cut_off(
        huge: Callable[..., Iterable[bytes]]) -> None:
    limits = ListenerLimits(io_timeout_s=1.0)
    with serving(None, app=huge, limits=limits) as server:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", server.port))
        try:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            poll(lambda: server.connections == 1, 5.0, "the request to be served")
            began = time.monotonic()
            poll(lambda: server.connections == 0, 15.0,
                 "the thread writing to a client that never reads to give up")
            assert time.monotonic() - began < 10.0
        finally:
            sock.close()


def test_connections_beyond_the_cap_are_closed_not_given_threads(certs: Certs) -> None:
    limits = ListenerLimits(max_connections=4, request_timeout_s=60.0, io_timeout_s=60.0)
    with serving(None, limits=limits) as server:
        held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(4)]
        try:
            poll(lambda: server.connections == 4, 5.0, "4 connection threads")
            extra = socket.create_connection(("127.0.0.1", server.port))
            try:
                assert closed_by_peer_within(extra, 5.0) is not None, "the 5th got a thread"
            finally:
                extra.close()
            assert server.connections == 4
            held.pop().close()
            poll(lambda: server.connections == 3, 5.0, "a free slot")
            assert Client(server, None).get("/healthz")[0] == 200
        finally:
            for sock in held:
                sock.close()


def test_stop_cuts_open_connections(certs: Certs) -> None:
    with serving(certs) as server:
        idle = socket.create_connection(("127.0.0.1", server.port))
        poll(lambda: server.connections == 1, 5.0, "the connection thread")
        began = time.monotonic()
        server.stop()
        try:
            assert time.monotonic() - began < 3.0
            poll(lambda: server.connections == 0, 5.0, "the connection thread to end")
        finally:
            idle.close()


def _listen_queue(server: MetricsServer) -> tuple[int, int]:
    """(connections waiting for accept(), the backlog) from the kernel's TCP_INFO of a
    listening socket: tcpi_unacked and tcpi_sacked hold them in that state."""
    sock = server._server.socket
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    unacked, sacked = struct.unpack_from("II", info, 24)
    return unacked, sacked


def test_the_listen_backlog_queues_a_burst_of_100_connections() -> None:
    if sys.platform != "linux":
        unavailable("TCP_INFO of a listener is Linux's")
    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    with serving(None, start=False) as server:  # nothing accepts: the kernel queues them
        clients = [socket.create_connection(("127.0.0.1", server.port), timeout=2)
                   for _ in range(100)]
        try:
            queued, backlog = poll(lambda: (q := _listen_queue(server))[0] >= 100 and q, 5.0,
                                   lambda: f"100 queued connections, {_listen_queue(server)}")
            assert backlog >= min(128, somaxconn), backlog
            assert queued == 100
        finally:
            for sock in clients:
                sock.close()


def test_50_concurrent_scrapers_over_tls_and_basic_auth_never_time_out(certs: Certs) -> None:
    with serving(certs, auth=True) as server:
        client = Client(server, certs, auth=True)
        stop_at = time.monotonic() + 10.0
        latencies: list[float] = []
        failures: list[str] = []
        lock = threading.Lock()

        def scrape() -> None:
            while time.monotonic() < stop_at:
                try:
                    status, body, seconds = client.get("/metrics")
                    ok = status == 200 and b"listener_test_value" in body
                except Exception as exc:
                    ok, seconds = False, -1.0
                    status, body = 0, repr(exc).encode()
                with lock:
                    if ok:
                        latencies.append(seconds)
                    else:
                        failures.append(f"{status} {body[:80]!r}")

        threads = [threading.Thread(target=scrape) for _ in range(50)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert server.connections <= 50
    latencies.sort()
    assert not failures, f"{len(failures)} failed scrapes, e.g. {failures[:3]}"
    assert len(latencies) >= 100, len(latencies)
    assert latencies[-1] < CLIENT_TIMEOUT_S
