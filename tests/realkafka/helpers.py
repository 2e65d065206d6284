"""Shared by the real-Kafka tests: one exporter cycle against a RealStack, and exact checks."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from devstack import RealStack
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.domain.model import ClusterSnapshot, PartitionResult
from tests.integration.exporter_helpers import EVERY_FAMILY, Scrape, exporter

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


@contextmanager
def exporter_with(
    stack: RealStack, groups_allow: str, kafka: Mapping[str, str], extra: str = ""
) -> Iterator[Exporter]:
    """An exporter whose ``clusters[0].kafka`` block is ``bootstrap.servers`` plus ``kafka``
    (TLS/SASL settings, ``isolation.level``...), handed to librdkafka as is."""
    props = {"bootstrap.servers": stack.bootstrap_servers, **kafka}
    block = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in props.items())
    text = (
        f"burrow {{ url = {json.dumps(stack.burrow_url)}, timeout = 3s, retries = 1 }}\n"
        f"clusters = [{{ name = {json.dumps(stack.cluster)}, numConsumers = 2, "
        f"kafka {{ {block} }} }}]\n"
        f"filters.groups.allow = [{json.dumps(groups_allow)}]\n"
        f"lookup {{ timeout = 4s }}\nfrequency_sec = 1\nport = 0\n"
        f'listenAddress = "127.0.0.1"\nworkerThreadCount = 4\n{EVERY_FAMILY}\n{extra}\n'
    )
    exp = Exporter(load_settings(text=text))
    try:
        yield exp
    finally:
        exp.close()


def one_cycle_with(
    stack: RealStack, kafka: Mapping[str, str], *groups: str
) -> tuple[ClusterSnapshot, Scrape]:
    """:func:`one_cycle` with extra librdkafka properties for the exporter."""
    with exporter_with(stack, "|".join(groups), kafka) as exp:
        snapshot = exp.run_once()
        scrape = Scrape.of(exp.registry)
    (cluster,) = snapshot.clusters
    assert cluster.health.up and cluster.health.error is None, cluster.health
    return cluster, scrape
