"""The demo: the real local stack, a workload and the exporter, in one command.

    python -m devstack.demo [--port 8081] [--duration SECONDS]     (what `scripts/run` runs)

For a newcomer with no Burrow or Kafka at hand: starts Apache Kafka 3.9.1 (KRaft, one
node) and Debian's Burrow 1.2.1 as local processes, three consumer groups (keeping up, slow,
stuck), and serves /metrics on the chosen port. A table of the live values is printed every
cycle. It lives beside the tests, not in the package: the wheel and the image carry only the
exporter.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TextIO

from devstack.cache import debian_burrow_binary, kafka_classpath_dir
from devstack.processes import ProcessStartError

if TYPE_CHECKING:  # imported when the demo starts, after it has checked they can be
    from devstack.stack import RealStack
    from devstack.workload import Workload
    from freshness_tracker.domain.model import ClusterSnapshot, Snapshot

__all__ = ["CycleTable", "DemoEnv", "exporter_config", "main", "parser", "run_demo", "start_demo",
           "stop_on_signals"]

log = logging.getLogger("devstack.demo")


def exporter_config(
    burrow_url: str, bootstrap_servers: str, cluster: str = "local", port: int = 8081,
    frequency_sec: int = 5,
) -> str:  # fmt: skip
    """HOCON text pointing the exporter at one Burrow and one Kafka cluster."""
    return (
        f"burrow.url = {json.dumps(burrow_url)}\n"
        f"clusters = [{{ name = {json.dumps(cluster)}, "
        f'kafka {{ "bootstrap.servers" = {json.dumps(bootstrap_servers)} }} }}]\n'
        f"frequency_sec = {frequency_sec}\n"
        f"port = {port}\n"
    )


@dataclass
class DemoEnv:
    """The running demo; :meth:`stop` (or ``with``) tears everything down."""

    stack: RealStack
    workload: Workload

    def config_text(self, port: int = 8081, frequency_sec: int = 5) -> str:
        return exporter_config(self.stack.burrow_url, self.stack.bootstrap_servers,
                               self.stack.cluster, port=port, frequency_sec=frequency_sec)

    def stop(self) -> None:
        try:
            self.workload.stop()
        finally:
            self.stack.stop()

    def __enter__(self) -> DemoEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_demo() -> DemoEnv:
    """Start the stack and the workload."""
    from devstack.stack import RealStack
    from devstack.workload import Workload

    stack = RealStack(nodes=1).start()
    try:
        workload = Workload(stack)
        workload.start()
    except BaseException:
        stack.stop()
        raise
    log.info("demo running: burrow=%s kafka=%s", stack.burrow_url, stack.bootstrap_servers)
    return DemoEnv(stack, workload)


#: What the demo imports once it starts (and through them confluent_kafka, pyhocon, ...).
_NEEDS = ("devstack.stack", "devstack.workload", "freshness_tracker.app",
          "freshness_tracker.config", "freshness_tracker.http", "freshness_tracker.sinks.render")
#: The install the demo runs on: scripts/install, or pip with the demo extra (the base install).
INSTALL_HINT = "run scripts/install (or: pip install -e '.[demo]')"


def missing_module() -> str | None:
    """The first Python package the demo needs that cannot be imported, or None. Asked before
    anything starts, so a missing package is one line, not a traceback after the stack began."""
    for module in _NEEDS:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            return (exc.name or str(exc)).split(".")[0]
    return None


def _port_free(port: int) -> bool:
    """Whether the exporter's listener can bind `port` (with SO_REUSEADDR, as it does: a
    previous run's connections in TIME_WAIT do not count as taken)."""
    import socket

    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


class CycleTable:
    """The demo's sink: a table of the current snapshot after every cycle that measured
    something. Before the first such cycle (Burrow has not seen the groups' commits yet) it
    says once that it is waiting, never an empty table."""

    def __init__(self, current: Callable[[], Snapshot], began: float,
                 out: TextIO | None = None) -> None:
        self._current = current
        self._began = began
        self._out = out or sys.stderr
        self._waiting_said = False
        self._measured = False

    def __call__(self, snapshot: ClusterSnapshot) -> None:
        from freshness_tracker.sinks.render import render_table

        if not self._measured:
            if not any(p.freshness_ms is not None for p in snapshot.partitions):
                if not self._waiting_said:
                    self._waiting_said = True
                    self._out.write("waiting for the first measured cycle (Burrow has not "
                                    "seen the groups' commits yet)\n")
                return
            self._measured = True
            self._out.write(f"\nfirst freshness values {time.monotonic() - self._began:.1f} s "
                            "after start\n")
        self._out.write("\n" + render_table(self._current()) + "\n")


def stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set `stop`; once stopping, further ones are ignored. Event.set takes
    a lock, and a second signal handled while the first handler holds it (timeout(1) sends
    SIGTERM to the process and then to its group) would wait for it forever in the same
    thread: the demo hung with Kafka and Burrow running."""

    def handler(_signum: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # before set(): no handler inside it
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def run_demo(port: int = 8081, duration_s: float = 0.0) -> int:
    """Run until Ctrl-C/SIGTERM (or `duration_s`); 1 when a package or scripts/install's cache
    is missing, 2 when the port is taken (all checked first, before anything starts)."""
    missing = missing_module()
    if missing is not None:
        sys.stderr.write(f"demo: the Python package {missing!r} is missing; {INSTALL_HINT}\n")
        return 1
    from freshness_tracker.app import Exporter
    from freshness_tracker.config import load_settings
    from freshness_tracker.http import MetricsServer, make_app

    if not _port_free(port):
        sys.stderr.write(f"demo: port {port} is already in use; choose another with --port\n")
        return 2
    try:  # what scripts/install builds, checked before anything starts or any file is made
        kafka_classpath_dir()
        debian_burrow_binary()
    except ProcessStartError as exc:
        sys.stderr.write(f"demo: {exc}\n")
        return 1
    stop = threading.Event()
    stop_on_signals(stop)
    began = time.monotonic()
    sys.stderr.write("starting Apache Kafka 3.9 (KRaft) and Burrow 1.2.1 locally, and a workload\n")
    try:
        env = start_demo()
    except (ProcessStartError, TimeoutError) as exc:  # the stack logged its tails and kept them
        sys.stderr.write(f"demo: the local stack did not start: {str(exc).splitlines()[0]}\n")
        return 1
    with env, tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "demo.conf"
        config.write_text(env.config_text(port=port, frequency_sec=5)
                          + "lookup.commitLagWhenCaughtUp = true\n"
                          # a Burrow >= 1.9's own offsets reader shows up as a group
                          + 'filters.groups.deny = ["burrow-.*"]\n')
        settings = load_settings(config)
        table = CycleTable(lambda: exporter.holder.current, began)
        exporter = Exporter(settings, sinks=[table])
        server = MetricsServer(make_app(exporter.exposition, exporter.health, exporter.ready,
                                        settings.web, exporter.status_page),
                               settings.web).start()
        sys.stderr.write(
            f"\nfreshness-tracker demo: status page at http://localhost:{server.port}/ , "
            f"metrics at http://localhost:{server.port}/metrics\n"
            f"config used:\n{config.read_text()}\n"
            "groups: keeps-up (fresh), slow (falling behind), stuck (freshness grows)\n"
            "Ctrl-C stops everything.\n")
        if duration_s > 0:
            timer = threading.Timer(duration_s, stop.set)
            timer.daemon = True
            timer.start()
        try:
            exporter.run_forever(stop)
        finally:
            server.stop()
            exporter.close()
    return 0


def parser() -> argparse.ArgumentParser:
    """The demo's command line (`scripts/run` passes its arguments on)."""
    demo = argparse.ArgumentParser(
        prog="python -m devstack.demo",
        description="Start Apache Kafka and Burrow locally with three consumer groups and "
                    "export their freshness.")
    demo.add_argument("--port", type=int, default=8081,
                      help="port of the status page /, /metrics and /healthz (default 8081)")
    demo.add_argument("--duration", type=float, default=0.0,
                      help="stop after this many seconds (default: run until Ctrl-C)")
    return demo


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return run_demo(port=args.port, duration_s=args.duration)


if __name__ == "__main__":
    sys.exit(main())
