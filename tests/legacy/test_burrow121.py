"""Burrow 1.2.1 stays supported: end to end on Apache Kafka 3.9.1 (ZooKeeper mode) + Debian's
Burrow 1.2.1 + the exporter's rendered ``/metrics``.

Burrow 1.2.1 reads broker offsets with ListOffsets v0 (removed in Kafka 4.0), commits from both
``__consumer_offsets`` (its ``kafka`` module) and ZooKeeper (its ``kafka_zk`` module), and answers
the v3 API without 1.3+'s ``observedAt``. Each test produces records with chosen CreateTimes,
commits for real, waits until Burrow 1.2.1 shows the commit exactly, then runs one exporter cycle:

    group commit   p0: 7 records at -60 ... -30 s, committed at 3 (4 waiting)   p1: caught up
    ZooKeeper      p0: 6 records at -50 ... -25 s, committed at 2 in the znode (4 waiting)
    data loss      p0: 10 records at -100 ... -10 s, committed at 2, records 0-5 deleted
"""

from __future__ import annotations

import socket
import struct
import subprocess
from collections.abc import Callable

import pytest

from devstack.burrow import BURROW121_KAFKA_VERSION
from devstack.cache import default_kafka_version, kafka_classpath_dir
from devstack.legacy import LegacyStack
from devstack.scrape import FRESHNESS
from devstack.stack import now_ms
from freshness_tracker import metrics
from freshness_tracker.domain.model import PartitionStatus
from tests.realkafka.helpers import data_loss_past_a_commit, one_cycle, result
from tests.support.kafka_wire import api_versions
from tests.support.seeding import Commit, assert_exact, commit_all, seed_topic, wait_for_burrow

pytestmark = [pytest.mark.integration, pytest.mark.legacy, pytest.mark.timeout(180)]

API_LIST_OFFSETS = 2
GROUP_DATA_LOSS = metrics.GROUP_DATA_LOSS_PARTITIONS.name


def api_version_range(address: str, api_key: int) -> tuple[int, int]:
    """(min, max) version of ``api_key`` the broker at ``address`` serves (ApiVersions v0)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        reply = api_versions(sock, 7)
    error, count = struct.unpack_from(">hi", reply, 4)
    assert error == 0
    for i in range(count):
        key, low, high = struct.unpack_from(">hhh", reply, 10 + 6 * i)
        if key == api_key:
            return low, high
    raise AssertionError(f"API {api_key} not served")


def dpkg_query(*args: str) -> str:
    return subprocess.run(["dpkg-query", *args], check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def test_the_stack_is_burrow_121_on_kafka_391_with_zookeeper(stack: LegacyStack) -> None:
    """What the README claims is what runs: Debian's Burrow 1.2.1, the Kafka 3.9.1 jars, a
    ZooKeeper-mode broker that still serves ListOffsets v0 (Kafka 4 starts at v1)."""
    assert stack.burrow is not None and stack.burrow.binary is not None
    owner = dpkg_query("-S", str(stack.burrow.binary))  # "burrow: /usr/bin/Burrow"
    assert owner.split(":", 1)[0] == "burrow", owner
    assert dpkg_query("-W", "-f=${Version}", "burrow").startswith("1.2.1")
    assert (kafka_classpath_dir(default_kafka_version()) / "kafka_2.13-3.9.1.jar").is_file()
    assert stack.kafka is not None and not stack.kafka.kraft
    assert stack.kafka.kafka_version == "3.9.1"
    assert api_version_range(stack.bootstrap_servers, API_LIST_OFFSETS)[0] == 0
    status, body = stack.burrow_get(f"/v3/kafka/{stack.cluster}")
    assert status == 200
    assert body["module"]["client-profile"]["kafka-version"] == BURROW121_KAFKA_VERSION


def test_group_commit_exact_freshness_and_commit_lag(
    stack: LegacyStack, unique_name: Callable[[str], str]
) -> None:
    t = now_ms()
    topic = seed_topic(stack, unique_name("t"), {0: [t - 60_000 + 5_000 * i for i in range(7)],
                                                 1: [t - 20_000 + 5_000 * i for i in range(4)]})
    group = unique_name("lag")
    lagging = Commit(group, topic, 0, 3)  # real group commits: __consumer_offsets
    part, _ = commit_all(stack, [lagging, Commit(group, topic, 1, 4)])  # p1 caught up
    assert "observedAt" not in part["end"]  # Burrow 1.2.1's shape (1.3+ adds it)

    snap, scrape = one_cycle(stack, group)

    assert_exact(snap, lagging, scrape)
    fresh = result(snap, group, topic.name, 1)
    assert fresh.status is PartitionStatus.CAUGHT_UP, fresh
    assert (fresh.freshness_ms, fresh.offset_lag, fresh.committed_offset) == (0, 0, 4)
    labels = {"cluster": stack.cluster, "consumer": group, "topic": topic.name, "partition": 1}
    assert scrape.get(FRESHNESS, **labels) == 0
    assert scrape.get(GROUP_DATA_LOSS, cluster=stack.cluster, consumer=group) == 0


def test_zookeeper_commit_read_by_kafka_zk(
    stack: LegacyStack, unique_name: Callable[[str], str]
) -> None:
    t = now_ms()
    topic = seed_topic(stack, unique_name("t"), {0: [t - 50_000 + 5_000 * i for i in range(6)]})
    commit = Commit(unique_name("zk"), topic, 0, 2)
    group = commit.group
    window = stack.commit_zk(group, topic.name, 0, 2)  # /kafka/consumers/<group>/offsets/<t>/0
    (part,) = wait_for_burrow(stack, [commit])
    mtime = stack.znode_mtime(group, topic.name, 0)
    assert mtime is not None and window.before_ms <= mtime <= window.after_ms
    assert part["end"]["timestamp"] == mtime  # kafka_zk: the commit time is the znode's mtime
    assert group not in stack.group_ids()  # the broker never heard of it: ZooKeeper only

    snap, scrape = one_cycle(stack, group)

    assert_exact(snap, commit.stamped(mtime), scrape)


def test_data_loss_when_delete_records_passes_the_commit(
    stack: LegacyStack, unique_name: Callable[[str], str]
) -> None:
    scrape, labels = data_loss_past_a_commit(stack, unique_name)
    # the per-group roll-up: exported whatever the per-partition families configured
    assert scrape.get(GROUP_DATA_LOSS, cluster=stack.cluster, consumer=labels["consumer"]) == 1
