"""`SparkRecordReader`: the core `RecordReader` port, answered by Spark executors.

The driver groups the requests the way the lookup engine wants them: by partition (C and C−1
share one assignment), partitions by leader, leaders cut into batches of `lookup.batchSize`
partitions, batches interleaved across leaders (`domain/batching.py`, `kafka/metadata.py`: the
engine's own planning) and dealt to at most `max_tasks` Spark tasks. Each
task hands its requests to the worker's cached `KafkaRecordReader` (`spark/worker.py`), which
runs one consumer per leader batch. So one consumer serves many lookups on the same leader, and
a worker's consumers are reused by every task it runs.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from freshness_tracker.domain.batching import leader_batches
from freshness_tracker.domain.model import ReadOutcome, ReadRequest, RecordRead
from freshness_tracker.errors import KafkaError
from freshness_tracker.kafka.consumers import ConsumerPool
from freshness_tracker.kafka.metadata import cluster_metadata, leader_of
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
from freshness_tracker.spark import worker

__all__ = ["SparkRecordReader", "python_failure"]

log = logging.getLogger(__name__)

_Part = tuple[str, int]


class SparkRecordReader:
    """Reads one cluster's records in Spark tasks; `last_run` describes the latest `read()`."""

    def __init__(self, spark: Any, kafka: ClusterKafkaSettings, lookup: LookupSettings, *,
                 max_tasks: int | None = None) -> None:
        self._spark = spark
        self._kafka = kafka
        self._lookup = lookup
        self._max_tasks = max_tasks
        self._payload = worker.engine_payload(kafka, lookup)
        self._metadata_pool: ConsumerPool | None = None
        self.last_run: dict[str, Any] = {}

    @property
    def cluster(self) -> str:
        return self._kafka.name

    def close(self) -> None:
        if self._metadata_pool is not None:
            self._metadata_pool.close()

    # --- RecordReader ---------------------------------------------------------------------

    def read(self, requests: Sequence[ReadRequest]) -> list[RecordRead]:
        """One RecordRead per request. Raises ClusterUnavailable when the driver cannot fetch
        the cluster's metadata, KafkaError when the Spark job itself fails."""
        if not requests:
            return []
        began = time.monotonic()
        tasks, leaders, batches = self._tasks(requests)
        log.info("stage=lookups cluster=%s requests=%d leaders=%d batches=%d tasks=%d",
                 self.cluster, len(requests), leaders, batches, len(tasks))
        rows = self._run(tasks)
        answers = {(r["topic"], r["partition"], r["offset"]): r for r in rows}
        reads = [self._record_read(req, answers.get((req.topic, req.partition, req.offset)))
                 for req in requests]
        failed = sum(r.outcome is ReadOutcome.FAILED for r in reads)
        workers = sorted({r["worker_pid"] for r in rows})
        self.last_run = {
            "requests": len(requests), "tasks": len(tasks), "leaders": leaders,
            "batches": batches, "failed": failed, "worker_pids": workers,
            "consumers_created": {r["worker_pid"]: r["consumers_created"] for r in rows},
            "duration_ms": int((time.monotonic() - began) * 1000),
        }
        log.info("stage=lookups-done cluster=%s reads=%d failed=%d tasks=%d python_workers=%d "
                 "duration_ms=%d", self.cluster, len(reads), failed, len(tasks), len(workers),
                 self.last_run["duration_ms"])
        return reads

    # --- planning -------------------------------------------------------------------------

    def _leaders(self, parts: Sequence[_Part]) -> dict[_Part, int]:
        """Each partition's leader, -1 where none can be read (the executor's engine then
        fails its reads with the reason)."""
        if self._metadata_pool is None:
            self._metadata_pool = ConsumerPool(replace(self._kafka, num_consumers=1),
                                               self._lookup)
        metadata = cluster_metadata(self._metadata_pool, self.cluster, self._lookup.timeout_s)
        return {part: leader_of(metadata, *part)[0] for part in parts}

    def _tasks(self, requests: Sequence[ReadRequest]
               ) -> tuple[list[tuple[int, list[str], list[int], list[int]]], int, int]:
        """(task rows, leaders, batches): leader batches dealt round-robin to the tasks."""
        by_part: dict[_Part, list[int]] = defaultdict(list)
        for r in requests:
            by_part[(r.topic, r.partition)].append(r.offset)
        leaders = self._leaders(sorted(by_part))
        by_leader: dict[int, list[_Part]] = defaultdict(list)
        for part in sorted(by_part):
            by_leader[leaders[part]].append(part)
        batches = leader_batches(by_leader, self._lookup.batch_size)
        limit = self._max_tasks or int(self._spark.sparkContext.defaultParallelism)
        n_tasks = max(1, min(len(batches), limit))
        rows: list[tuple[int, list[str], list[int], list[int]]] = [
            (i, [], [], []) for i in range(n_tasks)]
        for i, batch in enumerate(batches):
            _, topics, partitions, offsets = rows[i % n_tasks]
            for topic, partition in batch:
                for offset in sorted(set(by_part[(topic, partition)])):
                    topics.append(topic)
                    partitions.append(partition)
                    offsets.append(offset)
        return rows, len(by_leader), len(batches)

    # --- execution ------------------------------------------------------------------------

    def _run(self, tasks: list[tuple[int, list[str], list[int], list[int]]]
             ) -> list[dict[str, Any]]:
        sc = self._spark.sparkContext
        sc.setJobDescription(f"freshness lookups cluster={self.cluster} tasks={len(tasks)}")
        try:
            frame = self._spark.createDataFrame(sc.parallelize(tasks, len(tasks)),
                                                worker.REQUEST_SCHEMA)
            body = functools.partial(worker.read_tasks, self._payload)
            table = frame.mapInPandas(body, worker.RESULT_SCHEMA).toArrow()
        except Exception as exc:  # the Spark job failed as a whole (not one partition)
            summary, whole = python_failure(exc)
            log.error("cluster=%s Spark lookup job failed: %s", self.cluster, whole)
            raise KafkaError(f"cluster {self.cluster}: Spark lookup job failed: {summary}") \
                from exc
        finally:
            sc.setJobDescription(None)
        rows: list[dict[str, Any]] = table.to_pylist()
        return rows

    def _record_read(self, request: ReadRequest, row: dict[str, Any] | None) -> RecordRead:
        if row is None:
            return RecordRead(request, ReadOutcome.FAILED,
                              error="no answer from the Spark lookup tasks")
        return RecordRead(
            request,
            ReadOutcome(row["outcome"]),
            offset=row["found_offset"],
            timestamp_ms=row["timestamp_ms"],
            timestamp_type=row["timestamp_type"],
            log_start_offset=row["log_start_offset"],
            log_end_offset=row["log_end_offset"],
            error=row["error"],
        )


_TRACEBACK = "Traceback (most recent call last):"


def python_failure(exc: BaseException) -> tuple[str, str]:
    """(one line, the whole text) of a failed Spark job.

    A Python worker's exception reaches the driver as a PythonException whose first line is only
    "An exception was thrown from the Python worker..."; the worker's traceback follows. The one
    line is the traceback's last line (`ModuleNotFoundError: No module named 'pandas'`), else
    the first line; the whole text keeps the worker's traceback for the log.
    """
    text = str(exc).strip() or repr(exc)
    lines = [line for line in text.splitlines() if line.strip()]
    summary = lines[0] if lines else repr(exc)
    if _TRACEBACK in text:
        tail = text[text.rindex(_TRACEBACK):].splitlines()
        frames = [line for line in tail[1:] if line.strip()]
        # the exception line: the first one after the frames (frames are indented)
        ends = [line for line in frames if not line.startswith((" ", "\t"))]
        if ends:
            summary = ends[0].strip()
    return summary[:500], text
