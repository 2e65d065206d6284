"""TimestampCache: exact FOUND reads only, bounded LRU, thread-safe."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshness_tracker.domain.model import ReadOutcome, ReadRequest, RecordRead
from freshness_tracker.kafka.cache import TimestampCache


def req(offset: int, partition: int = 0, topic: str = "t", cluster: str = "c") -> ReadRequest:
    return ReadRequest(cluster, topic, partition, offset)


def found(request: ReadRequest, ts: int = 1_000, ts_type: str | None = "CreateTime") -> RecordRead:
    return RecordRead(
        request, ReadOutcome.FOUND, offset=request.offset, timestamp_ms=ts, timestamp_type=ts_type
    )


def test_found_read_is_cached_and_counted() -> None:
    cache = TimestampCache(10)
    assert cache.get(req(1)) is None
    cache.put(found(req(1), 123, "LogAppendTime"))

    assert cache.get(req(1)) == (123, "LogAppendTime")
    assert cache.get(req(2)) is None
    assert (cache.hits, cache.misses, len(cache)) == (1, 2, 1)
    assert cache.stats() == {"entries": 1, "hits": 1, "misses": 2}


def test_contains_does_not_count_or_reorder() -> None:
    cache = TimestampCache(2)
    cache.put(found(req(1), 1))
    cache.put(found(req(2), 2))
    assert cache.contains(req(1)) and not cache.contains(req(3))
    cache.put(found(req(3), 3))  # 1 is still the least recently used: evicted

    assert not cache.contains(req(1))
    assert (cache.hits, cache.misses) == (0, 0)


def test_key_is_cluster_topic_partition_offset() -> None:
    cache = TimestampCache(10)
    cache.put(found(req(1), 5))
    for other in (req(1, cluster="d"), req(1, topic="u"), req(1, partition=1), req(2)):
        assert cache.get(other) is None


@pytest.mark.parametrize(
    "read",
    [
        RecordRead(req(1), ReadOutcome.GAP, offset=2, timestamp_ms=9),
        RecordRead(req(1), ReadOutcome.END, log_end_offset=1),
        RecordRead(req(1), ReadOutcome.OUT_OF_RANGE, log_start_offset=5, offset=5, timestamp_ms=9),
        RecordRead(req(1), ReadOutcome.FAILED, error="timeout"),
        RecordRead(req(1), ReadOutcome.FOUND, offset=1, timestamp_ms=None),
        RecordRead(req(1), ReadOutcome.FOUND, offset=2, timestamp_ms=9),  # offset mismatch
    ],
)
def test_only_exact_found_reads_are_cached(read: RecordRead) -> None:
    cache = TimestampCache(10)
    cache.put(read)
    assert len(cache) == 0


def test_least_recently_used_is_evicted_first() -> None:
    cache = TimestampCache(2)
    cache.put(found(req(1), 1))
    cache.put(found(req(2), 2))
    assert cache.get(req(1)) == (1, "CreateTime")  # 1 is now the most recent
    cache.put(found(req(3), 3))

    assert cache.get(req(2)) is None
    assert cache.get(req(1)) == (1, "CreateTime")
    assert cache.get(req(3)) == (3, "CreateTime")


def test_zero_size_disables_the_cache() -> None:
    cache = TimestampCache(0)
    cache.put(found(req(1)))
    assert len(cache) == 0
    assert cache.get(req(1)) is None


def test_negative_size_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        TimestampCache(-1)


def test_concurrent_puts_and_gets_stay_bounded() -> None:
    cache = TimestampCache(100)

    def worker(base: int) -> None:
        for i in range(2_000):
            cache.put(found(req(base + i, partition=base), i))
            cache.get(req(base + i // 2, partition=base))

    threads = [threading.Thread(target=worker, args=(n * 10_000,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(cache) == 100
    assert cache.hits + cache.misses == 8 * 2_000


_ops = st.lists(
    st.tuples(st.booleans(), st.integers(min_value=0, max_value=30), st.integers(0, 10**13)),
    max_size=200,
)


@given(max_entries=st.integers(min_value=1, max_value=12), ops=_ops)
def test_property_bounded_and_put_then_get_unless_evicted(
    max_entries: int, ops: list[tuple[bool, int, int]]
) -> None:
    """Never more than max_entries; a put is readable until max_entries newer keys were used.

    Model: the keys in most-recently-used order. After put(k), get(k) returns the value as long
    as fewer than max_entries distinct other keys were touched (put, or hit by get) since.
    """
    cache = TimestampCache(max_entries)
    values: dict[int, int] = {}
    recency: list[int] = []  # most recent last

    def touch(key: int) -> None:
        if key in recency:
            recency.remove(key)
        recency.append(key)
        del recency[:-max_entries]

    for is_put, offset, ts in ops:
        if is_put:
            cache.put(found(req(offset), ts))
            values[offset] = ts
            touch(offset)
        else:
            expected = (values[offset], "CreateTime") if offset in recency else None
            assert cache.get(req(offset)) == expected
            if expected is not None:
                touch(offset)
        assert len(cache) <= max_entries
        assert len(cache) == len(recency)

    # The last put is always readable: nothing newer can have evicted it.
    puts = [(offset, ts) for is_put, offset, ts in ops if is_put]
    if puts:
        offset, ts = puts[-1]
        assert cache.get(req(offset)) == (ts, "CreateTime")


# --- "no record is here, for good" (C − 1 of caught-up partitions) -----------------------


@pytest.mark.parametrize(("read", "absent"), [
    (RecordRead(req(9), ReadOutcome.GAP, offset=11, timestamp_ms=5), True),  # compacted, marker
    (RecordRead(req(9), ReadOutcome.OUT_OF_RANGE, log_start_offset=20), True),  # deleted
    (RecordRead(req(9), ReadOutcome.END, log_end_offset=10), True),  # a trailing marker
    (RecordRead(req(9), ReadOutcome.END, log_end_offset=9), False),  # may be written yet
    (RecordRead(req(9), ReadOutcome.END), False),  # log end unknown
    (RecordRead(req(9), ReadOutcome.OUT_OF_RANGE), False),  # log start unknown
    (RecordRead(req(9), ReadOutcome.FAILED, error="timed out"), False),
])
def test_a_read_proving_no_record_at_its_offset_is_remembered_apart(read: RecordRead,
                                                                    absent: bool) -> None:
    cache = TimestampCache(10)
    cache.put(read)
    assert cache.absent(req(9)) is absent
    assert not cache.contains(req(9)) and cache.get(req(9)) is None  # never a timestamp
    assert len(cache) == 0


def test_absent_entries_are_bounded_and_cleared() -> None:
    cache = TimestampCache(2)
    for offset in (1, 2, 3):
        cache.put(RecordRead(req(offset), ReadOutcome.END, log_end_offset=10))
    assert [cache.absent(req(o)) for o in (1, 2, 3)] == [False, True, True]
    cache.clear()
    assert not cache.absent(req(3))
    off = TimestampCache(0)
    off.put(RecordRead(req(1), ReadOutcome.END, log_end_offset=10))
    assert not off.absent(req(1))


def test_get_many_answers_hits_counts_misses_and_refreshes_lru_order() -> None:
    cache = TimestampCache(3)
    for offset in (1, 2, 3):
        cache.put(found(req(offset), offset * 10))
    assert cache.get_many([req(1), req(9), req(2)]) == {req(1): (10, "CreateTime"),
                                                        req(2): (20, "CreateTime")}
    assert (cache.hits, cache.misses) == (2, 1)
    cache.put(found(req(4), 40))  # evicts the least recently used: 3, not the two just read
    assert cache.get_many([req(1), req(2), req(3), req(4)]).keys() == {req(1), req(2), req(4)}


@given(st.lists(st.integers(0, 20), max_size=30), st.lists(st.integers(0, 20), max_size=30))
def test_get_many_is_get_for_each(stored: list[int], asked: list[int]) -> None:
    one, many = TimestampCache(8), TimestampCache(8)
    for offset in stored:
        one.put(found(req(offset), offset))
        many.put(found(req(offset), offset))
    expected = {req(o): e for o in dict.fromkeys(asked) if (e := one.get(req(o))) is not None}
    assert many.get_many(req(o) for o in dict.fromkeys(asked)) == expected
    assert (many.hits, many.misses, len(many)) == (one.hits, one.misses, len(one))
