"""Per-cluster static labels (`clusters[].labels`): validated where the config is read,
then on every series of their cluster (the snapshot's families and the cluster's self-metrics),
never on another cluster's."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from devstack.oracle import served_and_reference
from freshness_tracker import metrics
from freshness_tracker.app import Exporter
from freshness_tracker.cli import main
from freshness_tracker.config import load_settings
from freshness_tracker.errors import ConfigError
from freshness_tracker.metrics import RESERVED_LABELS
from tests.support.fakes import FakeBurrow, FakeReader, group, lag

TWO = '''
clusters = [
  { name = "c", kafka { "bootstrap.servers" = "k:9092" }, labels { env = "prod", region = eu } }
  { name = "d", kafka { "bootstrap.servers" = "k:9093" }, labels { env = "dev", "team" = "pay" } }
  { name = "e", kafka { "bootstrap.servers" = "k:9094" } }
]
'''


def test_labels_are_read_per_cluster() -> None:
    s = load_settings(text=TWO)
    assert [dict(c.labels) for c in s.clusters] == [
        {"env": "prod", "region": "eu"}, {"env": "dev", "team": "pay"}, {}]


def cluster_with(labels: str) -> str:
    return f'clusters = [{{ name = "c", kafka {{ "bootstrap.servers" = "k:9092" }}, {labels} }}]'


@pytest.mark.parametrize(("labels", "key", "says"), [
    ('labels { "1env" = "x" }', "clusters[0].labels.1env", "not a Prometheus label name"),
    ('labels { "env-name" = "x" }', "clusters[0].labels.env-name", "not a Prometheus label"),
    ('labels { "ünv" = "x" }', "clusters[0].labels.ünv", "not a Prometheus label name"),
    ('labels { __env = "x" }', "clusters[0].labels.__env", "reserved for Prometheus"),
    ('labels { cluster = "x" }', "clusters[0].labels.cluster", "sets itself"),
    ('labels { topic = "x" }', "clusters[0].labels.topic", "sets itself"),
    ('labels { status = "x" }', "clusters[0].labels.status", "sets itself"),
    ('labels { owner = "x" }', "clusters[0].labels.owner", "sets itself"),
    ('labels { job = "x" }', "clusters[0].labels.job", "sets itself"),
    ('labels { env.name = "x" }', "clusters[0].labels.env", "got an object"),
    ("labels { zone = 1 }", "clusters[0].labels.zone", "a number"),
    ("labels { on = true }", "clusters[0].labels.on", "a boolean"),
    ('labels { env = ["a"] }', "clusters[0].labels.env", "a list"),
    ('labels = ["env"]', "clusters[0].labels", "expected an object"),
])
def test_a_bad_label_is_a_config_error_naming_the_key_and_the_fix(labels: str, key: str,
                                                                   says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(text=cluster_with(labels))
    assert caught.value.key == key
    assert says in caught.value.problem and caught.value.fix


def test_every_label_the_tracker_sets_is_reserved() -> None:
    assert {"cluster", "consumer", "topic", "partition", "status", "owner", "client_id",
            "version", "le", "quantile", "job", "instance"} <= RESERVED_LABELS
    with pytest.raises(ConfigError) as caught:
        load_settings(text=cluster_with('labels { client_id = "x" }'))
    assert "choose another name" in caught.value.fix


def test_the_cli_exits_2_on_a_bad_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text(cluster_with('labels { consumer = "x" }'))
    assert main(["check", "--config", str(conf)]) == 2
    err = capsys.readouterr().err
    assert "clusters[0].labels.consumer" in err and "choose another name" in err


def test_every_series_of_a_cluster_carries_its_labels_and_only_its_own() -> None:
    """Three clusters (two label sets, one without): in the registry (prometheus_client) and in
    the cached /metrics bytes, every sample with a cluster label has that cluster's static
    labels and "" for the others' names; samples without a cluster label get none."""
    def lags(name: str) -> list:  # type: ignore[type-arg]
        return [group(name, "g", lag(cluster=name, partition=0, committed=4, current_lag=6,
                                     commit_time=95_000),
                      lag(cluster=name, partition=1, committed=7, current_lag=0))]

    burrow = FakeBurrow({name: lags(name) for name in ("c", "d", "e")})
    reader = FakeReader({("t", 0, 3): 80_000, ("t", 0, 4): 90_000})
    settings = load_settings(text=TWO + "partitionMetrics = [" + ", ".join([
        metrics.FRESHNESS.name, metrics.OFFSET_LAG.name,
        metrics.DATA_AS_OF.name]) + "]")
    exporter = Exporter(settings, burrow=burrow, reader_factory=lambda _k: reader,
                        clock=lambda: 100_000)
    try:
        exporter.run_once()
        served, reference = served_and_reference(exporter)
    finally:
        exporter.close()
    want = {"c": {"env": "prod", "region": "eu", "team": ""},
            "d": {"env": "dev", "region": "", "team": "pay"},
            "e": {"env": "", "region": "", "team": ""}}
    for text in (served, reference):
        per_cluster: dict[str, set[str]] = {"c": set(), "d": set(), "e": set()}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                cluster = sample.labels.get("cluster")
                if cluster is None:
                    assert not set(sample.labels) & {"env", "region", "team"}, sample
                    continue
                assert {k: sample.labels.get(k) for k in want[cluster]} == want[cluster], sample
                per_cluster[cluster].add(family.name)
        assert per_cluster["c"] == per_cluster["d"] == per_cluster["e"]
        names = per_cluster["c"]
        # partition, topic, group, cluster health, self-metric counters and histograms
        assert {metrics.FRESHNESS.name, metrics.TOPIC_MAX_FRESHNESS.name,
                metrics.GROUP_MAX_FRESHNESS.name, metrics.CLUSTER_UP.name,
                metrics.CLUSTER_PARTITIONS.name, metrics.CYCLES.name,
                metrics.READ_DURATION.name} <= names
    assert f'{metrics.CLUSTER_UP.name}{{cluster="c",env="prod",region="eu",team=""}} 1.0' \
        in served
