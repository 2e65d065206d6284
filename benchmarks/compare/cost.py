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

Ours and the Consumer Freshness Tracker need Burrow: Burrow's CPU over ours' window is reported
beside ours (its Kafka traffic uses the internal listener and is not counted). After every tool,
Burrow is measured alone in two phases of the same run: at the accuracy runs' setting
(``offset-refresh = topic-refresh = 1``, what the tools read above) and, restarted, at its own
defaults (``offset-refresh = 10``, ``topic-refresh = 60``): what a deployment that keeps them
pays.

The returned run names what ran (the command, every tool's version from its build's
``VERSION``, Kafka's and Burrow's), the machine (cores, load average at start and end) and when,
as :class:`benchmarks.common.RunRecord` does for the other benchmarks.
"""

from __future__ import annotations

import logging
import math
import os
import random
import re
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import RunRecord, Workload
from benchmarks.compare.exposition import TOOLS, Exposition, parse_exposition
from benchmarks.compare.peers import (
    SPECS,
    Tool,
    make_tool,
    peer_version_line,
    proc_cpu_s,
    proc_peak_rss_mib,
    spec_for,
)
from devstack import RealStack
from devstack.burrow import BurrowServer, burrow_config
from freshness_tracker.metrics import CYCLES

__all__ = [
    "API_NAMES",
    "BURROW_DEFAULT_REFRESH",
    "FleetWorkload",
    "api_totals",
    "measure_burrow",
    "measure_tool",
    "replication_for",
    "run_cost",
    "with_refresh",
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
        # a tool that counts its rounds: where the count stood (no scrape for the others: a
        # scrape is a round of a tool that collects on scrape)
        counted0 = (
            parse_exposition(tool.metrics_text(timeout_s=timeout_s), tool.spec.metrics)
            if TOOLS[tool.spec.metrics].round_summary is not None
            else Exposition()
        )
        last = counted0
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
            last = expo
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
        counted = last.rounds is not None and counted0.rounds is not None
        if key.startswith("ours"):
            done = _ours_cycles(tool) - (ours_cycles0 or 0)
        elif counted:  # a tool that counts its rounds (the CFT's runtime summary)
            done = max((last.rounds or 0.0) - (counted0.rounds or 0.0), 1.0)
            if last.rounds != counted0.rounds:
                round_s = [
                    ((last.rounds_seconds or 0.0) - (counted0.rounds_seconds or 0.0))
                    / ((last.rounds or 0.0) - (counted0.rounds or 0.0))
                ]
        elif tool.spec.collects_on_scrape:
            done = n
        else:  # fixed-rate scheduler: one round per its poll interval
            done = max(round(window_s / (tool.poll_s or poll_s)), 1)
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
        # every partition it exported, its scenario's or not (the CFT has no group filter)
        "partitions_exported": len(set(last.time_lag_s) | set(last.offset_lag)),
    }
    if key == "ours" and burrow_pid is not None and burrow1 is not None and burrow2 is not None:
        steady["burrow_cpu_per_round_s"] = (burrow2 - burrow1) / done
        steady["burrow_peak_rss_mib"] = proc_peak_rss_mib(burrow_pid)
    return {
        "tool": key,
        "scenario": scenario.name,
        "version": tool.version,
        "poll_s": tool.poll_s,
        "first": first,
        "steady": steady,
    }


#: Burrow's own defaults for its kafka cluster module (its configuration docs):
#: offset-refresh 10 s, topic-refresh 60 s
BURROW_DEFAULT_REFRESH = {"offset-refresh": 10, "topic-refresh": 60}
#: the accuracy runs' setting, devstack's: both every second
BURROW_ACCURACY_REFRESH = {"offset-refresh": 1, "topic-refresh": 1}


def with_refresh(toml: str, refresh: dict[str, int]) -> str:
    """Burrow's TOML with every cluster module's ``offset-refresh`` / ``topic-refresh`` set to
    ``refresh``'s values; ValueError when a key is not there to set."""
    for key, value in refresh.items():
        toml, n = re.subn(rf"(?m)^{re.escape(key)} = \d+$", f"{key} = {value}", toml)
        if not n:
            raise ValueError(f"no {key} in Burrow's config")
    return toml


def _set_refresh(burrow: BurrowServer, refresh: dict[str, int]) -> None:
    """Make ``burrow``'s next start write its config with ``refresh``."""
    render = burrow.render_config
    if render is None:  # the default renderer, as BurrowServer.start calls it
        b = burrow

        def render(port: int, pidfile: Path) -> str:
            return burrow_config(
                cluster=b.cluster,
                servers=b.servers,
                http_port=port,
                pidfile=pidfile,
                refresh_s=b.refresh_s,
                tls_ca=b.tls_ca,
                sasl=b.sasl,
                more_clusters=b.more_clusters,
            )

    base = render
    burrow.render_config = lambda port, pidfile: with_refresh(base(port, pidfile), refresh)


def _burrow_groups(stack: RealStack) -> set[str]:
    status, body = stack.burrow_get(f"/v3/kafka/{stack.cluster}/consumer")
    return set((body or {}).get("consumers") or []) if status == 200 else set()


def measure_burrow(
    stack: RealStack,
    refresh: dict[str, int],
    window_s: float,
    poll_s: float,
    groups: set[str],
    restart: bool,
    timeout_s: float = 300.0,
) -> dict[str, Any]:
    """Burrow alone (no tool running) over ``window_s``: CPU seconds per second and per poll
    interval, peak RSS. ``restart``: first restart it with ``refresh`` and wait until it lists
    ``groups`` again and two offset refreshes have passed (its start re-reads
    ``__consumer_offsets`` from the beginning: not the steady cost)."""
    burrow = stack.burrow
    if burrow is None:
        raise RuntimeError("no Burrow in this stack")
    began = time.monotonic()
    if restart:
        _set_refresh(burrow, refresh)
        burrow.stop()
        stack.start_burrow()
        deadline = time.monotonic() + timeout_s
        while not groups <= _burrow_groups(stack):
            if time.monotonic() > deadline:
                raise TimeoutError(f"Burrow lists {len(_burrow_groups(stack))} groups again")
            time.sleep(1.0)
        time.sleep(2 * refresh["offset-refresh"])
    pid = burrow.pid
    if pid is None:
        raise RuntimeError("Burrow is not running")
    cpu0, t0 = proc_cpu_s(pid), time.monotonic()
    time.sleep(window_s)
    cpu1, t1 = proc_cpu_s(pid), time.monotonic()
    per_s = (cpu1 - cpu0) / (t1 - t0)
    return {
        "refresh": dict(refresh),
        "restarted": restart,
        "settle_s": t0 - began,
        "window_s": t1 - t0,
        "cpu_s": cpu1 - cpu0,
        "cpu_per_s": per_s,
        "cpu_per_poll_s": per_s * poll_s,
        "peak_rss_mib": proc_peak_rss_mib(pid),
    }


def _ours_cycles(tool: Tool) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(tool.metrics_text()):
        for s in family.samples:
            if s.name == CYCLES.total:
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
    max_replication: int | None = None,
) -> dict[str, Any]:
    """Start the 3-node proxied stack, build the workloads, measure every tool (order
    alternating per repetition), then Burrow alone at the accuracy setting and at its defaults
    (one window of ``rounds`` poll intervals each). ``max_replication`` caps the replication
    factor below what the open-file limit allows (a cluster too large for the machine's cores
    to replicate while the workload is produced)."""
    record = RunRecord("compare")  # the command, when, the machine and the load at start
    began = time.monotonic()
    nodes = 3
    open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]  # the brokers inherit it
    rf_for_files = replication_for(partitions + fleet, nodes, open_files)
    rf = min(rf_for_files, max_replication or nodes)
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
        burrow_phases: list[dict[str, Any]] = []
        if stack.burrow is not None and scenarios:
            groups = {g for s in scenarios for g in s.workload.group_names}
            for refresh, restart in (
                (BURROW_ACCURACY_REFRESH, False),
                (BURROW_DEFAULT_REFRESH, True),
            ):
                progress(f"  Burrow alone, {refresh}")
                try:
                    phase = measure_burrow(
                        stack, refresh, rounds * poll_s, poll_s, groups, restart=restart
                    )
                except Exception as exc:  # a finding too: say so in the record
                    progress(f"    failed: {exc}")
                    phase = {"refresh": dict(refresh), "error": str(exc).splitlines()[0][:300]}
                else:
                    progress(
                        f"    {phase['cpu_per_s']:.4f} CPU s/s, "
                        f"{phase['cpu_per_poll_s']:.3f} per {poll_s:g} s, "
                        f"{phase['peak_rss_mib']:.0f} MiB"
                    )
                burrow_phases.append(phase)
        burrow_line = (
            "Debian's Burrow 1.2.1" if stack.burrow121 else peer_version_line("burrow")
        ) or "FT_BURROW_BIN"
        context = record.data
        context["machine"]["load_end"] = [round(x, 2) for x in os.getloadavg()]
        context["finished"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        context["versions"].update(
            {
                "kafka": stack.kafka_version,
                "burrow": burrow_line,
                **{t: spec_for(t).version for t in tools if t in SPECS},
            }
        )
        context["version_lines"] = {
            t: peer_version_line(peer) or SPECS[t].version
            for t in tools
            if t in SPECS and (peer := SPECS[t].peer) is not None
        }
        return {
            **{k: context[k] for k in ("command", "started", "finished", "machine")},
            "versions": context["versions"],
            "version_lines": context["version_lines"],
            "status": "ok" if all("error" not in r for r in results) else "partial",
            "burrow_phases": burrow_phases,
            "kafka_version": stack.kafka_version,
            "nodes": nodes,
            "replication_factor": rf,
            "replication_capped": rf < rf_for_files,
            "open_files_limit": open_files,
            "build_errors": build_errors,
            "topic_counts": {s.name: len(s.workload.topics) for s in scenarios},
            "burrow": "Debian's 1.2.1" if stack.burrow121 else burrow_line,
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
