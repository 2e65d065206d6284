"""One Burrow 1.2.1 over two real Kafka 3.9.1 clusters (KRaft), one exporter measuring both, as
users run them (``devstack.MultiClusterStack``).

Both clusters hold a topic and a group of the same names with different records and commits, so
a value read from the wrong cluster cannot pass for the right one:

    alpha  orders p0: 6 records -60 .. -10 s, billing@2 (lagging)   orders p1: 4 records, billing@4
    beta   orders p0: 5 records -300 .. -220 s, billing@3 (lagging)

``alpha`` is configured with its CLIENT listener (behind a frame proxy that counts requests);
``beta`` has no ``bootstrap.servers``, so the exporter takes Burrow's ``/v3/kafka/beta``
``module.servers`` (the INTERNAL listener: beta's proxy must see no request at all). Then beta's
broker is stopped: alpha stays measured, beta is down and serves no freshness; it is restarted on
the same ports and log dir, and a commit made after its return is measured exactly.

The exporter runs with ``lookup.cacheSize = 0``, as the Kafka fault matrix does, so every cycle
reads. A second exporter with the default timestamp cache sees the same outage: there nothing
moved, every timestamp is cached and no read is needed, so only its per-cycle reachability check
(one metadata request) can tell the stopped brokers; the last test shows it does.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from devstack import MultiClusterStack, RealStack
from devstack.exporter_config import cluster_entry, exporter_config
from devstack.processes import poll
from devstack.proxy import API_FETCH
from devstack.scrape import FRESHNESS, LAST_SUCCESS, PARTITIONS, READ_FAILURES, Scrape
from devstack.stack import now_ms
from devstack.testing import running_multi_cluster_stack
from freshness_tracker import metrics
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.domain.model import ClusterSnapshot, PartitionStatus
from tests.support.seeding import Commit, Topic, assert_exact, commit_all, seed_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ALPHA, BETA = "alpha", "beta"
TOPIC, GROUP = "orders", "billing"
#: After a broker restart: the JVM's start, librdkafka's reconnect backoff and a cycle.
RETURN_BUDGET_S = 60.0


@dataclass
class Rig:
    stacks: MultiClusterStack
    exporter: Exporter  # lookup.cacheSize = 0
    cached: Exporter  # the default timestamp cache
    lagging: dict[str, Commit]  # cluster -> its lagging commit
    caught_up: Commit  # alpha p1
    #: How the cached exporter saw each cluster in a cycle while beta's broker was stopped,
    #: and the /metrics it then served.
    cached_during_outage: tuple[dict[str, ClusterSnapshot], Scrape] | None = None

    def __getitem__(self, cluster: str) -> RealStack:
        return self.stacks[cluster]

    def cycle(self) -> tuple[dict[str, ClusterSnapshot], Scrape]:
        """One cycle of both clusters; (cluster -> snapshot, the /metrics it serves)."""
        snapshot = self.exporter.run_once()
        return {c.cluster: c for c in snapshot.clusters}, Scrape.of(self.exporter.exposition)

    @contextlib.contextmanager
    def logs_on_failure(self) -> Iterator[None]:
        """A failing assertion carries every component's log tail (ZooKeeper, both clusters,
        Burrow)."""
        try:
            yield
        except BaseException as exc:
            exc.add_note(f"--- stack logs ---\n{self.stacks.logs_tail()}")
            raise


@pytest.fixture(scope="module")
def stacks() -> Iterator[MultiClusterStack]:
    yield from running_multi_cluster_stack(ALPHA, BETA)


@pytest.fixture(scope="module")
def rig(stacks: MultiClusterStack) -> Iterator[Rig]:
    alpha, beta = stacks[ALPHA], stacks[BETA]
    now = now_ms()
    a_topic = seed_topic(alpha, TOPIC, {0: [now - 60_000 + 10_000 * i for i in range(6)],
                                        1: [now - 45_000 + 7_000 * i for i in range(4)]})
    b_topic = seed_topic(beta, TOPIC, {0: [now - 300_000 + 20_000 * i for i in range(5)]})
    lagging = {ALPHA: Commit(GROUP, a_topic, 0, 2), BETA: Commit(GROUP, b_topic, 0, 3)}
    caught_up = Commit(GROUP, a_topic, 1, 4)
    commit_all(alpha, [lagging[ALPHA], caught_up])
    commit_all(beta, [lagging[BETA]])
    exporter = two_cluster_exporter(stacks, extra="lookup.cacheSize = 0")
    cached = two_cluster_exporter(stacks)
    try:
        yield Rig(stacks, exporter, cached, lagging, caught_up)
    finally:
        exporter.close()
        cached.close()


def two_cluster_exporter(stacks: MultiClusterStack, extra: str = "") -> Exporter:
    """An in-process exporter of both clusters: alpha through its configured CLIENT listener,
    beta with no ``bootstrap.servers`` (taken from Burrow)."""
    config = exporter_config(
        burrow_url=stacks.burrow_url, burrow_timeout="3s", retries=1,
        clusters=[cluster_entry(ALPHA, stacks[ALPHA].bootstrap_servers, 2),
                  cluster_entry(BETA, None, 2)],
        groups_allow=GROUP, lookup_timeout="3s", frequency=1, worker_threads=4,
        every_family=True, extra=extra)  # fmt: skip
    return Exporter(load_settings(text=config))


def burrow_servers(rig: Rig, cluster: str) -> str:
    """The bootstrap Burrow gives for ``cluster`` (``/v3/kafka/<cluster>`` ``module.servers``)."""
    status, body = rig.stacks.burrow.get(f"/v3/kafka/{cluster}") if rig.stacks.burrow else (0, None)
    assert status == 200, (status, body)
    return ",".join(body["module"]["servers"])


def health_of(rig: Rig, cluster: str) -> object:
    return [c.health for c in rig.exporter.holder.current.clusters if c.cluster == cluster]


def assert_both_exact(rig: Rig, snaps: dict[str, ClusterSnapshot], scrape: Scrape) -> None:
    """Each cluster up and exact against its own records and commits (freshness bounded by the
    cycle's own clock, commit lag to the millisecond), as /metrics serves it."""
    for cluster in (ALPHA, BETA):
        assert snaps[cluster].health.up and snaps[cluster].health.error is None, \
            snaps[cluster].health
        assert scrape.get(metrics.CLUSTER_UP.name, cluster=cluster) == 1
        assert_exact(snaps[cluster], rig.lagging[cluster], scrape)
    assert scrape.freshness(ALPHA, GROUP, TOPIC, 1) == 0  # caught up: no read needed
    # each cluster serves its own partitions only: beta has no p1
    assert scrape.freshness(BETA, GROUP, TOPIC, 1) is None


def test_one_burrow_two_clusters_each_exact_through_its_own_bootstrap(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    alpha, beta = rig[ALPHA], rig[BETA]
    with rig.logs_on_failure():
        listed = rig.stacks.burrow.get("/v3/kafka")[1] if rig.stacks.burrow else None
        assert sorted(listed["clusters"]) == [ALPHA, BETA], listed  # one Burrow, both clusters
        from_burrow = burrow_servers(rig, BETA)
        assert from_burrow != beta.bootstrap_servers  # beta's INTERNAL listener, not its proxy
        alpha.reset_request_counts()
        beta.reset_request_counts()
        with caplog.at_level(logging.INFO, logger="freshness_tracker"):
            snaps, scrape = rig.cycle()

        assert_both_exact(rig, snaps, scrape)
        # the two clusters' values differ (different records), so neither was read for the other
        assert scrape.freshness(ALPHA, GROUP, TOPIC, 0) != scrape.freshness(BETA, GROUP, TOPIC, 0)
        # alpha's reads went through its configured bootstrap (its proxy saw them)...
        assert alpha.request_counts()[1].get(API_FETCH, 0) >= 1, alpha.request_counts()
        # ...beta's through the servers Burrow lists for it, never its client listener
        assert sum(beta.request_counts()[1].values()) == 0, beta.request_counts()
        taken = [r.getMessage() for r in caplog.records if "taken from Burrow" in r.getMessage()]
        assert len(taken) == 1 and f"cluster={BETA} " in taken[0] and from_burrow in taken[0], \
            taken


def test_one_cluster_down_leaves_the_other_measured_then_it_returns(rig: Rig) -> None:
    beta = rig[BETA]
    with rig.logs_on_failure():
        snaps, before = rig.cycle()
        assert_both_exact(rig, snaps, before)
        alpha_success, beta_success = (before.get(LAST_SUCCESS, cluster=c) for c in (ALPHA, BETA))
        assert alpha_success is not None and beta_success is not None
        warm = rig.cached.run_once().clusters
        assert all(c.health.up for c in warm), [c.health for c in warm]

        beta.stop_broker()  # every node of beta: a real JVM shutdown
        try:
            outage = rig.cached.run_once().clusters
            rig.cached_during_outage = ({c.cluster: c for c in outage},
                                        Scrape.of(rig.cached.exposition))
            for _ in range(2):  # down, and still down a cycle later (nothing frozen in between)
                snaps, down = rig.cycle()
                # alpha: up and exact beside it
                assert snaps[ALPHA].health.up, snaps[ALPHA].health
                assert_exact(snaps[ALPHA], rig.lagging[ALPHA], down)
                assert (down.get(LAST_SUCCESS, cluster=ALPHA) or 0) > alpha_success
                # beta: visibly down, with the reason, its failed read counted, no freshness served
                health = snaps[BETA].health
                assert not health.up and health.error, health
                assert down.get(metrics.CLUSTER_UP.name, cluster=BETA) == 0
                assert down.get(LAST_SUCCESS, cluster=BETA) == beta_success  # frozen
                assert down.increase(READ_FAILURES, before, cluster=BETA) >= 1
                assert down.get(PARTITIONS, cluster=BETA, status="lookup_failed") == 1
                assert down.freshness(BETA, GROUP, TOPIC, 0) is None
                assert not down.series(FRESHNESS, cluster=BETA), down.text
                (r,) = [r for r in snaps[BETA].partitions if r.key.topic == TOPIC]
                assert r.status is PartitionStatus.LOOKUP_FAILED and r.freshness_ms is None, r
        finally:
            beta.start_broker()  # same ports, same log dir: its records and commits are kept
        # measured again, on something that happened after its return
        topic: Topic = rig.lagging[BETA].topic
        new_ts = now_ms() - 5_000
        assert beta.produce(TOPIC, 0, [new_ts]) == [topic.leo(0)]
        topic.timestamps[0].append(new_ts)
        rig.lagging[BETA] = Commit(GROUP, topic, 0, 5)
        commit_all(beta, [rig.lagging[BETA]])

        def measured() -> tuple[dict[str, ClusterSnapshot], Scrape] | None:
            snaps, scrape = rig.cycle()
            return (snaps, scrape) if snaps[BETA].health.up else None

        snaps, back = poll(measured, RETURN_BUDGET_S,
                           lambda: f"{BETA} measured again; last health: {health_of(rig, BETA)}",
                           interval_s=0.5)  # fmt: skip
        assert_both_exact(rig, snaps, back)
        assert (back.get(LAST_SUCCESS, cluster=BETA) or 0) > beta_success



def test_with_the_cache_a_stopped_cluster_is_seen_down_too(rig: Rig) -> None:
    """The outage above, as an exporter with the default cache saw it (no second outage: one
    broker restart is enough for CI's 2 cores): beta down with the reason and nothing served
    from the cache, alpha measured; back up once beta's broker returned."""
    if rig.cached_during_outage is None:
        pytest.fail("runs after test_one_cluster_down_leaves_the_other_measured_then_it_returns")
    with rig.logs_on_failure():
        snaps, scrape = rig.cached_during_outage
        assert snaps[ALPHA].health.up, snaps[ALPHA].health
        assert_exact(snaps[ALPHA], rig.lagging[ALPHA], scrape)
        health = snaps[BETA].health
        assert not health.up and "no broker reachable" in (health.error or ""), health
        assert health.cache_hits == 0 and health.kafka_reads == 0, health  # nothing from memory
        assert scrape.get(metrics.CLUSTER_UP.name, cluster=BETA) == 0
        assert not scrape.series(FRESHNESS, cluster=BETA), scrape.text
        (r,) = [r for r in snaps[BETA].partitions if r.key.topic == TOPIC]
        assert r.status is PartitionStatus.LOOKUP_FAILED and r.freshness_ms is None, r

        def measured() -> tuple[dict[str, ClusterSnapshot], Scrape] | None:
            snaps = {c.cluster: c for c in rig.cached.run_once().clusters}
            return (snaps, Scrape.of(rig.cached.exposition)) if snaps[BETA].health.up else None

        snaps, back = poll(measured, RETURN_BUDGET_S,
                           lambda: f"{BETA} measured again by the cached exporter",
                           interval_s=0.5)  # fmt: skip
        assert_both_exact(rig, snaps, back)
