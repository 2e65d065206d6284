"""The dev stack on the real things: Apache Kafka (KRaft; 3.9.1 by default, 4.1.1 on request, from
Maven Central) and Debian's Burrow 1.2.1, as local processes on 127.0.0.1, no Docker.

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
