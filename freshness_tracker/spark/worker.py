"""Executor side of the snapshot job: one core lookup engine per Python worker, reused by tasks.

Spark reuses Python workers (`spark.python.worker.reuse=true`, the default), so module state
lives from task to task: the first task a worker runs builds the cluster's `ConsumerPool` and
`KafkaRecordReader` (the same engine the exporter uses) and later tasks reuse its consumers,
connections and metadata. Idle workers die after about a minute and `atexit` never runs there;
the consumers die with the process. This module is the only place with such state.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any

import pandas as pd

from freshness_tracker.domain.model import ReadOutcome, ReadRequest, RecordRead
from freshness_tracker.errors import KafkaError
from freshness_tracker.kafka.consumers import ConsumerPool
from freshness_tracker.kafka.lookup import KafkaRecordReader
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
from freshness_tracker.logs import configure_logging, logfmt_value

__all__ = [
    "REQUEST_SCHEMA",
    "RESULT_SCHEMA",
    "EnginePayload",
    "close_engines",
    "engine_payload",
    "read_tasks",
]

log = logging.getLogger(__name__)

#: One row per Spark task: the requests it answers (several leader batches, arrays aligned).
REQUEST_SCHEMA = ("task int, topics array<string>, partitions array<int>, "
                  "offsets array<bigint>")

#: One row per request: the RecordRead, plus which worker answered (progress and tests).
RESULT_SCHEMA = ("task int, topic string, partition int, offset bigint, outcome string, "
                 "found_offset bigint, timestamp_ms bigint, timestamp_type string, "
                 "log_start_offset bigint, log_end_offset bigint, error string, "
                 "worker_pid int, worker_tasks int, consumers_created int")

#: Plain, picklable settings of one cluster's engine (MappingProxyType does not pickle).
EnginePayload = dict[str, Any]

_MAX_ENGINES = 8  # distinct cluster configs kept per worker; the least recently used closes


@dataclass
class _Engine:
    pool: ConsumerPool
    executor: ThreadPoolExecutor
    reader: KafkaRecordReader
    tasks: int = 0

    def close(self) -> None:
        self.pool.close()
        self.executor.shutdown(wait=False, cancel_futures=True)


_lock = threading.Lock()
_engines: OrderedDict[str, _Engine] = OrderedDict()


def engine_payload(kafka: ClusterKafkaSettings, lookup: LookupSettings) -> EnginePayload:
    return {"name": kafka.name, "properties": dict(kafka.properties),
            "num_consumers": kafka.num_consumers, "lookup": asdict(lookup)}


def _build(payload: Mapping[str, Any]) -> _Engine:
    kafka = ClusterKafkaSettings(payload["name"], MappingProxyType(dict(payload["properties"])),
                                 int(payload["num_consumers"]))
    lookup = LookupSettings(**payload["lookup"])
    pool = ConsumerPool(kafka, lookup)
    executor = ThreadPoolExecutor(kafka.num_consumers, thread_name_prefix=f"lookup-{kafka.name}")
    # To stderr, which Spark keeps as the executor's log: where each engine was built. The
    # worker's own log records go there too, through the exporter's formatter (names escaped).
    if not logging.getLogger().handlers:
        configure_logging("WARNING")
    print(f"freshness-tracker python worker pid={os.getpid()}: lookup engine for "  # noqa: T201
          f"cluster={logfmt_value(kafka.name)} consumers={kafka.num_consumers}",
          file=sys.stderr, flush=True)
    return _Engine(pool, executor, KafkaRecordReader(kafka, lookup, pool, executor))


def _engine(payload: Mapping[str, Any]) -> _Engine:
    key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    with _lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = _build(payload)
            while len(_engines) > _MAX_ENGINES:
                _, old = _engines.popitem(last=False)
                old.close()
        _engines.move_to_end(key)
        engine.tasks += 1
        return engine


def close_engines() -> None:
    """Close every cached engine of this process (tests; workers simply exit)."""
    with _lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        engine.close()


def read_tasks(payload: EnginePayload, batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """`mapInPandas` body: REQUEST_SCHEMA rows in, RESULT_SCHEMA rows out (one per request)."""
    cluster = payload["name"]
    for frame in batches:
        for task, topics, partitions, offsets in frame.itertuples(index=False, name=None):
            engine = _engine(payload)
            requests = [ReadRequest(cluster, str(t), int(p), int(o))
                        for t, p, o in zip(topics, partitions, offsets, strict=True)]
            try:
                reads = engine.reader.read(requests)
            except KafkaError as exc:  # no broker reachable from this worker: all failed
                reads = [RecordRead(r, ReadOutcome.FAILED, error=str(exc)) for r in requests]
            created = engine.pool.stats()["consumers_created"]
            yield _frame(int(task), reads, engine.tasks, created)


def _frame(task: int, reads: Sequence[RecordRead], tasks: int, created: int) -> pd.DataFrame:
    n = len(reads)
    return pd.DataFrame({
        "task": pd.array([task] * n, dtype="Int32"),
        "topic": [r.request.topic for r in reads],
        "partition": pd.array([r.request.partition for r in reads], dtype="Int32"),
        "offset": pd.array([r.request.offset for r in reads], dtype="Int64"),
        "outcome": [r.outcome.value for r in reads],
        "found_offset": pd.array([r.offset for r in reads], dtype="Int64"),
        "timestamp_ms": pd.array([r.timestamp_ms for r in reads], dtype="Int64"),
        "timestamp_type": [r.timestamp_type for r in reads],
        "log_start_offset": pd.array([r.log_start_offset for r in reads], dtype="Int64"),
        "log_end_offset": pd.array([r.log_end_offset for r in reads], dtype="Int64"),
        "error": [r.error for r in reads],
        "worker_pid": pd.array([os.getpid()] * n, dtype="Int32"),
        "worker_tasks": pd.array([tasks] * n, dtype="Int32"),
        "consumers_created": pd.array([created] * n, dtype="Int32"),
    })
