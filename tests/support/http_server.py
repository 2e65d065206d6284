"""A local HTTP(S) server on a daemon thread: the one lifecycle both fake Burrows run on."""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalHttpServer:
    """`handler` served on `host`, port chosen by the kernel; HTTPS when `tls` is
    (certfile, keyfile). `start()` and `stop()` once each."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, host: str = "127.0.0.1",
                 tls: tuple[str, str | None] | None = None, poll_interval_s: float = 0.1,
                 name: str = "local-http") -> None:
        self._server = ThreadingHTTPServer((host, 0), handler)
        self._server.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": poll_interval_s},
                                        daemon=True, name=name)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class ServedLocally:
    """For a fake that runs on a LocalHttpServer (`_http`): its scheme, port and URL."""

    _http: LocalHttpServer

    @property
    def scheme(self) -> str:
        return self._http.scheme

    @property
    def port(self) -> int:
        return self._http.port

    @property
    def url(self) -> str:
        return self._http.url
