"""`freshness-tracker demo`: the local stack + workload + the real exporter, in one process.

For a newcomer with no Burrow or Kafka at hand: starts ZooKeeper, tansu and Burrow (the same
stack the integration tests use), three consumer groups (keeping up, slow, stuck), and serves
/metrics on the chosen port. A table of the live values is logged every cycle.
"""

from __future__ import annotations

import logging
import signal
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType

from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.domain.model import ClusterSnapshot
from freshness_tracker.http import MetricsServer, make_app
from freshness_tracker.sinks.render import render_table

__all__ = ["run_demo"]

log = logging.getLogger(__name__)


def run_demo(port: int = 8081, duration_s: float = 0.0) -> int:
    from freshness_tracker.devstack.demo import start_demo

    stop = threading.Event()

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    log.info("starting the local stack (ZooKeeper, tansu, Burrow) and a workload")
    with start_demo() as env, tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "demo.conf"
        config.write_text(env.config_text(port=port, frequency_sec=5)
                          + "lookup.commitLagWhenCaughtUp = true\n")
        settings = load_settings(config)

        def show(_snapshot: ClusterSnapshot) -> None:
            sys.stderr.write("\n" + render_table(exporter.holder.current) + "\n")

        exporter = Exporter(settings, sinks=[show])
        server = MetricsServer(make_app(exporter.registry, exporter.health, exporter.ready,
                                        settings.web), settings.web).start()
        sys.stderr.write(
            f"\nfreshness-tracker demo: metrics at http://localhost:{server.port}/metrics\n"
            f"config used:\n{config.read_text()}\n"
            "groups: keeps-up (fresh), slow (falling behind), stuck (freshness grows)\n"
            "Ctrl-C stops everything.\n")
        if duration_s > 0:
            threading.Timer(duration_s, stop.set).start()
        try:
            exporter.run_forever(stop)
        finally:
            server.stop()
            exporter.close()
    return 0
