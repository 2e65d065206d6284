"""What each tool's ``/metrics`` says about one partition, and about its own rounds (pure).

Every tool names things its own way; this module is the one place that knows how:

* **freshness-tracker**: its catalogue's (``freshness_tracker.metrics``) ``FRESHNESS``
  (milliseconds, by cluster, consumer, topic, partition); its round is
  ``CLUSTER_CYCLE_DURATION`` and ``CLUSTER_LAST_ATTEMPT``.
* **klag-exporter** 0.1.22 to 0.1.29 alike (``granularity = "partition"``):
  ``kafka_consumergroup_group_lag_seconds{cluster_name, group, topic, partition, ...}`` (absent
  when it has no number: rate mode with too little history or an idle producer; 0.1.29 adds
  ``compaction_detected`` and ``data_loss_detected`` labels),
  ``kafka_consumergroup_group_lag`` (offsets); its round is
  ``kafka_lag_exporter_scrape_duration_seconds`` and
  ``kafka_lag_exporter_last_update_timestamp_seconds``.
* **kafka_exporter** 1.9.0: ``kafka_consumergroup_lag{consumergroup, topic, partition}``
  (offsets only); it collects on every scrape, so a scrape is its round.
* **kminion** 2.3.5 (``granularity: partition``):
  ``kminion_kafka_consumer_group_topic_partition_lag{group_id, topic_name, partition_id}``
  (offsets only, high watermark minus the committed offset, never below 0); it collects on
  every scrape, so a scrape is its round.
* **Consumer Freshness Tracker** (kafka-helmsman): ``kafka_consumer_freshness_ms{cluster,
  consumer, topic, partition}`` (milliseconds: now minus the append time of the record after
  the committed offset, 0 when Burrow's lag is 0; the name ours kept), no offset lag; its round
  is the summary ``kafka_consumer_freshness_runtime_sec`` (``_sum``/``_count``: rounds so far)
  and ``kafka_consumer_freshness_last_success_run_timestamp{cluster}`` (set when a round ends).

Values are returned in seconds (time lag) or records (offset lag).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from freshness_tracker import metrics

__all__ = ["TOOLS", "Exposition", "ToolMetrics", "parse_exposition", "series_count"]


@dataclass(frozen=True)
class ToolMetrics:
    """Where one tool keeps the figures the comparison reads."""

    time_lag: str | None  # per-partition time lag family (None: offsets only)
    time_scale: float  # multiply to get seconds
    offset_lag: str | None
    group_label: str
    round_seconds: str | None = None  # the tool's own duration of its last round
    round_stamp: str | None = None  # when its last round ran (changes once per round)
    cluster_label: str | None = None
    topic_label: str = "topic"
    partition_label: str = "partition"
    #: a summary of its rounds' durations: ``<name>_sum`` (s) and ``<name>_count`` (rounds)
    round_summary: str | None = None


TOOLS: dict[str, ToolMetrics] = {
    "ours": ToolMetrics(
        time_lag=metrics.FRESHNESS.name,
        time_scale=0.001,
        offset_lag=metrics.OFFSET_LAG.name,
        group_label="consumer",
        round_seconds=metrics.CLUSTER_CYCLE_DURATION.name,
        round_stamp=metrics.CLUSTER_LAST_ATTEMPT.name,
        cluster_label="cluster",
    ),
    "klag": ToolMetrics(
        time_lag="kafka_consumergroup_group_lag_seconds",
        time_scale=1.0,
        offset_lag="kafka_consumergroup_group_lag",
        group_label="group",
        round_seconds="kafka_lag_exporter_scrape_duration_seconds",
        round_stamp="kafka_lag_exporter_last_update_timestamp_seconds",
        cluster_label="cluster_name",
    ),
    "kafka_exporter": ToolMetrics(
        time_lag=None,
        time_scale=1.0,
        offset_lag="kafka_consumergroup_lag",
        group_label="consumergroup",
    ),
    "kminion": ToolMetrics(
        time_lag=None,
        time_scale=1.0,
        offset_lag="kminion_kafka_consumer_group_topic_partition_lag",
        group_label="group_id",
        topic_label="topic_name",
        partition_label="partition_id",
    ),
    "cft": ToolMetrics(
        time_lag="kafka_consumer_freshness_ms",  # its own name (ours kept it): not our catalogue
        time_scale=0.001,
        offset_lag=None,
        group_label="consumer",
        round_stamp="kafka_consumer_freshness_last_success_run_timestamp",
        cluster_label="cluster",
        round_summary="kafka_consumer_freshness_runtime_sec",
    ),
}


Key = tuple[str, str, int]  # (group, topic, partition)


@dataclass
class Exposition:
    """One scrape, reduced: per-partition time lag (s) and offset lag, and the round figures."""

    time_lag_s: dict[Key, float] = field(default_factory=dict)
    offset_lag: dict[Key, float] = field(default_factory=dict)
    round_seconds: float | None = None
    round_stamp: float | None = None
    series: int = 0
    #: rounds so far and their total seconds, for a tool that counts them (None: it does not)
    rounds: float | None = None
    rounds_seconds: float | None = None


def parse_exposition(text: str, tool: str, cluster: str | None = None) -> Exposition:
    """Reduce a Prometheus text exposition of ``tool`` (a key of :data:`TOOLS`).

    ``cluster`` keeps only that cluster's series where the tool labels clusters. The round
    figures are the largest value over clusters (one cluster in every run here). A tool that
    only keeps a summary of its rounds gets the mean round so far as ``round_seconds``."""
    spec = TOOLS[tool]
    out = Exposition()
    summary = (
        (spec.round_summary + "_sum", spec.round_summary + "_count")
        if spec.round_summary is not None
        else None
    )
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.series += 1
            labels = s.labels
            if (
                cluster is not None
                and spec.cluster_label is not None
                and spec.cluster_label in labels
                and labels[spec.cluster_label] != cluster
            ):
                continue
            if s.name == spec.round_seconds:
                out.round_seconds = max(out.round_seconds or 0.0, s.value)
                continue
            if s.name == spec.round_stamp:
                out.round_stamp = max(out.round_stamp or 0.0, s.value)
                continue
            if summary is not None and s.name in summary:
                if s.name == summary[0]:
                    out.rounds_seconds = (out.rounds_seconds or 0.0) + s.value
                else:
                    out.rounds = (out.rounds or 0.0) + s.value
                continue
            if (
                s.name not in (spec.time_lag, spec.offset_lag)
                or spec.partition_label not in labels
            ):
                continue
            try:
                key = (
                    labels[spec.group_label],
                    labels[spec.topic_label],
                    int(labels[spec.partition_label]),
                )
            except (KeyError, ValueError):
                continue
            if s.name == spec.time_lag:
                out.time_lag_s[key] = s.value * spec.time_scale
            else:
                out.offset_lag[key] = s.value
    if out.rounds and out.rounds_seconds is not None:
        out.round_seconds = out.rounds_seconds / out.rounds
    return out


def series_count(lines: Iterable[str]) -> int:
    """Sample lines in an exposition (comments and blank lines excluded)."""
    return sum(1 for ln in lines if ln.strip() and not ln.startswith("#"))
