"""The compatibility rules (examples/prometheus/compat.rules.yml, the chart's
prometheusrule-compat.yaml): kafka-lag-exporter's and burrow_exporter's metric names from ours.
`promtool check rules`, `promtool test rules` with every recorded name and its labels, the status
mapping against the exporter's own codes, and the chart's compatRules values."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import jsonschema
import pytest
import yaml

from freshness_tracker.domain.model import BURROW_STATUS_CODES
from tests.deploy import crds
from tests.deploy.chart import RELEASE, one, render
from tests.deploy.tools import COMPAT_RULES_FILE, COMPAT_RULES_TEST_FILE, promtool

#: The names each tool exports that the rules give, with the labels of each (their docs/code).
KAFKA_LAG_EXPORTER = {
    "kafka_consumergroup_group_lag_seconds": {"cluster_name", "group", "topic", "partition"},
    "kafka_consumergroup_group_lag": {"cluster_name", "group", "topic", "partition"},
    "kafka_consumergroup_group_offset": {"cluster_name", "group", "topic", "partition"},
    "kafka_consumergroup_group_max_lag_seconds": {"cluster_name", "group"},
    "kafka_consumergroup_group_max_lag": {"cluster_name", "group"},
    "kafka_consumergroup_group_sum_lag": {"cluster_name", "group"},
    "kafka_consumergroup_group_topic_sum_lag": {"cluster_name", "group", "topic"},
}
BURROW_EXPORTER = {
    "kafka_burrow_partition_lag": {"cluster", "group", "topic", "partition"},
    "kafka_burrow_partition_current_offset": {"cluster", "group", "topic", "partition"},
    "kafka_burrow_partition_status": {"cluster", "group", "topic", "partition"},
    "kafka_burrow_total_lag": {"cluster", "group"},
    "kafka_burrow_status": {"cluster", "group"},
}
#: burrow_exporter's status codes (jirwin/burrow_exporter exporter/metrics.go; 0 when unknown).
BURROW_EXPORTER_STATUS = {"NOTFOUND": 1, "OK": 2, "WARN": 3, "ERR": 4, "STOP": 5, "STALL": 6,
                          "REWIND": 7}


def _records(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["record"]: r for g in spec["groups"] for r in g["rules"]}


@pytest.fixture(scope="module")
def rules() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPAT_RULES_FILE.read_text())
    return data


def test_promtool_check_rules() -> None:
    assert "SUCCESS: 12 rules found" in promtool("check", "rules", str(COMPAT_RULES_FILE))


def test_promtool_unit_tests_pass() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(COMPAT_RULES_TEST_FILE),
                                 cwd=COMPAT_RULES_TEST_FILE.parent)


def test_every_name_of_both_tools_is_recorded(rules: dict[str, Any]) -> None:
    groups = {g["name"]: {r["record"] for r in g["rules"]} for g in rules["groups"]}
    assert groups == {"freshness-tracker.compat.kafka-lag-exporter": set(KAFKA_LAG_EXPORTER),
                      "freshness-tracker.compat.burrow-exporter": set(BURROW_EXPORTER)}


def test_every_recorded_name_is_checked_with_its_labels_by_promtool(
        rules: dict[str, Any]) -> None:
    """Each name is an exp_samples expression whose expected series carry exactly the tool's
    labels plus the kept target labels (job, namespace): none of ours, no instance or pod."""
    tests = yaml.safe_load(COMPAT_RULES_TEST_FILE.read_text())
    assert tests["rule_files"] == ["../../examples/prometheus/compat.rules.yml"]
    expected_labels: dict[str, set[frozenset[str]]] = {}
    for case in tests["tests"]:
        for check in case.get("promql_expr_test", []):
            for sample in check["exp_samples"]:
                name, _, body = sample["labels"].partition("{")
                if name == check["expr"]:
                    keys = frozenset(kv.split("=", 1)[0] for kv in body.rstrip("}").split(","))
                    expected_labels.setdefault(name, set()).add(keys)
    wanted = {**KAFKA_LAG_EXPORTER, **BURROW_EXPORTER}
    assert set(expected_labels) == set(wanted) == set(_records(rules))
    for name, label_sets in expected_labels.items():
        for keys in label_sets:
            assert keys - {"job", "namespace"} == wanted[name], (name, keys)


def test_burrow_exporter_status_is_ours_plus_one(rules: dict[str, Any]) -> None:
    assert set(BURROW_EXPORTER_STATUS) == set(BURROW_STATUS_CODES)
    for status, code in BURROW_STATUS_CODES.items():
        assert code + 1 == BURROW_EXPORTER_STATUS[status], status
    records = _records(rules)
    for name in ("kafka_burrow_partition_status", "kafka_burrow_status"):
        assert records[name]["expr"].rstrip().endswith(") + 1"), name


def test_every_rule_takes_one_copy_and_renames_without_inventing_labels(
        rules: dict[str, Any]) -> None:
    records = _records(rules)
    assert records, "no recording rules to check"
    for name, rule in records.items():
        expr = rule["expr"]
        assert expr.startswith("max without (instance, pod, "), name
        assert '"group", "$1", "consumer", "(.*)"' in expr, name
        if name in KAFKA_LAG_EXPORTER:
            assert '"cluster_name", "$1", "cluster", "(.*)"' in expr, name
        for label in ("member_host", "consumer_id", "client_id"):
            assert label not in expr, name
        # seconds from our milliseconds, never a millisecond series under a seconds name
        assert name.endswith("_seconds") == ("_ms" in expr), name
        if name.endswith("_seconds"):
            assert expr.rstrip().endswith(") / 1000"), name


# --- the chart ------------------------------------------------------------------------------------

def test_chart_renders_the_compat_rules_only_when_enabled(rules: dict[str, Any]) -> None:
    assert not [d for d in render({}) if d["kind"] == "PrometheusRule"]
    docs = render({"compatRules": {"enabled": True, "labels": {"team": "data"}},
                   "prometheusRule": {"enabled": True, "labels": {"release": "kps",
                                                                  "team": "x"}}})
    compat = one(docs, "PrometheusRule", f"{RELEASE}-compat")
    jsonschema.validate(compat, crds.PROMETHEUS_RULE)
    assert compat["spec"] == rules
    labels = compat["metadata"]["labels"]
    assert labels["release"] == "kps" and labels["team"] == "data"  # merged, its own win
    assert one(docs, "PrometheusRule", RELEASE)["metadata"]["labels"]["team"] == "x"


def test_chart_compat_rules_per_tool_and_namespace() -> None:
    only_burrow = one(render({"compatRules": {"enabled": True, "kafkaLagExporter": False,
                                              "namespace": "rules"}}), "PrometheusRule")
    assert set(_records(only_burrow["spec"])) == set(BURROW_EXPORTER)
    assert only_burrow["metadata"]["namespace"] == "rules"
    only_lag = one(render({"compatRules": {"enabled": True, "burrowExporter": False},
                           "prometheusRule": {"namespace": "prom"}}), "PrometheusRule")
    assert set(_records(only_lag["spec"])) == set(KAFKA_LAG_EXPORTER)
    assert only_lag["metadata"]["namespace"] == "prom"
    with pytest.raises(helm.HelmError, match=r"kafkaLagExporter or compatRules\.burrowExporter"):
        render({"compatRules": {"enabled": True, "kafkaLagExporter": False,
                                "burrowExporter": False}})
