"""A steady demo workload on a :class:`RealStack`: one producer and three real consumer groups.

Why: the demo needs consumer groups whose freshness behaves differently and predictably. A
producer writes a few records/s (CreateTime = now) round-robin over the partitions; three
confluent-kafka consumers read with ``assign()`` (no rebalance to wait for) and commit each
offset explicitly to the broker, as a standalone group, where Burrow reads it:

* ``keeps-up`` commits right after reading each record: freshness stays near zero;
* ``slow`` processes at ``slow_ratio`` of the produce rate: lag and freshness grow steadily;
* ``stuck`` reads ``stuck_after`` records, then never commits again: freshness grows with wall time.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

if TYPE_CHECKING:
    from devstack.stack import RealStack

__all__ = ["GROUP_KINDS", "Workload"]

log = logging.getLogger(__name__)

GROUP_KINDS = ("keeps-up", "slow", "stuck")


class Workload:
    """Background producer + ``keeps-up``/``slow``/``stuck`` consumers; :meth:`start`/:meth:`stop`.

    Group ids are ``group_prefix + kind`` (``groups`` maps kind to id).
    """

    def __init__(
        self,
        stack: RealStack,
        topic: str = "demo-orders",
        partitions: int = 3,
        records_per_s: float = 6.0,
        slow_ratio: float = 0.3,
        stuck_after: int = 5,
        value_size: int = 64,
        group_prefix: str = "",
    ) -> None:
        self.stack = stack
        self.topic = topic
        self.partitions = partitions
        self.records_per_s = records_per_s
        self.slow_ratio = slow_ratio
        self.stuck_after = stuck_after
        self.value_size = value_size
        self.groups = {kind: f"{group_prefix}{kind}" for kind in GROUP_KINDS}
        self.produced = 0
        self.consumed = dict.fromkeys(GROUP_KINDS, 0)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Create the topic (waiting for Burrow to list it), then start the threads."""
        if self._threads:
            return
        self.stack.create_topic(self.topic, partitions=self.partitions)
        self._stop.clear()
        targets: list[tuple[str, Any, tuple[Any, ...]]] = [("producer", self._produce, ())]
        targets += [(kind, self._consume, (kind,)) for kind in GROUP_KINDS]
        for name, target, args in targets:
            thread = threading.Thread(
                target=target, args=args, name=f"workload-{name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        log.info("workload started: topic=%s groups=%s", self.topic, sorted(self.groups.values()))

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self._threads.clear()

    def __enter__(self) -> Workload:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _conf(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.stack.bootstrap_servers, "logger": log, **extra}

    def _produce(self) -> None:
        producer = Producer(self._conf(**{"batch.num.messages": 1, "linger.ms": 0}))
        interval = 1.0 / self.records_per_s
        next_at = time.monotonic()
        partition = 0
        try:
            while not self._stop.is_set():
                try:
                    producer.produce(
                        self.topic,
                        b"x" * self.value_size,
                        partition=partition,
                        timestamp=int(time.time() * 1000),
                    )
                    self.produced += 1
                except BufferError:
                    log.warning("workload producer queue full; broker unreachable?")
                producer.poll(0)
                partition = (partition + 1) % self.partitions
                next_at += interval
                self._stop.wait(max(0.0, next_at - time.monotonic()))
        finally:
            producer.flush(5)

    def _consume(self, kind: str) -> None:
        group = self.groups[kind]
        consumer = Consumer(
            self._conf(
                **{
                    "group.id": group,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    "fetch.wait.max.ms": 100,
                    "fetch.queue.backoff.ms": 1,
                }
            )
        )
        consumer.assign(
            [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)]
        )
        pace = 1.0 / (self.records_per_s * self.slow_ratio) if kind == "slow" else 0.0
        try:
            while not self._stop.is_set():
                if kind == "stuck" and self.consumed[kind] >= self.stuck_after:
                    self._stop.wait(0.5)  # alive but never reading or committing again
                    continue
                msg = consumer.poll(0.2)
                if msg is None or msg.error() is not None:
                    continue
                self.consumed[kind] += 1
                if pace:
                    self._stop.wait(pace)  # "processing"
                offset, partition = msg.offset() or 0, msg.partition() or 0
                tp = TopicPartition(self.topic, partition, offset + 1)
                with contextlib.suppress(Exception):  # a broker outage must not kill the thread
                    consumer.commit(offsets=[tp], asynchronous=False)
        finally:
            consumer.close()
