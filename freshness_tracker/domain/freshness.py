"""Freshness, commit lag and retention headroom: the numbers users alert on.

All pure: the clock is an argument, values are integer milliseconds. The rules here are the
product's definition, so every edge case is decided in this one file:

- freshness = now − timestamp of the record at the committed offset (the oldest uncommitted
  record); 0 when nothing is uncommitted. Never negative (producer clocks can run ahead).
- commit lag = commit time − timestamp of the last committed record (offset − 1), clamped at 0
  because Burrow keeps the *earlier* commit time when commits arrive within `min-distance`.
- data current as of = the timestamp of that same last committed record: the group has the
  partition's data up to then ("billing has data up to 10:42").
- catch-up estimate = offset lag ÷ the net rate at which the group gained on the producers over
  Burrow's window of commits ((start lag − end lag) ÷ (end time − start time)); "not catching
  up" when that rate is ≤ 0 or Burrow says the consumer stopped or stalled (its window is then
  no picture of now); unknown when an input is missing. An estimate: it assumes both rates hold.
- data loss: the committed offset fell below the log start. Freshness is then measured from the
  earliest retained record, which is a lower bound: the lost records were older still.
- the moment a value is true for: its group's Burrow answer, except for a partition that still
  waits at the committed offset the previous cycle saw: no commit for a whole cycle, so it is
  aged with the clock to the end of the cycle's reads (`measured_at`).
- impossible inputs give no value, never a made-up one: a negative lag (the commit is past the
  log end), a log end beyond int64, a timestamp before 2000 or more than a day ahead of now.
  The partition is INVALID (unmeasured, counted) when its freshness would come from them; an
  impossible commit time only drops the commit lag, an impossible timestamp at C − 1 the commit
  lag and data-current-as-of.
"""

from __future__ import annotations

from collections.abc import Mapping

from freshness_tracker.domain.model import (
    LagWindow,
    PartitionLag,
    PartitionResult,
    PartitionStatus,
    ReadOutcome,
    ReadRequest,
    RecordRead,
)

__all__ = [
    "EARLIEST_PLAUSIBLE_MS",
    "MAX_AHEAD_MS",
    "NOT_MOVING",
    "catch_up",
    "commit_lag_ms",
    "freshness_ms",
    "implausible_time",
    "measure_partition",
    "measured_at",
    "retention_headroom_ms",
    "still_waiting",
]

#: 2000-01-01T00:00:00Z. Kafka (2011) and Burrow hold nothing older: an earlier timestamp is a
#: producer's zero or garbage clock, and a freshness from it would be decades, not data.
EARLIEST_PLAUSIBLE_MS = 946_684_800_000
#: Clocks disagree, so a timestamp a little ahead of ours is normal (freshness clamps to 0); one
#: more than a day ahead is garbage, and a commit lag from it would be absurd.
MAX_AHEAD_MS = 86_400_000
_INT64_MAX = 2**63 - 1


def implausible_time(timestamp_ms: int, now_ms: int, what: str) -> str | None:
    """Why `timestamp_ms` cannot be a real time as seen at `now_ms`, or None when it can.

    A clock that itself reads before 2000 is a simulated one (tests, replays): against it only
    times before the epoch are ruled out, so its small numbers keep their meaning.
    """
    if timestamp_ms < (EARLIEST_PLAUSIBLE_MS if now_ms >= EARLIEST_PLAUSIBLE_MS else 0):
        return f"{what} {timestamp_ms} is before 2000"
    if timestamp_ms > now_ms + MAX_AHEAD_MS:
        return f"{what} {timestamp_ms} is more than a day ahead of now ({now_ms})"
    return None


def measured_at(lag: PartitionLag, previous_committed: int | None, answered_ms: int,
                read_ms: int) -> int:
    """The moment `lag`'s values are true for, with `answered_ms` when Burrow answered for its
    group and `read_ms` when the cycle's Kafka reads were in.

    Burrow's offsets are true as of its answer, and a group that commits during the reads is
    the next cycle's to show: so a partition is measured then, and a slow read or a Spark
    job's start-up adds nothing to its freshness. A partition that still waits at the offset
    the previous cycle saw (`previous_committed`) has committed nothing for a whole cycle:
    it is aged to `read_ms`, as a stuck consumer's freshness grows with the clock, so its
    value is exact when published instead of behind by the cycle's reads.
    """
    return max(read_ms, answered_ms) if still_waiting(lag, previous_committed) else answered_ms


def still_waiting(lag: PartitionLag, previous_committed: int | None) -> bool:
    """Whether `lag` has records waiting at the committed offset the previous cycle saw: its
    group committed nothing in between (`measured_at`)."""
    return (lag.current_lag > 0 and lag.committed_offset is not None
            and lag.committed_offset == previous_committed)


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


#: Burrow's partition statuses that say its window is no picture of now: STOP (no commit for
#: longer than the window spans) and STALL (the offset does not move while there is lag).
NOT_MOVING = frozenset({"STOP", "STALL"})


def catch_up(current_lag: int, window: LagWindow | None,
             burrow_status: str = "OK") -> tuple[int | None, bool | None]:
    """(estimated ms until the lag is 0, whether the group is catching up) for one partition.

    The group gains on the producers at (start lag − end lag) ÷ (end time − start time) records
    per ms over Burrow's window; the estimate is `current_lag` ÷ that rate, rounded up. Nothing
    to catch up (lag 0): (0, True). A rate ≤ 0, or Burrow's STOP or STALL: (None, False), never
    a made-up duration. Unknown (None, None): a negative lag, a REWIND inside the window, a
    window that is missing, has a null value, spans no time or has a negative lag.
    """
    if current_lag == 0:
        return 0, True
    if current_lag < 0:
        return None, None
    if burrow_status in NOT_MOVING:
        return None, False
    if burrow_status == "REWIND" or window is None:
        return None, None
    start_ms, start_lag, end_ms, end_lag = (window.start_ms, window.start_lag, window.end_ms,
                                            window.end_lag)
    if start_ms is None or start_lag is None or end_ms is None or end_lag is None:
        return None, None
    span = end_ms - start_ms
    if span <= 0 or start_lag < 0 or end_lag < 0:
        return None, None
    gained = start_lag - end_lag
    if gained <= 0:
        return None, False
    return -(-current_lag * span // gained), True  # lag ÷ (gained ÷ span), rounded up


def _read_for(
    lag: PartitionLag, offset: int, reads: Mapping[ReadRequest, RecordRead]
) -> RecordRead | None:
    key = lag.key
    return reads.get(ReadRequest(cluster=key.cluster, topic=key.topic, partition=key.partition,
                                 offset=offset))


def _last_committed(
    lag: PartitionLag, reads: Mapping[ReadRequest, RecordRead], now_ms: int,
) -> tuple[int | None, str | None]:
    """(timestamp of the last committed record, at C − 1; why it was impossible). Commit lag
    and data-current-as-of both come from it; only a record found exactly there counts."""
    committed = lag.committed_offset
    if committed is None or committed <= 0:
        return None, None
    previous = _read_for(lag, committed - 1, reads)
    if previous is None or previous.outcome is not ReadOutcome.FOUND:
        return None, None
    if previous.timestamp_ms is None:
        return None, None
    problem = implausible_time(previous.timestamp_ms, now_ms,
                               f"record timestamp at offset {committed - 1}")
    if problem:
        return None, problem
    return previous.timestamp_ms, None


def _impossible_lag(lag: PartitionLag) -> str | None:
    """Why Burrow's offsets for the partition cannot be true, or None."""
    committed = lag.committed_offset
    if committed is None:
        return None
    if lag.current_lag < 0:
        return (f"Burrow reported current_lag {lag.current_lag}: the commit ({committed}) is "
                "past the log end")
    if committed + lag.current_lag > _INT64_MAX:
        return (f"committed offset {committed} + current_lag {lag.current_lag} is beyond a "
                "64-bit log end offset")
    return None


def measure_partition(
    lag: PartitionLag,
    reads: Mapping[ReadRequest, RecordRead],
    now_ms: int,
    retention_ms: int | None = None,
) -> PartitionResult:
    """Turn Burrow's view of one partition plus the records read into one result.

    `now_ms` is the time the result is true for (the caller's choice: `cycle.ClusterMeasurer`);
    it becomes `sample_time_ms`.

    `reads` holds answers for (cluster, topic, partition, offset); cached timestamps are passed
    in as FOUND reads. A read that is missing or failed yields no freshness value at all,
    never an old one; neither does an impossible input (see the module docstring).
    """
    committed = lag.committed_offset
    commit_time = lag.commit_time_ms
    commit_time_problem = None
    if commit_time is not None:
        commit_time_problem = implausible_time(commit_time, now_ms, "commit time")
        if commit_time_problem:
            commit_time = None  # an impossible commit time: no commit lag, nothing absurd stored
    bad_offsets = _impossible_lag(lag)
    if bad_offsets or committed is None:
        last_ts, last_problem = None, None
        estimate, catching_up = None, None
    else:
        last_ts, last_problem = _last_committed(lag, reads, now_ms)
        estimate, catching_up = catch_up(lag.current_lag, lag.window, lag.burrow_status)
    commit_lag = None if last_ts is None or commit_time is None else commit_lag_ms(commit_time,
                                                                                   last_ts)
    status, record_ts, freshness, lost, headroom, error, invalid = _outcome(
        lag, bad_offsets, reads, now_ms, retention_ms)
    return PartitionResult(
        key=lag.key,
        status=status,
        burrow_status=lag.burrow_status,
        committed_offset=committed,
        log_end_offset=None if bad_offsets else lag.log_end_offset,
        offset_lag=0 if bad_offsets else lag.current_lag,
        commit_time_ms=commit_time,
        record_timestamp_ms=record_ts,
        freshness_ms=freshness,
        commit_lag_ms=commit_lag,
        lost_records=lost,
        retention_headroom_ms=headroom,
        error=error,
        invalid=invalid or bad_offsets or commit_time_problem or last_problem,
        sample_time_ms=now_ms,
        data_current_as_of_ms=last_ts,
        catch_up_ms=estimate,
        catching_up=catching_up,
        owner=lag.owner,
        client_id=lag.client_id,
    )


#: What `_outcome` decides: (status, record timestamp, freshness, lost records, retention
#: headroom, error, why an input was impossible).
_Outcome = tuple[PartitionStatus, int | None, int | None, int, int | None, str | None,
                 str | None]


def _outcome(lag: PartitionLag, bad_offsets: str | None, reads: Mapping[ReadRequest, RecordRead],
             now_ms: int, retention_ms: int | None) -> _Outcome:
    """The partition's status and the values that come from the record at the committed
    offset (or from its absence)."""
    committed = lag.committed_offset
    if committed is None:
        return PartitionStatus.NO_COMMIT, None, None, 0, None, None, None
    if bad_offsets:
        # Never "caught up": whether records are waiting is exactly what is not known.
        return PartitionStatus.INVALID, None, None, 0, None, bad_offsets, None
    if lag.current_lag == 0:
        return (PartitionStatus.CAUGHT_UP, None, 0, 0, retention_headroom_ms(retention_ms, 0),
                None, None)
    read = _read_for(lag, committed, reads)
    if read is None:
        return (PartitionStatus.LOOKUP_FAILED, None, None, 0, None,
                "no read was made for this offset", None)
    if read.outcome in (ReadOutcome.FOUND, ReadOutcome.GAP) and read.timestamp_ms is not None:
        problem = implausible_time(read.timestamp_ms, now_ms,
                                   f"record timestamp at offset {read.offset}")
        if problem:
            return PartitionStatus.INVALID, None, None, 0, None, problem, problem
        fresh = freshness_ms(now_ms, read.timestamp_ms)
        status = PartitionStatus.OK if read.outcome is ReadOutcome.FOUND else PartitionStatus.GAP
        return (status, read.timestamp_ms, fresh, 0,
                retention_headroom_ms(retention_ms, fresh), None, None)
    if read.outcome is ReadOutcome.END:
        # The broker holds nothing at or after the committed offset (Burrow's LEO counted
        # transaction markers, or is older than the commit): nothing is waiting to be consumed.
        return (PartitionStatus.CAUGHT_UP, None, 0, 0, retention_headroom_ms(retention_ms, 0),
                None, None)
    if read.outcome is ReadOutcome.OUT_OF_RANGE:
        log_start = read.log_start_offset
        lost = max(log_start - committed, 0) if log_start is not None else 0
        earliest_ts = read.timestamp_ms
        problem = None if earliest_ts is None else implausible_time(
            earliest_ts, now_ms, "timestamp of the earliest retained record")
        if problem:
            earliest_ts = None  # data loss is still a fact; its bound is not known
        bound = freshness_ms(now_ms, earliest_ts) if earliest_ts is not None else None
        return (PartitionStatus.DATA_LOSS, earliest_ts, bound, lost,
                0 if retention_ms is not None else None, read.error, problem)
    return (PartitionStatus.LOOKUP_FAILED, None, None, 0, None,
            read.error or f"read {read.outcome}", None)
