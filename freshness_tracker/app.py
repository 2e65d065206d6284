"""Composition root: Settings → Burrow client, consumer pools, measurers, registry, HTTP.

Owns every long-lived resource and their shutdown. Each cluster runs its own cycle loop on its
own thread (a bulkhead: a slow or dead cluster never delays another's series); Kafka reads of
all clusters share one worker pool of `workerThreadCount` threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector

from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.config.settings import Settings, require_files
from freshness_tracker.cycle import ClusterMeasurer, ReaderFactory, now_ms
from freshness_tracker.domain.model import ClusterSnapshot, Snapshot
from freshness_tracker.domain.ports import BurrowSource, RetentionSource
from freshness_tracker.kafka.cache import TimestampCache
from freshness_tracker.kafka.consumers import ConsumerPool
from freshness_tracker.kafka.lookup import KafkaRecordReader
from freshness_tracker.kafka.settings import ClusterKafkaSettings
from freshness_tracker.kafka.topic_config import TopicRetention
from freshness_tracker.publish import SnapshotHolder
from freshness_tracker.sinks.prometheus import FreshnessCollector
from freshness_tracker.sinks.selfmetrics import KafkaClientCollector, SelfMetrics

__all__ = ["Exporter"]

log = logging.getLogger(__name__)

SnapshotSink = Callable[[ClusterSnapshot], None]

#: librdkafka statistics (Fetch request counts) cadence: cheap at this interval.
STATISTICS_INTERVAL_MS = 10_000


class Exporter:
    """The running service; `run_once()` for `once`, `run_forever(stop)` for `run`."""

    def __init__(
        self,
        settings: Settings,
        *,
        burrow: BurrowSource | None = None,
        reader_factory: ReaderFactory | None = None,
        retention_factory: Callable[[ClusterKafkaSettings], RetentionSource] | None = None,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], int] = now_ms,
        sinks: list[SnapshotSink] | None = None,
    ) -> None:
        require_files(settings)
        self.settings = settings
        self.registry = registry or CollectorRegistry()
        self.holder = SnapshotHolder()
        self._own_burrow = burrow is None
        self.burrow: BurrowSource = burrow or BurrowClient(settings.burrow)
        self._executor = ThreadPoolExecutor(settings.worker_threads, thread_name_prefix="kafka")
        self._pools: list[ConsumerPool] = []
        self._closers: list[Callable[[], None]] = []
        self.cache = TimestampCache(settings.lookup.cache_size) if settings.lookup.cache_size \
            else None
        self.sinks = list(sinks or [])
        self._clock = clock
        self._started_ms = clock()
        self._threads: list[threading.Thread] = []
        self.measurers = [
            ClusterMeasurer(
                cluster, self.burrow, reader_factory or self._kafka_reader,
                cache=self.cache,
                retention_factory=retention_factory or (
                    self._retention if reader_factory is None else None),
                groups=settings.groups, topics=settings.topics, shard=settings.shard,
                commit_lag_when_caught_up=settings.lookup.commit_lag_when_caught_up,
                clock=clock,
            )
            for cluster in settings.clusters
        ]
        self.self_metrics = SelfMetrics(self.registry, [c.name for c in settings.clusters])
        self.registry.register(FreshnessCollector(self.holder, settings.granularity))
        self.registry.register(KafkaClientCollector(self._pool_stats))
        ProcessCollector(registry=self.registry)

    # --- Kafka clients -----------------------------------------------------------------

    def _kafka_reader(self, kafka: ClusterKafkaSettings) -> KafkaRecordReader:
        pool = ConsumerPool(kafka, self.settings.lookup,
                            statistics_interval_ms=STATISTICS_INTERVAL_MS)
        self._pools.append(pool)
        return KafkaRecordReader(kafka, self.settings.lookup, pool, self._executor)

    def _pool_stats(self) -> list[tuple[str, int, int]]:
        return [(p.cluster, p.fetch_requests(), p.stats()["consumers_live"])
                for p in list(self._pools)]

    def _retention(self, kafka: ClusterKafkaSettings) -> RetentionSource:
        lookup = self.settings.lookup
        source = TopicRetention(dict(kafka.properties), ttl_s=lookup.topic_config_ttl_s,
                                cluster=kafka.name, timeout_s=lookup.timeout_s)
        self._closers.append(getattr(source, "close", lambda: None))
        return source

    # --- cycles ------------------------------------------------------------------------

    def _measure(self, measurer: ClusterMeasurer) -> ClusterSnapshot:
        try:
            snapshot = measurer.measure()
        except Exception as exc:  # the cycle boundary: one of the two broad catches in the code
            log.exception("cluster=%s cycle crashed", measurer.name)
            # Publish the failure: keeping the previous snapshot would serve stale values.
            failed = measurer.crashed(f"cycle crashed: {type(exc).__name__}: {exc}")
            self.holder.publish(failed)
            self.self_metrics.observe(failed)
            raise
        self.holder.publish(snapshot)
        self.self_metrics.observe(snapshot)
        for sink in self.sinks:
            try:
                sink(snapshot)
            except Exception:  # a broken sink must not stop measuring
                log.exception("cluster=%s sink %r failed", measurer.name, sink)
        return snapshot

    def run_once(self) -> Snapshot:
        """One cycle of every cluster, in parallel; returns the published snapshot."""
        with ThreadPoolExecutor(max(len(self.measurers), 1), thread_name_prefix="cycle") as pool:
            list(pool.map(self._measure, self.measurers))
        return self.holder.current

    def _loop(self, measurer: ClusterMeasurer, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self._measure(measurer)
            except Exception:  # logged in _measure; keep the loop alive
                time.sleep(0.1)
            stop.wait(self.settings.frequency_s)

    def run_forever(self, stop: threading.Event) -> None:
        """Run every cluster's loop until `stop` is set; returns once loops have ended."""
        self._threads = [
            threading.Thread(target=self._loop, args=(m, stop), name=f"cycle-{m.name}",
                             daemon=True)
            for m in self.measurers
        ]
        for thread in self._threads:
            thread.start()
        stop.wait()
        # Cycle threads are daemons blocked at most in one Kafka/Burrow call: give them a moment
        # to finish cleanly, but keep SIGTERM-to-exit well inside Kubernetes' expectations.
        deadline = time.monotonic() + 1.5
        for thread in self._threads:
            thread.join(timeout=max(deadline - time.monotonic(), 0.0))

    # --- health ------------------------------------------------------------------------

    def _stale_after_ms(self) -> int:
        """A cluster loop that has not finished a cycle for this long is wedged."""
        s = self.settings
        return int((3 * s.frequency_s + 2 * s.lookup.timeout_s + 2 * s.burrow.timeout_s
                    * (s.burrow.retries + 1)) * 1000)

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Liveness: every cluster loop is cycling. Burrow or Kafka being down is not a reason
        to restart the exporter, so it shows in the body and in metrics, not in the code."""
        now = self._clock()
        snapshot = self.holder.current
        by_name = {c.cluster: c for c in snapshot.clusters}
        clusters: dict[str, Any] = {}
        alive = True
        for m in self.measurers:
            c = by_name.get(m.name)
            last = c.finished_ms if c else self._started_ms
            wedged = now - last > self._stale_after_ms()
            alive = alive and not wedged
            clusters[m.name] = {
                "up": bool(c and c.health.up),
                "last_cycle_age_seconds": round((now - last) / 1000, 3) if c else None,
                "error": c.health.error if c else "no cycle finished yet",
            }
        return alive, {"status": "ok" if alive else "wedged", "clusters": clusters}

    def ready(self) -> tuple[bool, dict[str, Any]]:
        """Readiness: every cluster has published one cycle, so /metrics is meaningful."""
        done = {c.cluster for c in self.holder.current.clusters}
        waiting = [m.name for m in self.measurers if m.name not in done]
        return not waiting, {"status": "ready" if not waiting else "starting",
                             "waiting_for": waiting}

    def close(self) -> None:
        for pool in self._pools:
            pool.close()
        for closer in self._closers:
            closer()
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self._own_burrow and isinstance(self.burrow, BurrowClient):
            self.burrow.close()
