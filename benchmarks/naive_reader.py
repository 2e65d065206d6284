"""The naive baseline: one consumer, one partition at a time.

For each partition: `assign()` it at the smallest requested offset, poll until every requested
offset of that partition is answered (the record, a later record = GAP, or partition EOF = END),
then `unassign()` and go on with the next partition. It is *tuned* as in the project's lookup
measurements, so it is the best one-at-a-time reader we know, not a strawman:

- `fetch.wait.max.ms` small (default 10 ms here; `bench_cycle` uses 0, its best on Kafka 4.1:
  every lookup ends with a Fetch at the log end that the broker holds that long; 500 partitions
  at 1 ms added RTT took 2.7 s with 0, 3.8 s with 1 and 9.3 s with 10 ms, in separate runs on
  a shared machine) and `fetch.queue.backoff.ms=1` (the default 1000 ms backoff stalls every
  lookup that hits an empty fetch by a second);
- `auto.offset.reset=error` (never a silent jump to another record), `enable.partition.eof=true`;
- `list_topics()` once per `read()` (the first lookup in a new topic otherwise costs ~1 s);
- C−1 and C of one partition share one assignment, exactly as the batched engine does, so both
  readers answer the same requests with the same number of assignments per partition.

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
from freshness_tracker.kafka.consumers import fetch_requests_from_stats
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings

__all__ = ["NaiveRecordReader", "naive_config"]


def naive_config(
    bootstrap_servers: str, lookup: LookupSettings, fetch_wait_max_ms: int = 10,
    statistics_interval_ms: int = 0,
) -> dict[str, Any]:  # fmt: skip
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        "group.id": "freshness-bench-naive",
        "client.id": "freshness-bench-naive",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error",
        "enable.partition.eof": True,
        "fetch.wait.max.ms": fetch_wait_max_ms,
        "fetch.queue.backoff.ms": 1,
        "max.partition.fetch.bytes": lookup.max_partition_fetch_bytes,
        "fetch.max.bytes": lookup.fetch_max_bytes,
        "queued.max.messages.kbytes": lookup.queued_max_messages_kbytes,
        "isolation.level": "read_uncommitted",
        "log.connection.close": False,
    }
    if statistics_interval_ms > 0:
        config["statistics.interval.ms"] = statistics_interval_ms
    return config


class NaiveRecordReader:
    """`RecordReader` that reads one partition at a time with one consumer."""

    def __init__(
        self,
        settings: ClusterKafkaSettings,
        lookup: LookupSettings,
        *,
        fetch_wait_max_ms: int = 10,
        statistics_interval_ms: int = 0,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.cluster = settings.name
        self._timeout_s = lookup.timeout_s
        self._fetch_requests = 0
        config = naive_config(settings.properties["bootstrap.servers"], lookup,
                              fetch_wait_max_ms, statistics_interval_ms)
        config.update(extra or {})  # e.g. a stronger baseline (bench_cycle --naive-prop)
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
