"""The Prometheus rules: generated artifacts in sync, `promtool check rules`, `promtool test rules`
with series that fire and series that do not for every alert, and recording-rule naming."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from deploy import generate
from freshness_tracker import metrics
from tests.deploy.chart import one, render
from tests.deploy.tools import RULES_FILE, RULES_TEST_FILE, promtool


@pytest.fixture(scope="module")
def rules() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(RULES_FILE.read_text())
    return data


def test_generated_files_are_in_sync() -> None:
    stale = [str(p.relative_to(generate.ROOT)) for p in generate.stale()]
    assert not stale, f"run python3 deploy/generate.py: {stale}"


def test_promtool_check_rules() -> None:
    assert "SUCCESS" in promtool("check", "rules", str(RULES_FILE))


def test_promtool_unit_tests_pass() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(RULES_TEST_FILE), cwd=RULES_TEST_FILE.parent)


def test_every_alert_has_a_firing_and_a_quiet_case(rules: dict[str, Any]) -> None:
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    tests = yaml.safe_load(RULES_TEST_FILE.read_text())
    assert tests["rule_files"] == ["../../examples/prometheus/freshness-tracker.rules.yml"]
    fires: set[str] = set()
    quiet: set[str] = set()
    for case in tests["tests"]:
        for check in case.get("alert_rule_test", []):
            (fires if check["exp_alerts"] else quiet).add(check["alertname"])
    assert alerts - fires == set(), "alerts never shown firing"
    assert alerts - quiet == set(), "alerts never shown staying quiet"
    # every recording rule an alert depends on is evaluated in a unit test too
    exprs = " ".join(c.get("expr", "") for case in tests["tests"]
                     for c in case.get("promql_expr_test", []))
    assert f"cluster_consumer:{metrics.FRESHNESS.name}:max" in exprs
    for level in ("cluster_consumer", "cluster_consumer_topic", "cluster_topic"):
        assert f"{level}:kafka_consumer_freshness_seconds:querytime_max" in exprs


def test_the_issue_asks_for_these_alerts(rules: dict[str, Any]) -> None:
    by_name = {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}
    # freshness at the alert's evaluation time, exactly as its recording rule computes it
    freshness = by_name["KafkaConsumerFreshnessObjectiveMissed"]
    recorded = {r["record"]: r["expr"] for g in rules["groups"] for r in g["rules"]
                if "record" in r}
    assert freshness["expr"] == recorded[
        "cluster_consumer:kafka_consumer_freshness_seconds:querytime_max"].rstrip() + " > 300"
    assert f"time() - {metrics.GROUP_OLDEST_UNCOMMITTED.name}" in \
        freshness["expr"] and freshness["for"] == "10m"
    assert "data_loss" in by_name["KafkaConsumerDataLoss"]["expr"]
    assert "retention_headroom" in by_name["KafkaConsumerRetentionHeadroomLow"]["expr"]
    assert "last_success" in by_name["FreshnessTrackerClusterNoSuccessfulCycle"]["expr"]
    assert re.search(r"^up\{.*\} == 0$", by_name["FreshnessTrackerExporterDown"]["expr"])
    assert by_name["FreshnessTrackerExporterAbsent"]["expr"].startswith("absent(up{")
    assert "burrow_errors_total" in by_name["FreshnessTrackerBurrowUnreachable"]["expr"]
    for rule in by_name.values():
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_recording_rules_are_named_after_their_aggregation(rules: dict[str, Any]) -> None:
    records = [r for g in rules["groups"] for r in g["rules"] if "record" in r]
    assert records
    for rule in records:
        level, metric, operation = rule["record"].split(":")
        if operation == "querytime_max":  # the gauge carried forward per series, then the worst
            assert rule["expr"].startswith(f"max by ({level.replace('_', ', ')}) (\n"), rule
            gauge, rated, same, before, gated, stamp, since, alone = re.findall(
                r"kafka_consumer_\w+", rule["expr"])
            # at the rate the gauge grew over the window (1 while the record is the one of a
            # cycle ago), for the time since its cycle, and only a wait of at least one cycle
            # (the chart's config.frequencySec, 30 s)
            assert f"clamp(deriv({gauge}[2m]) / 1000, 0, 1)" in rule["expr"], rule
            assert f"+ ({stamp} == bool {stamp} offset 30000ms),\n" in rule["expr"], rule
            assert f"({gauge} >= bool 30000)" in rule["expr"], rule
            assert f"clamp_min(time() - {stamp} - {gauge} / 1000, 0)" in rule["expr"], rule
            assert gauge == rated == gated == since == alone, rule
            assert same == before == stamp, rule
            assert stamp.endswith("_oldest_uncommitted_timestamp_seconds"), rule
            assert gauge.endswith("_max_freshness_ms") and f"or\n    {gauge} / 1000" in \
                rule["expr"], rule
            assert metric == "kafka_consumer_freshness_seconds", rule
            continue
        # a sum over target series takes one copy of a shard first (sharding.replicasPerShard)
        match = re.match(r"^(\w+) by \(([^)]*)\) \((?:max without \(instance, pod\) \()?(\w+)",
                         rule["expr"])
        assert match, rule
        op, labels, source = match.groups()
        assert op == operation, rule
        if op == "sum":  # two copies of a shard must not count a group twice
            assert "max without (instance, pod) (" in rule["expr"], rule
        assert [x.strip() for x in labels.split(",")] == level.split("_"), rule
        assert source.startswith(metric.rsplit("_ms", 1)[0].split("_")[0]), rule


def test_a_job_name_in_an_annotation_is_printed_not_run(tmp_path: Path) -> None:
    """Prometheus expands annotations as Go templates: a job value holding `{{` is text."""
    job = 'kafka {{ .Labels }} {{ printf "%s" "x" }}'
    spec = one(render({"prometheusRule": {"enabled": True, "job": job}}), "PrometheusRule")["spec"]
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump(spec, allow_unicode=True))
    (absent,) = [r for g in spec["groups"] for r in g["rules"]
                 if r.get("alert") == "FreshnessTrackerExporterAbsent"]
    unit = {"rule_files": [rules.name], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [{"series": 'up{job="other"}', "values": "1x30"}],
        "alert_rule_test": [{
            "eval_time": "30m", "alertname": "FreshnessTrackerExporterAbsent",
            "exp_alerts": [{
                "exp_labels": {"severity": "warning", "job": job},
                "exp_annotations": {
                    "summary": 'No freshness-tracker target (job="kafka {{ .Labels }} '
                               '{{ printf \\"%s\\" \\"x\\" }}") is discovered',
                    "description": absent["annotations"]["description"]}}]}]}]}
    test_file = tmp_path / "rules.test.yml"
    test_file.write_text(yaml.safe_dump(unit, allow_unicode=True))
    assert "SUCCESS" in promtool("test", "rules", str(test_file), cwd=tmp_path)
