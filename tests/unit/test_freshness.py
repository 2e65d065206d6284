"""The product's definition of freshness and commit lag, edge case by edge case."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from freshness_tracker.domain.freshness import (
    commit_lag_ms,
    freshness_ms,
    measure_partition,
    retention_headroom_ms,
)
from freshness_tracker.domain.model import PartitionStatus, ReadOutcome, ReadRequest, RecordRead
from tests.fakes import lag

MS = st.integers(min_value=0, max_value=2**53)
OFFSETS = st.integers(min_value=0, max_value=2**62)


def found(offset: int, ts: int, topic: str = "t", partition: int = 0) -> RecordRead:
    return RecordRead(ReadRequest("c", topic, partition, offset), ReadOutcome.FOUND, offset, ts)


def reads(*rs: RecordRead) -> dict[ReadRequest, RecordRead]:
    return {r.request: r for r in rs}


def test_freshness_is_age_of_oldest_uncommitted_record() -> None:
    result = measure_partition(lag(committed=10, current_lag=5, commit_time=9_000),
                               reads(found(10, 4_000), found(9, 3_000)), now_ms=10_000)
    assert result.status is PartitionStatus.OK
    assert result.freshness_ms == 6_000
    assert result.record_timestamp_ms == 4_000
    assert result.commit_lag_ms == 6_000  # committed at 9_000, record 9 appended at 3_000
    assert result.log_end_offset == 15


def test_caught_up_is_zero_without_any_read() -> None:
    result = measure_partition(lag(committed=10, current_lag=0), {}, now_ms=10_000)
    assert result.status is PartitionStatus.CAUGHT_UP
    assert result.freshness_ms == 0
    assert result.commit_lag_ms is None  # nothing cached for offset 9


def test_caught_up_reports_commit_lag_from_cache() -> None:
    result = measure_partition(lag(committed=10, current_lag=0, commit_time=5_000),
                               reads(found(9, 4_500)), now_ms=10_000)
    assert (result.freshness_ms, result.commit_lag_ms) == (0, 500)


def test_commit_lag_clamped_when_burrow_kept_older_commit_time() -> None:
    # Burrow's min-distance merge keeps the earlier timestamp: commit "before" the record.
    result = measure_partition(lag(committed=10, current_lag=1, commit_time=1_000),
                               reads(found(10, 2_000), found(9, 1_500)), now_ms=3_000)
    assert result.commit_lag_ms == 0


def test_no_commit_lag_at_offset_zero() -> None:
    result = measure_partition(lag(committed=0, current_lag=3, commit_time=1_000),
                               reads(found(0, 500)), now_ms=2_000)
    assert result.commit_lag_ms is None
    assert result.freshness_ms == 1_500


def test_no_commit_is_reported_without_values() -> None:
    result = measure_partition(lag(committed=None, current_lag=0, commit_time=None), {}, 1)
    assert result.status is PartitionStatus.NO_COMMIT
    assert result.freshness_ms is None and result.commit_lag_ms is None


def test_failed_read_leaves_no_value() -> None:
    failed = RecordRead(ReadRequest("c", "t", 0, 10), ReadOutcome.FAILED, error="timed out")
    result = measure_partition(lag(committed=10, current_lag=5), reads(failed), 10_000)
    assert result.status is PartitionStatus.LOOKUP_FAILED
    assert result.freshness_ms is None
    assert result.error == "timed out"


def test_missing_read_is_a_failure_not_zero() -> None:
    result = measure_partition(lag(committed=10, current_lag=5), {}, 10_000)
    assert result.status is PartitionStatus.LOOKUP_FAILED and result.freshness_ms is None


def test_gap_measures_from_next_existing_record() -> None:
    gap = RecordRead(ReadRequest("c", "t", 0, 10), ReadOutcome.GAP, 13, 7_000)
    result = measure_partition(lag(committed=10, current_lag=5), reads(gap), 10_000)
    assert result.status is PartitionStatus.GAP
    assert result.freshness_ms == 3_000


def test_end_means_nothing_to_consume() -> None:
    # Burrow counted a transaction marker (phantom lag 1, Burrow #461): no record exists.
    end = RecordRead(ReadRequest("c", "t", 0, 10), ReadOutcome.END, log_end_offset=11)
    result = measure_partition(lag(committed=10, current_lag=1), reads(end), 10_000)
    assert result.status is PartitionStatus.CAUGHT_UP and result.freshness_ms == 0


def test_data_loss_reports_lower_bound_from_earliest_retained() -> None:
    lost = RecordRead(ReadRequest("c", "t", 0, 10), ReadOutcome.OUT_OF_RANGE, 25, 6_000,
                      log_start_offset=25)
    result = measure_partition(lag(committed=10, current_lag=20), reads(lost), 10_000,
                               retention_ms=60_000)
    assert result.status is PartitionStatus.DATA_LOSS
    assert result.data_loss and result.freshness_is_lower_bound
    assert result.lost_records == 15
    assert result.freshness_ms == 4_000
    assert result.retention_headroom_ms == 0


def test_data_loss_without_readable_record_has_no_freshness() -> None:
    lost = RecordRead(ReadRequest("c", "t", 0, 10), ReadOutcome.OUT_OF_RANGE,
                      log_start_offset=40)
    result = measure_partition(lag(committed=10, current_lag=20), reads(lost), 10_000)
    assert result.status is PartitionStatus.DATA_LOSS
    assert result.freshness_ms is None and result.lost_records == 30


def test_retention_headroom() -> None:
    result = measure_partition(lag(committed=10, current_lag=5), reads(found(10, 4_000)),
                               10_000, retention_ms=60_000)
    assert result.retention_headroom_ms == 54_000
    assert retention_headroom_ms(None, 5) is None
    assert retention_headroom_ms(-1, 5) is None  # retention.ms = -1: kept forever
    assert retention_headroom_ms(100, None) is None


@given(now=MS, ts=MS)
def test_freshness_never_negative(now: int, ts: int) -> None:
    assert freshness_ms(now, ts) >= 0
    assert freshness_ms(now, ts) == (now - ts if now >= ts else 0)


@given(commit=MS, ts=MS)
def test_commit_lag_never_negative(commit: int, ts: int) -> None:
    assert commit_lag_ms(commit, ts) == max(commit - ts, 0)


@given(committed=OFFSETS, ts=MS, now=MS, commit_time=MS)
def test_zero_lag_always_zero_freshness(committed: int, ts: int, now: int,
                                        commit_time: int) -> None:
    result = measure_partition(lag(committed=committed, current_lag=0, commit_time=commit_time),
                               reads(found(committed, ts)), now)
    assert result.freshness_ms == 0
    assert result.status is PartitionStatus.CAUGHT_UP


@given(committed=OFFSETS, current=st.integers(1, 2**40), ts=MS, now=MS,
       outcome=st.sampled_from(list(ReadOutcome)))
def test_any_read_outcome_gives_a_consistent_result(committed: int, current: int, ts: int,
                                                    now: int, outcome: ReadOutcome) -> None:
    read = RecordRead(ReadRequest("c", "t", 0, committed), outcome, committed, ts,
                      log_start_offset=committed + 1)
    result = measure_partition(lag(committed=committed, current_lag=current), reads(read), now)
    assert result.freshness_ms is None or result.freshness_ms >= 0
    if result.status is PartitionStatus.LOOKUP_FAILED:
        assert result.freshness_ms is None
    if result.freshness_ms is not None and outcome in (ReadOutcome.FOUND, ReadOutcome.GAP):
        assert result.freshness_ms == max(now - ts, 0)
    assert result.log_end_offset == committed + current
