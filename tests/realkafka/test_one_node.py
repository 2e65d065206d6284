"""End to end on one real Kafka 3.9.1 node: records with chosen CreateTimes, genuine group commits
stamped by the broker, Burrow 1.2.1 reading ``__consumer_offsets``, one exporter cycle, and the
values rendered for Prometheus.

    topic p0: 7 records at -60 -55 -50 -45 -40 -35 -30 s
    lagging group commits C = 3 (4 records waiting)   caught-up group commits 7 (= LEO)
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Callable

import pytest

from devstack import RealStack, StackFeatureUnavailable
from devstack.processes import port_open
from devstack.scrape import FRESHNESS
from devstack.stack import CommitWindow, now_ms
from freshness_tracker import metrics
from freshness_tracker.domain.model import PartitionStatus
from tests.realkafka.helpers import data_loss_past_a_commit, one_cycle, result
from tests.support.kafka_wire import api_versions
from tests.support.seeding import Commit, assert_exact, commit_all, seed_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_exact_freshness_and_commit_lag_from_a_real_commit(
    stack: RealStack, unique_name: Callable[[str], str]
) -> None:
    t = now_ms()
    topic = seed_topic(stack, unique_name("t"), {0: [t - 60_000 + 5_000 * i for i in range(7)]})
    lagging = Commit(unique_name("lag"), topic, 0, 3)
    caught_up = Commit(unique_name("fresh"), topic, 0, 7)
    commit_all(stack, [lagging, caught_up])  # the broker's stamps, via Burrow

    snap, scrape = one_cycle(stack, lagging.group, caught_up.group)

    assert_exact(snap, lagging, scrape)
    fresh = result(snap, caught_up.group, topic.name, 0)
    assert fresh.status is PartitionStatus.CAUGHT_UP
    assert (fresh.freshness_ms, fresh.offset_lag, fresh.committed_offset) == (0, 0, 7)
    labels = {"cluster": stack.cluster, "topic": topic.name, "partition": 0}
    assert scrape.get(FRESHNESS, consumer=caught_up.group, **labels) == 0
    assert scrape.get(metrics.DATA_LOSS.name, consumer=lagging.group, **labels) == 0


def test_data_loss_when_delete_records_passes_the_commit(
    stack: RealStack, unique_name: Callable[[str], str]
) -> None:
    scrape, labels = data_loss_past_a_commit(stack, unique_name)
    assert scrape.get(metrics.DATA_LOSS.name, **labels) == 1
    assert scrape.get(metrics.LOST.name, **labels) == 4


def test_commit_time_cannot_be_chosen_on_real_kafka() -> None:
    with pytest.raises(StackFeatureUnavailable, match="broker stamps"):
        RealStack().commit("g", "t", 0, 1, commit_time_ms=now_ms())
    assert CommitWindow(1, 2).after_ms == 2


def api_versions_rtt_ms(address: str, samples: int = 5) -> float:
    """Median time of a raw ApiVersions v0 round trip to ``address``."""
    host, port = address.rsplit(":", 1)
    times = []
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        for corr in range(samples):
            started = time.perf_counter()
            api_versions(sock, corr)
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def test_proxy_adds_rtt_and_cuts_the_client_listener_only(stack: RealStack) -> None:
    (address,) = stack.bootstrap_servers.split(",")
    host, port = address.rsplit(":", 1)
    stack.reset_request_counts()
    baseline = api_versions_rtt_ms(address)
    stack.rtt_ms = 50
    try:
        delayed = api_versions_rtt_ms(address)
    finally:
        stack.rtt_ms = 0
    assert delayed >= 50 and delayed - baseline >= 40
    assert stack.request_counts()[1].get(18, 0) >= 10  # ApiVersions, counted per broker

    stack.cut_broker(1)
    try:
        assert not port_open(host, int(port))
        assert stack.burrow_get(f"/v3/kafka/{stack.cluster}/topic")[0] == 200  # Burrow not cut
    finally:
        stack.restore_broker(1)
    assert port_open(host, int(port))


def test_whole_cluster_restart_keeps_data_and_commits(
    stack: RealStack, unique_name: Callable[[str], str]
) -> None:
    topic, group = unique_name("t"), unique_name("restart")
    t = now_ms()
    seed_topic(stack, topic, {0: [t - 3_000, t - 2_000, t - 1_000]})
    stack.commit(group, topic, 0, 1)
    stack.wait_for_burrow_lag(group, topic, 0, committed_offset=1, current_lag=2)

    assert stack.kafka is not None
    node = stack.kafka.nodes[1]
    stack.stop_broker()
    assert not node.running and not port_open("127.0.0.1", node.internal_port)  # a real stop
    stack.start_broker()

    assert stack.produce(topic, 0, [now_ms()]) == [3]  # the log survived the restart
    stack.commit(group, topic, 0, 2)  # and Burrow reads new commits from the same cluster
    stack.wait_for_burrow_lag(group, topic, 0, committed_offset=2, current_lag=2, timeout_s=60)


def test_real_burrow_is_asked_by_at_most_concurrency_threads(stack: RealStack) -> None:
    """`burrow.concurrency` is a ceiling on the /lag workers. 300 groups Burrow does not know:
    each a real 404 NOTFOUND, none a failure."""
    from freshness_tracker.burrow.client import BurrowClient
    from freshness_tracker.burrow.settings import BurrowSettings

    client = BurrowClient(BurrowSettings(url=stack.burrow_url, concurrency=64))
    askers: set[str] = set()
    group_lag = client.group_lag

    def recorded(cluster: str, group: str) -> object:
        askers.add(threading.current_thread().name)
        return group_lag(cluster, group)

    client.group_lag = recorded  # type: ignore[method-assign,assignment]
    try:
        lags = client.cluster_lags(stack.cluster, [f"fan-out-absent-{i}" for i in range(300)])
    finally:
        client.close()
    assert len(lags.missing_groups) == 300 and not lags.failed_groups
    assert 1 <= len(askers) <= 64, sorted(askers)
