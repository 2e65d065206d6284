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

Nothing read from disk is trusted to name a path: a staging record must name a partition folder
of this table in the writer's shape, with no symbolic link on the way, and a symbolic link in
the table is never followed, written or deleted through. Whatever does not fit (such a record,
a link, a file of another schema) is left as it is, reported in one line, and does not stop the
other partitions; the caller sees it in `Compaction.problems`.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import shutil
import stat
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
    PARTITION_NAME,
    HistoryTableError,
    _filesystem,
    _first_line,
    compacted_sources,
    file_problem,
    read_bookkeeping,
    shown,
)

__all__ = ["STAGING", "CompactedPartition", "Compaction", "CompactionError", "compact_history"]

log = logging.getLogger(__name__)

#: Where work in progress lives, under the table root: no reader of the table looks there.
STAGING = "_compaction"
_COMPLETE = ".complete"
_TARGET = "partition"  # names the partition a staging directory is for
_PLAN = "plan.json"  # object stores: what to delete and what to copy, written before either
_ROWS_PER_GROUP = 250_000  # ~50 MB of history rows in memory at most
#: Read files held apart before they are folded into one table: each read file costs tens of
#: KB besides its rows, so a day of one-row files must not be held file by file.
_FILES_PER_FOLD = 256
_TOKEN = re.compile(r"[0-9a-f]{12}")  # a staging folder's name: uuid4().hex[:12]
#: A cycle file name a plan may delete: one path segment, visible to readers.
_SOURCE = re.compile(r"[^./_\x00][^/\x00]*\.parquet")
_RECORD_LIMIT = 4096  # a partition record is one relative path
_PLAN_LIMIT = 64 << 20  # a plan names one partition's files


class CompactionError(FreshnessTrackerError):
    """The table cannot be compacted as asked (missing, unreadable file)."""


@dataclass(frozen=True)
class CompactedPartition:
    """One `date=…/cluster=…` directory: what was (or, in a dry run, would be) folded."""

    path: str
    files_in: int
    rows: int
    file_out: str | None  # None in a dry run


class Compaction(list[CompactedPartition]):
    """The partitions compacted (in a dry run: to compact), and `problems`: one line for each
    thing left as it was for a person to look at. A link, a foreign record or a file of another
    schema in one partition must not keep the others from being compacted, nor pass unseen."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []

    def left(self, problem: str) -> None:
        log.warning("history compaction: %s", problem)
        self.problems.append(problem)


def compact_history(root: str, *, before: dt.date, dry_run: bool = False,
                    after_write: Callable[[Path], None] | None = None,
                    strategy: str | None = None) -> Compaction:
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
    done = Compaction()
    if not dry_run and not _repair(fs, base, strategy, done):
        return done  # no staging folder to work in: compacting would fail or leave the table
    for date_dir in _dirs(fs, base, "date=", done):
        try:
            day = dt.date.fromisoformat(date_dir.rsplit("/", 1)[1].removeprefix("date="))
        except ValueError:
            continue
        if day >= before:
            continue
        for partition in _dirs(fs, date_dir, "cluster=", done):
            if not PARTITION_NAME.fullmatch(partition[len(base) + 1:]):
                done.left(f"skipped {shown(partition)}: not a partition name the history "
                          f"writer makes")
                continue
            try:
                if strategy == "rename":
                    result = _compact_by_rename(Path(base), Path(partition), dry_run, after_write)
                else:
                    result = _compact_by_copy(fs, base, partition, dry_run, after_write)
            except (CompactionError, HistoryTableError) as exc:
                done.left(f"{exc}; partition left as it was")
                continue
            if result is not None:
                done.append(result)
    return done


def _is_link(fs: pafs.FileSystem, path: str) -> bool:
    """Object stores have no links; a local one is never followed out of the table."""
    return isinstance(fs, pafs.LocalFileSystem) and os.path.islink(path)


def _dirs(fs: pafs.FileSystem, parent: str, prefix: str, done: Compaction) -> list[str]:
    try:
        infos = fs.get_file_info(pafs.FileSelector(parent, allow_not_found=True))
    except OSError as exc:
        raise CompactionError(f"cannot list {shown(parent)}: {exc}") from exc
    found = []
    for info in infos:
        if not info.base_name.startswith(prefix):
            continue
        if _is_link(fs, info.path):
            done.left(f"skipped {shown(info.path)}: a symbolic link, never followed out of the "
                      f"table (replace it with the folder it points to)")
        elif info.type == pafs.FileType.Directory:
            found.append(info.path)
    return sorted(found)


def _visible(fs: pafs.FileSystem, directory: str) -> list[str]:
    """The partition's cycle files. Raises CompactionError if it holds a symbolic link: the
    swap would delete or move it, and reading it reads outside the table."""
    infos = fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
    names = []
    for info in infos:
        if _is_link(fs, info.path):
            raise CompactionError(f"{shown(info.path)} is a symbolic link, never followed out "
                                  f"of the table")
        if info.type == pafs.FileType.File and info.base_name.endswith(".parquet") \
                and not info.base_name.startswith((".", "_")):
            names.append(info.base_name)
    return sorted(names)


# --- reading and writing ------------------------------------------------------------------


def _checked_rows(fs: pafs.FileSystem, paths: list[str]) -> int:
    """The sources' rows; CompactionError naming the first file that is not a Parquet file of
    the table's schema (it would fail the write, or lose or null a column, mid-way)."""
    total = 0
    for path in paths:
        problem = file_problem(fs, path)
        if problem is not None:
            raise CompactionError(f"{shown(path)}: {problem}")
        with fs.open_input_file(path) as f:
            total += pq.ParquetFile(f).metadata.num_rows
    return total


def _batches(fs: pafs.FileSystem, sources: list[str], *, max_rows: int | None = None,
             max_files: int | None = None) -> Iterator[pa.Table]:
    """The sources' rows in order, regrouped into tables of at least `max_rows` rows (the last
    one excepted). At most `max_files` read files are held apart: they are folded into one
    contiguous table as they come (and the folds, once as many), so memory is bounded by the
    rows of one group, not by how many files hold them."""
    max_rows = _ROWS_PER_GROUP if max_rows is None else max_rows
    max_files = max(2, _FILES_PER_FOLD if max_files is None else max_files)
    folds: list[pa.Table] = []
    pending: list[pa.Table] = []
    size = 0
    for path in sources:
        try:
            table = pq.read_table(path, schema=FILE_SCHEMA, filesystem=fs)
        except (OSError, pa.ArrowException) as exc:
            raise CompactionError(f"cannot read {shown(path)}: {_first_line(exc)}") from exc
        pending.append(table)
        size += table.num_rows
        if size >= max_rows:
            yield pa.concat_tables([*folds, *pending])
            folds, pending, size = [], [], 0
        elif len(pending) >= max_files:
            folds.append(_fold(pending))
            pending = []
            if len(folds) >= max_files:
                folds = [_fold(folds)]
    if folds or pending:
        yield pa.concat_tables([*folds, *pending])


def _fold(tables: list[pa.Table]) -> pa.Table:
    """One table in contiguous buffers: the pieces it was made of can be freed."""
    return pa.concat_tables(tables).combine_chunks()


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


# --- local, NFS, HDFS: an atomic directory swap ---------------------------------------------


def _compact_by_rename(base: Path, partition: Path, dry_run: bool,
                       after_write: Callable[[Path], None] | None) -> CompactedPartition | None:
    names = _visible(pafs.LocalFileSystem(), str(partition))
    if len(names) <= 1:
        return None
    sources = [partition / n for n in names]
    rows = _checked_rows(pafs.LocalFileSystem(), [str(p) for p in sources])
    if dry_run:
        return CompactedPartition(str(partition), len(sources), rows, None)
    folded = sorted(compacted_sources(partition) | set(names))  # a bad manifest: stop here
    token = uuid.uuid4().hex[:12]
    staging = base / STAGING / token
    new = staging / "new"
    new.mkdir(parents=True)
    (staging / _TARGET).write_text(partition.relative_to(base).as_posix())
    try:
        out = new / f"compacted-{token}.parquet"
        read, written = _write_compacted(sources, out)
        if not read == written == rows:
            raise CompactionError(f"{partition}: wrote {written} rows of {read} read and "
                                  f"{rows} listed; nothing changed")
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
    _adopt_late_files(old, partition, set(names))
    shutil.rmtree(staging, ignore_errors=True)
    log.info("history compacted partition=%s files=%d rows=%d", partition, len(sources), rows)
    return CompactedPartition(str(partition), len(sources), rows, str(partition / out.name))


def _late(directory: Path, folded: set[str]) -> list[str]:
    """Cycle files (or links: moved as links, never followed) not among `folded`."""
    with os.scandir(directory) as entries:
        return sorted(e.name for e in entries
                      if (e.is_symlink() or e.is_file(follow_symlinks=False))
                      and e.name.endswith(".parquet") and not e.name.startswith((".", "_"))
                      and e.name not in folded)


def _adopt_late_files(old: Path, partition: Path, folded: set[str]) -> None:
    """Move files written into the old directory after it was listed, then delete it."""
    for late in _late(old, folded):
        log.info("history compaction kept a late file %s", shown(late))
        os.replace(old / late, partition / late)
    shutil.rmtree(old)


def _recorded_partition(base: Path, record: Path) -> tuple[Path | None, str]:
    """The partition a staging record names, or (None, why it is not one of this table's)."""
    try:
        raw = read_bookkeeping(record, _RECORD_LIMIT)
    except HistoryTableError:
        return None, "is not a regular file"
    try:
        rel = raw.decode()
    except UnicodeDecodeError:
        return None, "holds no partition name"
    why = _partition_problem(pafs.LocalFileSystem(), str(base), rel)
    return (None, why) if why else (base / rel, "")


def _kind(path: Path) -> int | None:
    """The file type bits of `path` itself (a link is a link), None if it is absent."""
    try:
        return stat.S_IFMT(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None


def _staging_problem(staging: Path, partition: Path) -> str | None:
    """None if every entry the repair would rename, move or delete is of the kind the
    compaction makes: checked before anything moves, so a crafted state is refused whole
    instead of failing half-way, and no link or device is ever moved into the table."""
    expected = {staging / "new": stat.S_IFDIR, staging / "old": stat.S_IFDIR,
                staging / "new" / _COMPLETE: stat.S_IFREG, partition: stat.S_IFDIR}
    for path, kind in expected.items():
        found = _kind(path)
        if found is not None and found != kind:
            what = "a symbolic link" if found == stat.S_IFLNK else "not a " + (
                "folder" if kind == stat.S_IFDIR else "regular file")
            return f"{shown(str(path))} is {what}"
    for folder in (staging / "new", staging / "old", partition):
        if _kind(folder) is None:
            continue
        with os.scandir(folder) as entries:
            for entry in entries:
                if not entry.is_file(follow_symlinks=False):
                    what = "a symbolic link" if entry.is_symlink() else "not a regular file"
                    return f"{shown(entry.path)} is {what}"
    return None


def _partition_problem(fs: pafs.FileSystem, base: str, rel: str) -> str | None:
    """None if `rel`, read from the table's bookkeeping, names a partition folder of the table:
    the writer's shape, a real date, and (locally) no link on the way, resolving inside."""
    match = PARTITION_NAME.fullmatch(rel)
    try:
        valid = match is not None and dt.date.fromisoformat(match.group(1)) is not None
    except ValueError:
        valid = False
    if not valid:
        return f"names {shown(rel, 120)!r}, not a partition folder of this table"
    if isinstance(fs, pafs.LocalFileSystem):
        date_dir = f"{base}/{rel.split('/')[0]}"
        for step in (date_dir, f"{base}/{rel}"):
            if os.path.islink(step):
                return f"names {shown(rel, 120)!r}, which is reached through a symbolic link"
        if Path(base, rel).resolve() != Path(base).resolve() / rel:
            return f"names {shown(rel, 120)!r}, which resolves outside this table"
    return None


def _repair_rename(staging: Path, base: Path, done: Compaction) -> None:
    target_file = staging / _TARGET
    new, old = staging / "new", staging / "old"
    if _kind(target_file) is None:
        shutil.rmtree(staging, ignore_errors=True)  # crashed before it had a target
        return
    partition, why = _recorded_partition(base, target_file)
    if partition is None:
        done.left(f"{shown(str(target_file))} {why}: left as it is, nothing moved or deleted; "
                  f"remove the {shown(str(staging))} folder once looked at")
        return
    why_not = _staging_problem(staging, partition)
    if why_not is not None:
        done.left(f"{why_not}: left as it is, nothing moved or deleted; remove the "
                  f"{shown(str(staging))} folder once looked at")
        return
    if (new / _COMPLETE).exists() and old.exists():
        # crashed between the two renames: finish the swap, keeping anything a writer put
        # into a re-created partition directory meanwhile
        if partition.exists():
            for late in _late(partition, set()):
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
            done.left(f"{old} has no compacted partition beside it; left untouched for a "
                      f"person to look at")
            return
    shutil.rmtree(staging, ignore_errors=True)  # crashed before the swap: nothing changed


# --- object stores: a plan, then delete and copy ------------------------------------------


def _compact_by_copy(fs: pafs.FileSystem, base: str, partition: str, dry_run: bool,
                     after_write: Callable[[Path], None] | None) -> CompactedPartition | None:
    sources = _visible(fs, partition)
    if len(sources) <= 1:
        return None
    paths = [f"{partition}/{n}" for n in sources]
    rows = _checked_rows(fs, paths)
    if dry_run:
        return CompactedPartition(partition, len(sources), rows, None)
    folded = sorted(compacted_sources(partition, fs) | set(sources))  # a bad manifest: stop
    token = uuid.uuid4().hex[:12]
    staging = f"{base}/{STAGING}/{token}"
    fs.create_dir(staging, recursive=True)
    name = f"compacted-{token}.parquet"
    try:
        read, written = _write_compacted_fs(fs, paths, f"{staging}/{name}")
        if not read == written == rows:
            raise CompactionError(f"{partition}: wrote {written} rows of {read} read and "
                                  f"{rows} listed; nothing changed")
        plan = {"partition": partition[len(base) + 1:], "file": name, "sources": sources,
                "folded": folded}
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


def _plan_problem(fs: pafs.FileSystem, base: str, plan: Any, token: str) -> str | None:
    """None if `plan` is one this compaction wrote for staging folder `token`: it names a
    partition of the table, its own compacted file, and cycle file names to delete."""
    if not isinstance(plan, dict):
        return "is not a plan the compaction wrote"
    partition = plan.get("partition")
    if not isinstance(partition, str):
        return "names no partition"
    why = _partition_problem(fs, base, partition)
    if why:
        return why
    if plan.get("file") != f"compacted-{token}.parquet":
        return "names another file than its own compacted file"
    sources, folded = plan.get("sources"), plan.get("folded")
    if not isinstance(sources, list) or not all(
            isinstance(n, str) and _SOURCE.fullmatch(n) for n in sources):
        return "names a source that is not a cycle file of the partition"
    if not isinstance(folded, list) or not all(isinstance(n, str) for n in folded):
        return "has no list of folded files"
    return None


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


def _repair(fs: pafs.FileSystem, base: str, strategy: str, done: Compaction) -> bool:
    """Finish or undo what a crashed compaction left under `_compaction/`. Every path there
    is checked before it is followed: a folder or record the compaction did not write is
    reported and left as it is. False if `_compaction` itself is a link or not a folder: no
    compaction can stage its work there."""
    root = f"{base}/{STAGING}"
    if _is_link(fs, root):
        done.left(f"{shown(root)} is a symbolic link: no interrupted run is "
                  f"repaired through it; replace it with a folder")
        return False
    if fs.get_file_info(root).type not in (pafs.FileType.Directory, pafs.FileType.NotFound):
        done.left(f"{shown(root)} is not a folder: no interrupted run is repaired; move it "
                  f"away (the compaction makes it again)")
        return False
    for staging in _dirs(fs, root, "", done):
        token = staging.rsplit("/", 1)[1]
        if not _TOKEN.fullmatch(token):
            done.left(f"{shown(staging)} is not a folder the compaction makes: left as it is")
            continue
        try:
            if strategy == "rename":
                _repair_rename(Path(staging), Path(base), done)
            else:
                _repair_copy(fs, base, staging, token, done)
        except (OSError, CompactionError, HistoryTableError) as exc:
            done.left(f"{shown(staging)} could not be repaired ({shown(_first_line(exc), 200)}): "
                      f"left for a person to look at; remove the folder once looked at")
    return True


def _repair_copy(fs: pafs.FileSystem, base: str, staging: str, token: str,
                 done: Compaction) -> None:
    local = isinstance(fs, pafs.LocalFileSystem)
    try:
        if local:
            raw = read_bookkeeping(f"{staging}/{_PLAN}", _PLAN_LIMIT)
        else:
            with fs.open_input_stream(f"{staging}/{_PLAN}") as f:
                raw = f.read(_PLAN_LIMIT + 1)
    except FileNotFoundError:
        fs.delete_dir(staging)  # crashed before its plan: the partition is untouched
        return
    try:
        plan = json.loads(raw) if len(raw) <= _PLAN_LIMIT else None
    except ValueError:
        plan = None
    why = _plan_problem(fs, base, plan, token)
    if not why and local and isinstance(plan, dict):
        # what is copied in must be the staged file itself, and the target a folder
        staged, target = Path(staging, plan["file"]), Path(base, plan["partition"])
        if _kind(staged) not in (None, stat.S_IFREG):
            why = f"names {plan['file']}, which is not a regular file"
        elif _kind(target) not in (None, stat.S_IFDIR):
            why = f"names {shown(plan['partition'], 120)!r}, which is not a folder"
    if why or not isinstance(plan, dict):
        done.left(f"{shown(staging)}/{_PLAN} {why}: left as it is, nothing deleted or "
                  f"copied; remove the folder once looked at")
        return
    _apply_plan(fs, base, staging, plan)
    log.warning("history compaction: finished an interrupted run of %s", plan["partition"])
