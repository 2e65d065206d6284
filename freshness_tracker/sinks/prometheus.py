"""The Prometheus Collector: renders the last published snapshot, nothing else.

Every metric name and HELP text is defined here, once. `collect()` builds fresh families per
scrape from `holder.current`, so a group or partition that has gone, or a failed read, simply
has no sample: nothing stale survives a cycle. Values come from each cluster's last completed
cycle (no sample timestamps, per the exporter guidelines).

A label value that is not valid UTF-8 would make the whole exposition fail to encode (HTTP 500
for every cluster), so such a sample is skipped and logged instead: the parser already drops
those names (counted), this is the last line of defence.

    kafka_consumer_freshness_ms{cluster="c",consumer="g",topic="t",partition="0"} 1234.0
    kafka_consumer_group_max_freshness_ms{cluster="c",consumer="g"} 1234.0
    freshness_tracker_cluster_up{cluster="c"} 1.0
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from freshness_tracker.config.settings import Granularity
from freshness_tracker.domain.model import (
    BURROW_STATUS_CODES,
    ClusterSnapshot,
    PartitionStatus,
)
from freshness_tracker.domain.names import escaped, is_utf8
from freshness_tracker.publish import SnapshotHolder

__all__ = ["FreshnessCollector"]

PARTITION_LABELS = ["cluster", "consumer", "topic", "partition"]
TOPIC_LABELS = ["cluster", "consumer", "topic"]
GROUP_LABELS = ["cluster", "consumer"]

_LAST = " From the last completed cycle of the cluster."
#: Partitions whose data-loss verdict is not known (no read answered, or impossible inputs).
_LOSS_UNKNOWN = frozenset({PartitionStatus.LOOKUP_FAILED, PartitionStatus.INVALID})

log = logging.getLogger(__name__)


def _status_code(status: str) -> float:
    return float(BURROW_STATUS_CODES.get(status, -1))


class FreshnessCollector(Collector):
    """Yields freshness, lag, data-loss and per-cluster health families from a snapshot."""

    def __init__(self, holder: SnapshotHolder, granularity: Granularity = Granularity.PARTITION):
        self._holder = holder
        self._granularity = granularity
        self._skipped = 0

    def describe(self) -> Iterable[Metric]:
        # Avoid a collect() at registration time (the registry calls describe() instead).
        return []

    def _exportable(self, *labels: str) -> bool:
        """False (and the sample skipped) for a label no exposition can carry."""
        if all(is_utf8(label) for label in labels):
            return True
        self._skipped += 1
        if self._skipped == 1:
            log.warning("a series with a label that is not valid UTF-8 was not exported: %s",
                        ", ".join(escaped(label) for label in labels))
        return False

    def collect(self) -> Iterator[Metric]:
        snapshot = self._holder.current  # read once: one consistent set of cycles
        clusters = snapshot.clusters
        self._skipped = 0  # one warning per scrape at most
        if self._granularity is Granularity.PARTITION:
            yield from self._partition_families(clusters)
        if self._granularity in (Granularity.PARTITION, Granularity.TOPIC):
            yield from self._topic_families(clusters)
        yield from self._group_families(clusters)
        yield from self._health_families(clusters)

    def _partition_families(self, clusters: tuple[ClusterSnapshot, ...]) -> Iterator[Metric]:
        freshness = GaugeMetricFamily(
            "kafka_consumer_freshness_ms",
            "Age in milliseconds of the oldest uncommitted record (now minus its timestamp); 0 "
            "when nothing is uncommitted. A lower bound when kafka_consumer_data_loss is 1."
            + _LAST,
            labels=PARTITION_LABELS)
        commit_lag = GaugeMetricFamily(
            "kafka_consumer_commit_lag_ms",
            "Commit time minus the timestamp of the last committed record, in milliseconds."
            + _LAST, labels=PARTITION_LABELS)
        offset_lag = GaugeMetricFamily(
            "kafka_consumer_offset_lag",
            "Records between the committed offset and the log end (Burrow current_lag)." + _LAST,
            labels=PARTITION_LABELS)
        committed = GaugeMetricFamily(
            "kafka_consumer_committed_offset",
            "The group's committed offset: the next record it will read." + _LAST,
            labels=PARTITION_LABELS)
        data_loss = GaugeMetricFamily(
            "kafka_consumer_data_loss",
            "1 when the committed offset is below the log start: retention deleted records the "
            "group never read." + _LAST, labels=PARTITION_LABELS)
        lost = GaugeMetricFamily(
            "kafka_consumer_lost_records",
            "Records deleted before the group read them (log start minus committed offset)."
            + _LAST, labels=PARTITION_LABELS)
        headroom = GaugeMetricFamily(
            "kafka_consumer_retention_headroom_ms",
            "Topic retention.ms minus the age of the oldest unconsumed record: time left before "
            "unconsumed data is deleted; 0 once data was lost." + _LAST, labels=PARTITION_LABELS)
        status = GaugeMetricFamily(
            "kafka_consumer_partition_burrow_status",
            "Burrow's partition status code: 1 OK, 2 WARN, 4 STOP, 5 STALL, 6 REWIND (Burrow's "
            "own index)." + _LAST, labels=PARTITION_LABELS)
        for cluster in clusters:
            for r in cluster.partitions:
                k = r.key
                if not self._exportable(k.cluster, k.consumer, k.topic):
                    continue
                labels = [k.cluster, k.consumer, k.topic, str(k.partition)]
                status.add_metric(labels, _status_code(r.burrow_status))
                if r.status is PartitionStatus.NO_COMMIT:
                    continue
                if r.log_end_offset is not None:  # None: Burrow's lag was impossible (negative)
                    offset_lag.add_metric(labels, float(r.offset_lag))
                if r.committed_offset is not None:
                    committed.add_metric(labels, float(r.committed_offset))
                if r.freshness_ms is not None:
                    freshness.add_metric(labels, float(r.freshness_ms))
                if r.commit_lag_ms is not None:
                    commit_lag.add_metric(labels, float(r.commit_lag_ms))
                if r.retention_headroom_ms is not None:
                    headroom.add_metric(labels, float(r.retention_headroom_ms))
                if r.status not in _LOSS_UNKNOWN:
                    data_loss.add_metric(labels, 1.0 if r.data_loss else 0.0)
                    lost.add_metric(labels, float(r.lost_records))
        yield from (freshness, commit_lag, offset_lag, committed, data_loss, lost, headroom,
                    status)

    def _topic_families(self, clusters: tuple[ClusterSnapshot, ...]) -> Iterator[Metric]:
        fresh = GaugeMetricFamily(
            "kafka_consumer_topic_max_freshness_ms",
            "Worst partition freshness of the group on the topic, in milliseconds." + _LAST,
            labels=TOPIC_LABELS)
        lag = GaugeMetricFamily(
            "kafka_consumer_topic_offset_lag",
            "Sum of the group's offset lag over the topic's partitions; absent while one "
            "partition's lag is impossible (negative in Burrow)." + _LAST,
            labels=TOPIC_LABELS)
        for cluster in clusters:
            for t in cluster.topics:
                labels = [t.cluster, t.consumer, t.topic]
                if not self._exportable(*labels):
                    continue
                if t.offset_lag is not None:
                    lag.add_metric(labels, float(t.offset_lag))
                if t.max_freshness_ms is not None:
                    fresh.add_metric(labels, float(t.max_freshness_ms))
        yield from (fresh, lag)

    def _group_families(self, clusters: tuple[ClusterSnapshot, ...]) -> Iterator[Metric]:
        fresh = GaugeMetricFamily(
            "kafka_consumer_group_max_freshness_ms",
            "Worst partition freshness of the group, in milliseconds; absent while any of its "
            "partitions' reads failed (the unread one may be the worst)." + _LAST,
            labels=GROUP_LABELS)
        lag = GaugeMetricFamily(
            "kafka_consumer_group_offset_lag",
            "Sum of the group's offset lag over its partitions (not Burrow's totallag, which "
            "may disagree with them); absent while one partition's lag is unknown." + _LAST,
            labels=GROUP_LABELS)
        status = GaugeMetricFamily(
            "kafka_consumer_group_burrow_status",
            "Burrow's group status code: 0 NOTFOUND, 1 OK, 2 WARN, 3 ERR." + _LAST,
            labels=GROUP_LABELS)
        unmeasured = GaugeMetricFamily(
            "kafka_consumer_group_unmeasured_partitions",
            "Partitions of the group without a freshness value this cycle (read failed, no "
            "commit, or impossible inputs from Burrow or Kafka): the group max covers only the "
            "others, and is absent while a read failed or an input was impossible." + _LAST,
            labels=GROUP_LABELS)
        loss = GaugeMetricFamily(
            "kafka_consumer_group_data_loss_partitions",
            "Partitions of the group whose unread records were deleted by retention." + _LAST,
            labels=GROUP_LABELS)
        for cluster in clusters:
            for g in cluster.groups:
                labels = [g.cluster, g.consumer]
                if not self._exportable(*labels):
                    continue
                if g.offset_lag is not None:
                    lag.add_metric(labels, float(g.offset_lag))
                status.add_metric(labels, _status_code(g.burrow_status))
                unmeasured.add_metric(labels, float(g.unmeasured_partitions))
                loss.add_metric(labels, float(g.data_loss_partitions))
                if g.max_freshness_ms is not None:
                    fresh.add_metric(labels, float(g.max_freshness_ms))
        yield from (fresh, lag, status, unmeasured, loss)

    def _health_families(self, clusters: tuple[ClusterSnapshot, ...]) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "freshness_tracker_cluster_up",
            "1 when the cluster's last cycle succeeded: Burrow answered and, if anything had to "
            "be read, at least one Kafka read succeeded. 0 otherwise.", labels=["cluster"])
        attempt = GaugeMetricFamily(
            "freshness_tracker_cluster_last_attempt_timestamp_seconds",
            "When the cluster's last cycle started (Unix seconds).", labels=["cluster"])
        success = GaugeMetricFamily(
            "freshness_tracker_cluster_last_success_timestamp_seconds",
            "When the cluster's last successful cycle ended (Unix seconds); stops advancing "
            "while the cluster fails.", labels=["cluster"])
        duration = GaugeMetricFamily(
            "freshness_tracker_cluster_cycle_duration_seconds",
            "How long the cluster's last cycle took.", labels=["cluster"])
        groups = GaugeMetricFamily(
            "freshness_tracker_cluster_groups",
            "Consumer groups measured in the cluster's last cycle.", labels=["cluster"])
        partitions = GaugeMetricFamily(
            "freshness_tracker_cluster_partitions",
            "Partitions in the cluster's last cycle, by outcome.", labels=["cluster", "status"])
        for cluster in clusters:
            h = cluster.health
            if not self._exportable(h.cluster):
                continue
            up.add_metric([h.cluster], 1.0 if h.up else 0.0)
            attempt.add_metric([h.cluster], h.last_attempt_ms / 1000)
            if h.last_success_ms is not None:
                success.add_metric([h.cluster], h.last_success_ms / 1000)
            duration.add_metric([h.cluster], h.duration_ms / 1000)
            groups.add_metric([h.cluster], float(h.groups))
            counts = {s: 0 for s in PartitionStatus}
            for r in cluster.partitions:
                counts[r.status] += 1
            for s, n in counts.items():
                partitions.add_metric([h.cluster, s.value], float(n))
        yield from (up, attempt, success, duration, groups, partitions)
