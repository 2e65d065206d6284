"""The scale benchmark: one exporter, a hundred thousand partitions; then twenty clusters; then
half a million partitions over sharded replicas.

    python -m benchmarks.bench_scale --record docs/records/scale   # every phase
    python -m benchmarks.bench_scale --before /tmp/ft-before --before-name <commit>
    python -m benchmarks.bench_scale --skip clusters,shards --json out.json
    python -m benchmarks.bench_scale --skip sizes,clusters,shards --profile /tmp/prof

Pieces, each in a process of its own so that only the exporter's CPU is the exporter's:

- **Kafka**: `devstack.RealStack(nodes=1)` (devstack's default Kafka); `--topics` topics of
  `--partitions` partitions, `--records` records each. Only its broker is used: Burrow's
  answers are generated.
- **Burrow**: `benchmarks.scale_burrow` serves v3 JSON for `--groups` groups × `--partitions`
  partitions; `--lagging` of the groups commit at real records of those topics (so their Kafka
  reads are real), the rest are caught up.
- **Exporter**: `benchmarks.scale_exporter`, default settings, /metrics on a free port.

Phases and what they print:

1. *Cycle*: a cold cycle (every lagging partition read from Kafka) and warm ones (the timestamp
   cache answers), each with the exporter process's CPU time (every thread) and peak RSS; with
   `--profile DIR`, a py-spy profile (`--gil`: Python CPU) of a cold and a warm cycle, bucketed.
2. *Scrape*: `--scrapers` concurrent scrapers, `--rounds` each, plain (text 0.0.4, no gzip) and
   gzip (Prometheus's own Accept and Accept-Encoding headers), latency to the last byte: p50,
   p99; the exporter's RSS sampled every 20 ms during them and VmHWM at the end. Then the same
   while a cycle runs (2 scrapers of each mode, back to back, for the whole cycle).
   **Baseline in the same run**: a second exporter, same settings and families, serving through
   prometheus_client's WSGI app (`generate_latest` at every scrape, the path before the cached
   exposition): the same scrapes, `--baseline-rounds` each; ratios baseline ÷ cached.
3. *Size*: bytes of /metrics per partition and series, the default set against every family.
4. *Sizes*: cycle CPU per partition at each of `--size-groups` (× `--partitions`
   partitions), a generated Burrow each, and the replica size it gives against a CPU budget
   (`--budget-cores` of a core at `--budget-frequency-s` per cycle). With `--before DIR` (an
   older tree of the exporter: `git archive <commit> freshness_tracker | tar -x -C DIR`;
   `--before-name` names it in the record), that tree's cycles alternate with the current
   exporter's at each size (both processes alive, one cycle at a time, who goes first swapped
   every round), and the report and the record give the CPU ratios before ÷ after.
5. *Clusters*: `--clusters` clusters of `--groups`/`--clusters` groups each in one exporter, one
   of them slow (`--slow-ms` per /lag answer): every cluster's loop for `--loops-s` seconds with
   `frequency_sec = --frequency-s` while 4 scrapers scrape; cycles per cluster, the fast
   clusters' cycle durations against the slow one's, CPU per round of all clusters, scrape
   latencies, VmHWM.
6. *Shards*: `--shard-groups` groups × `--partitions` partitions over `--shards` exporter
   processes (shard i of N each): one cycle each, then the union of their /metrics: every
   partition's freshness series exactly once, none missing, and every group's roll-up once.

Benchmarks are not tests: nothing here asserts; it prints figures (and `--json FILE`;
`--record DIR` writes the run record docs/scale.md is rendered from).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import logging
import math
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, ClassVar

from benchmarks.scale_burrow import ClusterLayout, GeneratedBurrow, Layout
from benchmarks.scale_exporter import proc_status
from devstack.memory import RssSampler
from freshness_tracker import metrics

log = logging.getLogger("benchmarks.bench_scale")

ROOT = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT_S = 600.0  # each step of building the Kafka side
#: What Prometheus 3 sends (scrape_protocols default; the exporter negotiates OpenMetrics 1.0).
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,"
    "application/openmetrics-text;version=0.0.1;q=0.4,"
    "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,"
    "*/*;q=0.1")
MODES = {
    "plain": {"Accept": "text/plain;version=0.0.4"},
    "gzip": {"Accept": PROMETHEUS_ACCEPT, "Accept-Encoding": "gzip"},
}


# --- processes ---------------------------------------------------------------------------------


class ExporterProcess:
    """`benchmarks.scale_exporter` in a child process, driven line by line."""

    #: Extra environment of every exporter process (`--env`, e.g. glibc malloc tunables).
    env: ClassVar[dict[str, str]] = {}

    def __init__(self, opts: dict[str, Any], before: str | None = None) -> None:
        if before is not None:
            opts = opts | {"tree": str(Path(before).resolve())}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.scale_exporter", json.dumps(opts)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
            env={**os.environ, **self.env})
        hello = self._read()
        self.port: int = hello["port"]
        self.pid: int = hello["pid"]
        self.serving: str = hello["serving"]

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"exporter exited with {self.process.wait()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def send(self, command: str) -> None:
        stdin: IO[str] | None = self.process.stdin
        assert stdin is not None
        stdin.write(command + "\n")
        stdin.flush()

    def ask(self, command: str) -> dict[str, Any]:
        self.send(command)
        return self._read()

    def hwm_mb(self) -> float:
        return proc_status(self.pid)["VmHWM"]

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.send("quit")
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def exporter(opts: dict[str, Any], before: str | None = None) -> Iterator[ExporterProcess]:
    proc = ExporterProcess(opts, before)
    try:
        yield proc
    finally:
        proc.close()


@contextlib.contextmanager
def py_spy(pid: int, out: Path | None) -> Iterator[None]:
    """A py-spy profile (Python CPU: --gil) of `pid` while the block runs; nothing if no `out`."""
    if out is None:
        yield
        return
    binary = Path(sys.executable).parent / "py-spy"  # pip install py-spy
    spy = subprocess.Popen([str(binary), "record", "--pid", str(pid),
                            "--gil", "--rate", "100", "--format", "raw", "--output", str(out),
                            "--nonblocking"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(timeout=30)
        except subprocess.TimeoutExpired:
            spy.kill()
            spy.wait()


#: Where a profile sample's time goes: the deepest frame matching one of these names.
BUCKETS = [
    ("json/decoder", "Burrow: JSON decode"),
    ("burrow/parse.py", "Burrow: JSON → domain values (parse)"),
    ("burrow/client.py", "Burrow: HTTP (burrow/client.py, requests, urllib3)"),
    ("requests/", "Burrow: HTTP (burrow/client.py, requests, urllib3)"),
    ("urllib3/", "Burrow: HTTP (burrow/client.py, requests, urllib3)"),
    ("domain/freshness.py", "measure partitions (domain.freshness)"),
    ("domain/rollup.py", "roll-ups"),
    ("plan.py", "plan reads"),
    ("kafka/", "Kafka reads, retention.ms (kafka/)"),
    ("sinks/exposition.py", "render /metrics (sinks/exposition)"),
    ("sinks/prometheus.py", "render /metrics (sinks/exposition)"),
    ("freshness_tracker/metrics.py", "render /metrics (sinks/exposition)"),  # value functions
    ("cycle.py", "cycle, other"),
]


def _short_frame(frame: str) -> str:
    """`function (path:line)` with the path cut to the package or the stdlib module."""
    for marker in ("site-packages/", "freshness_tracker/", "python3.11/"):
        if marker in frame:
            head, _, tail = frame.partition("(")
            path = tail.split(marker, 1)[-1]
            return f"{head}({'freshness_tracker/' if marker == 'freshness_tracker/' else ''}{path}"
    return frame


def profile_top(raw: Path, n: int = 12) -> list[tuple[float, str]]:
    """The `n` functions with the most samples of their own (share of all samples)."""
    counts: Counter[str] = Counter()
    total = 0
    if not raw.exists():
        return []
    for line in raw.read_text().splitlines():
        stack, _, k = line.rpartition(" ")
        if not k.isdigit() or not stack:
            continue
        total += int(k)
        counts[_short_frame(stack.split(";")[-1])] += int(k)
    return [(c / total, f) for f, c in counts.most_common(n)] if total else []


def profile_buckets(raw: Path) -> dict[str, float]:
    """Share of samples per bucket from py-spy's raw (collapsed stacks) output."""
    counts: Counter[str] = Counter()
    total = 0
    if not raw.exists():
        return {}
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        total += int(n)
        bucket = "other"
        for frame in reversed(stack.split(";")):
            found = next((name for key, name in BUCKETS if key in frame), None)
            if found:
                bucket = found
                break
        counts[bucket] += int(n)
    return {k: v / total for k, v in counts.most_common()} if total else {}


# --- scrapes -----------------------------------------------------------------------------------


def scrape_once(port: int, headers: dict[str, str]) -> tuple[float, int]:
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request("GET", "/metrics", headers=headers)
        response = conn.getresponse()
        size = len(response.read())
        if response.status != 200:
            raise RuntimeError(f"/metrics answered {response.status}")
    finally:
        conn.close()
    return time.perf_counter() - began, size


def scrapes(port: int, mode: str, scrapers: int, rounds: int,
            stop: threading.Event | None = None) -> dict[str, Any]:
    """`scrapers` threads scraping `rounds` times each (or until `stop`); latencies."""
    latencies: list[float] = []
    sizes: list[int] = []
    lock = threading.Lock()

    def run() -> None:
        for _ in range(rounds):
            if stop is not None and stop.is_set():
                return
            took, size = scrape_once(port, MODES[mode])
            with lock:
                latencies.append(took)
                sizes.append(size)

    threads = [threading.Thread(target=run) for _ in range(scrapers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"n": len(latencies), "p50_s": pct(latencies, 0.50), "p99_s": pct(latencies, 0.99),
            "max_s": max(latencies, default=math.nan), "bytes": max(sizes, default=0),
            "latencies": latencies}


def merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Scrape figures of several threads together (their latencies kept)."""
    latencies = [x for r in runs for x in r["latencies"]]
    return {"n": len(latencies), "p50_s": pct(latencies, 0.50), "p99_s": pct(latencies, 0.99),
            "max_s": max(latencies, default=math.nan),
            "bytes": max((r["bytes"] for r in runs), default=0)}


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]


def scrapes_during(proc: ExporterProcess, command: str, per_mode: int = 2
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the answer to `command`, scrape figures per mode) with `per_mode` scrapers of each mode
    scraping back to back while the exporter runs `command` (a cycle, loops)."""
    stop = threading.Event()
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}

    def scrape_loop(mode: str) -> None:
        runs[mode].append(scrapes(proc.port, mode, 1, 1_000_000, stop))

    threads = [threading.Thread(target=scrape_loop, args=(mode,))
               for mode in MODES for _ in range(per_mode)]
    with RssSampler(proc.pid, 0.02) as rss:
        proc.send(command)
        for t in threads:
            t.start()
        answer = proc._read()
        stop.set()
        for t in threads:
            t.join()
    figures: dict[str, Any] = {mode: merge(r) for mode, r in runs.items()}
    figures["rss_peak_during_mb"] = rss.peak / 2**20
    return answer, figures


def scrape_phase(proc: ExporterProcess, scrapers: int, rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with RssSampler(proc.pid, 0.02) as rss:
        for mode in MODES:
            scrape_once(proc.port, MODES[mode])  # the first one may render (lazily gzip)
            out[mode] = scrapes(proc.port, mode, scrapers, rounds)
    out["rss_peak_during_mb"] = rss.peak / 2**20
    out["hwm_mb"] = proc.hwm_mb()
    return out


# --- the Kafka side ----------------------------------------------------------------------------


def build_kafka(layout: Layout) -> Any:
    """A one-node Kafka with the layout's topics and records (real record timestamps)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined,unused-ignore]

    from devstack import RealStack

    stack = RealStack(nodes=1).start()
    try:
        partitions = max(c.partitions for c in layout.clusters.values())
        futures = stack.admin().create_topics(
            [NewTopic(t, partitions, 1, config={"retention.ms": str(7 * 86_400_000)})
             for t in layout.topic_names()], request_timeout=BUILD_TIMEOUT_S)
        for future in futures.values():
            future.result(timeout=BUILD_TIMEOUT_S)
        deadline = time.monotonic() + BUILD_TIMEOUT_S
        for topic in layout.topic_names():
            while len(stack.leaders(topic)) < partitions:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no leader for every partition of {topic}")
                time.sleep(0.2)
        producer = Producer({"bootstrap.servers": stack.bootstrap_servers, "linger.ms": 20,
                             "acks": "all", "enable.idempotence": True,
                             "message.timeout.ms": int(BUILD_TIMEOUT_S * 1000)})
        base = int(time.time() * 1000) - 3_600_000
        for topic in layout.topic_names():
            for p in range(partitions):
                for offset in range(layout.records):
                    while True:
                        try:
                            producer.produce(topic, b"x" * 16, partition=p,
                                             timestamp=base + offset * 1000)
                            break
                        except BufferError:
                            producer.poll(0.05)
        # building is not measured: a shared machine's load gets time, not a failed run
        if producer.flush(BUILD_TIMEOUT_S) > 0:
            raise RuntimeError("records not delivered")
        return stack
    except BaseException:
        stack.stop()
        raise


# --- phases ------------------------------------------------------------------------------------


def cycles(procs: dict[str, ExporterProcess], warm: int, profile: Path | None
           ) -> dict[str, dict[str, Any]]:
    """A cold cycle and `warm` warm ones of each exporter, alternating (cold A, cold B, warm B,
    warm A, ...: who goes first swaps every round) so that the shared machine's load drifts
    over all of them alike and neither always reads the broker's pages first."""
    out: dict[str, dict[str, Any]] = {tag: {"warm": []} for tag in procs}
    for i in range(warm + 1):
        kind = "cold" if i == 0 else "warm"
        for tag, proc in list(procs.items())[:: -1 if i % 2 else 1]:
            spied = profile is not None and (i == 0 or i == warm)
            with py_spy(proc.pid, profile / f"{tag}-{kind}.raw" if spied and profile else None):
                answer = proc.ask("cycle")
            if i == 0:
                out[tag]["cold"] = answer
            else:
                out[tag]["warm"].append(answer)
    if profile:
        for tag in procs:
            out[tag]["profile"] = {k: profile_buckets(profile / f"{tag}-{k}.raw")
                                   for k in ("cold", "warm")}
            out[tag]["profile_top"] = {k: profile_top(profile / f"{tag}-{k}.raw")
                                       for k in ("cold", "warm")}
    return out


def single_cluster(args: argparse.Namespace, layout: Layout, bootstrap: str,
                   burrow_url: str, results: dict[str, Any]) -> None:
    opts = {"burrow_url": burrow_url, "bootstrap": bootstrap, "clusters": ["bench"]}
    with exporter(opts) as new:
        log.info("cycles")
        results["cycle"] = cycles({"after": new}, args.warm, args.profile)["after"]
        log.info("cached exporter: scrapes")
        results["scrape"] = scrape_phase(new, args.scrapers, args.rounds)
        log.info("cached exporter: scrapes during a cycle")
        cycle, during = scrapes_during(new, "cycle")
        results["scrape_during_cycle"] = during | {"cycle": cycle}
        results["size"] = new.ask("size")
        results["hwm_mb"] = new.hwm_mb()
    if args.baseline_rounds:
        with exporter(opts | {"serve": "registry"}) as old:
            log.info("baseline exporter (generate_latest per scrape): cycle, scrapes")
            old.ask("cycle")
            results["baseline_scrape"] = scrape_phase(old, args.scrapers, args.baseline_rounds)


def sizes(args: argparse.Namespace, bootstrap: str, results: dict[str, Any]) -> None:
    """Cycles at each of `--size-groups` groups (× `--partitions`), on a generated Burrow of that
    size: the current exporter's, alternating with `--before`'s when given."""
    out: dict[str, Any] = {}
    for groups in parse_sizes(args.size_groups):
        layout = Layout({"bench": ClusterLayout(groups, args.partitions, args.lagging)},
                        topics=args.topics, records=args.records)
        with GeneratedBurrow(layout, bootstrap) as burrow, contextlib.ExitStack() as stack:
            opts = {"burrow_url": burrow.url, "bootstrap": bootstrap, "clusters": ["bench"]}
            procs = {"after": stack.enter_context(exporter(opts))}
            if args.before:
                procs["before"] = stack.enter_context(exporter(opts, before=args.before))
            log.info("%d partitions: cycles of %s, alternating", layout.total_partitions(),
                     " and ".join(procs))
            ran = cycles(procs, args.warm, None)
            out[str(layout.total_partitions())] = {"groups": groups} | ran
    results["sizes"] = out


def parse_sizes(text: str) -> list[int]:
    """`--size-groups`: group counts, comma-separated, smallest first."""
    return sorted({int(x) for x in text.split(",") if x.strip()})


def shard_size(cpu_s: float, partitions: int, budget_cores: float, frequency_s: float) -> int:
    """Partitions one replica measures within `budget_cores` of a core when a cycle of
    `partitions` costs `cpu_s` CPU seconds and one cycle runs every `frequency_s`: the budget's
    CPU seconds per cycle over the CPU per partition (linear in partitions, which is why it is
    only trusted up to the largest size measured)."""
    if cpu_s <= 0 or partitions <= 0:
        raise ValueError("need a positive cycle CPU and partition count")
    return math.floor(budget_cores * frequency_s * partitions / cpu_s)


def many_clusters(args: argparse.Namespace, bootstrap: str, results: dict[str, Any],
                  before: str | None = None) -> None:
    """The clusters phase on the current exporter (results["clusters"]) or, with `before`, on
    an older tree (results["clusters_before"]): the same layout, load and scrapers."""
    names = [f"c{i:02d}" for i in range(args.clusters)]
    per = max(args.groups // args.clusters, 1)
    slow = names[-1]
    layout = Layout({n: ClusterLayout(per, args.partitions, args.lagging,
                                      args.slow_ms if n == slow else 0.0) for n in names},
                    topics=args.topics, records=args.records)
    with GeneratedBurrow(layout, bootstrap) as burrow, \
            exporter({"burrow_url": burrow.url, "bootstrap": bootstrap, "clusters": names,
                      "frequency_s": args.frequency_s,
                      "num_consumers": args.num_consumers}, before) as proc:
        log.info("%d clusters: first cycle of each", len(names))
        first = proc.ask("cycle")
        log.info("%d clusters: loops for %.0f s while scraping", len(names), args.loops_s)
        loops, scraped = scrapes_during(proc, f"loops {args.loops_s}")
        fast = [d for c, ds in loops["durations_ms"].items() if c != slow for d in ds]
        rounds = sum(loops["cycles"].values()) / len(names)
        results["clusters_before" if before else "clusters"] = {
            "clusters": len(names), "partitions": layout.total_partitions(), "slow": slow,
            "slow_ms_per_lag": args.slow_ms, "first_cycle": first,
            "cycles": loops["cycles"], "fast_p50_ms": pct(fast, 0.5),
            "fast_max_ms": max(fast, default=math.nan),
            "slow_durations_ms": loops["durations_ms"].get(slow, []),
            "cpu_s": loops["cpu_s"], "seconds": loops["seconds"], "rounds": rounds,
            "scrape": {mode: scraped[mode] for mode in MODES},
            "rss_peak_during_mb": scraped["rss_peak_during_mb"], "hwm_mb": proc.hwm_mb()}


def shards(args: argparse.Namespace, bootstrap: str, results: dict[str, Any]) -> None:
    layout = Layout({"big": ClusterLayout(args.shard_groups, args.partitions, args.lagging)},
                    topics=args.topics, records=args.records)
    with GeneratedBurrow(layout, bootstrap) as burrow, contextlib.ExitStack() as stack:
        procs = [stack.enter_context(exporter({
            "burrow_url": burrow.url, "bootstrap": bootstrap, "clusters": ["big"],
            "shard": [i, args.shards]})) for i in range(args.shards)]
        log.info("%d shards of %d partitions: one cycle each", args.shards,
                 layout.total_partitions())
        began = time.monotonic()
        for p in procs:
            p.send("cycle")
        cycles_ = [p._read() for p in procs]
        wall = time.monotonic() - began
        freshness: Counter[bytes] = Counter()
        groups: Counter[bytes] = Counter()
        freshness_prefix = f"{metrics.FRESHNESS.name}{{".encode()
        group_prefix = f"{metrics.GROUP_MAX_FRESHNESS.name}{{".encode()
        per_shard = []
        for p in procs:
            conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=300)
            conn.request("GET", "/metrics")
            body = conn.getresponse().read()
            conn.close()
            mine = 0
            for line in body.split(b"\n"):
                if line.startswith(freshness_prefix):
                    freshness[line[: line.rindex(b" ")]] += 1
                    mine += 1
                elif line.startswith(group_prefix):
                    groups[line[: line.rindex(b" ")]] += 1
            per_shard.append({"partitions": mine, "bytes": len(body), "hwm_mb": p.hwm_mb()})
        expected = {
            (f'{metrics.FRESHNESS.name}{{cluster="big",consumer="{g}",partition="{p}",'
             f'topic="{t}"}}').encode() for g, t, p, _c in layout.partitions("big")}
        results["shards"] = {
            "shards": args.shards, "partitions": layout.total_partitions(), "wall_s": wall,
            "cycles": [{k: c[k] for k in ("cpu_s", "wall_s", "partitions", "up", "VmHWM")}
                       for c in cycles_],
            "per_shard": per_shard, "series": len(freshness),
            "missing": len(expected - set(freshness)), "extra": len(set(freshness) - expected),
            "duplicated": sum(1 for n in freshness.values() if n > 1),
            "groups": len(groups), "groups_duplicated": sum(1 for n in groups.values() if n > 1),
            "groups_expected": args.shard_groups}


# --- report ------------------------------------------------------------------------------------


def report(r: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"\n== scale benchmark: {args.groups} groups × {args.partitions} partitions, "
          f"{args.lagging:.0%} lagging; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
          + (f"; exporter env {args.env}" if args.env else ""))
    if "cycle" in r:
        c = r["cycle"]
        print("\ncycle (exporter process CPU, all threads):")
        rows = [("cold", c["cold"])] + [(f"warm {i + 1}", w) for i, w in enumerate(c["warm"])]
        for name, x in rows:
            print(f"  {name:7} cpu {x['cpu_s']:6.2f} s  wall {x['wall_s']:6.2f} s  "
                  f"reads {x['kafka_reads']:6d}  cache hits {x['cache_hits']:6d}  "
                  f"failures {x['read_failures']}  up {x['up']}  VmHWM {x['VmHWM']:.0f} MiB")
        for kind, buckets in (c.get("profile") or {}).items():
            print(f"  profile {kind} (py-spy --gil, share of Python CPU):")
            for name, share in buckets.items():
                print(f"    {share:6.1%}  {name}")
            print(f"  top functions {kind} (own samples):")
            for share, frame in (c.get("profile_top") or {}).get(kind, []):
                print(f"    {share:6.1%}  {frame}")
    if "scrape" in r:
        print("\nscrape latency (to the last byte), cached bytes vs generate_latest per scrape:")
        for mode in MODES:
            new = r["scrape"][mode]
            line = (f"  {mode:5} cached: n={new['n']:4d} p50 {new['p50_s']:.3f} s "
                    f"p99 {new['p99_s']:.3f} s ({new['bytes'] / 1e6:.1f} MB)")
            old = r.get("baseline_scrape", {}).get(mode)
            if old:
                line += (f" | per-scrape render: n={old['n']} p50 {old['p50_s']:.2f} s "
                         f"p99 {old['p99_s']:.2f} s | ratio p50 {old['p50_s'] / new['p50_s']:.0f}×"
                         f" p99 {old['p99_s'] / new['p99_s']:.0f}×")
            print(line)
        s = r["scrape"]
        print(f"  with {args.scrapers} concurrent scrapers; exporter RSS peak during scrapes "
              f"{s['rss_peak_during_mb']:.0f} MiB, VmHWM {s['hwm_mb']:.0f} MiB")
        if "scrape_during_cycle" in r:
            d = r["scrape_during_cycle"]
            for mode in MODES:
                x = d[mode]
                print(f"  {mode:5} during a cycle ({d['cycle']['wall_s']:.0f} s, 2 scrapers): "
                      f"n={x['n']} p50 {x['p50_s']:.3f} s p99 {x['p99_s']:.3f} s")
            print(f"  RSS peak during that cycle and its scrapes {d['rss_peak_during_mb']:.0f} MiB")
        if "baseline_scrape" in r:
            b = r["baseline_scrape"]
            print(f"  per-scrape render: RSS peak during scrapes {b['rss_peak_during_mb']:.0f} "
                  f"MiB, VmHWM {b['hwm_mb']:.0f} MiB")
    if "size" in r:
        s = r["size"]
        n = s["partitions"]
        for name in ("served", "every"):
            if name in s:
                x = s[name]
                print(f"  size {name:6}: {x['bytes'] / 1e6:6.1f} MB, {x['series']:7d} series, "
                      f"{x['bytes'] / n:5.0f} B and {x['series'] / n:.2f} series per partition")
    if "sizes" in r:
        print(f"\ncycle CPU by size{f' against {args.before}' if args.before else ''}:")
        for partitions, run in r["sizes"].items():
            for tag in ("after", "before"):
                if tag not in run:
                    continue
                seq = [run[tag]["cold"], *run[tag]["warm"]]
                print(f"  {int(partitions):7,d} partitions {tag:6}: cpu " + ", ".join(
                    f"{x['cpu_s']:.2f}" for x in seq) + " s (cold, warm…); wall " + ", ".join(
                    f"{x['wall_s']:.2f}" for x in seq) + " s")
            if "before" in run:
                print("  " + " " * 19 + "before ÷ after: " + ", ".join(
                    f"{b['cpu_s'] / a['cpu_s']:.2f}×" for b, a in zip(
                        [run["before"]["cold"], *run["before"]["warm"]],
                        [run["after"]["cold"], *run["after"]["warm"]], strict=True)))
        sizing = sizing_values(r, args)
        if sizing:
            print(f"  within {args.budget_cores} of a core at {args.budget_frequency_s:.0f} s: "
                  f"{sizing['per_replica_cold']:,} partitions per replica (cold cycles), "
                  f"{sizing['per_replica_warm']:,} (warm)")
    for tag in ("clusters", "clusters_before"):
        if tag not in r:
            continue
        c = r[tag]
        print(f"\n{'' if tag == 'clusters' else f'before ({args.before}): '}"
              f"{c['clusters']} clusters, {c['partitions']} partitions in one process "
              f"(cluster {c['slow']} slow: {c['slow_ms_per_lag']:.0f} ms per /lag; "
              f"numConsumers {args.num_consumers}):")
        print(f"  first cycle of all clusters: cpu {c['first_cycle']['cpu_s']:.2f} s, wall "
              f"{c['first_cycle']['wall_s']:.2f} s")
        print(f"  {c['seconds']:.0f} s of loops: cycles per cluster "
              f"{dict(sorted(c['cycles'].items()))}")
        print(f"  fast clusters' cycles: p50 {c['fast_p50_ms']:.0f} ms, max "
              f"{c['fast_max_ms']:.0f} ms; slow cluster's: {c['slow_durations_ms']}")
        print(f"  CPU {c['cpu_s']:.1f} s in {c['seconds']:.0f} s ({c['rounds']:.1f} rounds "
              f"completed); RSS peak {c['rss_peak_during_mb']:.0f} MiB, VmHWM "
              f"{c['hwm_mb']:.0f} MiB")
        for mode, x in c["scrape"].items():
            print(f"  scrape {mode:5} during loops: n={x['n']} p50 {x['p50_s']:.3f} s p99 "
                  f"{x['p99_s']:.3f} s")
    if "shards" in r:
        s = r["shards"]
        print(f"\n{s['partitions']} partitions over {s['shards']} shard processes "
              f"(one cycle each, in parallel, {s['wall_s']:.0f} s):")
        for i, (c, p) in enumerate(zip(s["cycles"], s["per_shard"], strict=True)):
            print(f"  shard {i}: {c['partitions']} partitions, cycle cpu {c['cpu_s']:.1f} s wall "
                  f"{c['wall_s']:.1f} s, up {c['up']}, /metrics {p['bytes'] / 1e6:.1f} MB, "
                  f"VmHWM {p['hwm_mb']:.0f} MiB")
        print(f"  union: {s['series']} freshness series for {s['partitions']} partitions: "
              f"missing {s['missing']}, extra {s['extra']}, duplicated {s['duplicated']}; "
              f"groups {s['groups']}/{s['groups_expected']}, duplicated "
              f"{s['groups_duplicated']}")


def _answered(value: Any) -> Any:
    """A latency of no answered scrape (NaN) as null: records are strict JSON."""
    return None if isinstance(value, float) and math.isnan(value) else value


def _cycle_row(x: dict[str, Any]) -> dict[str, Any]:
    return {k: x[k] for k in ("cpu_s", "wall_s", "kafka_reads", "cache_hits", "read_failures",
                              "up", "partitions", "VmHWM") if k in x}  # fmt: skip


def sizing_values(r: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """What one replica measures within the CPU budget, from the current exporter's cycles at
    the largest size of the sizes phase (none without that phase)."""
    if not r.get("sizes"):
        return {}
    partitions = max(r["sizes"], key=int)
    run = r["sizes"][partitions]["after"]
    cold = run["cold"]["cpu_s"]
    warm = statistics.median(w["cpu_s"] for w in run["warm"]) if run["warm"] else cold
    budget = args.budget_cores * args.budget_frequency_s
    return {"partitions": int(partitions), "cpu_s_cold": cold, "cpu_s_warm": warm,
            "budget_cores": args.budget_cores, "frequency_s": args.budget_frequency_s,
            "budget_share_cold": cold / budget, "budget_share_warm": warm / budget,
            "per_replica_cold": shard_size(cold, int(partitions), args.budget_cores,
                                           args.budget_frequency_s),
            "per_replica_warm": shard_size(warm, int(partitions), args.budget_cores,
                                           args.budget_frequency_s)}


def record_values(r: dict[str, Any], args: argparse.Namespace
                  ) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """(every figure docs/scale.md shows, the same-run ratios): no per-scrape samples, no
    profiles, so the record stays small."""
    values: dict[str, Any] = {
        "args": {k: getattr(args, k) for k in ("groups", "partitions", "lagging", "topics",
                                               "records", "warm", "scrapers", "rounds",
                                               "clusters", "slow_ms", "frequency_s",
                                               "loops_s", "shards", "shard_groups", "skip",
                                               "size_groups", "before_name", "budget_cores",
                                               "budget_frequency_s")},
        "seconds": r["seconds"],
    }  # fmt: skip
    ratios: dict[str, Any] = {}
    if "sizes" in r:
        values["sizes"] = {
            n: {"groups": run["groups"]} | {
                tag: {"cold": _cycle_row(run[tag]["cold"]),
                      "warm": [_cycle_row(w) for w in run[tag]["warm"]]}
                for tag in ("after", "before") if tag in run}
            for n, run in r["sizes"].items()}  # fmt: skip
        ratios["sizes_before_over_after_cpu"] = {
            n: {"cold": run["before"]["cold"]["cpu_s"] / run["after"]["cold"]["cpu_s"],
                "warm": statistics.median(b["cpu_s"] / a["cpu_s"] for b, a in zip(
                    run["before"]["warm"], run["after"]["warm"], strict=True))}
            for n, run in r["sizes"].items() if "before" in run and run["after"]["warm"]}
        values["sizing"] = sizing_values(r, args)
    if "cycle" in r:
        values["cycle"] = {"cold": _cycle_row(r["cycle"]["cold"]),
                           "warm": [_cycle_row(w) for w in r["cycle"]["warm"]]}  # fmt: skip
    scrape_keys = ("n", "p50_s", "p99_s", "bytes")
    for key in ("scrape", "baseline_scrape"):
        if key in r:
            values[key] = {mode: {k: _answered(r[key][mode][k]) for k in scrape_keys
                                  if k in r[key][mode]}
                           for mode in MODES} | {"hwm_mb": r[key]["hwm_mb"],
                                                 "rss_peak_during_mb": r[key]["rss_peak_during_mb"]}
    if "scrape" in r and "baseline_scrape" in r:
        # a mode none of whose scrapes was answered has no latency, so no ratio (null)
        ratios["baseline_over_cached_scrape"] = {
            mode: {q: (r["baseline_scrape"][mode][q] / r["scrape"][mode][q]
                       if r["baseline_scrape"][mode]["n"] and r["scrape"][mode]["n"] else None)
                   for q in ("p50_s", "p99_s")} for mode in MODES}  # fmt: skip
    if "scrape_during_cycle" in r:
        d = r["scrape_during_cycle"]
        values["scrape_during_cycle"] = {mode: {k: d[mode][k] for k in scrape_keys if k in d[mode]}
                                         for mode in MODES} | {
            "cycle_wall_s": d["cycle"]["wall_s"], "rss_peak_during_mb": d["rss_peak_during_mb"]}
    if "size" in r:
        values["size"] = r["size"]
    if "hwm_mb" in r:
        values["hwm_mb"] = r["hwm_mb"]
    if "clusters" in r:
        c = r["clusters"]
        values["clusters"] = {k: c[k] for k in (
            "clusters", "partitions", "slow_ms_per_lag", "fast_p50_ms", "fast_max_ms",
            "slow_durations_ms", "cpu_s", "seconds", "rounds", "rss_peak_during_mb", "hwm_mb")}
        values["clusters"]["first_cycle"] = {k: c["first_cycle"][k] for k in ("cpu_s", "wall_s")}
        values["clusters"]["scrape"] = {mode: {k: x[k] for k in scrape_keys if k in x}
                                        for mode, x in c["scrape"].items()}  # fmt: skip
    if "shards" in r:
        values["shards"] = {k: v for k, v in r["shards"].items() if k != "per_shard"}
        values["shards"]["per_shard"] = r["shards"]["per_shard"]
    return values, ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--lagging", type=float, default=0.10)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--records", type=int, default=40)
    parser.add_argument("--warm", type=int, default=2, help="warm cycles after the cold one")
    parser.add_argument("--scrapers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--baseline-rounds", type=int, default=1)
    parser.add_argument("--before", help="an older tree of the exporter (the directory holding "
                        "its freshness_tracker/): in the sizes phase its cycles alternate with "
                        "the current one's")
    parser.add_argument("--before-name", help="what --before is (its commit), for the record")
    parser.add_argument("--size-groups", default="1000,5000",
                        help="the sizes phase's group counts, comma-separated (× --partitions)")
    parser.add_argument("--budget-cores", type=float, default=0.5,
                        help="one replica's CPU budget, cores (the sizes phase's sizing)")
    parser.add_argument("--budget-frequency-s", type=float, default=30.0,
                        help="one cycle every this many seconds (frequency_sec's default)")
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--slow-ms", type=float, default=1000.0)
    parser.add_argument("--frequency-s", type=float, default=10.0)
    parser.add_argument("--num-consumers", type=int, default=2,
                        help="numConsumers of each cluster in the clusters phase (default 2)")
    parser.add_argument("--loops-s", type=float, default=60.0)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--shard-groups", type=int, default=25_000)
    parser.add_argument("--profile", type=Path, help="directory for py-spy profiles")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment of the exporter processes (e.g. MALLOC_ARENA_MAX=2)")
    parser.add_argument("--clusters-before", action="store_true",
                        help="with --before: run the clusters phase on that tree too, after")
    parser.add_argument("--skip", default="",
                        help="comma list: single,sizes,clusters,shards")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", type=Path, metavar="DIR",
                        help="write the run record (what docs/scale.md is rendered from) to "
                             "DIR/bench_scale.json")  # fmt: skip
    args = parser.parse_args()
    from benchmarks.common import RunRecord

    record = RunRecord("bench_scale")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("devstack").setLevel(logging.WARNING)
    skip = set(filter(None, args.skip.split(",")))
    ExporterProcess.env = dict(item.split("=", 1) for item in args.env)
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    layout = Layout({"bench": ClusterLayout(args.groups, args.partitions, args.lagging)},
                    topics=args.topics, records=args.records)
    results: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    began = time.monotonic()
    log.info("starting Kafka, %d topics × %d partitions × %d records", args.topics,
             args.partitions, args.records)
    stack = record.measuring(args.record, lambda: build_kafka(layout))
    bootstrap = stack.bootstrap_servers

    def measure() -> None:
        if "single" not in skip:
            with GeneratedBurrow(layout, bootstrap) as burrow:
                single_cluster(args, layout, bootstrap, burrow.url, results)
        if "sizes" not in skip:
            sizes(args, bootstrap, results)
        if "clusters" not in skip:
            many_clusters(args, bootstrap, results)
            if args.before and args.clusters_before:
                many_clusters(args, bootstrap, results, args.before)
        if "shards" not in skip:
            shards(args, bootstrap, results)

    try:
        record.measuring(args.record, measure)
    finally:
        kafka_version = stack.kafka_version
        stack.stop()
    results["seconds"] = time.monotonic() - began
    if args.record:
        values, ratios = record_values(results, args)
        path = record.write(args.record, values, ratios, versions={"kafka": kafka_version})
        print(f"run record written to {path}")
    report(results, args)
    print(f"\n(run took {results['seconds']:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
