"""Render the chart offline with Helm's own Go SDK (helm-python-sdk) and pick manifests apart."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

import helm_python as helm
import yaml

from tests.deploy.tools import CHART

RELEASE = "freshness-tracker"
NAMESPACE = "monitoring"


@functools.lru_cache(maxsize=1)
def chart() -> helm.Chart:
    return helm.Chart.load(str(CHART))


def render_files(values: dict[str, Any], name: str = RELEASE,
                 namespace: str = NAMESPACE) -> dict[str, str]:
    """Template path -> rendered text (NOTES.txt included)."""
    return chart().render(values, name=name, namespace=namespace, is_install=True)


def render(values: dict[str, Any], name: str = RELEASE,
           namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """Every rendered Kubernetes object, in template order."""
    docs: list[dict[str, Any]] = []
    for path, text in sorted(render_files(values, name, namespace).items()):
        if path.endswith(".txt"):
            continue
        docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


def one(docs: Iterable[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind
             and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def workload(docs: list[dict[str, Any]]) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")]
    assert len(found) == 1, [d["kind"] for d in found]
    return found[0]


def pod_spec(docs: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = workload(docs)["spec"]["template"]["spec"]
    return spec


def container(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    spec = pod_spec(docs)
    for c in [*spec.get("initContainers", []), *spec["containers"]]:
        if c["name"] == name:
            return dict(c)
    raise AssertionError(f"no container {name}")


def config_data(docs: list[dict[str, Any]]) -> dict[str, str]:
    data: dict[str, str] = one(docs, "ConfigMap", RELEASE)["data"]
    return data


def hocon(docs: list[dict[str, Any]]) -> str:
    return config_data(docs)["freshness-tracker.conf"]


def rule_spec(values: dict[str, Any] | None = None) -> dict[str, Any]:
    """The PrometheusRule's spec as rendered with `values` (rules forced on)."""
    merged = json.loads(json.dumps(values or {}))
    merged.setdefault("prometheusRule", {})["enabled"] = True
    spec: dict[str, Any] = one(render(merged), "PrometheusRule")["spec"]
    return spec
