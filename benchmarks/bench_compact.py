"""History compaction: what the small-file layout costs a reader, measured before and after.

    python3 -m benchmarks.bench_compact [--days 3] [--rows-per-cycle 100] [--master local[2]]

The exporter's own sink (`write_snapshot`) writes `--days` days of 30 s cycles for one cluster
(2,880 files a day, `--rows-per-cycle` partitions each). Then, in the same run and on the same
data: read the table with pyarrow (`read_history`) and run the Spark report (`run_report`, the
CLI's code path) over the per-cycle files; `compact_history`; read and report again. Prints the
times and the ratios (small files ÷ compacted). Benchmarks are not tests: nothing is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from freshness_tracker.domain.model import (
    ClusterHealth,
    ClusterSnapshot,
    PartitionKey,
    PartitionResult,
    PartitionStatus,
)
from freshness_tracker.sinks.history import read_history, write_snapshot
from freshness_tracker.sinks.history_compact import compact_history

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
CYCLE_MS = 30_000
CYCLES_PER_DAY = 86_400_000 // CYCLE_MS


def write_days(root: Path, days: int, rows_per_cycle: int) -> int:
    files = 0
    for cycle in range(days * CYCLES_PER_DAY):
        start = START_MS + cycle * CYCLE_MS
        rows = tuple(
            PartitionResult(PartitionKey("east", f"app-{p % 10}", f"topic-{p % 4}", p),
                            PartitionStatus.OK, "OK", 1_000 + cycle, 1_005 + cycle, 5,
                            start - 2_000, start - 20_000 - (p * 997 + cycle * 131) % 90_000,
                            20_000 + (p * 997 + cycle * 131) % 90_000, 1_500)
            for p in range(rows_per_cycle))
        health = ClusterHealth("east", True, start, start + 300, 300)
        write_snapshot(str(root), ClusterSnapshot("east", cycle, start, start + 300, health, rows))
        files += 1
    return files


def timed(fn: Any, reps: int) -> float:
    """Best of `reps`: the machine is noisy, the minimum is the cost."""
    best = float("inf")
    for _ in range(reps):
        began = time.monotonic()
        fn()
        best = min(best, time.monotonic() - began)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--rows-per-cycle", type=int, default=100)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--record", type=Path, metavar="DIR",
                        help="write the run record (what docs/spark.md's compaction figures "
                             "are rendered from) to DIR/bench_compact.json")  # fmt: skip
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from benchmarks.common import RunRecord

    record = RunRecord("bench_compact")
    figures = record.measuring(args.record, lambda: run(args))
    if args.record:
        import pyspark

        ratios = {k: figures.pop(k) for k in ("read_ratio", "report_ratio")}
        path = record.write(args.record, figures, ratios, versions={"pyspark": pyspark.__version__})
        print(f"run record written to {path}")


def run(args: argparse.Namespace) -> dict[str, Any]:

    from freshness_tracker.domain.slo import Objective, parse_target
    from freshness_tracker.spark.report_job import ReportOptions, run_report
    from freshness_tracker.spark.session import get_session

    workdir = Path(tempfile.mkdtemp(prefix="bench-compact-"))
    history = workdir / "history"
    spark = get_session(args.master, "freshness-tracker bench-compact",
                        {"spark.sql.shuffle.partitions": "4"})
    figures: dict[str, Any] = {"days": args.days, "rows_per_cycle": args.rows_per_cycle,
                               "master": args.master}
    try:
        began = time.monotonic()
        figures["files_written"] = write_days(history, args.days, args.rows_per_cycle)
        figures["write_s"] = round(time.monotonic() - began, 1)
        options = ReportOptions(start_ms=START_MS,
                                end_ms=START_MS + args.days * CYCLES_PER_DAY * CYCLE_MS,
                                gap_cycles=3)
        objectives = [Objective(".*", 60_000, parse_target("99%"))]

        def report() -> None:
            run_report(spark, str(history), str(workdir / "report"), objectives, options)

        def read() -> None:
            read_history(str(history))

        report()  # warm-up: Spark's first run pays for query compilation
        figures["small_read_s"] = round(timed(read, args.reps), 2)
        figures["small_report_s"] = round(timed(report, args.reps), 2)
        began = time.monotonic()
        done = compact_history(str(history), before=dt.date(2100, 1, 1))
        figures["compact_s"] = round(time.monotonic() - began, 1)
        figures["partitions_compacted"] = len(done)
        figures["rows"] = sum(d.rows for d in done)
        figures["compacted_read_s"] = round(timed(read, args.reps), 2)
        figures["compacted_report_s"] = round(timed(report, args.reps), 2)
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    f = figures
    f["read_ratio"] = round(f["small_read_s"] / f["compacted_read_s"], 1)
    f["report_ratio"] = round(f["small_report_s"] / f["compacted_report_s"], 1)
    print(json.dumps(figures, indent=2))
    print(f"\n{f['files_written']:,} cycle files ({f['rows']:,} rows) → "
          f"{f['partitions_compacted']} files in {f['compact_s']} s. Reading the table: "
          f"{f['read_ratio']}× faster compacted (pyarrow); the Spark report: "
          f"{f['report_ratio']}× faster")
    return figures


if __name__ == "__main__":
    main()
