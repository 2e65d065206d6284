"""The Helm chart, rendered offline by Helm's own SDK for the defaults and every mode/option:
lint, Kubernetes schemas for every manifest (CRDs against tests/deploy/crds.py), the rendered
HOCON parsed by the project's own loader, Burrow's rendered config parsed as TOML, secrets only
through Secret references, the security context, sharding, and values.schema.json."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml

from deploy import schema
from freshness_tracker.config import load_settings
from freshness_tracker.domain.filters import Shard
from freshness_tracker.errors import ConfigError
from freshness_tracker.metrics import FRESHNESS, Granularity
from tests.deploy import crds
from tests.deploy.chart import (
    NAMESPACE,
    RELEASE,
    chart,
    config_data,
    container,
    hocon,
    one,
    pod_spec,
    render,
    render_files,
    rule_spec,
    workload,
)
from tests.deploy.tools import CHART, DASHBOARD_FILES, RULES_FILE, promtool

KUBE_VERSION = "1.30.0"

SIDECAR_SASL: dict[str, Any] = {
    "existingSecret": "kafka-creds",
    "clusters": [
        {"name": "prod", "bootstrapServers": "b1:9093, b2:9093", "numConsumers": 4,
         "kafka": {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
                   "sasl.username": "ft", "ssl.ca.location": "/etc/kafka-tls/ca.crt",
                   "enable.ssl.certificate.verification": True},
         "secretKafka": {"sasl.password": "kafka-password"},
         "burrow": {"sasl": {"enabled": True, "username": "ft", "passwordKey": "kafka-password",
                             "mechanism": "SCRAM-SHA-512"},
                    "tls": {"enabled": True, "caFile": "/etc/kafka-tls/ca.crt"}}},
        {"name": "logs", "bootstrapServers": "l1:9092", "existingSecret": "logs-creds",
         "kafka": {"security.protocol": "SSL", "ssl.key.location": "/etc/kafka-tls/logs.key"},
         "secretKafka": {"ssl.key.password": "key-password"}},
    ],
    "extraVolumes": [{"name": "kafka-tls", "secret": {"secretName": "kafka-tls"}}],
    "extraVolumeMounts": [{"name": "kafka-tls", "mountPath": "/etc/kafka-tls", "readOnly": True}],
    "burrow": {"extraVolumeMounts": [{"name": "kafka-tls", "mountPath": "/etc/kafka-tls",
                                      "readOnly": True}]},
}

SCENARIOS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "external": {"burrow": {"enabled": False, "url": "https://burrow.kafka:8000",
                            "username": "ft", "passwordKey": "burrow-password"},
                 "existingSecret": "ft-secrets",
                 "clusters": [{"name": "prod", "bootstrapServers": ""}]},
    "sidecar-sasl": SIDECAR_SASL,
    "sharded": {"replicas": 3},
    "sharded-hostname": {"replicas": 2, "sharding": {"ordinalSource": "hostname"},
                         "burrow": {"enabled": False, "url": "http://burrow:8000"}},
    "copies": {"sharding": {"replicasPerShard": 2}},
    "sharded-copies": {"replicas": 3, "sharding": {"replicasPerShard": 2},
                       "podDisruptionBudget": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}},
    "sharded-copies-hostname": {"replicas": 2, "sharding": {"replicasPerShard": 3,
                                                            "ordinalSource": "hostname"}},
    "monitoring": {
        "serviceMonitor": {"enabled": True, "labels": {"release": "kps"}, "interval": "15s",
                           "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_name"],
                                            "targetLabel": "pod", "action": "replace"}]},
        "prometheusRule": {"enabled": True, "labels": {"release": "kps"}},
        "grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "Kafka"}}},
    "tuned": {"config": {
        "granularity": "topic", "frequencySec": 10, "workerThreadCount": 4, "port": 9100,
        "filters": {"groups": {"allow": ["orders-.*", "billing"], "deny": [".*-test"]},
                    "topics": {"allow": [".*"], "deny": ["__.*"]}},
        "lookup": {"batchSize": 50, "timeout": "5s", "commitLagWhenCaughtUp": True},
        "logging": {"level": "DEBUG", "format": "json"},
        "extra": "lookup.cacheSize = 1000"},
        "service": {"port": 9100}, "podAnnotations": {"team": "data"},
        "extraEnv": [{"name": "TZ", "value": "UTC"}]},
    "web-secured": {
        "existingSecret": "ft", "config": {"web": {
            "basicAuthUsername": "prom", "basicAuthPasswordKey": "web-password",
            "tlsSecretName": "ft-tls"}},
        "serviceMonitor": {"enabled": True, "tlsConfig": {"insecureSkipVerify": True},
                           "basicAuth": {"username": {"name": "ft", "key": "web-user"},
                                         "password": {"name": "ft", "key": "web-password"}}}},
    "rules-tuned": {"prometheusRule": {
        "enabled": True, "job": "kafka/freshness", "freshnessObjectiveSeconds": 60,
        "freshnessFor": "2m", "retentionHeadroomSeconds": 7200, "noSuccessSeconds": 120,
        "additionalAlertLabels": {"team": "data"},
        "disabledAlerts": ["KafkaConsumerRetentionHeadroomLow"],
        "extraGroups": [{"name": "custom", "rules": [
            {"alert": "OrdersStale", "expr": f'cluster_consumer:{FRESHNESS.name}:max'
             '{consumer="orders"} > 60000', "for": "1m"}]}]}},
}

#: Environment a scenario's secrets would get from their Secrets (to check they are wired).
SECRET_ENV = {"FRESHNESS_TRACKER_BURROW_PASSWORD": "b-pass", "FT_KAFKA_0_SASL_PASSWORD": "k-pass",
              "FT_KAFKA_1_SSL_KEY_PASSWORD": "key-pass", "FRESHNESS_TRACKER_WEB_PASSWORD": "w-pass",
              "FRESHNESS_TRACKER_SHARD_INDEX": "1"}


@pytest.fixture(scope="module", params=list(SCENARIOS))
def scenario(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    name = request.param
    return name, SCENARIOS[name], render(SCENARIOS[name])


_LOADED: dict[tuple[str, frozenset[tuple[str, str]]], Any] = {}


def _settings(docs: list[dict[str, Any]], env: dict[str, str] | None = None) -> Any:
    """load_settings on the rendered HOCON with `env` set (parsing HOCON is slow: cached).

    By default SECRET_ENV, but only the passwords the rendered pod declares: reference.conf
    reads FRESHNESS_TRACKER_*_PASSWORD whatever the chart renders, and a password the pod would
    never get (e.g. the web password without a user) is a config the exporter refuses. (The
    shard index stays: with ordinalSource hostname the pod's command sets it.)
    """
    if env is None:
        declared = {e["name"] for c in _containers(docs) for e in c.get("env", [])}
        env = {k: v for k, v in SECRET_ENV.items()
               if k in declared or not k.endswith("_PASSWORD")}
    text = hocon(docs)
    key = (text, frozenset(env.items()))
    if key not in _LOADED:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            _LOADED[key] = load_settings(text=text)
    return _LOADED[key]


def _containers(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    spec = pod_spec(docs)
    return [*spec.get("initContainers", []), *spec["containers"]]


# --- lint and schemas ----------------------------------------------------------------------------

def test_lint_is_clean_for_every_scenario() -> None:
    for name, values in SCENARIOS.items():
        report = helm.lint(str(CHART), values, strict=True, namespace=NAMESPACE)
        problems = [m for m in report["messages"] if m["severity"] >= 2]
        assert not report["errors"] and not problems, (name, report)


def test_every_manifest_validates(scenario: tuple[str, dict[str, Any], list[dict[str, Any]]]
                                  ) -> None:
    name, _, docs = scenario
    assert docs
    for doc in docs:
        if doc["kind"] in crds.SCHEMAS:
            jsonschema.validate(doc, crds.SCHEMAS[doc["kind"]])
        else:
            try:
                kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
            except kubernetes_validate.ValidationError as exc:
                path = ".".join(str(p) for p in exc.path)
                pytest.fail(f"{name}: {doc['kind']}/{doc['metadata']['name']} {path}: "
                            f"{exc.message}")
        assert doc["metadata"]["namespace"] == NAMESPACE
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == RELEASE


def test_crd_schemas_reject_mistakes() -> None:
    docs = render(SCENARIOS["monitoring"])
    monitor = json.loads(json.dumps(one(docs, "ServiceMonitor")))
    monitor["spec"]["endpoints"][0]["intervall"] = "30s"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(monitor, crds.SERVICE_MONITOR)
    rule = json.loads(json.dumps(one(docs, "PrometheusRule")))
    rule["spec"]["groups"][1]["rules"][0]["for"] = "ten minutes"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(rule, crds.PROMETHEUS_RULE)


def test_rendered_rules_pass_promtool(tmp_path: Path) -> None:
    for name in ("monitoring", "rules-tuned"):
        path = tmp_path / f"{name}.rules.yml"
        path.write_text(yaml.safe_dump(rule_spec(SCENARIOS[name])))
        promtool("check", "rules", str(path))


# --- the tracker's HOCON -------------------------------------------------------------------------

def test_hocon_parses_with_the_projects_loader(
    scenario: tuple[str, dict[str, Any], list[dict[str, Any]]]
) -> None:
    _, values, docs = scenario
    settings = _settings(docs)
    assert settings.warnings == (), settings.warnings
    clusters = values.get("clusters", [{"name": "local", "bootstrapServers": "kafka:9092"}])
    assert [c.name for c in settings.clusters] == [c["name"] for c in clusters]
    assert settings.web.port == values.get("config", {}).get("port", 8081)
    burrow = values.get("burrow", {})
    if burrow.get("enabled", True):
        assert settings.burrow.url == "http://127.0.0.1:8000"  # the sidecar on localhost
    else:
        assert settings.burrow.url == burrow["url"]


def test_defaults_give_the_documented_settings() -> None:
    s = _settings(render({}))
    assert s.burrow.url == "http://127.0.0.1:8000"
    assert s.frequency_s == 30 and s.worker_threads == 8
    assert s.granularity is Granularity.PARTITION
    assert s.shard == Shard(0, 1)
    assert dict(s.clusters[0].kafka.properties) == {"bootstrap.servers": "kafka:9092"}
    assert s.clusters[0].kafka.num_consumers == 2
    assert (s.log_level, s.log_format) == ("INFO", "logfmt")


def test_tuned_config_reaches_the_settings() -> None:
    s = _settings(render(SCENARIOS["tuned"]))
    assert s.granularity is Granularity.TOPIC
    assert (s.frequency_s, s.worker_threads, s.web.port) == (10, 4, 9100)
    assert s.groups("orders-eu") and s.groups("billing") and not s.groups("orders-eu-test")
    assert not s.groups("billing-2")  # whole-name match
    assert s.topics("orders") and not s.topics("__consumer_offsets")
    assert s.lookup.batch_size == 50 and s.lookup.timeout_s == 5.0
    assert s.lookup.commit_lag_when_caught_up is True
    assert s.lookup.cache_size == 1000  # config.extra wins
    assert (s.log_level, s.log_format) == ("DEBUG", "json")


def test_cluster_labels_reach_the_settings_and_bad_names_are_refused() -> None:
    """clusters[].labels: rendered into the tracker's HOCON as they are; a name
    Prometheus would refuse stops at the chart's schema."""
    cluster = {"name": "local", "bootstrapServers": "kafka:9092",
               "labels": {"env": "prod", "region": "eu-west-1", "note": 'a "b" c'}}
    s = _settings(render({"clusters": [cluster]}))
    assert dict(s.clusters[0].labels) == {"env": "prod", "region": "eu-west-1",
                                          "note": 'a "b" c'}
    with pytest.raises(helm.HelmValuesError, match="env-name"):
        render({"clusters": [{**cluster, "labels": {"env-name": "x"}}]})


def test_external_mode() -> None:
    docs = render(SCENARIOS["external"])
    s = _settings(docs)
    assert s.burrow.url == "https://burrow.kafka:8000"
    assert (s.burrow.username, s.burrow.password) == ("ft", "b-pass")
    # no brokers given: the tracker takes them from Burrow's module.servers
    assert "bootstrap.servers" not in s.clusters[0].kafka.properties
    spec = pod_spec(docs)
    assert [c["name"] for c in spec["containers"]] == ["freshness-tracker"]
    assert "initContainers" not in spec
    assert "burrow.toml" not in config_data(docs)
    with pytest.raises(helm.HelmError, match="url"):
        render({"burrow": {"enabled": False}})


def test_secrets_come_from_secret_refs_never_inline() -> None:
    docs = render(SIDECAR_SASL)
    text = hocon(docs)
    # no literal value for anything secret-looking in the ConfigMap
    assert not re.search(r'(password|secret)[\w.]*"?\s*=\s*"', text, re.I), text
    tracker = container(docs, "freshness-tracker")
    env = {e["name"]: e for e in tracker["env"]}
    referenced = set(re.findall(r"\$\{\??([A-Z0-9_]+)\}", text))
    assert referenced == {"FT_KAFKA_0_SASL_PASSWORD", "FT_KAFKA_1_SSL_KEY_PASSWORD"}
    for var in referenced:
        assert "value" not in env[var], f"{var} is inline"
    assert env["FT_KAFKA_0_SASL_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "kafka-creds", "key": "kafka-password"}
    assert env["FT_KAFKA_1_SSL_KEY_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "logs-creds", "key": "key-password"}
    s = _settings(docs)
    prod, logs = s.clusters
    assert dict(prod.kafka.properties) == {
        "bootstrap.servers": "b1:9093, b2:9093", "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "ft",
        "ssl.ca.location": "/etc/kafka-tls/ca.crt",
        "enable.ssl.certificate.verification": "true", "sasl.password": "k-pass"}
    assert prod.kafka.num_consumers == 4
    assert logs.kafka.properties["ssl.key.password"] == "key-pass"
    # the settings' repr (what gets logged) redacts them
    assert "k-pass" not in repr(prod) and "key-pass" not in repr(logs)
    # without the variables the keys are simply absent (optional substitution)
    assert "sasl.password" not in _settings(docs, env={}).clusters[0].kafka.properties
    # the schema refuses a secret written inline
    with pytest.raises(helm.HelmValuesError):
        chart().validate_schema({"clusters": [{"name": "x", "kafka": {"sasl.password": "p"}}]})


def test_web_auth_and_tls() -> None:
    docs = render(SCENARIOS["web-secured"])
    s = _settings(docs)
    assert (s.web.basic_auth_username, s.web.basic_auth_password) == ("prom", "w-pass")
    assert s.web.tls_cert_file == "/etc/freshness-tracker-tls/tls.crt"
    tracker = container(docs, "freshness-tracker")
    assert tracker["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics",
                                                   "scheme": "HTTPS"}
    # /readyz needs credentials once basic auth is on: readiness probes the open /healthz
    assert tracker["readinessProbe"]["httpGet"]["path"] == "/healthz"
    mounts = {m["mountPath"]: m["name"] for m in tracker["volumeMounts"]}
    volume = next(v for v in pod_spec(docs)["volumes"] if v["name"] == mounts[
        "/etc/freshness-tracker-tls"])
    assert volume["secret"]["secretName"] == "ft-tls"
    endpoint = one(docs, "ServiceMonitor")["spec"]["endpoints"][0]
    assert endpoint["scheme"] == "https" and endpoint["basicAuth"]["password"]["key"] == \
        "web-password"


# --- sidecar Burrow ------------------------------------------------------------------------------

def test_sidecar_burrow_gets_no_burrow_env_and_no_service_links() -> None:
    for name, values in SCENARIOS.items():
        docs = render(values)
        spec = pod_spec(docs)
        assert spec["enableServiceLinks"] is False, name
        containers = _containers(docs)
        assert containers, name  # the loop below checks each one
        for c in containers:
            names = [e["name"] for e in c.get("env", [])]
            assert not [n for n in names if n.upper().startswith("BURROW_")], (name, c["name"])
        if values.get("burrow", {}).get("enabled", True) and "url" not in values.get("burrow",
                                                                                       {}):
            burrow = container(docs, "burrow")
            assert burrow.get("env", []) == [] and "envFrom" not in burrow, name


def _run_init(docs: list[dict[str, Any]], tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run the init container's own command on the rendered template; parse its output."""
    init = container(docs, "burrow-config")
    src, dst = init["command"][-2:]
    template = tmp_path / "burrow.toml.in"
    template.write_text(config_data(docs)["burrow.toml"])
    out = tmp_path / "burrow.toml"
    command = [sys.executable if init["command"][0] == "python" else init["command"][0],
               *init["command"][1:-2], str(template), str(out)]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FT_", "BURROW_"))}
    subprocess.run(command, env={**clean, **env}, check=True, timeout=30)
    # the paths fit together: template from the ConfigMap volume, output where Burrow reads
    mounts = {m["mountPath"]: m["name"] for m in init["volumeMounts"]}
    assert mounts[str(Path(src).parent)] == "config"
    assert mounts[str(Path(dst).parent)] == "burrow-config"
    burrow = container(docs, "burrow")
    assert burrow["command"][-2:] == ["--config-dir", str(Path(dst).parent)]
    assert {m["mountPath"]: m["name"] for m in burrow["volumeMounts"]}[
        str(Path(dst).parent)] == "burrow-config"
    return tomllib.loads(out.read_text())


def test_burrow_config_renders_as_toml_with_secrets_filled(tmp_path: Path) -> None:
    docs = render(SIDECAR_SASL)
    template = config_data(docs)["burrow.toml"]
    placeholders = set(re.findall(r"\$\{(FT_BURROW_[A-Z0-9_]+)\}", template))
    assert placeholders == {"FT_BURROW_SASL_0_PASSWORD"}
    assert "kafka-password" not in template
    init_env = {e["name"]: e for e in container(docs, "burrow-config")["env"]}
    assert init_env["FT_BURROW_SASL_0_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "kafka-creds", "key": "kafka-password"}
    tricky = 'p"a\\ss$wo{rd}\n'
    conf = _run_init(docs, tmp_path, {"FT_BURROW_SASL_0_PASSWORD": tricky})
    assert conf["sasl"]["ft-prod"] == {"username": "ft", "password": tricky,
                                       "handshake-first": True, "mechanism": "SCRAM-SHA-512"}
    assert conf["tls"]["ft-prod"] == {"cafile": "/etc/kafka-tls/ca.crt", "noverify": False}
    assert conf["client-profile"]["ft-prod"] == {
        "client-id": "burrow-freshness-tracker", "kafka-version": "2.0.0",
        "sasl": "ft-prod", "tls": "ft-prod"}
    assert conf["cluster"]["prod"]["servers"] == ["b1:9093", "b2:9093"]
    assert conf["cluster"]["logs"]["client-profile"] == "ft-logs"
    assert conf["consumer"]["prod"] == {
        "class-name": "kafka", "cluster": "prod", "servers": ["b1:9093", "b2:9093"],
        "client-profile": "ft-prod", "offsets-topic": "__consumer_offsets",
        "start-latest": False}
    assert "sasl" not in conf["client-profile"]["ft-logs"]
    assert conf["zookeeper"]["servers"] == ["zookeeper:2181"]
    assert conf["httpserver"]["default"]["address"] == ":8000"
    burrow = container(docs, "burrow")
    assert burrow["ports"][0]["containerPort"] == 8000
    # Burrow's mounts: the TLS material where its config points
    assert "/etc/kafka-tls" in {m["mountPath"] for m in burrow["volumeMounts"]}


def test_default_sidecar_config_is_complete(tmp_path: Path) -> None:
    conf = _run_init(render({}), tmp_path, {})
    assert conf["general"]["pidfile"].startswith("/tmp/")  # the container's only writable dir
    assert set(conf) >= {"zookeeper", "cluster", "consumer", "httpserver", "storage",
                         "evaluator", "client-profile"}
    assert conf["cluster"]["local"]["servers"] == ["kafka:9092"]


def test_sidecar_needs_brokers_and_zookeeper() -> None:
    with pytest.raises(helm.HelmError, match="bootstrapServers"):
        render({"clusters": [{"name": "a", "bootstrapServers": ""}]})
    with pytest.raises(helm.HelmError, match="servers"):
        render({"burrow": {"zookeeper": {"servers": []}}})


# --- sharding ------------------------------------------------------------------------------------

def test_replicas_above_one_make_a_sharded_statefulset(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = render(SCENARIOS["sharded"])
    sts = workload(docs)
    assert sts["kind"] == "StatefulSet" and sts["spec"]["replicas"] == 3
    assert not [d for d in docs if d["kind"] == "Deployment"]
    headless = one(docs, "Service", sts["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    env = {e["name"]: e for e in container(docs, "freshness-tracker")["env"]}
    assert env["FRESHNESS_TRACKER_SHARD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.labels['apps.kubernetes.io/pod-index']"
    assert _settings(docs).shard == Shard(1, 3)
    assert _settings(docs, env={"FRESHNESS_TRACKER_SHARD_INDEX": "2"}).shard == Shard(2, 3)
    # a pod without its ordinal must not silently measure shard 0
    monkeypatch.delenv("FRESHNESS_TRACKER_SHARD_INDEX", raising=False)
    with pytest.raises(ConfigError):
        load_settings(text=hocon(docs))
    assert workload(render({}))["kind"] == "Deployment"


def test_hostname_ordinal_source_sets_the_index(tmp_path: Path) -> None:
    docs = render(SCENARIOS["sharded-hostname"])
    tracker = container(docs, "freshness-tracker")
    assert tracker["command"] == ["/bin/sh", "-c"]
    fake = tmp_path / "freshness-tracker"
    fake.write_text('#!/bin/sh\necho "$FRESHNESS_TRACKER_SHARD_INDEX $*"\n')
    fake.chmod(0o755)
    result = subprocess.run(
        ["/bin/sh", "-c", tracker["args"][0]], capture_output=True, text=True, timeout=10,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin", "HOSTNAME": f"{RELEASE}-1"}, check=True)
    assert result.stdout.split() == ["1", "run", "--config",
                                     "/etc/freshness-tracker/freshness-tracker.conf"]
    assert "FRESHNESS_TRACKER_SHARD_INDEX" not in {e["name"] for e in tracker.get("env", [])}


def _shard_of_each_pod(docs: list[dict[str, Any]], tmp_path: Path) -> list[int]:
    """Run the tracker container's shell command for every pod ordinal with a fake binary that
    prints the shard index it was started with."""
    tracker = container(docs, "freshness-tracker")
    assert tracker["command"] == ["/bin/sh", "-c"]
    fake = tmp_path / "freshness-tracker"
    fake.write_text('#!/bin/sh\necho "$FRESHNESS_TRACKER_SHARD_INDEX $*"\n')
    fake.chmod(0o755)
    by_label = {e["name"]: e for e in tracker.get("env", [])}.get("FT_POD_INDEX")
    if by_label is not None:
        assert by_label["valueFrom"]["fieldRef"]["fieldPath"] == \
            "metadata.labels['apps.kubernetes.io/pod-index']"
    shards = []
    for ordinal in range(workload(docs)["spec"]["replicas"]):
        env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "HOSTNAME": f"{RELEASE}-{ordinal}"}
        if by_label is not None:
            env = {"PATH": env["PATH"], "HOSTNAME": "ignored", "FT_POD_INDEX": str(ordinal)}
        out = subprocess.run(["/bin/sh", "-c", tracker["args"][0]], capture_output=True,
                             text=True, timeout=10, env=env, check=True).stdout.split()
        assert out[1:] == ["run", "--config", "/etc/freshness-tracker/freshness-tracker.conf"]
        shards.append(int(out[0]))
    return shards


def test_copies_of_one_unsharded_exporter_are_a_deployment() -> None:
    docs = render(SCENARIOS["copies"])
    deployment = workload(docs)
    assert deployment["kind"] == "Deployment" and deployment["spec"]["replicas"] == 2
    tracker = container(docs, "freshness-tracker")
    assert "command" not in tracker
    assert not {"FRESHNESS_TRACKER_SHARD_INDEX", "FT_POD_INDEX"} & \
        {e["name"] for e in tracker.get("env", [])}
    assert _settings(docs, env={}).shard == Shard(0, 1)  # both measure every group
    assert not [d for d in docs if d["kind"] == "Service" and d["spec"].get("clusterIP")]


@pytest.mark.parametrize(("scenario_name", "shards", "copies"), [
    ("sharded-copies", 3, 2), ("sharded-copies-hostname", 2, 3)])
def test_copies_of_each_shard_take_the_ordinal_modulo_the_shard_count(
        scenario_name: str, shards: int, copies: int, tmp_path: Path) -> None:
    docs = render(SCENARIOS[scenario_name])
    sts = workload(docs)
    assert sts["kind"] == "StatefulSet" and sts["spec"]["replicas"] == shards * copies
    assert f"count = {shards}" in hocon(docs)
    # every shard index from 0 to shards-1 runs exactly `copies` times
    assert _shard_of_each_pod(docs, tmp_path) == list(range(shards)) * copies
    for index in range(shards):
        env = {"FRESHNESS_TRACKER_SHARD_INDEX": str(index)}
        assert _settings(docs, env=env).shard == Shard(index, shards)


def test_copies_prefer_distinct_nodes_unless_affinity_is_given() -> None:
    spread = pod_spec(render(SCENARIOS["sharded-copies"]))["affinity"]["podAntiAffinity"]
    (term,) = spread["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    pod_labels = workload(render(SCENARIOS["sharded-copies"]))["spec"]["template"]["metadata"][
        "labels"]
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= pod_labels.items()
    mine = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "In", "values": ["monitoring"]}]}]}}}
    assert pod_spec(render({**SCENARIOS["copies"], "affinity": mine}))["affinity"] == mine
    assert "affinity" not in pod_spec(render({}))
    assert "affinity" not in pod_spec(render(SCENARIOS["sharded"]))


# --- PodDisruptionBudget -------------------------------------------------------------------------

def test_pod_disruption_budget_covers_every_pod_when_there_is_more_than_one() -> None:
    for name in ("sharded", "copies", "sharded-copies", "sharded-copies-hostname"):
        docs = render(SCENARIOS[name])
        pdb = one(docs, "PodDisruptionBudget", RELEASE)
        assert pdb["apiVersion"] == "policy/v1"
        assert pdb["spec"]["maxUnavailable"] == 1 and "minAvailable" not in pdb["spec"], name
        pod_labels = workload(docs)["spec"]["template"]["metadata"]["labels"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
        assert pdb["spec"]["selector"]["matchLabels"] == \
            workload(docs)["spec"]["selector"]["matchLabels"]
    policy = one(render(SCENARIOS["sharded-copies"]), "PodDisruptionBudget")["spec"]
    assert policy["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    assert "unhealthyPodEvictionPolicy" not in \
        one(render(SCENARIOS["sharded"]), "PodDisruptionBudget")["spec"]


def test_pod_disruption_budget_is_absent_for_one_pod_or_when_disabled() -> None:
    assert not [d for d in render({}) if d["kind"] == "PodDisruptionBudget"]
    assert not [d for d in render({"replicas": 3, "podDisruptionBudget": {"enabled": False}})
                if d["kind"] == "PodDisruptionBudget"]


def test_pod_disruption_budget_min_available_replaces_max_unavailable() -> None:
    for value in (2, "50%"):
        pdb = one(render({"replicas": 4, "podDisruptionBudget": {"minAvailable": value}}),
                  "PodDisruptionBudget")
        assert pdb["spec"]["minAvailable"] == value and "maxUnavailable" not in pdb["spec"]
    pdb = one(render({"replicas": 4, "podDisruptionBudget": {"maxUnavailable": "25%"}}),
              "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == "25%"


def test_chart_metadata_names_home_and_maintainers() -> None:
    meta = chart().metadata  # Chart.yaml as Helm parsed it
    assert meta["home"] == "https://github.com/freshness-tracker/freshness-tracker"
    assert meta["home"] in meta["sources"]
    assert meta["maintainers"]
    for maintainer in meta["maintainers"]:
        assert maintainer["name"] and maintainer["url"].startswith("https://"), maintainer


# --- pod hardening, probes, service --------------------------------------------------------------

def test_restrictive_security_context_everywhere(
    scenario: tuple[str, dict[str, Any], list[dict[str, Any]]]
) -> None:
    name, _, docs = scenario
    spec = pod_spec(docs)
    pod = spec["securityContext"]
    assert pod["runAsNonRoot"] is True and pod["runAsUser"] != 0
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["automountServiceAccountToken"] is False
    containers = _containers(docs)
    assert containers, name
    for c in containers:
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True, (name, c["name"])
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    tmp = next(m for m in container(docs, "freshness-tracker")["volumeMounts"]
               if m["mountPath"] == "/tmp")
    assert "emptyDir" in volumes[tmp["name"]]


def test_probes_and_ports(scenario: tuple[str, dict[str, Any], list[dict[str, Any]]]) -> None:
    _, values, docs = scenario
    tracker = container(docs, "freshness-tracker")
    ports = {p["name"]: p["containerPort"] for p in tracker["ports"]}
    assert ports == {"metrics": values.get("config", {}).get("port", 8081)}
    assert tracker["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert tracker["livenessProbe"]["httpGet"]["port"] == "metrics"
    if not values.get("config", {}).get("web", {}).get("basicAuthUsername"):
        assert tracker["readinessProbe"]["httpGet"]["path"] == "/readyz"
    service = one(docs, "Service", RELEASE)
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    pod_labels = workload(docs)["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert workload(docs)["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_config_change_rolls_the_pods() -> None:
    def checksum(values: dict[str, Any]) -> str:
        meta = workload(render(values))["spec"]["template"]["metadata"]
        return str(meta["annotations"]["checksum/config"])
    assert checksum({}) == checksum({})
    assert checksum({}) != checksum({"config": {"frequencySec": 5}})


# --- ServiceMonitor, PrometheusRule, dashboard ---------------------------------------------------

def test_service_monitor_targets_the_service() -> None:
    docs = render(SCENARIOS["monitoring"])
    monitor = one(docs, "ServiceMonitor")
    service = one(docs, "Service", RELEASE)
    assert monitor["metadata"]["labels"]["release"] == "kps"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= \
        service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [NAMESPACE]
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"]
    assert (endpoint["path"], endpoint["interval"]) == ("/metrics", "15s")
    assert not [d for d in render({}) if d["kind"] in crds.SCHEMAS]  # both off by default


def test_prometheus_rule_is_the_generated_rules_file() -> None:
    rule = one(render(SCENARIOS["monitoring"]), "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kps"
    assert rule["spec"] == yaml.safe_load(RULES_FILE.read_text())


def test_rule_values_change_the_rules() -> None:
    spec = rule_spec(SCENARIOS["rules-tuned"])
    rules = {r.get("alert") or r["record"]: r for g in spec["groups"] for r in g["rules"]}
    assert "KafkaConsumerRetentionHeadroomLow" not in rules
    fresh = rules["KafkaConsumerFreshnessObjectiveMissed"]
    assert fresh["expr"].endswith("> 60") and fresh["for"] == "2m"
    assert fresh["labels"] == {"severity": "warning", "team": "data"}
    assert 'job="kafka/freshness"' in rules["FreshnessTrackerExporterDown"]["expr"]
    assert "> 120" in rules["FreshnessTrackerClusterNoSuccessfulCycle"]["expr"]
    assert rules["OrdersStale"]["for"] == "1m"


def test_dashboard_configmap_has_the_sidecar_label_and_the_dashboard() -> None:
    docs = render(SCENARIOS["monitoring"])
    cm = one(docs, "ConfigMap", f"{RELEASE}-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "Kafka"}
    (key, text), = cm["data"].items()
    assert key.endswith(".json")
    for path in DASHBOARD_FILES:
        assert json.loads(text) == json.loads(path.read_text()), path


# --- values.schema.json, README, NOTES -----------------------------------------------------------

BAD_VALUES = [
    {"replicas": 0},
    {"replicas": "3"},
    {"burrow": {"enabled": False}},  # external mode without a URL
    {"burrow": {"enabled": False, "url": "burrow:8000"}},  # not an http(s) URL
    {"burrow": {"zookeeper": {"servers": []}}},
    {"clusters": []},
    {"clusters": [{"name": "has.dot"}]},
    {"clusters": [{"bootstrapServers": "k:9092"}]},  # no name
    {"clusters": [{"name": "a", "numConsumers": 0}]},
    {"clusters": [{"name": "a", "kafka": {"ssl.key.password": "inline"}}]},
    {"clusters": [{"name": "a", "kafka": {"nested": {"x": 1}}}]},
    {"config": {"granularity": "cluster"}},
    {"config": {"port": 70000}},
    {"config": {"frequencySec": 0}},
    {"config": {"frequencySec": 0.5}},  # the exporter's minimum is 1 s
    {"config": {"web": {"basicAuthUsername": "prom"}}},  # would accept an empty password
    {"existingSecret": "s", "config": {"web": {"basicAuthPasswordKey": "pw"}}},  # auth off
    {"config": {"logging": {"format": "xml"}}},
    {"config": {"lookup": {"batchSize": 0}}},
    {"config": {"lookup": {"unknownKey": 1}}},
    {"sharding": {"ordinalSource": "random"}},
    {"sharding": {"replicasPerShard": 0}},
    {"podDisruptionBudget": {"maxUnavailable": 0}},  # would block every drain
    {"podDisruptionBudget": {"maxUnavailable": "all"}},
    {"podDisruptionBudget": {"minAvailable": "half"}},
    {"podDisruptionBudget": {"unhealthyPodEvictionPolicy": "Never"}},
    {"serviceMonitor": {"interval": "30 seconds"}},
    {"prometheusRule": {"freshnessFor": "ten"}},
    {"prometheusRule": {"disabledAlerts": ["NoSuchAlert"]}},
    {"compatRules": {"enabled": "yes"}},
    {"compatRules": {"kafkaLagExporterr": True}},
    {"extraEnv": [{"name": "BURROW_CLUSTER", "value": "x"}]},
    {"image": {"pullPolicy": "Sometimes"}},
    {"typo": True},
]


@pytest.mark.parametrize("bad", BAD_VALUES, ids=[json.dumps(b)[:60] for b in BAD_VALUES])
def test_schema_rejects_bad_values(bad: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmValuesError):
        chart().validate_schema(bad)
    with pytest.raises(helm.HelmError):  # an install/render would refuse them too
        render(bad)


def test_schema_accepts_every_scenario_and_is_generated() -> None:
    for values in SCENARIOS.values():
        chart().validate_schema(values)
    assert (CHART / "values.schema.json").read_text() == schema.render()


def _leaf_keys(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict) and node:
        return [k for key, value in node.items()
                for k in _leaf_keys(value, f"{prefix}.{key}" if prefix else key)]
    if isinstance(node, list) and node and isinstance(node[0], dict):
        return _leaf_keys(node[0], f"{prefix}[]")
    return [prefix]


def test_readme_lists_every_value() -> None:
    """Every value is in the README table, itself or as a documented object (e.g. a probe)."""
    readme = (CHART / "README.md").read_text()
    values_section = readme.split("## Values", 1)[1].split("\n## ", 1)[0]
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    documented = set(re.findall(r"^\| `([^`]+)` \|", values_section, re.M))
    leaves = set(_leaf_keys(values))
    undocumented = {leaf for leaf in leaves
                    if leaf not in documented and not set(_prefixes(leaf)) & documented}
    assert undocumented == set(), "values missing from the README table"
    known = leaves | {p for leaf in leaves for p in _prefixes(leaf)}
    assert documented - known == set(), "README documents values that do not exist"
    alerts_section = readme.split("## Alerts", 1)[1]
    alerts = {r["alert"] for g in yaml.safe_load(RULES_FILE.read_text())["groups"]
              for r in g["rules"] if "alert" in r}
    assert set(re.findall(r"^\| `([^`]+)` \|", alerts_section, re.M)) == alerts


def _prefixes(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def test_notes_describe_the_mode() -> None:
    sidecar = render_files({})[f"{RELEASE}/templates/NOTES.txt"]
    assert "Mode: sidecar" in sidecar and "127.0.0.1:8000" in sidecar
    external = render_files(SCENARIOS["external"])[f"{RELEASE}/templates/NOTES.txt"]
    assert "Mode: external" in external and "https://burrow.kafka:8000" in external
    sharded = render_files(SCENARIOS["sharded"])[f"{RELEASE}/templates/NOTES.txt"]
    assert "shard N of 3" in sharded and "copies" not in sharded
    copies = render_files(SCENARIOS["sharded-copies"])[f"{RELEASE}/templates/NOTES.txt"]
    assert "StatefulSet of 6 pods" in copies and "shard (N mod 3)" in copies
    assert "max without (instance, pod)" in copies
    unsharded = render_files(SCENARIOS["copies"])[f"{RELEASE}/templates/NOTES.txt"]
    assert "a Deployment of 2 pods, each measuring every consumer group" in unsharded
