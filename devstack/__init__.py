"""The dev stack on the real things: Apache Kafka 4.1 (KRaft, from Maven Central) and Burrow 1.9.5
(built from third_party/burrow), as local processes on 127.0.0.1, no Docker.

Not part of the wheel or the image (it lives beside ``tests/`` and ``benchmarks/``): the product
is the exporter. ``scripts/install`` fills the cache these modules start from.
"""

from devstack.burrow import BurrowServer
from devstack.kafka import KafkaCluster
from devstack.processes import ProcessStartError
from devstack.stack import CommitWindow, RealStack, StackFeatureUnavailable

__all__ = [
    "BurrowServer",
    "CommitWindow",
    "KafkaCluster",
    "ProcessStartError",
    "RealStack",
    "StackFeatureUnavailable",
]
