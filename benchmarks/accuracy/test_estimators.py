"""Pure checks of the estimator ports and the ground truth.

Run with ``python -m pytest benchmarks/accuracy`` (part of the default test paths).

The lookup-table cases follow kafka-lag-exporter's own ``LookupTableSpec`` behaviours: flat runs
are compressed, out-of-order and decreasing points are dropped, LagIsZero / TooFewPoints,
interpolation inside the table and extrapolation outside it.
"""

from __future__ import annotations

import math

from benchmarks.accuracy.estimators import LookupTable, Point, RateEstimator, estimate_series
from benchmarks.accuracy.shapes import standard_shapes
from benchmarks.accuracy.truth import TruthLog


def table(*points: tuple[int, float], limit: int = 60) -> LookupTable:
    t = LookupTable(limit)
    for offset, time_ms in points:
        t.add_point(Point(offset, time_ms))
    return t


def test_flat_runs_are_compressed_to_two_points() -> None:
    t = table((200, 1000), (200, 2000), (200, 3000), (200, 4000))
    assert list(t.points) == [Point(200, 1000), Point(200, 4000)]


def test_out_of_order_and_decreasing_points_are_dropped() -> None:
    t = table((100, 1000), (200, 2000), (300, 1500), (150, 3000))
    assert list(t.points) == [Point(100, 1000), Point(200, 2000)]


def test_sliding_window_keeps_the_newest_points() -> None:
    t = table(*[(i, i * 1000.0) for i in range(10)], limit=3)
    assert [p.offset for p in t.points] == [7, 8, 9]


def test_lag_is_zero_at_the_newest_offset_and_nan_with_too_few_points() -> None:
    assert table((5, 1000)).time_lag_ms(5, 2000) == 0
    assert math.isnan(table((5, 1000)).time_lag_ms(3, 2000))
    assert math.isnan(table().time_lag_ms(3, 2000))


def test_interpolates_between_the_bracketing_points() -> None:
    t = table((0, 0), (100, 10_000), (110, 20_000))
    assert t.predict_time_ms(50) == 5_000
    assert t.predict_time_ms(105) == 15_000
    assert t.time_lag_ms(105, 20_000) == 5_000


def test_extrapolates_with_the_first_and_last_points() -> None:
    t = table((100, 10_000), (200, 20_000), (300, 40_000))
    # slope over (first, last): 200 offsets in 30 s -> offset 50 is 7.5 s before the first point
    assert t.predict_time_ms(50) == 2_500
    assert t.time_lag_ms(50, 40_000) == 37_500


def test_an_idle_table_extrapolates_with_a_diluted_slope() -> None:
    # 100 records in 10 s, then 10 minutes idle (a flat run): the slope through (first, last) is
    # 100 records / 610 s, so offset 90, really 1 s older than offset 100, is put 61 s before it.
    t = table((100, 0), (200, 10_000), (200, 20_000), (200, 610_000))
    assert t.time_lag_ms(90, 610_000) == 610_000 + 61_000


def test_rate_estimator() -> None:
    r = RateEstimator(window_ms=10_000)
    assert math.isnan(r.time_lag_ms(5))
    for i in range(11):
        r.observe(i * 1000, i * 2)  # 2 records/s
    assert r.time_lag_ms(0) == 0
    assert r.time_lag_ms(10) == 5_000
    for i in range(11, 25):
        r.observe(i * 1000, 20)  # nothing produced any more
    assert r.time_lag_ms(3) == math.inf


def test_estimate_series_holds_values_between_table_polls() -> None:
    samples = [(i * 1000.0, 0, i) for i in range(6)]
    interp, _ = estimate_series(samples, table_poll_ms=2000)
    assert interp[1] == interp[0] and interp[3] == interp[2] and interp[5] == interp[4]


def test_truth_log() -> None:
    log = TruthLog()
    log.committed(500, 0)
    for offset, ts in enumerate([1000, 2000, 3000]):
        log.produced(offset, ts)
    log.committed(2500, 2)
    log.check()
    assert log.freshness_ms(400) is None
    assert log.freshness_ms(900) == 0  # nothing produced yet
    assert log.freshness_ms(1500) == 500  # record 0 waits
    assert log.freshness_ms(2600) == 0  # committed 2, record 2 not there yet
    assert log.freshness_ms(3400) == 400  # record 2 waits


def test_standard_shapes_scale_with_the_duration() -> None:
    for duration in (120.0, 480.0):
        for shape in standard_shapes(duration, 20.0):
            assert all(0 <= t < duration for t in shape.produce_at_s), shape.name
            assert list(shape.produce_at_s) == sorted(shape.produce_at_s), shape.name
