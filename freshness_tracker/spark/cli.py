"""`freshness-tracker spark snapshot|report`: argument parsing and exit codes only.

pyspark is imported when a command runs, not here, so `--help` works without the extra.
Exit codes as elsewhere: 0 success, 1 a cluster failed (snapshot) or no data (report), 2 usage
or configuration error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import re
import time
from typing import Any

from freshness_tracker.errors import ConfigError
from freshness_tracker.reference import parse_duration

__all__ = ["add_spark_commands", "parse_time_ms"]

log = logging.getLogger("freshness_tracker.spark")

_RELATIVE = re.compile(r"^now\s*(?:-\s*(.+))?$")


def parse_time_ms(text: str, *, now_ms: int | None = None) -> int:
    """Epoch ms from ISO 8601 (naive means UTC), epoch milliseconds, `now` or `now-7d`."""
    value = text.strip()
    relative = _RELATIVE.match(value.lower())
    if relative:
        now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
        back = relative.group(1)
        return now - int(parse_duration(back, "time") * 1000) if back else now
    if value.isdigit():
        return int(value)
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time; use ISO 8601 (2024-01-31T12:00Z), epoch ms, now or now-7d"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return int(parsed.timestamp() * 1000)


def _duration_ms(text: str) -> int:
    try:
        return int(parse_duration(text, "duration") * 1000)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_spark_commands(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="spark_command", required=True)
    snap = sub.add_parser("snapshot", help="one fleet-wide cycle with the Kafka reads in Spark "
                                           "executors, appended to the history table")
    snap.add_argument("--config", required=True, help="the exporter's HOCON config file")
    snap.add_argument("--history", help="history table root (default: history.path)")
    snap.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    snap.add_argument("--cycle-time", type=parse_time_ms, metavar="TIME",
                      help="logical cycle start (ISO 8601 or epoch ms): re-running the same "
                           "cycle time replaces its rows instead of adding new ones")
    snap.add_argument("--max-tasks", type=int, help="Spark tasks per cluster (default: the "
                                                    "default parallelism)")
    snap.add_argument("--every", type=_duration_ms, metavar="DURATION",
                      help="keep running, one cycle every DURATION, in one Spark application: "
                           "its executors and Python workers (with their Kafka consumers) stay "
                           "warm between cycles instead of a cold start per run")
    snap.add_argument("--cycles", type=int, metavar="N",
                      help="with --every: stop after N cycles (default: run until stopped)")
    snap.set_defaults(spark_handler=_snapshot)

    rep = sub.add_parser("report", help="SLO report over the history table: Parquet, CSV, HTML")
    rep.add_argument("--history", required=True, help="history table root")
    rep.add_argument("--from", dest="start", required=True, type=parse_time_ms, metavar="T1",
                     help="window start, inclusive (ISO 8601, epoch ms, now-30d)")
    rep.add_argument("--to", dest="end", required=True, type=parse_time_ms, metavar="T2",
                     help="window end, exclusive")
    rep.add_argument("--objectives", help="HOCON list of { consumer, topic?, freshness, target }")
    rep.add_argument("--out", required=True, help="output directory")
    rep.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    rep.add_argument("--gap-cycles", type=float, default=3.0,
                     help="a gap longer than this many cycles counts as no data (default 3)")
    rep.add_argument("--cycle", type=_duration_ms, metavar="DURATION",
                     help="cycle length (default: inferred per series from its samples)")
    rep.add_argument("--worst", type=int, default=6, help="consumers charted (default 6)")
    rep.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING"],
                     help="level of the report's log lines (default INFO: each stage's start "
                          "and end)")
    rep.set_defaults(spark_handler=_report)


def _spark_missing() -> int:
    print("the spark commands need the spark extra: pip install 'freshness-tracker[spark]'")  # noqa: T201
    return 1


def _snapshot(args: argparse.Namespace) -> int:
    from freshness_tracker.config import load_settings
    from freshness_tracker.logs import configure_logging

    settings = load_settings(args.config)
    configure_logging(settings.log_level, settings.log_format)
    for warning in settings.warnings:
        log.warning("config %s", warning)
    history = args.history or settings.history_path
    if not history:
        raise ConfigError("history.path", "no history table given",
                          "pass --history PATH or set history.path")
    try:
        import pyspark  # noqa: F401

        from freshness_tracker.spark.session import get_session
    except ImportError:
        return _spark_missing()
    if args.every is not None and args.cycle_time is not None:
        raise ConfigError("--every", "a repeating run has no single --cycle-time",
                          "drop --cycle-time (each cycle starts at its own time)")
    if args.every is not None and args.every <= 0:
        raise ConfigError("--every", "the interval must be positive", "e.g. --every 60s")
    spark = get_session(args.master, "freshness-tracker snapshot")
    if args.every is None:
        return _snapshot_once(spark, settings, history, args)
    from freshness_tracker.spark.snapshot_job import keep_warm

    ok, done, every_s = True, 0, args.every / 1000
    next_at = time.monotonic()
    try:
        while True:
            ok = _snapshot_once(spark, settings, history, args) == 0 and ok
            done += 1
            if args.cycles is not None and done >= args.cycles:
                break
            next_at += every_s
            if next_at < time.monotonic():
                log.warning("snapshot cycle took longer than --every %.1f s; next one now",
                            every_s)
                next_at = time.monotonic()
            keep_warm(spark, until=next_at)
    except KeyboardInterrupt:
        log.info("snapshot stopped after %d cycles", done)
    return 0 if ok else 1


def _snapshot_once(spark: Any, settings: Any, history: str, args: argparse.Namespace) -> int:
    from freshness_tracker.spark.snapshot_job import run_snapshot

    result = run_snapshot(spark, settings, history, cycle_time_ms=args.cycle_time,
                          max_tasks=args.max_tasks)
    for snap in result.snapshots:
        h = snap.health
        error = f" error={h.error!r}" if h.error else ""
        pids = result.lookups.get(snap.cluster, {}).get("worker_pids", [])
        print(f"cluster={snap.cluster} up={str(h.up).lower()} groups={h.groups} "  # noqa: T201
              f"partitions={h.partitions} reads={h.kafka_reads} failures={h.kafka_read_failures}"
              f" python_workers={','.join(map(str, pids)) or '-'}"
              f" file={result.files.get(snap.cluster)}{error}")
    return 0 if result.ok else 1


def _report(args: argparse.Namespace) -> int:
    from freshness_tracker.logs import configure_logging

    configure_logging(args.log_level)
    if args.end <= args.start:
        raise ConfigError("--to", "the window ends before it starts", "pass --from < --to")
    try:
        import pyspark  # noqa: F401

        from freshness_tracker.spark.objectives import load_objectives
        from freshness_tracker.spark.report_job import ReportOptions, run_report
        from freshness_tracker.spark.session import get_session
    except ImportError:
        return _spark_missing()
    from freshness_tracker.spark.report_html import CHARTS_MISSING, charts_available

    objectives = load_objectives(args.objectives) if args.objectives else []
    if not charts_available():  # said before the work, not found after it
        log.warning(CHARTS_MISSING)
    spark = get_session(args.master, "freshness-tracker report")
    options = ReportOptions(start_ms=args.start, end_ms=args.end, gap_cycles=args.gap_cycles,
                            cycle_ms=args.cycle, worst=args.worst)
    summary: Any = run_report(spark, args.history, args.out, objectives, options)
    print(summary.line())  # noqa: T201
    return 0 if summary.rows else 1
