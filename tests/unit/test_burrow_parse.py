"""Burrow v3 bodies → domain values, from real captured 1.2.1 bodies and 1.9.x shapes."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshness_tracker.burrow import parse
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


def test_stuck_group_lag_121() -> None:
    g = parse.parse_group_lag(body("v3_consumer_stuck-group_lag.json"), "local", "stuck-group")
    assert g.burrow_status == "ERR"
    assert [p.burrow_status for p in g.partitions] == ["STOP", "STOP", "STOP"]
    assert [p.committed_offset for p in g.partitions] == [50, 60, 70]


def test_all_captured_lag_bodies_parse() -> None:
    for path in sorted((DATA / "burrow").glob("*_lag.json")):
        g = parse.parse_group_lag(json.loads(path.read_text()), "local", path.stem)
        assert all(p.current_lag >= 0 for p in g.partitions)


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


@pytest.mark.parametrize("bad", [
    None, [], "GOOD", {"status": None}, {"status": {"partitions": "x"}},
    {"status": {"partitions": [{"topic": 5, "partition": 0}]}},
    {"status": {"partitions": [{"topic": "t", "partition": "0"}]}},
    {"status": {"partitions": [{"topic": "t", "partition": 0, "end": {"offset": "1"}}]}},
    {"status": {"partitions": [{"topic": "t", "partition": -1}]}},
    {"status": {"partitions": [{"topic": "t" * 5000, "partition": 0}]}},
    {"status": {"partitions": [{"topic": "t", "partition": True}]}},
])
def test_malformed_lag_bodies_raise_response_error(bad: Any) -> None:
    with pytest.raises(BurrowResponseError):
        parse.parse_group_lag(bad, "c", "g")


def test_negative_offset_is_no_commit_and_negative_lag_is_zero() -> None:
    g = parse.parse_group_lag({"status": {"partitions": [
        {"topic": "t", "partition": 0, "end": {"offset": -1, "timestamp": 5},
         "current_lag": -3}]}}, "c", "g")
    assert g.partitions[0].committed_offset is None
    assert g.partitions[0].current_lag == 0


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
