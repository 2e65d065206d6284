"""Freshness, commit lag and retention headroom: the numbers users alert on.

All pure: the clock is an argument, values are integer milliseconds. The rules here are the
product's definition, so every edge case is decided in this one file:

- freshness = now − timestamp of the record at the committed offset (the oldest uncommitted
  record); 0 when nothing is uncommitted. Never negative (producer clocks can run ahead).
- commit lag = commit time − timestamp of the last committed record (offset − 1), clamped at 0
  because Burrow keeps the *earlier* commit time when commits arrive within `min-distance`.
- data loss: the committed offset fell below the log start. Freshness is then measured from the
  earliest retained record, which is a lower bound: the lost records were older still.
"""

from __future__ import annotations

from collections.abc import Mapping

from freshness_tracker.domain.model import (
    PartitionLag,
    PartitionResult,
    PartitionStatus,
    ReadOutcome,
    ReadRequest,
    RecordRead,
)

__all__ = [
    "commit_lag_ms",
    "freshness_ms",
    "measure_partition",
    "retention_headroom_ms",
]


def freshness_ms(now_ms: int, oldest_uncommitted_ts_ms: int) -> int:
    """Age of the oldest uncommitted record, never negative."""
    return max(now_ms - oldest_uncommitted_ts_ms, 0)


def commit_lag_ms(commit_time_ms: int, last_committed_ts_ms: int) -> int:
    """How long the last committed record waited before its commit, never negative."""
    return max(commit_time_ms - last_committed_ts_ms, 0)


def retention_headroom_ms(retention_ms: int | None, freshness: int | None) -> int | None:
    """Time left before retention deletes the oldest unconsumed record (may be negative)."""
    if retention_ms is None or retention_ms < 0 or freshness is None:
        return None
    return retention_ms - freshness


def _read_for(
    lag: PartitionLag, offset: int, reads: Mapping[ReadRequest, RecordRead]
) -> RecordRead | None:
    key = lag.key
    return reads.get(ReadRequest(key.cluster, key.topic, key.partition, offset))


def _commit_lag(lag: PartitionLag, reads: Mapping[ReadRequest, RecordRead]) -> int | None:
    committed = lag.committed_offset
    if committed is None or committed <= 0 or lag.commit_time_ms is None:
        return None
    previous = _read_for(lag, committed - 1, reads)
    if previous is None or previous.outcome is not ReadOutcome.FOUND:
        return None
    if previous.timestamp_ms is None:
        return None
    return commit_lag_ms(lag.commit_time_ms, previous.timestamp_ms)


def measure_partition(
    lag: PartitionLag,
    reads: Mapping[ReadRequest, RecordRead],
    now_ms: int,
    retention_ms: int | None = None,
) -> PartitionResult:
    """Turn Burrow's view of one partition plus the records read into one result.

    `reads` holds answers for (cluster, topic, partition, offset); cached timestamps are passed
    in as FOUND reads. A read that is missing or failed yields no freshness value at all,
    never an old one.
    """
    committed = lag.committed_offset

    def result(
        status: PartitionStatus,
        *,
        record_ts: int | None = None,
        freshness: int | None = None,
        lost: int = 0,
        headroom: int | None = None,
        error: str | None = None,
    ) -> PartitionResult:
        return PartitionResult(
            key=lag.key,
            status=status,
            burrow_status=lag.burrow_status,
            committed_offset=committed,
            log_end_offset=lag.log_end_offset,
            offset_lag=lag.current_lag,
            commit_time_ms=lag.commit_time_ms,
            record_timestamp_ms=record_ts,
            freshness_ms=freshness,
            commit_lag_ms=_commit_lag(lag, reads),
            lost_records=lost,
            retention_headroom_ms=headroom,
            error=error,
        )

    if committed is None:
        return result(PartitionStatus.NO_COMMIT)
    if lag.current_lag <= 0:
        return result(PartitionStatus.CAUGHT_UP, freshness=0,
                      headroom=retention_headroom_ms(retention_ms, 0))

    read = _read_for(lag, committed, reads)
    if read is None:
        return result(PartitionStatus.LOOKUP_FAILED, error="no read was made for this offset")
    if read.outcome in (ReadOutcome.FOUND, ReadOutcome.GAP) and read.timestamp_ms is not None:
        fresh = freshness_ms(now_ms, read.timestamp_ms)
        status = PartitionStatus.OK if read.outcome is ReadOutcome.FOUND else PartitionStatus.GAP
        return result(status, record_ts=read.timestamp_ms, freshness=fresh,
                      headroom=retention_headroom_ms(retention_ms, fresh))
    if read.outcome is ReadOutcome.END:
        # The broker holds nothing at or after the committed offset (Burrow's LEO counted
        # transaction markers, or is older than the commit): nothing is waiting to be consumed.
        return result(PartitionStatus.CAUGHT_UP, freshness=0,
                      headroom=retention_headroom_ms(retention_ms, 0))
    if read.outcome is ReadOutcome.OUT_OF_RANGE:
        log_start = read.log_start_offset
        lost = max(log_start - committed, 0) if log_start is not None else 0
        earliest_ts = read.timestamp_ms
        bound = freshness_ms(now_ms, earliest_ts) if earliest_ts is not None else None
        return result(PartitionStatus.DATA_LOSS, record_ts=earliest_ts, freshness=bound,
                      lost=lost, headroom=0 if retention_ms is not None else None,
                      error=read.error)
    return result(PartitionStatus.LOOKUP_FAILED, error=read.error or f"read {read.outcome}")
