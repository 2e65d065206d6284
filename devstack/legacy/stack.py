"""``LegacyStack``: ZooKeeper + Apache Kafka 3.9.1 (ZooKeeper mode) + Debian's Burrow 1.2.1.

Why this stack exists: Debian still ships Burrow 1.2.1 (2018, Sarama 1.20.1). It sends
ListOffsets **v0** for every broker offset (``&sarama.OffsetRequest{}`` in its cluster module),
which Kafka 4.0 removed (KIP-896), so it cannot read the Kafka 4.1 of :class:`RealStack`. Kafka
3.9 is the last line that answers v0, and Maven Central serves ``kafka_2.13`` 3.9.1.

Why Kafka runs on ZooKeeper (not KRaft) here: Burrow 1.2.1 needs a ZooKeeper for itself anyway
(its ``[zookeeper]`` section is mandatory: the coordinator creates ``/burrow`` at start) and its
``kafka_zk`` consumer module reads the ``/consumers`` tree of the ZooKeeper the Kafka cluster
keeps its metadata in. A 2018-era deployment is exactly that: one ensemble, Kafka under a chroot
(``/kafka`` here), Burrow's own root beside it. One ZooKeeper JVM serves all three, and both
consumer modules run: ``kafka`` (``__consumer_offsets``, real group commits) and ``kafka_zk``
(``/kafka/consumers/<group>/offsets/<topic>/<partition>``, what old ZooKeeper-committing
consumers wrote; the znode's mtime is the commit time).

ZooKeeper runs from the Kafka 3.9.1 classpath (``ZooKeeperServerMain`` of its zookeeper 3.8.4
jar, what the 3.9 distribution's ``zookeeper-server-start.sh`` runs): the version the broker's
client is built against, one classpath and one logging setup for both JVMs.

Everything else is :class:`RealStack` (whose default is Kafka 3.9.1 in KRaft mode with Burrow
1.2.1): same helpers (``create_topic``, ``produce``, ``commit``, ``delete_records``,
``wait_for_burrow_lag``...), plus :meth:`LegacyStack.commit_zk`. One node, plaintext, no frame
proxies: the suite proves compatibility, not faults.
"""

from __future__ import annotations

from pathlib import Path

from devstack import zk
from devstack.stack import CommitWindow, RealStack, now_ms

__all__ = ["KAFKA_CHROOT", "LegacyStack"]

#: Kafka's chroot in the shared ZooKeeper; ``kafka_zk`` reads ``<chroot>/consumers``.
KAFKA_CHROOT = "/kafka"


class LegacyStack(RealStack):
    """ZooKeeper + one Kafka 3.9.1 broker on it + Burrow 1.2.1 (both consumer modules).

    Attributes once started, besides :class:`RealStack`'s: ``zookeeper``
    (:class:`~devstack.zookeeper.ZooKeeperServer`), ``zookeeper_address``.
    """

    def __init__(
        self,
        start_timeout_s: float = 120.0,
        workdir: str | Path | None = None,
        keep_workdir: bool = False,
    ) -> None:
        super().__init__(nodes=1, start_timeout_s=start_timeout_s, workdir=workdir,
                         keep_workdir=keep_workdir, proxied=False)  # fmt: skip
        self.zookeeper_chroot = KAFKA_CHROOT

    @property
    def zookeeper_address(self) -> str:
        return self._need(self.zookeeper, "ZooKeeper").address

    def _ensure_offsets_topic(self, timeout_s: float) -> None:
        super()._ensure_offsets_topic(timeout_s)
        # kafka_zk lists <chroot>/consumers once at start and sets no watch when that fails: it
        # must exist first (Kafka 3.9 creates it with its other top-level znodes; made sure here).
        zk.ensure_path(self.zookeeper_address, f"{KAFKA_CHROOT}/consumers")

    # ---- ZooKeeper commits --------------------------------------------------------------------

    def znode_path(self, group: str, topic: str, partition: int) -> str:
        return f"{KAFKA_CHROOT}/consumers/{group}/offsets/{topic}/{partition}"

    def commit_zk(self, group: str, topic: str, partition: int, offset: int) -> CommitWindow:
        """Commit ``offset`` the way ZooKeeper-committing consumers did: the decimal offset as
        the data of ``<chroot>/consumers/<group>/offsets/<topic>/<partition>`` (created with
        its parents when missing). Burrow's ``kafka_zk`` module reports the znode's mtime
        (ZooKeeper's clock) as the commit time: it lies in the returned window, and
        :meth:`znode_mtime` tells it exactly.

        ``kafka_zk`` numbers a topic's partitions by counting the children of its znode: commit
        partitions 0..n-1, never a later one alone.
        """
        before = now_ms()
        zk.set_znode(self.zookeeper_address, self.znode_path(group, topic, partition),
                     str(offset).encode())  # fmt: skip
        return CommitWindow(before, now_ms())

    def znode_mtime(self, group: str, topic: str, partition: int) -> int | None:
        """The commit znode's mtime (ms; None when missing): Burrow 1.2.1's ``end.timestamp``
        for that commit."""
        return zk.mtime(self.zookeeper_address, self.znode_path(group, topic, partition))
