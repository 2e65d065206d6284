"""The SparkSession: embedded `local[*]` by default, whatever spark-submit says on a cluster.

Local masters get the settings measured to matter on small machines (docs/spark.md). On every
master, unless the user set them: the Python workers run this driver's interpreter
(`PYSPARK_PYTHON`; `python3` from PATH has no freshness_tracker), shuffles are sized to the
cores (`spark.sql.shuffle.partitions`, not Spark's 200) with adaptive execution coalescing
small partitions, and a Python worker's failure is reported with its whole traceback.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["LOCAL_CONF", "TEST_JVM_OPTIONS", "get_session"]

log = logging.getLogger(__name__)

#: For embedded local runs: no UI, loopback only, Arrow, UTC, shuffle sized for one machine.
LOCAL_CONF: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.catalogImplementation": "in-memory",
    "spark.python.worker.reuse": "true",
    "spark.ui.showConsoleProgress": "false",  # the jobs log a line per stage instead
}

#: Applied everywhere (they are what the jobs assume, not tuning).
JOB_CONF: Mapping[str, str] = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.debug.maxToStringFields": "100",  # the report's plans are wide; no WARN for it
    # adaptive execution: shuffle partitions coalesced to their data, skew split
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
}

#: Faster JVM start for tests and short jobs; not for long production runs.
TEST_JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


def get_session(
    master: str | None = None,
    app_name: str = "freshness-tracker",
    conf: Mapping[str, str] | None = None,
) -> Any:
    """The active SparkSession if there is one (spark-submit, notebooks, tests), else a new one.

    `master` None: spark-submit's `--master` if set, else `local[*]`. For local masters the
    Python workers are pinned to this interpreter (otherwise they run `python3` from PATH).
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # Under spark-submit the JVM came first and passed its gateway: its --master and --conf rule.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if submitted and master is not None:
        log.warning("--master %s ignored: spark-submit's --master applies", master)
        master = None
    if master is None and not submitted:
        master = "local[*]"
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    settings: dict[str, str] = dict(JOB_CONF)
    if master is not None and master.startswith("local") and not submitted:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings.update(LOCAL_CONF)
        settings["spark.sql.shuffle.partitions"] = str(2 * (os.cpu_count() or 2))
    elif not os.environ.get("PYSPARK_PYTHON"):
        # spark-submit exports spark.pyspark.python as PYSPARK_PYTHON; without either, the
        # executors would run `python3` from PATH. This interpreter's path is the best guess
        # (right for a baked image, a shared venv path or a loopback cluster); an archive
        # shipped with --archives needs PYSPARK_PYTHON=./environment/bin/python as before.
        os.environ["PYSPARK_PYTHON"] = sys.executable
        log.info("PYSPARK_PYTHON not set: executors run %s", sys.executable)
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("FRESHNESS_TRACKER_SPARK_LOG_LEVEL", "WARN"))
    _size_shuffles(session)
    log.info("spark session master=%s app=%s version=%s shuffle_partitions=%s",
             session.sparkContext.master, app_name, session.version,
             session.conf.get("spark.sql.shuffle.partitions"))
    return session


def _size_shuffles(session: Any) -> None:
    """Shuffle partitions sized to the application's cores on any master, unless set by the
    user (`--conf`, spark-defaults): 3 per core, at least 4; adaptive execution coalesces the
    ones that turn out small. Spark's default 200 makes hundreds of near-empty tasks for a
    report of a few hundred rows."""
    sc = session.sparkContext
    conf = sc.getConf()
    if conf.contains("spark.sql.shuffle.partitions"):
        return
    cores = int(conf.get("spark.cores.max", "0") or 0)
    if not cores and conf.contains("spark.executor.instances"):
        cores = int(conf.get("spark.executor.instances")) * int(
            conf.get("spark.executor.cores", "1"))
    cores = cores or int(sc.defaultParallelism)
    session.conf.set("spark.sql.shuffle.partitions", str(max(4, 3 * cores)))
