"""The history table: every cycle's partition results appended as Parquet (extra: history).

One row per (cycle, cluster, consumer, topic, partition). `HISTORY_SCHEMA` is a public contract
(docs/history.md): the live exporter (`history.path`) and the Spark snapshot job both write
through `write_snapshot`, and the Spark report job reads the table back with exactly this schema.

Layout, hive-style so Spark, pyarrow, DuckDB and Trino read it as a partitioned table:

    <root>/date=YYYY-MM-DD/cluster=<name>/cycle-<cycle start ms>[-shard<i>of<n>]-<writer>.parquet

`date` and `cluster` live in the path, not in the files. `date` is the UTC day of the file's
earliest `sample_time` (when Burrow's offsets were observed), so a late or backfilled run is
filed under the day its samples belong to, and every row's sample_time is on that day or, for a
cycle across midnight, the next: a reader selecting sample times in [T1, T2) reads the date
folders from day(T1) − 1 to day(T2). The file name carries the writer (`exporter-<host>` for
the exporter's sink, `spark` for the Spark job), so two writers never replace each other's
files; the same writer re-writing the same cycle replaces its own file (the Spark job's
`--cycle-time` retries rely on it), wherever the earlier attempt was filed, and says so in the
log. Files are written under a hidden temporary name and renamed into place, so a reader never
sees half a file.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import socket
import stat
import uuid
from operator import attrgetter
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from freshness_tracker.domain.filters import Shard
from freshness_tracker.domain.model import ClusterSnapshot
from freshness_tracker.errors import FreshnessTrackerError

__all__ = [
    "FILE_SCHEMA",
    "MANIFEST",
    "PARTITION_NAME",
    "CompactedCycleError",
    "HISTORY_SCHEMA",
    "HISTORY_SCHEMA_VERSION",
    "PARTITION_COLUMNS",
    "READ_SLACK_DAYS",
    "SPARK_WRITER",
    "HistorySink",
    "HistoryTableError",
    "compacted_sources",
    "cycle_id_for",
    "exporter_writer",
    "file_problem",
    "read_history",
    "schema_problem",
    "shown",
    "snapshot_table",
    "write_snapshot",
]

log = logging.getLogger(__name__)

HISTORY_SCHEMA_VERSION = "1"

#: In a compacted partition: which cycle files its compacted file holds (history_compact.py).
MANIFEST = ".compaction.json"

_TS = pa.timestamp("ms", tz="UTC")

#: The table as readers see it: data columns, then the two path partition columns.
HISTORY_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("cycle_id", pa.string(), nullable=False),  # "<cluster>@<cycle start ms>"
        pa.field("cycle_start", _TS, nullable=False),  # when the cycle began (or --cycle-time)
        # when Burrow's offsets were observed (its /lag answer): what freshness is measured at
        pa.field("sample_time", _TS, nullable=False),
        pa.field("consumer", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("status", pa.string(), nullable=False),  # PartitionStatus value
        pa.field("burrow_status", pa.string(), nullable=False),  # Burrow's partition status
        pa.field("committed_offset", pa.int64()),  # Burrow end.offset; null: no commit
        pa.field("log_end_offset", pa.int64()),  # committed + current_lag
        pa.field("offset_lag", pa.int64(), nullable=False),  # Burrow current_lag
        pa.field("commit_time", _TS),  # Burrow end.timestamp
        pa.field("record_timestamp", _TS),  # timestamp of the record freshness is measured from
        pa.field("freshness_ms", pa.int64()),  # null: not measured this cycle (never stale)
        pa.field("commit_lag_ms", pa.int64()),
        pa.field("data_loss", pa.bool_(), nullable=False),  # freshness is then a lower bound
        pa.field("lost_records", pa.int64(), nullable=False),
        pa.field("retention_headroom_ms", pa.int64()),
        pa.field("lookup_error", pa.string()),
        pa.field("date", pa.date32(), nullable=False),  # path partition: earliest sample_time's day
        pa.field("cluster", pa.string(), nullable=False),  # path partition
    ],
    metadata={"freshness_tracker.history_schema_version": HISTORY_SCHEMA_VERSION},
)

PARTITION_COLUMNS = ("date", "cluster")

#: A row's `date` folder is its file's earliest sample day: a reader of sample times from T1
#: reads from day(T1) minus this many days.
READ_SLACK_DAYS = 1

#: The writer of the Spark snapshot job's files.
SPARK_WRITER = "spark"

#: What each Parquet file holds: everything but the path partition columns.
FILE_SCHEMA: pa.Schema = pa.schema(
    [f for f in HISTORY_SCHEMA if f.name not in PARTITION_COLUMNS],
    metadata=HISTORY_SCHEMA.metadata,
)


#: A partition folder as the writer names it, relative to the root: the cluster name is
#: percent-quoted (`partition_path`), so it is one path segment of this alphabet, never `..`.
PARTITION_NAME = re.compile(r"date=(\d{4}-\d{2}-\d{2})/cluster=([A-Za-z0-9_.~%-]+)")

_MANIFEST_LIMIT = 64 << 20  # a manifest of a million cycle files is ~60 MB


class CompactedCycleError(FreshnessTrackerError):
    """Re-writing a cycle that compaction already folded into its day's compacted file."""


class HistoryTableError(FreshnessTrackerError):
    """Something on disk is not what the table's writer puts there (a file of another schema,
    an unreadable manifest, a symbolic link): named so a person can look, never followed."""


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def shown(text: str, limit: int = 200) -> str:
    """A name read from disk, fit for one log line: control characters escaped, cut short."""
    text = _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256
                            else f"\\u{ord(m.group()):04x}", text)
    return text if len(text) <= limit else text[:limit] + "..."


def read_bookkeeping(path: str | os.PathLike[str], limit: int) -> bytes:
    """A local bookkeeping file's bytes (at most `limit` + 1, so the caller sees it was too
    long). Opened without blocking or following a link and checked on the open descriptor: a
    FIFO would hang every later run, a directory or device is not a record. FileNotFoundError
    passes through; anything else that is not a regular file is a HistoryTableError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise HistoryTableError(f"cannot read {shown(os.fspath(path))}: "
                                f"{exc.strerror or exc}") from None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise HistoryTableError(f"{shown(os.fspath(path))} is not a regular file")
    with os.fdopen(fd, "rb") as file:
        return file.read(max(limit, 0) + 1)


def compacted_sources(directory: str | os.PathLike[str],
                      fs: pafs.FileSystem | None = None) -> frozenset[str]:
    """Cycle file names already folded into this partition's compacted file (empty if none).

    Raises HistoryTableError naming the manifest when it is not one the compaction wrote: the
    caller cannot tell which cycles it holds, so it must not guess.
    """
    where = f"{directory}/{MANIFEST}"
    try:
        if fs is None:
            if os.path.islink(where):
                raise HistoryTableError(f"{shown(where)} is a symbolic link, not a manifest "
                                        f"the compaction wrote; move it away")
            raw = read_bookkeeping(where, _MANIFEST_LIMIT)
        else:
            with fs.open_input_stream(where) as f:
                raw = f.read(_MANIFEST_LIMIT + 1)
    except FileNotFoundError:
        return frozenset()
    except OSError as exc:
        raise HistoryTableError(f"cannot read {shown(where)}: {exc}") from exc
    try:
        if len(raw) > _MANIFEST_LIMIT:
            raise ValueError("larger than any manifest the compaction writes")
        sources = json.loads(raw)["sources"]
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise ValueError("'sources' is not a list of file names")
    except (ValueError, KeyError, TypeError) as exc:
        raise HistoryTableError(f"{shown(where)} is not a manifest the compaction wrote "
                                f"({shown(str(exc), 100)}); move it away") from None
    return frozenset(sources)


def schema_problem(found: pa.Schema) -> str | None:
    """What keeps a file of this schema out of the table (None: it is FILE_SCHEMA's).

    Names and types must match exactly: a compaction or report would otherwise drop a column,
    fill one with nulls, or fail deep inside Arrow or Spark without naming the file.
    """
    names = found.names
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        return f"duplicate column(s) {', '.join(repr(shown(n, 60)) for n in duplicated)}"
    for field in FILE_SCHEMA:
        if field.name in names and found.field(field.name).type != field.type:
            return (f"column {field.name} is {found.field(field.name).type}, "
                    f"the table's is {field.type}")
    missing = [f.name for f in FILE_SCHEMA if f.name not in names]
    if missing:
        more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
        return f"missing column(s) {', '.join(missing[:4])}{more}"
    extra = [n for n in names if FILE_SCHEMA.get_field_index(n) < 0]
    if extra:
        return f"column(s) the table does not have: {', '.join(repr(shown(n, 60)) for n in extra)}"
    return None


def file_problem(fs: pafs.FileSystem, path: str) -> str | None:
    """None if `path` is a Parquet file of FILE_SCHEMA, else what is wrong (one line)."""
    try:
        with fs.open_input_file(path) as f:
            found = pq.ParquetFile(f).schema_arrow
    except (OSError, pa.ArrowException) as exc:
        return f"not a readable Parquet file ({_first_line(exc)})"
    return schema_problem(found)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return shown(lines[0] if lines else type(exc).__name__, 160)


def cycle_id_for(cluster: str, cycle_start_ms: int, shard: Shard | None = None) -> str:
    """Deterministic: the same cluster, cycle start (and shard) always give the same id."""
    base = f"{cluster}@{cycle_start_ms}"
    if shard is not None and shard.count > 1:
        base += f"#{shard.index}of{shard.count}"
    return base


#: Columns that hold the PartitionResult attribute of the same name.
_SAME_NAMED = ("burrow_status", "committed_offset", "log_end_offset", "offset_lag", "freshness_ms",
               "commit_lag_ms", "data_loss", "lost_records", "retention_headroom_ms")


def snapshot_table(snapshot: ClusterSnapshot, *, cycle_start_ms: int | None = None,
                   shard: Shard | None = None) -> pa.Table:
    """The snapshot's partition rows as an Arrow table in FILE_SCHEMA (no partition columns)."""
    start = snapshot.started_ms if cycle_start_ms is None else cycle_start_ms
    rows = snapshot.partitions
    n = len(rows)
    columns = {
        "cycle_id": [cycle_id_for(snapshot.cluster, start, shard)] * n,
        "cycle_start": [start] * n,
        # when Burrow's offsets were observed (per group), not when the cycle ended
        "sample_time": [r.sample_time_ms if r.sample_time_ms is not None else snapshot.finished_ms
                        for r in rows],
        "consumer": [r.key.consumer for r in rows],
        "topic": [r.key.topic for r in rows],
        "partition": [r.key.partition for r in rows],
        "status": [r.status.value for r in rows],
        "commit_time": [r.commit_time_ms for r in rows],
        "record_timestamp": [r.record_timestamp_ms for r in rows],
        "lookup_error": [r.error for r in rows],
        # from_pydict takes the columns in FILE_SCHEMA's order
        **{name: list(map(attrgetter(name), rows)) for name in _SAME_NAMED},
    }
    return pa.Table.from_pydict(columns, schema=FILE_SCHEMA)


def _utc_date(ms: int) -> dt.date:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).date()


def exporter_writer() -> str:
    """`exporter-<host>`: the exporter sink's writer name (a pod name under Kubernetes)."""
    return "exporter-" + _safe(socket.gethostname() or "host")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:64] or "_"


def _file_name(cycle_start_ms: int, shard: Shard | None, writer: str | None = None) -> str:
    suffix = f"-shard{shard.index}of{shard.count}" if shard is not None and shard.count > 1 else ""
    who = f"-{_safe(writer)}" if writer else ""
    return f"cycle-{cycle_start_ms}{suffix}{who}.parquet"


def _filesystem(root: str) -> tuple[pafs.FileSystem, str, bool]:
    """(filesystem, path inside it, is local). Plain paths are local; URIs go to pyarrow.fs."""
    if "://" in root and not root.startswith("file://"):
        fs, path = pafs.FileSystem.from_uri(root)
        return fs, path.rstrip("/"), False
    local = root[len("file://"):] if root.startswith("file://") else root
    return pafs.LocalFileSystem(), str(Path(local).absolute()), True


def partition_path(root: str, date: dt.date, cluster: str) -> str:
    """`root/date=…/cluster=…` with the cluster name escaped the way Spark unescapes it."""
    return f"{root.rstrip('/')}/date={date.isoformat()}/cluster={quote(cluster, safe='')}"


def _linked(base: str, directory: str) -> str | None:
    """The first symbolic link on the way from the (local) table root to `directory`."""
    here = base
    for part in directory[len(base) + 1:].split("/"):
        here = f"{here}/{part}"
        if os.path.islink(here):
            return here
    return None


def _exists(fs: pafs.FileSystem, path: str) -> bool:
    return bool(fs.get_file_info(path).type == pafs.FileType.File)


def write_snapshot(root: str, snapshot: ClusterSnapshot, *, cycle_start_ms: int | None = None,
                   shard: Shard | None = None, writer: str | None = None) -> str | None:
    """Write (or replace) this writer's file of the snapshot's cycle; returns its path, None if
    there is nothing to write. `writer` names the writer in the file name (the exporter's sink
    and the Spark job always pass theirs; None writes the name without one).

    A cycle after which the cluster is down (Burrow unreadable, or no Kafka read succeeded) is
    not written, as its series disappear from /metrics: the report sees the gap as "no data",
    never as good. The file goes under the UTC day of its earliest sample time. The same
    writer's earlier file of the same cycle is replaced, also when it was filed under another
    day (a retry or backfill run later): it is removed once the new file is in place.
    """
    if not snapshot.health.up:
        return None
    table = snapshot_table(snapshot, cycle_start_ms=cycle_start_ms, shard=shard)
    if table.num_rows == 0:
        return None
    start = snapshot.started_ms if cycle_start_ms is None else cycle_start_ms
    fs, base, local = _filesystem(root)
    earliest = pc.min(table.column("sample_time")).value
    day = _utc_date(int(earliest) if earliest is not None else snapshot.finished_ms)
    name = _file_name(start, shard, writer)
    directory = partition_path(base, day, snapshot.cluster)
    final = f"{directory}/{name}"
    link = _linked(base, directory) if local else None
    if link is not None:
        raise HistoryTableError(
            f"{shown(link)} is a symbolic link: the history writer never writes through one "
            f"out of the table; replace it with a folder of the table")
    # Where an earlier attempt of this cycle by this writer may be: the cycle's day through
    # this sample day (a run never precedes its cycle), a day either side for midnight.
    first, last = sorted((_utc_date(start), day))
    others = [partition_path(base, first + dt.timedelta(days=d), snapshot.cluster)
              for d in range(-1, (last - first).days + 2)]
    # never read or delete through a symbolic link out of the table
    others = [d for d in others if d != directory and not (local and _linked(base, d))]
    for where in (directory, *others):
        if name in compacted_sources(where, fs):
            raise CompactedCycleError(
                f"cycle {cycle_id_for(snapshot.cluster, start, shard)} by {writer} is already in "
                f"the compacted file of {where}; writing it again would count it twice. Re-run "
                f"a compacted day into a fresh history path, or pick a cycle time that was not "
                f"written")
    replaced = _exists(fs, final)
    fs.create_dir(directory, recursive=True)
    if not local:  # object stores replace a key atomically on PUT
        pq.write_table(table, final, filesystem=fs, compression="zstd")
    else:
        temporary = f"{directory}/.{uuid.uuid4().hex}.tmp"  # hidden: readers skip dot files
        try:
            pq.write_table(table, temporary, filesystem=fs, compression="zstd")
            os.replace(temporary, final)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)
    for where in others:
        earlier = f"{where}/{name}"
        if _exists(fs, earlier):
            fs.delete_file(earlier)
            replaced = True
            log.info("history: cycle %s re-written under %s; its earlier file %s removed",
                     cycle_id_for(snapshot.cluster, start, shard), directory, earlier)
    if replaced:
        log.info("history: cycle %s by %s replaced its earlier rows (%s)",
                 cycle_id_for(snapshot.cluster, start, shard), writer, final)
    return final


class HistorySink:
    """A per-ClusterSnapshot sink for the exporter: `HistorySink(path)(snapshot)`.

    With sharded replicas pass `shard` so replicas of one cluster never overwrite each other.
    """

    def __init__(self, path: str, *, shard: Shard | None = None,
                 writer: str | None = None) -> None:
        if not path:
            raise ValueError("history path must not be empty")
        self.path = path
        self.shard = shard
        #: In every file name: another writer (the Spark job, another replica) never replaces
        #: this one's files.
        self.writer = writer or exporter_writer()

    def __call__(self, snapshot: ClusterSnapshot) -> None:
        try:
            written = write_snapshot(self.path, snapshot, shard=self.shard, writer=self.writer)
        except FreshnessTrackerError as exc:  # the table needs a person: one line, no traceback
            log.error("history cluster=%s cycle not written: %s", snapshot.cluster, exc)
            return
        if written:
            log.debug("history cluster=%s rows=%d file=%s", snapshot.cluster,
                      len(snapshot.partitions), written)

    def __repr__(self) -> str:
        return f"HistorySink({self.path!r})"


def read_history(root: str) -> pa.Table:
    """The whole table in HISTORY_SCHEMA (pyarrow; for tests and small tables; Spark for big).

    A file of another schema raises HistoryTableError naming it and what is wrong, instead of
    Arrow's cast error that names neither.
    """
    fs, base, _ = _filesystem(root)
    partitioning = ds.partitioning(
        pa.schema([HISTORY_SCHEMA.field(c) for c in PARTITION_COLUMNS]), flavor="hive")
    dataset = ds.dataset(base, filesystem=fs, format="parquet", partitioning=partitioning,
                         schema=HISTORY_SCHEMA, ignore_prefixes=[".", "_"])
    try:
        return dataset.to_table()
    except pa.ArrowException as exc:
        for path in dataset.files:  # only on failure: find the file to name
            problem = file_problem(fs, path)
            if problem is not None:
                raise HistoryTableError(f"history file {shown(path)}: {problem}") from None
        raise HistoryTableError(f"cannot read the history table at {shown(root)}: "
                                f"{_first_line(exc)}") from exc
