"""A real Prometheus scrapes the real exporter (configured by the Helm chart's rendered HOCON) on
the integration stack; then EVERY PromQL expression of the Grafana dashboard and of the rules,
found programmatically, runs through Prometheus's HTTP API and must return data with the labels
its legend, table or alert annotations use. The rules are also loaded into that Prometheus:
every rule evaluates cleanly, and with tight thresholds only the lagging group alerts. And the
chart's sidecar mode for real: its rendered burrow.toml runs Burrow 1.9.5 (the chart's image
version) on the stack's Kafka 4.1."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from devstack import RealStack
from devstack.cache import burrow_binary, debian_burrow_binary
from devstack.exporter import running_exporter
from devstack.exporter_config import EVERY_FAMILY
from devstack.processes import Daemon
from freshness_tracker import metrics
from freshness_tracker.config import load_settings
from freshness_tracker.objective_rules import FREQUENCY_S, RATE_WINDOW
from tests.deploy.chart import config_data, container, hocon, render, rule_spec
from tests.deploy.live import JOB, Prometheus
from tests.deploy.promql import Query, dashboard_queries, rule_queries, substitute
from tests.deploy.tools import DASHBOARD_FILES, RULES_FILE, free_port

pytestmark = pytest.mark.integration

RECORDS = 10  # per partition
LAG_COMMIT = 3  # the lagging group's committed offset: 7 records behind on each partition


@dataclass
class Live:
    prometheus: Prometheus
    cluster: str
    topic: str
    lagging: str
    caught_up: str

    @property
    def variables(self) -> dict[str, str]:
        return {"datasource": "prometheus", "job": JOB, "cluster": self.cluster,
                "consumer": f"({self.lagging}|{self.caught_up})", "topic": self.topic,
                "__rate_interval": "1m", "__interval": "5s", "__range": "5m",
                "rate_window": RATE_WINDOW, "frequency": format(FREQUENCY_S, "g")}


def _wait_lag(stack: RealStack, group: str, topic: str, offset: int) -> None:
    for partition in (0, 1):
        stack.wait_for_burrow_lag(group, topic, partition, committed_offset=offset,
                                  current_lag=RECORDS - offset, timeout_s=60)


@pytest.fixture(scope="module")
def live(stack: RealStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    run = uuid.uuid4().hex[:8]
    topic, lagging, caught_up = f"ft-prom-{run}", f"grp-lag-{run}", f"grp-ok-{run}"
    stack.create_topic(topic, partitions=2)
    base = int(time.time() * 1000) - 20 * 60_000  # records 20 minutes old
    for partition in (0, 1):
        stack.produce(topic, partition, [base + 1000 * i for i in range(RECORDS)])
        stack.commit(lagging, topic, partition, LAG_COMMIT)
        stack.commit(caught_up, topic, partition, RECORDS)
    _wait_lag(stack, lagging, topic, LAG_COMMIT)
    _wait_lag(stack, caught_up, topic, RECORDS)

    # the exporter runs with the config the chart renders (external Burrow mode)
    values = {
        "burrow": {"enabled": False, "url": stack.burrow_url},
        "clusters": [{"name": stack.cluster, "bootstrapServers": stack.bootstrap_servers}],
        "config": {"port": free_port(), "frequencySec": 1,
                   "filters": {"groups": {"allow": [f"grp-.*-{run}"], "deny": []},
                               "topics": {"allow": [".*"], "deny": []}},
                   "lookup": {"commitLagWhenCaughtUp": True},
                   "extra": f'listenAddress = "127.0.0.1"\n{EVERY_FAMILY}'},
    }
    settings = load_settings(text=hocon(render(values)))
    # the rules as the chart renders them, with thresholds this data crosses (alert side)
    tight = tmp_path_factory.mktemp("rules") / "tight.rules.yml"
    tight.write_text(yaml.safe_dump(rule_spec({"prometheusRule": {
        "freshnessObjectiveSeconds": 60, "retentionHeadroomSeconds": 10 * 365 * 86400}})))
    with running_exporter(settings) as (_, port), Prometheus(
            tmp_path_factory.mktemp("prometheus"), [f"127.0.0.1:{port}"], [tight]) as prom:
        prom.wait(lambda: len(prom.query(
            f'{metrics.FRESHNESS.name}{{consumer=~"grp-.*-{run}"}}')) == 4, 60,
            "freshness of both groups on both partitions")
        # a new commit makes a later cycle read Kafka again, so read rates and the read
        # duration histogram move while Prometheus watches
        for partition in (0, 1):
            stack.commit(lagging, topic, partition, LAG_COMMIT + 1)
        prom.wait(lambda: bool(prom.query(
            f'sum(increase({metrics.KAFKA_READS.total}{{job="{JOB}"}}[1m])) > 0')), 60,
            "Kafka reads after the new commit")
        prom.wait(lambda: bool(prom.query(
            f'sum(changes({metrics.COMMITTED.name}{{consumer="{lagging}"}}[1m])) >= 2')),
            60, "the new commit in Prometheus")
        yield Live(prom, stack.cluster, topic, lagging, caught_up)


def _check(live: Live, query: Query) -> list[dict[str, Any]]:
    expr = substitute(query.expr, live.variables)
    result = live.prometheus.query(expr)
    assert result, f"{query.source}: no data for {expr}"
    for series in result:
        labels = series["metric"]
        missing = query.labels - set(labels)
        assert not missing, f"{query.source}: result lacks {missing}: {labels} ({expr})"
        if "cluster" in labels:
            assert labels["cluster"] == live.cluster, query.source
        if "consumer" in labels:
            assert labels["consumer"] in (live.lagging, live.caught_up), (query.source, labels)
        if "topic" in labels:
            assert labels["topic"] == live.topic, (query.source, labels)
        value = float(series["value"][1])
        assert not math.isnan(value), f"{query.source}: NaN for {labels} ({expr})"
    return result


def test_every_dashboard_query_returns_data_with_its_labels(live: Live) -> None:
    queries = {q.source: q for q in dashboard_queries(json.loads(DASHBOARD_FILES[0].read_text()))}
    assert len(queries) >= 30  # every target of every panel, and the variables
    failures = []
    for query in queries.values():
        try:
            _check(live, query)
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)


def test_the_dashboard_shows_the_lagging_group_as_lagging(live: Live) -> None:
    fresh = {s["metric"]["consumer"]: float(s["value"][1]) for s in live.prometheus.query(
        f'{metrics.GROUP_MAX_FRESHNESS.name}{{consumer=~"{live.variables["consumer"]}"}}')}
    assert fresh[live.caught_up] == 0
    assert 19 * 60_000 < fresh[live.lagging] < 40 * 60_000  # records were 20 minutes old


def test_every_rule_expression_returns_data_with_its_labels(live: Live) -> None:
    rules = yaml.safe_load(RULES_FILE.read_text())
    queries = rule_queries(rules)
    assert {q.source.split()[0] for q in queries} == {"record", "alert"}
    failures = []
    for query in queries:
        try:
            _check(live, query)
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)
    # the complete alert expressions are valid PromQL on this data too (empty: nothing fires)
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "alert" in rule:
                live.prometheus.query(rule["expr"])


def test_loaded_rules_evaluate_and_only_the_lagging_group_alerts(live: Live) -> None:
    prom = live.prometheus

    def evaluated() -> bool:
        groups = prom.api("rules")["groups"]
        rules = [r for g in groups for r in g["rules"]]
        return bool(rules) and all(r.get("lastEvaluation", "").startswith("20") for r in rules)

    prom.wait(evaluated, 30, "every rule evaluated")
    for group in prom.api("rules")["groups"]:
        for rule in group["rules"]:
            assert rule["health"] == "ok", (rule["name"], rule.get("lastError"))
    # recording rules produced series with their level's labels
    for level, name in (("cluster_consumer", f"cluster_consumer:{metrics.FRESHNESS.name}:max"),
                        ("cluster_consumer_topic",
                         f"cluster_consumer_topic:{metrics.HEADROOM.name}:min")):
        series = prom.query(f'{name}{{consumer=~"{live.variables["consumer"]}"}}')
        assert {s["metric"]["consumer"] for s in series} == {live.lagging, live.caught_up}
        assert all(set(level.split("_")) <= set(s["metric"]) for s in series)

    def alerts() -> list[dict[str, Any]]:
        return [a for a in prom.api("alerts")["alerts"]
                if a["labels"].get("consumer") in (live.lagging, live.caught_up)
                or "consumer" not in a["labels"]]

    def lagging_alerts_present() -> bool:
        names = {(a["labels"]["alertname"], a["labels"].get("consumer")) for a in alerts()}
        return {("KafkaConsumerFreshnessObjectiveMissed", live.lagging),
                ("KafkaConsumerRetentionHeadroomLow", live.lagging)} <= names

    prom.wait(lagging_alerts_present, 30, "the lagging group's alerts")
    seen = {(a["labels"]["alertname"], a["labels"].get("consumer")) for a in alerts()}
    # the caught-up group is fresh (and has nothing unconsumed to lose); nothing is lost, the
    # exporter and Burrow are up and cycling: no other alert
    assert seen == {("KafkaConsumerFreshnessObjectiveMissed", live.lagging),
                    ("KafkaConsumerRetentionHeadroomLow", live.lagging)}, seen
    summary = next(a for a in alerts() if a["labels"]["alertname"] ==
                   "KafkaConsumerFreshnessObjectiveMissed")["annotations"]["summary"]
    assert f"Consumer group {live.lagging} on {live.cluster} is " in summary



def test_chart_sidecar_config_runs_the_real_burrow_and_the_tracker_reads_it(
    live: Live, stack: RealStack, tmp_path: Path
) -> None:
    """Sidecar mode for real: the chart's burrow.toml, filled by the init container's own
    command, starts the stack's Burrow (Debian's 1.2.1 on Kafka 3.9; a Burrow >= 1.9.5, the
    chart's image version, when ``FT_BURROW_BIN`` runs the stack on Kafka 4) with the
    container's (empty) environment, reading the real ``__consumer_offsets`` and coordinating
    through the stack's ZooKeeper at the chart's root path; the chart's HOCON reads that Burrow
    on localhost."""
    port = free_port()
    assert stack.zookeeper is not None
    zookeeper = {"servers": [stack.zookeeper.address],
                 "rootPath": f"/burrow-chart-{uuid.uuid4().hex[:6]}"}
    values = {
        "clusters": [{"name": stack.cluster, "bootstrapServers": stack.bootstrap_servers}],
        "burrow": {"port": port, "zookeeper": zookeeper, "topicRefresh": 1, "offsetRefresh": 1},
        "config": {"port": free_port(), "frequencySec": 1,
                   "filters": {"groups": {"allow": [live.lagging], "deny": []},
                               "topics": {"allow": [".*"], "deny": []}}},
    }
    docs = render(values)
    init = container(docs, "burrow-config")
    burrow_spec = container(docs, "burrow")
    assert burrow_spec["env"] == [] and "envFrom" not in burrow_spec
    template = tmp_path / "burrow.toml.in"
    template.write_text(config_data(docs)["burrow.toml"].replace(
        '"/tmp/burrow.pid"', json.dumps(str(tmp_path / "burrow.pid"))))  # the pod's /tmp
    config_dir = tmp_path / "burrow"
    config_dir.mkdir()
    subprocess.run([sys.executable, *init["command"][1:-2], str(template),
                    str(config_dir / "burrow.toml")], check=True, timeout=30,
                   env={"PATH": os.environ["PATH"]})
    # its own process group, killed with the test process whatever happens (devstack's guardian)
    binary = debian_burrow_binary() if stack.burrow121 else burrow_binary()
    burrow = Daemon("chart-burrow", [str(binary), "-config-dir", str(config_dir)],
                    tmp_path / "burrow.log", cwd=tmp_path,
                    env={e["name"]: e["value"] for e in burrow_spec["env"]}, grace_s=3.0)
    burrow.spawn()
    try:
        url = f"http://127.0.0.1:{port}"
        lag = f"{url}/v3/kafka/{stack.cluster}/consumer/{live.lagging}/lag"

        def burrow_knows_the_group() -> bool:
            try:
                with urllib.request.urlopen(lag, timeout=2) as resp:
                    body = json.loads(resp.read())
            except (OSError, ValueError):
                return False
            return len(body.get("status", {}).get("partitions") or []) == 2

        live.prometheus.wait(burrow_knows_the_group, 60, "the chart's Burrow to see the group")
        settings = load_settings(text=hocon(docs))
        assert settings.burrow.url == url  # the sidecar on localhost
        with running_exporter(settings) as (exporter, _):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not exporter.holder.current.clusters:
                time.sleep(0.2)
            (cluster,) = exporter.holder.current.clusters
            assert cluster.health.up, cluster.health.error
            fresh = {(r.key.consumer, r.key.partition): r.freshness_ms
                     for r in cluster.partitions}
            assert set(fresh) == {(live.lagging, 0), (live.lagging, 1)}
            assert all(f is not None and f > 19 * 60_000 for f in fresh.values()), fresh
    except BaseException:
        print(burrow.log_tail())
        raise
    finally:
        burrow.stop()
