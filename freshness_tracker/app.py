"""Composition root: Settings → Burrow client, consumer pools, measurers, registry, HTTP.

Owns every long-lived resource and their shutdown. Each cluster runs its own cycle loop on its
own thread (a bulkhead: a slow or dead cluster never delays another's series); Kafka reads of
all clusters share one worker pool of `workerThreadCount` threads.

Never wedge: each cycle runs on a thread of its own under a hard deadline (`cycleTimeout`).
The cycle cuts its own calls at that deadline; if one ignores it anyway (a client library bug),
the loop stops waiting, publishes the cluster as failed (so nothing frozen is served) and starts
no other cycle of that cluster on top of the hung one. Liveness fails only then: "stuck", never
merely "slow".
"""

from __future__ import annotations

import contextlib
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector, disable_created_metrics

from freshness_tracker import process
from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.config.settings import Settings, require_files
from freshness_tracker.cycle import ClusterMeasurer, ReaderFactory, cluster_measurers, now_ms
from freshness_tracker.deadline import Deadline
from freshness_tracker.domain.model import ClusterSnapshot, Snapshot
from freshness_tracker.domain.ports import BurrowSource, RetentionSource
from freshness_tracker.gate import ComputeGate
from freshness_tracker.kafka.cache import TimestampCache
from freshness_tracker.kafka.consumers import ConsumerPool
from freshness_tracker.kafka.lookup import KafkaRecordReader
from freshness_tracker.kafka.settings import ClusterKafkaSettings
from freshness_tracker.kafka.topic_config import TopicRetention
from freshness_tracker.publish import SnapshotHolder
from freshness_tracker.sinks.exposition import CachedExposition
from freshness_tracker.sinks.prometheus import SeriesSet
from freshness_tracker.sinks.selfmetrics import KafkaClientCollector, SelfMetrics
from freshness_tracker.sinks.status_page import render_status_page

__all__ = ["Exporter"]

log = logging.getLogger(__name__)

SnapshotSink = Callable[[ClusterSnapshot], None]

#: librdkafka statistics (the Fetch request count) are off unless a cluster's `kafka` properties
#: set `statistics.interval.ms`: librdkafka keeps a timer and a statistics entry for every
#: partition of every topic a consumer has read, so even an idle pool consumer spends CPU on
#: every partition it ever read (the cost: docs/comparison.md), and each timer asked a broker the
#: consumer had not talked to yet for a log start (ListOffsets).
STATISTICS_INTERVAL_MS = 0


def unwind_grace_s(cycle_timeout_s: float) -> float:
    """How long past its deadline a cycle may take to unwind (calls cut at the deadline still
    have to return) before the loop stops waiting for it."""
    return min(5.0, max(0.5, cycle_timeout_s / 10))


def next_cycle_start(previous_s: float, period_s: float, now_s: float) -> float:
    """When the next cycle starts: cycles start every `period_s` from the first (a fixed rate,
    like Prometheus' `scrape_interval` and Burrow's tickers), so a cycle's own duration does not
    age the value published between cycles. A cycle that runs past a start skips it, as a
    ticker drops a tick: the next start is the first one still ahead, never a burst of
    catch-up cycles."""
    missed = math.floor((now_s - previous_s) / period_s)
    return previous_s + max(missed + 1, 1) * period_s


class _SinkWorker:
    """Feeds one sink on a thread of its own through a short queue.

    Why: a sink (the history table on a hung NFS mount) that blocked the cluster loop would stop
    every later cycle while /metrics kept serving the last values as current. Here a stuck sink
    only falls behind: once its queue is full, cycles are dropped for that sink, with a warning.
    """

    def __init__(self, sink: SnapshotSink, depth: int = 4) -> None:
        self.sink = sink
        self.dropped = 0
        self._queue: queue.Queue[ClusterSnapshot | None] = queue.Queue(depth)
        self._thread = threading.Thread(target=self._run, name="sink", daemon=True)
        self._thread.start()

    def offer(self, snapshot: ClusterSnapshot) -> None:
        try:
            self._queue.put_nowait(snapshot)
        except queue.Full:
            self.dropped += 1
            log.warning("cluster=%s sink %r is %d cycles behind (stuck?): cycle %d not written "
                        "to it", snapshot.cluster, self.sink, self._queue.qsize(),
                        snapshot.cycle_id)

    def drain(self, timeout_s: float) -> bool:
        """Wait until everything offered so far was handled; False if that took too long."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    def close(self) -> None:
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)

    def _run(self) -> None:
        while (snapshot := self._queue.get()) is not None:
            try:
                self.sink(snapshot)
            except Exception:  # a broken sink must not stop measuring
                log.exception("cluster=%s sink %r failed", snapshot.cluster, self.sink)
            finally:
                self._queue.task_done()


class _CycleRun:
    """One cycle of one cluster on a thread of its own, so the loop can stop waiting for it."""

    def __init__(self, measurer: ClusterMeasurer, timeout_s: float, clock: Callable[[], int]):
        self.measurer = measurer
        self.started = time.monotonic()
        self.started_ms = clock()
        self._deadline = Deadline.after(timeout_s)
        self.snapshot: ClusterSnapshot | None = None
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._run, name=f"cycle-run-{measurer.name}",
                                        daemon=True)

    def start(self) -> _CycleRun:
        self._thread.start()
        return self

    def join(self, timeout_s: float) -> bool:
        """True once the cycle has returned (or raised)."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        try:
            self.snapshot = self.measurer.measure(self._deadline)
        except Exception as exc:  # handed to the loop, which publishes the crash
            self.error = exc


class Exporter:
    """The running service; `run_once()` for `once`, `run_forever(stop)` for `run`."""

    def __init__(
        self,
        settings: Settings,
        *,
        burrow: BurrowSource | None = None,
        reader_factory: ReaderFactory | None = None,
        retention_factory: Callable[[ClusterKafkaSettings], RetentionSource] | None = None,
        clock: Callable[[], int] = now_ms,
        sinks: list[SnapshotSink] | None = None,
    ) -> None:
        require_files(settings)
        self.settings = settings
        self.holder = SnapshotHolder()
        self._own_burrow = burrow is None
        self.burrow: BurrowSource = burrow or BurrowClient(settings.burrow, clock=clock)
        self._executor = ThreadPoolExecutor(settings.worker_threads, thread_name_prefix="kafka")
        self._pools: list[ConsumerPool] = []
        self.cache = TimestampCache(settings.lookup.cache_size) if settings.lookup.cache_size \
            else None
        self.sinks = [_SinkWorker(sink) for sink in sinks or []]
        self._clock = clock
        self._threads: list[threading.Thread] = []
        #: The latest cycle run of each cluster (running, finished or hung).
        self._runs: dict[str, _CycleRun] = {}
        #: Measuring, roll-ups and renders of the clusters take turns (freshness_tracker.gate).
        self._gate = ComputeGate()
        self.measurers = cluster_measurers(
            settings, self.burrow, reader_factory or self._kafka_reader, cache=self.cache,
            retention_factory=retention_factory or (
                self._retention if reader_factory is None else None),
            clock=clock, gate=self._gate,
        )
        # What changes between snapshots (counters, process and client figures): rendered at
        # every scrape. The snapshot's families are rendered once per publication instead.
        # No `<counter>_created` series: a second series per counter that no dashboard, alert or
        # peer exporter reads (Prometheus tracks resets itself). Process-wide, and the exporter
        # is the process.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        process.tune()
        self.live = CollectorRegistry()  # figures of the moment: rendered at every scrape
        counters = CollectorRegistry()  # advanced per publication: rendered once per snapshot
        series = SeriesSet(settings.granularity, frozenset(settings.partition_metrics),
                           {c.name: c.labels for c in settings.clusters if c.labels})
        self.self_metrics = SelfMetrics(counters, [c.name for c in settings.clusters], series)
        self.live.register(KafkaClientCollector(self._pool_stats, series))
        ProcessCollector(registry=self.live)
        #: What /metrics serves (the listener's source).
        self.exposition = CachedExposition(self.holder, self.live, series, counters)

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
        return TopicRetention.for_cluster(kafka, self.settings.lookup)

    # --- cycles ------------------------------------------------------------------------

    def _measure(self, measurer: ClusterMeasurer) -> ClusterSnapshot:
        """Run one cycle under the hard deadline and publish exactly one snapshot for it."""
        timeout = self.settings.cycle_timeout_s
        previous = self._runs.get(measurer.name)
        if previous is not None and previous.running:
            # A hung cycle still holds the measurer: starting another on top would pile up
            # threads. Say so again, with nothing frozen.
            age = time.monotonic() - previous.started
            return self._publish(measurer.overrun(previous.started_ms, (
                f"the cycle started {age:.0f} s ago is still running ({measurer.phase}), past "
                f"its hard deadline of {timeout:g} s (cycleTimeout); no new cycle starts until "
                "it returns")))
        run = _CycleRun(measurer, timeout, self._clock).start()
        self._runs[measurer.name] = run
        if not run.join(timeout + unwind_grace_s(timeout)):
            log.error("cluster=%s cycle overran its hard deadline of %gs while %s; published "
                      "as failed", measurer.name, timeout, measurer.phase)
            return self._publish(measurer.overrun(run.started_ms, (
                f"the cycle overran its hard deadline of {timeout:g} s (cycleTimeout) while "
                f"{measurer.phase}")))
        if run.error is not None:
            exc = run.error
            log.error("cluster=%s cycle crashed", measurer.name, exc_info=exc)
            # Publish the failure: keeping the previous snapshot would serve stale values.
            self._publish(measurer.crashed(f"cycle crashed: {type(exc).__name__}: {exc}"))
            raise exc
        assert run.snapshot is not None
        snapshot = self._publish(run.snapshot)
        for sink in self.sinks:
            sink.offer(snapshot)
        return snapshot

    def _publish(self, snapshot: ClusterSnapshot) -> ClusterSnapshot:
        try:  # rendered here, on the cycle's thread, so no scrape ever renders it
            # Its turn with the other clusters' renders (freshness_tracker.gate): past the
            # wait it renders anyway. A failed cycle has nothing to render and takes no turn,
            # so its failure is served at once, never the last success's values.
            wait_s = self.settings.cycle_timeout_s / 2
            turn = self._gate.turn(wait_s, f"cluster {snapshot.cluster}") \
                if snapshot.partitions else contextlib.nullcontext()
            with turn:
                self.exposition.prepare(snapshot)
        except Exception:  # a bug: the first scrape renders it (and fails) instead
            log.exception("cluster=%s rendering /metrics failed", snapshot.cluster)
        try:  # before the publication: /metrics renders the counters once per snapshot
            self.self_metrics.observe(snapshot)
        except Exception:  # a bug: the counters miss this cycle, the snapshot is still served
            log.exception("cluster=%s counting the cycle failed", snapshot.cluster)
        self.holder.publish(snapshot)
        self.exposition.published()
        return snapshot

    def run_once(self) -> Snapshot:
        """One cycle of every cluster, in parallel; returns the published snapshot."""
        with ThreadPoolExecutor(max(len(self.measurers), 1), thread_name_prefix="cycle") as pool:
            list(pool.map(self._measure, self.measurers))
        self.drain_sinks(self.settings.cycle_timeout_s)
        return self.holder.current

    def drain_sinks(self, timeout_s: float) -> bool:
        """Wait for the sinks to write what was published (`once`, shutdown)."""
        deadline = time.monotonic() + timeout_s
        return all(s.drain(max(deadline - time.monotonic(), 0.0)) for s in self.sinks)

    def _loop(self, measurer: ClusterMeasurer, stop: threading.Event) -> None:
        start = time.monotonic()
        while not stop.is_set():
            try:
                self._measure(measurer)
            except Exception:  # logged in _measure; keep the loop alive
                time.sleep(0.1)
            start = next_cycle_start(start, self.settings.frequency_s, time.monotonic())
            stop.wait(max(start - time.monotonic(), 0.0))

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

    def stuck_after_s(self) -> float:
        """A cycle running this long ignored its own deadline for a whole extra cycleTimeout:
        only a restart frees it. Independent of cluster size, so a big, slow cluster is never
        called stuck."""
        return 2 * self.settings.cycle_timeout_s

    def status_page(self, query: Mapping[str, str]) -> bytes:
        """The page at `/` from the current snapshot (what /metrics serves), for a person."""
        return render_status_page(self.holder.current, self._clock(), query,
                                  refresh_s=max(int(self.settings.frequency_s), 5),
                                  previous=self.holder.previous)

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Liveness: no cluster's cycle is stuck and every cluster loop is alive. Burrow or Kafka
        being down is not a reason to restart the exporter, so it shows in the body and in
        metrics, not in the code."""
        now = self._clock()
        snapshot = self.holder.current
        by_name = {c.cluster: c for c in snapshot.clusters}
        loops_alive = {t.name: t.is_alive() for t in self._threads}
        clusters: dict[str, Any] = {}
        alive = True
        for m in self.measurers:
            c = by_name.get(m.name)
            run = self._runs.get(m.name)
            running_s = time.monotonic() - run.started if run is not None and run.running \
                else None
            stuck = running_s is not None and running_s > self.stuck_after_s()
            loop_dead = loops_alive.get(f"cycle-{m.name}") is False
            alive = alive and not stuck and not loop_dead
            error = c.health.error if c else "no cycle finished yet"
            if stuck:
                error = (f"stuck: a cycle has been running {running_s:.0f} s ({m.phase}), more "
                         f"than twice its hard deadline of {self.settings.cycle_timeout_s:g} s")
            elif loop_dead:
                error = "the cluster's cycle loop has died"
            clusters[m.name] = {
                "up": bool(c and c.health.up),
                "last_cycle_age_seconds": round((now - c.finished_ms) / 1000, 3) if c else None,
                "cycle_running_seconds": None if running_s is None else round(running_s, 3),
                "phase": m.phase,
                "error": error,
            }
        return alive, {"status": "ok" if alive else "stuck", "clusters": clusters}

    def ready(self) -> tuple[bool, dict[str, Any]]:
        """Readiness: every cluster has published one cycle, so /metrics is meaningful."""
        done = {c.cluster for c in self.holder.current.clusters}
        waiting = [m.name for m in self.measurers if m.name not in done]
        return not waiting, {"status": "ready" if not waiting else "starting",
                             "waiting_for": waiting}

    def close(self) -> None:
        if not self.drain_sinks(2.0):
            log.warning("a sink did not finish writing within 2 s of shutdown")
        for sink in self.sinks:
            sink.close()
        for pool in self._pools:
            pool.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self._own_burrow and isinstance(self.burrow, BurrowClient):
            self.burrow.close()
