"""The naive baseline: one consumer, one partition at a time.

For each partition: `assign()` it at the smallest requested offset, poll until every requested
offset of that partition is answered (the record, a later record = GAP, or partition EOF = END),
then `unassign()` and go on with the next partition. It answers the same requests as the batched
engine and is tuned like it, so a ratio against it measures batching, not configuration:

- its consumer config is the engine's own (`build_consumer_config`: `queued.min.messages=1`,
  `fetch.queue.backoff.ms=1`, the fetch-size bounds, `auto.offset.reset=error`,
  `enable.partition.eof=true`, `read_uncommitted`), with only `fetch.wait.max.ms` its own: a
  one-at-a-time reader ends every lookup with a log-end Fetch that the broker holds that long,
  so its best value is the smallest (`bench_cycle --naive-fetch-wait-ms`);
- `list_topics()` once per `read()` (the first lookup in a new topic otherwise waits for
  metadata);
- C−1 and C of one partition share one assignment, exactly as the batched engine does.

It is one serial consumer, a baseline for the engine's design, not a model of another tool: the
ratio against a real tracker is docs/comparison.md's.

It implements the `RecordReader` port, so it plugs into `Exporter(reader_factory=...)` and a full
naive cycle runs through the same Burrow → plan → cache → measure path as the batched one.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from freshness_tracker.domain.model import ReadOutcome, ReadRequest, RecordRead
from freshness_tracker.kafka.batch import timestamp_of
from freshness_tracker.kafka.consumers import build_consumer_config, fetch_requests_from_stats
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings

__all__ = ["NaiveRecordReader", "naive_config"]


def naive_config(
    settings: ClusterKafkaSettings, lookup: LookupSettings, fetch_wait_max_ms: int = 0,
    statistics_interval_ms: int = 0,
) -> dict[str, Any]:  # fmt: skip
    """The engine's consumer config (defaults, the cluster's properties, the forced settings),
    under the baseline's own group and client ids and `fetch.wait.max.ms`."""
    config: dict[str, Any] = dict(
        build_consumer_config(settings, lookup, statistics_interval_ms)[0])
    config.update({
        "group.id": "freshness-bench-naive",
        "client.id": "freshness-bench-naive",
        "fetch.wait.max.ms": str(fetch_wait_max_ms),
    })  # fmt: skip
    return config


class NaiveRecordReader:
    """`RecordReader` that reads one partition at a time with one consumer."""

    def __init__(
        self,
        settings: ClusterKafkaSettings,
        lookup: LookupSettings,
        *,
        fetch_wait_max_ms: int = 0,
        statistics_interval_ms: int = 0,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.cluster = settings.name
        self._timeout_s = lookup.timeout_s
        self._fetch_requests = 0
        config = naive_config(settings, lookup, fetch_wait_max_ms, statistics_interval_ms)
        config.update(extra or {})  # another baseline (bench_cycle --naive-prop)
        if statistics_interval_ms > 0:
            config["stats_cb"] = self._on_stats
        self._statistics_interval_s = statistics_interval_ms / 1000
        self._consumer = Consumer(config)

    def _on_stats(self, doc: str) -> None:
        self._fetch_requests = max(self._fetch_requests, fetch_requests_from_stats(doc))

    def fetch_requests(self) -> int:
        """Fetch requests sent so far (from librdkafka statistics; flushes the last interval)."""
        if self._statistics_interval_s > 0:
            time.sleep(2.5 * self._statistics_interval_s)
            self._consumer.poll(0)
        return self._fetch_requests

    def close(self) -> None:
        self._consumer.close()

    def read(self, requests: Sequence[ReadRequest]) -> list[RecordRead]:
        if not requests:
            return []
        self._consumer.list_topics(timeout=self._timeout_s)
        by_partition: dict[tuple[str, int], list[ReadRequest]] = defaultdict(list)
        for request in requests:
            by_partition[(request.topic, request.partition)].append(request)
        answers: dict[ReadRequest, RecordRead] = {}
        for (topic, partition), wanted in by_partition.items():
            wanted.sort(key=lambda r: r.offset)
            for read in self._read_partition(topic, partition, wanted):
                answers[read.request] = read
        return [answers[r] for r in requests]

    def _read_partition(
        self, topic: str, partition: int, wanted: list[ReadRequest]
    ) -> list[RecordRead]:
        consumer = self._consumer
        out: list[RecordRead] = []
        open_ = list(wanted)
        consumer.assign([TopicPartition(topic, partition, open_[0].offset)])
        deadline = time.monotonic() + self._timeout_s
        try:
            while open_ and time.monotonic() < deadline:
                message = consumer.poll(0.1)
                if message is None or message.topic() != topic or message.partition() != partition:
                    continue
                err = message.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        out.extend(RecordRead(r, ReadOutcome.END, log_end_offset=message.offset())
                                   for r in open_)
                        open_.clear()
                    elif not err.retriable():
                        out.extend(RecordRead(r, ReadOutcome.FAILED, error=err.str())
                                   for r in open_)
                        open_.clear()
                    continue
                offset: int = message.offset() or 0  # a record always has an offset
                ts, ts_type = timestamp_of(message)
                while open_ and open_[0].offset <= offset:
                    request = open_.pop(0)
                    outcome = ReadOutcome.FOUND if request.offset == offset else ReadOutcome.GAP
                    out.append(RecordRead(request, outcome, offset=offset, timestamp_ms=ts,
                                          timestamp_type=ts_type))
            out.extend(RecordRead(r, ReadOutcome.FAILED, error="timed out") for r in open_)
        finally:
            consumer.unassign()
        return out
