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
from freshness_tracker.domain.ports import BurrowSource, RecordReader, RetentionSource
from freshness_tracker.kafka.cache import TimestampCache
from freshness_tracker.kafka.settings import ClusterKafkaSettings
from freshness_tracker.kafka.topic_config import TopicRetention
from freshness_tracker.sinks.history import SPARK_WRITER, write_snapshot
from freshness_tracker.spark.reader import SparkRecordReader

__all__ = ["SnapshotResult", "Snapshotter", "keep_warm", "run_snapshot"]

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


class Snapshotter:
    """The snapshot job's state from cycle to cycle of one application (`--every`), as the
    exporter keeps it: one measurer per cluster (so cycle numbers count up), its reader, and
    one timestamp cache (`lookup.cacheSize`). A record's timestamp never changes, so a group
    whose committed offsets did not move is answered from the cache, not read again.

    `run()` measures once; `close()` when done. `reader_factory` defaults to Spark tasks
    (`SparkRecordReader`), `retention_factory` to the brokers' topic configs; tests pass
    others.
    """

    def __init__(
        self,
        spark: Any,
        settings: Settings,
        history_path: str,
        *,
        burrow: BurrowSource | None = None,
        clock: Callable[[], int] = now_ms,
        max_tasks: int | None = None,
        parallel_clusters: int = 4,
        reader_factory: Callable[[ClusterKafkaSettings], RecordReader] | None = None,
        retention_factory: Callable[[ClusterKafkaSettings], RetentionSource] | None = None,
    ) -> None:
        self._settings = settings
        self._history = history_path
        self._parallel = parallel_clusters
        self._owned_source = burrow is None
        self._source = burrow or BurrowClient(settings.burrow, clock=clock)
        self.readers: dict[str, RecordReader] = {}
        size = settings.lookup.cache_size
        self.cache: TimestampCache | None = TimestampCache(size) if size else None

        def spark_reader(kafka: ClusterKafkaSettings) -> RecordReader:
            return SparkRecordReader(spark, kafka, settings.lookup, max_tasks=max_tasks)

        make = reader_factory or spark_reader

        def remembered(kafka: ClusterKafkaSettings) -> RecordReader:
            reader = self.readers[kafka.name] = make(kafka)
            return reader

        self._measurers = cluster_measurers(
            settings, self._source, remembered, cache=self.cache,
            retention_factory=retention_factory or (
                lambda kafka: TopicRetention.for_cluster(kafka, settings.lookup)),
            clock=clock,
        )

    def run(self, cycle_time_ms: int | None = None) -> SnapshotResult:
        """Measure every configured cluster once and append the rows to the history table.

        `cycle_time_ms` fixes the cycle start (and so the cycle id and file): re-running the
        same cycle replaces its rows. Clusters are measured concurrently.
        """
        began = time.monotonic()
        measurers = self._measurers
        result = SnapshotResult()
        log.info("stage=start clusters=%d history=%s", len(measurers), self._history)
        for spark_reader in self.readers.values():  # no stale stats from the last cycle
            if isinstance(spark_reader, SparkRecordReader):
                spark_reader.last_run = {}
        workers = max(1, min(len(measurers), self._parallel))
        with ThreadPoolExecutor(workers, thread_name_prefix="snapshot") as pool:
            result.snapshots = list(pool.map(lambda m: m.measure(), measurers))
        for snapshot in result.snapshots:
            path = write_snapshot(self._history, snapshot, cycle_start_ms=cycle_time_ms,
                                  shard=self._settings.shard, writer=SPARK_WRITER)
            result.files[snapshot.cluster] = path
            stats = getattr(self.readers.get(snapshot.cluster), "last_run", {})
            result.lookups[snapshot.cluster] = dict(stats)
            log.info("stage=written cluster=%s cycle=%d up=%s rows=%d file=%s",
                     snapshot.cluster, snapshot.cycle_id, str(snapshot.health.up).lower(),
                     len(snapshot.partitions), path)
        log.info("stage=done clusters=%d ok=%s duration_ms=%d", len(result.snapshots),
                 str(result.ok).lower(), int((time.monotonic() - began) * 1000))
        return result

    def close(self) -> None:
        for reader in self.readers.values():
            close = getattr(reader, "close", None)
            if close is not None:
                close()
        self.readers.clear()
        if self._owned_source and isinstance(self._source, BurrowClient):
            self._source.close()


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
    """One cycle of a fresh `Snapshotter` (see there): `max_tasks` caps Spark tasks per
    cluster (default: the cluster's default parallelism)."""
    snapshotter = Snapshotter(spark, settings, history_path, burrow=burrow, clock=clock,
                              max_tasks=max_tasks, parallel_clusters=parallel_clusters)
    try:
        return snapshotter.run(cycle_time_ms)
    finally:
        snapshotter.close()


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
