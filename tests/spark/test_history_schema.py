"""Schema stability: the history table as Spark sees it is a golden contract (docs/history.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from freshness_tracker.domain.model import (
    ClusterHealth,
    ClusterSnapshot,
    PartitionKey,
    PartitionResult,
    PartitionStatus,
)
from freshness_tracker.sinks.history import read_history, write_snapshot
from freshness_tracker.spark.report_job import history_frame, spark_schema

pytestmark = pytest.mark.spark

#: Changing this breaks every reader of the table: bump HISTORY_SCHEMA_VERSION and say so.
GOLDEN = (
    "struct<cycle_id:string,cycle_start:timestamp,sample_time:timestamp,consumer:string,"
    "topic:string,partition:int,status:string,burrow_status:string,committed_offset:bigint,"
    "log_end_offset:bigint,offset_lag:bigint,commit_time:timestamp,record_timestamp:timestamp,"
    "freshness_ms:bigint,commit_lag_ms:bigint,data_loss:boolean,lost_records:bigint,"
    "retention_headroom_ms:bigint,lookup_error:string,date:date,cluster:string>"
)

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _history(root: Path) -> None:
    rows = (
        PartitionResult(PartitionKey("east", "g", "t", 0), PartitionStatus.OK, "WARN", 10, 15, 5,
                        START - 2_000, START - 61_000, 61_250, 59_000),
        PartitionResult(PartitionKey("east", "g", "t", 1), PartitionStatus.LOOKUP_FAILED, "OK",
                        3, 9, 6, None, None, None, None, error="timed out"),
    )
    health = ClusterHealth("east", True, START, START + 250, 250)
    write_snapshot(str(root), ClusterSnapshot("east", 1, START, START + 250, health, rows))


def test_spark_schema_is_golden() -> None:
    assert spark_schema().simpleString() == GOLDEN


def test_spark_reads_the_files_natively_with_the_same_types(spark: Any, tmp_path: Path) -> None:
    _history(tmp_path)
    inferred = spark.read.parquet(str(tmp_path)).schema  # no schema given: Spark's own view
    assert [(f.name, f.dataType.simpleString()) for f in inferred] == \
        [(f.name, f.dataType.simpleString()) for f in spark_schema()]


def test_spark_and_pyarrow_read_the_same_values(spark: Any, tmp_path: Path) -> None:
    _history(tmp_path)
    frame = history_frame(spark, str(tmp_path), START, START + 1_000).orderBy("partition")
    got = [r.asDict() for r in frame.collect()]
    assert [r["t"] for r in got] == [START + 250, START + 250]
    assert [r["freshness_ms"] for r in got] == [61_250, None]
    assert [r["lookup_error"] for r in got] == [None, "timed out"]
    assert str(got[0]["date"]) == "2026-01-01" and got[0]["cluster"] == "east"
    arrow = sorted(read_history(str(tmp_path)).to_pylist(), key=lambda r: r["partition"])
    assert [int(r["record_timestamp"].timestamp() * 1000) if r["record_timestamp"] else None
            for r in arrow] == [START - 61_000, None]
    # outside the window: nothing (and the date partition filter prunes other days)
    assert history_frame(spark, str(tmp_path), START + 1_000, START + 2_000).count() == 0


def test_spark_reads_a_compacted_day_with_every_row_once(spark: Any, tmp_path: Path) -> None:
    """After `history compact`: the manifest and nothing else is new, to Spark too."""
    import datetime as dt

    from freshness_tracker.sinks.history_compact import compact_history

    rows = (PartitionResult(PartitionKey("east", "g", "t", 0), PartitionStatus.OK, "OK", 10, 15,
                            5, START - 2_000, START - 61_000, 61_250, 59_000),)
    for i in range(30):
        start = START + i * 30_000
        health = ClusterHealth("east", True, start, start + 250, 250)
        write_snapshot(str(tmp_path), ClusterSnapshot("east", i, start, start + 250, health, rows))
    window = (START, START + 86_400_000)
    before = sorted(r.asDict()["t"] for r in history_frame(spark, str(tmp_path), *window).collect())
    (done,) = compact_history(str(tmp_path), before=dt.date(2026, 1, 2))
    assert done.files_in == 30
    after = sorted(r.asDict()["t"] for r in history_frame(spark, str(tmp_path), *window).collect())
    assert after == before and len(after) == 30 == len(set(after))
    assert spark.read.parquet(str(tmp_path)).schema.simpleString() == GOLDEN


def test_the_documented_spark_query_keeps_numeric_cluster_names_strings(
        spark: Any, tmp_path: Path) -> None:
    """Spark inferred `cluster=123` as an int (and `007` as 7): with the schema given, as
    docs/history.md says, it is the string every other reader sees."""
    rows = (PartitionResult(PartitionKey("123", "g", "t", 0), PartitionStatus.OK, "OK", 10, 15,
                            5, START - 2_000, START - 61_000, 61_250, 59_000),)
    for cluster in ("123", "007"):
        health = ClusterHealth(cluster, True, START, START + 250, 250)
        write_snapshot(str(tmp_path), ClusterSnapshot(cluster, 1, START, START + 250, health,
                                                      rows))
    documented = spark.read.schema(spark_schema()).parquet(str(tmp_path))
    assert sorted(r["cluster"] for r in documented.select("cluster").collect()) == ["007", "123"]
    assert dict(documented.dtypes)["cluster"] == "string"
    frame = history_frame(spark, str(tmp_path), START, START + 1_000)
    assert sorted(r["cluster"] for r in frame.select("cluster").collect()) == ["007", "123"]


def test_a_wrong_schema_file_fails_the_report_with_one_line_naming_it(
        spark: Any, tmp_path: Path) -> None:
    """Spark's read error reached the user as a Py4J error with a JVM stack."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from freshness_tracker.errors import FreshnessTrackerError
    from freshness_tracker.spark.report_job import ReportOptions, run_report

    _history(tmp_path)
    (folder,) = tmp_path.glob("date=*/cluster=*")
    pq.write_table(pa.table({"cycle_id": [1], "freshness_ms": ["soon"]}),
                   folder / "cycle-1-foreign.parquet")
    with pytest.raises(FreshnessTrackerError) as failed:
        run_report(spark, str(tmp_path), str(tmp_path / "out"), [],
                   ReportOptions(start_ms=START, end_ms=START + 3_600_000))
    message = str(failed.value)
    assert "\n" not in message and "cycle-1-foreign.parquet" in message
    assert message.startswith("cannot read the history table: ")
    assert "Parquet column [" in message and "move this one out of the table" in message
