"""examples/: every HOCON config loads with the project's loader (secrets only from the env),
prometheus.yml passes `promtool check config`, docker-compose.yml has every service and mounts
files that exist and fit together, the YAML lints, and docs/deploy.md's links resolve."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from freshness_tracker.config import load_settings
from tests.deploy.live import JOB
from tests.deploy.tools import EXAMPLES, ROOT, promtool, require_tool

CONFIGS = EXAMPLES / "config"
COMPOSE = EXAMPLES / "docker-compose.yml"
CONFIG_PATH = "/etc/freshness-tracker/freshness-tracker.conf"


def _load(path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings(path)
    assert settings.warnings == (), settings.warnings
    return settings


def test_every_example_config_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    configs = sorted(CONFIGS.glob("*.conf"))
    assert {p.name for p in configs} >= {"one-cluster.conf", "several-clusters.conf",
                                         "sasl-ssl.conf", "compose.conf"}
    for path in configs:
        _load(path, {}, monkeypatch)
        # no secret is written in an example: secret-looking keys only take ${?ENV}
        for line in path.read_text().splitlines():
            if re.search(r"(password|secret)\"?\s*=", line, re.I) and not line.lstrip(
            ).startswith("#"):
                assert re.search(r"=\s*\$\{\?[A-Z0-9_]+\}\s*$", line), f"{path.name}: {line}"


def test_one_and_several_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    one = _load(CONFIGS / "one-cluster.conf", {}, monkeypatch)
    assert [c.name for c in one.clusters] == ["local"]
    assert one.burrow.url == "http://burrow:8000"
    several = _load(CONFIGS / "several-clusters.conf", {}, monkeypatch)
    assert [c.name for c in several.clusters] == ["orders-prod", "logs-prod", "metrics-prod"]
    assert "bootstrap.servers" not in several.clusters[2].kafka.properties  # from Burrow
    assert several.clusters[0].kafka.num_consumers == 4
    assert not several.groups("console-consumer-42") and several.groups("orders")
    assert not several.topics("__consumer_offsets")


def test_sasl_ssl_takes_secrets_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    bare = _load(CONFIGS / "sasl-ssl.conf", {}, monkeypatch)
    props = dict(bare.clusters[0].kafka.properties)
    assert props["security.protocol"] == "SASL_SSL" and "sasl.password" not in props
    assert bare.burrow.password == ""
    full = _load(CONFIGS / "sasl-ssl.conf", {"KAFKA_SASL_PASSWORD": "k-secret",
                                             "FRESHNESS_TRACKER_BURROW_PASSWORD": "b-secret"},
                 monkeypatch)
    assert full.clusters[0].kafka.properties["sasl.password"] == "k-secret"
    assert (full.burrow.username, full.burrow.password) == ("freshness-tracker", "b-secret")
    assert "k-secret" not in repr(full.clusters[0])


def test_prometheus_config_passes_promtool() -> None:
    config = EXAMPLES / "prometheus" / "prometheus.yml"
    # the rules were checked too
    assert "freshness-tracker.rules.yml" in promtool("check", "config", str(config))
    parsed = yaml.safe_load(config.read_text())
    job = parsed["scrape_configs"][0]
    assert job["job_name"] == JOB  # the job the rules select
    assert job["static_configs"][0]["targets"] == ["freshness-tracker:8081"]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def _mounts(service: dict[str, Any]) -> dict[str, Path]:
    """Container path -> host path of each bind mount (relative to the compose file)."""
    out = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        assert source.startswith("."), f"{volume}: only relative bind mounts in the example"
        out[target] = (COMPOSE.parent / source).resolve()
    return out


def test_compose_has_every_component(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"kafka", "zookeeper", "burrow", "freshness-tracker", "prometheus",
            "grafana"} <= set(services)
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        for dependency in service.get("depends_on", []):
            assert dependency in services, (name, dependency)
        for mount in _mounts(service).values():
            assert mount.exists(), f"{name}: mounts {mount}, which does not exist"
    host_ports = [p.split(":")[0] for s in services.values() for p in s.get("ports", [])]
    assert len(host_ports) == len(set(host_ports))


def test_compose_tracker_is_the_image_with_the_example_config(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tracker = compose["services"]["freshness-tracker"]
    build = tracker["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == \
        ROOT / "Dockerfile"
    assert tracker["read_only"] is True and "/tmp" in tracker["tmpfs"]
    config = _mounts(tracker)[CONFIG_PATH]
    settings = _load(config, {}, monkeypatch)
    assert settings.burrow.url == "http://burrow:8000"
    assert settings.clusters[0].kafka.properties["bootstrap.servers"] == "kafka:9092"
    assert tracker["ports"] == [f"{settings.web.port}:{settings.web.port}"]


def test_compose_burrow_config_fits_the_services(compose: dict[str, Any]) -> None:
    burrow = compose["services"]["burrow"]
    assert not [k for k in burrow.get("environment", {}) if str(k).startswith("BURROW_")]
    config_dir = burrow["command"][burrow["command"].index("--config-dir") + 1]
    conf = tomllib.loads(_mounts(burrow)[f"{config_dir}/burrow.toml"].read_text())
    assert conf["zookeeper"]["servers"] == ["zookeeper:2181"]
    assert conf["cluster"]["local"]["servers"] == ["kafka:9092"]
    assert conf["consumer"]["local"]["cluster"] == "local"
    port = conf["httpserver"]["default"]["address"].rsplit(":", 1)[1]
    assert burrow["ports"] == [f"{port}:{port}"]


def test_compose_prometheus_and_grafana_provisioning(compose: dict[str, Any]) -> None:
    prometheus = compose["services"]["prometheus"]
    mounts = _mounts(prometheus)
    config_arg = next(a for a in prometheus["command"] if a.startswith("--config.file="))
    config_path = PurePosixPath(config_arg.split("=", 1)[1])
    config = yaml.safe_load(mounts[str(config_path)].read_text())
    assert config["rule_files"], "Prometheus loads no rule file"
    for rule_file in config["rule_files"]:
        assert str(config_path.parent / rule_file) in mounts, rule_file
    grafana = compose["services"]["grafana"]
    mounts = _mounts(grafana)
    provisioning = mounts["/etc/grafana/provisioning/dashboards"]
    provider = yaml.safe_load((provisioning / "freshness-tracker.yml").read_text())
    dashboards = mounts[provider["providers"][0]["options"]["path"]]
    assert (dashboards / "freshness-tracker.json").is_file()
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert (dashboards / PurePosixPath(home).name).is_file()
    sources = yaml.safe_load((mounts["/etc/grafana/provisioning/datasources"] /
                              "prometheus.yml").read_text())["datasources"]
    assert sources[0]["type"] == "prometheus" and sources[0]["isDefault"] is True
    assert sources[0]["url"] == "http://prometheus:9090"


def test_yaml_lints() -> None:
    yamllint = require_tool("yamllint")
    files = [*EXAMPLES.rglob("*.yml"), ROOT / "helm" / "freshness-tracker" / "values.yaml",
             ROOT / "helm" / "freshness-tracker" / "Chart.yaml",
             ROOT / "deploy" / "prometheus" / "freshness-tracker.rules.test.yml"]
    config = ("{extends: default, rules: {line-length: {max: 240}, document-start: disable, "
              "comments: {min-spaces-from-content: 1}, truthy: {check-keys: false}, "
              "indentation: {spaces: consistent, indent-sequences: whatever}}}")
    result = subprocess.run([yamllint, "-f", "parsable", "-d", config, *map(str, files)],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_deploy_doc_links_resolve() -> None:
    doc = ROOT / "docs" / "deploy.md"
    links = re.findall(r"\]\((\.\./[^)#]+)\)", doc.read_text())
    assert links
    for link in links:
        assert (doc.parent / link).resolve().exists(), link
