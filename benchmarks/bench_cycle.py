"""The lookup benchmark on real Kafka: one exporter cycle, batched lookups against the naive
baseline, on a 1-node and a 3-node Apache Kafka (KRaft) cluster read by Burrow.

    python3 -m benchmarks.bench_cycle [--nodes 1,3] [--partitions 2000] [--rtt-ms 0,1] [--reps 3]
    FT_BURROW_BIN=/path/to/Burrow-1.9.5 python3 -m benchmarks.bench_cycle --kafka-version 4.1.1

The stack is devstack's: by default Kafka 3.9.1 + Debian's Burrow 1.2.1 (what a fresh machine
installs); `--kafka-version 4.1.1` runs Kafka 4.1 with the Burrow >= 1.9.5 in `FT_BURROW_BIN`.
Per node count it starts `devstack.RealStack(nodes=N, proxied=True)` (each broker's client
listener behind a frame proxy that adds the RTT and counts requests per API), builds the workload
(benchmarks.common: `--partitions` lagging partitions, lag 1–3 records each, over 4 groups, real
group commits), then per RTT, in a child process (so the proxies' Python threads do not share
the exporter's GIL):

- full cycle, batched: `Exporter.run_once()` (Burrow → plan → cache → KafkaRecordReader → measure),
  cold cache and new consumers, exactly the production wiring;
- second cycle on the same exporter, no offset movement: Kafka reads (expected 0) and time;
- full cycle, naive: the same Exporter with `NaiveRecordReader` (benchmarks.naive_reader);
- engine only: `KafkaRecordReader.read()` and `NaiveRecordReader.read()` on the same plan.

Batched and naive alternate within each repetition, so both see the same machine noise; ratios are
per repetition, and the medians are reported. Fetch requests come from the proxies' per-broker,
per-API frame counters (only the benchmark's clients use the proxied listener: Burrow,
replication and the stack's helpers use the brokers' internal listener, so nothing is
subtracted; the idle count is printed as a check) and, in one extra untimed repetition, from
librdkafka's statistics (`req.Fetch`). Fetch per broker per batch divides each broker's frames
by the batches of partitions it leads (batches are cut per leader).

Then `--big-partitions` partitions of 1 MiB records: one cycle in a fresh child process, whose peak
RSS (VmHWM) is reported with the LookupSettings in force.

Benchmarks are not tests: nothing here asserts; it prints figures (and `--json FILE`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

log = logging.getLogger("benchmarks.bench_cycle")

BENCH_PREFIX = "bench"
BIG_PREFIX = "bigrec"
MiB = 1024 * 1024
NAIVE_PROPS: dict[str, str] = {}  # --naive-prop, set in the child


# =========================================================================================
# child side: runs the exporter; talks to the parent through stdout lines and stdin acks
# =========================================================================================


class _Marks:
    """`mark(name)` asks the parent to snapshot the proxy's Fetch counter, and waits for it."""

    def __init__(self, out: IO[str], ack: IO[str] | None) -> None:
        self._out = out
        self._ack = ack

    def mark(self, name: str) -> None:
        if self._ack is None:
            return
        self._out.write(f"MARK {name}\n")
        self._out.flush()
        self._ack.readline()

    def timed(self, name: str, fn: Callable[[], Any]) -> tuple[float, Any]:
        """``fn()`` between the marks ``name.start`` and ``name.end``: (seconds, its result)."""
        self.mark(f"{name}.start")
        timed = _timed(fn)
        self.mark(f"{name}.end")
        return timed


def _settings(burrow_url: str, bootstrap: str, group_regex: str, props: dict[str, str]) -> Any:
    from devstack.exporter_config import cluster_entry, exporter_config
    from freshness_tracker.config.load import load_settings

    return load_settings(text=exporter_config(
        burrow_url=burrow_url, groups_allow=group_regex,
        clusters=[cluster_entry("local", bootstrap, num_consumers=None, **props)]))


class _PoolCounter:
    """A reader factory wired like Exporter._kafka_reader, keeping its pools for Fetch counts."""

    def __init__(self, settings: Any, executor: Any, statistics_interval_ms: int) -> None:
        self.settings = settings
        self.executor = executor
        self.interval_ms = statistics_interval_ms
        self.pools: list[Any] = []
        self.readers: list[Any] = []

    def __call__(self, kafka: Any) -> Any:
        from freshness_tracker.kafka.consumers import ConsumerPool
        from freshness_tracker.kafka.lookup import KafkaRecordReader

        pool = ConsumerPool(kafka, self.settings.lookup, statistics_interval_ms=self.interval_ms)
        self.pools.append(pool)
        reader = KafkaRecordReader(kafka, self.settings.lookup, pool, self.executor)
        self.readers.append(reader)
        return reader

    def batches(self) -> int:
        return sum(int(reader.stats()["batches"]) for reader in self.readers)

    def fetch_requests(self) -> int | None:
        """Flush the last statistics interval of every live consumer, then sum `req.Fetch`."""
        if not self.interval_ms:
            return None
        time.sleep(2.5 * self.interval_ms / 1000)
        for pool in self.pools:
            with contextlib.ExitStack() as stack:
                consumers = [stack.enter_context(pool.borrow(timeout=1.0))
                             for _ in range(pool.stats()["consumers_live"])]
                for consumer in consumers:
                    consumer.consume(1, 0.01)
        return sum(int(pool.fetch_requests()) for pool in self.pools)

    def close(self) -> None:
        for pool in self.pools:
            pool.close()


def _outcomes(reads: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for read in reads:
        counts[str(read.outcome)] = counts.get(str(read.outcome), 0) + 1
    return counts


def _cycle_figures(seconds: float, snapshot: Any) -> dict[str, Any]:
    (cluster,) = snapshot.clusters
    h = cluster.health
    statuses: dict[str, int] = {}
    for result in cluster.partitions:
        statuses[str(result.status)] = statuses.get(str(result.status), 0) + 1
    return {"seconds": seconds, "up": h.up, "partitions": h.partitions, "reads": h.kafka_reads,
            "read_failures": h.kafka_read_failures, "cache_hits": h.cache_hits,
            "read_seconds": h.read_duration_ms / 1000, "statuses": statuses}  # fmt: skip


def _batched_cycle(
    settings: Any, marks: _Marks, tag: str, stats_ms: int, alt: str = ""
) -> dict[str, Any]:
    from freshness_tracker.app import Exporter

    executor = ThreadPoolExecutor(settings.worker_threads, thread_name_prefix="kafka")
    factory = _PoolCounter(settings, executor, stats_ms)
    exporter = Exporter(settings, reader_factory=factory,
                        retention_factory=_retention_factory(settings))
    try:
        first = _cycle_figures(*marks.timed(f"{tag}.batched_cycle{alt}", exporter.run_once))
        first["batches"] = factory.batches()
        fetches = factory.fetch_requests()
        second = _cycle_figures(*marks.timed(f"{tag}.second_cycle{alt}", exporter.run_once))
        return {f"batched_cycle{alt}": {**first, "rdkafka_fetch_requests": fetches},
                f"second_cycle{alt}": second}
    finally:
        exporter.close()
        factory.close()
        executor.shutdown(wait=False)


def _naive_cycle(
    settings: Any, marks: _Marks, tag: str, fetch_wait_ms: int, stats_ms: int
) -> dict[str, Any]:
    from benchmarks.naive_reader import NaiveRecordReader
    from freshness_tracker.app import Exporter

    readers: list[NaiveRecordReader] = []

    def factory(kafka: Any) -> NaiveRecordReader:
        reader = NaiveRecordReader(kafka, settings.lookup, fetch_wait_max_ms=fetch_wait_ms,
                                   statistics_interval_ms=stats_ms, extra=NAIVE_PROPS)
        readers.append(reader)
        return reader

    exporter = Exporter(settings, reader_factory=factory,
                        retention_factory=_retention_factory(settings))
    try:
        figures = _cycle_figures(*marks.timed(f"{tag}.naive_cycle", exporter.run_once))
        fetches = sum(r.fetch_requests() for r in readers) if stats_ms else None
        return {"naive_cycle": {**figures, "rdkafka_fetch_requests": fetches}}
    finally:
        exporter.close()
        for reader in readers:
            reader.close()


def _retention_factory(settings: Any) -> Callable[[Any], Any]:
    """The same TopicRetention the Exporter builds by default, for both readers."""
    from freshness_tracker.kafka.topic_config import TopicRetention

    lookup = settings.lookup
    return lambda kafka: TopicRetention(dict(kafka.properties), ttl_s=lookup.topic_config_ttl_s,
                                        cluster=kafka.name, timeout_s=lookup.timeout_s)


def _engine_plan(settings: Any) -> Any:
    """The requests a cold cycle sends to Kafka, from Burrow, planned as the cycle plans them."""
    from freshness_tracker.burrow.client import BurrowClient
    from freshness_tracker.domain.plan import plan_reads

    burrow = BurrowClient(settings.burrow)
    try:
        groups = [g for g in burrow.consumers("local") if settings.groups(g)]
        lags = burrow.cluster_lags("local", groups)
    finally:
        burrow.close()
    partitions = [p for g in lags.groups for p in g.partitions]
    return plan_reads(partitions, lambda _r: False).to_read, len(partitions)


def _batched_engine(
    settings: Any, requests: Any, marks: _Marks, tag: str, stats_ms: int, alt: str = ""
) -> dict[str, Any]:
    executor = ThreadPoolExecutor(settings.worker_threads, thread_name_prefix="kafka")
    factory = _PoolCounter(settings, executor, stats_ms)
    reader = factory(settings.clusters[0].kafka)
    try:
        seconds, reads = marks.timed(f"{tag}.batched_engine{alt}", lambda: reader.read(requests))
        return {f"batched_engine{alt}": {"seconds": seconds, "outcomes": _outcomes(reads),
                                   "batches": reader.stats()["batches"],
                                   "rdkafka_fetch_requests": factory.fetch_requests()}}
    finally:
        factory.close()
        executor.shutdown(wait=False)


def _naive_engine(
    settings: Any, requests: Any, marks: _Marks, tag: str, fetch_wait_ms: int, stats_ms: int
) -> dict[str, Any]:
    from benchmarks.naive_reader import NaiveRecordReader

    reader = NaiveRecordReader(settings.clusters[0].kafka, settings.lookup,
                               fetch_wait_max_ms=fetch_wait_ms, statistics_interval_ms=stats_ms,
                               extra=NAIVE_PROPS)
    try:
        seconds, reads = marks.timed(f"{tag}.naive_engine", lambda: reader.read(requests))
        fetches = reader.fetch_requests() if stats_ms else None
        return {"naive_engine": {"seconds": seconds, "outcomes": _outcomes(reads),
                                 "rdkafka_fetch_requests": fetches}}
    finally:
        reader.close()


def child_speed(args: argparse.Namespace, marks: _Marks) -> dict[str, Any]:
    settings = _settings(args.burrow_url, args.bootstrap, args.groups, _props(args.kafka_prop))
    alt_settings = None
    if args.compare_prop:
        alt_props = {**_props(args.kafka_prop), **_props(args.compare_prop)}
        alt_settings = _settings(args.burrow_url, args.bootstrap, args.groups, alt_props)
    requests, partitions = _engine_plan(settings)
    reps: list[dict[str, Any]] = []
    # rep 0 is the untimed counting repetition (librdkafka statistics on); then timed reps.
    for rep in range(args.reps + 1):
        counting = rep == 0
        stats_ms = args.stats_interval_ms if counting else 0
        tag = "count" if counting else f"rep{rep}"
        naive_first = rep % 2 == 1  # alternate the order: both see the same drift
        result: dict[str, Any] = {"rep": tag}
        fw = args.naive_fetch_wait_ms
        steps: list[tuple[Callable[..., dict[str, Any]], tuple[Any, ...]]] = [
            (_batched_cycle, (settings, marks, tag, stats_ms)),
            (_naive_cycle, (settings, marks, tag, fw, stats_ms)),
            (_batched_engine, (settings, requests, marks, tag, stats_ms)),
            (_naive_engine, (settings, requests, marks, tag, fw, stats_ms)),
        ]
        order = [1, 0, 3, 2] if naive_first else [0, 1, 2, 3]
        if alt_settings is not None:  # the same batched steps with --compare-prop, A/B
            steps += [(_batched_cycle, (alt_settings, marks, tag, stats_ms, "_alt")),
                      (_batched_engine, (alt_settings, requests, marks, tag, stats_ms, "_alt"))]
            order = [4, *order[:2], 5, *order[2:]] if naive_first else [*order[:2], 4,
                                                                         *order[2:], 5]
        for index in order:
            fn, fn_args = steps[index]
            result.update(fn(*fn_args))
        reps.append(result)
        log.info("rtt=%s %s done", args.rtt_label, tag)
    return {"requests": len(requests), "partitions": partitions, "lookup": asdict(settings.lookup),
            "kafka_props": _props(args.kafka_prop), "compare_props": _props(args.compare_prop),
            "reps": reps}  # fmt: skip


def child_rss(args: argparse.Namespace) -> dict[str, Any]:
    from freshness_tracker.app import Exporter

    settings = _settings(args.burrow_url, args.bootstrap, args.groups, _props(args.kafka_prop))
    exporter = Exporter(settings)
    before_kib = _proc_status_kib("VmRSS")
    try:
        figures = _cycle_figures(*_timed(exporter.run_once))
    finally:
        exporter.close()
    return {"cycle": figures, "rss_before_cycle_mib": before_kib / 1024,
            "peak_rss_mib": _proc_status_kib("VmHWM") / 1024,
            "ru_maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "lookup": asdict(settings.lookup), "kafka_props": _props(args.kafka_prop)}  # fmt: skip


def _proc_status_kib(field: str) -> int:
    """VmHWM (peak RSS) / VmRSS of this process image, in KiB.

    Not ru_maxrss: Linux carries it over fork+exec, so a child started by a big parent reports
    the parent's peak.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def _props(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, _, value = item.partition("=")
        out[key.strip()] = value.strip()
    return out


# =========================================================================================
# parent side: the stack, the workloads, the children, the report
# =========================================================================================


def _run_child(stack: Any, mode: str, extra: list[str], rtt_label: str) -> dict[str, Any]:
    """Run one child; answer its MARKs with per-broker Fetch snapshots; attach per-phase frames."""
    from benchmarks.common import fetch_frames

    cmd = [sys.executable, "-m", "benchmarks.bench_cycle", "--child", mode,
           "--burrow-url", stack.burrow_url, "--bootstrap", stack.bootstrap_servers,
           "--rtt-label", rtt_label, *extra]  # fmt: skip
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parent.parent)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    marks: dict[str, dict[int, int]] = {}
    result: dict[str, Any] | None = None
    try:
        for line in proc.stdout:
            if line.startswith("MARK "):
                marks[line[5:].strip()] = fetch_frames(stack)
                proc.stdin.write("ok\n")
                proc.stdin.flush()
            elif line.startswith("RESULT "):
                result = json.loads(line[7:])
    finally:
        if proc.poll() is None and result is None:
            proc.kill()
    if proc.wait() != 0 or result is None:
        raise RuntimeError(f"benchmark child {mode} failed (exit {proc.returncode})")
    for name, start in marks.items():
        if not name.endswith(".start"):
            continue
        end = marks.get(name[:-6] + ".end")
        if end is None:
            continue
        tag, phase = name[:-6].split(".", 1)
        by_broker = {str(b): end[b] - start.get(b, 0) for b in sorted(end)}
        for rep in result.get("reps", []):
            if rep["rep"] == tag and phase in rep:
                rep[phase]["proxy_fetch_frames"] = sum(by_broker.values())
                rep[phase]["proxy_fetch_by_broker"] = by_broker
    return result


def _idle_fetch_frames(stack: Any, seconds: float = 3.0) -> int:
    """Fetch frames through the proxies while no benchmark client runs: 0 when, as designed,
    Burrow and replication use the internal listener (a check, nothing is subtracted)."""
    from benchmarks.common import fetch_frames

    before = fetch_frames(stack)
    time.sleep(seconds)
    after = fetch_frames(stack)
    return sum(after.values()) - sum(before.values())


def _median(values: list[float | None]) -> float:
    from benchmarks.common import median

    return median([v for v in values if v is not None])


def batches_by_broker(leaders: dict[tuple[str, int], int], batch_size: int) -> dict[str, int]:
    """Batches the engine cuts per leader (as KafkaRecordReader._cut): ceil(led / batch_size)."""
    led: dict[int, int] = {}
    for leader in leaders.values():
        led[leader] = led.get(leader, 0) + 1
    return {str(b): -(-n // batch_size) for b, n in sorted(led.items())}


BATCHED_PHASES = ("batched_cycle", "batched_engine", "batched_cycle_alt", "batched_engine_alt")


def summarize(speed: dict[str, Any], batches: dict[str, int]) -> dict[str, Any]:
    """Medians over the timed reps, per-rep ratios (naive / batched), Fetch per broker per batch."""
    timed = [r for r in speed["reps"] if r["rep"] != "count"]
    count = next(r for r in speed["reps"] if r["rep"] == "count")
    n_req = speed["requests"]

    def med(phase: str, key: str = "seconds") -> float:
        return _median([r[phase][key] for r in timed])

    def ratio(slow: str, fast: str) -> float:
        return _median([r[slow]["seconds"] / r[fast]["seconds"] for r in timed])

    def per_lookup(phase: str, key: str, rep: dict[str, Any]) -> float | None:
        value = rep[phase].get(key)
        return None if value is None else value / n_req

    def per_batch(phase: str) -> dict[str, float]:
        """Broker → median over every rep of its Fetch frames ÷ the batches it leads."""
        return {b: _median([r[phase]["proxy_fetch_by_broker"].get(b, 0) / n
                            for r in speed["reps"] if "proxy_fetch_by_broker" in r[phase]])
                for b, n in batches.items()}  # fmt: skip

    def naive_per_partition(phase: str) -> dict[str, float]:
        """Broker → median Fetch frames per partition it leads (naive: one partition at a time)."""
        led = speed.get("led_by_broker", {})
        return {b: _median([r[phase]["proxy_fetch_by_broker"].get(b, 0) / n
                            for r in speed["reps"] if "proxy_fetch_by_broker" in r[phase]])
                for b, n in led.items()}  # fmt: skip

    return {
        "partitions": speed["partitions"],
        "requests": n_req,
        "batches_by_broker": batches,
        "engine_batches": max(r["batched_engine"]["batches"] for r in timed),
        "cycle_batches": max(r["batched_cycle"].get("batches", 0) for r in timed),
        "batched_cycle_s": med("batched_cycle"),
        "naive_cycle_s": med("naive_cycle"),
        "cycle_ratio": ratio("naive_cycle", "batched_cycle"),
        "batched_engine_s": med("batched_engine"),
        "naive_engine_s": med("naive_engine"),
        "engine_ratio": ratio("naive_engine", "batched_engine"),
        "second_cycle_s": med("second_cycle"),
        "second_cycle_reads": max(r["second_cycle"]["reads"] for r in timed),
        "second_cycle_cache_hits": min(r["second_cycle"]["cache_hits"] for r in timed),
        "second_cycle_fetch_frames": max(r["second_cycle"].get("proxy_fetch_frames", 0)
                                         for r in speed["reps"]),
        "batched_cycle_failures": max(r["batched_cycle"]["read_failures"] for r in timed),
        "naive_cycle_failures": max(r["naive_cycle"]["read_failures"] for r in timed),
        "not_found_engine": max(
            sum(v for k, v in r[p]["outcomes"].items() if k != "found")
            for r in timed for p in ("batched_engine", "naive_engine")),
        "fetch_per_lookup": {
            phase: {"rdkafka": per_lookup(phase, "rdkafka_fetch_requests", count),
                    "proxy": _median([per_lookup(phase, "proxy_fetch_frames", r)
                                      for r in speed["reps"]
                                      if r[phase].get("proxy_fetch_frames") is not None])}
            for phase in ("batched_cycle", "naive_cycle", "batched_engine", "naive_engine",
                          "batched_cycle_alt", "batched_engine_alt")
            if phase in count
        },
        "fetch_per_broker_per_batch": {p: per_batch(p) for p in BATCHED_PHASES if p in count},
        "naive_fetch_per_broker_partition": {p: naive_per_partition(p)
                                             for p in ("naive_cycle", "naive_engine")},
        **({
            "alt_batched_cycle_s": med("batched_cycle_alt"),
            "alt_batched_engine_s": med("batched_engine_alt"),
            "alt_cycle_ratio": ratio("naive_cycle", "batched_cycle_alt"),
            "alt_engine_ratio": ratio("naive_engine", "batched_engine_alt"),
            "alt_over_default_cycle": ratio("batched_cycle_alt", "batched_cycle"),
            "alt_over_default_engine": ratio("batched_engine_alt", "batched_engine"),
            "alt_cycle_failures": max(r["batched_cycle_alt"]["read_failures"] for r in timed),
        } if "batched_cycle_alt" in count else {}),
    }  # fmt: skip


def _worst_rss(runs: list[dict[str, Any]]) -> dict[str, Any]:
    worst = dict(max(runs, key=lambda r: r["peak_rss_mib"]))
    worst["all_peaks_mib"] = [round(r["peak_rss_mib"], 1) for r in runs]
    return worst


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None or value != value else f"{value:.{digits}f}"


def _by_broker(values: dict[str, float], digits: int = 2) -> str:
    return " ".join(f"b{b}={_fmt(v, digits)}" for b, v in values.items())


def print_report(args: argparse.Namespace, runs: dict[str, dict[str, Any]]) -> None:
    stacks = sorted({f"Apache Kafka {r['kafka_version']} + Burrow {r['burrow']}"
                     for r in runs.values()})  # fmt: skip
    print(f"\n== freshness-tracker cycle benchmark on {', '.join(stacks)}: "
          f"{args.partitions} lagging partitions, lag {args.min_lag}–{args.max_lag} records, "
          f"{args.reps} timed reps (medians; ratios per rep) ==")
    print(f"naive: fetch.wait.max.ms={args.naive_fetch_wait_ms} {args.naive_prop or ''}; "
          f"exporter extra props: {args.kafka_prop or 'none'}")
    header = ("nodes", "RTT ms", "batched cycle s", "naive cycle s", "cycle ×",
              "batched engine s", "naive engine s", "engine ×", "2nd cycle s", "2nd cycle reads")
    print(" | ".join(header))
    for nodes, run in runs.items():
        for rtt, s in run["summary"].items():
            print(" | ".join([
                nodes, rtt, _fmt(s["batched_cycle_s"]), _fmt(s["naive_cycle_s"]),
                _fmt(s["cycle_ratio"], 1), _fmt(s["batched_engine_s"]), _fmt(s["naive_engine_s"]),
                _fmt(s["engine_ratio"], 1), _fmt(s["second_cycle_s"]),
                str(s["second_cycle_reads"]),
            ]))  # fmt: skip
    print("\nFetch requests (proxy = Fetch frames per broker through the client listener's "
          "proxies; rdkafka = librdkafka statistics req.Fetch, counting rep):")
    for nodes, run in runs.items():
        print(f"  {nodes} node(s): partitions led {_by_broker(run['led_by_broker'], 0)}; batches "
              f"{_by_broker(run['batches_by_broker'], 0)}; idle proxy Fetch frames in 3 s "
              f"before each RTT: {run['idle_fetch_frames']}")
        for rtt, s in run["summary"].items():
            per_batch = "; ".join(f"{p} {_by_broker(v)}"
                                  for p, v in s["fetch_per_broker_per_batch"].items())
            naive = "; ".join(f"{p} {_by_broker(v)}"
                              for p, v in s["naive_fetch_per_broker_partition"].items())
            per_lookup = "; ".join(
                f"{p} rdkafka {_fmt(v['rdkafka'], 4)} proxy {_fmt(v['proxy'], 4)}"
                for p, v in s["fetch_per_lookup"].items())
            print(f"    RTT {rtt} ms: Fetch per broker per batch: {per_batch}")
            print(f"    RTT {rtt} ms: naive Fetch per partition led: {naive}")
            print(f"    RTT {rtt} ms: Fetch per lookup: {per_lookup}")
            print(f"    RTT {rtt} ms: requests={s['requests']} partitions={s['partitions']} "
                  f"batches engine/cycle={s['engine_batches']}/{s['cycle_batches']} "
                  f"failures batched/naive cycle={s['batched_cycle_failures']}/"
                  f"{s['naive_cycle_failures']} non-FOUND engine reads={s['not_found_engine']} "
                  f"2nd cycle: cache hits={s['second_cycle_cache_hits']} "
                  f"Fetch frames={s['second_cycle_fetch_frames']}")
            if "alt_batched_cycle_s" in s:
                print(f"    RTT {rtt} ms, with --compare-prop {args.compare_prop}: batched cycle "
                      f"{_fmt(s['alt_batched_cycle_s'])} s ({_fmt(s['alt_cycle_ratio'], 1)}× "
                      f"naive), engine {_fmt(s['alt_batched_engine_s'])} s "
                      f"({_fmt(s['alt_engine_ratio'], 1)}× naive); compare/default time: cycle "
                      f"{_fmt(s['alt_over_default_cycle'], 2)}, engine "
                      f"{_fmt(s['alt_over_default_engine'], 2)}; failures "
                      f"{s['alt_cycle_failures']}")
    for nodes, run in runs.items():
        rss = run.get("rss")
        if rss is None:
            continue
        c = rss["cycle"]
        print(f"\n{nodes} node(s), 1 MiB records, {c['partitions']} lagging partitions, "
              f"{c['reads']} reads ({c['read_failures']} failed), one cycle in "
              f"{c['seconds']:.2f} s: peak RSS {rss['peak_rss_mib']:.0f} MiB (before the cycle "
              f"{rss['rss_before_cycle_mib']:.0f} MiB); peaks of all runs {rss['all_peaks_mib']}")
        print(f"  lookup settings: {rss['lookup']}  kafka props: {rss['kafka_props'] or '{}'}")
        if "alt" in rss:
            a = rss["alt"]
            print(f"  with {a['kafka_props']}: peak RSS {a['peak_rss_mib']:.0f} MiB (all runs "
                  f"{a['all_peaks_mib']}), cycle "
                  f"{a['cycle']['seconds']:.2f} s, {a['cycle']['read_failures']} failed reads")
    for nodes, run in runs.items():
        t = run["timings"]
        print(f"{nodes} node(s): stack up {t['stack_s']:.1f} s, workload {t['workload_s']:.1f} s, "
              f"measurements {t['measure_s']:.1f} s")


def record_values(report: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(every figure the page shows, the same-run ratios), per node count and RTT."""
    values: dict[str, Any] = {"args": {k: report["args"][k] for k in (
        "partitions", "min_lag", "max_lag", "reps", "naive_fetch_wait_ms", "naive_prop",
        "compare_prop", "kafka_prop", "big_partitions", "rss_reps")}, "nodes": {}}
    ratios: dict[str, Any] = {}
    for nodes, run in report["nodes"].items():
        summary = {rtt: {k: v for k, v in s.items() if not _is_ratio(k)}
                   for rtt, s in run["summary"].items()}  # fmt: skip
        ratios[nodes] = {rtt: {k: v for k, v in s.items() if _is_ratio(k)}
                         for rtt, s in run["summary"].items()}  # fmt: skip
        entry: dict[str, Any] = {
            "kafka_version": run["kafka_version"], "burrow": run["burrow"],
            "led_by_broker": run["led_by_broker"], "idle_fetch_frames": run["idle_fetch_frames"],
            "summary": summary,
            "timings_s": {k: run["timings"][k] for k in ("stack_s", "workload_s", "measure_s")},
        }  # fmt: skip
        rss = run.get("rss")
        if rss is not None:
            entry["rss"] = {"peak_mib": rss["peak_rss_mib"], "all_peaks_mib": rss["all_peaks_mib"],
                            "before_cycle_mib": rss["rss_before_cycle_mib"],
                            "reads": rss["cycle"]["reads"],
                            "read_failures": rss["cycle"]["read_failures"],
                            "partitions": rss["cycle"]["partitions"]}  # fmt: skip
            if "alt" in rss:
                entry["rss"]["alt_all_peaks_mib"] = rss["alt"]["all_peaks_mib"]
        values["nodes"][nodes] = entry
    values["wall_s"] = report["wall_s"]
    return values, ratios


def _is_ratio(key: str) -> bool:
    return key.endswith("_ratio") or key.startswith("alt_over")


def _child_args(args: argparse.Namespace) -> tuple[list[str], list[str], list[str]]:
    """(speed child args, RSS child args, RSS child args with --compare-prop)."""
    extra = ["--groups", f"{BENCH_PREFIX}-g[0-9]+", "--reps", str(args.reps),
             "--naive-fetch-wait-ms", str(args.naive_fetch_wait_ms),
             "--stats-interval-ms", str(args.stats_interval_ms)]  # fmt: skip
    rss_extra = ["--groups", f"{BIG_PREFIX}-g[0-9]+"]
    for prop in args.kafka_prop or []:
        extra += ["--kafka-prop", prop]
        rss_extra += ["--kafka-prop", prop]
    alt_extra = [*rss_extra]
    for prop in args.compare_prop or []:
        extra += ["--compare-prop", prop]
        alt_extra += ["--kafka-prop", prop]
    for prop in args.naive_prop or []:
        extra += ["--naive-prop", prop]
    return extra, rss_extra, alt_extra


def run_nodes(args: argparse.Namespace, nodes: int) -> dict[str, Any]:
    """One stack of `nodes` brokers: workload, every RTT, the 1 MiB RSS runs."""
    from benchmarks.common import Workload
    from devstack import RealStack

    rtts = [r.strip() for r in args.rtt_ms.split(",") if r.strip()]
    extra, rss_extra, alt_extra = _child_args(args)
    began = time.monotonic()
    with RealStack(nodes=nodes, proxied=True, kafka_version=args.kafka_version) as stack:
        up = time.monotonic()
        burrow = ("Debian's 1.2.1" if stack.burrow121
                  else f"FT_BURROW_BIN={os.environ.get('FT_BURROW_BIN', '')}")  # fmt: skip
        workload = Workload(stack, BENCH_PREFIX, args.partitions, min_lag=args.min_lag,
                            max_lag=args.max_lag, records=args.max_lag + 1)  # fmt: skip
        workload.build()
        led: dict[str, int] = {}
        for leader in workload.leaders().values():
            led[str(leader)] = led.get(str(leader), 0) + 1
        big = None
        if args.big_partitions > 0:
            big = Workload(stack, BIG_PREFIX, args.big_partitions, groups=1,
                           records=args.big_records, value_size=MiB)  # fmt: skip
            big.build()
        ready = time.monotonic()
        builds = {"bench": workload.timings, **({"big": big.timings} if big else {})}
        print(f"{nodes} node(s): stack up in {up - began:.1f} s, workload ready in "
              f"{ready - up:.1f} s {builds}; partitions led per broker {led}", flush=True)
        run: dict[str, Any] = {"kafka_version": stack.kafka_version, "burrow": burrow,
                               "led_by_broker": dict(sorted(led.items())), "rtt": {},
                               "summary": {}, "idle_fetch_frames": []}  # fmt: skip
        for rtt in rtts:
            stack.rtt_ms = float(rtt)
            idle = _idle_fetch_frames(stack)
            run["idle_fetch_frames"].append(idle)
            print(f"{nodes} node(s), RTT {rtt} ms: idle proxy Fetch frames {idle}; running…",
                  flush=True)
            speed = _run_child(stack, "speed", [*extra, "--rtt-label", rtt], rtt)
            speed["led_by_broker"] = run["led_by_broker"]
            batch_size = int(speed["lookup"]["batch_size"])
            run["batches_by_broker"] = batches_by_broker(workload.leaders(), batch_size)
            run["rtt"][rtt] = speed
            run["summary"][rtt] = summarize(speed, run["batches_by_broker"])
        if big is not None:
            stack.rtt_ms = 0.0
            runs: list[dict[str, Any]] = []
            alt_runs: list[dict[str, Any]] = []
            for _ in range(args.rss_reps):  # each in a fresh process; the worst one is reported
                runs.append(_run_child(stack, "rss", rss_extra, "0"))
                if args.compare_prop:
                    alt_runs.append(_run_child(stack, "rss", alt_extra, "0"))
            rss = _worst_rss(runs)
            if alt_runs:
                rss["alt"] = _worst_rss(alt_runs)
            run["rss"] = rss
        run["timings"] = {"stack_s": up - began, "workload_s": ready - up,
                          "measure_s": time.monotonic() - ready, "build": builds}  # fmt: skip
    return run


def parent(args: argparse.Namespace) -> dict[str, Any]:
    import confluent_kafka

    report: dict[str, Any] = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "versions": {"confluent_kafka": confluent_kafka.__version__,
                     "librdkafka": confluent_kafka.libversion()[0]},
        "nodes": {},
    }
    began = time.monotonic()
    for nodes in (int(n) for n in args.nodes.split(",") if n.strip()):
        report["nodes"][str(nodes)] = run_nodes(args, nodes)
    report["wall_s"] = time.monotonic() - began
    print_report(args, report["nodes"])
    print(f"confluent-kafka {report['versions']['confluent_kafka']}, librdkafka "
          f"{report['versions']['librdkafka']}; wall time {report['wall_s'] / 60:.1f} min")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_cycle",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument("--nodes", default="1,3",
                        help="Kafka cluster sizes to run, comma-separated (1 and/or 3)")
    parser.add_argument("--kafka-version", default=None,
                        help="devstack's Kafka: 3.9.1 (default, with Debian's Burrow 1.2.1) or "
                             "4.1.1 (with the Burrow >= 1.9.5 in FT_BURROW_BIN)")  # fmt: skip
    parser.add_argument("--partitions", type=int, default=2000, help="lagging partitions")
    parser.add_argument("--min-lag", type=int, default=1, help="smallest lag in records")
    parser.add_argument("--max-lag", type=int, default=3, help="largest lag in records")
    parser.add_argument("--rtt-ms", default="0,1", help="added RTTs to run, comma-separated")
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions per RTT")
    parser.add_argument("--naive-fetch-wait-ms", type=int, default=0,
                        help="fetch.wait.max.ms of the naive reader (its best here)")
    parser.add_argument("--stats-interval-ms", type=int, default=1000,
                        help="librdkafka statistics interval in the counting rep (small values "
                             "flood the consumer with MB-sized JSON when thousands of "
                             "partitions are assigned)")  # fmt: skip
    parser.add_argument("--big-partitions", type=int, default=100,
                        help="partitions of 1 MiB records for the RSS run (0: skip)")
    parser.add_argument("--rss-reps", type=int, default=3, help="RSS runs (fresh processes)")
    parser.add_argument("--big-records", type=int, default=4, help="1 MiB records per partition")
    parser.add_argument("--kafka-prop", action="append", metavar="KEY=VALUE",
                        help="extra librdkafka property for the exporter (A/B of a setting)")
    parser.add_argument("--compare-prop", action="append", metavar="KEY=VALUE",
                        help="also run the batched steps with this librdkafka property (A/B in "
                             "the same run; reported as *_alt)")  # fmt: skip
    parser.add_argument("--naive-prop", action="append", metavar="KEY=VALUE",
                        help="extra librdkafka property for the naive reader (a stronger or "
                             "weaker baseline than the issue's)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--record", type=Path, metavar="DIR",
                        help="write the run record (what docs/performance.md is rendered from) "
                             "to DIR/bench_cycle.json")  # fmt: skip
    # child-only
    parser.add_argument("--child", choices=["speed", "rss"], help=argparse.SUPPRESS)
    parser.add_argument("--burrow-url", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--groups", help=argparse.SUPPRESS)
    parser.add_argument("--rtt-label", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("BENCH_LOG_LEVEL", "WARNING"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")  # fmt: skip
    if args.child:
        NAIVE_PROPS.update(_props(args.naive_prop))
        marks = _Marks(sys.stdout, sys.stdin if args.child == "speed" else None)
        result = child_speed(args, marks) if args.child == "speed" else child_rss(args)
        sys.stdout.write("RESULT " + json.dumps(result) + "\n")
        sys.stdout.flush()
        return 0
    from benchmarks.common import RunRecord

    record = RunRecord("bench_cycle", argv)
    report = record.measuring(args.record, lambda: parent(args))
    if args.record:
        values, ratios = record_values(report)
        path = record.write(args.record, values, ratios, versions=report["versions"])
        print(f"run record written to {path}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
        print(f"\nfigures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
