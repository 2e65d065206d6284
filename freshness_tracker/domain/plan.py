"""Lookup planning: which records must be read from Kafka this cycle. Pure, no I/O.

For each partition with committed offset C and `current_lag > 0` we need the record at C
(freshness) and the record at C−1 (commit lag and data-current-as-of: the last committed
record); the two are adjacent, so one fetch serves both. A caught-up partition costs no read
unless `read_caught_up_commit_lag`: its C−1 is otherwise used only if already cached. Requests
are deduplicated across groups (many groups reading one topic at the same offset share a read),
and cached offsets are never re-read; neither is a C−1 known to hold no record (a transaction
marker, a deleted or compacted record: `is_absent`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from freshness_tracker.domain.model import PartitionLag, ReadRequest

__all__ = ["LookupPlan", "plan_reads"]


@dataclass(frozen=True, slots=True)
class LookupPlan:
    """`to_read` go to Kafka; `from_cache` are answered by the timestamp cache; `known_absent`
    are C−1 records the cache knows do not exist (no read, no value)."""

    to_read: tuple[ReadRequest, ...]
    from_cache: tuple[ReadRequest, ...]
    known_absent: tuple[ReadRequest, ...] = ()


def _wanted(lag: PartitionLag, read_caught_up: bool
            ) -> Iterable[tuple[ReadRequest, bool, bool]]:
    """(request, must_read, is C−1) for one partition; must_read False means cache-only."""
    committed = lag.committed_offset
    if committed is None or committed < 0 or lag.current_lag < 0:
        return  # a negative lag is impossible: the partition is reported invalid, unread
    key = lag.key
    lagging = lag.current_lag > 0
    if lagging:
        yield ReadRequest(cluster=key.cluster, topic=key.topic,
                          partition=key.partition, offset=committed), True, False
    if committed > 0:
        yield (ReadRequest(cluster=key.cluster, topic=key.topic, partition=key.partition,
                           offset=committed - 1),
               lagging or read_caught_up, True)


def plan_reads(
    lags: Iterable[PartitionLag],
    is_cached: Callable[[ReadRequest], bool],
    *,
    read_caught_up_commit_lag: bool = False,
    is_absent: Callable[[ReadRequest], bool] = lambda _r: False,
) -> LookupPlan:
    """Plan the reads for a set of partitions (any mix of groups and topics of one cluster).

    `read_caught_up_commit_lag` also reads C−1 of caught-up partitions (one read per commit
    movement) so groups that keep up get a commit lag too (the exporter's default,
    `lookup.commitLagWhenCaughtUp`; off here: zero lag, zero reads). `is_absent` tells a C−1
    that holds no record, for good: it is never read (a C is read whatever it says).
    """
    must_read: set[ReadRequest] = set()
    cached: set[ReadRequest] = set()
    absent: set[ReadRequest] = set()
    for lag in lags:
        for request, must, previous in _wanted(lag, read_caught_up_commit_lag):
            if request in cached or request in must_read:
                continue
            if is_cached(request):
                cached.add(request)
            elif previous and is_absent(request):
                absent.add(request)
            elif must:  # wanted at C by another group: read, whatever C−1 of one says
                must_read.add(request)
                absent.discard(request)
    return LookupPlan(tuple(sorted(must_read)), tuple(sorted(cached)), tuple(sorted(absent)))
