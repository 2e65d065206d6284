"""Immutable values that flow through a cycle: Burrow's view in, measured results out.

Everything is frozen with tuples so a published snapshot can be read by any number of scrapes
while the next cycle is being built. Times are integer epoch milliseconds, as in Kafka and Burrow.

The values made once per partition per cycle (keys, Burrow's entries, reads, results) are
NamedTuples, the rest frozen dataclasses: a large cycle builds several of them per partition
and hashes, compares and sorts the keys many times over. A tuple does all of that in C; a frozen
dataclass sets each field through `object.__setattr__` (a visible share of a cycle's CPU) and
compares in Python (docs/scale.md). Each is built through its own generated constructor (by
keyword where a cycle makes them), so a missing, extra or misspelt field is a TypeError where
the value is made, never a short or shifted tuple read later. Change one with `_replace()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

__all__ = [
    "BURROW_STATUS_CODES",
    "ClusterHealth",
    "ClusterLags",
    "ClusterSnapshot",
    "GroupLags",
    "GroupResult",
    "LagWindow",
    "PartitionKey",
    "PartitionLag",
    "PartitionResult",
    "PartitionStatus",
    "ReadOutcome",
    "ReadRequest",
    "RecordRead",
    "Snapshot",
    "TopicResult",
    "UNKNOWN_STATUS",
]

#: Burrow's own status index (core/protocol/evaluator.go statusStrings); also what Burrow's
#: built-in /metrics exports, so dashboards can compare the two.
BURROW_STATUS_CODES: dict[str, int] = {
    "NOTFOUND": 0,
    "OK": 1,
    "WARN": 2,
    "ERR": 3,
    "STOP": 4,
    "STALL": 5,
    "REWIND": 6,
}
#: What stands for Burrow's status when it sent none of its words (missing, empty, garbled) or
#: its answer could not be read: never OK. Exported as -1, outside Burrow's index.
UNKNOWN_STATUS = "UNKNOWN"


class PartitionKey(NamedTuple):
    """One consumer group's position on one partition: the unit every metric is labelled by."""

    cluster: str
    consumer: str
    topic: str
    partition: int


class LagWindow(NamedTuple):
    """Burrow's window of a partition's commits (`start` and `end` of its `/lag` entry): when
    the oldest and the newest commit it holds were made (epoch ms) and the lag Burrow computed
    at each. Any value is None when Burrow did not send it (an entry that is null, a null `lag`
    in Burrow >= 1.3 when it did not know the log end)."""

    start_ms: int | None
    start_lag: int | None
    end_ms: int | None
    end_lag: int | None


class PartitionLag(NamedTuple):
    """Burrow's `/lag` entry for one partition, reduced to what freshness needs.

    `committed_offset` is Burrow's `end.offset`: the *next* record the group will read, so the
    record at that offset is the oldest uncommitted one. It is None when Burrow stored no commit
    (`end: null`). `owner` and `client_id` name the group member that holds the partition ("":
    unknown; Burrow 1.2.1 never knows them against Kafka >= 2.1).
    """

    key: PartitionKey
    committed_offset: int | None
    commit_time_ms: int | None
    current_lag: int
    burrow_status: str = "OK"
    complete: float = 1.0
    window: LagWindow | None = None
    owner: str = ""
    client_id: str = ""

    @property
    def log_end_offset(self) -> int | None:
        """LEO = committed + current_lag; Burrow's `/lag` has no LEO of its own."""
        if self.committed_offset is None:
            return None
        return self.committed_offset + self.current_lag


@dataclass(frozen=True, slots=True)
class GroupLags:
    """One consumer group as Burrow evaluated it this cycle."""

    cluster: str
    consumer: str
    burrow_status: str
    total_lag: int
    partitions: tuple[PartitionLag, ...]
    #: Entries of the answer that were not used (a topic that is not a Kafka topic name, a
    #: second entry for the same partition), each described with its name escaped.
    rejected: tuple[str, ...] = ()
    #: How many of those were partitions of their own (not repeats): their values are unknown,
    #: so the group counts them unmeasured and withholds its max and lag.
    unusable_partitions: int = 0
    #: When Burrow's answer arrived (epoch ms): the moment its offsets are true for, so the
    #: moment the group's freshness is measured at. None: unknown (the cycle's clock is used).
    observed_ms: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterLags:
    """Everything Burrow told us about one cluster in one cycle.

    `missing_groups` are groups listed by `/consumer` whose `/lag` answered 404 NOTFOUND (gone
    between the two calls); `failed_groups` are groups whose `/lag` could not be read at all;
    `rejected` are consumer-list entries that are no usable group name (empty, not UTF-8, not a
    string, listed twice), described with the name escaped: never asked for, only counted;
    `filtered` are the listed groups `filters.groups` excludes: never asked for, counted so no
    group goes unmonitored unseen.
    """

    cluster: str
    groups: tuple[GroupLags, ...]
    missing_groups: tuple[str, ...] = ()
    failed_groups: tuple[tuple[str, str], ...] = ()  # (group, error)
    rejected: tuple[str, ...] = ()
    filtered: tuple[str, ...] = ()


# --- Kafka reads -------------------------------------------------------------------------


class ReadRequest(NamedTuple):
    """Read the record at `offset` of one partition of one cluster (groups are irrelevant here:
    many groups at the same offset share one read)."""

    cluster: str
    topic: str
    partition: int
    offset: int


class ReadOutcome(StrEnum):
    """How a single point read ended; the reader never raises for one partition."""

    FOUND = "found"  # a record exactly at the requested offset
    GAP = "gap"  # no record at the offset (compaction, transaction markers); the next one returned
    OUT_OF_RANGE = "out_of_range"  # offset below the log start: retention deleted it
    END = "end"  # no record at or after the offset: the log ends there
    FAILED = "failed"  # the read could not complete (timeout, broker down, auth, ...)


class RecordRead(NamedTuple):
    """The answer to one ReadRequest.

    - FOUND: `offset == request.offset`, `timestamp_ms` is that record's timestamp.
    - GAP: `offset > request.offset`, the first record that exists after the requested offset.
    - OUT_OF_RANGE: `log_start_offset` is the earliest retained offset and, when it could be
      read, `offset`/`timestamp_ms` describe the earliest retained record.
    - END: nothing at or after the offset (`log_end_offset` when known).
    - FAILED: `error` says why.
    """

    request: ReadRequest
    outcome: ReadOutcome
    offset: int | None = None
    timestamp_ms: int | None = None
    timestamp_type: str | None = None  # "CreateTime" | "LogAppendTime" | None
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    error: str | None = None


# --- Results -----------------------------------------------------------------------------


class PartitionStatus(StrEnum):
    """What we could say about one partition this cycle."""

    OK = "ok"  # freshness measured from the record at the committed offset
    CAUGHT_UP = "caught_up"  # nothing uncommitted: freshness 0, no read
    GAP = "gap"  # record at the committed offset absent; measured from the next existing one
    DATA_LOSS = "data_loss"  # committed offset below log start: freshness is a lower bound
    NO_COMMIT = "no_commit"  # Burrow holds no committed offset (`end: null`)
    LOOKUP_FAILED = "lookup_failed"  # the read failed: no value is exported
    #: Burrow's or Kafka's numbers are impossible (negative lag, a record timestamp before 2000
    #: or more than a day ahead): no freshness rather than a made-up one.
    INVALID = "invalid"


class PartitionResult(NamedTuple):
    """Freshness and friends for one (cluster, consumer, topic, partition) in one cycle.

    `freshness_ms` is None when unknown (never a stale value). With DATA_LOSS it is measured
    from the earliest retained record and so is a lower bound (`freshness_is_lower_bound`).
    `invalid` says which input was impossible and left unused (with status INVALID, or a commit
    time that was dropped while freshness was still measured); `log_end_offset` is None when
    Burrow's lag was negative, so no offset lag is exported for it.
    """

    key: PartitionKey
    status: PartitionStatus
    burrow_status: str
    committed_offset: int | None
    log_end_offset: int | None
    offset_lag: int
    commit_time_ms: int | None
    record_timestamp_ms: int | None
    freshness_ms: int | None
    commit_lag_ms: int | None
    lost_records: int = 0
    retention_headroom_ms: int | None = None
    error: str | None = None
    invalid: str | None = None
    #: The time freshness was measured at: when Burrow's offsets were observed (the group's
    #: `/lag` answer), or when the cycle's reads were in for a partition still waiting where
    #: the last cycle saw it (`freshness.measured_at`). The history table's `sample_time`.
    sample_time_ms: int | None = None
    #: Timestamp of the last committed record (offset C − 1): the group has the partition's data
    #: up to then. None when that record was not read (or is gone, or C is 0).
    data_current_as_of_ms: int | None = None
    #: Estimated time until the offset lag is 0 at the rate the group gained on the producers
    #: over Burrow's window (0 when caught up); None when not catching up or unknown.
    catch_up_ms: int | None = None
    #: True: gaining on the producers (or caught up); False: not (the lag does not shrink, or
    #: Burrow says the consumer stopped or stalled); None: unknown.
    catching_up: bool | None = None
    owner: str = ""
    client_id: str = ""

    @property
    def freshness_is_lower_bound(self) -> bool:
        return self.status is PartitionStatus.DATA_LOSS

    @property
    def data_loss(self) -> bool:
        return self.status is PartitionStatus.DATA_LOSS


@dataclass(frozen=True, slots=True)
class TopicResult:
    """Roll-up of one group's partitions on one topic (max freshness: the worst partition).

    `offset_lag` is None while a partition's lag is impossible (unknown), like the max.
    """

    cluster: str
    consumer: str
    topic: str
    max_freshness_ms: int | None
    offset_lag: int | None
    partitions: int
    unmeasured_partitions: int
    #: The oldest timestamp of the records at the partitions' committed offsets (the append
    #: time of the topic's oldest uncommitted record): freshness is now minus it, at any now
    #: while nothing is committed. None when no partition has one, or while the max is unknown.
    oldest_uncommitted_ms: int | None = None


@dataclass(frozen=True, slots=True)
class GroupResult:
    """Roll-up of one group: its worst partition and Burrow's own verdict.

    `offset_lag` is None while a partition's lag is unknown (impossible, or its entry unusable).
    `data_current_as_of_ms` and `oldest_uncommitted_ms` are the oldest of its partitions' (the
    second only while the max is known) and `catch_up_ms` the longest
    (`domain.rollup` says when each is unknown). `error` says why Burrow's answer for the group
    could not be used this cycle: the group stays listed, unmeasured, rather than vanishing.
    """

    cluster: str
    consumer: str
    burrow_status: str
    max_freshness_ms: int | None
    offset_lag: int | None
    partitions: int
    unmeasured_partitions: int
    data_loss_partitions: int
    data_current_as_of_ms: int | None = None
    catch_up_ms: int | None = None
    catching_up: bool | None = None
    error: str | None = None
    #: The append time of the group's oldest uncommitted record (the lagging partitions' oldest
    #: record at C): the max freshness is the cycle's now minus it.
    oldest_uncommitted_ms: int | None = None

    @property
    def measured(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class ClusterHealth:
    """Whether the exporter could measure a cluster, for its own health metrics.

    `up` is False when Burrow could not be read for the cluster, or when there was something to
    read from Kafka and not a single read succeeded (a misconfigured cluster must look failed).
    """

    cluster: str
    up: bool
    last_attempt_ms: int
    last_success_ms: int | None
    duration_ms: int
    groups: int = 0
    partitions: int = 0
    kafka_reads: int = 0
    kafka_read_failures: int = 0
    cache_hits: int = 0
    burrow_errors: int = 0
    #: Groups Burrow listed that `filters.groups` excludes (never asked, by configuration).
    filtered_groups: int = 0
    #: Inputs not used because they are impossible: consumer-list entries and topic names that
    #: cannot be exported, duplicate partitions, negative lags, absurd timestamps.
    invalid_inputs: int = 0
    data_loss_events: int = 0
    offset_mismatches: int = 0
    read_duration_ms: int = 0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """One cluster's completed cycle: published as a unit, never mixed with another cycle."""

    cluster: str
    cycle_id: int
    started_ms: int
    finished_ms: int
    health: ClusterHealth
    partitions: tuple[PartitionResult, ...] = ()
    topics: tuple[TopicResult, ...] = ()
    groups: tuple[GroupResult, ...] = ()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The last completed cycle of every configured cluster, swapped in by one assignment."""

    clusters: tuple[ClusterSnapshot, ...] = field(default_factory=tuple)

    def with_cluster(self, update: ClusterSnapshot) -> Snapshot:
        """A new snapshot with `update` replacing that cluster's previous entry."""
        rest = tuple(c for c in self.clusters if c.cluster != update.cluster)
        return Snapshot(tuple(sorted((*rest, update), key=lambda c: c.cluster)))

    @property
    def partitions(self) -> tuple[PartitionResult, ...]:
        return tuple(p for c in self.clusters for p in c.partitions)
