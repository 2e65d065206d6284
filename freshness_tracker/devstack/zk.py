"""A tiny ZooKeeper client: just enough to create znodes and set their data.

Why: Burrow needs ``/consumers`` before it starts, and its ``kafka_zk`` consumer module reads
old-style offsets at ``/consumers/<group>/offsets/<topic>/<partition>``. No ZooKeeper client library
is a dependency of this project and a JVM ``zkCli`` costs a second per call, so this speaks the jute
wire protocol directly (one session per call is plenty for a test stack).
"""

from __future__ import annotations

import socket
import struct

__all__ = ["ZkError", "ensure_path", "set_znode", "zk_ok"]

_OP_CREATE = 1
_OP_SET_DATA = 5
_OP_CLOSE = -11
_ERR_NO_NODE = -101
_ERR_NODE_EXISTS = -110
_WORLD_ANYONE_ALL = (
    struct.pack(">ii", 1, 31) + struct.pack(">i", 5) + b"world" + struct.pack(">i", 6) + b"anyone"
)


class ZkError(RuntimeError):
    """ZooKeeper answered with an error code (``code``), or the connection failed."""

    def __init__(self, message: str, code: int = 0) -> None:
        self.code = code
        super().__init__(message)


def _ustring(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">i", len(data)) + data


def _buffer(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


class _Session:
    def __init__(self, address: str, timeout_s: float) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.xid = 0
        connect = struct.pack(">iqiq", 0, 0, int(timeout_s * 1000), 0) + _buffer(b"\0" * 16)
        self._send(connect)
        self._recv()

    def _send(self, body: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(body)) + body)

    def _recv(self) -> bytes:
        head = self._exact(4)
        return self._exact(int(struct.unpack(">i", head)[0]))

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ZkError("ZooKeeper closed the connection")
            buf += chunk
        return bytes(buf)

    def call(self, op: int, body: bytes) -> int:
        """Send one request; return ZooKeeper's error code (0 = OK)."""
        self.xid += 1
        self._send(struct.pack(">ii", self.xid, op) + body)
        while True:
            reply = self._recv()
            xid, _zxid, err = struct.unpack_from(">iqi", reply)
            if xid == self.xid:
                return int(err)

    def close(self) -> None:
        try:
            self.call(_OP_CLOSE, b"")
        except (OSError, ZkError):
            pass
        finally:
            self.sock.close()

    def create(self, path: str, data: bytes) -> int:
        return self.call(
            _OP_CREATE, _ustring(path) + _buffer(data) + _WORLD_ANYONE_ALL + b"\0\0\0\0"
        )

    def set_data(self, path: str, data: bytes) -> int:
        return self.call(_OP_SET_DATA, _ustring(path) + _buffer(data) + struct.pack(">i", -1))


def _parents(path: str) -> list[str]:
    parts = [p for p in path.split("/") if p]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def ensure_path(address: str, path: str, timeout_s: float = 5.0) -> None:
    """Create ``path`` and its parents (empty data) if missing."""
    session = _Session(address, timeout_s)
    try:
        for node in _parents(path):
            err = session.create(node, b"")
            if err not in (0, _ERR_NODE_EXISTS):
                raise ZkError(f"create {node} failed with ZooKeeper error {err}", err)
    finally:
        session.close()


def set_znode(address: str, path: str, data: bytes, timeout_s: float = 5.0) -> None:
    """Set ``path``'s data, creating it (and its parents) when missing."""
    session = _Session(address, timeout_s)
    try:
        err = session.set_data(path, data)
        if err == _ERR_NO_NODE:
            for node in _parents(path)[:-1]:
                session.create(node, b"")
            err = session.create(path, data)
            if err == _ERR_NODE_EXISTS:
                err = session.set_data(path, data)
        if err != 0:
            raise ZkError(f"set {path} failed with ZooKeeper error {err}", err)
    finally:
        session.close()


def zk_ok(address: str, timeout_s: float = 1.0) -> bool:
    """True when ZooKeeper grants a session (``ruok`` answers ``imok`` before it can serve)."""
    try:
        _Session(address, timeout_s).close()
    except (OSError, ZkError, struct.error):
        return False
    return True
