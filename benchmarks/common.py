"""Benchmark workload on the real local stack (tansu + frame proxy + Burrow 1.2.1).

`Workload.build()` creates topics of up to 100 partitions, produces a few small records per
partition, writes one OffsetCommit per (group, partition) straight into `__consumer_offsets` with
a chosen commit time (fast: no consumer group is joined), and waits until Burrow reports exactly
the expected committed offset and lag for every partition.

Lag is kept small (1–3 records, seeded): tansu ignores `max.partition.fetch.bytes` and returns
the rest of the partition on every fetch, so deep lag measures tansu's over-sized responses rather
than the client design. Near-live consumers, the common case, have a small lag anyway.
"""

from __future__ import annotations

import logging
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined,unused-ignore]

from freshness_tracker.devstack import LocalStack
from freshness_tracker.devstack.bridge import (
    OFFSETS_TOPIC,
    offset_commit_key,
    offset_commit_value,
)
from freshness_tracker.devstack.processes import wait_until
from freshness_tracker.devstack.proxy import API_FETCH

__all__ = ["Workload", "fetch_frames", "median", "timed"]

log = logging.getLogger(__name__)

RETENTION_MS = 7 * 24 * 3600 * 1000
MiB = 1024 * 1024


@dataclass
class Workload:
    """`partitions` lagging partitions over topics of `per_topic` partitions, split over groups.

    Every partition holds `records` records; each group's committed offset leaves a lag of
    `min_lag`..`max_lag` records (so it is at least 1: every partition is lagging).
    """

    stack: LocalStack
    prefix: str
    partitions: int
    per_topic: int = 100
    groups: int = 4
    records: int = 4
    min_lag: int = 1
    max_lag: int = 3
    value_size: int = 16
    seed: int = 7
    topics: list[tuple[str, int]] = field(default_factory=list)  # (name, partitions)
    # (group, topic, partition) -> (committed offset, lag)
    commits: dict[tuple[str, str, int], tuple[int, int]] = field(default_factory=dict)

    @property
    def group_names(self) -> list[str]:
        return [f"{self.prefix}-g{i}" for i in range(self.groups)]

    @property
    def group_regex(self) -> str:
        return f"{self.prefix}-g[0-9]+"

    def build(self, timeout_s: float = 300.0) -> None:
        started = time.monotonic()
        self._create_topics(timeout_s)
        self._produce(timeout_s)
        self._commit(timeout_s)
        self._wait_for_burrow(timeout_s)
        log.info("workload %s ready in %.1f s", self.prefix, time.monotonic() - started)

    # --- steps -------------------------------------------------------------------------

    def _create_topics(self, timeout_s: float) -> None:
        left, i = self.partitions, 0
        while left > 0:
            n = min(self.per_topic, left)
            self.topics.append((f"{self.prefix}-t{i:02d}", n))
            left -= n
            i += 1
        futures = self.stack.admin().create_topics(
            [NewTopic(t, n, 1, config={"retention.ms": str(RETENTION_MS)}) for t, n in self.topics],
            request_timeout=timeout_s,
        )
        for future in futures.values():
            future.result(timeout=timeout_s)
        wait_until(
            lambda: all(self.stack._burrow_partitions(t) >= n for t, n in self.topics),
            timeout_s, "Burrow to list the benchmark topics", interval_s=0.25,
        )  # fmt: skip

    def _producer(self) -> Producer:
        return Producer({
            "bootstrap.servers": self.stack.bootstrap_servers,
            # one record per batch: tansu's high watermark is only exact then
            "batch.num.messages": 1,
            "linger.ms": 0,
            "acks": "all",
            "message.max.bytes": max(1_000_000, self.value_size + 4096),
            "queue.buffering.max.kbytes": 1_048_576,
            "logger": log,
        })  # fmt: skip

    def _produce(self, timeout_s: float) -> None:
        producer = self._producer()
        value = b"x" * self.value_size
        base = int(time.time() * 1000) - 3_600_000
        errors: list[Any] = []

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(err)

        for topic, n in self.topics:
            for partition in range(n):
                for offset in range(self.records):
                    _produce_one(producer, topic, value, partition, base + offset * 1000,
                                 on_delivery)
        if producer.flush(timeout_s) > 0 or errors:
            raise RuntimeError(f"produce failed: {errors[:1] or 'timeout'}")

    def _commit(self, timeout_s: float) -> None:
        rng = random.Random(self.seed)
        producer = Producer({"bootstrap.servers": self.stack.bootstrap_servers,
                             "linger.ms": 5, "acks": "all", "logger": log})
        commit_time = int(time.time() * 1000) - 60_000
        groups = self.group_names
        for i, (topic, n) in enumerate(self.topics):
            group = groups[i % len(groups)]
            for partition in range(n):
                lag = rng.randint(self.min_lag, self.max_lag)
                offset = self.records - lag
                self.commits[(group, topic, partition)] = (offset, lag)
                _produce_one(producer, OFFSETS_TOPIC, offset_commit_value(offset, commit_time),
                             None, None, None, key=offset_commit_key(group, topic, partition))
        if producer.flush(timeout_s) > 0:
            raise RuntimeError("OffsetCommit records not delivered")

    def _wait_for_burrow(self, timeout_s: float) -> None:
        """Poll each group's /lag until every partition shows the committed offset and lag."""
        expected: dict[str, dict[tuple[str, int], tuple[int, int]]] = {}
        for (group, topic, partition), value in self.commits.items():
            expected.setdefault(group, {})[(topic, partition)] = value
        pending = set(expected)

        def group_ready(group: str) -> bool:
            status, body = self.stack.burrow_get(
                f"/v3/kafka/{self.stack.cluster}/consumer/{group}/lag")
            if status != 200 or not isinstance(body, dict):
                return False
            seen = {}
            for part in body.get("status", {}).get("partitions", []) or []:
                end = part.get("end") or {}
                seen[(part.get("topic"), part.get("partition"))] = (
                    end.get("offset"), part.get("current_lag"))
            return all(seen.get(k) == v for k, v in expected[group].items())

        def all_ready() -> bool:
            pending.difference_update([g for g in list(pending) if group_ready(g)])
            return not pending

        wait_until(all_ready, timeout_s, "Burrow to show the benchmark lag", interval_s=0.5)

    def lagging_partitions(self) -> int:
        return len({(t, p) for (_g, t, p) in self.commits})


def _produce_one(
    producer: Producer, topic: str, value: bytes, partition: int | None, timestamp: int | None,
    on_delivery: Callable[..., None] | None, key: bytes | None = None,
) -> None:  # fmt: skip
    kwargs: dict[str, Any] = {"key": key}
    if partition is not None:
        kwargs["partition"] = partition
    if timestamp is not None:
        kwargs["timestamp"] = timestamp
    if on_delivery is not None:
        kwargs["on_delivery"] = on_delivery
    while True:
        try:
            producer.produce(topic, value, **kwargs)
            return
        except BufferError:
            producer.poll(0.05)


def fetch_frames(stack: LocalStack) -> int:
    """Fetch request frames the proxy has passed so far (every client, Burrow included)."""
    assert stack.proxy is not None
    return stack.proxy.request_counts().get(API_FETCH, 0)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")
