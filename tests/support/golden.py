"""A published cluster snapshot with a partition of each kind (ok, lookup failed, data loss),
its topic and its group: the input of the collector's and the exposition's golden tests."""

from __future__ import annotations

from freshness_tracker.domain.model import (
    ClusterHealth,
    ClusterSnapshot,
    GroupResult,
    PartitionKey,
    PartitionResult,
    PartitionStatus,
    TopicResult,
)


def result(partition: int, status: PartitionStatus, freshness: int | None,
           **kw: object) -> PartitionResult:
    base: dict[str, object] = dict(
        key=PartitionKey("c", "g", "t", partition), status=status, burrow_status="WARN",
        committed_offset=10, log_end_offset=15, offset_lag=5, commit_time_ms=1,
        record_timestamp_ms=1, freshness_ms=freshness, commit_lag_ms=7)
    base.update(kw)
    return PartitionResult(**base)  # type: ignore[arg-type]


def snapshot(up: bool = True) -> ClusterSnapshot:
    parts = (
        result(0, PartitionStatus.OK, 1234, retention_headroom_ms=5000,
               data_current_as_of_ms=1_700_000_000_250, catch_up_ms=90_500, catching_up=True,
               owner="/10.0.0.7", client_id="billing-1"),
        result(1, PartitionStatus.LOOKUP_FAILED, None, commit_lag_ms=None, catching_up=False),
        result(2, PartitionStatus.DATA_LOSS, 900, lost_records=3, retention_headroom_ms=0),
    )
    return ClusterSnapshot(
        "c", 1, 1_000, 2_000,
        ClusterHealth("c", up, 1_000, 2_000 if up else None, 1_000, groups=1, partitions=3),
        parts, (TopicResult("c", "g", "t", 1234, 15, 3, 1, oldest_uncommitted_ms=1),),
        (GroupResult("c", "g", "WARN", 1234, 15, 3, 1, 1, 1_700_000_000_250, None, False,
                     oldest_uncommitted_ms=1),))
