"""`freshness-tracker spark snapshot`: one fleet-wide cycle with the Kafka reads in executors.

The driver runs the exporter's own cycle (`cycle.ClusterMeasurer`: Burrow snapshot, filters,
shard, `plan_reads`, `read_with_cache`, `measure_partitions`, roll-ups) with one difference: its
`RecordReader` is `SparkRecordReader`, so the point reads run in Spark tasks over the core lookup
engine. Results go through the same history writer as the exporter's `history.path` sink, so
both produce the same rows in the same table.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.config.settings import Settings
from freshness_tracker.cycle import cluster_measurers, now_ms
from freshness_tracker.domain.model import ClusterSnapshot
from freshness_tracker.domain.ports import BurrowSource
from freshness_tracker.kafka.settings import ClusterKafkaSettings
from freshness_tracker.kafka.topic_config import TopicRetention
from freshness_tracker.sinks.history import SPARK_WRITER, write_snapshot
from freshness_tracker.spark.reader import SparkRecordReader

__all__ = ["SnapshotResult", "keep_warm", "run_snapshot"]

log = logging.getLogger(__name__)


class SnapshotResult:
    """What one run produced: a snapshot per cluster, the files written, the readers' stats."""

    def __init__(self) -> None:
        self.snapshots: list[ClusterSnapshot] = []
        self.files: dict[str, str | None] = {}
        self.lookups: dict[str, dict[str, Any]] = {}

    @property
    def ok(self) -> bool:
        return bool(self.snapshots) and all(s.health.up for s in self.snapshots)


def run_snapshot(
    spark: Any,
    settings: Settings,
    history_path: str,
    *,
    burrow: BurrowSource | None = None,
    clock: Callable[[], int] = now_ms,
    cycle_time_ms: int | None = None,
    max_tasks: int | None = None,
    parallel_clusters: int = 4,
) -> SnapshotResult:
    """Measure every configured cluster once and append the rows to the history table.

    `cycle_time_ms` fixes the cycle start (and so the cycle id and file): re-running the same
    cycle replaces its rows. `max_tasks` caps Spark tasks per cluster (default: the cluster's
    default parallelism). Clusters are measured concurrently, `parallel_clusters` at a time.
    """
    began = time.monotonic()
    source = burrow or BurrowClient(settings.burrow, clock=clock)
    readers: dict[str, SparkRecordReader] = {}

    def reader_factory(kafka: ClusterKafkaSettings) -> SparkRecordReader:
        reader = SparkRecordReader(spark, kafka, settings.lookup, max_tasks=max_tasks)
        readers[kafka.name] = reader
        return reader

    measurers = cluster_measurers(
        settings, source, reader_factory,
        retention_factory=lambda kafka: TopicRetention.for_cluster(kafka, settings.lookup),
        clock=clock,
    )
    result = SnapshotResult()
    log.info("stage=start clusters=%d history=%s", len(measurers), history_path)
    try:
        workers = max(1, min(len(measurers), parallel_clusters))
        with ThreadPoolExecutor(workers, thread_name_prefix="snapshot") as pool:
            result.snapshots = list(pool.map(lambda m: m.measure(), measurers))
        for snapshot in result.snapshots:
            path = write_snapshot(history_path, snapshot, cycle_start_ms=cycle_time_ms,
                                  shard=settings.shard, writer=SPARK_WRITER)
            result.files[snapshot.cluster] = path
            reader = readers.get(snapshot.cluster)
            result.lookups[snapshot.cluster] = dict(reader.last_run) if reader else {}
            log.info("stage=written cluster=%s up=%s rows=%d file=%s", snapshot.cluster,
                     str(snapshot.health.up).lower(), len(snapshot.partitions), path)
    finally:
        for reader in readers.values():
            reader.close()
        if burrow is None and isinstance(source, BurrowClient):
            source.close()
    log.info("stage=done clusters=%d ok=%s duration_ms=%d", len(result.snapshots),
             str(result.ok).lower(), int((time.monotonic() - began) * 1000))
    return result


#: Spark stops a Python worker idle for a minute (hard-coded); pinging more often keeps them.
KEEP_WARM_S = 20.0


def _pid(batches: Any) -> Any:
    import os

    import pandas as pd

    for _ in batches:
        yield pd.DataFrame({"pid": [os.getpid()]})


def keep_warm(spark: Any, until: float, every_s: float = KEEP_WARM_S) -> None:
    """Wait until `until` (monotonic), running a one-row task per core every `every_s` so the
    executors' Python workers (and the lookup engines cached in them) are not reaped as idle
    between cycles of `spark snapshot --every`."""
    while True:
        left = until - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, every_s))
        if until - time.monotonic() <= 1.0:
            return
        cores = max(1, int(spark.sparkContext.defaultParallelism))
        spark.sparkContext.setJobDescription("freshness snapshot: keep Python workers warm")
        try:
            spark.range(0, cores, 1, cores).mapInPandas(_pid, "pid int").collect()
        except Exception as exc:  # never stop the loop for a ping
            log.warning("keep-warm ping failed: %s", str(exc).splitlines()[0][:200])
        finally:
            spark.sparkContext.setJobDescription(None)
