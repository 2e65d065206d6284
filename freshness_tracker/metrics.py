"""The metric catalogue: every family the tracker exports, its name, HELP, labels and value rule.

Names are public API (dashboards, alerts and rules query them): everything that needs one,
the renderers, the dashboards, the rules, the tests and the benchmarks, takes it from here.
Importing this module loads the standard library and the pure domain only, so a tool that
needs a name (the config's validation, `deploy/dashboard.py`) pulls in no listener, client or
renderer.

A family's value function says, per row of a snapshot, which sample exists and its value
(None: no sample), so a group or partition that has gone, or a failed read, simply has no
sample: nothing stale survives a cycle. Values come from each cluster's last completed cycle (no
sample timestamps, per the exporter guidelines). `sinks.prometheus` says which families a
snapshot exports (`SeriesSet`); `sinks.exposition` writes them for /metrics.

    kafka_consumer_freshness_ms{cluster="c",consumer="g",partition="0",topic="t"} 1234.0
    kafka_consumer_group_max_freshness_ms{cluster="c",consumer="g"} 1234.0
    freshness_tracker_cluster_up{cluster="c"} 1.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from operator import attrgetter
from typing import Any

from freshness_tracker.domain.model import (
    BURROW_STATUS_CODES,
    ClusterHealth,
    ClusterSnapshot,
    PartitionResult,
    PartitionStatus,
)

__all__ = [
    "ALL_PARTITION_METRICS",
    "BUILD_INFO",
    "BURROW_ERRORS",
    "CACHE_HITS",
    "CYCLES",
    "CYCLE_COUNTERS",
    "CYCLE_FAILURES",
    "DATA_LOSS_EVENTS",
    "GROUP_FAMILIES",
    "HEALTH_FAMILIES",
    "INVALID_INPUTS",
    "KAFKA_CONSUMERS",
    "KAFKA_FETCH_REQUESTS",
    "KAFKA_READS",
    "KAFKA_READ_FAILURES",
    "OFFSET_MISMATCHES",
    "PARTITION_FAMILIES",
    "READ_DURATION",
    "RESERVED_LABELS",
    "TOPIC_FAMILIES",
    "CycleCounter",
    "Family",
    "Granularity",
    "Level",
    "SelfMetric",
]


class Granularity(StrEnum):
    """The finest level of labels exported (kminion's `granularity`)."""

    PARTITION = "partition"
    TOPIC = "topic"
    GROUP = "group"


class Level(Enum):
    """What one row of a family is, and so its labels."""

    PARTITION = ("cluster", "consumer", "topic", "partition")
    #: One row per partition whose group member Burrow names (`owner` not empty).
    PARTITION_OWNER = ("cluster", "consumer", "topic", "partition", "owner", "client_id")
    TOPIC = ("cluster", "consumer", "topic")
    GROUP = ("cluster", "consumer")
    CLUSTER = ("cluster",)
    CLUSTER_STATUS = ("cluster", "status")  # one row per (cluster, partition status)

    @property
    def labels(self) -> tuple[str, ...]:
        labels: tuple[str, ...] = self.value
        return labels

    def rows(self, cluster: ClusterSnapshot) -> Sequence[Any]:
        if self is Level.PARTITION:
            return cluster.partitions
        if self is Level.PARTITION_OWNER:
            return [r for r in cluster.partitions if r.owner]
        if self is Level.TOPIC:
            return cluster.topics
        if self is Level.GROUP:
            return cluster.groups
        if self is Level.CLUSTER:
            return (cluster.health,)
        counts = dict.fromkeys(PartitionStatus, 0)
        for r in cluster.partitions:
            counts[r.status] += 1
        return [(cluster.health.cluster, s.value, n) for s, n in counts.items()]

    @property
    def labeller(self) -> Callable[[Any], tuple[str, ...]]:
        """A row's label values, as one plain function (renderers call it once per row)."""
        return _LABEL_VALUES[self]


#: Label names a cluster's static labels (`clusters[].labels`) may not take: the tracker's own
#: (every level's, and its self-metrics' `version`, histogram `le`, summary `quantile`) and the
#: target labels Prometheus adds at the scrape (`job`, `instance`: it would rename ours to
#: `exported_job`). Names starting with `__` are Prometheus' own.
RESERVED_LABELS: frozenset[str] = frozenset(
    {name for level in Level for name in level.labels} | {"version", "le", "quantile", "job",
                                                          "instance"})

_LABEL_VALUES: dict[Level, Callable[[Any], tuple[str, ...]]] = {
    Level.PARTITION: lambda r: (r.key.cluster, r.key.consumer, r.key.topic, str(r.key.partition)),
    Level.PARTITION_OWNER: lambda r: (r.key.cluster, r.key.consumer, r.key.topic,
                                      str(r.key.partition), r.owner, r.client_id),
    Level.TOPIC: lambda t: (t.cluster, t.consumer, t.topic),
    Level.GROUP: lambda g: (g.cluster, g.consumer),
    Level.CLUSTER: lambda h: (h.cluster,),
    Level.CLUSTER_STATUS: lambda row: (row[0], row[1]),
}


@dataclass(frozen=True, slots=True)
class Family:
    """One gauge family: its name, HELP, row level and the sample of a row (None: none).

    `static_labels` are the names of the clusters' own labels (`clusters[].labels`), written
    after the level's on every sample (`SeriesSet.families` sets them).
    """

    name: str
    doc: str
    level: Level
    value: Callable[[Any], float | None]
    static_labels: tuple[str, ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        return self.level.labels + self.static_labels


_LAST = " From the last completed cycle of the cluster."
#: Partitions whose data-loss verdict is not known (no read answered, or impossible inputs), or
#: that have no commit at all: no data-loss sample.
_NO_LOSS_VERDICT = frozenset({PartitionStatus.LOOKUP_FAILED, PartitionStatus.INVALID,
                              PartitionStatus.NO_COMMIT})
_NO_COMMIT = PartitionStatus.NO_COMMIT


def _status_code(status: str) -> float:
    return float(BURROW_STATUS_CODES.get(status, -1))


def _committed(attribute: str) -> Callable[[PartitionResult], float | None]:
    """A partition attribute, present only for a partition with a commit and a known value."""
    get = attrgetter(attribute)

    def sample(r: PartitionResult) -> float | None:
        if r.status is _NO_COMMIT:
            return None
        v = get(r)
        return None if v is None else float(v)
    return sample


def _loss(value: Callable[[PartitionResult], int]) -> Callable[[PartitionResult], float | None]:
    def sample(r: PartitionResult) -> float | None:
        return None if r.status in _NO_LOSS_VERDICT else float(value(r))
    return sample


def _if_measured(attribute: str) -> Callable[[Any], float | None]:
    """A group's count, absent for a group whose answer could not be read (not known)."""
    get = attrgetter(attribute)

    def sample(g: Any) -> float | None:
        return None if g.error is not None else float(get(g))
    return sample


def _optional(attribute: str, scale: float = 1.0) -> Callable[[Any], float | None]:
    get = attrgetter(attribute)

    def sample(row: Any) -> float | None:
        v = get(row)
        return None if v is None else v / scale
    return sample


# --- partition families, in exposition order -----------------------------------------------

FRESHNESS = Family(
    "kafka_consumer_freshness_ms",
    "Age in milliseconds of the oldest uncommitted record (now minus its timestamp); 0 when "
    "nothing is uncommitted. A lower bound when kafka_consumer_data_loss is 1." + _LAST,
    Level.PARTITION, _committed("freshness_ms"))
COMMIT_LAG = Family(
    "kafka_consumer_commit_lag_ms",
    "Commit time minus the timestamp of the last committed record, in milliseconds." + _LAST,
    Level.PARTITION, _committed("commit_lag_ms"))
OFFSET_LAG = Family(
    "kafka_consumer_offset_lag",
    "Records between the committed offset and the log end (Burrow current_lag)." + _LAST,
    # log_end_offset None: Burrow's lag was impossible (negative)
    Level.PARTITION, lambda r: None if r.status is _NO_COMMIT or r.log_end_offset is None
    else float(r.offset_lag))
COMMITTED = Family(
    "kafka_consumer_committed_offset",
    "The group's committed offset: the next record it will read." + _LAST,
    Level.PARTITION, _committed("committed_offset"))
DATA_LOSS = Family(
    "kafka_consumer_data_loss",
    "1 when the committed offset is below the log start: retention deleted records the group "
    "never read." + _LAST,
    Level.PARTITION, _loss(lambda r: 1 if r.data_loss else 0))
LOST = Family(
    "kafka_consumer_lost_records",
    "Records deleted before the group read them (log start minus committed offset)." + _LAST,
    Level.PARTITION, _loss(lambda r: r.lost_records))
HEADROOM = Family(
    "kafka_consumer_retention_headroom_ms",
    "Topic retention.ms minus the age of the oldest unconsumed record: time left before "
    "unconsumed data is deleted; 0 once data was lost." + _LAST,
    Level.PARTITION, _committed("retention_headroom_ms"))
LOG_END = Family(
    "kafka_consumer_log_end_offset",
    "The partition's log end offset as Burrow last saw it (committed offset plus offset lag): "
    "kafka_exporter's current offset, per group." + _LAST,
    Level.PARTITION, _committed("log_end_offset"))
PARTITION_STATUS = Family(
    "kafka_consumer_partition_burrow_status",
    "Burrow's partition status code: 1 OK, 2 WARN, 4 STOP, 5 STALL, 6 REWIND (Burrow's own "
    "index)." + _LAST,
    Level.PARTITION, lambda r: _status_code(r.burrow_status))

DATA_AS_OF = Family(
    "kafka_consumer_data_current_as_of_timestamp_seconds",
    "When the last committed record was appended (its timestamp, Unix seconds): the group has "
    "the partition's data up to then. Absent when that record was not read (a caught-up "
    "partition with lookup.commitLagWhenCaughtUp off and nothing cached) or is gone." + _LAST,
    Level.PARTITION, _optional("data_current_as_of_ms", 1000.0))
CATCH_UP = Family(
    "kafka_consumer_catch_up_estimate_seconds",
    "Estimated seconds until the offset lag is 0: the lag divided by the rate the group gained "
    "on the producers over Burrow's window of commits; 0 when caught up. Absent when not "
    "catching up (see kafka_consumer_group_catching_up) or unknown. An estimate." + _LAST,
    Level.PARTITION, _optional("catch_up_ms", 1000.0))
#: Partitions whose freshness is measured from a waiting record (the one at C, or after data
#: loss the earliest retained one): the only ones with a timestamp to age at query time.
_WAITING = frozenset({PartitionStatus.OK, PartitionStatus.GAP, PartitionStatus.DATA_LOSS})
OLDEST_UNCOMMITTED = Family(
    "kafka_consumer_oldest_uncommitted_timestamp_seconds",
    "When the oldest uncommitted record (at the committed offset) was appended, Unix seconds: "
    "freshness at any later time t is t minus it while the group commits nothing. Absent when "
    "nothing is uncommitted (freshness 0: see kafka_consumer_freshness_ms) or the freshness is "
    "unknown. The earliest retained record's when kafka_consumer_data_loss is 1 (a lower "
    "bound)." + _LAST,
    Level.PARTITION, lambda r: r.record_timestamp_ms / 1000
    if r.status in _WAITING and r.freshness_ms is not None
    and r.record_timestamp_ms is not None else None)
OWNER_INFO = Family(
    "kafka_consumer_partition_owner_info",
    "1 per partition with the group member Burrow says consumes it (owner, client_id); absent "
    "when Burrow does not know it (Burrow 1.2.1 against Kafka >= 2.1). Join it on the "
    "partition's labels to see who is lagging." + _LAST,
    Level.PARTITION_OWNER, lambda _r: 1.0)

PARTITION_FAMILIES = (FRESHNESS, COMMIT_LAG, OFFSET_LAG, COMMITTED, LOG_END, DATA_LOSS, LOST,
                      HEADROOM, PARTITION_STATUS, DATA_AS_OF, CATCH_UP, OLDEST_UNCOMMITTED,
                      OWNER_INFO)
#: Every per-partition family name, for `partitionMetrics`.
ALL_PARTITION_METRICS: tuple[str, ...] = tuple(f.name for f in PARTITION_FAMILIES)

# --- roll-ups and health -------------------------------------------------------------------

TOPIC_MAX_FRESHNESS = Family(
    "kafka_consumer_topic_max_freshness_ms",
    "Worst partition freshness of the group on the topic, in milliseconds." + _LAST,
    Level.TOPIC, _optional("max_freshness_ms"))
TOPIC_OFFSET_LAG = Family(
    "kafka_consumer_topic_offset_lag",
    "Sum of the group's offset lag over the topic's partitions; absent while one partition's "
    "lag is impossible (negative in Burrow)." + _LAST,
    Level.TOPIC, _optional("offset_lag"))
TOPIC_OLDEST_UNCOMMITTED = Family(
    "kafka_consumer_topic_oldest_uncommitted_timestamp_seconds",
    "When the group's oldest uncommitted record on the topic was appended (Unix seconds): "
    "kafka_consumer_topic_max_freshness_ms is the cycle's time minus it. Absent when every "
    "partition is caught up (max freshness 0) or the max is unknown." + _LAST,
    Level.TOPIC, _optional("oldest_uncommitted_ms", 1000.0))
TOPIC_FAMILIES = (TOPIC_MAX_FRESHNESS, TOPIC_OFFSET_LAG, TOPIC_OLDEST_UNCOMMITTED)


GROUP_MAX_FRESHNESS = Family(
    "kafka_consumer_group_max_freshness_ms",
    "Worst partition freshness of the group, in milliseconds; absent while any of its "
    "partitions' reads failed (the unread one may be the worst)." + _LAST,
    Level.GROUP, _optional("max_freshness_ms"))
GROUP_OFFSET_LAG = Family(
    "kafka_consumer_group_offset_lag",
    "Sum of the group's offset lag over its partitions (not Burrow's totallag, which may "
    "disagree with them); absent while one partition's lag is unknown." + _LAST,
    Level.GROUP, _optional("offset_lag"))
GROUP_STATUS = Family(
    "kafka_consumer_group_burrow_status",
    "Burrow's group status code: 0 NOTFOUND, 1 OK, 2 WARN, 3 ERR; -1 unknown (no status "
    "word, or the group's answer could not be read: see kafka_consumer_group_measured)."
    + _LAST,
    Level.GROUP, lambda g: _status_code(g.burrow_status))
GROUP_UNMEASURED = Family(
    "kafka_consumer_group_unmeasured_partitions",
    "Partitions of the group without a freshness value this cycle (read failed, no "
    "commit, or impossible inputs from Burrow or Kafka): the group max covers only the "
    "others, and is absent while a read failed or an input was impossible." + _LAST,
    Level.GROUP, _if_measured("unmeasured_partitions"))
GROUP_DATA_LOSS_PARTITIONS = Family(
    "kafka_consumer_group_data_loss_partitions",
    "Partitions of the group whose unread records were deleted by retention." + _LAST,
    Level.GROUP, _if_measured("data_loss_partitions"))
GROUP_DATA_AS_OF = Family(
    "kafka_consumer_group_data_current_as_of_timestamp_seconds",
    "The oldest of the group's partitions' last committed record timestamps (Unix "
    "seconds): the group has all its data up to then. Absent while a partition holding "
    "data has no value (its last committed record unread, gone, or nothing of it "
    "consumed)." + _LAST,
    Level.GROUP, _optional("data_current_as_of_ms", 1000.0))
GROUP_CATCH_UP = Family(
    "kafka_consumer_group_catch_up_estimate_seconds",
    "Estimated seconds until the group's offset lag is 0: the slowest partition's lag "
    "divided by the rate it gained on the producers over Burrow's window (an estimate: "
    "both rates are assumed to hold); 0 when caught up. Absent when not catching up or "
    "unknown." + _LAST,
    Level.GROUP, _optional("catch_up_ms", 1000.0))
GROUP_CATCHING_UP = Family(
    "kafka_consumer_group_catching_up",
    "1 when every partition of the group has no lag or gained on its producers over "
    "Burrow's window; 0 when one did not (its lag did not shrink, or Burrow says it "
    "stopped or stalled); absent when unknown." + _LAST,
    Level.GROUP, lambda g: None if g.catching_up is None else float(g.catching_up))
GROUP_MEASURED = Family(
    "kafka_consumer_group_measured",
    "1 when Burrow's answer for the group could be used; 0 when it could not (unreadable, too "
    "large, or labelled with another cluster or group): the group is then unmeasured, with no "
    "value but its Burrow status -1, and counted in freshness_tracker_burrow_errors_total."
    + _LAST,
    Level.GROUP, lambda g: 1.0 if g.error is None else 0.0)
GROUP_OLDEST_UNCOMMITTED = Family(
    "kafka_consumer_group_oldest_uncommitted_timestamp_seconds",
    "When the group's oldest uncommitted record was appended (Unix seconds; its worst "
    "partition's): kafka_consumer_group_max_freshness_ms is the cycle's time minus it, and "
    "time() minus it is the freshness now while the group commits nothing. Absent when every "
    "partition is caught up (max freshness 0) or the max is unknown." + _LAST,
    Level.GROUP, _optional("oldest_uncommitted_ms", 1000.0))
GROUP_FAMILIES = (GROUP_MAX_FRESHNESS, GROUP_OFFSET_LAG, GROUP_STATUS, GROUP_UNMEASURED,
                  GROUP_DATA_LOSS_PARTITIONS, GROUP_DATA_AS_OF, GROUP_CATCH_UP,
                  GROUP_CATCHING_UP, GROUP_MEASURED, GROUP_OLDEST_UNCOMMITTED)


CLUSTER_UP = Family(
    "freshness_tracker_cluster_up",
    "1 when the cluster's last cycle succeeded: Burrow answered and, if anything had to "
    "be read, at least one Kafka read succeeded. 0 otherwise.",
    Level.CLUSTER, lambda h: 1.0 if h.up else 0.0)
CLUSTER_LAST_ATTEMPT = Family(
    "freshness_tracker_cluster_last_attempt_timestamp_seconds",
    "When the cluster's last cycle started (Unix seconds).",
    Level.CLUSTER, lambda h: h.last_attempt_ms / 1000)
CLUSTER_LAST_SUCCESS = Family(
    "freshness_tracker_cluster_last_success_timestamp_seconds",
    "When the cluster's last successful cycle ended (Unix seconds); stops advancing "
    "while the cluster fails.",
    Level.CLUSTER, lambda h: None if h.last_success_ms is None
    else h.last_success_ms / 1000)
CLUSTER_CYCLE_DURATION = Family(
    "freshness_tracker_cluster_cycle_duration_seconds",
    "How long the cluster's last cycle took.",
    Level.CLUSTER, lambda h: h.duration_ms / 1000)
CLUSTER_GROUPS = Family(
    "freshness_tracker_cluster_groups",
    "Consumer groups measured in the cluster's last cycle.",
    Level.CLUSTER, lambda h: float(h.groups))
CLUSTER_FILTERED_GROUPS = Family(
    "freshness_tracker_cluster_filtered_groups",
    "Consumer groups Burrow listed that filters.groups excluded in the cluster's last cycle "
    "(not measured, by configuration).",
    Level.CLUSTER, lambda h: float(h.filtered_groups))
CLUSTER_PARTITIONS = Family(
    "freshness_tracker_cluster_partitions",
    "Partitions in the cluster's last cycle, by outcome.",
    Level.CLUSTER_STATUS, lambda row: float(row[2]))
HEALTH_FAMILIES = (CLUSTER_UP, CLUSTER_LAST_ATTEMPT, CLUSTER_LAST_SUCCESS, CLUSTER_CYCLE_DURATION,
                   CLUSTER_GROUPS, CLUSTER_FILTERED_GROUPS, CLUSTER_PARTITIONS)


# --- self-metrics: what accumulates across cycles (sinks/selfmetrics.py instruments them) ----


@dataclass(frozen=True, slots=True)
class CycleCounter:
    """A per-cluster counter (exposed as `<name>_total`) advanced after every cycle by a figure
    of that cycle's health."""

    name: str
    doc: str
    increment: Callable[[ClusterHealth], float]

    @property
    def total(self) -> str:
        """The sample's name, as served and queried."""
        return f"{self.name}_total"


@dataclass(frozen=True, slots=True)
class SelfMetric:
    """A self-metric whose value is not a cycle figure (a histogram, the build info, or one
    read from the Kafka clients at scrape time)."""

    name: str
    doc: str


CYCLES = CycleCounter("freshness_tracker_cycles", "Cycles run per cluster.", lambda h: 1)
CYCLE_FAILURES = CycleCounter("freshness_tracker_cycle_failures",
                              "Cycles after which the cluster was reported down.",
                              lambda h: 0 if h.up else 1)
BURROW_ERRORS = CycleCounter("freshness_tracker_burrow_errors",
                             "Burrow requests that failed after retries (cluster list, consumer "
                             "list or a group's lag).", attrgetter("burrow_errors"))
INVALID_INPUTS = CycleCounter("freshness_tracker_invalid_inputs",
                              "Inputs not used because they are impossible: consumer-list "
                              "entries and topics that are no exportable name, a partition "
                              "listed twice, a negative lag, timestamps before 2000 or more than "
                              "a day ahead. Each cycle logs the first ones.",
                              attrgetter("invalid_inputs"))
KAFKA_READS = CycleCounter("freshness_tracker_kafka_reads", "Record reads sent to Kafka.",
                           attrgetter("kafka_reads"))
KAFKA_READ_FAILURES = CycleCounter("freshness_tracker_kafka_read_failures",
                                   "Record reads that failed (no value was exported for them).",
                                   attrgetter("kafka_read_failures"))
CACHE_HITS = CycleCounter("freshness_tracker_cache_hits",
                          "Record timestamps answered from the cache instead of Kafka (or, for "
                          "the record before a commit, that none exists there: a transaction "
                          "marker).", attrgetter("cache_hits"))
DATA_LOSS_EVENTS = CycleCounter("freshness_tracker_data_loss_events",
                                "Partition measurements that found the committed offset below "
                                "the log start.", attrgetter("data_loss_events"))
OFFSET_MISMATCHES = CycleCounter("freshness_tracker_offset_mismatches",
                                 "Reads where no record existed at the requested offset and the "
                                 "next one was used (compaction, transaction markers).",
                                 attrgetter("offset_mismatches"))
CYCLE_COUNTERS = (CYCLES, CYCLE_FAILURES, BURROW_ERRORS, INVALID_INPUTS, KAFKA_READS,
                  KAFKA_READ_FAILURES, CACHE_HITS, DATA_LOSS_EVENTS, OFFSET_MISMATCHES)
READ_DURATION = SelfMetric("freshness_tracker_kafka_read_duration_seconds",
                           "Time a cycle spent reading Kafka, per cluster.")
BUILD_INFO = SelfMetric("freshness_tracker_build_info", "Build information; always 1.")
KAFKA_FETCH_REQUESTS = SelfMetric(
    "freshness_tracker_kafka_fetch_requests",
    "Fetch requests sent by the lookup consumers, from librdkafka statistics: 0 unless the "
    "cluster's kafka properties set statistics.interval.ms; divide its rate by kafka_reads to "
    "see batching.")
KAFKA_CONSUMERS = SelfMetric("freshness_tracker_kafka_consumers",
                             "Lookup consumers currently open per cluster (at most "
                             "numConsumers).")
