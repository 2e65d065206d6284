"""Freshness objectives over time: the pure SLO math behind the Spark report. No I/O, no pyspark.

A *series* is the samples of one consumer group (or one topic of it): (sample time, freshness)
pairs, freshness None when it was not measured that cycle. The rules, decided here once:

- **Sample and hold.** A sample's value holds from its time until the next sample, provided the
  next one comes within `max_gap_ms` (N cycles). A longer gap is **no data for its whole
  length**, never good; so is the stretch from the last sample to the window end when it is
  longer than `max_gap_ms`, and the start of the window when no sample precedes it closely
  enough. A sample without a value (lookup failed) holds "no data" too.
- **Breach**: freshness strictly above the objective; exactly at the objective is within it.
- **Time over objective** is the held time in breach; the **longest breach** is the longest run
  of consecutive breached time (no data ends a run: we cannot say it went on).
- **Attainment** (`compliance`) = good time / time with data, where good = held and within
  the objective: no data is neither good nor bad, as Prometheus SLO tooling (Sloth, Pyrra)
  computes a ratio over the samples that exist. The **no-data share** is reported beside it.
- **Verdict**, compared exactly (integers and Fraction shares, so a value at a boundary
  passes): **missed** when the time over the objective alone exceeds the window's error
  budget ((1 − target) × window: no missing data could change that), else **insufficient
  data** when less than `min_coverage` of the window has data (default half), else **met**
  iff attainment ≥ target, else missed. `met` is True, False, or None (no objective, or
  insufficient data).
- **Percentiles** are over the samples inside the window (not time-weighted), linearly
  interpolated between the closest ranks (numpy's default, Spark SQL's `percentile`).

Times are integer epoch milliseconds; the window is [start, end).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from fractions import Fraction

__all__ = [
    "DEFAULT_MIN_COVERAGE",
    "INSUFFICIENT",
    "Episode",
    "Objective",
    "SeriesStats",
    "Span",
    "evaluate_series",
    "hold_spans",
    "in_group_series",
    "infer_cycle_ms",
    "objective_for_group",
    "objective_for_topic",
    "parse_target",
    "percentile",
    "verdict",
]


#: A verdict needs data for at least this share of the window (`evaluate_series`).
DEFAULT_MIN_COVERAGE = Fraction(1, 2)
#: The verdict of a series with too little data to be judged.
INSUFFICIENT = "insufficient data"


# --- objectives ---------------------------------------------------------------------------


def parse_target(value: object) -> Fraction:
    """A target share as an exact Fraction: "99.9%", 99.9 (a percent when > 1) or 0.999.

    Raises ValueError unless 0 < target ≤ 1.
    """
    text = str(value).strip()
    percent = text.endswith("%")
    if percent:
        text = text[:-1].strip()
    try:
        number = Fraction(Decimal(text))
    except (InvalidOperation, ValueError):
        # not quoted: the text may come from a substitution of a secret; the caller names it
        raise ValueError("not a share; write e.g. 99.9% or 0.999") from None
    if percent or number > 1:
        number /= 100
    if not 0 < number <= 1:
        raise ValueError(f"{value!r} is not between 0% (excluded) and 100%")
    return number


@dataclass(frozen=True, slots=True)
class Objective:
    """`freshness_ms` must hold for `target` of the time, for consumers (and topics) matched.

    Patterns fully match and `.` matches a newline too, exactly as the group filters
    (`filters.NameFilter`) and Prometheus 3 (`^(?s:…)$`) read the same regex: a group id may
    hold a newline, and `.*` must judge it rather than leave it without an objective.
    `topic` None means every topic of the consumer.
    """

    consumer: str
    freshness_ms: int
    target: Fraction
    topic: str | None = None
    _consumer_re: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _topic_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.freshness_ms < 0:
            raise ValueError(f"objective freshness must not be negative: {self.freshness_ms}")
        if not 0 < self.target <= 1:
            raise ValueError(f"objective target must be in (0, 1]: {self.target}")
        object.__setattr__(self, "_consumer_re", re.compile(self.consumer, re.DOTALL))
        object.__setattr__(self, "_topic_re", re.compile(self.topic, re.DOTALL)
                           if self.topic is not None else None)

    def matches_consumer(self, consumer: str) -> bool:
        return self._consumer_re.fullmatch(consumer) is not None

    def matches_topic(self, topic: str) -> bool:
        return self._topic_re is None or self._topic_re.fullmatch(topic) is not None

    @property
    def label(self) -> str:
        target = f"{float(self.target) * 100:.6g}%"
        scope = self.consumer if self.topic is None else f"{self.consumer} / {self.topic}"
        return f"{scope}: freshness ≤ {self.freshness_ms / 1000:g} s for {target} of the time"


def objective_for_topic(objectives: Sequence[Objective], consumer: str, topic: str) -> int | None:
    """Index of the first objective matching both consumer and topic (a topic's own series)."""
    return next((i for i, o in enumerate(objectives)
                 if o.matches_consumer(consumer) and o.matches_topic(topic)), None)


def objective_for_group(objectives: Sequence[Objective], consumer: str) -> int | None:
    """Index of the first objective matching the consumer: it judges the group's series, which
    is the worst partition over the topics that objective selects (all when it names none)."""
    return next((i for i, o in enumerate(objectives) if o.matches_consumer(consumer)), None)


def in_group_series(objectives: Sequence[Objective], consumer: str, topic: str) -> bool:
    """Whether the topic feeds the consumer's own series (see `objective_for_group`)."""
    index = objective_for_group(objectives, consumer)
    return index is None or objectives[index].matches_topic(topic)


# --- series -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Stretch:
    """[start, end) of the window, in milliseconds."""

    start_ms: int
    end_ms: int

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms


@dataclass(frozen=True, slots=True)
class Span(_Stretch):
    """A stretch of the window with one held value; `value` None means no data."""

    value: int | None


@dataclass(frozen=True, slots=True)
class Episode(_Stretch):
    """One continuous breach: [start, end) and the worst freshness held during it."""

    peak_ms: int


@dataclass(frozen=True, slots=True)
class SeriesStats:
    window_ms: int
    samples: int  # samples with a value inside the window
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: int | None
    measured_ms: int  # held time (with a value)
    no_data_ms: int
    over_ms: int  # time over objective
    good_ms: int  # held and within objective
    longest_breach_ms: int
    episodes: tuple[Episode, ...]
    no_data: tuple[Span, ...]  # the no-data stretches, adjacent ones merged
    compliance: float | None  # attainment: good / measured; None without objective or data
    met: bool | None  # None without an objective or with insufficient data
    verdict: str | None = None  # "met", "missed", INSUFFICIENT; None without an objective

    @property
    def over_share(self) -> float:
        return self.over_ms / self.window_ms if self.window_ms else 0.0

    @property
    def no_data_share(self) -> float:
        return self.no_data_ms / self.window_ms if self.window_ms else 0.0


def verdict(window_ms: int, measured_ms: int, over_ms: int, target: Fraction,
            min_coverage: Fraction = DEFAULT_MIN_COVERAGE) -> str:
    """"met", "missed" or INSUFFICIENT for one series (the rule in the module doc)."""
    good = measured_ms - over_ms
    if over_ms * target.denominator > (target.denominator - target.numerator) * window_ms:
        return "missed"  # the whole window's error budget is spent on measured breaches
    if measured_ms <= 0 or measured_ms * min_coverage.denominator < \
            min_coverage.numerator * window_ms:
        return INSUFFICIENT
    return "met" if good * target.denominator >= target.numerator * measured_ms else "missed"


def _merge(times: Sequence[int], values: Sequence[int | None]) -> list[tuple[int, int | None]]:
    """Sorted samples, one per time; duplicates keep the worst known value."""
    if len(times) != len(values):
        raise ValueError(f"{len(times)} times but {len(values)} values")
    merged: dict[int, int | None] = {}
    for t, v in zip(times, values, strict=True):
        old = merged.get(int(t))  # None too when the time is new: v then stands
        merged[int(t)] = v if old is None else (old if v is None else max(old, v))
    return sorted(merged.items())


def hold_spans(
    times: Sequence[int],
    values: Sequence[int | None],
    window_start_ms: int,
    window_end_ms: int,
    max_gap_ms: int,
) -> list[Span]:
    """Tile [window_start, window_end) with held values and no-data spans (see module doc).

    Samples before the window only carry a value into it; samples at or after its end are
    ignored except as the end of the previous sample's hold.
    """
    if max_gap_ms <= 0:
        raise ValueError(f"max_gap_ms must be positive, got {max_gap_ms}")
    if window_end_ms < window_start_ms:
        raise ValueError("the window ends before it starts")
    samples = _merge(times, values)
    spans: list[Span] = []
    covered = window_start_ms
    for i, (t, value) in enumerate(samples):
        if t >= window_end_ms:
            break
        nxt = samples[i + 1][0] if i + 1 < len(samples) else window_end_ms
        start, end = max(t, covered), min(nxt, window_end_ms)
        if end <= start:
            continue
        if start > covered:
            spans.append(Span(covered, start, None))
        spans.append(Span(start, end, value if nxt - t <= max_gap_ms else None))
        covered = end
    if covered < window_end_ms:
        spans.append(Span(covered, window_end_ms, None))
    return spans


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """The q-quantile (0 ≤ q ≤ 1) with linear interpolation between closest ranks."""
    n = len(sorted_values)
    if n == 0:
        return None
    if not 0 <= q <= 1:
        raise ValueError(f"q must be within [0, 1], got {q}")
    pos = q * (n - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    low, high = float(sorted_values[lo]), float(sorted_values[hi])
    return low + (high - low) * (pos - lo)


def infer_cycle_ms(times: Sequence[int]) -> int | None:
    """The series' cycle length: the median spacing of distinct sample times (None if < 2)."""
    distinct = sorted(set(int(t) for t in times))
    gaps = sorted(b - a for a, b in itertools.pairwise(distinct))
    if not gaps:
        return None
    mid = len(gaps) // 2
    return gaps[mid] if len(gaps) % 2 else (gaps[mid - 1] + gaps[mid]) // 2


def _episodes(spans: Sequence[Span], objective_ms: int) -> list[Episode]:
    episodes: list[Episode] = []
    for s in spans:
        if s.value is None or s.value <= objective_ms:
            continue
        last = episodes[-1] if episodes else None
        if last is not None and last.end_ms == s.start_ms:
            episodes[-1] = Episode(last.start_ms, s.end_ms, max(last.peak_ms, s.value))
        else:
            episodes.append(Episode(s.start_ms, s.end_ms, s.value))
    return episodes


def _no_data(spans: Sequence[Span]) -> list[Span]:
    merged: list[Span] = []
    for s in spans:
        if s.value is not None:
            continue
        if merged and merged[-1].end_ms == s.start_ms:
            merged[-1] = Span(merged[-1].start_ms, s.end_ms, None)
        else:
            merged.append(s)
    return merged


def evaluate_series(
    times: Sequence[int],
    values: Sequence[int | None],
    *,
    window_start_ms: int,
    window_end_ms: int,
    max_gap_ms: int,
    objective_ms: int | None = None,
    target: Fraction | None = None,
    min_coverage: Fraction = DEFAULT_MIN_COVERAGE,
) -> SeriesStats:
    """Everything the report says about one series in one window."""
    spans = hold_spans(times, values, window_start_ms, window_end_ms, max_gap_ms)
    window = window_end_ms - window_start_ms
    measured = sum(s.duration_ms for s in spans if s.value is not None)
    inside = sorted(v for t, v in _merge(times, values)
                    if v is not None and window_start_ms <= t < window_end_ms)
    episodes = _episodes(spans, objective_ms) if objective_ms is not None else []
    over = sum(e.duration_ms for e in episodes)
    good = measured - over
    met: bool | None = None
    compliance: float | None = None
    judged: str | None = None
    if objective_ms is not None and window > 0:
        compliance = good / measured if measured else None
        if target is not None:
            judged = verdict(window, measured, over, target, min_coverage)
            met = None if judged == INSUFFICIENT else judged == "met"
    return SeriesStats(
        window_ms=window,
        samples=len(inside),
        p50_ms=percentile(inside, 0.50),
        p95_ms=percentile(inside, 0.95),
        p99_ms=percentile(inside, 0.99),
        max_ms=inside[-1] if inside else None,
        measured_ms=measured,
        no_data_ms=window - measured,
        over_ms=over,
        good_ms=good,
        longest_breach_ms=max((e.duration_ms for e in episodes), default=0),
        episodes=tuple(episodes),
        no_data=tuple(_no_data(spans)),
        compliance=compliance,
        met=met,
        verdict=judged,
    )
