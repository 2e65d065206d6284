"""/metrics is rendered once per snapshot and served as bytes.

Nothing here is timed: the bytes must equal what prometheus_client writes for the same families
(every format and escaping it negotiates, plain and gzip), and the expensive steps are counted
(`CachedExposition.counts`): one render per published cluster snapshot, one gzip per snapshot
and format, however many scrapers ask and however many clusters did not change.
"""

from __future__ import annotations

import gzip
import http.client
import logging
import socket
import subprocess
import threading
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.parser import text_string_to_metric_families

from devstack.oracle import FreshnessCollector, served_and_reference
from devstack.processes import poll
from freshness_tracker import http as http_module
from freshness_tracker import metrics
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.domain import model as m
from freshness_tracker.errors import ConfigError
from freshness_tracker.http import MetricsServer, make_app, send_all
from freshness_tracker.metrics import ALL_PARTITION_METRICS, Granularity
from freshness_tracker.publish import SnapshotHolder
from freshness_tracker.sinks import exposition as exposition_module
from freshness_tracker.sinks.exposition import (
    CachedExposition,
    crc_combine,
    crc_shift,
    only_named,
)
from freshness_tracker.sinks.prometheus import DEFAULT_PARTITION_METRICS, SeriesSet
from freshness_tracker.web_settings import WebSettings
from tests.deploy.tools import require_tool
from tests.support.fakes import FakeBurrow, FakeReader, group, lag
from tests.support.golden import snapshot

#: Accept headers as Prometheus 2 and 3, curl and federating tools send them.
ACCEPTS = [
    None,
    "text/plain",
    "text/plain;version=0.0.4",
    "text/plain;version=1.0.0;escaping=allow-utf-8",
    "text/plain;version=1.0.0;escaping=dots",
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
    "application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;"
    "escaping=allow-utf-8;q=0.4",
    "application/openmetrics-text;version=1.0.0;escaping=values",
    "application/openmetrics-text;version=1.0.0;escaping=dots",
    "application/openmetrics-text",
]
#: Static labels of two clusters with different names (a value that needs escaping too): every
#: family carries the union, a cluster writes "" for a name it lacks.
STATIC = SeriesSet(cluster_labels={"c": {"env": "prod", "region": 'e"u\\'},
                                   "d": {"env": "dev", "team": "ü"}})
SERIES = [SeriesSet(), SeriesSet.everything(), SeriesSet(Granularity.TOPIC),
          SeriesSet(Granularity.GROUP), replace(STATIC, partition_metrics=frozenset(
              ALL_PARTITION_METRICS)), replace(STATIC, granularity=Granularity.GROUP)]


def live_registry(name: str = "freshness_tracker_test_scrapes") -> tuple[CollectorRegistry,
                                                                         Counter]:
    registry = CollectorRegistry()
    counter = Counter(name, "A counter.", ["cluster"], registry=registry)
    counter.labels("c").inc(3)
    return registry, counter


def reference(holder: SnapshotHolder, series: SeriesSet, *registries: CollectorRegistry
              ) -> CollectorRegistry:
    """What prometheus_client renders for the same families, per collect()."""
    registry = CollectorRegistry()
    registry.register(FreshnessCollector(holder, series))
    for r in registries:
        registry.register(r)
    return registry


class Published(NamedTuple):
    holder: SnapshotHolder
    exposition: CachedExposition
    per_snapshot: CollectorRegistry  # in the order /metrics serves them
    live: CollectorRegistry


def published(*clusters: m.ClusterSnapshot, series: SeriesSet | None = None,
              prepare: bool = True) -> Published:
    """An exposition with a live registry and a per-snapshot one (a counter in each)."""
    holder = SnapshotHolder()
    live, _ = live_registry()
    per_snapshot, _ = live_registry("freshness_tracker_test_cycles")
    exposition = CachedExposition(holder, live, series, per_snapshot)
    for c in clusters:
        if prepare:
            exposition.prepare(c)
        holder.publish(c)
    return Published(holder, exposition, per_snapshot, live)


def other_cluster(name: str = "d", cycle: int = 1) -> m.ClusterSnapshot:
    return m.ClusterSnapshot(name, cycle, 1_000, 2_000,
                             m.ClusterHealth(name, True, 1_000, 2_000, 1_000))


# --- the same bytes as prometheus_client ------------------------------------------------------


@pytest.mark.parametrize("series", SERIES, ids=lambda s: f"{s.granularity}-"
                         f"{len(s.partition_metrics)}-{len(s.static_labels)}")
@pytest.mark.parametrize("accept", ACCEPTS)
def test_bytes_equal_prometheus_client_in_every_format(series: SeriesSet,
                                                       accept: str | None) -> None:
    holder, exposition, *registries = published(snapshot(), other_cluster(), series=series)
    encoder, content_type = choose_encoder(accept or "")
    want = encoder(reference(holder, series, *registries))
    plain = exposition.answer(accept)
    assert plain.content_type == content_type and not plain.gzip
    assert plain.body == want and plain.length == len(want)
    zipped = exposition.answer(accept, "gzip, deflate")
    assert zipped.gzip and zipped.length == len(zipped.body)
    assert gzip.decompress(zipped.body) == want


label_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1,
                     max_size=8) | st.sampled_from(['a"b', "a\\b", "a\nb", "ü", "\udc80x"])
maybe_ms = st.none() | st.integers(-(2**40), 2**53)


@st.composite
def partitions(draw: st.DrawFn) -> m.PartitionResult:
    return m.PartitionResult(
        key=m.PartitionKey("c", draw(label_text), draw(label_text),
                           draw(st.integers(0, 2**31 - 1))),
        status=draw(st.sampled_from(m.PartitionStatus)),
        burrow_status=draw(st.sampled_from(["OK", "WARN", "STOP", "weird"])),
        committed_offset=draw(st.none() | st.integers(0, 2**63 - 1)),
        log_end_offset=draw(st.none() | st.integers(0, 2**63 - 1)),
        offset_lag=draw(st.integers(-5, 2**63 - 1)),
        commit_time_ms=None, record_timestamp_ms=draw(maybe_ms),
        freshness_ms=draw(maybe_ms), commit_lag_ms=draw(maybe_ms),
        lost_records=draw(st.integers(0, 10**12)),
        retention_headroom_ms=draw(maybe_ms),
        data_current_as_of_ms=draw(maybe_ms), catch_up_ms=draw(maybe_ms),
        catching_up=draw(st.none() | st.booleans()),
        owner=draw(st.just("") | label_text), client_id=draw(st.just("") | label_text))


@st.composite
def cluster_snapshots(draw: st.DrawFn) -> m.ClusterSnapshot:
    parts = tuple(draw(st.lists(partitions(), max_size=12)))
    topics = tuple(m.TopicResult("c", p.key.consumer, p.key.topic, draw(maybe_ms),
                                 draw(maybe_ms), 1, 0, draw(maybe_ms)) for p in parts[:4])
    groups = tuple(m.GroupResult("c", draw(label_text), "OK", draw(maybe_ms), draw(maybe_ms), 3,
                                 draw(st.integers(0, 3)), 0, draw(maybe_ms), draw(maybe_ms),
                                 draw(st.none() | st.booleans()),
                                 oldest_uncommitted_ms=draw(maybe_ms))
                   for _ in range(draw(st.integers(0, 3))))
    up = draw(st.booleans())
    health = m.ClusterHealth("c", up, 1_700_000_000_123, 1_700_000_000_999 if up else None,
                             draw(st.integers(0, 10**7)))
    return m.ClusterSnapshot("c", 1, 1, 2, health, parts, topics, groups)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_snapshots(), st.sampled_from(ACCEPTS), st.sampled_from(SERIES))
def test_any_snapshot_renders_as_prometheus_client_does(cluster: m.ClusterSnapshot,
                                                        accept: str | None,
                                                        series: SeriesSet) -> None:
    """Label values with quotes, backslashes, newlines and non-UTF-8 (skipped), huge and
    negative values, absent values: byte-identical, plain and gzip."""
    holder, exposition, *registries = published(cluster, other_cluster(), series=series)
    encoder, _ = choose_encoder(accept or "")
    want = encoder(reference(holder, series, *registries))
    assert exposition.answer(accept).body == want
    assert gzip.decompress(exposition.answer(accept, "gzip").body) == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=6))
def test_crc_of_joined_pieces_is_combined_from_theirs(pieces: list[bytes]) -> None:
    crc = 0
    for piece in pieces:
        crc = crc_combine(crc, zlib.crc32(piece), crc_shift(len(piece)))
    assert crc == zlib.crc32(b"".join(pieces))


def test_pieces_of_a_segment_join_into_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sample lines are joined ROWS_PER_PIECE at a time: the pieces must add up exactly."""
    monkeypatch.setattr(exposition_module, "ROWS_PER_PIECE", 2)
    parts = tuple(snapshot().partitions[0]._replace(key=m.PartitionKey("c", "g", "t", p))
                  for p in range(7))
    holder, exposition, *registries = published(replace(snapshot(), partitions=parts),
                                         series=SeriesSet.everything())
    want = choose_encoder("")[0](reference(holder, SeriesSet.everything(), *registries))
    assert exposition.answer().body == want
    assert gzip.decompress(exposition.answer(None, "gzip").body) == want


def test_vectored_send_delivers_every_byte_in_order() -> None:
    chunks = [bytes([i % 251]) * size for i, size in enumerate(
        [0, 1, 70_000, 3, 1_500_000, 0, 17] + [5] * 2000)]  # > IOV_MAX buffers, partial sends
    left, right = socket.socketpair()
    left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    received = bytearray()

    def read() -> None:
        while data := right.recv(65536):
            received.extend(data)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        assert send_all(left, chunks) == sum(len(c) for c in chunks)
    finally:
        left.close()
        reader.join()
        right.close()
    assert bytes(received) == b"".join(chunks)


def test_name_filter_serves_the_named_families_only() -> None:
    _holder, exposition, *_ = published(snapshot())
    names = [metrics.FRESHNESS.name, "freshness_tracker_test_scrapes_total"]  # samples
    text = exposition.answer(None, None, names).body.decode()
    assert {f.name for f in text_string_to_metric_families(text)} == set(
        [metrics.FRESHNESS.name, "freshness_tracker_test_scrapes"])
    zipped = exposition.answer(None, "gzip", names)
    assert gzip.decompress(zipped.body).decode() == text


@pytest.mark.parametrize("accept", [
    "application/openmetrics-text; version=A", "application/openmetrics-text; version=1.0.x",
    "text/plain; version=A", "text/plain;version=1\x1f.0.0",
    "application/openmetrics-text; version=7.7.7", "application/openmetrics-text;version=",
    ";;;,,,=", "application/openmetrics-text; version=1.0.0.5; escaping=\x7f"])
def test_an_accept_header_that_negotiates_nothing_gets_the_text_format(
        accept: str, caplog: pytest.LogCaptureFixture) -> None:
    # `version=A` made prometheus_client's negotiation raise: HTTP 500 and a WARNING line per
    # request; an unknown version was echoed into the Content-Type.
    _holder, exposition, *_ = published(snapshot())
    text = exposition.answer(None).body
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            answer = exposition.answer(accept)
            assert answer.content_type == "text/plain; version=0.0.4; charset=utf-8"
            assert answer.body == text
    assert not caplog.records


@pytest.mark.parametrize(("encoding", "zipped"), [
    ("gzip", True), ("gzip;q=0", False), ("gzip; q=0.000, deflate", False), ("GZIP;q=0.5", True),
    ("identity;q=0, gzip;q=1", True), ("deflate, br", False), ("gzip;q=abc", False),
    ("x-gzip", True), ("*", False), (None, False),
    # only a parameter named exactly q is a q-value; an explicit q=0 wins over a repeat
    ("gzip;qux=1", True), ("gzip;quality=0", True), ("gzip, gzip;q=0", False),
    ("gzip;q=0, gzip", False), ("x-gzip;q=0, gzip;q=0.5", False), ("gzip;q=0.5, gzip;q=1", True)])
def test_gzip_is_sent_only_when_asked_for_with_a_q_value_above_zero(
        encoding: str | None, zipped: bool) -> None:
    _holder, exposition, *_ = published(snapshot())
    assert exposition.answer(None, encoding).gzip is zipped
    assert exposition.answer(None, encoding, [metrics.FRESHNESS.name]).gzip is zipped


@pytest.mark.parametrize("names", [
    ["scrapes"], ["scrapes_total"], ["scrapes_created"], ["depth"], ["latency"],
    ["latency_bucket", "latency_count"], ["scrapes_total", "depth", "absent"]])
def test_name_filter_serves_what_prometheus_client_serves(names: list[str]) -> None:
    # A family's own name selected all of its samples: `name[]=scrapes` served a counter's
    # scrapes_total and scrapes_created, where prometheus_client serves nothing.
    registry = CollectorRegistry()
    Counter("scrapes", "scrapes", registry=registry).inc()
    Gauge("depth", "depth", registry=registry).set(3)
    Histogram("latency", "latency", buckets=(1.0,), registry=registry).observe(0.5)
    expected = generate_latest(registry.restricted_registry(names))
    assert sorted(generate_latest(only_named(registry, names)).splitlines()) == sorted(
        expected.splitlines())


def test_name_filter_covers_the_process_collectors_families() -> None:
    # prometheus_client's restricted_registry only finds collectors that describe themselves:
    # process_* was never served to `name[]`.
    holder = SnapshotHolder()
    live, _ = live_registry()
    ProcessCollector(registry=live)
    exposition = CachedExposition(holder, live)
    holder.publish(snapshot())
    everything = {f.name for f in text_string_to_metric_families(
        exposition.answer().body.decode())}
    process = sorted(n for n in everything if n.startswith(("process_", "python_")))
    assert process, everything
    for name in process:
        samples = {s.name for f in text_string_to_metric_families(exposition.answer().body
                                                                  .decode())
                   if f.name == name for s in f.samples}
        text = exposition.answer(None, None, sorted(samples)).body.decode()
        assert {f.name for f in text_string_to_metric_families(text)} == {name}


# --- rendered once ----------------------------------------------------------------------------


def test_each_published_snapshot_is_rendered_once_however_many_scrapes() -> None:
    _holder, exposition, *_ = published(snapshot(), other_cluster())
    assert exposition.counts.renders == 2  # at publication, on the cycle's thread
    for _ in range(5):
        for accept in (None, ACCEPTS[5]):  # text 0.0.4 and OpenMetrics share the samples
            exposition.answer(accept)
            exposition.answer(accept, "gzip")
    assert exposition.counts.renders == 2  # each render deflated its segments once
    assert exposition.counts.assemblies == 2  # once per format
    assert exposition.counts.gzip_parts == 2


def test_concurrent_scrapers_share_one_render_and_one_gzip() -> None:
    _holder, exposition, *_ = published(snapshot(), other_cluster(), prepare=False)
    bodies: list[bytes] = []
    start = threading.Barrier(16)

    def scrape() -> None:
        start.wait()
        bodies.append(gzip.decompress(exposition.answer(None, "gzip").body))

    threads = [threading.Thread(target=scrape) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(bodies) == 16 and len(set(bodies)) == 1
    assert exposition.counts.renders == 2
    assert exposition.counts.gzip_parts == 1


def test_a_publication_renders_only_the_cluster_that_changed() -> None:
    clusters = [other_cluster(f"c{i:02d}") for i in range(20)]
    holder, exposition, *_ = published(*clusters)
    exposition.answer(None, "gzip")
    assert exposition.counts.renders == 20
    changed = other_cluster("c07", cycle=2)
    exposition.prepare(changed)
    holder.publish(changed)
    zipped = exposition.answer(None, "gzip")
    assert exposition.counts.renders == 21  # only c07 again
    assert exposition.counts.gzip_parts == 2  # the new snapshot's part, from cached pieces
    assert gzip.decompress(zipped.body) == exposition.answer().body


def test_a_scrape_between_render_and_publication_uses_the_published_render() -> None:
    """The next cycle is rendered before it is published: a scrape in between still serves
    (and finds) the render of the snapshot that is current, never rendering it again."""
    _, exposition, *_ = published(other_cluster("c", 1))
    exposition.prepare(other_cluster("c", 2))  # not published yet
    exposition.answer()
    assert exposition.counts.renders == 2


def test_after_a_publication_one_render_per_cluster_is_held() -> None:
    holder, exposition, *_ = published(other_cluster("c", 1))
    exposition.answer(None, "gzip")
    newer = other_cluster("c", 2)
    exposition.prepare(newer)
    holder.publish(newer)
    exposition.published()
    assert [r.snapshot for r in exposition._renders["c"]] == [newer]
    assert exposition._parts == {}  # the old snapshot's assembled bytes are gone too
    exposition.answer()
    assert exposition.counts.renders == 2


def test_plain_text_is_kept_deflated_until_a_plain_scrape_asks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Prometheus asks for gzip: 30 MB of text per 100,000 partitions is held as 1 MB deflated;
    a plain scrape inflates each segment once per publication, later ones copy bytes."""
    monkeypatch.setattr(exposition_module, "KEEP_PLAIN_BYTES", 0)
    _, exposition, *_ = published(snapshot(), other_cluster())
    for _ in range(3):
        exposition.answer(ACCEPTS[5], "gzip")
    assert exposition.counts.inflates == 0
    first = exposition.answer().body
    assert exposition.counts.inflates > 0
    exposition.answer(ACCEPTS[5])  # OpenMetrics shares the samples, inflates its headers
    inflated = exposition.counts.inflates
    for _ in range(3):
        for accept in (None, "text/plain", ACCEPTS[5]):
            exposition.answer(accept)
    assert exposition.counts.inflates == inflated
    assert exposition.answer().body == first


def test_live_series_change_between_scrapes_without_a_new_render() -> None:
    holder = SnapshotHolder()
    live, counter = live_registry()
    exposition = CachedExposition(holder, live)
    published_snapshot = snapshot()
    exposition.prepare(published_snapshot)
    holder.publish(published_snapshot)
    line = 'freshness_tracker_test_scrapes_total{cluster="c"} '
    assert line + "3.0" in exposition.answer().body.decode()
    counter.labels("c").inc()
    assert line + "4.0" in exposition.answer().body.decode()
    assert line + "4.0" in gzip.decompress(exposition.answer(None, "gzip").body).decode()
    assert exposition.counts.renders == 1 and exposition.counts.assemblies == 1


def test_per_snapshot_series_are_rendered_once_per_snapshot_and_format(
        monkeypatch: pytest.MonkeyPatch) -> None:
    holder = SnapshotHolder()
    per_snapshot, cycles = live_registry("freshness_tracker_test_cycles")
    exposition = CachedExposition(holder, live_registry()[0], None, per_snapshot)
    holder.publish(snapshot())
    collects = 0
    collect = per_snapshot.collect

    def counted() -> Iterator[Metric]:
        nonlocal collects
        collects += 1
        yield from collect()

    monkeypatch.setattr(per_snapshot, "collect", counted)
    line = 'freshness_tracker_test_cycles_total{cluster="c"} '
    for _ in range(3):
        assert line + "3.0" in exposition.answer().body.decode()
        assert line + "3.0" in gzip.decompress(exposition.answer(None, "gzip").body).decode()
    assert collects == 1  # one format, one snapshot: rendered once, gzip included
    openmetrics = exposition.answer(ACCEPTS[5]).body.decode()
    assert openmetrics.count("# EOF") == 1 and openmetrics.endswith("# EOF\n")
    assert collects == 2
    # advanced before the next publication, as the cycle counters are: served from then on
    cycles.labels("c").inc()
    assert line + "3.0" in exposition.answer().body.decode()
    holder.publish(replace(snapshot(), cycle_id=snapshot().cycle_id + 1))
    exposition.published()
    assert line + "4.0" in exposition.answer().body.decode()
    assert collects == 3
    # name[] filtering serves them too, with OpenMetrics' EOF once, at the end
    names = ["freshness_tracker_test_cycles_total", metrics.FRESHNESS.name]
    filtered = exposition.answer(ACCEPTS[5], None, names).body.decode()
    assert 'freshness_tracker_test_cycles_total{cluster="c"} 4.0' in filtered
    assert f"{metrics.FRESHNESS.name}{{" in filtered and "test_scrapes" not in filtered
    assert filtered.count("# EOF") == 1 and filtered.endswith("# EOF\n")


def test_a_render_made_for_an_older_cycle_never_replaces_a_newer_one() -> None:
    holder = SnapshotHolder()
    exposition = CachedExposition(holder, CollectorRegistry())
    new = replace(snapshot(), cycle_id=5)
    exposition.prepare(new)
    exposition.prepare(replace(snapshot(), cycle_id=4))  # a late, slower publication
    holder.publish(new)
    exposition.answer()
    assert exposition.counts.renders == 2  # no third render: the held one is the published one


# --- the default series ----------------------------------------------------------------------


def exported_families(text: str) -> set[str]:
    return {line.split("{")[0] for line in text.splitlines() if line and line[0] != "#"}


def test_default_series_are_freshness_commit_lag_and_headroom_per_partition() -> None:
    _, exposition, *_ = published(snapshot())
    families = exported_families(exposition.answer().body.decode())
    per_partition = {f for f in families if f in ALL_PARTITION_METRICS}
    assert per_partition == set(DEFAULT_PARTITION_METRICS) == {
        metrics.FRESHNESS.name, metrics.COMMIT_LAG.name, metrics.HEADROOM.name}
    # every roll-up stays: alerts on groups and topics need no per-partition opt-in
    assert {f.name for f in (metrics.TOPIC_MAX_FRESHNESS, metrics.TOPIC_OFFSET_LAG,
                             metrics.GROUP_MAX_FRESHNESS, metrics.GROUP_OFFSET_LAG,
                             metrics.GROUP_STATUS, metrics.GROUP_UNMEASURED,
                             metrics.GROUP_DATA_LOSS_PARTITIONS, metrics.CLUSTER_UP)} \
        <= families


BASE = 'burrow.url = "http://burrow:8000"\nclusters = [{ name = c, kafka { ' \
       '"bootstrap.servers" = "k:1" } }]\n'


def test_the_config_default_is_that_set_and_every_family_can_be_opted_in() -> None:
    assert load_settings(text=BASE).partition_metrics == DEFAULT_PARTITION_METRICS
    everything = load_settings(text=BASE + "partitionMetrics = " + str(
        list(reversed(ALL_PARTITION_METRICS))).replace("'", '"'))
    assert everything.partition_metrics == ALL_PARTITION_METRICS  # exposition order
    lag = metrics.OFFSET_LAG.name
    only = load_settings(text=BASE + f"partitionMetrics = [{lag}]")
    assert only.partition_metrics == (lag,)
    with pytest.raises(ConfigError) as caught:
        load_settings(text=BASE + f"partitionMetrics = [{metrics.FRESHNESS.name}, lag]")
    assert caught.value.key == "partitionMetrics[1]" and lag in str(caught.value)


# --- the oldest uncommitted record's timestamp (query-time freshness) ---------------------------


def _lagging_cycle(partition_metrics: str = "") -> tuple[str, str, dict[str, float]]:
    """One real cycle at now = 100 s over a lagging group (a record waiting, another one
    older on a second partition, one caught up, one whose unread records retention deleted),
    a caught-up group and one whose read failed: (/metrics, `generate_latest` of the
    reference registry, sample name and labels -> value)."""
    t_lost = m.ReadRequest(cluster="c", topic="u", partition=0, offset=5)
    failed = m.ReadRequest(cluster="c", topic="t", partition=0, offset=9)
    burrow = FakeBurrow({"c": [
        group("c", "g", lag(partition=0, committed=4, current_lag=6),
              lag(partition=1, committed=7, current_lag=0),
              lag(partition=2, committed=2, current_lag=3),
              lag(topic="u", partition=0, committed=5, current_lag=2)),
        group("c", "idle", lag(consumer="idle", partition=0, committed=7, current_lag=0)),
        group("c", "broken", lag(consumer="broken", partition=0, committed=9, current_lag=1)),
    ]})
    reader = FakeReader({("t", 0, 4): 90_000, ("t", 2, 2): 70_000}, outcomes={
        t_lost: m.RecordRead(t_lost, m.ReadOutcome.OUT_OF_RANGE, 8, 60_000, "CreateTime", 8),
        failed: m.RecordRead(failed, m.ReadOutcome.FAILED, error="timed out")})
    exp = Exporter(load_settings(text=BASE + partition_metrics), burrow=burrow,
                   reader_factory=lambda _k: reader, clock=lambda: 100_000)
    try:
        exp.run_once()
        text, want = served_and_reference(exp)
    finally:
        exp.close()
    values = {(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "cluster"))):
              s.value for f in text_string_to_metric_families(text) for s in f.samples}
    return text, want, {f"{name}{dict(labels)}": v for (name, labels), v in values.items()}


def test_the_oldest_uncommitted_timestamp_is_the_record_at_c_and_its_oldest_per_roll_up() -> None:
    text, want, values = _lagging_cycle(
        f"partitionMetrics = [{metrics.FRESHNESS.name}, "
        f"{metrics.OLDEST_UNCOMMITTED.name}]")
    assert without_process(text) == without_process(want)  # the oracle's bytes
    stamps = {k: v for k, v in values.items() if "oldest_uncommitted" in k}
    p, t, g = (metrics.OLDEST_UNCOMMITTED.name, metrics.TOPIC_OLDEST_UNCOMMITTED.name,
               metrics.GROUP_OLDEST_UNCOMMITTED.name)
    assert stamps == {
        # a waiting record's append time; after data loss the earliest retained one's (a lower
        # bound, as the freshness); none for the caught-up partition nor the failed read
        f"{p}{{'consumer': 'g', 'partition': '0', 'topic': 't'}}": 90.0,
        f"{p}{{'consumer': 'g', 'partition': '2', 'topic': 't'}}": 70.0,
        f"{p}{{'consumer': 'g', 'partition': '0', 'topic': 'u'}}": 60.0,
        # the oldest per topic and group: min timestamp, the max freshness's record
        f"{t}{{'consumer': 'g', 'topic': 't'}}": 70.0,
        f"{t}{{'consumer': 'g', 'topic': 'u'}}": 60.0,
        f"{g}{{'consumer': 'g'}}": 60.0,
        # "idle" is caught up (freshness 0, which must not grow with the clock) and "broken"
        # unknown: neither has a timestamp
    }
    # the cycle's freshness is its now minus that timestamp, at every level
    group_max, topic_max = metrics.GROUP_MAX_FRESHNESS.name, metrics.TOPIC_MAX_FRESHNESS.name
    assert values[f"{group_max}{{'consumer': 'g'}}"] == 100_000 - 60_000
    assert values[f"{topic_max}{{'consumer': 'g', 'topic': 't'}}"] == 100_000 - 70_000
    assert values[f"{metrics.FRESHNESS.name}{{'consumer': 'g', 'partition': '0', 'topic': 't'}}"] \
        == 100_000 - 90_000
    assert values[f"{group_max}{{'consumer': 'idle'}}"] == 0
    assert f"{group_max}{{'consumer': 'broken'}}" not in values


def test_the_timestamp_is_exported_per_group_and_topic_by_default_per_partition_if_asked() -> None:
    text, want, values = _lagging_cycle()
    assert without_process(text) == without_process(want)
    families = exported_families(text)
    group_oldest = metrics.GROUP_OLDEST_UNCOMMITTED.name
    assert {group_oldest, metrics.TOPIC_OLDEST_UNCOMMITTED.name} <= families
    assert metrics.OLDEST_UNCOMMITTED.name not in families
    assert values[f"{group_oldest}{{'consumer': 'g'}}"] == 60.0


# --- the exporter and the listener ------------------------------------------------------------


@pytest.fixture
def exporter() -> Iterator[Exporter]:
    burrow = FakeBurrow({"c": [group("c", "g", lag(partition=0, committed=4, current_lag=6,
                                                   commit_time=95_000),
                                     lag(partition=1, committed=7, current_lag=0))]})
    reader = FakeReader({("t", 0, 3): 80_000, ("t", 0, 4): 90_000})
    exp = Exporter(load_settings(text=BASE), burrow=burrow, reader_factory=lambda _k: reader,
                   clock=lambda: 100_000)
    try:
        yield exp
    finally:
        exp.close()


def without_process(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith(("process_", "# HELP process_", "# TYPE process_")))


def test_a_cycle_is_published_even_when_counting_it_fails(
        exporter: Exporter, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(snapshot: m.ClusterSnapshot) -> None:
        raise ValueError("a bug in the counters")

    monkeypatch.setattr(exporter.self_metrics, "observe", broken)
    (published_cluster,) = exporter.run_once().clusters
    assert published_cluster.cycle_id == 1 and published_cluster.health.up
    served = exporter.exposition.answer().body.decode()
    assert f'{metrics.FRESHNESS.name}{{cluster="c",consumer="g",partition="0",topic="t"}}' in served


def test_the_exporter_serves_what_prometheus_client_renders(
        exporter: Exporter, monkeypatch: pytest.MonkeyPatch) -> None:
    exporter.run_once()
    assert exporter.exposition.counts.renders == 1  # rendered when the cycle published
    served, want = served_and_reference(exporter)
    assert without_process(served) == without_process(want)
    assert f'{metrics.CYCLES.total}{{cluster="c"}} 1.0' in served
    # a scrape right after the next publication already sees the advanced counters (they are
    # rendered once per snapshot: advanced later, they would show only after the one after)
    publish = exporter.holder.publish
    scraped: list[str] = []

    def publish_then_scrape(cluster: m.ClusterSnapshot) -> None:
        publish(cluster)
        scraped.append(exporter.exposition.answer().body.decode())

    monkeypatch.setattr(exporter.holder, "publish", publish_then_scrape)
    exporter.run_once()
    again = exporter.exposition.answer().body.decode()
    assert f'{metrics.CYCLES.total}{{cluster="c"}} 2.0' in scraped[0]
    assert f'{metrics.CYCLES.total}{{cluster="c"}} 2.0' in again
    assert exporter.exposition.counts.renders == 2


def get(port: int, path: str, headers: dict[str, str] | None = None,
        method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, \
            response.read()
    finally:
        conn.close()


def test_the_listener_serves_cached_bytes_with_their_length(
        exporter: Exporter, monkeypatch: pytest.MonkeyPatch) -> None:
    exporter.run_once()
    web = WebSettings(listen_address="127.0.0.1", port=0)
    server = MetricsServer(make_app(exporter.exposition, exporter.health, exporter.ready, web),
                           web).start()
    vectored: list[int] = []

    def counted(sock: socket.socket, chunks: Iterable[bytes],
                stall_s: float | None = None) -> int:
        vectored.append(sent := send_all(sock, chunks, stall_s))
        return sent

    monkeypatch.setattr(http_module, "send_all", counted)
    try:
        status, headers, body = get(server.port, "/metrics")
        assert status == 200 and headers["content-length"] == str(len(body))
        # the whole answer in vectored writes, not chunk by chunk (counted once they return,
        # which may be after the client has read the last byte)
        assert poll(lambda: vectored, 5.0, "the vectored send to return") == [len(body)]
        assert headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert (f'{metrics.FRESHNESS.name}{{cluster="c",consumer="g",partition="0",topic="t"}}'
                ' 10000.0\n').encode() in body
        status, headers, zipped = get(server.port, "/metrics", {"Accept-Encoding": "gzip",
                                                                "Accept": ACCEPTS[5]})
        assert headers["content-encoding"] == "gzip"
        assert headers["content-type"].startswith("application/openmetrics-text")
        assert gzip.decompress(zipped).endswith(b"# EOF\n")
        status, headers, _ = get(server.port, "/metrics", method="POST")
        assert status == 405 and headers["allow"] == "GET, HEAD"
    finally:
        server.stop()


def test_the_exposition_passes_promtool(exporter: Exporter) -> None:
    promtool = require_tool("promtool")
    exporter.run_once()
    result = subprocess.run([promtool, "check", "metrics"], input=exporter.exposition.answer()
                            .body, capture_output=True, timeout=60)
    # exit 1: the exposition does not parse; exit 3: lint findings only, and the only ones
    # allowed are the product's established *_ms names
    assert result.returncode in (0, 3), result.stderr.decode()
    findings = [line for line in result.stdout.decode().splitlines() if line.strip()]
    assert all(f.endswith("metric names should not contain abbreviated units")
               for f in findings), findings


def test_once_prints_the_cached_exposition(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`once --format prometheus` prints the bytes /metrics would serve (one render path),
    not a second rendering through prometheus_client."""
    import logging

    from freshness_tracker.cli import main

    answers: list[bytes] = []
    real = CachedExposition.answer

    def spy(self: CachedExposition, *args: Any, **kwargs: Any) -> Any:
        answer = real(self, *args, **kwargs)
        answers.append(answer.body)
        return answer

    monkeypatch.setattr(CachedExposition, "answer", spy)
    conf = tmp_path / "c.conf"
    conf.write_text('burrow { url = "http://127.0.0.1:1", timeout = 1s, retries = 0 }\n'
                    'clusters = [{ name = local, kafka { bootstrap.servers = "127.0.0.1:1" } }]\n')
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        assert main(["once", "--format", "prometheus", "--config", str(conf)]) == 1
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    out = capsys.readouterr().out
    assert len(answers) == 1 and out == answers[0].decode()
    assert f'{metrics.CLUSTER_UP.name}{{cluster="local"}} 0.0' in out
