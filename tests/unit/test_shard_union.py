"""Sharded replicas give Prometheus exactly one series per partition.

N exporters, each configured as shard i of N, read the same Burrow (a `FaultyBurrow` serving
generated bodies over HTTP) through the real Burrow client; the union of what their /metrics
bytes carry has every partition's freshness once, none twice, none missing, and every group's
roll-ups once. The benchmark (`benchmarks/bench_scale.py --shards`) does the same with 500,000
partitions and separate processes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from freshness_tracker import metrics
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from tests.support.fake_burrow import FaultyBurrow
from tests.support.fakes import FakeReader

CLUSTERS = ("prod", "eu-west")
GROUPS = 90
PARTITIONS = 4
RECORDS = 10


def committed(group: int, partition: int) -> int:
    """Every fifth group lags (records at C and C - 1 exist); the rest are caught up."""
    return RECORDS if group % 5 else 1 + (group + partition) % (RECORDS - 1)


def lag_body(cluster: str, group: int) -> dict[str, object]:
    parts = [{"topic": f"t{group % 7}", "partition": p, "status": "OK", "start": None,
              "end": {"offset": committed(group, p), "timestamp": 1_700_000_000_000, "lag": 0},
              "current_lag": RECORDS - committed(group, p), "complete": 1}
             for p in range(PARTITIONS)]
    return {"error": False, "status": {"cluster": cluster, "group": f"g-{group}",
                                       "status": "OK", "partitions": parts, "totallag": 0}}


@pytest.fixture(scope="module")
def burrow() -> Iterator[FaultyBurrow]:
    server = FaultyBurrow(None).start()
    server.serve_static("/v3/kafka", {"error": False, "clusters": list(CLUSTERS)})
    for cluster in CLUSTERS:
        server.serve_static(f"/v3/kafka/{cluster}/consumer", {
            "error": False, "consumers": [f"g-{g}" for g in range(GROUPS)]})
        for g in range(GROUPS):
            server.serve_static(f"/v3/kafka/{cluster}/consumer/g-{g}/lag", lag_body(cluster, g))
    try:
        yield server
    finally:
        server.stop()


def replica(url: str, index: int, count: int) -> Exporter:
    clusters = ", ".join(f'{{ name = "{c}", kafka {{ "bootstrap.servers" = "k:1" }} }}'
                         for c in CLUSTERS)
    settings = load_settings(text=f'burrow.url = "{url}"\nclusters = [{clusters}]\n'
                                  f"shard {{ index = {index}, count = {count} }}\n")
    timestamps = {(f"t{t}", p, o): 1_699_999_000_000 + o for t in range(7)
                  for p in range(PARTITIONS) for o in range(RECORDS)}
    return Exporter(settings, reader_factory=lambda _k: FakeReader(timestamps),
                    clock=lambda: 1_700_000_000_000)


def series(text: str, family: str) -> list[tuple[tuple[str, str], ...]]:
    return [tuple(sorted(s.labels.items())) for f in text_string_to_metric_families(text)
            for s in f.samples if s.name == family]


@pytest.mark.parametrize("count", [1, 3, 4])
def test_the_union_over_shards_has_each_partition_exactly_once(burrow: FaultyBurrow,
                                                                count: int) -> None:
    texts = []
    for index in range(count):
        exporter = replica(burrow.url, index, count)
        try:
            snapshot = exporter.run_once()
            assert all(c.health.up for c in snapshot.clusters)
            texts.append(exporter.exposition.answer().body.decode())
        finally:
            exporter.close()
    freshness = Counter(s for text in texts for s in series(text, metrics.FRESHNESS.name))
    expected = {(("cluster", c), ("consumer", f"g-{g}"), ("partition", str(p)),
                 ("topic", f"t{g % 7}"))
                for c in CLUSTERS for g in range(GROUPS) for p in range(PARTITIONS)}
    assert set(freshness) == expected  # none missing, none extra
    assert set(freshness.values()) == {1}  # none twice
    groups = Counter(s for text in texts
                     for s in series(text, metrics.GROUP_MAX_FRESHNESS.name))
    assert len(groups) == len(CLUSTERS) * GROUPS and set(groups.values()) == {1}
    if count > 1:  # every replica measured a share, none all of it
        shares = [len(series(text, metrics.FRESHNESS.name)) for text in texts]
        assert all(0 < n < len(expected) for n in shares), shares
