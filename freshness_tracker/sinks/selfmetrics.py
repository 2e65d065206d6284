"""The exporter's own counters: instrumented directly (allowed for an exporter's self-metrics).

Gauges about each cluster's last cycle live in the snapshot Collector; what accumulates across
cycles lives here. Every counter is pre-created per configured cluster, so known series start
at 0 instead of appearing on the first failure. Per-cluster series carry the cluster's static
labels as the snapshot's families do (`SeriesSet.static_labels`: the union, "" where a cluster
lacks one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from freshness_tracker import __version__
from freshness_tracker.domain.model import ClusterSnapshot
from freshness_tracker.sinks.prometheus import SeriesSet

__all__ = ["KafkaClientCollector", "SelfMetrics"]

#: (cluster, fetch requests so far, live consumers) per consumer pool.
PoolStats = Callable[[], list[tuple[str, int, int]]]


class KafkaClientCollector(Collector):
    """Kafka client figures read from the consumer pools at scrape time (cheap counters)."""

    def __init__(self, pool_stats: PoolStats, series: SeriesSet | None = None) -> None:
        self._pool_stats = pool_stats
        self._series = series or SeriesSet()

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        fetches = CounterMetricFamily(
            "freshness_tracker_kafka_fetch_requests",
            "Fetch requests sent by the lookup consumers (librdkafka statistics, updated every "
            "10 s while consumers poll); divide its rate by kafka_reads to see batching.",
            labels=["cluster", *self._series.static_labels])
        consumers = GaugeMetricFamily(
            "freshness_tracker_kafka_consumers",
            "Lookup consumers currently open per cluster (at most numConsumers).",
            labels=["cluster", *self._series.static_labels])
        for cluster, fetch_requests, live in self._pool_stats():
            labels = [cluster, *self._series.static_values(cluster)]
            fetches.add_metric(labels, float(fetch_requests))
            consumers.add_metric(labels, float(live))
        yield fetches
        yield consumers


class SelfMetrics:
    def __init__(self, registry: CollectorRegistry, clusters: Sequence[str],
                 series: SeriesSet | None = None) -> None:
        self._series = series or SeriesSet()
        labelnames = ["cluster", *self._series.static_labels]

        def counter(name: str, doc: str) -> Counter:
            return Counter(f"freshness_tracker_{name}", doc, labelnames, registry=registry)

        self.cycles = counter("cycles", "Cycles run per cluster.")
        self.cycle_failures = counter(
            "cycle_failures", "Cycles after which the cluster was reported down.")
        self.burrow_errors = counter(
            "burrow_errors", "Burrow requests that failed after retries (cluster list, consumer "
            "list or a group's lag).")
        self.invalid_inputs = counter(
            "invalid_inputs", "Inputs not used because they are impossible: consumer-list "
            "entries and topics that are no exportable name, a partition listed twice, a "
            "negative lag, timestamps before 2000 or more than a day ahead. Each cycle logs the "
            "first ones.")
        self.kafka_reads = counter("kafka_reads", "Record reads sent to Kafka.")
        self.kafka_read_failures = counter(
            "kafka_read_failures", "Record reads that failed (no value was exported for them).")
        self.cache_hits = counter(
            "cache_hits", "Record timestamps answered from the cache instead of Kafka (or, "
            "for the record before a commit, that none exists there: a transaction marker).")
        self.data_loss_events = counter(
            "data_loss_events", "Partition measurements that found the committed offset below "
            "the log start.")
        self.offset_mismatches = counter(
            "offset_mismatches", "Reads where no record existed at the requested offset and the "
            "next one was used (compaction, transaction markers).")
        self.read_duration = Histogram(
            "freshness_tracker_kafka_read_duration_seconds",
            "Time a cycle spent reading Kafka, per cluster.", labelnames, registry=registry,
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
        info = Gauge("freshness_tracker_build_info", "Build information; always 1.",
                     ["version"], registry=registry)
        info.labels(__version__).set(1)
        for name in clusters:
            labels = self._labels(name)
            for c in (self.cycles, self.cycle_failures, self.burrow_errors, self.invalid_inputs,
                      self.kafka_reads, self.kafka_read_failures, self.cache_hits,
                      self.data_loss_events, self.offset_mismatches):
                c.labels(*labels)
            self.read_duration.labels(*labels)

    def _labels(self, cluster: str) -> tuple[str, ...]:
        return (cluster, *self._series.static_values(cluster))

    def observe(self, snapshot: ClusterSnapshot) -> None:
        h = snapshot.health
        c = self._labels(h.cluster)
        self.cycles.labels(*c).inc()
        if not h.up:
            self.cycle_failures.labels(*c).inc()
        self.burrow_errors.labels(*c).inc(h.burrow_errors)
        self.invalid_inputs.labels(*c).inc(h.invalid_inputs)
        self.kafka_reads.labels(*c).inc(h.kafka_reads)
        self.kafka_read_failures.labels(*c).inc(h.kafka_read_failures)
        self.cache_hits.labels(*c).inc(h.cache_hits)
        self.data_loss_events.labels(*c).inc(h.data_loss_events)
        self.offset_mismatches.labels(*c).inc(h.offset_mismatches)
        if h.kafka_reads:
            self.read_duration.labels(*c).observe(h.read_duration_ms / 1000)
