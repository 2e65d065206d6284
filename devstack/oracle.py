"""The test oracle of /metrics: prometheus_client's `generate_latest` over a Collector of the
same snapshot, built from the package's family definitions (`freshness_tracker.metrics`).

The package has one renderer (`sinks.exposition`, what /metrics serves); this Collector builds
prometheus_client objects per collect() so that prometheus_client itself writes the text the
served bytes must equal, byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from freshness_tracker.app import Exporter
from freshness_tracker.publish import SnapshotHolder
from freshness_tracker.sinks.prometheus import SeriesSet, SkipLog


class FreshnessCollector(Collector):
    """The snapshot's families as prometheus_client objects, built at every collect()."""

    def __init__(self, holder: SnapshotHolder, series: SeriesSet | None = None) -> None:
        self._holder = holder
        self.series = series or SeriesSet()

    def describe(self) -> Iterator[Metric]:
        """The families, without samples: the registry checks their names against every other
        collector's at registration (no collect() of a snapshot then)."""
        for family in self.series.families():
            yield GaugeMetricFamily(family.name, family.doc, labels=list(family.labels))

    def collect(self) -> Iterator[Metric]:
        clusters = self._holder.current.clusters  # read once: one consistent set of cycles
        skips = SkipLog()
        for family in self.series.families():
            level, label_values = family.level, family.level.labeller
            metric = GaugeMetricFamily(family.name, family.doc, labels=list(family.labels))
            for cluster in clusters:
                static = self.series.static_values(cluster.cluster)
                for row in level.rows(cluster):
                    labels = label_values(row) + static
                    value = family.value(row)
                    if value is not None and skips.exportable(labels):
                        metric.add_metric(list(labels), value)
            yield metric


def reference_registry(exporter: Exporter) -> CollectorRegistry:
    """A registry of everything `exporter` serves at /metrics, in the same order: the
    snapshot's families, the per-snapshot counters, then the live figures."""
    registry = CollectorRegistry()
    exposition = exporter.exposition
    registry.register(FreshnessCollector(exporter.holder, exposition.series))
    if exposition.per_snapshot is not None:
        registry.register(exposition.per_snapshot)
    registry.register(exposition.live)
    return registry


def served_and_reference(exporter: Exporter) -> tuple[str, str]:
    """What `exporter` serves at /metrics now, and what prometheus_client renders of the same
    snapshot: the two texts an oracle test compares."""
    return (exporter.exposition.answer().body.decode(),
            generate_latest(reference_registry(exporter)).decode())
