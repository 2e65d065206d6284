"""Guarantees across faults: the exporter never commits offsets or creates a consumer group, and
one slow or dead cluster never delays or blanks another cluster's series (bulkheads).

(No stale value is asserted by every fault test: series removed, last_success frozen, the
cluster reported down.)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from devstack import RealStack
from devstack.exporter import ExporterProcess
from devstack.exporter_config import cluster_entry
from devstack.processes import free_port
from devstack.scrape import DURATION, FRESHNESS, PARTITIONS
from devstack.stack import OFFSETS_TOPIC
from freshness_tracker import metrics
from freshness_tracker.kafka.consumers import LOOKUP_GROUP_ID
from tests.faults.harness import (
    CLUSTER,
    Record,
    Rig,
    fault_config,
    fault_rig,
    groups_regex,
)
from tests.support.fake_burrow import Fault
from tests.support.stack import marker_group_beside

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]



@pytest.fixture(scope="module")
def rig(fault_stack: RealStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with fault_rig(fault_stack, tmp_path_factory.mktemp("guarantees"), "gu") as rig:
        yield rig


@pytest.fixture(scope="module")
def extra_groups(rig: Rig) -> list[str]:
    """Four more groups of the lagging one's name, each committed p0@6."""
    seeded, extra = rig.seeded, [f"{rig.seeded.lagging}-x{i}" for i in range(4)]
    for group in extra:
        rig.stack.commit(group, seeded.topic, 0, 6)
    for group in extra:
        rig.stack.wait_for_burrow_lag(group, seeded.topic, 0, 6, 4, timeout_s=60)
    return extra


def committed_offsets(stack: RealStack, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets as the broker has them, read by a consumer's
    ``committed()`` (an OffsetFetch that joins nothing): librdkafka 2.16's
    ``AdminClient.list_consumer_group_offsets`` can segfault while a coordinator loads."""
    consumer = Consumer({"bootstrap.servers": stack.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})
    try:
        found = consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)],
                                   timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


def test_never_commits_offsets_nor_creates_a_group(rig: Rig, record: Record) -> None:
    stack, s = rig.stack, rig.seeded
    groups_before = stack.group_ids()
    offsets_before = {g: committed_offsets(stack, g, s.topic) for g in s.groups}
    config = fault_config(
        burrow_url=stack.burrow_url, clusters=[cluster_entry(CLUSTER, stack.bootstrap_servers,
                                                             num_consumers=2)],
        groups_allow=groups_regex("gu"),
        extra="lookup { cacheSize = 0, commitLagWhenCaughtUp = true }")
    exporter = ExporterProcess(rig.workdir, config, name="no-commit").start()
    try:
        exporter.wait_for(lambda sc: sc.up(CLUSTER) == 1 and sc.freshness(
            CLUSTER, s.lagging, s.topic, 0) is not None, 30, "a healthy cycle")
        scrape = exporter.wait_cycles(CLUSTER, 5, 40)
        reads = scrape.get(metrics.KAFKA_READS.total, cluster=CLUSTER) or 0
        assert reads >= 10
    finally:
        code, _ = exporter.stop()
    assert code == 0
    # A commit made after the run, in the __consumer_offsets partition the lookup group would
    # use: once Burrow shows it, Burrow has read anything the exporter could have committed.
    meta = stack.admin().list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC]
    marker = marker_group_beside(LOOKUP_GROUP_ID, "gu", len(meta.partitions))
    stack.commit(marker, s.topic, 0, 5)
    stack.wait_for_burrow_lag(marker, s.topic, 0, 5, 5, timeout_s=60)
    groups_after = stack.group_ids() - {marker}
    offsets_after = {g: committed_offsets(stack, g, s.topic) for g in s.groups}
    created = groups_after - groups_before
    assert LOOKUP_GROUP_ID not in groups_after
    assert not created, f"the exporter created consumer groups: {created}"
    assert offsets_after == offsets_before
    status, _ = stack.burrow_get(f"/v3/kafka/{CLUSTER}/consumer/{LOOKUP_GROUP_ID}/lag")
    assert status == 404
    record(
        "Guarantee", "never commits, never creates a consumer group",
        f"a full run: 5+ cycles, {reads:g} record reads (cache off, commit lag of caught-up "
        "partitions on), 2 consumers",
        f"the broker's group list is identical before and after ({len(groups_before)} groups; "
        f"`{LOOKUP_GROUP_ID}` absent); the seeded groups' committed offsets are unchanged; Burrow "
        "does not know the lookup group (checked after Burrow read a later commit in the same "
        "`__consumer_offsets` partition)",
        "n/a", "")


def test_a_slow_and_a_dead_cluster_never_delay_or_blank_a_healthy_one(
        rig: Rig, extra_groups: list[str], record: Record) -> None:
    """Three clusters in one exporter: `local` (healthy), `slowc` (Burrow answers its /lag
    after 3 s, more than burrow.timeout) and `deadk` (its brokers refuse connections)."""
    stack, s = rig.stack, rig.seeded
    rig.burrow.alias("slowc", CLUSTER)
    rig.burrow.alias("deadk", CLUSTER)
    rig.burrow.add(r"^/v3/kafka/slowc/consumer/[^/]+/lag$", Fault.delay(3.0))
    dead = f"127.0.0.1:{free_port()}"
    frequency = 1.0
    config = fault_config(
        burrow_url=rig.burrow.url,
        clusters=[cluster_entry(CLUSTER, stack.bootstrap_servers),
                  cluster_entry("slowc", stack.bootstrap_servers),
                  cluster_entry("deadk", dead)],
        frequency=frequency, burrow_timeout="1s", retries=1, lookup_timeout="2s",
        groups_allow=groups_regex("gu"),
        extra="burrow.concurrency = 2")
    exporter = ExporterProcess(rig.workdir, config, name="bulkheads").start()
    try:
        exporter.wait_for(lambda sc: sc.up(CLUSTER) == 1 and sc.up("slowc") == 0
                          and sc.up("deadk") == 0, 40, "local up, slowc and deadk down")
        window = 10.0
        start = exporter.scrape()
        began = time.monotonic()
        ages: list[float] = []
        while time.monotonic() - began < window:
            scrape = exporter.scrape()
            assert scrape.up(CLUSTER) == 1
            assert scrape.freshness(CLUSTER, s.lagging, s.topic, 0) is not None, \
                "the healthy cluster's series were blanked"
            for group in extra_groups:
                assert scrape.freshness(CLUSTER, group, s.topic, 0) is not None
            ages.append(time.time() - (scrape.last_success(CLUSTER) or 0))
            time.sleep(0.2)
        end = exporter.scrape()
    finally:
        rig.burrow.clear()
        exporter.stop()
    elapsed = time.monotonic() - began
    cycles = end.cycles(CLUSTER) - start.cycles(CLUSTER)
    slow_cycles = end.cycles("slowc") - start.cycles("slowc")
    dead_cycles = end.cycles("deadk") - start.cycles("deadk")
    local_duration = end.get(DURATION, cluster=CLUSTER) or 0
    slow_duration = end.get(DURATION, cluster="slowc") or 0
    dead_duration = end.get(DURATION, cluster="deadk") or 0
    # The guarantee: local's last success never aged past its period plus slack, so the slow
    # and dead clusters' timeouts never held it back. Its cycle count and duration are the
    # machine's speed: recorded below, not asserted.
    assert cycles >= 1, f"local ran no cycle in {elapsed:.0f} s"
    assert max(ages) < frequency + 2.5, f"local's last success aged {max(ages):.1f} s"
    assert end.up("slowc") == 0 and end.up("deadk") == 0
    # slowc: no value of any group; each is listed unmeasured (measured 0), never dropped
    slow_groups = end.series(metrics.GROUP_MEASURED.name, cluster="slowc")
    assert set(slow_groups.values()) <= {0}
    assert end.consumer_series("slowc") == 2 * len(slow_groups)  # measured and status -1 only
    # deadk: Burrow answered, Kafka did not: no measured freshness is served (caught-up
    # partitions need no read and stay 0), the rest is counted as lookup_failed
    dead_fresh = end.series(FRESHNESS, cluster="deadk")
    assert all(v == 0 for v in dead_fresh.values()), dead_fresh
    failed = end.get(PARTITIONS, cluster="deadk", status="lookup_failed") or 0
    assert failed >= 3
    record(
        "Guarantee", "bulkheads: a slow and a dead cluster beside a healthy one",
        "one exporter, three clusters: `local`; `slowc` whose Burrow /lag answers take 3 s "
        "(burrow.timeout 1 s, burrow.concurrency 2, 6 groups); `deadk` whose bootstrap refuses "
        "connections",
        f"`local` stayed up with every series present at every scrape; {cycles} cycles in "
        f"{elapsed:.0f} s (frequency {frequency:g} s), cycle {local_duration:.2f} s, "
        f"`last_success` at most {max(ages):.1f} s old (median {statistics.median(ages):.1f}); "
        f"meanwhile `slowc` ran {slow_cycles} cycles of {slow_duration:.1f} s and `deadk` "
        f"{dead_cycles} of {dead_duration:.1f} s, both `cluster_up` 0: `slowc` serves no "
        f"per-consumer series, `deadk` no measured freshness ({failed:g} partitions "
        "`lookup_failed`; only Burrow's numbers and caught-up zeros)",
        "n/a", "")
