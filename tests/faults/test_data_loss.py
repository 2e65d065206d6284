"""Committed offset below the log start (retention deleted records the group never read).

tansu cannot delete records, so the broker is simulated one level down: the real lookup engine
(KafkaRecordReader + ConsumerPool with the forced safety settings) drives a fake consumer that
behaves like librdkafka with ``auto.offset.reset=error`` (an out-of-range event, then the
watermarks), inside the real Exporter (cycle, snapshot, Collector, self-metrics).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from prometheus_client import generate_latest

from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.kafka.consumers import ConsumerPool
from freshness_tracker.kafka.lookup import KafkaRecordReader
from freshness_tracker.kafka.settings import ClusterKafkaSettings
from tests.fakes import FakeBurrow, group, lag
from tests.faults.harness import Matrix, Observation, Scrape
from tests.unit.test_kafka_lookup import BASE_TS, FakeBroker, FakeConsumer, make_log

CLUSTER = "c1"
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
    """)
    consumers: list[FakeConsumer] = []

    def reader(kafka: ClusterKafkaSettings) -> KafkaRecordReader:
        def factory(config: dict[str, Any]) -> FakeConsumer:
            consumer = FakeConsumer(broker, config)
            consumers.append(consumer)
            return consumer

        pool = ConsumerPool(kafka, settings.lookup, consumer_factory=factory)
        return KafkaRecordReader(kafka, settings.lookup, pool, executor, clock=broker.clock)

    exporter = Exporter(settings, burrow=burrow, reader_factory=reader, clock=lambda: NOW)
    return exporter, consumers


def test_committed_offset_below_the_log_start_is_data_loss(
        executor: ThreadPoolExecutor, matrix: Matrix, request: pytest.FixtureRequest) -> None:
    broker = FakeBroker()
    broker.add_topic("t", [make_log(LOG_END, start=LOG_START)])  # offsets 100..109 remain
    burrow = FakeBurrow({CLUSTER: [group(CLUSTER, "g", lag(
        CLUSTER, "g", "t", 0, committed=95, current_lag=LOG_END - 95,
        commit_time=BASE_TS + 50))]})
    exporter, consumers = build(broker, burrow, executor)
    try:
        exporter.run_once()
        scrape = Scrape.parse(generate_latest(exporter.registry).decode())
        labels = {"cluster": CLUSTER, "consumer": "g", "topic": "t", "partition": 0}
        assert scrape.get("kafka_consumer_data_loss", **labels) == 1
        assert scrape.get("kafka_consumer_lost_records", **labels) == LOG_START - 95
        # a lower bound: the age of the earliest retained record, never a reset to "latest"
        freshness = scrape.get("kafka_consumer_freshness_ms", **labels)
        assert freshness == NOW - (BASE_TS + LOG_START)
        assert scrape.get("kafka_consumer_group_data_loss_partitions", cluster=CLUSTER,
                          consumer="g") == 1
        assert scrape.get("freshness_tracker_cluster_partitions", cluster=CLUSTER,
                          status="data_loss") == 1
        assert scrape.get("freshness_tracker_data_loss_events_total", cluster=CLUSTER) == 1
        assert scrape.get("freshness_tracker_cluster_up", cluster=CLUSTER) == 1
        assert scrape.get("kafka_consumer_retention_headroom_ms", **labels) in (None, 0)
        assert broker.watermark_calls >= 1
        # the user's auto.offset.reset=latest was overridden: a silent reset is impossible
        assert consumers and all(c.config["auto.offset.reset"] == "error" for c in consumers)

        # the group catches up past the log start: the data-loss flag clears next cycle
        burrow.groups[CLUSTER] = [group(CLUSTER, "g", lag(
            CLUSTER, "g", "t", 0, committed=105, current_lag=LOG_END - 105,
            commit_time=BASE_TS + 60))]
        exporter.run_once()
        after = Scrape.parse(generate_latest(exporter.registry).decode())
        assert after.get("kafka_consumer_data_loss", **labels) == 0
        assert after.get("kafka_consumer_lost_records", **labels) == 0
        assert after.get("kafka_consumer_freshness_ms", **labels) == NOW - (BASE_TS + 105)
        # clamped at 0: Burrow keeps the earlier commit time
        assert after.get("kafka_consumer_commit_lag_ms", **labels) == 0
        assert after.get("freshness_tracker_data_loss_events_total", cluster=CLUSTER) == 1
    finally:
        exporter.close()
    matrix.record(Observation(
        "Kafka", "committed offset below the log start (data loss; simulated)",
        "log starts at 100, group committed 95, user set `auto.offset.reset=latest`; real "
        "lookup engine + cycle + Collector over a fake librdkafka consumer (tansu cannot delete "
        "records)",
        f"`data_loss` 1, `lost_records` {LOG_START - 95}, freshness from the earliest retained "
        "record (a lower bound, never a silent reset: `auto.offset.reset` is forced to "
        "`error`), `group_data_loss_partitions` 1, `data_loss_events_total` 1, `cluster_up` 1",
        "after the group commits past the log start: `data_loss` 0 and exact freshness",
        "next cycle", request.node.nodeid))
