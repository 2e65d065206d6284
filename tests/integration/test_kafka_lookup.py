"""The lookup engine against real brokers: every test runs on the session's Kafka 3.9.1 and on
a Kafka 4.1.1 of its own (no Burrow: the engine reads Kafka only), the client listener behind a
frame proxy, as users' clients would see a broker.

Records are produced with explicit CreateTimes, in order (idempotent producer), so every
timestamp can be asserted exactly; data loss is real (``delete_records`` moves the log start).
Seeding goes through the brokers' internal listener; every read under test through the proxy.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import NewTopic

from devstack import RealStack
from devstack.cache import current_kafka_version
from devstack.memory import RssSampler
from devstack.processes import free_port, poll
from devstack.testing import running_stack
from freshness_tracker.domain.model import ReadOutcome, ReadRequest, RecordRead
from freshness_tracker.kafka.consumers import LOOKUP_GROUP_ID, ConsumerPool
from freshness_tracker.kafka.lookup import KafkaRecordReader
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
from freshness_tracker.kafka.topic_config import TopicRetention

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module", params=["kafka-3.9", "kafka-4.1"])
def stack(request: pytest.FixtureRequest, stack: RealStack) -> Iterator[RealStack]:
    """The session's stack (Kafka 3.9.1), then a Kafka 4.1.1 alone: the engine on both lines."""
    if request.param == "kafka-3.9":
        yield stack
        return
    yield from running_stack(allow_external=False, kafka_version=current_kafka_version(),
                             burrow=False)

logger = logging.getLogger(__name__)
_quiet = logging.getLogger("tests.librdkafka")

CLUSTER = "local"
# An hour ago, whole seconds: well within retention (Kafka deletes records past retention.ms
# by their timestamp within a second here, log.retention.check.interval.ms = 1000).
BASE_TS = (time.time_ns() // 1_000_000_000 - 3_600) * 1_000
MiB = 1024 * 1024
KAFKA_DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000  # log.retention.hours = 168


def ts_of(partition: int, offset: int) -> int:
    """The CreateTime every test record gets: unique per (partition, offset)."""
    return BASE_TS + partition * 1_000 + offset


# --- the broker ----------------------------------------------------------------------------


def seed_servers(stack: RealStack) -> str:
    """Where records are produced: the internal listener (not counted, never delayed or cut)."""
    return stack.kafka.internal_bootstrap_servers if stack.kafka else stack.bootstrap_servers


@pytest.fixture
def topic_name(
    request: pytest.FixtureRequest, stack: RealStack
) -> Iterator[Callable[[str], str]]:
    """Unique topic names; the topics are deleted afterwards (some hold 1,000 partitions or
    256 MiB, and the stack serves the whole session)."""
    made: list[str] = []

    def make(prefix: str) -> str:
        node = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:30]  # a topic name's alphabet
        made.append(f"{prefix}-{node}-{uuid.uuid4().hex[:6]}")
        return made[-1]

    yield make
    if made and stack.managed:
        stack.admin().delete_topics(made, request_timeout=30)  # Kafka deletes in the background


def create_topic(
    stack: RealStack, name: str, partitions: int, config: dict[str, str] | None = None
) -> None:
    """Wait for a leader of every partition; not for Burrow (no group reads these topics)."""
    stack.create_topic(name, partitions, wait_for_burrow=False, timeout_s=120,
                       config={"max.message.bytes": str(4 * MiB), **(config or {})})


def create_topics(stack: RealStack, names: list[str], partitions: int) -> None:
    """Several topics in one CreateTopics request, then a leader for every partition."""
    futures = stack.admin().create_topics([NewTopic(n, partitions, 1) for n in names])
    for future in futures.values():
        future.result(timeout=120)
    poll(lambda: all(len(stack.leaders(n)) == partitions for n in names), 120,
         f"a leader for every partition of {len(names)} topics")


def produce(
    stack: RealStack,
    topic: str | list[str],
    counts: dict[int, int],
    *,
    value_size: int = 16,
) -> None:
    """`counts[partition]` records per partition of each topic, record o at offset o with
    CreateTime ts_of(p, o) (checked on delivery)."""
    producer = Producer({
        "bootstrap.servers": seed_servers(stack),
        "enable.idempotence": True,  # in order, once, whatever retries happen
        "linger.ms": 5,
        "message.max.bytes": 4 * MiB,
        "logger": _quiet,
    })  # fmt: skip
    value = b"x" * value_size
    errors: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        elif msg.timestamp()[1] != ts_of(msg.partition(), msg.offset()):
            errors.append(f"p{msg.partition()} offset {msg.offset()}: {msg.timestamp()}")

    for offset in range(max(counts.values(), default=0)):
        for name in [topic] if isinstance(topic, str) else topic:
            for partition, count in counts.items():
                if offset < count:
                    while True:
                        try:
                            producer.produce(name, value, partition=partition,
                                             timestamp=ts_of(partition, offset),
                                             on_delivery=delivered)  # fmt: skip
                            break
                        except BufferError:
                            producer.poll(0.1)
                    producer.poll(0)
        if value_size >= MiB:
            producer.flush(60)
    assert producer.flush(120) == 0
    assert errors == []


class RecordingConsumer:
    """A real Consumer that remembers its assignments (what one batch fetched together)."""

    def __init__(self, config: dict[str, Any], log: list[list[tuple[str, int, int]]]) -> None:
        self._consumer = Consumer(config)
        self._log = log

    def incremental_assign(self, partitions: list[Any]) -> None:
        self._log.append([(tp.topic, tp.partition, tp.offset) for tp in partitions])
        self._consumer.incremental_assign(partitions)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)


class Readers:
    """Builds readers on one bootstrap; closes their pools and executor at the end."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.executor = ThreadPoolExecutor(max_workers=4)
        self.pools: list[ConsumerPool] = []
        self.assignments: list[list[tuple[str, int, int]]] = []

    def make(
        self, *, num_consumers: int = 2, statistics_interval_ms: int = 0, **lookup: Any
    ) -> tuple[KafkaRecordReader, ConsumerPool]:
        settings = ClusterKafkaSettings(
            CLUSTER,
            {"bootstrap.servers": self.bootstrap, "message.max.bytes": str(4 * MiB)},
            num_consumers=num_consumers,
        )
        lookup_settings = LookupSettings(**lookup)
        pool = ConsumerPool(
            settings,
            lookup_settings,
            statistics_interval_ms=statistics_interval_ms,
            consumer_factory=lambda config: RecordingConsumer(config, self.assignments),
        )
        self.pools.append(pool)
        return KafkaRecordReader(settings, lookup_settings, pool, self.executor), pool

    def close(self) -> None:
        for pool in self.pools:
            pool.close()
        self.executor.shutdown(wait=True)


@pytest.fixture
def readers(stack: RealStack) -> Iterator[Readers]:
    made = Readers(stack.bootstrap_servers)
    try:
        yield made
    finally:
        made.close()


def req(topic: str, partition: int, offset: int) -> ReadRequest:
    return ReadRequest(CLUSTER, topic, partition, offset)


def assert_found(*reads: RecordRead) -> None:
    """Each read found its record, with the CreateTime it was produced with."""
    assert reads, "no reads to check"
    for read in reads:
        request = read.request
        assert read.outcome is ReadOutcome.FOUND, read
        assert read.offset == request.offset
        assert read.timestamp_ms == ts_of(request.partition, request.offset)
        assert read.timestamp_type == "CreateTime"


def flush_statistics(pool: ConsumerPool, interval_s: float) -> None:
    """Let every consumer emit one more statistics document (they arrive only while polled)."""
    time.sleep(interval_s * 1.5)
    for _ in range(pool.size):
        with pool.borrow() as consumer:
            consumer.consume(1, interval_s)


# --- point reads -------------------------------------------------------------------------


def test_found_gives_the_exact_create_time(
    stack: RealStack, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("found")
    create_topic(stack, topic, 3)
    produce(stack, topic, {0: 5, 1: 5, 2: 5})
    reader, _ = readers.make()

    requests = [req(topic, p, o) for p in range(3) for o in (0, 2, 4)]
    reads = reader.read(requests)

    assert [r.request for r in reads] == requests
    assert_found(*reads)


def test_adjacent_offsets_share_one_assignment(
    stack: RealStack, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("adjacent")
    create_topic(stack, topic, 2)
    produce(stack, topic, {0: 10, 1: 10})
    reader, _ = readers.make()

    reads = reader.read([req(topic, 0, 7), req(topic, 0, 6), req(topic, 1, 3), req(topic, 1, 4)])

    assert_found(*reads)
    assert readers.assignments == [[(topic, 0, 6), (topic, 1, 3)]]


def test_far_apart_offsets_are_sought_not_read_through(
    stack: RealStack, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("far")
    create_topic(stack, topic, 1)
    produce(stack, topic, {0: 300})
    reader, _ = readers.make()

    reads = reader.read([req(topic, 0, 5), req(topic, 0, 6), req(topic, 0, 290)])

    assert_found(*reads)
    assert readers.assignments == [[(topic, 0, 5)], [(topic, 0, 290)]]


def test_end_at_the_log_end(
    stack: RealStack, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("end")
    create_topic(stack, topic, 2)
    produce(stack, topic, {0: 4})  # partition 1 stays empty
    reader, _ = readers.make()

    started = time.monotonic()
    last, end, empty = reader.read([req(topic, 0, 3), req(topic, 0, 4), req(topic, 1, 0)])
    elapsed = time.monotonic() - started

    assert_found(last)
    assert (end.outcome, end.log_end_offset) == (ReadOutcome.END, 4)
    assert (empty.outcome, empty.log_end_offset) == (ReadOutcome.END, 0)
    # EOF answers at once: the read never waits out the batch deadline for a missing record
    assert elapsed < LookupSettings().timeout_s


def test_hundreds_of_partitions_in_batches(
    stack: RealStack, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("wide")
    create_topic(stack, topic, 250)
    produce(stack, topic, dict.fromkeys(range(250), 2))
    reader, _ = readers.make(batch_size=100, num_consumers=2)

    requests = [req(topic, p, o) for p in range(250) for o in (0, 1)]
    reads = reader.read(requests)

    assert [r.request for r in reads] == requests
    assert_found(*reads)
    assert sorted(len(a) for a in readers.assignments) == [50, 100, 100]
    assert reader.stats()["batches"] == 3


def test_many_topics(
    stack: RealStack, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topics = [topic_name(f"many{i}") for i in range(25)]
    create_topics(stack, topics, 4)
    produce(stack, topics, dict.fromkeys(range(4), 3))
    reader, _ = readers.make()

    requests = [req(t, p, (p + i) % 3) for i, t in enumerate(topics) for p in range(4)]
    reads = reader.read(requests)

    assert_found(*reads)
    assert reader.stats()["batches"] == 1  # one leader, 100 partitions: one batch


def test_two_thousand_lookups_batched(
    stack: RealStack, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    """C-1 and C on 1,000 partitions in one read."""
    topic = topic_name("k2")
    create_topic(stack, topic, 1_000)
    produce(stack, topic, dict.fromkeys(range(1_000), 3))
    reader, pool = readers.make(num_consumers=2, statistics_interval_ms=100)
    requests = [req(topic, p, o) for p in range(1_000) for o in (1, 2)]

    started = time.monotonic()
    reads = reader.read(requests)
    elapsed = time.monotonic() - started
    flush_statistics(pool, 0.1)
    fetches = reader.stats()["fetch_requests"]

    assert_found(*reads)
    logger.warning(
        "2,000 lookups on Kafka 4.1: %.2f s, %d Fetch requests (%.4f per lookup)",
        elapsed,
        fetches,
        fetches / len(requests),
    )
    print(f"\n2,000 lookups: {elapsed:.2f} s, {fetches} Fetch requests")
    assert 0 < fetches < len(requests) / 4  # batched: far fewer fetches than lookups


def test_one_mib_records_keep_memory_bounded(
    stack: RealStack, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    """64 partitions x 4 records of 1 MiB (256 MiB in the log), the second record of each read.

    A record bigger than max.partition.fetch.bytes still arrives whole, and prefetching would
    pull the rest of each partition: the fetch.max.bytes / queue bounds and early unassign must
    hold the line.
    """
    topic = topic_name("big")
    partitions = 64
    create_topic(stack, topic, partitions)
    produce(stack, topic, dict.fromkeys(range(partitions), 4), value_size=MiB)
    reader, _ = readers.make(num_consumers=2)
    requests = [req(topic, p, 1) for p in range(partitions)]

    started = time.monotonic()
    with RssSampler() as rss:
        reads = reader.read(requests)
    elapsed = time.monotonic() - started

    assert_found(*reads)
    print(
        f"\n1 MiB records: {elapsed:.2f} s, "
        f"RSS {rss.baseline / MiB:.0f} -> peak {rss.peak / MiB:.0f} MiB"
    )
    logger.warning(
        "1 MiB records: RSS growth %.0f MiB (peak %.0f MiB)", rss.growth / MiB, rss.peak / MiB
    )
    assert rss.growth < 200 * MiB  # bounded fetches stay well under it; unbounded holds the log


def test_a_read_never_creates_a_consumer_group(
    stack: RealStack, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("nogroup")
    create_topic(stack, topic, 2)
    produce(stack, topic, {0: 3, 1: 3})

    before = stack.group_ids()
    reader, pool = readers.make()
    reads = reader.read([req(topic, 0, 1), req(topic, 1, 2), req(topic, 1, 3)])
    assert len(reads) == 3, reads  # one answer per request: the loop below checks each
    for read in reads:
        assert read.outcome in (ReadOutcome.FOUND, ReadOutcome.END)
    pool.close()
    after = stack.group_ids()  # the coordinator's own list: no group was ever joined or written

    assert LOOKUP_GROUP_ID not in after
    assert after - before == set()


def test_unknown_topic_fails_per_request(readers: Readers) -> None:
    reader, _ = readers.make()
    [read] = reader.read([req(f"absent-{uuid.uuid4().hex[:8]}", 0, 0)])
    assert read.outcome is ReadOutcome.FAILED
    assert read.error is not None and "unknown topic" in read.error


def test_unreachable_cluster_raises_cluster_unavailable() -> None:
    from freshness_tracker.errors import ClusterUnavailable

    port = free_port()  # nothing listens there
    made = Readers(f"127.0.0.1:{port}")
    try:
        reader, _ = made.make(timeout_s=1.0)
        with pytest.raises(ClusterUnavailable, match=f"127.0.0.1:{port}"):
            reader.read([req("t", 0, 0)])
    finally:
        made.close()


# --- retention ---------------------------------------------------------------------------


def test_topic_retention_from_the_broker(
    stack: RealStack, topic_name: Callable[[str], str]
) -> None:
    day, forever, unset = topic_name("ret-day"), topic_name("ret-inf"), topic_name("ret-none")
    create_topic(stack, day, 1, {"retention.ms": "86400000"})
    create_topic(stack, forever, 1, {"retention.ms": "-1"})
    # no retention.ms of its own: the broker's default applies, and is what Kafka describes
    for future in stack.admin().create_topics([NewTopic(unset, 1, 1)]).values():
        future.result(timeout=60)
    now = [0.0]
    source = TopicRetention({"bootstrap.servers": stack.bootstrap_servers}, ttl_s=60,
                            clock=lambda: now[0])  # fmt: skip

    first = source.retention_ms([day, forever, unset])
    assert first == {day: 86_400_000, forever: None, unset: KAFKA_DEFAULT_RETENTION_MS}
    assert source.requests == 1

    assert source.retention_ms([day]) == {day: 86_400_000}
    assert source.requests == 1  # served from the cache
    now[0] = 61.0
    assert source.retention_ms([day]) == {day: 86_400_000}
    assert source.requests == 2  # TTL expired


def test_topic_retention_of_an_unreachable_cluster_is_unknown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    source = TopicRetention(
        {"bootstrap.servers": f"127.0.0.1:{free_port()}"}, cluster="down", timeout_s=1.0
    )
    with caplog.at_level(logging.WARNING, logger="freshness_tracker.kafka.topic_config"):
        assert source.retention_ms(["a", "b"]) == {"a": None, "b": None}
        assert source.retention_ms(["a", "b"]) == {"a": None, "b": None}
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


# --- data loss -----------------------------------------------------------------------------


def test_out_of_range_reports_data_loss_after_delete_records(
    stack: RealStack, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    """The log start moves past requested offsets (as retention would): OUT_OF_RANGE with the
    new log start and the earliest retained record; a partition emptied whole has no record."""
    topic = topic_name("lossy")
    create_topic(stack, topic, 2)
    produce(stack, topic, {0: 8, 1: 4})
    assert stack.delete_records(topic, 0, before_offset=3) == 3
    assert stack.delete_records(topic, 1, before_offset=4) == 4
    reader, _ = readers.make(timeout_s=5.0)

    lost, just_below, found, end, emptied = reader.read([
        req(topic, 0, 0), req(topic, 0, 2), req(topic, 0, 4), req(topic, 0, 8), req(topic, 1, 1),
    ])  # fmt: skip

    for read in (lost, just_below):
        assert read.outcome is ReadOutcome.OUT_OF_RANGE, read
        assert (read.log_start_offset, read.offset) == (3, 3)
        assert (read.timestamp_ms, read.timestamp_type) == (ts_of(0, 3), "CreateTime")
    assert_found(found)
    assert (end.outcome, end.log_end_offset) == (ReadOutcome.END, 8)
    assert emptied.outcome is ReadOutcome.OUT_OF_RANGE, emptied
    assert (emptied.log_start_offset, emptied.log_end_offset) == (4, 4)
    assert emptied.timestamp_ms is None
