"""Leaders on different brokers, exactly, on a real 3-node Kafka 3.9.1 cluster: one batch per
leader in a cycle (Fetch requests counted per broker at the frame proxies), and a leader cut
off then SIGKILLed while the exporter runs: its partitions go unmeasured (no value, never the
previous one) while it is unreachable, and once the controller fences it and leadership moves
they are measured again exactly by the same exporter. Same 3-node stack as
``test_three_nodes.py``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from devstack import RealStack
from devstack.exporter import exporter
from devstack.processes import poll
from devstack.proxy import API_FETCH
from devstack.scrape import FRESHNESS, Scrape
from devstack.stack import now_ms
from freshness_tracker.app import Exporter
from freshness_tracker.domain.model import ClusterSnapshot, PartitionStatus
from tests.realkafka.helpers import assert_freshness_from, result

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

# Two partitions led by each broker, every replica on every broker: placed by hand, since the
# controller leaves out of the leaders a broker restarted a moment ago by an earlier test.
REPLICAS = [[1, 2, 3], [1, 3, 2], [2, 3, 1], [2, 1, 3], [3, 1, 2], [3, 2, 1]]
PARTITIONS = len(REPLICAS)
COMMITTED = 2
RECORDS = 5


def seed(stack: RealStack, topic: str, group: str) -> dict[int, list[int]]:
    """PARTITIONS partitions of RECORDS records, the group at COMMITTED on each; returns the
    CreateTimes per partition."""
    stack.create_topic(topic, replicas=REPLICAS)
    t = now_ms()
    ts = {p: [t - 90_000 + 5_000 * p + 1_000 * i for i in range(RECORDS)]
          for p in range(PARTITIONS)}  # fmt: skip
    for p in range(PARTITIONS):
        assert stack.produce(topic, p, ts[p]) == list(range(RECORDS))
        stack.commit(group, topic, p, COMMITTED)
    for p in range(PARTITIONS):
        stack.wait_for_burrow_lag(group, topic, p, committed_offset=COMMITTED,
                                  current_lag=RECORDS - COMMITTED)  # fmt: skip
    return ts


def reader_stats(exp: Exporter) -> dict[str, int]:
    """The lookup engine's cumulative counters (batches, reads) of the only cluster."""
    (measurer,) = exp.measurers
    reader = measurer._reader  # test-only peek: the counters are not exported as metrics
    assert reader is not None
    stats: dict[str, int] = reader.stats()  # type: ignore[attr-defined]
    return stats


def test_one_batch_per_leader(stack3: RealStack, unique_name: Callable[[str], str]) -> None:
    topic, group = unique_name("t"), unique_name("batch")
    ts = seed(stack3, topic, group)
    leaders = stack3.leaders(topic)
    assert leaders == {p: replicas[0] for p, replicas in enumerate(REPLICAS)}, leaders

    with exporter(stack3, group) as exp:
        stack3.reset_request_counts()
        (snap,) = exp.run_once().clusters
        fetches = {b: c.get(API_FETCH, 0) for b, c in stack3.request_counts().items()}
        stats = reader_stats(exp)
    assert snap.health.kafka_reads == 2 * PARTITIONS and snap.health.kafka_read_failures == 0
    assert stats["batches"] == 3, stats  # one per leader, not one per partition
    # every leader read, in a handful of Fetch requests for its 2 partitions x 2 offsets
    assert all(1 <= fetches[b] <= 3 for b in (1, 2, 3)), fetches
    for p in range(PARTITIONS):
        r = result(snap, group, topic, p)
        assert r.status is PartitionStatus.OK, (leaders[p], r)
        assert_freshness_from(snap, r, ts[p][COMMITTED])


def test_a_killed_leader_goes_unmeasured_then_measured_on_the_new_leader(
    stack3: RealStack, unique_name: Callable[[str], str]
) -> None:
    topic, group = unique_name("t"), unique_name("killed")
    ts = seed(stack3, topic, group)

    def check(snap: ClusterSnapshot, scrape: Scrape) -> set[int]:
        """Every partition exact or unmeasured (never another value); the unmeasured ones."""
        unmeasured = set()
        for p in range(PARTITIONS):
            r = result(snap, group, topic, p)
            value = scrape.get(FRESHNESS, cluster=stack3.cluster, consumer=group, topic=topic,
                               partition=p)  # fmt: skip
            if r.status is PartitionStatus.OK:
                assert_freshness_from(snap, r, ts[p][COMMITTED])
                assert value == r.freshness_ms
            else:
                assert r.status is PartitionStatus.LOOKUP_FAILED, r
                assert r.freshness_ms is None and value is None, (r, value)  # never stale
                unmeasured.add(p)
        return unmeasured

    def cycle(exp: Exporter) -> tuple[ClusterSnapshot, Scrape]:
        (snap,) = exp.run_once().clusters
        return snap, Scrape.of(exp.exposition)

    # Without the timestamp cache every cycle reads: with it, an unchanged commit needs no read
    # and stays exact through the outage (the record at an offset never changes).
    with exporter(stack3, group, extra="lookup.cacheSize = 0") as exp:
        assert check(*cycle(exp)) == set()
        leaders = stack3.leaders(topic)
        victim = leaders[0]
        led = {p for p, b in leaders.items() if b == victim}
        # First unreachable but alive (its proxy closed): the controller keeps it as leader, so
        # its partitions stay unmeasured for as long as that lasts, deterministically. A kill
        # alone races the controller's fencing (4 s) against a cycle on a loaded machine.
        stack3.cut_broker(victim)
        try:
            for _ in range(2):
                snap, scrape = cycle(exp)
                assert check(snap, scrape) == led, (victim, leaders, snap.health)
                assert snap.health.up  # the other brokers' partitions were measured
            assert stack3.leaders(topic) == leaders  # still led by the unreachable broker
            stack3.kill_broker(victim)  # now a crash: fenced, leadership moves

            def measured_again() -> bool:
                return not check(*cycle(exp))

            poll(measured_again, 90, f"partitions {sorted(led)} measured after broker "
                 f"{victim} was killed")  # fmt: skip
            moved = stack3.leaders(topic)
            assert victim not in moved.values() and len(moved) == PARTITIONS, moved
        finally:
            stack3.start_broker(victim)  # restores its proxy too
