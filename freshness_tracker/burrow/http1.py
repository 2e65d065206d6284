"""HTTP/1.1 GETs on one kept-alive socket: the few steps a Burrow answer needs.

http.client spends much of a `/lag` answer's CPU on its own machinery (a BufferedReader per
response, headers parsed by the email package), and a cycle makes one call per group
(docs/scale.md has the cost). Here one buffer per connection holds what the socket gave; the
status line and headers are split from it, and the body is framed by chunked encoding,
Content-Length or the end of the connection, with http.client's limits (65,536 bytes a line,
100 headers). Errors are http.client's exception types, so the caller maps them as it did.
Timeouts are the caller's: it sets the socket's timeout, and may shut the socket down at any moment.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from http.client import (
    BadStatusLine,
    HTTPException,
    IncompleteRead,
    LineTooLong,
    RemoteDisconnected,
)

__all__ = ["Connection", "Response"]

_MAX_LINE = 65536
_MAX_HEADERS = 100
_RECV_BYTES = 64 * 1024  # per recv: a `/lag` answer of a group fits; many threads read at once
_HEX = frozenset(b"0123456789abcdefABCDEF")
#: Answers that never carry a body (RFC 9112 §6.3), whatever their headers say.
_NO_BODY = frozenset((204, 304))


class Connection:
    """A connected socket (TCP or TLS) and the bytes it gave that no answer has used yet."""

    __slots__ = ("_buffer", "_request_head", "sock")

    def __init__(self, sock: socket.socket | ssl.SSLSocket, request_head: bytes) -> None:
        self.sock = sock
        #: `Host` and the other request headers, each ending in CRLF: the same on every GET.
        self._request_head = request_head
        self._buffer = bytearray()

    def close(self) -> None:
        self.sock.close()

    @property
    def unread(self) -> bool:
        """Bytes nobody asked for are waiting: the connection is out of step, never reuse it."""
        return bool(self._buffer)

    def get(self, target: bytes) -> Response:
        """Send `GET target` and read the answer's status line and headers (skipping interim
        1xx answers). RemoteDisconnected when the server closed the connection before any byte
        of an answer: what an idle keep-alive connection closed by the server looks like."""
        self.sock.sendall(b"GET " + target + b" HTTP/1.1\r\n" + self._request_head + b"\r\n")
        while True:
            response = self._head()
            if not 100 <= response.status < 200:
                return response

    def _fill(self) -> bool:
        data = self.sock.recv(_RECV_BYTES)
        if not data:
            return False
        self._buffer += data
        return True

    def _line(self, start: int = 0) -> tuple[bytes, int] | None:
        """The line starting at `start` without its end (LF or CRLF) and where the next one
        starts; None at the end of the connection."""
        buffer = self._buffer
        scan = start  # each byte is searched once, however the line is dripped
        while (end := buffer.find(b"\n", scan)) < 0:
            if len(buffer) - start > _MAX_LINE:
                raise LineTooLong("header line")
            scan = len(buffer)
            if not self._fill():
                return None
        if end - start > _MAX_LINE:
            raise LineTooLong("header line")
        line = bytes(buffer[start:end])
        return (line[:-1] if line.endswith(b"\r") else line), end + 1

    def _head(self) -> Response:
        first = self._line()
        if first is None:
            if self._buffer:
                raise IncompleteRead(bytes(self._buffer))
            raise RemoteDisconnected("Remote end closed connection without response")
        status_line, position = first
        version, _, rest = status_line.partition(b" ")
        code = rest[:3]
        if (not version.startswith(b"HTTP/") or len(code) != 3 or not code.isdigit()
                or rest[3:4] not in (b"", b" ")):
            raise BadStatusLine(status_line[:80].decode("latin-1"))
        headers: dict[str, str] = {}
        content_lengths: set[str] = set()
        for count in range(_MAX_HEADERS + 2):
            read = self._line(position)
            if read is None:
                raise IncompleteRead(bytes(self._buffer))
            line, position = read
            if not line:
                break
            if count == _MAX_HEADERS:
                raise HTTPException(f"got more than {_MAX_HEADERS} headers")
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip():
                raise HTTPException("a header line that is not `name: value`")
            key = name.decode("latin-1").lower()
            text = value.strip(b" \t").decode("latin-1")
            if key == "content-length":
                content_lengths.update(v.strip() for v in text.split(","))
            else:
                headers[key] = f"{headers[key]}, {text}" if key in headers else text
        del self._buffer[:position]
        return Response(self, int(code), version == b"HTTP/1.0", headers, content_lengths)

    def _sized(self, size: int) -> Iterator[bytes]:
        remaining = size
        buffer = self._buffer
        while remaining:
            if buffer:
                piece = bytes(buffer[:remaining])
                del buffer[:len(piece)]
            else:
                piece = self.sock.recv(min(remaining, _RECV_BYTES))
                if not piece:
                    raise IncompleteRead(b"", remaining)
            remaining -= len(piece)
            yield piece

    def _until_closed(self) -> Iterator[bytes]:
        if self._buffer:
            yield bytes(self._buffer)
            self._buffer.clear()
        while piece := self.sock.recv(_RECV_BYTES):
            yield piece

    def _chunked(self) -> Iterator[bytes]:
        while True:
            size_line = self._body_line()
            size_text = size_line.split(b";", 1)[0].strip(b" \t")
            if not size_text or len(size_text) > 16 or not _HEX.issuperset(size_text):
                raise HTTPException("a chunk size that is not a hexadecimal number")
            size = int(size_text, 16)
            if size == 0:
                break
            yield from self._sized(size)
            if self._body_line():
                raise HTTPException("a chunk longer than its size")
        for _ in range(_MAX_HEADERS + 1):  # trailer fields, until the empty line
            if not self._body_line():
                return
        raise HTTPException(f"got more than {_MAX_HEADERS} trailer fields")

    def _body_line(self) -> bytes:
        read = self._line()
        if read is None:
            raise IncompleteRead(bytes(self._buffer))
        line, end = read
        del self._buffer[:end]
        return line


class Response:
    """An answer's status and headers; its body is read once, in pieces, by `body()`."""

    __slots__ = ("_conn", "_framing", "complete", "headers", "length", "status", "will_close")

    def __init__(self, conn: Connection, status: int, http10: bool, headers: dict[str, str],
                 content_lengths: set[str]) -> None:
        self._conn = conn
        self.status = status
        self.headers = headers
        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        self.will_close = "close" in tokens or (http10 and "keep-alive" not in tokens)
        #: The body's size when the answer says it (Content-Length), else None.
        self.length: int | None = None
        #: Whether the whole body has been read: the connection may serve another request.
        self.complete = False
        transfer = headers.get("transfer-encoding")
        if status in _NO_BODY:
            self._framing = "none"
        elif transfer is not None:  # it overrides any Content-Length (RFC 9112 §6.3)
            chunked = transfer.rsplit(",", 1)[-1].strip().lower() == "chunked"
            self._framing = "chunked" if chunked else "close"
        elif content_lengths:
            if len(content_lengths) > 1 or not next(iter(content_lengths)).isdigit():
                raise HTTPException("an invalid Content-Length")
            self.length = int(next(iter(content_lengths)))
            self._framing = "sized"
        else:
            self._framing = "close"
        if self._framing == "close":
            self.will_close = True

    def header(self, name: str) -> str | None:
        """A header's value by its lower-case name (repeated headers joined by ", ")."""
        return self.headers.get(name)

    def body(self) -> Iterator[bytes]:
        """The body as it arrives, in pieces; IncompleteRead when it ends early."""
        conn = self._conn
        if self._framing == "sized":
            yield from conn._sized(self.length or 0)
        elif self._framing == "chunked":
            yield from conn._chunked()
        elif self._framing == "close":
            yield from conn._until_closed()
        self.complete = True
