"""One bad group, name or body costs that group (or entry) only, is counted, and never becomes an
impossible number: whole cycles through the real BurrowClient against a fake Burrow over HTTP,
rendered by the real Collector and self-metrics.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from prometheus_client import CollectorRegistry

from devstack.scrape import Scrape
from freshness_tracker import metrics
from freshness_tracker.burrow import parse
from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.config.settings import ClusterSettings
from freshness_tracker.cycle import ClusterMeasurer
from freshness_tracker.domain.filters import NameFilter, Shard
from freshness_tracker.domain.model import ClusterSnapshot, Snapshot
from freshness_tracker.kafka.settings import ClusterKafkaSettings
from freshness_tracker.publish import SnapshotHolder
from freshness_tracker.sinks.exposition import CachedExposition
from freshness_tracker.sinks.prometheus import SeriesSet
from freshness_tracker.sinks.render import render_table
from freshness_tracker.sinks.selfmetrics import SelfMetrics
from freshness_tracker.sinks.status_page import render_status_page
from tests.support.fake_burrow import FaultyBurrow
from tests.support.fakes import FakeBurrow, FakeReader, group, lag

#: burrow.maxResponseBytes of the rig's client: a bigger /lag body is an unreadable answer.
MAX_BODY = 1 << 20
T0 = 1_700_000_000_000
NOW = T0 + 60_000
#: Record timestamps: offset 4 (C − 1) and 5 (C) of every partition of topic t.
TIMESTAMPS = {("t", p, o): T0 + 1_000 * o for p in range(3) for o in (4, 5)}


def part(topic: str = "t", partition: int = 0, lag: int = 2, offset: int = 5,
         ts: int = T0 + 10_000) -> dict[str, Any]:
    return {"topic": topic, "partition": partition, "status": "OK", "current_lag": lag,
            "end": {"offset": offset, "timestamp": ts}}


def lag_body(*partitions: dict[str, Any]) -> dict[str, Any]:
    total = sum(p.get("current_lag", 0) for p in partitions)
    return {"error": False, "status": {"status": "OK", "totallag": total,
                                       "partitions": list(partitions)}}


@dataclass
class Rig:
    server: FaultyBurrow
    client: BurrowClient
    exposition: CachedExposition
    holder: SnapshotHolder
    metrics: SelfMetrics

    def serve(self, cluster: str, lags: dict[str, Any], consumers: Any = None) -> None:
        """`/consumer` lists ``consumers`` (default: the keys of ``lags``); bytes are sent raw."""
        listed = list(lags) if consumers is None else consumers
        raw = listed if isinstance(listed, bytes) else {"error": False, "consumers": listed}
        self.server.serve_static(f"/v3/kafka/{cluster}/consumer", raw)
        for name, body in lags.items():
            self.server.serve_static(f"/v3/kafka/{cluster}/consumer/{quote(name, safe='')}/lag",
                                     body)

    def cycle(self, cluster: str = "c", shard: Shard | None = None,
              groups: NameFilter | None = None) -> ClusterSnapshot:
        measurer = ClusterMeasurer(
            ClusterSettings(ClusterKafkaSettings(cluster, {"bootstrap.servers": "k:1"})),
            self.client, lambda _k: FakeReader(dict(TIMESTAMPS)), shard=shard, groups=groups,
            clock=lambda: NOW)
        snapshot = measurer.measure()  # never raises
        self.holder.publish(snapshot)
        self.metrics.observe(snapshot)
        return snapshot

    def scrape(self) -> Scrape:
        return Scrape.of(self.exposition)  # rendering raised for every cluster before


@pytest.fixture
def rig() -> Iterator[Rig]:
    server = FaultyBurrow(None).start()  # unknown paths answer Burrow's 404 NOTFOUND
    server.serve_static("/v3/kafka", {"error": False, "clusters": ["c", "d"]})
    client = BurrowClient(BurrowSettings(url=server.url, timeout_s=5, retries=0,
                                         max_response_bytes=MAX_BODY))
    registry = CollectorRegistry()
    holder = SnapshotHolder()
    self_metrics = SelfMetrics(registry, ["c", "d"])
    exposition = CachedExposition(holder, CollectorRegistry(), SeriesSet.everything(),
                                  registry)  # every family's rules
    try:
        yield Rig(server, client, exposition, holder, self_metrics)
    finally:
        client.close()
        server.stop()


FRESH = metrics.FRESHNESS.name
INVALID = metrics.INVALID_INPUTS.total
BURROW_ERRORS = metrics.BURROW_ERRORS.total


def test_a_lone_surrogate_topic_costs_its_partition_never_the_scrape(rig: Rig) -> None:
    """`"t\\udc80x"` in one topic made /metrics answer 500 for every cluster."""
    bad = (b'{"error": false, "status": {"status": "OK", "totallag": 4, "partitions": ['
           + json.dumps(part(partition=1)).encode()
           + b', {"topic": "t\\udc80x", "partition": 0, "current_lag": 2, '
             b'"end": {"offset": 5, "timestamp": 1700000010000}}]}}')
    rig.serve("c", {"ok": lag_body(part()), "odd": bad})
    rig.serve("d", {"ok": lag_body(part())})
    c, d = rig.cycle("c"), rig.cycle("d")
    samples = rig.scrape()
    assert c.health.up and d.health.up
    assert c.health.invalid_inputs == 1 and c.health.burrow_errors == 0
    assert samples.get(FRESH, cluster="c", consumer="ok", topic="t", partition=0) == 55_000
    assert samples.get(FRESH, cluster="c", consumer="odd", topic="t", partition=1) == 55_000
    assert samples.get(FRESH, cluster="d", consumer="ok", topic="t", partition=0) == 55_000
    assert samples.get(INVALID, cluster="c") == 1
    # The dropped partition may be the worst one: the group max is withheld, and says why.
    assert samples.get(metrics.GROUP_MAX_FRESHNESS.name, cluster="c", consumer="odd") \
        is None
    assert samples.get(metrics.GROUP_UNMEASURED.name, cluster="c",
               consumer="odd") == 1


@pytest.mark.parametrize("listed", [
    b'{"error": false, "consumers": ["ok", "g\\udc80x"]}',
    b'{"error": false, "consumers": ["ok", ""]}',
    b'{"error": false, "consumers": ["ok", "", null, 7, "ok", "g\\udc80x"]}',
])
def test_an_unusable_consumer_list_entry_is_dropped_counted_and_never_asked(
        rig: Rig, listed: bytes) -> None:
    """A lone surrogate in a group name, or "" in the list, took the whole cluster down."""
    rig.serve("c", {"ok": lag_body(part())}, consumers=listed)
    snapshot = rig.cycle()
    assert snapshot.health.up, snapshot.health.error
    assert [g.consumer for g in snapshot.groups] == ["ok"]
    assert snapshot.health.burrow_errors == 0  # nothing failed in Burrow: nothing was asked
    dropped = len(json.loads(listed)["consumers"]) - 1
    assert snapshot.health.invalid_inputs == dropped
    assert [s.path for s in rig.server.requests(r"/lag$")] == ["/v3/kafka/c/consumer/ok/lag"]
    samples = rig.scrape()
    assert samples.get(FRESH, cluster="c", consumer="ok", topic="t", partition=0) == 55_000
    assert samples.get(INVALID, cluster="c") == dropped


def test_sharding_never_chokes_on_a_name_that_is_not_utf8() -> None:
    """Shard.owns encoded the name: with shards, a lone surrogate crashed the cycle."""
    burrow = FakeBurrow({"c": [group("c", "ok", lag(consumer="ok")),
                               group("c", "g\udc80", lag(consumer="g\udc80"))]})
    measurer = ClusterMeasurer(
        ClusterSettings(ClusterKafkaSettings("c", {"bootstrap.servers": "k:1"})), burrow,
        lambda _k: FakeReader({}), shard=Shard(0, 2), clock=lambda: NOW)
    measurer.measure()  # must not raise


def test_json_nested_1500_deep_costs_that_group_only(rig: Rig) -> None:
    deep = b'{"status": {"partitions": ' + b"[" * 1500 + b"]" * 1500 + b"}}"
    rig.serve("c", {"ok": lag_body(part()), "deep": deep, "deeper": b"[" * 100_000})
    snapshot = rig.cycle()
    assert snapshot.health.up and [g.consumer for g in snapshot.groups if g.measured] == ["ok"]
    assert snapshot.health.burrow_errors == 2
    assert rig.scrape().get(BURROW_ERRORS, cluster="c") == 2


@pytest.mark.parametrize("error", [RecursionError("maximum recursion depth exceeded"),
                                   UnicodeEncodeError("utf-8", "\udc80", 0, 1, "surrogates"),
                                   KeyError("x"), AssertionError()])
def test_any_exception_of_one_group_is_that_group_failing_never_a_crashed_cycle(
        rig: Rig, monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    """A RecursionError out of one group's /lag escaped: "cycle crashed", every group dropped,
    nothing counted. Whatever a group's fetch or parse raises, only that group fails."""
    real = parse.parse_group_lag

    def flaky(body: Any, cluster: str, group: str, url: str = "",
              observed_ms: int | None = None) -> Any:
        if group == "bad":
            raise error
        return real(body, cluster, group, url, observed_ms)

    monkeypatch.setattr(parse, "parse_group_lag", flaky)
    rig.serve("c", {"ok": lag_body(part()), "bad": lag_body(part())})
    snapshot = rig.cycle()
    assert snapshot.health.up and [g.consumer for g in snapshot.groups if g.measured] == ["ok"]
    assert snapshot.health.burrow_errors == 1
    assert rig.scrape().get(BURROW_ERRORS, cluster="c") == 1


def test_a_partition_listed_three_times_is_one_series_and_counted(rig: Rig) -> None:
    """Three identical t/0 entries gave three series and a topic roll-up of 12 instead of 7."""
    rig.serve("c", {"ok": lag_body(part(lag=5), part(lag=5), part(lag=5),
                                   part(partition=1, lag=2))})
    snapshot = rig.cycle()
    assert len(snapshot.partitions) == 2 and snapshot.health.invalid_inputs == 2
    samples = rig.scrape()
    assert len(samples.series(FRESH, cluster="c", consumer="ok", partition=0)) == 1
    assert samples.get(metrics.TOPIC_OFFSET_LAG.name, cluster="c", consumer="ok",
               topic="t") == 7
    assert samples.get(metrics.GROUP_OFFSET_LAG.name, cluster="c", consumer="ok") == 7


def test_a_negative_lag_is_unmeasured_never_caught_up(rig: Rig) -> None:
    """current_lag -3 exported freshness 0 (no read) while records were unread."""
    rig.serve("c", {"ok": lag_body(part(lag=-3), part(partition=1))})
    snapshot = rig.cycle()
    samples = rig.scrape()
    labels = {"cluster": "c", "consumer": "ok", "topic": "t", "partition": 0}
    assert samples.get(FRESH, **labels) is None
    assert snapshot.health.up and snapshot.health.invalid_inputs == 1
    assert samples.get(metrics.OFFSET_LAG.name, **labels) is None
    assert samples.get(metrics.COMMIT_LAG.name, **labels) is None
    assert samples.get(metrics.COMMITTED.name, **labels) == 5
    assert samples.get(metrics.GROUP_UNMEASURED.name, cluster="c",
               consumer="ok") == 1
    assert samples.get(metrics.CLUSTER_PARTITIONS.name, cluster="c",
               status="invalid") == 1
    assert samples.get(metrics.CLUSTER_PARTITIONS.name, cluster="c",
               status="caught_up") == 0
    assert samples.get(metrics.GROUP_MAX_FRESHNESS.name, cluster="c",
               consumer="ok") is None
    assert samples.get(FRESH, cluster="c", consumer="ok", topic="t", partition=1) == 55_000


@pytest.mark.parametrize("ts", [99_999_999_999_999_999, NOW + 86_400_001, 1,
                                946_684_799_999])
def test_an_absurd_commit_time_exports_no_commit_lag(rig: Rig, ts: int) -> None:
    """A commit timestamp of 99999999999999999 exported commit_lag_ms 9.99e16."""
    rig.serve("c", {"ok": lag_body(part(ts=ts))})
    snapshot = rig.cycle()
    samples = rig.scrape()
    labels = {"cluster": "c", "consumer": "ok", "topic": "t", "partition": 0}
    assert samples.get(metrics.COMMIT_LAG.name, **labels) is None
    assert snapshot.health.up and snapshot.health.invalid_inputs == 1
    assert samples.get(FRESH, **labels) == 55_000  # freshness does not come from it
    assert all(v < 10**12 for (n, _), v in samples.samples.items()
               if n.startswith("kafka_consumer"))


def test_every_group_gone_is_a_failed_cluster_not_a_healthy_empty_one(rig: Rig) -> None:
    """Every /lag answering 404 left cluster_up 1 with 0 groups and no warning."""
    rig.serve("c", {}, consumers=["a", "b", "c"])  # no /lag served: Burrow's 404 NOTFOUND
    snapshot = rig.cycle()
    assert not snapshot.health.up
    assert "listed 3 groups and none could be measured" in (snapshot.health.error or "")
    assert "3 answered 404" in (snapshot.health.error or "")
    samples = rig.scrape()
    assert samples.get(metrics.CLUSTER_UP.name, cluster="c") == 0
    assert samples.get(metrics.CYCLE_FAILURES.total, cluster="c") == 1


def test_an_empty_consumer_list_is_still_a_healthy_cluster(rig: Rig) -> None:
    rig.serve("c", {}, consumers=[])
    assert rig.cycle().health.up


def test_one_group_gone_and_one_failed_but_one_measured_stays_up(rig: Rig) -> None:
    rig.serve("c", {"ok": lag_body(part()), "broken": b"<html>"}, consumers=["ok", "gone",
                                                                            "broken"])
    snapshot = rig.cycle()
    assert snapshot.health.up and snapshot.health.burrow_errors == 1


# --- a group is never silently unmonitored ------------------------------------------------------

MEASURED = metrics.GROUP_MEASURED.name
GROUP_STATUS = metrics.GROUP_STATUS.name


def _unmeasured(snapshot: ClusterSnapshot) -> dict[str, str]:
    return {g.consumer: g.error for g in snapshot.groups if g.error is not None}


UNREADABLE = {
    "not JSON": (b"<html>502</html>", "not JSON"),
    "wrong shape": ({"error": False, "status": {"partitions": "x"}}, "not a list"),
    "nested too deep": (b'{"status": {"partitions": ' + b"[" * 1500 + b"]" * 1500 + b"}}",
                        "too deep"),
    "too big": (b'{"status": {"partitions": [], "x": "' + b"a" * MAX_BODY + b'"}}',
                "maxResponseBytes"),
    "another group's": ({"error": False, "status": {
        "cluster": "c", "group": "other", "status": "OK", "partitions": [part()]}},
        "labelled group 'other', not the asked 'bad'"),
    "another cluster's": ({"error": False, "status": {
        "cluster": "d", "group": "bad", "status": "OK", "partitions": [part()]}},
        "labelled cluster 'd', not the asked 'c'"),
}


@pytest.mark.parametrize("kind", list(UNREADABLE))
def test_a_group_whose_answer_turns_unreadable_stays_visible_as_unmeasured(
        rig: Rig, kind: str) -> None:
    """It vanished from /metrics and the page while cluster_up stayed 1: now it stays listed,
    measured 0 with Burrow status -1 and the reason, no value of it exported; the other group
    and the cluster are unaffected."""
    body, reason = UNREADABLE[kind]
    rig.serve("c", {"ok": lag_body(part()), "bad": body})
    snapshot = rig.cycle()
    assert snapshot.health.up and snapshot.health.burrow_errors == 1
    unmeasured = _unmeasured(snapshot)
    assert list(unmeasured) == ["bad"] and reason in unmeasured["bad"]
    samples = rig.scrape()
    assert samples.get(MEASURED, cluster="c", consumer="bad") == 0
    assert samples.get(GROUP_STATUS, cluster="c", consumer="bad") == -1
    assert samples.get(MEASURED, cluster="c", consumer="ok") == 1
    assert samples.get(FRESH, cluster="c", consumer="ok", topic="t", partition=0) == 55_000
    # nothing of the unreadable group but its name, status and measured
    assert {name for (name, labels), _ in samples.samples.items()
            if ("consumer", "bad") in labels} == {MEASURED, GROUP_STATUS}
    page = render_status_page(Snapshot((snapshot,)), NOW).decode()
    assert ">bad</a>" in page and "unmeasured: " in page
    drill = render_status_page(Snapshot((snapshot,)), NOW, {"cluster": "c", "group": "bad"})
    assert b"unmeasured: " in drill and b"Burrow status UNKNOWN" in drill
    assert "UNMEASURED" in render_table(Snapshot((snapshot,)))


def test_a_cluster_whose_every_group_is_unreadable_is_down(rig: Rig) -> None:
    """A cluster where nothing succeeds looks failed: one down cluster, with the reason, and
    no per-group series (as when Burrow itself fails), not one unmeasured alert per group."""
    rig.serve("c", {"a": b"<html>", "b": {"error": False, "status": {"group": "x"}}})
    snapshot = rig.cycle()
    assert not snapshot.health.up
    assert "listed 2 groups and none could be measured" in (snapshot.health.error or "")
    assert not _unmeasured(snapshot) and snapshot.groups == ()
    samples = rig.scrape()
    assert samples.get(metrics.CLUSTER_UP.name, cluster="c") == 0
    assert not [key for key in samples.samples if key[0].startswith("kafka_consumer_")]


def test_a_cluster_whose_every_partition_entry_is_unusable_is_down(rig: Rig) -> None:
    rig.serve("c", {"a": lag_body(part(topic="bad topic")), "b": lag_body(part(partition=-1))})
    snapshot = rig.cycle()
    assert not snapshot.health.up
    assert "2 had no usable partition entry" in (snapshot.health.error or "")


def test_a_group_whose_only_entry_is_unusable_is_listed_in_the_table(rig: Rig) -> None:
    """/metrics counts its partition unmeasured; `once --format table` left the group out, as
    it has no partition row. A group with a usable and an unusable entry says so too."""
    rig.serve("c", {"ok": lag_body(part()), "bad": lag_body(part(topic="bad topic")),
                    "half": lag_body(part(), part(topic="bad topic", partition=1))})
    snapshot = rig.cycle()
    samples = rig.scrape()
    for name in ("bad", "half"):
        assert samples.get(metrics.GROUP_UNMEASURED.name, cluster="c",
                           consumer=name) == 1
    rows = {line.split()[1]: line for line in
            render_table(Snapshot((snapshot,))).splitlines()[1:] if "UNMEASURED" in line}
    assert set(rows) == {"bad", "half"}
    assert all("UNMEASURED: 1 partition entry unusable" in row for row in rows.values())


def test_a_mislabelled_answer_is_logged_once_a_cycle_with_names_escaped(
        rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    hostile = "\x1b[2J\nFAKE level=info"
    rig.serve("c", {"ok": lag_body(part()), "bad": {"error": False, "status": {
        "cluster": "c", "group": hostile, "partitions": [part()]}}})
    with caplog.at_level(logging.WARNING, logger="freshness_tracker"):
        rig.cycle()
    lines = [r.getMessage() for r in caplog.records if "unreadable" in r.getMessage()]
    assert len(lines) == 1
    assert "labelled group '\\x1b[2J\\nFAKE level=info'" in lines[0]
    assert "\x1b" not in lines[0] and "\n" not in lines[0]


NOT_INTEGRAL = {
    "current_lag 0.5": {"current_lag": 0.5},
    "current_lag true": {"current_lag": True},
    "current_lag missing": {"current_lag": None},
    "current_lag 1e400": {"current_lag": 10**400},
    "end.offset 5.5": {"end": {"offset": 5.5, "timestamp": T0 + 10_000}},
    "end.offset -5": {"end": {"offset": -5, "timestamp": T0 + 10_000}},
    "end.timestamp 0.5 ms off": {"end": {"offset": 5, "timestamp": T0 + 10_000.5}},
    "start.offset 0.25": {"start": {"offset": 0.25, "timestamp": T0, "lag": 1}},
    "partition 0.5": {"partition": 0.5},
    "partition '0'": {"partition": "0"},
}


@pytest.mark.parametrize("kind", list(NOT_INTEGRAL))
def test_a_number_burrow_cannot_send_makes_the_group_unmeasured_never_caught_up(
        rig: Rig, kind: str) -> None:
    """`current_lag: 0.5` was taken as caught up (freshness 0, no read): any offset, lag,
    timestamp or partition that is not a whole int64 makes the group unmeasured, with why."""
    entry = {**part(), **NOT_INTEGRAL[kind]}
    if entry.get("current_lag", 0) is None:
        del entry["current_lag"]
    rig.serve("c", {"ok": lag_body(part()), "bad": lag_body(entry)})
    snapshot = rig.cycle()
    assert snapshot.health.up and list(_unmeasured(snapshot)) == ["bad"]
    samples = rig.scrape()
    assert samples.get(MEASURED, cluster="c", consumer="bad") == 0
    assert not samples.series(FRESH, cluster="c", consumer="bad")
    assert samples.get(metrics.GROUP_OFFSET_LAG.name, cluster="c", consumer="bad") is None


def test_a_nan_lag_makes_the_group_unmeasured(rig: Rig) -> None:
    rig.serve("c", {"ok": lag_body(part()), "bad": json.dumps(lag_body(part())).encode()
                    .replace(b'"current_lag": 2', b'"current_lag": NaN')})
    assert list(_unmeasured(rig.cycle())) == ["bad"]


@pytest.mark.parametrize("status", ["", None, "ok", "FINE", 3])
def test_a_missing_or_unknown_status_is_unknown_never_ok(rig: Rig, status: Any) -> None:
    body = lag_body(part())
    body["status"]["status"] = status
    body["status"]["partitions"][0]["status"] = status
    rig.serve("c", {"g": body})
    (group_result,) = rig.cycle().groups
    assert group_result.burrow_status == "UNKNOWN"
    samples = rig.scrape()
    assert samples.get(GROUP_STATUS, cluster="c", consumer="g") == -1
    assert samples.get(metrics.PARTITION_STATUS.name, cluster="c", consumer="g",
                       topic="t", partition=0) == -1
    assert samples.get(FRESH, cluster="c", consumer="g", topic="t", partition=0) == 55_000


def test_a_group_name_with_a_newline_is_measured_under_the_default_filter(rig: Rig) -> None:
    """Kafka allows a newline in a group id; the default allow `.*` did not match it, so the
    group was never asked for, with no log line and no counter."""
    name = "billing\nnightly"
    rig.serve("c", {"ok": lag_body(part()), name: lag_body(part())})
    snapshot = rig.cycle(groups=NameFilter.compile())
    assert sorted(g.consumer for g in snapshot.groups if g.measured) == [name, "ok"]
    assert rig.scrape().get(FRESH, cluster="c", consumer=name, topic="t", partition=0) \
        == 55_000


def test_groups_the_filters_exclude_are_counted_and_logged_once(
        rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    rig.serve("c", {"ok": lag_body(part()), "tmp-1": lag_body(part()),
                    "tmp-\x1b[2J": lag_body(part())})
    deny = NameFilter.compile(deny=["tmp-.*"])
    measurer = ClusterMeasurer(
        ClusterSettings(ClusterKafkaSettings("c", {"bootstrap.servers": "k:1"})), rig.client,
        lambda _k: FakeReader(dict(TIMESTAMPS)), groups=deny, clock=lambda: NOW)
    with caplog.at_level(logging.INFO, logger="freshness_tracker"):
        for _ in range(3):
            snapshot = measurer.measure()
    rig.holder.publish(snapshot)
    assert snapshot.health.filtered_groups == 2
    assert [s.path for s in rig.server.requests(r"/lag$")] == ["/v3/kafka/c/consumer/ok/lag"] * 3
    assert rig.scrape().get(metrics.CLUSTER_FILTERED_GROUPS.name, cluster="c") == 2
    logged = [r.getMessage() for r in caplog.records if "filters.groups" in r.getMessage()]
    assert len(logged) == 1 and "'tmp-\\x1b[2J'" in logged[0]  # once, not every cycle


def test_names_from_burrow_reach_the_terminal_and_the_log_escaped(
        rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    """`once --format table` printed names raw: `\x1b[2J` cleared the terminal, a newline
    forged a row. A cluster list with such a name reached the log and /healthz raw."""
    hostile = "g\x1b[2J\nc   FORGED"
    rig.serve("c", {hostile: lag_body(part()), "bad": b"<html>"})
    snapshot = rig.cycle()
    table = render_table(Snapshot((snapshot,)))
    assert "\x1b" not in table and "g\\x1b[2J\\nc   FORGED" in table
    assert len(table.splitlines()) == 1 + len(snapshot.partitions) + 1  # header, rows, 'bad'
    rig.server.serve_static("/v3/kafka", {"error": False, "clusters": ["d", "x\x1b[2J\ny"]})
    with caplog.at_level(logging.WARNING, logger="freshness_tracker"):
        down = rig.cycle()
    assert not down.health.up and "'x\\x1b[2J\\ny'" in (down.health.error or "")
    assert not any("\x1b" in r.getMessage() for r in caplog.records)
