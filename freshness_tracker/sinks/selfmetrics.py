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
from freshness_tracker.metrics import (
    BUILD_INFO,
    CYCLE_COUNTERS,
    KAFKA_CONSUMERS,
    KAFKA_FETCH_REQUESTS,
    READ_DURATION,
)
from freshness_tracker.sinks.prometheus import SeriesSet

__all__ = ["KafkaClientCollector", "SelfMetrics"]

#: (cluster, fetch requests so far, live consumers) per consumer pool.
PoolStats = Callable[[], list[tuple[str, int, int]]]


class KafkaClientCollector(Collector):
    """Kafka client figures read from the consumer pools at scrape time (cheap counters)."""

    def __init__(self, pool_stats: PoolStats, series: SeriesSet | None = None) -> None:
        self._pool_stats = pool_stats
        self._series = series or SeriesSet()

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def _families(self) -> tuple[CounterMetricFamily, GaugeMetricFamily]:
        labels = ["cluster", *self._series.static_labels]
        return (CounterMetricFamily(KAFKA_FETCH_REQUESTS.name, KAFKA_FETCH_REQUESTS.doc,
                                    labels=labels),
                GaugeMetricFamily(KAFKA_CONSUMERS.name, KAFKA_CONSUMERS.doc, labels=labels))

    def collect(self) -> Iterator[Metric]:
        fetches, consumers = self._families()
        for cluster, fetch_requests, live in self._pool_stats():
            labels = [cluster, *self._series.static_values(cluster)]
            fetches.add_metric(labels, float(fetch_requests))
            consumers.add_metric(labels, float(live))
        yield from (fetches, consumers)


class SelfMetrics:
    """The catalogue's cycle counters and read-duration histogram, advanced per snapshot."""

    def __init__(self, registry: CollectorRegistry, clusters: Sequence[str],
                 series: SeriesSet | None = None) -> None:
        self._series = series or SeriesSet()
        labelnames = ["cluster", *self._series.static_labels]
        self._counters = [(spec, Counter(spec.name, spec.doc, labelnames, registry=registry))
                          for spec in CYCLE_COUNTERS]  # fmt: skip
        self.read_duration = Histogram(
            READ_DURATION.name, READ_DURATION.doc, labelnames, registry=registry,
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
        info = Gauge(BUILD_INFO.name, BUILD_INFO.doc, ["version"], registry=registry)
        info.labels(__version__).set(1)
        for name in clusters:  # known series start at 0, not at the first failure
            labels = self._labels(name)
            for _, counter in self._counters:
                counter.labels(*labels)
            self.read_duration.labels(*labels)

    def _labels(self, cluster: str) -> tuple[str, ...]:
        return (cluster, *self._series.static_values(cluster))

    def observe(self, snapshot: ClusterSnapshot) -> None:
        h = snapshot.health
        labels = self._labels(h.cluster)
        for spec, counter in self._counters:
            counter.labels(*labels).inc(spec.increment(h))
        if h.kafka_reads:
            self.read_duration.labels(*labels).observe(h.read_duration_ms / 1000)
