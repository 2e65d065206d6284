"""Burrow v3 bodies → domain values, from real captured 1.2.1 bodies and 1.9.x shapes."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshness_tracker.burrow import parse
from freshness_tracker.domain.model import LagWindow
from freshness_tracker.errors import BurrowResponseError

DATA = Path(__file__).parent.parent / "data"


def body(name: str) -> Any:
    return json.loads((DATA / "burrow" / name).read_text())


def test_cluster_list_and_detail_121() -> None:
    assert parse.parse_cluster_list(body("v3_kafka.json")) == ["local"]
    assert parse.parse_cluster_servers(body("v3_kafka_cluster.json")) == ["127.0.0.1:19092"]


def test_consumer_list_121() -> None:
    groups = parse.parse_consumer_list(body("v3_kafka_cluster_consumer.json"))
    assert "live-group" in groups and "stuck-group" in groups


def test_live_group_lag_121() -> None:
    g = parse.parse_group_lag(body("v3_consumer_live-group_lag.json"), "local", "live-group")
    assert g.burrow_status == "OK" and g.total_lag == 15
    assert len(g.partitions) == 3
    p = g.partitions[0]
    assert (p.key.topic, p.key.partition) == ("orders", 0)
    assert p.committed_offset == 129 and p.current_lag == 5
    assert p.commit_time_ms == 1795301781745
    assert p.log_end_offset == 134


def test_window_and_members_121() -> None:
    """Burrow 1.2.1 against Kafka >= 2.1: a lag at each end of the window, empty members."""
    g = parse.parse_group_lag(body("v3_consumer_live-group_lag.json"), "local", "live-group")
    p = g.partitions[0]
    assert p.window == LagWindow(1795301772667, 1, 1795301781745, 1)
    assert (p.owner, p.client_id) == ("", "")


def test_stuck_group_lag_121() -> None:
    g = parse.parse_group_lag(body("v3_consumer_stuck-group_lag.json"), "local", "stuck-group")
    assert g.burrow_status == "ERR"
    assert [p.burrow_status for p in g.partitions] == ["STOP", "STOP", "STOP"]
    assert [p.committed_offset for p in g.partitions] == [50, 60, 70]


def test_all_captured_lag_bodies_parse() -> None:
    captured = sorted((DATA / "burrow").glob("*_lag.json"))
    assert captured, "no captured /lag bodies: the loop below would check nothing"
    for path in captured:
        group = path.stem.removeprefix("v3_consumer_").removesuffix("_lag")
        g = parse.parse_group_lag(json.loads(path.read_text()), "local", group)
        assert g.partitions, path.name
        assert all(p.current_lag >= 0 for p in g.partitions)
        assert g.burrow_status in ("OK", "WARN", "ERR")


def test_not_found_body_121() -> None:
    b = body("v3_consumer_unknown_404.json")
    assert parse.is_not_found(b)
    assert parse.parse_group_lag(b, "local", "no-such-group").partitions == ()


def test_19x_shape_observed_at_null_lag_null_end_and_big_lag() -> None:
    g = parse.parse_group_lag(
        json.loads((DATA / "burrow19" / "lag_observedat_nulllag.json").read_text()), "local",
        "group-a")
    first, second = g.partitions
    assert first.current_lag == 2285339353  # beyond 32 bits
    assert first.committed_offset == 2542 and first.commit_time_ms == 1511780580382
    assert second.committed_offset is None and second.commit_time_ms is None
    assert second.current_lag == 0 and second.log_end_offset is None
    assert first.window == LagWindow(1511200836090, None, 1511780580382, None)  # lag null
    assert (first.owner, first.client_id) == ("/10.0.0.1", "consumer-1")
    assert second.window is None and second.owner == ""


@pytest.mark.parametrize(("owner", "want"), [
    ("host-1", "host-1"), (None, ""), (5, ""), ("x" * 256, ""), ("\udcff", ""),
])
def test_an_unusable_owner_is_unknown_never_a_failed_group(owner: Any, want: str) -> None:
    entry = {"topic": "t", "partition": 0, "owner": owner, "client_id": owner,
             "end": {"offset": 5, "timestamp": 1, "lag": -3}, "current_lag": 1}
    (p,) = parse.parse_group_lag({"status": {"partitions": [entry]}}, "c", "g").partitions
    assert (p.owner, p.client_id) == (want, want)
    assert p.window is None  # no start


def test_a_negative_window_lag_is_unknown_and_a_wrong_type_is_a_bad_body() -> None:
    entry = {"topic": "t", "partition": 0, "current_lag": 1,
             "start": {"offset": 1, "timestamp": 10, "lag": -1},
             "end": {"offset": 5, "timestamp": 20, "lag": 2}}
    (p,) = parse.parse_group_lag({"status": {"partitions": [entry]}}, "c", "g").partitions
    assert p.window == LagWindow(10, None, 20, 2)
    entry["end"] = {"offset": 5, "timestamp": 20, "lag": "2"}
    with pytest.raises(BurrowResponseError, match=r"partition\.end\.lag"):
        parse.parse_group_lag({"status": {"partitions": [entry]}}, "c", "g")


@pytest.mark.parametrize("bad", [
    None, [], "GOOD", {"status": None}, {"status": {"partitions": "x"}},
    {"status": {"partitions": [{"topic": 5, "partition": 0}]}},
    {"status": {"partitions": [{"topic": "t", "partition": "0"}]}},
    {"status": {"partitions": [{"topic": "t", "partition": 0, "end": {"offset": "1"}}]}},
    {"status": {"partitions": [{"topic": "t", "partition": True}]}},
    {"status": {"partitions": [{"topic": None, "partition": 0}]}},
])
def test_malformed_lag_bodies_raise_response_error(bad: Any) -> None:
    with pytest.raises(BurrowResponseError):
        parse.parse_group_lag(bad, "c", "g")


def test_negative_offset_is_no_commit() -> None:
    g = parse.parse_group_lag({"status": {"partitions": [
        {"topic": "t", "partition": 0, "end": {"offset": -1, "timestamp": 5},
         "current_lag": -3}]}}, "c", "g")
    assert g.partitions[0].committed_offset is None
    assert g.partitions[0].current_lag == 0  # no commit: no lag either


def test_a_negative_lag_is_passed_on_not_turned_into_caught_up() -> None:
    """Clamping it to 0 claimed "caught up" for a partition whose state is unknown; the domain
    reports it as INVALID instead (test_freshness)."""
    g = parse.parse_group_lag({"status": {"partitions": [
        {"topic": "t", "partition": 0, "end": {"offset": 5, "timestamp": 5},
         "current_lag": -3}]}}, "c", "g")
    assert g.partitions[0].current_lag == -3


def lag_body(*partitions: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {"status": {"status": "OK", "partitions": list(partitions), **status}}


def entry(topic: str = "t", partition: int = 0, lag: int = 1, offset: int = 5) -> dict[str, Any]:
    return {"topic": topic, "partition": partition, "current_lag": lag,
            "end": {"offset": offset, "timestamp": 1_700_000_000_000}}


@pytest.mark.parametrize("topic", ["t\udc80x", "", "a b", "t/../x", ".", "..", "t" * 250,
                                   "t" * 5000, "тема", "t\n"])
def test_a_topic_that_is_no_kafka_topic_name_costs_its_partition_only(topic: str) -> None:
    g = parse.parse_group_lag(lag_body(entry("good", 0), entry(topic, 1), entry("good", 2)),
                              "c", "g")
    assert [(p.key.topic, p.key.partition) for p in g.partitions] == [("good", 0), ("good", 2)]
    assert len(g.rejected) == 1 and g.unusable_partitions == 1
    assert "not a Kafka topic name" in g.rejected[0] or "is empty" in g.rejected[0]
    g.rejected[0].encode("utf-8")  # escaped: always loggable
    assert "\n" not in g.rejected[0]  # no forged log line


def test_a_lone_surrogate_topic_from_json_is_dropped_and_described_escaped() -> None:
    raw = b'{"status": {"partitions": [{"topic": "t\\udc80x", "partition": 0, "current_lag": 1}]}}'
    g = parse.parse_group_lag(json.loads(raw), "c", "g")
    assert g.partitions == () and g.unusable_partitions == 1
    assert "'t\\udc80x'" in g.rejected[0]
    g.rejected[0].encode("utf-8")


@pytest.mark.parametrize("number", [-1, 2**31, 2**40])
def test_an_impossible_partition_number_costs_that_entry_only(number: int) -> None:
    g = parse.parse_group_lag(lag_body(entry("t", number), entry("t", 1)), "c", "g")
    assert [p.key.partition for p in g.partitions] == [1]
    assert g.unusable_partitions == 1


def test_a_partition_listed_twice_keeps_its_first_entry_and_counts_the_others() -> None:
    """Three entries for t/0 gave three identical series and a topic lag of 12 instead of 7."""
    g = parse.parse_group_lag(lag_body(entry("t", 0, lag=5), entry("t", 0, lag=9),
                                       entry("t", 0, lag=5), entry("t", 1, lag=2)), "c", "g")
    assert [(p.key.partition, p.current_lag) for p in g.partitions] == [(0, 5), (1, 2)]
    assert len(g.rejected) == 2 and all("listed again" in r for r in g.rejected)
    assert g.unusable_partitions == 0  # the partition itself is measured (from its first entry)


def test_consumer_list_keeps_the_usable_names_and_describes_the_rest() -> None:
    raw = (b'{"consumers": ["a", "", "g\\udc80x", 5, null, "a", "b", {"x": 1}, "'
           + b"x" * 5000 + b'"]}')
    names = parse.parse_consumer_list(json.loads(raw))
    assert names == ["a", "b"]
    assert len(names.rejected) == 7
    for why in names.rejected:
        why.encode("utf-8")
        assert len(why) < 200  # a 5000-character name is cut in the description
    assert any("is empty" in r for r in names.rejected)
    assert any("'g\\udc80x' is not valid UTF-8" in r for r in names.rejected)
    assert any("listed again" in r for r in names.rejected)


def test_cluster_and_server_lists_skip_unusable_entries() -> None:
    assert parse.parse_cluster_list({"clusters": ["", "local", 5, "\udc80"]}) == ["local"]
    assert parse.parse_cluster_servers({"module": {"servers": ["", "k:1", None]}}) == ["k:1"]


def test_unusable_status_words_are_unknown_not_ok() -> None:
    g = parse.parse_group_lag({"status": {"status": "\udc80", "partitions": [
        {**entry(), "status": "W" * 100}]}}, "c", "g")
    assert g.burrow_status == "UNKNOWN" and g.partitions[0].burrow_status == "UNKNOWN"


def test_the_parser_never_recurses_whatever_the_nesting() -> None:
    """json.loads is bounded by the client; the parser itself must not add a depth limit."""
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    bodies = (deep, {"status": {"partitions": deep}}, {"status": {"partitions": [deep]}},
              {"consumers": deep}, {"consumers": [deep]},
              {"status": {"partitions": [{"topic": "t", "partition": 0, "end": deep}]}})
    calls = (lambda b: parse.parse_group_lag(b, "c", "g"), parse.parse_consumer_list,
             parse.parse_cluster_list, parse.parse_cluster_servers, parse.is_not_found)
    for body in bodies:
        for call in calls:
            with contextlib.suppress(BurrowResponseError):
                call(body)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["status", "partitions", "topic", "partition", "end",
                                       "offset", "timestamp", "current_lag", "complete",
                                       "clusters", "consumers", "module", "servers", "x"]),
                      children, max_size=6),
    max_leaves=30)


@given(json_values)
def test_fuzzed_bodies_yield_values_or_response_error(value: Any) -> None:
    for call in (lambda: parse.parse_group_lag(value, "c", "g"),
                 lambda: parse.parse_cluster_list(value),
                 lambda: parse.parse_consumer_list(value),
                 lambda: parse.parse_cluster_servers(value)):
        with contextlib.suppress(BurrowResponseError):
            call()


@pytest.mark.parametrize("status", [None, "", "ok", "GOOD", 1, ["OK"], "x" * 10])
def test_a_missing_empty_or_unknown_status_is_unknown_never_ok(status: Any) -> None:
    """`""` and null became OK; any word that is none of Burrow's is UNKNOWN (exported -1)."""
    body = lag_body({**entry(), "status": status}, status=status)
    g = parse.parse_group_lag(body, "c", "g")
    assert g.burrow_status == "UNKNOWN" and g.partitions[0].burrow_status == "UNKNOWN"
    del body["status"]["status"], body["status"]["partitions"][0]["status"]
    g = parse.parse_group_lag(body, "c", "g")
    assert g.burrow_status == "UNKNOWN" and g.partitions[0].burrow_status == "UNKNOWN"


@pytest.mark.parametrize("word", ["NOTFOUND", "OK", "WARN", "ERR", "STOP", "STALL", "REWIND"])
def test_burrows_own_status_words_are_kept(word: str) -> None:
    g = parse.parse_group_lag(lag_body({**entry(), "status": word}, status=word), "c", "g")
    assert g.burrow_status == word and g.partitions[0].burrow_status == word


@pytest.mark.parametrize(("field", "value", "why"), [
    ("current_lag", 0.5, "0.5, not a whole number"),
    ("current_lag", True, "bool"),
    ("current_lag", float("nan"), "not a finite number"),
    ("current_lag", 2**64, "out of range"),
    ("current_lag", None, "a commit without current_lag"),
    ("partition", 0.5, "not a whole number"),
    ("end", {"offset": 5.5, "timestamp": 1}, "partition.end.offset is 5.5"),
    ("end", {"offset": -2, "timestamp": 1}, "-2, not a Kafka offset"),
    ("end", {"offset": 5, "timestamp": 1.5}, "partition.end.timestamp is 1.5"),
    ("end", {"offset": 5, "timestamp": 1, "lag": 0.5}, "partition.end.lag is 0.5"),
    ("start", {"offset": 0.5, "timestamp": 1}, "partition.start.offset is 0.5"),
    ("start", {"offset": -3, "timestamp": 1}, "partition.start.offset is -3"),
])
def test_a_number_burrow_cannot_send_fails_the_group_with_the_reason(
        field: str, value: Any, why: str) -> None:
    """`current_lag: 0.5` was taken as caught up (int() truncated it): a number that is not a
    whole int64 where Burrow sends an integer, or an offset below -1, is no answer to measure."""
    body = lag_body({**entry(), field: value})
    with pytest.raises(BurrowResponseError, match=re.escape(why)):
        parse.parse_group_lag(body, "c", "g")


def test_a_whole_number_written_as_a_float_is_still_that_number() -> None:
    (p,) = parse.parse_group_lag(lag_body({**entry(lag=3), "partition": 1.0}), "c", "g").partitions
    assert (p.key.partition, p.current_lag) == (1, 3)


@pytest.mark.parametrize(("labels", "why"), [
    ({"cluster": "other", "group": "g"}, "labelled cluster 'other', not the asked 'c'"),
    ({"cluster": "c", "group": "g2"}, "labelled group 'g2', not the asked 'g'"),
    ({"cluster": "c", "group": 7}, "labelled group <a number>"),
    ({"cluster": "c", "group": "g\x1b[2J\n"}, "labelled group 'g\\x1b[2J\\n'"),
])
def test_an_answer_labelled_with_another_cluster_or_group_is_not_this_groups(
        labels: dict[str, Any], why: str) -> None:
    """It was exported under the asked name without a warning."""
    body = lag_body(entry(), **labels)
    with pytest.raises(BurrowResponseError, match=re.escape(why)) as raised:
        parse.parse_group_lag(body, "c", "g", "/lag")
    assert "\x1b" not in str(raised.value) and "\n" not in str(raised.value)
    assert parse.parse_group_lag(lag_body(entry(), cluster="c", group="g"), "c", "g").partitions
