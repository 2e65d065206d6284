"""A tiny ZooKeeper client: just enough to create znodes, set their data and read their stat.

Why: Burrow 1.2.1's ``kafka_zk`` consumer module reads old-style offsets at
``<chroot>/consumers/<group>/offsets/<topic>/<partition>`` (the offset as decimal text, the commit
time = the znode's mtime), which is what ZooKeeper-committing consumers (Kafka's old Scala
consumer, ``offsets.storage=zookeeper``) wrote. No ZooKeeper client library is a dependency of this
project and a JVM ``zkCli`` costs a JVM start per call, so this speaks the jute wire protocol
directly (one session per call is plenty for a test stack).
"""

from __future__ import annotations

import socket
import struct

__all__ = ["ZkError", "ensure_path", "mtime", "set_znode", "zk_ok"]

_OP_CREATE = 1
_OP_EXISTS = 3
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
        # protocolVersion, lastZxidSeen, timeOut, sessionId, passwd, readOnly (false)
        connect = struct.pack(">iqiq", 0, 0, int(timeout_s * 1000), 0) + _buffer(b"\0" * 16)
        connect += b"\0"
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
        return self.call_reply(op, body)[0]

    def call_reply(self, op: int, body: bytes) -> tuple[int, bytes]:
        """Send one request; (error code, the reply body after the header)."""
        self.xid += 1
        self._send(struct.pack(">ii", self.xid, op) + body)
        while True:  # skip watch notifications (xid -1) and pings (-2)
            reply = self._recv()
            xid, _zxid, err = struct.unpack_from(">iqi", reply)
            if xid == self.xid:
                return int(err), reply[16:]

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

    def set_data(self, path: str, data: bytes) -> tuple[int, int]:
        """(error code, the znode's new mtime in ms)."""
        err, body = self.call_reply(
            _OP_SET_DATA, _ustring(path) + _buffer(data) + struct.pack(">i", -1)
        )
        return err, (_mtime(body) if err == 0 else 0)

    def exists(self, path: str) -> tuple[int, int]:
        """(error code, mtime in ms); the error is ``_ERR_NO_NODE`` for a missing znode."""
        err, body = self.call_reply(_OP_EXISTS, _ustring(path) + b"\0")  # no watch
        return err, (_mtime(body) if err == 0 else 0)


def _mtime(stat: bytes) -> int:
    """``Stat.mtime`` (czxid, mzxid, ctime, mtime, ...: the 4th long), ms since the epoch by the
    ZooKeeper server's clock."""
    return int(struct.unpack_from(">qqqq", stat)[3])


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


def set_znode(address: str, path: str, data: bytes, timeout_s: float = 5.0) -> int:
    """Set ``path``'s data, creating it (and its parents) when missing; returns its mtime (ms,
    ZooKeeper's clock): what Burrow's ``kafka_zk`` module reports as the commit time."""
    session = _Session(address, timeout_s)
    try:
        err, mtime = session.set_data(path, data)
        if err == _ERR_NO_NODE:
            for node in _parents(path)[:-1]:
                session.create(node, b"")
            err = session.create(path, data)
            if err == _ERR_NODE_EXISTS:
                err, mtime = session.set_data(path, data)
            elif err == 0:
                err, mtime = session.exists(path)
        if err != 0:
            raise ZkError(f"set {path} failed with ZooKeeper error {err}", err)
        return mtime
    finally:
        session.close()


def mtime(address: str, path: str, timeout_s: float = 5.0) -> int | None:
    """``path``'s mtime (ms, ZooKeeper's clock); None when it does not exist."""
    session = _Session(address, timeout_s)
    try:
        err, stamp = session.exists(path)
        if err not in (0, _ERR_NO_NODE):
            raise ZkError(f"exists {path} failed with ZooKeeper error {err}", err)
        return stamp if err == 0 else None
    finally:
        session.close()


def zk_ok(address: str, timeout_s: float = 1.0) -> bool:
    """True when ZooKeeper grants a session (``ruok`` answers ``imok`` before it can serve)."""
    try:
        _Session(address, timeout_s).close()
    except (OSError, ZkError, struct.error):
        return False
    return True
