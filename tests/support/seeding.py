"""Seeding the real stack: records with known CreateTimes and real group commits (whose
broker-stamped times Burrow reports), the exact values a cycle must then report, and Burrow's
group deletion."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from devstack import CommitWindow, RealStack
from devstack.scrape import COMMIT_LAG, FRESHNESS, Scrape
from devstack.stack import DEFAULT_RETENTION_MS
from freshness_tracker.domain.model import ClusterSnapshot, PartitionResult, PartitionStatus


@dataclass
class Topic:
    name: str
    timestamps: dict[int, list[int]]  # partition -> CreateTime of each offset

    def ts(self, partition: int, offset: int) -> int:
        return self.timestamps[partition][offset]

    def leo(self, partition: int) -> int:
        return len(self.timestamps[partition])


def seed_topic(stack: RealStack, name: str, timestamps: Mapping[int, Sequence[int]],
               replicas: Sequence[Sequence[int]] | None = None) -> Topic:
    """Create a topic with one partition per key and produce records with those CreateTimes;
    with ``replicas``, placed on those brokers and led by the first of each."""
    stack.create_topic(name, partitions=len(timestamps), timeout_s=90, replicas=replicas)
    for partition, stamps in sorted(timestamps.items()):
        offsets = stack.produce(name, partition, stamps)
        assert offsets == list(range(len(stamps))), offsets
    return Topic(name, {p: list(s) for p, s in timestamps.items()})


@dataclass(eq=False)  # hashed by identity: usable as a dict key
class Commit:
    """One real group commit of ``offset``. The broker stamps it: :func:`commit_all` fills
    ``window`` (around the commit) and ``time_ms`` (Burrow's ``end.timestamp``, inside it)."""

    group: str
    topic: Topic
    partition: int
    offset: int
    window: CommitWindow | None = None
    _time_ms: int | None = None

    @property
    def time_ms(self) -> int:
        assert self._time_ms is not None, f"{self} not committed through commit_all()"
        return self._time_ms

    def stamped(self, time_ms: int) -> Commit:
        """This commit made another way (ZooKeeper), at the time Burrow reports for it."""
        return replace(self, _time_ms=time_ms)

    @property
    def offset_lag(self) -> int:
        return self.topic.leo(self.partition) - self.offset

    @property
    def commit_lag_ms(self) -> int:
        """What the exporter must report: Burrow's commit time - CreateTime of offset C-1."""
        return self.time_ms - self.topic.ts(self.partition, self.offset - 1)


def commit_all(stack: RealStack, commits: Sequence[Commit], timeout_s: float = 60
               ) -> list[dict[str, Any]]:  # fmt: skip
    """Commit each (a real group commit), wait until Burrow shows each exactly, and record the
    commit time Burrow reports, checked to lie in the window observed around the commit;
    Burrow's partition entries.

    Each (group, partition) must be committed once here: Burrow's ``min-distance=1`` would keep
    the earlier time of two commits less than 1 s apart.
    """
    for c in commits:
        c.window = stack.commit(c.group, c.topic.name, c.partition, c.offset)
    parts = wait_for_burrow(stack, commits, timeout_s)
    for c, part in zip(commits, parts, strict=True):
        stamp = int(part["end"]["timestamp"])
        assert c.window is not None and c.window.before_ms <= stamp <= c.window.after_ms, (c, part)
        c._time_ms = stamp
    return parts


@dataclass
class Seeded:
    """One lagging group on one partition: 5 records a second to a minute old, committed at
    offset 2 (freshness is the age of record 2; commit lag and offset lag are exact)."""

    stack: RealStack
    topic: Topic
    commit: Commit

    @property
    def group(self) -> str:
        return self.commit.group

    def labels(self) -> dict[str, str]:
        return {"cluster": self.stack.cluster, "consumer": self.group,
                "topic": self.topic.name, "partition": "0"}  # fmt: skip

    @property
    def commit_lag_ms(self) -> int:
        return self.commit.commit_lag_ms

    @property
    def record_ts(self) -> int:
        """CreateTime of the group's next unconsumed record (offset 2)."""
        return self.topic.ts(0, 2)


def seed_lagging(stack: RealStack, tag: str, now: int) -> Seeded:
    """Topic ``{tag}-t`` and group ``{tag}-g`` committed at offset 2 of 5 records."""
    topic = seed_topic(stack, f"{tag}-t", {0: [now - 50_000 + 10_000 * i for i in range(5)]})
    commit = Commit(f"{tag}-g", topic, 0, 2)
    commit_all(stack, [commit])
    return Seeded(stack, topic, commit)


def wait_for_burrow(
    stack: RealStack, commits: Sequence[Commit], timeout_s: float = 60
) -> list[dict[str, Any]]:
    """Wait until Burrow's /lag shows every commit's offset and lag; Burrow's partition entries."""
    return [stack.wait_for_burrow_lag(c.group, c.topic.name, c.partition,
                                      committed_offset=c.offset, current_lag=c.offset_lag,
                                      timeout_s=timeout_s) for c in commits]  # fmt: skip


def assert_exact(snap: ClusterSnapshot, commit: Commit, scrape: Scrape | None = None
                 ) -> PartitionResult:  # fmt: skip
    """Freshness, commit lag and offsets of one lagging partition, exact to the cycle's clock
    (and as ``scrape`` serves them); its result."""
    (r,) = [r for r in snap.partitions if (r.key.consumer, r.key.topic, r.key.partition)
            == (commit.group, commit.topic.name, commit.partition)]
    ts_c = commit.topic.ts(commit.partition, commit.offset)
    assert r.status is PartitionStatus.OK, r
    assert r.committed_offset == commit.offset
    assert r.offset_lag == commit.offset_lag
    assert r.log_end_offset == commit.topic.leo(commit.partition)
    assert r.commit_time_ms == commit.time_ms
    assert r.record_timestamp_ms == ts_c
    # now is taken inside the cycle: the cycle's own start and end bound it
    assert r.freshness_ms is not None
    assert snap.started_ms - ts_c <= r.freshness_ms <= snap.finished_ms - ts_c
    assert r.commit_lag_ms == commit.commit_lag_ms
    assert r.retention_headroom_ms == DEFAULT_RETENTION_MS - r.freshness_ms  # real retention.ms
    assert not r.data_loss and r.lost_records == 0
    if scrape is not None:
        labels = {"cluster": snap.cluster, "consumer": commit.group, "topic": commit.topic.name,
                  "partition": commit.partition}
        assert scrape.get(FRESHNESS, **labels) == r.freshness_ms
        assert scrape.get(COMMIT_LAG, **labels) == r.commit_lag_ms
    return r


def burrow_delete_group(stack: RealStack, group: str) -> int:
    """``DELETE /v3/kafka/{cluster}/consumer/{group}``; returns the HTTP status."""
    request = urllib.request.Request(
        f"{stack.burrow_url}/v3/kafka/{stack.cluster}/consumer/{group}", method="DELETE")
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
