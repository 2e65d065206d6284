"""The scale benchmark on a real Burrow: thousands of groups on a few topics, through Debian's
Burrow 1.2.1 reading real commits, with Burrow's own CPU beside the exporter's.

    python -m benchmarks.bench_scale_burrow --record docs/records/scale   # 5,000 groups × 20
    python -m benchmarks.bench_scale_burrow --groups 50 --warm 1 --idle-s 2   # a quick try

`benchmarks.bench_scale` measures a generated Burrow (its answers built once, served for next to
no CPU); this one asks what the generated Burrow cannot say: how long a real Burrow takes to list
that many groups, and what serving a cycle costs Burrow itself. Only the Burrow side differs:
the exporter runs in `bench_scale`'s `ExporterProcess`, default settings.

- **Kafka + Burrow**: `devstack.RealStack(nodes=1)`, built by `bench_scale.build_kafka`: the
  dev stack's Kafka and Debian's Burrow 1.2.1 reading its `__consumer_offsets`, with
  devstack's Burrow settings (the record keeps those that set its cost: refresh periods,
  storage, the evaluator's cache). `--topics` topics × `--partitions` partitions × `--records`
  records.
- **Groups**: `--groups` groups, group g on topic g mod `--topics` (`scale_burrow.Layout`, the
  layout the generated Burrow serves); a stable `--lagging` share commits below the log end, at
  offsets holding real records, the rest at it. Real group commits: one AdminClient
  `alter_consumer_group_offsets` per group, `--in-flight` at a time; the broker stamps them and
  Burrow reads them from `__consumer_offsets`.

Measured, with Burrow's CPU (user + system, every thread, from /proc/<pid>/stat):

1. *Listing*: from the first commit sent until `/v3/kafka/<cluster>/consumer` lists every group
   (and from the last commit acknowledged), Burrow's CPU over it; then every `--check-every`-th
   group's `/lag` must show each partition at its committed offset before anything is timed.
2. *Idle*: Burrow's CPU over `--idle-s` seconds with nobody asking (its own refreshes).
3. *Cycles*: a cold cycle and `--warm` warm ones of the exporter: its CPU (every thread), wall,
   partitions measured, Kafka reads, VmHWM; Burrow's CPU over the same window.
4. *Scrapes*: `--scrapers` scrapers × `--rounds` per mode (bench_scale's plain and gzip), then
   2 + 2 scrapers back to back during one more cycle (Burrow's CPU over that one too).

Nothing here asserts; it prints figures (`--json FILE`) and `--record DIR` writes the run record
docs/scale.md is rendered from.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bench_scale import (
    BUILD_TIMEOUT_S,
    MODES,
    build_kafka,
    exporter,
    scrape_phase,
    scrapes_during,
)
from benchmarks.scale_burrow import ClusterLayout, Layout

log = logging.getLogger("benchmarks.bench_scale_burrow")


def commit_groups(stack: Any, layout: Layout, cluster: str, in_flight: int) -> None:
    """Every group's offsets, one AdminClient request per group, `in_flight` at a time;
    RuntimeError naming the first partition the broker refused."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    by_group: dict[str, list[TopicPartition]] = {}
    for group, topic, partition, offset in layout.partitions(cluster):
        by_group.setdefault(group, []).append(TopicPartition(topic, partition, offset))
    admin = stack.admin()
    pending: list[Any] = []

    def settle() -> None:
        for future in pending:
            for tp in future.result(timeout=BUILD_TIMEOUT_S).topic_partitions:
                if tp.error is not None:
                    raise RuntimeError(f"commit refused for {tp.topic}[{tp.partition}]: "
                                       f"{tp.error}")
        pending.clear()

    for group, tps in by_group.items():
        pending.extend(admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, tps)], request_timeout=BUILD_TIMEOUT_S).values())
        if len(pending) >= in_flight:
            settle()
    settle()


def listed_groups(stack: Any, wanted: set[str]) -> int:
    """How many of `wanted` Burrow lists now (0 while it does not answer)."""
    status, body = stack.burrow_get(f"/v3/kafka/{stack.cluster}/consumer", timeout_s=30)
    if status != 200 or not isinstance(body, dict):
        return 0
    return len(wanted.intersection(body.get("consumers") or []))


def lag_complete(stack: Any, layout: Layout, cluster: str, index: int) -> bool:
    """Burrow's `/lag` of group `index` shows every partition at its committed offset."""
    group = layout.group_name(index)
    status, body = stack.burrow_get(f"/v3/kafka/{cluster}/consumer/{group}/lag", timeout_s=30)
    if status != 200 or not isinstance(body, dict):
        return False
    seen = {(p.get("topic"), p.get("partition")): (p.get("end") or {}).get("offset")
            for p in (body.get("status") or {}).get("partitions") or []}
    topic = layout.topic_names()[index % layout.topics]
    parts = layout.clusters[cluster].partitions
    return all(seen.get((topic, p)) == layout.committed(cluster, index, p) for p in range(parts))


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {timeout_s:.0f} s")
        time.sleep(0.5)


def burrow_cpu(pid: int) -> float:
    from benchmarks.compare.peers import proc_cpu_s

    return proc_cpu_s(pid)


def with_burrow_cpu(pid: int, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`work()`'s answer with Burrow's CPU seconds over it (`burrow_cpu_s`)."""
    before = burrow_cpu(pid)
    answer = work()
    return answer | {"burrow_cpu_s": burrow_cpu(pid) - before}


def measure(args: argparse.Namespace, stack: Any, layout: Layout, results: dict[str, Any]
            ) -> None:  # fmt: skip
    from benchmarks.compare.peers import proc_peak_rss_mib
    from devstack.processes import rss_bytes

    cluster = stack.cluster
    began = time.monotonic()
    for topic in layout.topic_names():
        stack.burrow.wait_for_topic(topic, args.partitions, BUILD_TIMEOUT_S)
    results["build_s"]["burrow_topics"] = time.monotonic() - began
    pid = stack.burrow.pid
    wanted = {layout.group_name(g) for g in range(args.groups)}
    log.info("committing %d groups × %d partitions", args.groups, args.partitions)
    cpu0, began = burrow_cpu(pid), time.monotonic()
    commit_groups(stack, layout, cluster, args.in_flight)
    committed = time.monotonic()
    log.info("committed in %.1f s; waiting for Burrow to list every group", committed - began)
    wait_for(lambda: listed_groups(stack, wanted) == len(wanted), args.list_timeout_s,
             f"Burrow to list {len(wanted)} groups")
    listed = time.monotonic()
    results["listing"] = {"commit_s": committed - began, "listed_after_first_commit_s":
                          listed - began, "listed_after_last_commit_s": listed - committed,
                          "burrow_cpu_s": burrow_cpu(pid) - cpu0}  # fmt: skip
    sample = range(0, args.groups, max(args.check_every, 1))
    wait_for(lambda: all(lag_complete(stack, layout, cluster, g) for g in sample),
             args.list_timeout_s, "Burrow to show every committed offset")
    results["listing"]["checked_groups"] = len(sample)
    results["listing"]["complete_after_first_commit_s"] = time.monotonic() - began
    log.info("Burrow idle for %.0f s", args.idle_s)
    cpu0, began = burrow_cpu(pid), time.monotonic()
    time.sleep(args.idle_s)
    results["burrow_idle"] = {"seconds": time.monotonic() - began,
                              "cpu_s": burrow_cpu(pid) - cpu0}
    opts = {"burrow_url": stack.burrow_url, "bootstrap": stack.bootstrap_servers,
            "clusters": [cluster]}
    with exporter(opts) as proc:
        runs = []
        for i in range(args.warm + 1):
            log.info("cycle %d of %d", i + 1, args.warm + 1)
            runs.append(with_burrow_cpu(pid, lambda: proc.ask("cycle")))
        results["cycles"] = runs
        log.info("scrapes")
        results["scrape"] = scrape_phase(proc, args.scrapers, args.rounds)
        log.info("scrapes during a cycle")
        during: dict[str, Any] = {}

        def cycle_scraped() -> dict[str, Any]:
            answer, during["figures"] = scrapes_during(proc, "cycle")
            return answer

        cycle = with_burrow_cpu(pid, cycle_scraped)
        results["scrape_during_cycle"] = during["figures"] | {"cycle": cycle}
        results["hwm_mb"] = proc.hwm_mb()
    results["burrow_rss_mb"] = rss_bytes(pid) / 2**20
    results["burrow_hwm_mb"] = proc_peak_rss_mib(pid)
    results["burrow_restarted"] = stack.burrow.pid != pid
    results["burrow_settings"] = burrow_settings(stack.burrow.config_dir / "burrow.toml",
                                                 cluster)


def burrow_settings(path: Path, cluster: str) -> dict[str, Any]:
    """What in Burrow's own config sets its cost: refreshes, storage, the evaluator's cache."""
    import tomllib

    config = tomllib.loads(path.read_text())
    module = config["cluster"][cluster]
    storage, evaluator = config["storage"]["default"], config["evaluator"]["default"]
    return {"topic_refresh_s": module["topic-refresh"],
            "offset_refresh_s": module["offset-refresh"], "storage": storage["class-name"],
            "storage_workers": storage["workers"], "intervals": storage["intervals"],
            "evaluator_expire_cache_s": evaluator["expire-cache"]}


def _cycle_row(x: dict[str, Any]) -> dict[str, Any]:
    return {k: x[k] for k in ("cpu_s", "wall_s", "burrow_cpu_s", "partitions", "kafka_reads",
                              "cache_hits", "read_failures", "up", "VmHWM") if k in x}


def record_values(r: dict[str, Any], args: argparse.Namespace
                  ) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """(every figure docs/scale.md shows, the same-run ratios): Burrow's CPU ÷ the exporter's
    per cycle (the median over the warm ones), Burrow's idle rate kept beside them."""
    scrape_keys = ("n", "p50_s", "p99_s", "max_s", "bytes")
    values: dict[str, Any] = {
        "args": {k: getattr(args, k) for k in ("groups", "partitions", "topics", "records",
                                               "lagging", "warm", "scrapers", "rounds",
                                               "idle_s", "in_flight", "check_every")},
        "seconds": r["seconds"], "build_s": r["build_s"], "listing": r["listing"],
        "burrow_idle": r["burrow_idle"],
        "cycles": [_cycle_row(c) for c in r["cycles"]],
        "scrape": {mode: {k: r["scrape"][mode][k] for k in scrape_keys} for mode in MODES}
        | {"hwm_mb": r["scrape"]["hwm_mb"],
           "rss_peak_during_mb": r["scrape"]["rss_peak_during_mb"]},
        "scrape_during_cycle": {mode: {k: r["scrape_during_cycle"][mode][k]
                                       for k in scrape_keys} for mode in MODES}
        | {"cycle": _cycle_row(r["scrape_during_cycle"]["cycle"]),
           "rss_peak_during_mb": r["scrape_during_cycle"]["rss_peak_during_mb"]},
        "hwm_mb": r["hwm_mb"], "burrow_rss_mb": r["burrow_rss_mb"],
        "burrow_hwm_mb": r["burrow_hwm_mb"], "burrow_restarted": r["burrow_restarted"],
        "burrow_settings": r["burrow_settings"],
    }  # fmt: skip
    per_cycle = [c["burrow_cpu_s"] / c["cpu_s"] for c in r["cycles"]]
    ratios = {"burrow_over_exporter_cpu": {
        "cold": per_cycle[0],
        "warm": statistics.median(per_cycle[1:]) if per_cycle[1:] else None}}
    return values, ratios


def report(r: dict[str, Any], args: argparse.Namespace) -> None:
    idle = r["burrow_idle"]
    rate = idle["cpu_s"] / idle["seconds"]
    lst = r["listing"]
    print(f"\n== real Burrow: {args.groups} groups × {args.partitions} partitions on "
          f"{args.topics} topics ({args.lagging:.0%} of the groups lagging)")
    print(f"  build: {json.dumps({k: round(v, 1) for k, v in r['build_s'].items()})}")
    print(f"  commits {lst['commit_s']:.1f} s; Burrow listed every group "
          f"{lst['listed_after_first_commit_s']:.1f} s after the first commit "
          f"({lst['listed_after_last_commit_s']:.1f} s after the last), its CPU "
          f"{lst['burrow_cpu_s']:.2f} s; every offset shown after "
          f"{lst['complete_after_first_commit_s']:.1f} s")
    print(f"  Burrow idle: {idle['cpu_s']:.2f} s CPU in {idle['seconds']:.0f} s "
          f"({rate:.3f} cores)")
    for i, c in enumerate(r["cycles"] + [r["scrape_during_cycle"]["cycle"]]):
        name = "cold" if i == 0 else ("scraped" if i == len(r["cycles"]) else f"warm {i}")
        print(f"  {name:8} exporter cpu {c['cpu_s']:6.2f} s wall {c['wall_s']:6.2f} s | Burrow "
              f"cpu {c['burrow_cpu_s']:6.2f} s ({c['burrow_cpu_s'] - rate * c['wall_s']:.2f} "
              f"above idle) | partitions {c['partitions']} reads {c['kafka_reads']} up "
              f"{c['up']} VmHWM {c['VmHWM']:.0f} MiB")
    for key, label in (("scrape", "idle"), ("scrape_during_cycle", "during a cycle")):
        for mode in MODES:
            x = r[key][mode]
            print(f"  scrape {mode:5} {label}: n={x['n']} p50 {x['p50_s']:.3f} s "
                  f"p99 {x['p99_s']:.3f} s ({x['bytes'] / 1e6:.1f} MB)")
    print(f"  exporter VmHWM {r['hwm_mb']:.0f} MiB; Burrow RSS {r['burrow_rss_mb']:.0f} MiB, "
          f"VmHWM {r['burrow_hwm_mb']:.0f} MiB; Burrow restarted: {r['burrow_restarted']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--records", type=int, default=40)
    parser.add_argument("--lagging", type=float, default=0.10)
    parser.add_argument("--warm", type=int, default=3, help="warm cycles after the cold one")
    parser.add_argument("--scrapers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--idle-s", type=float, default=10.0)
    parser.add_argument("--in-flight", type=int, default=200,
                        help="commit requests in flight (one per group)")
    parser.add_argument("--check-every", type=int, default=50,
                        help="every n-th group's /lag is checked complete before the cycles")
    parser.add_argument("--list-timeout-s", type=float, default=900.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", type=Path, metavar="DIR",
                        help="write the run record to DIR/bench_scale_burrow.json")
    args = parser.parse_args()
    from benchmarks.common import RunRecord
    from benchmarks.compare.__main__ import burrow_version

    record = RunRecord("bench_scale_burrow")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("devstack").setLevel(logging.WARNING)
    layout = Layout({"local": ClusterLayout(args.groups, args.partitions, args.lagging)},
                    topics=args.topics, records=args.records)
    results: dict[str, Any] = {"build_s": {}}
    began = time.monotonic()
    log.info("starting Kafka + Burrow, %d topics × %d partitions × %d records", args.topics,
             args.partitions, args.records)
    stack = record.measuring(args.record, lambda: build_kafka(layout))
    results["build_s"]["kafka"] = time.monotonic() - began
    if stack.cluster not in layout.clusters:
        stack.stop()
        raise RuntimeError(f"the stack's cluster is {stack.cluster!r}, not 'local'")
    try:
        record.measuring(args.record, lambda: measure(args, stack, layout, results))
    finally:
        versions = {"kafka": stack.kafka_version, "burrow": burrow_version(stack.burrow121)}
        stack.stop()
    results["seconds"] = time.monotonic() - began
    if args.record:
        values, ratios = record_values(results, args)
        path = record.write(args.record, values, ratios, versions=versions)
        print(f"run record written to {path}")
    report(results, args)
    print(f"\n(run took {results['seconds']:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
