"""Plays a :class:`Shape` against the stack: one producer thread and one real consumer thread.

The consumer is a confluent-kafka consumer with the shape's group id, ``assign()`` (a standalone
group: no rebalance to wait for, the processing speed stays the shape's) and explicit synchronous
commits: a real group commit, which Kafka writes to ``__consumer_offsets``, stamped with the
broker's clock, where Burrow reads it. Every
delivery report and every commit is written to the shape's :class:`TruthLog`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from benchmarks.accuracy.shapes import Shape
from benchmarks.accuracy.truth import TruthLog

__all__ = ["ShapeDriver", "wall_ms"]

log = logging.getLogger(__name__)


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


class ShapeDriver:
    """Topic + group for one shape; :meth:`prepare` commits offset 0, :meth:`start` plays it."""

    def __init__(self, shape: Shape, bootstrap: str, topic: str, group: str) -> None:
        self.shape = shape
        self.bootstrap = bootstrap
        self.topic = topic
        self.group = group
        self.truth = TruthLog()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._consumer: Consumer | None = None
        self._t0 = 0.0

    def _conf(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, "logger": log, **extra}

    def prepare(self) -> None:
        """Create the consumer and commit offset 0, so Burrow knows the group before traffic."""
        consumer = Consumer(self._conf(**{
            "group.id": self.group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50,
            "fetch.queue.backoff.ms": 1,
        }))
        consumer.assign([TopicPartition(self.topic, 0, 0)])
        consumer.commit(offsets=[TopicPartition(self.topic, 0, 0)], asynchronous=False)
        self.truth.committed(wall_ms(), 0)
        self._consumer = consumer

    def start(self, t0: float) -> None:
        """Play the shape with ``t0`` (wall clock, s) as its time zero."""
        self._t0 = t0
        for name, target in (("produce", self._produce), ("consume", self._consume)):
            thread = threading.Thread(target=self._guard, args=(target,),
                                      name=f"{self.shape.name}-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self._threads.clear()

    def _guard(self, target: Any) -> None:
        try:
            target()
        except Exception as exc:  # reported by the harness: a broken shape invalidates the run
            log.exception("shape %s: %s failed", self.shape.name, target.__name__)
            self.errors.append(f"{target.__name__}: {exc!r}")

    def _wait_until(self, at: float) -> bool:
        """Sleep until wall time ``at``; False if stopped."""
        while not self._stop.is_set():
            left = at - time.time()
            if left <= 0:
                return True
            self._stop.wait(min(left, 0.5))
        return False

    def _produce(self) -> None:
        producer = Producer(self._conf(**{"batch.num.messages": 1, "linger.ms": 0,
                                          "acks": "all"}))
        failures: list[str] = []

        def delivered(ts: int) -> Any:
            def callback(err: Any, msg: Any) -> None:
                if err is not None:
                    failures.append(str(err))
                else:
                    self.truth.produced(int(msg.offset()), ts)
            return callback

        last_ts = 0
        try:
            for rel in self.shape.produce_at_s:
                if not self._wait_until(self._t0 + rel):
                    break
                ts = max(wall_ms(), last_ts)  # one producer per partition: never decreasing
                last_ts = ts
                while True:
                    try:
                        producer.produce(self.topic, b"x" * 32, partition=0, timestamp=ts,
                                         on_delivery=delivered(ts))
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
        finally:
            producer.flush(10)
        if failures:
            raise RuntimeError(f"{len(failures)} records not delivered, first: {failures[0]}")

    def _consume(self) -> None:
        consumer = self._consumer
        if consumer is None:
            raise RuntimeError("prepare() was not called")
        try:
            self._wait_until(self._t0)
            while not self._stop.is_set():
                processing = self.shape.processing_at(time.time() - self._t0)
                if processing is None:  # stuck or down: neither reads nor commits
                    self._stop.wait(0.05)
                    continue
                msg = consumer.poll(0.1)
                if msg is None or msg.error() is not None or msg.offset() is None:
                    continue
                if processing > 0 and self._stop.wait(processing):
                    break
                next_offset = int(msg.offset() or 0) + 1
                consumer.commit(offsets=[TopicPartition(self.topic, 0, next_offset)],
                                asynchronous=False)
                self.truth.committed(wall_ms(), next_offset)
        finally:
            with contextlib.suppress(Exception):
                consumer.close()
