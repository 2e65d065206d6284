"""Rows of the Parquet history: one partition result and one cluster snapshot with defaults,
shared by the history sink, compaction and table tests."""

from __future__ import annotations

from freshness_tracker.domain.model import (
    ClusterHealth,
    ClusterSnapshot,
    PartitionKey,
    PartitionResult,
    PartitionStatus,
)

START = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def result(consumer: str = "g", topic: str = "t", partition: int = 0, **kw: object
           ) -> PartitionResult:
    fields: dict[str, object] = dict(
        status=PartitionStatus.OK, burrow_status="OK", committed_offset=10, log_end_offset=15,
        offset_lag=5, commit_time_ms=START - 2_000, record_timestamp_ms=START - 60_000,
        freshness_ms=60_500, commit_lag_ms=1_000)
    fields.update(kw)
    return PartitionResult(PartitionKey("c", consumer, topic, partition), **fields)  # type: ignore[arg-type]


def snapshot(*rows: PartitionResult, cluster: str = "c", start: int = START) -> ClusterSnapshot:
    health = ClusterHealth(cluster, True, start, start + 500, 500)
    return ClusterSnapshot(cluster, 7, start, start + 500, health, tuple(rows))
