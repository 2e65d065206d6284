"""The report's Spark SQL engine equals the reference definition, `domain.slo`, series by
series: random series with gaps, unmeasured samples, look-back samples, breaches at and over
the objective, inferred and fixed cycles."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any

import pytest

from freshness_tracker.domain.slo import Objective, evaluate_series, infer_cycle_ms, percentile
from freshness_tracker.spark.reader import python_failure
from freshness_tracker.spark.report_job import (
    ReportOptions,
    SeriesIds,
    _judges,
    _seeded_ids,
    evaluate,
    evaluate_tables,
)

pytestmark = pytest.mark.spark

S, E = 1_000_000, 1_360_000  # the window: 6 minutes


def _series(rng: random.Random, n: int) -> list[tuple[int, int | None]]:
    """Samples from up to 90 s before the window (several of them then hold nothing inside
    it), sometimes starting late (a no-data lead-in, continued or not by a no-data span), and
    sometimes one or two at or after the window end (they only end the last hold)."""
    t = S - rng.choice([0, 5_000, 30_000, 90_000]) + rng.choice([0, 0, 0, 20_000, 200_000])
    out = []
    beyond = rng.choice([0, 0, 1, 2])
    for _ in range(n):
        t += rng.choice([10_000, 10_000, 10_000, 9_000, 11_000, 45_000, 1])
        if t >= E:
            if beyond == 0:
                break
            beyond -= 1
        value = None if rng.random() < 0.1 else rng.choice([0, 5_000, 20_000, 20_001, 60_000])
        out.append((t, value))
    return out


@pytest.mark.parametrize("cycle_ms", [None, 10_000])
def test_spark_sql_equals_domain_slo_on_random_series(spark: Any, cycle_ms: int | None) -> None:
    rng = random.Random(12 + (cycle_ms or 0))
    objectives = [Objective("c[0-4]", 20_000, Fraction(9, 10)),
                  Objective("c[5-7]", 0, Fraction(1, 3))]
    data = {f"c{i}": _series(rng, rng.choice([0, 1, 2, 5, 40])) for i in range(40)}
    data = {k: v for k, v in data.items() if v}
    rows = [("x", k, t, v) for k, series in data.items() for t, v in series]
    frame = spark.createDataFrame(rows, "cluster string, consumer string, t bigint, value bigint")
    options = ReportOptions(start_ms=S, end_ms=E, gap_cycles=2.5, cycle_ms=cycle_ms,
                            min_coverage=Fraction(3, 4) if cycle_ms else Fraction(1, 2))
    judges = _judges(spark, [(k,) for k in data], objectives, ["consumer"])
    got = {r["consumer"]: r.asDict() for r in
           evaluate(frame, ["cluster", "consumer"], judges, options).collect()}
    assert set(got) == set(data)
    for consumer, series in data.items():
        times = [t for t, _ in series]
        cycle = cycle_ms or infer_cycle_ms(times) or options.default_cycle_ms
        index = next((i for i, o in enumerate(objectives) if o.matches_consumer(consumer)), None)
        o = objectives[index] if index is not None else None
        want = evaluate_series(times, [v for _, v in series], window_start_ms=S, window_end_ms=E,
                               max_gap_ms=max(1, math.ceil(options.gap_cycles * cycle)),
                               objective_ms=o.freshness_ms if o else None,
                               target=o.target if o else None,
                               min_coverage=options.min_coverage)
        r = got[consumer]
        assert r["cycle_ms"] == cycle, consumer
        assert (r["samples"], r["p50_ms"], r["p95_ms"], r["p99_ms"], r["max_ms"]) == (
            want.samples, want.p50_ms, want.p95_ms, want.p99_ms, want.max_ms), consumer
        assert (r["measured_ms"], r["no_data_ms"], r["over_ms"], r["good_ms"]) == (
            want.measured_ms, want.no_data_ms, want.over_ms, want.good_ms), consumer
        assert (r["longest_breach_ms"], r["breaches"], r["met"], r["compliance"]) == (
            want.longest_breach_ms, len(want.episodes), want.met, want.compliance), consumer
        assert r["verdict"] == want.verdict, consumer
        assert (r["over_share"], r["no_data_share"]) == (want.over_share, want.no_data_share)
        assert list(zip(r["breach_starts"], r["breach_ends"], r["breach_peaks"],
                        strict=True)) == [(e.start_ms, e.end_ms, e.peak_ms)
                                          for e in want.episodes], consumer
        assert list(zip(r["no_data_starts"], r["no_data_ends"], strict=True)) == [
            (s.start_ms, s.end_ms) for s in want.no_data], consumer


def test_a_python_worker_failure_is_reported_whole(spark: Any) -> None:
    """It used to be one truncated line: "An exception was thrown from the Python worker:"."""
    from collections.abc import Iterator

    import pandas as pd

    def boom(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for _ in batches:
            raise LookupError("the broker said no: details that matter")
        yield pd.DataFrame({"id": []})

    with pytest.raises(Exception) as caught:
        spark.range(1).mapInPandas(boom, "id bigint").collect()
    summary, whole = python_failure(caught.value)
    assert summary == "LookupError: the broker said no: details that matter"
    assert "Traceback (most recent call last)" in whole and "in boom" in whole


def test_a_series_hash_collision_moves_to_another_seed(spark: Any) -> None:
    """The series query names series by 64-bit hashes, checked against the catalogue: two
    names given the same hash (forced here; never seen for real) make it pick the next
    seed, whose hashes are Spark's own for those names."""
    names = [("a", "c1", "t1"), ("a", "c1", "t2"), ("b", "c1", "t1")]
    clashing = [(7, 1), (7, 1), (8, 2)]
    ids = _seeded_ids(spark, names, clashing)
    assert ids.seed == 1
    assert sorted(ids.series.values()) == names
    assert sorted(ids.groups.values()) == [("a", "c1"), ("b", "c1")]
    frame = spark.createDataFrame(names, "cluster string, consumer string, topic string")
    g, h = SeriesIds(1, {}, {}).columns()
    for row in frame.select("cluster", "consumer", "topic", g, h).collect():
        assert ids.series[row["h"]] == (row["cluster"], row["consumer"], row["topic"])
        assert ids.groups[row["g"]] == (row["cluster"], row["consumer"])
    fine = _seeded_ids(spark, names[:2], [(1, 5), (2, 5)])
    assert (fine.seed, fine.series, fine.groups) == (0, {1: names[0], 2: names[1]},
                                                     {5: ("a", "c1")})


def test_partitions_table_equals_domain_slo(spark: Any) -> None:
    """The partitions table: rows, samples, max, the exact p99 (slo.percentile over the
    window's samples, not the look-back's) and data loss, for every partition with rows in the
    window."""
    rng = random.Random(99)
    options = ReportOptions(start_ms=S, end_ms=E)
    rows, samples = [], {}
    for consumer in ("c0", "c1"):
        for partition in range(5):
            key = ("x", consumer, "t", partition)
            inside: list[int] = []
            lossy = consumer == "c1" and partition == 4
            for i in range(130 if lossy else rng.choice([1, 7, 40, 130])):
                t = S - 60_000 + i * 3_000  # the first 20 are look-back: not in the p99
                value = None if rng.random() < 0.1 else rng.randrange(0, 100_000)
                loss = lossy and i == 25
                rows.append((*key, t, value, loss, 7 if loss else 0))
                if t >= S and value is not None:
                    inside.append(value)
            if i >= 20:  # a partition seen only in the look-back is not in the table
                samples[key] = sorted(inside)
    frame = spark.createDataFrame(rows, "cluster string, consumer string, topic string, "
                                  "partition int, t bigint, freshness_ms bigint, "
                                  "data_loss boolean, lost_records bigint")
    got = evaluate_tables(spark, frame, [], options).partitions
    assert len(got) == len(samples)
    for r in got.to_dict("records"):
        key = (r["cluster"], r["consumer"], r["topic"], r["partition"])
        values = samples[key]
        assert (r["samples"], r["max_ms"]) == (len(values), values[-1] if values else None)
        want_p99 = percentile(values, 0.99)
        assert r["p99_ms"] == want_p99 or (want_p99 is None and math.isnan(r["p99_ms"])), r
        if key == ("x", "c1", "t", 4):
            assert (r["data_loss_samples"], r["max_lost_records"]) == (1, 7), r
        else:
            assert r["data_loss_samples"] == 0, r
