"""Roll partitions up to topics and groups: the worst partition speaks for its group."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from freshness_tracker.domain.model import (
    GroupLags,
    GroupResult,
    PartitionResult,
    PartitionStatus,
    TopicResult,
)

__all__ = ["roll_up_groups", "roll_up_topics"]

_UNMEASURED = frozenset({PartitionStatus.LOOKUP_FAILED, PartitionStatus.NO_COMMIT,
                         PartitionStatus.INVALID})
#: Unmeasured partitions that may hold the worst freshness: the max is unknown while one exists.
_UNKNOWN = frozenset({PartitionStatus.LOOKUP_FAILED, PartitionStatus.INVALID})


def _worst(parts: Iterable[PartitionResult]) -> int | None:
    """The worst freshness, or None when it cannot be known.

    A partition whose read failed may be the worst one, so its group's max is unknown rather
    than the max of the others (a stuck group must never look fresh because Kafka was down);
    so may one whose inputs were impossible (INVALID: records may be waiting, of unknown age).
    A partition without any commit has no freshness to contribute and does not block the max.
    """
    known: list[int] = []
    for p in parts:
        if p.status in _UNKNOWN:
            return None
        if p.freshness_ms is not None:
            known.append(p.freshness_ms)
    return max(known) if known else None


def _lag(parts: Iterable[PartitionResult]) -> int | None:
    """The summed offset lag, or None when a partition's lag is impossible (not known)."""
    total = 0
    for p in parts:
        if p.status is PartitionStatus.INVALID and p.log_end_offset is None:
            return None
        total += p.offset_lag
    return total


def roll_up_topics(results: Sequence[PartitionResult]) -> tuple[TopicResult, ...]:
    """Max freshness and summed offset lag per (cluster, consumer, topic).

    The lag is summed from the partitions (an impossible one contributes 0), never taken from
    Burrow's `totallag`, so the roll-up always agrees with the partition series.
    """
    by_topic: dict[tuple[str, str, str], list[PartitionResult]] = defaultdict(list)
    for r in results:
        by_topic[(r.key.cluster, r.key.consumer, r.key.topic)].append(r)
    return tuple(
        TopicResult(
            cluster=cluster,
            consumer=consumer,
            topic=topic,
            max_freshness_ms=_worst(parts),
            offset_lag=_lag(parts),
            partitions=len(parts),
            unmeasured_partitions=sum(p.status in _UNMEASURED for p in parts),
        )
        for (cluster, consumer, topic), parts in sorted(by_topic.items())
    )


def roll_up_groups(
    groups: Sequence[GroupLags], results: Sequence[PartitionResult]
) -> tuple[GroupResult, ...]:
    """Per group: worst freshness, Burrow's status and the summed partition lag.

    The worst freshness is unknown (None) while any partition's read failed; how many
    partitions are unmeasured is always reported, so an alert can tell "fresh" from "unknown".
    A partition entry Burrow sent but that could not be used (`unusable_partitions`) counts as
    unmeasured and leaves the max and the lag unknown: it may be the worst one.
    """
    by_group: dict[tuple[str, str], list[PartitionResult]] = defaultdict(list)
    for r in results:
        by_group[(r.key.cluster, r.key.consumer)].append(r)
    out = []
    for g in sorted(groups, key=lambda g: (g.cluster, g.consumer)):
        parts = by_group.get((g.cluster, g.consumer), [])
        unusable = g.unusable_partitions
        out.append(
            GroupResult(
                cluster=g.cluster,
                consumer=g.consumer,
                burrow_status=g.burrow_status,
                max_freshness_ms=None if unusable else _worst(parts),
                offset_lag=None if unusable else _lag(parts),
                partitions=len(parts),
                unmeasured_partitions=unusable + sum(p.status in _UNMEASURED for p in parts),
                data_loss_partitions=sum(p.data_loss for p in parts),
            )
        )
    return tuple(out)
