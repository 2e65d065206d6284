"""The Grafana dashboard's structure: variables, the panels the issue asks for, units, every
query filtered by the template variables, one data source variable, a sane grid. (Every query
is also run against a real Prometheus in tests/integration/test_prometheus_queries.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from deploy import dashboard
from freshness_tracker import metrics as catalogue
from tests.deploy.promql import _panels, dashboard_queries, selectors
from tests.deploy.tools import DASHBOARD_FILES, promtool

TIME_UNITS = {"ms", "dtdurationms"}
SECOND_UNITS = {"s", "dtdurations"}
DATE_UNITS = {"dateTimeAsIso", "dateTimeAsSystem", "dateTimeFromNow"}  # Grafana: ms since epoch


@pytest.fixture(scope="module")
def board() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD_FILES[0].read_text())
    return data


def _panel(board: dict[str, Any], title: str) -> dict[str, Any]:
    return next(p for p in _panels(board) if p["title"] == title)


def test_chart_and_example_copies_are_the_generated_dashboard(board: dict[str, Any]) -> None:
    for path in DASHBOARD_FILES:
        assert json.loads(path.read_text()) == dashboard.build() == board, path


def test_variables(board: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert {"datasource", "job", "cluster", "consumer", "topic"} <= set(variables)
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("cluster", "consumer", "topic"):
        v = variables[name]
        assert v["multi"] and v["includeAll"] and v["allValue"] == ".*"
        assert v["query"]["query"].startswith("label_values(")
        assert v["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    # each variable is narrowed by the ones before it
    assert '$cluster' in variables["consumer"]["query"]["query"]
    assert '$consumer' in variables["topic"]["query"]["query"]


def test_the_panels_the_issue_asks_for(board: dict[str, Any]) -> None:
    exprs = {p["title"]: " ".join(t["expr"] for t in p.get("targets", []))
             for p in _panels(board)}
    def has(title: str, *metrics: str) -> None:
        assert title in exprs, f"no panel {title!r}"
        for metric in metrics:
            assert metric in exprs[title], (title, metric)
    has("Freshness per group (worst partition)", "max by (cluster, consumer)",
        catalogue.GROUP_MAX_FRESHNESS.name)
    has("Freshness per partition", catalogue.FRESHNESS.name)
    has("Commit lag per partition", catalogue.COMMIT_LAG.name)
    has("Freshness beside offset lag", catalogue.GROUP_MAX_FRESHNESS.name,
        catalogue.GROUP_OFFSET_LAG.name)
    has("Data loss per group (partitions)", catalogue.GROUP_DATA_LOSS_PARTITIONS.name)
    has("Lost records", catalogue.LOST.name)
    has("Retention headroom (worst partition per topic)", catalogue.HEADROOM.name)
    has("Burrow group status", catalogue.GROUP_STATUS.name)
    has("Burrow partition status", catalogue.PARTITION_STATUS.name)
    has("Cycle duration", catalogue.CLUSTER_CYCLE_DURATION.name)
    has("Errors", catalogue.CYCLE_FAILURES.total, catalogue.BURROW_ERRORS.total,
        catalogue.KAFKA_READ_FAILURES.total)
    has("Data current as of and catch-up, per group",
        catalogue.GROUP_DATA_AS_OF.name,
        catalogue.GROUP_CATCH_UP.name, catalogue.GROUP_CATCHING_UP.name)
    has("Groups not catching up", catalogue.GROUP_CATCHING_UP.name, "== 0")
    has("Longest catch-up estimate", catalogue.GROUP_CATCH_UP.name)
    has("Last successful cycle age", "time() -",
        catalogue.CLUSTER_LAST_SUCCESS.name)


def test_units_turn_milliseconds_into_durations(board: dict[str, Any]) -> None:
    panels = list(_panels(board))
    assert panels, "no panels to check"
    for panel in panels:
        if panel["type"] == "row":
            continue
        unit = panel["fieldConfig"]["defaults"]["unit"]
        # by query: its frame (refId), or its field once a table merged them ("Value #A")
        overridden = {o["matcher"]["options"].removeprefix("Value #"):
                      {p["id"]: p["value"] for p in o["properties"]}
                      for o in panel["fieldConfig"]["overrides"]}
        for target in panel["targets"]:
            target_unit = overridden.get(target["refId"], {}).get("unit", unit)
            names = [name for name, _ in selectors(target["expr"])]
            if any(n.endswith("_timestamp_seconds") for n in names) \
                    and "time() -" not in target["expr"]:  # a point in time, shown as a date
                assert target_unit in DATE_UNITS, (panel["title"], target["refId"])
                assert target["expr"].startswith("1000 * "), (panel["title"], target["refId"])
            elif any(n.endswith("_ms") for n in names):
                assert target_unit in TIME_UNITS, (panel["title"], target["refId"])
            elif any(n.endswith(("_seconds", "_seconds_bucket")) for n in names) \
                    and "rate(" not in target["expr"].replace("histogram_quantile", ""):
                assert target_unit in SECOND_UNITS, (panel["title"], target["refId"])
            elif "histogram_quantile" in target["expr"]:
                assert target_unit in SECOND_UNITS, panel["title"]
            elif "rate(" in target["expr"]:
                assert target_unit == "ops", panel["title"]
            else:
                assert target_unit not in TIME_UNITS | SECOND_UNITS, panel["title"]
    beside = _panel(board, "Freshness beside offset lag")
    lag = beside["fieldConfig"]["overrides"][0]
    assert {p["id"]: p["value"] for p in lag["properties"]}["custom.axisPlacement"] == "right"


def test_every_query_is_filtered_by_the_variables(board: dict[str, Any]) -> None:
    queries = dashboard_queries(board)
    assert queries, "no queries to check"
    for query in queries:
        found = selectors(query.expr)
        assert found, (query.source, query.expr)  # every query selects some series
        for name, labels in found:
            assert labels.get("job") == '=~"$job"' or name == catalogue.BUILD_INFO.name, \
                (query.source, name)
            if name.startswith(("kafka_consumer_", "freshness_tracker_")) and \
                    name != catalogue.BUILD_INFO.name and query.source != "variable $cluster":
                assert labels.get("cluster") == '=~"$cluster"', (query.source, name)
            if name.startswith("kafka_consumer_") and query.source not in (
                    "variable $cluster", "variable $consumer"):
                assert labels.get("consumer") == '=~"$consumer"', (query.source, name)
            if name.startswith("kafka_consumer_") and not name.startswith(
                    "kafka_consumer_group_") and query.source != "variable $topic":
                assert labels.get("topic") == '=~"$topic"', (query.source, name)


def test_panels_use_the_datasource_variable_and_fit_the_grid(board: dict[str, Any]) -> None:
    ids = [p["id"] for p in _panels(board)]
    assert ids and len(ids) == len(set(ids))
    titles = [p["title"] for p in _panels(board)]
    assert len(titles) == len(set(titles))
    cells: set[tuple[int, int]] = set()
    for panel in _panels(board):
        g = panel["gridPos"]
        assert g["x"] + g["w"] <= 24, panel["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps another panel"
                cells.add((x, y))
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            assert all(t["datasource"] == panel["datasource"] for t in panel["targets"])
            assert panel["description"], panel["title"]
    assert board["uid"] == "freshness-tracker" and board["schemaVersion"] >= 36


def test_the_catch_up_table_names_its_columns_and_highlights_not_catching_up(
    board: dict[str, Any]
) -> None:
    table = _panel(board, "Data current as of and catch-up, per group")
    columns = {o["matcher"]["options"]: {p["id"]: p["value"] for p in o["properties"]}
               for o in table["fieldConfig"]["overrides"]}
    # one column per query, each titled: the merge names a query's values "Value #<refId>"
    assert {f"Value #{t['refId']}" for t in table["targets"]} == set(columns)
    assert [columns[f"Value #{ref}"]["displayName"] for ref in "ABC"] == [
        "data up to", "catch-up estimate", "catching up"]
    assert all(t["instant"] and t["format"] == "table" for t in table["targets"])
    assert [t["id"] for t in table["transformations"]] == ["merge", "organize"]
    catching_up = columns["Value #C"]
    [states] = [m["options"] for m in catching_up["mappings"]]
    assert states["0"]["text"] == "not catching up" and states["0"]["color"] == "red"
    assert states["1"]["color"] == "green"
    assert catching_up["custom.cellOptions"] == {"type": "color-background"}
    stat = _panel(board, "Groups not catching up")
    steps = stat["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert steps[-1] == {"color": "red", "value": 1}


#: The freshness panels, each as of the query: (title, the timestamp family it ages).
FRESHNESS_NOW = {
    "Worst group freshness": catalogue.GROUP_OLDEST_UNCOMMITTED.name,
    "Freshness per group (worst partition)":
        catalogue.GROUP_OLDEST_UNCOMMITTED.name,
    "Freshness beside offset lag": catalogue.GROUP_OLDEST_UNCOMMITTED.name,
    "Freshness per topic": catalogue.TOPIC_OLDEST_UNCOMMITTED.name,
    "Freshness per partition": catalogue.OLDEST_UNCOMMITTED.name,
    "Worst partitions now": catalogue.OLDEST_UNCOMMITTED.name,
}


def test_freshness_panels_age_the_oldest_uncommitted_record_at_query_time(
        board: dict[str, Any], tmp_path: Path) -> None:
    """promtool evaluates each freshness panel's query (variables set to All) between two
    5-minutely scrapes: a stuck group is as old as its record now (not as the last cycle said),
    a caught-up one 0, an unmeasured one absent; per partition without the opt-in timestamp,
    the gauge."""
    group = 'job="freshness-tracker",instance="a:8081",cluster="prod"'
    inputs = [
        (f'{catalogue.GROUP_OLDEST_UNCOMMITTED.name}{{{group},consumer="stuck"}}',
         "0x2"),
        (f'{catalogue.GROUP_MAX_FRESHNESS.name}{{{group},consumer="stuck"}}', "0 300000 600000"),
        (f'{catalogue.GROUP_MAX_FRESHNESS.name}{{{group},consumer="idle"}}', "0x2"),
        (f'{catalogue.GROUP_OFFSET_LAG.name}{{{group},consumer="stuck"}}', "5x2"),
        (f'{catalogue.TOPIC_OLDEST_UNCOMMITTED.name}{{{group},consumer="stuck",'
         'topic="t"}', "0x2"),
        (f'{catalogue.TOPIC_MAX_FRESHNESS.name}{{{group},consumer="stuck",topic="t"}}',
         "0 300000 600000"),
        (f'{catalogue.TOPIC_MAX_FRESHNESS.name}{{{group},consumer="idle",topic="t"}}', "0x2"),
        (f'{catalogue.OLDEST_UNCOMMITTED.name}{{{group},consumer="stuck",'
         'topic="t",partition="0"}', "0x2"),
        (f'{catalogue.FRESHNESS.name}{{{group},consumer="stuck",topic="t",partition="0"}}',
         "0 300000 600000"),
        # per-partition timestamps not exported for this one: its gauge, frozen at the 5m scrape
        (f'{catalogue.FRESHNESS.name}{{{group},consumer="stuck",topic="t",partition="1"}}',
         "0 120000 420000"),
        (f'{catalogue.FRESHNESS.name}{{{group},consumer="idle",topic="t",partition="0"}}', "0x2"),
        (f'{catalogue.GROUP_UNMEASURED.name}{{{group},consumer="unknown"}}', "1x2"),
    ]
    now_ms = 8 * 60 * 1000  # at 8m: the record appended at 0 s waited 480 s
    stuck_partition = {"consumer": "stuck", "topic": "t", "partition": "0"}
    expected: dict[str, list[tuple[dict[str, str], float]]] = {
        "Worst group freshness": [({}, now_ms)],
        "Freshness per group (worst partition)": [
            ({"cluster": "prod", "consumer": "stuck"}, now_ms),
            ({"cluster": "prod", "consumer": "idle"}, 0)],
        "Freshness beside offset lag": [
            ({"cluster": "prod", "consumer": "stuck"}, now_ms),
            ({"cluster": "prod", "consumer": "idle"}, 0)],
        "Freshness per topic": [
            ({"cluster": "prod", "consumer": "stuck", "topic": "t"}, now_ms),
            ({"cluster": "prod", "consumer": "idle", "topic": "t"}, 0)],
        "Freshness per partition": [
            ({"job": "freshness-tracker", "cluster": "prod", **stuck_partition}, now_ms),
            ({"job": "freshness-tracker", "cluster": "prod", **stuck_partition,
              "partition": "1"}, 120_000),
            ({"job": "freshness-tracker", "cluster": "prod", "consumer": "idle", "topic": "t",
              "partition": "0"}, 0)],
    }
    expected["Worst partitions now"] = expected["Freshness per partition"]
    tests = []
    for title, stamp in FRESHNESS_NOW.items():
        (target, *_) = _panel(board, title)["targets"]
        assert f"clamp_min(1000 * (time() - {stamp}{{" in target["expr"], title
        expr = target["expr"].replace("$job", ".*").replace("$cluster", ".*").replace(
            "$consumer", ".*").replace("$topic", ".*").replace("$rate_window", "15m").replace(
            "${frequency}", "30").replace("$frequency", "30")  # the window holds 3 scrapes
        tests.append({"expr": expr, "eval_time": "8m", "exp_samples": [
            {"labels": "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}",
             "value": value} for labels, value in expected[title]]})
    unit = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "5m", "input_series": [{"series": s, "values": v} for s, v in inputs],
        "promql_expr_test": tests}]}
    test_file = tmp_path / "dashboard.test.yml"
    test_file.write_text(yaml.safe_dump(unit))
    assert "SUCCESS" in promtool("test", "rules", str(test_file), cwd=tmp_path)
