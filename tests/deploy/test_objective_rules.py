"""Freshness objectives as Prometheus rules (freshness_tracker.objective_rules and the `rules`
command): the example's generated file, `promtool check rules` and `promtool test rules` (burning
fast, slowly, not at all; first match; topic scope; no data), first-match selectors checked
against the Spark report's own matching, the SRE-workbook windows, escaping, the chart values
format, and no pyspark needed."""

from __future__ import annotations

import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from freshness_tracker.cli import main
from freshness_tracker.domain.slo import Objective, objective_for_group
from freshness_tracker.errors import ConfigError
from freshness_tracker.objective_rules import BAD, objective_rules, render_rules
from freshness_tracker.spark.objectives import load_objectives, parse_objectives
from tests.deploy.chart import one, render
from tests.deploy.tools import DEPLOY, EXAMPLES, ROOT, promtool, require_tool

OBJECTIVES_FILE = EXAMPLES / "prometheus" / "objectives.conf"
RULES = EXAMPLES / "prometheus" / "objectives.rules.yml"
RULES_TEST = DEPLOY / "prometheus" / "objectives.rules.test.yml"

#: docs/spark.md's example: the second objective never judges a consumer's series.
DOCS_EXAMPLE = """objectives = [
  { consumer = "orders-.*", topic = "payments", freshness = 1m, target = 99.9% }
  { consumer = "orders-.*", freshness = 5m, target = 99.5% }
  { consumer = ".*", freshness = 1h, target = 99% }
]"""


def _promtool_check(tmp_path: Path, text: str) -> None:
    promtool = require_tool("promtool")
    path = tmp_path / "rules.yml"
    path.write_text(text)
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def _unquote(literal: str) -> str:
    return re.sub(r"\\(.)", r"\1", literal)


def _consumer_matchers(expr: str) -> list[tuple[str, str]]:
    """(operator, regex) of every consumer matcher in the SLI's first selector."""
    selector = re.search(r"\{([^}]*)\}", expr)
    assert selector, expr
    return [(op, _unquote(value)) for op, value in
            re.findall(r'consumer(=~|!~)"((?:[^"\\]|\\.)*)"', selector.group(1))]


def _selected_by(rules: dict[str, Any], consumer: str) -> list[int]:
    """The objectives whose SLI selectors select `consumer`, matched as Prometheus does (whole
    name: Python's fullmatch is RE2's anchored match for these regexes)."""
    chosen = []
    for rule in rules["groups"][0]["rules"]:
        if rule.get("record") != BAD:
            continue
        ok = all((re.fullmatch(rx, consumer) is not None) == (op == "=~")
                 for op, rx in _consumer_matchers(rule["expr"]))
        if ok:
            chosen.append(int(rule["labels"]["objective"]))
    return chosen


# --- the example and promtool ---------------------------------------------------------------------

def test_the_command_prints_the_example_rules_file(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["rules", "--objectives", "examples/prometheus/objectives.conf"]) == 0
    assert capsys.readouterr().out == RULES.read_text()


def test_promtool_check_rules() -> None:
    assert "SUCCESS: 16 rules found" in promtool("check", "rules", str(RULES))


def test_promtool_unit_tests_pass() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(RULES_TEST), cwd=RULES_TEST.parent)


def test_the_promtool_tests_cover_every_alert_firing_and_quiet() -> None:
    tests = yaml.safe_load(RULES_TEST.read_text())
    assert tests["rule_files"] == ["../../examples/prometheus/objectives.rules.yml"]
    fired: dict[str, set[str]] = {}
    quiet: set[str] = set()
    for case in tests["tests"]:
        for check in case.get("alert_rule_test", []):
            if not check["exp_alerts"]:
                quiet.add(check["alertname"])
            for alert in check["exp_alerts"]:
                fired.setdefault(check["alertname"], set()).add(alert["exp_labels"]["consumer"])
    names = {"KafkaConsumerFreshnessBudgetBurnFast", "KafkaConsumerFreshnessBudgetBurnSlow"}
    assert set(fired) == quiet == names
    # fast burn pages; slow burn only tickets; within budget and first-matched: nothing
    assert fired["KafkaConsumerFreshnessBudgetBurnFast"] == {"orders-stuck", "orders-steady10"}
    assert fired["KafkaConsumerFreshnessBudgetBurnSlow"] == {
        "orders-stuck", "orders-steady10", "orders-slow5"}
    inputs = " ".join(s["series"] for case in tests["tests"] for s in case["input_series"])
    for consumer in ("orders-ok", "reports"):
        assert f'consumer="{consumer}"' in inputs


# --- semantics ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [OBJECTIVES_FILE.read_text(), DOCS_EXAMPLE])
def test_first_match_in_promql_is_the_reports_first_match(text: str) -> None:
    objectives = parse_objectives(text)
    rules = objective_rules(objectives)
    for consumer in ("orders-1", "orders-", "billing-app", "billing", "reports", "", "ORDERS-1",
                     "orders-1x", "xorders-1", "billing-.*", "a.b"):
        expected = objective_for_group(objectives, consumer)
        assert _selected_by(rules, consumer) == ([] if expected is None else [expected]), consumer


def test_the_sli_is_strictly_over_the_objective_or_reported_without_a_value() -> None:
    (rule,) = [r for r in objective_rules(parse_objectives(DOCS_EXAMPLE))["groups"][0]["rules"]
               if r.get("labels", {}).get("objective") == "0" and "record" in r]
    # a topic-scoped objective judges the worst of its topics only
    assert 'kafka_consumer_topic_max_freshness_ms{consumer=~"orders-.*", topic=~"payments"}' \
        in rule["expr"]
    assert "> bool 60000" in rule["expr"]
    assert "kafka_consumer_group_burrow_status" in rule["expr"].split("\nor\n")[-1]
    unscoped = objective_rules(parse_objectives(DOCS_EXAMPLE))["groups"][0]["rules"][1]
    assert "kafka_consumer_group_max_freshness_ms{" in unscoped["expr"]
    assert "> bool 300000" in unscoped["expr"]


def test_burn_rate_windows_are_the_sre_workbooks() -> None:
    objectives = [Objective(consumer=".*", freshness_ms=300_000, target=Fraction(999, 1000))]
    rules = objective_rules(objectives)["groups"][0]["rules"]
    records = {r["record"]: r["expr"] for r in rules if "record" in r and r["record"] != BAD}
    windows = ["5m", "30m", "1h", "2h", "6h", "1d", "3d"]
    assert records == {f"{BAD}:ratio_rate{w}": f"avg_over_time({BAD}[{w}])" for w in windows}
    alerts = {r["alert"]: r for r in rules if "alert" in r}

    def pairs(expr: str) -> list[tuple[str, str, str]]:
        found = re.findall(r"ratio_rate(\w+)\{objective=\"0\"\} > \(([\d.]+) \* 0\.001\)", expr)
        return [(found[k][0], found[k + 1][0], found[k][1]) for k in range(0, len(found), 2)
                if found[k][1] == found[k + 1][1]]

    fast, slow = alerts["KafkaConsumerFreshnessBudgetBurnFast"], \
        alerts["KafkaConsumerFreshnessBudgetBurnSlow"]
    assert pairs(fast["expr"]) == [("1h", "5m", "14.4"), ("6h", "30m", "6")]
    assert pairs(slow["expr"]) == [("1d", "2h", "3"), ("3d", "6h", "1")]
    assert fast["labels"] == {"severity": "critical", "objective": "0"}
    assert slow["labels"] == {"severity": "warning", "objective": "0"}
    # every rule in one group, alerts after the shares they read (evaluated in order)
    assert [("alert" in r) for r in rules] == sorted("alert" in r for r in rules)


def test_regexes_are_escaped_for_promql_and_job_selects(tmp_path: Path) -> None:
    objectives = parse_objectives(r'''objectives = [
      { consumer = "orders\\.v1|\"quoted\"", topic = "t\\d+", freshness = 90s, target = 0.995 }
    ]''')
    assert objectives[0].consumer == 'orders\\.v1|"quoted"'
    text = render_rules(objectives, job="kafka/freshness")
    _promtool_check(tmp_path, text)
    (sli,) = [r for r in yaml.safe_load(text)["groups"][0]["rules"] if r.get("record") == BAD]
    assert 'job="kafka/freshness", consumer=~"orders\\\\.v1|\\"quoted\\""' in sli["expr"]
    assert _consumer_matchers(sli["expr"]) == [("=~", objectives[0].consumer)]
    assert 'topic=~"t\\\\d+"' in sli["expr"] and "> bool 90000" in sli["expr"]
    assert "(14.4 * 0.005)" in text


@pytest.mark.parametrize("regex", ["orders-(?!test)", "(?<=x)y", r"(a)\\1", "(?>a)", r"a\\Z"])
def test_regexes_prometheus_cannot_run_are_refused(regex: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "slo.conf"
    conf.write_text(f'objectives = [{{ consumer = "{regex}", freshness = 5m, target = 99% }}]')
    with pytest.raises(ConfigError, match=r"objectives\[0\]\.consumer.*RE2"):
        objective_rules(load_objectives(conf))
    assert main(["rules", "--objectives", str(conf)]) == 2
    assert "RE2" in capsys.readouterr().err


def test_a_bad_objectives_file_is_a_config_error(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "slo.conf"
    conf.write_text('objectives = [{ consumer = "x", freshness = 5m }]')
    assert main(["rules", "--objectives", str(conf)]) == 2
    assert "objectives[0].target: missing" in capsys.readouterr().err
    assert main(["rules", "--objectives", str(tmp_path / "none.conf")]) == 2


def test_an_objective_that_never_judges_a_consumer_is_named() -> None:
    text = render_rules(parse_objectives(DOCS_EXAMPLE))
    assert "#   1: never judges a consumer (objective 0 has the same consumer regex)" in text


def test_helm_values_format_feeds_the_charts_extra_groups(tmp_path: Path) -> None:
    values = yaml.safe_load(render_rules(load_objectives(OBJECTIVES_FILE), helm_values=True))
    assert list(values) == ["prometheusRule"]
    values["prometheusRule"]["enabled"] = True
    spec = one(render(values), "PrometheusRule")["spec"]
    objectives_group = spec["groups"][-1]
    assert objectives_group == yaml.safe_load(RULES.read_text())["groups"][0]
    _promtool_check(tmp_path, yaml.safe_dump(spec, allow_unicode=True))


def test_no_pyspark_needed() -> None:
    code = ("import sys; sys.modules['pyspark'] = None\n"
            "from freshness_tracker.cli import main\n"
            "sys.exit(main(['rules', '--objectives', sys.argv[1]]))")
    result = subprocess.run([sys.executable, "-c", code, str(OBJECTIVES_FILE)],
                            capture_output=True, text=True, timeout=60, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "freshness_tracker:objective_bad:ratio_rate3d" in result.stdout
