"""Committed offset below the log start (retention deleted records the group never read).

On real Kafka first: ``delete_records`` moves the log start past a real group's commit, and the
exporter process, reading the real Burrow 1.2.1, must report the loss exactly (the matrix row).
Then the same one level down, in process: the real lookup engine (KafkaRecordReader +
ConsumerPool with the forced safety settings) over a fake consumer that behaves like librdkafka
with ``auto.offset.reset=error``, to pin the consumer settings and the event counter.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from devstack import RealStack
from devstack.exporter import ExporterProcess
from devstack.exporter_config import cluster_entry
from devstack.scrape import Scrape
from freshness_tracker import metrics
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.cycle import now_ms
from freshness_tracker.kafka.lookup import KafkaRecordReader
from freshness_tracker.kafka.settings import ClusterKafkaSettings
from freshness_tracker.metrics import ALL_PARTITION_METRICS
from tests.faults.harness import Record, describe_recovery, fault_config, groups_regex
from tests.support.fake_kafka import BASE_TS, FakeBroker, FakeConsumer, fake_reader, make_log
from tests.support.fakes import FakeBurrow, group, lag

CLUSTER = "c1"
CLUSTER_REAL = "local"
NOW = BASE_TS + 3_600_000
LOG_START, LOG_END = 100, 110


@pytest.fixture
def executor() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield pool


def build(broker: FakeBroker, burrow: FakeBurrow,
          executor: ThreadPoolExecutor) -> tuple[Exporter, list[FakeConsumer]]:
    settings = load_settings(text=f"""
        burrow.url = "http://fake:1"
        clusters = [{{ name = {CLUSTER}, kafka {{ "bootstrap.servers" = "b:9092",
                     "auto.offset.reset" = latest }} }}]
        lookup.timeout = 5s
        partitionMetrics = {json.dumps(list(ALL_PARTITION_METRICS))}
    """)

    def reader(kafka: ClusterKafkaSettings) -> KafkaRecordReader:
        return fake_reader(broker, executor, kafka, settings.lookup)[0]

    exporter = Exporter(settings, burrow=burrow, reader_factory=reader, clock=lambda: NOW)
    return exporter, broker.consumers


def test_data_loss_one_level_down_forces_offset_reset_error(
        executor: ThreadPoolExecutor) -> None:
    broker = FakeBroker()
    broker.add_topic("t", [make_log(LOG_END, start=LOG_START)])  # offsets 100..109 remain
    burrow = FakeBurrow({CLUSTER: [group(CLUSTER, "g", lag(
        CLUSTER, "g", "t", 0, committed=95, current_lag=LOG_END - 95,
        commit_time=BASE_TS + 50))]})
    exporter, consumers = build(broker, burrow, executor)
    try:
        exporter.run_once()
        scrape = Scrape.of(exporter.exposition)
        labels = {"cluster": CLUSTER, "consumer": "g", "topic": "t", "partition": 0}
        assert scrape.get(metrics.DATA_LOSS.name, **labels) == 1
        assert scrape.get(metrics.LOST.name, **labels) == LOG_START - 95
        # a lower bound: the age of the earliest retained record, never a reset to "latest"
        freshness = scrape.get(metrics.FRESHNESS.name, **labels)
        assert freshness == NOW - (BASE_TS + LOG_START)
        assert scrape.get(metrics.GROUP_DATA_LOSS_PARTITIONS.name, cluster=CLUSTER,
                          consumer="g") == 1
        assert scrape.get(metrics.CLUSTER_PARTITIONS.name, cluster=CLUSTER,
                          status="data_loss") == 1
        assert scrape.get(metrics.DATA_LOSS_EVENTS.total, cluster=CLUSTER) == 1
        assert scrape.get(metrics.CLUSTER_UP.name, cluster=CLUSTER) == 1
        assert scrape.get(metrics.HEADROOM.name, **labels) in (None, 0)
        assert broker.watermark_calls >= 1
        # the user's auto.offset.reset=latest was overridden: a silent reset is impossible
        assert consumers and all(c.config["auto.offset.reset"] == "error" for c in consumers)

        # the group catches up past the log start: the data-loss flag clears next cycle
        burrow.groups[CLUSTER] = [group(CLUSTER, "g", lag(
            CLUSTER, "g", "t", 0, committed=105, current_lag=LOG_END - 105,
            commit_time=BASE_TS + 60))]
        exporter.run_once()
        after = Scrape.of(exporter.exposition)
        assert after.get(metrics.DATA_LOSS.name, **labels) == 0
        assert after.get(metrics.LOST.name, **labels) == 0
        assert after.get(metrics.FRESHNESS.name, **labels) == NOW - (BASE_TS + 105)
        # clamped at 0: Burrow keeps the earlier commit time
        assert after.get(metrics.COMMIT_LAG.name, **labels) == 0
        assert after.get(metrics.DATA_LOSS_EVENTS.total, cluster=CLUSTER) == 1
    finally:
        exporter.close()


RETENTION_MS = 3_600_000


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_records_deleted_past_a_real_commit_are_data_loss(
        fault_stack: RealStack, tmp_path: Path, record: Record) -> None:
    """Real data loss: records 0-5 deleted under a group that committed 2; the user set
    ``auto.offset.reset=latest``, which must not turn the loss into a silent "caught up"."""
    stack, suffix = fault_stack, uuid.uuid4().hex[:8]
    topic, grp = f"dl-t-{suffix}", f"dl-g-{suffix}"
    stack.create_topic(topic, partitions=1, retention_ms=RETENTION_MS)
    stamps = [now_ms() - 100_000 + 10_000 * i for i in range(10)]
    assert stack.produce(topic, 0, stamps) == list(range(10))
    stack.commit(grp, topic, 0, 2)
    stack.wait_for_burrow_lag(grp, topic, 0, 2, 8, timeout_s=60)
    assert stack.delete_records(topic, 0, before_offset=6) == 6
    config = fault_config(
        burrow_url=stack.burrow_url, groups_allow=groups_regex("dl"),
        clusters=[cluster_entry(CLUSTER_REAL, stack.bootstrap_servers,
                                **{"auto.offset.reset": "latest"})])
    labels = {"cluster": CLUSTER_REAL, "consumer": grp, "topic": topic, "partition": 0}
    with ExporterProcess(tmp_path, config, name="data-loss") as exporter:
        lost = exporter.wait_for(lambda sc: sc.get(metrics.DATA_LOSS.name, **labels) == 1,
                                 40, "data loss reported")
        assert lost.up(CLUSTER_REAL) == 1
        assert lost.get(metrics.LOST.name, **labels) == 4
        bound = lost.get(metrics.FRESHNESS.name, **labels)
        # a lower bound: the age of the earliest retained record (offset 6), never a reset
        assert bound is not None and abs(bound - (now_ms() - stamps[6])) < 4_000
        assert lost.get(metrics.HEADROOM.name, **labels) == 0
        assert lost.get(metrics.GROUP_DATA_LOSS_PARTITIONS.name, cluster=CLUSTER_REAL,
                        consumer=grp) == 1
        assert lost.get(metrics.CLUSTER_PARTITIONS.name, cluster=CLUSTER_REAL,
                        status="data_loss") == 1
        events = lost.get(metrics.DATA_LOSS_EVENTS.total, cluster=CLUSTER_REAL)
        assert events is not None and events >= 1

        # the group catches up past the log start: exact values again
        window = stack.commit(grp, topic, 0, 8)
        committed_at = time.monotonic()
        stack.wait_for_burrow_lag(grp, topic, 0, 8, 2, timeout_s=60)
        c0 = exporter.scrape().cycles(CLUSTER_REAL)
        ok = exporter.wait_for(lambda sc: sc.get(metrics.DATA_LOSS.name, **labels) == 0
                               and sc.get(metrics.COMMITTED.name, **labels) == 8,
                               40, "the data loss to clear")
        recovery_s, cycles = time.monotonic() - committed_at, ok.cycles(CLUSTER_REAL) - c0
    assert ok.get(metrics.LOST.name, **labels) == 0
    fresh = ok.get(metrics.FRESHNESS.name, **labels)
    assert fresh is not None and abs(fresh - (now_ms() - stamps[8])) < 4_000
    headroom = ok.get(metrics.HEADROOM.name, **labels)
    assert headroom is not None and abs(headroom - (RETENTION_MS - fresh)) < 1
    commit_lag = ok.get(metrics.COMMIT_LAG.name, **labels)  # the broker's commit time
    assert commit_lag is not None
    assert window.before_ms - stamps[7] <= commit_lag <= window.after_ms - stamps[7]
    record(
        "Kafka", "committed offset below the log start (data loss)",
        "real records deleted (`AdminClient.delete_records`: log start 0 → 6) under a group "
        "that committed 2; the user set `auto.offset.reset=latest`; the real Burrow 1.2.1",
        f"`data_loss` 1, `lost_records` 4, freshness {bound / 1000:.0f} s from the earliest "
        "retained record (a lower bound, never a silent reset: `auto.offset.reset` is forced to "
        f"`error`), `retention_headroom_ms` 0, `group_data_loss_partitions` 1, "
        f"`data_loss_events_total` {events:g}, `cluster_up` 1",
        "after the group commits 8: `data_loss` 0, exact freshness, retention headroom from the "
        f"topic's `retention.ms` ({headroom / 1000:.0f} s), commit lag within the commit's window",
        describe_recovery(cycles, recovery_s))
