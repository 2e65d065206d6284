"""The comparison's pure parts (benchmarks/compare): reading each peer's exposition, scoring a
peer's samples against the ground truth, ratios. No peer binary is needed or started."""

from __future__ import annotations

import json
import math
import time
import tomllib
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.accuracy.analysis import (
    MethodScore,
    TimingShare,
    analyse_shape,
    exact_offsets_error_s,
    gauge_alert_parts_s,
    onset_windows,
    pool_delays,
    pool_scores,
    pool_timing,
    read_age_s,
    timing_share,
)
from benchmarks.accuracy.harness import HarnessConfig, ShapeRun, replica_shapes, scatter_cycles
from benchmarks.accuracy.sampler import Sample
from benchmarks.accuracy.shapes import Event, Shape
from benchmarks.accuracy.truth import TruthLog
from benchmarks.compare.__main__ import ALL_TOOLS, cost_label, load_costs
from benchmarks.compare.accuracy import (
    CompareShape,
    PeerSample,
    PeerSampler,
    offset_alert_delay,
    pool_shapes,
    pre_onset_rate,
    score_peer,
)
from benchmarks.compare.cost import api_totals, replication_for
from benchmarks.compare.exposition import parse_exposition
from benchmarks.compare.page import render
from benchmarks.compare.peers import klag_config, proc_cpu_s, proc_peak_rss_mib
from benchmarks.compare.stats import ratio, ratio_text

# Each tool's /metrics, trimmed to a few series (data/: klag-exporter 0.1.22 with
# granularity = "partition", kafka_exporter 1.9.0, ours).
DATA = Path(__file__).resolve().parent / "data"
KLAG = (DATA / "klag.prom").read_text()

OURS = (DATA / "ours.prom").read_text()

KAFKA_EXPORTER = (DATA / "kafka_exporter.prom").read_text()


def test_klag_exposition_gives_seconds_offsets_and_its_round() -> None:
    expo = parse_exposition(KLAG, "klag", cluster="local")
    assert expo.time_lag_s == {("g1", "t1", 0): 79.911, ("g1", "t1", 1): 0.0}
    assert expo.offset_lag == {("g1", "t1", 0): 7.0, ("g1", "t1", 1): 0.0}  # not "other"
    assert expo.round_seconds == 0.003  # this gauge has no cluster label
    assert expo.round_stamp == 1795635153
    assert expo.series == 8  # every sample line, the other cluster's too


def test_ours_exposition_is_converted_from_milliseconds() -> None:
    expo = parse_exposition(OURS, "ours", cluster="local")
    assert expo.time_lag_s == {("g1", "t1", 0): 75.836, ("g1", "t1", 1): 0.0}
    assert expo.offset_lag == {}  # not per partition by default
    assert expo.round_seconds == 0.005
    assert expo.round_stamp == pytest.approx(1795635149.544)


def test_kafka_exporter_has_offsets_only_and_no_round() -> None:
    expo = parse_exposition(KAFKA_EXPORTER, "kafka_exporter")
    assert expo.time_lag_s == {}
    assert expo.offset_lag == {("g1", "t1", 0): 7.0, ("g1", "t1", 1): 0.0}  # no sum series
    assert expo.round_seconds is None and expo.round_stamp is None


def test_klag_config_is_toml_with_the_mode_and_loopback_only() -> None:
    conf = tomllib.loads(klag_config("h1:9092,h2:9092", 9999, "message", 2.0, "^acc-", "^acc-"))
    assert conf["exporter"]["http_host"] == "127.0.0.1"
    assert conf["exporter"]["poll_interval"] == "2s"
    assert conf["exporter"]["granularity"] == "partition"
    assert conf["exporter"]["timestamp_sampling"]["mode"] == "message"
    assert conf["clusters"][0]["bootstrap_servers"] == "h1:9092,h2:9092"
    assert conf["clusters"][0]["group_whitelist"] == ["^acc-"]
    with pytest.raises(ValueError):
        klag_config("h:1", 1, "interpolate", 2.0, ".*", ".*")


# ---- scoring a peer against the ground truth ------------------------------------------------

T0 = 1_000_000_000_000.0


def _stuck_at_10() -> tuple[ShapeRun, HarnessConfig]:
    """A record every second from t=0; commits keep up until t=10 s, then stop: the truth is
    0 until t=10 and t − 10 after."""
    truth = TruthLog()
    for i in range(60):
        truth.produced(i, int(T0) + i * 1000)
    for i in range(10):
        truth.committed(int(T0) + i * 1000, i + 1)
    shape = Shape(
        "stuck",
        "stuck",
        "",
        tuple(float(i) for i in range(60)),
        ((0.0, 0.0), (10.0, None)),
        (Event("stall", "onset", 10.0),),
    )
    return ShapeRun(shape, "t", "g", truth, []), HarnessConfig(
        threshold_s=20.0, moment_window_s=5.0
    )


def test_a_peer_5_s_over_the_truth_scores_5_s_and_alerts_4_s_early() -> None:
    run, cfg = _stuck_at_10()
    res = analyse_shape(run, cfg, T0, T0 + 59_000, cycle_window_s=2.0)
    samples = []
    for i in range(60):
        t_ms = T0 + i * 1000
        truth = run.truth.freshness_ms(t_ms)
        assert truth is not None
        lag = run.truth.records_at(t_ms) - (run.truth.committed_offset(t_ms) or 0)
        samples.append(PeerSample(t_ms, truth / 1000 + 5.0, lag))
    score, t_s, values = score_peer(res, cfg, T0, T0 + 59_000, samples, "peer")
    assert len(t_s) == len(values) == 60
    assert score.mean_abs_s == pytest.approx(5.0)
    assert score.max_abs_s == pytest.approx(5.0)
    assert score.onset_s == pytest.approx(5.0)
    # value > 20 from t=26 (truth 16) while the truth stays below 20 until t=30
    assert score.false_alarm_s == 4.0
    assert score.alarm_delay_s == pytest.approx(-4.0)
    # offsets: lag = records − 10 exceeds 10 records from t=20, the truth crosses 20 s at t=30
    assert offset_alert_delay(res, cfg, T0, samples, 10) == pytest.approx(-10.0)
    assert offset_alert_delay(res, cfg, T0, samples, 1_000) == math.inf


def test_missing_numbers_count_as_no_number_not_as_error() -> None:
    run, cfg = _stuck_at_10()
    res = analyse_shape(run, cfg, T0, T0 + 59_000, cycle_window_s=2.0)
    samples = [PeerSample(T0 + i * 1000, None if i % 2 else 0.0, None) for i in range(10)]
    score, _t, _v = score_peer(res, cfg, T0, T0 + 59_000, samples, "peer")
    assert score.nan_pct == 50.0
    assert score.samples == 10
    assert score.mean_abs_s == 0.0


def test_pre_onset_rate_is_records_per_second_before_the_onset() -> None:
    run, _cfg = _stuck_at_10()
    assert pre_onset_rate(run.shape) == pytest.approx(1.0)
    assert pre_onset_rate(Shape("idle", "", "", (1.0,), ((0.0, 0.0),))) is None


# ---- cost figures ------------------------------------------------------------------------


def test_api_totals_sum_brokers_and_name_apis() -> None:
    assert api_totals({1: {1: 3, 3: 1}, 2: {1: 2, 9: 4}, 3: {999: 1}}) == {
        "Fetch": 5,
        "Metadata": 1,
        "OffsetFetch": 4,
        "api999": 1,
    }


def test_proc_figures_of_this_process() -> None:
    import os

    assert proc_cpu_s(os.getpid()) > 0
    assert proc_peak_rss_mib(os.getpid()) > 1


@given(st.floats(0.001, 1e6), st.floats(0.001, 1e6))
def test_ratio_is_value_over_base(value: float, base: float) -> None:
    r = ratio(value, base)
    assert r is not None and r == pytest.approx(value / base)
    assert ratio_text(r).endswith("×")


def test_ratio_edges() -> None:
    assert ratio(None, 1.0) is None and ratio(1.0, None) is None
    assert ratio(0.0, 0.0) == 1.0
    assert ratio(2.0, 0.0) == math.inf and ratio_text(math.inf) == "ours 0"
    assert ratio(math.nan, 1.0) is None
    assert ratio_text(None) == "n/a"
    assert [ratio_text(x) for x in (0.25, 1.0, 2.345, 12.6)] == ["0.25×", "1.0×", "2.3×", "13×"]


def test_replication_stays_within_a_brokers_open_files() -> None:
    assert replication_for(4_000, 3, 20_000) == 3  # every node: the 2,000-partition run
    assert replication_for(20_000, 3, 20_000) == 2  # 13,334 replicas per broker fit, 20,000 not
    assert replication_for(40_000, 3, 20_000) == 1
    assert replication_for(10**7, 3, 20_000) == 1  # never below one replica
    assert replication_for(40_000, 3, 1_000_000) == 3


def test_each_size_and_tool_set_is_saved_apart() -> None:
    every = list(ALL_TOOLS)
    assert cost_label(2_000, 2_000, every) == "2000"
    assert cost_label(20_000, 20_000, every) == "20000"
    assert cost_label(0, 20_000, every) == "fleet20000"
    assert cost_label(20_000, 0, ["ours", "kafka_exporter"]) == "20000-ours-kafka_exporter"


def _cost_run(partitions: int, ours_cpu: float, klag_cpu: float) -> dict[str, Any]:
    """A saved cost run of one scenario with ours and klag's rate mode (made-up figures)."""

    def result(tool: str, cpu: float) -> dict[str, Any]:
        first = {"round_s": 1.0, "cpu_s": 1.0, "requests": {"Fetch": 10}}
        steady = {
            "round_s": 0.1,
            "cpu_per_round_s": cpu,
            "requests_per_round": {},
            "peak_rss_mib": 100.0,
            "metrics_bytes": 4096,
        }
        return {"tool": tool, "scenario": "lagging", "rep": 0, "first": first, "steady": steady}

    return {
        "kafka_version": "3.9.1",
        "nodes": 3,
        "replication_factor": 3 if partitions < 10_000 else 1,
        "open_files_limit": 20_000,
        "burrow": "Debian's 1.2.1",
        "scenarios": [
            {
                "name": "lagging",
                "title": f"{partitions:,} lagging partitions",
                "partitions": partitions,
                "lagging": partitions,
            }
        ],
        "idle_requests_3s": {},
        "poll_s": 10.0,
        "rounds": 6,
        "reps": 1,
        "build_s": 60.0,
        "wall_s": 600.0,
        "results": [result("ours", ours_cpu), result("klag_rate", klag_cpu)],
    }


def test_the_page_keeps_every_size_and_names_where_a_peer_wins(tmp_path: Path) -> None:
    small, big = _cost_run(2_000, 0.1, 0.2), _cost_run(20_000, 4.0, 1.0)
    for cost in (big, small):
        (tmp_path / f"cost-{cost['scenarios'][0]['partitions']}.json").write_text(
            json.dumps(cost)
        )
    costs = load_costs(tmp_path)
    assert [c["scenarios"][0]["partitions"] for c in costs] == [2_000, 20_000]
    page, readme = render(None, None, costs)
    assert "### 2,000 lagging partitions" in page and "### 20,000 lagging partitions" in page
    assert "Replication factor 1, not 3" in page  # said once, for the run that needed it
    assert page.count("Replication factor") == 1
    beats = page.split("## Where a peer beats us")[1].split("##")[0]
    assert "20,000 lagging partitions: klag-exporter \"rate\" 0.25×" in beats
    assert "2,000 lagging partitions: klag" not in beats  # 2× ours there: no win
    row = "| CPU per steady round, {} lagging partitions (ratio to ours) | 1× | not run | {} |"
    assert row.format("2,000", "2.0×") in readme
    assert row.format("20,000", "0.25×") in readme


# ---- the gauge's error: its cycles' timing and Burrow's share --------------------------------


def _growing_samples(run: ShapeRun, over_s: float, measured_after_s: float = 0.5) -> ShapeRun:
    """Scrapes at t = 14..43 s of a gauge from a cycle that started 2 s earlier, ran 0.5 s and
    showed the truth ``measured_after_s`` into it plus ``over_s`` (a commit its source had not
    shown: over the truth). The consumer stopped at 10 s: stuck at every one of these cycles
    and the one before, so ours measures it when the cycle's reads were in (its end)."""
    samples = []
    for i in range(14, 44):
        t = T0 + i * 1000
        cycle = t - 2000
        then = run.truth.freshness_ms(cycle + measured_after_s * 1000)
        assert then is not None
        samples.append(Sample(metrics_ms=t, ours_ms=then + over_s * 1000, ours_offset=None,
                              ours_lag=None, cycle_start_ms=cycle, cycle_s=0.5, burrow_ms=t,
                              committed=None, current_lag=None, leo=None))
    return replace(run, samples=samples)


def test_a_gauge_of_exact_cycles_is_all_timing_and_a_poller_averages_its_phase() -> None:
    run, _cfg = _stuck_at_10()
    share = timing_share(_growing_samples(run, 0.0), T0, T0 + 59_000, period_s=2.0)
    assert share is not None and share.samples == 30
    assert share.gauge_s == pytest.approx(1.5)  # the truth grew 1.5 s since the cycle
    assert share.exact_at_cycles_s == pytest.approx(1.5)  # so none of it is Burrow's
    # measured at the cycle's start instead, it would look 0.5 s older than exact
    early = timing_share(_growing_samples(run, 0.0, measured_after_s=0.0), T0, T0 + 59_000,
                         period_s=2.0)
    assert early is not None and early.gauge_s - early.exact_at_cycles_s == pytest.approx(0.5)
    # polls every 2 s at phase φ (40 phases, 50 ms apart) on whole-second scrapes: behind by
    # (t − φ) mod 2, half the scrapes on even seconds, half on odd: 0.5 at φ = 0 or 1, up to
    # 1.45 next to them, 0.975 on average
    assert share.phase_min_s == pytest.approx(0.5)
    assert share.phase_max_s == pytest.approx(1.45)
    assert share.phase_mean_s == pytest.approx(0.975)


def test_a_gauge_showing_an_older_commit_has_a_burrow_share() -> None:
    run, _cfg = _stuck_at_10()
    share = timing_share(_growing_samples(run, 1.0), T0, T0 + 59_000, period_s=2.0)
    assert share is not None
    assert share.gauge_s == pytest.approx(0.5)  # 1 s over what the cycle saw, 1.5 s of growth
    assert share.exact_at_cycles_s == pytest.approx(1.5)
    no_cycle = replace(run, samples=[replace(s, cycle_start_ms=None)
                                     for s in _growing_samples(run, 0.0).samples])
    assert timing_share(no_cycle, T0, T0 + 59_000, period_s=2.0) is None


def test_exact_offsets_score_ours_cycles_inside_the_windows_only() -> None:
    """The gauge 1 s over what its cycle saw (a commit Burrow had not shown, here over the
    truth): given the exact offsets the cycles are 1.5 s behind a truth that grows, over the
    run and in the 5 s after the onset at 10 s alike (scrapes at 14 and 15 s); a window
    without a scrape has no figure."""
    run, _cfg = _stuck_at_10()
    grown = _growing_samples(run, 1.0)
    whole = exact_offsets_error_s([grown], lambda _r: [(T0, T0 + 59_000)], 2.0)
    assert whole == pytest.approx(1.5)
    after_onset = exact_offsets_error_s([grown], onset_windows(T0, 5.0), 2.0)
    assert after_onset == pytest.approx(1.5)
    assert exact_offsets_error_s([grown], lambda _r: [(T0 + 50_000, T0 + 59_000)], 2.0) is None
    # a cycle not known (an older exporter's scrape): not scored
    unknown = replace(grown, samples=[replace(s, cycle_start_ms=None) for s in grown.samples])
    assert exact_offsets_error_s([unknown], lambda _r: [(T0, T0 + 59_000)], 2.0) is None


def test_the_gauges_first_alert_splits_into_its_cycles_phase_and_the_read() -> None:
    """Stuck from 10 s, the truth crosses 20 s at 30 s. The cycle of the read at 32 s (started
    at 30 s, 0.5 s long) is the first the harness read above 20 s: published 0.5 s after the
    crossing, read 1.5 s after its publication. A run without an onset, or whose gauge never
    went above, has no part."""
    run, _cfg = _stuck_at_10()
    grown = _growing_samples(run, 0.0)
    parts = gauge_alert_parts_s([grown], T0, 20.0)
    assert parts is not None
    assert parts[0] == pytest.approx(0.5, abs=0.011) and parts[1] == pytest.approx(1.5, abs=0.011)
    assert gauge_alert_parts_s([grown], T0, 60.0) is None
    no_onset = replace(grown, shape=replace(grown.shape, events=()))
    assert gauge_alert_parts_s([no_onset], T0, 20.0) is None


def test_a_peers_win_is_burrows_only_where_ours_exact_cycles_are_not_above_it() -> None:
    from benchmarks.compare.page import _burrows_part

    assert "the gap is Burrow's offsets" in _burrows_part(1.0, 1.06)
    assert "the gap is Burrow's offsets" in _burrows_part(1.06, 1.06)
    assert "still above the peer: not Burrow's offsets alone" in _burrows_part(1.1, 1.06)


@given(st.lists(st.integers(0, 3), min_size=1, max_size=30), st.floats(0.1, 5.0))
def test_exact_cycles_leave_no_burrow_share_and_the_phase_mean_is_within_its_range(
    steps: list[int], period_s: float
) -> None:
    """Any commit history: a gauge that is the exact truth of its cycle (instantaneous here, so
    whenever it measured) has its whole error in timing, and the mean over the poll's phases
    lies between their extremes."""
    truth = TruthLog()
    for i in range(40):
        truth.produced(i, int(T0) + i * 1000)
    offset = 0
    for k, step in enumerate(steps):
        offset = min(offset + step, 40)
        truth.committed(int(T0) + k * 1000, offset)
    shape = Shape("any", "any", "", tuple(float(i) for i in range(40)), ((0.0, 0.0),), ())
    samples = []
    for i in range(1, 40):
        t = T0 + i * 1000 + 300
        then = truth.freshness_ms(t - 700)
        if then is not None:
            samples.append(Sample(metrics_ms=t, ours_ms=then, ours_offset=None, ours_lag=None,
                                  cycle_start_ms=t - 700, cycle_s=0.0, burrow_ms=t,
                                  committed=None, current_lag=None, leo=None))
    share = timing_share(ShapeRun(shape, "t", "g", truth, samples), T0, T0 + 40_000, period_s)
    assert share is not None
    assert share.gauge_s == pytest.approx(share.exact_at_cycles_s)
    assert share.phase_min_s - 1e-9 <= share.phase_mean_s <= share.phase_max_s + 1e-9


# ---- replicas: one shape at several phases of the polls ------------------------------------


def test_a_shifted_shape_moves_every_time_but_its_first_phase() -> None:
    shape = Shape("s", "S", "d", (1.0, 2.5), ((0.0, 0.02), (10.0, None)),
                  (Event("stall", "onset", 10.0), Event("caught up", "recovery", None, 5.0)))
    later = shape.shifted(0.5)
    assert later.produce_at_s == (1.5, 3.0)
    assert later.consumer == ((0.0, 0.02), (10.5, None))  # a consumer from the start still is
    assert later.events == (Event("stall", "onset", 10.5, 0.5),
                            Event("caught up", "recovery", None, 5.5))
    assert (later.name, later.title, later.description) == ("s", "S", "d")
    assert shape.processing_at(10.2) is None and later.processing_at(10.2) == 0.02
    assert shape.produce_at_s == (1.0, 2.5)  # pure: the original is untouched
    assert shape.shifted(0.0) is shape


def test_replicas_spread_evenly_over_one_poll_interval() -> None:
    a = Shape("a", "A", "", (1.0,), ((0.0, 0.0),))
    b = Shape("b", "B", "", (2.0,), ((0.0, 0.0),))
    copies = replica_shapes([a, b], 4, 2.0)
    assert [(k, s.name, s.produce_at_s[0]) for k, s in copies] == [
        (0, "a", 1.0), (1, "a", 1.5), (2, "a", 2.0), (3, "a", 2.5),
        (0, "b", 2.0), (1, "b", 2.5), (2, "b", 3.0), (3, "b", 3.5)]
    assert replica_shapes([a], 1, 2.0) == [(0, a)]
    with pytest.raises(ValueError):
        replica_shapes([a], 0, 2.0)


def test_scattered_copies_keep_their_phases_at_cycles_of_their_own() -> None:
    a = Shape("a", "A", "", (1.0,), ((0.0, 0.0),))
    shifts = [s.produce_at_s[0] - 1.0 for _k, s in replica_shapes([a], 8, 2.0, scattered=True)]
    # the phases under ours' cycles are the evenly spread ones of copies a fraction apart
    assert sorted(round(t % 2.0, 6) for t in shifts) == [k * 0.25 for k in range(8)]
    # each copy at a cycle of its own, so at polls and sampler reads of its own
    assert len({math.floor(t / 2.0) for t in shifts}) == 8
    assert min(abs(x - y) for x in shifts for y in shifts if x != y) >= 1.0
    # a period of a cycle and a fraction (about the Consumer Freshness Tracker's) meets them
    # at spread phases (a constant step of a cycle and a fraction met it at one)
    period = 2.25
    phases = sorted(t % period for t in shifts)
    ends = [*phases[1:], phases[0] + period]
    assert max(b - a for a, b in zip(phases, ends, strict=True)) < period / 2


@pytest.mark.parametrize("replicas", range(1, 13))
def test_scatter_cycles_is_a_permutation(replicas: int) -> None:
    cycles = scatter_cycles(replicas)
    assert sorted(cycles) == list(range(replicas)) and cycles[0] == 0


def _method(**kw: Any) -> MethodScore:
    base: dict[str, Any] = {
        "method": "m", "samples": 10, "mean_abs_s": 1.0, "max_abs_s": 3.0, "onset_s": 2.0,
        "recovery_s": None, "false_alarm_s": 4.0, "missed_s": 1.0, "nan_pct": 0.0,
        "inf_pct": 0.0, "alarm_delay_s": 1.0, "defined": 10, "onset_n": 2, "recovery_n": 0}
    return MethodScore(**{**base, **kw})


def test_pooled_scores_weigh_each_replica_by_its_samples() -> None:
    a = _method()
    b = _method(samples=30, defined=20, mean_abs_s=4.0, max_abs_s=5.0, onset_s=1.0, onset_n=6,
                false_alarm_s=2.0, missed_s=0.0, nan_pct=100 / 3, alarm_delay_s=3.0)
    pooled = pool_scores([a, b])
    assert pooled.samples == 40 and pooled.defined == 30
    assert pooled.mean_abs_s == pytest.approx((10 * 1.0 + 20 * 4.0) / 30)
    assert pooled.max_abs_s == 5.0
    assert pooled.onset_s == pytest.approx((2 * 2.0 + 6 * 1.0) / 8)
    assert pooled.recovery_s is None
    assert pooled.false_alarm_s == 3.0 and pooled.missed_s == 0.5  # seconds per replica
    assert pooled.nan_pct == pytest.approx(25.0)
    assert pooled.alarm_delay_s == 2.0 and pooled.alarm_delay_range_s == (1.0, 3.0)
    assert pool_scores([a]) is a


def test_pooled_alerts_a_never_is_never_and_no_crossing_is_left_out() -> None:
    assert pool_delays([None, None]) == (None, None)
    assert pool_delays([2.0, None, 4.0]) == (3.0, (2.0, 4.0))
    assert pool_delays([2.0, math.inf]) == (math.inf, (2.0, math.inf))
    never = pool_scores([_method(alarm_delay_s=math.inf), _method(alarm_delay_s=-1.0)])
    assert never.alarm_delay_s == math.inf


def test_pooled_mean_is_that_of_all_samples_scored_at_once() -> None:
    """Two replicas of the stuck story, a peer 5 s over the truth on one and exact on the
    other for a third of the samples: the pooled mean is the mean over every sample."""
    run, cfg = _stuck_at_10()
    res = analyse_shape(run, cfg, T0, T0 + 59_000, cycle_window_s=2.0)

    def peer(offset_s: float, n: int) -> MethodScore:
        samples = []
        for i in range(n):
            truth = run.truth.freshness_ms(T0 + i * 1000)
            assert truth is not None
            samples.append(PeerSample(T0 + i * 1000, truth / 1000 + offset_s, None))
        return score_peer(res, cfg, T0, T0 + 59_000, samples, "peer")[0]

    pooled = pool_scores([peer(5.0, 60), peer(0.0, 20)])
    assert pooled.mean_abs_s == pytest.approx(5.0 * 60 / 80)
    # onset window 10..15 s: 6 samples in each replica, 5 s off in one, exact in the other
    assert pooled.onset_s == pytest.approx(2.5)


def test_pooled_timing_weighs_replicas_by_samples_and_spans_every_phase() -> None:
    a = TimingShare(10, 1.0, 0.5, 0.4, 0.2, 0.6)
    b = TimingShare(30, 2.0, 1.5, 0.8, 0.3, 0.9)
    pooled = pool_timing([a, None, b])
    assert pooled is not None and pooled.samples == 40
    assert pooled.gauge_s == pytest.approx(1.75)
    assert pooled.exact_at_cycles_s == pytest.approx(1.25)
    assert pooled.phase_mean_s == pytest.approx(0.7)
    assert (pooled.phase_min_s, pooled.phase_max_s) == (0.2, 0.9)
    assert pool_timing([None]) is None


def test_burrow_alone_renders_each_setting_and_their_ratio() -> None:
    from benchmarks.compare.page import _burrow_alone

    def phase(refresh: dict[str, int], cpu_per_s: float, restarted: bool) -> dict[str, Any]:
        return {"refresh": refresh, "cpu_per_s": cpu_per_s, "cpu_per_poll_s": cpu_per_s * 10,
                "window_s": 60.0, "peak_rss_mib": 40.0, "restarted": restarted}

    cost = {"poll_s": 10.0, "burrow_phases": [
        phase({"offset-refresh": 1, "topic-refresh": 1}, 0.09, False),
        phase({"offset-refresh": 10, "topic-refresh": 60}, 0.03, True),
    ]}
    text = "\n".join(_burrow_alone(cost))
    assert "`offset-refresh = 1`, `topic-refresh = 1`: 0.0900 CPU s per s" in text
    assert "`offset-refresh = 10`, `topic-refresh = 60`: 0.0300 CPU s per s" in text
    assert "0.900 per 10-s poll interval" in text
    assert "3.0× the CPU of the last" in text
    assert "(restarted with this setting)" in text
    assert _burrow_alone({"poll_s": 10.0}) == []


@given(st.floats(0, 1e9), st.floats(0.5, 30), st.floats(0, 1e9), st.floats(0, 0.4))
def test_the_rule_grid_starts_just_after_a_scrape(start: float, step: float, scraped: float,
                                                  settle: float) -> None:
    from benchmarks.compare.accuracy import after_scrapes

    at = after_scrapes(start, step, scraped, settle)
    assert start <= at < start + step + 1e-6
    offset = (at - scraped - settle) % step
    assert min(offset, step - offset) < 1e-3 * max(1.0, step)


def test_the_rule_grid_is_named_on_the_page() -> None:
    from benchmarks.compare.page import rule_grid_text

    assert "0.1 s after each of Prometheus' scrapes of ours" in rule_grid_text(0.1)
    assert rule_grid_text(None) == "on the same grid, as a dashboard evaluates it"
    assert "every 1.1 s (an interval that does not divide" in rule_grid_text(0.1, 1.1)


def test_the_runs_rules_carry_only_waits_of_at_least_its_own_cycle() -> None:
    """The chart's rules rendered for the run: its rate window, and the gate at its
    frequency_sec (a user's chart renders it from config.frequencySec)."""
    from benchmarks.compare.accuracy import rule_expression, rules_for_run

    expr = rule_expression(rules_for_run(2.0, 1.1))
    assert "(kafka_consumer_group_max_freshness_ms >= bool 2000)" in expr
    assert "[9s]" in expr and "30000" not in expr


def test_in_a_randomly_sampled_run_ours_is_scraped_off_the_cycles_beat() -> None:
    """A 1 s scrape of a 2 s cycle meets it at one phase all run; 1.1 s sweeps every phase."""
    from benchmarks.accuracy.harness import HarnessConfig
    from benchmarks.compare.accuracy import ours_scrape_interval_s

    random_run = HarnessConfig(frequency_s=2.0, sample_interval_s=1.0)
    assert ours_scrape_interval_s(random_run) == 1.1
    phases = {round((k * 1.1) % 2.0, 6) for k in range(200)}
    assert len(phases) >= 10
    assert ours_scrape_interval_s(HarnessConfig(sample_interval_s=1.0, sampling="grid")) == 1.0


class _SlowTool:
    """A peer whose every scrape takes ``answer_s`` (a loaded machine), exporting one group."""

    def __init__(self, key: str, answer_s: float) -> None:
        self.spec = SimpleNamespace(key=key, metrics="cft")
        self.answer_s = answer_s

    def metrics_text(self, timeout_s: float) -> str:
        time.sleep(self.answer_s)
        return ('kafka_consumer_freshness_ms{cluster="local",consumer="acc-g",topic="acc-t",'
                'partition="0"} 1500\n')


def test_the_peer_sampler_reads_every_tool_in_every_slot_whatever_another_takes() -> None:
    """Four tools taking half a second to answer and one taking 2.5 s: one after the other a
    round takes 4.5 s and the sampler would read each tool once or twice in 4.5 s; each tool on
    its own loop, the four are read in about every one-second slot and only the slow one misses
    slots (scored at its last answer there: held_through_missed_slots)."""
    tools = [_SlowTool(f"tool{k}", 0.5) for k in range(4)] + [_SlowTool("slow", 2.5)]
    sampler = PeerSampler(tools, 1.0, shared_slots=True)  # type: ignore[arg-type]
    sampler.start()
    time.sleep(4.5)
    sampler.stop()
    counts = {key: len(series["acc-g/acc-t"]) for key, series in sampler.samples.items()}
    assert set(counts) == {t.spec.key for t in tools}
    assert min(n for key, n in counts.items() if key != "slow") >= 4, counts
    assert counts["slow"] <= 2, counts
    assert sampler.failures == 0
    assert all(s.time_lag_s == 1.5 for series in sampler.samples.values()
               for s in series["acc-g/acc-t"])


# ---- the phases' spread: ± one standard error of the pooled mean |error| ---------------------


def test_the_standard_error_is_the_phases_sample_deviation_over_root_n() -> None:
    from benchmarks.compare.stats import standard_error

    # mean 2.5, sample variance (2.25 + 0.25 + 0.25 + 2.25) / 3 = 5 / 3
    assert standard_error([1.0, 2.0, 3.0, 4.0]) == pytest.approx(math.sqrt(5 / 3) / 2)
    assert standard_error([0.2, 0.2, 0.2]) == 0.0
    assert standard_error([1.0, 3.0, math.nan]) == pytest.approx(1.0)  # from the finite ones
    assert standard_error([1.0]) is None and standard_error([1.0, math.inf]) is None


def _phases(ours: list[float], peers: dict[str, list[float]],
            attr: str = "mean_abs_s") -> list[CompareShape]:
    """The stuck story as pooled phases (one phase: as it is), each with ours' and the peers'
    ``attr`` given (every other figure alike)."""
    run, cfg = _stuck_at_10()
    res = analyse_shape(run, cfg, T0, T0 + 59_000, cycle_window_s=2.0)
    shapes = [
        CompareShape(replace(res, scores={k: _method(**{attr: ours[i]}) for k in res.scores}),
                     {k: _method(**{attr: v[i]}) for k, v in peers.items()}, {}, {})
        for i in range(len(ours))
    ]
    return pool_shapes(shapes)


def test_the_headline_shows_pooled_means_with_their_standard_error() -> None:
    from benchmarks.compare.report import headline_table

    pooled = _phases([0.2, 0.4, 0.2, 0.4], {"cft": [0.1, 0.1, 0.3, 0.3]})
    # both: sample deviation √(4 × 0.1² / 3), over √4: 0.058
    assert "| stuck | 0.30 ± 0.06 | not run | 0.20 ± 0.06 (Consumer Freshness Tracker) |" \
        in headline_table(pooled)
    single = _phases([0.2], {"cft": [0.1]})
    assert "| stuck | 0.20 | not run | 0.10 (Consumer Freshness Tracker) |" \
        in headline_table(single)


def test_a_first_alerts_gap_has_a_standard_error_only_where_the_copies_were_independent(
) -> None:
    """Copies a fraction of a cycle apart reach the threshold within a cycle of each other and
    meet the same polls and reads: their first alerts are not independent draws, and the page
    says so. Copies scattered over cycles of their own are: the gap is set against twice the
    standard error of the copies' paired gaps."""
    from benchmarks.compare.page import _beats

    pooled = _phases([2.0, 2.2, 2.0, 2.2], {"cft": [1.0, 1.0, 1.2, 1.2]}, "alarm_delay_s")
    together = "\n".join(_beats(pooled, [], independent_copies=False))
    assert ("stuck, first alert: Consumer Freshness Tracker 1.10 s against freshness-tracker "
            "(gauge) 2.10 s (by 1.00 s; one crossing per copy, and the copies, a fraction of a "
            "cycle apart, meet it at the same one or two polls and reads: not independent "
            "draws, so no standard error)") in together
    # per-copy gaps 1.0, 1.2, 0.8, 1.0: 2 × sd 0.163 / √4 = 0.16
    scattered = "\n".join(_beats(pooled, [], independent_copies=True))
    assert ("stuck, first alert: Consumer Freshness Tracker 1.10 s against freshness-tracker "
            "(gauge) 2.10 s (by 1.00 s, beyond 0.16 s, twice the standard error of the phases' "
            "gaps)") in scattered
    assert "not independent" not in scattered


def test_an_onset_gap_is_set_against_the_clocks_periods_not_the_copies() -> None:
    """The copies' onset windows overlap in time: what a period of the clock held (reads,
    polls) hit every copy in it, so the draws are the periods; copies in one period average."""
    from benchmarks.compare.report import onset_gap_se

    run, cfg = _stuck_at_10()
    res = analyse_shape(run, cfg, T0, T0 + 59_000, cycle_window_s=2.0)

    def copy(ours: list[tuple[float, float]], peer: list[tuple[float, float]]) -> CompareShape:
        return CompareShape(replace(res, scores={k: _method(onset_points=tuple(ours))
                                                 for k in res.scores}),
                            {"cft": _method(onset_points=tuple(peer))}, {}, {})

    # two copies, their points in the same four 2-s periods; per period ours 1.0, the peer
    # 0.8 / 0.6 alternately (the copies 0.7 and 0.9 in the first period: 0.8 together)
    copies = [copy([(0.5, 1.0), (2.5, 1.0), (4.5, 1.0), (6.5, 1.0)],
                   [(0.5, 0.7), (2.5, 0.6), (4.5, 0.8), (6.5, 0.6)]),
              copy([(1.5, 1.0), (3.5, 1.0), (5.5, 1.0), (7.5, 1.0)],
                   [(1.5, 0.9), (3.5, 0.6), (5.5, 0.8), (7.5, 0.6)])]
    pooled = pool_shapes(copies)[0]
    # gaps per period 0.2, 0.4, 0.2, 0.4: sd 0.1155 over √4
    assert onset_gap_se(pooled, "ours", "cft", 2.0) == pytest.approx(0.0577, abs=1e-4)
    assert onset_gap_se(pooled, "ours", "cft", 100.0) is None  # one period: no spread
    assert onset_gap_se(pooled, "ours", "klag_message", 2.0) is None  # not run


def test_the_onset_window_is_the_first_onsets_as_the_scorer_scores() -> None:
    run, _cfg = _stuck_at_10()
    twice = replace(run, shape=replace(run.shape, events=(
        Event("stall", "onset", 10.0), Event("again", "onset", 30.0))))
    assert onset_windows(T0, 5.0)(twice) == [(T0 + 10_000, T0 + 15_000)]
    no_onset = replace(run, shape=replace(run.shape, events=(Event("drop", "info", 5.0),)))
    assert onset_windows(T0, 5.0)(no_onset) == []


def test_the_read_age_is_the_time_from_ours_publication_to_the_read() -> None:
    run, _cfg = _stuck_at_10()

    def read(at_s: float, cycle_at_s: float, cycle_s: float) -> Sample:
        return Sample(T0 + at_s * 1000, 0.0, None, None, T0 + cycle_at_s * 1000, cycle_s,
                      T0 + at_s * 1000, None, None, None)

    run = replace(run, samples=[read(1.0, 0.0, 0.2), read(2.5, 2.0, 0.2), read(11.0, 10.0, 0.5)])
    windows = onset_windows(T0, 5.0)  # the stall at 10 s
    assert read_age_s([run], windows) == pytest.approx(0.5)
    assert read_age_s([run], lambda _r: [(T0, T0 + 59_000)]) == pytest.approx((0.8 + 0.3 + 0.5) / 3)
    assert read_age_s([run], lambda _r: []) is None


def test_an_offset_lag_alerts_gap_is_paired_by_copy() -> None:
    from benchmarks.compare.page import _beats

    run, cfg = _stuck_at_10()
    res = analyse_shape(run, cfg, T0, T0 + 59_000, cycle_window_s=2.0)
    copies = [CompareShape(replace(res, scores={k: _method(alarm_delay_s=ours)
                                                for k in res.scores}),
                           {}, {}, {"kafka_exporter": theirs})
              for ours, theirs in ((1.0, 0.2), (1.4, 0.4), (1.0, 0.6), (1.4, 0.2))]
    text = "\n".join(_beats(pool_shapes(copies), []))
    # gaps 0.8, 1.0, 0.4, 1.2 (mean 0.85): 2 × sd 0.342 / √4 = 0.34
    assert ("stuck: the offset-lag alert on kafka_exporter (offsets only) 0.35 s against "
            "freshness-tracker (gauge) 1.20 s (by 0.85 s, beyond 0.34 s, twice the standard "
            "error of the phases' gaps)") in text


def test_an_offset_lag_alert_that_fired_first_is_listed_with_why() -> None:
    """An offsets-only tool's alert counts as a first alert: one earlier than ours (gauge or
    rule) is listed, with its threshold's caveat; one later is not."""
    from benchmarks.compare.page import _beats

    run, cfg = _stuck_at_10()
    res = analyse_shape(run, cfg, T0, T0 + 59_000, cycle_window_s=2.0)
    res = replace(res, scores={k: _method(alarm_delay_s=1.0) for k in res.scores})
    early = CompareShape(res, {}, {}, {"kafka_exporter": 0.2, "kminion": 1.5})
    text = "\n".join(_beats([early], []))
    assert ("stuck: the offset-lag alert on kafka_exporter (offsets only) 0.20 s against "
            "freshness-tracker (gauge) 1.00 s (by 0.80 s)") in text
    assert "kminion" not in text
    assert "a figure an operator cannot set in advance" in text


def test_a_peers_lower_mean_says_whether_it_is_beyond_twice_the_paired_error() -> None:
    from benchmarks.compare.page import _beats

    pooled = _phases([0.2, 0.4, 0.2, 0.4],
                     {"cft": [0.1, 0.1, 0.3, 0.3], "klag_message": [0.1, 0.3, 0.1, 0.3]})
    text = "\n".join(_beats(pooled, []))
    # per-phase gaps 0.1, 0.3, -0.1, 0.1: 2 × sd 0.163 / √4 = 0.16 against a mean gap of 0.10
    assert ("Consumer Freshness Tracker 0.20 s against freshness-tracker (gauge) 0.30 s (by "
            "0.10 s, within 0.16 s, twice the standard error of the phases' gaps)") in text
    # the same 0.10 s in every phase: what hit one tool in a phase hit the other, the gap holds
    assert ('klag-exporter "message" 0.20 s against freshness-tracker (gauge) 0.30 s (by 0.10 s, '
            "beyond 0.00 s, twice the standard error of the phases' gaps)") in text
    single = "\n".join(_beats(_phases([0.3], {"cft": [0.2]}), []))
    assert "Consumer Freshness Tracker 0.20 s against freshness-tracker (gauge) 0.30 s (by " \
        "0.10 s)" in single


@given(st.lists(st.integers(0, 3), max_size=20), st.lists(st.integers(0, 2_000), max_size=30),
       st.lists(st.floats(-1_000.0, 25_000.0, allow_nan=False), max_size=40))
def test_the_truth_walked_back_is_the_truth_looked_up_at_each_moment(
    steps: list[int], gaps: list[int], moments: list[float]
) -> None:
    """Any records and commits, any moments (before the first commit, between, after the
    last): the walk back gives exactly what a lookup at each moment gives."""
    truth = TruthLog()
    ts = 0
    for offset, gap in enumerate(gaps):
        ts += gap
        truth.produced(offset, ts)
    committed = 0
    for k, step in enumerate(steps):
        committed = min(committed + step, len(gaps))
        truth.committed(k * 1_000, committed)
    times = sorted(moments, reverse=True)
    assert truth.freshness_descending(times) == [truth.freshness_ms(t) for t in times]
