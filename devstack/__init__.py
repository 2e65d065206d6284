"""The dev stack on the real things: Apache Kafka (KRaft; 3.9.1 by default, 4.1.1 on request, from
Maven Central) and Debian's Burrow 1.2.1, as local processes on 127.0.0.1, no Docker.

Not part of the wheel or the image (it lives beside ``tests/`` and ``benchmarks/``): the product
is the exporter. ``scripts/install`` fills the cache these modules start from.

Its names are imported on first use (PEP 562), so `python -m devstack.demo` can check for a
missing package (confluent_kafka) and say so in one line before anything imports it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devstack.burrow import BurrowServer
    from devstack.kafka import KafkaCluster
    from devstack.processes import ProcessStartError
    from devstack.stack import (
        CommitWindow,
        MultiClusterStack,
        RealStack,
        StackFeatureUnavailable,
    )

_HOME = {"BurrowServer": "devstack.burrow", "KafkaCluster": "devstack.kafka",
         "MultiClusterStack": "devstack.stack",
         "ProcessStartError": "devstack.processes", "CommitWindow": "devstack.stack",
         "RealStack": "devstack.stack", "StackFeatureUnavailable": "devstack.stack"}

__all__ = [
    "BurrowServer",
    "CommitWindow",
    "KafkaCluster",
    "MultiClusterStack",
    "ProcessStartError",
    "RealStack",
    "StackFeatureUnavailable",
]


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'devstack' has no attribute {name!r}")
