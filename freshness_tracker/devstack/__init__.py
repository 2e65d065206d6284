"""A real local stack (ZooKeeper, tansu, Burrow 1.2.1, glue) for integration tests, benchmarks and
the ``demo`` command: local processes on 127.0.0.1, no Docker."""

from freshness_tracker.devstack.demo import DemoEnv, exporter_config, start_demo
from freshness_tracker.devstack.processes import ProcessStartError
from freshness_tracker.devstack.stack import LocalStack, StackFeatureUnavailable
from freshness_tracker.devstack.workload import Workload

__all__ = [
    "DemoEnv",
    "LocalStack",
    "ProcessStartError",
    "StackFeatureUnavailable",
    "Workload",
    "exporter_config",
    "start_demo",
]
