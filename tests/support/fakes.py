"""Fakes implementing the core's Protocols (BurrowSource, RecordReader), like httpx's
MockTransport: tests inject behaviour instead of patching."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from freshness_tracker.domain.model import (
    ClusterLags,
    GroupLags,
    PartitionKey,
    PartitionLag,
    ReadOutcome,
    ReadRequest,
    RecordRead,
)
from freshness_tracker.errors import BurrowUnavailable, ClusterUnavailable

_Time = TypeVar("_Time", int, float)


class ManualClock(Generic[_Time]):
    """Time that moves only when told: the `clock` argument of the code under test, read and
    advanced from several threads (the lock keeps each reading whole)."""

    def __init__(self, start: _Time) -> None:
        self.now: _Time = start
        self._lock = threading.Lock()

    def __call__(self) -> _Time:
        with self._lock:
            return self.now

    def advance(self, by: _Time) -> None:
        with self._lock:
            self.now += by


def lag(cluster: str = "c", consumer: str = "g", topic: str = "t", partition: int = 0,
        committed: int | None = 10, current_lag: int = 5, commit_time: int | None = 1_000,
        status: str = "OK") -> PartitionLag:
    return PartitionLag(PartitionKey(cluster, consumer, topic, partition), committed,
                        commit_time, current_lag, status)


class FakeBurrow:
    """Serves fixed groups per cluster; `down=True` behaves like an unreachable Burrow."""

    def __init__(self, groups: dict[str, list[GroupLags]] | None = None,
                 servers: dict[str, list[str]] | None = None) -> None:
        self.groups = groups or {}
        self.servers = servers or {}
        self.down = False
        self.lag_calls = 0

    def _check(self) -> None:
        if self.down:
            raise BurrowUnavailable("cannot reach Burrow at http://fake: ConnectionRefused")

    def clusters(self) -> list[str]:
        self._check()
        return sorted(self.groups)

    def cluster_servers(self, cluster: str) -> list[str]:
        self._check()
        return self.servers.get(cluster, [])

    def consumers(self, cluster: str) -> list[str]:
        self._check()
        return [g.consumer for g in self.groups.get(cluster, [])]

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        self._check()
        self.lag_calls += len(groups)
        found = [g for g in self.groups.get(cluster, []) if g.consumer in groups]
        return ClusterLags(cluster, tuple(found))


class FakeReader:
    """Answers reads from {(topic, partition, offset): timestamp}; anything else is END.

    `outcomes` overrides per request; `down=True` raises ClusterUnavailable, from a read and
    from the reachability check (`probes`: the topic each check named).
    """

    def __init__(self, timestamps: dict[tuple[str, int, int], int] | None = None,
                 outcomes: dict[ReadRequest, RecordRead] | None = None,
                 on_read: Callable[[Sequence[ReadRequest]], None] | None = None) -> None:
        self.timestamps = timestamps or {}
        self.outcomes = outcomes or {}
        self.requests: list[ReadRequest] = []
        self.down = False
        self.fail_all = False
        self.on_read = on_read
        self.probes: list[str | None] = []

    def confirm_reachable(self, topic: str | None = None) -> None:
        self.probes.append(topic)
        if self.down:
            raise ClusterUnavailable("cluster c: no broker reachable at k:9092: timed out")

    def read(self, requests: Sequence[ReadRequest]) -> list[RecordRead]:
        if self.on_read:
            self.on_read(requests)
        if self.down:
            raise ClusterUnavailable("no broker of cluster c answered")
        self.requests.extend(requests)
        out = []
        for r in requests:
            if self.fail_all:
                out.append(RecordRead(r, ReadOutcome.FAILED, error="timed out"))
            elif r in self.outcomes:
                out.append(self.outcomes[r])
            elif (r.topic, r.partition, r.offset) in self.timestamps:
                out.append(RecordRead(r, ReadOutcome.FOUND, r.offset,
                                      self.timestamps[(r.topic, r.partition, r.offset)],
                                      "CreateTime"))
            else:
                out.append(RecordRead(r, ReadOutcome.END))
        return out


def group(cluster: str, consumer: str, *partitions: PartitionLag,
          status: str = "OK") -> GroupLags:
    return GroupLags(cluster, consumer, status, sum(p.current_lag for p in partitions),
                     tuple(partitions))
