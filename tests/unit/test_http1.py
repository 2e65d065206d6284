"""burrow.http1 on a real socket pair: framing, limits and the errors the client maps."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshness_tracker.burrow.http1 import Connection, Response


@pytest.fixture
def pair() -> Iterator[tuple[Connection, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.settimeout(5)
    theirs.settimeout(5)
    try:
        yield Connection(ours, b"Host: burrow\r\n"), theirs
    finally:
        ours.close()
        theirs.close()


def answer(pair: tuple[Connection, socket.socket], raw: bytes, *, close: bool = False
           ) -> tuple[Response, bytes, bytes]:
    """Send one GET, have the other end answer `raw`: (response, body, the request seen)."""
    conn, theirs = pair
    theirs.sendall(raw)
    if close:
        theirs.shutdown(socket.SHUT_WR)
    response = conn.get(b"/v3/kafka")
    body = b"".join(response.body())
    return response, body, theirs.recv(65536)


def test_the_request_line_and_headers_are_sent(pair: tuple[Connection, socket.socket]) -> None:
    _, _, request = answer(pair, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    assert request == b"GET /v3/kafka HTTP/1.1\r\nHost: burrow\r\n\r\n"


def test_a_sized_body_leaves_the_connection_reusable(
        pair: tuple[Connection, socket.socket]) -> None:
    response, body, _ = answer(pair, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
    assert (response.status, body, response.length) == (200, b"hello", 5)
    assert response.complete and not response.will_close and not pair[0].unread
    response, body, _ = answer(pair, b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno")
    assert (response.status, body) == (404, b"no")


def test_a_chunked_body_with_extensions_and_trailers(
        pair: tuple[Connection, socket.socket]) -> None:
    raw = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n"
           b"5;name=value\r\nhello\r\n1\r\n!\r\n0\r\nX-Trailer: 1\r\n\r\n")
    response, body, _ = answer(pair, raw)
    assert body == b"hello!" and response.length is None and not response.will_close


def test_without_a_length_the_body_ends_with_the_connection(
        pair: tuple[Connection, socket.socket]) -> None:
    response, body, _ = answer(pair, b"HTTP/1.1 200 OK\r\n\r\nto the end", close=True)
    assert body == b"to the end" and response.will_close


@pytest.mark.parametrize(("head", "closes"), [
    (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n", True),
    (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n", False),
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n", True),
    (b"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n", False),  # no body, whatever it says
])
def test_keep_alive_as_the_answer_says(pair: tuple[Connection, socket.socket], head: bytes,
                                       closes: bool) -> None:
    response, body, _ = answer(pair, head + b"\r\n")
    assert (body, response.will_close) == (b"", closes)


def test_interim_answers_are_skipped_and_lf_only_lines_read(
        pair: tuple[Connection, socket.socket]) -> None:
    response, body, _ = answer(pair, b"HTTP/1.1 100 Continue\r\n\r\n"
                                     b"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: 1\n\nok")
    assert (response.status, body, response.header("x-a")) == (200, b"ok", "1")


@pytest.mark.parametrize(("raw", "error"), [
    (b"", http.client.RemoteDisconnected),
    (b"HTTP/1.1 20", http.client.IncompleteRead),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", http.client.IncompleteRead),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", http.client.IncompleteRead),
    (b"SSH-2.0-OpenSSH\r\n\r\n", http.client.BadStatusLine),
    (b"HTTP/1.1 2000 OK\r\n\r\n", http.client.BadStatusLine),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n", http.client.HTTPException),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", http.client.HTTPException),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", http.client.HTTPException),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n",
     http.client.HTTPException),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
     http.client.HTTPException),
    (b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * 101 + b"\r\n", http.client.HTTPException),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", http.client.LineTooLong),
])
def test_a_broken_answer_raises_what_http_client_would(
        pair: tuple[Connection, socket.socket], raw: bytes,
        error: type[Exception]) -> None:
    with pytest.raises(error):
        answer(pair, raw, close=True)


def test_a_line_without_end_is_refused_before_it_grows_past_the_limit(
        pair: tuple[Connection, socket.socket]) -> None:
    """An endless header line costs 64 KiB of buffer, not memory without bound."""
    conn, theirs = pair
    stop = threading.Event()

    def flood() -> None:
        theirs.sendall(b"HTTP/1.1 200 OK\r\nX: ")
        while not stop.is_set():
            try:
                theirs.sendall(b"a" * 8192)
            except OSError:
                return

    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    try:
        with pytest.raises(http.client.LineTooLong):
            conn.get(b"/")
        assert len(conn._buffer) < 400_000
    finally:
        stop.set()
        conn.close()
        thread.join(5)


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=3000), cuts=st.lists(st.integers(1, 700), max_size=8))
def test_any_body_in_any_chunking_reads_back_whole(body: bytes, cuts: list[int]) -> None:
    chunks, rest = [], body
    for cut in cuts:
        chunks.append(rest[:cut])
        rest = rest[cut:]
    chunks = [c for c in [*chunks, rest] if c]
    raw = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
           + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
           + b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    ours, theirs = socket.socketpair()
    ours.settimeout(5)
    try:
        sender = threading.Thread(target=theirs.sendall, args=(raw,), daemon=True)
        sender.start()
        conn = Connection(ours, b"")
        assert b"".join(conn.get(b"/").body()) == body
        assert b"".join(conn.get(b"/").body()) == body  # the next answer starts where it ended
        assert not conn.unread
        sender.join(5)
    finally:
        ours.close()
        theirs.close()


def test_an_answer_dripped_a_byte_at_a_time_reads_whole(
        pair: tuple[Connection, socket.socket]) -> None:
    """Lines split across any number of receives are joined (each byte searched once)."""
    conn, theirs = pair
    raw = b"HTTP/1.1 200 OK\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"

    def drip() -> None:
        for byte in raw:
            theirs.sendall(bytes([byte]))
            time.sleep(0.0005)

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    response = conn.get(b"/")
    assert (response.header("x-a"), b"".join(response.body())) == ("1", b"abc")
    thread.join(5)
