"""Shared by the real-Kafka tests: one exporter cycle against a RealStack, and exact checks."""

from __future__ import annotations

from devstack import RealStack
from freshness_tracker.domain.model import ClusterSnapshot, PartitionResult
from tests.integration.exporter_helpers import Scrape, exporter

FRESHNESS = "kafka_consumer_freshness_ms"
COMMIT_LAG = "kafka_consumer_commit_lag_ms"


def one_cycle(stack: RealStack, *groups: str) -> tuple[ClusterSnapshot, Scrape]:
    """One exporter cycle measuring only ``groups``, and its /metrics text parsed."""
    # exporter() is annotated with LocalStack; RealStack has the attributes it reads
    with exporter(stack, "|".join(groups)) as exp:
        snapshot = exp.run_once()
        scrape = Scrape.of(exp.registry)
    (cluster,) = snapshot.clusters
    assert cluster.health.up and cluster.health.error is None, cluster.health
    return cluster, scrape


def result(snap: ClusterSnapshot, group: str, topic: str, partition: int) -> PartitionResult:
    (found,) = [r for r in snap.partitions
                if (r.key.consumer, r.key.topic, r.key.partition) == (group, topic, partition)]
    return found


def assert_freshness_from(snap: ClusterSnapshot, r: PartitionResult, record_ts: int) -> None:
    """Freshness is now − ``record_ts`` with now taken inside the cycle."""
    assert r.record_timestamp_ms == record_ts
    assert r.freshness_ms is not None
    assert snap.started_ms - record_ts <= r.freshness_ms <= snap.finished_ms - record_ts
