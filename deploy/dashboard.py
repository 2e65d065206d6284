"""The Grafana dashboard, as code: `build()` returns the dashboard JSON model.

Written out by deploy/generate.py into the chart (files/) and examples/grafana/dashboards/.
Every query filters on the template variables $job, $cluster, $consumer (and $topic where the
metric has a topic); tests run every query against a real Prometheus scraping a real exporter.
"""

from __future__ import annotations

import itertools
from typing import Any

from freshness_tracker.metrics import (
    BUILD_INFO,
    BURROW_ERRORS,
    CACHE_HITS,
    CLUSTER_CYCLE_DURATION,
    CLUSTER_LAST_SUCCESS,
    CLUSTER_PARTITIONS,
    CLUSTER_UP,
    COMMIT_LAG,
    CYCLE_FAILURES,
    DATA_LOSS,
    FRESHNESS,
    GROUP_CATCH_UP,
    GROUP_CATCHING_UP,
    GROUP_DATA_AS_OF,
    GROUP_DATA_LOSS_PARTITIONS,
    GROUP_MAX_FRESHNESS,
    GROUP_OFFSET_LAG,
    GROUP_OLDEST_UNCOMMITTED,
    GROUP_STATUS,
    GROUP_UNMEASURED,
    HEADROOM,
    KAFKA_READ_FAILURES,
    KAFKA_READS,
    LOST,
    OFFSET_LAG,
    OLDEST_UNCOMMITTED,
    PARTITION_STATUS,
    READ_DURATION,
    TOPIC_MAX_FRESHNESS,
    TOPIC_OFFSET_LAG,
    TOPIC_OLDEST_UNCOMMITTED,
    Family,
)
from freshness_tracker.objective_rules import FREQUENCY_S, RATE_WINDOW

DS = {"type": "prometheus", "uid": "${datasource}"}
GROUP = 'job=~"$job", cluster=~"$cluster", consumer=~"$consumer"'
TOPIC = GROUP + ', topic=~"$topic"'
CLUSTER = 'job=~"$job", cluster=~"$cluster"'


def one_copy(selector: str) -> str:
    """A series as one copy of a shard reports it: with `sharding.replicasPerShard` > 1 every
    series comes from each copy, differing only in `instance` and `pod`, so sums over them
    would count it twice. (Without copies this changes nothing.)"""
    return f"max without (instance, pod) ({selector})"


def freshness_now(stamp: Family, gauge: Family, selector: str) -> str:
    """Freshness in ms as of the query (docs/querytime.md): per series the cycle's gauge carried
    forward to now at the rate it grew over `$rate_window` (0 to 1 s per s; 1 where the timestamp
    is the one of a cycle ago: the same record waits), so a stuck group ages with the clock and
    one that keeps up keeps its gauge; the gauge alone where no record waits (it is 0), no
    timestamp is exported (per partition it is opt-in), none a cycle ago (a record first seen
    waiting) or there is no rate yet; a wait shorter than a
    cycle (`$frequency`, the exporter's frequency_sec) is not carried: a group that keeps up
    shows one now and then and ends it a moment later. The chart's rule is the same
    expression."""
    g, ts = f"{gauge.name}{{{selector}}}", f"{stamp.name}{{{selector}}}"
    return (f"({g} + clamp_max(clamp(deriv({g}[$rate_window]) / 1000, 0, 1) "
            f"+ ({ts} == bool {ts} offset ${{frequency}}s), 1) "
            f"* ({g} >= bool ($frequency * 1000)) "
            f"* clamp_min(1000 * (time() - {ts}) - {g}, 0)) or {g}")


_FREQUENCY = format(FREQUENCY_S, "g")


def setting(name: str, label: str, value: str, description: str) -> dict[str, Any]:
    """A dashboard variable holding one value the user sets to match the deployment (a
    Grafana "custom" variable with that value as its only option)."""
    return {"name": name, "label": label, "type": "custom", "query": value,
            "current": {"text": value, "value": value},
            "options": [{"text": value, "value": value, "selected": True}],
            "hide": 0, "description": description}


GROUP_NOW = freshness_now(GROUP_OLDEST_UNCOMMITTED, GROUP_MAX_FRESHNESS, GROUP)
TOPIC_NOW = freshness_now(TOPIC_OLDEST_UNCOMMITTED, TOPIC_MAX_FRESHNESS, TOPIC)
PARTITION_NOW = freshness_now(OLDEST_UNCOMMITTED, FRESHNESS, TOPIC)
_NOW = (" As of the query: the oldest uncommitted record's age now, so a stuck group grows "
        "with the clock between cycles.")

# Burrow's own status indexes (the exporter exports them as is).
GROUP_STATUS_NAMES = {0: ("NOTFOUND", "text"), 1: ("OK", "green"), 2: ("WARN", "yellow"),
                3: ("ERR", "red")}
PARTITION_STATUS_NAMES = {0: ("NOTFOUND", "text"), 1: ("OK", "green"), 2: ("WARN", "yellow"),
                    3: ("ERR", "red"), 4: ("STOP", "red"), 5: ("STALL", "orange"),
                    6: ("REWIND", "purple")}

CATCHING_UP_NAMES = {0: ("not catching up", "red"), 1: ("catching up", "green")}

_ids = itertools.count(1)


def target(expr: str, legend: str = "", ref: str = "A", *, instant: bool = False,
           table: bool = False) -> dict[str, Any]:
    t: dict[str, Any] = {"datasource": DS, "expr": expr, "legendFormat": legend or "__auto",
                         "refId": ref, "range": not instant, "instant": instant}
    if table:
        t["format"] = "table"
    return t


def mappings(states: dict[int, tuple[str, str]]) -> list[dict[str, Any]]:
    return [{"type": "value", "options": {
        str(value): {"text": text, "color": color, "index": i}
        for i, (value, (text, color)) in enumerate(states.items())}}]


def panel(kind: str, title: str, targets: list[dict[str, Any]], *, unit: str, w: int, h: int,
          x: int, y: int, description: str = "", thresholds: list[tuple[float | None, str]]
          | None = None, overrides: list[dict[str, Any]] | None = None,
          value_mappings: list[dict[str, Any]] | None = None,
          options: dict[str, Any] | None = None, custom: dict[str, Any] | None = None,
          transformations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    steps = [{"color": color, "value": value}
             for value, color in (thresholds or [(None, "green")])]
    defaults: dict[str, Any] = {"unit": unit, "thresholds": {"mode": "absolute", "steps": steps},
                                "mappings": value_mappings or []}
    if kind == "timeseries":
        defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 0,
                              "showPoints": "never", "spanNulls": False,
                              "thresholdsStyle": {"mode": "line" if thresholds else "off"},
                              **(custom or {})}
        defaults["color"] = {"mode": "palette-classic"}
    elif custom:
        defaults["custom"] = custom
    p: dict[str, Any] = {
        "id": next(_ids), "type": kind, "title": title, "description": description,
        "datasource": DS, "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "targets": targets,
        "fieldConfig": {"defaults": defaults, "overrides": overrides or []},
        "options": options or {},
    }
    if kind == "timeseries" and not options:
        p["options"] = {"legend": {"displayMode": "table", "placement": "right",
                                   "calcs": ["lastNotNull", "max"], "showLegend": True},
                        "tooltip": {"mode": "multi", "sort": "desc"}}
    if transformations:
        p["transformations"] = transformations
    return p


def _column(field: str, title: str, unit: str, *extra: dict[str, Any]) -> dict[str, Any]:
    """A table column's title and unit: a field of merged instant queries ("Value #A"...)."""
    return {"matcher": {"id": "byName", "options": field},
            "properties": [{"id": "displayName", "value": title}, {"id": "unit", "value": unit},
                           *extra]}


def row(title: str, y: int) -> dict[str, Any]:
    return {"id": next(_ids), "type": "row", "title": title, "collapsed": False,
            "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": []}


def stat(title: str, expr: str, unit: str, x: int, y: int, description: str,
         thresholds: list[tuple[float | None, str]] | None = None,
         value_mappings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return panel("stat", title, [target(expr, instant=True)], unit=unit, w=4, h=4, x=x, y=y,
                 description=description, thresholds=thresholds, value_mappings=value_mappings,
                 options={"reduceOptions": {"calcs": ["lastNotNull"], "fields": "",
                                            "values": False},
                          "colorMode": "background", "graphMode": "none",
                          "textMode": "value"})


def variable(name: str, label: str, query: str) -> dict[str, Any]:
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "query": {"query": query, "refId": f"{name}-query"}, "definition": query,
            "refresh": 2, "multi": True, "includeAll": True, "allValue": ".*",
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
            "sort": 1, "hide": 0, "options": []}


def _panels() -> list[dict[str, Any]]:
    ps: list[dict[str, Any]] = []
    y = 0
    ps.append(row("Overview", y))
    y += 1
    ps += [
        stat("Worst group freshness",
             f"max({GROUP_NOW})", "dtdurationms", 0, y,
             "Age of the oldest uncommitted record over the selected groups." + _NOW,
             [(None, "green"), (60_000, "yellow"), (300_000, "red")]),
        stat("Groups measured",
             f"count(count by (cluster, consumer) ({GROUP_STATUS.name}{{{GROUP}}}))"
             " or vector(0)", "short", 4, y,
             "Consumer groups measured in the last cycle (all shards, each counted once)."),
        stat("Partitions with data loss",
             f"sum({one_copy(f'{GROUP_DATA_LOSS_PARTITIONS.name}{{{GROUP}}}')})",
             "short", 8, y,
             "Partitions whose unread records were deleted by retention.",
             [(None, "green"), (1, "red")]),
        stat("Unmeasured partitions",
             f"sum({one_copy(f'{GROUP_UNMEASURED.name}{{{GROUP}}}')})",
             "short", 12, y,
             "Partitions without a freshness value this cycle (read failed or no commit).",
             [(None, "green"), (1, "yellow")]),
        stat("Clusters down",
             f"count({CLUSTER_UP.name}{{{CLUSTER}}} == 0) or vector(0)", "short",
             16, y, "Clusters whose last cycle failed (Burrow or every Kafka read).",
             [(None, "green"), (1, "red")]),
        stat("Exporter targets up", 'sum(up{job=~"$job"})', "short", 20, y,
             "Scrape targets of the tracker that answer (one per replica).",
             [(None, "red"), (1, "green")]),
    ]
    y += 4
    ps.append(row("Freshness", y))
    y += 1
    objective: list[tuple[float | None, str]] = [(None, "green"), (300_000, "red")]
    ps += [
        panel("timeseries", "Freshness per group (worst partition)", [target(
            f"max by (cluster, consumer) ({GROUP_NOW})",
            "{{cluster}} / {{consumer}}")], unit="ms", w=12, h=9, x=0, y=y,
            thresholds=objective,
            description="now − timestamp of the oldest uncommitted record, worst partition of "
                        "each group; 0 when caught up. The red line is the 5 min objective."
                        + _NOW),
        panel("timeseries", "Freshness per topic", [target(
            f"max by (cluster, consumer, topic) ({TOPIC_NOW})",
            "{{consumer}} / {{topic}}")], unit="ms", w=12, h=9, x=12, y=y,
            thresholds=objective, description="Worst partition per group and topic." + _NOW),
    ]
    y += 9
    ps += [
        panel("timeseries", "Freshness per partition", [target(
            one_copy(PARTITION_NOW),
            "{{consumer}} / {{topic}} [{{partition}}]")], unit="ms", w=12, h=9, x=0, y=y,
            thresholds=objective,
            description=f"A lower bound where {DATA_LOSS.name} is 1. As of the query where "
                        f"{OLDEST_UNCOMMITTED.name} is exported (partitionMetrics), else the "
                        "last cycle's value."),
        panel("table", "Worst partitions now", [target(
            f"topk(20, {one_copy(PARTITION_NOW)})",
            "{{cluster}} {{consumer}} {{topic}} {{partition}}", instant=True, table=True)],
            unit="dtdurationms", w=12, h=9, x=12, y=y,
            description="The 20 partitions with the oldest uncommitted record (as of the query "
                        f"where {OLDEST_UNCOMMITTED.name} is exported).",
            options={"showHeader": True, "sortBy": [{"displayName": "Value", "desc": True}]},
            transformations=[{"id": "organize", "options": {
                "excludeByName": {"Time": True, "__name__": True, "job": True,
                                  "instance": True},
                "indexByName": {"cluster": 0, "consumer": 1, "topic": 2, "partition": 3,
                                "Value": 4},
                "renameByName": {"Value": "freshness"}}}]),
    ]
    y += 9
    ps.append(row("Data current as of, and catch-up", y))
    y += 1
    ps += [
        panel("table", "Data current as of and catch-up, per group", [
            target(f"1000 * {one_copy(f'{GROUP_DATA_AS_OF.name}{{{GROUP}}}')}",
                   "{{cluster}} {{consumer}}", "A", instant=True, table=True),
            target(one_copy(f"{GROUP_CATCH_UP.name}{{{GROUP}}}"),
                   "{{cluster}} {{consumer}}", "B", instant=True, table=True),
            target(one_copy(f"{GROUP_CATCHING_UP.name}{{{GROUP}}}"),
                   "{{cluster}} {{consumer}}", "C", instant=True, table=True)],
            unit="none", w=20, h=8, x=0, y=y,
            description="The two questions: what is the latest data a group has (the append "
                        "time of its last committed record, oldest partition: \"billing has "
                        "data up to 10:42\"), and how long until it is caught up (offset lag / "
                        "the rate it gains on the producers over Burrow's window: an estimate). "
                        "\"not catching up\" when that rate is <= 0; the estimate is then empty.",
            options={"showHeader": True,
                     "sortBy": [{"displayName": "catching up", "desc": False}]},
            overrides=[
                _column("Value #A", "data up to", "dateTimeAsIso"),
                _column("Value #B", "catch-up estimate", "dtdurations"),
                _column("Value #C", "catching up", "none",
                        {"id": "mappings", "value": mappings(CATCHING_UP_NAMES)},
                        {"id": "custom.cellOptions", "value": {"type": "color-background"}})],
            transformations=[
                {"id": "merge", "options": {}},
                {"id": "organize", "options": {
                    "excludeByName": {"Time": True, "__name__": True, "job": True,
                                      "instance": True},
                    "indexByName": {"cluster": 0, "consumer": 1, "Value #A": 2,
                                    "Value #B": 3, "Value #C": 4}}}]),
        stat("Groups not catching up",
             f"count({one_copy(f'{GROUP_CATCHING_UP.name}{{{GROUP}}}')} == 0) or vector(0)",
             "short", 20, y,
             "Groups with a partition whose lag did not shrink over Burrow's window (or that "
             "Burrow says stopped or stalled): they will not catch up at this rate.",
             [(None, "green"), (1, "red")]),
        stat("Longest catch-up estimate",
             f"max({GROUP_CATCH_UP.name}{{{GROUP}}})", "dtdurations", 20, y + 4,
             "The longest estimated time to an offset lag of 0 over the groups that are "
             "catching up (an estimate: both rates assumed to hold).",
             [(None, "green"), (300, "yellow"), (3600, "red")]),
    ]
    y += 8
    ps.append(row("Lag: time and offsets", y))
    y += 1
    ps += [
        panel("timeseries", "Freshness beside offset lag", [
            target(f"max by (cluster, consumer) ({GROUP_NOW})", "freshness {{consumer}}", "A"),
            target(f"sum by (cluster, consumer) "
                   f"({one_copy(f'{GROUP_OFFSET_LAG.name}{{{GROUP}}}')})",
                   "offset lag {{consumer}}", "B")],
            unit="ms", w=12, h=9, x=0, y=y,
            description="Time (left axis) and records (right axis, dashed) behind, per group: "
                        "a large offset lag can be fresh, a small one can be stale.",
            overrides=[{"matcher": {"id": "byFrameRefID", "options": "B"}, "properties": [
                {"id": "unit", "value": "short"},
                {"id": "custom.axisPlacement", "value": "right"},
                {"id": "custom.axisLabel", "value": "records"},
                {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}]}],
            custom={"axisLabel": "time behind"}),
        panel("timeseries", "Commit lag per partition", [target(
            one_copy(f"{COMMIT_LAG.name}{{{TOPIC}}}"),
            "{{consumer}} / {{topic}} [{{partition}}]")], unit="ms", w=12, h=9, x=12, y=y,
            description="Commit time − timestamp of the last committed record: how long a "
                        "record waited before the group committed it."),
    ]
    y += 9
    ps += [
        panel("timeseries", "Offset lag per topic", [target(
            "sum by (cluster, consumer, topic) "
            f"({one_copy(f'{TOPIC_OFFSET_LAG.name}{{{TOPIC}}}')})",
            "{{consumer}} / {{topic}}")], unit="short", w=12, h=8, x=0, y=y,
            description="Records between the committed offset and the log end (Burrow)."),
        panel("timeseries", "Offset lag per partition", [target(
            one_copy(f"{OFFSET_LAG.name}{{{TOPIC}}}"),
            "{{consumer}} / {{topic}} [{{partition}}]")], unit="short", w=12, h=8, x=12, y=y,
            description="Burrow's current_lag per partition."),
    ]
    y += 8
    ps.append(row("Data loss and retention", y))
    y += 1
    ps += [
        panel("timeseries", "Retention headroom (worst partition per topic)", [target(
            "min by (cluster, consumer, topic) "
            f"({HEADROOM.name}{{{TOPIC}}})",
            "{{consumer}} / {{topic}}")], unit="ms", w=8, h=8, x=0, y=y,
            thresholds=[(None, "red"), (3_600_000, "green")],
            description="retention.ms − freshness: time left before unconsumed records are "
                        "deleted. Alert on it before data loss."),
        panel("timeseries", "Data loss per group (partitions)", [target(
            "sum by (cluster, consumer) "
            f"({one_copy(f'{GROUP_DATA_LOSS_PARTITIONS.name}{{{GROUP}}}')})",
            "{{cluster}} / {{consumer}}")], unit="short", w=8, h=8, x=8, y=y,
            thresholds=[(None, "green"), (1, "red")],
            description="Committed offset below the log start: records were deleted unread."),
        panel("timeseries", "Lost records", [target(
            "sum by (cluster, consumer, topic) "
            f"({one_copy(f'{LOST.name}{{{TOPIC}}}')})",
            "{{consumer}} / {{topic}}")], unit="short", w=8, h=8, x=16, y=y,
            description="Log start − committed offset, summed over partitions."),
    ]
    y += 8
    ps.append(row("Burrow", y))
    y += 1
    ps += [
        panel("state-timeline", "Burrow group status", [target(
            f"max by (cluster, consumer) ({GROUP_STATUS.name}{{{GROUP}}})",
            "{{cluster}} / {{consumer}}")], unit="none", w=12, h=8, x=0, y=y,
            value_mappings=mappings(GROUP_STATUS_NAMES),
            description="Burrow's evaluation of the group (its sliding window rules).",
            options={"showValue": "auto", "mergeValues": True, "rowHeight": 0.8,
                     "legend": {"showLegend": False}}),
        panel("table", "Burrow partition status", [target(
            one_copy(f"{PARTITION_STATUS.name}{{{TOPIC}}}"),
            "{{consumer}} {{topic}} {{partition}}", instant=True, table=True)],
            unit="none", w=12, h=8, x=12, y=y, value_mappings=mappings(PARTITION_STATUS_NAMES),
            description="Burrow's status per partition (STOP, STALL, REWIND name the problem).",
            custom={"cellOptions": {"type": "color-background"}},
            transformations=[{"id": "organize", "options": {
                "excludeByName": {"Time": True, "__name__": True, "job": True,
                                  "instance": True},
                "indexByName": {"cluster": 0, "consumer": 1, "topic": 2, "partition": 3,
                                "Value": 4},
                "renameByName": {"Value": "status"}}}]),
    ]
    y += 8
    ps.append(row("Exporter health", y))
    y += 1
    ps += [
        panel("state-timeline", "Cluster up", [target(
            f"min by (cluster) ({CLUSTER_UP.name}{{{CLUSTER}}})", "{{cluster}}")],
            unit="none", w=8, h=7, x=0, y=y,
            value_mappings=mappings({0: ("DOWN", "red"), 1: ("UP", "green")}),
            description="1 when the cluster's last cycle succeeded.",
            options={"showValue": "auto", "mergeValues": True, "legend": {"showLegend": False}}),
        panel("timeseries", "Cycle duration", [target(
            f"max by (cluster) ({CLUSTER_CYCLE_DURATION.name}{{{CLUSTER}}})",
            "{{cluster}}")], unit="s", w=8, h=7, x=8, y=y,
            description="How long each cluster's last cycle took (all replicas: the slowest)."),
        panel("timeseries", "Last successful cycle age", [target(
            "time() - max by (cluster) "
            f"({CLUSTER_LAST_SUCCESS.name}{{{CLUSTER}}})",
            "{{cluster}}")], unit="s", w=8, h=7, x=16, y=y,
            thresholds=[(None, "green"), (600, "red")],
            description="Seconds since the cluster's last successful cycle ended; grows while "
                        "it fails."),
    ]
    y += 7
    rate = "[$__rate_interval]"
    ps += [
        panel("timeseries", "Errors", [
            target(f"sum by (cluster) (rate({CYCLE_FAILURES.total}{{{CLUSTER}}}"
                   f"{rate}))", "cycle failures {{cluster}}", "A"),
            target(f"sum by (cluster) (rate({BURROW_ERRORS.total}{{{CLUSTER}}}"
                   f"{rate}))", "Burrow errors {{cluster}}", "B"),
            target("sum by (cluster) "
                   f"(rate({KAFKA_READ_FAILURES.total}{{{CLUSTER}}}{rate}))",
                   "Kafka read failures {{cluster}}", "C")],
            unit="ops", w=8, h=7, x=0, y=y,
            description="Failed cycles, Burrow requests that failed after retries, failed "
                        "Kafka reads (per second)."),
        panel("timeseries", "Kafka reads and cache hits", [
            target(f"sum by (cluster) (rate({KAFKA_READS.total}{{{CLUSTER}}}"
                   f"{rate}))", "reads {{cluster}}", "A"),
            target(f"sum by (cluster) (rate({CACHE_HITS.total}{{{CLUSTER}}}"
                   f"{rate}))", "cache hits {{cluster}}", "B")],
            unit="ops", w=8, h=7, x=8, y=y,
            description="Record reads sent to Kafka and timestamps answered from the cache."),
        panel("timeseries", "Kafka read phase (p95)", [target(
            "histogram_quantile(0.95, sum by (cluster, le) "
            f"(rate({READ_DURATION.name}_bucket{{{CLUSTER}}}{rate})))",
            "{{cluster}}")], unit="s", w=8, h=7, x=16, y=y,
            description="95th percentile of the time a cycle spent reading Kafka."),
    ]
    y += 7
    ps += [
        panel("timeseries", "Partitions by outcome", [target(
            f"sum by (cluster, status) ({CLUSTER_PARTITIONS.name}{{{CLUSTER}}})",
            "{{cluster}} {{status}}")], unit="short", w=12, h=7, x=0, y=y,
            custom={"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 30},
            description="ok, caught_up, gap, data_loss, no_commit, lookup_failed; summed over the "
                        "exporter's targets (copies of a shard each count theirs)."),
        panel("timeseries", "Exporter targets", [target(
            'up{job=~"$job"}', "{{instance}}")], unit="none", w=12, h=7, x=12, y=y,
            description="1 when Prometheus scrapes the replica."),
    ]
    return ps


def build() -> dict[str, Any]:
    global _ids
    _ids = itertools.count(1)
    return {
        "title": "Kafka consumer freshness",
        "uid": "freshness-tracker",
        "description": "freshness-tracker: how far behind, in time, every Kafka consumer "
                       "group is (exact, from record timestamps), with offset lag, data loss, "
                       "retention headroom, Burrow status and the exporter's health.",
        "tags": ["kafka", "consumer-lag", "freshness", "burrow"],
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "",
        "links": [],
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts", "type": "dashboard"}]},
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus", "current": {}, "hide": 0, "refresh": 1, "options": []},
            variable("job", "Job", f"label_values({BUILD_INFO.name}, job)"),
            variable("cluster", "Cluster",
                     f'label_values({CLUSTER_UP.name}{{job=~"$job"}}, cluster)'),
            variable("consumer", "Consumer group",
                     f'label_values({GROUP_STATUS.name}{{job=~"$job", '
                     'cluster=~"$cluster"}, consumer)'),
            variable("topic", "Topic",
                     f'label_values({TOPIC_OFFSET_LAG.name}{{job=~"$job", '
                     'cluster=~"$cluster", consumer=~"$consumer"}, topic)'),
            setting("rate_window", "Freshness rate window", RATE_WINDOW,
                    "The query-time freshness carries each gauge forward at the rate it grew "
                    "over this window: the chart's prometheusRule.freshnessRateWindow "
                    "(docs/querytime.md)."),
            setting("frequency", "Exporter frequency (s)", _FREQUENCY,
                    "The exporter's frequency_sec in whole seconds, rounded up (the chart's "
                    "config.frequencySec): a wait shorter than one cycle is not carried "
                    "forward, and a record ages with the clock once the sample of a cycle "
                    "ago shows it waiting (docs/querytime.md)."),
        ]},
        "panels": _panels(),
    }
