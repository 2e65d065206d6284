"""The one Prometheus text parser of the tests and benchmarks: samples by (name, labels).

The metric names the suites look up most, taken from the package's catalogue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from devstack.processes import poll
from freshness_tracker import metrics as catalogue
from freshness_tracker.sinks.exposition import CachedExposition

Labels = frozenset[tuple[str, str]]

UP = catalogue.CLUSTER_UP.name
LAST_SUCCESS = catalogue.CLUSTER_LAST_SUCCESS.name
LAST_ATTEMPT = catalogue.CLUSTER_LAST_ATTEMPT.name
PARTITIONS = catalogue.CLUSTER_PARTITIONS.name
DURATION = catalogue.CLUSTER_CYCLE_DURATION.name
CYCLES = catalogue.CYCLES.total
FAILURES = catalogue.CYCLE_FAILURES.total
BURROW_ERRORS = catalogue.BURROW_ERRORS.total
READ_FAILURES = catalogue.KAFKA_READ_FAILURES.total
FRESHNESS = catalogue.FRESHNESS.name
COMMIT_LAG = catalogue.COMMIT_LAG.name
GROUP_FRESHNESS = catalogue.GROUP_MAX_FRESHNESS.name

#: Every per-consumer family: none of them may survive a failed cycle with an old value.
CONSUMER_FAMILIES = tuple(f.name for f in (*catalogue.PARTITION_FAMILIES,
                                           *catalogue.TOPIC_FAMILIES, *catalogue.GROUP_FAMILIES))


@dataclass
class Scrape:
    """One Prometheus text exposition: samples by (sample name, labels), and how long the
    request for it took (0 when parsed from a registry or a command's output)."""

    text: str
    seconds: float = 0.0
    samples: dict[tuple[str, Labels], float] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, seconds: float = 0.0) -> Scrape:
        scrape = cls(text, seconds)
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                scrape.samples[(s.name, frozenset(s.labels.items()))] = s.value
        return scrape

    @classmethod
    def of(cls, source: CollectorRegistry | CachedExposition) -> Scrape:
        """What `source` serves: an exporter's /metrics bytes (`exporter.exposition`), or
        prometheus_client's rendering of a registry."""
        if isinstance(source, CachedExposition):
            return cls.parse(source.answer().body.decode())
        return cls.parse(generate_latest(source).decode())

    def get(self, name: str, **labels: Any) -> float | None:
        return self.samples.get((name, frozenset((k, str(v)) for k, v in labels.items())))

    def increase(self, name: str, since: Scrape, **labels: Any) -> float:
        """How much counter ``name`` grew from the scrape ``since`` to this one (absent: 0)."""
        return (self.get(name, **labels) or 0) - (since.get(name, **labels) or 0)

    def series(self, name: str, **match: Any) -> dict[Labels, float]:
        """Every sample of ``name`` whose labels include ``match``."""
        want = {(k, str(v)) for k, v in match.items()}
        return {lab: v for (n, lab), v in self.samples.items() if n == name and want <= lab}

    def consumers(self, name: str, cluster: str) -> set[str]:
        return {dict(lab)["consumer"] for lab in self.series(name, cluster=cluster)}

    def consumer_series(self, cluster: str, consumer: str | None = None) -> int:
        """How many per-consumer samples of ``cluster`` (and ``consumer``) are served."""
        match: dict[str, str] = {"cluster": cluster}
        if consumer is not None:
            match["consumer"] = consumer
        return sum(len(self.series(f, **match)) for f in CONSUMER_FAMILIES)

    def up(self, cluster: str) -> float | None:
        return self.get(UP, cluster=cluster)

    def cycles(self, cluster: str) -> int:
        return int(self.get(CYCLES, cluster=cluster) or 0)

    def last_success(self, cluster: str) -> float | None:
        return self.get(LAST_SUCCESS, cluster=cluster)

    def freshness(self, cluster: str, consumer: str, topic: str, partition: int) -> float | None:
        return self.get(FRESHNESS, cluster=cluster, consumer=consumer, topic=topic,
                        partition=partition)


def scrape_until(scrape: Callable[[], Scrape], predicate: Callable[[Scrape], bool],
                 timeout_s: float, what: str | Callable[[Scrape | None], str],
                 interval_s: float = 0.1) -> Scrape:
    """Call ``scrape`` until ``predicate`` holds for its answer and return that; TimeoutError at
    the deadline naming ``what`` (a callable gets the last scrape, None if there was none)."""
    last: list[Scrape | None] = [None]

    def check() -> Scrape | None:
        last[0] = answer = scrape()
        return answer if predicate(answer) else None

    result: Scrape = poll(check, timeout_s, lambda: what(last[0]) if callable(what) else what,
                          interval_s)
    return result
