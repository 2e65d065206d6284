"""A bounded LRU of record timestamps, so an unchanged committed offset is read from Kafka once.

A record's timestamp never changes once written, so an exact (FOUND) answer stays true forever:
no TTL is needed, only a size bound. What a read returned instead (the next record of a GAP, the
log end of an END) depends on the log's current state and is never cached as an answer.

One more thing is forever true: that *no record exists at an offset* the log has passed (a
transaction marker, a compacted or deleted record: offsets are never reused). That is kept apart
(`absent`), so the record before a committed offset (C − 1: commit lag, data current as of) is
not read again every cycle when it is a marker, as it is for every caught-up consumer of a
transactional topic. Freshness never uses it: what follows a missing record at C may change.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from freshness_tracker.domain.model import ReadOutcome, ReadRequest, RecordRead

__all__ = ["TimestampCache"]

_Entry = tuple[int, str | None]  # (timestamp_ms, timestamp_type)


class TimestampCache:
    """Thread-safe LRU of (cluster, topic, partition, offset) -> (timestamp_ms, timestamp_type).

    `max_entries=0` disables caching (every get misses, every put is dropped).
    """

    def __init__(self, max_entries: int) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries}")
        self._max = max_entries
        self._entries: OrderedDict[ReadRequest, _Entry] = OrderedDict()
        self._absent: OrderedDict[ReadRequest, None] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    @property
    def hits(self) -> int:
        return self._hits

    @property
    def misses(self) -> int:
        return self._misses

    def contains(self, request: ReadRequest) -> bool:
        """Whether a timestamp is cached, without touching LRU order or counters (planning)."""
        with self._lock:
            return request in self._entries

    def get(self, request: ReadRequest) -> _Entry | None:
        """The cached (timestamp_ms, timestamp_type) of the record at exactly this offset."""
        return self.get_many((request,)).get(request)

    def get_many(self, requests: Iterable[ReadRequest]) -> dict[ReadRequest, _Entry]:
        """`get` for many requests under one lock (a cycle asks for thousands): the hits."""
        found: dict[ReadRequest, _Entry] = {}
        with self._lock:
            entries = self._entries
            for request in requests:
                entry = entries.get(request)
                if entry is None:
                    self._misses += 1
                    continue
                entries.move_to_end(request)
                found[request] = entry
                self._hits += 1
        return found

    def absent(self, request: ReadRequest) -> bool:
        """Whether no record exists at exactly this offset, for good (see the module doc)."""
        with self._lock:
            return request in self._absent

    def put(self, read: RecordRead) -> None:
        """Remember a FOUND read's timestamp, or that a read proved no record can ever be at
        its offset; anything else is ignored (it may change with the log)."""
        if self._max == 0:
            return
        if read.outcome is not ReadOutcome.FOUND or read.timestamp_ms is None:
            if _never_there(read):
                self._remember(self._absent, read.request, None)
            return
        if read.offset != read.request.offset:  # a FOUND read always has it; refuse otherwise
            return
        self._remember(self._entries, read.request, (read.timestamp_ms, read.timestamp_type))

    def _remember(self, lru: OrderedDict[ReadRequest, Any], key: ReadRequest, value: Any) -> None:
        with self._lock:
            lru[key] = value
            lru.move_to_end(key)
            while len(lru) > self._max:
                lru.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._absent.clear()

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"entries": len(self._entries), "hits": self._hits, "misses": self._misses}

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def _never_there(read: RecordRead) -> bool:
    """The read proves no record is at its offset, now or ever: the next record is later (GAP),
    the offset is below the log start (OUT_OF_RANGE), or below the log end with nothing at or
    after it (END: a trailing transaction marker). An END at or past the log end proves
    nothing: a record may be written there."""
    offset = read.request.offset
    if read.outcome is ReadOutcome.GAP:
        return read.offset is not None and read.offset > offset
    if read.outcome is ReadOutcome.OUT_OF_RANGE:
        return read.log_start_offset is not None and offset < read.log_start_offset
    if read.outcome is ReadOutcome.END:
        return read.log_end_offset is not None and offset < read.log_end_offset
    return False

