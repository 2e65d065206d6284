"""A real HTTP(S)/1.1 keep-alive server on 127.0.0.1 for Burrow client tests: scripted answers
per path, and a record of every request (target, headers) and of the connection it came on."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.http_server import LocalHttpServer, ServedLocally

__all__ = ["DROP", "Answer", "Call", "RecordingBurrow", "ok"]


@dataclass(frozen=True)
class Answer:
    """One scripted answer: a status, a body and headers, or `drop` (close, answer nothing).
    `length` overrides Content-Length (a body cut short); `close` asks for Connection: close;
    `delay_s` is how long the server thinks before answering (a remote or busy Burrow)."""

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    drop: bool = False
    length: int | None = None
    close: bool = False
    chunked: bool = False
    delay_s: float = 0.0


DROP = Answer(drop=True)


def ok(body: str | bytes | Any, status: int = 200, **kw: Any) -> Answer:
    raw = body if isinstance(body, bytes) else (
        body.encode() if isinstance(body, str) else json.dumps(body).encode())
    return Answer(status, raw, (("Content-Type", "application/json"),), **kw)


@dataclass
class Call:
    path: str  # the request target as sent (percent-encoded)
    headers: dict[str, str]
    connection: int  # which TCP connection it came on (1, 2, ...)


@dataclass
class RecordingBurrow(ServedLocally):
    """A real HTTP/1.1 keep-alive server: answers each path from its script (the last answer
    repeats), 404 for paths it does not know, and records every request and connection, and
    the most requests it was answering at once (`most_in_flight`)."""

    tls: tuple[str, str] | None = None  # (certfile, keyfile)
    idle_timeout_s: float | None = None  # close a kept-alive connection idle this long
    routes: dict[str, list[Answer]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    connections: int = 0
    most_in_flight: int = 0

    def route(self, path: str, *answers: Answer) -> None:
        self.routes[path] = list(answers)

    def __enter__(self) -> RecordingBurrow:
        owner = self
        lock = threading.Lock()
        in_flight = [0]

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = owner.idle_timeout_s

            def setup(self) -> None:
                super().setup()
                with lock:
                    owner.connections += 1
                    self.number = owner.connections

            def do_GET(self) -> None:
                with lock:
                    owner.calls.append(Call(self.path, dict(self.headers.items()), self.number))
                    script = owner.routes.get(self.path)
                    answer = (script.pop(0) if len(script) > 1 else script[0]) if script else \
                        ok({"error": True, "message": "not found"}, 404)
                    in_flight[0] += 1
                    owner.most_in_flight = max(owner.most_in_flight, in_flight[0])
                try:
                    time.sleep(answer.delay_s)
                    self._answer(answer)
                finally:
                    with lock:
                        in_flight[0] -= 1

            def _answer(self, answer: Answer) -> None:
                if answer.drop:
                    self.close_connection = True
                    return
                self.send_response(answer.status)
                for name, value in answer.headers:
                    self.send_header(name, value)
                if answer.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(
                        len(answer.body) if answer.length is None else answer.length))
                if answer.close:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                if answer.chunked:
                    for i in range(0, len(answer.body), 100):
                        piece = answer.body[i:i + 100]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.wfile.write(answer.body)
                if answer.length is not None:
                    self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http = LocalHttpServer(Handler, tls=self.tls, poll_interval_s=0.05,
                                     name="recording-burrow")
        self._http.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.stop()

