"""Roll-ups: the worst partition speaks for its group, and unknown stays unknown."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from freshness_tracker.domain.model import PartitionKey, PartitionResult, PartitionStatus
from freshness_tracker.domain.rollup import roll_up_groups, roll_up_topics
from tests.support.fakes import group, lag


def result(partition: int, status: PartitionStatus, freshness: int | None, topic: str = "t",
           offset_lag: int = 1, log_end: int | None = 2) -> PartitionResult:
    return PartitionResult(PartitionKey("c", "g", topic, partition), status, "OK", 1, log_end,
                           offset_lag, None, None, freshness, None)


def test_group_max_is_worst_partition() -> None:
    parts = [result(0, PartitionStatus.OK, 500), result(1, PartitionStatus.CAUGHT_UP, 0),
             result(2, PartitionStatus.DATA_LOSS, 900)]
    (g,) = roll_up_groups([group("c", "g", lag())], parts)
    assert g.max_freshness_ms == 900
    assert g.unmeasured_partitions == 0 and g.data_loss_partitions == 1
    assert g.offset_lag == 3


def test_failed_read_makes_group_max_unknown_never_fresh() -> None:
    # Kafka down: the lagging partition failed, the caught-up one says 0. The group is NOT fresh.
    parts = [result(0, PartitionStatus.LOOKUP_FAILED, None, offset_lag=500),
             result(1, PartitionStatus.CAUGHT_UP, 0, offset_lag=0)]
    (g,) = roll_up_groups([group("c", "g", lag())], parts)
    assert g.max_freshness_ms is None and g.unmeasured_partitions == 1
    (t,) = roll_up_topics(parts)
    assert t.max_freshness_ms is None and t.unmeasured_partitions == 1


def test_no_commit_partition_does_not_block_the_max() -> None:
    parts = [result(0, PartitionStatus.NO_COMMIT, None), result(1, PartitionStatus.OK, 70)]
    (g,) = roll_up_groups([group("c", "g", lag())], parts)
    assert g.max_freshness_ms == 70 and g.unmeasured_partitions == 1


def test_an_impossible_partition_makes_max_and_lag_unknown_never_fresh() -> None:
    """A negative Burrow lag (INVALID, no log end): records may wait, of unknown number and
    age, so neither the worst freshness nor the summed lag of its topic or group is known."""
    parts = [result(0, PartitionStatus.INVALID, None, offset_lag=0, log_end=None),
             result(1, PartitionStatus.OK, 70, offset_lag=3)]
    (g,) = roll_up_groups([group("c", "g", lag())], parts)
    assert (g.max_freshness_ms, g.offset_lag, g.unmeasured_partitions) == (None, None, 1)
    (t,) = roll_up_topics(parts)
    assert (t.max_freshness_ms, t.offset_lag, t.unmeasured_partitions) == (None, None, 1)


def test_an_implausible_record_time_blocks_the_max_but_keeps_the_lag() -> None:
    parts = [result(0, PartitionStatus.INVALID, None, offset_lag=4),
             result(1, PartitionStatus.OK, 70, offset_lag=3)]
    (g,) = roll_up_groups([group("c", "g", lag())], parts)
    assert (g.max_freshness_ms, g.offset_lag, g.unmeasured_partitions) == (None, 7, 1)


def test_an_unusable_partition_entry_counts_unmeasured_for_its_group() -> None:
    """A partition Burrow sent with an unexportable topic may be the worst one."""
    parts = [result(0, PartitionStatus.OK, 70)]
    burrow = replace(group("c", "g", lag()), rejected=("bad topic",), unusable_partitions=1)
    (g,) = roll_up_groups([burrow], parts)
    assert (g.max_freshness_ms, g.offset_lag, g.unmeasured_partitions) == (None, None, 1)
    repeat = replace(group("c", "g", lag()), rejected=("listed again",))
    (g,) = roll_up_groups([repeat], parts)  # a repeated entry hides nothing
    assert (g.max_freshness_ms, g.offset_lag, g.unmeasured_partitions) == (70, 1, 0)


def test_group_without_partitions_is_listed_with_no_value() -> None:
    (g,) = roll_up_groups([group("c", "g")], [])
    assert g.max_freshness_ms is None and g.partitions == 0


statuses = st.sampled_from(list(PartitionStatus))


@given(st.lists(st.tuples(statuses, st.integers(0, 10**9), st.sampled_from(["a", "b"])),
                min_size=1, max_size=30))
def test_rollup_properties(rows: list[tuple[PartitionStatus, int, str]]) -> None:
    unknown = (PartitionStatus.LOOKUP_FAILED, PartitionStatus.NO_COMMIT, PartitionStatus.INVALID)
    parts = [result(i, s, None if s in unknown else f, topic=t)
             for i, (s, f, t) in enumerate(rows)]
    (g,) = roll_up_groups([group("c", "g", lag())], parts)
    measured = [p.freshness_ms for p in parts if p.freshness_ms is not None]
    assert g.unmeasured_partitions == sum(p.status in unknown for p in parts)
    if any(p.status in (PartitionStatus.LOOKUP_FAILED, PartitionStatus.INVALID) for p in parts):
        assert g.max_freshness_ms is None
    else:
        assert g.max_freshness_ms == (max(measured) if measured else None)
    topics = roll_up_topics(parts)
    assert sum(t.partitions for t in topics) == g.partitions == len(parts)
    known = [t.max_freshness_ms for t in topics if t.max_freshness_ms is not None]
    if g.max_freshness_ms is not None and known:
        assert max(known) == g.max_freshness_ms  # the group max is the max of its topics


@given(st.lists(st.tuples(statuses, st.integers(0, 10**6), st.sampled_from(["a", "b"])),
                min_size=1, max_size=30))
def test_the_oldest_record_at_c_is_the_max_freshness_record(
        rows: list[tuple[PartitionStatus, int, str]]) -> None:
    """Measured at now, a waiting partition's freshness is now minus its record's timestamp:
    the roll-ups' oldest timestamp is then exactly now minus their max, and absent both when
    the max is unknown and when nothing waits (caught up: 0, which must not age)."""
    now = 2 * 10**6
    waiting = (PartitionStatus.OK, PartitionStatus.GAP, PartitionStatus.DATA_LOSS)
    parts = [result(i, s, now - ts if s in waiting else 0 if s is PartitionStatus.CAUGHT_UP
                    else None, topic=t)._replace(record_timestamp_ms=ts if s in waiting else None)
             for i, (s, ts, t) in enumerate(rows)]
    (g,) = roll_up_groups([group("c", "g", lag())], parts)
    for rolled in (g, *roll_up_topics(parts)):
        if not rolled.max_freshness_ms:  # unknown, or 0: caught up (every timestamp < now)
            assert rolled.oldest_uncommitted_ms is None
        else:
            assert rolled.oldest_uncommitted_ms == now - rolled.max_freshness_ms
    if any(p.status in (PartitionStatus.LOOKUP_FAILED, PartitionStatus.INVALID) for p in parts):
        assert g.oldest_uncommitted_ms is None
    elif any(p.status in waiting for p in parts):
        assert g.oldest_uncommitted_ms == min(ts for s, ts, _ in rows if s in waiting)
    else:
        assert g.oldest_uncommitted_ms is None  # all caught up (or no commit): nothing ages


def test_an_unusable_entry_leaves_the_oldest_timestamp_unknown_as_the_max() -> None:
    parts = [result(0, PartitionStatus.OK, 500)._replace(record_timestamp_ms=1_000)]
    (g,) = roll_up_groups([replace(group("c", "g", lag()), unusable_partitions=1)], parts)
    assert g.max_freshness_ms is None and g.oldest_uncommitted_ms is None
    (g,) = roll_up_groups([group("c", "g", lag())], parts)
    assert g.oldest_uncommitted_ms == 1_000
