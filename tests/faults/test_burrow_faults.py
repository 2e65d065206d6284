"""Burrow misbehaving, with the exporter running as a real process and scraped over HTTP.

Each fault: what /metrics serves while it lasts (the cluster is reported down, its per-consumer
series are gone, last_success stops advancing, the error is counted), and that the first cycle
started after the fault ended publishes correct values again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from freshness_tracker.devstack import LocalStack
from tests.faults.conftest import Seeded, groups_regex, seed
from tests.faults.fake_burrow_server import ANY, CLUSTERS, LAG, Fault, FaultyBurrow, lag_path
from tests.faults.harness import (
    BURROW_ERRORS,
    DURATION,
    ExporterProcess,
    Matrix,
    Observation,
    Scrape,
    cluster_entry,
    describe_recovery,
    exporter_config,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

CLUSTER = "local"
FREQUENCY = 1.0
BURROW_TIMEOUT = 1.0
RETRIES = 1
#: The longest a failing cycle can take here: every attempt times out, plus tenacity's backoff.
WORST_CYCLE_S = BURROW_TIMEOUT * (RETRIES + 1) + 0.5
#: Fault end -> correct values: the in-flight cycle, the pause, one healthy cycle, and slack for
#: a loaded 2-core machine.
RECOVERY_BUDGET_S = WORST_CYCLE_S + FREQUENCY + 1.0 + 3.0


@dataclass
class Rig:
    stack: LocalStack
    seeded: Seeded
    burrow: FaultyBurrow
    exporter: ExporterProcess


@pytest.fixture(scope="module")
def rig(fault_stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    seeded = seed(fault_stack, "bf")
    burrow = FaultyBurrow(fault_stack.burrow_url).start()
    config = exporter_config(
        burrow_url=burrow.url, clusters=[cluster_entry(CLUSTER, fault_stack.bootstrap_servers)],
        frequency=FREQUENCY, burrow_timeout=f"{BURROW_TIMEOUT:g}s", retries=RETRIES,
        groups_allow=groups_regex("bf"))
    exporter = ExporterProcess(tmp_path_factory.mktemp("burrow-faults"), config).start()
    try:
        yield Rig(fault_stack, seeded, burrow, exporter)
    finally:
        exporter.stop()
        burrow.stop()


def healthy(rig: Rig) -> Scrape:
    """Wait for a cycle with both groups measured; the baseline of every test."""
    s = rig.seeded

    def good(scrape: Scrape) -> bool:
        return (scrape.up(CLUSTER) == 1
                and scrape.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
                and scrape.freshness(CLUSTER, s.other, s.topic, 0) is not None)

    return rig.exporter.wait_for(good, 30, "a healthy cycle with both groups")


def assert_fresh_values(rig: Rig, scrape: Scrape) -> None:
    """The served freshness is the real age of the record at the committed offset (±3 s)."""
    s = rig.seeded
    for group in s.groups:
        value = scrape.freshness(CLUSTER, group, s.topic, 0)
        assert value is not None
        error = abs(value - s.expected_freshness_ms(group))
        assert error < 3_000 + FREQUENCY * 1000, (group, value)


@dataclass
class Blackout:
    detect_s: float
    served_before: int
    burrow_errors: float
    last_success: float | None
    cycles_observed: int
    error: str


def observe_blackout(rig: Rig, baseline: Scrape, began: float, cycles: int = 2) -> Blackout:
    """While a whole-cluster fault lasts: down, nothing per-consumer served, last_success frozen."""
    e = rig.exporter
    down = e.wait_for(lambda sc: sc.up(CLUSTER) == 0, WORST_CYCLE_S + FREQUENCY + 10,
                      "the cluster to be reported down")
    detect_s = time.monotonic() - began
    frozen = down.last_success(CLUSTER)
    assert down.consumer_series(CLUSTER) == 0, "a failed cycle left per-consumer series behind"
    later = e.wait_cycles(CLUSTER, cycles, cycles * (WORST_CYCLE_S + FREQUENCY) + 10)
    assert later.up(CLUSTER) == 0
    assert later.consumer_series(CLUSTER) == 0
    assert later.last_success(CLUSTER) == frozen, "last_success advanced while failing"
    assert frozen is not None and frozen >= (baseline.last_success(CLUSTER) or 0)
    errors = (later.get(BURROW_ERRORS, cluster=CLUSTER) or 0) - \
        (baseline.get(BURROW_ERRORS, cluster=CLUSTER) or 0)
    assert errors >= 1, "the Burrow failure was not counted"
    status, body = e.get("/healthz")
    assert status == 200, "Burrow being down must not fail liveness (no restart loop)"
    error = json.loads(body)["clusters"][CLUSTER]["error"] or ""
    assert error, "/healthz does not say what is wrong"
    return Blackout(detect_s, baseline.consumer_series(CLUSTER), errors, frozen, cycles, error)


def observe_recovery(rig: Rig, frozen: float | None) -> tuple[int, float]:
    """From the fault's end: the first cycle started afterwards serves correct values."""
    e = rig.exporter
    began = time.monotonic()
    c0 = e.scrape().cycles(CLUSTER)
    s = rig.seeded

    def recovered(sc: Scrape) -> bool:
        return (sc.up(CLUSTER) == 1 and (sc.last_success(CLUSTER) or 0) > (frozen or 0)
                and sc.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
                and sc.freshness(CLUSTER, s.other, s.topic, 0) is not None)

    scrape = e.wait_for(recovered, RECOVERY_BUDGET_S + 5, "recovery after the fault ended")
    seconds = time.monotonic() - began
    cycles = scrape.cycles(CLUSTER) - c0
    assert cycles <= 2, f"recovery took {cycles} cycles after the fault ended"
    assert seconds <= RECOVERY_BUDGET_S, f"recovery took {seconds:.1f} s"
    assert_fresh_values(rig, scrape)
    return cycles, seconds


def during_text(b: Blackout) -> str:
    return (f"`cluster_up` 0 after {b.detect_s:.1f} s; per-consumer series {b.served_before} → 0; "
            f"`last_success` frozen over {b.cycles_observed} more cycles; "
            f"`burrow_errors_total` +{b.burrow_errors:g}; /healthz 200 with error "
            f"“{_short(b.error)}”")


def _short(text: str, n: int = 90) -> str:
    text = text.replace("|", "/").replace("\n", " ")
    return text if len(text) <= n else text[: n - 1] + "…"


WHOLE_CLUSTER_FAULTS = {
    "slow": (Fault.delay(BURROW_TIMEOUT + 2.0),
             f"every response delayed {BURROW_TIMEOUT + 2.0:g} s (burrow.timeout "
             f"{BURROW_TIMEOUT:g} s, retries {RETRIES})"),
    "http-500": (Fault.status(500), "every request answered HTTP 500"),
    "html": (Fault.body("<html><body><h1>502 Bad Gateway</h1></body></html>"),
             "every request answered 200 with an HTML error page"),
    "truncated-json": (Fault.truncated(),
                       "every real answer cut in half (valid HTTP, broken JSON)"),
    "drip-body": (Fault.drip(0.2), "headers at once, then the body one byte every 0.2 s "
                  f"(each read well inside burrow.timeout {BURROW_TIMEOUT:g} s)"),
    "drip-headers": (Fault.drip_headers(0.2), "the status line and headers one byte every "
                     "0.2 s"),
    "silent": (Fault.silent(), "the request is accepted and never answered"),
}
TITLES = {"slow": "slow (slower than burrow.timeout)", "http-500": "HTTP 500",
          "html": "HTML body", "truncated-json": "truncated JSON",
          "drip-body": "a body dripped byte by byte (slow loris)",
          "drip-headers": "headers dripped byte by byte", "silent": "accepts, never answers"}
#: Faults whose point is the bound on a failing cycle: report it in the matrix.
TIMED = {"slow", "drip-body", "drip-headers", "silent"}


@pytest.mark.parametrize("kind", list(WHOLE_CLUSTER_FAULTS))
def test_whole_cluster_burrow_fault(rig: Rig, matrix: Matrix, kind: str,
                                   request: pytest.FixtureRequest) -> None:
    fault, how = WHOLE_CLUSTER_FAULTS[kind]
    baseline = healthy(rig)
    began = time.monotonic()
    rig.burrow.add(ANY, fault)
    try:
        blackout = observe_blackout(rig, baseline, began)
        durations = rig.exporter.scrape().get(DURATION, cluster=CLUSTER) or 0.0
        assert durations <= WORST_CYCLE_S + 1.5, f"a failing cycle took {durations} s"
    finally:
        rig.burrow.clear()
    cycles, seconds = observe_recovery(rig, blackout.last_success)
    matrix.record(Observation(
        "Burrow", TITLES[kind], how,
        during_text(blackout) + (f"; failing cycle bounded at {durations:.1f} s"
                                 if kind in TIMED else ""),
        "correct freshness for both groups again", describe_recovery(cycles, seconds),
        request.node.nodeid))


def test_group_404_notfound(rig: Rig, matrix: Matrix, request: pytest.FixtureRequest) -> None:
    s = rig.seeded
    baseline = healthy(rig)
    before = baseline.consumer_series(CLUSTER, s.other)
    rig.burrow.add(lag_path(CLUSTER, s.other), Fault.not_found())
    try:
        gone = rig.exporter.wait_for(lambda sc: sc.consumer_series(CLUSTER, s.other) == 0,
                                     WORST_CYCLE_S + FREQUENCY + 10, "the 404 group to vanish")
        now = rig.exporter.scrape()
        assert gone.up(CLUSTER) == 1, "one vanished group must not fail the cluster"
        assert gone.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
        errors = (now.get(BURROW_ERRORS, cluster=CLUSTER) or 0) - \
            (baseline.get(BURROW_ERRORS, cluster=CLUSTER) or 0)
        assert errors == 0, "a 404 is an answer, not an error"
        assert len(rig.burrow.requests(lag_path(CLUSTER, s.other))) >= 1
        later = rig.exporter.wait_cycles(CLUSTER, 2, 20)
        assert later.consumer_series(CLUSTER, s.other) == 0
        assert later.last_success(CLUSTER) > (baseline.last_success(CLUSTER) or 0)
    finally:
        rig.burrow.clear()
    cycles, secs = observe_recovery(rig, None)
    matrix.record(Observation(
        "Burrow", "a group 404 NOTFOUND",
        "`/lag` of one of two groups answers 404 with Burrow's NOTFOUND body",
        f"that group's {before} series removed next cycle; the other group keeps fresh values; "
        f"`cluster_up` stays 1 and `last_success` advances; not counted as a Burrow error "
        f"(404 is never retried)",
        "the group's series return", describe_recovery(cycles, secs), request.node.nodeid))


def test_one_group_slow_only_that_group_blanks(rig: Rig, matrix: Matrix,
                                               request: pytest.FixtureRequest) -> None:
    s = rig.seeded
    baseline = healthy(rig)
    rig.burrow.add(lag_path(CLUSTER, s.other), Fault.delay(BURROW_TIMEOUT + 2.0))
    try:
        gone = rig.exporter.wait_for(lambda sc: sc.consumer_series(CLUSTER, s.other) == 0,
                                     WORST_CYCLE_S + FREQUENCY + 10, "the slow group to vanish")
        assert gone.up(CLUSTER) == 1
        assert gone.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
        later = rig.exporter.wait_cycles(CLUSTER, 2, 20)
        assert later.consumer_series(CLUSTER, s.other) == 0
        errors = (later.get(BURROW_ERRORS, cluster=CLUSTER) or 0) - \
            (baseline.get(BURROW_ERRORS, cluster=CLUSTER) or 0)
        assert errors >= 2
    finally:
        rig.burrow.clear()
    cycles, secs = observe_recovery(rig, None)
    matrix.record(Observation(
        "Burrow", "one group's /lag slower than the timeout",
        f"`/lag` of one of two groups delayed {BURROW_TIMEOUT + 2.0:g} s",
        f"that group's series removed (no old value); the other group keeps fresh values and "
        f"`cluster_up` 1; `burrow_errors_total` +{errors:g}",
        "the group's series return", describe_recovery(cycles, secs), request.node.nodeid))


def test_cluster_vanishes_from_v3_kafka(rig: Rig, matrix: Matrix,
                                        request: pytest.FixtureRequest) -> None:
    baseline = healthy(rig)
    began = time.monotonic()
    rig.burrow.add(CLUSTERS, Fault.hide_clusters(CLUSTER))
    try:
        blackout = observe_blackout(rig, baseline, began)
        assert CLUSTER in blackout.error and "does not list" in blackout.error
    finally:
        rig.burrow.clear()
    cycles, secs = observe_recovery(rig, blackout.last_success)
    matrix.record(Observation(
        "Burrow", "a cluster vanishes from /v3/kafka",
        "`/v3/kafka` answers without the configured cluster", during_text(blackout),
        "the cluster is measured again", describe_recovery(cycles, secs), request.node.nodeid))


def test_burrow_killed_mid_cycle(rig: Rig, matrix: Matrix,
                                 request: pytest.FixtureRequest) -> None:
    """A `/lag` request is parked in flight; the real Burrow is stopped; the request then finds
    it dead and its connection is dropped with no answer, as a killed Burrow's would be."""
    baseline = healthy(rig)
    rig.burrow.rearm()
    rig.burrow.add(LAG, Fault.hold())
    assert rig.burrow.hold_until(lambda: True, 15), "no /lag request arrived to park"
    began = time.monotonic()
    rig.stack.stop_burrow()
    rig.burrow.clear()  # the parked request proceeds into a dead Burrow
    try:
        blackout = observe_blackout(rig, baseline, began)
    finally:
        rig.stack.start_burrow()
    s = rig.seeded
    for group, offset, lag in ((s.lagging, 4, 6), (s.other, 8, 2)):
        rig.stack.wait_for_burrow_lag(group, s.topic, 0, offset, lag, timeout_s=60)
    cycles, secs = observe_recovery(rig, blackout.last_success)
    matrix.record(Observation(
        "Burrow", "killed mid-cycle",
        "a `/lag` request held in flight, the real Burrow process stopped, the request then "
        "dropped without an answer; Burrow restarted later",
        during_text(blackout),
        "values return once Burrow serves the groups' lag again (Burrow rereads "
        "`__consumer_offsets` after its restart)", describe_recovery(cycles, secs),
        request.node.nodeid))


def test_burrow_down_at_start(fault_stack: LocalStack, matrix: Matrix, tmp_path: Path,
                              request: pytest.FixtureRequest) -> None:
    """The exporter starts while Burrow is stopped (pointed straight at the real Burrow)."""
    seeded = seed(fault_stack, "bd")
    fault_stack.stop_burrow()
    config = exporter_config(
        burrow_url=fault_stack.burrow_url,
        clusters=[cluster_entry(CLUSTER, fault_stack.bootstrap_servers)],
        frequency=FREQUENCY, burrow_timeout=f"{BURROW_TIMEOUT:g}s", retries=RETRIES,
        groups_allow=groups_regex("bd"))
    exporter = ExporterProcess(tmp_path, config)
    try:
        exporter.start()
        down = exporter.wait_cycles(CLUSTER, 3, 30)
        assert down.up(CLUSTER) == 0
        assert down.consumer_series(CLUSTER) == 0
        assert down.last_success(CLUSTER) is None, "never succeeded, yet a last_success exists"
        errors = down.get(BURROW_ERRORS, cluster=CLUSTER) or 0
        assert errors >= 3
        health_status, _ = exporter.get("/healthz")
        ready_status, _ = exporter.get("/readyz")
        assert health_status == 200
        fault_stack.start_burrow()
        for group, offset, lag in ((seeded.lagging, 4, 6), (seeded.other, 8, 2)):
            fault_stack.wait_for_burrow_lag(group, seeded.topic, 0, offset, lag, timeout_s=60)
        began = time.monotonic()
        c0 = exporter.scrape().cycles(CLUSTER)
        up = exporter.wait_for(
            lambda sc: sc.up(CLUSTER) == 1 and sc.freshness(
                CLUSTER, seeded.lagging, seeded.topic, 0) is not None,
            RECOVERY_BUDGET_S + 5, "the first measurement after Burrow came up")
        seconds = time.monotonic() - began
        cycles = up.cycles(CLUSTER) - c0
        assert cycles <= 2 and seconds <= RECOVERY_BUDGET_S
        value = up.freshness(CLUSTER, seeded.lagging, seeded.topic, 0)
        assert value is not None
        assert abs(value - seeded.expected_freshness_ms(seeded.lagging)) < 4_000
        assert exporter.proc is not None and exporter.proc.poll() is None
    finally:
        if not (fault_stack.burrow and fault_stack.burrow.running):
            fault_stack.start_burrow()
        code, _ = exporter.stop()
    assert code == 0
    matrix.record(Observation(
        "Burrow", "down at start", "the exporter starts while Burrow is stopped",
        f"the process stays up and serves; `cluster_up` 0, no per-consumer series, no "
        f"`last_success` sample at all (never succeeded); `burrow_errors_total` {errors:g} after "
        f"3 cycles; /healthz {health_status}, /readyz {ready_status} (a cycle was published)",
        "exact freshness once Burrow serves the groups", describe_recovery(cycles, seconds),
        request.node.nodeid))


ONE_GROUP_FAULTS = {
    "gzip-bomb": (Fault.gzip_bomb(1 << 30), "`/lag` of one of two groups is 1 MB of gzip that "
                  "expands to 1 GiB"),
    "deep-json": (Fault.body("[" * 1500 + "]" * 1500, content_type="application/json"),
                  "`/lag` of one of two groups is JSON nested 1,500 deep"),
}


@pytest.mark.parametrize("kind", list(ONE_GROUP_FAULTS))
def test_one_hostile_group_body_costs_that_group_only(
        rig: Rig, matrix: Matrix, kind: str, request: pytest.FixtureRequest) -> None:
    import psutil

    fault, how = ONE_GROUP_FAULTS[kind]
    s = rig.seeded
    baseline = healthy(rig)
    assert rig.exporter.proc is not None
    process = psutil.Process(rig.exporter.proc.pid)
    rig.burrow.add(lag_path(CLUSTER, s.other), fault)
    peak_rss = process.memory_info().rss
    try:
        def measured_without_other(sc: Scrape) -> bool:
            return (sc.consumer_series(CLUSTER, s.other) == 0
                    and sc.freshness(CLUSTER, s.lagging, s.topic, 0) is not None)

        gone = rig.exporter.wait_for(measured_without_other, WORST_CYCLE_S + FREQUENCY + 10,
                                     "the hostile group to vanish alone")
        assert gone.up(CLUSTER) == 1, "one group's body took the cluster down"
        for _ in range(3):
            later = rig.exporter.wait_cycles(CLUSTER, 1, 20)
            peak_rss = max(peak_rss, process.memory_info().rss)
        assert later.consumer_series(CLUSTER, s.other) == 0
        assert later.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
        errors = (later.get(BURROW_ERRORS, cluster=CLUSTER) or 0) - \
            (baseline.get(BURROW_ERRORS, cluster=CLUSTER) or 0)
        assert errors >= 2, "the hostile body was not counted as a Burrow error"
        assert peak_rss < 300 * 2**20, f"RSS reached {peak_rss / 2**20:.0f} MiB"
        assert "cycle crashed" not in rig.exporter.log()
    finally:
        rig.burrow.clear()
    cycles, secs = observe_recovery(rig, None)
    matrix.record(Observation(
        "Burrow", {"gzip-bomb": "a decompression bomb", "deep-json": "JSON nested 1,500 deep"}[
            kind], how,
        f"that group's series removed, the other group measured and `cluster_up` 1; "
        f"`burrow_errors_total` +{errors:g}; exporter RSS peak {peak_rss / 2**20:.0f} MiB "
        "(bodies are decoded by the exporter, bounded by `burrow.maxResponseBytes`)",
        "the group's series return", describe_recovery(cycles, secs), request.node.nodeid))
