"""`freshness-tracker spark report`: SLOs over the history table, in Spark.

Spark does the heavy lifting, in two queries: it reads only the date partitions of the
window, aggregates every partition for data loss and the worst partitions (which also names
every series), and folds the partition rows into one series per (cluster, consumer, topic) and
per (cluster, consumer) (the worst partition at each sample time, over the topics the
consumer's objective selects), both evaluated on one shuffle. The SLO math is
`domain.slo`'s, written as Spark SQL expressions (`evaluate`: window functions, gaps and
islands, no Python per series) and checked against it (tests/spark/test_report_engine.py).
The small results are collected and written as Parquet, CSV and one HTML page
(`report_html`).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from freshness_tracker.domain.slo import (
    DEFAULT_MIN_COVERAGE,
    INSUFFICIENT,
    Objective,
    in_group_series,
    objective_for_group,
    objective_for_topic,
)
from freshness_tracker.errors import FreshnessTrackerError
from freshness_tracker.sinks.history import HISTORY_SCHEMA, READ_SLACK_DAYS, shown

__all__ = [
    "REPORT_SQL_CONF",
    "ReportOptions",
    "ReportSummary",
    "ReportTables",
    "SeriesIds",
    "consumer_series",
    "evaluate",
    "evaluate_tables",
    "history_frame",
    "history_read_failure",
    "read_rows",
    "run_report",
    "spark_schema",
]

log = logging.getLogger(__name__)

_GROUP = ["cluster", "consumer"]
_TOPIC = ["cluster", "consumer", "topic"]

@dataclass(frozen=True)
class ReportOptions:
    start_ms: int
    end_ms: int
    gap_cycles: float = 3.0  # a gap longer than this many cycles is no data
    cycle_ms: int | None = None  # None: inferred per series (median sample spacing)
    default_cycle_ms: int = 30_000  # for series with fewer than two samples
    worst: int = 6  # consumers charted
    worst_partitions: int = 5  # per consumer
    min_lookback_ms: int = 3_600_000  # read this much before the window to hold values into it
    min_coverage: Fraction = DEFAULT_MIN_COVERAGE  # a verdict needs this share with data

    @property
    def lookback_ms(self) -> int:
        cycle = self.cycle_ms or self.default_cycle_ms
        return max(self.min_lookback_ms, math.ceil(self.gap_cycles * cycle))


@dataclass
class ReportSummary:
    out: str
    rows: int = 0
    consumers: int = 0
    topics: int = 0
    met: int = 0
    missed: int = 0
    insufficient: int = 0
    no_data_share: float = 0.0  # of the consumers' series: their no-data time / their windows
    data_loss_partitions: int = 0
    files: dict[str, str] = field(default_factory=dict)
    duration_ms: int = 0

    def line(self) -> str:
        return (f"report rows={self.rows} consumers={self.consumers} topics={self.topics} "
                f"met={self.met} missed={self.missed} insufficient_data={self.insufficient} "
                f"no_data={self.no_data_share * 100:.1f}% data_loss_partitions="
                f"{self.data_loss_partitions} html={self.files.get('html', '')}")


def spark_schema() -> Any:
    """HISTORY_SCHEMA as a Spark StructType (the report reads with it, never by inference)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(HISTORY_SCHEMA)


def history_frame(spark: Any, history: str, start_ms: int, end_ms: int) -> Any:
    """Rows with sample_time in [start, end), reading only the date partitions that can hold
    them (a file is filed under its earliest sample's day: from day(start) − 1, for cycles
    across midnight); `t` is the sample time in epoch ms."""
    from pyspark.sql import functions as F

    first = dt.datetime.fromtimestamp(start_ms / 1000, tz=dt.UTC).date() - dt.timedelta(
        days=READ_SLACK_DAYS)
    last = dt.datetime.fromtimestamp((end_ms - 1) / 1000, tz=dt.UTC).date()
    frame = spark.read.schema(spark_schema()).parquet(history)
    # on the column itself (not on unix_millis of it), so Parquet's row-group statistics skip
    # what lies outside; the same rows for the history's millisecond timestamps
    sample = F.col("sample_time")
    return (frame.where(F.col("date").between(F.lit(first), F.lit(last))
                        & (sample >= F.timestamp_millis(F.lit(start_ms)))
                        & (sample < F.timestamp_millis(F.lit(end_ms))))
            .withColumn("t", F.unix_millis("sample_time")))


@contextmanager
def _stage(spark: Any, name: str, began: float) -> Iterator[None]:
    spark.sparkContext.setJobDescription(f"freshness report: {name}")
    started = time.monotonic()
    log.info("stage=%s started elapsed_s=%.1f", name, started - began)
    try:
        yield
    finally:
        spark.sparkContext.setJobDescription(None)
        log.info("stage=%s done in_s=%.1f", name, time.monotonic() - started)


# --- per series: the SLO math as Spark expressions -----------------------------------------
#
# `domain.slo` is the definition; this is the same math in Spark's own engine (no Python per
# series), checked against it by tests/spark/test_report_engine.py and bench_report.py:
#
# 1. windows over each series ordered by time (three passes, one sort): the next and the
#    previous sample (`lead`, `lag`), the series' first time and its median spacing (the
#    cycle, unless --cycle), so each sample's hold is known: it holds its value until the
#    next sample if that comes within gap-cycles × cycle, else it holds "no data"; clipped to
#    the window; the no-data lead-in from the window start to a later first sample is added
#    to the no-data list at the end;
# 2. gaps and islands: consecutive spans of the same kind (breach, good, no data) share an
#    island id (a running count of island starts), so an island is one breach episode or one
#    merged no-data stretch;
# 3. two aggregations on the same partitioning (no further shuffle): per island, then per
#    series: held, breached and no-data time, the episodes as sorted arrays; and the sorted
#    samples of the window, from which the percentiles are read with slo.percentile's formula.


def _quantile(values: Any, n: Any, q: float) -> Any:
    """`slo.percentile` on a sorted array: linear between the closest ranks, same float ops."""
    from pyspark.sql import functions as F

    pos = F.lit(q) * (n - 1).cast("double")
    lo = F.floor(pos)
    hi = F.least(lo + 1, n - 1)
    low = F.get(values, lo.cast("int")).cast("double")
    high = F.get(values, hi.cast("int")).cast("double")
    return F.when(n > 0, low + (high - low) * (pos - lo.cast("double")))


def evaluate(series: Any, keys: Sequence[str], judges: Any, options: ReportOptions,
             judge_keys: Sequence[str] | None = None, names: Sequence[str] = ()) -> Any:
    """One stats row per series (`keys`, t, value) in the report's columns: `slo.evaluate_series`
    in Spark SQL. `judges` (`_judges`) is joined on `judge_keys` (by default `keys` without the
    cluster), its `names` columns kept."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    start, end = F.lit(options.start_ms), F.lit(options.end_ms)
    keys = list(keys)
    judge_keys = [k for k in keys if k != "cluster"] if judge_keys is None else list(judge_keys)
    in_order = Window.partitionBy(*keys).orderBy("t")
    whole = in_order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    # only the objective's number rides along (numbers keep every aggregation a fast hash
    # aggregation; strings in a buffer force a sort-based one); the rest is joined at the end
    frame = series.join(F.broadcast(judges.select(*judge_keys, "objective_ms")), judge_keys,
                        "left")
    # pass 1, one window operator (same partitioning and order, so one sort for all passes):
    # the next and previous sample, the series' first time
    frame = frame.select(*keys, "t", "value", "objective_ms",
                         F.lead("t").over(in_order).alias("nxt"),
                         F.lag("t").over(in_order).alias("prev_t"),
                         F.lag("value").over(in_order).alias("prev_value"),
                         F.min("t").over(whole).alias("first_t"))
    if options.cycle_ms:
        cycle = F.lit(options.cycle_ms).cast("bigint")
    else:  # slo.infer_cycle_ms: the median spacing, the lower middle's floor average when even
        median = F.percentile(F.col("nxt") - F.col("t"), F.lit(0.5)).over(whole)  # pass 2
        cycle = F.coalesce(F.floor(median).cast("bigint"),
                           F.lit(options.default_cycle_ms).cast("bigint"))
    frame = frame.withColumn("cycle_ms", cycle)
    max_gap = F.greatest(F.lit(1).cast("bigint"),
                         F.ceil(F.lit(float(options.gap_cycles)) * F.col("cycle_ms")))

    def kind(held: Any) -> Any:  # 0 no data, 1 good, 2 breach
        return (F.when(held.isNull(), F.lit(0))
                .when(held > F.col("objective_ms"), F.lit(2)).otherwise(F.lit(1)))

    # Each sample's span: it holds its value from t to the next sample (or the window end) if
    # that comes within the gap, else no data; clipped to the window. Spans tile the window
    # from the first sample on; the stretch before it (the lead-in) is added to the no-data
    # list at the end. Empty spans (look-back samples followed by another before the window,
    # samples at or after its end) are only ever a prefix or a suffix of a series, so the
    # previous non-empty span is the previous row's whenever that one is non-empty: an island
    # (a run of spans of one kind) starts where the previous row's span is empty or of another
    # kind, decided from the lagged columns without another window pass.
    until = F.coalesce(F.col("nxt"), end)
    prev_kind = kind(F.when(F.col("t") - F.col("prev_t") <= max_gap, F.col("prev_value")))
    prev_empty = (F.col("prev_t").isNull()
                  | (F.least(F.col("t"), end) <= F.greatest(F.col("prev_t"), start)))
    spans = (frame.select(*keys, "t", "cycle_ms", "first_t",
                          F.greatest(F.col("t"), start).alias("st"),
                          F.least(until, end).alias("en"),
                          F.when(until - F.col("t") <= max_gap, F.col("value")).alias("held"),
                          prev_kind.alias("prev_kind"), prev_empty.alias("prev_empty"),
                          "objective_ms")
             .where(F.col("en") > F.col("st"))
             .withColumn("kind", kind(F.col("held"))))
    starts = F.when(F.col("prev_empty") | (F.col("prev_kind") != F.col("kind")), 1).otherwise(0)
    spans = spans.withColumn("island", F.sum(starts).over(  # pass 3: a running count
        in_order.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    islands = spans.groupBy(*keys, "island", "kind").agg(
        F.min("st").alias("st"), F.max("en").alias("en"), F.max("held").alias("peak"),
        F.max("cycle_ms").alias("cycle_ms"), F.max("first_t").alias("first_t"))
    duration = F.col("en") - F.col("st")
    is_breach, is_gap = F.col("kind") == 2, F.col("kind") == 0
    per = islands.groupBy(*keys).agg(
        F.coalesce(F.sum(F.when(~is_gap, duration)), F.lit(0)).alias("measured_ms"),
        F.coalesce(F.sum(F.when(is_breach, duration)), F.lit(0)).alias("over_ms"),
        F.coalesce(F.max(F.when(is_breach, duration)), F.lit(0)).alias("longest_breach_ms"),
        F.count(F.when(is_breach, 1)).cast("int").alias("breaches"),
        F.sort_array(F.collect_list(F.when(is_breach, F.struct("st", "en", "peak"))))
        .alias("breach"),
        F.sort_array(F.collect_list(F.when(is_gap, F.struct("st", "en")))).alias("gap"),
        F.max("cycle_ms").alias("cycle_ms"), F.max("first_t").alias("first_t"))
    # the lead-in [start, first sample) is no data: it continues a no-data island that starts
    # at the first sample, or comes before everything
    lead_end = F.least(F.col("first_t"), end)
    first_gap = F.get(F.col("gap"), 0)
    continues = (F.size("gap") > 0) & (first_gap["st"] == lead_end)
    lead_in = F.struct(start.cast("bigint").alias("st"), lead_end.alias("en"))
    gap = (F.when(lead_end <= start, F.col("gap"))
           .when(continues, F.concat(F.array(F.struct(start.cast("bigint").alias("st"),
                                                      first_gap["en"].alias("en"))),
                                     F.slice("gap", 2, F.greatest(F.size("gap") - 1, F.lit(0)))))
           .otherwise(F.concat(F.array(lead_in), F.col("gap"))))
    per = per.withColumn("gap", gap)
    # the window's samples, sorted, for the percentiles: on the same partitioning, and as a
    # conditional aggregate (collect_list skips nulls), not a filter, which the optimizer
    # would push below the series' shuffle and so make it another one
    in_window = (F.col("t") >= start) & (F.col("t") < end)
    samples = series.groupBy(*keys).agg(
        F.sort_array(F.collect_list(F.when(in_window, F.col("value")))).alias("values"))
    per = per.join(samples, keys, "left").join(F.broadcast(judges), judge_keys, "left")
    window_ms = options.end_ms - options.start_ms
    n = F.size("values")
    good = F.col("measured_ms") - F.col("over_ms")
    judged = F.col("objective_ms").isNotNull() & F.lit(window_ms > 0)
    exact = "decimal(38,0)"
    num, den = F.col("target_num").cast(exact), F.col("target_den").cast(exact)
    window, measured = F.lit(window_ms).cast(exact), F.col("measured_ms").cast(exact)
    cover = options.min_coverage
    # slo.verdict, in exact integers: the window's error budget spent on measured breaches,
    # else too little data, else attainment (over the time with data) against the target
    verdict = (F.when(F.col("over_ms").cast(exact) * den > (den - num) * window, F.lit("missed"))
               .when((F.col("measured_ms") <= 0)
                     | (measured * F.lit(cover.denominator).cast(exact)
                        < F.lit(cover.numerator).cast(exact) * window), F.lit(INSUFFICIENT))
               .when(good.cast(exact) * den >= num * measured, F.lit("met"))
               .otherwise(F.lit("missed")))
    verdict = F.when(judged & F.col("target_num").isNotNull(), verdict)

    def share(ms: Any) -> Any:  # int ms / window, as Python divides two ints
        return ms.cast("double") / float(window_ms) if window_ms else F.lit(0.0)

    no_data = F.lit(window_ms) - F.col("measured_ms")
    return per.select(
        *keys, *names, "objective", "objective_ms", "target",
        n.cast("bigint").alias("samples"),
        _quantile(F.col("values"), n, 0.50).alias("p50_ms"),
        _quantile(F.col("values"), n, 0.95).alias("p95_ms"),
        _quantile(F.col("values"), n, 0.99).alias("p99_ms"),
        F.get(F.col("values"), n - 1).alias("max_ms"),
        "cycle_ms", F.lit(window_ms).cast("bigint").alias("window_ms"), "measured_ms",
        no_data.alias("no_data_ms"), "over_ms", good.alias("good_ms"),
        share(F.col("over_ms")).alias("over_share"), share(no_data).alias("no_data_share"),
        F.when(judged & (F.col("measured_ms") > 0),
               good.cast("double") / F.col("measured_ms").cast("double")).alias("compliance"),
        "longest_breach_ms", "breaches",
        F.when(verdict != F.lit(INSUFFICIENT), verdict == F.lit("met")).alias("met"),
        verdict.alias("verdict"),
        F.transform("breach", lambda e: e["st"]).alias("breach_starts"),
        F.transform("breach", lambda e: e["en"]).alias("breach_ends"),
        F.transform("breach", lambda e: e["peak"]).alias("breach_peaks"),
        F.transform("gap", lambda e: e["st"]).alias("no_data_starts"),
        F.transform("gap", lambda e: e["en"]).alias("no_data_ends"),
    )


# --- the job -----------------------------------------------------------------------------
#
# Two queries over the same rows (one file listing):
#
# 1. partitions: per partition, the aggregates of the partitions table; it also names every
#    series of the window and its look-back (the catalogue), so the objectives can be matched
#    in Python (the same regexes as everywhere) for the few distinct names;
# 2. series: the rows keyed by two 64-bit hashes (series = cluster, consumer, topic; group =
#    cluster, consumer; the catalogue proves them collision-free, else another seed is used),
#    folded into one value per series and sample time, shuffled once by group, and on that
#    partitioning both levels are evaluated: the topic series, and the consumer series (the
#    worst of the topics its objective selects at each time) without another shuffle. Topics
#    and consumers come back in one result. Numbers instead of names make the aggregation,
#    the shuffles and the window sorts cheaper; the names are joined back at the end.

#: SQL settings for the report's queries (set for their duration, then restored):
#: collect_list over more than 128 groups per task would otherwise fall back to a sort-based
#: aggregation (the partitions' samples); a series' rows stay in the window operator's
#: in-memory buffer up to a quarter at 30 s cycles instead of an external sorter's.
REPORT_SQL_CONF: dict[str, str] = {
    "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "1000000",
    "spark.sql.windowExec.buffer.in.memory.threshold": "1000000",
}

_SERIES_COLUMNS = ["cluster", "consumer", "topic", "partition", "t", "freshness_ms",
                   "data_loss", "lost_records"]


@dataclass(frozen=True)
class SeriesIds:
    """How the series query names series: xxhash64 over (seed, names), collision-free on the
    catalogue it was checked against."""

    seed: int
    series: dict[int, tuple[str, str, str]]  # hash → (cluster, consumer, topic)
    groups: dict[int, tuple[str, str]]  # hash → (cluster, consumer)

    def columns(self) -> tuple[Any, Any]:
        """(group id, series id) as Spark columns over rows with the name columns."""
        from pyspark.sql import functions as F

        seed = F.lit(self.seed)
        return (F.xxhash64(seed, "cluster", "consumer").alias("g"),
                F.xxhash64(seed, "cluster", "consumer", "topic").alias("h"))


@dataclass
class ReportTables:
    topics: Any  # pandas, one row per (cluster, consumer, topic)
    consumers: Any  # pandas, one row per (cluster, consumer)
    partitions: Any  # pandas, one row per partition with samples in the window
    ids: SeriesIds
    included: dict[int, bool]  # series hash → feeds its consumer's series


@contextmanager
def _sql_conf(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    before = {k: spark.conf.get(k, None) for k in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def read_rows(spark: Any, history: str, options: ReportOptions) -> Any:
    """The partition rows of the window and its look-back (only the report's columns). Every
    query of one report uses this one DataFrame, so they read the same files."""
    from pyspark.errors import AnalysisException

    try:
        return history_frame(spark, history, options.start_ms - options.lookback_ms,
                             options.end_ms).select(*_SERIES_COLUMNS)
    except AnalysisException as exc:
        raise FreshnessTrackerError(f"cannot read the history table at {history}: "
                                    f"{str(exc).splitlines()[0]}") from exc


def _seeded_ids(spark: Any, names: Sequence[tuple[str, str, str]], first: Any) -> SeriesIds:
    """Hashes for the catalogue `names`: `first` holds seed 0's (computed by the partitions
    query); a collision (never seen: 64 bits) moves to the next seed."""
    seed = 0
    hashes = first
    while True:
        series = dict(zip((int(h) for h, _ in hashes), names, strict=True))
        groups: dict[int, tuple[str, str]] = {}
        clash = len(series) != len(names)
        for (_, g), (cluster, consumer, _topic) in zip(hashes, names, strict=True):
            if groups.setdefault(int(g), (cluster, consumer)) != (cluster, consumer):
                clash = True
        if not clash:
            return SeriesIds(seed, series, groups)
        seed += 1
        log.warning("series hash collision; trying seed %d", seed)
        frame = spark.createDataFrame(list(names) or [("", "", "")],
                                      "cluster string, consumer string, topic string")
        ids = SeriesIds(seed, {}, {})
        g, h = ids.columns()
        hashes = [(r["h"], r["g"]) for r in frame.select(h, g).collect()]


def _judges(spark: Any, pairs: Sequence[tuple[str, ...]], objectives: Sequence[Objective],
            keys: Sequence[str], ids: Sequence[int] | None = None) -> Any:
    """(consumer[, topic]) → the judging objective's columns, decided in Python with the same
    regexes as everywhere (`objective_for_topic` / `objective_for_group`), for the few
    distinct names; broadcast into the plan. With `ids`, each row also carries its series
    or group hash (`id`) and the pairs are (cluster, consumer[, topic])."""
    rows = []
    for i, pair in enumerate(pairs):
        names = pair[1:] if ids is not None else pair
        index = (objective_for_topic(objectives, names[0], names[1]) if len(names) == 2
                 else objective_for_group(objectives, names[0]))
        o = objectives[index] if index is not None else None
        rows.append(((ids[i],) if ids is not None else ()) + (
            *pair, o.label if o else None, o.freshness_ms if o else None,
            float(o.target) if o else None, str(o.target.numerator) if o else None,
            str(o.target.denominator) if o else None))
    schema = (("id bigint, " if ids is not None else "")
              + ", ".join(f"{k} string" for k in keys) + ", objective string, objective_ms "
              "bigint, target double, target_num string, target_den string")
    empty = ((0,) if ids is not None else ()) + tuple([""] * len(keys)) + (None,) * 5
    return spark.createDataFrame(rows or [empty], schema)


def _partition_stats(rows: Any, start_ms: int) -> Any:
    """Per partition: rows, samples, exact p99 (slo.percentile's formula) and max, data loss,
    over the samples from `start_ms` on; a partition seen only in the look-back has 0 rows
    (it still names its series), and its series hashes (seed 0)."""
    from pyspark.sql import functions as F

    inside = F.col("t") >= start_ms
    loss = inside & F.col("data_loss")
    loss_t = F.when(loss, F.col("t"))
    stats = rows.groupBy(*_TOPIC, "partition").agg(
        F.count(F.when(inside, 1)).alias("rows"),
        F.sort_array(F.collect_list(F.when(inside, F.col("freshness_ms")))).alias("values"),
        F.sum(F.when(inside, F.col("data_loss").cast("int"))).alias("data_loss_samples"),
        F.max(F.when(loss, F.col("lost_records"))).alias("max_lost_records"),
        F.min(loss_t).alias("first_loss_ms"),
        F.max(loss_t).alias("last_loss_ms"),
    )
    n = F.size("values")
    g, h = SeriesIds(0, {}, {}).columns()
    return stats.select(
        *_TOPIC, "partition", "rows", n.cast("bigint").alias("samples"),
        F.get(F.col("values"), n - 1).alias("max_ms"),
        _quantile(F.col("values"), n, 0.99).alias("p99_ms"),
        "data_loss_samples", "max_lost_records", "first_loss_ms", "last_loss_ms", g, h)


def _topic_series(rows: Any, ids: SeriesIds) -> Any:
    """(g, h, t, value): the worst partition of each topic series at each sample time,
    hash-partitioned by group (the one shuffle both levels are evaluated on)."""
    from pyspark.sql import functions as F

    g, h = ids.columns()
    return (rows.select(g, h, "t", "freshness_ms").groupBy("g", "h", "t")
            .agg(F.max("freshness_ms").alias("value")).repartition("g"))


def _group_series(spark: Any, topic_series: Any, included: dict[int, bool]) -> Any:
    """Per (g, t): the worst of the topics the consumer's objective selects.

    Which topics feed a consumer's series is decided in Python (`domain.slo.in_group_series`,
    the same regexes as everywhere) for the few distinct series, then joined on the series
    hash; a consumer whose objective selects none of its topics keeps its samples, without a
    value (no data), so it is reported, not dropped. On the topic series' partitioning (by
    group): no shuffle.
    """
    from pyspark.sql import functions as F

    flags = spark.createDataFrame(list(included.items()) or [(0, False)],
                                  "h bigint, in_group boolean")
    # a left join: an inner one adds a not-null filter that the optimizer pushes below the
    # topic series' shuffle, making it a second one instead of a reuse (every series is in
    # the catalogue, so no row lacks its flag)
    return (topic_series.join(F.broadcast(flags), "h", "left").groupBy("g", "t")
            .agg(F.max(F.when(F.col("in_group"), F.col("value"))).alias("value")))


def evaluate_tables(spark: Any, rows: Any, objectives: Sequence[Objective],
                    options: ReportOptions, began: float | None = None) -> ReportTables:
    """The report's tables from `read_rows`, collected as pandas frames."""
    import pandas as pd

    began = time.monotonic() if began is None else began
    # file splits: at least as many as shuffle partitions (3 per core), so the two scans keep
    # every core busy to the end (by default small files are packed into one split per core,
    # which left one core with two splits and the other idle)
    splits = {"spark.sql.files.minPartitionNum": spark.conf.get("spark.sql.shuffle.partitions")}
    with _sql_conf(spark, {**REPORT_SQL_CONF, **splits}):
        with _stage(spark, "partitions", began):
            stats = _partition_stats(rows, options.start_ms).toPandas()
        catalogue = (stats[[*_TOPIC, "h", "g"]].drop_duplicates(_TOPIC)
                     .sort_values(_TOPIC).reset_index(drop=True))
        names = [tuple(r) for r in catalogue[_TOPIC].itertuples(index=False)]
        ids = _seeded_ids(spark, names, list(zip(catalogue["h"], catalogue["g"], strict=True)))
        series_ids = sorted(ids.series)
        group_ids = sorted(ids.groups)
        included = {h: in_group_series(objectives, ids.series[h][1], ids.series[h][2])
                    for h in series_ids}
        topic_judges = _judges(spark, [ids.series[h] for h in series_ids], objectives,
                               _TOPIC, series_ids)
        group_judges = _judges(spark, [ids.groups[g] for g in group_ids], objectives,
                               _GROUP, group_ids)
        topic_series = _topic_series(rows, ids)
        topics = evaluate(topic_series.withColumnRenamed("h", "id"), ["g", "id"], topic_judges,
                          options, ["id"], _TOPIC)
        consumers = evaluate(_group_series(spark, topic_series, included)
                             .withColumnRenamed("g", "id"), ["id"], group_judges, options,
                             ["id"], _GROUP)
        with _stage(spark, "series", began):
            from pyspark.sql import functions as F

            both = topics.drop("g").unionByName(
                consumers.withColumn("topic", F.lit(None).cast("string")))
            result = both.toPandas()
    level = result["topic"].isna()
    keep = [c for c in result.columns if c != "id"]
    return ReportTables(
        topics=result.loc[~level, keep].reset_index(drop=True),
        consumers=result.loc[level, [c for c in keep if c != "topic"]].reset_index(drop=True),
        partitions=stats.loc[stats["rows"] > 0].drop(columns=["g", "h"]).reset_index(drop=True)
        if len(stats) else pd.DataFrame(columns=[c for c in stats.columns if c not in "gh"]),
        ids=ids, included=included)


def consumer_series(spark: Any, rows: Any, tables: ReportTables,
                    picked: Sequence[tuple[str, str]]) -> Any:
    """(cluster, consumer, t, value) of the `picked` consumers' series, as pandas (charts)."""
    from pyspark.sql import functions as F

    wanted = {g for g, name in tables.ids.groups.items() if name in set(picked)}
    g, _ = tables.ids.columns()
    mine = rows.where(g.isin(sorted(wanted)) if wanted else F.lit(False))
    series = _group_series(spark, _topic_series(mine, tables.ids), tables.included).toPandas()
    names = tables.ids.groups
    series.insert(0, "cluster", [names[int(x)][0] for x in series["g"]])
    series.insert(1, "consumer", [names[int(x)][1] for x in series["g"]])
    return series.drop(columns=["g"])


#: Spark's error class for a file it cannot read (wrong column types, no Parquet footer).
_FAILED_READ = re.compile(r"\[FAILED_READ_FILE[A-Z_.]*\]\s*([^\n]*)")


def history_read_failure(text: str) -> str | None:
    """One line naming the history file a failed Spark job could not read and why, from the
    job's error text (a JVM stack under a Py4J error); None if that is not why it failed."""
    match = _FAILED_READ.search(text)
    if match is None:
        return None
    what = re.sub(r"\s*SQLSTATE: \w+\s*$", "", match.group(1)).strip()
    return (f"cannot read the history table: {shown(what, 500)} (every file in it must be "
            f"one the history writer wrote; move this one out of the table)")


def run_report(spark: Any, history: str, out: str, objectives: Sequence[Objective],
               options: ReportOptions) -> ReportSummary:
    """The report; a file of the table Spark cannot read fails it with one line naming the
    file, never a JVM stack (skipping it would report SLOs over rows that are not there)."""
    try:
        return _run_report(spark, history, out, objectives, options)
    except FreshnessTrackerError:
        raise
    except Exception as exc:
        failure = history_read_failure(str(exc))
        if failure is None:
            raise
        raise FreshnessTrackerError(failure) from exc


def _run_report(spark: Any, history: str, out: str, objectives: Sequence[Objective],
                options: ReportOptions) -> ReportSummary:
    from freshness_tracker.spark import report_html

    began = time.monotonic()
    summary = ReportSummary(out=out)
    rows = read_rows(spark, history, options)
    result = evaluate_tables(spark, rows, objectives, options, began)
    partitions = result.partitions
    summary.rows = int(partitions["rows"].sum()) if len(partitions) else 0
    tables = report_html.build_tables(result.consumers, result.topics, partitions, options)
    with _stage(spark, "charts", began):
        worst = report_html.worst_consumers(tables["consumers"], options.worst)
        samples = consumer_series(spark, rows, result, worst)
    with _stage(spark, "write", began):
        summary.files = report_html.write_outputs(out, tables, samples, worst, objectives,
                                                  options, history, summary.rows)
    c = tables["consumers"]
    summary.consumers, summary.topics = len(c), len(tables["topics"])
    summary.met = int((c["verdict"] == "met").sum()) if len(c) else 0
    summary.missed = int((c["verdict"] == "missed").sum()) if len(c) else 0
    summary.insufficient = int((c["verdict"] == INSUFFICIENT).sum()) if len(c) else 0
    windows = float(c["window_ms"].sum()) if len(c) else 0.0
    summary.no_data_share = float(c["no_data_ms"].sum()) / windows if windows else 0.0
    summary.data_loss_partitions = len(tables["data_loss"])
    summary.duration_ms = int((time.monotonic() - began) * 1000)
    log.info("stage=done %s duration_ms=%d", summary.line(), summary.duration_ms)
    return summary
