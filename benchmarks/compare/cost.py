"""Cost at equal work: each tool in turn against the same 3-node proxied cluster and groups.

The stack is devstack's ``RealStack(nodes=3, proxied=True)``: every broker's client listener
sits behind a frame proxy that counts request frames per API (``stack.request_counts()``); only
the tool under test uses that listener (Burrow and the workload use the internal one). The
workloads are :class:`benchmarks.common.Workload` (lagging partitions, real group commits) and
:class:`FleetWorkload` (the same with most partitions caught up).

Per scenario and tool, one process at a time, same poll interval for all:

* **first round**: from process start to the first complete round (all partitions exported):
  the tool's own duration of that round, CPU seconds and Kafka requests since the start
  (start-up included; for ours, a cold timestamp cache: every lagging partition read);
* **steady rounds**: the next ``rounds`` rounds with nothing moving: CPU seconds and requests
  per round, the tool's own round duration (median), peak RSS (VmHWM) at the end, and the size
  of ``/metrics`` (scraped once per round, as Prometheus would).

Ours needs Burrow: Burrow's CPU over ours' window is reported beside ours (its Kafka traffic
uses the internal listener and is not counted).
"""

from __future__ import annotations

import logging
import math
import random
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import Workload
from benchmarks.compare.exposition import parse_exposition
from benchmarks.compare.peers import Tool, make_tool, proc_cpu_s, proc_peak_rss_mib
from devstack import RealStack

__all__ = [
    "API_NAMES",
    "FleetWorkload",
    "api_totals",
    "measure_tool",
    "replication_for",
    "run_cost",
]

log = logging.getLogger(__name__)

API_NAMES = {
    0: "Produce",
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    17: "SaslHandshake",
    18: "ApiVersions",
    19: "CreateTopics",
    32: "DescribeConfigs",
    35: "DescribeLogDirs",
    42: "DeleteGroups",
    60: "DescribeCluster",
    61: "DescribeProducers",
    68: "ConsumerGroupHeartbeat",
    69: "ConsumerGroupDescribe",
    71: "GetTelemetrySubscriptions",
    72: "PushTelemetry",
    75: "DescribeTopicPartitions",
}


def api_totals(counts: dict[int, dict[int, int]]) -> dict[str, int]:
    """{broker: {api key: frames}} → {API name: frames over every broker}."""
    out: dict[str, int] = {}
    for per_api in counts.values():
        for api, n in per_api.items():
            name = API_NAMES.get(api, f"api{api}")
            out[name] = out.get(name, 0) + n
    return out


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {
        k: after.get(k, 0) - before.get(k, 0)
        for k in sorted(set(after) | set(before))
        if after.get(k, 0) - before.get(k, 0)
    }


#: klag-exporter's log line for a round it abandoned at its collection timeout
KLAG_TIMEOUT = "Collection timed out"

# open files a broker keeps besides one per partition replica (sockets, jars, the internal topics'
# logs, index files while rolling): the budget left under the per-process limit for those
BROKER_FILE_HEADROOM = 4000


def replication_for(partitions: int, nodes: int, open_files: int) -> int:
    """The largest replication factor (at most every node) at which no broker holds more
    partition replicas than its open-file limit allows: a broker keeps each replica's active
    log segment open, so RF 3 on 3 nodes needs more than one file per partition of the cluster
    on every broker (20,000 partitions hit the shared machine's hard limit of 20,000)."""
    rf = nodes
    while rf > 1 and math.ceil(partitions * rf / nodes) > open_files - BROKER_FILE_HEADROOM:
        rf -= 1
    return rf


class FleetWorkload(Workload):
    """:class:`Workload` where only ``lagging_share`` of the partitions lag; the rest are caught
    up (committed at the log end offset: lag 0)."""

    lagging_share: float = 0.1

    def _lag(self, rng: random.Random) -> int:
        return rng.randint(self.min_lag, self.max_lag) if rng.random() < self.lagging_share else 0

    def lagging(self) -> int:
        return sum(1 for _o, lag in self.commits.values() if lag > 0)


@dataclass
class Scenario:
    name: str
    workload: Workload
    title: str

    @property
    def partitions(self) -> int:
        return len(self.workload.commits)

    @property
    def lagging(self) -> int:
        return sum(1 for _o, lag in self.workload.commits.values() if lag > 0)


def _wait_first_round(tool: Tool, expected: int, timeout_s: float) -> dict[str, Any]:
    """Scrape once a second until every partition has a series (ours exports freshness per
    partition by default, not offset lag) and the tool has finished a round; returns that
    scrape's figures."""
    deadline = time.monotonic() + timeout_s
    seen = 0
    while time.monotonic() < deadline:
        began = time.perf_counter()
        text = tool.metrics_text(timeout_s=timeout_s)
        scrape_s = time.perf_counter() - began
        expo = parse_exposition(text, tool.spec.metrics)
        seen = len(set(expo.time_lag_s) | set(expo.offset_lag))  # ours: no offset lag
        done = tool.spec.collects_on_scrape or expo.round_stamp is not None
        if seen >= expected and done:
            return {
                "round_s": scrape_s if tool.spec.collects_on_scrape else expo.round_seconds,
                "scrape_s": scrape_s,
                "bytes": len(text.encode()),
                "series": expo.series,
                "time_lag_series": len(expo.time_lag_s),
                "offset_series": seen,
            }
        time.sleep(1.0)
    raise TimeoutError(
        f"{tool.spec.key}: {seen} of {expected} partitions after {timeout_s} s:\n{tool.log_tail()}"
    )


def measure_tool(
    stack: RealStack,
    key: str,
    scenario: Scenario,
    workdir: Path,
    poll_s: float,
    rounds: int,
    burrow_pid: int | None,
    timeout_s: float = 300.0,
) -> dict[str, Any]:
    """One tool, one scenario: first round and ``rounds`` steady rounds (see module doc)."""
    prefix = scenario.workload.prefix
    tool = make_tool(
        key,
        burrow_url=stack.burrow_url,
        bootstrap=stack.bootstrap_servers,
        cluster=stack.cluster,
        workdir=workdir / f"{scenario.name}-{key}",
        poll_s=poll_s,
        group_regex=scenario.workload.group_regex,
        topic_regex=f"^{prefix}-",
    )
    counts0 = api_totals(stack.request_counts())
    started = time.monotonic()
    with tool:
        tool.start(timeout_s=60)
        first = _wait_first_round(tool, scenario.partitions, timeout_s)
        first["since_start_s"] = time.monotonic() - started
        first["cpu_s"] = tool.cpu_s()
        counts1 = api_totals(stack.request_counts())
        first["requests"] = _delta(counts1, counts0)
        # steady rounds: one scrape per poll interval, rounds counted by the tool's own stamp
        cpu1, burrow1, t1 = tool.cpu_s(), _cpu(burrow_pid), time.monotonic()
        stamps: set[float] = set()
        round_s: list[float] = []
        scrape_s: list[float] = []
        size = series = 0
        ours_cycles0 = _ours_cycles(tool) if key.startswith("ours") else None
        n = 0
        next_at = time.monotonic() + poll_s
        while n < rounds:
            time.sleep(max(next_at - time.monotonic(), 0.0))
            next_at += poll_s
            began = time.perf_counter()
            text = tool.metrics_text(timeout_s=timeout_s)
            took = time.perf_counter() - began
            scrape_s.append(took)
            expo = parse_exposition(text, tool.spec.metrics)
            size, series = len(text.encode()), expo.series
            if tool.spec.collects_on_scrape:
                round_s.append(took)
            else:
                if expo.round_seconds is not None:
                    round_s.append(expo.round_seconds)
                if expo.round_stamp is not None:
                    stamps.add(expo.round_stamp)
            n += 1
        window_s = time.monotonic() - t1
        cpu2, burrow2 = tool.cpu_s(), _cpu(burrow_pid)
        counts2 = api_totals(stack.request_counts())
        if key.startswith("ours"):
            done = _ours_cycles(tool) - (ours_cycles0 or 0)
        elif tool.spec.collects_on_scrape:
            done = n
        else:  # fixed-rate scheduler: one round per poll interval
            done = max(round(window_s / poll_s), 1)
        peak = tool.peak_rss_mib()
        timeouts = tool.log_text().count(KLAG_TIMEOUT)  # klag drops a round that outlives it
    steady = {
        "rounds": done,
        "window_s": window_s,
        "round_s": _median(round_s),
        "cpu_per_round_s": (cpu2 - cpu1) / done,
        "requests_per_round": {k: v / done for k, v in _delta(counts2, counts1).items()},
        "peak_rss_mib": peak,
        "metrics_bytes": size,
        "series": series,
        "scrape_s": _median(scrape_s),
        "distinct_round_stamps": len(stamps),
        "timeouts_since_start": timeouts,
    }
    if key == "ours" and burrow_pid is not None and burrow1 is not None and burrow2 is not None:
        steady["burrow_cpu_per_round_s"] = (burrow2 - burrow1) / done
        steady["burrow_peak_rss_mib"] = proc_peak_rss_mib(burrow_pid)
    return {"tool": key, "scenario": scenario.name, "first": first, "steady": steady}


def _ours_cycles(tool: Tool) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(tool.metrics_text()):
        for s in family.samples:
            if s.name == "freshness_tracker_cycles_total":
                total += s.value
    return total


def _cpu(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        return proc_cpu_s(pid)
    except OSError:
        return None


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def run_cost(
    tools: list[str],
    partitions: int,
    fleet: int,
    fleet_share: float,
    poll_s: float,
    rounds: int,
    reps: int,
    workdir: Path,
    kafka_version: str | None = None,
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Start the 3-node proxied stack, build the workloads, measure every tool (order
    alternating per repetition)."""
    began = time.monotonic()
    nodes = 3
    open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]  # the brokers inherit it
    rf = replication_for(partitions + fleet, nodes, open_files)
    build_errors: dict[str, str] = {}
    with RealStack(nodes=nodes, proxied=True, kafka_version=kafka_version) as stack:
        progress(
            f"3-node proxied stack up (Apache Kafka {stack.kafka_version}) in "
            f"{time.monotonic() - began:.0f} s; building the workloads (RF {rf})"
        )
        scenarios: list[Scenario] = []
        if partitions:
            lag = Workload(stack, "cmplag", partitions, replication_factor=rf)
            lag.build()
            scenarios.append(Scenario("lagging", lag, f"{partitions:,} lagging partitions"))
        fl = FleetWorkload(stack, "cmpfleet", fleet, records=4, replication_factor=rf)
        fl.lagging_share = fleet_share
        try:
            if fleet:
                fl.build()
        except Exception as exc:  # the lagging scenario is still worth measuring
            build_errors["fleet"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
            progress(f"fleet not built: {build_errors['fleet']}")
        if fleet and not build_errors:
            scenarios.append(
                Scenario(
                    "fleet",
                    fl,
                    f"{fleet:,} partitions, {100 * (1 - fleet_share):.0f} % caught up "
                    f"({sum(1 for _o, g in fl.commits.values() if g > 0):,} lagging)",
                )
            )
        built = time.monotonic()
        progress(f"workloads ready in {built - began:.0f} s")
        idle0 = api_totals(stack.request_counts())
        time.sleep(3.0)
        idle = _delta(api_totals(stack.request_counts()), idle0)
        burrow_pid = stack.burrow.pid if stack.burrow is not None else None
        results: list[dict[str, Any]] = []
        for rep in range(reps):
            for scenario in scenarios:
                order = tools if rep % 2 == 0 else list(reversed(tools))
                for key in order:
                    progress(f"  rep {rep + 1}/{reps} {scenario.name}: {key}")
                    try:
                        r = measure_tool(
                            stack, key, scenario, workdir / f"rep{rep}", poll_s, rounds, burrow_pid
                        )
                    except Exception as exc:  # one tool failing is a finding, not the end
                        progress(f"    failed: {exc}")
                        results.append(
                            {
                                "tool": key,
                                "scenario": scenario.name,
                                "rep": rep,
                                "error": str(exc).splitlines()[0][:300],
                            }
                        )
                        continue
                    r["rep"] = rep
                    results.append(r)
                    s = r["steady"]
                    progress(
                        f"    first round {r['first']['round_s']} s; steady: "
                        f"{s['cpu_per_round_s']:.3f} CPU s/round, {s['peak_rss_mib']:.0f} "
                        f"MiB, {s['metrics_bytes']:,} B, requests/round "
                        f"{s['requests_per_round']}"
                    )
        return {
            "kafka_version": stack.kafka_version,
            "nodes": nodes,
            "replication_factor": rf,
            "open_files_limit": open_files,
            "build_errors": build_errors,
            "topic_counts": {s.name: len(s.workload.topics) for s in scenarios},
            "burrow": "Debian's 1.2.1" if stack.burrow121 else "FT_BURROW_BIN",
            "scenarios": [
                {"name": s.name, "title": s.title, "partitions": s.partitions, "lagging": s.lagging}
                for s in scenarios
            ],
            "idle_requests_3s": idle,
            "poll_s": poll_s,
            "rounds": rounds,
            "reps": reps,
            "build_s": built - began,
            "wall_s": time.monotonic() - began,
            "results": results,
        }
