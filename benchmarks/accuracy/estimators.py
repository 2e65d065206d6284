"""The two ways offsets-only exporters estimate time lag, computed on the harness's samples.

Both see exactly what our exporter sees from Burrow at each sample: the group's committed offset
C (``end.offset`` of ``/lag``) and the partition's log end offset LEO (Burrow's cached broker
offset, ``/v3/kafka/{cluster}/topic/{topic}``), at the sample's poll time.

* :class:`LookupTable`: kafka-lag-exporter's interpolation (``LookupTable.scala`` and
  ``ConsumerGroupCollector.scala``, re-implemented here): per partition a sliding table of
  ``Point(offset=LEO, time=poll time)``, at most ``limit`` points (60 by default). A point older
  than or as old as the newest is dropped, so is one whose offset went down; a flat run is kept as
  two points (the newest one is moved forward). ``lookup(C)``: 0 when C equals the newest point's
  offset (``LagIsZero``); NaN with fewer than 2 points (``TooFewPoints``); otherwise the newest pair
  of adjacent points that brackets C is interpolated, or, if none does, the line through the first
  and last points is extrapolated. The lag is ``poll time − predicted time``.
* :class:`RateEstimator`: offset lag ÷ recent produce rate, the rate being the LEO delta over a
  sliding window of samples (as a ``rate(latest_offset[1m])`` recording rule gives). 0 when the
  offset lag is 0; +Inf when something is uncommitted but nothing was produced in the window;
  NaN until two samples exist.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["LookupTable", "Point", "RateEstimator", "estimate_series"]


@dataclass(frozen=True)
class Point:
    offset: int
    time_ms: float


class LookupTable:
    """kafka-lag-exporter's per-partition table of (LEO, poll time) points."""

    def __init__(self, limit: int = 60) -> None:
        if limit < 2:
            raise ValueError("a lookup table needs room for at least 2 points")
        self.limit = limit
        self.points: deque[Point] = deque()

    def add_point(self, point: Point) -> None:
        if self.points:
            newest = self.points[-1]
            if newest.time_ms >= point.time_ms:  # out of order
                return
            if newest.offset > point.offset:  # not monotonically increasing
                return
            if (newest.offset == point.offset and len(self.points) > 1
                    and self.points[-2].offset == point.offset):
                self.points[-1] = point  # compress a flat run to two points
                return
        if len(self.points) == self.limit:
            self.points.popleft()
        self.points.append(point)

    def predict_time_ms(self, offset: int) -> float | None:
        """The predicted append time of ``offset``; None for LagIsZero; NaN for TooFewPoints."""
        points = self.points
        if points and offset == points[-1].offset:
            return None
        if len(points) < 2:
            return math.nan
        left, right = points[0], points[-1]  # extrapolate unless a pair brackets the offset
        for i in range(len(points) - 1, 0, -1):  # newest pair first, like reverseIterator
            lo, hi = points[i - 1], points[i]
            if lo.offset <= offset <= hi.offset:
                left, right = lo, hi
                break
        dx = right.time_ms - left.time_ms
        dy = right.offset - left.offset
        big_dy = right.offset - offset
        return right.time_ms - _div(big_dy * dx, dy)

    def time_lag_ms(self, group_offset: int, poll_time_ms: float) -> float:
        predicted = self.predict_time_ms(group_offset)
        if predicted is None:
            return 0.0
        return poll_time_ms - predicted


def _div(numerator: float, denominator: float) -> float:
    """IEEE division as the JVM does it on doubles (x/0 is ±Inf, 0/0 is NaN)."""
    if denominator != 0:
        return numerator / denominator
    if numerator == 0 or math.isnan(numerator):
        return math.nan
    return math.copysign(math.inf, numerator)


class RateEstimator:
    """Offset lag ÷ produce rate, the rate taken over the last ``window_ms`` of samples."""

    def __init__(self, window_ms: float = 60_000) -> None:
        self.window_ms = window_ms
        self.history: deque[tuple[float, int]] = deque()

    def observe(self, time_ms: float, log_end_offset: int) -> None:
        self.history.append((time_ms, log_end_offset))
        while len(self.history) > 2 and self.history[1][0] <= time_ms - self.window_ms:
            self.history.popleft()

    def rate_per_ms(self) -> float:
        if len(self.history) < 2:
            return math.nan
        (t0, o0), (t1, o1) = self.history[0], self.history[-1]
        return (o1 - o0) / (t1 - t0) if t1 > t0 else math.nan

    def time_lag_ms(self, offset_lag: int) -> float:
        if offset_lag <= 0:
            return 0.0
        rate = self.rate_per_ms()
        if math.isnan(rate):
            return math.nan
        return math.inf if rate <= 0 else offset_lag / rate


def estimate_series(
    samples: Iterable[tuple[float, int | None, int | None]],
    table_limit: int = 60,
    rate_window_ms: float = 60_000,
    table_poll_ms: float = 0.0,
) -> tuple[list[float], list[float]]:
    """Run both estimators over ``(poll time ms, committed offset, LEO)`` samples, in order.

    Returns (interpolation, rate) estimates in ms, one per sample (NaN where the sample had no
    Burrow answer). ``table_poll_ms`` > 0 runs the interpolation only that often and holds its
    value in between, as kafka-lag-exporter's gauge does between its polls (default: every sample).
    """
    table = LookupTable(table_limit)
    rate = RateEstimator(rate_window_ms)
    interpolated: list[float] = []
    by_rate: list[float] = []
    last_poll_ms = -math.inf
    held = math.nan
    for time_ms, committed, leo in samples:
        if committed is None or leo is None:
            interpolated.append(math.nan)
            by_rate.append(math.nan)
            continue
        if time_ms - last_poll_ms >= table_poll_ms:
            table.add_point(Point(leo, time_ms))
            held = table.time_lag_ms(committed, time_ms)
            last_poll_ms = time_ms
        rate.observe(time_ms, leo)
        interpolated.append(held)
        by_rate.append(rate.time_lag_ms(max(leo - committed, 0)))
    return interpolated, by_rate


def finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if math.isfinite(v)]
