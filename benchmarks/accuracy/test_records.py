"""The accuracy and comparison benchmarks' scoring beyond freshness and their run records:
catch-up estimate error, the offset threshold of offsets-only tools, commit lag and "data
current as of" truths, a record's round trip into the pages, and a failed run rendered failed.
Pure: no stack, no peer, no Prometheus is started."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from benchmarks.accuracy import report as accuracy_report
from benchmarks.accuracy.harness import HarnessConfig, RunData, ShapeRun
from benchmarks.accuracy.record import (
    GZIP_ABOVE,
    load_records,
    round_peers,
    round_rule,
    round_run,
    save_record,
)
from benchmarks.accuracy.sampler import Sample
from benchmarks.accuracy.scores import (
    catch_up_score,
    commit_lag_truth_ms,
    data_as_of_truth_ms,
    offset_threshold,
)
from benchmarks.accuracy.shapes import Event, Shape, standard_shapes
from benchmarks.accuracy.truth import TruthLog
from benchmarks.compare import page as compare_page
from benchmarks.compare.accuracy import score_peers
from devstack.prometheus import ScrapeJob

T0 = 1_000_000_000_000


def _sample(t_ms: float, **kw: Any) -> Sample:
    base: dict[str, Any] = {
        "metrics_ms": t_ms, "ours_ms": None, "ours_offset": None, "ours_lag": None,
        "cycle_start_ms": None, "cycle_s": 0.01, "burrow_ms": t_ms, "committed": None,
        "current_lag": None, "leo": None,
    }
    return Sample(**{**base, **kw})


# ---- truths and the catch-up estimate -------------------------------------------------------


def _outage_run() -> ShapeRun:
    """A record a second for 40 s; commits keep up to t=10, the consumer is down until t=20,
    then commits every second, two records at a time, and has everything at t=30."""
    truth = TruthLog()
    for i in range(40):
        truth.produced(i, T0 + i * 1000)
    for i in range(11):
        truth.committed(T0 + i * 1000, i)
    for k, t in enumerate(range(21, 31)):
        truth.committed(T0 + t * 1000, min(11 + 2 * (k + 1), t + 1))
    shape = Shape("outage-catchup", "o", "", tuple(float(i) for i in range(40)),
                  ((0.0, 0.0), (10.0, None), (20.0, 0.5)),
                  (Event("outage", "onset", 10.0),))
    # estimates while catching up: exact at t=22, 3 s late at t=24, absent at t=26
    samples = [
        _sample(T0 + 22_000, ours_catch_up_s=8.0),
        _sample(T0 + 24_000, ours_catch_up_s=9.0),
        _sample(T0 + 26_000),
        _sample(T0 + 35_000, ours_catch_up_s=0.0),  # after: not scored
    ]
    return ShapeRun(shape, "t", "g", truth, samples)


def test_the_catch_up_estimate_is_scored_against_when_the_truth_reached_zero() -> None:
    run = _outage_run()
    score = catch_up_score(run, T0)
    assert score is not None
    assert score.outage_s == 10.0
    assert score.catch_up_s == 10.0  # resumed at 20, everything committed at 30
    assert (score.samples, score.with_estimate) == (3, 2)
    assert score.first_s == pytest.approx(0.0) and score.first_after_s == pytest.approx(2.0)
    assert score.max_abs_s == pytest.approx(3.0)
    assert score.mean_abs_s == pytest.approx(1.5)
    assert score.median_s == pytest.approx(1.5)


def test_no_catch_up_score_without_an_outage() -> None:
    run = _outage_run()
    steady = ShapeRun(Shape("steady", "s", "", (0.0,), ((0.0, 0.0),)), "t", "g", run.truth, [])
    assert catch_up_score(steady, T0) is None


def test_commit_lag_and_data_current_as_of_come_from_the_last_commit() -> None:
    truth = _outage_run().truth
    # at t=15.5 the last commit (t=10) was of offset 10: last committed record 9, appended at 9
    assert commit_lag_truth_ms(truth, T0 + 15_500) == pytest.approx(1000.0)
    assert data_as_of_truth_ms(truth, T0 + 15_500) == pytest.approx(T0 + 9000)
    # the first commit (offset 0) covers no record
    assert commit_lag_truth_ms(truth, T0 + 100) is None
    assert data_as_of_truth_ms(truth, T0 - 1) is None


# ---- offsets-only tools' threshold ------------------------------------------------------------


def test_an_offset_threshold_is_never_zero_on_a_topic_idle_before_its_onset() -> None:
    shapes = {s.name: s for s in standard_shapes(480.0, 45.0)}
    burst = offset_threshold(shapes["burst-idle"], 20.0, 480.0)
    assert burst is not None
    records, basis = burst
    assert records == pytest.approx(20.0 * 300 / 480)  # the run's average rate
    assert "average" in basis
    stuck = offset_threshold(shapes["stuck"], 20.0, 480.0)
    assert stuck is not None and stuck[0] == pytest.approx(40.0)  # 2 records/s before the stall
    assert offset_threshold(shapes["steady"], 20.0, 480.0) is None  # no onset


# ---- every tool on the same moments -----------------------------------------------------------


def _stalled_run(sampling: str) -> tuple[RunData, dict[str, Any]]:
    """A load holds the consumer back from 20 to 30 s, and the peer's sampler, slowed by the same
    load, misses those seconds; ours' gauge and the peer show 0 all along."""
    truth = TruthLog()
    for i in range(60):
        truth.produced(i, T0 + i * 1000)
        if not 20 <= i < 30:
            truth.committed(T0 + i * 1000 + 10, i + 1)
    shape = Shape("steady", "Steady", "", tuple(float(i) for i in range(60)), ((0.0, 0.02),))
    ours = [_sample(T0 + i * 1000 + 500, ours_ms=0.0) for i in range(59)]
    peer = [[T0 + i * 1000 + 600, 0.0, None] for i in range(59) if not 20 <= i < 30]
    run = RunData(HarnessConfig(duration_s=59.0, sampling=sampling), T0, T0 + 59_000,
                  [ShapeRun(shape, "acc-x-steady", "acc-x-steady-group", truth, ours)],
                  wall_s=60.0)
    return run, {"cft": {"acc-x-steady-group/acc-x-steady": peer}}


@pytest.mark.parametrize("sampling", ["paired", "random"])
def test_a_slot_a_sampler_missed_is_scored_at_the_tools_last_answer(sampling: str) -> None:
    """Both tools are as wrong as the truth is high. Scored on its own samples the peer would
    seem to win (it was never read while the truth was high); in a paired run each missed
    second is scored at the peer's last answer, as a dashboard shows it, so both are scored on
    the same seconds."""
    run, peers = _stalled_run(sampling)
    [scored] = score_peers(run, peers)
    gauge, cft = scored.result.scores["ours"], scored.peers["cft"]
    assert gauge.samples == 59
    if sampling == "paired":
        assert cft.samples == 59
        assert cft.mean_abs_s == pytest.approx(gauge.mean_abs_s, rel=0.1)
    else:
        assert cft.samples == 49
        assert gauge.mean_abs_s > 2 * cft.mean_abs_s


def test_the_page_says_where_each_tools_samples_fell_against_the_truths_time_average() -> None:
    """The peer's sampler missed the stalled seconds: its samples met about a third of the
    truth's time average; ours' gauge, read every second, about all of it."""
    from benchmarks.compare.page import truth_seen, truth_seen_table

    run, peers = _stalled_run("random")
    [scored] = score_peers(run, peers)
    seen = truth_seen(scored, run.t0_ms, run.end_ms)
    assert seen["ours"] == pytest.approx(1.0, abs=0.1)
    assert seen["cft"] < 0.5
    table = "\n".join(truth_seen_table([scored], run.t0_ms, run.end_ms))
    assert "| *steady* | 1.0" in table or "| *steady* | 0.9" in table
    assert "Consumer Freshness Tracker" in table


def test_a_missed_slot_holds_the_last_answer_and_a_slot_before_any_answer_stays_empty() -> None:
    from benchmarks.compare.accuracy import PeerSample, held_through_missed_slots

    shape = Shape("idle", "Idle", "", (), ((0.0, 0.02),))
    run = RunData(HarnessConfig(duration_s=6.0), T0, T0 + 5_500,
                  [ShapeRun(shape, "t", "g", TruthLog(), [_sample(T0 + 2_100, ours_ms=7.0)])],
                  wall_s=6.0)
    peer = {"cft": {"g/t": [PeerSample(T0 + 1_300, 1.0, None), PeerSample(T0 + 4_200, 4.0, None)]}}
    filled_run, filled = held_through_missed_slots(run, peer)
    rows = filled["cft"]["g/t"]
    assert [math.floor((p.t_ms - T0) / 1000) for p in rows] == [1, 2, 3, 4, 5]
    assert [p.time_lag_s for p in rows] == [1.0, 1.0, 1.0, 4.0, 4.0]
    assert all(p.t_ms >= q.t_ms for p, q in zip(rows[1:], rows, strict=False))
    ours = filled_run.shapes[0].samples
    assert [math.floor((s.metrics_ms - T0) / 1000) for s in ours] == [2, 3, 4, 5]
    assert {s.ours_ms for s in ours} == {7.0}


def test_the_rules_read_outs_above_0_while_nothing_waited_are_counted() -> None:
    """A group that keeps up (each record committed 10 ms after it is written): five read-outs
    of the rule show 0.4 s where the truth is 0, a caught wait carried past its commit."""
    from benchmarks.compare.page import rule_over_nothing_waiting_s

    truth = TruthLog()
    for i in range(60):
        truth.produced(i, T0 + i * 1000)
        truth.committed(T0 + i * 1000 + 10, i + 1)
    shape = Shape("steady", "Steady", "", tuple(float(i) for i in range(60)), ((0.0, 0.01),))
    ours = [_sample(T0 + i * 1000 + 500, ours_ms=0.0) for i in range(1, 59)]
    rule = [[T0 + i * 1000 + 500, 0.4 if 10 <= i < 15 else 0.0] for i in range(1, 59)]
    run = RunData(HarnessConfig(duration_s=59.0), T0, T0 + 59_000,
                  [ShapeRun(shape, "acc-x-steady", "acc-x-steady-group", truth, ours)],
                  wall_s=60.0)
    [scored] = score_peers(run, {}, {"rule": {"acc-x-steady-group": rule}})
    assert scored.rule is not None
    assert rule_over_nothing_waiting_s(scored, T0) == pytest.approx(5 * 0.4 / 58)
    assert scored.rule.mean_abs_s == pytest.approx(5 * 0.4 / 58)


# ---- records and pages ----------------------------------------------------------------------


def _tiny_record(status: str = "complete") -> dict[str, Any]:
    """A comparison record of the stuck-at-10 story: ours' gauge 1 s late, the rule exact, a
    peer 3 s over the truth."""
    truth = TruthLog()
    for i in range(60):
        truth.produced(i, T0 + i * 1000)
    for i in range(11):
        truth.committed(T0 + i * 1000, i)
    shape = Shape("stuck", "Stuck", "stalls at 10 s", tuple(float(i) for i in range(60)),
                  ((0.0, 0.0), (10.0, None)), (Event("stall", "onset", 10.0),))
    samples = []
    rule, peer = [], []
    for i in range(1, 59):
        t = T0 + i * 1000 + 0.4
        fresh = truth.freshness_ms(t)
        assert fresh is not None
        samples.append(_sample(t, ours_ms=max(fresh - 1000, 0.0), committed=min(i, 10),
                               ours_commit_lag_ms=0.0, ours_data_as_of_s=(T0 + 9000) / 1000))
        rule.append([t, fresh / 1000])
        peer.append([t, fresh / 1000 + 3.0, None])
    run = RunData(HarnessConfig(duration_s=59.0, moment_window_s=5.0), T0, T0 + 59_000,
                  [ShapeRun(shape, "acc-x-stuck", "acc-x-stuck-group", truth, samples)],
                  wall_s=70.0)
    record: dict[str, Any] = {
        "format": 1, "kind": "accuracy", "status": status, "command": "python -m x",
        "started": "2026-01-02T03:04:05+00:00", "finished": "2026-01-02T03:05:15+00:00",
        "machine": {"cores": 2, "cpu": "cpu", "system": "Linux", "load_start": [1.0, 2.0, 3.0],
                    "load_end": [4.0, 5.0, 6.0]},
        "versions": {"ours": "freshness-tracker 0.1.0", "klag_message": "klag 0.1.29 abc"},
        "skipped": {"kminion": "kminion was not built: go refused"},
        "kafka": "3.9.1", "burrow": "Burrow 1.2.1 (Debian's package)",
        "prometheus": "Prometheus 2.42.0+ds", "config": run.config.__dict__,
    }
    if status == "complete":
        record["run"] = round_run(run.to_json())
        record["peers"] = round_peers({"klag_message": {"acc-x-stuck-group/acc-x-stuck": peer}})
        record["rule"] = round_rule({"rule": {"acc-x-stuck-group": rule}})
    else:
        record["error"] = "TimeoutError: the stack never came up"
    return record


def _root_with(tmp_path: Path, *records: dict[str, Any]) -> Path:
    for record in records:
        save_record(tmp_path / compare_page.RECORDS, record)
    return tmp_path


def test_a_record_round_trips_into_the_comparison_page(tmp_path: Path) -> None:
    root = _root_with(tmp_path, _tiny_record())
    [loaded] = load_records(root / compare_page.RECORDS)
    assert loaded["run"]["t0_ms"] == T0 and isinstance(loaded["run"]["shapes"][0]["samples"][0][0],
                                                        int)
    run = RunData.from_json(loaded["run"])
    [shape] = score_peers(run, loaded["peers"], loaded["rule"])
    assert shape.rule is not None and shape.rule.mean_abs_s == pytest.approx(0.0, abs=0.01)
    assert shape.peers["klag_message"].mean_abs_s == pytest.approx(3.0, abs=0.01)
    assert shape.result.scores["ours"].mean_abs_s == pytest.approx(0.9, abs=0.2)
    page = compare_page.pages(root)[compare_page.PAGE]
    assert page == compare_page.pages(root)[compare_page.PAGE]  # deterministic
    assert "| stuck | 0." in page  # the headline row
    assert "`klag 0.1.29 abc`" in page  # the version its build recorded
    assert "**not run**: kminion was not built: go refused" in page
    assert "1/2/3 at the start, 4/5/6 at the end" in page
    assert "scraping every peer at its poll interval and ours every 1.1 s" in page
    # the peer beat the gauge on nothing; the page says where it did beat something, or nowhere
    assert "klag-exporter \"message\" 3.00 s against" not in page
    accuracy = accuracy_report.pages(root)[accuracy_report.PAGE]
    assert "freshness-tracker, rule (from Prometheus)" in accuracy
    assert "![stuck](img/accuracy-stuck.png)" in accuracy


def test_a_failed_run_renders_as_failed_and_the_previous_complete_run_stays(
    tmp_path: Path,
) -> None:
    good = _tiny_record()
    bad = {**_tiny_record("failed"), "started": "2026-01-03T00:00:00+00:00"}
    root = _root_with(tmp_path, good, bad)
    page = compare_page.pages(root)[compare_page.PAGE]
    assert "failed**: `TimeoutError: the stack never came up`" in page
    assert "## Headline" in page  # from the complete run
    only_bad = _root_with(tmp_path / "b", bad)
    page = compare_page.pages(only_bad)[compare_page.PAGE]
    assert "failed**" in page and "## Headline" not in page
    save_record(only_bad / accuracy_report.ACCURACY_RECORDS, {**bad, "kafka": "4.1.1"})
    accuracy = accuracy_report.pages(only_bad)[accuracy_report.PAGE]
    assert "**This run failed**: `TimeoutError: the stack never came up`" in accuracy


def test_a_record_above_a_megabyte_is_gzipped(tmp_path: Path) -> None:
    record = {"kind": "accuracy", "started": "2026-01-01T00:00:00+00:00", "kafka": "3.9.1",
              "status": "failed", "padding": "x" * (GZIP_ABOVE + 1)}
    path = save_record(tmp_path, record)
    assert path.name.endswith(".json.gz")
    assert json.loads(gzip.decompress(path.read_bytes()))["padding"] == record["padding"]
    [loaded] = load_records(tmp_path)
    assert loaded["padding"] == record["padding"]


def test_rounding_keeps_milliseconds_as_integers_and_drops_non_finite() -> None:
    peers = round_peers({"t": {"g/t": [[1.6, 2.00049, 3.0], [2.0, math.inf, None]]}})
    assert peers == {"t": {"g/t": [[2, 2.0, 3.0], [2, None, None]]}}


def test_a_scrape_job_has_its_own_interval_and_a_timeout_within_it() -> None:
    job = ScrapeJob("klag_rate_30s", ("127.0.0.1:1",), 30.0).config()
    assert job["scrape_interval"] == "30s" and job["scrape_timeout"] == "10s"
    assert ScrapeJob("ours", ("127.0.0.1:2",), 1.5).config()["scrape_interval"] == "1500ms"
    assert "scrape_interval" not in ScrapeJob("x", ("127.0.0.1:3",)).config()


def test_where_a_peer_wins_the_page_splits_the_gauges_error_into_timing_and_burrow(
    tmp_path: Path,
) -> None:
    """The gauge is the truth of its cycle, 1 s before the scrape: all of its error is timing,
    none Burrow's; a peer 0.5 s over the truth beats it, so the page says why."""
    record = _tiny_record()
    for row in record["run"]["shapes"][0]["samples"]:
        # the cycle whose value the scrape saw, published as it measured (no duration)
        row[4], row[5] = row[0] - 1000, 0.0
    record["peers"]["klag_message"]["acc-x-stuck-group/acc-x-stuck"] = [
        [t, v - 2.5, None] for t, v, _n in record["peers"]["klag_message"][
            "acc-x-stuck-group/acc-x-stuck"]]
    page = compare_page.pages(_root_with(tmp_path, record))[compare_page.PAGE]
    beats = page.split("## Where a peer beats us")[1].split("\n## ")[0]
    assert "stuck, mean |error|: klag-exporter \"message\" 0.50 s against" in beats
    # 48 of the 58 samples are 1 s behind a growing truth, the others at 0
    assert ("stuck: gauge 0.83 s, its cycles with exact offsets 0.83 s (Burrow's share 0.00 s), "
            "exact offsets every 2 s ") in beats
    assert " s by phase)" in beats
    assert "ours' cycles started every 1.00 s in this run, the median" in beats  # 1 s apart
    assert "(0.00 s before the cycle published it in this run" in beats


def _replica_record() -> dict[str, Any]:
    """The stuck-at-10 story at two phases (the second 1 s later, on its own topic and group):
    the rule exact, a peer 3 s over the truth on the first phase and 1 s over on the second."""
    shape = Shape("stuck", "Stuck", "stalls at 10 s", tuple(float(i) for i in range(60)),
                  ((0.0, 0.0), (10.0, None)), (Event("stall", "onset", 10.0),))
    cfg = HarnessConfig(duration_s=59.0, moment_window_s=5.0, frequency_s=2.0, replicas=2)
    runs, rule, peer = [], {}, {}
    for k, (over_s, name) in enumerate(((3.0, "acc-x-stuck-r0"), (1.0, "acc-x-stuck-r1"))):
        shift_ms = k * 1000
        truth = TruthLog()
        for i in range(60):
            truth.produced(i, T0 + shift_ms + i * 1000)
        for i in range(11):
            truth.committed(T0 + shift_ms + i * 1000, i)
        samples, points, rows = [], [], []
        for i in range(1, 59):
            t = T0 + i * 1000 + 0.4
            fresh = truth.freshness_ms(t)
            assert fresh is not None
            samples.append(_sample(t, ours_ms=max(fresh - 1000, 0.0), committed=min(i, 10)))
            points.append([t, fresh / 1000])
            rows.append([t, fresh / 1000 + over_s, None])
        runs.append(ShapeRun(shape.shifted(k * 1.0), name, f"{name}-group", truth, samples,
                             replica=k))
        rule[f"{name}-group"] = points
        peer[f"{name}-group/{name}"] = rows
    run = RunData(cfg, T0, T0 + 59_000, runs, wall_s=70.0)
    record = _tiny_record()
    record.update(config=cfg.__dict__, run=round_run(run.to_json()),
                  peers=round_peers({"klag_message": peer}), rule=round_rule({"rule": rule}))
    return record


def test_a_replica_record_renders_pooled_per_shape(tmp_path: Path) -> None:
    root = _root_with(tmp_path, _replica_record())
    [loaded] = load_records(root / compare_page.RECORDS)
    run = RunData.from_json(loaded["run"])
    assert [(r.replica, r.group) for r in run.shapes] == [
        (0, "acc-x-stuck-r0-group"), (1, "acc-x-stuck-r1-group")]
    assert run.shapes[1].shape.events[0].at_s == 11.0
    [shape] = score_peers(run, loaded["peers"], loaded["rule"])
    assert len(shape.replicas) == 2 and len(shape.result.replicas) == 2
    assert shape.peers["klag_message"].mean_abs_s == pytest.approx(2.0, abs=0.01)
    assert shape.peers["klag_message"].samples == 116
    assert shape.rule is not None and shape.rule.mean_abs_s == pytest.approx(0.0, abs=0.01)
    delay = shape.peers["klag_message"].alarm_delay_range_s
    assert delay is not None and delay[0] < delay[1]  # 3 s over alerts earlier than 1 s over
    page = compare_page.pages(root)[compare_page.PAGE]
    assert page == compare_page.pages(root)[compare_page.PAGE]
    assert "Each shape ran 2 times at once (2 phases)" in page
    assert page.count("| stuck | 0.") == 1  # one pooled headline row
    assert f"{delay[0]:+.1f} to {delay[1]:+.1f})" in page
    accuracy = accuracy_report.pages(root)[accuracy_report.PAGE]
    assert "Each shape ran 2 times at once (2 phases)" in accuracy
    assert accuracy.count("| **stuck** |") == 1


def test_a_one_replica_record_says_nothing_of_phases(tmp_path: Path) -> None:
    root = _root_with(tmp_path, _tiny_record())
    assert "times at once (" not in compare_page.pages(root)[compare_page.PAGE]
    assert "times at once (" not in accuracy_report.pages(root)[accuracy_report.PAGE]


def test_after_onset_the_gauges_zeros_while_the_truth_grows_are_counted_as_burrows() -> None:
    """Stalled at 10 s (record 10 waits from then); the gauge shows 0 for the first two samples
    after the onset (Burrow not yet showing the lag), then the truth 1 s late."""
    from benchmarks.accuracy.analysis import unseen_lag_after_onset_s, unseen_lag_in_run_s

    shape = Shape("stuck", "Stuck", "stalls at 10 s", tuple(float(i) for i in range(30)),
                  ((0.0, 0.0), (10.0, None)), (Event("stall", "onset", 10.0),))
    truth = TruthLog()
    for i in range(30):
        truth.produced(i, T0 + i * 1000)
    for i in range(11):
        truth.committed(T0 + i * 1000, i)
    samples = []
    for i in range(11, 21):
        t = T0 + i * 1000 + 500.0
        fresh = truth.freshness_ms(t)
        assert fresh is not None
        samples.append(_sample(t, ours_ms=0.0 if i < 13 else fresh - 1000))
    run = ShapeRun(shape, "acc-x-stuck", "acc-x-stuck-group", truth, samples)
    got = unseen_lag_after_onset_s([run], T0, window_s=20.0)
    assert got is not None
    mean_error, unseen = got
    # truth at 11.5 s and 12.5 s: 1.5 and 2.5 s, shown as 0; the other 8 samples 1 s off
    assert unseen == pytest.approx((1.5 + 2.5) / 10)
    assert mean_error == pytest.approx((1.5 + 2.5 + 8 * 1.0) / 10)
    assert unseen_lag_after_onset_s([run], T0 + 60_000, window_s=20.0) is None
    # over the whole run the same two zeros weigh on all ten samples alike
    assert unseen_lag_in_run_s([run], T0, T0 + 30_000) == pytest.approx(got)
