"""The Spark snapshot job against the real stack (Apache Kafka 3.9.1 + Burrow 1.2.1, real group
commits): same Burrow snapshot + same broker + same clock => exactly the live exporter's
history rows."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from devstack.stack import DEFAULT_RETENTION_MS
from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.cli import main
from freshness_tracker.config import load_settings
from freshness_tracker.sinks.history import HistorySink, read_history
from freshness_tracker.spark.snapshot_job import run_snapshot
from tests.spark.helpers import Fleet, N, RecordedBurrow

pytestmark = [pytest.mark.spark, pytest.mark.integration]

def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r["consumer"], r["topic"], r["partition"]))


def test_spark_job_rows_equal_the_live_exporter(spark: Any, fleet: Fleet, tmp_path: Path) -> None:
    from freshness_tracker.app import Exporter

    burrow = RecordedBurrow(BurrowClient(fleet.settings.burrow))
    frozen = fleet.now_ms + 90_000

    def clock() -> int:
        return frozen

    live_dir, spark_dir = str(tmp_path / "live"), str(tmp_path / "spark")
    exporter = Exporter(fleet.settings, burrow=burrow, clock=clock,
                        sinks=[HistorySink(live_dir)])
    try:
        live_snapshot = exporter.run_once()
    finally:
        exporter.close()
    result = run_snapshot(spark, fleet.settings, spark_dir, burrow=burrow, clock=clock)

    assert result.ok and live_snapshot.clusters[0].health.up
    live, ours = _sorted(read_history(live_dir)), _sorted(read_history(spark_dir))
    assert len(ours) == 13 and len(live) == 13
    assert ours == live  # every column: offsets, timestamps, freshness, commit lag, ids

    # ... and the numbers are the right ones, by hand.
    for row in ours:
        key = (row["consumer"], row["topic"], row["partition"])
        if key not in fleet.commits:  # Burrow lists the group's other partitions, uncommitted
            assert key[0].startswith("second-")
            assert (row["status"], row["committed_offset"], row["freshness_ms"]) == \
                ("no_commit", None, None)
            continue
        offset, commit_at = fleet.commits[key]
        ts = fleet.timestamps[(row["topic"], row["partition"])]
        assert row["committed_offset"] == offset and row["log_end_offset"] == N
        assert row["offset_lag"] == N - offset
        if offset < N:
            assert row["status"] == "ok"
            assert int(row["record_timestamp"].timestamp() * 1000) == ts[offset]
            assert row["freshness_ms"] == frozen - ts[offset]
            assert row["retention_headroom_ms"] == DEFAULT_RETENTION_MS - (frozen - ts[offset])
        else:
            assert row["status"] == "caught_up" and row["freshness_ms"] == 0
        expected_commit_lag = commit_at - ts[offset - 1] if offset > 0 else None
        assert row["commit_lag_ms"] == expected_commit_lag
        assert row["cycle_id"] == f"local@{frozen}" and row["data_loss"] is False

    # The reads ran in Spark's Python workers, grouped per leader, and were deduplicated
    # across groups: (orders,0) at 2 is shared by two groups.
    lookups = result.lookups["local"]
    assert os.getpid() not in lookups["worker_pids"]
    distinct_reads = {(t, p, o) for (_, t, p), (off, _) in fleet.commits.items()
                      for o in ({off - 1, off} if off < N else {off - 1}) if o >= 0}
    assert lookups["requests"] == len(distinct_reads)
    assert lookups["leaders"] == 1 and lookups["failed"] == 0

    # Re-running the same cycle (same clock) replaces its rows instead of adding to them.
    run_snapshot(spark, fleet.settings, spark_dir, burrow=burrow, clock=clock)
    assert read_history(spark_dir).num_rows == len(ours)


@pytest.mark.usefixtures("restore_logging")
def test_cli_snapshot_with_a_cycle_time_is_idempotent(
        spark: Any, fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = str(tmp_path / "history")
    args = ["spark", "snapshot", "--config", str(fleet.config), "--history", history,
            "--cycle-time", "2026-01-02T03:04:05Z", "--max-tasks", "2"]
    assert main(args) == 0
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "cluster=local cycle=1 up=true groups=3 partitions=13" in out
    table = read_history(history)
    assert table.num_rows == 13
    assert set(table.column("cycle_id").to_pylist()) == {"local@1767323045000"}
    # filed under the day of its samples (today), not of the logical cycle time: a short
    # window over today finds a late or backfilled run
    assert set(table.column("date").to_pylist()) == {
        t.date() for t in table.column("sample_time").to_pylist()}
    # freshness is measured at the real clock, not at the logical cycle time
    assert min(r for r in table.column("freshness_ms").to_pylist() if r) > 30 * 60_000


def test_unreachable_kafka_marks_the_cluster_down_and_writes_nothing(
        spark: Any, fleet: Fleet, tmp_path: Path, unused_port: Callable[[], int]) -> None:
    text = fleet.config.read_text().replace(
        fleet.settings.clusters[0].kafka.properties["bootstrap.servers"],
        f"127.0.0.1:{unused_port()}").replace("lookup.timeout = 15s", "lookup.timeout = 2s")
    settings = load_settings(text=text)
    result = run_snapshot(spark, settings, str(tmp_path / "h"),
                          burrow=RecordedBurrow(BurrowClient(settings.burrow)))
    snap = result.snapshots[0]
    assert not result.ok and not snap.health.up
    assert "no broker reachable" in (snap.health.error or "")
    assert result.files["local"] is None and not (tmp_path / "h").exists()


@pytest.fixture
def unused_port() -> Callable[[], int]:
    import socket

    def pick() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    return pick


def test_a_slow_lookup_does_not_change_the_spark_jobs_values(
        spark: Any, fleet: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Freshness is measured as of Burrow's answer: lookups slowed by 3 s on purpose give the
    very same values (the cold start of a spark-submit used to be added to every one)."""
    from freshness_tracker.cycle import now_ms
    from freshness_tracker.spark.reader import SparkRecordReader

    burrow = RecordedBurrow(BurrowClient(fleet.settings.burrow, clock=now_ms))
    fast = run_snapshot(spark, fleet.settings, str(tmp_path / "fast"), burrow=burrow)
    real_read = SparkRecordReader.read

    def slow_read(self: SparkRecordReader, requests: Any) -> Any:
        time.sleep(3)
        return real_read(self, requests)

    monkeypatch.setattr(SparkRecordReader, "read", slow_read)
    began = time.monotonic()
    slow = run_snapshot(spark, fleet.settings, str(tmp_path / "slow"), burrow=burrow)
    assert time.monotonic() - began >= 3 and fast.ok and slow.ok

    def values(snapshot: Any) -> dict[tuple[str, str, int], tuple[Any, ...]]:
        return {(r.key.consumer, r.key.topic, r.key.partition):
                (r.freshness_ms, r.sample_time_ms) for r in snapshot.partitions}

    got = values(slow.snapshots[0])
    assert got == values(fast.snapshots[0])
    for row in slow.snapshots[0].partitions:
        if row.freshness_ms and row.record_timestamp_ms is not None:
            assert row.sample_time_ms is not None
            assert row.freshness_ms == row.sample_time_ms - row.record_timestamp_ms
            # Burrow's answer came before the 3 s the reads took
            assert row.sample_time_ms <= slow.snapshots[0].finished_ms - 3_000
    # and the history rows carry that time
    times = {int(t.timestamp() * 1000) for t in read_history(str(tmp_path / "slow"))
             .column("sample_time").to_pylist()}
    assert times == {v[1] for v in got.values()}


@pytest.mark.usefixtures("restore_logging")
def test_every_keeps_one_application_and_its_python_workers_warm(
        spark: Any, fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without the cache (every cycle reads Kafka again): the same warm Python worker answers
    every warm cycle, and the cycles count up."""
    config = tmp_path / "nocache.conf"
    config.write_text(fleet.config.read_text() + "lookup.cacheSize = 0\n")
    history = str(tmp_path / "history")
    assert main(["spark", "snapshot", "--config", str(config), "--history", history,
                 "--every", "1s", "--cycles", "3", "--max-tasks", "1"]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("cluster=")]
    assert len(lines) == 3 and all("up=true" in x for x in lines)
    assert [x.split()[1] for x in lines] == ["cycle=1", "cycle=2", "cycle=3"]
    workers = [x.split("worker_pids=")[1].split()[0] for x in lines]
    assert workers[1] == workers[2] != "-"  # the same warm Python worker answered
    table = read_history(history)
    assert table.num_rows == 3 * 13 and len(set(table.column("cycle_id").to_pylist())) == 3


@pytest.mark.usefixtures("restore_logging")
def test_every_answers_unmoved_offsets_from_the_cache(
        spark: Any, fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fleet's offsets do not move: the first cycle reads, the warm ones read nothing and
    write the same values."""
    history = str(tmp_path / "history")
    assert main(["spark", "snapshot", "--config", str(fleet.config), "--history", history,
                 "--every", "1s", "--cycles", "2", "--max-tasks", "1"]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("cluster=")]
    fields = [dict(f.split("=", 1) for f in x.split() if "=" in f) for x in lines]
    assert [f["cycle"] for f in fields] == ["1", "2"]
    assert int(fields[0]["reads"]) > 0 and fields[0]["cache_hits"] == "0"
    assert (fields[1]["reads"], fields[1]["cache_hits"]) == ("0", fields[0]["reads"])
    assert fields[1]["worker_pids"] == "-" and fields[1]["up"] == "true"
    rows = read_history(history).to_pylist()
    by_cycle: dict[str, set[tuple[Any, ...]]] = {}
    for r in rows:
        by_cycle.setdefault(r["cycle_id"], set()).add(
            (r["consumer"], r["topic"], r["partition"], r["record_timestamp"]))
    assert len(by_cycle) == 2 and len(set(map(frozenset, by_cycle.values()))) == 1


def test_every_refuses_a_fixed_cycle_time(fleet: Fleet, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    assert main(["spark", "snapshot", "--config", str(fleet.config), "--history", "/tmp/x",
                 "--every", "1m", "--cycle-time", "2026-01-01"]) == 2
