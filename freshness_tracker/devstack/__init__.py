"""The former tansu stack (ZooKeeper, tansu, Burrow 1.2.1, glue), kept only for the benchmarks
until they move to the real stack; the tests and the demo use the top-level ``devstack/``."""

from freshness_tracker.devstack.processes import ProcessStartError
from freshness_tracker.devstack.stack import LocalStack, StackFeatureUnavailable

__all__ = [
    "LocalStack",
    "ProcessStartError",
    "StackFeatureUnavailable",
]
