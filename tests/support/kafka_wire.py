"""Raw Kafka protocol for tests that look below the client: an ApiVersions v0 round trip."""

from __future__ import annotations

import socket
import struct

API_VERSIONS = 18


def api_versions(sock: socket.socket, correlation_id: int) -> bytes:
    """Send ApiVersions v0 on ``sock``; the reply after its size, its correlation id checked."""
    body = struct.pack(">hhih", API_VERSIONS, 0, correlation_id, 4) + b"test"
    sock.sendall(struct.pack(">i", len(body)) + body)
    reply = recv_exact(sock, struct.unpack(">i", recv_exact(sock, 4))[0])
    assert struct.unpack_from(">i", reply)[0] == correlation_id
    return reply


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        assert chunk, "connection closed"
        buf += chunk
    return buf
