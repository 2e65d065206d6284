"""SnapshotHolder: the one place a finished cycle becomes visible.

A scrape reads `holder.current` once and renders it; a cycle publishes by swapping one
reference. So /metrics never waits on Kafka and never mixes two cycles of a cluster.
"""

from __future__ import annotations

import threading

from freshness_tracker.domain.model import ClusterSnapshot, Snapshot

__all__ = ["SnapshotHolder"]


class SnapshotHolder:
    def __init__(self) -> None:
        self._current = Snapshot()
        self._previous = Snapshot()
        self._lock = threading.Lock()  # serialises writers only; readers never block
        self._published = threading.Condition(self._lock)
        self._count = 0

    @property
    def current(self) -> Snapshot:
        return self._current

    @property
    def previous(self) -> Snapshot:
        """Each cluster's cycle before its current one (which records were already waiting)."""
        return self._previous

    @property
    def publications(self) -> int:
        return self._count

    def publish(self, update: ClusterSnapshot) -> None:
        """Replace one cluster's entry; other clusters keep their own last cycle."""
        with self._lock:
            replaced = next((c for c in self._current.clusters if c.cluster == update.cluster),
                            None)
            if replaced is not None:
                self._previous = self._previous.with_cluster(replaced)
            self._current = self._current.with_cluster(update)
            self._count += 1
            self._published.notify_all()

    def wait_for(self, publications: int, timeout: float) -> bool:
        """Block until at least `publications` have happened (used by tests and `once`)."""
        with self._published:
            return self._published.wait_for(lambda: self._count >= publications, timeout)
