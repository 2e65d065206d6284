"""Which of the catalogue's families a snapshot exports: the finest level and the per-partition
families, and the check that keeps an unencodable label out of /metrics.

The families themselves (names, HELP, labels, value rules) are the catalogue's
(`freshness_tracker.metrics`). `sinks.exposition` renders them straight from the snapshot, once
per snapshot, for /metrics (tests check its bytes against prometheus_client's `generate_latest`).

What is exported is a `SeriesSet`: the finest level (`granularity`) and, at partition level,
which per-partition families (`partitionMetrics`). Per-partition series dominate the size (a
family costs ~100 bytes and one series per partition), so by default only the time-based ones
the shipped alerts need are per partition; the others are opt-in, and their roll-ups per topic
and group are always there.

A label value that is not valid UTF-8 would make the whole exposition fail to encode (HTTP 500
for every cluster), so such a sample is skipped and logged instead: the parser already drops
those names (counted), this is the last line of defence.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from freshness_tracker.domain.names import escaped, is_utf8
from freshness_tracker.metrics import (
    ALL_PARTITION_METRICS,
    GROUP_FAMILIES,
    HEALTH_FAMILIES,
    PARTITION_FAMILIES,
    TOPIC_FAMILIES,
    Family,
    Granularity,
)
from freshness_tracker.reference import default

__all__ = [
    "DEFAULT_PARTITION_METRICS",
    "SeriesSet",
    "SkipLog",
]

log = logging.getLogger(__name__)

#: The per-partition families exported unless `partitionMetrics` says otherwise: the three
#: time-based ones (freshness, commit lag, retention headroom) the shipped alerts and recording
#: rules read per partition. Offset lag, committed offset, data loss, lost records and Burrow's
#: status are opt-in per partition; their topic and group roll-ups are always exported.
DEFAULT_PARTITION_METRICS: tuple[str, ...] = tuple(default("partitionMetrics"))


@dataclass(frozen=True, slots=True)
class SeriesSet:
    """Which families a snapshot exports: the finest level, the per-partition families, and
    each cluster's static labels (`clusters[].labels`).

    Clusters may have different static labels. Every family then carries the union of their
    names (sorted, after the level's own labels) and a cluster writes "" for a name it lacks,
    as kafka-lag-exporter does: one label set per family, so prometheus_client (whose families
    have one) and every consumer of the text formats read it, and Prometheus stores an empty
    label as no label at all, so a series looks exactly as if it had only its own.
    """

    granularity: Granularity = Granularity.PARTITION
    partition_metrics: frozenset[str] = field(
        default_factory=lambda: frozenset(DEFAULT_PARTITION_METRICS))
    cluster_labels: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({}))

    @classmethod
    def everything(cls) -> SeriesSet:
        """Every family at partition level (the exporter's set before per-partition families
        became opt-in)."""
        return cls(Granularity.PARTITION, frozenset(ALL_PARTITION_METRICS))

    @property
    def static_labels(self) -> tuple[str, ...]:
        """The names of every cluster's static labels, sorted."""
        return tuple(sorted({name for labels in self.cluster_labels.values()
                             for name in labels}))

    def static_values(self, cluster: str) -> tuple[str, ...]:
        """A cluster's static label values in `static_labels` order ("" for a name it lacks)."""
        own = self.cluster_labels.get(cluster, {})
        return tuple(own.get(name, "") for name in self.static_labels)

    def families(self) -> tuple[Family, ...]:
        """The exported families, in exposition order."""
        out: list[Family] = []
        if self.granularity is Granularity.PARTITION:
            out += [f for f in PARTITION_FAMILIES if f.name in self.partition_metrics]
        if self.granularity in (Granularity.PARTITION, Granularity.TOPIC):
            out += TOPIC_FAMILIES
        families = (*out, *GROUP_FAMILIES, *HEALTH_FAMILIES)
        static = self.static_labels
        if not static:
            return families
        return tuple(replace(f, static_labels=static) for f in families)


class SkipLog:
    """Decides whether a row's labels can be exported; logs the first skip of a render."""

    def __init__(self) -> None:
        self.skipped = 0

    def exportable(self, labels: Iterable[str]) -> bool:
        labels = tuple(labels)
        if all(is_utf8(label) for label in labels):
            return True
        self.skipped += 1
        if self.skipped == 1:
            log.warning("a series with a label that is not valid UTF-8 was not exported: %s",
                        ", ".join(escaped(label) for label in labels))
        return False
