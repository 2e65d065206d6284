"""The Parquet history sink: schema contract, layout, idempotent rewrites, values round trip."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from freshness_tracker.domain.filters import Shard
from freshness_tracker.domain.model import (
    ClusterHealth,
    ClusterSnapshot,
    PartitionStatus,
)
from freshness_tracker.sinks.history import (
    FILE_SCHEMA,
    HISTORY_SCHEMA,
    HistorySink,
    cycle_id_for,
    read_history,
    write_snapshot,
)
from tests.support.history import START, result, snapshot

#: The public contract (docs/history.md). Changing it breaks readers: bump the schema version.
GOLDEN = [
    ("cycle_id", "string", False),
    ("cycle_start", "timestamp[ms, tz=UTC]", False),
    ("sample_time", "timestamp[ms, tz=UTC]", False),
    ("consumer", "string", False),
    ("topic", "string", False),
    ("partition", "int32", False),
    ("status", "string", False),
    ("burrow_status", "string", False),
    ("committed_offset", "int64", True),
    ("log_end_offset", "int64", True),
    ("offset_lag", "int64", False),
    ("commit_time", "timestamp[ms, tz=UTC]", True),
    ("record_timestamp", "timestamp[ms, tz=UTC]", True),
    ("freshness_ms", "int64", True),
    ("commit_lag_ms", "int64", True),
    ("data_loss", "bool", False),
    ("lost_records", "int64", False),
    ("retention_headroom_ms", "int64", True),
    ("lookup_error", "string", True),
    ("date", "date32[day]", False),
    ("cluster", "string", False),
]


def test_schema_is_the_golden_contract() -> None:
    assert [(f.name, str(f.type), f.nullable) for f in HISTORY_SCHEMA] == GOLDEN
    assert HISTORY_SCHEMA.metadata[b"freshness_tracker.history_schema_version"] == b"1"
    assert [f.name for f in FILE_SCHEMA] == [g[0] for g in GOLDEN[:-2]]


def test_values_round_trip(tmp_path: Path) -> None:
    rows = (
        result(partition=0),
        result(partition=1, status=PartitionStatus.DATA_LOSS, lost_records=42,
               retention_headroom_ms=0, error="offset below log start"),
        result(partition=2, status=PartitionStatus.LOOKUP_FAILED, record_timestamp_ms=None,
               freshness_ms=None, commit_lag_ms=None, error="timed out"),
        result(partition=3, status=PartitionStatus.NO_COMMIT, committed_offset=None,
               log_end_offset=None, commit_time_ms=None, record_timestamp_ms=None,
               freshness_ms=None, commit_lag_ms=None, offset_lag=0),
    )
    write_snapshot(str(tmp_path), snapshot(*rows))
    table = read_history(str(tmp_path))
    assert table.schema.equals(HISTORY_SCHEMA, check_metadata=False)
    got = sorted(table.to_pylist(), key=lambda r: r["partition"])
    utc = dt.UTC
    assert got[0] == {
        "cycle_id": f"c@{START}",
        "cycle_start": dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=utc),
        "sample_time": dt.datetime(2023, 11, 14, 22, 13, 20, 500_000, tzinfo=utc),
        "consumer": "g", "topic": "t", "partition": 0, "status": "ok", "burrow_status": "OK",
        "committed_offset": 10, "log_end_offset": 15, "offset_lag": 5,
        "commit_time": dt.datetime(2023, 11, 14, 22, 13, 18, tzinfo=utc),
        "record_timestamp": dt.datetime(2023, 11, 14, 22, 12, 20, tzinfo=utc),
        "freshness_ms": 60_500, "commit_lag_ms": 1_000, "data_loss": False, "lost_records": 0,
        "retention_headroom_ms": None, "lookup_error": None,
        "date": dt.date(2023, 11, 14), "cluster": "c",
    }
    assert (got[1]["data_loss"], got[1]["lost_records"], got[1]["status"]) == (True, 42,
                                                                                "data_loss")
    assert got[1]["lookup_error"] == "offset below log start"
    assert (got[2]["freshness_ms"], got[2]["lookup_error"]) == (None, "timed out")
    assert got[3]["committed_offset"] is None and got[3]["status"] == "no_commit"


def test_rewriting_a_cycle_replaces_it_and_new_cycles_append(tmp_path: Path) -> None:
    root = str(tmp_path)
    first = write_snapshot(root, snapshot(result(partition=0), result(partition=1)))
    again = write_snapshot(root, snapshot(result(partition=0, freshness_ms=1)))
    assert first == again
    assert read_history(root).num_rows == 1  # replaced, not duplicated
    write_snapshot(root, snapshot(result(), start=START + 30_000))
    table = read_history(root)
    assert table.num_rows == 2
    assert sorted(set(table.column("cycle_id").to_pylist())) == [f"c@{START}",
                                                                  f"c@{START + 30_000}"]
    leftovers = [n for _, _, files in os.walk(root) for n in files if n.startswith(".")]
    assert leftovers == []


def test_layout_is_hive_partitioned_by_utc_date_and_escaped_cluster(tmp_path: Path) -> None:
    last_ms_of_day = int(dt.datetime(2024, 2, 29, 23, 59, 59, 999_000, tzinfo=dt.UTC)
                         .timestamp() * 1000)
    path = write_snapshot(str(tmp_path), snapshot(result(sample_time_ms=last_ms_of_day),
                                                  cluster="eu/west=1 a", start=last_ms_of_day))
    assert path is not None
    rel = Path(path).relative_to(tmp_path).as_posix()
    assert rel == f"date=2024-02-29/cluster=eu%2Fwest%3D1%20a/cycle-{last_ms_of_day}.parquet"
    # the file itself holds no partition columns
    assert pq.read_schema(path).names == FILE_SCHEMA.names
    table = read_history(str(tmp_path))
    assert table.column("cluster").to_pylist() == ["eu/west=1 a"]
    assert table.column("date").to_pylist() == [dt.date(2024, 2, 29)]


def test_a_failed_or_empty_cycle_writes_nothing(tmp_path: Path) -> None:
    assert write_snapshot(str(tmp_path), snapshot()) is None
    down = snapshot(result(status=PartitionStatus.LOOKUP_FAILED, freshness_ms=None),
                    result(partition=1, status=PartitionStatus.CAUGHT_UP, freshness_ms=0))
    down = ClusterSnapshot(down.cluster, down.cycle_id, down.started_ms, down.finished_ms,
                           ClusterHealth("c", False, START, None, 500, error="no broker"),
                           down.partitions)
    assert write_snapshot(str(tmp_path), down) is None  # its series disappear, as on /metrics
    assert list(tmp_path.iterdir()) == []


def test_cycle_start_override_and_shards(tmp_path: Path) -> None:
    shard = Shard(1, 3)
    path = write_snapshot(str(tmp_path), snapshot(result()), cycle_start_ms=START - 86_400_000,
                          shard=shard)
    assert path is not None and path.endswith(f"cycle-{START - 86_400_000}-shard1of3.parquet")
    assert "date=2023-11-14" in path  # the day of its samples, not of the logical cycle time
    row = read_history(str(tmp_path)).to_pylist()[0]
    assert row["cycle_id"] == cycle_id_for("c", START - 86_400_000, shard) == \
        f"c@{START - 86_400_000}#1of3"
    assert cycle_id_for("c", 5) == cycle_id_for("c", 5, Shard())  # one shard: no suffix


def test_sink_is_a_snapshot_callable(tmp_path: Path) -> None:
    sink = HistorySink(str(tmp_path / "h"))
    assert sink.writer.startswith("exporter-")
    sink(snapshot(result()))
    sink(snapshot(result(), start=START + 1))
    assert read_history(str(tmp_path / "h")).num_rows == 2
    assert "h" in repr(sink)
    with pytest.raises(ValueError):
        HistorySink("")


def test_file_uri_paths_work(tmp_path: Path) -> None:
    write_snapshot(f"file://{tmp_path}", snapshot(result()))
    assert read_history(f"file://{tmp_path}").num_rows == 1
    assert isinstance(read_history(str(tmp_path)), pa.Table)


def test_sample_time_is_each_rows_burrow_observation_not_the_cycle_end(tmp_path: Path) -> None:
    """Freshness is measured as of Burrow's answer for the group: that is the row's time."""
    write_snapshot(str(tmp_path), snapshot(result(consumer="a", sample_time_ms=START + 120),
                                           result(consumer="b", sample_time_ms=START + 80),
                                           result(consumer="c")))
    got = {r["consumer"]: int(r["sample_time"].timestamp() * 1000)
           for r in read_history(str(tmp_path)).to_pylist()}
    assert got == {"a": START + 120, "b": START + 80, "c": START + 500}  # c: no stamp, cycle end
