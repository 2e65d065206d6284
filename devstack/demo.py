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
import json
import logging
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from devstack.cache import debian_burrow_binary, kafka_classpath_dir
from devstack.processes import ProcessStartError
from devstack.stack import RealStack
from devstack.workload import Workload

__all__ = ["DemoEnv", "exporter_config", "main", "parser", "run_demo", "start_demo"]

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
    stack = RealStack(nodes=1).start()
    try:
        workload = Workload(stack)
        workload.start()
    except BaseException:
        stack.stop()
        raise
    log.info("demo running: burrow=%s kafka=%s", stack.burrow_url, stack.bootstrap_servers)
    return DemoEnv(stack, workload)


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def run_demo(port: int = 8081, duration_s: float = 0.0) -> int:
    """Run until Ctrl-C/SIGTERM (or `duration_s`); 2 when the port is taken (checked first,
    before anything starts)."""
    from freshness_tracker.app import Exporter
    from freshness_tracker.config import load_settings
    from freshness_tracker.domain.model import ClusterSnapshot
    from freshness_tracker.http import MetricsServer, make_app
    from freshness_tracker.sinks.render import render_table

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

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
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
        first = threading.Event()

        def show(snapshot: ClusterSnapshot) -> None:
            if not any(p.freshness_ms is not None for p in snapshot.partitions):
                return  # Burrow has not seen the groups' first commits yet: nothing to show
            if not first.is_set():
                first.set()
                sys.stderr.write(f"\nfirst freshness values {time.monotonic() - began:.1f} s "
                                 "after start\n")
            sys.stderr.write("\n" + render_table(exporter.holder.current) + "\n")

        exporter = Exporter(settings, sinks=[show])
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
