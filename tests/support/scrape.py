"""The one Prometheus text parser of the tests and benchmarks: samples by (name, labels).

Metric names the suites look up by hand are named once here (until the package's metric
catalogue names them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.stack_support import poll

Labels = frozenset[tuple[str, str]]

UP = "freshness_tracker_cluster_up"
LAST_SUCCESS = "freshness_tracker_cluster_last_success_timestamp_seconds"
LAST_ATTEMPT = "freshness_tracker_cluster_last_attempt_timestamp_seconds"
CYCLES = "freshness_tracker_cycles_total"
FAILURES = "freshness_tracker_cycle_failures_total"
BURROW_ERRORS = "freshness_tracker_burrow_errors_total"
READ_FAILURES = "freshness_tracker_kafka_read_failures_total"
PARTITIONS = "freshness_tracker_cluster_partitions"
DURATION = "freshness_tracker_cluster_cycle_duration_seconds"
FRESHNESS = "kafka_consumer_freshness_ms"
COMMIT_LAG = "kafka_consumer_commit_lag_ms"
GROUP_FRESHNESS = "kafka_consumer_group_max_freshness_ms"

#: Every per-consumer family: none of them may survive a failed cycle with an old value.
CONSUMER_FAMILIES = (
    FRESHNESS, COMMIT_LAG, "kafka_consumer_offset_lag",
    "kafka_consumer_committed_offset", "kafka_consumer_data_loss", "kafka_consumer_lost_records",
    "kafka_consumer_retention_headroom_ms", "kafka_consumer_partition_burrow_status",
    "kafka_consumer_topic_max_freshness_ms", "kafka_consumer_topic_offset_lag",
    GROUP_FRESHNESS, "kafka_consumer_group_offset_lag", "kafka_consumer_group_burrow_status",
    "kafka_consumer_group_unmeasured_partitions", "kafka_consumer_group_data_loss_partitions",
)  # fmt: skip


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
