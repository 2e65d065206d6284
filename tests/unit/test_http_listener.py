"""The listener under hostile or heavy clients: no client wedges it, and none holds a thread
forever. `MetricsServer` on a free port with a tiny registry, in this process."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import logging
import re
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge

from devstack.processes import poll
from devstack.testing import unavailable
from freshness_tracker.domain.model import Snapshot
from freshness_tracker.http import AuthThrottle, ListenerLimits, MetricsServer, make_app
from freshness_tracker.sinks.exposition import Answer
from freshness_tracker.sinks.status_page import render_status_page
from freshness_tracker.web_settings import WebSettings
from tests.faults.harness import Certs, make_certs

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
                # blocked behind the idle ones, it would wait for their first-byte cut
                assert status == 200, (path, status)
                assert seconds < ListenerLimits().first_byte_timeout_s, (path, seconds)
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


def _held_app(release: threading.Event) -> Any:
    """An app whose every answer waits for `release`: its connections are all answering."""

    def app(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        release.wait(30)
        start("200 OK", [("Content-Type", "text/plain")])
        return [b"done\n"]

    return app


def test_connections_beyond_the_cap_are_closed_when_every_slot_is_answering() -> None:
    limits = ListenerLimits(max_connections=4, request_timeout_s=60.0, io_timeout_s=60.0)
    release = threading.Event()
    with serving(None, app=_held_app(release), limits=limits) as server:
        held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(4)]
        try:
            for sock in held:
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            poll(lambda: server.connections == 4, 5.0, "4 connections answering")
            extra = socket.create_connection(("127.0.0.1", server.port))
            try:
                assert closed_by_peer_within(extra, 5.0) is not None, "the 5th got a thread"
            finally:
                extra.close()
            assert server.connections == 4
            release.set()
            poll(lambda: server.connections == 0, 5.0, "the answers to end")
            assert Client(server, None).get("/healthz")[0] == 200
        finally:
            release.set()
            for sock in held:
                sock.close()


def test_a_connection_that_sends_nothing_is_cut_at_the_first_byte_deadline() -> None:
    # The whole request deadline used to apply from accept: an idle socket held a slot 10 s.
    limits = ListenerLimits(first_byte_timeout_s=0.5, request_timeout_s=30.0, io_timeout_s=30.0)
    with serving(None, limits=limits) as server:
        idle = socket.create_connection(("127.0.0.1", server.port))
        try:
            seconds = closed_by_peer_within(idle, 15.0)
        finally:
            idle.close()
        assert seconds is not None and seconds < 5.0, seconds
        poll(lambda: server.connections == 0, 5.0, "the connection thread to end")


def _hold(port: int, count: int, head: bytes) -> list[socket.socket]:
    """`count` connections that send `head` (maybe nothing) and then never finish."""
    held = []
    for _ in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=2)
            if head:
                sock.sendall(head)
        except OSError:  # the listener cut an older one of ours meanwhile: fine
            continue
        held.append(sock)
    return held


def _answered(client: Client, path: str) -> tuple[int, float]:
    """(status, seconds) of `path`, retried a few times: a probe's retries, bounded."""
    began = time.monotonic()
    for _ in range(3):
        try:
            status, _, _ = client.get(path)
            return status, time.monotonic() - began
        except OSError:
            continue
    return 0, time.monotonic() - began


@pytest.mark.parametrize("share", [64, 1000], ids=["address-share", "no-share"])
@pytest.mark.parametrize("head", [b"", b"GET /metrics HTTP/1.1\r\nX-Slow: "],
                         ids=["idle", "unfinished-head"])
def test_held_connections_beyond_the_cap_never_starve_the_probes(head: bytes,
                                                                  share: int) -> None:
    # 128 connections that never sent a request took every slot: /healthz and /metrics
    # answered nothing, and reopening them kept it so. Same address as the probes (loopback):
    # no per-address share helps; the oldest unfinished connection gives its slot.
    limits = ListenerLimits(request_timeout_s=30.0, io_timeout_s=30.0,
                            first_byte_timeout_s=30.0, max_connections_per_client=share)
    with serving(None, limits=limits) as server:
        client = Client(server, None)
        held: list[socket.socket] = []
        results: list[tuple[str, int, float]] = []
        try:
            for _ in range(3):  # the attacker reopens everything, then the probes come
                for sock in held:
                    sock.close()
                held = _hold(server.port, limits.max_connections + 40, head)
                for path in ("/healthz", "/metrics", "/"):
                    results.append((path, *_answered(client, path)))
            assert server.connections <= limits.max_connections
        finally:
            for sock in held:
                sock.close()
    failed = [r for r in results if r[1] != 200]
    assert not failed, f"probes not answered while connections were held: {failed}"
    slowest = max(seconds for _, _, seconds in results)
    assert slowest < 2 * CLIENT_TIMEOUT_S, slowest


def _connect(port: int, source: str) -> socket.socket:
    """A connection from `source` (any 127.0.0.0/8 address is this host's on Linux)."""
    sock = socket.socket()
    sock.settimeout(CLIENT_TIMEOUT_S)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def _status_of(sock: socket.socket) -> int:
    """The status the listener answered on `sock` (0: closed without an answer)."""
    data = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            data += chunk
    return int(data.split()[1]) if data.startswith(b"HTTP/1.") else 0


def test_two_addresses_holding_answers_never_starve_the_probes() -> None:
    # Two addresses asked for /metrics on 64 connections each and never read the answer:
    # answers in progress are never evicted, so every slot was theirs and /healthz from a
    # third address (the kubelet) was refused.
    release = threading.Event()
    healthz = _app(_web(None))

    def app(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        if environ["PATH_INFO"] == "/metrics":  # an answer that does not end (never read)
            release.wait(30)
        return healthz(environ, start)  # type: ignore[no-any-return]

    limits = ListenerLimits(request_timeout_s=30.0, io_timeout_s=30.0, answer_wait_s=1.0)
    share = limits.max_answering_per_client
    with serving(None, app=app, limits=limits) as server:
        held: list[socket.socket] = []
        try:
            for source in ("127.0.0.2", "127.0.0.3"):
                for _ in range(limits.max_connections_per_client):
                    with contextlib.suppress(OSError):  # cut to make room: fine
                        sock = _connect(server.port, source)
                        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                        held.append(sock)
            assert len(held) > 2 * share, f"only {len(held)} connections from 127.0.0.2/.3"
            results = [_answered(Client(server, None), "/healthz") for _ in range(3)]
            # requests beyond each address' share waited answer_wait_s, then got 503
            poll(lambda: server.connections <= 2 * share, 30.0,
                 lambda: f"{server.connections} connections still open")
            release.set()
            statuses = [_status_of(sock) for sock in held]
        finally:
            release.set()
            for sock in held:
                sock.close()
    assert all(status == 200 for status, _ in results), results
    assert statuses.count(200) <= 2 * share
    assert statuses.count(503) >= len(held) // 2, statuses  # refused after the wait, not held


def test_a_burst_of_scrapes_from_one_address_beyond_its_share_is_served_not_refused() -> None:
    # 50 scrapers on one address (a load test, several Prometheus behind one NAT) got 503 for
    # every request beyond the 16 in progress; they wait for a turn instead.
    healthz = _app(_web(None))

    def app(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        time.sleep(0.3)  # each answer takes a while: 16 are in progress when the rest arrive
        return healthz(environ, start)  # type: ignore[no-any-return]

    with serving(None, app=app) as server:
        client = Client(server, None)
        statuses: list[int] = []
        lock = threading.Lock()

        def scrape() -> None:
            status, _, _ = client.get("/healthz", timeout_s=30)
            with lock:
                statuses.append(status)

        threads = [threading.Thread(target=scrape) for _ in range(50)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert statuses == [200] * 50, statuses


@pytest.mark.parametrize("huge", [_huge_chunks, _huge_answer], ids=["chunks", "cached-answer"])
def test_clients_that_never_read_are_cut_at_the_first_send_timeout_and_logged_once(
        huge: Callable[..., Iterable[bytes]], caplog: pytest.LogCaptureFixture) -> None:
    # A cached answer waited three send timeouts for a client that read nothing (the first
    # write filled the buffer, then waited), and each such client left a WARNING line.
    limits = ListenerLimits(io_timeout_s=3.0, response_timeout_s=60.0)
    with caplog.at_level(logging.WARNING, logger="freshness_tracker.http"), \
            serving(None, app=huge, limits=limits) as server:
        clients = []
        try:
            for _ in range(3):
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.connect(("127.0.0.1", server.port))
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                clients.append(sock)
            poll(lambda: server.connections == 3, 5.0, "the requests to be answered")
            began = time.monotonic()
            poll(lambda: server.connections == 0, 20.0, "the stalled answers to be cut")
            seconds = time.monotonic() - began
        finally:
            for sock in clients:
                sock.close()
    assert seconds < 5.5, f"cut after {seconds:.1f} s, the send timeout is 3 s"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "1 answer(s) not delivered" in lines[0], lines


def test_a_client_reading_slowly_but_steadily_gets_the_whole_answer() -> None:
    # Progress is the client taking a third of the socket buffer per send timeout; reading
    # 8 MiB through a 64 KiB receive buffer, pausing after each read, takes several of the
    # writes' quarter-timeout slices, and far more than a third of the buffer per timeout.
    body = (b"y" * 1_048_576,) * 8

    def app(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        start("200 OK", [("Content-Type", "text/plain")])
        return Answer("text/plain", False, body, 8 * 1_048_576)

    with serving(None, app=app, limits=ListenerLimits(io_timeout_s=4.0)) as server:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.settimeout(CLIENT_TIMEOUT_S)
        sock.connect(("127.0.0.1", server.port))
        received = 0
        try:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            while chunk := sock.recv(262_144):
                received += len(chunk)
                time.sleep(0.05)
        finally:
            sock.close()
    assert received > 8 * 1_048_576, received  # headers and the whole body


@pytest.mark.parametrize(("request_line", "headers", "status"), [
    (b"GET /healthz HTTP/1.1", 40, 431),  # 40 KiB of headers: the head is over 32 KiB
    (b"GET /healthz HTTP/1.1", 30, 200),
    (b"GET /healthz?pad=" + b"a" * 9000 + b" HTTP/1.1", 0, 414),  # the line is over 8 KiB
    (b"GET /healthz?pad=" + b"a" * 8000 + b" HTTP/1.1", 0, 200)])
def test_the_request_head_is_bounded_in_bytes_as_it_is_read(
        request_line: bytes, headers: int, status: int, caplog: pytest.LogCaptureFixture) -> None:
    # 98 header lines of 64 KiB each were read and kept per connection: 128 connections
    # took the process to 5 GB before any check. Now a connection holds 32 KiB at most:
    # the server refuses (431) as soon as the head is over, whatever its lines.
    pad = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 1000) for i in range(headers))
    with caplog.at_level(logging.WARNING), serving(None) as server:
        answer = _raw(server.port, request_line + b"\r\nHost: x\r\n" + pad + b"\r\n")
        poll(lambda: server.connections == 0, 5.0, "the connection to end")
    assert _head_of(answer)[0] == status
    assert not caplog.records, [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize(("raw", "status"), [
    (b"<html><script>alert(1)</script> / HTTP/1.1 x\r\n\r\n", 400),
    (b"GET / HTTP/2.0\r\n\r\n", 505),
    (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
    (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 40 + b"\r\n\r\n", 400),
    (b"GET /metrics\r\n", 400)])  # HTTP/0.9: no headers, no status line: not served
def test_error_answers_have_a_status_line_and_never_echo_the_client(
        raw: bytes, status: int, caplog: pytest.LogCaptureFixture) -> None:
    # A malformed request line got an HTTP/0.9-style answer: no status line, no headers
    # (nosniff neither), and the client's own text as the body.
    with caplog.at_level(logging.WARNING), serving(None) as server:
        answer = _raw(server.port, raw)
        poll(lambda: server.connections == 0, 5.0, "the connection to end")
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    assert answer.startswith(b"HTTP/1.0 %d " % status), answer[:100]
    _, headers, body = _head_of(answer)
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["x-content-type-options"] == "nosniff"
    assert body == f"{status} {HTTPStatus(status).phrase}\n".encode()
    assert b"script" not in answer and b"2.0" not in answer.split(b"\r\n", 1)[1]


def _cut(peer: socket.socket) -> bool:
    """Whether the listener's end of a socketpair was shut down (the peer reads EOF)."""
    try:
        return peer.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False


def test_an_address_gives_up_its_own_unfinished_connections_never_anothers() -> None:
    from freshness_tracker.http import _Reaper

    pairs = [socket.socketpair() for _ in range(8)]
    ours = [a for a, _ in pairs]
    reaper = _Reaper(max_connections=5, max_per_client=3)
    try:
        assert [reaper.admit(s, "10.0.0.1", 60) for s in ours[:3]] == ["admitted"] * 3
        assert reaper.admit(ours[3], "10.0.0.2", 60) == "admitted"
        # at its share, an address's newcomer takes its own oldest's slot, with room left
        assert reaper.admit(ours[4], "10.0.0.1", 60) == "evicted"
        assert _cut(pairs[0][1]) and not _cut(pairs[3][1])
        assert reaper.admit(ours[5], "10.0.0.3", 60) == "admitted"  # full now
        # full: the busiest address gives a slot, first one that never sent a byte
        reaper.arm(ours[1], 60, spoke=True)
        assert reaper.admit(ours[6], "10.0.0.4", 60) == "evicted"
        assert _cut(pairs[2][1])  # not 1 (it spoke, though older), not 4 (newer)
        assert not any(_cut(pairs[i][1]) for i in (1, 3, 4, 5, 6))
        # a connection answering a request is never evicted: all answering, refused
        for sock in (ours[1], ours[3], ours[4], ours[5], ours[6]):
            assert reaper.answer(sock, 60)
        assert reaper.admit(ours[7], "10.0.0.5", 60) is None
        assert len(reaper) == 5
    finally:
        reaper.close()
        for a, b in pairs:
            a.close()
            b.close()


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


# --- failed logins, /healthz, methods and headers ------------------------------------------


def _environ(path: str = "/metrics", auth: str | None = None, method: str = "GET",
             address: str = "10.0.0.1", **headers: str) -> dict[str, Any]:
    environ: dict[str, Any] = {
        "PATH_INFO": path, "REQUEST_METHOD": method, "SERVER_NAME": "x", "SERVER_PORT": "1",
        "wsgi.input": io.BytesIO(), "wsgi.url_scheme": "http", "QUERY_STRING": "",
        "REMOTE_ADDR": address, **{f"HTTP_{k.upper()}": v for k, v in headers.items()}}
    if auth is not None:
        environ["HTTP_AUTHORIZATION"] = "Basic " + base64.b64encode(auth.encode()).decode()
    return environ


def _call(app: Any, environ: dict[str, Any]) -> tuple[str, dict[str, str], bytes]:
    answered: list[tuple[str, list[tuple[str, str]]]] = []
    body = b"".join(app(environ, lambda s, h, *a: answered.append((s, h))))
    status, headers = answered[0]
    return status, dict(headers), body


class FakeTime:
    """A clock that only the test advances: nothing is timed."""

    def __init__(self) -> None:
        self.now = 1000.0

    def clock(self) -> float:
        return self.now


def _auth_app(throttle: AuthThrottle, healthy: bool = True) -> Any:
    details = {"status": "ok" if healthy else "stuck",
               "clusters": {"prod": {"error": "Burrow http://burrow:8000 refused"}}}
    return make_app(CollectorRegistry(), lambda: (healthy, details),
                    lambda: (True, {"status": "ready"}), _web(None, auth=True),
                    throttle=throttle)


def test_failed_logins_make_their_client_wait_unanswered_and_are_logged_once_a_minute(
        caplog: pytest.LogCaptureFixture) -> None:
    # Wrong passwords could be tried at ~444/s from one client; then the throttle slept in the
    # request thread, and every sleeping request held a slot no newcomer could take.
    fake = FakeTime()
    app = _auth_app(AuthThrottle(fake.clock))
    with caplog.at_level(logging.WARNING, logger="freshness_tracker.http"):
        for delay in (0.1, 0.2, 0.4, 0.8, 1.0, 1.0):
            assert _call(app, _environ(auth=f"{USER}:guess"))[0].startswith("401")
            # until the delay is over: 429 at once (the clock stands still: nothing slept),
            # the password unchecked, the right one too
            fake.now += delay - 0.01
            for auth in (f"{USER}:guess", f"{USER}:{PASSWORD}"):
                status, headers, _ = _call(app, _environ(auth=auth))
                assert status.startswith("429") and headers["Retry-After"] == "1", delay
            fake.now += 0.011
        # another address is not held back, and here the right password works after the wait
        assert _call(app, _environ(auth=f"{USER}:{PASSWORD}", address="10.0.0.2"))[0] \
            .startswith("200")
        fake.now += 1.0
        assert _call(app, _environ(auth=f"{USER}:{PASSWORD}"))[0].startswith("200")
        assert _call(app, _environ(auth=f"{USER}:{PASSWORD}"))[0].startswith("200")  # cleared
        assert _call(app, _environ())[0].startswith("401")  # no credentials: no guess
        fake.now += 61.0  # the throttle's clock says when the next line is due
        assert _call(app, _environ(auth=f"{USER}:again"))[0].startswith("401")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "1 failed basic-auth attempt" in lines[0] and "10.0.0.1" in lines[0]
    assert "6 failed basic-auth attempt" in lines[1]
    assert not any("guess" in line or USER in line for line in lines)


def test_a_guesser_behind_a_scrapers_address_locks_out_only_the_user_name_it_tries() -> None:
    fake = FakeTime()
    app = _auth_app(AuthThrottle(fake.clock))
    for _ in range(20):  # NAT or a proxy: the guesser and Prometheus share 10.0.0.1
        _call(app, _environ(auth="admin:guess"))
        fake.now += 0.05
    assert _call(app, _environ(auth="admin:guess"))[0].startswith("429")
    assert _call(app, _environ(auth=f"{USER}:{PASSWORD}"))[0].startswith("200")
    # guessing the scraper's own user name does hold the scraper back (documented)
    _call(app, _environ(auth=f"{USER}:guess"))
    assert _call(app, _environ(auth=f"{USER}:{PASSWORD}"))[0].startswith("429")


def test_the_throttle_table_stays_bounded_and_each_failure_costs_the_same_when_full() -> None:
    # Once full, each failure rebuilt the whole table under the lock (~1 ms per failure).
    fake = FakeTime()
    throttle = AuthThrottle(fake.clock)
    keys = [(f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}", b"u") for i in range(20_000)]
    for key in keys:
        throttle.failed(key, key[0])
        fake.now += 0.0001
    assert len(throttle._failures) == AuthThrottle.MAX_TRACKED
    assert throttle.wait(keys[-1]) > 0 and throttle.wait(keys[0]) == 0  # the oldest left
    fake.now += AuthThrottle.FORGET_S + 1  # expired records leave with the next failure
    throttle.failed(keys[0], "x")
    assert list(throttle._failures) == [keys[0]]


def test_an_unauthenticated_healthz_says_only_its_status() -> None:
    fake = FakeTime()
    app = _auth_app(AuthThrottle(fake.clock))
    for environ in (_environ("/healthz"), _environ("/healthz", auth=f"{USER}:wrong")):
        status, _, body = _call(app, environ)
        assert status.startswith("200") and json.loads(body) == {"status": "ok"}
    fake.now += 61.0  # the failed attempt above is forgotten
    status, _, body = _call(app, _environ("/healthz", auth=f"{USER}:{PASSWORD}"))
    assert json.loads(body)["clusters"]["prod"]["error"] == "Burrow http://burrow:8000 refused"
    status, _, body = _call(_auth_app(AuthThrottle(fake.clock), healthy=False),
                            _environ("/healthz"))
    assert status.startswith("503") and json.loads(body) == {"status": "stuck"}
    # a probe is never held back by failed logins: it gets the status at once
    for i in range(6):
        _call(app, _environ(auth=f"{USER}:guess-{i}"))
    status, _, body = _call(app, _environ("/healthz", auth=f"{USER}:{PASSWORD}"))
    assert status.startswith("200") and json.loads(body) == {"status": "ok"}
    # without basic auth, everything is open: the details too
    open_app = make_app(CollectorRegistry(), lambda: (True, {"status": "ok", "clusters": {}}),
                        lambda: (True, {}), _web(None))
    assert json.loads(_call(open_app, _environ("/healthz"))[2]) == {"status": "ok",
                                                                    "clusters": {}}


@pytest.mark.parametrize("header", [
    f"basic {base64.b64encode(f'{USER}:{PASSWORD}'.encode()).decode()}",
    f"Basic   {base64.b64encode(f'{USER}:{PASSWORD}'.encode()).decode()}  "])
def test_the_authorization_scheme_is_case_insensitive(header: str) -> None:
    app = _auth_app(AuthThrottle())
    environ = _environ()
    environ["HTTP_AUTHORIZATION"] = header
    assert _call(app, environ)[0].startswith("200")


@pytest.mark.parametrize("header", ["Basic !!!", "Basic " + base64.b64encode(b"nocolon").decode(),
                                    "Bearer x", "Basic", "Basic " + base64.b64encode(
                                        f"{USER}:{PASSWORD}x".encode()).decode()])
def test_malformed_or_wrong_credentials_are_refused(header: str) -> None:
    app = _auth_app(AuthThrottle(FakeTime().clock))
    environ = _environ()
    environ["HTTP_AUTHORIZATION"] = header
    assert _call(app, environ)[0].startswith("401")


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT_S) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _head_of(response: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in
               (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def test_methods_other_than_get_and_head_are_refused_and_head_has_no_body() -> None:
    registry = CollectorRegistry()
    Gauge("listener_test_value", "a value", registry=registry).set(42)
    with serving(None, app=make_app(registry, lambda: (True, {"status": "ok"}),
                                    lambda: (True, {}), _web(None),
                                    status_page=lambda q: b"<html>page</html>")) as server:
        for method in ("POST", "PUT", "DELETE", "TRACE", "PATCH", "OPTIONS"):
            for path in ("/", "/metrics", "/healthz"):
                status, headers, _ = _head_of(_raw(
                    server.port, f"{method} {path} HTTP/1.1\r\nHost: x\r\n"
                    "Content-Length: 0\r\n\r\n".encode()))
                assert (status, headers["allow"]) == (405, "GET, HEAD"), (method, path)
        for path in ("/", "/metrics", "/healthz"):
            get = _head_of(_raw(server.port, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n"
                                .encode()))
            head = _head_of(_raw(server.port, f"HEAD {path} HTTP/1.1\r\nHost: x\r\n\r\n"
                                 .encode()))
            assert head[0] == get[0] == 200 and head[2] == b""
            assert head[1]["content-length"] == str(len(get[2])) and get[2]


def test_security_headers_and_a_server_header_without_versions() -> None:
    page = render_status_page(Snapshot(), 0)
    style = re.search(rb"<style>(.*?)</style>", page, re.S)
    assert style is not None
    with serving(None, app=make_app(CollectorRegistry(), lambda: (True, {"status": "ok"}),
                                    lambda: (True, {}), _web(None),
                                    status_page=lambda q: page)) as server:
        _, headers, _ = _head_of(_raw(server.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        csp = headers["content-security-policy"]
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        digest = base64.b64encode(hashlib.sha256(style.group(1)).digest()).decode()
        assert f"style-src 'sha256-{digest}'" in csp  # the page's own style, nothing else
        assert headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "no-referrer"
        for request in (b"GET / HTTP/1.1\r\n\r\n", b"GET /metrics HTTP/1.1\r\n\r\n",
                        b"GET /healthz HTTP/1.1\r\n\r\n", b"GET /nope HTTP/1.1\r\n\r\n",
                        b"POST / HTTP/1.1\r\n\r\n",
                        b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n"):
            status, headers, _ = _head_of(_raw(server.port, request))
            assert headers["x-content-type-options"] == "nosniff", request
            assert headers["server"] == "freshness-tracker", (request, headers["server"])
        assert status == 431 and headers["content-type"].startswith("text/plain")
