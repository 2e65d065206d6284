"""Fuzzing Burrow's side: every body yields values or a counted error, and a cycle never crashes.

1. The parser, with hypothesis: arbitrary JSON values, and Burrow-shaped bodies with hostile
   fields (huge and negative numbers, wrong types, very long, empty or non-UTF-8 names, the
   same partition listed again, absurd timestamps) -> results or BurrowResponseError, nothing
   else; every kept name is exportable and every dropped entry is described.
2. Whole cycles over real HTTP: a fake Burrow server serves fuzzed `/consumer` lists and `/lag`
   bodies (deep nesting included) to the real BurrowClient; the cycle completes, the good group
   stays measured, a bad input is used, counted as a Burrow error or counted as invalid, and
   /metrics renders only possible numbers, each series once.
3. atheris (coverage-guided, libFuzzer) on the parser when it is installed, in a subprocess.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from freshness_tracker import metrics
from freshness_tracker.burrow import parse
from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.config.settings import ClusterSettings
from freshness_tracker.cycle import ClusterMeasurer
from freshness_tracker.domain.freshness import EARLIEST_PLAUSIBLE_MS, MAX_AHEAD_MS
from freshness_tracker.domain.names import group_name_problem, topic_name_problem
from freshness_tracker.errors import BurrowResponseError
from freshness_tracker.kafka.settings import ClusterKafkaSettings
from freshness_tracker.publish import SnapshotHolder
from freshness_tracker.sinks.exposition import CachedExposition
from freshness_tracker.sinks.prometheus import SeriesSet
from freshness_tracker.sinks.selfmetrics import SelfMetrics
from tests.support.fake_burrow import FaultyBurrow
from tests.support.fakes import FakeReader

DATA = Path(__file__).parent.parent / "data"
INT64_MAX = 2**63 - 1
T0 = 1_700_000_000_000  # the fuzzed cycles' clock: a real epoch
NOW = T0 + 10_000

# --- hostile values ----------------------------------------------------------------------------

huge_ints = st.one_of(
    st.integers(),
    st.sampled_from([2**31, 2**32, 2**53 + 1, INT64_MAX, INT64_MAX + 1, 2**64, -(2**63) - 1,
                     10**30, 10**400, -(10**400), -1, 0, -3]),
)
#: Timestamps: real ones around the clock, and the impossible kinds (far future, before 2000).
timestamps = st.one_of(
    st.integers(T0 - 10**9, NOW + 2 * MAX_AHEAD_MS),
    st.sampled_from([99_999_999_999_999_999, 1, 0, -1, EARLIEST_PLAUSIBLE_MS - 1,
                     NOW + MAX_AHEAD_MS + 1, INT64_MAX]),
    huge_ints,
)
weird_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 1e19, 0.5, -0.0]),
)
names = st.one_of(
    st.text(max_size=30),  # lone surrogates included
    st.sampled_from(["", " ", "a" * 5000, "x" * 300, "t" * 249, "t" * 250, "\u0000",
                     "t/../../etc", "g?x=1#f", "тема", "🙂" * 10, '"', "\n", "t\udc80x",
                     "\udc80", "\ud800", ".", "..", "t", "ok"]),
)
scalars = st.one_of(st.none(), st.booleans(), huge_ints, weird_floats, names)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(names, children, max_size=4)),
    max_leaves=20,
)
maybe = lambda strategy: st.one_of(strategy, scalars)  # noqa: E731 (a local helper)


@st.composite
def offset_entries(draw: st.DrawFn) -> Any:
    return draw(st.one_of(st.none(), scalars, st.fixed_dictionaries(
        {"offset": maybe(huge_ints), "timestamp": maybe(timestamps), "lag": maybe(huge_ints)})))


@st.composite
def partition_entries(draw: st.DrawFn) -> Any:
    entry: dict[str, Any] = {
        # A small pool of real names and numbers, so that the same partition is listed again.
        "topic": draw(st.one_of(st.sampled_from(["t", "u"]), maybe(names))),
        "partition": draw(st.one_of(st.integers(0, 2), maybe(huge_ints))),
        "owner": draw(maybe(names)),
        "status": draw(maybe(st.sampled_from(["OK", "WARN", "STOP", "STALL", "REWIND", "??"]))),
        "start": draw(offset_entries()),
        "end": draw(offset_entries()),
        "current_lag": draw(maybe(huge_ints)),
        "complete": draw(maybe(weird_floats)),
    }
    drop = draw(st.sets(st.sampled_from(sorted(entry)), max_size=3))
    return {k: v for k, v in entry.items() if k not in drop}


@st.composite
def lag_bodies(draw: st.DrawFn) -> Any:
    """Burrow-shaped `/lag` answers, every field possibly hostile."""
    status = {
        "cluster": draw(maybe(names)),
        "group": draw(maybe(names)),
        "status": draw(maybe(st.sampled_from(["OK", "WARN", "ERR", "NOTFOUND"]))),
        "partitions": draw(st.one_of(st.lists(partition_entries(), max_size=6), scalars)),
        "totallag": draw(maybe(huge_ints)),
        "maxlag": draw(st.one_of(st.none(), partition_entries())),
    }
    body: dict[str, Any] = {"error": draw(maybe(st.booleans())), "status": status}
    return draw(st.one_of(st.just(body), st.just({"status": draw(scalars)}), json_values))


#: Burrow's own status words, as its evaluator writes them.
STATUS_WORDS = ["NOTFOUND", "OK", "WARN", "ERR", "STOP", "STALL", "REWIND"]
#: Any int64: a value of Burrow's type, possibly impossible (negative lags, absurd times).
any_int64 = st.one_of(st.integers(-(2**63), INT64_MAX), st.integers(-3, 50))


@st.composite
def valid_offsets(draw: st.DrawFn) -> Any:
    """A `start`/`end` entry Burrow could send: -1 (no commit) or a real offset, any int64
    timestamp (the impossible ones included: the domain judges them), any int64 or null lag."""
    return {"offset": draw(st.one_of(st.just(-1), st.integers(0, 50),
                                     st.integers(0, INT64_MAX))),
            "timestamp": draw(st.one_of(st.integers(T0 - 10**9, NOW + 2 * MAX_AHEAD_MS),
                                        any_int64)),
            "lag": draw(st.one_of(st.none(), any_int64))}


@st.composite
def valid_partitions(draw: st.DrawFn) -> dict[str, Any]:
    """One partition entry of Burrow's exact shape and types, from a small pool of names and
    numbers (so a partition is listed again now and then)."""
    return {"topic": draw(st.sampled_from(["t", "u"])), "partition": draw(st.integers(0, 2)),
            "owner": draw(st.sampled_from(["", "/10.0.0.1"])),
            "client_id": draw(st.sampled_from(["", "consumer-1"])),
            "status": draw(st.sampled_from(STATUS_WORDS)),
            "start": draw(st.none() | valid_offsets()), "end": draw(st.none() | valid_offsets()),
            "current_lag": draw(st.one_of(st.integers(0, 50), any_int64)),
            "complete": draw(st.floats(0, 1))}


def valid_lag_bodies(cluster: str = "c", group: str = "g") -> st.SearchStrategy[Any]:
    """`/lag` answers of Burrow's exact shape for `cluster`/`group`: every one parses."""
    return st.fixed_dictionaries({"error": st.just(False), "message": st.just(
        "consumer status returned"), "status": st.fixed_dictionaries({
            "cluster": st.just(cluster), "group": st.just(group),
            "status": st.sampled_from(STATUS_WORDS),
            "partitions": st.lists(valid_partitions(), min_size=1, max_size=6),
            "totallag": st.integers(0, INT64_MAX)})})


#: What one field of a valid body is replaced with: a wrong type, a number that is not a whole
#: int64, a hostile name, or null.
hostile_values = st.one_of(scalars, st.sampled_from([0.5, -0.5, 1e19, 2.0, True, False, "5",
                                                     -2, -(2**63), [], {}]))


@st.composite
def mutated_lag_bodies(draw: st.DrawFn, cluster: str = "c", group: str = "g") -> Any:
    """A valid body with one field (of the status, a partition, or its start or end) replaced
    or removed: each check of the parser is met by bodies that are otherwise Burrow's."""
    body = draw(valid_lag_bodies(cluster, group))
    status = body["status"]
    partitions = status["partitions"]
    target = draw(st.sampled_from(["status", "partition", "offsets"]))
    if target == "status":
        holder, key = status, draw(st.sampled_from(["cluster", "group", "status", "totallag"]))
    else:
        holder = draw(st.sampled_from(partitions))
        if target == "offsets" and holder.get("end") is not None:
            holder = holder["end"] if draw(st.booleans()) or holder.get("start") is None \
                else holder["start"]
            key = draw(st.sampled_from(["offset", "timestamp", "lag"]))
        else:
            key = draw(st.sampled_from(sorted(holder)))
    if draw(st.integers(0, 9)) == 0:
        holder.pop(key, None)
    else:
        holder[key] = draw(hostile_values)
    return body


# --- 1. the parser -----------------------------------------------------------------------------


def _parse_all(body: Any) -> None:
    for call in (lambda: parse.parse_cluster_list(body), lambda: parse.parse_consumer_list(body),
                 lambda: parse.parse_cluster_servers(body), lambda: parse.is_not_found(body),
                 lambda: parse.parse_group_lag(body, "c", "g", "/lag")):
        with contextlib.suppress(BurrowResponseError):  # a counted error: group/cluster failed
            call()


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_any_json_value_parses_or_is_a_burrow_response_error(body: Any) -> None:
    _parse_all(body)


def test_lag_bodies_yield_sane_values_or_a_burrow_response_error() -> None:
    """Valid bodies and valid bodies with one field made hostile: values or a
    BurrowResponseError. Most bodies parse (drawn from Burrow's shape, not at random), so the
    per-partition checks run on most examples, not only on the explicit ones."""
    checked: list[bool] = []

    @settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
    @given(st.one_of(valid_lag_bodies(), mutated_lag_bodies()))
    @example({"status": {"partitions": [{"topic": "t", "partition": 0, "end": {"offset": 1},
                                         "current_lag": 1, "complete": 10**400}]}})
    @example({"status": {"partitions": [{"topic": "t", "partition": 0,
                                         "end": {"offset": 10**30, "timestamp": 10**30},
                                         "current_lag": 10**400}], "totallag": 10**400}})
    @example({"status": {"partitions": [{"topic": "t\udc80x", "partition": 0, "current_lag": 1},
                                        {"topic": "", "partition": 0}]}})
    @example({"status": {"partitions": [{"topic": "t", "partition": 0, "current_lag": 5}] * 3}})
    @example({"status": {"partitions": [{"topic": "t", "partition": 0, "current_lag": -3,
                                         "end": {"offset": 5,
                                                 "timestamp": 99_999_999_999_999_999}}]}})
    @example({"status": {"partitions": [{"topic": "t", "partition": 0, "current_lag": 0.5,
                                         "end": {"offset": 5, "timestamp": T0}}]}})
    def check(body: Any) -> None:
        checked.append(_parse_and_check(body))

    check()
    # The per-partition checks of `_check_group` only run on a group that kept a partition.
    assert sum(checked) > len(checked) / 2, \
        f"{sum(checked)} of {len(checked)} bodies reached the per-partition checks"


def _parse_and_check(body: Any) -> bool:
    """Parse one `/lag` body and check every value of the group it gives; whether any partition
    was kept, so a fuzz test can tell how many bodies reached the per-partition checks."""
    try:
        group = parse.parse_group_lag(body, "c", "g", "/lag")
    except BurrowResponseError:
        event("a BurrowResponseError")
        return False
    event("partitions checked" if group.partitions else "parsed, no partition kept")
    _check_group(body, group)
    return bool(group.partitions)


def _check_group(body: Any, group: Any) -> None:
    """Every value of a parsed group is a possible one, and a number Burrow cannot send (not a
    whole int64) never became a value."""
    assert 0 <= group.total_lag <= INT64_MAX
    keys = [(p.key.topic, p.key.partition) for p in group.partitions]
    assert len(keys) == len(set(keys)), "a partition was kept twice"
    for p in group.partitions:
        assert 0 <= p.key.partition <= 2**31 - 1
        assert topic_name_problem(p.key.topic) is None
        # A negative lag is passed on (the domain marks it INVALID), never clamped to 0.
        assert -(2**63) <= p.current_lag <= INT64_MAX
        assert p.committed_offset is None or 0 <= p.committed_offset <= INT64_MAX
        assert p.commit_time_ms is None or 0 < p.commit_time_ms <= INT64_MAX
        assert math.isfinite(p.complete)
        assert p.burrow_status in (*STATUS_WORDS, "UNKNOWN")
    sent = {(e.get("topic"), e.get("partition")): e for e in reversed(body["status"].get(
        "partitions") or []) if isinstance(e, dict)}
    for p in group.partitions:
        entry = sent[(p.key.topic, p.key.partition)]
        if p.committed_offset is not None:
            lag = entry.get("current_lag")
            # a whole number (5 or 5.0), never a 0.5 taken as 0 nor a bool taken as 1
            assert type(lag) is int or (type(lag) is float and lag.is_integer()), entry
            assert p.current_lag == lag
    assert group.unusable_partitions <= len(group.rejected)
    for why in group.rejected:
        why.encode("utf-8")  # a description is always loggable, names escaped
        assert "\n" not in why


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(names | scalars, max_size=8))
def test_consumer_lists_keep_usable_names_once_and_describe_the_rest(listed: list[Any]) -> None:
    """An empty or non-UTF-8 name took the whole cluster down; now it costs only itself."""
    consumers = parse.parse_consumer_list({"consumers": listed})
    assert all(group_name_problem(name) is None for name in consumers)
    assert len(consumers) == len(set(consumers))
    assert len(consumers) + len(consumers.rejected) == len(listed)
    for why in consumers.rejected:
        why.encode("utf-8")
        assert "\n" not in why


def test_the_parser_rejects_numbers_outside_int64() -> None:
    """Kafka offsets, partitions and timestamps are int64: anything else is not Burrow's."""
    body = {"status": {"partitions": [{"topic": "t", "partition": 0,
                                       "end": {"offset": INT64_MAX + 1, "timestamp": 1},
                                       "current_lag": 1}]}}
    with pytest.raises(BurrowResponseError, match="out of range"):
        parse.parse_group_lag(body, "c", "g", "/lag")


# --- 2. whole cycles over HTTP ------------------------------------------------------------------


CONSUMERS = {"error": False, "consumers": ["ok", "fuzz"]}


@pytest.fixture(scope="module")
def burrow_server() -> Iterator[FaultyBurrow]:
    server = FaultyBurrow(None).start()  # no upstream: serves only what the test sets
    server.serve_static("/v3/kafka", {"error": False, "clusters": ["c"]})
    server.serve_static("/v3/kafka/c/consumer", CONSUMERS)
    server.serve_static("/v3/kafka/c/consumer/ok/lag", {"error": False, "status": {
        "status": "OK", "totallag": 1, "partitions": [{
            "topic": "t", "partition": 0, "status": "OK", "current_lag": 1,
            "end": {"offset": 5, "timestamp": T0 + 1_000}}]}})
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def cycle(burrow_server: FaultyBurrow) -> Iterator[tuple[ClusterMeasurer, CachedExposition,
                                                          SnapshotHolder, SelfMetrics]]:
    client = BurrowClient(BurrowSettings(url=burrow_server.url, timeout_s=5, retries=0))
    reader = FakeReader({(t, p, o): T0 + 100 * o for t in ("t", "u") for p in range(3)
                         for o in range(10)})
    measurer = ClusterMeasurer(ClusterSettings(ClusterKafkaSettings(
        "c", {"bootstrap.servers": "k:1"})), client, lambda _k: reader, clock=lambda: NOW)
    registry = CollectorRegistry()
    holder = SnapshotHolder()
    self_metrics = SelfMetrics(registry, ["c"])
    exposition = CachedExposition(holder, CollectorRegistry(), SeriesSet.everything(),
                                  registry)  # every family's rules
    try:
        yield measurer, exposition, holder, self_metrics
    finally:
        client.close()


#: Bodies whose JSON nests deeper than any decoder's stack: a failed group, never a crash.
DEEP = [b"[" * 1500 + b"]" * 1500, b"[" * 100_000,
        b'{"status": {"partitions": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
        b'{"status": {"partitions": [{"topic": "t", "partition": 0, "end": '
        + b'{"a": ' * 3000 + b"1" + b"}" * 3000 + b"}]}}"]


def _check_scrape(text: str) -> None:
    """The scrape renders, every series once, every per-consumer number a possible one."""
    seen: set[tuple[str, frozenset[tuple[str, str]]]] = set()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in seen, f"series exported twice: {key}"
            seen.add(key)
            if sample.name in (metrics.FRESHNESS.name,
                               metrics.GROUP_MAX_FRESHNESS.name,
                               metrics.TOPIC_MAX_FRESHNESS.name):
                assert 0 <= sample.value <= NOW - EARLIEST_PLAUSIBLE_MS, sample
            if sample.name == metrics.COMMIT_LAG.name:
                assert 0 <= sample.value <= NOW + MAX_AHEAD_MS - EARLIEST_PLAUSIBLE_MS, sample
            if "offset_lag" in sample.name or sample.name == metrics.COMMITTED.name:
                # exposition values are float64: INT64_MAX itself renders as 2**63
                assert 0 <= sample.value <= float(INT64_MAX), sample
            if sample.name == metrics.GROUP_MEASURED.name:
                assert sample.value in (0, 1), sample
            if sample.name.endswith("burrow_status"):
                assert sample.value in range(-1, 7), sample


#: `/lag` bodies for the fuzzed group: mostly Burrow's shape (valid, or valid with one field made
#: hostile), so most cycles measure the group and /metrics renders its per-partition series;
#: the rest are arbitrary JSON, bytes and nesting no decoder's stack holds.
cycle_bodies = st.one_of(
    valid_lag_bodies("c", "fuzz").map(lambda b: json.dumps(b).encode()),
    mutated_lag_bodies("c", "fuzz").map(lambda b: json.dumps(b).encode()),
    mutated_lag_bodies("c", "fuzz").map(lambda b: json.dumps(b).encode()),
    st.one_of(lag_bodies().map(lambda b: json.dumps(b).encode()),
              st.binary(max_size=200),
              st.sampled_from([b"", b"<html>oops</html>", b'{"status": {"partitions": [',
                               b"null", b"[]", b'{"status": {"partitions": "x"}}',
                               b"1" * 5000, *DEEP,
                               b'{"status": {"partitions": [{"topic": "t\\udc80x", '
                               b'"partition": 0, "current_lag": 1}]}}'])))


def test_a_cycle_never_crashes_on_fuzzed_burrow_bodies(
        burrow_server: FaultyBurrow, cycle: tuple[ClusterMeasurer, CachedExposition,
                                                  SnapshotHolder, SelfMetrics]) -> None:
    """Whole cycles over HTTP; most of them measure the fuzzed group (checked below), so the
    scrape's per-partition numbers are judged, not only the failure path."""
    measurer, exposition, holder, self_metrics = cycle
    measured: list[bool] = []

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(cycle_bodies, st.one_of(st.none(), st.lists(names | scalars, max_size=4)))
    def one_cycle(body: bytes, extra_consumers: list[Any] | None) -> None:
        burrow_server.serve_static("/v3/kafka/c/consumer/fuzz/lag", body)
        if extra_consumers is None:
            burrow_server.serve_static("/v3/kafka/c/consumer", CONSUMERS)
        else:  # the good group is listed among fuzzed names: a bad one must not cost it
            burrow_server.serve_static("/v3/kafka/c/consumer", {
                "error": False, "consumers": ["ok", *extra_consumers, "fuzz"]})
        snapshot = measurer.measure()  # must not raise
        holder.publish(snapshot)
        self_metrics.observe(snapshot)
        health = snapshot.health
        groups = {g.consumer: g for g in snapshot.groups}
        assert groups["ok"].measured, "a bad group's body took a good group down"
        assert health.up, health.error
        # never silently dropped: listed, measured or unmeasured with the reason, and counted
        fuzz = groups["fuzz"]
        assert fuzz.measured or (fuzz.error and health.burrow_errors >= 1), \
            "a bad body was neither used nor counted"
        measured.append(fuzz.measured and fuzz.partitions > 0)
        event("fuzzed group measured" if measured[-1] else "fuzzed group unmeasured")
        text = exposition.answer().body.decode()  # the scrape renders
        families = {f.name for f in text_string_to_metric_families(text)}
        assert metrics.FRESHNESS.name in families
        _check_scrape(text)

    one_cycle()
    assert sum(measured) > len(measured) / 3, \
        f"the fuzzed group was measured in {sum(measured)} of {len(measured)} cycles"


# --- 3. atheris ---------------------------------------------------------------------------------

ATHERIS_HARNESS = textwrap.dedent("""
    import json, sys
    import atheris
    with atheris.instrument_imports():
        from freshness_tracker.burrow import parse
        from freshness_tracker.errors import BurrowResponseError

    def one(data: bytes) -> None:
        try:
            body = json.loads(data.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            return
        for call in (parse.parse_cluster_list, parse.parse_consumer_list,
                     parse.parse_cluster_servers, parse.is_not_found,
                     lambda b: parse.parse_group_lag(b, "c", "g", "/lag")):
            try:
                call(body)
            except BurrowResponseError:
                pass

    atheris.Setup(sys.argv, one)
    atheris.Fuzz()
""")

SEEDS = [
    b'{"status": {"partitions": [{"topic": "t", "partition": 0, "end": {"offset": 1, '
    b'"timestamp": 2}, "current_lag": 3, "complete": 1.0}], "totallag": 3}}',
    b'{"clusters": ["a", "b"]}', b'{"consumers": ["g"]}', b'{"module": {"servers": ["k:1"]}}',
    b'{"status": {"partitions": [{"topic": "t", "partition": 0, "end": null}]}}',
    b'{"consumers": ["g", "", "g\\udc80x", 5, "g"]}',
    b'{"status": {"partitions": [{"topic": "t\\udc80x", "partition": 0}, {"topic": "t", '
    b'"partition": 0, "current_lag": -3, "end": {"offset": 1, "timestamp": 99999999999999999}}, '
    b'{"topic": "t", "partition": 0}]}}',
]


def test_atheris_finds_no_crash_in_the_parser(tmp_path: Any) -> None:
    if os.environ.get("CI", "").lower() == "true":
        import atheris  # noqa: F401  (in the dev extra: missing under CI=true is a failure)
    else:
        pytest.importorskip("atheris")  # local runs without the dev extra (never under CI)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, seed in enumerate(SEEDS):
        (corpus / f"seed{i}").write_bytes(seed)
    harness = tmp_path / "fuzz_parse.py"
    harness.write_text(ATHERIS_HARNESS)
    runs = os.environ.get("FT_ATHERIS_RUNS", "30000")
    proc = subprocess.run(
        [sys.executable, str(harness), f"-atheris_runs={runs}", "-max_len=512",
         "-rss_limit_mb=1024", f"-artifact_prefix={tmp_path}/", str(corpus)],
        capture_output=True, text=True, timeout=240,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Done" in proc.stderr or "DONE" in proc.stderr, proc.stderr[-2000:]


#: JSON that is Burrow's shape with hostile values: any int64 and
#: beyond, nulls, negative offsets and lags, bad names and words, now and then a wrong type.
int64s = st.one_of(st.integers(-(2**63), INT64_MAX), st.integers(-3, 50),
                   st.integers(T0 - 10**9, NOW + 2 * MAX_AHEAD_MS))
texts = st.one_of(st.text(st.characters(exclude_categories=["Cs"]), max_size=30),
                  st.sampled_from(["", "t" * 250, "a b", "..", "\u0000", "тема", "x" * 300]))


def shaped(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly `strategy`; one time in 40 a null, one in 40 any scalar (often a wrong type)."""
    return st.integers(0, 39).flatmap(
        lambda dice: st.none() if dice == 0 else scalars if dice == 1 else strategy)


@st.composite
def burrow_shaped_lag_bodies(draw: st.DrawFn) -> Any:
    def offsets() -> Any:
        return draw(shaped(st.fixed_dictionaries(
            {"offset": shaped(int64s)},
            optional={"timestamp": shaped(int64s), "lag": shaped(int64s),
                      "observedAt": shaped(int64s)})))

    def entry() -> Any:
        return draw(st.fixed_dictionaries(
            {"topic": shaped(st.sampled_from(["t", "u"]) | texts),
             "partition": shaped(st.integers(0, 2) | int64s)},
            optional={"owner": shaped(texts), "client_id": shaped(texts),
                      "status": shaped(st.sampled_from(["OK", "STOP", "STALL", "REWIND"]) | texts),
                      "start": st.just(offsets()), "end": st.just(offsets()),
                      "current_lag": shaped(int64s),
                      "complete": shaped(st.floats(allow_nan=False, allow_infinity=False)
                                         | int64s | huge_ints)}))

    status = draw(st.fixed_dictionaries({}, optional={
        "partitions": shaped(st.lists(st.builds(entry), min_size=1, max_size=6)),
        "status": shaped(st.sampled_from(["OK", "WARN", "ERR"]) | texts),
        "totallag": shaped(int64s), "group": texts}))
    return draw(st.fixed_dictionaries({"status": st.just(status)},
                                      optional={"error": shaped(st.booleans()),
                                                "message": texts}))


def test_burrow_shaped_hostile_bodies_yield_sane_values_or_a_burrow_response_error() -> None:
    """Burrow's field names and types with hostile values (any int64 and beyond, nulls,
    negative offsets and lags, bad names, now and then a wrong type): values that pass
    `_check_group` or a BurrowResponseError. Most hostile bodies fail their group, so valid
    ones are drawn beside them: enough keep a partition for the per-partition checks to run."""
    checked: list[bool] = []

    @settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
    @given(st.one_of(valid_lag_bodies(), burrow_shaped_lag_bodies()))
    def check(body: Any) -> None:
        checked.append(_parse_and_check(body))

    check()
    assert sum(checked) > len(checked) / 4, \
        f"{sum(checked)} of {len(checked)} bodies reached the per-partition checks"


def test_every_captured_and_generated_burrow_body_parses_whole() -> None:
    """Burrow's real shapes (1.2.1 captured, 1.9's nulls and 64-bit lags) keep every partition:
    the checks reject impossible numbers, never a body Burrow really sends."""
    captured = sorted((DATA / "burrow").glob("*_lag.json"))
    assert captured
    bodies = [json.loads(path.read_bytes()) for path in captured] + [{"status": {
        "status": "WARN", "totallag": 2**40, "partitions": [
            {"topic": "t", "partition": 0, "owner": "", "client_id": "", "status": "OK",
             "start": None, "end": {"offset": 5, "timestamp": T0, "observedAt": None,
                                    "lag": None}, "current_lag": 2**40, "complete": 1}]}}]
    for body in bodies:
        status = body["status"]
        group = parse.parse_group_lag(body, status.get("cluster", "c"), status.get("group", "g"))
        assert len(group.partitions) == len(status["partitions"]) and not group.rejected
