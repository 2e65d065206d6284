"""``freshness-tracker demo``: a running :class:`LocalStack` + :class:`Workload`, and its config.

Why: one call gives a newcomer a real Burrow with three groups that are fresh, slowly falling
behind and stuck, plus the HOCON text that points the exporter at it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from freshness_tracker.devstack.stack import LocalStack
from freshness_tracker.devstack.workload import Workload

__all__ = ["DemoEnv", "exporter_config", "start_demo"]

log = logging.getLogger(__name__)


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

    stack: LocalStack
    workload: Workload

    def config_text(self, port: int = 8081, frequency_sec: int = 5) -> str:
        return exporter_config(
            self.stack.burrow_url, self.stack.bootstrap_servers, self.stack.cluster,
            port=port, frequency_sec=frequency_sec,
        )  # fmt: skip

    def stop(self) -> None:
        try:
            self.workload.stop()
        finally:
            self.stack.stop()

    def __enter__(self) -> DemoEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_demo(rtt_ms: float = 0.0) -> DemoEnv:
    """Start the stack (``rtt_ms`` added per broker response) and the workload."""
    stack = LocalStack(rtt_ms=rtt_ms).start()
    try:
        workload = Workload(stack)
        workload.start()
    except BaseException:
        stack.stop()
        raise
    log.info("demo running: burrow=%s kafka=%s", stack.burrow_url, stack.bootstrap_servers)
    return DemoEnv(stack, workload)
