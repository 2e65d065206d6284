"""Burrow misbehaving, with the exporter running as a real process and scraped over HTTP.

Each fault: what /metrics serves while it lasts (the cluster is reported down, its per-consumer
series are gone, last_success stops advancing, the error is counted), and that the first cycle
started after the fault ended publishes correct values again.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devstack import RealStack
from devstack.exporter import ExporterProcess
from devstack.exporter_config import cluster_entry
from devstack.scrape import (
    BURROW_ERRORS,
    DURATION,
    FAILURES,
    FRESHNESS,
    GROUP_FRESHNESS,
    PARTITIONS,
    Scrape,
)
from freshness_tracker import metrics
from tests.faults.harness import (
    CLUSTER,
    Record,
    Rig,
    describe_recovery,
    fault_config,
    fault_rig,
    groups_regex,
    seed,
)
from tests.support.fake_burrow import ANY, CLUSTERS, LAG, Fault, lag_path

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

FREQUENCY = 1.0
BURROW_TIMEOUT = 1.0
RETRIES = 1
#: The longest a failing cycle can take here: every attempt times out, plus the backoff.
WORST_CYCLE_S = BURROW_TIMEOUT * (RETRIES + 1) + 0.5
#: Fault end -> correct values: the in-flight cycle, the pause, one healthy cycle, and slack for
#: a loaded 2-core machine.
RECOVERY_BUDGET_S = WORST_CYCLE_S + FREQUENCY + 1.0 + 3.0
#: Fault start -> the fault shows in /metrics: a failing cycle, the pause, and slack.
SEEN_S = WORST_CYCLE_S + FREQUENCY + 10


@pytest.fixture(scope="module")
def rig(fault_stack: RealStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with fault_rig(fault_stack, tmp_path_factory.mktemp("burrow-faults"), "bf", exporter=True,
                   frequency=FREQUENCY, burrow_timeout=f"{BURROW_TIMEOUT:g}s",
                   retries=RETRIES) as rig:
        yield rig


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
    down = e.wait_for(lambda sc: sc.up(CLUSTER) == 0, SEEN_S, "the cluster to be reported down")
    detect_s = time.monotonic() - began
    frozen = down.last_success(CLUSTER)
    assert down.consumer_series(CLUSTER) == 0, "a failed cycle left per-consumer series behind"
    later = e.wait_cycles(CLUSTER, cycles, cycles * (WORST_CYCLE_S + FREQUENCY) + 10)
    assert later.up(CLUSTER) == 0
    assert later.consumer_series(CLUSTER) == 0
    assert later.last_success(CLUSTER) == frozen, "last_success advanced while failing"
    assert frozen is not None and frozen >= (baseline.last_success(CLUSTER) or 0)
    errors = later.increase(BURROW_ERRORS, baseline, cluster=CLUSTER)
    assert errors >= 1, "the Burrow failure was not counted"
    status, body = e.get("/healthz")
    assert status == 200, "Burrow being down must not fail liveness (no restart loop)"
    error = json.loads(body)["clusters"][CLUSTER]["error"] or ""
    assert error, "/healthz does not say what is wrong"
    return Blackout(detect_s, baseline.consumer_series(CLUSTER), errors, frozen, cycles, error)


MEASURED = metrics.GROUP_MEASURED.name


def unmeasured_only(sc: Scrape, consumer: str) -> bool:
    """The group stays listed as unmeasured (measured 0, Burrow status -1) and serves no
    value: a group whose answer cannot be used never vanishes unseen."""
    return (sc.get(MEASURED, cluster=CLUSTER, consumer=consumer) == 0
            and sc.get(metrics.GROUP_STATUS.name, cluster=CLUSTER,
                       consumer=consumer) == -1
            and sc.consumer_series(CLUSTER, consumer) == 2)


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
def test_whole_cluster_burrow_fault(rig: Rig, record: Record, kind: str) -> None:
    fault, how = WHOLE_CLUSTER_FAULTS[kind]
    baseline = rig.healthy()
    began = time.monotonic()
    with rig.burrow.faulted(ANY, fault):
        blackout = observe_blackout(rig, baseline, began)
        durations = rig.exporter.scrape().get(DURATION, cluster=CLUSTER) or 0.0
        assert durations <= WORST_CYCLE_S + 1.5, f"a failing cycle took {durations} s"
    record(
        "Burrow", TITLES[kind], how,
        during_text(blackout) + (f"; failing cycle bounded at {durations:.1f} s"
                                 if kind in TIMED else ""),
        "correct freshness for both groups again",
        rig.recovery(blackout.last_success, RECOVERY_BUDGET_S))


def test_group_404_notfound(rig: Rig, record: Record) -> None:
    s = rig.seeded
    baseline = rig.healthy()
    before = baseline.consumer_series(CLUSTER, s.other)
    with rig.burrow.faulted(lag_path(CLUSTER, s.other), Fault.not_found()):
        gone = rig.exporter.wait_for(lambda sc: sc.consumer_series(CLUSTER, s.other) == 0,
                                     SEEN_S, "the 404 group to vanish")
        now = rig.exporter.scrape()
        assert gone.up(CLUSTER) == 1, "one vanished group must not fail the cluster"
        assert gone.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
        errors = now.increase(BURROW_ERRORS, baseline, cluster=CLUSTER)
        assert errors == 0, "a 404 is an answer, not an error"
        assert len(rig.burrow.requests(lag_path(CLUSTER, s.other))) >= 1
        later = rig.exporter.wait_cycles(CLUSTER, 2, 20)
        assert later.consumer_series(CLUSTER, s.other) == 0
        assert later.last_success(CLUSTER) > (baseline.last_success(CLUSTER) or 0)
    record(
        "Burrow", "a group 404 NOTFOUND",
        "`/lag` of one of two groups answers 404 with Burrow's NOTFOUND body",
        f"that group's {before} series removed next cycle; the other group keeps fresh values; "
        f"`cluster_up` stays 1 and `last_success` advances; not counted as a Burrow error "
        f"(404 is never retried)",
        "the group's series return", rig.recovery(None, RECOVERY_BUDGET_S))


def test_one_group_slow_only_that_group_blanks(rig: Rig, record: Record) -> None:
    s = rig.seeded
    baseline = rig.healthy()
    with rig.burrow.faulted(lag_path(CLUSTER, s.other), Fault.delay(BURROW_TIMEOUT + 2.0)):
        gone = rig.exporter.wait_for(lambda sc: unmeasured_only(sc, s.other),
                                     SEEN_S, "the slow group to be unmeasured")
        assert gone.up(CLUSTER) == 1
        assert gone.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
        later = rig.exporter.wait_cycles(CLUSTER, 2, 20)
        assert unmeasured_only(later, s.other)
        errors = later.increase(BURROW_ERRORS, baseline, cluster=CLUSTER)
        assert errors >= 2
    record(
        "Burrow", "one group's /lag slower than the timeout",
        f"`/lag` of one of two groups delayed {BURROW_TIMEOUT + 2.0:g} s",
        f"that group's values removed (no old value), the group listed unmeasured "
        f"(`kafka_consumer_group_measured` 0, Burrow status -1); the other group keeps fresh "
        f"values and `cluster_up` 1; `burrow_errors_total` +{errors:g}",
        "the group's series return", rig.recovery(None, RECOVERY_BUDGET_S))


def test_cluster_vanishes_from_v3_kafka(rig: Rig, record: Record) -> None:
    baseline = rig.healthy()
    began = time.monotonic()
    with rig.burrow.faulted(CLUSTERS, Fault.hide_clusters(CLUSTER)):
        blackout = observe_blackout(rig, baseline, began)
        assert CLUSTER in blackout.error and "does not list" in blackout.error
    record(
        "Burrow", "a cluster vanishes from /v3/kafka",
        "`/v3/kafka` answers without the configured cluster", during_text(blackout),
        "the cluster is measured again", rig.recovery(blackout.last_success, RECOVERY_BUDGET_S))


def test_burrow_killed_mid_cycle(rig: Rig, record: Record) -> None:
    """A `/lag` request is parked in flight; the real Burrow is stopped; the request then finds
    it dead and its connection is dropped with no answer, as a killed Burrow's would be."""
    baseline = rig.healthy()
    rig.burrow.park_lag()
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
    record(
        "Burrow", "killed mid-cycle",
        "a `/lag` request held in flight, the real Burrow process stopped, the request then "
        "dropped without an answer; Burrow restarted later",
        during_text(blackout),
        "values return once Burrow serves the groups' lag again (Burrow rereads "
        "`__consumer_offsets` after its restart)",
        rig.recovery(blackout.last_success, RECOVERY_BUDGET_S))


def test_burrow_down_at_start(fault_stack: RealStack, record: Record, tmp_path: Path) -> None:
    """The exporter starts while Burrow is stopped (pointed straight at the real Burrow)."""
    seeded = seed(fault_stack, "bd")
    fault_stack.stop_burrow()
    config = fault_config(
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
    record(
        "Burrow", "down at start", "the exporter starts while Burrow is stopped",
        f"the process stays up and serves; `cluster_up` 0, no per-consumer series, no "
        f"`last_success` sample at all (never succeeded); `burrow_errors_total` {errors:g} after "
        f"3 cycles; /healthz {health_status}, /readyz {ready_status} (a cycle was published)",
        "exact freshness once Burrow serves the groups", describe_recovery(cycles, seconds))


ONE_GROUP_FAULTS = {
    "gzip-bomb": (Fault.gzip_bomb(1 << 30), "`/lag` of one of two groups is 1 MB of gzip that "
                  "expands to 1 GiB"),
    "deep-json": (Fault.body("[" * 1500 + "]" * 1500, content_type="application/json"),
                  "`/lag` of one of two groups is JSON nested 1,500 deep"),
}


@pytest.mark.parametrize("kind", list(ONE_GROUP_FAULTS))
def test_one_hostile_group_body_costs_that_group_only(rig: Rig, record: Record, kind: str) -> None:
    import psutil

    fault, how = ONE_GROUP_FAULTS[kind]
    s = rig.seeded
    baseline = rig.healthy()
    assert rig.exporter.proc is not None
    process = psutil.Process(rig.exporter.proc.pid)
    peak_rss = process.memory_info().rss
    with rig.burrow.faulted(lag_path(CLUSTER, s.other), fault):
        def measured_without_other(sc: Scrape) -> bool:
            return (unmeasured_only(sc, s.other)
                    and sc.freshness(CLUSTER, s.lagging, s.topic, 0) is not None)

        gone = rig.exporter.wait_for(measured_without_other, SEEN_S,
                                     "the hostile group to vanish alone")
        assert gone.up(CLUSTER) == 1, "one group's body took the cluster down"
        for _ in range(3):
            later = rig.exporter.wait_cycles(CLUSTER, 1, 20)
            peak_rss = max(peak_rss, process.memory_info().rss)
        assert unmeasured_only(later, s.other)
        assert later.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
        errors = later.increase(BURROW_ERRORS, baseline, cluster=CLUSTER)
        assert errors >= 2, "the hostile body was not counted as a Burrow error"
        assert peak_rss < 300 * 2**20, f"RSS reached {peak_rss / 2**20:.0f} MiB"
        assert "cycle crashed" not in rig.exporter.log()
    record(
        "Burrow", {"gzip-bomb": "a decompression bomb", "deep-json": "JSON nested 1,500 deep"}[
            kind], how,
        f"that group's values removed, the group listed unmeasured "
        f"(`kafka_consumer_group_measured` 0), the other group measured and `cluster_up` 1; "
        f"`burrow_errors_total` +{errors:g}; exporter RSS peak {peak_rss / 2**20:.0f} MiB "
        "(bodies are decoded by the exporter, bounded by `burrow.maxResponseBytes`)",
        "the group's series return", rig.recovery(None, RECOVERY_BUDGET_S))


# --- impossible input: one bad name, entry or value costs only itself -------------------------

INVALID_INPUTS = metrics.INVALID_INPUTS.total
GROUP_UNMEASURED = metrics.GROUP_UNMEASURED.name


def consumer_list_path(cluster: str) -> str:
    return rf"^/v3/kafka/{re.escape(cluster)}/consumer$"


def _first_partition(body: Any) -> dict[str, Any]:
    partition: dict[str, Any] = body["status"]["partitions"][0]
    return partition


def _counted(rig: Rig, baseline: Scrape, cycles: int = 2) -> tuple[Scrape, float, float]:
    """After ``cycles`` more cycles under the fault: (scrape, invalid inputs counted, Burrow
    errors counted) since the baseline. Every scrape on the way answered 200."""
    later = rig.exporter.wait_cycles(CLUSTER, cycles, cycles * (WORST_CYCLE_S + FREQUENCY) + 10)
    invalid = later.increase(INVALID_INPUTS, baseline, cluster=CLUSTER)
    errors = later.increase(BURROW_ERRORS, baseline, cluster=CLUSTER)
    return later, invalid, errors


def _lines(scrape: Scrape, family: str, **labels: Any) -> int:
    """Raw exposition lines of ``family`` with these labels (a dict of samples would hide a
    series exported twice)."""
    wanted = [f'{k}="{v}"' for k, v in labels.items()]
    return sum(1 for line in scrape.text.splitlines()
               if line.startswith(family + "{") and all(w in line for w in wanted))


def test_a_lone_surrogate_topic_costs_its_partition_never_metrics(rig: Rig, record: Record) -> None:
    s = rig.seeded
    baseline = rig.healthy()
    unmeasured = baseline.get(GROUP_UNMEASURED, cluster=CLUSTER, consumer=s.other) or 0

    def add_odd_topic(body: Any) -> None:
        body["status"]["partitions"].append({**_first_partition(body), "topic": "t\udc80x"})

    with rig.burrow.faulted(lag_path(CLUSTER, s.other), Fault.rewrite(add_odd_topic)):
        rig.exporter.wait_for(
            lambda sc: sc.get(GROUP_UNMEASURED, cluster=CLUSTER,
                              consumer=s.other) == unmeasured + 1,
            SEEN_S, "the odd partition to be counted unmeasured")
        later, invalid, errors = _counted(rig, baseline)  # every scrape answered 200
        assert later.up(CLUSTER) == 1
        rig.assert_exact(later)  # both groups' real partitions are still measured
        assert later.get(GROUP_FRESHNESS, cluster=CLUSTER, consumer=s.other) is None
        assert invalid >= 2 and errors == 0
        assert any("'t\\udc80x'" in m for m in rig.exporter.messages()), \
            "the name is not logged escaped"
    record(
        "Burrow", "a topic name with a lone surrogate",
        "one group's real `/lag` answer plus a partition of topic `\"t\\udc80x\"` (a JSON "
        "escape that is no UTF-8)",
        f"`/metrics` answers 200 on every scrape (it used to answer 500 for every cluster); that "
        f"partition is dropped: the group's real partition keeps its exact freshness, its "
        f"unmeasured partitions {unmeasured:g} → {unmeasured + 1:g} and its max withheld; "
        f"`cluster_up` 1; `invalid_inputs_total` +{invalid:g}, "
        f"`burrow_errors_total` +{errors:g}; logged escaped as `'t\\udc80x'`",
        "the group's max freshness returns",
        rig.recovery(None, RECOVERY_BUDGET_S, lambda sc: sc.get(
            GROUP_FRESHNESS, cluster=CLUSTER, consumer=s.other) is not None))


def test_unusable_consumer_list_entries_cost_only_themselves(rig: Rig, record: Record) -> None:
    baseline = rig.healthy()
    odd: list[Any] = ["", "g\udc80x", 7, None]

    def add_odd_names(body: Any) -> None:
        body["consumers"] = odd + list(body["consumers"])

    with rig.burrow.faulted(consumer_list_path(CLUSTER), Fault.rewrite(add_odd_names)):
        later, invalid, errors = _counted(rig, baseline, cycles=3)
        assert later.up(CLUSTER) == 1, "an empty name in the consumer list took the cluster down"
        rig.assert_exact(later)
        assert invalid >= 2 * len(odd) and errors == 0
        assert "consumer-list entry '' is empty" in rig.exporter.log()
        asked = {seen.path for seen in rig.burrow.requests(LAG)}
        assert not any("udc80" in p.lower() or p.endswith("consumer//lag") for p in asked)
    record(
        "Burrow", "empty, non-UTF-8 and non-string consumer-list entries",
        '`/consumer` lists `""`, `"g\\udc80x"`, `7` and `null` before the real groups',
        f"those entries dropped and never asked for; both real groups measured with exact "
        f"freshness and `cluster_up` 1 (an empty name used to take the cluster down); "
        f"`invalid_inputs_total` +{invalid:g} over 3 cycles, `burrow_errors_total` +{errors:g}",
        "nothing was lost: exact values throughout", rig.recovery(None, RECOVERY_BUDGET_S))


def test_a_partition_listed_three_times_is_one_series(rig: Rig, record: Record) -> None:
    s = rig.seeded
    baseline = rig.healthy()
    real_lag = baseline.get(metrics.TOPIC_OFFSET_LAG.name, cluster=CLUSTER, consumer=s.other,
                            topic=s.topic)

    def repeat(body: Any) -> None:
        body["status"]["partitions"] = body["status"]["partitions"] * 3

    with rig.burrow.faulted(lag_path(CLUSTER, s.other), Fault.rewrite(repeat)):
        later, invalid, errors = _counted(rig, baseline)
        assert later.up(CLUSTER) == 1
        assert _lines(later, FRESHNESS, consumer=s.other, partition=0) == 1
        lag = later.get(metrics.TOPIC_OFFSET_LAG.name, cluster=CLUSTER, consumer=s.other,
                        topic=s.topic)
        assert lag == real_lag == 2, "the topic roll-up counted a repeated partition again"
        assert later.get(metrics.GROUP_OFFSET_LAG.name, cluster=CLUSTER,
                         consumer=s.other) == 2
        rig.assert_exact(later)
        assert invalid >= 4 and errors == 0
    record(
        "Burrow", "a partition listed three times",
        "one group's real `/lag` answer with its partition entries repeated three times",
        f"one series per partition (the first entry is used), topic and group offset lag "
        f"{lag:g} (not {3 * (real_lag or 0):g}); exact freshness; `cluster_up` 1; "
        f"`invalid_inputs_total` +{invalid:g}",
        "nothing was wrong: exact values throughout", rig.recovery(None, RECOVERY_BUDGET_S))


def test_a_negative_lag_is_unmeasured_never_caught_up(rig: Rig, record: Record) -> None:
    s = rig.seeded
    baseline = rig.healthy()
    unmeasured = baseline.get(GROUP_UNMEASURED, cluster=CLUSTER, consumer=s.other) or 0

    def negative(body: Any) -> None:
        _first_partition(body)["current_lag"] = -3

    labels = {"cluster": CLUSTER, "consumer": s.other, "topic": s.topic, "partition": 0}
    with rig.burrow.faulted(lag_path(CLUSTER, s.other), Fault.rewrite(negative)):
        bad = rig.exporter.wait_for(lambda sc: sc.get(FRESHNESS, **labels) is None,
                                    SEEN_S, "the freshness to go")
        later, invalid, errors = _counted(rig, baseline)
        for sc in (bad, later):
            assert sc.get(FRESHNESS, **labels) is None, "a negative lag was called caught up"
            assert sc.get(metrics.OFFSET_LAG.name, **labels) is None
            assert sc.get(metrics.COMMITTED.name, **labels) == 8
            assert sc.get(PARTITIONS, cluster=CLUSTER, status="invalid") == 1
            assert sc.get(GROUP_UNMEASURED, cluster=CLUSTER,
                          consumer=s.other) == unmeasured + 1
            assert sc.get(GROUP_FRESHNESS, cluster=CLUSTER, consumer=s.other) is None
            assert sc.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
        assert later.up(CLUSTER) == 1 and invalid >= 2 and errors == 0
    record(
        "Burrow", "a negative current_lag",
        "one group's real `/lag` answer with `current_lag` -3 (it used to export freshness 0, "
        "no read, while records were unread)",
        f"that partition `invalid`: no freshness, offset lag or commit lag, committed offset "
        f"8 kept, `cluster_partitions{{status=\"invalid\"}}` 1, the group's unmeasured "
        f"partitions {unmeasured:g} → {unmeasured + 1:g} and its max withheld; the other "
        f"group exact; `cluster_up` 1; "
        f"`invalid_inputs_total` +{invalid:g}",
        "exact freshness again", rig.recovery(None, RECOVERY_BUDGET_S, lambda sc: sc.get(
            GROUP_FRESHNESS, cluster=CLUSTER, consumer=s.other) is not None))


def test_an_absurd_commit_timestamp_gives_no_commit_lag(rig: Rig, record: Record) -> None:
    s = rig.seeded
    labels = {"cluster": CLUSTER, "consumer": s.other, "topic": s.topic, "partition": 0}
    baseline = rig.exporter.wait_for(
        lambda sc: sc.get(metrics.COMMIT_LAG.name, **labels) is not None
        and sc.up(CLUSTER) == 1, 30, "a commit lag for the group")

    def far_future(body: Any) -> None:
        _first_partition(body)["end"]["timestamp"] = 99_999_999_999_999_999

    with rig.burrow.faulted(lag_path(CLUSTER, s.other), Fault.rewrite(far_future)):
        rig.exporter.wait_for(lambda sc: sc.get(metrics.COMMIT_LAG.name, **labels) is None,
                              SEEN_S, "the commit lag to go")
        later, invalid, errors = _counted(rig, baseline)
        assert later.get(metrics.COMMIT_LAG.name, **labels) is None
        biggest = max(v for (name, _), v in later.samples.items()
                      if name.startswith("kafka_consumer_"))
        assert biggest < 10**12, f"an impossible number was exported: {biggest:g}"
        rig.assert_exact(later)  # freshness does not use the commit time
        assert later.up(CLUSTER) == 1 and invalid >= 2 and errors == 0
    record(
        "Burrow", "a commit timestamp 3 million years ahead",
        "one group's real `/lag` answer with `end.timestamp` 99999999999999999 (it used to "
        "export `commit_lag_ms` 9.99e16)",
        f"no commit lag for that partition (a commit time before 2000 or more than a day ahead "
        f"is impossible); exact freshness for both groups; largest per-consumer value "
        f"{biggest:g}; `cluster_up` 1; `invalid_inputs_total` +{invalid:g}",
        "the commit lag returns", rig.recovery(None, RECOVERY_BUDGET_S, lambda sc: sc.get(
            metrics.COMMIT_LAG.name, **labels) is not None))


def test_every_group_gone_is_a_failed_cluster(rig: Rig, record: Record) -> None:
    baseline = rig.healthy()
    began = time.monotonic()
    with rig.burrow.faulted(LAG, Fault.not_found()):
        down = rig.exporter.wait_for(lambda sc: sc.up(CLUSTER) == 0,
                                     SEEN_S, "the cluster to be down")
        detect_s = time.monotonic() - began
        frozen = down.last_success(CLUSTER)
        later = rig.exporter.wait_cycles(CLUSTER, 2, 2 * (WORST_CYCLE_S + FREQUENCY) + 10)
        assert later.up(CLUSTER) == 0 and later.consumer_series(CLUSTER) == 0
        assert later.last_success(CLUSTER) == frozen, "last_success advanced with no group"
        failures = later.increase(FAILURES, baseline, cluster=CLUSTER)
        assert failures >= 2
        status, body = rig.exporter.get("/healthz")
        error = json.loads(body)["clusters"][CLUSTER]["error"] or ""
        assert status == 200 and "none could be measured" in error, error
    record(
        "Burrow", "every group's /lag answers 404",
        "`/consumer` lists the groups, every `/lag` answers Burrow's 404 NOTFOUND (it used to "
        "leave `cluster_up` 1 with 0 groups and no warning)",
        f"`cluster_up` 0 after {detect_s:.1f} s, no per-consumer series, `last_success` frozen, "
        f"`cycle_failures_total` +{failures:g}; /healthz 200 with error “{_short(error)}”",
        "correct freshness for both groups again", rig.recovery(frozen, RECOVERY_BUDGET_S))
