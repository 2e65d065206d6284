"""Benchmark workload on the real local stack (devstack.RealStack: Apache Kafka in KRaft mode and
Burrow; 3.9.1 + Debian's Burrow 1.2.1 by default, 4.1.1 with a Burrow >= 1.9.5).

`Workload.build()` creates topics of up to 100 partitions (replicated on every node unless told
otherwise: RF 3 on a 3-node stack, leaders spread over the brokers), produces a few small records
per partition, commits one offset per (group, partition) as a **real group commit** (a
confluent-kafka consumer with the group's `group.id`, no join, many partitions per OffsetCommit
request: the broker stamps the commit time), and waits until Burrow, reading
`__consumer_offsets`, reports exactly the expected committed offset and lag for every partition.

Lag is kept small (1–3 records, seeded; `max_lag` changes it). What a lookup costs is round
trips, and the number of them does not depend on the lag depth: the reader asks for C − 1 and C
and drops a partition once they are answered. Deeper lag only adds bytes per partition (up to
`max.partition.fetch.bytes`, 64 KiB by default, which Kafka honours), and those bytes flow through
the stack's Python frame proxy, whose throughput would then be measured instead of the client.
Small lag also keeps the workload quick to build; near-live consumers, the common case, lag
little anyway.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
import os
import platform
import random
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined,unused-ignore]

from devstack import RealStack
from devstack.processes import wait_until
from devstack.proxy import API_FETCH
from devstack.stack import DEFAULT_RETENTION_MS

__all__ = ["RunRecord", "Workload", "create_topics", "fetch_frames", "median", "timed"]

log = logging.getLogger(__name__)

MiB = 1024 * 1024


@dataclass
class Workload:
    """`partitions` lagging partitions over topics of `per_topic` partitions, split over groups.

    Every partition holds `records` records; each group's committed offset leaves a lag of
    `min_lag`..`max_lag` records (so it is at least 1: every partition is lagging).
    """

    stack: RealStack
    prefix: str
    partitions: int
    per_topic: int = 100
    groups: int = 4
    records: int = 4
    min_lag: int = 1
    max_lag: int = 3
    value_size: int = 16
    seed: int = 7
    replication_factor: int | None = None  # every node
    topics: list[tuple[str, int]] = field(default_factory=list)  # (name, partitions)
    # (group, topic, partition) -> (committed offset, lag)
    commits: dict[tuple[str, str, int], tuple[int, int]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per build step

    @property
    def group_names(self) -> list[str]:
        return [f"{self.prefix}-g{i}" for i in range(self.groups)]

    @property
    def group_regex(self) -> str:
        return f"{self.prefix}-g[0-9]+"

    def build(self, timeout_s: float = 300.0) -> None:
        if self.max_lag >= self.records or self.min_lag < 1:
            raise ValueError("need 1 <= min_lag <= max_lag < records")
        started = time.monotonic()
        steps: list[tuple[str, Callable[[], None]]] = [
            ("topics", lambda: self._create_topics(timeout_s)),
            ("produce", lambda: self._produce(timeout_s)),
            ("commit", self._commit),
            ("burrow", lambda: self._wait_for_burrow(timeout_s)),
        ]
        for name, step in steps:
            began = time.monotonic()
            step()
            self.timings[name] = round(time.monotonic() - began, 1)
        log.info("workload %s ready in %.1f s (%s)", self.prefix, time.monotonic() - started,
                 self.timings)  # fmt: skip

    def leaders(self) -> dict[tuple[str, int], int]:
        """(topic, partition) → leader broker id, now."""
        return {(topic, p): leader for topic, _n in self.topics
                for p, leader in self.stack.leaders(topic).items()}  # fmt: skip

    def lagging_partitions(self) -> int:
        return len({(t, p) for (_g, t, p) in self.commits})

    # --- steps -------------------------------------------------------------------------

    def _create_topics(self, timeout_s: float) -> None:
        left, i = self.partitions, 0
        while left > 0:
            n = min(self.per_topic, left)
            self.topics.append((f"{self.prefix}-t{i:02d}", n))
            left -= n
            i += 1
        # records above 1 MiB need a topic limit above Kafka's default message.max.bytes
        config = {"max.message.bytes": str(4 * MiB)} if self.value_size >= MiB // 2 else {}
        create_topics(self.stack, self.topics, config, timeout_s, self.replication_factor)

    def _producer(self) -> Producer:
        # the unproxied listener: building the workload is not what is measured
        assert self.stack.kafka is not None
        return Producer({
            "bootstrap.servers": self.stack.kafka.internal_bootstrap_servers,
            "linger.ms": 5,
            "acks": "all",
            "enable.idempotence": True,
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
                                 on_delivery)  # fmt: skip
        if producer.flush(timeout_s) > 0 or errors:
            raise RuntimeError(f"produce failed: {errors[:1] or 'timeout'}")

    def _lag(self, rng: random.Random) -> int:
        """One partition's lag at the commit."""
        return rng.randint(self.min_lag, self.max_lag)

    def _commit(self) -> None:
        """Real group commits, one OffsetCommit per topic and group (the broker stamps them)."""
        rng = random.Random(self.seed)
        groups = self.group_names
        for i, (topic, n) in enumerate(self.topics):
            group = groups[i % len(groups)]
            offsets = []
            for partition in range(n):
                lag = self._lag(rng)
                offset = self.records - lag
                self.commits[(group, topic, partition)] = (offset, lag)
                offsets.append((topic, partition, offset))
            self.stack.commit_offsets(group, offsets)

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


def create_topics(
    stack: RealStack,
    topics: Sequence[tuple[str, int]],
    config: dict[str, str] | None = None,
    timeout_s: float = 300.0,
    replication_factor: int | None = None,
    batch: int = 10,
) -> None:
    """Create topics in small serial batches (one CreateTopics request for `batch` topics, then
    every new partition's leader, then the next batch), then wait for Burrow to list each one, in
    turn: Burrow drops commits for a topic it does not know yet.

    Serial because a 3-node KRaft controller on a shared machine timed out under 8 parallel
    requests of 100 partitions each, and librdkafka's re-sent request then met "already exists":
    a topic we asked for that exists with the partitions we asked for is created (a re-sent or
    retried request), one with other partitions is an error. The Burrow waits are not parallel
    because the stack restarts a Burrow 1.2.1 that panicked on a topic's partial broker offsets
    from inside that wait, which concurrent waiters would race. `replication_factor`: every node
    by default."""
    rf = replication_factor or (stack.kafka.replication_factor if stack.kafka is not None else 1)
    topic_config = {"retention.ms": str(DEFAULT_RETENTION_MS)} | dict(config or {})
    for start in range(0, len(topics), batch):
        chunk = dict(topics[start : start + batch])
        _create_batch(stack, chunk, rf, topic_config, timeout_s)
        for name, partitions in chunk.items():
            wait_until(functools.partial(_all_led, stack, name, partitions), timeout_s,
                       f"a leader for every partition of {name}", interval_s=0.2)  # fmt: skip
    if stack.burrow is not None:
        for name, partitions in topics:
            stack.burrow.wait_for_topic(name, partitions, timeout_s)


def _create_batch(
    stack: RealStack, topics: dict[str, int], rf: int, config: dict[str, str], timeout_s: float
) -> None:
    """One CreateTopics request for `topics` ({name: partitions}); a topic whose creation timed
    out is asked for again until `timeout_s` (the next answer is then "already exists")."""
    deadline = time.monotonic() + timeout_s
    pending = dict(topics)
    while pending:
        left = max(deadline - time.monotonic(), 1.0)
        futures = stack.admin().create_topics(
            [NewTopic(name, n, rf, config=config) for name, n in pending.items()],
            request_timeout=left, operation_timeout=left,
        )  # fmt: skip
        for name, future in futures.items():
            try:
                future.result(timeout=left + 10)
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    found = _partition_count(stack, name)
                    if found != pending[name]:
                        raise RuntimeError(
                            f"topic {name} exists with {found} partitions, not {pending[name]}"
                        ) from exc
                elif not error.retriable() or time.monotonic() >= deadline:
                    raise RuntimeError(f"cannot create topic {name}: {exc}") from exc
                else:
                    log.warning("creating %s: %s; asking again", name, error)
                    continue
            del pending[name]


def _partition_count(stack: RealStack, topic: str) -> int | None:
    try:
        found = stack.admin().list_topics(topic, timeout=30).topics.get(topic)
    except KafkaException:
        return None
    return None if found is None or found.error is not None else len(found.partitions)


def _all_led(stack: RealStack, topic: str, partitions: int) -> bool:
    """Every one of the `partitions` of `topic` has a leader now."""
    return len(stack.leaders(topic)) == partitions


def _produce_one(
    producer: Producer, topic: str, value: bytes, partition: int, timestamp: int,
    on_delivery: Callable[..., None],
) -> None:  # fmt: skip
    while True:
        try:
            producer.produce(topic, value, partition=partition, timestamp=timestamp,
                             on_delivery=on_delivery)  # fmt: skip
            return
        except BufferError:
            producer.poll(0.05)


def fetch_frames(stack: RealStack) -> dict[int, int]:
    """Fetch request frames each broker's client-listener proxy has passed so far.

    Only clients of `bootstrap_servers` go through the proxies: Burrow, replication and the
    stack's own helpers use the brokers' internal listener, so nothing needs subtracting.
    """
    return {node: counts.get(API_FETCH, 0) for node, counts in stack.request_counts().items()}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


T = TypeVar("T")


class RunRecord:
    """The committed record of one benchmark run: what ran, on what, and what it measured.

    Pages are rendered from these files only (docs/records/<page>/<bench>.json), so a record
    holds every value its page shows and the machine's state around the run: on a shared machine
    the load says how far absolute times can be trusted, and the same-run ratios are what a page
    may claim. Created before the work (load at start), written after it, also when the run
    failed: a failed run must render as failed, not vanish.
    """

    def __init__(self, bench: str, argv: Sequence[str] | None = None) -> None:
        self.bench = bench
        args = list(sys.argv[1:] if argv is None else argv)
        self.data: dict[str, Any] = {
            "bench": bench,
            "command": shlex.join(["python3", "-m", f"benchmarks.{bench}", *args]),
            "started": _utc_now(),
            "machine": {"cores": os.cpu_count(), "load_start": _load()},
            "versions": _versions(),
            "status": "incomplete",
        }

    def measuring(self, directory: Path | None, work: Callable[[], T]) -> T:
        """`work()`, with a failed record written to `directory` (when given) if it raises."""
        try:
            return work()
        except BaseException as exc:
            if directory is not None:
                self.write(directory, {}, status="failed", error=f"{type(exc).__name__}: {exc}")
            raise

    def write(
        self, directory: Path, values: dict[str, Any], ratios: dict[str, Any] | None = None,
        *, status: str = "ok", error: str | None = None, versions: dict[str, Any] | None = None,
    ) -> Path:  # fmt: skip
        """Write `<directory>/<bench>.json`; `status` is ok, failed or incomplete."""
        self.data["finished"] = _utc_now()
        self.data["machine"]["load_end"] = _load()
        self.data["versions"].update(versions or {})
        self.data["status"] = status
        if error is not None:
            self.data["error"] = error
        self.data["values"] = values
        self.data["ratios"] = ratios or {}
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.bench}.json"
        path.write_text(json.dumps(_rounded(self.data), indent=1, sort_keys=True) + "\n")
        return path


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _versions() -> dict[str, Any]:
    import confluent_kafka

    from freshness_tracker import __version__

    return {"python": platform.python_version(), "freshness_tracker": __version__,
            "confluent_kafka": confluent_kafka.__version__,
            "librdkafka": confluent_kafka.libversion()[0]}  # fmt: skip


def _rounded(value: Any) -> Any:
    """Floats to 4 significant digits: records stay small and diffs readable."""
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {str(k): _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value
