"""Lookup planning: what is read, what is served from cache, what is never read."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from freshness_tracker.domain.model import ReadRequest
from freshness_tracker.domain.plan import plan_reads
from tests.support.fakes import lag


def never(_r: ReadRequest) -> bool:
    return False


def test_lagging_partition_reads_committed_and_previous() -> None:
    plan = plan_reads([lag(committed=10, current_lag=3)], never)
    assert plan.to_read == (ReadRequest("c", "t", 0, 9), ReadRequest("c", "t", 0, 10))
    assert plan.from_cache == ()


def test_caught_up_partition_reads_nothing() -> None:
    plan = plan_reads([lag(committed=10, current_lag=0)], never)
    assert plan.to_read == () and plan.from_cache == ()


def test_caught_up_partition_uses_cache_for_commit_lag() -> None:
    plan = plan_reads([lag(committed=10, current_lag=0)], lambda r: r.offset == 9)
    assert plan.from_cache == (ReadRequest("c", "t", 0, 9),)
    assert plan.to_read == ()


def test_caught_up_commit_lag_read_when_enabled() -> None:
    plan = plan_reads([lag(committed=10, current_lag=0)], never, read_caught_up_commit_lag=True)
    assert plan.to_read == (ReadRequest("c", "t", 0, 9),)
    cached = plan_reads([lag(committed=10, current_lag=0)], lambda r: True,
                        read_caught_up_commit_lag=True)
    assert cached.to_read == () and cached.from_cache == (ReadRequest("c", "t", 0, 9),)


def test_previous_read_without_commit_time_none_at_zero() -> None:
    # C − 1 is also data-current-as-of, which needs no commit time
    assert plan_reads([lag(committed=10, current_lag=1, commit_time=None)], never).to_read == (
        ReadRequest("c", "t", 0, 9), ReadRequest("c", "t", 0, 10))
    assert plan_reads([lag(committed=0, current_lag=1)], never).to_read == (
        ReadRequest("c", "t", 0, 0),)


def test_a_c_minus_1_known_to_hold_no_record_is_never_read() -> None:
    marker = ReadRequest("c", "t", 0, 9)  # e.g. the commit marker of a transactional producer
    for current_lag in (0, 3):
        plan = plan_reads([lag(committed=10, current_lag=current_lag)], never,
                          read_caught_up_commit_lag=True, is_absent=lambda r: r == marker)
        assert marker not in plan.to_read and plan.known_absent == (marker,)


def test_an_absent_c_minus_1_is_still_read_as_another_groups_c() -> None:
    """Group a is at 10 (its C − 1 = 9 holds no record), group b lags at 9: b's freshness
    needs 9 read (the next record after it), in whichever order the groups come."""
    absent = {ReadRequest("c", "t", 0, 9)}
    a = lag(consumer="a", committed=10, current_lag=0)
    b = lag(consumer="b", committed=9, current_lag=1)
    for lags in ([a, b], [b, a]):
        plan = plan_reads(lags, never, read_caught_up_commit_lag=True,
                          is_absent=absent.__contains__)
        assert ReadRequest("c", "t", 0, 9) in plan.to_read and plan.known_absent == ()


def test_no_commit_plans_nothing() -> None:
    assert plan_reads([lag(committed=None, current_lag=0)], never).to_read == ()


def test_groups_at_same_offset_share_reads() -> None:
    lags = [lag(consumer=f"g{i}", committed=10, current_lag=3) for i in range(50)]
    assert len(plan_reads(lags, never).to_read) == 2


def test_cached_offsets_are_not_read_again() -> None:
    cached = {ReadRequest("c", "t", 0, 9), ReadRequest("c", "t", 0, 10)}
    plan = plan_reads([lag(committed=10, current_lag=3)], cached.__contains__)
    assert plan.to_read == ()
    assert set(plan.from_cache) == cached


lags_strategy = st.lists(
    st.builds(lag, consumer=st.sampled_from(["a", "b", "c"]), topic=st.sampled_from(["x", "y"]),
              partition=st.integers(0, 3), committed=st.one_of(st.none(), st.integers(0, 50)),
              current_lag=st.integers(0, 5), commit_time=st.one_of(st.none(), st.integers(1, 9))),
    max_size=40)


@given(lags=lags_strategy, cached=st.sets(st.integers(0, 50)),
       absent=st.sets(st.integers(0, 50)), caught_up=st.booleans())
def test_plan_invariants(lags: list, cached: set[int], absent: set[int],  # type: ignore[type-arg]
                         caught_up: bool) -> None:
    plan = plan_reads(lags, lambda r: r.offset in cached, read_caught_up_commit_lag=caught_up,
                      is_absent=lambda r: r.offset in absent)
    to_read, from_cache, gone = set(plan.to_read), set(plan.from_cache), set(plan.known_absent)
    assert len(to_read) == len(plan.to_read)  # no duplicates
    assert not to_read & from_cache and not gone & (to_read | from_cache)
    assert all(r.offset in absent for r in gone)
    assert all(r.offset not in cached for r in to_read)  # a cached offset is never read
    lagging = {(p.key.topic, p.key.partition, p.committed_offset) for p in lags
               if p.committed_offset is not None and p.current_lag > 0}
    committed = {(p.key.topic, p.key.partition, p.committed_offset) for p in lags
                 if p.committed_offset is not None}
    # every read belongs to a lagging partition (zero lag plans no read) or, with
    # read_caught_up_commit_lag, is C − 1 of one with a commit, never one known absent
    for r in to_read:
        at = (r.topic, r.partition, r.offset)
        before = (r.topic, r.partition, r.offset + 1)
        assert at in lagging or (before in (committed if caught_up else lagging)
                                 and r.offset not in absent)
    # every lagging partition's committed offset is read or cached
    for topic, partition, offset in lagging:
        req = ReadRequest("c", topic, partition, offset)
        assert req in to_read or req in from_cache
