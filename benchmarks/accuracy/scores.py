"""Scores beyond freshness: commit lag, "data current as of", the catch-up estimate, and the
offset threshold an offsets-only tool is judged with.

Each truth comes from the harness's own log (:class:`~benchmarks.accuracy.truth.TruthLog`),
never from Burrow or Kafka. The gauges are scored raw, as a scrape saw them: a value published
at the last cycle is compared with the truth at the moment it was read.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.accuracy.harness import ShapeRun
from benchmarks.accuracy.shapes import Shape
from benchmarks.accuracy.truth import TruthLog

__all__ = [
    "CATCH_UP_SHAPE",
    "CatchUpScore",
    "ErrorScore",
    "catch_up_score",
    "commit_lag_truth_ms",
    "data_as_of_truth_ms",
    "error_score",
    "offset_threshold",
    "pre_onset_rate",
]

CATCH_UP_SHAPE = "outage-catchup"


@dataclass
class ErrorScore:
    """|value − truth| in seconds over the samples where both exist."""

    samples: int  # samples read
    scored: int  # samples with both a value and a truth
    mean_abs_s: float
    max_abs_s: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def error_score(values_s: Sequence[float | None], truth_s: Sequence[float | None]) -> ErrorScore:
    errors = [abs(v - t) for v, t in zip(values_s, truth_s, strict=True)
              if v is not None and t is not None and math.isfinite(v) and math.isfinite(t)]
    return ErrorScore(len(values_s), len(errors),
                      sum(errors) / len(errors) if errors else math.nan,
                      max(errors, default=math.nan))


def _last_commit(truth: TruthLog, t_ms: float) -> tuple[int, int] | None:
    times = [c[0] for c in truth.commits]
    i = bisect.bisect_right(times, t_ms)
    return truth.commits[i - 1] if i else None


def commit_lag_truth_ms(truth: TruthLog, t_ms: float) -> float | None:
    """Commit lag at ``t``: the last commit's time minus the append time of the last record it
    committed (offset C − 1); None before a commit that covers a record."""
    last = _last_commit(truth, t_ms)
    if last is None or last[1] < 1 or last[1] - 1 >= len(truth.record_ts_ms):
        return None
    return float(last[0] - truth.record_ts_ms[last[1] - 1])


def data_as_of_truth_ms(truth: TruthLog, t_ms: float) -> float | None:
    """"Data current as of" at ``t``: the append time of the last committed record (C − 1)."""
    last = _last_commit(truth, t_ms)
    if last is None or last[1] < 1 or last[1] - 1 >= len(truth.record_ts_ms):
        return None
    return float(truth.record_ts_ms[last[1] - 1])


@dataclass
class CatchUpScore:
    """The catch-up estimate while the group catches up after its outage.

    Each sample's estimate predicts the moment the lag reaches 0 (read time + estimate); its
    error is that moment minus the moment the truth reached 0 (positive: predicted too late)."""

    outage_s: float  # how long the consumer was down
    catch_up_s: float  # from the consumer's resumption to the truth reaching 0
    samples: int  # samples read while catching up
    with_estimate: int  # of which carried an estimate
    mean_abs_s: float
    median_s: float
    max_abs_s: float
    first_s: float | None  # the first estimate's error
    first_after_s: float | None  # when it came, seconds after the resumption

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def caught_up_ms(truth: TruthLog, after_ms: float) -> float | None:
    """The first commit at or after ``after_ms`` that leaves nothing uncommitted."""
    for time_ms, offset in truth.commits:
        if time_ms >= after_ms and offset >= truth.records_at(time_ms):
            return float(time_ms)
    return None


def _phases(shape: Shape, t0_ms: float) -> tuple[float, float] | None:
    """(outage start, resume) in epoch ms: the consumer phase without processing, and the next."""
    phases = shape.consumer
    i = next((i for i, (_s, processing) in enumerate(phases) if processing is None), None)
    if i is None or i + 1 >= len(phases):
        return None
    return t0_ms + phases[i][0] * 1000, t0_ms + phases[i + 1][0] * 1000


def catch_up_score(r: ShapeRun, t0_ms: float) -> CatchUpScore | None:
    """The estimate's error on a shape with an outage and a resumption (None otherwise, or if
    the group never caught up in the run)."""
    phases = _phases(r.shape, t0_ms)
    if phases is None:
        return None
    down_ms, resume_ms = phases
    done_ms = caught_up_ms(r.truth, resume_ms)
    if done_ms is None:
        return None
    during = [s for s in r.samples if resume_ms <= s.metrics_ms < done_ms]
    timed = [(s.metrics_ms, (s.metrics_ms + s.ours_catch_up_s * 1000 - done_ms) / 1000)
             for s in during if s.ours_catch_up_s is not None]
    errors = [e for _t, e in timed]
    return CatchUpScore(
        outage_s=(resume_ms - down_ms) / 1000, catch_up_s=(done_ms - resume_ms) / 1000,
        samples=len(during), with_estimate=len(timed),
        mean_abs_s=sum(abs(e) for e in errors) / len(errors) if errors else math.nan,
        median_s=statistics.median(errors) if errors else math.nan,
        max_abs_s=max((abs(e) for e in errors), default=math.nan),
        first_s=errors[0] if errors else None,
        first_after_s=(timed[0][0] - resume_ms) / 1000 if timed else None,
    )


def _first_onset(shape: Shape) -> float | None:
    return next((e.at_s for e in shape.events if e.kind == "onset" and e.at_s is not None), None)


def pre_onset_rate(shape: Shape) -> float | None:
    """Records per second produced in the 30 s before the shape's first onset (None: no
    onset)."""
    onset = _first_onset(shape)
    if onset is None:
        return None
    window = [t for t in shape.produce_at_s if onset - 30 <= t < onset]
    span = min(30.0, onset)
    return len(window) / span if span > 0 else None


def offset_threshold(shape: Shape, threshold_s: float,
                     duration_s: float) -> tuple[float, str] | None:
    """The offset-lag threshold an offsets-only tool's alert is judged with: ``threshold_s`` ×
    the produce rate an operator who knew the topic would size it for, and which rate.

    The rate before the onset when records came then; on a topic idle before its onset (a
    burst), the run's average rate instead: a rate of 0 would make any backlog alert, a
    threshold of 0 records by construction. None without an onset."""
    rate = pre_onset_rate(shape)
    if rate is None:
        return None
    if rate > 0:
        return threshold_s * rate, "the produce rate over the 30 s before the onset"
    average = len(shape.produce_at_s) / duration_s if duration_s > 0 else 0.0
    return threshold_s * average, "the run's average produce rate (no records before the onset)"
