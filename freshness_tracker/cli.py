"""Command line: run | once | check | history | rules | spark. The only module that prints.

Exit codes: 0 success, 1 a cluster failed (`once`, `check`), 2 configuration error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import errno
import logging
import os
import signal
import ssl
import sys
import threading
import time
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

from freshness_tracker import __version__
from freshness_tracker.config import load_settings
from freshness_tracker.config.kafka_properties import validate_kafka_properties
from freshness_tracker.config.load import user_config_as_hocon
from freshness_tracker.config.settings import Settings, require_files
from freshness_tracker.domain.names import printable
from freshness_tracker.errors import ConfigError, FreshnessTrackerError
from freshness_tracker.logs import configure_logging

if TYPE_CHECKING:
    from freshness_tracker.app import SnapshotSink
    from freshness_tracker.service import Service

__all__ = ["main"]

log = logging.getLogger("freshness_tracker")

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2


#: Every --config: both formats `load_settings` reads.
CONFIG_HELP = ("config file: HOCON, or YAML in the Consumer Freshness Tracker's format "
               "(`check --print-hocon` converts it)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="freshness-tracker",
        description="Export how far behind, in time, every Kafka consumer group is.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="measure every cycle and serve / (status page), /metrics, "
                                     "/healthz and /readyz until SIGTERM; SIGHUP reloads the "
                                     "config; appends to history.path when set")
    run.add_argument("--config", required=True, help=CONFIG_HELP)
    once = sub.add_parser("once", help="one cycle: print the result and exit (1 when a cluster "
                                       "failed); appends to history.path when set")
    once.add_argument("--config", required=True, help=CONFIG_HELP)
    once.add_argument("--format", choices=["prometheus", "json", "table"], default="prometheus",
                      help="prometheus: the text /metrics serves (default); json: the whole "
                           "snapshot, health included; table: one row per partition, to read")
    check = sub.add_parser("check", help="validate the config and reach Burrow and every cluster")
    check.add_argument("--config", required=True, help=CONFIG_HELP)
    check.add_argument("--print-hocon", action="store_true", help="print the config file as "
                       "HOCON (a YAML file in the Consumer Freshness Tracker's format converted) "
                       "and exit")
    history = sub.add_parser("history", help="maintain the history table (history extra)")
    history_sub = history.add_subparsers(dest="history_command", required=True)
    compact = history_sub.add_parser(
        "compact", help="rewrite each closed day's cycle files into one file per cluster",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Rewrite every date=D/cluster=C/ partition of a day before --before into "
                    "one zstd Parquet\nfile: the cycle files of every writer (exporter-<host>, "
                    "spark, and unnamed older\nfiles) are folded in, nothing lost or doubled, "
                    "and readers never see a row twice.",
        epilog="How: the new file is written and its row count checked under "
               "<root>/_compaction/<token>/,\noutside every documented query (Spark and "
               "pyarrow skip _ names; the DuckDB glob\ndate=*/cluster=*/ never reaches it). "
               "On a local, NFS or mounted path two renames swap\nthe partition; on an object "
               "store (s3://, gs://, abfs://) a plan is written, then the\nsources are deleted "
               "and the file is copied in. A hidden .compaction.json names the\nfolded files "
               "(writing a compacted cycle again is refused), a file a writer adds\nmeanwhile is "
               "kept, and the next run repairs an interrupted one. See docs/spark.md.")
    compact.add_argument("--history", required=True,
                         help="history table root: a local, NFS or mounted path, or a URI "
                              "pyarrow's filesystems understand (s3://, gs://, abfs://, hdfs://)")
    compact.add_argument("--before", type=dt.date.fromisoformat, metavar="YYYY-MM-DD",
                         help="compact the days before this date (default: yesterday, UTC: "
                              "today and yesterday stay open for late writes)")
    compact.add_argument("--dry-run", action="store_true",
                         help="list the partitions and files that would be folded; change "
                              "nothing")
    rules = sub.add_parser(
        "rules", help="print Prometheus recording rules and burn-rate alerts for freshness "
                      "objectives (the Spark report's objectives file)")
    rules.add_argument("--objectives", required=True,
                       help="HOCON file listing { consumer, topic?, freshness, target }")
    rules.add_argument("--job", help="select only this Prometheus job's series (default: any)")
    rules.add_argument("--rate-window", metavar="DURATION",
                       help="carry each group's freshness forward between cycles at the rate "
                            "it grew over this window (default: 2m; at least three times the "
                            "scrape interval and the exporter's frequency_sec)")
    rules.add_argument("--frequency", metavar="SECONDS", type=float,
                       help="the exporter's frequency_sec: a wait shorter than one cycle is "
                            "not carried forward (default: reference.conf's)")
    rules.add_argument("--format", choices=["rules", "helm-values"], default="rules",
                       help="a Prometheus rules file (default), or chart values setting "
                            "prometheusRule.extraGroups")
    spark = sub.add_parser("spark", help="the Spark data pipeline (needs the spark extra)")
    try:
        from freshness_tracker.spark.cli import add_spark_commands
    except ImportError:
        pass
    else:
        add_spark_commands(spark)
    return p


def _settings(path: str, *, log_warnings: bool = True) -> Settings:
    settings = load_settings(path)
    require_files(settings)
    validate_kafka_properties(settings)
    configure_logging(settings.log_level, settings.log_format)
    for warning in settings.warnings if log_warnings else ():
        log.warning("config %s", warning)
    if settings.from_yaml:  # known from the loader's one bounded read of the file
        log.info("config %s is YAML (the Consumer Freshness Tracker's format), read as such; "
                 "`freshness-tracker check --config %s --print-hocon` prints it as HOCON",
                 path, path)
    return settings


class _Signals:
    """SIGTERM/SIGINT stop; SIGHUP asks for a config reload (as Prometheus and Burrow do, not
    its default action, which kills the process). Each wakes the main thread."""

    def __init__(self) -> None:
        self.wake = threading.Event()
        self.stop = threading.Event()
        self.reload = threading.Event()
        self.stopped_at: list[float] = []
        signal.signal(signal.SIGHUP, self._reload)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)

    def _stop(self, signum: int, _frame: FrameType | None) -> None:
        log.info("signal=%s stopping", signal.Signals(signum).name)
        if not self.stopped_at:
            self.stopped_at.append(time.monotonic())
            # The last word: whatever a shutdown step blocks in (a client library's close()),
            # the process is gone within 5 s of the signal.
            timer = threading.Timer(HARD_EXIT_S, _hard_exit)
            timer.name = HARD_EXIT_THREAD  # not work in flight: never waited for
            timer.daemon = True
            timer.start()
        self.stop.set()
        self.wake.set()

    def _reload(self, _signum: int, _frame: FrameType | None) -> None:
        self.reload.set()
        self.wake.set()


def cmd_run(args: argparse.Namespace) -> int:
    signals = _Signals()  # first of all: a SIGHUP during startup must not kill the process
    from freshness_tracker.service import Service

    settings = _settings(args.config)
    try:
        service = Service(settings, _history_sinks)
    except OSError as exc:
        raise _listener_error(settings, exc) from exc
    log.info("listening address=%s port=%d clusters=%s", settings.web.listen_address,
             service.server.port, ",".join(c.name for c in settings.clusters))
    try:
        while not signals.stop.is_set():
            signals.wake.wait()
            signals.wake.clear()
            if signals.reload.is_set() and not signals.stop.is_set():
                signals.reload.clear()
                _reload(service, args.config)
    finally:
        service.stop()
    log.info("stopped")
    _exit_if_work_in_flight(EXIT_OK, signals.stopped_at)
    return EXIT_OK


def _reload(service: Service, path: str) -> None:
    """Apply the config file again; on any error say why, in one line, and keep running."""
    try:
        settings = _settings(path)
        try:
            done = service.reload(settings)
        except OSError as exc:
            raise _listener_error(settings, exc) from exc
    except Exception as exc:  # whatever it is, the running exporter must survive it
        log.error("config reload failed: %s; still running with the previous config",
                  " ".join(str(exc).split()) or type(exc).__name__)
        return
    log.info("config reloaded (%s) clusters=%s frequency_sec=%g", done,
             ",".join(c.name for c in settings.clusters), settings.frequency_s)


#: SIGTERM must end the process within 5 s. A Burrow request or a Kafka batch in flight can
#: take timeout x attempts, and Python joins every pool thread at exit (daemon or not: pool
#: threads started by the daemon cycle threads are daemon, yet still joined), so whatever is
#: still running this long after the signal is abandoned instead of awaited.
EXIT_DEADLINE_S = 3.5
#: ...and if a shutdown step itself blocks (closing a client that hangs), the process exits
#: anyway this long after the first stop signal.
HARD_EXIT_S = 4.5


def _hard_exit() -> None:
    log.error("shutdown still blocked %.1f s after the stop signal; exiting now", HARD_EXIT_S)
    logging.shutdown()
    sys.stdout.flush()
    os._exit(EXIT_OK)


#: The hard-exit timer's thread: it runs until the process ends, so it is not awaited.
HARD_EXIT_THREAD = "hard-exit-timer"


def _exit_if_work_in_flight(code: int, stopped_at: list[float]) -> None:
    began = stopped_at[0] if stopped_at else time.monotonic()
    deadline = began + EXIT_DEADLINE_S
    me = threading.current_thread()
    others = [t for t in threading.enumerate() if t is not me and t.name != HARD_EXIT_THREAD]
    for thread in others:
        thread.join(max(deadline - time.monotonic(), 0.0))
    busy = sorted(t.name for t in others if t.is_alive())
    if busy:
        log.info("exiting with %d thread(s) still busy: %s", len(busy), ", ".join(busy))
        logging.shutdown()
        sys.stdout.flush()
        os._exit(code)


def _listener_error(settings: Settings, exc: OSError) -> ConfigError:
    """A listener that cannot start is a configuration problem: name the key to fix."""
    web = settings.web
    reason = " ".join(str(exc.strerror or exc).split())
    if isinstance(exc, ssl.SSLError):
        return ConfigError("web.tlsCertFile", f"cannot load the certificate and key: {reason}",
                           "give a PEM certificate and its matching private key")
    where = f"{web.listen_address}:{web.port}"
    if exc.errno == errno.EADDRINUSE:
        return ConfigError("port", f"{where} is already in use",
                           "choose a free port or stop the other listener")
    return ConfigError("listenAddress", f"cannot listen on {where}: {reason}",
                       "use an address of this host, e.g. 0.0.0.0 or 127.0.0.1")


def _history_sinks(settings: Settings) -> list[SnapshotSink]:
    if not settings.history_path:
        return []
    from freshness_tracker.sinks.history import HistorySink

    return [HistorySink(settings.history_path, shard=settings.shard)]


def _for_terminal(text: str) -> str:
    """`text` as written into a pipe or a file; on a terminal, every line with its control
    characters escaped (`printable`), as `ls` and git show names: a label value may hold an
    escape sequence from a Burrow name, which the exposition format carries as it is."""
    if not sys.stdout.isatty():
        return text
    return "\n".join(printable(line) for line in text.split("\n"))


def cmd_once(args: argparse.Namespace) -> int:
    from freshness_tracker.app import Exporter
    from freshness_tracker.sinks.render import render_json, render_table

    settings = _settings(args.config)
    exporter = Exporter(settings, sinks=_history_sinks(settings))
    try:
        snapshot = exporter.run_once()
    finally:
        exporter.close()
    if args.format == "json":
        print(render_json(snapshot))
    elif args.format == "table":
        print(render_table(snapshot))
    else:  # the bytes /metrics serves: the same render (sinks/exposition.py), text 0.0.4
        print(_for_terminal(exporter.exposition.answer().body.decode()), end="")
    return EXIT_OK if all(c.health.up for c in snapshot.clusters) else EXIT_FAILED


def cmd_check(args: argparse.Namespace) -> int:
    from freshness_tracker.check import run_checks

    if args.print_hocon:
        print(user_config_as_hocon(args.config), end="")
        return EXIT_OK
    settings = _settings(args.config, log_warnings=False)  # check prints them as results
    counts = {"ok": 0, "warn": 0, "FAIL": 0}
    for result in run_checks(settings):
        print(f"{result.outcome:<6}{printable(result.message)}")  # names from Burrow
        counts[result.outcome] += 1
    warned = f" ({counts['warn']} warning(s))" if counts["warn"] else ""
    if counts["FAIL"]:
        print(f"{counts['FAIL']} check(s) failed{warned}")
        return EXIT_FAILED
    print(f"all checks passed{warned}")  # a warning alone is no failure: the exporter runs
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    try:
        from freshness_tracker.sinks.history_compact import compact_history
    except ImportError:
        print("history compaction needs the history extra: "
              "pip install 'freshness-tracker[history]'", file=sys.stderr)
        return EXIT_FAILED
    before = args.before or dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    done = compact_history(args.history, before=before, dry_run=args.dry_run)
    verb = "would compact" if args.dry_run else "compacted"
    for part in done:
        print(f"{verb} {part.path}: {part.files_in} files, {part.rows} rows")
    print(f"{verb} {len(done)} partition(s) of days before {before.isoformat()}")
    if done.problems:  # each already said in one line; a CronJob must not pass them as done
        print(f"left {len(done.problems)} thing(s) in the table as they were: see above",
              file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def cmd_rules(args: argparse.Namespace) -> int:
    from freshness_tracker.objective_rules import FREQUENCY_S, RATE_WINDOW, render_rules
    from freshness_tracker.spark.objectives import load_objectives

    objectives = load_objectives(args.objectives)
    print(render_rules(objectives, job=args.job, source=args.objectives,
                       helm_values=args.format == "helm-values",
                       rate_window=args.rate_window or RATE_WINDOW,
                       frequency_s=FREQUENCY_S if args.frequency is None else args.frequency),
          end="")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    commands = {"run": cmd_run, "once": cmd_once, "check": cmd_check,
                "history": cmd_history, "rules": cmd_rules}
    try:
        if args.command == "spark":
            handler = getattr(args, "spark_handler", None)
            if handler is None:
                print("the spark commands need the spark extra: "
                      "pip install 'freshness-tracker[spark]'", file=sys.stderr)
                return EXIT_FAILED
            return int(handler(args))
        return commands[args.command](args)
    except ConfigError as exc:  # one line each: a name or a body excerpt in it is escaped
        print(f"config error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_CONFIG
    except FreshnessTrackerError as exc:
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_OK
