"""Compaction of the history table on a real filesystem with real Parquet files: every row kept
exactly once, open days untouched, late writers kept, crashes at each step repaired."""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from freshness_tracker.cli import main
from freshness_tracker.sinks import history_compact
from freshness_tracker.sinks.history import (
    CompactedCycleError,
    compacted_sources,
    read_history,
    write_snapshot,
)
from freshness_tracker.sinks.history_compact import CompactionError, compact_history
from tests.support.history import result, snapshot

DAY_MS = 86_400_000
DAY0 = 1_700_006_400_000  # 2023-11-15T00:00:00Z
CYCLE_MS = 30_000


def fill(root: Path, *, days: int = 3, cycles: int = 20, clusters: tuple[str, ...] = ("a", "b"),
         partitions: int = 3) -> None:
    for day in range(days):
        for cycle in range(cycles):
            start = DAY0 + day * DAY_MS + cycle * CYCLE_MS
            for cluster in clusters:
                rows = [result(consumer=f"g{p % 2}", partition=p, freshness_ms=start % 977 + p)
                        for p in range(partitions)]
                write_snapshot(str(root), snapshot(*rows, cluster=cluster, start=start))


def rows_of(root: Path) -> Counter[tuple[Any, ...]]:
    """Every row as a hashable tuple, counted: a lost or doubled row changes the Counter."""
    return Counter(tuple(sorted(r.items())) for r in read_history(str(root)).to_pylist())


def files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def part(root: Path, day: int, cluster: str) -> Path:
    return root / f"date={dt.date(2023, 11, 15 + day).isoformat()}" / f"cluster={cluster}"


BEFORE = dt.date(2023, 11, 17)  # days 0 and 1 are closed, day 2 is open


def test_closed_days_become_one_file_per_cluster_with_every_row_once(tmp_path: Path) -> None:
    fill(tmp_path)
    before = rows_of(tmp_path)
    done = compact_history(str(tmp_path), before=BEFORE)
    assert sorted((Path(d.path).parent.name, Path(d.path).name, d.files_in, d.rows)
                  for d in done) == [
        ("date=2023-11-15", "cluster=a", 20, 60), ("date=2023-11-15", "cluster=b", 20, 60),
        ("date=2023-11-16", "cluster=a", 20, 60), ("date=2023-11-16", "cluster=b", 20, 60)]
    assert rows_of(tmp_path) == before
    for day in (0, 1):
        for cluster in ("a", "b"):
            names = files(part(tmp_path, day, cluster))
            assert len(names) == 2 and names[0] == ".compaction.json", names
            assert names[1].startswith("compacted-")
            assert len(compacted_sources(part(tmp_path, day, cluster))) == 20
    assert len(files(part(tmp_path, 2, "a"))) == 20  # the open day is untouched
    assert not [p for p in tmp_path.rglob(".*") if p.name != ".compaction.json"]


def test_a_second_run_changes_nothing_and_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    fill(tmp_path, days=2)
    dry = compact_history(str(tmp_path), before=BEFORE, dry_run=True)
    assert [(d.files_in, d.rows, d.file_out) for d in dry] == [(20, 60, None)] * 4
    assert len(files(part(tmp_path, 0, "a"))) == 20
    compact_history(str(tmp_path), before=BEFORE)
    listing = {p: files(p) for p in tmp_path.glob("date=*/cluster=*")}
    assert compact_history(str(tmp_path), before=BEFORE) == []
    assert {p: files(p) for p in tmp_path.glob("date=*/cluster=*")} == listing


def test_compacted_files_are_bounded_row_groups_not_one_per_cycle(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_compact, "_ROWS_PER_GROUP", 25)
    fill(tmp_path, days=1, clusters=("a",))
    (done,) = compact_history(str(tmp_path), before=BEFORE)
    meta = pq.ParquetFile(done.file_out).metadata
    assert meta.num_rows == 60
    assert 2 <= meta.num_row_groups <= 3  # ~25 rows each, not 20 groups of 3


def test_a_file_written_during_compaction_is_kept(tmp_path: Path) -> None:
    fill(tmp_path, days=1, clusters=("a",))

    def late_writer(partition: Path) -> None:  # between listing the sources and the swap
        write_snapshot(str(tmp_path), snapshot(result(partition=9), cluster="a",
                                               start=DAY0 + DAY_MS - 1_000))

    before = rows_of(tmp_path)
    compact_history(str(tmp_path), before=BEFORE, after_write=late_writer)
    after = rows_of(tmp_path)
    assert sum(after.values()) == sum(before.values()) + 1 and before - after == Counter()
    assert len(files(part(tmp_path, 0, "a"))) == 3  # manifest, compacted file, the late file
    compact_history(str(tmp_path), before=BEFORE)  # the next run folds it in too
    assert rows_of(tmp_path) == after
    assert len(files(part(tmp_path, 0, "a"))) == 2


def test_re_writing_a_compacted_cycle_is_refused_a_new_one_is_not(tmp_path: Path) -> None:
    fill(tmp_path, days=1, clusters=("a",), cycles=3)
    compact_history(str(tmp_path), before=BEFORE)
    with pytest.raises(CompactedCycleError, match="already in the compacted file"):
        write_snapshot(str(tmp_path), snapshot(result(), cluster="a", start=DAY0 + CYCLE_MS))
    write_snapshot(str(tmp_path), snapshot(result(), cluster="a", start=DAY0 + 7 * CYCLE_MS))
    assert sum(rows_of(tmp_path).values()) == 3 * 3 + 1


def test_a_crash_while_writing_leaves_the_partition_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(tmp_path, days=1, clusters=("a",))
    before, listing = rows_of(tmp_path), files(part(tmp_path, 0, "a"))

    def broken(sources: list[Path], out: Path) -> tuple[int, int]:
        out.write_bytes(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(history_compact, "_write_compacted", broken)
    with pytest.raises(OSError, match="disk full"):
        compact_history(str(tmp_path), before=BEFORE)
    assert files(part(tmp_path, 0, "a")) == listing and rows_of(tmp_path) == before
    assert not list(tmp_path.rglob(".cluster=*"))


@pytest.mark.parametrize("writer_recreates_the_partition", [False, True])
def test_a_crash_between_the_two_renames_is_finished_by_the_next_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        writer_recreates_the_partition: bool) -> None:
    fill(tmp_path, days=1, clusters=("a",))
    before = rows_of(tmp_path)
    real_rename = os.rename
    calls: list[str] = []

    def crash_on_second(src: Any, dst: Any) -> None:
        calls.append(str(dst))
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        real_rename(src, dst)

    monkeypatch.setattr(history_compact.os, "rename", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        compact_history(str(tmp_path), before=BEFORE)
    monkeypatch.setattr(history_compact.os, "rename", real_rename)
    assert not part(tmp_path, 0, "a").exists()  # absent for a moment: never doubled
    if writer_recreates_the_partition:
        write_snapshot(str(tmp_path), snapshot(result(partition=9), cluster="a",
                                               start=DAY0 + DAY_MS - 1_000))
    compact_history(str(tmp_path), before=BEFORE)
    after = rows_of(tmp_path)
    assert before - after == Counter()
    assert sum(after.values()) == sum(before.values()) + writer_recreates_the_partition
    assert not list(tmp_path.rglob(".cluster=*")) and not list(tmp_path.rglob(".complete"))


def test_a_crash_before_deleting_the_old_directory_is_cleaned_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(tmp_path, days=1, clusters=("a",))
    before = rows_of(tmp_path)

    def killed(old: Path, partition: Path, folded: set[str]) -> None:
        (old / "cycle-99.parquet").write_bytes((next(old.glob("cycle-*"))).read_bytes())
        raise KeyboardInterrupt("killed")  # a late file sits in the old directory too

    real = history_compact._adopt_late_files
    monkeypatch.setattr(history_compact, "_adopt_late_files", killed)
    with pytest.raises(KeyboardInterrupt):
        compact_history(str(tmp_path), before=BEFORE)
    monkeypatch.setattr(history_compact, "_adopt_late_files", real)
    assert rows_of(tmp_path) == before  # the hidden old directory is invisible to readers
    compact_history(str(tmp_path), before=BEFORE)
    assert not list(tmp_path.rglob(".cluster=*"))
    assert sum(rows_of(tmp_path).values()) == sum(before.values()) + 3  # the late file's rows


def test_object_stores_compact_by_plan_delete_and_copy(tmp_path: Path) -> None:
    """Object stores were refused. There a rename is a copy, so a plan is written first, then
    the sources deleted and the compacted file copied in: never a row twice."""
    fill(tmp_path, days=2, clusters=("a",))
    before = rows_of(tmp_path)
    done = compact_history(str(tmp_path), before=BEFORE, strategy="copy")
    assert [(d.files_in, d.rows) for d in done] == [(20, 60), (20, 60)]
    assert rows_of(tmp_path) == before
    names = files(part(tmp_path, 0, "a"))
    assert len(names) == 2 and names[1].startswith("compacted-")
    assert len(compacted_sources(part(tmp_path, 0, "a"))) == 20
    with pytest.raises(CompactedCycleError):
        write_snapshot(str(tmp_path), snapshot(result(), cluster="a", start=DAY0 + CYCLE_MS))


def test_an_object_store_compaction_killed_after_its_plan_is_finished_next_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(tmp_path, days=1, clusters=("a",))
    before = rows_of(tmp_path)
    real = history_compact._apply_plan
    monkeypatch.setattr(history_compact, "_apply_plan",
                        lambda *a: (_ for _ in ()).throw(KeyboardInterrupt("killed")))
    with pytest.raises(KeyboardInterrupt):
        compact_history(str(tmp_path), before=BEFORE, strategy="copy")
    monkeypatch.setattr(history_compact, "_apply_plan", real)
    assert rows_of(tmp_path) == before  # the plan and the staged file are invisible
    compact_history(str(tmp_path), before=BEFORE, strategy="copy")
    assert rows_of(tmp_path) == before and len(files(part(tmp_path, 0, "a"))) == 2
    assert not list((tmp_path / history_compact.STAGING).iterdir())


def test_a_missing_table_is_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(CompactionError, match="does not exist"):
        compact_history(str(tmp_path / "nope"), before=BEFORE)


def test_the_cli_compacts_closed_days(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fill(tmp_path, days=3, clusters=("a",), cycles=4)
    assert main(["history", "compact", "--history", str(tmp_path), "--before", "2023-11-17",
                 "--dry-run"]) == 0
    assert "would compact 2 partition(s) of days before 2023-11-17" in capsys.readouterr().out
    assert main(["history", "compact", "--history", str(tmp_path), "--before",
                 "2023-11-17"]) == 0
    out = capsys.readouterr().out
    assert "cluster=a: 4 files, 12 rows" in out and "compacted 2 partition(s)" in out
    with pytest.raises(SystemExit) as exit_:
        main(["history", "compact", "--history", str(tmp_path), "--before", "17/11/2023"])
    assert exit_.value.code == 2
