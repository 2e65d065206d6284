"""One measurement cycle of one cluster: Burrow → plan → Kafka reads → results.

Imports no sink. Per-partition problems become statuses; a whole-cluster problem (Burrow or
Kafka unreachable) becomes a failed ClusterHealth with no partition values, so nothing stale is
ever served. Each cluster runs its own cycles, so a slow or dead cluster cannot delay another.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Protocol, runtime_checkable

from freshness_tracker.config.settings import ClusterSettings, Settings
from freshness_tracker.deadline import Deadline, cycle_deadline
from freshness_tracker.domain.filters import NameFilter, Shard
from freshness_tracker.domain.freshness import measure_partition, measured_at
from freshness_tracker.domain.model import (
    ClusterHealth,
    ClusterLags,
    ClusterSnapshot,
    PartitionKey,
    PartitionLag,
    PartitionResult,
    PartitionStatus,
    ReadOutcome,
    ReadRequest,
    RecordRead,
)
from freshness_tracker.domain.names import escaped
from freshness_tracker.domain.plan import LookupPlan, plan_reads
from freshness_tracker.domain.ports import BurrowSource, RecordReader, RetentionSource
from freshness_tracker.domain.rollup import roll_up_groups, roll_up_topics
from freshness_tracker.errors import BurrowError, FreshnessTrackerError
from freshness_tracker.gate import ComputeGate
from freshness_tracker.kafka.cache import TimestampCache
from freshness_tracker.kafka.settings import ClusterKafkaSettings
from freshness_tracker.metrics import CLUSTER_FILTERED_GROUPS, INVALID_INPUTS

__all__ = [
    "ClusterMeasurer",
    "ReachabilityProbe",
    "cluster_measurers",
    "ReaderFactory",
    "measure_partitions",
    "now_ms",
    "observed_times",
    "read_with_cache",
]

log = logging.getLogger(__name__)

ReaderFactory = Callable[[ClusterKafkaSettings], RecordReader]


@runtime_checkable
class ReachabilityProbe(Protocol):
    """A `RecordReader` that can confirm its cluster answers without reading a record.

    A cycle that sends no read (every timestamp cached, or nothing but caught-up partitions)
    asks it once, so a cluster with no broker left looks failed, not measured from memory. A
    reader without it (the Spark job's) is trusted as before.
    """

    def confirm_reachable(self, topic: str | None = None) -> None:
        """Return when a broker answered; raise a `FreshnessTrackerError` naming why not."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def read_with_cache(
    plan: LookupPlan, reader: RecordReader, cache: TimestampCache | None
) -> tuple[dict[ReadRequest, RecordRead], list[RecordRead]]:
    """Answer a plan: cached timestamps as FOUND reads, the rest from Kafka (then cached).

    Returns (all answers by request, the fresh reads). Shared by the exporter and the Spark job.
    """
    cached = cache.get_many(plan.from_cache) if cache is not None else {}
    answers = {request: RecordRead(request=request, outcome=ReadOutcome.FOUND,
                                   offset=request.offset, timestamp_ms=timestamp_ms,
                                   timestamp_type=timestamp_type)
               for request, (timestamp_ms, timestamp_type) in cached.items()}
    fresh = reader.read(plan.to_read) if plan.to_read else []
    for read in fresh:
        answers[read.request] = read
        if cache is not None:
            cache.put(read)
    return answers, fresh


def measure_partitions(
    lags: Sequence[PartitionLag],
    answers: Mapping[ReadRequest, RecordRead],
    at: Callable[[PartitionLag], int],
    retention: Mapping[str, int | None],
) -> tuple[PartitionResult, ...]:
    """Every partition's result, measured as of `at(lag)` (`domain.freshness.measured_at`)."""
    return tuple(sorted(
        (measure_partition(lag, answers, at(lag), retention.get(lag.key.topic))
         for lag in lags),
        key=lambda r: r.key,
    ))


def observed_times(lags: ClusterLags) -> dict[str, int]:
    """Consumer group → when Burrow's answer for it arrived (groups that carry the time)."""
    return {g.consumer: g.observed_ms for g in lags.groups if g.observed_ms is not None}


def _confirm_reachable(reader: RecordReader, partitions: Sequence[PartitionLag]) -> None:
    """A cycle that reads nothing from Kafka still proves a broker answers (one small metadata
    request, for one topic of the cycle): the cache and Burrow's last offsets would otherwise
    keep a cluster whose brokers are all stopped looking up. The cached timestamps themselves
    need no re-read: a record's timestamp never changes."""
    if isinstance(reader, ReachabilityProbe):
        reader.confirm_reachable(min((p.key.topic for p in partitions), default=None))


def _invalid_inputs(lags: ClusterLags, results: Sequence[PartitionResult]) -> list[str]:
    """Every impossible input of a cycle, described with names escaped: counted and logged."""
    out = list(lags.rejected)
    out += [f"group {escaped(g.consumer)}: {why}" for g in lags.groups for why in g.rejected]
    out += [f"group {escaped(r.key.consumer)} topic {escaped(r.key.topic)} partition "
            f"{r.key.partition}: {r.invalid}" for r in results if r.invalid]
    return out


class ClusterMeasurer:
    """Measures one cluster cycle after cycle, remembering its last success."""

    def __init__(
        self,
        cluster: ClusterSettings,
        burrow: BurrowSource,
        reader_factory: ReaderFactory,
        *,
        cache: TimestampCache | None = None,
        retention_factory: Callable[[ClusterKafkaSettings], RetentionSource] | None = None,
        groups: NameFilter | None = None,
        topics: NameFilter | None = None,
        shard: Shard | None = None,
        commit_lag_when_caught_up: bool = True,
        clock: Callable[[], int] = now_ms,
        gate: ComputeGate | None = None,
    ) -> None:
        self._commit_lag_when_caught_up = commit_lag_when_caught_up
        #: Shared by the clusters of one process: how many compute at once (`gate`).
        self._gate = gate
        self.cluster = cluster
        self._burrow = burrow
        self._reader_factory = reader_factory
        self._retention_factory = retention_factory
        self._cache = cache
        self._groups = groups or NameFilter.compile()
        self._topics = topics or NameFilter.compile()
        self._shard = shard or Shard()
        self._clock = clock
        self._reader: RecordReader | None = None
        self._retention: RetentionSource | None = None
        self._last_success_ms: int | None = None
        #: How many listed groups the filters excluded last cycle: a change is logged once.
        self._filtered = 0
        self._cycle = 0
        self._read_ms = 0
        #: The committed offset of every partition that was lagging at the last cycle Burrow
        #: answered: one still waiting there is aged to the end of the reads (`measured_at`).
        self._waiting: dict[PartitionKey, int] = {}
        #: What the running cycle is waiting for ("idle" between cycles): /healthz names it
        #: when a cycle overruns its deadline.
        self.phase = "idle"

    @property
    def name(self) -> str:
        return self.cluster.name

    def _kafka_settings(self) -> ClusterKafkaSettings:
        """bootstrap.servers from the config, or else from Burrow's view of the cluster."""
        kafka = self.cluster.kafka
        if kafka.properties.get("bootstrap.servers"):
            return kafka
        servers = self._burrow.cluster_servers(self.name)
        if not servers:
            raise BurrowError(f"clusters[{self.name}].kafka.\"bootstrap.servers\" is not set and "
                              f"Burrow lists no servers for cluster {self.name!r}")
        props = {**kafka.properties, "bootstrap.servers": ",".join(servers)}
        log.info("cluster=%s bootstrap.servers taken from Burrow: %s", self.name,
                 ", ".join(escaped(server) for server in servers))
        return replace(kafka, properties=props)

    def _ensure_clients(self) -> RecordReader:
        if self._reader is None:
            kafka = self._kafka_settings()
            self._reader = self._reader_factory(kafka)
            if self._retention_factory is not None:
                self._retention = self._retention_factory(kafka)
        return self._reader

    def _burrow_lags(self) -> ClusterLags:
        known = self._burrow.clusters()
        if self.name not in known:
            # Burrow's names escaped: this text reaches logs, /healthz and `once`'s table.
            raise BurrowError(f"Burrow does not list cluster {self.name!r} (it lists "
                              f"{', '.join(escaped(c) for c in known) or 'none'}); check the "
                              "cluster name")
        listed = self._burrow.consumers(self.name)
        kept = [g for g in listed if self._groups(g)]
        filtered = tuple(g for g in listed if not self._groups(g)) if len(kept) < len(
            listed) else ()
        groups = [g for g in kept if self._shard.owns(self.name, g)]
        lags = self._burrow.cluster_lags(self.name, groups)
        if filtered:
            lags = replace(lags, filtered=filtered)
        # Consumer-list entries the parser dropped (empty, not UTF-8, ...): counted, not asked.
        dropped: tuple[str, ...] = getattr(listed, "rejected", ())
        return replace(lags, rejected=(*dropped, *lags.rejected)) if dropped else lags

    def measure(self, deadline: Deadline | None = None) -> ClusterSnapshot:
        """Run one cycle; never raises for Burrow or Kafka trouble (that is in the health).

        With a `deadline`, every Burrow request and Kafka batch is cut at it, and a cycle that
        reaches it is published as failed: what it measured in time is true, the rest is
        absent, and the cluster is not called up.
        """
        self._cycle += 1
        started = self._clock()
        try:
            with cycle_deadline(deadline):
                return self._measure(started, deadline)
        finally:
            self.phase = "idle"

    def _measure(self, started: int, deadline: Deadline | None) -> ClusterSnapshot:
        self.phase = "asking Burrow"
        try:
            lags = self._burrow_lags()
            # Burrow's offsets are true as of its answers (per group when the source stamps
            # them, else now): the moment each value is measured at (`measured_at`).
            answered = self._clock()
            reader = self._ensure_clients()
        except FreshnessTrackerError as exc:
            return self._failed(started, str(exc), burrow_errors=1)

        # the topic filter once per topic, not per partition (100,000 regex matches a cycle)
        kept = {t: self._topics(t) for t in {p.key.topic for g in lags.groups
                                              for p in g.partitions}}
        partitions = [p for g in lags.groups for p in g.partitions if kept[p.key.topic]]
        cache = self._cache
        plan = plan_reads(partitions, cache.contains if cache else lambda _r: False,
                          read_caught_up_commit_lag=self._commit_lag_when_caught_up,
                          is_absent=cache.absent if cache else lambda _r: False)
        kafka_error: str | None = None
        read_started = time.monotonic()
        self.phase = "reading Kafka"
        try:
            if not plan.to_read:
                _confirm_reachable(reader, partitions)
            answers, fresh = read_with_cache(plan, reader, self._cache)
        except FreshnessTrackerError as exc:
            answers, fresh, kafka_error = {}, [], str(exc)
        self._read_ms = int((time.monotonic() - read_started) * 1000)
        # No broker answered the reads: asking it for retention.ms would only wait out another
        # timeout before the failure is published.
        self.phase = "reading retention.ms"
        retention = {} if kafka_error else self._retention_for({p.key.topic for p in partitions})
        self.phase = "waiting for a turn to compute"
        asked_turn = time.monotonic()
        with self._compute_turn(deadline):
            waited_s = time.monotonic() - asked_turn
            self.phase = "measuring"
            results = measure_partitions(partitions, answers, self._measured_at(
                lags, answered, self._clock()), retention)
            self._waiting = {p.key: p.committed_offset for p in partitions
                             if p.current_lag > 0 and p.committed_offset is not None}
            overran = deadline is not None and deadline.expired()
            snapshot, failures, invalid = self._completed(
                started, lags, plan, fresh, results, kafka_error, overran, waited_s)
        self._log_cycle(snapshot.health, lags, failures, invalid)  # no slot held on a write
        return snapshot

    def _measured_at(self, lags: ClusterLags, answered: int,
                     read: int) -> Callable[[PartitionLag], int]:
        """When each partition of this cycle is measured: its group's answer, or the end of
        the reads (`read`) for one still waiting where the last cycle saw it waiting."""
        observed, waiting = observed_times(lags), self._waiting
        return lambda lag: measured_at(lag, waiting.get(lag.key),
                                       observed.get(lag.key.consumer, answered), read)

    def _compute_turn(self, deadline: Deadline | None) -> AbstractContextManager[object]:
        """The measuring and roll-ups of this cycle take their turn with the other clusters'
        (`gate`), waiting at most half of what is left of the cycle's deadline: the other half
        is the measuring's. A cycle that still overruns says how long it waited."""
        if self._gate is None:
            return nullcontext()
        wait_s = deadline.remaining() / 2 if deadline is not None else math.inf
        return self._gate.turn(wait_s, f"cluster {self.name}")

    def _retention_for(self, topics: set[str]) -> Mapping[str, int | None]:
        if self._retention is None or not topics:
            return {}
        try:
            return self._retention.retention_ms(sorted(topics))
        except FreshnessTrackerError as exc:
            log.warning("cluster=%s retention.ms unavailable: %s", self.name, exc)
            return {}

    def _completed(
        self,
        started: int,
        lags: ClusterLags,
        plan: LookupPlan,
        fresh: list[RecordRead],
        results: tuple[PartitionResult, ...],
        kafka_error: str | None,
        overran: bool = False,
        waited_s: float = 0.0,
    ) -> tuple[ClusterSnapshot, list[RecordRead], list[str]]:
        """The cycle's snapshot, its failed reads and its impossible inputs (for the log)."""
        finished = self._clock()
        failures = [r for r in fresh if r.outcome is ReadOutcome.FAILED]
        reads_ok = len(fresh) - len(failures)
        # Burrow listed groups and not one of them could be measured (all gone or failed, or
        # every partition entry unusable): a cluster where nothing succeeds must look failed,
        # never healthy and empty.
        asked = len(lags.groups) + len(lags.missing_groups) + len(lags.failed_groups)
        empty = sum(1 for g in lags.groups if g.unusable_partitions and not g.partitions)
        burrow_ok = not (asked and len(lags.groups) == empty)
        invalid = _invalid_inputs(lags, results)
        kafka_ok = kafka_error is None and (not plan.to_read or reads_ok > 0)
        up = burrow_ok and kafka_ok and not overran
        error = kafka_error
        if overran:
            error = (f"the cycle reached its deadline (cycleTimeout) after "
                     f"{(finished - started) / 1000:.1f} s: {len(lags.failed_groups)} groups and "
                     f"{len(failures)} reads unanswered; what was measured in time is served")
            if waited_s >= 0.1:
                error += (f"; {waited_s:.1f} s of it waiting for a turn to compute (other "
                          "clusters were measuring or rendering)")
        if error is None and not kafka_ok:
            error = f"all {len(failures)} Kafka reads failed, first: {failures[0].error}"
        if error is None and not burrow_ok:
            error = (f"Burrow listed {asked} groups and none could be measured: "
                     f"{len(lags.missing_groups)} answered 404 NOTFOUND (gone), "
                     f"{len(lags.failed_groups)} failed")
            if empty:
                error += f", {empty} had no usable partition entry"
            if lags.failed_groups:
                error += f", first: {lags.failed_groups[0][1]}"
        if up:
            self._last_success_ms = finished
        health = ClusterHealth(
            cluster=self.name,
            up=up,
            last_attempt_ms=started,
            last_success_ms=self._last_success_ms,
            duration_ms=finished - started,
            groups=len(lags.groups),
            partitions=len(results),
            kafka_reads=len(fresh) if kafka_error is None else len(plan.to_read),
            kafka_read_failures=len(failures) if kafka_error is None else len(plan.to_read),
            # a failed cycle serves nothing from the cache: the hits were not answers
            cache_hits=0 if kafka_error else len(plan.from_cache) + len(plan.known_absent),
            burrow_errors=len(lags.failed_groups),
            filtered_groups=len(lags.filtered),
            invalid_inputs=len(invalid),
            data_loss_events=sum(r.status is PartitionStatus.DATA_LOSS for r in results),
            offset_mismatches=sum(r.outcome is ReadOutcome.GAP for r in fresh),
            read_duration_ms=self._read_ms,
            error=error,
        )
        return ClusterSnapshot(
            cluster=self.name,
            cycle_id=self._cycle,
            started_ms=started,
            finished_ms=finished,
            health=health,
            partitions=results,
            topics=roll_up_topics(results),
            # Groups whose answer failed stay listed as unmeasured beside those that answered;
            # when none answered, the cluster is down and that one series says it all.
            groups=roll_up_groups(lags.groups, results,
                                  lags.failed_groups if burrow_ok else (), self.name),
        ), failures, invalid

    def crashed(self, error: str) -> ClusterSnapshot:
        """The snapshot of a cycle that raised unexpectedly: down, with no partition values."""
        return self._failed(self._clock(), error)

    def overrun(self, started_ms: int, error: str) -> ClusterSnapshot:
        """The snapshot published for a cycle still running past its hard deadline: down, no
        partition values (the last cycle's would be frozen; this one's are not known)."""
        return self._failed(started_ms, error)

    def _failed(self, started: int, error: str, burrow_errors: int = 0) -> ClusterSnapshot:
        finished = self._clock()
        health = ClusterHealth(
            cluster=self.name, up=False, last_attempt_ms=started,
            last_success_ms=self._last_success_ms, duration_ms=finished - started,
            burrow_errors=burrow_errors, error=error,
        )
        log.warning("cycle cluster=%s cycle=%d up=false duration_ms=%d error=%r",
                    self.name, self._cycle, health.duration_ms, error)
        return ClusterSnapshot(self.name, self._cycle, started, finished, health)

    def _log_cycle(self, h: ClusterHealth, lags: ClusterLags, failures: list[RecordRead],
                   invalid: Sequence[str] = ()) -> None:
        log.info(
            "cycle cluster=%s cycle=%d up=%s groups=%d partitions=%d reads=%d cache_hits=%d "
            "read_failures=%d data_loss=%d duration_ms=%d",
            self.name, self._cycle, str(h.up).lower(), h.groups, h.partitions, h.kafka_reads,
            h.cache_hits, h.kafka_read_failures, h.data_loss_events, h.duration_ms,
        )
        if failures:
            first = failures[0]
            log.warning("cluster=%s %d Kafka reads failed, first topic=%s partition=%d "
                        "offset=%d: %s", self.name, len(failures), first.request.topic,
                        first.request.partition, first.request.offset, first.error)
        if lags.failed_groups:
            group, err = lags.failed_groups[0]
            log.warning("cluster=%s %d groups unreadable in Burrow (unmeasured: kafka_consumer_"
                        "group_measured 0), first group=%s: %s", self.name,
                        len(lags.failed_groups), escaped(group), err)
        if len(lags.filtered) != self._filtered:
            # Once per change, not per cycle: excluding groups is configuration, not trouble.
            self._filtered = len(lags.filtered)
            log.info("cluster=%s %d listed groups excluded by filters.groups (%s)%s", self.name,
                     len(lags.filtered), CLUSTER_FILTERED_GROUPS.name,
                     ", first: " + ", ".join(escaped(g) for g in lags.filtered[:3])
                     if lags.filtered else "")
        if invalid:
            log.warning("cluster=%s %d impossible inputs not used (%s), first: %s", self.name,
                        len(invalid), INVALID_INPUTS.total, "; ".join(invalid[:3]))
        if h.error:
            log.warning("cluster=%s failed: %s", self.name, h.error)


def cluster_measurers(
    settings: Settings,
    burrow: BurrowSource,
    reader_factory: ReaderFactory,
    *,
    cache: TimestampCache | None = None,
    retention_factory: Callable[[ClusterKafkaSettings], RetentionSource] | None = None,
    clock: Callable[[], int] = now_ms,
    gate: ComputeGate | None = None,
) -> list[ClusterMeasurer]:
    """One measurer per configured cluster, with the settings' filters, shard and lookup
    choices: the one wiring the live exporter and the Spark job share. `gate`: how many of
    them compute at once (the exporter's; the Spark job's executors need none)."""
    return [
        ClusterMeasurer(
            cluster, burrow, reader_factory, cache=cache, retention_factory=retention_factory,
            groups=settings.groups, topics=settings.topics, shard=settings.shard,
            commit_lag_when_caught_up=settings.lookup.commit_lag_when_caught_up, clock=clock,
            gate=gate,
        )
        for cluster in settings.clusters
    ]
