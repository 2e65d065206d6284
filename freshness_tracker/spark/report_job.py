"""`freshness-tracker spark report`: SLOs over the history table, in Spark.

Spark does the heavy lifting: it reads only the date partitions of the window, folds the
partition rows into one series per (cluster, consumer, topic) and per (cluster, consumer) (the
worst partition at each sample time, over the topics the consumer's objective selects), and
aggregates every partition for data loss and the worst partitions. The SLO math itself is
`domain.slo`, called once per series through `applyInPandas`, so the report and its unit tests
share one implementation. The small results are collected and written as Parquet, CSV and one
HTML page (`report_html`).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from freshness_tracker.domain.slo import (
    Objective,
    evaluate_series,
    in_group_series,
    infer_cycle_ms,
    objective_for_group,
    objective_for_topic,
)
from freshness_tracker.errors import FreshnessTrackerError
from freshness_tracker.sinks.history import HISTORY_SCHEMA

__all__ = ["ReportOptions", "ReportSummary", "history_frame", "run_report", "spark_schema"]

log = logging.getLogger(__name__)

_GROUP = ["cluster", "consumer"]
_TOPIC = ["cluster", "consumer", "topic"]

_STATS_COLUMNS = (
    "objective string, objective_ms bigint, target double, samples bigint, p50_ms double, "
    "p95_ms double, p99_ms double, max_ms bigint, cycle_ms bigint, window_ms bigint, "
    "measured_ms bigint, no_data_ms bigint, over_ms bigint, good_ms bigint, over_share double, "
    "no_data_share double, compliance double, longest_breach_ms bigint, breaches int, "
    "met boolean, breach_starts array<bigint>, breach_ends array<bigint>, "
    "breach_peaks array<bigint>, no_data_starts array<bigint>, no_data_ends array<bigint>"
)


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
    them; `t` is the sample time in epoch ms."""
    from pyspark.sql import functions as F

    first = dt.datetime.fromtimestamp(start_ms / 1000, tz=dt.UTC).date()
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


# --- per series: the pure SLO math -------------------------------------------------------


def _stats_row(keys: dict[str, Any], series: pd.DataFrame, objective: Objective | None,
               options: dict[str, Any]) -> pd.DataFrame:
    """One series in (t, value), one stats row out: `domain.slo` does the math."""
    times = [int(t) for t in series["t"]]
    values = [None if pd.isna(v) else int(v) for v in series["value"]]
    cycle = options["cycle_ms"] or infer_cycle_ms(times) or options["default_cycle_ms"]
    stats = evaluate_series(times, values, window_start_ms=options["start_ms"],
                            window_end_ms=options["end_ms"],
                            max_gap_ms=max(1, math.ceil(options["gap_cycles"] * cycle)),
                            objective_ms=objective.freshness_ms if objective else None,
                            target=objective.target if objective else None)
    row: dict[str, Any] = dict(keys)
    row.update(
        objective=objective.label if objective else None,
        objective_ms=objective.freshness_ms if objective else None,
        target=float(objective.target) if objective else None, samples=stats.samples,
        p50_ms=stats.p50_ms, p95_ms=stats.p95_ms, p99_ms=stats.p99_ms, max_ms=stats.max_ms,
        cycle_ms=cycle, window_ms=stats.window_ms, measured_ms=stats.measured_ms,
        no_data_ms=stats.no_data_ms, over_ms=stats.over_ms, good_ms=stats.good_ms,
        over_share=stats.over_share, no_data_share=stats.no_data_share,
        compliance=stats.compliance, longest_breach_ms=stats.longest_breach_ms,
        breaches=len(stats.episodes), met=stats.met,
        breach_starts=[e.start_ms for e in stats.episodes],
        breach_ends=[e.end_ms for e in stats.episodes],
        breach_peaks=[e.peak_ms for e in stats.episodes],
        no_data_starts=[s.start_ms for s in stats.no_data],
        no_data_ends=[s.end_ms for s in stats.no_data],
    )
    return pd.DataFrame([row], dtype=object)


def _schema(keys: Sequence[str]) -> str:
    return ", ".join(f"{k} string" for k in keys) + ", " + _STATS_COLUMNS


def _evaluate_topics(topic_series: Any, objectives: Sequence[Objective],
                     options: ReportOptions) -> Any:
    settings, judges = asdict(options), list(objectives)

    def body(frame: pd.DataFrame) -> pd.DataFrame:  # a function, so pyspark reads its hints
        first = frame.iloc[0]
        index = objective_for_topic(judges, first["consumer"], first["topic"])
        return _stats_row({k: first[k] for k in _TOPIC}, frame,
                          judges[index] if index is not None else None, settings)

    return topic_series.groupBy(*_TOPIC).applyInPandas(body, _schema(_TOPIC))


def _evaluate_groups(group_series: Any, objectives: Sequence[Objective],
                     options: ReportOptions) -> Any:
    settings, judges = asdict(options), list(objectives)

    def body(frame: pd.DataFrame) -> pd.DataFrame:
        first = frame.iloc[0]
        index = objective_for_group(judges, first["consumer"])
        return _stats_row({k: first[k] for k in _GROUP}, frame,
                          judges[index] if index is not None else None, settings)

    return group_series.groupBy(*_GROUP).applyInPandas(body, _schema(_GROUP))


def _group_series(spark: Any, topic_series: Any, objectives: Sequence[Objective]) -> Any:
    """Per (cluster, consumer, t): the worst of the topics the consumer's objective selects.

    Which topics feed a consumer's series is decided in Python (`domain.slo.in_group_series`,
    the same regexes as everywhere) for the few distinct (consumer, topic) pairs, then joined
    back; a consumer whose objective selects none of its topics keeps its samples, without a
    value (no data), so it is reported, not dropped.
    """
    from pyspark.sql import functions as F

    pairs = topic_series.select("consumer", "topic").distinct().collect()
    included = spark.createDataFrame(
        [(r["consumer"], r["topic"], in_group_series(objectives, r["consumer"], r["topic"]))
         for r in pairs] or [("", "", False)],
        "consumer string, topic string, in_group boolean")
    return (topic_series.join(F.broadcast(included), ["consumer", "topic"])
            .groupBy(*_GROUP, "t")
            .agg(F.max(F.when(F.col("in_group"), F.col("value"))).alias("value")))


# --- the job -----------------------------------------------------------------------------


def run_report(spark: Any, history: str, out: str, objectives: Sequence[Objective],
               options: ReportOptions) -> ReportSummary:
    from pyspark import StorageLevel
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    from freshness_tracker.spark import report_html

    began = time.monotonic()
    summary = ReportSummary(out=out)
    try:
        rows = history_frame(spark, history, options.start_ms - options.lookback_ms,
                             options.end_ms).select(
            "cluster", "consumer", "topic", "partition", "t", "freshness_ms", "data_loss",
            "lost_records")
    except AnalysisException as exc:
        raise FreshnessTrackerError(f"cannot read the history table at {history}: "
                                    f"{str(exc).splitlines()[0]}") from exc
    # One series per topic: the worst partition at each sample time. Cached: three jobs use it.
    topic_series = (rows.groupBy(*_TOPIC, "t").agg(F.max("freshness_ms").alias("value"))
                    .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        with _stage(spark, "evaluate-topics", began):
            topics = _evaluate_topics(topic_series, objectives, options).toPandas()
        with _stage(spark, "evaluate-consumers", began):
            group_series = _group_series(spark, topic_series, objectives)
            consumers = _evaluate_groups(group_series, objectives, options).toPandas()
        with _stage(spark, "partitions", began):
            partitions = _partition_stats(rows.where(F.col("t") >= options.start_ms)).toPandas()
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
    from pyspark.sql import functions as F

    loss_t = F.when(F.col("data_loss"), F.col("t"))
    return rows.groupBy(*_TOPIC, "partition").agg(
        F.count(F.lit(1)).alias("rows"),
        F.count("freshness_ms").alias("samples"),
        F.max("freshness_ms").alias("max_ms"),
        F.percentile_approx("freshness_ms", 0.99, 1000).alias("p99_ms"),
        F.sum(F.col("data_loss").cast("int")).alias("data_loss_samples"),
        F.max(F.when(F.col("data_loss"), F.col("lost_records"))).alias("max_lost_records"),
        F.min(loss_t).alias("first_loss_ms"),
        F.max(loss_t).alias("last_loss_ms"),
    )
