"""Helpers for the exporter's integration tests: configs pointing at the stack, seeding records
with known CreateTimes and real group commits (whose broker-stamped times Burrow reports),
building an Exporter, and reading rendered Prometheus text."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from devstack import CommitWindow, RealStack
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.sinks.prometheus import ALL_PARTITION_METRICS

Labels = frozenset[tuple[str, str]]


#: These suites check every per-partition family's rules, so they export them all (the default
#: set is smaller: reference.conf `partitionMetrics`).
EVERY_FAMILY = f"partitionMetrics = {json.dumps(list(ALL_PARTITION_METRICS))}"


def exporter_conf(
    stack: RealStack,
    groups_allow: str,
    *,
    burrow_url: str | None = None,
    cluster: str | None = None,
    port: int = 0,
    frequency_sec: float = 1,
    extra: str = "",
) -> str:
    """HOCON for one cluster of the stack, measuring only the groups matching ``groups_allow``
    (Burrow keeps every group of the session, so tests must not see each other's)."""
    return (
        f"burrow {{ url = {json.dumps(burrow_url or stack.burrow_url)}, timeout = 3s, "
        f"retries = 1 }}\n"
        f"clusters = [{{ name = {json.dumps(cluster or stack.cluster)}, numConsumers = 2, "
        f'kafka {{ "bootstrap.servers" = {json.dumps(stack.bootstrap_servers)} }} }}]\n'
        f"filters.groups.allow = [{json.dumps(groups_allow)}]\n"
        f"lookup {{ timeout = 4s }}\n"
        f"frequency_sec = {frequency_sec}\n"
        f"port = {port}\n"
        f"listenAddress = \"127.0.0.1\"\n"
        f"workerThreadCount = 4\n"
        f"{EVERY_FAMILY}\n"
        f"{extra}\n"
    )


@contextmanager
def exporter(
    stack: RealStack, groups_allow: str, extra: str = "", **kw: Any
) -> Iterator[Exporter]:
    settings = load_settings(text=exporter_conf(stack, groups_allow, extra=extra, **kw))
    exp = Exporter(settings)
    try:
        yield exp
    finally:
        exp.close()


# --- rendered metrics ------------------------------------------------------------------------


@dataclass
class Scrape:
    """Samples of one Prometheus text exposition, by (sample name, labels)."""

    text: str
    samples: dict[tuple[str, Labels], float] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> Scrape:
        scrape = cls(text)
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                scrape.samples[(s.name, frozenset(s.labels.items()))] = s.value
        return scrape

    @classmethod
    def of(cls, registry: CollectorRegistry) -> Scrape:
        return cls.parse(generate_latest(registry).decode())

    def get(self, name: str, **labels: Any) -> float | None:
        return self.samples.get((name, frozenset((k, str(v)) for k, v in labels.items())))

    def series(self, name: str, **match: Any) -> dict[Labels, float]:
        """Every sample of ``name`` whose labels include ``match``."""
        want = {(k, str(v)) for k, v in match.items()}
        return {lab: v for (n, lab), v in self.samples.items() if n == name and want <= lab}

    def consumers(self, name: str, cluster: str) -> set[str]:
        return {dict(lab)["consumer"] for lab in self.series(name, cluster=cluster)}


# --- seeding ---------------------------------------------------------------------------------


@dataclass
class Topic:
    name: str
    timestamps: dict[int, list[int]]  # partition -> CreateTime of each offset

    def ts(self, partition: int, offset: int) -> int:
        return self.timestamps[partition][offset]

    def leo(self, partition: int) -> int:
        return len(self.timestamps[partition])


def seed_topic(stack: RealStack, name: str, timestamps: Mapping[int, Sequence[int]]) -> Topic:
    """Create a topic with one partition per key and produce records with those CreateTimes."""
    stack.create_topic(name, partitions=len(timestamps), timeout_s=90)
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

    @property
    def offset_lag(self) -> int:
        return self.topic.leo(self.partition) - self.offset

    @property
    def commit_lag_ms(self) -> int:
        """What the exporter must report: Burrow's commit time - CreateTime of offset C-1."""
        return self.time_ms - self.topic.ts(self.partition, self.offset - 1)


def commit_all(stack: RealStack, commits: Sequence[Commit], timeout_s: float = 60) -> None:
    """Commit each (a real group commit), wait until Burrow shows each exactly, and record the
    commit time Burrow reports, checked to lie in the window observed around the commit.

    Each (group, partition) must be committed once here: Burrow's ``min-distance=1`` would keep
    the earlier time of two commits less than 1 s apart.
    """
    for c in commits:
        c.window = stack.commit(c.group, c.topic.name, c.partition, c.offset)
    for c, part in zip(commits, wait_for_burrow(stack, commits, timeout_s), strict=True):
        stamp = int(part["end"]["timestamp"])
        assert c.window is not None and c.window.before_ms <= stamp <= c.window.after_ms, (c, part)
        c._time_ms = stamp


def wait_for_burrow(
    stack: RealStack, commits: Sequence[Commit], timeout_s: float = 60
) -> list[dict[str, Any]]:
    """Wait until Burrow's /lag shows every commit's offset and lag; Burrow's partition entries."""
    return [stack.wait_for_burrow_lag(c.group, c.topic.name, c.partition,
                                      committed_offset=c.offset, current_lag=c.offset_lag,
                                      timeout_s=timeout_s) for c in commits]  # fmt: skip


# --- Burrow ----------------------------------------------------------------------------------


def burrow_delete_group(stack: RealStack, group: str) -> int:
    """``DELETE /v3/kafka/{cluster}/consumer/{group}``; returns the HTTP status."""
    request = urllib.request.Request(
        f"{stack.burrow_url}/v3/kafka/{stack.cluster}/consumer/{group}", method="DELETE")
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
