"""/metrics renders exactly the published snapshot (golden exposition lines), byte for byte
what prometheus_client writes for the same families (the oracle: devstack.oracle)."""

from __future__ import annotations

from dataclasses import replace

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from devstack.oracle import FreshnessCollector
from freshness_tracker.domain.model import (
    ClusterHealth,
    ClusterSnapshot,
    GroupResult,
    PartitionKey,
    PartitionStatus,
    TopicResult,
)
from freshness_tracker.metrics import Granularity
from freshness_tracker.publish import SnapshotHolder
from freshness_tracker.sinks.exposition import CachedExposition
from freshness_tracker.sinks.prometheus import SeriesSet
from tests.support.golden import result, snapshot


def served(holder: SnapshotHolder, series: SeriesSet) -> str:
    """/metrics for `series`, checked against the oracle byte for byte."""
    text = CachedExposition(holder, CollectorRegistry(), series).answer().body.decode()
    registry = CollectorRegistry()
    registry.register(FreshnessCollector(holder, series))
    assert text == generate_latest(registry).decode()
    return text


def render(holder: SnapshotHolder, granularity: Granularity = Granularity.PARTITION) -> str:
    """Every family's rules (the default set exports fewer per partition: test_exposition)."""
    return served(holder, SeriesSet.everything() if granularity is Granularity.PARTITION
                  else SeriesSet(granularity))


def test_partition_series() -> None:
    holder = SnapshotHolder()
    holder.publish(snapshot())
    text = render(holder)
    lines = set(text.splitlines())
    assert 'kafka_consumer_freshness_ms{cluster="c",consumer="g",partition="0",topic="t"} 1234.0' \
        in lines
    assert 'kafka_consumer_commit_lag_ms{cluster="c",consumer="g",partition="0",topic="t"} 7.0' \
        in lines
    assert 'kafka_consumer_data_loss{cluster="c",consumer="g",partition="2",topic="t"} 1.0' in lines
    assert 'kafka_consumer_lost_records{cluster="c",consumer="g",partition="2",topic="t"} 3.0' \
        in lines
    assert 'kafka_consumer_retention_headroom_ms{cluster="c",consumer="g",partition="0",' \
        'topic="t"} 5000.0' in lines
    assert 'kafka_consumer_partition_burrow_status{cluster="c",consumer="g",partition="0",' \
        'topic="t"} 2.0' in lines
    assert 'kafka_consumer_group_max_freshness_ms{cluster="c",consumer="g"} 1234.0' in lines
    assert 'kafka_consumer_group_burrow_status{cluster="c",consumer="g"} 2.0' in lines
    assert 'kafka_consumer_topic_max_freshness_ms{cluster="c",consumer="g",topic="t"} 1234.0' \
        in lines
    assert 'freshness_tracker_cluster_up{cluster="c"} 1.0' in lines
    assert 'freshness_tracker_cluster_last_success_timestamp_seconds{cluster="c"} 2.0' in lines
    assert 'freshness_tracker_cluster_partitions{cluster="c",status="lookup_failed"} 1.0' in lines


def test_data_current_as_of_catch_up_and_owner_series() -> None:
    holder = SnapshotHolder()
    holder.publish(snapshot())
    lines = set(render(holder).splitlines())
    labels = 'cluster="c",consumer="g",partition="0",topic="t"'
    assert f"kafka_consumer_data_current_as_of_timestamp_seconds{{{labels}}} 1.70000000025e+09" \
        in lines
    assert f"kafka_consumer_catch_up_estimate_seconds{{{labels}}} 90.5" in lines
    assert 'kafka_consumer_partition_owner_info{client_id="billing-1",cluster="c",consumer="g",' \
        'owner="/10.0.0.7",partition="0",topic="t"} 1.0' in lines
    # partition 1 is not catching up: no estimate; no owner known: no info series
    text = "\n".join(lines)
    assert 'kafka_consumer_catch_up_estimate_seconds{cluster="c",consumer="g",partition="1"' \
        not in text
    assert text.count("kafka_consumer_partition_owner_info{") == 1
    assert 'kafka_consumer_group_data_current_as_of_timestamp_seconds{cluster="c",consumer="g"} ' \
        "1.70000000025e+09" in lines
    assert 'kafka_consumer_group_catching_up{cluster="c",consumer="g"} 0.0' in lines
    assert "kafka_consumer_group_catch_up_estimate_seconds{" not in text


def test_static_labels_reach_every_family_of_their_cluster_and_only_theirs() -> None:
    """clusters[].labels: c has env and region, d has env and team; every series carries the
    union, a cluster "" for a name it lacks (Prometheus stores that as no label)."""
    holder = SnapshotHolder()
    c = snapshot()
    holder.publish(replace(c, groups=(replace(c.groups[0], catch_up_ms=5, catching_up=True),)))
    holder.publish(ClusterSnapshot("d", 1, 1, 2, ClusterHealth("d", True, 1, 2, 1)))
    series = replace(SeriesSet.everything(), cluster_labels={
        "c": {"env": "prod", "region": "eu"}, "d": {"env": "dev", "team": "pay"}})
    text = served(holder, series)
    families = list(text_string_to_metric_families(text))
    seen: dict[str, set[str]] = {"c": set(), "d": set()}
    for family in families:
        for sample in family.samples:
            cluster = sample.labels["cluster"]
            want = {"env": "prod", "region": "eu", "team": ""} if cluster == "c" else \
                {"env": "dev", "region": "", "team": "pay"}
            assert {k: sample.labels[k] for k in want} == want, sample
            seen[cluster].add(family.name)
    assert len(seen["c"]) == len(families)  # every family of c has samples here, all labelled
    assert "freshness_tracker_cluster_up" in seen["d"]
    assert 'freshness_tracker_cluster_up{cluster="d",env="dev",region="",team="pay"} 1.0' in text


def test_failed_lookup_has_no_freshness_sample() -> None:
    holder = SnapshotHolder()
    holder.publish(snapshot())
    text = render(holder)
    assert 'kafka_consumer_freshness_ms{cluster="c",consumer="g",partition="1"' not in text
    assert 'kafka_consumer_data_loss{cluster="c",consumer="g",partition="1"' not in text
    # the offset lag from Burrow is still true and still exported
    assert 'kafka_consumer_offset_lag{cluster="c",consumer="g",partition="1",topic="t"} 5.0' \
        in text


def test_failed_cluster_has_health_but_no_last_success() -> None:
    holder = SnapshotHolder()
    holder.publish(ClusterSnapshot("c", 2, 1_000, 2_000,
                                   ClusterHealth("c", False, 1_000, None, 1_000, error="x")))
    text = render(holder)
    assert 'freshness_tracker_cluster_up{cluster="c"} 0.0' in text
    assert "freshness_tracker_cluster_last_success_timestamp_seconds{" not in text
    assert "kafka_consumer_freshness_ms{" not in text


def test_granularity_group_drops_partition_and_topic_series() -> None:
    holder = SnapshotHolder()
    holder.publish(snapshot())
    text = render(holder, Granularity.GROUP)
    assert "kafka_consumer_freshness_ms{" not in text
    assert "kafka_consumer_topic_max_freshness_ms{" not in text
    assert 'kafka_consumer_group_max_freshness_ms{cluster="c",consumer="g"} 1234.0' in text
    topic = render(holder, Granularity.TOPIC)
    assert "kafka_consumer_freshness_ms{" not in topic
    assert "kafka_consumer_topic_max_freshness_ms{" in topic


def test_publish_replaces_one_cluster_only() -> None:
    holder = SnapshotHolder()
    holder.publish(snapshot())
    other = ClusterSnapshot("d", 1, 1, 2, ClusterHealth("d", True, 1, 2, 1))
    holder.publish(other)
    assert [c.cluster for c in holder.current.clusters] == ["c", "d"]
    holder.publish(ClusterSnapshot("c", 2, 3, 4, ClusterHealth("c", False, 3, 2, 1)))
    assert [c.cycle_id for c in holder.current.clusters] == [2, 1]
    assert holder.current.clusters[0].partitions == ()


def test_kafka_client_collector_reads_pool_stats_at_scrape_time() -> None:
    from freshness_tracker.sinks.selfmetrics import KafkaClientCollector

    stats = [("c", 7, 2)]
    registry = CollectorRegistry()
    registry.register(KafkaClientCollector(lambda: stats))
    assert registry.get_sample_value("freshness_tracker_kafka_fetch_requests_total",
                                     {"cluster": "c"}) == 7
    stats[0] = ("c", 9, 1)
    assert registry.get_sample_value("freshness_tracker_kafka_fetch_requests_total",
                                     {"cluster": "c"}) == 9
    assert registry.get_sample_value("freshness_tracker_kafka_consumers", {"cluster": "c"}) == 1


def test_a_label_that_is_not_utf8_costs_its_series_only_never_the_scrape() -> None:
    """A lone surrogate in one topic made generate_latest raise: /metrics answered 500 for
    every cluster. The parser drops such names; /metrics must survive one anyway."""
    bad_topic = result(3, PartitionStatus.OK, 50)._replace(
        key=PartitionKey("c", "g", "t\udc80x", 3))
    good = snapshot()
    bad = replace(good, partitions=(*good.partitions, bad_topic),
                  topics=(*good.topics, TopicResult("c", "g", "t\udc80x", 50, 1, 1, 0)),
                  groups=(*good.groups, GroupResult("c", "g\udc80", "OK", 50, 1, 1, 0, 0)))
    other = ClusterSnapshot("d", 1, 1_000, 2_000, ClusterHealth("d", True, 1_000, 2_000, 1_000))
    holder = SnapshotHolder()
    holder.publish(bad)
    holder.publish(other)
    text = render(holder)  # must not raise UnicodeEncodeError
    lines = set(text.splitlines())
    assert 'kafka_consumer_freshness_ms{cluster="c",consumer="g",partition="0",topic="t"} 1234.0' \
        in lines
    assert 'freshness_tracker_cluster_up{cluster="d"} 1.0' in lines
    assert "\\udc80" not in text and 'partition="3"' not in text


def test_an_invalid_partition_exports_what_is_possible_and_nothing_else() -> None:
    """A negative Burrow lag: no freshness, no offset lag, no data-loss verdict; the committed
    offset and Burrow's status stay; the partition is counted by its status."""
    invalid = result(0, PartitionStatus.INVALID, None, log_end_offset=None, offset_lag=0,
                     commit_lag_ms=None, invalid="Burrow reported current_lag -3")
    holder = SnapshotHolder()
    holder.publish(ClusterSnapshot(
        "c", 1, 1_000, 2_000, ClusterHealth("c", True, 1_000, 2_000, 1_000), (invalid,),
        (TopicResult("c", "g", "t", None, None, 1, 1),),
        (GroupResult("c", "g", "OK", None, None, 1, 1, 0),)))
    text = render(holder)
    samples = {line.split("{")[0] for line in text.splitlines() if not line.startswith("#")
               and 'consumer="g"' in line}
    assert samples == {"kafka_consumer_committed_offset", "kafka_consumer_partition_burrow_status",
                       "kafka_consumer_group_burrow_status",
                       "kafka_consumer_group_unmeasured_partitions",
                       "kafka_consumer_group_data_loss_partitions",
                       "kafka_consumer_group_measured"}
    assert 'freshness_tracker_cluster_partitions{cluster="c",status="invalid"} 1.0' in text
