"""End to end on a real 3-node Kafka 3.9.1 cluster: one exporter cycle measures partitions whose
leaders are three different brokers, each value exact, reading from each leader; and a stopped
broker's partitions are measured on their new leaders without restarting the exporter."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from devstack import RealStack
from devstack.exporter import exporter
from devstack.processes import poll
from devstack.proxy import API_FETCH
from devstack.stack import now_ms
from freshness_tracker.domain.model import ClusterSnapshot, PartitionStatus
from tests.realkafka.helpers import one_cycle, result
from tests.support.seeding import Commit, assert_exact, commit_all, seed_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_one_cycle_reads_partitions_led_by_all_three_brokers(
    stack3: RealStack, unique_name: Callable[[str], str]
) -> None:
    t = now_ms()
    topic = seed_topic(stack3, unique_name("t"), {
        p: [t - 90_000 + 10_000 * p + 1_000 * i for i in range(6)] for p in range(3)},
        replicas=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])  # by hand: see test_three_nodes_leaders.py
    leaders = stack3.leaders(topic.name)
    assert leaders == {0: 1, 1: 2, 2: 3}, leaders
    group = unique_name("spread")
    commits = [Commit(group, topic, p, c) for p, c in ((0, 1), (1, 3), (2, 5))]
    commit_all(stack3, commits)

    stack3.reset_request_counts()
    snap, scrape = one_cycle(stack3, group)
    fetches = {b: counts.get(API_FETCH, 0) for b, counts in stack3.request_counts().items()}
    assert all(fetches[b] > 0 for b in (1, 2, 3)), fetches  # each leader was read from

    assert (snap.health.kafka_reads, snap.health.kafka_read_failures) == (6, 0)  # C and C−1 each
    for commit in commits:
        assert_exact(snap, commit, scrape)


def test_partitions_of_a_stopped_broker_are_read_from_their_new_leaders(
    stack3: RealStack, unique_name: Callable[[str], str]
) -> None:
    topic, group = unique_name("t"), unique_name("moved")
    stack3.create_topic(topic, partitions=3)
    t = now_ms()
    for p in range(3):
        assert stack3.produce(topic, p, [t - 30_000 + 1_000 * i for i in range(4)]) == [0, 1, 2, 3]
        stack3.commit(group, topic, p, 2)
    for p in range(3):
        stack3.wait_for_burrow_lag(group, topic, p, committed_offset=2, current_lag=2)

    def all_ok(snap: ClusterSnapshot) -> bool:
        results = [result(snap, group, topic, p) for p in range(3)]
        return all(r.status is PartitionStatus.OK and r.freshness_ms is not None for r in results)

    with exporter(stack3, group) as exp:
        (before,) = exp.run_once().clusters
        assert all_ok(before)
        victim = stack3.leaders(topic)[0]
        stack3.stop_broker(victim)  # controlled shutdown: its leaderships move first
        try:
            moved = poll(lambda: (lead := stack3.leaders(topic)) and len(lead) == 3
                         and victim not in lead.values() and lead, 30,
                         f"leadership to leave broker {victim}")  # fmt: skip
            (after,) = exp.run_once().clusters  # the same exporter: no restart
            assert all_ok(after), (moved, after.partitions)
            assert after.health.kafka_read_failures == 0
        finally:
            stack3.start_broker(victim)
