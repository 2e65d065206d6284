"""SLO math: hand-computed cases (percentiles, breach minutes, gaps, the boundary) + properties."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from freshness_tracker.domain.filters import NameFilter
from freshness_tracker.domain.slo import (
    DEFAULT_MIN_COVERAGE,
    INSUFFICIENT,
    Episode,
    Objective,
    Span,
    evaluate_series,
    hold_spans,
    in_group_series,
    infer_cycle_ms,
    objective_for_group,
    objective_for_topic,
    parse_target,
    percentile,
)

S = 1_000
MIN = 60 * S

# --- hand-computed -------------------------------------------------------------------------


def test_breach_minutes_longest_breach_and_percentiles_by_hand() -> None:
    # One sample a minute for 10 minutes; objective 5 min (300 s).
    times = [i * MIN for i in range(10)]
    values = [v * S for v in (10, 20, 400, 500, 30, 40, 350, 10, 20, 30)]
    st_ = evaluate_series(times, values, window_start_ms=0, window_end_ms=10 * MIN,
                          max_gap_ms=3 * MIN, objective_ms=300 * S, target=Fraction(7, 10))
    # Held values: minutes 2 and 3 over (400 s, 500 s), minute 6 over (350 s).
    assert st_.episodes == (Episode(2 * MIN, 4 * MIN, 500 * S), Episode(6 * MIN, 7 * MIN, 350 * S))
    assert st_.over_ms == 3 * MIN
    assert st_.longest_breach_ms == 2 * MIN
    assert st_.measured_ms == 10 * MIN and st_.no_data_ms == 0
    assert st_.good_ms == 7 * MIN
    assert st_.compliance == pytest.approx(0.7) and st_.met is True  # 70 % ≥ 70 %: met
    assert st_.over_share == pytest.approx(0.3)
    # sorted: 10 10 20 20 30 30 40 350 400 500 (s)
    assert st_.samples == 10
    assert st_.p50_ms == 30 * S  # rank 4.5 -> between 30 and 30
    assert st_.p95_ms == pytest.approx(455 * S)  # rank 8.55 -> 400 + 0.55 * 100
    assert st_.p99_ms == pytest.approx(491 * S)  # rank 8.91 -> 400 + 0.91 * 100
    assert st_.max_ms == 500 * S


def test_a_gap_longer_than_n_cycles_is_no_data_never_good() -> None:
    # Samples at minutes 0, 1, then nothing until 6 (a 5-minute gap > 3 cycles), then 7, 8, 9.
    times = [0, 1 * MIN, 6 * MIN, 7 * MIN, 8 * MIN, 9 * MIN]
    values = [10 * S] * 6
    st_ = evaluate_series(times, values, window_start_ms=0, window_end_ms=10 * MIN,
                          max_gap_ms=3 * MIN, objective_ms=300 * S, target=Fraction(99, 100))
    assert st_.measured_ms == 1 * MIN + 4 * MIN  # [0,1) and [6,10)
    assert st_.no_data_ms == 5 * MIN  # the whole gap [1, 6)
    assert st_.no_data == (Span(1 * MIN, 6 * MIN, None),)
    assert st_.over_ms == 0 and st_.good_ms == 5 * MIN
    # attainment is over the time with data; half the window has data: enough to judge
    assert st_.compliance == 1.0 and st_.no_data_share == 0.5
    assert (st_.verdict, st_.met) == ("met", True)


def test_a_short_history_is_insufficient_data_not_missed() -> None:
    """A group that kept up, measured for the last 5 % of the window: within its objective
    all the time it was measured, so not missed; too little data to say it met it."""
    times = [95 * MIN + i * MIN for i in range(5)]
    kept_up = evaluate_series(times, [0] * 5, window_start_ms=0, window_end_ms=100 * MIN,
                              max_gap_ms=3 * MIN, objective_ms=300 * S,
                              target=Fraction(99, 100))
    assert kept_up.no_data_share == pytest.approx(0.95) and kept_up.compliance == 1.0
    assert (kept_up.verdict, kept_up.met) == (INSUFFICIENT, None)
    # A group stuck over its objective for those same 5 %: the window's 1 % error budget is
    # spent whatever the missing 95 % held, so that one is missed.
    stuck = evaluate_series(times, [900 * S] * 5, window_start_ms=0, window_end_ms=100 * MIN,
                            max_gap_ms=3 * MIN, objective_ms=300 * S, target=Fraction(99, 100))
    assert stuck.compliance == 0.0 and (stuck.verdict, stuck.met) == ("missed", False)
    # Just under half the window with data, and a breach within the budget: not judged.
    under = evaluate_series([51 * MIN + i * MIN for i in range(49)], [0] * 48 + [900 * S],
                            window_start_ms=0, window_end_ms=100 * MIN, max_gap_ms=3 * MIN,
                            objective_ms=300 * S, target=Fraction(99, 100))
    assert under.measured_ms == 49 * MIN and under.over_ms == 1 * MIN
    assert under.verdict == INSUFFICIENT


def test_no_data_at_all_is_insufficient() -> None:
    r = evaluate_series([], [], window_start_ms=0, window_end_ms=MIN, max_gap_ms=MIN,
                        objective_ms=0, target=Fraction(1, 2))
    assert (r.compliance, r.verdict, r.met, r.no_data_share) == (None, INSUFFICIENT, None, 1.0)


def test_a_gap_of_exactly_n_cycles_still_holds() -> None:
    times, values = [0, 3 * MIN], [0, 0]
    spans = hold_spans(times, values, 0, 4 * MIN, max_gap_ms=3 * MIN)
    assert spans == [Span(0, 3 * MIN, 0), Span(3 * MIN, 4 * MIN, 0)]


def test_objective_at_the_boundary() -> None:
    window = 1_000 * S
    kwargs = dict(window_start_ms=0, window_end_ms=window, max_gap_ms=window,
                  objective_ms=300 * S, target=parse_target("99.9%"))
    # Freshness exactly at the objective is within it.
    at = evaluate_series([0], [300 * S], **kwargs)  # type: ignore[arg-type]
    assert at.over_ms == 0 and at.met is True and at.compliance == 1.0
    # Good for exactly 999 s of 1000 s: 99.9 % -> met.
    met = evaluate_series([0, 999 * S], [0, 301 * S], **kwargs)  # type: ignore[arg-type]
    assert met.good_ms == 999 * S and met.over_ms == 1 * S and met.met is True
    # One millisecond less: missed.
    missed = evaluate_series([0, 999 * S - 1], [0, 301 * S], **kwargs)  # type: ignore[arg-type]
    assert missed.good_ms == 999 * S - 1 and missed.met is False


def test_head_tail_and_lookback() -> None:
    # A sample 1 minute before the window carries its value in; without it the head is no data.
    with_lookback = hold_spans([-MIN, 2 * MIN], [5, 7], 0, 4 * MIN, max_gap_ms=3 * MIN)
    assert with_lookback == [Span(0, 2 * MIN, 5), Span(2 * MIN, 4 * MIN, 7)]
    without = hold_spans([2 * MIN], [7], 0, 4 * MIN, max_gap_ms=3 * MIN)
    assert without == [Span(0, 2 * MIN, None), Span(2 * MIN, 4 * MIN, 7)]
    # The last sample is older than max_gap at the window end: the tail is no data.
    tail = hold_spans([0], [1], 0, 10 * MIN, max_gap_ms=3 * MIN)
    assert tail == [Span(0, 10 * MIN, None)]
    # A lookback sample followed by one beyond the gap limit does not leak in.
    far = hold_spans([-5 * MIN, 1 * MIN], [9, 1], 0, 2 * MIN, max_gap_ms=3 * MIN)
    assert far == [Span(0, 1 * MIN, None), Span(1 * MIN, 2 * MIN, 1)]


def test_unmeasured_samples_break_a_breach_and_count_as_no_data() -> None:
    times = [0, MIN, 2 * MIN, 3 * MIN]
    values: list[int | None] = [900 * S, None, 900 * S, 900 * S]
    st_ = evaluate_series(times, values, window_start_ms=0, window_end_ms=4 * MIN,
                          max_gap_ms=3 * MIN, objective_ms=300 * S, target=Fraction(1, 2))
    assert st_.no_data_ms == MIN and st_.over_ms == 3 * MIN
    assert st_.longest_breach_ms == 2 * MIN  # [2, 4): the unmeasured minute ends the first run
    assert len(st_.episodes) == 2 and st_.samples == 3 and st_.met is False


def test_no_objective_gives_stats_but_no_verdict() -> None:
    st_ = evaluate_series([0, MIN], [1, 2], window_start_ms=0, window_end_ms=2 * MIN,
                          max_gap_ms=MIN)
    assert st_.met is None and st_.compliance is None and st_.over_ms == 0
    assert st_.samples == 2 and st_.max_ms == 2


def test_duplicate_sample_times_keep_the_worst_value() -> None:
    spans = hold_spans([0, 0, MIN], [5, 9, None], 0, MIN, max_gap_ms=MIN)
    assert spans == [Span(0, MIN, 9)]


def test_percentile_small_cases() -> None:
    assert percentile([], 0.5) is None
    assert percentile([7], 0.99) == 7
    assert percentile([10, 20, 30, 40], 0.5) == 25
    assert percentile([10, 20, 30, 40], 1.0) == 40
    assert percentile([10, 20, 30, 40], 0.0) == 10


def test_infer_cycle_is_the_median_spacing() -> None:
    assert infer_cycle_ms([0, 30, 61, 90, 400]) == 30  # spacings 30 31 29 310 -> 30.5 -> 30
    assert infer_cycle_ms([5, 5]) is None
    assert infer_cycle_ms([0, 10, 40]) == 20


@pytest.mark.parametrize(("text", "expected"), [
    ("99.9%", Fraction(999, 1000)), (99.9, Fraction(999, 1000)), ("0.999", Fraction(999, 1000)),
    ("100%", Fraction(1)), (1, Fraction(1)), ("99.95 %", Fraction(9995, 10000)),
    (50, Fraction(1, 2)),
])
def test_parse_target(text: object, expected: Fraction) -> None:
    assert parse_target(text) == expected


@pytest.mark.parametrize("bad", ["0%", 0, "101%", 150, "abc", "", "-5%"])
def test_parse_target_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_target(bad)


def test_objective_matching_first_wins_full_match() -> None:
    objectives = [
        Objective("orders-.*", 60 * S, Fraction(999, 1000), topic="payments"),
        Objective("orders-.*", 300 * S, Fraction(99, 100)),
        Objective(".*", 3600 * S, Fraction(9, 10)),
    ]
    assert objective_for_topic(objectives, "orders-app", "payments") == 0
    assert objective_for_topic(objectives, "orders-app", "payments-dlq") == 1  # full match
    assert objective_for_topic(objectives, "billing", "payments") == 2
    assert objective_for_group(objectives, "orders-app") == 0
    assert objective_for_group(objectives, "xorders-app") == 2
    assert objective_for_group(objectives[:2], "billing") is None
    # the group's own series: the topics its (first) objective selects
    assert in_group_series(objectives, "orders-app", "payments")
    assert not in_group_series(objectives, "orders-app", "orders")
    assert in_group_series(objectives, "billing", "anything")
    assert in_group_series(objectives[:2], "billing", "anything")  # no objective: all topics
    assert "99.9%" in objectives[0].label


def test_a_newline_in_a_group_name_is_matched_like_the_filters_and_prometheus() -> None:
    """Kafka allows a newline in a group id; `.` matches it in the filters and in Prometheus
    3 (`^(?s:…)$`), so an objective must judge that group too, not leave it unjudged."""
    objectives = [Objective("orders-.*", 60 * S, Fraction(99, 100), topic="pay.*"),
                  Objective(".*", 3600 * S, Fraction(9, 10))]
    assert objective_for_topic(objectives, "orders-\napp", "pay\nments") == 0
    assert objective_for_group(objectives, "orders-\napp") == 0
    assert objective_for_group(objectives, "\n") == 1
    # an explicit (?-s:…) still keeps `.` off newlines, as in RE2
    assert objective_for_group([Objective("(?-s:.*)", S, Fraction(1))], "a\nb") is None


_PATTERNS = [".*", ".+", "orders-.*", "a.b", "(?-s:.*)", "x|.*y", "[^a]*", r"\w.\w"]


@given(st.sampled_from(_PATTERNS), st.text(alphabet=st.sampled_from("ab\nxy-\r\t\x85"),
                                           max_size=8) | st.text(max_size=8))
def test_an_objective_selects_exactly_the_names_the_filters_select(
        pattern: str, name: str) -> None:
    assert Objective(pattern, S, Fraction(1)).matches_consumer(name) \
        == NameFilter.compile([pattern])(name)
    assert Objective(".*", S, Fraction(1)).matches_consumer(name)


def test_objective_validation() -> None:
    with pytest.raises(ValueError):
        Objective("a", -1, Fraction(1, 2))
    with pytest.raises(ValueError):
        Objective("a", 1, Fraction(0))


# --- properties ----------------------------------------------------------------------------

values_st = st.one_of(st.none(), st.integers(0, 10_000))


@st.composite
def series(draw: st.DrawFn) -> tuple[list[int], list[int | None], int, int, int]:
    start = draw(st.integers(-1_000, 1_000))
    length = draw(st.integers(0, 5_000))
    times = draw(st.lists(st.integers(start - 500, start + length + 500), max_size=40))
    values = draw(st.lists(values_st, min_size=len(times), max_size=len(times)))
    max_gap = draw(st.integers(1, 2_000))
    return times, values, start, start + length, max_gap


@given(series())
def test_spans_tile_the_window(s: tuple[list[int], list[int | None], int, int, int]) -> None:
    times, values, start, end, gap = s
    spans = hold_spans(times, values, start, end, gap)
    cursor = start
    for span in spans:
        assert span.start_ms == cursor and span.end_ms > span.start_ms
        cursor = span.end_ms
    assert cursor == end or (start == end and not spans)


@given(series(), st.integers(0, 10_000), st.fractions(Fraction(1, 1000), 1))
def test_accounting_identities(s: tuple[list[int], list[int | None], int, int, int],
                               objective: int, target: Fraction) -> None:
    times, values, start, end, gap = s
    r = evaluate_series(times, values, window_start_ms=start, window_end_ms=end, max_gap_ms=gap,
                        objective_ms=objective, target=target)
    assert r.measured_ms + r.no_data_ms == r.window_ms == end - start
    assert sum(s.duration_ms for s in r.no_data) == r.no_data_ms
    assert all(a.end_ms < b.start_ms for a, b in itertools.pairwise(r.no_data))  # merged
    assert 0 <= r.over_ms <= r.measured_ms
    assert r.good_ms == r.measured_ms - r.over_ms
    assert 0 <= r.longest_breach_ms <= r.over_ms
    assert sum(e.duration_ms for e in r.episodes) == r.over_ms
    assert all(e.peak_ms > objective for e in r.episodes)
    if not r.window_ms:
        assert r.met is None and r.verdict is None
        return
    budget_spent = Fraction(r.over_ms, r.window_ms) > 1 - target
    enough = r.measured_ms > 0 and Fraction(r.measured_ms, r.window_ms) >= DEFAULT_MIN_COVERAGE
    attained = r.measured_ms > 0 and Fraction(r.good_ms, r.measured_ms) >= target
    if budget_spent:
        assert (r.verdict, r.met) == ("missed", False)
    elif not enough:
        assert (r.verdict, r.met) == (INSUFFICIENT, None)
    else:
        assert (r.verdict, r.met) == (("met", True) if attained else ("missed", False))
    assert r.compliance == (r.good_ms / r.measured_ms if r.measured_ms else None)


@given(series(), st.integers(0, 10_000), st.fractions(Fraction(1, 1000), 1))
def test_a_series_never_over_its_objective_is_never_missed(
        s: tuple[list[int], list[int | None], int, int, int], objective: int,
        target: Fraction) -> None:
    """Whatever share of the window has no data, a series within its objective whenever it
    was measured is met or has insufficient data; and one that is missed has measured time
    over its objective, with enough data or more than the window's error budget of it."""
    times, values, start, end, gap = s
    assume(end > start)
    within = [None if v is None else min(v, objective) for v in values]
    r = evaluate_series(times, within, window_start_ms=start, window_end_ms=end,
                        max_gap_ms=gap, objective_ms=objective, target=target)
    assert r.over_ms == 0 and r.verdict in ("met", INSUFFICIENT)
    raw = evaluate_series(times, values, window_start_ms=start, window_end_ms=end,
                          max_gap_ms=gap, objective_ms=objective, target=target)
    if raw.verdict == "missed":
        assert raw.over_ms > 0
        assert (Fraction(raw.measured_ms, raw.window_ms) >= DEFAULT_MIN_COVERAGE
                or Fraction(raw.over_ms, raw.window_ms) > 1 - target)


@given(series(), st.integers(0, 10_000), st.integers(0, 10_000))
def test_a_looser_objective_never_has_more_breach(
        s: tuple[list[int], list[int | None], int, int, int], a: int, b: int) -> None:
    times, values, start, end, gap = s
    low, high = sorted((a, b))
    kw = dict(window_start_ms=start, window_end_ms=end, max_gap_ms=gap)
    strict = evaluate_series(times, values, objective_ms=low, **kw)  # type: ignore[arg-type]
    loose = evaluate_series(times, values, objective_ms=high, **kw)  # type: ignore[arg-type]
    assert loose.over_ms <= strict.over_ms
    assert loose.longest_breach_ms <= strict.longest_breach_ms


@given(series(), st.integers(1, 2_000))
def test_a_wider_gap_limit_never_loses_measured_time(
        s: tuple[list[int], list[int | None], int, int, int], extra: int) -> None:
    times, values, start, end, gap = s
    narrow = evaluate_series(times, values, window_start_ms=start, window_end_ms=end,
                             max_gap_ms=gap)
    wide = evaluate_series(times, values, window_start_ms=start, window_end_ms=end,
                           max_gap_ms=gap + extra)
    assert wide.measured_ms >= narrow.measured_ms


@given(series(), st.integers(0, 10_000))
def test_no_data_is_never_good(s: tuple[list[int], list[int | None], int, int, int],
                               objective: int) -> None:
    """Good time is bounded by the time between consecutive valued samples within the limit."""
    times, values, start, end, gap = s
    r = evaluate_series(times, values, window_start_ms=start, window_end_ms=end, max_gap_ms=gap,
                        objective_ms=objective)
    merged: dict[int, int | None] = {}
    for t, v in zip(times, values, strict=True):
        old = merged.get(t)
        merged[t] = v if old is None else (old if v is None else max(old, v))
    points = [*sorted(merged.items()), (end, None)]
    bound = 0
    for (t, v), (nxt, _) in itertools.pairwise(points):
        if v is not None and v <= objective and nxt - t <= gap and t < end:
            bound += max(0, min(nxt, end) - max(t, start))
    assert r.good_ms <= bound


@given(series(), st.integers(-10_000, 10_000))
def test_shifting_time_changes_nothing(s: tuple[list[int], list[int | None], int, int, int],
                                       shift: int) -> None:
    times, values, start, end, gap = s
    a = evaluate_series(times, values, window_start_ms=start, window_end_ms=end, max_gap_ms=gap,
                        objective_ms=500)
    b = evaluate_series([t + shift for t in times], values, window_start_ms=start + shift,
                        window_end_ms=end + shift, max_gap_ms=gap, objective_ms=500)
    assert (a.over_ms, a.no_data_ms, a.longest_breach_ms, a.samples, a.p99_ms) == \
        (b.over_ms, b.no_data_ms, b.longest_breach_ms, b.samples, b.p99_ms)


@given(st.lists(st.integers(0, 10**9), min_size=1, max_size=200),
       st.floats(0, 1, allow_nan=False))
def test_percentile_matches_numpy_linear(values: list[int], q: float) -> None:
    ordered = sorted(values)
    ours = percentile(ordered, q)
    assert ours == pytest.approx(float(np.percentile(ordered, q * 100)), rel=1e-9, abs=1e-6)
    assert ordered[0] <= ours <= ordered[-1]  # type: ignore[operator]


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=100))
def test_percentiles_are_ordered(values: list[int]) -> None:
    r = evaluate_series(list(range(len(values))), values, window_start_ms=0,
                        window_end_ms=len(values), max_gap_ms=1)
    assume(r.p50_ms is not None)
    assert r.p50_ms <= r.p95_ms <= r.p99_ms <= r.max_ms  # type: ignore[operator]
