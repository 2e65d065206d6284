"""Ground truth from the harness's own log of what it produced and committed.

For one partition, at wall-clock time ``t`` (ms): C(t) is the last offset the harness's consumer
committed at or before ``t``; the records that exist at ``t`` are those whose timestamp (the
CreateTime the harness set, one producer per partition, so timestamps never decrease with the
offset) is at or before ``t``. Freshness is ``t − ts[C(t)]`` when the record at C(t) exists, else
0 (nothing uncommitted). Exact: no Burrow, no Kafka read, no estimate is involved.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TruthLog"]


@dataclass
class TruthLog:
    """Append-only log of one partition: record timestamps by offset and (time, offset) commits."""

    record_ts_ms: list[int] = field(default_factory=list)  # index = offset
    commits: list[tuple[int, int]] = field(default_factory=list)  # (commit time ms, offset)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    # ---- writing (producer / consumer threads) ----------------------------------------------

    def produced(self, offset: int, timestamp_ms: int) -> None:
        """A delivery report: ``offset`` holds a record with ``timestamp_ms``."""
        with self._lock:
            while len(self.record_ts_ms) <= offset:
                self.record_ts_ms.append(-1)
            self.record_ts_ms[offset] = timestamp_ms

    def committed(self, time_ms: int, offset: int) -> None:
        """The consumer's commit of ``offset`` returned at ``time_ms``."""
        with self._lock:
            if self.commits and time_ms < self.commits[-1][0]:
                time_ms = self.commits[-1][0]
            self.commits.append((time_ms, offset))

    # ---- reading (after the run) -------------------------------------------------------------

    def check(self) -> None:
        """Every offset delivered, timestamps non-decreasing (one producer per partition)."""
        missing = [o for o, ts in enumerate(self.record_ts_ms) if ts < 0]
        if missing:
            raise ValueError(f"offsets without a delivery report: {missing[:10]}")
        if any(b < a for a, b in zip(self.record_ts_ms, self.record_ts_ms[1:], strict=False)):
            raise ValueError("record timestamps decrease with the offset")

    def committed_offset(self, t_ms: float) -> int | None:
        """C(t): the last committed offset at ``t`` (None before the first commit)."""
        i = bisect.bisect_right(self._commit_times, t_ms)
        return self.commits[i - 1][1] if i else None

    def records_at(self, t_ms: float) -> int:
        """How many records exist at ``t`` (the log end offset)."""
        return bisect.bisect_right(self.record_ts_ms, t_ms)

    def freshness_ms(self, t_ms: float) -> float | None:
        """The ground truth at ``t``; None before the group's first commit."""
        committed = self.committed_offset(t_ms)
        if committed is None:
            return None
        if committed < self.records_at(t_ms):
            return max(t_ms - self.record_ts_ms[committed], 0.0)
        return 0.0

    def freshness_descending(self, times_ms: Sequence[float]) -> list[float | None]:
        """:meth:`freshness_ms` at each of ``times_ms``, given in non-increasing order: two
        searches, then a walk back through the commits and records. Why: scoring reads the
        truth at hundreds of moments behind every sample; a search per moment made that most
        of the time a page takes to render."""
        out: list[float | None] = []
        if not times_ms:
            return out
        times, records = self._commit_times, self.record_ts_ms
        i = bisect.bisect_right(times, times_ms[0])
        j = bisect.bisect_right(records, times_ms[0])
        for t_ms in times_ms:
            while i and times[i - 1] > t_ms:
                i -= 1
            while j and records[j - 1] > t_ms:
                j -= 1
            if not i:
                out.append(None)
                continue
            committed = self.commits[i - 1][1]
            out.append(max(t_ms - records[committed], 0.0) if committed < j else 0.0)
        return out

    @property
    def _commit_times(self) -> list[int]:
        cached = self.__dict__.get("_times")
        if cached is None or len(cached) != len(self.commits):
            cached = [t for t, _ in self.commits]
            self.__dict__["_times"] = cached
        return cached

    # ---- persistence --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {"record_ts_ms": list(self.record_ts_ms), "commits": [list(c) for c in self.commits]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TruthLog:
        return cls(record_ts_ms=list(data["record_ts_ms"]),
                   commits=[(int(t), int(o)) for t, o in data["commits"]])
