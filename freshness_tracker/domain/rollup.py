"""Roll partitions up to topics and groups: the worst partition speaks for its group."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from freshness_tracker.domain.model import (
    UNKNOWN_STATUS,
    GroupLags,
    GroupResult,
    PartitionResult,
    PartitionStatus,
    TopicResult,
)

__all__ = ["UNMEASURED", "roll_up_groups", "roll_up_topics"]

#: Partitions without a freshness value this cycle (the group's unmeasured count; the `once`
#: table counts the same).
UNMEASURED = frozenset({PartitionStatus.LOOKUP_FAILED, PartitionStatus.NO_COMMIT,
                        PartitionStatus.INVALID})
#: Unmeasured partitions that may hold the worst freshness: the max is unknown while one exists.
_UNKNOWN = frozenset({PartitionStatus.LOOKUP_FAILED, PartitionStatus.INVALID})
#: Partitions whose freshness comes from a record at C that is waiting (or, after data loss,
#: from the earliest retained record: a lower bound either way).
_WAITING = frozenset({PartitionStatus.OK, PartitionStatus.GAP, PartitionStatus.DATA_LOSS})


def _worst(parts: Iterable[PartitionResult]) -> tuple[int | None, int | None]:
    """(the worst freshness, the oldest record at C), or (None, None) when they cannot be known.

    A partition whose read failed may be the worst one, so its group's max is unknown rather
    than the max of the others (a stuck group must never look fresh because Kafka was down);
    so may one whose inputs were impossible (INVALID: records may be waiting, of unknown age).
    A partition without any commit has no freshness to contribute and does not block the max.

    The oldest record at C is the max's timestamp (the worst freshness is now minus it): known
    exactly when the max is, None as well when no partition has a record waiting (every one
    caught up, so freshness stays 0 however long nothing arrives).
    """
    known: list[int] = []
    stamps: list[int] = []
    for p in parts:
        status = p.status
        if status in _UNKNOWN:
            return None, None
        if p.freshness_ms is not None:
            known.append(p.freshness_ms)
            if status in _WAITING and p.record_timestamp_ms is not None:
                stamps.append(p.record_timestamp_ms)
    return (max(known) if known else None), (min(stamps) if stamps else None)


def _oldest_data(parts: Iterable[PartitionResult]) -> int | None:
    """The oldest "data current as of" of a group's partitions, or None when it is not known.

    Never newer than the truth: unknown while a partition that holds committed data has no
    value (its last committed record not read, gone, or the read failed) or has consumed
    nothing of a partition that holds records (committed offset 0 with lag). A partition
    without a commit, or empty (offset 0, no lag), holds nothing to be current on.
    """
    oldest: int | None = None
    for p in parts:
        if p.status is PartitionStatus.NO_COMMIT:
            continue
        if (p.committed_offset == 0 and p.offset_lag == 0
                and p.status is not PartitionStatus.INVALID):
            continue
        if p.data_current_as_of_ms is None:
            return None
        oldest = p.data_current_as_of_ms if oldest is None else min(oldest,
                                                                     p.data_current_as_of_ms)
    return oldest


def _catch_up(parts: Iterable[PartitionResult], unusable: int
              ) -> tuple[int | None, bool | None]:
    """(the longest catch-up estimate, whether every partition is catching up).

    Not catching up as soon as one partition is not (that is certain whatever the others do);
    otherwise unknown while one partition's estimate is unknown, or an entry was unusable.
    Partitions without a commit have no lag to catch up and are left out.
    """
    longest: int | None = None
    unknown = unusable > 0
    for p in parts:
        if p.status is PartitionStatus.NO_COMMIT:
            continue
        if p.catching_up is False:
            return None, False
        if p.catching_up is None or p.catch_up_ms is None:
            unknown = True
        else:
            longest = p.catch_up_ms if longest is None else max(longest, p.catch_up_ms)
    if unknown or longest is None:  # longest None: no partition has a lag to catch up
        return None, None
    return longest, True


def _lag(parts: Iterable[PartitionResult]) -> int | None:
    """The summed offset lag, or None when a partition's lag is impossible (not known)."""
    total = 0
    for p in parts:
        if p.status is PartitionStatus.INVALID and p.log_end_offset is None:
            return None
        total += p.offset_lag
    return total


def roll_up_topics(results: Sequence[PartitionResult]) -> tuple[TopicResult, ...]:
    """Max freshness (and its record's timestamp) and summed offset lag per (cluster,
    consumer, topic).

    The lag is summed from the partitions (an impossible one contributes 0), never taken from
    Burrow's `totallag`, so the roll-up always agrees with the partition series.
    """
    by_topic: dict[tuple[str, str, str], list[PartitionResult]] = defaultdict(list)
    for r in results:
        by_topic[(r.key.cluster, r.key.consumer, r.key.topic)].append(r)
    out = []
    for (cluster, consumer, topic), parts in sorted(by_topic.items()):
        worst, oldest = _worst(parts)
        out.append(TopicResult(
            cluster=cluster,
            consumer=consumer,
            topic=topic,
            max_freshness_ms=worst,
            offset_lag=_lag(parts),
            partitions=len(parts),
            unmeasured_partitions=sum(p.status in UNMEASURED for p in parts),
            oldest_uncommitted_ms=oldest,
        ))
    return tuple(out)


def roll_up_groups(
    groups: Sequence[GroupLags], results: Sequence[PartitionResult],
    failed: Sequence[tuple[str, str]] = (), cluster: str = "",
) -> tuple[GroupResult, ...]:
    """Per group: worst freshness and its record's timestamp, Burrow's status, the summed
    partition lag, the oldest data current as of and the longest catch-up estimate.

    The worst freshness is unknown (None) while any partition's read failed; how many
    partitions are unmeasured is always reported, so an alert can tell "fresh" from "unknown".
    A partition entry Burrow sent but that could not be used (`unusable_partitions`) counts as
    unmeasured and leaves the max and the lag unknown: it may be the worst one.

    `failed` are the (group, why) of `cluster` whose answer could not be used at all: each is
    listed too, unmeasured with no value and an UNKNOWN status, so a group whose answer turns
    unreadable stays visible instead of vanishing.
    """
    by_group: dict[tuple[str, str], list[PartitionResult]] = defaultdict(list)
    for r in results:
        by_group[(r.key.cluster, r.key.consumer)].append(r)
    out = []
    for g in sorted(groups, key=lambda g: (g.cluster, g.consumer)):
        parts = by_group.get((g.cluster, g.consumer), [])
        unusable = g.unusable_partitions
        estimate, catching_up = _catch_up(parts, unusable)
        worst, oldest = (None, None) if unusable else _worst(parts)
        out.append(
            GroupResult(
                cluster=g.cluster,
                consumer=g.consumer,
                burrow_status=g.burrow_status,
                max_freshness_ms=worst,
                offset_lag=None if unusable else _lag(parts),
                partitions=len(parts),
                unmeasured_partitions=unusable + sum(p.status in UNMEASURED for p in parts),
                data_loss_partitions=sum(p.data_loss for p in parts),
                data_current_as_of_ms=None if unusable else _oldest_data(parts),
                catch_up_ms=estimate,
                catching_up=catching_up,
                oldest_uncommitted_ms=oldest,
            )
        )
    out += [GroupResult(cluster=cluster, consumer=consumer, burrow_status=UNKNOWN_STATUS,
                        max_freshness_ms=None, offset_lag=None, partitions=0,
                        unmeasured_partitions=0, data_loss_partitions=0, error=why)
            for consumer, why in failed]
    return tuple(sorted(out, key=lambda g: (g.cluster, g.consumer)) if failed else out)
