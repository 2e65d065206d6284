"""The metric catalogue (`freshness_tracker/metrics.py`): its names are public API, pinned here;
no name is used twice; every self-metric of the catalogue is served under its catalogued name,
and no `_created` series doubles the counters."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from devstack.oracle import FreshnessCollector
from freshness_tracker import metrics
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.metrics import (
    BUILD_INFO,
    CYCLE_COUNTERS,
    CYCLES,
    FRESHNESS,
    KAFKA_CONSUMERS,
    KAFKA_FETCH_REQUESTS,
    KAFKA_READS,
    LOG_END,
    READ_DURATION,
)
from freshness_tracker.publish import SnapshotHolder
from freshness_tracker.sinks.prometheus import SeriesSet
from tests.support.fakes import FakeBurrow, FakeReader, group, lag

SETTINGS = ('burrow.url = "http://burrow:8000"\nclusters = [{ name = c, kafka { '
            '"bootstrap.servers" = "k:1" } }]\n')


def test_no_name_of_the_catalogue_is_served_twice() -> None:
    """Every snapshot family (all of them, opt-in ones too) registers next to the exporter's
    own metrics: prometheus_client refuses a name registered twice, as the clash shows."""
    exporter = Exporter(load_settings(text=SETTINGS))
    try:
        registry = CollectorRegistry()
        registry.register(FreshnessCollector(SnapshotHolder(), SeriesSet.everything()))
        assert exporter.exposition.per_snapshot is not None
        registry.register(exporter.exposition.per_snapshot)
        registry.register(exporter.exposition.live)
        with pytest.raises(ValueError, match=FRESHNESS.name):
            registry.register(FreshnessCollector(SnapshotHolder()))
    finally:
        exporter.close()


def test_the_catalogue_is_what_is_served_without_created_series() -> None:
    burrow = FakeBurrow({"c": [group("c", "g", lag(partition=0, committed=4, current_lag=1,
                                                   commit_time=95_000))]})
    reader = FakeReader({("t", 0, 3): 80_000, ("t", 0, 4): 90_000})
    exporter = Exporter(load_settings(text=SETTINGS), burrow=burrow,
                        reader_factory=lambda _k: reader, clock=lambda: 100_000)
    try:
        exporter.run_once()
        text = exporter.exposition.answer().body.decode()
    finally:
        exporter.close()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {s.name: s for f in families.values() for s in f.samples}
    assert not [name for name in samples if name.endswith("_created")]
    for counter in CYCLE_COUNTERS:
        assert families[counter.name].documentation == counter.doc
        assert samples[f"{counter.name}_total"].labels == {"cluster": "c"}
    assert samples[CYCLES.total].value == 1
    assert samples[KAFKA_READS.total].value == 2  # C and C - 1
    for metric in (READ_DURATION, BUILD_INFO):
        assert families[metric.name].documentation == metric.doc
    assert samples[FRESHNESS.name].value == 10_000  # now - the record at C (offset 4)
    # read from the consumer pools: absent with a fake reader, but their names are catalogued
    assert {KAFKA_FETCH_REQUESTS.name, KAFKA_CONSUMERS.name}.isdisjoint(samples)


def test_an_opt_in_partition_family_is_one_catalogue_row() -> None:
    """Adding the log end offset family took its catalogue row (its value, the log end
    Burrow saw, was already in the domain result) and this test: config, renderers and
    reference.conf needed no change."""
    settings = load_settings(text=SETTINGS + f"partitionMetrics = [{LOG_END.name}]")
    burrow = FakeBurrow({"c": [group("c", "g", lag(partition=0, committed=4, current_lag=3,
                                                   commit_time=95_000),
                                     lag(partition=1))]})
    reader = FakeReader({("t", 0, 3): 80_000, ("t", 0, 4): 90_000})
    exporter = Exporter(settings, burrow=burrow, reader_factory=lambda _k: reader,
                        clock=lambda: 100_000)
    try:
        exporter.run_once()
        text = exporter.exposition.answer().body.decode()
    finally:
        exporter.close()
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == LOG_END.name]
    by_partition = {s.labels["partition"]: s.value for s in samples}
    assert by_partition == {"0": 7, "1": 15}  # committed + lag, read or not
    assert FRESHNESS.name not in text  # only what was asked for, per partition


#: Every family the tracker serves (a cycle counter by its `_total` sample), in catalogue order,
#: typed out on purpose: dashboards, alerts and users' queries use these names, so renaming one
#: is a breaking change this test makes deliberate. Everywhere else, names come from the
#: catalogue.
PUBLIC_NAMES = (
    "kafka_consumer_freshness_ms", "kafka_consumer_commit_lag_ms", "kafka_consumer_offset_lag",
    "kafka_consumer_committed_offset", "kafka_consumer_log_end_offset", "kafka_consumer_data_loss",
    "kafka_consumer_lost_records", "kafka_consumer_retention_headroom_ms",
    "kafka_consumer_partition_burrow_status",
    "kafka_consumer_data_current_as_of_timestamp_seconds",
    "kafka_consumer_catch_up_estimate_seconds",
    "kafka_consumer_oldest_uncommitted_timestamp_seconds", "kafka_consumer_partition_owner_info",
    "kafka_consumer_topic_max_freshness_ms", "kafka_consumer_topic_offset_lag",
    "kafka_consumer_topic_oldest_uncommitted_timestamp_seconds",
    "kafka_consumer_group_max_freshness_ms", "kafka_consumer_group_offset_lag",
    "kafka_consumer_group_burrow_status", "kafka_consumer_group_unmeasured_partitions",
    "kafka_consumer_group_data_loss_partitions",
    "kafka_consumer_group_data_current_as_of_timestamp_seconds",
    "kafka_consumer_group_catch_up_estimate_seconds", "kafka_consumer_group_catching_up",
    "kafka_consumer_group_measured", "kafka_consumer_group_oldest_uncommitted_timestamp_seconds",
    "freshness_tracker_cluster_up", "freshness_tracker_cluster_last_attempt_timestamp_seconds",
    "freshness_tracker_cluster_last_success_timestamp_seconds",
    "freshness_tracker_cluster_cycle_duration_seconds", "freshness_tracker_cluster_groups",
    "freshness_tracker_cluster_filtered_groups", "freshness_tracker_cluster_partitions",
    "freshness_tracker_cycles_total", "freshness_tracker_cycle_failures_total",
    "freshness_tracker_burrow_errors_total", "freshness_tracker_invalid_inputs_total",
    "freshness_tracker_kafka_reads_total", "freshness_tracker_kafka_read_failures_total",
    "freshness_tracker_cache_hits_total", "freshness_tracker_data_loss_events_total",
    "freshness_tracker_offset_mismatches_total",
    "freshness_tracker_kafka_read_duration_seconds", "freshness_tracker_build_info",
    "freshness_tracker_kafka_fetch_requests", "freshness_tracker_kafka_consumers",
)


def test_the_public_names_are_the_catalogues() -> None:
    families = (*metrics.PARTITION_FAMILIES, *metrics.TOPIC_FAMILIES, *metrics.GROUP_FAMILIES,
                *metrics.HEALTH_FAMILIES)
    catalogued = (*(f.name for f in families), *(c.total for c in metrics.CYCLE_COUNTERS),
                  *(m.name for m in (metrics.READ_DURATION, metrics.BUILD_INFO,
                                     metrics.KAFKA_FETCH_REQUESTS, metrics.KAFKA_CONSUMERS)))
    assert catalogued == PUBLIC_NAMES
