"""Log shapes only a real broker makes, end to end (Kafka 3.9.1 → Burrow 1.2.1 → one exporter
cycle): transaction control markers and aborted records, a compacted-away record at the
committed offset, a deleted topic, a commit past the log end, and 1 MiB records.

Same 1-node stack as ``test_one_node.py`` (the session's pool keeps it running).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType

import psutil
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from devstack import RealStack
from devstack.processes import poll
from devstack.scrape import FRESHNESS
from devstack.stack import now_ms
from freshness_tracker import metrics
from freshness_tracker.domain.model import PartitionStatus
from tests.realkafka.helpers import assert_freshness_from, one_cycle, result
from tests.support.seeding import seed_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

MiB = 1024 * 1024
READ_COMMITTED = {"isolation.level": "read_committed"}


def producer(stack: RealStack, **conf: object) -> Producer:
    return Producer({"bootstrap.servers": stack.bootstrap_servers, "linger.ms": 0, "acks": "all",
                     **conf})  # fmt: skip


def first_offset_from(stack: RealStack, topic: str, partition: int, offset: int) -> int:
    """The offset of the first record a read_uncommitted consumer gets at ``offset``."""
    consumer = Consumer({"bootstrap.servers": stack.bootstrap_servers, "group.id": "ft-peek",
                         "enable.auto.commit": False, "enable.partition.eof": True})  # fmt: skip
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None and err.code() == KafkaError._PARTITION_EOF:
                return int(msg.offset())
            if err is None:
                return int(msg.offset())
        raise TimeoutError(f"no record or EOF from {topic}[{partition}]@{offset}")
    finally:
        consumer.close()


def test_transaction_markers_and_aborted_records(
    stack: RealStack, unique_name: Callable[[str], str]
) -> None:
    """p0: committed txn (0, 1) + commit marker 2; a group committing 2 has Burrow's "phantom
    lag" 1 and nothing waiting. p1: aborted txn (0, 1) + abort marker 2, committed txn (3, 4) +
    marker 5; a group at 0 has, for a read_committed consumer, record 3 as its next one.

    The exporter reads read_uncommitted by default (it must see records inside an open
    transaction); with ``isolation.level=read_committed`` in ``clusters[].kafka`` it measures
    from the first committed record after the commit (GAP), skipping the aborted ones.
    """
    topic, phantom, behind = unique_name("t"), unique_name("phantom"), unique_name("aborted")
    stack.create_topic(topic, partitions=2)
    t = now_ms()
    ts = [t - 60_000 + 5_000 * i for i in range(6)]
    tx = producer(stack, **{"transactional.id": unique_name("tx")})
    tx.init_transactions(30)

    def transaction(partition: int, stamps: Sequence[int], commit: bool) -> None:
        tx.begin_transaction()
        for stamp in stamps:
            tx.produce(topic, b"v", partition=partition, timestamp=stamp)
        if commit:
            tx.commit_transaction(30)
        else:
            tx.flush(30)
            tx.abort_transaction(30)

    transaction(0, ts[0:2], commit=True)  # p0: 0, 1, marker 2
    transaction(1, ts[0:2], commit=False)  # p1: 0, 1 aborted, marker 2
    transaction(1, ts[3:5], commit=True)  # p1: 3, 4, marker 5

    stack.commit(phantom, topic, 0, 2)
    stack.commit(behind, topic, 1, 0)
    stack.wait_for_burrow_lag(phantom, topic, 0, committed_offset=2, current_lag=1)  # a marker
    stack.wait_for_burrow_lag(behind, topic, 1, committed_offset=0, current_lag=6)

    for kafka in ({}, READ_COMMITTED):
        snap, scrape = one_cycle(stack, phantom, behind, kafka=kafka)
        marker = result(snap, phantom, topic, 0)
        assert marker.status is PartitionStatus.CAUGHT_UP, (kafka, marker)  # never a record
        assert (marker.freshness_ms, marker.offset_lag) == (0, 1)
        labels = {"cluster": stack.cluster, "consumer": phantom, "topic": topic, "partition": 0}
        assert scrape.get(FRESHNESS, **labels) == 0
        r = result(snap, behind, topic, 1)
        if kafka:  # read_committed: the aborted 0, 1 and the marker 2 are skipped
            assert r.status is PartitionStatus.GAP, r
            assert_freshness_from(snap, r, ts[3])
        else:  # read_uncommitted: the record at the offset, aborted or not
            assert r.status is PartitionStatus.OK, r
            assert_freshness_from(snap, r, ts[0])
        assert snap.health.kafka_read_failures == 0


def test_compacted_away_record_at_the_commit(
    stack: RealStack, unique_name: Callable[[str], str]
) -> None:
    """Key a at 0, 1, 2 and b at 3, then a newer filler at 4 (so 0-3 sit in closed segments:
    old CreateTimes roll a segment per append with ``segment.ms`` 100). Once the cleaner ran,
    0 and 1 are gone: a group at 0 is measured from record 2 (GAP), never from nothing."""
    topic, group = unique_name("t"), unique_name("compacted")
    stack.create_topic(topic, config={"cleanup.policy": "compact", "segment.ms": "100",
                                      "min.cleanable.dirty.ratio": "0.01",
                                      "delete.retention.ms": "100"})  # fmt: skip
    t = now_ms()
    ts = [t - 60_000 + 5_000 * i for i in range(4)]
    prod = producer(stack, **{"enable.idempotence": True})
    for key, stamp in zip((b"a", b"a", b"a", b"b"), ts, strict=True):
        prod.produce(topic, b"v", key=key, partition=0, timestamp=stamp)
        prod.flush(30)  # one batch (and segment) per record
    stack.commit(group, topic, 0, 0)

    def compacted() -> bool:
        prod.produce(topic, b"v", key=b"filler", partition=0, timestamp=now_ms())
        prod.flush(30)  # each append rolls the segment again: the cleaner gets a closed one
        return first_offset_from(stack, topic, 0, 0) == 2

    poll(compacted, 90, f"the log cleaner to remove offsets 0-1 of {topic}", 0.5)
    log_end = _log_end(stack, topic, 0)  # no append after this: Burrow must reach it
    part = poll(lambda: (p := _burrow_part(stack, group, topic, 0)).get("current_lag") == log_end
                and p, 30, f"Burrow to see the log end {log_end}")  # fmt: skip
    snap, _ = one_cycle(stack, group)
    r = result(snap, group, topic, 0)
    assert r.status is PartitionStatus.GAP, r
    assert r.committed_offset == 0 and r.offset_lag == part["current_lag"]
    assert_freshness_from(snap, r, ts[2])
    assert snap.health.offset_mismatches == 1 and snap.health.kafka_read_failures == 0


def _log_end(stack: RealStack, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": stack.bootstrap_servers, "group.id": "ft-peek"})
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=15)
        return int(high)
    finally:
        consumer.close()


def _burrow_part(stack: RealStack, group: str, topic: str, partition: int) -> dict[str, int]:
    status, body = stack.burrow_get(f"/v3/kafka/{stack.cluster}/consumer/{group}/lag")
    if status != 200 or not isinstance(body, dict):
        return {}
    for part in body.get("status", {}).get("partitions", []):
        if (part.get("topic"), part.get("partition")) == (topic, partition) and part.get("end"):
            return dict(part)
    return {}


def test_deleted_topic_drops_out_and_the_group_stays_measured(
    stack: RealStack, unique_name: Callable[[str], str]
) -> None:
    doomed, kept, group = unique_name("gone"), unique_name("kept"), unique_name("deleted")
    t = now_ms()
    ts = [t - 20_000 + 1_000 * i for i in range(4)]
    for topic in (doomed, kept):
        stack.create_topic(topic)
        assert stack.produce(topic, 0, ts) == [0, 1, 2, 3]
        stack.commit(group, topic, 0, 1)
        stack.wait_for_burrow_lag(group, topic, 0, committed_offset=1, current_lag=3)

    for future in stack.admin().delete_topics([doomed], request_timeout=30).values():
        future.result(timeout=30)

    def burrow_dropped() -> bool:
        return not _burrow_part(stack, group, doomed, 0) and bool(_burrow_part(stack, group,
                                                                               kept, 0))

    poll(burrow_dropped, 60, f"Burrow to drop {doomed} from {group}")
    snap, scrape = one_cycle(stack, group)
    assert not [r for r in snap.partitions if r.key.topic == doomed]  # no stale series
    assert scrape.get(FRESHNESS, cluster=stack.cluster, consumer=group, topic=doomed,
                      partition=0) is None  # fmt: skip
    r = result(snap, group, kept, 0)
    assert r.status is PartitionStatus.OK
    assert_freshness_from(snap, r, ts[1])
    assert snap.health.kafka_read_failures == 0
    assert doomed not in stack.admin().list_topics(timeout=10).topics  # no read re-created it


def test_committed_offset_beyond_the_log_end(
    stack: RealStack, unique_name: Callable[[str], str]
) -> None:
    """A real group commits 10 where the log ends at 3 (Kafka accepts it). Burrow 1.2.1 clamps
    its lag to 0; the exporter reports caught up (nothing exists at or after 10), no read."""
    topic, group = unique_name("t"), unique_name("beyond")
    t = now_ms()
    seed_topic(stack, topic, {0: [t - 3_000, t - 2_000, t - 1_000]})
    stack.commit(group, topic, 0, 10)
    stack.wait_for_burrow_lag(group, topic, 0, committed_offset=10, current_lag=0)
    snap, scrape = one_cycle(stack, group)
    r = result(snap, group, topic, 0)
    assert r.status is PartitionStatus.CAUGHT_UP, r
    assert (r.committed_offset, r.offset_lag, r.freshness_ms) == (10, 0, 0)
    assert r.error is None and snap.health.kafka_read_failures == 0
    labels = {"cluster": stack.cluster, "consumer": group, "topic": topic, "partition": 0}
    assert scrape.get(FRESHNESS, **labels) == 0
    assert scrape.get(metrics.DATA_LOSS.name, **labels) == 0


class PeakRss:
    """Peak RSS of this process while a block runs (sampled every 20 ms with psutil)."""

    def __init__(self) -> None:
        self._proc = psutil.Process(os.getpid())
        self.baseline = self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def __enter__(self) -> PeakRss:
        self.baseline = self.peak = self._proc.memory_info().rss
        self._thread.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)


def test_one_mib_records_keep_the_exporter_bounded(
    stack: RealStack, unique_name: Callable[[str], str]
) -> None:
    """24 partitions x 6 records of 1 MiB (144 MiB in the log), a group at offset 1 of each:
    one exporter cycle reads 48 records (C and C−1) exactly, and the process grows far less
    than the log it could have prefetched (per-partition and queue bounds, early unassign)."""
    topic, group, partitions, per = unique_name("big"), unique_name("mib"), 24, 6
    stack.create_topic(topic, partitions=partitions, config={"max.message.bytes": str(4 * MiB)})
    t = now_ms()
    ts = [t - 60_000 + 1_000 * i for i in range(per)]
    prod = producer(stack, **{"message.max.bytes": 4 * MiB, "enable.idempotence": True})
    value = b"x" * MiB
    for p in range(partitions):
        for stamp in ts:
            prod.produce(topic, value, partition=p, timestamp=stamp)
        prod.flush(60)
    assert prod.flush(60) == 0
    windows = {p: stack.commit(group, topic, p, 1) for p in range(partitions)}
    for p in range(partitions):
        stack.wait_for_burrow_lag(group, topic, p, committed_offset=1, current_lag=per - 1)

    with PeakRss() as rss:
        snap, _ = one_cycle(stack, group)
    growth_mib = (rss.peak - rss.baseline) / MiB
    print(f"\n1 MiB records, one cycle: RSS {rss.baseline / MiB:.0f} -> {rss.peak / MiB:.0f} MiB")
    for p in range(partitions):
        r = result(snap, group, topic, p)
        assert r.status is PartitionStatus.OK, r
        assert_freshness_from(snap, r, ts[1])
        assert r.commit_time_ms is not None
        assert windows[p].before_ms <= r.commit_time_ms <= windows[p].after_ms
        assert r.commit_lag_ms == r.commit_time_ms - ts[0]
    assert snap.health.kafka_reads == 2 * partitions
    assert growth_mib < 100, f"RSS grew {growth_mib:.0f} MiB (log holds {partitions * per} MiB)"
