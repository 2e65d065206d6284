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

_UNMEASURED = frozenset({PartitionStatus.LOOKUP_FAILED, PartitionStatus.NO_COMMIT})


def _worst(parts: Iterable[PartitionResult]) -> int | None:
    """The worst freshness, or None when it cannot be known.

    A partition whose read failed may be the worst one, so its group's max is unknown rather
    than the max of the others (a stuck group must never look fresh because Kafka was down).
    A partition without any commit has no freshness to contribute and does not block the max.
    """
    known: list[int] = []
    for p in parts:
        if p.status is PartitionStatus.LOOKUP_FAILED:
            return None
        if p.freshness_ms is not None:
            known.append(p.freshness_ms)
    return max(known) if known else None


def roll_up_topics(results: Sequence[PartitionResult]) -> tuple[TopicResult, ...]:
    """Max freshness and summed offset lag per (cluster, consumer, topic)."""
    by_topic: dict[tuple[str, str, str], list[PartitionResult]] = defaultdict(list)
    for r in results:
        by_topic[(r.key.cluster, r.key.consumer, r.key.topic)].append(r)
    return tuple(
        TopicResult(
            cluster=cluster,
            consumer=consumer,
            topic=topic,
            max_freshness_ms=_worst(parts),
            offset_lag=sum(p.offset_lag for p in parts),
            partitions=len(parts),
            unmeasured_partitions=sum(p.status in _UNMEASURED for p in parts),
        )
        for (cluster, consumer, topic), parts in sorted(by_topic.items())
    )


def roll_up_groups(
    groups: Sequence[GroupLags], results: Sequence[PartitionResult]
) -> tuple[GroupResult, ...]:
    """Per group: worst freshness, Burrow's status and total lag.

    The worst freshness is unknown (None) while any partition's read failed; how many
    partitions are unmeasured is always reported, so an alert can tell "fresh" from "unknown".
    """
    by_group: dict[tuple[str, str], list[PartitionResult]] = defaultdict(list)
    for r in results:
        by_group[(r.key.cluster, r.key.consumer)].append(r)
    out = []
    for g in sorted(groups, key=lambda g: (g.cluster, g.consumer)):
        parts = by_group.get((g.cluster, g.consumer), [])
        out.append(
            GroupResult(
                cluster=g.cluster,
                consumer=g.consumer,
                burrow_status=g.burrow_status,
                max_freshness_ms=_worst(parts),
                offset_lag=sum(p.offset_lag for p in parts),
                partitions=len(parts),
                unmeasured_partitions=sum(p.status in _UNMEASURED for p in parts),
                data_loss_partitions=sum(p.data_loss for p in parts),
            )
        )
    return tuple(out)
