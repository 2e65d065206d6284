"""The Burrow 1.2.1 compatibility stack: ZooKeeper + Apache Kafka 3.9.1 (ZooKeeper mode, from
Maven Central via ``devstack/legacy/pom.xml``) + Debian's Burrow 1.2.1. See
:mod:`devstack.legacy.stack` for why, and ``tests/legacy/`` for what it proves."""

from devstack.legacy.stack import LegacyStack, ZooKeeperServer

__all__ = ["LegacyStack", "ZooKeeperServer"]
