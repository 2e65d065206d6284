"""A fake librdkafka consumer over a fake broker (no Kafka): what librdkafka delivers for
manually assigned partitions. Records come in offset order from the assigned offset, an EOF event
at the log end, and an ``_AUTO_OFFSET_RESET`` error event for an offset outside the log (as
``auto.offset.reset=error`` does)."""

from __future__ import annotations

import builtins
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_NOT_AVAILABLE, KafkaException
from confluent_kafka import KafkaError as RdKafkaError

from freshness_tracker.kafka.consumers import ConsumerPool
from freshness_tracker.kafka.lookup import KafkaRecordReader
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
from tests.support.fakes import ManualClock

#: The CreateTime of offset 0 in :func:`make_log` (offset o has BASE_TS + o).
BASE_TS = 1_700_000_000_000


class FakeClock(ManualClock[float]):
    """Deterministic time, in seconds: an idle consume() advances it by its timeout."""

    def __init__(self) -> None:
        super().__init__(1000.0)


@dataclass
class FakeLog:
    """One partition: records by offset (missing offsets are gaps), log start and end."""

    records: dict[int, tuple[int, int]]  # offset -> (timestamp type, timestamp)
    log_start: int
    log_end: int
    leader: int = 1
    stuck: bool = False  # never answers (a slow or beyond-end partition on tansu)
    error: Any = None  # a partition error event delivered instead of records


def make_log(n: int, *, start: int = 0, gaps: tuple[int, ...] = (), leader: int = 1) -> FakeLog:
    records = {o: (TIMESTAMP_CREATE_TIME, BASE_TS + o) for o in range(start, n) if o not in gaps}
    return FakeLog(records, start, n, leader)


@dataclass
class FakeError:
    code_: int
    text: str = "fake error"
    retriable_: bool = False
    fatal_: bool = False

    def code(self) -> int:
        return self.code_

    def str(self) -> str:
        return self.text

    def name(self) -> builtins.str:
        return f"E{self.code_}"

    def retriable(self) -> bool:
        return self.retriable_

    def fatal(self) -> bool:
        return self.fatal_


@dataclass
class FakeMessage:
    topic_: str | None
    partition_: int | None
    offset_: int
    ts: tuple[int, int] = (TIMESTAMP_NOT_AVAILABLE, -1)
    err: FakeError | None = None

    def error(self) -> FakeError | None:
        return self.err

    def topic(self) -> str | None:
        return self.topic_

    def partition(self) -> int | None:
        return self.partition_

    def offset(self) -> int:
        return self.offset_

    def timestamp(self) -> tuple[int, int]:
        return self.ts


@dataclass
class FakeBroker:
    """The cluster the fake consumers talk to, and a log of what they did."""

    logs: dict[tuple[str, int], FakeLog] = field(default_factory=dict)
    clock: FakeClock = field(default_factory=FakeClock)
    records_per_poll: int = 3  # records one "fetch" delivers per partition
    unreachable: bool = False
    assignments: list[list[tuple[str, int, int]]] = field(default_factory=list)
    unassignments: list[list[tuple[str, int]]] = field(default_factory=list)
    delivered: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    watermark_calls: int = 0
    metadata_calls: int = 0
    metadata_asked: list[tuple[str | None, float]] = field(default_factory=list)  # topic, timeout
    consumers: list[FakeConsumer] = field(default_factory=list)
    client_errors: list[FakeError] = field(default_factory=list)  # as consume() events
    callback_errors: list[FakeError] = field(default_factory=list)  # via error_cb
    consume_timeouts: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_topic(self, topic: str, logs: list[FakeLog]) -> None:
        for partition, log in enumerate(logs):
            self.logs[(topic, partition)] = log

    def metadata(self) -> Any:
        topics: dict[str, Any] = {}
        for (topic, partition), log in self.logs.items():
            meta = topics.setdefault(topic, SimpleNamespace(error=None, partitions={}))
            meta.partitions[partition] = SimpleNamespace(leader=log.leader)
        return SimpleNamespace(topics=topics)

    def new_consumer(self, config: dict[str, Any]) -> FakeConsumer:
        """A consumer factory for ``ConsumerPool``: each consumer is kept in ``consumers``."""
        consumer = FakeConsumer(self, config)
        with self.lock:
            self.consumers.append(consumer)
        return consumer


class FakeConsumer:
    """Behaves like a manually assigned librdkafka consumer over a FakeBroker."""

    def __init__(self, broker: FakeBroker, config: dict[str, Any]) -> None:
        self.broker = broker
        self.config = config
        self.positions: dict[tuple[str, int], int] = {}
        self.silenced: set[tuple[str, int]] = set()  # in error state after out-of-range
        self.closed = False

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        self.broker.metadata_calls += 1
        self.broker.metadata_asked.append((topic, timeout))
        if self.broker.unreachable:
            raise KafkaException(RdKafkaError(RdKafkaError._TRANSPORT))
        return self.broker.metadata()

    def incremental_assign(self, partitions: list[Any]) -> None:
        entries = []
        for tp in partitions:
            key = (tp.topic, tp.partition)
            assert key not in self.positions, f"{key} assigned twice"
            self.positions[key] = tp.offset
            self.silenced.discard(key)
            entries.append((tp.topic, tp.partition, tp.offset))
        with self.broker.lock:
            self.broker.assignments.append(entries)

    def incremental_unassign(self, partitions: list[Any]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        for key in keys:
            assert key in self.positions, f"{key} unassigned but not assigned"
            del self.positions[key]
        with self.broker.lock:
            self.broker.unassignments.append(keys)

    def unassign(self) -> None:
        self.positions.clear()

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        self.broker.consume_timeouts.append(timeout)
        out: list[Any] = []
        while self.broker.callback_errors:
            self.config["error_cb"](self.broker.callback_errors.pop(0))
        while self.broker.client_errors and len(out) < num_messages:
            out.append(FakeMessage(None, None, -1001, err=self.broker.client_errors.pop(0)))
        for key in list(self.positions):
            out.extend(self._fetch(key, num_messages - len(out)))
            if len(out) >= num_messages:
                break
        if not out:
            self.broker.clock.advance(timeout)
        return out

    def _fetch(self, key: tuple[str, int], room: int) -> list[FakeMessage]:
        log = self.broker.logs[key]
        position = self.positions[key]
        if key in self.silenced or log.stuck or room <= 0:
            return []
        if log.error is not None:
            self.silenced.add(key)
            return [FakeMessage(*key, position, err=log.error)]
        if position < log.log_start or position > log.log_end:
            self.silenced.add(key)
            reset = FakeError(RdKafkaError._AUTO_OFFSET_RESET, "offset out of range")
            return [FakeMessage(*key, position, err=reset)]
        if position == log.log_end:
            self.silenced.add(key)
            return [FakeMessage(*key, position, err=FakeError(RdKafkaError._PARTITION_EOF))]
        out: list[FakeMessage] = []
        while position < log.log_end and len(out) < min(room, self.broker.records_per_poll):
            if position in log.records:
                out.append(FakeMessage(*key, position, ts=log.records[position]))
                with self.broker.lock:
                    self.broker.delivered.setdefault(key, []).append(position)
            position += 1
        self.positions[key] = position
        return out

    def get_watermark_offsets(
        self, partition: Any, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        log = self.broker.logs[(partition.topic, partition.partition)]
        if cached:
            return (-1001, log.log_end)
        self.broker.watermark_calls += 1
        return (log.log_start, log.log_end)

    def close(self) -> None:
        self.closed = True


def fake_reader(
    broker: FakeBroker, executor: ThreadPoolExecutor, kafka: ClusterKafkaSettings,
    lookup: LookupSettings,
) -> tuple[KafkaRecordReader, ConsumerPool]:  # fmt: skip
    """The real reader and consumer pool, wired as the exporter wires them, over ``broker``
    (its consumers recorded in ``broker.consumers``; time from ``broker.clock``)."""
    pool = ConsumerPool(kafka, lookup, consumer_factory=broker.new_consumer)
    return KafkaRecordReader(kafka, lookup, pool, executor, clock=broker.clock), pool
