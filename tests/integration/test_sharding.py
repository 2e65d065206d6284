"""Scaling out: shards are disjoint and cover every group (pure, with Shard, stable across
processes), and two real exporters configured as the chart's StatefulSet pods 0 and 1 of 2 give
Prometheus exactly one series per partition: none twice, none missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from devstack import RealStack
from devstack.exporter import running_exporter
from devstack.exporter_config import EVERY_FAMILY
from freshness_tracker import metrics
from freshness_tracker.config import load_settings
from freshness_tracker.config.settings import Settings
from freshness_tracker.domain.filters import Shard
from tests.deploy.chart import hocon, render
from tests.deploy.live import JOB, Prometheus
from tests.deploy.tools import free_port

NAMES = [f"{prefix}-{i}" for prefix in ("orders", "billing", "etl.events", "ü-groupe")
         for i in range(500)]
CLUSTERS = ["prod", "eu-west"]


@pytest.mark.parametrize("count", [1, 2, 3, 5, 16])
def test_shards_are_disjoint_and_cover_every_group(count: int) -> None:
    shards = [Shard(i, count) for i in range(count)]
    for cluster in CLUSTERS:
        owners = {name: [s.index for s in shards if s.owns(cluster, name)] for name in NAMES}
        assert all(len(o) == 1 for o in owners.values()), "a group in no shard or in two"
        sizes = Counter(o[0] for o in owners.values())
        # CRC32 spreads names evenly enough that no replica idles or takes the whole load
        assert min(sizes.values()) > len(NAMES) / count * 0.7, sizes


def test_shard_assignment_is_stable_across_processes() -> None:
    """Every replica computes the same split on its own (no hash randomisation)."""
    script = ("import json, sys; from freshness_tracker.domain.filters import Shard; "
              "names = json.loads(sys.stdin.read()); "
              "print(json.dumps([[n for n in names if Shard(i, 3).owns('prod', n)] "
              "for i in range(3)]))")
    runs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", script], input=json.dumps(NAMES[:300]),
                             capture_output=True, text=True, env=env, check=True, timeout=60)
        runs.append(json.loads(out.stdout))
    here = [[n for n in NAMES[:300] if Shard(i, 3).owns("prod", n)] for i in range(3)]
    assert runs[0] == runs[1] == here


# --- two real replicas on the stack --------------------------------------------------------------

PARTITIONS = 3
RECORDS = 6


def _groups(cluster: str, run: str, per_shard: int = 3) -> list[str]:
    """Group names with at least `per_shard` in each of 2 shards."""
    names: list[str] = []
    i = 0
    while not all(sum(Shard(s, 2).owns(cluster, n) for n in names) >= per_shard
                  for s in (0, 1)):
        names.append(f"shard-{run}-g{i}")
        i += 1
    return names


def _replica_settings(values: dict[str, object], index: int) -> Settings:
    """What pod `index` of the chart's StatefulSet loads: its ordinal arrives as an env var."""
    text = hocon(render(values))
    old = os.environ.get("FRESHNESS_TRACKER_SHARD_INDEX")
    os.environ["FRESHNESS_TRACKER_SHARD_INDEX"] = str(index)
    try:
        return load_settings(text=text)
    finally:
        if old is None:
            del os.environ["FRESHNESS_TRACKER_SHARD_INDEX"]
        else:
            os.environ["FRESHNESS_TRACKER_SHARD_INDEX"] = old


@pytest.fixture(scope="module")
def replicas(stack: RealStack, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[Prometheus, str, list[str], list[Settings]]]:
    run = uuid.uuid4().hex[:8]
    topic = f"ft-shard-{run}"
    stack.create_topic(topic, partitions=PARTITIONS)
    base = int(time.time() * 1000) - 5 * 60_000
    for p in range(PARTITIONS):
        stack.produce(topic, p, [base + 1000 * i for i in range(RECORDS)])
    groups = _groups(stack.cluster, run)
    for n, group in enumerate(groups):
        for p in range(PARTITIONS):
            stack.commit(group, topic, p, n % RECORDS)  # some caught up, most lagging
    for n, group in enumerate(groups):
        for p in range(PARTITIONS):
            stack.wait_for_burrow_lag(group, topic, p, committed_offset=n % RECORDS,
                                      current_lag=RECORDS - n % RECORDS, timeout_s=60)
    settings = []
    for index in (0, 1):
        values = {
            "replicas": 2,
            "burrow": {"enabled": False, "url": stack.burrow_url},
            "clusters": [{"name": stack.cluster, "bootstrapServers": stack.bootstrap_servers}],
            "config": {"port": free_port(), "frequencySec": 1,
                       "filters": {"groups": {"allow": [f"shard-{run}-.*"], "deny": []},
                                   "topics": {"allow": [".*"], "deny": []}},
                       "extra": f'listenAddress = "127.0.0.1"\n{EVERY_FAMILY}'},
        }
        settings.append(_replica_settings(values, index))
    assert [s.shard for s in settings] == [Shard(0, 2), Shard(1, 2)]
    with ExitStack() as stack_of:
        ports = [stack_of.enter_context(running_exporter(s))[1] for s in settings]
        prom = stack_of.enter_context(Prometheus(tmp_path_factory.mktemp("prometheus"),
                                                 [f"127.0.0.1:{p}" for p in ports]))
        selector = f'consumer=~"shard-{run}-.*"'
        expected = len(groups) * PARTITIONS
        prom.wait(lambda: len(prom.query(f"{metrics.OFFSET_LAG.name}{{{selector}}}")) == expected
                  and len(prom.query(f"{metrics.FRESHNESS.name}{{{selector}}}")) == expected,
                  60, f"{expected} partition series from the two replicas")
        time.sleep(2)  # a few more scrapes and cycles: nothing may move between replicas
        yield prom, selector, groups, settings


@pytest.mark.integration
def test_one_series_per_partition_across_replicas(
    replicas: tuple[Prometheus, str, list[str], list[Settings]], stack: RealStack
) -> None:
    prom, selector, groups, _ = replicas
    expected = {(g, str(p)) for g in groups for p in range(PARTITIONS)}
    for metric in (metrics.OFFSET_LAG.name, metrics.FRESHNESS.name,
                   metrics.COMMITTED.name, metrics.PARTITION_STATUS.name):
        counts = prom.query(
            f"count by (cluster, consumer, topic, partition) ({metric}{{{selector}}})")
        seen = [(s["metric"]["consumer"], s["metric"]["partition"]) for s in counts]
        assert sorted(seen) == sorted(expected), metric  # none missing, none extra
        assert {float(s["value"][1]) for s in counts} == {1.0}, f"{metric}: a duplicate series"


@pytest.mark.integration
def test_each_group_is_measured_by_its_shard_only(
    replicas: tuple[Prometheus, str, list[str], list[Settings]], stack: RealStack
) -> None:
    prom, selector, groups, settings = replicas
    ports = {f"127.0.0.1:{s.web.port}": s.shard for s in settings}
    owners = prom.query(f'count by (consumer, instance) '
                        f'({metrics.GROUP_OFFSET_LAG.name}{{job="{JOB}", {selector}}})')
    by_group: dict[str, list[str]] = {}
    for s in owners:
        by_group.setdefault(s["metric"]["consumer"], []).append(s["metric"]["instance"])
    assert sorted(by_group) == sorted(groups)
    for group, instances in by_group.items():
        assert len(instances) == 1, f"{group} measured by {instances}"
        assert ports[instances[0]].owns(stack.cluster, group)
    # both replicas do real work, and report the groups they measure
    measured = prom.query(f'{metrics.CLUSTER_GROUPS.name}{{job="{JOB}"}}')
    assert sorted(float(s["value"][1]) for s in measured) == sorted(
        float(sum(shard.owns(stack.cluster, g) for g in groups)) for shard in ports.values())
    assert all(float(s["value"][1]) >= 3 for s in measured)
