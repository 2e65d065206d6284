"""Scoring: each method's error against the ground truth, on the same samples.

Errors are in seconds. Per method and shape: mean and max absolute error over the samples where
the method gave a number, the share of samples where it gave none (NaN) or +Inf, the mean
absolute error in the ``moment_window_s`` after the onset and after the recovery, and the seconds
of false alarms (value > threshold while the truth is below it) and missed alarms.

Our exporter publishes the value of its last completed cycle, so at a sample time t its value is
the truth of a moment up to one cycle period P (``frequency_sec`` + the cycle's duration) earlier,
measured from Burrow data up to R older still (Burrow's offset-refresh and its reading of the
commit from ``__consumer_offsets``, ``refresh_allowance_s``). Three views of our error:

* raw: |value(t) − truth(t)|;
* within one cycle: min over τ in [t − P, t] of |value(t) − truth(τ)|, i.e. the error left once
  the publication delay is forgiven (what remains is Burrow's own visibility delay);
* refresh needed: the smallest R such that value(t) lies between truth(τ) and truth(τ) + R for
  some τ in [t − P − R, t]. Above ``refresh_allowance_s`` the value is beyond one cycle + refresh
  of the truth: a bug to find.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from benchmarks.accuracy.estimators import estimate_series
from benchmarks.accuracy.harness import HarnessConfig, RunData, ShapeRun
from benchmarks.accuracy.sampler import Sample
from freshness_tracker.domain.freshness import still_waiting
from freshness_tracker.domain.model import PartitionKey, PartitionLag

__all__ = ["METHODS", "MethodScore", "ShapeResult", "TimingShare", "analyse", "analyse_shape",
           "pool_delays", "pool_replicas", "pool_results", "pool_scores", "pool_timing",
           "timing_share"]

_T = TypeVar("_T")

METHODS = {
    "ours": "freshness-tracker",
    "ours_cycle": "freshness-tracker, within one cycle",
    "interpolation": "interpolation (kafka-lag-exporter)",
    "rate": "offset lag ÷ produce rate",
}

GRID_S = 0.025  # truth evaluation step inside a sample's cycle window
SLACK_S = 0.1  # clock and scrape slack for the excess check
MAX_REFRESH_SCAN_S = 10.0  # how far beyond one cycle to look for the truth a value matches


@dataclass
class MethodScore:
    method: str
    samples: int
    mean_abs_s: float
    max_abs_s: float
    onset_s: float | None
    recovery_s: float | None
    false_alarm_s: float
    missed_s: float
    nan_pct: float
    inf_pct: float
    alarm_delay_s: float | None = None
    # what pooling replicas needs: samples with an error, in the onset / recovery windows
    defined: int = 0
    onset_n: int = 0
    recovery_n: int = 0
    #: pooled replicas: the least and greatest first-alert delay among them
    alarm_delay_range_s: tuple[float, float] | None = None
    #: (seconds after start, |error|) of every sample in the onset window (pooled: every
    #: replica's), so a gap after onset can be set against the spread of the clock's periods
    onset_points: tuple[tuple[float, float], ...] = field(default=(), repr=False)


@dataclass
class ShapeResult:
    run: ShapeRun
    scores: dict[str, MethodScore]
    events: list[tuple[str, str, float]]  # (label, kind, seconds after start)
    t_s: list[float]  # sample times (metrics), s after start
    t_est_s: list[float]  # Burrow poll times, s after start
    truth_s: list[float]  # truth at t_s
    ours_s: list[float]
    interp_s: list[float]
    rate_s: list[float]
    curve_t_s: list[float]  # the truth, densely
    curve_s: list[float]
    cycle_window_s: float
    max_excess_s: float
    excess_samples: list[float] = field(default_factory=list)  # t_s of samples with excess > 0
    coverage_pct: float = 100.0
    refresh_needed_s: float = 0.0  # the smallest R that explains every value (see module doc)
    aligned_s: list[float] = field(default_factory=list)  # per sample: our within-one-cycle error
    #: a pooled result (:func:`pool_results`): every replica's own result; its curves and
    #: samples above are the first replica's
    replicas: list[ShapeResult] = field(default_factory=list)


def _nan_if_none(v: float | int | None) -> float:
    return math.nan if v is None else float(v)


def _leo(s: Sample) -> int | None:
    """LEO as a Burrow-based exporter sees it: end.offset + current_lag (what ours uses too)."""
    if s.committed is None or s.current_lag is None:
        return None
    return int(s.committed) + int(s.current_lag)


def analyse(run: RunData) -> list[ShapeResult]:
    cycle_max = max((s.cycle_s or 0.0 for r in run.shapes for s in r.samples), default=0.0)
    window = run.config.frequency_s + cycle_max + SLACK_S
    return [analyse_shape(r, run.config, run.t0_ms, run.end_ms, window) for r in run.shapes]


def analyse_shape(r: ShapeRun, cfg: HarnessConfig, t0_ms: float, end_ms: float,
                  cycle_window_s: float) -> ShapeResult:  # fmt: skip
    def truth_s(t_ms: float) -> float:
        v = r.truth.freshness_ms(t_ms)
        return math.nan if v is None else v / 1000

    samples = [s for s in r.samples if t0_ms <= s.metrics_ms <= end_ms]
    t_s = [(s.metrics_ms - t0_ms) / 1000 for s in samples]
    t_est_s = [(s.burrow_ms - t0_ms) / 1000 for s in samples]
    truth_at = [truth_s(s.metrics_ms) for s in samples]
    truth_est = [truth_s(s.burrow_ms) for s in samples]
    ours = [_nan_if_none(s.ours_ms) / 1000 for s in samples]
    interp_ms, rate_ms = estimate_series(
        [(s.burrow_ms, s.committed, _leo(s)) for s in samples],
        table_limit=cfg.table_limit, rate_window_ms=cfg.rate_window_s * 1000,
        table_poll_ms=cfg.table_poll_s * 1000)
    interp = [v / 1000 for v in interp_ms]
    rate = [v / 1000 for v in rate_ms]

    duration_s = (end_ms - t0_ms) / 1000
    curve_t = [i * 0.1 for i in range(int(duration_s * 10) + 1)]
    curve = [truth_s(t0_ms + t * 1000) for t in curve_t]
    events = _resolve_events(r, curve_t, curve)

    # our value against the truth over its cycle window
    aligned, lo, hi, needed = [], [], [], []
    steps = int(cycle_window_s / GRID_S)
    scan = steps + int(MAX_REFRESH_SCAN_S / GRID_S)
    for s, v in zip(samples, ours, strict=True):
        window = [math.nan if w is None else w / 1000 for w in r.truth.freshness_descending(
            [s.metrics_ms - k * GRID_S * 1000 for k in range(scan + 1)])]
        in_cycle = [w for w in window[: steps + 1] if not math.isnan(w)] or [math.nan]
        lo.append(min(in_cycle))
        hi.append(max(in_cycle))
        if math.isnan(v):
            aligned.append(math.nan)
            needed.append(0.0)
            continue
        aligned.append(min(abs(v - w) for w in in_cycle))
        needed.append(_refresh_needed(v, window, steps))
    allowance = cfg.refresh_allowance_s
    onsets = [t for _, kind, t in events if kind == "onset"]
    recoveries = [t for _, kind, t in events if kind == "recovery"]
    score = _Scorer(cfg, onsets[:1], recoveries[:1], curve_t, curve)
    scores = {
        "ours": score("ours", t_s, ours, truth_at, truth_at, truth_at),
        "ours_cycle": score("ours_cycle", t_s, ours, truth_at, lo, hi, errors=aligned),
        "interpolation": score("interpolation", t_est_s, interp, truth_est, truth_est, truth_est),
        "rate": score("rate", t_est_s, rate, truth_est, truth_est, truth_est),
    }
    return ShapeResult(
        run=r, scores=scores, events=events, t_s=t_s, t_est_s=t_est_s, truth_s=truth_at,
        ours_s=ours, interp_s=interp, rate_s=rate, curve_t_s=curve_t, curve_s=curve,
        cycle_window_s=cycle_window_s,
        max_excess_s=max(max(needed, default=0.0) - allowance, 0.0),
        excess_samples=[t for t, n in zip(t_s, needed, strict=True) if n > allowance],
        refresh_needed_s=max(needed, default=0.0), aligned_s=aligned,
        coverage_pct=100.0 * sum(not math.isnan(v) for v in ours) / max(len(ours), 1),
    )


def _weighted(pairs: Sequence[tuple[float | None, int]]) -> float | None:
    """The mean of per-replica means weighted by their counts (None: every one None)."""
    given = [(v, n) for v, n in pairs if v is not None]
    if not given:
        return None
    total = sum(n for v, n in given if n and not math.isnan(v))
    return (sum(v * n for v, n in given if n and not math.isnan(v)) / total if total
            else math.nan)


def pool_delays(delays: Sequence[float | None]) -> tuple[float | None, tuple[float, float] | None]:
    """Replicas' first-alert delays: their mean and (least, greatest); None-s (no crossing) are
    left out, a never (+inf) makes the mean never."""
    given = [d for d in delays if d is not None]
    if not given:
        return None, None
    return sum(given) / len(given), (min(given), max(given))


def pool_scores(scores: Sequence[MethodScore]) -> MethodScore:
    """One method's scores over replicas of a shape, as if scored on all their samples at once.

    Errors are pooled over samples (mean |error| and the error after onset / recovery weighted
    by each replica's samples; max over replicas); alarm seconds are the mean per replica (so
    the figure stays "seconds in one run of the shape", comparable with one-replica runs); the
    first alert is the mean over replicas with its range."""
    first = scores[0]
    if len(scores) == 1:
        return first
    n = sum(s.samples for s in scores)
    mean = _weighted([(s.mean_abs_s, s.defined) for s in scores])
    delay, span = pool_delays([s.alarm_delay_s for s in scores])
    maxima = [s.max_abs_s for s in scores if not math.isnan(s.max_abs_s)]
    return MethodScore(
        method=first.method, samples=n,
        mean_abs_s=math.nan if mean is None else mean,
        max_abs_s=max(maxima, default=math.nan),
        onset_s=_weighted([(s.onset_s, s.onset_n) for s in scores]),
        recovery_s=_weighted([(s.recovery_s, s.recovery_n) for s in scores]),
        false_alarm_s=sum(s.false_alarm_s for s in scores) / len(scores),
        missed_s=sum(s.missed_s for s in scores) / len(scores),
        nan_pct=sum(s.nan_pct * s.samples for s in scores) / max(n, 1),
        inf_pct=sum(s.inf_pct * s.samples for s in scores) / max(n, 1),
        alarm_delay_s=delay, defined=sum(s.defined for s in scores),
        onset_n=sum(s.onset_n for s in scores), recovery_n=sum(s.recovery_n for s in scores),
        alarm_delay_range_s=span,
        onset_points=tuple(p for s in scores for p in s.onset_points),
    )


def pool_replicas(items: Sequence[_T], shape_name: Callable[[_T], str],
                  pool: Callable[[list[_T]], _T]) -> list[_T]:
    """Replicas of each shape (same ``shape_name``) as one item per shape, in first-seen order:
    ``pool`` of its replicas, or a shape's one replica as it is."""
    groups: dict[str, list[_T]] = {}
    for item in items:
        groups.setdefault(shape_name(item), []).append(item)
    return [group[0] if len(group) == 1 else pool(group) for group in groups.values()]


def pool_results(results: Sequence[ShapeResult]) -> list[ShapeResult]:
    """Replicas of each shape (same name) as one result per shape, in first-seen order: scores
    pooled (:func:`pool_scores`), the worst excess of any replica; curves of the first replica.
    A shape with one replica is returned as it is."""
    def pool(group: list[ShapeResult]) -> ShapeResult:
        first = group[0]
        return dataclasses.replace(
            first,
            scores={k: pool_scores([g.scores[k] for g in group]) for k in first.scores},
            max_excess_s=max(g.max_excess_s for g in group),
            refresh_needed_s=max(g.refresh_needed_s for g in group),
            coverage_pct=sum(g.coverage_pct for g in group) / len(group),
            replicas=list(group),
        )

    return pool_replicas(results, lambda r: r.run.shape.name, pool)


@dataclass(frozen=True)
class TimingShare:
    """How much of the gauge's error is the timing of its cycles, not the offsets it was given.

    Why: a gauge read between cycles shows the last cycle's value, so where the truth falls at
    a commit (or grows) after a cycle, any tool that polls makes that error until its next
    poll, whatever its source of offsets. Giving ours' own cycles the exact committed offsets
    (the harness's log) leaves only that timing; the rest of the gauge's error is Burrow's
    (commits and log end offsets it had not shown yet). A tool polling the exact truth every
    ``period`` shows how much of the timing error is the phase of its polls alone.
    """

    samples: int  # samples with a gauge value, its cycle's start and a truth
    gauge_s: float  # the gauge's mean |error| over them
    exact_at_cycles_s: float  # ours' cycles given the exact truth when they measured
    phase_mean_s: float  # a poller of the exact truth every period, mean over its phases
    phase_min_s: float
    phase_max_s: float


def timing_share(r: ShapeRun, t0_ms: float, end_ms: float, period_s: float,
                 phases: int = 40) -> TimingShare | None:  # fmt: skip
    """The shape's :class:`TimingShare` (None: no sample with a value, a cycle and a truth).

    The poller's phases are ``phases`` evenly spaced offsets of its first poll within one
    period; it shows the truth of its last poll, published at once (nothing of a lookup or a
    render: a floor for any tool polling every ``period_s``)."""

    def truth_s(t_ms: float) -> float | None:
        v = r.truth.freshness_ms(t_ms)
        return None if v is None else v / 1000

    rows = []
    for s in r.samples:
        if not t0_ms <= s.metrics_ms <= end_ms or s.ours_ms is None or s.cycle_start_ms is None:
            continue
        now, at_cycle = truth_s(s.metrics_ms), truth_s(_measured_ms(r, s, period_s))
        if now is not None and at_cycle is not None:
            rows.append((s.metrics_ms, now, abs(s.ours_ms / 1000 - now), abs(at_cycle - now)))
    if not rows:
        return None
    period_ms = period_s * 1000
    means = []
    for k in range(phases):
        first = t0_ms + period_ms * k / phases
        errors = []
        for t_ms, now, _gauge, _exact in rows:
            polled = truth_s(first + math.floor((t_ms - first) / period_ms) * period_ms)
            if polled is not None:
                errors.append(abs(polled - now))
        if errors:
            means.append(sum(errors) / len(errors))
    n = len(rows)
    return TimingShare(
        samples=n, gauge_s=sum(row[2] for row in rows) / n,
        exact_at_cycles_s=sum(row[3] for row in rows) / n,
        phase_mean_s=sum(means) / len(means) if means else math.nan,
        phase_min_s=min(means, default=math.nan), phase_max_s=max(means, default=math.nan),
    )


def _measured_ms(r: ShapeRun, s: Sample, period_s: float) -> float:
    """When ours' cycle of sample ``s`` measured the partition, had its offsets been exact: at
    the cycle's start, or at its end (its reads in) where the product's rule
    (``freshness.measured_at``) finds it still waiting where the cycle before saw it."""
    start = s.cycle_start_ms or 0.0
    committed = r.truth.committed_offset(start)
    waiting = 0 if committed is None else max(r.truth.records_at(start) - committed, 0)
    exact = PartitionLag(PartitionKey("", "", "", 0), committed, None, waiting, "OK")
    if still_waiting(exact, r.truth.committed_offset(start - period_s * 1000)):
        return start + (s.cycle_s or 0.0) * 1000
    return start


def cycle_period_s(runs: Sequence[ShapeRun]) -> float | None:
    """The median time between the starts of ours' successive cycles seen by the samples (None
    when fewer than two were seen): the period the gauge is held for, whatever the schedule."""
    starts = sorted({s.cycle_start_ms for r in runs for s in r.samples
                     if s.cycle_start_ms is not None})
    gaps = [(b - a) / 1000 for a, b in itertools.pairwise(starts)]
    return statistics.median(gaps) if gaps else None


def measured_before_publication_s(runs: Sequence[ShapeRun], shape: str = "stuck",
                                  min_truth_ms: float = 5_000.0) -> float | None:
    """How long before its cycle's end (its publication) ours' gauge was measured, the mean over
    the samples of a stuck group (None without one). While nothing is committed the truth is
    ``t − ts`` and the gauge ``o − ts``, so the moment of measurement is ``t − (truth − gauge)``:
    ours measures a partition when Burrow answered for its group, or when the cycle's reads
    were in if it still waits where the previous cycle saw it, and publishes once every answer
    of the cycle is in."""
    lags = []
    for r in runs:
        if r.shape.name != shape:
            continue
        for s in r.samples:
            if s.ours_ms is None or s.cycle_start_ms is None or s.cycle_s is None:
                continue
            truth = r.truth.freshness_ms(s.metrics_ms)
            if truth is None or truth < min_truth_ms:
                continue
            measured = s.metrics_ms - (truth - s.ours_ms)
            lags.append((s.cycle_start_ms + s.cycle_s * 1000 - measured) / 1000)
    return statistics.mean(lags) if lags else None


def unseen_lag_s(runs: Sequence[ShapeRun], windows: Callable[[ShapeRun], list[tuple[float, float]]]
                 ) -> tuple[float, float] | None:  # fmt: skip
    """(the gauge's mean |error| over the samples inside ``windows(run)`` (wall-clock ms
    spans), the part of it from samples where the gauge was 0 while the truth was not), pooled
    over ``runs``; None without such a sample. Such a 0 is a partition Burrow did not show
    lagging at the cycle: its log end offsets are refreshed every `offset-refresh`, so records
    written since are Burrow's to show before any cycle can read them."""
    n, error_ms, unseen_ms = 0, 0.0, 0.0
    for r in runs:
        spans = windows(r)
        for s in r.samples:
            truth = r.truth.freshness_ms(s.metrics_ms)
            if truth is None or s.ours_ms is None \
                    or not any(a <= s.metrics_ms <= b for a, b in spans):
                continue
            n += 1
            error_ms += abs(s.ours_ms - truth)
            if s.ours_ms == 0 and truth > 0:
                unseen_ms += truth
    return (error_ms / n / 1000, unseen_ms / n / 1000) if n else None


def exact_offsets_error_s(runs: Sequence[ShapeRun],
                          windows: Callable[[ShapeRun], list[tuple[float, float]]],
                          period_s: float) -> float | None:  # fmt: skip
    """Ours' cycles given the exact committed offsets (the harness's log) at the moment each
    measured: their mean |error| over the samples inside ``windows(run)`` whose cycle is known,
    pooled over ``runs`` (None without one). Set against the gauge over the same samples, the
    difference is Burrow's: commits and log end offsets it had not shown at the cycle."""
    errors = []
    for r in runs:
        spans = windows(r)
        for s in r.samples:
            if s.ours_ms is None or s.cycle_start_ms is None \
                    or not any(a <= s.metrics_ms <= b for a, b in spans):
                continue
            now = r.truth.freshness_ms(s.metrics_ms)
            at_cycle = r.truth.freshness_ms(_measured_ms(r, s, period_s))
            if now is not None and at_cycle is not None:
                errors.append(abs(at_cycle - now) / 1000)
    return statistics.mean(errors) if errors else None


def gauge_alert_parts_s(runs: Sequence[ShapeRun], t0_ms: float, threshold_s: float
                        ) -> tuple[float, float] | None:  # fmt: skip
    """Ours' gauge's first alert split in two, means over ``runs`` (None where none alerted):
    from the truth crossing ``threshold_s`` after the first onset to the publication of the
    first cycle whose value the harness read above it (the cycle's end: the phase of ours'
    cycles), and from that publication to the read (the harness's moment, one at random in
    every sample interval, as for every tool)."""
    published, read = [], []
    for r in runs:
        onset = next((e.at_s for e in r.shape.events if e.kind == "onset" and e.at_s is not None),
                     None)
        if onset is None or not r.truth.record_ts_ms:
            continue
        crossing = t0_ms + onset * 1000
        while crossing < r.truth.record_ts_ms[-1] + 10 * threshold_s * 1000:
            truth = r.truth.freshness_ms(crossing)
            if truth is not None and truth >= threshold_s * 1000:
                break
            crossing += 10.0
        else:
            continue
        first = next((s for s in r.samples if s.metrics_ms >= t0_ms + onset * 1000
                      and s.ours_ms is not None and s.ours_ms > threshold_s * 1000), None)
        if first is None or first.cycle_start_ms is None or first.cycle_s is None:
            continue
        end = first.cycle_start_ms + first.cycle_s * 1000
        published.append((end - crossing) / 1000)
        read.append((first.metrics_ms - end) / 1000)
    return (statistics.mean(published), statistics.mean(read)) if published else None


def onset_windows(t0_ms: float, window_s: float
                  ) -> Callable[[ShapeRun], list[tuple[float, float]]]:  # fmt: skip
    """The span "error after onset" averages over: ``window_s`` after a run's first onset (the
    scorer's, :class:`_Scorer`), none without one."""
    return lambda r: [(t0_ms + e.at_s * 1000, t0_ms + (e.at_s + window_s) * 1000)
                      for e in r.shape.events if e.kind == "onset" and e.at_s is not None][:1]


def read_age_s(runs: Sequence[ShapeRun],
               windows: Callable[[ShapeRun], list[tuple[float, float]]]) -> float | None:
    """The mean time from ours' latest published cycle to the harness's read of ours, over the
    samples inside ``windows`` (None without one). Why: a held value of a growing truth is off
    by its age at the read; read at random moments its mean age is half a cycle, and where a
    score rests on few reads (a window after onset) this says how far their moments fell from
    that."""
    ages = [(s.metrics_ms - s.cycle_start_ms) / 1000 - s.cycle_s
            for r in runs for start, end in windows(r) for s in r.samples
            if start <= s.metrics_ms <= end and s.cycle_start_ms is not None
            and s.cycle_s is not None]
    return statistics.mean(ages) if ages else None


def unseen_lag_after_onset_s(runs: Sequence[ShapeRun], t0_ms: float,
                             window_s: float) -> tuple[float, float] | None:
    """:func:`unseen_lag_s` over the ``window_s`` after each onset (None without an onset)."""
    return unseen_lag_s(runs, onset_windows(t0_ms, window_s))


def unseen_lag_in_run_s(runs: Sequence[ShapeRun], t0_ms: float,
                        end_ms: float) -> tuple[float, float] | None:
    """:func:`unseen_lag_s` over the whole scored run."""
    return unseen_lag_s(runs, lambda _r: [(t0_ms, end_ms)])


def pool_timing(shares: Sequence[TimingShare | None]) -> TimingShare | None:
    """Replicas' timing shares as one: means weighted by samples; the phase range is the least
    and greatest over every replica's phases."""
    given = [s for s in shares if s is not None]
    if not given:
        return None
    n = sum(s.samples for s in given)
    return TimingShare(
        samples=n, gauge_s=sum(s.gauge_s * s.samples for s in given) / n,
        exact_at_cycles_s=sum(s.exact_at_cycles_s * s.samples for s in given) / n,
        phase_mean_s=sum(s.phase_mean_s * s.samples for s in given) / n,
        phase_min_s=min(s.phase_min_s for s in given),
        phase_max_s=max(s.phase_max_s for s in given),
    )


def _refresh_needed(value: float, window: Sequence[float], steps: int) -> float:
    """The smallest Burrow delay R that explains ``value``: the least R such that for some τ in
    [t − P − R, t] the value is between truth(τ) and truth(τ) + R (``window[k]`` is truth(t − k
    grid steps), ``steps`` grid steps make P). Infinite if no τ in the scanned window does."""
    best = math.inf
    for k, w in enumerate(window):
        if math.isnan(w) or value - w < -SLACK_S:
            continue
        best = min(best, max(value - w - SLACK_S, (k - steps) * GRID_S, 0.0))
        if best == 0.0:
            break
    return best


def _resolve_events(r: ShapeRun, curve_t: list[float], curve: list[float]
                    ) -> list[tuple[str, str, float]]:  # fmt: skip
    events = []
    for e in r.shape.events:
        at = e.at_s
        if at is None:
            at = next((t for t, v in zip(curve_t, curve, strict=True)
                       if t >= e.after_s and v == 0.0), None)
        if at is not None:
            events.append((e.label, e.kind, at))
    return events


@dataclass
class _Scorer:
    cfg: HarnessConfig
    onsets: list[float]
    recoveries: list[float]
    curve_t: list[float]
    curve: list[float]

    def __call__(self, method: str, t: Sequence[float], values: Sequence[float],
                 truth: Sequence[float], truth_lo: Sequence[float], truth_hi: Sequence[float],
                 errors: Sequence[float] | None = None) -> MethodScore:  # fmt: skip
        n = len(values)
        if errors is None:
            errors = [abs(v - tr) if math.isfinite(v) else math.nan
                      for v, tr in zip(values, truth, strict=True)]
        defined = [e for e in errors if not math.isnan(e)]
        threshold = self.cfg.threshold_s
        interval = self.cfg.sample_interval_s
        false_alarms = sum(v > threshold and h < threshold
                           for v, h in zip(values, truth_hi, strict=True))
        missed = sum(lo_ >= threshold and not v > threshold
                     for v, lo_ in zip(values, truth_lo, strict=True))

        def points(starts: list[float]) -> list[tuple[float, float]]:
            start = starts[0] if starts else math.inf
            return [(ti, e) for ti, e in zip(t, errors, strict=True)
                    if start <= ti <= start + self.cfg.moment_window_s and not math.isnan(e)]

        def window(starts: list[float]) -> list[float]:
            return [e for _ti, e in points(starts)]

        def around(starts: list[float]) -> float | None:
            if not starts:
                return None
            picked = window(starts)
            return sum(picked) / len(picked) if picked else math.nan

        return MethodScore(
            method=method, samples=n,
            mean_abs_s=sum(defined) / len(defined) if defined else math.nan,
            max_abs_s=max(defined, default=math.nan),
            onset_s=around(self.onsets), recovery_s=around(self.recoveries),
            false_alarm_s=false_alarms * interval, missed_s=missed * interval,
            nan_pct=100.0 * sum(math.isnan(v) for v in values) / max(n, 1),
            inf_pct=100.0 * sum(math.isinf(v) for v in values) / max(n, 1),
            alarm_delay_s=self._alarm_delay(t, values), defined=len(defined),
            onset_n=len(window(self.onsets)), recovery_n=len(window(self.recoveries)),
            onset_points=tuple(points(self.onsets)),
        )

    def _alarm_delay(self, t: Sequence[float], values: Sequence[float]) -> float | None:
        """After the first onset: seconds from the truth crossing the threshold to the first
        sample at which the method is above it too (negative: it fired before the truth did)."""
        if not self.onsets:
            return None
        crossing = next((ct for ct, cv in zip(self.curve_t, self.curve, strict=True)
                         if ct >= self.onsets[0] and cv >= self.cfg.threshold_s), None)
        if crossing is None:
            return None
        onset, threshold = self.onsets[0], self.cfg.threshold_s
        first = next((ti for ti, v in zip(t, values, strict=True)
                      if ti >= onset and v > threshold), None)
        return math.inf if first is None else first - crossing
