"""End to end on a real 3-node Kafka 4.1 cluster: one exporter cycle measures partitions whose
leaders are three different brokers, each value exact."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from devstack import RealStack
from devstack.stack import now_ms
from freshness_tracker.domain.model import PartitionStatus
from tests.realkafka.test_one_node import assert_freshness_from, one_cycle, result

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_one_cycle_reads_partitions_led_by_all_three_brokers(
    stack3: RealStack, unique_name: Callable[[str], str]
) -> None:
    topic, group = unique_name("t"), unique_name("spread")
    stack3.create_topic(topic, partitions=3)
    leaders = stack3.leaders(topic)
    assert sorted(leaders.values()) == [1, 2, 3], leaders  # Kafka spreads 3 partitions over 3

    t = now_ms()
    ts = {p: [t - 90_000 + 10_000 * p + 1_000 * i for i in range(6)] for p in range(3)}
    committed = {0: 1, 1: 3, 2: 5}
    for p in range(3):
        assert stack3.produce(topic, p, ts[p]) == list(range(6))
    windows = {p: stack3.commit(group, topic, p, c) for p, c in committed.items()}
    commit_ts = {
        p: stack3.wait_for_burrow_lag(group, topic, p, committed_offset=c,
                                      current_lag=6 - c)["end"]["timestamp"]
        for p, c in committed.items()
    }  # fmt: skip

    snap, scrape = one_cycle(stack3, group)

    assert (snap.health.kafka_reads, snap.health.kafka_read_failures) == (6, 0)  # C and C−1 each
    for p, c in committed.items():
        r = result(snap, group, topic, p)
        assert r.status is PartitionStatus.OK, (leaders[p], r)
        assert (r.committed_offset, r.offset_lag) == (c, 6 - c)
        assert windows[p].before_ms <= r.commit_time_ms == commit_ts[p] <= windows[p].after_ms
        assert_freshness_from(snap, r, ts[p][c])
        assert r.commit_lag_ms == commit_ts[p] - ts[p][c - 1]
        labels = {"cluster": stack3.cluster, "consumer": group, "topic": topic, "partition": p}
        assert scrape.get("kafka_consumer_freshness_ms", **labels) == r.freshness_ms
