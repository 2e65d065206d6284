"""The product's definition of freshness and commit lag, edge case by edge case."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshness_tracker.domain.freshness import (
    EARLIEST_PLAUSIBLE_MS,
    MAX_AHEAD_MS,
    commit_lag_ms,
    freshness_ms,
    measure_partition,
    measured_at,
    retention_headroom_ms,
)
from freshness_tracker.domain.model import PartitionStatus, ReadOutcome, ReadRequest, RecordRead
from tests.support.fakes import lag

MS = st.integers(min_value=0, max_value=2**53)
T0 = 1_700_000_000_000  # a real epoch: a timestamp before 2000 is impossible (INVALID)
OFFSETS = st.integers(min_value=0, max_value=2**62)


def found(offset: int, ts: int, topic: str = "t", partition: int = 0) -> RecordRead:
    return RecordRead(ReadRequest("c", topic, partition, offset), ReadOutcome.FOUND, offset, ts)


def reads(*rs: RecordRead) -> dict[ReadRequest, RecordRead]:
    return {r.request: r for r in rs}


def test_freshness_is_age_of_oldest_uncommitted_record() -> None:
    result = measure_partition(lag(committed=10, current_lag=5, commit_time=T0 + 9_000),
                               reads(found(10, T0 + 4_000), found(9, T0 + 3_000)),
                               now_ms=T0 + 10_000)
    assert result.status is PartitionStatus.OK
    assert result.freshness_ms == 6_000
    assert result.record_timestamp_ms == T0 + 4_000
    assert result.commit_lag_ms == 6_000  # committed at 9_000, record 9 appended at 3_000
    assert result.log_end_offset == 15


def test_caught_up_is_zero_without_any_read() -> None:
    result = measure_partition(lag(committed=10, current_lag=0), {}, now_ms=T0 + 10_000)
    assert result.status is PartitionStatus.CAUGHT_UP
    assert result.freshness_ms == 0
    assert result.commit_lag_ms is None  # nothing cached for offset 9


def test_caught_up_reports_commit_lag_from_cache() -> None:
    result = measure_partition(lag(committed=10, current_lag=0, commit_time=T0 + 5_000),
                               reads(found(9, T0 + 4_500)), now_ms=T0 + 10_000)
    assert (result.freshness_ms, result.commit_lag_ms) == (0, 500)


def test_commit_lag_clamped_when_burrow_kept_older_commit_time() -> None:
    # Burrow's min-distance merge keeps the earlier timestamp: commit "before" the record.
    result = measure_partition(lag(committed=10, current_lag=1, commit_time=T0 + 1_000),
                               reads(found(10, T0 + 2_000), found(9, T0 + 1_500)),
                               now_ms=T0 + 3_000)
    assert result.commit_lag_ms == 0


def test_no_commit_lag_at_offset_zero() -> None:
    result = measure_partition(lag(committed=0, current_lag=3, commit_time=T0 + 1_000),
                               reads(found(0, T0 + 500)), now_ms=T0 + 2_000)
    assert result.commit_lag_ms is None
    assert result.freshness_ms == 1_500


def test_no_commit_is_reported_without_values() -> None:
    result = measure_partition(lag(committed=None, current_lag=0, commit_time=None), {}, 1)
    assert result.status is PartitionStatus.NO_COMMIT
    assert result.freshness_ms is None and result.commit_lag_ms is None


def test_failed_read_leaves_no_value() -> None:
    failed = RecordRead(ReadRequest("c", "t", 0, 10), ReadOutcome.FAILED, error="timed out")
    result = measure_partition(lag(committed=10, current_lag=5), reads(failed), T0 + 10_000)
    assert result.status is PartitionStatus.LOOKUP_FAILED
    assert result.freshness_ms is None
    assert result.error == "timed out"


def test_missing_read_is_a_failure_not_zero() -> None:
    result = measure_partition(lag(committed=10, current_lag=5), {}, 10_000)
    assert result.status is PartitionStatus.LOOKUP_FAILED and result.freshness_ms is None


def test_gap_measures_from_next_existing_record() -> None:
    gap = RecordRead(ReadRequest("c", "t", 0, 10), ReadOutcome.GAP, 13, T0 + 7_000)
    result = measure_partition(lag(committed=10, current_lag=5), reads(gap), T0 + 10_000)
    assert result.status is PartitionStatus.GAP
    assert result.freshness_ms == 3_000


def test_end_means_nothing_to_consume() -> None:
    # Burrow counted a transaction marker (phantom lag 1, Burrow #461): no record exists.
    end = RecordRead(ReadRequest("c", "t", 0, 10), ReadOutcome.END, log_end_offset=11)
    result = measure_partition(lag(committed=10, current_lag=1), reads(end), T0 + 10_000)
    assert result.status is PartitionStatus.CAUGHT_UP and result.freshness_ms == 0


def test_data_loss_reports_lower_bound_from_earliest_retained() -> None:
    lost = RecordRead(ReadRequest("c", "t", 0, 10), ReadOutcome.OUT_OF_RANGE, 25, T0 + 6_000,
                      log_start_offset=25)
    result = measure_partition(lag(committed=10, current_lag=20), reads(lost), T0 + 10_000,
                               retention_ms=60_000)
    assert result.status is PartitionStatus.DATA_LOSS
    assert result.data_loss and result.freshness_is_lower_bound
    assert result.lost_records == 15
    assert result.freshness_ms == 4_000
    assert result.retention_headroom_ms == 0


def test_data_loss_without_readable_record_has_no_freshness() -> None:
    lost = RecordRead(ReadRequest("c", "t", 0, 10), ReadOutcome.OUT_OF_RANGE,
                      log_start_offset=40)
    result = measure_partition(lag(committed=10, current_lag=20), reads(lost), T0 + 10_000)
    assert result.status is PartitionStatus.DATA_LOSS
    assert result.freshness_ms is None and result.lost_records == 30


def test_retention_headroom() -> None:
    result = measure_partition(lag(committed=10, current_lag=5), reads(found(10, T0 + 4_000)),
                               T0 + 10_000, retention_ms=60_000)
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


# --- impossible inputs: no value, never a made-up one -------------------------------------------

DAY = 86_400_000


def test_a_negative_lag_is_invalid_not_caught_up() -> None:
    """Burrow's current_lag -3 gave freshness 0 with no read while records were unread."""
    result = measure_partition(lag(committed=10, current_lag=-3, commit_time=T0),
                               reads(found(9, T0 - 1_000)), T0 + 10_000)
    assert result.status is PartitionStatus.INVALID
    assert result.freshness_ms is None and result.commit_lag_ms is None
    assert result.log_end_offset is None and result.offset_lag == 0  # no lag is claimed
    assert result.committed_offset == 10  # what Burrow said and is possible stays
    assert result.invalid and "current_lag -3" in result.invalid
    assert result.error == result.invalid  # the history table says why


@pytest.mark.parametrize("commit_time", [99_999_999_999_999_999, T0 + 10_000 + DAY + 1, 1,
                                         EARLIEST_PLAUSIBLE_MS - 1])
def test_an_absurd_commit_time_gives_no_commit_lag(commit_time: int) -> None:
    """A commit timestamp of 99999999999999999 exported commit_lag_ms 9.99e16."""
    result = measure_partition(lag(committed=10, current_lag=5, commit_time=commit_time),
                               reads(found(10, T0 + 4_000), found(9, T0 + 3_000)), T0 + 10_000)
    assert result.commit_lag_ms is None and result.commit_time_ms is None
    assert result.invalid and "commit time" in result.invalid
    assert result.status is PartitionStatus.OK and result.freshness_ms == 6_000  # not from it


def test_a_commit_time_within_a_day_ahead_is_a_clock_skew_not_garbage() -> None:
    result = measure_partition(lag(committed=10, current_lag=5, commit_time=T0 + DAY),
                               reads(found(10, T0 + 4_000), found(9, T0 + 3_000)), T0 + 10_000)
    assert result.commit_lag_ms == DAY - 3_000 and result.invalid is None


@pytest.mark.parametrize("ts", [T0 + 10_000 + DAY + 1, 2**62, 0, 1_000, EARLIEST_PLAUSIBLE_MS - 1])
def test_an_absurd_record_timestamp_is_invalid_not_a_huge_or_zero_freshness(ts: int) -> None:
    result = measure_partition(lag(committed=10, current_lag=5), reads(found(10, ts)), T0 + 10_000)
    assert result.status is PartitionStatus.INVALID
    assert result.freshness_ms is None and result.record_timestamp_ms is None
    assert result.retention_headroom_ms is None
    assert result.invalid and "record timestamp at offset 10" in result.invalid


def test_a_record_less_than_a_day_ahead_is_clamped_to_zero_freshness() -> None:
    result = measure_partition(lag(committed=10, current_lag=5, commit_time=None),
                               reads(found(10, T0 + 10_000 + DAY)), T0 + 10_000)
    assert (result.status, result.freshness_ms, result.invalid) == (PartitionStatus.OK, 0, None)


def test_an_absurd_timestamp_at_c_minus_1_gives_no_commit_lag() -> None:
    result = measure_partition(lag(committed=10, current_lag=5, commit_time=T0 + 9_000),
                               reads(found(10, T0 + 4_000), found(9, 5)), T0 + 10_000)
    assert result.commit_lag_ms is None and result.freshness_ms == 6_000
    assert result.invalid and "offset 9" in result.invalid


def test_data_loss_with_an_absurd_earliest_timestamp_keeps_the_loss_not_the_bound() -> None:
    lost = RecordRead(ReadRequest("c", "t", 0, 10), ReadOutcome.OUT_OF_RANGE, 25, 3,
                      log_start_offset=25)
    result = measure_partition(lag(committed=10, current_lag=20), reads(lost), T0)
    assert result.status is PartitionStatus.DATA_LOSS and result.lost_records == 15
    assert result.freshness_ms is None and result.record_timestamp_ms is None
    assert result.invalid


def test_a_log_end_beyond_int64_is_invalid() -> None:
    result = measure_partition(lag(committed=2**62, current_lag=2**62), {}, T0)
    assert result.status is PartitionStatus.INVALID and result.log_end_offset is None


INT64 = st.integers(-(2**63), 2**63 - 1)
NOW = st.integers(EARLIEST_PLAUSIBLE_MS, 2**45)  # any real clock, to year 3084


@given(committed=st.one_of(st.none(), st.integers(0, 2**63 - 1)), current=INT64, now=NOW,
       commit_time=st.one_of(st.none(), INT64), ts=INT64, prev_ts=INT64,
       outcome=st.sampled_from(list(ReadOutcome)))
def test_no_input_ever_yields_an_impossible_number(
        committed: int | None, current: int, now: int, commit_time: int | None, ts: int,
        prev_ts: int, outcome: ReadOutcome) -> None:
    """Whatever Burrow and Kafka say, every exported number is one a real clock could give."""
    current = current if committed is not None else 0  # the parser's rule for `end: null`
    at_c = committed if committed is not None else 0
    read = RecordRead(ReadRequest("c", "t", 0, at_c), outcome, at_c, ts,
                      log_start_offset=at_c + 1)
    previous = found(at_c - 1, prev_ts)
    result = measure_partition(lag(committed=committed, current_lag=current,
                                   commit_time=commit_time), reads(read, previous), now)
    ceiling = now + MAX_AHEAD_MS
    if result.freshness_ms is not None:
        assert 0 <= result.freshness_ms <= now - EARLIEST_PLAUSIBLE_MS
    if result.commit_lag_ms is not None:
        assert 0 <= result.commit_lag_ms <= ceiling - EARLIEST_PLAUSIBLE_MS
    for stamp in (result.commit_time_ms, result.record_timestamp_ms):
        assert stamp is None or EARLIEST_PLAUSIBLE_MS <= stamp <= ceiling
    assert result.offset_lag >= 0
    assert result.log_end_offset is None or 0 <= result.log_end_offset <= 2**63 - 1
    if committed is not None and current < 0:
        assert result.status is PartitionStatus.INVALID and result.log_end_offset is None
    if result.status is PartitionStatus.INVALID:
        assert result.freshness_ms is None and result.invalid
    if result.status is PartitionStatus.CAUGHT_UP:
        assert current >= 0


def test_a_simulated_clock_before_2000_keeps_its_small_numbers() -> None:
    """Tests and replays count milliseconds from 0: only times before the epoch are absurd
    there, and the future bound still holds."""
    result = measure_partition(lag(committed=10, current_lag=5, commit_time=9_000),
                               reads(found(10, 4_000), found(9, 3_000)), 10_000)
    assert (result.freshness_ms, result.commit_lag_ms, result.invalid) == (6_000, 6_000, None)
    ahead = measure_partition(lag(committed=10, current_lag=5, commit_time=None),
                              reads(found(10, 10_000 + DAY + 1)), 10_000)
    assert ahead.status is PartitionStatus.INVALID
    before = measure_partition(lag(committed=10, current_lag=5, commit_time=None),
                               reads(found(10, -5)), 10_000)
    assert before.status is PartitionStatus.INVALID


@given(committed=st.one_of(st.none(), OFFSETS), current=st.integers(0, 2**40),
       previous=st.one_of(st.none(), OFFSETS), answered=MS, read=MS)
def test_only_a_partition_waiting_where_it_waited_a_cycle_ago_is_aged_past_burrows_answer(
        committed: int | None, current: int, previous: int | None, answered: int,
        read: int) -> None:
    at = measured_at(lag(committed=committed, current_lag=current), previous, answered, read)
    stuck = current > 0 and committed is not None and committed == previous
    assert at == (max(answered, read) if stuck else answered)
    assert at >= answered  # never earlier than Burrow's offsets were true


def test_a_stuck_partition_is_measured_when_the_reads_are_in() -> None:
    stuck = lag(committed=4, current_lag=6)
    assert measured_at(stuck, 4, T0, T0 + 3_000) == T0 + 3_000
    assert measured_at(stuck, 3, T0, T0 + 3_000) == T0  # it committed since the last cycle
    assert measured_at(stuck, None, T0, T0 + 3_000) == T0  # no last cycle to compare with
    assert measured_at(lag(committed=4, current_lag=0), 4, T0, T0 + 3_000) == T0  # caught up
