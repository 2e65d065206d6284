"""Two questions, per partition and per group: what is the latest data the group has
(data current as of: the timestamp of the last committed record, C − 1) and how long until it
gets better (catch-up estimate: offset lag ÷ the net rate the group gains at over Burrow's
window)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshness_tracker.domain.freshness import NOT_MOVING, catch_up, measure_partition
from freshness_tracker.domain.model import (
    LagWindow,
    PartitionKey,
    PartitionResult,
    PartitionStatus,
    ReadOutcome,
    ReadRequest,
    RecordRead,
)
from freshness_tracker.domain.rollup import roll_up_groups
from tests.support.fakes import group, lag

T0 = 1_700_000_000_000
LAGS = st.integers(0, 2**40)
TIMES = st.integers(0, 2**45)
STATUSES = st.sampled_from(["OK", "WARN", "ERR", "STOP", "STALL", "REWIND", "UNKNOWN"])


def window(start_lag: int | None, end_lag: int | None, span_ms: int | None = 60_000
           ) -> LagWindow:
    return LagWindow(T0, start_lag, None if span_ms is None else T0 + span_ms, end_lag)


def found(offset: int, ts: int) -> RecordRead:
    return RecordRead(ReadRequest("c", "t", 0, offset), ReadOutcome.FOUND, offset, ts)


def reads(*rs: RecordRead) -> dict[ReadRequest, RecordRead]:
    return {r.request: r for r in rs}


# --- catch-up estimate, one partition ------------------------------------------------------


def test_estimate_is_lag_over_the_net_gain_rate() -> None:
    # gained 600 records of lag in 60 s: 10 records/s; 1,200 to go: 120 s
    assert catch_up(1_200, window(1_000, 400)) == (120_000, True)


def test_estimate_rounds_up() -> None:
    assert catch_up(1, window(3, 0, span_ms=1_000)) == (334, True)


def test_zero_lag_is_zero_whatever_the_window_says() -> None:
    for w in (None, window(0, 100), window(None, None)):
        for status in ("OK", "STOP", "STALL", "REWIND"):
            assert catch_up(0, w, status) == (0, True)


@pytest.mark.parametrize(("start", "end"), [(400, 400), (400, 1_000)])
def test_a_lag_that_does_not_shrink_is_not_catching_up(start: int, end: int) -> None:
    assert catch_up(1_000, window(start, end)) == (None, False)


@pytest.mark.parametrize("status", sorted(NOT_MOVING))
def test_stopped_or_stalled_is_not_catching_up_even_with_a_good_old_window(status: str) -> None:
    # the window shrank fast, but Burrow says no commit since: that rate is no picture of now
    assert catch_up(1_000, window(5_000, 10), status) == (None, False)


@pytest.mark.parametrize("w", [
    None,  # start or end null
    window(None, 10), window(1_000, None),  # Burrow >= 1.3: lag null
    LagWindow(None, 1_000, T0, 10), LagWindow(T0, 1_000, None, 10),  # no timestamps
    window(1_000, 10, span_ms=0), window(1_000, 10, span_ms=-5),  # no time spanned
    window(-1, 10), window(1_000, -1),  # impossible lags
])
def test_missing_or_impossible_inputs_are_unknown(w: LagWindow | None) -> None:
    assert catch_up(1_000, w) == (None, None)


def test_a_rewind_inside_the_window_is_unknown_and_a_negative_lag_too() -> None:
    assert catch_up(1_000, window(5_000, 10), "REWIND") == (None, None)
    assert catch_up(-3, window(5_000, 10)) == (None, None)


@given(lag=LAGS, start=LAGS, end=LAGS, span=st.integers(-10, 2**40), status=STATUSES)
def test_every_answer_is_consistent(lag: int, start: int, end: int, span: int,
                                    status: str) -> None:
    estimate, catching = catch_up(lag, window(start, end, span), status)
    assert estimate is None or estimate >= 0
    if estimate is not None:
        assert catching is True  # a duration only for a group that gains
    if lag == 0:
        assert (estimate, catching) == (0, True)
    elif catching is True:
        assert estimate is not None and estimate > 0
        assert span > 0 and start > end  # a positive net rate, and only then
    if lag and start <= end and span > 0 and status not in ("REWIND",):
        assert (estimate, catching) == (None, False)


@given(lag=st.integers(1, 2**40), more=st.integers(0, 2**40), start=LAGS, end=LAGS,
       span=st.integers(1, 2**40))
def test_more_lag_never_takes_less_time(lag: int, more: int, start: int, end: int,
                                        span: int) -> None:
    a, _ = catch_up(lag, window(start, end, span))
    b, _ = catch_up(lag + more, window(start, end, span))
    assert (a is None) == (b is None)
    if a is not None and b is not None:
        assert b >= a


@given(lag=st.integers(1, 2**40), start=st.integers(1, 2**40), end=LAGS, faster=LAGS,
       span=st.integers(1, 2**40))
def test_a_faster_gain_never_takes_more_time(lag: int, start: int, end: int, faster: int,
                                             span: int) -> None:
    end = min(end, start - 1)  # gaining
    slow, _ = catch_up(lag, window(start, end, span))
    fast, _ = catch_up(lag, window(start + faster, end, span))
    assert slow is not None and fast is not None and fast <= slow
    longer, _ = catch_up(lag, window(start, end, span + faster))  # same gain, more time
    assert longer is not None and longer >= slow


def test_measure_partition_carries_the_estimate_and_not_for_no_commit() -> None:
    p = lag(committed=10, current_lag=60)._replace(window=window(100, 40))
    r = measure_partition(p, reads(found(10, T0), found(9, T0 - 1)), T0 + 1_000)
    assert (r.catch_up_ms, r.catching_up) == (60_000, True)
    none = lag(committed=None, current_lag=0, commit_time=None)._replace(window=window(9, 1))
    r = measure_partition(none, {}, T0)
    assert (r.catch_up_ms, r.catching_up) == (None, None)
    bad = lag(committed=10, current_lag=-2)._replace(window=window(9, 1))
    r = measure_partition(bad, {}, T0)
    assert r.status is PartitionStatus.INVALID and (r.catch_up_ms, r.catching_up) == (None, None)


# --- data current as of, one partition -----------------------------------------------------


def test_data_current_as_of_is_the_last_committed_records_time() -> None:
    r = measure_partition(lag(committed=10, current_lag=5, commit_time=T0 + 9_000),
                          reads(found(10, T0 + 4_000), found(9, T0 + 3_000)), T0 + 10_000)
    assert r.data_current_as_of_ms == T0 + 3_000  # the record commit lag reads
    assert r.commit_lag_ms == 6_000


def test_caught_up_partition_has_it_when_c_minus_1_was_read_or_cached() -> None:
    r = measure_partition(lag(committed=10, current_lag=0), reads(found(9, T0 + 1)), T0 + 10)
    assert r.data_current_as_of_ms == T0 + 1
    assert measure_partition(lag(committed=10, current_lag=0), {}, T0).data_current_as_of_ms \
        is None


def test_it_needs_no_commit_time() -> None:
    r = measure_partition(lag(committed=10, current_lag=0, commit_time=None),
                          reads(found(9, T0 + 1)), T0 + 10)
    assert (r.data_current_as_of_ms, r.commit_lag_ms) == (T0 + 1, None)


@pytest.mark.parametrize("previous", [
    RecordRead(ReadRequest("c", "t", 0, 9), ReadOutcome.GAP, 10, T0),  # compacted away
    RecordRead(ReadRequest("c", "t", 0, 9), ReadOutcome.OUT_OF_RANGE, log_start_offset=20),
    RecordRead(ReadRequest("c", "t", 0, 9), ReadOutcome.FAILED, error="timed out"),
    RecordRead(ReadRequest("c", "t", 0, 9), ReadOutcome.END),
])
def test_only_a_record_found_at_c_minus_1_counts(previous: RecordRead) -> None:
    r = measure_partition(lag(committed=10, current_lag=5), reads(found(10, T0), previous),
                          T0 + 10)
    assert r.data_current_as_of_ms is None


def test_none_at_offset_zero_and_none_from_an_absurd_timestamp() -> None:
    assert measure_partition(lag(committed=0, current_lag=3), reads(found(0, T0)),
                             T0 + 10).data_current_as_of_ms is None
    r = measure_partition(lag(committed=10, current_lag=0, commit_time=None),
                          reads(found(9, 5)), T0)
    assert r.data_current_as_of_ms is None and r.invalid  # counted, never exported


@given(committed=st.integers(1, 2**40), current=st.integers(0, 2**20),
       ts=st.integers(T0 - 10**10, T0 + 10**8), now=st.integers(T0, T0 + 10**10))
def test_data_current_as_of_is_never_after_now_plus_skew_nor_before_2000(
        committed: int, current: int, ts: int, now: int) -> None:
    r = measure_partition(lag(committed=committed, current_lag=current),
                          reads(found(committed - 1, ts),
                                RecordRead(ReadRequest("c", "t", 0, committed),
                                           ReadOutcome.FOUND, committed, ts)), now)
    if r.data_current_as_of_ms is not None:
        assert r.data_current_as_of_ms == ts
        assert 946_684_800_000 <= ts <= now + 86_400_000


# --- group roll-ups ----------------------------------------------------------------------


def part(partition: int, *, as_of: int | None = None, estimate: int | None = None,
         catching: bool | None = None, status: PartitionStatus = PartitionStatus.OK,
         committed: int | None = 10, offset_lag: int = 5) -> PartitionResult:
    return PartitionResult(PartitionKey("c", "g", "t", partition), status, "OK", committed, 15,
                           offset_lag, None, None, 1, None, data_current_as_of_ms=as_of,
                           catch_up_ms=estimate, catching_up=catching)


def rolled(*parts: PartitionResult, unusable: int = 0) -> tuple[int | None, int | None,
                                                                  bool | None]:
    g = replace(group("c", "g", lag()), unusable_partitions=unusable)
    (r,) = roll_up_groups([g], parts)
    return r.data_current_as_of_ms, r.catch_up_ms, r.catching_up


def test_group_data_is_current_as_of_its_oldest_partition() -> None:
    assert rolled(part(0, as_of=T0 + 50), part(1, as_of=T0 + 10))[0] == T0 + 10


def test_group_as_of_is_unknown_while_a_partition_with_data_has_none() -> None:
    assert rolled(part(0, as_of=T0), part(1))[0] is None
    assert rolled(part(0, as_of=T0), part(1, status=PartitionStatus.LOOKUP_FAILED))[0] is None
    assert rolled(part(0, as_of=T0), part(1, status=PartitionStatus.DATA_LOSS))[0] is None
    # consumed nothing of a partition that holds records: nothing of it is current
    assert rolled(part(0, as_of=T0), part(1, committed=0, offset_lag=3))[0] is None
    assert rolled(part(0, as_of=T0), unusable=1)[0] is None


def test_partitions_holding_nothing_do_not_block_it() -> None:
    assert rolled(part(0, as_of=T0), part(1, status=PartitionStatus.NO_COMMIT, committed=None),
                  part(2, committed=0, offset_lag=0))[0] == T0
    assert rolled(part(1, status=PartitionStatus.NO_COMMIT, committed=None))[0] is None


def test_group_catch_up_is_its_slowest_partition() -> None:
    assert rolled(part(0, estimate=5, catching=True), part(1, estimate=0, catching=True),
                  part(2, estimate=90, catching=True))[1:] == (90, True)


def test_one_partition_not_catching_up_makes_the_group_not_catching_up() -> None:
    # certain whatever the others are, even unknown ones or an unusable entry
    assert rolled(part(0, estimate=5, catching=True), part(1, catching=False), part(2),
                  unusable=1)[1:] == (None, False)


def test_an_unknown_partition_makes_the_group_unknown() -> None:
    assert rolled(part(0, estimate=5, catching=True), part(1))[1:] == (None, None)
    assert rolled(part(0, estimate=5, catching=True), unusable=1)[1:] == (None, None)
    assert rolled()[1:] == (None, None)  # no partition: nothing to say
    assert rolled(part(0, status=PartitionStatus.NO_COMMIT, committed=None))[1:] == (None, None)


OUTCOMES = st.sampled_from([(None, None), (None, False), (0, True), (7, True), (1_000, True)])


@given(st.lists(OUTCOMES, max_size=8), st.integers(0, 1))
def test_group_catch_up_properties(outcomes: list[tuple[int | None, bool | None]],
                                   unusable: int) -> None:
    parts = [part(i, estimate=e, catching=c) for i, (e, c) in enumerate(outcomes)]
    estimate, catching = rolled(*parts, unusable=unusable)[1:]
    if any(c is False for _e, c in outcomes):
        assert (estimate, catching) == (None, False)
    elif outcomes and not unusable and all(c for _e, c in outcomes):
        assert catching is True and estimate == max(e for e, _c in outcomes if e is not None)
    else:
        assert (estimate, catching) == (None, None)


@given(st.lists(st.one_of(st.none(), st.integers(T0, T0 + 10**9)), min_size=1, max_size=8))
def test_group_as_of_is_never_newer_than_any_partition(values: list[int | None]) -> None:
    as_of = rolled(*[part(i, as_of=v) for i, v in enumerate(values)])[0]
    if None in values:
        assert as_of is None
    else:
        assert as_of == min(v for v in values if v is not None)
