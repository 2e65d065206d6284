"""The exporter core against the real stack (Apache Kafka 3.9.1 + Burrow 1.2.1): exact freshness
and commit lag from records with known CreateTimes and real group commits (commit lag =
Burrow's ``end.timestamp``, the broker's stamp, checked inside the window observed around the
commit, - CreateTime of C-1), zero-lag partitions that cost no read, the timestamp cache,
vanished groups, Burrow and broker outages, and no commits.

One scenario is seeded per module (records at now-60 s ... now-10 s). Every test measures only
its own groups through `filters.groups.allow`, since Burrow keeps every group of the session.

    topic A p0: 6 records  -60 -50 -40 -30 -20 -10 s      topic B p0: 5 records  -30 .. -10 s
    topic A p1: 4 records  -45 -38 -31 -24 s
    g1: A0@2 A1@1 B0@3 (all lagging)   g2: A0@4, B0@5 (caught up), A1 no commit   g3: all at LEO
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from devstack import RealStack
from devstack.exporter import exporter
from devstack.processes import poll
from devstack.scrape import COMMIT_LAG, FRESHNESS, Scrape
from devstack.stack import OFFSETS_TOPIC
from freshness_tracker import metrics
from freshness_tracker.app import Exporter
from freshness_tracker.cycle import now_ms
from freshness_tracker.domain.model import (
    BURROW_STATUS_CODES,
    ClusterSnapshot,
    PartitionResult,
    PartitionStatus,
)
from freshness_tracker.kafka.consumers import LOOKUP_GROUP_ID
from tests.support.seeding import (
    Commit,
    Topic,
    assert_exact,
    burrow_delete_group,
    commit_all,
    seed_topic,
    wait_for_burrow,
)
from tests.support.stack import marker_group_beside, require_managed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PARTITION_SERIES = (
    FRESHNESS, COMMIT_LAG, metrics.OFFSET_LAG.name, metrics.COMMITTED.name,
    metrics.DATA_LOSS.name, metrics.LOST.name,
    metrics.HEADROOM.name, metrics.PARTITION_STATUS.name,
    metrics.TOPIC_MAX_FRESHNESS.name, metrics.TOPIC_OFFSET_LAG.name,
    metrics.GROUP_MAX_FRESHNESS.name, metrics.GROUP_OFFSET_LAG.name,
    metrics.GROUP_STATUS.name, metrics.GROUP_UNMEASURED.name,
    metrics.GROUP_DATA_LOSS_PARTITIONS.name,
)  # fmt: skip


@dataclass
class Scenario:
    stack: RealStack
    tag: str
    a: Topic
    b: Topic
    commits: list[Commit]

    def group(self, name: str) -> str:
        return f"{self.tag}-{name}"

    def allow(self, *names: str) -> str:
        """A group regex matching exactly these scenario groups."""
        return "|".join(self.group(n) for n in names)

    def of(self, *names: str) -> list[Commit]:
        """The seeded commits of these groups; never empty, so a loop over them checks something."""
        groups = {self.group(n) for n in names}
        found = [c for c in self.commits if c.group in groups]
        assert found, f"no seeded commits of {names}"
        return found


@pytest.fixture(scope="module")
def scenario(stack: RealStack) -> Scenario:
    require_managed(stack, "stops Burrow and cuts the broker off")
    tag = f"exp-{uuid.uuid4().hex[:8]}"
    t = now_ms()
    a = seed_topic(stack, f"{tag}-a", {
        0: [t - 60_000 + 10_000 * i for i in range(6)],
        1: [t - 45_000 + 7_000 * i for i in range(4)],
    })  # fmt: skip
    b = seed_topic(stack, f"{tag}-b", {0: [t - 30_000 + 5_000 * i for i in range(5)]})
    g1, g2, g3 = (f"{tag}-{g}" for g in ("g1", "g2", "g3"))
    commits = [
        Commit(g1, a, 0, 2),
        Commit(g1, a, 1, 1),
        Commit(g1, b, 0, 3),
        Commit(g2, a, 0, 4),
        Commit(g2, b, 0, 5),  # caught up
        Commit(g3, a, 0, 6),
        Commit(g3, a, 1, 4),
        Commit(g3, b, 0, 5),
    ]
    commit_all(stack, commits)
    return Scenario(stack, tag, a, b, commits)


# --- expectations ------------------------------------------------------------------------


def by_key(snapshot: ClusterSnapshot) -> dict[tuple[str, str, int], PartitionResult]:
    return {(r.key.consumer, r.key.topic, r.key.partition): r for r in snapshot.partitions}


def only_cluster(exp: Exporter) -> ClusterSnapshot:
    (cluster,) = exp.holder.current.clusters
    return cluster


def labels(commit: Commit, cluster: str) -> dict[str, str]:
    return {"cluster": cluster, "consumer": commit.group, "topic": commit.topic.name,
            "partition": str(commit.partition)}  # fmt: skip


def assert_rendered(scrape: Scrape, snap: ClusterSnapshot) -> None:
    """Every partition result of the snapshot appears in the text with its exact value."""
    assert snap.partitions, "no partition results to check"
    for r in snap.partitions:
        lab = {"cluster": r.key.cluster, "consumer": r.key.consumer, "topic": r.key.topic,
               "partition": r.key.partition}  # fmt: skip
        status = scrape.get(metrics.PARTITION_STATUS.name, **lab)
        assert status == BURROW_STATUS_CODES[r.burrow_status]
        expected = {
            FRESHNESS: r.freshness_ms,
            COMMIT_LAG: r.commit_lag_ms,
            metrics.HEADROOM.name: r.retention_headroom_ms,
            metrics.OFFSET_LAG.name: None if r.committed_offset is None else r.offset_lag,
            metrics.COMMITTED.name: r.committed_offset,
        }
        for name, value in expected.items():
            got = scrape.get(name, **lab)
            assert got == (None if value is None else float(value)), (name, lab, got, value)


def consumers_in_burrow(stack: RealStack) -> set[str]:
    status, body = stack.burrow_get(f"/v3/kafka/{stack.cluster}/consumer")
    assert status == 200, (status, body)
    return set(body["consumers"])


def groups_in(scrape: Scrape, cluster: str) -> set[str]:
    found: set[str] = set()
    for name in PARTITION_SERIES:
        found |= scrape.consumers(name, cluster)
    return found


# --- tests -------------------------------------------------------------------------------


def test_exact_values_for_several_topics_and_groups(scenario: Scenario) -> None:
    s, cluster = scenario, scenario.stack.cluster
    g1, g2 = s.group("g1"), s.group("g2")
    # lookup.commitLagWhenCaughtUp off (the default is on: tested below)
    with exporter(s.stack, s.allow("g1", "g2"), "lookup.commitLagWhenCaughtUp = false") as exp:
        snapshot = exp.run_once()
        scrape = Scrape.of(exp.exposition)
    (snap,) = snapshot.clusters
    h = snap.health
    assert h.up and h.error is None, h
    assert (h.groups, h.partitions) == (2, 6)
    # A0 {2,1,4,3}, A1 {1,0}, B0 {3,2}: deduplicated, and nothing for the caught-up B0 of g2
    assert (h.kafka_reads, h.kafka_read_failures, h.cache_hits) == (8, 0, 0)

    lagging = [c for c in s.of("g1", "g2") if c.offset_lag > 0]
    results = {c: assert_exact(snap, c, scrape) for c in lagging}
    parts = by_key(snap)

    caught_up = parts[(g2, s.b.name, 0)]
    assert caught_up.status is PartitionStatus.CAUGHT_UP
    assert (caught_up.freshness_ms, caught_up.offset_lag, caught_up.committed_offset) == (0, 0, 5)
    assert caught_up.commit_lag_ms is None  # C-1 is neither read nor cached for caught-up ones
    no_commit = parts[(g2, s.a.name, 1)]  # Burrow (1.9.5, as 1.2.1) lists it with "end": null
    assert no_commit.status is PartitionStatus.NO_COMMIT and no_commit.freshness_ms is None

    groups = {g.consumer: g for g in snap.groups}
    assert set(groups) == {g1, g2}
    for g, commits in ((g1, s.of("g1")), (g2, s.of("g2"))):
        worst = max(results[c].freshness_ms or 0 for c in commits if c in results)
        assert groups[g].max_freshness_ms == worst
        assert groups[g].offset_lag == sum(c.offset_lag for c in commits)  # Burrow's totallag
    assert groups[g1].max_freshness_ms == parts[(g1, s.a.name, 0)].freshness_ms  # the -40 s one
    assert (groups[g1].unmeasured_partitions, groups[g2].unmeasured_partitions) == (0, 1)
    topics = {(t.consumer, t.topic): t for t in snap.topics}
    assert topics[(g1, s.a.name)].max_freshness_ms == parts[(g1, s.a.name, 0)].freshness_ms
    assert topics[(g1, s.a.name)].offset_lag == 4 + 3
    assert topics[(g2, s.b.name)].max_freshness_ms == 0

    # The same numbers through the rendered Prometheus text.
    assert_rendered(scrape, snap)  # and the lagging partitions' samples: assert_exact
    b_labels = {"cluster": cluster, "consumer": g2, "topic": s.b.name, "partition": "0"}
    assert scrape.get(FRESHNESS, **b_labels) == 0.0
    assert scrape.get(COMMIT_LAG, **b_labels) is None
    a1_labels = {"cluster": cluster, "consumer": g2, "topic": s.a.name, "partition": "1"}
    assert scrape.get(FRESHNESS, **a1_labels) is None
    assert scrape.get(metrics.OFFSET_LAG.name, **a1_labels) is None
    for g in (g1, g2):
        assert scrape.get(metrics.GROUP_MAX_FRESHNESS.name, cluster=cluster,
                          consumer=g) == groups[g].max_freshness_ms  # fmt: skip
        assert scrape.get(metrics.GROUP_OFFSET_LAG.name, cluster=cluster,
                          consumer=g) == groups[g].offset_lag  # fmt: skip
    assert scrape.get(metrics.GROUP_UNMEASURED.name, cluster=cluster,
                      consumer=g2) == 1.0  # fmt: skip
    assert scrape.get(metrics.TOPIC_MAX_FRESHNESS.name, cluster=cluster, consumer=g1,
                      topic=s.b.name) == results[s.of("g1")[2]].freshness_ms  # fmt: skip
    assert groups_in(scrape, cluster) == {g1, g2}
    assert scrape.get(metrics.CLUSTER_UP.name, cluster=cluster) == 1.0
    assert scrape.get(metrics.CLUSTER_GROUPS.name, cluster=cluster) == 2.0
    for status, n in (("ok", 4), ("caught_up", 1), ("no_commit", 1), ("lookup_failed", 0)):
        assert scrape.get(metrics.CLUSTER_PARTITIONS.name, cluster=cluster,
                          status=status) == n  # fmt: skip
    assert scrape.get(metrics.KAFKA_READS.total, cluster=cluster) == 8.0
    assert scrape.get(metrics.KAFKA_READ_FAILURES.total, cluster=cluster) == 0.0
    assert scrape.get(metrics.CLUSTER_LAST_SUCCESS.name,
                      cluster=cluster) == snap.finished_ms / 1000  # fmt: skip


def test_zero_lag_partitions_are_fresh_without_any_kafka_read(scenario: Scenario) -> None:
    s, cluster = scenario, scenario.stack.cluster
    g3 = s.group("g3")
    with exporter(s.stack, s.allow("g3"), "lookup.commitLagWhenCaughtUp = false") as exp:
        (snap,) = exp.run_once().clusters
        scrape = Scrape.of(exp.exposition)
    assert snap.health.up and snap.health.partitions == 3
    assert (snap.health.kafka_reads, snap.health.cache_hits) == (0, 0)
    for r in snap.partitions:
        assert r.status is PartitionStatus.CAUGHT_UP
        assert (r.freshness_ms, r.offset_lag, r.commit_lag_ms) == (0, 0, None)
    for c in s.of("g3"):
        assert scrape.get(FRESHNESS, **labels(c, cluster)) == 0.0
        assert scrape.get(COMMIT_LAG, **labels(c, cluster)) is None
    assert scrape.get(metrics.GROUP_MAX_FRESHNESS.name, cluster=cluster, consumer=g3) == 0
    assert scrape.get(metrics.KAFKA_READS.total, cluster=cluster) == 0.0
    assert scrape.get(f"{metrics.READ_DURATION.name}_count", cluster=cluster) == 0
    assert scrape.get(metrics.CLUSTER_UP.name, cluster=cluster) == 1.0

    # The default (lookup.commitLagWhenCaughtUp): caught-up groups get a commit lag and data
    # current as of too, for one read of C-1 each; none again while the offsets do not move.
    with exporter(s.stack, s.allow("g3")) as exp:
        (snap,) = exp.run_once().clusters
        (again,) = exp.run_once().clusters
    assert snap.health.up and snap.health.kafka_reads == 3
    assert (again.health.kafka_reads, again.health.cache_hits) == (0, 3)
    parts = by_key(snap)
    for c in s.of("g3"):
        r = parts[(c.group, c.topic.name, c.partition)]
        assert r.freshness_ms == 0
        assert r.commit_lag_ms == c.commit_lag_ms
        assert r.data_current_as_of_ms is not None and r.commit_time_ms is not None
        assert r.data_current_as_of_ms == r.commit_time_ms - c.commit_lag_ms


def test_second_cycle_without_movement_reads_nothing_and_freshness_grows(
    scenario: Scenario,
) -> None:
    s, cluster = scenario, scenario.stack.cluster
    with exporter(s.stack, s.allow("g1")) as exp:
        (first,) = exp.run_once().clusters
        time.sleep(1.05)
        (second,) = exp.run_once().clusters
        scrape = Scrape.of(exp.exposition)
    assert first.health.up and second.health.up
    assert (first.health.kafka_reads, first.health.cache_hits) == (6, 0)
    assert (second.health.kafka_reads, second.health.cache_hits) == (0, 6)
    assert scrape.get(metrics.KAFKA_READS.total, cluster=cluster) == 6.0
    assert scrape.get(metrics.CACHE_HITS.total, cluster=cluster) == 6.0
    assert scrape.get(metrics.CYCLES.total, cluster=cluster) == 2.0
    assert scrape.get(f"{metrics.READ_DURATION.name}_count", cluster=cluster) == 1
    before, after = by_key(first), by_key(second)
    for c in s.of("g1"):
        r1, r2 = assert_exact(first, c), assert_exact(second, c)
        assert r1.record_timestamp_ms == r2.record_timestamp_ms
        assert r1.commit_lag_ms == r2.commit_lag_ms
        assert r1.freshness_ms is not None and r2.freshness_ms is not None
        grown = r2.freshness_ms - r1.freshness_ms
        assert second.started_ms - first.finished_ms <= grown
        assert grown <= second.finished_ms - first.started_ms
        assert grown >= 1000  # slept a second: it grows with time, by time
    assert set(before) == set(after)
    assert_rendered(scrape, second)


def test_deleted_group_series_disappear_next_cycle(scenario: Scenario) -> None:
    s, stack, cluster = scenario, scenario.stack, scenario.stack.cluster
    gone, stays = s.group("del-gone"), s.group("del-stays")
    commits = [Commit(gone, s.a, 0, 3), Commit(stays, s.a, 0, 5)]
    commit_all(stack, commits)
    with exporter(stack, s.allow("del-gone", "del-stays")) as exp:
        (snap,) = exp.run_once().clusters
        assert snap.health.up and {g.consumer for g in snap.groups} == {gone, stays}
        assert groups_in(Scrape.of(exp.exposition), cluster) == {gone, stays}

        assert burrow_delete_group(stack, gone) == 200
        # Burrow applies the delete asynchronously (a storage request): wait until it is gone
        poll(lambda: gone not in consumers_in_burrow(stack), 10, f"Burrow to drop {gone}")
        (snap,) = exp.run_once().clusters
        scrape = Scrape.of(exp.exposition)
    assert snap.health.up
    assert {g.consumer for g in snap.groups} == {stays}
    assert {r.key.consumer for r in snap.partitions} == {stays}
    assert groups_in(scrape, cluster) == {stays}
    assert scrape.get(FRESHNESS, **labels(commits[1], cluster)) is not None
    assert not any(gone in line for line in scrape.text.splitlines())


def test_burrow_down_drops_the_cluster_and_recovers_in_one_cycle(scenario: Scenario) -> None:
    s, stack, cluster = scenario, scenario.stack, scenario.stack.cluster
    with exporter(stack, s.allow("g1")) as exp:
        (ok,) = exp.run_once().clusters
        assert ok.health.up and ok.health.last_success_ms == ok.finished_ms
        stack.stop_burrow()
        try:
            (down,) = exp.run_once().clusters
            scrape = Scrape.of(exp.exposition)
            time.sleep(0.05)
            (still_down,) = exp.run_once().clusters
            again = Scrape.of(exp.exposition)
        finally:
            stack.start_burrow()
        for snap in (down, still_down):
            h = snap.health
            assert not h.up and h.error and "Burrow" in h.error
            assert snap.partitions == () and snap.groups == () and snap.topics == ()
            assert h.last_success_ms == ok.finished_ms  # stops advancing
        assert still_down.health.last_attempt_ms > down.health.last_attempt_ms
        for sc in (scrape, again):
            assert sc.get(metrics.CLUSTER_UP.name, cluster=cluster) == 0.0
            assert groups_in(sc, cluster) == set()  # nothing stale
            assert sc.series(FRESHNESS) == {}
            assert sc.get(metrics.CLUSTER_LAST_SUCCESS.name,
                          cluster=cluster) == ok.finished_ms / 1000  # fmt: skip
        assert again.get(metrics.CYCLE_FAILURES.total, cluster=cluster) == 2.0
        assert (again.get(metrics.BURROW_ERRORS.total, cluster=cluster) or 0) >= 2

        wait_for_burrow(stack, s.commits)  # Burrow re-reads __consumer_offsets on start
        (back,) = exp.run_once().clusters
        scrape = Scrape.of(exp.exposition)
    assert back.health.up and back.health.last_success_ms == back.finished_ms
    assert back.health.cache_hits == 6 and back.health.kafka_reads == 0
    for c in s.of("g1"):
        assert_exact(back, c)
    assert_rendered(scrape, back)
    assert scrape.get(metrics.CLUSTER_UP.name, cluster=cluster) == 1.0


def test_broker_down_drops_lagging_values_and_recovers(scenario: Scenario) -> None:
    s, stack, cluster = scenario, scenario.stack, scenario.stack.cluster
    g1 = s.group("g1")
    allow = s.allow("g1", "g3")
    # g1's C and C-1 (6 reads) and, by default, C-1 of the caught-up g3 (3)
    with exporter(stack, allow, "lookup.cacheSize = 0") as cold, \
            exporter(stack, allow) as warm:  # fmt: skip
        for exp in (cold, warm):
            (ok,) = exp.run_once().clusters
            assert ok.health.up and ok.health.kafka_reads == 9
        last_ok = only_cluster(cold).finished_ms
        stack.cut_broker()  # the exporter's client listener only: Burrow keeps reading Kafka
        try:
            started = time.monotonic()
            (down,) = cold.run_once().clusters
            took = time.monotonic() - started
            scrape = Scrape.of(cold.exposition)
            (cached,) = warm.run_once().clusters
        finally:
            stack.restore_broker()
        h = down.health
        assert not h.up and h.error, h
        assert h.kafka_read_failures == h.kafka_reads == 9
        assert h.last_success_ms == last_ok
        assert took < 30, took
        parts = by_key(down)
        for c in s.of("g1"):
            r = parts[(c.group, c.topic.name, c.partition)]
            assert r.status is PartitionStatus.LOOKUP_FAILED
            assert (r.freshness_ms, r.commit_lag_ms) == (None, None)
            assert scrape.get(FRESHNESS, **labels(c, cluster)) is None
            assert scrape.get(COMMIT_LAG, **labels(c, cluster)) is None
            # Burrow's own numbers for it are still true, and say which partition is unmeasured
            assert scrape.get(metrics.OFFSET_LAG.name, **labels(c, cluster)) == c.offset_lag
        groups = {g.consumer: g for g in down.groups}
        assert groups[g1].max_freshness_ms is None and groups[g1].unmeasured_partitions == 3
        assert scrape.get(metrics.GROUP_MAX_FRESHNESS.name, cluster=cluster,
                          consumer=g1) is None  # fmt: skip
        assert scrape.get(metrics.GROUP_UNMEASURED.name, cluster=cluster,
                          consumer=g1) == 3.0  # fmt: skip
        for c in s.of("g3"):  # caught up: 0 needs no read (its failed C-1: no commit lag)
            assert scrape.get(FRESHNESS, **labels(c, cluster)) == 0.0
            assert scrape.get(COMMIT_LAG, **labels(c, cluster)) is None
        assert scrape.get(metrics.CLUSTER_UP.name, cluster=cluster) == 0.0
        assert scrape.get(metrics.KAFKA_READ_FAILURES.total, cluster=cluster) == 9.0
        assert scrape.get(metrics.CLUSTER_LAST_SUCCESS.name,
                          cluster=cluster) == last_ok / 1000  # fmt: skip
        # A cycle the cache could answer whole still asks Kafka one metadata request: with the
        # broker cut, the cluster is down and nothing is served from the cache.
        assert not cached.health.up and "no broker reachable" in (cached.health.error or "")
        assert cached.health.kafka_reads == 0 and cached.health.cache_hits == 0
        cached_parts = by_key(cached)
        for c in s.of("g1"):
            r = cached_parts[(c.group, c.topic.name, c.partition)]
            assert r.status is PartitionStatus.LOOKUP_FAILED and r.freshness_ms is None

        # Recovery: the first cycles may still see librdkafka's reconnect backoff.
        cycles: list[ClusterSnapshot] = []

        def recovered() -> bool:
            (snap,) = cold.run_once().clusters
            cycles.append(snap)
            return snap.health.up

        poll(recovered, 60, "the exporter to read Kafka again", interval_s=0.5)
        back = cycles[-1]
        scrape = Scrape.of(cold.exposition)
    assert back.health.kafka_reads == 9 and back.health.kafka_read_failures == 0
    assert back.health.last_success_ms == back.finished_ms
    for c in s.of("g1"):
        assert_exact(back, c)
    assert_rendered(scrape, back)
    assert scrape.get(metrics.CLUSTER_UP.name, cluster=cluster) == 1.0
    assert len(cycles) <= 3, [c.health.error for c in cycles]


def test_exporter_never_commits_or_creates_a_group(scenario: Scenario) -> None:
    s, stack = scenario, scenario.stack
    before = stack.group_ids()
    burrow_before = consumers_in_burrow(stack)
    with exporter(stack, f"{s.tag}-.*", "lookup.cacheSize = 0") as exp:
        for _ in range(3):
            (snap,) = exp.run_once().clusters
            assert snap.health.up and snap.health.kafka_reads > 0
    after = stack.group_ids()
    assert after == before
    assert LOOKUP_GROUP_ID not in after
    # Nothing reached __consumer_offsets either: a commit made afterwards in the partition the
    # lookup group would write to is in Burrow only once Burrow has read everything before it.
    meta = stack.admin().list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC]
    marker = marker_group_beside(LOOKUP_GROUP_ID, f"{s.tag}-mark", len(meta.partitions))
    stack.commit(marker, s.a.name, 0, 1)
    stack.wait_for_burrow_lag(marker, s.a.name, 0, committed_offset=1,
                              current_lag=s.a.leo(0) - 1, timeout_s=60)
    burrow_after = consumers_in_burrow(stack) - {marker}
    assert LOOKUP_GROUP_ID not in burrow_after
    assert burrow_after <= burrow_before


@pytest.fixture(autouse=True)
def _stack_is_whole(stack: RealStack) -> Iterator[None]:
    """A test that stops a component must leave it running for the next one."""
    yield
    if stack.managed and stack.burrow is not None:
        assert stack.burrow_get("/burrow/admin") == (200, "GOOD")
