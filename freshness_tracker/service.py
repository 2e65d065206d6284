"""`run`'s long-lived state: one Exporter, its cluster loops and the listener serving it, and
the swap to a new Exporter when the config is reloaded (SIGHUP).

A reload builds everything it can fail on first (the Exporter, a new listener, the certificate)
and changes nothing until all of it succeeded: a bad config leaves the old one running. The
replaced Exporter is closed once its in-flight cycles have returned (they are cut at their
deadline anyway), so a reload never pulls consumers from under a running cycle.
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Callable
from itertools import count

from freshness_tracker.app import Exporter, SnapshotSink, unwind_grace_s
from freshness_tracker.config.settings import Settings
from freshness_tracker.http import MetricsServer, WsgiApp, make_app
from freshness_tracker.web_settings import WebSettings

__all__ = ["Service"]

log = logging.getLogger(__name__)

SinksFactory = Callable[[Settings], list[SnapshotSink]]

#: run_forever returns 1.5 s after its stop event; a little more for the thread itself.
LOOPS_JOIN_S = 2.0


def _listener(web: WebSettings) -> tuple[str, int, bool]:
    """What a reload can only change by binding a new socket."""
    return web.listen_address, web.port, bool(web.tls_cert_file)


def _cycles_running(exporter: Exporter) -> bool:
    clusters = exporter.health()[1]["clusters"].values()
    return any(c["cycle_running_seconds"] is not None for c in clusters)


class _Generation:
    """One Exporter and the thread running its cluster loops."""

    _numbers = count(1)

    def __init__(self, exporter: Exporter) -> None:
        self.exporter = exporter
        self.app: WsgiApp = make_app(exporter.exposition, exporter.health, exporter.ready,
                                     exporter.settings.web, exporter.status_page)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=exporter.run_forever, args=(self.stop,),
                                       name=f"exporter-{next(self._numbers)}", daemon=True)


class Service:
    """Start with `Service(settings, sinks)`, then `reload(settings)` any number of times and
    `stop()` once. Listener errors are OSError (ssl.SSLError for the certificate)."""

    def __init__(self, settings: Settings, sinks: SinksFactory) -> None:
        self.settings = settings
        self._sinks = sinks
        self._closing = threading.Event()
        self._retiring: list[threading.Thread] = []
        self._current = _Generation(Exporter(settings, sinks=sinks(settings)))
        try:
            self.server = MetricsServer(self._current.app, settings.web).start()
        except BaseException:
            self._current.exporter.close()
            raise
        self._current.thread.start()

    def reload(self, settings: Settings) -> str:
        """Run `settings` instead, or raise and keep running as before; says what it did."""
        if settings == self.settings:
            if settings.web.tls_cert_file:  # same paths, maybe a renewed certificate
                self.server.set_tls(settings.web)
                return "unchanged; certificate reloaded"
            return "unchanged"
        new = _Generation(Exporter(settings, sinks=self._sinks(settings)))
        try:
            server = self._listener_for(settings, new.app)
        except BaseException:
            new.exporter.close()
            raise
        old, old_server = self._current, self.server
        old.stop.set()
        if server is old_server:
            server.set_app(new.app)
        else:
            old_server.stop()  # no-op when it already gave its port to the new one
        self.server, self._current, self.settings = server, new, settings
        new.thread.start()
        retire = threading.Thread(target=self._close_when_idle, args=(old,),
                                  name=f"retire-{old.thread.name}", daemon=True)
        self._retiring = [t for t in self._retiring if t.is_alive()] + [retire]
        retire.start()
        return "listener restarted" if server is not old_server else "listener kept"

    def _listener_for(self, settings: Settings, app: WsgiApp) -> MetricsServer:
        """The running listener when its socket can stay, else a new one, already started."""
        if _listener(settings.web) == _listener(self.settings.web):
            if settings.web.tls_cert_file:
                self.server.set_tls(settings.web)
            return self.server
        try:
            return MetricsServer(app, settings.web).start()
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or settings.web.port != self.settings.web.port:
                raise
        # The same port on another address: Linux refuses both at once. Free it, then take it
        # back if the new one still cannot bind.
        self.server.stop()
        try:
            return MetricsServer(app, settings.web).start()
        except OSError:
            self.server = MetricsServer(self._current.app, self.settings.web).start()
            raise

    def _close_when_idle(self, old: _Generation) -> None:
        old.thread.join()
        timeout = old.exporter.settings.cycle_timeout_s
        deadline = time.monotonic() + timeout + unwind_grace_s(timeout)
        while _cycles_running(old.exporter) and time.monotonic() < deadline:
            if self._closing.wait(0.1):
                break
        old.exporter.close()

    def stop(self) -> None:
        """Stop the loops, the listener and every Exporter, replaced ones included."""
        self._closing.set()
        self._current.stop.set()
        self._current.thread.join(LOOPS_JOIN_S)
        self.server.stop()
        self._current.exporter.close()
        for retire in self._retiring:
            retire.join(LOOPS_JOIN_S)
