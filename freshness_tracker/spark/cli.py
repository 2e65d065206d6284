"""`freshness-tracker spark snapshot|report`: argument parsing and exit codes only.

pyspark is imported when a command runs, not here, so `--help` works without the extra.
Exit codes as elsewhere: 0 success, 1 a cluster failed (snapshot) or no data (report), 2 usage
or configuration error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import re
import time
from fractions import Fraction
from typing import Any

from freshness_tracker.domain.slo import DEFAULT_MIN_COVERAGE, parse_target
from freshness_tracker.errors import ConfigError
from freshness_tracker.logs import logfmt_value
from freshness_tracker.reference import parse_duration

__all__ = ["add_spark_commands", "parse_time_ms"]

log = logging.getLogger("freshness_tracker.spark")

_RELATIVE = re.compile(r"^now\s*(?:-\s*(.+))?$")


def parse_time_ms(text: str, *, now_ms: int | None = None) -> int:
    """Epoch ms from ISO 8601 (naive means UTC), epoch milliseconds, `now` or `now-7d`."""
    value = text.strip()
    wrong = argparse.ArgumentTypeError(
        f"{text!r} is not a time; use ISO 8601 (2024-01-31T12:00Z), epoch ms, now or now-7d")
    relative = _RELATIVE.match(value.lower())
    if relative:
        now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
        back = relative.group(1)
        try:
            return now - int(parse_duration(back, "time") * 1000) if back else now
        except ConfigError:
            raise wrong from None
    if value.isdigit():
        return int(value)
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise wrong from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return int(parsed.timestamp() * 1000)


def _duration_ms(text: str) -> int:
    try:
        return int(parse_duration(text, "duration") * 1000)
    except ConfigError as exc:  # the person's own command line: quoting it back helps
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration; {exc.fix}") from None


def _share(text: str) -> Fraction:
    try:
        return parse_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_spark_commands(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="spark_command", required=True)
    snap = sub.add_parser("snapshot", help="one fleet-wide cycle with the Kafka reads in Spark "
                                           "executors, appended to the history table")
    snap.add_argument("--config", required=True, help="the exporter's config file (HOCON, or "
                                                      "the Consumer Freshness Tracker's YAML)")
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
    rep.add_argument("--history", required=True, help="history table root (an existing folder, "
                                                      "or a URI Spark reads: s3a://, hdfs://)")
    rep.add_argument("--from", dest="start", required=True, type=parse_time_ms, metavar="T1",
                     help="window start, inclusive (ISO 8601, epoch ms, now-30d)")
    rep.add_argument("--to", dest="end", required=True, type=parse_time_ms, metavar="T2",
                     help="window end, exclusive (ISO 8601, epoch ms, now)")
    rep.add_argument("--objectives", help="HOCON file listing { consumer, topic?, freshness, "
                                          "target } (default: none, no verdicts)")
    rep.add_argument("--out", required=True, help="output folder (created when missing): "
                                                  "report.html, a Parquet and a CSV per table, "
                                                  "charts/")
    rep.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    rep.add_argument("--gap-cycles", type=float, default=3.0,
                     help="a gap longer than this many cycles counts as no data (default 3)")
    rep.add_argument("--cycle", type=_duration_ms, metavar="DURATION",
                     help="cycle length (default: inferred per series from its samples)")
    rep.add_argument("--min-coverage", type=_share, default=DEFAULT_MIN_COVERAGE, metavar="SHARE",
                     help="the share of the window a series needs data for to be judged met or "
                          "missed (e.g. 50%%, the default); with less it is 'insufficient "
                          "data', unless its measured breaches alone exceed the window's error "
                          "budget")
    rep.add_argument("--worst", type=int, default=6, help="consumers charted (default 6)")
    rep.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING"],
                     help="level of the report's log lines (default INFO: each stage's start "
                          "and end)")
    rep.set_defaults(spark_handler=_report)


def _spark_missing() -> int:
    print("the spark commands need the spark extra: pip install 'freshness-tracker[spark]'")  # noqa: T201
    return 1


def _local_path(text: str) -> str | None:
    """The local path `text` names, None for another file system's URI (s3://, hdfs://...),
    which only Spark can look into."""
    if text.startswith("file://"):
        return text[len("file://"):]
    return None if "://" in text else text


def _positive(key: str, value: float | None, example: str, *, zero_ok: bool = False) -> None:
    if value is not None and (value < 0 or (value == 0 and not zero_ok)):
        kind = "not be negative" if zero_ok else "be positive"
        raise ConfigError(key, f"must {kind}, got {value:g}", f"e.g. {key} {example}")


def _check_snapshot_args(args: argparse.Namespace, history: str) -> None:
    """Every argument check that needs no Spark, made before a JVM starts: a mistake costs
    one line, not a JVM start and its stack trace."""
    if args.every is not None and args.cycle_time is not None:
        raise ConfigError("--every", "a repeating run has no single --cycle-time",
                          "drop --cycle-time (each cycle starts at its own time)")
    _positive("--every", args.every, "60s")
    if args.cycles is not None and args.every is None:
        raise ConfigError("--cycles", "counts the cycles of a repeating run",
                          "add --every DURATION, or drop --cycles")
    _positive("--cycles", args.cycles, "10")
    _positive("--max-tasks", args.max_tasks, "4")
    local = _local_path(history)
    if local is not None and os.path.exists(local) and not os.path.isdir(local):
        raise ConfigError("--history", f"{history} is a file, not a history table folder",
                          "pass a folder (it is created when missing)")


def _check_report_args(args: argparse.Namespace) -> None:
    """As `_check_snapshot_args`, for `spark report`."""
    if args.end <= args.start:
        raise ConfigError("--to", "the window ends before it starts", "pass --from < --to")
    _positive("--gap-cycles", args.gap_cycles, "3")
    _positive("--worst", args.worst, "6", zero_ok=True)
    local = _local_path(args.history)
    if local is not None and not os.path.isdir(local):
        problem = "is a file" if os.path.exists(local) else "does not exist"
        raise ConfigError("--history", f"no history table at {args.history}: it {problem}",
                          "pass the folder the exporter's history.path or `spark snapshot "
                          "--history` writes to")
    out = _local_path(args.out)
    if out is not None and os.path.exists(out) and not os.path.isdir(out):
        raise ConfigError("--out", f"{args.out} is a file", "pass a folder (it is created "
                          "when missing)")


def _snapshot(args: argparse.Namespace) -> int:
    from freshness_tracker.config import load_settings
    from freshness_tracker.logs import configure_logging

    settings = load_settings(args.config)
    history = args.history or settings.history_path
    if not history:
        raise ConfigError("history.path", "no history table given",
                          "pass --history PATH or set history.path")
    _check_snapshot_args(args, history)
    configure_logging(settings.log_level, settings.log_format)
    for warning in settings.warnings:
        log.warning("config %s", warning)
    try:
        import pyspark  # noqa: F401

        from freshness_tracker.spark.session import get_session
    except ImportError:
        return _spark_missing()
    from freshness_tracker.spark.snapshot_job import Snapshotter, keep_warm

    spark = get_session(args.master, "freshness-tracker snapshot")
    # one Snapshotter for every cycle: its measurers count cycles and its cache keeps the
    # timestamps already read (an offset that did not move is not read again)
    snapshotter = Snapshotter(spark, settings, history, max_tasks=args.max_tasks)
    try:
        if args.every is None:
            return _snapshot_once(snapshotter, args.cycle_time)
        ok, done, every_s = True, 0, args.every / 1000
        next_at = time.monotonic()
        try:
            while True:
                ok = _snapshot_once(snapshotter, None) == 0 and ok
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
    finally:
        snapshotter.close()


def _snapshot_once(snapshotter: Any, cycle_time_ms: int | None) -> int:
    """One cycle, one line per cluster: `worker_pids` are the process ids of the Python
    workers that answered its Kafka reads (`-` when every read came from the cache)."""
    result = snapshotter.run(cycle_time_ms)
    for snap in result.snapshots:
        pids = result.lookups.get(snap.cluster, {}).get("worker_pids", [])
        print(cycle_line(snap, pids, result.files.get(snap.cluster)))  # noqa: T201
    return 0 if result.ok else 1


def cycle_line(snap: Any, pids: list[int], file: str | None) -> str:
    """One cluster's cycle as one logfmt line: the cluster name (a config's or Burrow's), the
    file and the error are logfmt values, so no name can split or forge the line."""
    h = snap.health
    error = f" error={logfmt_value(h.error)}" if h.error else ""
    return (f"cluster={logfmt_value(snap.cluster)} cycle={snap.cycle_id} "
            f"up={str(h.up).lower()} groups={h.groups} partitions={h.partitions} "
            f"reads={h.kafka_reads} cache_hits={h.cache_hits} failures={h.kafka_read_failures}"
            f" worker_pids={','.join(map(str, pids)) or '-'}"
            f" file={logfmt_value(str(file))}{error}")


def _report(args: argparse.Namespace) -> int:
    from freshness_tracker.logs import configure_logging

    _check_report_args(args)
    configure_logging(args.log_level)
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
                            cycle_ms=args.cycle, worst=args.worst,
                            min_coverage=args.min_coverage)
    summary: Any = run_report(spark, args.history, args.out, objectives, options)
    print(summary.line())  # noqa: T201
    return 0 if summary.rows else 1
