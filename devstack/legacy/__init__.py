"""The ZooKeeper-mode compatibility stack: ZooKeeper + Apache Kafka 3.9.1 in ZooKeeper mode +
Debian's Burrow 1.2.1 with both consumer modules (``kafka`` and ``kafka_zk``). See
:mod:`devstack.legacy.stack` for why, and ``tests/legacy/`` for what it proves."""

from devstack.legacy.stack import LegacyStack

__all__ = ["LegacyStack"]
