"""What `lookup.commitLagWhenCaughtUp` costs, on real Kafka, in the same run.

    python3 -m benchmarks.bench_caught_up [--partitions 10000] [--rounds 3] [--json FILE]

On `devstack.RealStack()` (Kafka 3.9.1 + Debian's Burrow 1.2.1 by default; `--kafka-version`
as in bench_cycle), `--partitions` partitions (topics of 100) over `--groups` groups, every one
**caught up and committing every cycle**, the worst case for the setting: before each round one
record is produced to every partition and every group commits the new log end (real group
commits), and the round waits until Burrow shows every partition at that offset with lag 0.

Two exporters with the production wiring (`Exporter(settings)`: Burrow client, batched
`KafkaRecordReader`, timestamp cache, `TopicRetention`), identical but for the setting, then
measure in every round, in alternating order (both see the same machine noise):

- `off`: one cycle with `commitLagWhenCaughtUp = false` (caught-up partitions read nothing);
- `on`: one cycle with `commitLagWhenCaughtUp = true` (the record at C - 1 of every partition
  whose offset moved: one read each);
- `on, again`: a second cycle of the `on` exporter with no offset movement (every C - 1 is
  cached: no read expected).

Per cycle: wall time, this process's CPU time (user + system, every thread: the exporter's,
Burrow client's and librdkafka's), Kafka reads, cache hits, read time, and how many caught-up
partitions got a commit lag. Round 0 warms both exporters (consumers, metadata) and is not in
the medians; ratios on/off are per round, then the median. Nothing asserts: figures are printed
(and written with `--json`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import create_topics
from devstack import RealStack
from devstack.exporter_config import cluster_entry, exporter_config
from devstack.processes import wait_until
from freshness_tracker.app import Exporter
from freshness_tracker.config.load import load_settings
from freshness_tracker.domain.model import PartitionStatus

log = logging.getLogger("benchmarks.bench_caught_up")

PREFIX = "caughtup"


def _settings(stack: RealStack, on: bool, groups: str) -> Any:
    return load_settings(text=exporter_config(
        burrow_url=stack.burrow_url, groups_allow=groups,
        clusters=[cluster_entry(stack.cluster, stack.bootstrap_servers, num_consumers=None)],
        extra=f"lookup.commitLagWhenCaughtUp = {'true' if on else 'false'}"))


class Partitions:
    """The caught-up workload: topics of `per_topic` partitions, topic i committed by group
    i mod `groups`; `advance()` appends one record everywhere and commits the new log end."""

    def __init__(self, stack: RealStack, partitions: int, groups: int, per_topic: int = 100):
        self.stack = stack
        self.topics: list[tuple[str, int]] = []
        left, i = partitions, 0
        while left > 0:
            n = min(per_topic, left)
            self.topics.append((f"{PREFIX}-t{i:03d}", n))
            left -= n
            i += 1
        self.groups = [f"{PREFIX}-g{i}" for i in range(min(groups, len(self.topics)))]
        self.end = 0  # every partition's log end offset (all move together)
        assert stack.kafka is not None
        from confluent_kafka import Producer

        self._producer = Producer({"bootstrap.servers": stack.kafka.internal_bootstrap_servers,
                                   "linger.ms": 5, "acks": "all", "logger": log,
                                   "queue.buffering.max.kbytes": 1_048_576})  # fmt: skip

    @property
    def group_regex(self) -> str:
        return f"{PREFIX}-g[0-9]+"

    def create(self, timeout_s: float) -> None:
        create_topics(self.stack, self.topics, timeout_s=timeout_s)

    def advance(self, timeout_s: float) -> None:
        """One record per partition (timestamp now), then every group commits the log end."""
        errors: list[Any] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(err)

        ts = int(time.time() * 1000)
        for topic, n in self.topics:
            for partition in range(n):
                while True:
                    try:
                        self._producer.produce(topic, b"x" * 16, partition=partition,
                                               timestamp=ts, on_delivery=delivered)
                        break
                    except BufferError:
                        self._producer.poll(0.05)
        if self._producer.flush(timeout_s) > 0 or errors:
            raise RuntimeError(f"produce failed: {errors[:1] or 'timeout'}")
        self.end += 1
        by_group: dict[str, list[tuple[str, int, int]]] = {g: [] for g in self.groups}
        for i, (topic, n) in enumerate(self.topics):
            by_group[self.groups[i % len(self.groups)]] += [(topic, p, self.end)
                                                            for p in range(n)]
        for group, offsets in by_group.items():
            self.stack.commit_offsets(group, offsets)
        self._wait_for_burrow(timeout_s)

    def _wait_for_burrow(self, timeout_s: float) -> None:
        expected = {g: sum(n for i, (_t, n) in enumerate(self.topics)
                           if i % len(self.groups) == k) for k, g in enumerate(self.groups)}
        pending = set(self.groups)

        def ready(group: str) -> bool:
            status, body = self.stack.burrow_get(
                f"/v3/kafka/{self.stack.cluster}/consumer/{group}/lag", timeout_s=30)
            if status != 200 or not isinstance(body, dict):
                return False
            parts = body.get("status", {}).get("partitions") or []
            done = sum(1 for p in parts if (p.get("end") or {}).get("offset") == self.end
                       and p.get("current_lag") == 0)
            return done == expected[group]

        def all_ready() -> bool:
            pending.difference_update([g for g in list(pending) if ready(g)])
            return not pending

        wait_until(all_ready, timeout_s, "Burrow to show every partition caught up at the new "
                   "log end", interval_s=0.5)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cycle(exporter: Exporter) -> dict[str, Any]:
    wall0, cpu0 = time.perf_counter(), _cpu_s()
    snapshot = exporter.run_once()
    wall, cpu = time.perf_counter() - wall0, _cpu_s() - cpu0
    (cluster,) = snapshot.clusters
    h = cluster.health
    caught_up = [p for p in cluster.partitions if p.status is PartitionStatus.CAUGHT_UP]
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "up": h.up,
            "partitions": h.partitions, "caught_up": len(caught_up), "reads": h.kafka_reads,
            "read_failures": h.kafka_read_failures, "cache_hits": h.cache_hits,
            "read_s": h.read_duration_ms / 1000,
            "with_commit_lag": sum(p.commit_lag_ms is not None for p in caught_up)}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def run(args: argparse.Namespace) -> dict[str, Any]:
    began = time.monotonic()
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "rounds": []}
    with RealStack(nodes=1, kafka_version=args.kafka_version) as stack:
        up = time.monotonic()
        work = Partitions(stack, args.partitions, args.groups)
        work.create(args.timeout_s)
        created = time.monotonic()
        work.advance(args.timeout_s)
        ready = time.monotonic()
        report["stack"] = f"Apache Kafka {stack.kafka_version} + Burrow " + (
            "1.2.1 (Debian)" if stack.burrow121 else os.environ.get("FT_BURROW_BIN", "?"))
        report["build_s"] = {"stack": round(up - began, 1), "topics": round(created - up, 1),
                             "first_commit": round(ready - created, 1)}
        print(f"{report['stack']}: {args.partitions} partitions over {len(work.topics)} topics "
              f"and {args.groups} groups; {report['build_s']}", flush=True)
        exporters = {on: Exporter(_settings(stack, on, work.group_regex)) for on in (False, True)}
        try:
            for rnd in range(args.rounds + 1):
                if rnd:
                    moved0 = time.monotonic()
                    work.advance(args.timeout_s)
                    moved = round(time.monotonic() - moved0, 1)
                else:
                    moved = 0.0
                order = (False, True) if rnd % 2 == 0 else (True, False)
                figures: dict[str, Any] = {"round": rnd, "advance_s": moved,
                                           "order": ["on" if o else "off" for o in order]}
                for on in order:
                    figures["on" if on else "off"] = cycle(exporters[on])
                figures["on_again"] = cycle(exporters[True])
                report["rounds"].append(figures)
                print(json.dumps(figures), flush=True)
        finally:
            for exporter in exporters.values():
                exporter.close()
    timed = report["rounds"][1:]

    def ratio(key: str) -> float:
        return _median([r["on"][key] / r["off"][key] for r in timed if r["off"][key]])

    def med(phase: str, key: str) -> float:
        return _median([r[phase][key] for r in timed])

    report["summary"] = {
        phase: {key: med(phase, key) for key in ("wall_s", "cpu_s", "reads", "cache_hits",
                                                 "read_s", "with_commit_lag")}
        for phase in ("off", "on", "on_again")
    }
    report["summary"]["ratio_on_off"] = {"wall": ratio("wall_s"), "cpu": ratio("cpu_s")}
    report["wall_s"] = round(time.monotonic() - began, 1)
    return report


def print_report(report: dict[str, Any]) -> None:
    s = report["summary"]
    a = report["args"]
    print(f"\n== commitLagWhenCaughtUp on {report['stack']}: {a['partitions']} caught-up "
          f"partitions committing every cycle, {a['rounds']} timed rounds (medians) ==")
    print("cycle | wall s | CPU s | Kafka reads | cache hits | read s | caught-up with commit lag")
    for phase, label in (("off", "off"), ("on", "on (offsets moved)"),
                         ("on_again", "on, no movement")):
        f = s[phase]
        print(f"{label} | {f['wall_s']:.2f} | {f['cpu_s']:.2f} | {f['reads']:.0f} | "
              f"{f['cache_hits']:.0f} | {f['read_s']:.2f} | {f['with_commit_lag']:.0f}")
    print(f"on/off per round, median: wall {s['ratio_on_off']['wall']:.2f}x, CPU "
          f"{s['ratio_on_off']['cpu']:.2f}x; build {report['build_s']}; wall time "
          f"{report['wall_s'] / 60:.1f} min")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_caught_up",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (after a warm-up)")
    parser.add_argument("--kafka-version", default=None)
    parser.add_argument("--timeout-s", type=float, default=900.0,
                        help="limit of each build step (topics, produce+commit+Burrow)")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--record", type=Path, metavar="DIR",
                        help="write the run record (what docs/performance.md is rendered from) "
                             "to DIR/bench_caught_up.json")  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("BENCH_LOG_LEVEL", "WARNING"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    from benchmarks.common import RunRecord

    record = RunRecord("bench_caught_up", argv)
    report = record.measuring(args.record, lambda: run(args))
    print_report(report)
    if args.record:
        summary = dict(report["summary"])
        timed = report["rounds"][1:]  # round 0 warms up
        ratios = {"on_over_off": summary.pop("ratio_on_off")}
        values = {"args": {k: v for k, v in report["args"].items() if k not in ("json", "record")},
                  "stack": report["stack"], "summary": summary,
                  "read_failures": {phase: max(r[phase]["read_failures"] for r in timed)
                                    for phase in ("off", "on", "on_again")},
                  "wall_s": report["wall_s"]}  # fmt: skip
        print(f"run record written to {record.write(args.record, values, ratios)}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

