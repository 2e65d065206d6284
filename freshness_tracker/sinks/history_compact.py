"""Compaction of closed days of the history table: many cycle files → one file per partition.

At a 30 s cycle the writers leave 2,880 small files per cluster per day; listing and opening
them dominates a report over a quarter. `compact_history` rewrites each `date=D/cluster=C/`
directory of a day before `before` into one Parquet file, without losing or duplicating a row
and without a reader ever seeing a row twice:

1. the partition's files are streamed (bounded memory) into one file under
   `<root>/_compaction/<token>/`, outside every reader's view (Spark and pyarrow skip `_`
   names; the documented DuckDB glob `date=*/cluster=*/*.parquet` never reaches it), and its
   row count is checked against the sources';
2. the swap. On a filesystem with atomic renames (local, NFS, a mounted HDFS) the partition
   directory is renamed away and the new one renamed into place: a reader listing in between
   sees the partition absent for an instant. On an object store (`s3://`, `gs://`, ... where
   a rename is a copy) a plan naming the sources is written first, then the sources are
   deleted and the compacted file is copied into the partition: a reader sees the partition's
   rows absent while that runs, never twice;
3. a file a late writer put into the partition after it was listed is kept.

A crash at any step is repaired by the next run (`_compaction/` holds what it left). A
`.compaction.json` manifest in the partition names the cycle files folded in; the writer reads
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
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from freshness_tracker.errors import FreshnessTrackerError
from freshness_tracker.sinks.history import (
    FILE_SCHEMA,
    MANIFEST,
    _filesystem,
    compacted_sources,
)

__all__ = ["STAGING", "CompactedPartition", "CompactionError", "compact_history"]

log = logging.getLogger(__name__)

#: Where work in progress lives, under the table root: no reader of the table looks there.
STAGING = "_compaction"
_COMPLETE = ".complete"
_TARGET = "partition"  # names the partition a staging directory is for
_PLAN = "plan.json"  # object stores: what to delete and what to copy, written before either
_ROWS_PER_GROUP = 250_000  # ~50 MB of history rows in memory at most


class CompactionError(FreshnessTrackerError):
    """The table cannot be compacted as asked (missing, unreadable file)."""


@dataclass(frozen=True)
class CompactedPartition:
    """One `date=…/cluster=…` directory: what was (or, in a dry run, would be) folded."""

    path: str
    files_in: int
    rows: int
    file_out: str | None  # None in a dry run


def compact_history(root: str, *, before: dt.date, dry_run: bool = False,
                    after_write: Callable[[Path], None] | None = None,
                    strategy: str | None = None) -> list[CompactedPartition]:
    """Compact every partition of a day earlier than `before`; returns what was compacted.

    `strategy` is "rename" (local paths: atomic directory swap) or "copy" (URIs: object
    stores); None picks by the path. `after_write` is called with the partition once the new
    file is written and before the swap (a seam for tests that play a late writer).
    """
    fs, base, local = _filesystem(root)
    strategy = strategy or ("rename" if local else "copy")
    if strategy not in ("rename", "copy"):
        raise ValueError(f"unknown compaction strategy {strategy!r}")
    if fs.get_file_info(base).type != pafs.FileType.Directory and local:
        raise CompactionError(f"history table {root} does not exist")
    if not dry_run:
        _repair(fs, base, strategy)
    done: list[CompactedPartition] = []
    for date_dir in _dirs(fs, base, "date="):
        try:
            day = dt.date.fromisoformat(date_dir.rsplit("/", 1)[1].removeprefix("date="))
        except ValueError:
            continue
        if day >= before:
            continue
        for partition in _dirs(fs, date_dir, "cluster="):
            if strategy == "rename":
                result = _compact_by_rename(Path(base), Path(partition), dry_run, after_write)
            else:
                result = _compact_by_copy(fs, base, partition, dry_run, after_write)
            if result is not None:
                done.append(result)
    return done


def _dirs(fs: pafs.FileSystem, parent: str, prefix: str) -> list[str]:
    try:
        infos = fs.get_file_info(pafs.FileSelector(parent, allow_not_found=True))
    except OSError as exc:
        raise CompactionError(f"cannot list {parent}: {exc}") from exc
    return sorted(i.path for i in infos
                  if i.type == pafs.FileType.Directory and i.base_name.startswith(prefix))


def _visible(fs: pafs.FileSystem, directory: str) -> list[str]:
    infos = fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.File
                  and i.base_name.endswith(".parquet")
                  and not i.base_name.startswith((".", "_")))


# --- reading and writing ------------------------------------------------------------------


def _batches(fs: pafs.FileSystem, sources: list[str]) -> Iterator[pa.Table]:
    """The sources' rows in order, regrouped into tables of at least _ROWS_PER_GROUP rows
    (the last one excepted)."""
    pending: list[pa.Table] = []
    size = 0
    for path in sources:
        try:
            table = pq.read_table(path, schema=FILE_SCHEMA, filesystem=fs)
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
    return _write_compacted_fs(pafs.LocalFileSystem(), [str(p) for p in sources], str(out))


def _write_compacted_fs(fs: pafs.FileSystem, sources: list[str], out: str) -> tuple[int, int]:
    read = 0
    with fs.open_output_stream(out) as sink, \
            pq.ParquetWriter(sink, FILE_SCHEMA, compression="zstd") as writer:
        for table in _batches(fs, sources):
            read += table.num_rows
            writer.write_table(table, row_group_size=max(table.num_rows, 1))  # one group each
    if isinstance(fs, pafs.LocalFileSystem):
        with open(out, "rb") as f:
            os.fsync(f.fileno())
    with fs.open_input_file(out) as f:
        written = int(pq.ParquetFile(f).metadata.num_rows)
    return read, written


def _rows(fs: pafs.FileSystem, paths: list[str]) -> int:
    total = 0
    for path in paths:
        with fs.open_input_file(path) as f:
            total += pq.ParquetFile(f).metadata.num_rows
    return total


# --- local, NFS, HDFS: an atomic directory swap ---------------------------------------------


def _compact_by_rename(base: Path, partition: Path, dry_run: bool,
                       after_write: Callable[[Path], None] | None) -> CompactedPartition | None:
    sources = [partition / n for n in _visible(pafs.LocalFileSystem(), str(partition))]
    if len(sources) <= 1:
        return None
    if dry_run:
        rows = sum(pq.ParquetFile(p).metadata.num_rows for p in sources)
        return CompactedPartition(str(partition), len(sources), rows, None)
    token = uuid.uuid4().hex[:12]
    staging = base / STAGING / token
    new = staging / "new"
    new.mkdir(parents=True)
    (staging / _TARGET).write_text(partition.relative_to(base).as_posix())
    try:
        out = new / f"compacted-{token}.parquet"
        rows, written = _write_compacted(sources, out)
        if written != rows:
            raise CompactionError(f"{partition}: wrote {written} rows of {rows}; nothing changed")
        folded = sorted(compacted_sources(partition) | {p.name for p in sources})
        (new / MANIFEST).write_text(json.dumps({"sources": folded}))
        (new / _COMPLETE).touch()
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if after_write is not None:
        after_write(partition)
    old = staging / "old"
    os.rename(partition, old)
    os.rename(new, partition)
    (partition / _COMPLETE).unlink()
    _adopt_late_files(old, partition, {p.name for p in sources})
    shutil.rmtree(staging, ignore_errors=True)
    log.info("history compacted partition=%s files=%d rows=%d", partition, len(sources), rows)
    return CompactedPartition(str(partition), len(sources), rows, str(partition / out.name))


def _adopt_late_files(old: Path, partition: Path, folded: set[str]) -> None:
    """Move files written into the old directory after it was listed, then delete it."""
    for late in _visible(pafs.LocalFileSystem(), str(old)):
        if late not in folded:
            log.info("history compaction kept a late file %s", late)
            os.replace(old / late, partition / late)
    shutil.rmtree(old)


def _repair_rename(staging: Path, base: Path) -> None:
    target_file = staging / _TARGET
    if not target_file.exists():
        shutil.rmtree(staging, ignore_errors=True)  # crashed before it had a target
        return
    partition = base / target_file.read_text()
    new, old = staging / "new", staging / "old"
    if (new / _COMPLETE).exists() and old.exists():
        # crashed between the two renames: finish the swap, keeping anything a writer put
        # into a re-created partition directory meanwhile
        if partition.exists():
            for late in _visible(pafs.LocalFileSystem(), str(partition)):
                os.replace(partition / late, new / late)
            shutil.rmtree(partition)
        os.rename(new, partition)
        (partition / _COMPLETE).unlink()
        log.warning("history compaction: finished an interrupted swap of %s", partition)
    if old.exists():
        if partition.exists() and (partition / MANIFEST).exists():
            _adopt_late_files(old, partition, set(compacted_sources(partition)))
            log.warning("history compaction: cleaned up after an interrupted run in %s",
                        partition)
        else:
            log.error("history compaction: %s has no compacted partition beside it; left "
                      "untouched for a person to look at", old)
            return
    shutil.rmtree(staging, ignore_errors=True)  # crashed before the swap: nothing changed


# --- object stores: a plan, then delete and copy ------------------------------------------


def _compact_by_copy(fs: pafs.FileSystem, base: str, partition: str, dry_run: bool,
                     after_write: Callable[[Path], None] | None) -> CompactedPartition | None:
    sources = _visible(fs, partition)
    if len(sources) <= 1:
        return None
    paths = [f"{partition}/{n}" for n in sources]
    if dry_run:
        return CompactedPartition(partition, len(sources), _rows(fs, paths), None)
    token = uuid.uuid4().hex[:12]
    staging = f"{base}/{STAGING}/{token}"
    fs.create_dir(staging, recursive=True)
    name = f"compacted-{token}.parquet"
    try:
        rows, written = _write_compacted_fs(fs, paths, f"{staging}/{name}")
        if written != rows:
            raise CompactionError(f"{partition}: wrote {written} rows of {rows}; nothing changed")
        plan = {"partition": partition[len(base) + 1:], "file": name, "sources": sources,
                "folded": sorted(compacted_sources(partition, fs) | set(sources))}
        with fs.open_output_stream(f"{staging}/{_PLAN}") as f:  # the commit point
            f.write(json.dumps(plan).encode())
    except BaseException:
        fs.delete_dir(staging)
        raise
    if after_write is not None:
        after_write(Path(partition))
    _apply_plan(fs, base, staging, plan)
    log.info("history compacted partition=%s files=%d rows=%d", partition, len(sources), rows)
    return CompactedPartition(partition, len(sources), rows, f"{partition}/{name}")


def _apply_plan(fs: pafs.FileSystem, base: str, staging: str, plan: dict[str, Any]) -> None:
    """Idempotent: delete the folded sources, copy the compacted file in, write the manifest,
    drop the staging directory. A late file (not in the plan) is never touched."""
    partition = f"{base}/{plan['partition']}"
    for name in plan["sources"]:
        path = f"{partition}/{name}"
        if fs.get_file_info(path).type == pafs.FileType.File:
            fs.delete_file(path)
    final = f"{partition}/{plan['file']}"
    if fs.get_file_info(final).type != pafs.FileType.File:
        fs.copy_file(f"{staging}/{plan['file']}", final)
    with fs.open_output_stream(f"{partition}/{MANIFEST}") as f:
        f.write(json.dumps({"sources": plan["folded"]}).encode())
    fs.delete_dir(staging)


# --- crash repair -------------------------------------------------------------------------


def _repair(fs: pafs.FileSystem, base: str, strategy: str) -> None:
    """Finish or undo what a crashed compaction left under `_compaction/`."""
    for staging in _dirs(fs, f"{base}/{STAGING}", ""):
        if strategy == "rename":
            _repair_rename(Path(staging), Path(base))
            continue
        try:
            with fs.open_input_stream(f"{staging}/{_PLAN}") as f:
                plan = json.loads(f.read())
        except FileNotFoundError:
            fs.delete_dir(staging)  # crashed before its plan: the partition is untouched
            continue
        _apply_plan(fs, base, staging, plan)
        log.warning("history compaction: finished an interrupted run of %s", plan["partition"])
