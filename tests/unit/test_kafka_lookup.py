"""The lookup state machine and the consumer pool, driven by the fake librdkafka consumer of
``tests/support/fake_kafka.py`` (no broker)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    KafkaException,
)
from confluent_kafka import KafkaError as RdKafkaError

from freshness_tracker.deadline import Deadline, cycle_deadline
from freshness_tracker.domain.model import ReadOutcome, ReadRequest, RecordRead
from freshness_tracker.domain.ports import RecordReader
from freshness_tracker.errors import ClusterUnavailable
from freshness_tracker.kafka.consumers import (
    FORCED_SETTINGS,
    LOOKUP_GROUP_ID,
    ConsumerPool,
    PoolClosed,
    build_consumer_config,
    fetch_requests_from_stats,
)
from freshness_tracker.kafka.lookup import KafkaRecordReader
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
from freshness_tracker.kafka.topic_config import TopicRetention, parse_retention
from tests.support.fake_kafka import (
    BASE_TS,
    FakeBroker,
    FakeClock,
    FakeConsumer,
    FakeError,
    FakeLog,
    fake_reader,
    make_log,
)

CLUSTER = "c1"

# --- fixtures and helpers ----------------------------------------------------------------


@pytest.fixture
def broker() -> FakeBroker:
    return FakeBroker()


@pytest.fixture
def executor() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        yield pool


def make_reader(
    broker: FakeBroker,
    executor: ThreadPoolExecutor,
    *,
    num_consumers: int = 1,
    **lookup_kwargs: Any,
) -> tuple[KafkaRecordReader, ConsumerPool]:
    settings = ClusterKafkaSettings(
        CLUSTER, {"bootstrap.servers": "b1:9092,b2:9092"}, num_consumers=num_consumers
    )
    lookup = LookupSettings(**{"timeout_s": 5.0, **lookup_kwargs})
    return fake_reader(broker, executor, settings, lookup)


ReaderOf = Callable[..., KafkaRecordReader]


@pytest.fixture
def reader_of(broker: FakeBroker, executor: ThreadPoolExecutor) -> ReaderOf:
    """``reader_of(*logs, **lookup)``: topic "t" made of ``logs`` on this test's broker, and a
    reader of it (``lookup``: LookupSettings fields, or ``num_consumers``)."""

    def make(*logs: FakeLog, **lookup: Any) -> KafkaRecordReader:
        broker.add_topic("t", list(logs))
        return make_reader(broker, executor, **lookup)[0]

    return make


def req(topic: str, partition: int, offset: int) -> ReadRequest:
    return ReadRequest(CLUSTER, topic, partition, offset)


def by_request(reads: list[RecordRead]) -> dict[ReadRequest, RecordRead]:
    return {r.request: r for r in reads}


# --- outcomes ----------------------------------------------------------------------------


def test_reader_satisfies_the_record_reader_protocol(
    broker: FakeBroker, executor: ThreadPoolExecutor
) -> None:
    reader, _ = make_reader(broker, executor)
    assert isinstance(reader, KafkaRecordReader)
    as_port: RecordReader = reader
    assert as_port.read([]) == []
    assert broker.metadata_calls == 0  # nothing to read, nothing asked


def test_found_reports_the_exact_record_timestamp(reader_of: ReaderOf) -> None:
    reader = reader_of(make_log(10))

    [read] = reader.read([req("t", 0, 4)])

    assert read == RecordRead(
        req("t", 0, 4),
        ReadOutcome.FOUND,
        offset=4,
        timestamp_ms=BASE_TS + 4,
        timestamp_type="CreateTime",
    )


def test_log_append_time_is_named(reader_of: ReaderOf) -> None:
    log = make_log(3)
    log.records[1] = (TIMESTAMP_LOG_APPEND_TIME, BASE_TS + 99)
    reader = reader_of(log)

    [read] = reader.read([req("t", 0, 1)])

    assert (read.outcome, read.timestamp_ms, read.timestamp_type) == (
        ReadOutcome.FOUND,
        BASE_TS + 99,
        "LogAppendTime",
    )


@pytest.mark.parametrize("ts", [(TIMESTAMP_NOT_AVAILABLE, 0), (TIMESTAMP_CREATE_TIME, -1)])
def test_record_without_timestamp_fails(reader_of: ReaderOf, ts: tuple[int, int]) -> None:
    log = make_log(3)
    log.records[1] = ts
    reader = reader_of(log)

    [read] = reader.read([req("t", 0, 1)])

    assert read.outcome is ReadOutcome.FAILED
    assert read.error == "record has no timestamp"
    assert read.timestamp_ms is None


def test_gap_returns_the_next_existing_record(reader_of: ReaderOf) -> None:
    reader = reader_of(make_log(10, gaps=(3, 4, 5)))

    reads = by_request(reader.read([req("t", 0, 3), req("t", 0, 5), req("t", 0, 6)]))

    for offset in (3, 5):
        gap = reads[req("t", 0, offset)]
        assert (gap.outcome, gap.offset, gap.timestamp_ms) == (ReadOutcome.GAP, 6, BASE_TS + 6)
    found = reads[req("t", 0, 6)]
    assert (found.outcome, found.offset) == (ReadOutcome.FOUND, 6)


def test_end_when_nothing_at_or_after_the_offset(reader_of: ReaderOf) -> None:
    reader = reader_of(make_log(10, gaps=(8, 9)))

    reads = by_request(reader.read([req("t", 0, 8), req("t", 0, 10)]))

    assert reads[req("t", 0, 8)] == RecordRead(req("t", 0, 8), ReadOutcome.END, log_end_offset=10)
    assert reads[req("t", 0, 10)].outcome is ReadOutcome.END


def test_out_of_range_reports_log_start_and_earliest_record(
    broker: FakeBroker, reader_of: ReaderOf
) -> None:
    reader = reader_of(make_log(20, start=7))

    reads = by_request(reader.read([req("t", 0, 2), req("t", 0, 3), req("t", 0, 12)]))

    for offset in (2, 3):
        lost = reads[req("t", 0, offset)]
        assert lost.outcome is ReadOutcome.OUT_OF_RANGE
        assert (lost.log_start_offset, lost.offset, lost.timestamp_ms) == (7, 7, BASE_TS + 7)
        assert lost.log_end_offset == 20
        assert lost.error is None
    found = reads[req("t", 0, 12)]
    assert (found.outcome, found.timestamp_ms) == (ReadOutcome.FOUND, BASE_TS + 12)
    assert broker.watermark_calls == 1


def test_out_of_range_when_the_earliest_record_cannot_be_read(reader_of: ReaderOf) -> None:
    log = make_log(20, start=7)
    reader = reader_of(log, timeout_s=2.0)
    original = FakeConsumer._fetch

    def stuck_after_reset(self: FakeConsumer, key: tuple[str, int], room: int) -> list[Any]:
        if self.positions.get(key) == 7:  # the re-read at the log start never answers
            return []
        return original(self, key, room)

    FakeConsumer._fetch = stuck_after_reset  # type: ignore[method-assign]
    try:
        [lost] = reader.read([req("t", 0, 2)])
    finally:
        FakeConsumer._fetch = original  # type: ignore[method-assign]

    assert lost.outcome is ReadOutcome.OUT_OF_RANGE
    assert lost.log_start_offset == 7
    assert lost.offset is None and lost.timestamp_ms is None
    assert lost.error is not None and "earliest retained record not read" in lost.error


def test_out_of_range_on_an_empty_log(reader_of: ReaderOf) -> None:
    reader = reader_of(FakeLog({}, log_start=9, log_end=9))

    [lost] = reader.read([req("t", 0, 4)])

    assert lost.outcome is ReadOutcome.OUT_OF_RANGE
    assert (lost.log_start_offset, lost.log_end_offset, lost.offset) == (9, 9, None)


def test_offset_beyond_the_log_end_is_end_with_a_note(reader_of: ReaderOf) -> None:
    reader = reader_of(make_log(10))

    [read] = reader.read([req("t", 0, 50)])

    assert read.outcome is ReadOutcome.END
    assert read.log_end_offset == 10
    assert read.error == "offset is beyond the log end 10"


def test_deadline_fails_what_is_left_with_a_clear_error(
    broker: FakeBroker, reader_of: ReaderOf
) -> None:
    stuck = make_log(10)
    stuck.stuck = True
    reader = reader_of(make_log(10), stuck, timeout_s=3.0)
    start = broker.clock()

    reads = by_request(reader.read([req("t", 0, 1), req("t", 1, 1)]))

    assert reads[req("t", 0, 1)].outcome is ReadOutcome.FOUND
    failed = reads[req("t", 1, 1)]
    assert failed.outcome is ReadOutcome.FAILED
    assert failed.error is not None
    assert failed.error.startswith("timed out after 3 s waiting for offset 1")
    assert "log end per last fetch: 10" in failed.error
    assert 3.0 <= broker.clock() - start < 3.5


class SteppingClock(FakeClock):
    """Every reading moves time on: the deadline can pass between two readings."""

    def __call__(self) -> float:
        self.advance(0.3)
        return super().__call__()


def test_consume_never_gets_a_negative_timeout(executor: ThreadPoolExecutor) -> None:
    """librdkafka reads a negative timeout as "block forever": the cycle wedged."""
    broker = FakeBroker(clock=SteppingClock())
    stuck = make_log(10)
    stuck.stuck = True
    broker.add_topic("t", [stuck])
    reader, _ = make_reader(broker, executor, timeout_s=1.0)

    [read] = reader.read([req("t", 0, 1)])

    assert read.outcome is ReadOutcome.FAILED
    assert broker.consume_timeouts, "consume() was never called"
    assert min(broker.consume_timeouts) >= 0, broker.consume_timeouts


class WallClock(FakeClock):
    """Real time: an idle consume() sleeps its timeout, as librdkafka does."""

    def __call__(self) -> float:
        return time.monotonic()

    def advance(self, seconds: float) -> None:
        time.sleep(max(seconds, 0.0))


def test_the_cycle_deadline_bounds_every_batch(executor: ThreadPoolExecutor) -> None:
    """A batch started near the cycle deadline gets only the time left; batches after it are
    answered at once and never assigned."""
    broker = FakeBroker(clock=WallClock())
    stuck = [make_log(10) for _ in range(4)]
    for log in stuck:
        log.stuck = True
    broker.add_topic("t", stuck)
    reader, _ = make_reader(broker, executor, timeout_s=30.0, batch_size=1)
    started = time.monotonic()

    with cycle_deadline(Deadline.after(0.5)):
        reads = reader.read([req("t", p, 1) for p in range(4)])

    assert time.monotonic() - started < 3.0  # not 4 x 30 s
    assert len(reads) == 4, reads  # one answer per request, each checked below
    assert all(r.outcome is ReadOutcome.FAILED for r in reads)
    assert len(broker.assignments) == 1
    assert sum(r.error == "not read: the cycle deadline was reached first" for r in reads) == 3
    with cycle_deadline(Deadline.after(-1.0)), pytest.raises(ClusterUnavailable,
                                                             match="cycle deadline"):
        reader.read([req("t", 0, 1)])


def test_non_retriable_partition_error_fails_only_that_partition(reader_of: ReaderOf) -> None:
    broken = make_log(10)
    broken.error = FakeError(RdKafkaError.TOPIC_AUTHORIZATION_FAILED, "not authorized")
    reader = reader_of(make_log(10), broken)

    reads = by_request(reader.read([req("t", 0, 1), req("t", 1, 1)]))

    assert reads[req("t", 0, 1)].outcome is ReadOutcome.FOUND
    assert reads[req("t", 1, 1)] == RecordRead(
        req("t", 1, 1), ReadOutcome.FAILED, error="not authorized"
    )


def test_fatal_client_error_fails_the_batch_and_replaces_the_consumer(
    broker: FakeBroker, executor: ThreadPoolExecutor
) -> None:
    broker.add_topic("t", [make_log(10)])
    broker.client_errors.append(FakeError(RdKafkaError._FATAL, "fenced", fatal_=True))
    reader, pool = make_reader(broker, executor)

    [read] = reader.read([req("t", 0, 1)])
    assert (read.outcome, read.error) == (ReadOutcome.FAILED, "fenced")
    assert broker.consumers[0].closed

    [again] = reader.read([req("t", 0, 1)])
    assert again.outcome is ReadOutcome.FOUND
    assert len(broker.consumers) == 2
    assert pool.stats()["consumers_replaced"] == 1


def test_unknown_topic_partition_and_bad_requests_fail_without_raising(reader_of: ReaderOf) -> None:
    leaderless = make_log(5)
    leaderless.leader = -1
    reader = reader_of(make_log(5), leaderless)
    requests = [
        req("missing", 0, 1),
        req("t", 7, 1),
        req("t", 1, 1),
        req("t", 0, -1),
        ReadRequest("other", "t", 0, 1),
        req("t", 0, 1),
    ]

    reads = reader.read(requests)

    assert [r.request for r in reads] == requests
    assert [r.outcome for r in reads] == [ReadOutcome.FAILED] * 5 + [ReadOutcome.FOUND]
    errors = [r.error for r in reads[:5]]
    assert errors == [
        "unknown topic missing",
        "unknown partition t[7]",
        "t[1] has no leader",
        "invalid offset -1",
        "request for cluster other sent to the reader of c1",
    ]


def test_cluster_unreachable_raises_cluster_unavailable(
    broker: FakeBroker, executor: ThreadPoolExecutor
) -> None:
    broker.add_topic("t", [make_log(5)])
    broker.unreachable = True
    reader, _ = make_reader(broker, executor)

    for _ in range(2):
        with pytest.raises(ClusterUnavailable, match=r"cluster c1: no broker reachable at b1:9092"):
            reader.read([req("t", 0, 1)])

    assert len(broker.consumers) == 1  # the cluster is down, not the consumer: it is kept
    assert not broker.consumers[0].closed


def test_reachability_check_asks_one_topic_within_the_cycle_deadline(
    broker: FakeBroker, executor: ThreadPoolExecutor
) -> None:
    broker.add_topic("t", [make_log(5)])
    reader, _ = make_reader(broker, executor)
    with cycle_deadline(Deadline.after(2.0)):
        reader.confirm_reachable("t")
    [(topic, timeout)] = broker.metadata_asked
    assert topic == "t" and 0 < timeout <= 2.0  # one topic's metadata, not the cluster's
    assert broker.assignments == []  # no read

    with cycle_deadline(Deadline.after(0.0)), pytest.raises(ClusterUnavailable, match="deadline"):
        reader.confirm_reachable("t")  # no time left: failed at once, nothing asked
    assert len(broker.metadata_asked) == 1


def test_reachability_check_fails_without_secrets_and_keeps_the_consumer(
    broker: FakeBroker, executor: ThreadPoolExecutor
) -> None:
    broker.unreachable = True
    settings = ClusterKafkaSettings(CLUSTER, {"bootstrap.servers": "b1:9092",
                                              "sasl.password": "hunter2"})
    reader, _ = fake_reader(broker, executor, settings, LookupSettings(timeout_s=1.0))
    with pytest.raises(ClusterUnavailable, match=r"cluster c1: no broker reachable at b1:9092"
                       ) as raised:
        reader.confirm_reachable("t")
    assert "hunter2" not in str(raised.value)
    assert len(broker.consumers) == 1 and not broker.consumers[0].closed


def test_deadline_error_names_the_client_error(
    broker: FakeBroker, executor: ThreadPoolExecutor
) -> None:
    stuck = make_log(10)
    stuck.stuck = True
    broker.add_topic("t", [stuck])
    broker.callback_errors.append(FakeError(RdKafkaError._TRANSPORT, "Connection refused"))
    reader, _ = make_reader(broker, executor, timeout_s=1.0)

    [read] = reader.read([req("t", 0, 1)])

    assert read.outcome is ReadOutcome.FAILED
    assert read.error is not None and "Connection refused" in read.error


# --- batching ----------------------------------------------------------------------------


def test_adjacent_offsets_share_one_assignment(broker: FakeBroker, reader_of: ReaderOf) -> None:
    reader = reader_of(make_log(100))

    reads = by_request(reader.read([req("t", 0, 41), req("t", 0, 40)]))

    assert [r.outcome for r in reads.values()] == [ReadOutcome.FOUND] * 2
    assert reads[req("t", 0, 40)].timestamp_ms == BASE_TS + 40
    assert reads[req("t", 0, 41)].timestamp_ms == BASE_TS + 41
    assert broker.assignments == [[("t", 0, 40)]]
    assert broker.unassignments == [[("t", 0)]]


def test_partitions_leave_the_assignment_as_soon_as_answered(
    broker: FakeBroker, reader_of: ReaderOf
) -> None:
    broker.records_per_poll = 1
    reader = reader_of(make_log(1000), make_log(1000))

    reader.read([req("t", 0, 10), req("t", 1, 500), req("t", 1, 502)])

    assert broker.delivered[("t", 0)] == [10]  # nothing after the answer was fetched
    assert broker.delivered[("t", 1)] == [500, 501, 502]


def test_far_apart_offsets_on_one_partition_get_their_own_seek(
    broker: FakeBroker, reader_of: ReaderOf
) -> None:
    broker.records_per_poll = 5
    reader = reader_of(make_log(100_000))

    reads = reader.read([req("t", 0, 10), req("t", 0, 11), req("t", 0, 90_000)])

    assert len(reads) == 3, reads
    assert all(r.outcome is ReadOutcome.FOUND for r in reads)
    assert broker.assignments == [[("t", 0, 10)], [("t", 0, 90_000)]]
    assert len(broker.delivered[("t", 0)]) <= 10  # not the 90,000 records in between


def test_many_partitions_in_one_batch_one_read_each(
    broker: FakeBroker, reader_of: ReaderOf
) -> None:
    reader = reader_of(*[make_log(5) for _ in range(50)], batch_size=200)
    requests = [req("t", p, o) for p in range(50) for o in (2, 3)]

    reads = reader.read(requests)

    assert [r.request for r in reads] == requests
    assert all(r.outcome is ReadOutcome.FOUND for r in reads)
    assert all(r.timestamp_ms == BASE_TS + r.request.offset for r in reads)
    assert len(broker.assignments) == 1 and len(broker.assignments[0]) == 50
    assert reader.stats()["batches"] == 1


def test_batches_are_cut_per_leader(broker: FakeBroker, executor: ThreadPoolExecutor) -> None:
    broker.add_topic("a", [make_log(5, leader=1 + p % 2) for p in range(10)])
    broker.add_topic("b", [make_log(5, leader=3) for _ in range(3)])
    reader, _ = make_reader(broker, executor, num_consumers=2, batch_size=3)
    requests = [req("a", p, 1) for p in range(10)] + [req("b", p, 1) for p in range(3)]

    reads = reader.read(requests)

    assert [r.request for r in reads] == requests
    assert all(r.outcome is ReadOutcome.FOUND for r in reads)
    leaders = {(t, p): log.leader for (t, p), log in broker.logs.items()}
    for batch in broker.assignments:
        assert len(batch) <= 3
        assert len({leaders[(t, p)] for t, p, _ in batch}) == 1
    # leader 1: 5 partitions -> 2 batches, leader 2: 5 -> 2, leader 3: 3 -> 1
    assert len(broker.assignments) == 5
    assert reader.stats()["batches"] == 5
    assert len(broker.consumers) <= 2


def test_duplicate_requests_each_get_an_answer(reader_of: ReaderOf) -> None:
    reader = reader_of(make_log(5))

    reads = reader.read([req("t", 0, 2), req("t", 0, 2)])

    assert [r.outcome for r in reads] == [ReadOutcome.FOUND, ReadOutcome.FOUND]


def test_a_crashing_consumer_fails_its_batch_not_the_call(
    broker: FakeBroker, executor: ThreadPoolExecutor
) -> None:
    broker.add_topic("t", [make_log(5)])
    reader, pool = make_reader(broker, executor)

    def boom(num_messages: int = 1, timeout: float = -1) -> list[Any]:
        raise KafkaException(RdKafkaError(RdKafkaError._STATE))

    with pool.borrow() as consumer:
        consumer.consume = boom  # type: ignore[method-assign]

    [read] = reader.read([req("t", 0, 1)])

    assert read.outcome is ReadOutcome.FAILED
    assert read.error is not None and read.error.startswith("lookup consumer failed")
    assert broker.consumers[0].closed  # replaced, not lent again


def test_stats_count_reads_batches_and_failures(reader_of: ReaderOf) -> None:
    reader = reader_of(make_log(5))

    reader.read([req("t", 0, 1), req("t", 0, 9), req("x", 0, 1)])
    reader.read([req("t", 0, 2)])

    stats = reader.stats()
    assert stats["reads"] == 4
    assert stats["batches"] == 2
    assert stats["failures"] == 1
    assert stats["found"] == 2 and stats["end"] == 1
    assert stats["fetch_requests"] == 0  # statistics disabled


# --- the consumer pool -------------------------------------------------------------------


def test_config_forces_safety_settings_over_user_properties() -> None:
    settings = ClusterKafkaSettings(
        CLUSTER,
        {
            "bootstrap.servers": "k:9093",
            "security.protocol": "SASL_SSL",
            "sasl.password": "secret",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": "true",
            "fetch.wait.max.ms": "250",
        },
    )
    config, overridden = build_consumer_config(settings, LookupSettings(), 1000)

    assert overridden == ["auto.offset.reset", "enable.auto.commit"]
    for key, value in FORCED_SETTINGS.items():
        assert config[key] == value
    assert config["security.protocol"] == "SASL_SSL"
    assert config["sasl.password"] == "secret"
    assert config["fetch.wait.max.ms"] == "250"  # a default, so the user may tune it
    assert config["group.id"] == LOOKUP_GROUP_ID
    assert config["client.id"] == "freshness-tracker"
    assert config["fetch.queue.backoff.ms"] == "1"
    assert config["statistics.interval.ms"] == "1000"
    assert config["max.partition.fetch.bytes"] == "65536"
    assert config["queued.max.messages.kbytes"] == "8192"


def test_lookups_never_ask_for_topics_to_be_created() -> None:
    """A lookup names topics Burrow reported, which may have been deleted since: asking for
    one must not create it on a broker with auto.create.topics.enable."""
    settings = ClusterKafkaSettings(CLUSTER, {"allow.auto.create.topics": "true"})
    config, overridden = build_consumer_config(settings, LookupSettings())
    assert config["allow.auto.create.topics"] == "false"
    assert overridden == ["allow.auto.create.topics"]


def test_pool_warns_once_about_overridden_forced_settings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = ClusterKafkaSettings(CLUSTER, {"auto.offset.reset": "latest"})
    with caplog.at_level(logging.WARNING, logger="freshness_tracker.kafka.consumers"):
        pool = ConsumerPool(settings, LookupSettings(), consumer_factory=FakeBroker().new_consumer)
        with pool.borrow():
            pass
    warnings = [r for r in caplog.records if "auto.offset.reset" in r.getMessage()]
    assert len(warnings) == 1
    assert pool.config()["auto.offset.reset"] == "error"


def recording_factory() -> tuple[list[FakeConsumer], Callable[[dict[str, Any]], FakeConsumer]]:
    """A consumer factory for ConsumerPool that keeps every consumer it made, in order."""
    broker = FakeBroker()
    return broker.consumers, broker.new_consumer


def test_pool_is_lazy_bounded_and_blocking() -> None:
    created, factory = recording_factory()

    pool = ConsumerPool(
        ClusterKafkaSettings(CLUSTER, num_consumers=2), LookupSettings(), consumer_factory=factory
    )
    assert created == []
    with pool.borrow() as first, pool.borrow() as second:
        assert first is not second
        with pytest.raises(TimeoutError), pool.borrow(timeout=0.05):
            pass
    with pool.borrow() as again:
        assert again in (first, second)
    assert len(created) == 2
    assert "error_cb" in created[0].config and "stats_cb" not in created[0].config

    pool.close()
    assert all(c.closed for c in created)
    with pytest.raises(PoolClosed), pool.borrow():
        pass


def test_pool_replaces_a_consumer_after_a_fatal_error_callback() -> None:
    created, factory = recording_factory()

    pool = ConsumerPool(
        ClusterKafkaSettings(CLUSTER, num_consumers=1), LookupSettings(), consumer_factory=factory
    )
    with pool.borrow() as consumer:
        consumer.config["error_cb"](FakeError(RdKafkaError._FATAL, "fenced", fatal_=True))
        assert pool.last_error(consumer) == "fenced"
    with pool.borrow() as replacement:
        assert replacement is not consumer
    assert created[0].closed and not created[1].closed
    assert pool.stats() == {"consumers_created": 2, "consumers_replaced": 1, "consumers_live": 1}


def test_pool_replaces_a_consumer_whose_borrower_raised() -> None:
    created, factory = recording_factory()

    pool = ConsumerPool(
        ClusterKafkaSettings(CLUSTER, num_consumers=1), LookupSettings(), consumer_factory=factory
    )
    with pytest.raises(RuntimeError), pool.borrow():
        raise RuntimeError("bug")
    with pool.borrow():
        pass
    assert [c.closed for c in created] == [True, False]


def test_pool_counts_fetch_requests_from_statistics() -> None:
    _created, factory = recording_factory()

    pool = ConsumerPool(
        ClusterKafkaSettings(CLUSTER, num_consumers=1),
        LookupSettings(),
        statistics_interval_ms=100,
        consumer_factory=factory,
    )

    def stats(fetches: dict[str, int]) -> str:
        brokers = {name: {"req": {"Fetch": n, "Metadata": 3}} for name, n in fetches.items()}
        return json.dumps({"brokers": brokers})

    with pool.borrow() as consumer:
        assert consumer.config["statistics.interval.ms"] == "100"
        consumer.config["stats_cb"](stats({"b1/1": 4, "b2/2": 3}))
        consumer.config["stats_cb"](stats({"b1/1": 6, "b2/2": 3}))
        pool.discard(consumer)
    assert pool.fetch_requests() == 9
    with pool.borrow() as consumer:
        consumer.config["stats_cb"](stats({"b1/1": 2}))
    assert pool.fetch_requests() == 11


def test_fetch_requests_from_stats_tolerates_garbage() -> None:
    assert fetch_requests_from_stats("not json") == 0
    assert fetch_requests_from_stats(json.dumps({"brokers": {"b": {}}})) == 0


# --- TopicRetention with a fake AdminClient ------------------------------------------------


class FakeAdmin:
    """describe_configs() answering from a dict; a topic mapped to an exception fails."""

    def __init__(self, configs: dict[str, Any]) -> None:
        self.configs = configs
        self.calls: list[list[str]] = []

    def describe_configs(self, resources: list[Any], request_timeout: float = -1) -> Any:
        from concurrent.futures import Future

        self.calls.append([r.name for r in resources])
        futures = {}
        for resource in resources:
            future: Future[Any] = Future()
            answer = self.configs.get(resource.name, {})
            if isinstance(answer, Exception):
                future.set_exception(answer)
            else:
                future.set_result({k: SimpleNamespace(name=k, value=v) for k, v in answer.items()})
            futures[resource] = future
        return futures


@pytest.mark.parametrize(
    ("value", "expected"),
    [("604800000", 604_800_000), ("0", 0), ("-1", None), (None, None), ("junk", None)],
)
def test_parse_retention(value: str | None, expected: int | None) -> None:
    assert parse_retention(value) == expected


def test_topic_retention_batches_caches_and_never_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    admin = FakeAdmin(
        {
            "a": {"retention.ms": "1000"},
            "b": {"retention.ms": "-1"},
            "c": {"cleanup.policy": "compact"},
            "d": KafkaException(RdKafkaError(RdKafkaError.TOPIC_AUTHORIZATION_FAILED)),
            "e": KafkaException(RdKafkaError(RdKafkaError.TOPIC_AUTHORIZATION_FAILED)),
        }
    )
    now = [0.0]
    source = TopicRetention(lambda: admin, ttl_s=10, clock=lambda: now[0], batch_size=2)

    with caplog.at_level(logging.WARNING, logger="freshness_tracker.kafka.topic_config"):
        first = source.retention_ms(["a", "b", "c", "d", "e", "a"])
        again = source.retention_ms(["a", "b", "c", "d", "e"])

    assert first == {"a": 1000, "b": None, "c": None, "d": None, "e": None}
    assert again == first
    assert admin.calls[:3] == [["a", "b"], ["c", "d"], ["e"]]
    assert admin.calls[3:] == [["d", "e"]]  # failures are asked again, answers are cached
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1

    now[0] = 11.0
    source.retention_ms(["a"])
    assert admin.calls[-1] == ["a"]  # TTL expired


def test_a_shut_down_executor_fails_requests_instead_of_raising(broker: FakeBroker) -> None:
    broker.add_topic("t", [make_log(5)])
    executor = ThreadPoolExecutor(max_workers=1)
    reader, _ = make_reader(broker, executor)
    executor.shutdown()

    [read] = reader.read([req("t", 0, 1)])

    assert read.outcome is ReadOutcome.FAILED
    assert read.error == "lookup not run (shutting down or crashed)"
