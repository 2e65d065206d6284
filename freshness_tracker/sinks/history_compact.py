"""Compaction of closed days of the history table: many cycle files → one file per partition.

At a 30 s cycle the writers leave 2,880 small files per cluster per day; listing and opening
them dominates a report over a quarter. `compact_history` rewrites each `date=D/cluster=C/`
directory of a day before `before` into one Parquet file, without losing or duplicating a row
and without a reader ever seeing a half-done state:

1. the directory's files are streamed (bounded memory) into one file in a hidden sibling
   directory, and its row count is checked against the sources';
2. the old directory is renamed away and the new one renamed into place: a reader listing in
   between sees the partition absent for an instant, never twice;
3. a file a late writer put into the old directory after it was listed is moved across, and the
   old directory is deleted.

A crash at any step is repaired by the next run (hidden directories are what it left). Every
step relies on atomic renames, so compaction runs on local, NFS or HDFS-like filesystems; on
object stores, where a rename is a copy, it refuses rather than risk a window of duplicates.
A `.compaction.json` manifest in the partition names the cycle files folded in; the writer reads
it so that re-writing a compacted cycle is refused instead of adding its rows twice.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from freshness_tracker.errors import FreshnessTrackerError
from freshness_tracker.sinks.history import FILE_SCHEMA, MANIFEST, compacted_sources

__all__ = ["CompactedPartition", "CompactionError", "compact_history"]

log = logging.getLogger(__name__)

_NEW, _OLD, _COMPLETE = ".new-", ".old-", ".complete"
_ROWS_PER_GROUP = 250_000  # ~50 MB of history rows in memory at most


class CompactionError(FreshnessTrackerError):
    """The table cannot be compacted as asked (wrong filesystem, unreadable file)."""


@dataclass(frozen=True)
class CompactedPartition:
    """One `date=…/cluster=…` directory: what was (or, in a dry run, would be) folded."""

    path: str
    files_in: int
    rows: int
    file_out: str | None  # None in a dry run


def compact_history(root: str, *, before: dt.date, dry_run: bool = False,
                    after_write: Callable[[Path], None] | None = None) -> list[CompactedPartition]:
    """Compact every partition of a day earlier than `before`; returns what was compacted.

    `after_write` is called with the partition directory once the new file is written and
    before the swap (a seam for tests that play a late writer).
    """
    base = _local_root(root)
    done: list[CompactedPartition] = []
    for date_dir in sorted(base.glob("date=*")):
        day = _day_of(date_dir)
        if day is None or day >= before:
            continue
        if not dry_run:
            _repair(date_dir)
        for partition in sorted(p for p in date_dir.glob("cluster=*") if p.is_dir()):
            result = _compact_partition(partition, dry_run, after_write)
            if result is not None:
                done.append(result)
    return done


def _local_root(root: str) -> Path:
    if "://" in root and not root.startswith("file://"):
        raise CompactionError(
            f"history compaction needs a filesystem with atomic renames (local, NFS, a mounted "
            f"HDFS); {root} is an object store, where a rename is a copy. Compact there with "
            f"Spark instead (docs/spark.md, 'Compacting old days')")
    path = Path(root[len("file://"):] if root.startswith("file://") else root)
    if not path.is_dir():
        raise CompactionError(f"history table {root} does not exist")
    return path


def _day_of(date_dir: Path) -> dt.date | None:
    try:
        return dt.date.fromisoformat(date_dir.name.removeprefix("date="))
    except ValueError:
        return None


def _visible_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.parquet") if not p.name.startswith((".", "_")))


def _compact_partition(partition: Path, dry_run: bool,
                       after_write: Callable[[Path], None] | None) -> CompactedPartition | None:
    sources = _visible_files(partition)
    if len(sources) <= 1:
        return None
    if dry_run:
        rows = sum(pq.ParquetFile(p).metadata.num_rows for p in sources)
        return CompactedPartition(str(partition), len(sources), rows, None)
    token = uuid.uuid4().hex[:12]
    new = partition.with_name(f".{partition.name}{_NEW}{token}")
    new.mkdir()
    try:
        out = new / f"compacted-{token}.parquet"
        rows, written = _write_compacted(sources, out)
        if written != rows:
            raise CompactionError(f"{partition}: wrote {written} rows of {rows}; nothing changed")
        folded = sorted(compacted_sources(partition) | {p.name for p in sources})
        (new / MANIFEST).write_text(json.dumps({"sources": folded}))
        (new / _COMPLETE).touch()
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    if after_write is not None:
        after_write(partition)
    old = partition.with_name(f".{partition.name}{_OLD}{token}")
    os.rename(partition, old)
    os.rename(new, partition)
    (partition / _COMPLETE).unlink()
    _adopt_late_files(old, partition, {p.name for p in sources})
    log.info("history compacted partition=%s files=%d rows=%d", partition, len(sources), rows)
    return CompactedPartition(str(partition), len(sources), rows, str(partition / out.name))


def _batches(sources: list[Path]) -> Iterator[pa.Table]:
    """The sources' rows in order, regrouped into tables of at least _ROWS_PER_GROUP rows
    (the last one excepted)."""
    pending: list[pa.Table] = []
    size = 0
    for path in sources:
        try:
            table = pq.read_table(path, schema=FILE_SCHEMA)
        except (OSError, pa.ArrowInvalid) as exc:
            raise CompactionError(f"cannot read {path}: {exc}; nothing changed") from exc
        pending.append(table)
        size += table.num_rows
        if size >= _ROWS_PER_GROUP:
            yield pa.concat_tables(pending)
            pending, size = [], 0
    if pending:
        yield pa.concat_tables(pending)


def _write_compacted(sources: list[Path], out: Path) -> tuple[int, int]:
    """(rows read from the sources, rows the written file holds): equal, or nothing changes."""
    read = 0
    with pq.ParquetWriter(out, FILE_SCHEMA, compression="zstd") as writer:
        for table in _batches(sources):
            read += table.num_rows
            writer.write_table(table, row_group_size=max(table.num_rows, 1))  # one group each
    with open(out, "rb") as f:
        os.fsync(f.fileno())
    return read, int(pq.ParquetFile(out).metadata.num_rows)


def _adopt_late_files(old: Path, partition: Path, folded: set[str]) -> None:
    """Move files written into the old directory after it was listed, then delete it."""
    for late in _visible_files(old):
        if late.name not in folded:
            log.info("history compaction kept a late file %s", late.name)
            os.replace(late, partition / late.name)
    shutil.rmtree(old)


def _repair(date_dir: Path) -> None:
    """Finish or undo what a crashed compaction left in this day's directory."""
    for new in sorted(date_dir.glob(f".cluster=*{_NEW}*")):
        name, token = new.name[1:].rsplit(_NEW, 1)
        partition = date_dir / name
        swapped_out = (date_dir / f".{name}{_OLD}{token}").exists()
        if (new / _COMPLETE).exists() and swapped_out:
            # crashed between the two renames: finish the swap, keeping anything a writer put
            # into a re-created partition directory meanwhile
            if partition.exists():
                for late in _visible_files(partition):
                    os.replace(late, new / late.name)
                shutil.rmtree(partition)
            os.rename(new, partition)
            (partition / _COMPLETE).unlink()
            log.warning("history compaction: finished an interrupted swap of %s", partition)
        else:
            shutil.rmtree(new)  # crashed before the swap: the partition is untouched
    for old in sorted(date_dir.glob(f".cluster=*{_OLD}*")):
        partition = date_dir / old.name[1:].rsplit(_OLD, 1)[0]
        if partition.exists() and (partition / MANIFEST).exists():
            _adopt_late_files(old, partition, set(compacted_sources(partition)))
            log.warning("history compaction: cleaned up after an interrupted run in %s",
                        partition)
        else:
            log.error("history compaction: %s has no compacted partition beside it; left "
                      "untouched for a person to look at", old)
