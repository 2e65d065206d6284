"""Compaction of the history table on a real filesystem with real Parquet files: every row kept
exactly once, open days untouched, late writers kept, crashes at each step repaired."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from freshness_tracker.cli import main
from freshness_tracker.sinks import history_compact
from freshness_tracker.sinks.history import (
    CompactedCycleError,
    HistorySink,
    HistoryTableError,
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


# --- nothing read from the table's own bookkeeping is followed out of it ----------------------

TOKEN = "0123456789ab"  # the shape of a staging folder the compaction makes


def victim_beside(root: Path, precious: str = "precious.txt") -> Path:
    victim = root.parent / f"{root.name}-victim"
    victim.mkdir()
    (victim / precious).write_text("not the table's")
    return victim


def partition_rows(directory: Path) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(sorted(r.items())) for r in pq.read_table(directory).to_pylist())


def crafted_swap(root: Path, record: str, token: str = TOKEN) -> Path:
    """What a crash between the two renames leaves, naming `record` as its partition."""
    staging = root / history_compact.STAGING / token
    (staging / "new").mkdir(parents=True)
    (staging / "old").mkdir()
    (staging / "new" / ".complete").touch()
    (staging / "new" / "staged.parquet").write_text("staged")
    (staging / "partition").write_text(record)
    return staging


@pytest.mark.parametrize("record", ["../{victim}", "{victim_abs}", "date=2023-11-15/../../{victim}",
                                    "date=2023-11-15/cluster=a/../../../{victim}",
                                    "date=2023-11-14/cluster=v"])
def test_a_staging_record_naming_a_folder_outside_the_table_is_never_followed(
        tmp_path: Path, record: str, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A crafted `_compaction/<token>/partition` holding `../victim` made every run delete the
    victim folder and put the staged files there. The last record is in the writer's shape but
    reached through a symbolic link out of the table."""
    root = tmp_path / "table"
    fill(root, days=1, clusters=("a",), cycles=3)
    victim = victim_beside(root)
    (root / "date=2023-11-14").symlink_to(tmp_path)  # ".../date=2023-11-14/cluster=v" → victim
    (tmp_path / "cluster=v").symlink_to(victim)
    staging = crafted_swap(root, record.format(victim=victim.name, victim_abs=victim))
    before = partition_rows(part(root, 0, "a"))
    done = compact_history(str(root), before=BEFORE)
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]
    assert (victim / "precious.txt").read_text() == "not the table's"
    assert [d.files_in for d in done] == [3]  # the valid partition is compacted all the same
    assert partition_rows(part(root, 0, "a")) == before
    assert (staging / "new" / "staged.parquet").exists()  # left for a person, never followed
    problems = [p for p in done.problems if str(staging) in p]
    assert len(problems) == 1 and "left as it is" in problems[0], done.problems
    assert not [r for r in caplog.records if r.exc_info]
    caplog.clear()
    assert main(["history", "compact", "--history", str(root), "--before", "2023-11-17"]) == 1
    assert "left" in capsys.readouterr().err
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]


@pytest.mark.parametrize("crafted", ["token", "link", "new-link"])
def test_staging_folders_the_compaction_did_not_make_are_left_as_they_are(
        tmp_path: Path, crafted: str) -> None:
    root = tmp_path / "table"
    fill(root, days=1, clusters=("a",), cycles=2)
    victim = victim_beside(root)
    if crafted == "token":  # not a token: even a valid-looking record is not acted on
        staging = crafted_swap(root, "date=2023-11-15/cluster=a", token="..victim")
    elif crafted == "link":  # the token folder itself points out of the table
        elsewhere = crafted_swap(tmp_path / "other", "date=2023-11-15/cluster=a")
        (root / history_compact.STAGING).mkdir()
        staging = root / history_compact.STAGING / TOKEN
        staging.symlink_to(elsewhere)
    else:  # its `old` folder points out of the table: adopting it would move the victim's files
        staging = crafted_swap(root, "date=2023-11-15/cluster=a")
        (staging / "old").rmdir()
        (staging / "old").symlink_to(victim)
    done = compact_history(str(root), before=BEFORE)
    assert len(done.problems) == 1 and shown_name(staging) in done.problems[0], done.problems
    assert [d.files_in for d in done] == [2]
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]
    assert os.path.lexists(staging)


def shown_name(path: Path) -> str:
    return str(path)


@pytest.mark.parametrize("plan", [
    {"partition": "../{victim}", "sources": ["precious.parquet"]},
    {"partition": "date=2023-11-15/cluster=a", "sources": ["../../../{victim}/precious.parquet"]},
])
def test_an_object_store_plan_naming_paths_outside_the_table_is_never_applied(
        tmp_path: Path, plan: dict[str, Any]) -> None:
    root = tmp_path / "table"
    fill(root, days=1, clusters=("a",), cycles=2)
    victim = victim_beside(root, "precious.parquet")
    staging = root / history_compact.STAGING / TOKEN
    staging.mkdir(parents=True)
    (staging / f"compacted-{TOKEN}.parquet").write_text("staged")
    crafted = {"file": f"compacted-{TOKEN}.parquet", "folded": [],
               "partition": plan["partition"].format(victim=victim.name),
               "sources": [s.format(victim=victim.name) for s in plan["sources"]]}
    (staging / "plan.json").write_text(json.dumps(crafted))
    done = compact_history(str(root), before=BEFORE, strategy="copy")
    assert sorted(p.name for p in victim.iterdir()) == ["precious.parquet"]
    assert len(done.problems) == 1 and "plan.json" in done.problems[0], done.problems
    assert [d.files_in for d in done] == [2] and (staging / "plan.json").exists()


@pytest.mark.parametrize("level", ["date", "cluster"])
def test_a_symlinked_partition_is_skipped_with_one_line_every_run(
        tmp_path: Path, level: str, caplog: pytest.LogCaptureFixture) -> None:
    """A `cluster=` folder that was a link crashed this and every later run (rmtree of a link)
    until a person cleaned up; a `date=` link was compacted through, into the folder it names."""
    root = tmp_path / "table"
    fill(root, days=2, clusters=("a",), cycles=2)
    linked = part(root, 0, "a") if level == "cluster" else part(root, 0, "a").parent
    elsewhere = tmp_path / "elsewhere"
    os.rename(linked, elsewhere)
    linked.symlink_to(elsewhere)
    listing = sorted(str(p.relative_to(elsewhere)) for p in elsewhere.rglob("*"))
    for _ in range(2):
        caplog.clear()
        done = compact_history(str(root), before=BEFORE)
        assert [d.path for d in done] in ([], [str(part(root, 1, "a"))])
        assert len(done.problems) == 1 and str(linked) in done.problems[0], done.problems
        assert "symbolic link" in done.problems[0]
        assert not [r for r in caplog.records if r.exc_info]
        assert sorted(str(p.relative_to(elsewhere)) for p in elsewhere.rglob("*")) == listing
    assert linked.is_symlink() and not list((root / history_compact.STAGING).iterdir())


def test_the_writer_never_writes_through_a_symlinked_partition(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "table"
    fill(root, days=1, clusters=("a",), cycles=1)
    elsewhere = tmp_path / "elsewhere"
    os.rename(part(root, 0, "a"), elsewhere)
    part(root, 0, "a").symlink_to(elsewhere)
    listing = sorted(p.name for p in elsewhere.iterdir())
    with pytest.raises(HistoryTableError, match="symbolic link"):
        write_snapshot(str(root), snapshot(result(), cluster="a", start=DAY0 + 7 * CYCLE_MS))
    HistorySink(str(root))(snapshot(result(), cluster="a", start=DAY0 + 8 * CYCLE_MS))
    assert [r.levelname for r in caplog.records] == ["ERROR"] and not caplog.records[0].exc_info
    assert sorted(p.name for p in elsewhere.iterdir()) == listing


# --- memory: bounded by rows, never by how many files hold them ------------------------------


def test_many_tiny_files_are_folded_in_bounded_batches_with_every_row_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file read was held apart until a group's rows were reached, so many one-row files
    each kept their own overhead. At most `_FILES_PER_FOLD` are now held before they are folded
    into one."""
    fill(tmp_path, days=1, clusters=("a",), cycles=40, partitions=1)
    before = rows_of(tmp_path)
    monkeypatch.setattr(history_compact, "_FILES_PER_FOLD", 4, raising=False)
    monkeypatch.setattr(history_compact, "_ROWS_PER_GROUP", 1_000)
    pieces: list[int] = []
    real_batches = history_compact._batches

    def watched(*args: Any, **kwargs: Any) -> Any:
        for table in real_batches(*args, **kwargs):
            pieces.append(max(c.num_chunks for c in table.columns))
            yield table

    monkeypatch.setattr(history_compact, "_batches", watched)
    (done,) = compact_history(str(tmp_path), before=BEFORE)
    assert done.files_in == 40 and len(pieces) == 1  # one group: fewer rows than the bound
    assert pieces[0] <= 2 * 4  # folds of 4 files, not 40 tables held apart
    assert rows_of(tmp_path) == before
    assert pq.ParquetFile(done.file_out).metadata.num_rows == 40


def test_batches_fold_at_most_max_files_and_keep_the_rows_in_order(tmp_path: Path) -> None:
    fill(tmp_path, days=1, clusters=("a",), cycles=30, partitions=1)
    paths = sorted(str(p) for p in part(tmp_path, 0, "a").glob("*.parquet"))
    expected = pa.concat_tables(pq.read_table(p) for p in paths)
    for max_files in (2, 3, 7, 100):
        tables = list(history_compact._batches(pafs.LocalFileSystem(), paths, max_rows=12,
                                                max_files=max_files))
        assert [t.num_rows for t in tables] == [12, 12, 6]
        assert all(max(c.num_chunks for c in t.columns) <= 2 * max_files for t in tables)
        assert pa.concat_tables(tables).to_pylist() == expected.to_pylist()


# --- files and manifests the writer did not write --------------------------------------------


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_wrong_schema_file_leaves_its_partition_and_names_the_file(
        tmp_path: Path, dry_run: bool, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A Parquet file of another schema gave a raw ArrowInvalid traceback."""
    fill(tmp_path, days=1, cycles=3)
    bad = part(tmp_path, 0, "a") / "cycle-1-foreign.parquet"
    pq.write_table(pa.table({"cycle_id": [1], "freshness_ms": ["soon"]}), bad)
    listing = files(part(tmp_path, 0, "a"))
    done = compact_history(str(tmp_path), before=BEFORE, dry_run=dry_run)
    assert [Path(d.path).name for d in done] == ["cluster=b"]
    (problem,) = done.problems
    assert str(bad) in problem and "column cycle_id is int64, the table's is string" in problem
    assert files(part(tmp_path, 0, "a")) == listing
    assert not [r for r in caplog.records if r.exc_info]
    args = ["history", "compact", "--history", str(tmp_path), "--before", "2023-11-17"]
    assert main(args + (["--dry-run"] if dry_run else [])) == 1
    assert "left 1 thing(s) in the table as they were" in capsys.readouterr().err


def test_a_file_that_is_not_parquet_and_a_foreign_manifest_are_named(tmp_path: Path) -> None:
    fill(tmp_path, days=1, cycles=2)
    (part(tmp_path, 0, "a") / "cycle-1-junk.parquet").write_text("junk\n")
    (part(tmp_path, 0, "b") / ".compaction.json").write_text('{"sources": "all"}')
    done = compact_history(str(tmp_path), before=BEFORE)
    assert done == []
    junk, manifest = sorted(done.problems)
    assert "cycle-1-junk.parquet: not a readable Parquet file" in junk
    assert ".compaction.json is not a manifest the compaction wrote" in manifest
    with pytest.raises(HistoryTableError, match="not a manifest"):
        write_snapshot(str(tmp_path), snapshot(result(), cluster="b", start=DAY0 + 9 * CYCLE_MS))


def test_read_history_names_a_wrong_schema_file(tmp_path: Path) -> None:
    fill(tmp_path, days=1, clusters=("a",), cycles=2)
    bad = part(tmp_path, 0, "a") / "cycle-1-foreign.parquet"
    pq.write_table(pa.table({"cycle_id": [1], "freshness_ms": ["soon"]}), bad)
    with pytest.raises(HistoryTableError, match=f"history file {bad}: column cycle_id is int64"):
        read_history(str(tmp_path))


# --- bookkeeping entries of the wrong kind ----------------------------------------------------


def _record_is_a_directory(staging: Path, root: Path) -> Path:
    (staging / "partition").unlink()
    (staging / "partition").mkdir()
    return staging / "partition"


def _record_is_a_fifo(staging: Path, root: Path) -> Path:
    (staging / "partition").unlink()
    os.mkfifo(staging / "partition")
    return staging / "partition"


def _partition_is_a_file(staging: Path, root: Path) -> Path:
    (staging / "partition").write_text("date=2023-11-14/cluster=z")
    (root / "date=2023-11-14").mkdir()
    (root / "date=2023-11-14" / "cluster=z").write_text("a file")
    return root / "date=2023-11-14" / "cluster=z"


def _complete_is_a_directory(staging: Path, root: Path) -> Path:
    (staging / "new" / ".complete").unlink()
    (staging / "new" / ".complete").mkdir()
    return staging / "new" / ".complete"


def _new_is_a_file(staging: Path, root: Path) -> Path:
    for entry in (staging / "new").iterdir():
        entry.unlink()
    (staging / "new").rmdir()
    (staging / "new").write_text("a file")
    return staging / "new"


def _link_in_new(staging: Path, root: Path) -> Path:
    (staging / "new" / "evil.parquet").symlink_to(victim_beside(root) / "precious.txt")
    return staging / "new" / "evil.parquet"


def _dir_link_in_old(staging: Path, root: Path) -> Path:
    (staging / "old" / "x.parquet").symlink_to(victim_beside(root))
    return staging / "old" / "x.parquet"


def _manifest_is_a_fifo(staging: Path, root: Path) -> Path:
    (staging / "new" / ".complete").unlink()  # crashed after the swap: old/ is adopted
    os.rename(staging / "new", root / "date=2023-11-14")
    (root / "date=2023-11-14").rename(root / "date=2023-11-14-tmp")
    (root / "date=2023-11-14").mkdir()
    (root / "date=2023-11-14-tmp").rename(root / "date=2023-11-14" / "cluster=z")
    os.mkfifo(root / "date=2023-11-14" / "cluster=z" / ".compaction.json")
    return root / "date=2023-11-14" / "cluster=z" / ".compaction.json"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("craft", [
    _record_is_a_directory, _record_is_a_fifo, _partition_is_a_file, _complete_is_a_directory,
    _new_is_a_file, _link_in_new, _dir_link_in_old, _manifest_is_a_fifo])
def test_a_staging_entry_of_the_wrong_kind_is_left_in_one_line_before_anything_moves(
        tmp_path: Path, craft: Any, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A directory or FIFO where the record is, a file where a folder is, or a link among the
    staged files crashed (half-way, after a rename), hung, or moved the link into the table,
    on every later run. Each is now refused before anything moves; the rest is compacted."""
    root = tmp_path / "table"
    fill(root, days=1, clusters=("a",), cycles=3)
    staging = crafted_swap(root, "date=2023-11-14/cluster=z")
    named = craft(staging, root)
    listing = sorted(str(p.relative_to(staging)) for p in staging.rglob("*"))
    for _ in range(2):  # and the next run says it again, the same way
        caplog.clear()
        done = compact_history(str(root), before=BEFORE)
        assert len(done.problems) == 1, done.problems
        assert str(staging) in done.problems[0] or str(named) in done.problems[0]
        assert not [r for r in caplog.records if r.exc_info]
        assert sorted(str(p.relative_to(staging)) for p in staging.rglob("*")) == listing
        assert not [p for p in root.rglob("*") if p.is_symlink() and staging not in p.parents]
    assert [d.files_in for d in done] == []  # compacted by the first run
    assert len(files(part(root, 0, "a"))) == 2
    assert main(["history", "compact", "--history", str(root), "--before", "2023-11-17"]) == 1
    err = capsys.readouterr().err
    assert "left 1 thing(s) in the table as they were" in err and "Traceback" not in err


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["file", "link"])
def test_a_compaction_folder_that_is_not_a_folder_is_one_line_never_a_traceback(
        tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A `_compaction` file stopped the run with a listing error; through a linked one each
    partition was staged, and swapped, outside the table. No partition can be staged while it
    is there, so the run says so once and changes nothing (a dry run still lists)."""
    root = tmp_path / "table"
    fill(root, days=1, clusters=("a", "b"), cycles=3)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if kind == "file":
        (root / history_compact.STAGING).write_text("not a folder")
    else:
        (root / history_compact.STAGING).symlink_to(elsewhere)
    listing = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    done = compact_history(str(root), before=BEFORE)
    (problem,) = done.problems
    assert f"{root / history_compact.STAGING} is " in problem and done == []
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == listing
    assert not list(elsewhere.iterdir())
    assert main(["history", "compact", "--history", str(root), "--before", "2023-11-17"]) == 1
    assert "Traceback" not in capsys.readouterr().err
    assert [d.files_in for d in compact_history(str(root), before=BEFORE, dry_run=True)] == [3, 3]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("crafted", ["fifo-plan", "linked-staged-file"])
def test_an_object_store_staging_folder_of_the_wrong_kind_is_left(
        tmp_path: Path, crafted: str) -> None:
    """Locally the copy strategy read a FIFO plan (hang) and copied a linked staged file's
    target into the table."""
    root = tmp_path / "table"
    fill(root, days=1, clusters=("a",), cycles=2)
    victim = victim_beside(root, "precious.parquet")
    staging = root / history_compact.STAGING / TOKEN
    staging.mkdir(parents=True)
    if crafted == "fifo-plan":
        os.mkfifo(staging / "plan.json")
    else:
        (staging / f"compacted-{TOKEN}.parquet").symlink_to(victim / "precious.parquet")
        (staging / "plan.json").write_text(json.dumps({
            "partition": "date=2023-11-15/cluster=a", "file": f"compacted-{TOKEN}.parquet",
            "sources": [], "folded": []}))
    done = compact_history(str(root), before=BEFORE, strategy="copy")
    assert len(done.problems) == 1 and str(staging) in done.problems[0], done.problems
    assert not [p for p in root.rglob("*") if p.is_symlink() and p.parent != staging]
    assert [d.files_in for d in done] == [2]
