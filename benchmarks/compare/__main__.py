"""``python -m benchmarks.compare``: freshness-tracker beside the tools users would pick instead.

Accuracy (the accuracy harness's six shapes, ground truth and scoring, with the peers scraped
beside ours on a one-node stack) and cost (each tool in turn on the 3-node proxied stack, same
groups, same poll interval); writes ``build/compare/accuracy.json`` and one
``build/compare/cost-<partitions>.json`` per size, and regenerates
``docs/comparison.md`` with ``docs/img/compare-*.png``.

    python -m benchmarks.compare                      # ~25 min: both parts, rewrites the page
    python -m benchmarks.compare --skip-cost --duration 120   # a quick accuracy look
    python -m benchmarks.compare --from build/compare  # re-render the page from saved runs

Peers' binaries: FT_KLAG_BIN, FT_KAFKA_EXPORTER_BIN, or benchmarks/compare/build_peers.sh's
~/.cache/freshness-tracker/peers. A missing one is reported as not run; nothing else changes.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.accuracy.harness import HarnessConfig, RunData
from benchmarks.accuracy.shapes import standard_shapes
from benchmarks.compare.accuracy import pre_onset_rate, run_accuracy, score_peers
from benchmarks.compare.cost import run_cost
from benchmarks.compare.page import render
from benchmarks.compare.peers import missing_reason

REPO = Path(__file__).resolve().parents[2]
ALL_TOOLS = ("ours", "klag_message", "klag_rate", "kafka_exporter")


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
    p.add_argument("--kafka-version", help="devstack's Kafka (default 3.9.1 + Burrow 1.2.1)")
    p.add_argument("--out", type=Path, default=REPO / "build" / "compare")
    p.add_argument("--docs", type=Path, default=REPO / "docs" / "comparison.md")
    p.add_argument("--no-docs", action="store_true")
    p.add_argument(
        "--from",
        dest="from_dir",
        type=Path,
        help="render from the accuracy.json / cost-*.json saved in this directory",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    out: Path = (args.from_dir or args.out).resolve()  # peers run with their own cwd
    out.mkdir(parents=True, exist_ok=True)
    wanted = [t for t in args.tools.split(",") if t]
    skipped = {t: r for t in wanted if (r := missing_reason(t)) is not None}
    tools = [t for t in wanted if t not in skipped]
    for t, why in skipped.items():
        print(f"not run: {t}: {why}", file=sys.stderr)
    began = time.monotonic()
    if not args.from_dir and not args.skip_accuracy:
        config = HarnessConfig(
            duration_s=args.duration,
            frequency_s=args.frequency,
            threshold_s=args.threshold,
            low_volume_interval_s=45.0 if args.duration >= 300 else 35.0,
            moment_window_s=20.0 if args.duration >= 300 else 10.0,
            mode="compare",
        )
        shapes = standard_shapes(config.duration_s, config.low_volume_interval_s)
        run, peers = run_accuracy(
            config,
            shapes,
            [t for t in tools if t != "ours"],
            out / "work-accuracy",
            args.kafka_version,
        )
        (out / "accuracy.json").write_text(
            json.dumps(
                {
                    "run": run.to_json(),
                    "peers": peers,
                    "skipped": skipped,
                    "when": datetime.now(UTC).isoformat(timespec="seconds"),
                }
            )
        )
    if not args.from_dir and not args.skip_cost:
        try:
            cost = run_cost(
                tools,
                args.partitions,
                args.fleet,
                args.fleet_share,
                args.poll,
                args.rounds,
                args.reps,
                out / "work-cost",
                args.kafka_version,
            )
        except Exception as exc:  # a size the stack cannot hold is a result too: say so
            failed = {
                "partitions": args.partitions,
                "fleet": args.fleet,
                "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}",
                "when": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            (out / f"failed-cost-{args.partitions}.json").write_text(json.dumps(failed))
            raise
        cost["skipped"] = skipped
        cost["when"] = datetime.now(UTC).isoformat(timespec="seconds")
        label = cost_label(args.partitions, args.fleet, tools)
        (out / f"cost-{label}.json").write_text(json.dumps(cost))
        (out / f"failed-cost-{args.partitions}.json").unlink(missing_ok=True)
    acc_data = _load(out / "accuracy.json")
    costs = load_costs(out)
    shapes_scored = None
    run_data = None
    if acc_data is not None:
        run_data = _run_from_json(acc_data["run"])
        rates = {
            r.shape.name: rate
            for r in run_data.shapes
            if (rate := pre_onset_rate(r.shape)) is not None
        }
        shapes_scored = score_peers(run_data, acc_data["peers"], rates)
    measured = {sc["partitions"] for c in costs for sc in c["scenarios"]}
    failures = [
        f
        for path in sorted(out.glob("failed-cost-*.json"))
        if (f := json.loads(path.read_text()))["partitions"] not in measured
    ]
    page, readme = render(
        run_data,
        shapes_scored,
        acc_data,
        costs,
        REPO / "docs" / "img",
        plots=not args.no_docs,
        failed=failures,
    )
    print(page)
    print("\n---- README table ----\n" + readme)
    if not args.no_docs:
        args.docs.parent.mkdir(parents=True, exist_ok=True)
        args.docs.write_text(page)
        print(f"\ndocs: {args.docs}")
    print(f"wall time {(time.monotonic() - began) / 60:.1f} min")
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


def _load(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _run_from_json(d: dict[str, Any]) -> RunData:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(d, f)
    path = Path(f.name)
    try:
        return RunData.load(path)
    finally:
        path.unlink()


if __name__ == "__main__":
    sys.exit(main())
