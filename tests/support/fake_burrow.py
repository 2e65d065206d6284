"""A real HTTP(S) server on a free port that stands in for Burrow and misbehaves on request.

By default it proxies every request to the real Burrow (``upstream``); faults are rules matched
against the request path, first match wins:

    server = FaultyBurrow(stack.burrow_url).start()
    server.add(LAG, Fault.delay(3.0))             # slower than burrow.timeout
    server.add(ANY, Fault.status(500))           # HTTP 500
    server.add(ANY, Fault.body(b"<html>..."))    # a proxy's error page
    server.add(ANY, Fault.truncated())           # the real answer cut in half
    server.add(lag_path("local", "g1"), Fault.not_found())   # Burrow's 404 NOTFOUND shape
    server.add(CLUSTERS, Fault.hide_clusters("local"))       # a cluster vanishes from /v3/kafka
    server.park_lag()                             # park /lag requests until server.clear()
    server.add(LAG, Fault.rewrite(fn))            # the real JSON answer, changed by fn
    server.clear()                                # healthy again
    with server.faulted(ANY, Fault.status(500)):  # add, then clear after the block

Virtual clusters (``alias``) answer as another Burrow cluster (a second cluster for bulkhead
tests); ``static`` serves fixed bodies (fuzzed bodies, a synthetic cluster). When the upstream is
unreachable the client connection is dropped without an answer, as a killed Burrow would.
Optional TLS (``certfile``/``keyfile``) and basic auth make it an HTTPS front for Burrow.
"""

from __future__ import annotations

import base64
import contextlib
import hmac
import http.client
import json
import re
import socket
import ssl
import struct
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.http_server import LocalHttpServer, ServedLocally

__all__ = [
    "ANY",
    "CLUSTERS",
    "LAG",
    "Fault",
    "FaultyBurrow",
    "lag_path",
]

ANY = r".*"
CLUSTERS = r"^/v3/kafka/?$"
LAG = r"^/v3/kafka/[^/]+/consumer/[^/]+/lag$"


def lag_path(cluster: str, group: str) -> str:
    return rf"^/v3/kafka/{re.escape(cluster)}/consumer/{re.escape(group)}/lag$"


NOT_FOUND_BODY = {
    "error": True,
    "message": "consumer group not found",
    "status": {"status": "NOTFOUND"},
    "request": {"url": "", "host": "fake"},
}


@dataclass
class Fault:
    """What to do with a matching request. Build with the class methods."""

    kind: str
    delay_s: float = 0.0
    status_code: int = 200
    payload: bytes = b""
    content_type: str = "application/json"
    hidden: frozenset[str] = frozenset()
    times: int | None = None  # apply to this many requests, then stop matching
    encoding: str = ""  # Content-Encoding of a "respond" payload
    transform: Callable[[Any], Any] | None = None  # a "rewrite" of the decoded JSON answer

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        """Answer correctly (proxied), but only after ``seconds``."""
        return cls("delay", delay_s=seconds)

    @classmethod
    def status(cls, code: int, body: bytes = b"Internal Server Error\n") -> Fault:
        return cls("respond", status_code=code, payload=body, content_type="text/plain")

    @classmethod
    def body(cls, payload: bytes | str, status: int = 200,
             content_type: str = "text/html") -> Fault:
        data = payload.encode() if isinstance(payload, str) else payload
        return cls("respond", status_code=status, payload=data, content_type=content_type)

    @classmethod
    def json(cls, value: Any, status: int = 200) -> Fault:
        return cls.body(json.dumps(value), status, "application/json")

    @classmethod
    def truncated(cls) -> Fault:
        """The real answer with its second half missing (Content-Length matches what is sent)."""
        return cls("truncate")

    @classmethod
    def not_found(cls) -> Fault:
        """Burrow's answer for a group it does not know: HTTP 404, JSON, status NOTFOUND."""
        return cls.json(NOT_FOUND_BODY, status=404)

    @classmethod
    def rewrite(cls, transform: Callable[[Any], Any]) -> Fault:
        """The real answer's JSON passed through ``transform`` (which may change it in place and
        return None). Re-encoded with ASCII escapes, so a lone surrogate in a string goes out as
        the JSON escape ``\\udc80``, exactly what a broken proxy or Burrow build could send."""
        return cls("rewrite", transform=transform)

    @classmethod
    def hide_clusters(cls, *names: str) -> Fault:
        """The real /v3/kafka answer without these clusters."""
        return cls("hide", hidden=frozenset(names))

    @classmethod
    def hold(cls) -> Fault:
        """Park the request until ``release()`` (or the server stops), then proxy it."""
        return cls("hold")

    @classmethod
    def drip(cls, interval_s: float = 1.0) -> Fault:
        """Headers at once, then the real body one byte per ``interval_s`` (a slow-loris
        server: every socket read gets a byte well inside any per-read timeout)."""
        return cls("drip", delay_s=interval_s)

    @classmethod
    def drip_headers(cls, interval_s: float = 1.0) -> Fault:
        """The status line and headers themselves one byte per ``interval_s``."""
        return cls("drip_headers", delay_s=interval_s)

    @classmethod
    def silent(cls) -> Fault:
        """Accept the request and never answer, for as long as the server runs."""
        return cls("silent")

    @classmethod
    def gzip_bomb(cls, decoded_bytes: int = 1 << 30) -> Fault:
        """A small gzip body (about 1 MB per GiB) that expands to ``decoded_bytes`` of JSON
        whitespace, sent with ``Content-Encoding: gzip``."""
        return cls("respond", payload=_gzip_bomb(decoded_bytes), content_type="application/json",
                   encoding="gzip")

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection without any answer (a process killed mid-request)."""
        return cls("drop")


def _relabelled(result: tuple[int, str, bytes], path: str) -> tuple[int, str, bytes]:
    """An aliased cluster's answer labelled with the cluster asked for, as a real Burrow
    serving that cluster labels it (the exporter refuses an answer about another cluster)."""
    status, kind, raw = result
    asked = urllib.parse.unquote(path.split("/")[3])
    try:
        body = json.loads(raw)
    except ValueError:
        return result
    if isinstance(body, dict) and isinstance(body.get("status"), dict) \
            and "cluster" in body["status"]:
        body["status"]["cluster"] = asked
        return status, kind, json.dumps(body).encode()
    return result


@dataclass
class _Rule:
    pattern: re.Pattern[str]
    fault: Fault
    used: int = 0


@dataclass
class Seen:
    """One request the server received."""

    at: float
    path: str
    authorized: bool


@dataclass
class _State:
    rules: list[_Rule] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # virtual cluster -> real cluster
    static: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # exact path -> body
    extra_clusters: list[str] = field(default_factory=list)  # listed in /v3/kafka, served static
    seen: list[Seen] = field(default_factory=list)


class FaultyBurrow(ServedLocally):
    """See the module docstring. Thread-safe; one instance per test module is plenty."""

    def __init__(
        self,
        upstream: str | None = None,
        *,
        host: str = "127.0.0.1",
        certfile: str | None = None,
        keyfile: str | None = None,
        basic_auth: tuple[str, str] | None = None,
        upstream_timeout_s: float = 10.0,
    ) -> None:
        self.upstream = upstream.rstrip("/") if upstream else None
        self._lock = threading.Lock()
        self._state = _State()
        self._release = threading.Event()
        self._stopping = threading.Event()
        self.held = threading.Event()  # set when a held request arrived
        self._upstream_timeout_s = upstream_timeout_s
        self._auth = None
        if basic_auth is not None:
            token = base64.b64encode(f"{basic_auth[0]}:{basic_auth[1]}".encode()).decode()
            self._auth = f"Basic {token}"
        self._http = LocalHttpServer(self._handler_class(), host=host,
                                     tls=(certfile, keyfile) if certfile else None,
                                     name="faulty-burrow")

    # --- life cycle ----------------------------------------------------------------------

    def start(self) -> FaultyBurrow:
        self._http.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._release.set()
        self._http.stop()

    def __enter__(self) -> FaultyBurrow:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- configuration -------------------------------------------------------------------

    def add(self, pattern: str, fault: Fault) -> None:
        with self._lock:
            self._state.rules.append(_Rule(re.compile(pattern), fault))

    @contextlib.contextmanager
    def faulted(self, pattern: str, fault: Fault) -> Iterator[None]:
        """``add`` for the block; ``clear`` after it, however it ends."""
        self.add(pattern, fault)
        try:
            yield
        finally:
            self.clear()

    def clear(self) -> None:
        """Remove every fault rule and let held requests go."""
        with self._lock:
            self._state.rules.clear()
        self.release()

    def release(self) -> None:
        self._release.set()

    def alias(self, virtual: str, real: str) -> None:
        """Serve cluster ``virtual`` as Burrow's ``real`` (listed in /v3/kafka too)."""
        with self._lock:
            self._state.aliases[virtual] = real

    def serve_static(self, path: str, body: Any, status: int = 200) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        with self._lock:
            self._state.static[path] = (status, raw)

    def remove_static(self, path: str) -> None:
        with self._lock:
            self._state.static.pop(path, None)

    def add_static_cluster(self, name: str) -> None:
        with self._lock:
            if name not in self._state.extra_clusters:
                self._state.extra_clusters.append(name)

    def requests(self, pattern: str = ANY, since: float = 0.0) -> list[Seen]:
        rx = re.compile(pattern)
        with self._lock:
            return [s for s in self._state.seen if s.at >= since and rx.search(s.path)]

    # --- request handling ----------------------------------------------------------------

    def _match(self, path: str) -> Fault | None:
        with self._lock:
            for rule in self._state.rules:
                if rule.pattern.search(path) and (
                        rule.fault.times is None or rule.used < rule.fault.times):
                    rule.used += 1
                    return rule.fault
        return None

    def _upstream_get(self, path: str) -> tuple[int, str, bytes] | None:
        """(status, content type, body) from the real Burrow; None when it is unreachable."""
        if self.upstream is None:
            return 404, "application/json", json.dumps(NOT_FOUND_BODY).encode()
        url = urllib.parse.urlsplit(self.upstream)
        conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port or 80,
                                          timeout=self._upstream_timeout_s)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.getheader("Content-Type", "application/json"), resp.read()
        except (OSError, http.client.HTTPException):
            return None
        finally:
            conn.close()

    def _rewrite_alias(self, path: str) -> str:
        with self._lock:
            aliases = dict(self._state.aliases)
        match = re.match(r"^/v3/kafka/([^/]+)(/.*)?$", path)
        if match and urllib.parse.unquote(match.group(1)) in aliases:
            real = aliases[urllib.parse.unquote(match.group(1))]
            return f"/v3/kafka/{urllib.parse.quote(real, safe='')}{match.group(2) or ''}"
        return path

    def _answer(self, path: str) -> tuple[int, str, bytes] | None:
        with self._lock:
            static = self._state.static.get(path)
            extra = list(self._state.extra_clusters) + list(self._state.aliases)
        if static is not None:
            return static[0], "application/json", static[1]
        if self.upstream is None and re.match(CLUSTERS, path):
            body = {"error": False, "clusters": extra, "status": {}}
            return 200, "application/json", json.dumps(body).encode()
        real_path = self._rewrite_alias(path)
        result = self._upstream_get(real_path)
        if result is not None and real_path != path:
            result = _relabelled(result, path)
        if result is not None and re.match(CLUSTERS, path) and result[0] == 200 and extra:
            body = json.loads(result[2])
            body["clusters"] = list(body.get("clusters", [])) + [
                c for c in extra if c not in body.get("clusters", [])]
            result = (200, "application/json", json.dumps(body).encode())
        return result

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        path = urllib.parse.urlsplit(handler.path).path
        authorized = self._auth is None or hmac.compare_digest(
            handler.headers.get("Authorization", ""), self._auth)
        with self._lock:
            self._state.seen.append(Seen(time.monotonic(), path, authorized))
        if not authorized:
            _send(handler, 401, "text/plain", b"Unauthorized\n",
                  [("WWW-Authenticate", 'Basic realm="burrow"')])
            return
        fault = self._match(path)
        if fault is not None and fault.kind == "respond":
            extra = [("Content-Encoding", fault.encoding)] if fault.encoding else []
            _send(handler, fault.status_code, fault.content_type, fault.payload, extra)
            return
        if fault is not None and fault.kind == "silent":
            self._stopping.wait()
            _drop(handler)
            return
        if fault is not None and fault.kind == "drop":
            _drop(handler)
            return
        if fault is not None and fault.kind == "delay" and self._stopping.wait(fault.delay_s):
            _drop(handler)
            return
        if fault is not None and fault.kind == "hold":
            self.held.set()
            self._release.wait(120)
        result = self._answer(path)
        if result is None:  # upstream is dead: so are we, for this request
            _drop(handler)
            return
        status, ctype, payload = result
        if fault is not None and fault.kind == "truncate":
            payload = payload[: max(1, len(payload) // 2)]
        if fault is not None and fault.kind == "rewrite" and status == 200 and fault.transform:
            body = json.loads(payload)
            changed = fault.transform(body)
            payload = json.dumps(body if changed is None else changed).encode()
        if fault is not None and fault.kind == "hide" and status == 200:
            body = json.loads(payload)
            body["clusters"] = [c for c in body.get("clusters", []) if c not in fault.hidden]
            payload = json.dumps(body).encode()
        if fault is not None and fault.kind in ("drip", "drip_headers"):
            self._drip(handler, fault, status, ctype, payload)
            return
        _send(handler, status, ctype, payload)

    def _drip(self, handler: BaseHTTPRequestHandler, fault: Fault, status: int, ctype: str,
              payload: bytes) -> None:
        head = (f"HTTP/1.1 {status} OK\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n").encode()
        handler.close_connection = True
        if fault.kind == "drip":
            handler.wfile.write(head)
            slow = payload
        else:
            slow = head + payload
        handler.wfile.flush()
        for i in range(len(slow)):
            if self._stopping.wait(fault.delay_s):
                break
            handler.wfile.write(slow[i : i + 1])
            handler.wfile.flush()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, like Burrow

            def do_GET(self) -> None:
                try:
                    owner._handle(self)
                except (TimeoutError, BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    # --- holding ---------------------------------------------------------------------------

    def park_lag(self, timeout_s: float = 15) -> None:
        """Hold every ``/lag`` request from now on, and wait until one is parked (a cycle stuck
        in Burrow); ``clear`` lets it go."""
        self._release.clear()
        self.held.clear()
        self.add(LAG, Fault.hold())
        if not self.held.wait(timeout_s):
            self.clear()
            raise AssertionError(f"no /lag request arrived to park in {timeout_s:g} s")

def _send(handler: BaseHTTPRequestHandler, status: int, ctype: str, payload: bytes,
          headers: list[tuple[str, str]] | None = None) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", ctype)
    handler.send_header("Content-Length", str(len(payload)))
    for name, value in headers or []:
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(payload)
    handler.wfile.flush()


_BOMBS: dict[int, bytes] = {}


def _gzip_bomb(decoded_bytes: int) -> bytes:
    """gzip of `[` + spaces + `]` (valid JSON once fully decoded), made once per size."""
    if decoded_bytes not in _BOMBS:
        import gzip
        import io

        out = io.BytesIO()
        with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as gz:
            gz.write(b"[")
            block = b" " * (1 << 20)
            for _ in range(max(decoded_bytes - 2, 0) // len(block)):
                gz.write(block)
            gz.write(b"]")
        _BOMBS[decoded_bytes] = out.getvalue()
    return _BOMBS[decoded_bytes]


def _drop(handler: BaseHTTPRequestHandler) -> None:
    """Close the socket with no response at all (RST where possible)."""
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                      struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        handler.connection.shutdown(socket.SHUT_RDWR)
