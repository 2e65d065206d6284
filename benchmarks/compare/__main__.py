"""``python -m benchmarks.compare``: freshness-tracker beside the tools users would pick instead.

Accuracy (the accuracy harness's six shapes, ground truth and scoring, with the peers and a real
Prometheus beside ours on a one-node stack) and cost (each tool in turn on the 3-node proxied
stack, same groups, same poll interval). Each part writes a run record under
``docs/records/comparison/`` (``--record-dir``; an accuracy run of ours alone belongs in
``docs/records/accuracy/``), and the pages (``docs/comparison.md``, ``docs/accuracy.md``) and
their plots are then rendered from the committed records.

    python -m benchmarks.compare                      # ~35 min: both parts, rewrites the pages
    python -m benchmarks.compare --skip-cost --duration 120 --record-dir build/compare
    python -m benchmarks.compare --tools ours --skip-cost --kafka-version 4.1.1 \
        --record-dir docs/records/accuracy            # ours only (gauge and rule), Kafka 4
    python -m benchmarks.compare --from docs/records/comparison  # re-render pages and plots

Accuracy plays each shape ``--replicas`` times at once (default 4), copy k shifted by k/N of
the poll interval and by a whole number of intervals of its own (``harness.scatter_cycles``),
and pools the scores per shape: one run then measures every tool over N phases of its polls
rather than the one phase a single copy happens to meet, and each copy's first alert meets
polls and reads of its own.

Peers' binaries: ``$FT_PEERS_DIR`` (default ~/.cache/freshness-tracker/peers) or each peer's
``FT_*_BIN``. A missing one is recorded and shown as not run, with the reason.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.accuracy.harness import HarnessConfig
from benchmarks.accuracy.record import (
    FORMAT,
    git_commit,
    machine_now,
    round_peers,
    round_rule,
    round_run,
    save_record,
)
from benchmarks.accuracy.shapes import standard_shapes
from benchmarks.compare.accuracy import run_accuracy, score_peers
from benchmarks.compare.cost import run_cost
from benchmarks.compare.page import summary_scores, write_all
from benchmarks.compare.peers import missing_reason, peer_version_line, spec_for

REPO = Path(__file__).resolve().parents[2]
log = logging.getLogger("benchmarks.compare")
ALL_TOOLS = (
    "ours",
    "klag_message",
    "klag_rate",
    "klag_message_30s",
    "klag_rate_30s",
    "kafka_exporter",
    "kminion",
    "cft",
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.compare",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--tools", default=",".join(ALL_TOOLS), help="comma-separated tools")
    p.add_argument("--skip-accuracy", action="store_true")
    p.add_argument("--skip-cost", action="store_true")
    p.add_argument("--duration", type=float, default=480.0, help="accuracy: seconds of traffic")
    p.add_argument(
        "--frequency",
        type=float,
        default=2.0,
        help="accuracy: every tool's poll interval (ours' frequency_sec), s",
    )
    p.add_argument("--threshold", type=float, default=20.0, help="alert threshold, s")
    p.add_argument(
        "--replicas",
        type=int,
        default=4,
        help="accuracy: copies of each shape at once, copy k shifted by k/N of the poll "
        "interval and whole intervals of its own, so the scores average N phases of the polls "
        "and N independent first alerts (1: one copy)",
    )
    p.add_argument("--partitions", type=int, default=2000, help="cost: lagging partitions")
    p.add_argument(
        "--fleet",
        type=int,
        default=2000,
        help="cost: partitions of the mostly-caught-up fleet (0: skip)",
    )
    p.add_argument("--fleet-share", type=float, default=0.1, help="cost: lagging share of it")
    p.add_argument("--poll", type=float, default=10.0, help="cost: every tool's poll interval, s")
    p.add_argument("--rounds", type=int, default=6, help="cost: steady rounds per tool")
    p.add_argument("--reps", type=int, default=1, help="cost: repetitions (order alternates)")
    p.add_argument("--max-replication", type=int,
                   help="cost: cap the replication factor (default: the most the open-file "
                        "limit allows, at most 3)")
    p.add_argument("--kafka-version", help="devstack's Kafka (default 3.9.1 + Burrow 1.2.1)")
    p.add_argument("--out", type=Path, default=REPO / "build" / "compare", help="work dirs")
    p.add_argument(
        "--record-dir",
        type=Path,
        default=REPO / "docs" / "records" / "comparison",
        help="where the run's record is written",
    )
    p.add_argument("--no-docs", action="store_true", help="do not re-render pages and plots")
    p.add_argument(
        "--from",
        dest="from_dir",
        type=Path,
        help="run nothing: re-render the pages and plots from the committed records",
    )
    return p


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def tool_versions(tools: list[str]) -> dict[str, str]:
    """Each tool's version as its build recorded it (``$PEERS/<name>/VERSION``); ours: the
    package version and the tree's commit."""
    from freshness_tracker import __version__

    out = {}
    for key in tools:
        spec = spec_for(key)
        if spec.peer is None:
            out[key] = f"freshness-tracker {__version__} (this tree, {git_commit(REPO)})"
        else:
            out[key] = peer_version_line(spec.peer) or f"{spec.peer} {spec.version}"
    return out


def burrow_version(burrow121: bool) -> str:
    """Debian's package version, or the VERSION line beside ``FT_BURROW_BIN``'s build."""
    import os

    if burrow121:
        try:
            out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "burrow"],
                                 capture_output=True, text=True, timeout=10, check=False)
            return f"Burrow {out.stdout.strip() or '1.2.1'} (Debian's package)"
        except OSError:
            return "Burrow 1.2.1 (Debian's package)"
    binary = Path(os.environ.get("FT_BURROW_BIN", ""))
    version = binary.parent.parent / "VERSION"
    line = version.read_text().strip().splitlines()[0] if version.is_file() else ""
    return (f"{line} (built locally from its source)" if line
            else f"Burrow from FT_BURROW_BIN ({binary.name})")


def shipped_rule(frequency_s: float, scrape_s: float) -> dict[str, str]:
    """The scored recording rule's expression as the run evaluates it: the chart's rules (the
    shipped file's source, never edited here) rendered with the rate window for the run's
    intervals, as a user with these intervals would; and the shipped file's last commit."""
    import yaml

    from benchmarks.compare.accuracy import RULE, RULES_FILE, rules_for_run

    groups = yaml.safe_load(rules_for_run(frequency_s, scrape_s)).get("groups", [])
    expr = next((r.get("expr", "") for g in groups for r in g.get("rules", [])
                 if r.get("record") == RULE), "")
    return {"record": RULE, "expr": " ".join(str(expr).split()),
            "file": str(RULES_FILE.relative_to(REPO)), "file_state": git_commit(REPO, RULES_FILE)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # a peer's HTTP server sending both Content-Length and chunked: read fine, warned per scrape
    logging.getLogger("urllib3.response").setLevel(logging.ERROR)
    record_dir: Path = (args.from_dir or args.record_dir).resolve()
    wanted = [t for t in args.tools.split(",") if t]
    skipped = {t: r for t in wanted if (r := missing_reason(t)) is not None}
    tools = [t for t in wanted if t not in skipped]
    for t, why in skipped.items():
        print(f"not run: {t}: {why}", file=sys.stderr)
    began = time.monotonic()
    command = " ".join(["python -m benchmarks.compare", *argv])
    status = 0
    if not args.from_dir and not args.skip_accuracy:
        status |= _accuracy(args, tools, wanted, skipped, command, record_dir)
    if not args.from_dir and not args.skip_cost:
        status |= _cost(args, tools, skipped, command, record_dir)
    if not args.no_docs:
        for path in write_all(REPO, plots=True):
            print(f"wrote {path.relative_to(REPO)}")
    print(f"wall time {(time.monotonic() - began) / 60:.1f} min")
    return status


def _accuracy(args: argparse.Namespace, tools: list[str], wanted: list[str],
              skipped: dict[str, str], command: str, record_dir: Path) -> int:
    from devstack.prometheus import prometheus_binary, prometheus_version

    config = HarnessConfig(
        duration_s=args.duration,
        frequency_s=args.frequency,
        threshold_s=args.threshold,
        low_volume_interval_s=45.0 if args.duration >= 300 else 35.0,
        moment_window_s=20.0 if args.duration >= 300 else 10.0,
        mode="compare",
        replicas=args.replicas,
    )
    binary = prometheus_binary()
    record: dict[str, Any] = {
        "format": FORMAT,
        "kind": "accuracy",
        "status": "incomplete",
        "command": command,
        "started": _now(),
        "machine": {**machine_now(), "load_start": machine_now()["load"]},
        "tools": wanted,
        "skipped": skipped,
        "versions": tool_versions(tools),
        "prometheus": f"Prometheus {prometheus_version(binary)} (Debian's package)"
        if binary else "not installed",
        "config": config.__dict__,
        "rules": shipped_rule(config.frequency_s, config.sample_interval_s),
    }
    record["machine"].pop("load", None)

    def on_stack(stack: Any) -> None:
        record["kafka"] = stack.kafka_version
        record["burrow"] = burrow_version(stack.burrow121)

    shapes = standard_shapes(config.duration_s, config.low_volume_interval_s)
    status = 0
    try:
        run, peers, rule = run_accuracy(
            config,
            shapes,
            [t for t in tools if t != "ours"],
            args.out / "work-accuracy",
            args.kafka_version,
            on_stack=on_stack,
        )
        record["run"] = round_run(run.to_json())
        keys = {f"{r.group}/{r.topic}" for r in run.shapes}  # not a peer's own groups
        record["peers"] = round_peers(
            {tool: {k: v for k, v in series.items() if k in keys} for tool, series in peers.items()}
        )
        record["rule"] = {**round_rule({"rule": rule["rule"]}),
                          "grid_after_scrape_s": rule.get("grid_after_scrape_s")}
        record["skipped"] = {**skipped, **rule.get("peers_failed", {})}
        record["sampler_failures"] = rule.get("peer_failures", 0)
        record["scores"] = summary_scores(score_peers(run, peers, rule))
        record["status"] = "complete"
    except Exception as exc:  # a failed run is recorded, and renders as failed
        record["status"] = "failed"
        record["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"
        log.exception("the accuracy run failed")
        status = 1
    record["finished"] = _now()
    record["machine"]["load_end"] = machine_now()["load"]
    record.setdefault("kafka", args.kafka_version or "unknown")
    path = save_record(record_dir, record)
    print(f"record: {path}")
    return status


def _cost(args: argparse.Namespace, tools: list[str], skipped: dict[str, str], command: str,
          record_dir: Path) -> int:
    started, load_start = _now(), machine_now()["load"]
    base = {"format": FORMAT, "kind": "cost", "command": command, "started": started,
            "skipped": skipped, "versions": tool_versions(tools)}
    try:
        cost = run_cost(
            tools,
            args.partitions,
            args.fleet,
            args.fleet_share,
            args.poll,
            args.rounds,
            args.reps,
            args.out / "work-cost",
            args.kafka_version,
            max_replication=args.max_replication,
        )
    except Exception as exc:  # a size the stack cannot hold is a result too: say so
        failed = {
            **base,
            "status": "failed",
            "partitions": args.partitions,
            "fleet": args.fleet,
            "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}",
            "when": _now(),
            "kafka": args.kafka_version or "default",
            "machine": {**machine_now(), "load_start": load_start},
        }
        save_record(record_dir, failed)
        log.exception("the cost run failed")
        return 1
    machine = machine_now()
    cost.update(base)
    cost.update({"status": "complete", "when": _now(), "label": cost_label(
        args.partitions, args.fleet, tools), "machine": {**machine, "load_start": load_start,
                                                         "load_end": machine["load"]}})
    cost.setdefault("kafka", cost.get("kafka_version", "unknown"))
    save_record(record_dir, cost)
    return 0


def cost_label(partitions: int, fleet: int, tools: list[str]) -> str:
    """The saved cost run's name: one file per size (and per tool set when not every tool ran),
    so each run keeps its data."""
    label = str(partitions) if partitions else f"fleet{fleet}"
    return label if list(tools) == list(ALL_TOOLS) else f"{label}-{'-'.join(tools)}"


def load_costs(out: Path) -> list[dict[str, Any]]:
    """Every saved cost run (``cost-*.json``), smallest size first."""
    runs = [json.loads(path.read_text()) for path in out.glob("cost-*.json")]
    def size_then_time(c: dict[str, Any]) -> tuple[int, str]:
        return max((sc["partitions"] for sc in c["scenarios"]), default=0), c.get("when", "")

    return sorted(runs, key=size_then_time)


if __name__ == "__main__":
    sys.exit(main())
