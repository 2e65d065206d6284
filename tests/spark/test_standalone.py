"""Both jobs on a real Spark standalone cluster: a master and two 1-core workers on loopback,
started from the pip package (`spark-class ...Master` / `...Worker`), the jobs submitted with
`spark-submit --master spark://...` as a user would, with no PYSPARK_PYTHON anywhere.

- the snapshot job against the real stack (Kafka 3.9.1 + Burrow 1.2.1): its rows equal the live
  exporter's (`freshness-tracker once` with history.path), and its lookups ran in the
  executors' Python workers (each wrote where it built its engine into its executor's log);
- the report job over the hand-computed history of test_report_job: the same answers.

The cluster's daemons (and their executors, in their process groups) are stopped by a
finalizer whatever happens. Nothing here is timed; the durations are only printed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from devstack.testing import unavailable
from freshness_tracker.sinks.history import read_history
from freshness_tracker.spark.session import TEST_JVM_OPTIONS
from tests.spark.helpers import OBJECTIVES, Fleet, M, generate

pytestmark = [pytest.mark.spark, pytest.mark.integration]

#: Compared between the live exporter and the Spark job: everything that does not depend on
#: when each ran (cycle ids and times differ; Burrow's status word moves with time).
STABLE = ["consumer", "topic", "partition", "status", "committed_offset", "log_end_offset",
          "offset_lag", "commit_time", "record_timestamp", "commit_lag_ms", "data_loss",
          "lost_records", "lookup_error", "cluster"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("no java on PATH and no JAVA_HOME")
    from devstack.spark_standalone import LoopbackCluster

    began = time.monotonic()
    standalone = LoopbackCluster(workers=2, cores=1, memory="1g",
                                 workdir=str(tmp_path_factory.mktemp("standalone")))
    try:
        standalone.start()
        print(f"standalone cluster up in {time.monotonic() - began:.1f} s")
        yield standalone
    finally:
        standalone.stop()


def submit(cluster: Any, *args: str, timeout_s: float = 300) -> tuple[int, str, str]:
    """`spark-submit --master spark://… <submit.py> args`: (exit code, stdout, stderr)."""
    from devstack.spark_standalone import spark_home, spark_submit
    from freshness_tracker.spark import submit as app

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "SPARK_")) and k != "PYTHONSTARTUP"}
    env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1")
    command = [spark_submit(), "--master", cluster.url,
               # the driver's interpreter only (spark-submit's own setting); the executors'
               # follows from it, no PYSPARK_PYTHON needed
               "--conf", f"spark.pyspark.driver.python={sys.executable}",
               "--driver-java-options", TEST_JVM_OPTIONS,
               "--conf", f"spark.executor.extraJavaOptions={TEST_JVM_OPTIONS}",
               "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false",
               "--executor-memory", "1g", str(app.__file__), *args]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout_s)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    return process.returncode, out, err


def test_snapshot_on_the_cluster_equals_once_and_reads_in_executors(
        cluster: Any, fleet: Fleet, tmp_path: Path) -> None:
    config = tmp_path / "exporter.conf"
    config.write_text(fleet.config.read_text() + f'history.path = "{tmp_path / "once"}"\n')
    once = subprocess.run([sys.executable, "-m", "freshness_tracker", "once", "--config",
                           str(config), "--format", "json"], capture_output=True, text=True,
                          timeout=120)
    assert once.returncode == 0, once.stderr[-3000:]

    began = time.monotonic()
    code, out, err = submit(cluster, "snapshot", "--config", str(config), "--history",
                            str(tmp_path / "spark"), "--max-tasks", "2")
    print(f"spark-submit snapshot: {time.monotonic() - began:.1f} s")
    assert code == 0, f"{out}\n{err[-5000:]}"
    line = next(x for x in out.splitlines() if x.startswith("cluster="))
    assert "up=true groups=3 partitions=13 " in line, line
    pids = {int(p) for p in re.search(r"worker_pids=([\d,]+)", line).group(1).split(",")}  # type: ignore[union-attr]

    # Rows: the same as the live exporter's one cycle, value for value.
    def rows(path: Path) -> list[dict[str, Any]]:
        return sorted(read_history(str(path)).to_pylist(),
                      key=lambda r: (r["consumer"], r["topic"], r["partition"]))

    live, ours = rows(tmp_path / "once"), rows(tmp_path / "spark")
    assert len(ours) == 13
    assert [{k: r[k] for k in STABLE} for r in ours] == [{k: r[k] for k in STABLE} for r in live]
    for row in ours:  # measured as of Burrow's answer, on both sides
        if row["status"] == "ok":
            age = row["sample_time"] - row["record_timestamp"]
            assert row["freshness_ms"] == age.days * 86_400_000 + age.seconds * 1000 + \
                age.microseconds // 1000

    # The lookups ran in the executors' Python workers: each one that answered wrote where
    # it built its engine into the log of the executor (on a worker of this cluster) it runs in.
    logs = "\n".join(p.read_text(errors="replace")
                     for p in cluster.workdir.glob("worker-*/app-*/*/stderr"))
    built = {int(m) for m in re.findall(r"python worker pid=(\d+): lookup engine for "
                                        r"cluster=local", logs)}
    assert pids <= built, (pids, built)


def test_report_on_the_cluster_gives_the_hand_computed_answers(cluster: Any,
                                                               tmp_path: Path) -> None:
    generate(str(tmp_path / "history"))
    (tmp_path / "objectives.conf").write_text(OBJECTIVES)
    began = time.monotonic()
    code, out, err = submit(cluster, "report", "--history", str(tmp_path / "history"),
                            "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T01:00Z",
                            "--objectives", str(tmp_path / "objectives.conf"),
                            "--out", str(tmp_path / "out"), "--log-level", "WARNING")
    print(f"spark-submit report: {time.monotonic() - began:.1f} s")
    assert code == 0, f"{out}\n{err[-5000:]}"
    consumers = pd.read_csv(tmp_path / "out" / "consumers.csv")
    by = {(r["cluster"], r["consumer"]): r for r in consumers.to_dict("records")}
    orders, billing = by[("east", "orders-app")], by[("east", "billing")]
    assert (orders["over_ms"], orders["no_data_ms"], orders["good_ms"]) == (5 * M, 6 * M, 49 * M)
    assert orders["met"] is False or str(orders["met"]) == "False"
    assert (billing["over_ms"], billing["longest_breach_ms"], billing["breaches"]) == \
        (14 * M, 9 * M, 2)
    assert "report rows=" in out
