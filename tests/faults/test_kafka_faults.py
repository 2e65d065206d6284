"""Kafka (real Apache Kafka 3.9.1, KRaft) misbehaving under a running exporter process: the
broker cut off mid-cycle and restored, the broker's JVM stopped and restarted, a committed offset
beyond the log end, records of several MiB, and a topic deleted while a group still has offsets.

The exporter here runs with ``lookup.cacheSize = 0`` so that every cycle really reads Kafka
(with the cache, unchanged offsets cost no read and a broker outage would go unnoticed by them).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from devstack import RealStack
from devstack.scrape import FRESHNESS, GROUP_FRESHNESS, PARTITIONS, READ_FAILURES, Scrape
from freshness_tracker import metrics
from freshness_tracker.cycle import now_ms
from tests.faults.harness import (
    CLUSTER,
    Record,
    Rig,
    fault_rig,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

FREQUENCY = 1.0
LOOKUP_TIMEOUT = 2.0
RECOVERY_BUDGET_S = LOOKUP_TIMEOUT * 2 + FREQUENCY + 1.0 + 4.0
#: After a real broker restart: librdkafka's reconnect backoff (up to 10 s) and the broker's
#: first metadata answers come on top of the cycle; slack for a loaded 2-core machine.
RESTART_RECOVERY_BUDGET_S = 45.0


@pytest.fixture(scope="module")
def rig(fault_stack: RealStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with fault_rig(fault_stack, tmp_path_factory.mktemp("kafka-faults"), "kf", exporter=True,
                   frequency=FREQUENCY, lookup_timeout=f"{LOOKUP_TIMEOUT:g}s",
                   extra="lookup.cacheSize = 0") as rig:
        yield rig


def partitions_by_status(scrape: Scrape) -> dict[str, int]:
    return {dict(k)["status"]: int(v) for k, v in scrape.series(PARTITIONS, cluster=CLUSTER).items()
            if v}


def test_broker_cut_mid_cycle_and_restored(rig: Rig, record: Record) -> None:
    """A cycle is parked between its Burrow phase and its Kafka reads; the broker is cut off
    (its client listener closed, every connection dropped, reconnects refused) while Burrow keeps
    reading it through the internal listener; the cycle then reads a dead cluster."""
    s, e = rig.seeded, rig.exporter
    baseline = rig.healthy()
    rig.burrow.park_lag()
    rig.stack.cut_broker()
    rig.burrow.clear()
    began = time.monotonic()
    try:
        down = e.wait_for(lambda sc: sc.up(CLUSTER) == 0, LOOKUP_TIMEOUT * 3 + 10,
                          "the cluster to be reported down")
        detect_s = time.monotonic() - began
        frozen = down.last_success(CLUSTER)
        assert down.freshness(CLUSTER, s.lagging, s.topic, 0) is None
        assert down.freshness(CLUSTER, s.other, s.topic, 0) is None
        # the caught-up partition needs no read: Burrow says nothing is uncommitted
        assert down.freshness(CLUSTER, s.lagging, s.topic, 1) == 0
        statuses = partitions_by_status(down)
        assert statuses.get("lookup_failed") == 2, statuses
        later = e.wait_cycles(CLUSTER, 2, 2 * (LOOKUP_TIMEOUT * 2 + FREQUENCY) + 15)
        assert later.up(CLUSTER) == 0 and later.last_success(CLUSTER) == frozen
        assert later.freshness(CLUSTER, s.lagging, s.topic, 0) is None
        failures = later.increase(READ_FAILURES, baseline, cluster=CLUSTER)
        assert failures >= 2
        unmeasured = later.get(metrics.GROUP_UNMEASURED.name, cluster=CLUSTER,
                               consumer=s.lagging)
        assert unmeasured == 1
        duration = later.get(metrics.CLUSTER_CYCLE_DURATION.name,
                             cluster=CLUSTER) or 0
    finally:
        rig.stack.restore_broker()
    record(
        "Kafka", "broker cut mid-cycle, then restored",
        "a cycle parked after its Burrow calls; the broker's client listener closed with every "
        "connection dropped (Burrow still reads it); the cycle then reads",
        f"`cluster_up` 0 after {detect_s:.1f} s; freshness of both lagging partitions removed "
        f"(`partitions{{status=\"lookup_failed\"}}` 2, `group_unmeasured_partitions` 1); the "
        f"caught-up partition keeps freshness 0 (Burrow: nothing uncommitted, no read needed); "
        f"Burrow's offsets and lags stay (they are current Burrow data); `last_success` frozen; "
        f"`kafka_read_failures_total` +{failures:g}; failing cycles bounded at {duration:.1f} s",
        "exact freshness again", rig.recovery(frozen, RECOVERY_BUDGET_S))


def test_committed_offset_beyond_the_log_end(rig: Rig, record: Record) -> None:
    topic, group = f"kf-beyond-{int(time.time() * 1000)}", f"kf-beyond-g-{int(time.time())}"
    rig.stack.create_topic(topic, partitions=1)
    rig.stack.produce(topic, 0, [now_ms() - 5_000] * 3)
    rig.stack.commit(group, topic, 0, 10)  # LEO is 3

    def seen(sc: Scrape) -> bool:
        return sc.get(metrics.COMMITTED.name, cluster=CLUSTER, consumer=group,
                      topic=topic, partition=0) == 10

    scrape = rig.exporter.wait_for(seen, 30, "the group committed beyond the log end")
    labels = {"cluster": CLUSTER, "consumer": group, "topic": topic, "partition": 0}
    lag = scrape.get(metrics.OFFSET_LAG.name, **labels)
    fresh = scrape.get(FRESHNESS, **labels)
    _, body = rig.stack.burrow_get(f"/v3/kafka/{CLUSTER}/consumer/{group}/lag")
    burrow_lag = body["status"]["partitions"][0]["current_lag"]
    assert scrape.up(CLUSTER) == 1
    assert lag == 0 and burrow_lag == 0  # Burrow 1.2.1 clamps a negative lag to 0
    assert fresh == 0  # nothing exists at or after offset 10: nothing is waiting
    record(
        "Kafka", "committed offset beyond the log end",
        "a group commits offset 10 on a partition whose log ends at 3",
        f"Burrow 1.2.1 reports `current_lag` {burrow_lag}; the exporter serves "
        f"`committed_offset` 10, `offset_lag` {lag:g}, freshness {fresh:g} (no record waits: "
        "none exists at or after 10), no read and no error; `cluster_up` 1",
        "n/a (a state, not an outage)", "")


def test_records_of_several_mib(rig: Rig, record: Record) -> None:
    stack = rig.stack
    topic, group = f"kf-big-{int(time.time() * 1000)}", f"kf-big-g-{int(time.time())}"
    # Kafka refuses records over 1 MiB by default (MSG_SIZE_TOO_LARGE): the topic allows 16
    stack.create_topic(topic, partitions=1, config={"max.message.bytes": str(16 * 1024 * 1024)})
    size = 3 * 1024 * 1024
    producer = Producer({"bootstrap.servers": stack.bootstrap_servers,
                         "message.max.bytes": 16 * 1024 * 1024, "batch.num.messages": 1,
                         "linger.ms": 0})
    base = now_ms() - 50_000
    stamps = [base + 10_000 * i for i in range(4)]
    errors: list[object] = []
    for ts in stamps:
        producer.produce(topic, b"m" * size, partition=0, timestamp=ts,
                         on_delivery=lambda err, _msg: err is None or errors.append(err))
    assert producer.flush(60) == 0
    assert not errors, errors
    stack.commit(group, topic, 0, 1)
    stack.wait_for_burrow_lag(group, topic, 0, 1, 3, timeout_s=60)
    labels = {"cluster": CLUSTER, "consumer": group, "topic": topic, "partition": 0}
    first = rig.exporter.wait_for(lambda sc: sc.get(FRESHNESS, **labels) is not None, 40,
                                  "freshness of the MiB-record partition")
    later = rig.exporter.wait_cycles(CLUSTER, 3, 40)  # every cycle re-reads (cache off)
    value = later.get(FRESHNESS, **labels)
    assert value is not None and abs(value - (now_ms() - stamps[1])) < 4_000
    commit_lag = later.get(metrics.COMMIT_LAG.name, **labels)
    assert commit_lag is not None
    rss = later.get("process_resident_memory_bytes") or 0
    assert rss < 300 * 1024 * 1024, f"RSS {rss / 2**20:.0f} MiB reading 3 MiB records"
    duration = later.get(metrics.CLUSTER_CYCLE_DURATION.name, cluster=CLUSTER)
    assert first.up(CLUSTER) == 1 and later.up(CLUSTER) == 1
    record(
        "Kafka", "records of several MiB",
        "4 records of 3 MiB each; the group committed offset 1 (records 1 and 0 read every "
        "cycle with the cache off)",
        f"exact freshness and commit lag; exporter RSS {rss / 2**20:.0f} MiB "
        f"(`maxPartitionFetchBytes` 64 KiB: the broker still returns one whole record); "
        f"cycle {duration:.2f} s",
        "n/a", "")


def test_topic_deleted_while_a_group_has_offsets(rig: Rig, record: Record) -> None:
    stack, e = rig.stack, rig.exporter
    suffix = int(time.time() * 1000)
    topic, group = f"kf-del-{suffix}", f"kf-del-g-{suffix}"
    stack.create_topic(topic, partitions=1)
    stack.produce(topic, 0, [now_ms() - 30_000 + 1_000 * i for i in range(5)])
    stack.commit(group, topic, 0, 2)
    stack.wait_for_burrow_lag(group, topic, 0, 2, 3, timeout_s=60)
    labels = {"cluster": CLUSTER, "consumer": group, "topic": topic, "partition": 0}
    e.wait_for(lambda sc: sc.get(FRESHNESS, **labels) is not None, 30, "the group measured")
    lag_path = f"/v3/kafka/{CLUSTER}/consumer/{group}/lag"
    _, before = stack.burrow_get(lag_path)
    assert before["status"]["partitions"], before

    futures = stack.admin().delete_topics([topic], operation_timeout=10)
    for future in futures.values():
        future.result(15)

    # (a) a Burrow that still lists the deleted topic's offsets (the answer from before)
    rig.burrow.serve_static(lag_path, before)
    e.wait_for(lambda sc: sc.get(metrics.COMMITTED.name, **labels) == 2
               and sc.get(FRESHNESS, **labels) is None, 30,
               "the deleted topic's partition to be unmeasured")
    stale = e.wait_cycles(CLUSTER, 2, 20)
    assert stale.get(FRESHNESS, **labels) is None
    assert stale.get(metrics.GROUP_UNMEASURED.name, cluster=CLUSTER,
                     consumer=group) == 1
    assert stale.up(CLUSTER) == 1  # the other groups' reads succeed
    topics = set(stack.admin().list_topics(timeout=10).topics)
    assert topic not in topics, "the exporter re-created the deleted topic"

    # (b) the real Burrow 1.2.1, which drops the deleted topic from the group
    rig.burrow.remove_static(lag_path)
    gone = e.wait_for(lambda sc: sc.get(metrics.COMMITTED.name, **labels) is None,
                      FREQUENCY * 3 + 10, "the deleted topic's series to vanish")
    assert gone.get(FRESHNESS, **labels) is None
    _, after = stack.burrow_get(lag_path)
    left = len(after["status"]["partitions"])
    record(
        "Kafka", "topic deleted while a group has offsets",
        "the topic is deleted; (a) Burrow still answers the old offsets, (b) the real Burrow",
        "(a) the partition is `lookup_failed` (unknown topic): no freshness, "
        "`group_unmeasured_partitions` 1, Burrow's offset still shown, `cluster_up` 1 (other "
        "reads succeed); the topic is not re-created by the exporter's reads. "
        f"(b) Burrow 1.2.1 drops the topic from the group ({left} "
        "partitions left): every series of that partition disappears next cycle",
        "n/a", "")


def test_broker_stopped_and_restarted(rig: Rig, record: Record) -> None:
    """The broker's JVM is really shut down (SIGTERM: Burrow loses Kafka too, the group
    coordinator goes away) and restarted on its data; the exporter must serve no stale value
    while it is gone and measure again without a restart of its own. Last in the module: the
    other tests need not run on a freshly restarted broker."""
    s, e = rig.seeded, rig.exporter
    baseline = rig.healthy()
    began = time.monotonic()
    rig.stack.stop_broker()
    stopped_s = time.monotonic() - began
    try:
        down = e.wait_for(lambda sc: sc.up(CLUSTER) == 0, LOOKUP_TIMEOUT * 3 + 15,
                          "the cluster to be reported down")
        detect_s = time.monotonic() - began
        frozen = down.last_success(CLUSTER)
        assert frozen is not None and frozen >= (baseline.last_success(CLUSTER) or 0)
        later = e.wait_cycles(CLUSTER, 2, 2 * (LOOKUP_TIMEOUT * 2 + FREQUENCY) + 15)
        for sc in (down, later):
            assert sc.freshness(CLUSTER, s.lagging, s.topic, 0) is None
            assert sc.freshness(CLUSTER, s.other, s.topic, 0) is None
            assert sc.get(GROUP_FRESHNESS, cluster=CLUSTER, consumer=s.lagging) is None
        assert later.up(CLUSTER) == 0 and later.last_success(CLUSTER) == frozen
        failures = later.increase(READ_FAILURES, baseline, cluster=CLUSTER)
        assert failures >= 2
    finally:
        restart_began = time.monotonic()
        rig.stack.start_broker()
    restart_s = time.monotonic() - restart_began
    recovery = rig.recovery(frozen, RESTART_RECOVERY_BUDGET_S, bounded=False)
    assert e.proc is not None and e.proc.poll() is None
    record(
        "Kafka", "broker process stopped, then restarted",
        f"the only broker's JVM shut down by SIGTERM ({stopped_s:.1f} s; Burrow loses Kafka "
        f"too), restarted on its data ({restart_s:.1f} s until it answers metadata again)",
        f"`cluster_up` 0 after {detect_s:.1f} s; no freshness for either lagging partition and "
        f"no group max freshness; `last_success` frozen; `kafka_read_failures_total` "
        f"+{failures:g}",
        "exact freshness again, same exporter process (its consumers reconnect)",
        recovery)
