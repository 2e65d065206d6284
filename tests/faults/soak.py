"""An hour of simulated cycles over 1,000 groups, in one fresh process, reporting memory,
threads and consumers as JSON (run by tests/faults/test_exporter_faults.py).

It runs in its own interpreter so the RSS measured is the exporter's, not the test runner's
(whose heap carries every earlier test). Everything else is the production path: the real
Exporter builds its own consumer pools, shared Kafka executor, lookup engine, cache, Collector
and HTTP server; only Burrow and the librdkafka constructor are simulated.

    python3 -m tests.faults.soak
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import gc
import json
import statistics
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import psutil
from confluent_kafka import TIMESTAMP_CREATE_TIME
from confluent_kafka import KafkaError as RdKafkaError

from devstack.scrape import CYCLES, Scrape
from freshness_tracker import metrics
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.domain.model import ClusterLags, GroupLags, PartitionKey, PartitionLag
from freshness_tracker.http import MetricsServer, make_app
from freshness_tracker.kafka import consumers as consumers_module
from tests.support.fakes import ManualClock

CLUSTER = "local"

GROUPS = 1_000
PARTITIONS_PER_GROUP = 2
SIM_FREQUENCY_S = 30  # the default frequency_sec: an hour is 120 cycles
WARMUP_CYCLES = 40
HOUR_CYCLES = 3600 // SIM_FREQUENCY_S
BASE = 1_700_000_000_000
# Real logs are far past offset 256: small offsets would be CPython's cached small ints, and
# their crossing into allocated ints mid-run would look like growth.
FIRST_OFFSET = 5_000_000


class SimBurrow:
    """1,000 groups on their own topics; each cycle (one cluster_lags call) the clock moves 30 s,
    every partition's log grows and a tenth of the groups commit up to 5 behind the log end (a
    different tenth each cycle), so the planner, reader, cache and collector see new offsets
    every cycle while the fleet stays in a steady state, as a healthy one does."""

    def __init__(self, clock: ManualClock[int]) -> None:
        self.clock = clock
        self.cycle = 0
        keys = [(g, p) for g in range(GROUPS) for p in range(PARTITIONS_PER_GROUP)]
        self.committed = dict.fromkeys(keys, FIRST_OFFSET + 10)
        self.leo = dict.fromkeys(keys, FIRST_OFFSET + 20)
        self._open = threading.Event()
        self._open.set()
        self._parked = threading.Event()

    def park(self, timeout: float) -> None:
        """Hold the exporter between two cycles (the next one waits here for Burrow), so both
        memory measurements see the same steady state: the last snapshot published, no cycle
        half done."""
        self._open.clear()
        if not self._parked.wait(timeout):
            raise RuntimeError("the exporter did not reach the next cycle in time")

    def release(self) -> None:
        self._parked.clear()
        self._open.set()

    def clusters(self) -> list[str]:
        return [CLUSTER]

    def cluster_servers(self, cluster: str) -> list[str]:
        return ["sim:9092"]

    def consumers(self, cluster: str) -> list[str]:
        return [f"group-{g:04d}" for g in range(GROUPS)]

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        if not self._open.is_set():
            self._parked.set()
            self._open.wait()
        self.cycle += 1
        self.clock.advance(SIM_FREQUENCY_S * 1000)
        now = self.clock()
        out = []
        for g in range(GROUPS):
            parts = []
            for p in range(PARTITIONS_PER_GROUP):
                key = (g, p)
                self.leo[key] += 3
                if g % 10 == self.cycle % 10:
                    self.committed[key] = self.leo[key] - 5
                c = self.committed[key]
                parts.append(PartitionLag(PartitionKey(cluster, f"group-{g:04d}", f"topic-{g:04d}",
                                                       p), c, now - 1_000, self.leo[key] - c))
            out.append(GroupLags(cluster, f"group-{g:04d}", "OK",
                                 sum(x.current_lag for x in parts), tuple(parts)))
        return ClusterLags(cluster, tuple(out))


class SimLog(Mapping[int, tuple[int, int]]):
    """Record timestamps computed from the offset: no memory grows with the log."""

    def __getitem__(self, offset: int) -> tuple[int, int]:
        return TIMESTAMP_CREATE_TIME, BASE + (offset - FIRST_OFFSET) * 10_000

    def __contains__(self, offset: object) -> bool:
        return isinstance(offset, int) and offset >= 0

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError

    def __len__(self) -> int:
        return 0


class SimMessage:
    __slots__ = ("_err", "_offset", "_partition", "_topic")

    def __init__(self, topic: str, partition: int, offset: int, err: Any = None) -> None:
        self._topic, self._partition, self._offset, self._err = topic, partition, offset, err

    def error(self) -> Any:
        return self._err

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return SimLog()[self._offset]


class _Eof:
    def code(self) -> int:
        return int(RdKafkaError._PARTITION_EOF)


class SimConsumer:
    """A lean librdkafka stand-in (no per-record bookkeeping, so it cannot leak for us)."""

    live = 0
    created = 0
    lock = threading.Lock()

    def __init__(self, burrow: SimBurrow, config: dict[str, Any]) -> None:
        self.burrow = burrow
        self.positions: dict[tuple[str, int], int] = {}
        with SimConsumer.lock:
            SimConsumer.live += 1
            SimConsumer.created += 1

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        parts = {p: SimpleNamespace(leader=1) for p in range(PARTITIONS_PER_GROUP)}
        return SimpleNamespace(topics={f"topic-{g:04d}": SimpleNamespace(
            error=None, partitions=parts) for g in range(GROUPS)})

    def incremental_assign(self, partitions: list[Any]) -> None:
        for tp in partitions:
            self.positions[(tp.topic, tp.partition)] = tp.offset

    def incremental_unassign(self, partitions: list[Any]) -> None:
        for tp in partitions:
            self.positions.pop((tp.topic, tp.partition), None)

    def unassign(self) -> None:
        self.positions.clear()

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        out: list[Any] = []
        for key, position in list(self.positions.items()):
            if len(out) >= num_messages:
                break
            g = int(key[0].split("-")[1])
            if position >= self.burrow.leo[(g, key[1])]:
                out.append(SimMessage(key[0], key[1], position, _Eof()))
                continue
            out.append(SimMessage(key[0], key[1], position))
            self.positions[key] = position + 1
        return out

    def get_watermark_offsets(self, partition: Any, timeout: float = -1,
                              cached: bool = False) -> tuple[int, int]:
        g = int(partition.topic.split("-")[1])
        return 0, self.burrow.leo[(g, partition.partition)]

    def close(self) -> None:
        with SimConsumer.lock:
            SimConsumer.live -= 1


class NoRetention:
    def retention_ms(self, topics: Sequence[str]) -> dict[str, int | None]:
        return {}


def run() -> dict[str, Any]:
    process = psutil.Process()
    threads_before = process.num_threads()
    py_threads_before = {t.ident for t in threading.enumerate()}
    settings = load_settings(text=f"""
        burrow.url = "http://sim:1"
        clusters = [{{ name = {CLUSTER}, numConsumers = 2,
                     kafka {{ "bootstrap.servers" = "sim:9092" }} }}]
        lookup {{ cacheSize = 6000, batchSize = 200 }}
        workerThreadCount = 4
        port = 0
        listenAddress = "127.0.0.1"
    """)
    # Back-to-back cycles on purpose (a config refuses less than 1 s).
    settings = dataclasses.replace(settings, frequency_s=0.001)
    clock = ManualClock(BASE + 10_000_000)
    burrow = SimBurrow(clock)
    # The Exporter builds its own pools, executor and readers (the production path, closed
    # by Exporter.close()); only the librdkafka constructor is swapped for the fake.
    consumers_module._default_factory = lambda config: SimConsumer(burrow, config)
    exporter = Exporter(settings, burrow=burrow, clock=clock,
                        retention_factory=lambda _kafka: NoRetention())
    server = MetricsServer(make_app(exporter.exposition, exporter.health, exporter.ready,
                                    settings.web), settings.web).start()
    stop = threading.Event()
    scraping_stop = threading.Event()
    quiet = threading.Lock()  # held while measuring: no scrape in flight
    loop = threading.Thread(target=exporter.run_forever, args=(stop,), daemon=True)

    def fetch() -> str:
        url = f"http://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(url, timeout=60) as resp:
            return resp.read().decode()

    up_line = f'{metrics.CLUSTER_UP.name}{{cluster="{CLUSTER}"}} 1.0'
    scraped: list[bool] = []

    def scraper() -> None:
        """Prometheus' side: a scrape every 2 s for the whole run. Only checked, not parsed:
        parsing 20,000 samples here would put the test's own garbage into the RSS measured."""
        while True:
            with quiet:
                scraped.append(up_line in fetch())
            if scraping_stop.wait(2.0):
                return

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")

    def rss_now() -> int:
        """Median of three samples, each after a full collection and malloc_trim(): freed heap
        that glibc merely kept (per-thread arenas, a scrape's transient buffers) is returned
        to the OS first, so what is left is memory still in use."""
        samples = []
        for _ in range(3):
            gc.collect()
            libc.malloc_trim(0)
            samples.append(process.memory_info().rss)
            time.sleep(0.2)
        return int(statistics.median(samples))

    threads_during: list[int] = []
    began = time.monotonic()
    scraping = threading.Thread(target=scraper, daemon=True)
    target = WARMUP_CYCLES + HOUR_CYCLES
    try:
        loop.start()
        if not exporter.holder.wait_for(1, 60):
            raise RuntimeError("the first cycle did not complete in 60 s")
        scraping.start()
        if not exporter.holder.wait_for(WARMUP_CYCLES, 120):
            raise RuntimeError("warm-up cycles did not complete in 120 s")
        # Scrapes of the full snapshot belong to the warm-up: the first ones load the HTTP and
        # rendering code and set the allocator's high-water mark, a one-off cost, not growth.
        while len(scraped) < 3:
            time.sleep(0.1)
        burrow.park(60)
        with quiet:
            rss_start = rss_now()
            blocks_start = sys.getallocatedblocks()
        burrow.release()
        while exporter.holder.publications < target:
            time.sleep(0.5)
            threads_during.append(process.num_threads())
            if time.monotonic() - began > 300:
                raise RuntimeError("the simulated hour ran too slowly")
        burrow.park(60)
        scraping_stop.set()
        scraping.join(60)
        rss_end = rss_now()
        blocks_end = sys.getallocatedblocks()
        stop.set()
        burrow.release()
        loop.join(10)
        last = Scrape.parse(fetch())
    finally:
        stop.set()
        scraping_stop.set()
        burrow.release()
        loop.join(10)
        server.stop()
        exporter.close()
    elapsed = time.monotonic() - began
    cycles = int(last.get(CYCLES, cluster=CLUSTER) or 0)
    growth = (rss_end - rss_start) / rss_start
    stats = exporter._pools[0].stats()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        leftover = [t for t in threading.enumerate() if t.ident not in py_threads_before]
        if not leftover:
            break
        time.sleep(0.1)
    threads_after = process.num_threads()
    return {
        "groups": GROUPS, "partitions_per_group": PARTITIONS_PER_GROUP,
        "sim_frequency_s": SIM_FREQUENCY_S, "warmup_cycles": WARMUP_CYCLES,
        "cycles": cycles, "elapsed_s": round(elapsed, 1), "rss_start": rss_start,
        "rss_end": rss_end, "growth": growth, "blocks_start": blocks_start,
        "blocks_end": blocks_end, "threads_before": threads_before,
        "threads_max": max(threads_during), "threads_after": threads_after,
        "consumers_created": SimConsumer.created, "consumers_open": SimConsumer.live,
        "pool": stats, "series": len(last.series(metrics.FRESHNESS.name, cluster=CLUSTER)),
        "leftover_threads": [t.name for t in leftover], "scrapes": len(scraped),
        "scrapes_up": sum(scraped),
    }


def main() -> int:
    json.dump(run(), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
