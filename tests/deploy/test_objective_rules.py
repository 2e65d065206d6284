"""Freshness objectives as Prometheus rules (freshness_tracker.objective_rules and the `rules`
command): the example's generated file, `promtool check rules` and `promtool test rules` (burning
fast, slowly, not at all; first match; topic scope; no data), first-match selectors checked
against the Spark report's own matching, the SRE-workbook windows, escaping, the chart values
format, and no pyspark needed."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from freshness_tracker import metrics
from freshness_tracker.cli import main
from freshness_tracker.domain.slo import Objective, objective_for_group
from freshness_tracker.errors import ConfigError
from freshness_tracker.objective_rules import BAD, objective_rules, render_rules, shadowed
from freshness_tracker.spark.objectives import load_objectives, parse_objectives, regex_problem
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
    """A Go string literal's body read back: `\\uXXXX`, `\\UXXXXXXXX` and `\\<char>`."""
    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        return chr(int(code[1:], 16)) if len(code) > 1 else code

    return re.sub(r"\\(u[0-9a-f]{4}|U[0-9a-f]{8}|.)", one, literal, flags=re.DOTALL)


def _consumer_matchers(expr: str) -> list[tuple[str, str]]:
    """(operator, regex) of every consumer matcher in the SLI's first selector (the first `{...}`
    outside string literals: a literal holds no raw line break, and an escaped quote starts no
    matcher). Its other selectors repeat the same matchers."""
    selector = re.search(r'\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\}', expr)
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
    assert f'{metrics.TOPIC_MAX_FRESHNESS.name}{{consumer=~"orders-.*", topic=~"payments"}}' \
        in rule["expr"]
    assert "> bool 60000" in rule["expr"]
    assert metrics.GROUP_STATUS.name in rule["expr"].split("\nor\n")[-1]
    unscoped = objective_rules(parse_objectives(DOCS_EXAMPLE))["groups"][0]["rules"][1]
    assert f"{metrics.GROUP_MAX_FRESHNESS.name}{{" in unscoped["expr"]
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


@pytest.mark.parametrize("regex", ["orders-(?!test)", "(?<=x)y", r"(a)\\1", "(?>a)", r"a\\Z",
                                   "a*+", "a++", "(?x)a b", r"\\u0041", "a{2,1001}",
                                   "(?P<n>a)(?P=n)", r"\\N{DIGIT ONE}", "(a)(?(1)b|c)"])
def test_regexes_prometheus_cannot_run_are_refused(regex: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "slo.conf"
    conf.write_text(f'objectives = [{{ consumer = "{regex}", freshness = 5m, target = 99% }}]')
    with pytest.raises(ConfigError, match=r"objectives\[0\]\.consumer.*RE2"):
        objective_rules(load_objectives(conf))
    assert main(["rules", "--objectives", str(conf)]) == 2
    assert "RE2" in capsys.readouterr().err


@pytest.mark.parametrize(("regex", "reason"), [
    ("(" * 1001 + "a" + ")" * 1001, "nests groups 1001 deep"),
    ("(?:" * 999 + "a" + ")" * 999, "nests groups 999 deep"),
    ("a{99999999999999999999}", "repetition number is too large"),
    ("a$\n", "uses $ before its end"), ("a$|b", "uses $ before its end"),
])
def test_regexes_pythons_parser_cannot_take_are_config_errors(
        regex: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Deep nesting made Python's parser raise RecursionError and a huge count OverflowError,
    each a traceback; a `$` before the end fully matches "a\\n" in Python, nothing in RE2."""
    conf = tmp_path / "slo.conf"
    conf.write_text(f"objectives = [{{ consumer = {json.dumps(regex)}, freshness = 5m, "
                    "target = 99% }]")
    with pytest.raises(ConfigError, match=r"objectives\[0\]\.consumer"):
        objective_rules(load_objectives(conf))
    assert main(["rules", "--objectives", str(conf)]) == 2
    err = capsys.readouterr().err
    assert reason in err and "objectives[0].consumer" in err and "Traceback" not in err


def test_a_final_dollar_reads_alike_and_is_kept() -> None:
    """Under full matching a last `$` means the end of the name in Python and in RE2."""
    assert regex_problem("orders-.*$") is None and regex_problem("(?m)^a$") is None
    assert regex_problem(r"a\$b") is None and regex_problem("[$]b") is None  # literal dollars
    assert re.fullmatch("a$", "a\n") is None and re.fullmatch("a$\n", "a\n") is not None


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


# --- names are data: YAML, comments, PromQL and Go templates ------------------------------------

#: Text that means something to YAML, a YAML comment, PromQL or a Go template.
_HOSTILE = ["\n", "\r\n", "\r", "#", " # ", ": ", "- ", "'", '"', "{{", "}}", "{{ .Labels }}",
            '{{ printf "%s" "x" }}', "\x00", "\x1b[31m", "\x85", "\u2028", "\u2029", "\ufeff",
            "\t", "&a", "*a", "!!python/object:os.system", "%YAML 1.1", "---", "...", "é", "𝄞",
            "\\", "`", "|", ">", "\nimage: {repository: evil.example/pwn}\n", "\\u000a"]


def _literal_regex(text: str) -> str:
    """A regex matching `text` (metacharacters escaped; line breaks, quotes, `{{`, control and
    non-ASCII characters left raw, as a config may hold them)."""
    out = []
    for k, c in enumerate(text):
        following = text[k + 1:k + 2]
        if c in "\\.+*?()|[]^$" or (c == "{" and (following.isdigit() or following == ",")):
            out.append("\\" + c)
        else:
            out.append(c)
    return "".join(out)


_TEXT = st.lists(st.one_of(st.sampled_from(_HOSTILE), st.text(max_size=8)), max_size=5).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(consumer=_TEXT, topic=st.none() | _TEXT, job=st.none() | _TEXT, source=_TEXT,
       helm_values=st.booleans())
def test_hostile_names_never_become_yaml_and_round_trip(consumer: str, topic: str | None,
                                                        job: str | None, source: str,
                                                        helm_values: bool) -> None:
    regex = _literal_regex(consumer)
    topic = None if topic is None else _literal_regex(topic)
    assume(regex_problem(regex) is None and (topic is None or regex_problem(topic) is None))
    objectives = [Objective(consumer=regex, topic=topic, freshness_ms=60_000,
                            target=Fraction(99, 100)),
                  Objective(consumer=regex, freshness_ms=300_000, target=Fraction(999, 1000))]
    text = render_rules(objectives, job=job, source=source, helm_values=helm_values)
    rules = objective_rules(objectives, job=job, source=source)
    expected = {"prometheusRule": {"extraGroups": rules["groups"]}} if helm_values else rules
    assert yaml.safe_load(text) == expected
    # the header is comment lines only, one per objective (and one for the shadowed one)
    lines = text.split("\n")
    header = 3 + len(objectives) + len(shadowed(objectives))
    assert all(line.startswith("#") for line in lines[:header])
    assert lines[header] == ("prometheusRule:" if helm_values else "groups:")
    # the PromQL string literals read back as the names
    slis = [r for r in rules["groups"][0]["rules"] if r.get("record") == BAD]
    assert _consumer_matchers(slis[1]["expr"]) == [("=~", regex), ("!~", regex)]
    # (the freshness reads two series of the same selector eight times: the gauge, its rate over
    # the window, the timestamp against its value a cycle ago, the gauge against one cycle, the
    # timestamp and the gauge again (the time since the cycle), and the gauge alone)
    if job is not None:
        literals = re.findall(r'job="((?:[^"\\]|\\.)*)"', slis[0]["expr"].split("\nor\n")[0])
        assert len(literals) == 8 and {_unquote(literal) for literal in literals} == {job}
    if topic is not None:
        literals = re.findall(r'topic=~"((?:[^"\\]|\\.)*)"', slis[0]["expr"])
        assert len(literals) == 8 and {_unquote(literal) for literal in literals} == {topic}


#: An objective whose regexes hold Go template actions, a line break and a YAML comment.
_TEMPLATED = Objective(consumer='orders|{{ .Labels }}|{{ printf "%s" "x" }}|a\n# b',
                       topic="t{{ 1 }}", freshness_ms=300_000, target=Fraction(99, 100))


def test_names_in_annotations_render_literally_in_prometheus(tmp_path: Path) -> None:
    """promtool evaluates the alert and expands its annotations with Prometheus's template
    engine: the regexes come out as written, not run."""
    rules = tmp_path / "rules.yml"
    rules.write_text(render_rules([_TEMPLATED], job="kafka {{ $value }}"))
    label = ('orders|{{ .Labels }}|{{ printf "%s" "x" }}|a\n# b / t{{ 1 }}: freshness ≤ 300 s '
             "for 99% of the time")
    description = (f"Objective 0 ({label}), judging the worst partition of its topics matching "
                   "'t{{ 1 }}': the share of time over 5m (or unmeasured) is above 14.4× the "
                   "budget over both 1h and 5m, or 6× the budget over both 6h and 30m; the budget "
                   "is 1% of the time. The Spark report judges the same objective over its window.")
    series = 'cluster="c", consumer="orders", job="kafka {{ $value }}"'
    unit = {"rule_files": [rules.name], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [
            {"series": f'{metrics.TOPIC_MAX_FRESHNESS.name}{{{series}, topic="t{{{{ 1 }}}}"}}',
             "values": "600000x90"},
            {"series": f"{metrics.GROUP_STATUS.name}{{{series}}}", "values": "1x90"}],
        "alert_rule_test": [{
            "eval_time": "1h", "alertname": "KafkaConsumerFreshnessBudgetBurnFast",
            "exp_alerts": [{
                "exp_labels": {"severity": "critical", "objective": "0", "cluster": "c",
                               "consumer": "orders"},
                "exp_annotations": {
                    "summary": "Consumer group orders on c burns its freshness budget fast "
                               "(over 5m 100% of the time)",
                    "description": description}}]}]}]}
    test_file = tmp_path / "rules.test.yml"
    test_file.write_text(yaml.safe_dump(unit, allow_unicode=True))
    assert "SUCCESS" in promtool("check", "rules", str(rules))
    assert "SUCCESS" in promtool("test", "rules", str(test_file), cwd=tmp_path)


def test_a_job_that_is_not_text_is_a_config_error() -> None:
    # a --job from argv that is not UTF-8 arrives as surrogate escapes
    with pytest.raises(ConfigError, match="--job"):
        objective_rules(parse_objectives(DOCS_EXAMPLE), job="kafka\udcff")


# --- which regexes Prometheus runs ----------------------------------------------------------------

#: Regexes at the edges of RE2's, Go's and Python's syntaxes.
_REGEX_CORPUS = [
    "orders-.*", "", "|", "a||b", "(|a)", "(?:)", "()", "(?P<name>x)", "(?P<n1_>x)", "(?P<é>a)",
    "(?<n>a)", "(?i)orders", "(?i:a)b", "(?im-s:a)", "(?s).", "(?-s).", "(?m)^a$", "(?U)a*",
    "a*?", "a{2,1000}", "a{2,1001}", "a{1000}", "a{1001}", "a{,3}", "a{,}", "x{2}{3}", "x**",
    "a*+", "a++", "a?+", "(?>a)", "(a{1000}){1000}", "(a{100}){10}", r"\A", r"\z", r"\Z", r"\b",
    r"\B",
    r"\d\w\s", r"\D\W\S", r"\x41", r"\x{41}", r"\u0041", r"\N{DIGIT ONE}", r"\123", r"\0",
    r"\8", r"\1", "(a)\\1", r"\C", r"\pL", r"\p{Greek}", r"\Qa.b\E", r"\Qab", "[[:word:]]",
    "[[:^alpha:]]", "[[=a=]]", "[a-z0-9_.-]", "[^a]", "[]a]", "[a-]", r"[\]]", r"[\d]",
    r"[a-\d]", "[z-a]", "[a&&b]", "[a--b]", r"\v\a\f\t\n\r", r"\-\ \#\&\~\!\%\<\>\@\,\;\:\=\/",
    r"\e", r"\y", "(?#comment)", "(?x)a b", "(?=a)", "(?!a)", "(?<=a)", "(?<!a)", "(?(1)a|b)",
    "a\nb", "\x00", "\x7f", "\u2028", "é+", "𝄞", "{{ .Labels }}", "a{", "a}", "{", "}",
    "x{a}", "((((((((((a))))))))))", "(" * 100 + "a" + ")" * 100, "a$", "a$\n", "a$|b",
    r"a\$", "[$]",
]


def test_every_regex_the_check_accepts_prometheus_accepts(tmp_path: Path) -> None:
    accepted = [rx for rx in _REGEX_CORPUS if regex_problem(rx) is None]
    refused = [rx for rx in _REGEX_CORPUS if rx not in accepted]
    # what the docs promise, and what Go's RE2 refuses although C++ RE2 takes it
    assert {"a*+", "a++", "(?x)a b", r"\u0041", "a{2,1001}", "a{1001}", "(?>a)", "(?=a)",
            "(?<=a)", "(a)\\1", r"\Z", "(?P<é>a)", r"\C", r"\Qab"} <= set(refused)
    # Python and RE2 read these differently (a repetition or literal text; Unicode or ungreedy)
    assert {"a{,3}", "a{,}", "(?U)a*", "[[:word:]]", "a$\n", "a$|b"} <= set(refused)
    assert {"(?P<name>x)", "(?i)orders", "a{2,1000}", "{{ .Labels }}", "a\nb", "\x00",
            "\u2028"} <= set(accepted)
    objectives = [Objective(consumer=rx, freshness_ms=60_000, target=Fraction(99, 100))
                  for rx in accepted]
    _promtool_check(tmp_path, render_rules(objectives))
    for rx in refused:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", FutureWarning)
                objective = Objective(consumer=rx, freshness_ms=60_000, target=Fraction(99, 100))
        except (re.error, FutureWarning):
            continue  # not even Python's (or Python warns it reads it otherwise)
        with pytest.raises(ConfigError, match=r"objectives\[0\]\.consumer"):
            objective_rules([objective])


@pytest.mark.parametrize("window", ["0", "0m", "00s", "2", "2 m", "-1m", "1m]) or vector(1", ""])
def test_a_rate_window_that_is_not_a_positive_duration_is_a_config_error(window: str) -> None:
    objectives = parse_objectives(DOCS_EXAMPLE)
    with pytest.raises(ConfigError, match=r"--rate-window") as caught:
        objective_rules(objectives, rate_window=window)
    if len(window) > 3:  # described, never echoed (short ones occur in the hint's "2m")
        assert window not in str(caught.value)


@pytest.mark.parametrize("frequency", [0.0, 0.5, -30.0, math.nan, math.inf])
def test_a_frequency_below_the_exporters_least_is_a_config_error(frequency: float) -> None:
    with pytest.raises(ConfigError, match=r"--frequency"):
        objective_rules(parse_objectives(DOCS_EXAMPLE), frequency_s=frequency)


def test_the_frequency_gates_the_carry_in_every_sli_and_defaults_to_reference_conf() -> None:
    """A wait shorter than one cycle is not carried: the cycle in ms reaches every SLI; the
    default is the exporter's own default frequency_sec."""
    from freshness_tracker.config.load import load_tree
    from freshness_tracker.objective_rules import FREQUENCY_S

    assert load_tree(text="").get_float("frequency_sec") == FREQUENCY_S
    rules = objective_rules(parse_objectives(DOCS_EXAMPLE), frequency_s=2.5)
    slis = [r["expr"] for r in rules["groups"][0]["rules"] if r.get("record") == BAD]
    assert slis and all(">= bool 2500)" in expr for expr in slis)


def test_the_rate_window_reaches_every_sli() -> None:
    rules = objective_rules(parse_objectives(DOCS_EXAMPLE), rate_window="90s")
    slis = [r["expr"] for r in rules["groups"][0]["rules"] if r.get("record") == BAD]
    assert slis and all("[90s]) / 1000" in expr and "[2m]" not in expr for expr in slis)
