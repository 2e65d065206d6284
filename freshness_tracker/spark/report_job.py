"""`freshness-tracker spark report`: SLOs over the history table, in Spark.

Spark does the heavy lifting: it reads only the date partitions of the window, folds the
partition rows into one series per (cluster, consumer, topic) and per (cluster, consumer) (the
worst partition at each sample time, over the topics the consumer's objective selects), and
aggregates every partition for data loss and the worst partitions. The SLO math is
`domain.slo`'s, written as Spark SQL expressions (`evaluate`: window functions, gaps and
islands, no Python per series) and checked against it (tests/spark/test_report_engine.py).
The small results are collected and written as Parquet, CSV and one HTML page
(`report_html`).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from freshness_tracker.domain.slo import (
    Objective,
    in_group_series,
    objective_for_group,
    objective_for_topic,
)
from freshness_tracker.errors import FreshnessTrackerError
from freshness_tracker.sinks.history import HISTORY_SCHEMA, READ_SLACK_DAYS

__all__ = [
    "ReportOptions",
    "ReportSummary",
    "evaluate",
    "evaluate_tables",
    "history_frame",
    "read_series",
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
    data_loss_partitions: int = 0
    files: dict[str, str] = field(default_factory=dict)
    duration_ms: int = 0

    def line(self) -> str:
        return (f"report rows={self.rows} consumers={self.consumers} topics={self.topics} "
                f"met={self.met} missed={self.missed} data_loss_partitions="
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
    t = F.unix_millis("sample_time")
    return (frame.where(F.col("date").between(F.lit(first), F.lit(last)))
            .withColumn("t", t).where((t >= start_ms) & (t < end_ms)))


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
# series), checked against it by tests/spark/test_report_job.py and benchmarks/bench_report.py:
#
# 1. window over each series ordered by time: the next sample time (`lead`), the series' first
#    time and its median spacing (the cycle, unless --cycle), so each sample's hold is known:
#    it holds its value until the next sample if that comes within gap-cycles × cycle, else it
#    holds "no data"; clipped to the window, plus a no-data span from the window start to the
#    first sample when that comes later;
# 2. gaps and islands: consecutive spans of the same kind (breach, good, no data) share an
#    island id (a running count of kind changes), so an island is one breach episode or one
#    merged no-data stretch;
# 3. two aggregations on the same partitioning (no further shuffle): per island, then per
#    series: held, breached and no-data time, the episodes as sorted arrays, and the sorted
#    samples of the window, from which the percentiles are read with slo.percentile's formula.


def _judges(spark: Any, pairs: Sequence[tuple[str, ...]], objectives: Sequence[Objective],
            keys: Sequence[str]) -> Any:
    """(consumer[, topic]) → the judging objective's columns, decided in Python with the same
    regexes as everywhere (`objective_for_topic` / `objective_for_group`), for the few
    distinct names; broadcast into the plan."""
    rows = []
    for pair in pairs:
        index = (objective_for_topic(objectives, pair[0], pair[1]) if len(pair) == 2
                 else objective_for_group(objectives, pair[0]))
        o = objectives[index] if index is not None else None
        rows.append((*pair, o.label if o else None, o.freshness_ms if o else None,
                     float(o.target) if o else None,
                     str(o.target.numerator) if o else None,
                     str(o.target.denominator) if o else None))
    schema = (", ".join(f"{k} string" for k in keys) + ", objective string, objective_ms bigint, "
              "target double, target_num string, target_den string")
    return spark.createDataFrame(rows or [tuple([""] * len(keys)) + (None,) * 5], schema)


def _quantile(values: Any, n: Any, q: float) -> Any:
    """`slo.percentile` on a sorted array: linear between the closest ranks, same float ops."""
    from pyspark.sql import functions as F

    pos = F.lit(q) * (n - 1).cast("double")
    lo = F.floor(pos)
    hi = F.least(lo + 1, n - 1)
    low = F.get(values, lo.cast("int")).cast("double")
    high = F.get(values, hi.cast("int")).cast("double")
    return F.when(n > 0, low + (high - low) * (pos - lo.cast("double")))


def evaluate(series: Any, keys: Sequence[str], judges: Any, options: ReportOptions) -> Any:
    """One stats row per series (`keys`, t, value) in the report's columns: `slo.evaluate_series`
    in Spark SQL."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    start, end = F.lit(options.start_ms), F.lit(options.end_ms)
    keys = list(keys)
    in_order = Window.partitionBy(*keys).orderBy("t")
    whole = Window.partitionBy(*keys)
    judge_keys = [k for k in keys if k != "cluster"]
    # only the objective's number rides along (numbers keep every aggregation a fast hash
    # aggregation; strings in a buffer force a sort-based one); the rest is joined at the end
    frame = series.join(F.broadcast(judges.select(*judge_keys, "objective_ms")), judge_keys,
                        "left")
    frame = (frame.withColumn("nxt", F.lead("t").over(in_order))
             .withColumn("first_t", F.min("t").over(whole)))
    if options.cycle_ms:
        cycle = F.lit(options.cycle_ms).cast("bigint")
    else:  # slo.infer_cycle_ms: the median spacing, the lower middle's floor average when even
        median = F.percentile(F.col("nxt") - F.col("t"), F.lit(0.5)).over(whole)
        cycle = F.coalesce(F.floor(median).cast("bigint"),
                           F.lit(options.default_cycle_ms).cast("bigint"))
    frame = frame.withColumn("cycle_ms", cycle)
    max_gap = F.greatest(F.lit(1).cast("bigint"),
                         F.ceil(F.lit(float(options.gap_cycles)) * F.col("cycle_ms")))
    until = F.coalesce(F.col("nxt"), end)
    own = F.struct(F.lit(1).alias("ord"), F.greatest("t", start).alias("st"),
                   F.least(until, end).alias("en"),
                   F.when(until - F.col("t") <= max_gap, F.col("value")).alias("held"))
    lead_in = F.when((F.col("t") == F.col("first_t")) & (F.col("first_t") > start), F.struct(
        F.lit(0).alias("ord"), start.alias("st"), F.least("first_t", end).alias("en"),
        F.lit(None).cast("bigint").alias("held")))
    spans = (frame.select(*keys, "t", "objective_ms", "cycle_ms",
                          F.explode(F.array(lead_in, own)).alias("span"))
             .where(F.col("span").isNotNull() & (F.col("span.en") > F.col("span.st")))
             .select(*keys, "t", "objective_ms", "cycle_ms", "span.*"))
    # kinds: 0 no data, 1 good, 2 breach
    kind = (F.when(F.col("held").isNull(), F.lit(0))
            .when(F.col("held") > F.col("objective_ms"), F.lit(2)).otherwise(F.lit(1)))
    by_span = Window.partitionBy(*keys).orderBy("t", "ord")
    spans = spans.withColumn("kind", kind)
    changed = F.when(F.col("kind") != F.lag("kind").over(by_span), 1).otherwise(0)
    spans = spans.withColumn("island", F.sum(changed).over(
        by_span.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    islands = spans.groupBy(*keys, "island", "kind").agg(
        F.min("st").alias("st"), F.max("en").alias("en"), F.max("held").alias("peak"),
        F.max("cycle_ms").alias("cycle_ms"))
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
        F.max("cycle_ms").alias("cycle_ms"))
    # the window's samples, sorted, for the percentiles: on the same partitioning
    in_window = (F.col("t") >= start) & (F.col("t") < end) & F.col("value").isNotNull()
    samples = frame.where(in_window).groupBy(*keys).agg(
        F.sort_array(F.collect_list("value")).alias("values"))
    per = (per.join(samples, keys, "left")
           .withColumn("values", F.coalesce("values", F.array().cast("array<bigint>")))
           .join(F.broadcast(judges), judge_keys, "left"))
    window_ms = options.end_ms - options.start_ms
    n = F.size("values")
    good = F.col("measured_ms") - F.col("over_ms")
    judged = F.col("objective_ms").isNotNull() & F.lit(window_ms > 0)
    exact = "decimal(38,0)"
    met = (good.cast(exact) * F.col("target_den").cast(exact)
           >= F.col("target_num").cast(exact) * F.lit(window_ms).cast(exact))

    def share(ms: Any) -> Any:  # int ms / window, as Python divides two ints
        return ms.cast("double") / float(window_ms) if window_ms else F.lit(0.0)

    no_data = F.lit(window_ms) - F.col("measured_ms")
    return per.select(
        *keys, "objective", "objective_ms", "target",
        n.cast("bigint").alias("samples"),
        _quantile(F.col("values"), n, 0.50).alias("p50_ms"),
        _quantile(F.col("values"), n, 0.95).alias("p95_ms"),
        _quantile(F.col("values"), n, 0.99).alias("p99_ms"),
        F.get(F.col("values"), n - 1).alias("max_ms"),
        "cycle_ms", F.lit(window_ms).cast("bigint").alias("window_ms"), "measured_ms",
        no_data.alias("no_data_ms"), "over_ms", good.alias("good_ms"),
        share(F.col("over_ms")).alias("over_share"), share(no_data).alias("no_data_share"),
        F.when(judged, good.cast("double") / float(window_ms or 1)).alias("compliance"),
        "longest_breach_ms", "breaches",
        F.when(judged & F.col("target_num").isNotNull(), met).alias("met"),
        F.transform("breach", lambda e: e["st"]).alias("breach_starts"),
        F.transform("breach", lambda e: e["en"]).alias("breach_ends"),
        F.transform("breach", lambda e: e["peak"]).alias("breach_peaks"),
        F.transform("gap", lambda e: e["st"]).alias("no_data_starts"),
        F.transform("gap", lambda e: e["en"]).alias("no_data_ends"),
    )


def _group_series(spark: Any, topic_series: Any, objectives: Sequence[Objective],
                  pairs: Sequence[tuple[str, str]]) -> Any:
    """Per (cluster, consumer, t): the worst of the topics the consumer's objective selects.

    Which topics feed a consumer's series is decided in Python (`domain.slo.in_group_series`,
    the same regexes as everywhere) for the few distinct (consumer, topic) `pairs`, then joined
    back; a consumer whose objective selects none of its topics keeps its samples, without a
    value (no data), so it is reported, not dropped.
    """
    from pyspark.sql import functions as F

    included = spark.createDataFrame(
        [(c, t, in_group_series(objectives, c, t)) for c, t in pairs] or [("", "", False)],
        "consumer string, topic string, in_group boolean")
    return (topic_series.join(F.broadcast(included), ["consumer", "topic"])
            .groupBy(*_GROUP, "t")
            .agg(F.max(F.when(F.col("in_group"), F.col("value"))).alias("value")))


# --- the job -----------------------------------------------------------------------------


def read_series(spark: Any, history: str, options: ReportOptions) -> tuple[Any, Any]:
    """(partition rows of the window and its look-back, the per-topic series: the worst
    partition at each sample time, persisted: several jobs use it; unpersist when done)."""
    from pyspark import StorageLevel
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    try:
        rows = history_frame(spark, history, options.start_ms - options.lookback_ms,
                             options.end_ms).select(
            "cluster", "consumer", "topic", "partition", "t", "freshness_ms", "data_loss",
            "lost_records")
    except AnalysisException as exc:
        raise FreshnessTrackerError(f"cannot read the history table at {history}: "
                                    f"{str(exc).splitlines()[0]}") from exc
    topic_series = (rows.groupBy(*_TOPIC, "t").agg(F.max("freshness_ms").alias("value"))
                    .persist(StorageLevel.MEMORY_AND_DISK))
    return rows, topic_series


def evaluate_tables(spark: Any, rows: Any, topic_series: Any, objectives: Sequence[Objective],
                    options: ReportOptions, began: float | None = None
                    ) -> tuple[Any, Any, Any, Any]:
    """(topics, consumers, partitions) collected as pandas frames, and the per-consumer series
    (a Spark DataFrame, for the charts)."""
    from pyspark.sql import functions as F

    began = time.monotonic() if began is None else began
    with _stage(spark, "series-names", began):  # also fills the series cache
        pairs = sorted((r["consumer"], r["topic"]) for r in
                       topic_series.select("consumer", "topic").distinct().collect())
    group_series = _group_series(spark, topic_series, objectives, pairs)
    jobs = {
        "evaluate-topics": lambda: evaluate(
            topic_series, _TOPIC, _judges(spark, pairs, objectives, ["consumer", "topic"]),
            options),
        "evaluate-consumers": lambda: evaluate(
            group_series, _GROUP, _judges(spark, sorted({(c,) for c, _ in pairs}), objectives,
                                          ["consumer"]), options),
        "partitions": lambda: _partition_stats(rows.where(F.col("t") >= options.start_ms)),
    }

    def collect(name: str) -> Any:
        with _stage(spark, name, began):
            return jobs[name]().toPandas()

    # Three independent queries at once: each is a few small stages, so running them side by
    # side keeps the cores busy while another query waits on its stage boundaries.
    with ThreadPoolExecutor(len(jobs), thread_name_prefix="report") as pool:
        topics, consumers, partitions = pool.map(collect, list(jobs))
    return topics, consumers, partitions, group_series


def run_report(spark: Any, history: str, out: str, objectives: Sequence[Objective],
               options: ReportOptions) -> ReportSummary:
    from pyspark.sql import functions as F

    from freshness_tracker.spark import report_html

    began = time.monotonic()
    summary = ReportSummary(out=out)
    rows, topic_series = read_series(spark, history, options)
    try:
        topics, consumers, partitions, group_series = evaluate_tables(
            spark, rows, topic_series, objectives, options, began)
        summary.rows = int(partitions["rows"].sum()) if len(partitions) else 0
        tables = report_html.build_tables(consumers, topics, partitions, options)
        with _stage(spark, "charts", began):
            worst = report_html.worst_consumers(tables["consumers"], options.worst)
            picked = spark.createDataFrame(worst or [("", "")], "cluster string, consumer string")
            samples = group_series.join(F.broadcast(picked), _GROUP).toPandas()
    finally:
        topic_series.unpersist()
    with _stage(spark, "write", began):
        summary.files = report_html.write_outputs(out, tables, samples, worst, objectives,
                                                  options, history, summary.rows)
    c = tables["consumers"]
    summary.consumers, summary.topics = len(c), len(tables["topics"])
    summary.met = int((c["met"] == True).sum()) if len(c) else 0  # noqa: E712
    summary.missed = int((c["met"] == False).sum()) if len(c) else 0  # noqa: E712
    summary.data_loss_partitions = len(tables["data_loss"])
    summary.duration_ms = int((time.monotonic() - began) * 1000)
    log.info("stage=done %s duration_ms=%d", summary.line(), summary.duration_ms)
    return summary


def _partition_stats(rows: Any) -> Any:
    """Per partition: rows, samples, exact p99 (slo.percentile's formula) and max, data loss."""
    from pyspark.sql import functions as F

    loss_t = F.when(F.col("data_loss"), F.col("t"))
    stats = rows.groupBy(*_TOPIC, "partition").agg(
        F.count(F.lit(1)).alias("rows"),
        F.sort_array(F.collect_list("freshness_ms")).alias("values"),
        F.sum(F.col("data_loss").cast("int")).alias("data_loss_samples"),
        F.max(F.when(F.col("data_loss"), F.col("lost_records"))).alias("max_lost_records"),
        F.min(loss_t).alias("first_loss_ms"),
        F.max(loss_t).alias("last_loss_ms"),
    )
    n = F.size("values")
    return stats.select(
        *_TOPIC, "partition", "rows", n.cast("bigint").alias("samples"),
        F.get(F.col("values"), n - 1).alias("max_ms"),
        _quantile(F.col("values"), n, 0.99).alias("p99_ms"),
        "data_loss_samples", "max_lost_records", "first_loss_ms", "last_loss_ms")
