"""The session's real stack (Kafka 3.9.1 + Burrow 1.2.1) behaves as the suites assume: a real
commit reaches Burrow with the exact lag and the broker's commit time, Burrow merges commits
less than ``min-distance`` (1 s) apart into the earlier time, Burrow restarts with a hostile
environment and re-reads ``__consumer_offsets``, an external stack refuses what it does not
manage, and the demo workload drives three distinct real groups.

The proxy's RTT and cut, and a whole-cluster restart, are proven in tests/realkafka.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from devstack import RealStack, StackFeatureUnavailable
from devstack.demo import exporter_config
from devstack.processes import poll
from devstack.workload import Workload
from freshness_tracker.cycle import now_ms
from tests.support.stack import require_managed

pytestmark = pytest.mark.integration

N = 7  # records produced per test partition
C = 3  # committed offset: the next record the group would read


@pytest.fixture
def topic(stack: RealStack, unique_name: Callable[[str], str]) -> Iterator[tuple[str, list[int]]]:
    """A 2-partition topic with N records of known CreateTime in partition 0."""
    name = unique_name("topic")
    stack.create_topic(name, partitions=2)
    base = now_ms() - 600_000
    timestamps = [base + 1_000 * i for i in range(N)]
    assert stack.produce(name, 0, timestamps) == list(range(N))
    yield name, timestamps


def test_real_commit_reaches_burrow_with_exact_lag_and_the_brokers_time(
    stack: RealStack, topic: tuple[str, list[int]], unique_name: Callable[[str], str]
) -> None:
    name, timestamps = topic
    group = unique_name("group")
    window = stack.commit(group, name, 0, C)

    part = stack.wait_for_burrow_lag(group, name, 0, committed_offset=C, current_lag=N - C)

    assert part["end"]["offset"] == C
    assert part["current_lag"] == N - C  # the log end offset Burrow read from Kafka
    assert window.before_ms <= part["end"]["timestamp"] <= window.after_ms
    assert group in stack.group_ids()  # a real group in the coordinator
    # The record at C, read as a client would (through the proxied client listener).
    consumer = Consumer({"bootstrap.servers": stack.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.assign([TopicPartition(name, 0, C)])
        deadline = time.monotonic() + 30
        msg = None
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
        assert msg is not None and msg.error() is None
        assert (msg.offset(), msg.timestamp()[1]) == (C, timestamps[C])
        # the group's committed offset is the one Burrow shows
        (committed,) = consumer.committed([TopicPartition(name, 0)], timeout=10)
        assert committed.offset == C
    finally:
        consumer.close()


def test_commits_under_one_second_apart_keep_the_earlier_time(
    stack: RealStack, topic: tuple[str, list[int]], unique_name: Callable[[str], str]
) -> None:
    """Burrow's ``min-distance = 1``: what every test committing one partition twice relies on
    (the second commit's offset, the first commit's time), and that 1 s apart both are kept."""
    name, _ = topic
    group = unique_name("group")
    # Both stamps of a pair lie in [first.before, second.after]: under 1 s apart when that is.
    # A stall of the machine between the two can exceed it: then a further pair, 1 s later.
    last_ms = 0
    for attempt in range(3):
        time.sleep(max(0.0, (last_ms + 1_000 - now_ms()) / 1000))  # 1 s past the last pair
        offset = 2 * attempt + 1
        first = stack.commit(group, name, 0, offset)
        second = stack.commit(group, name, 0, offset + 1)
        last_ms = second.after_ms
        if second.after_ms - first.before_ms < 1_000:
            break
    else:
        pytest.fail("no two commits under 1 s apart in 3 tries")
    part = stack.wait_for_burrow_lag(group, name, 0, committed_offset=offset + 1,
                                     current_lag=N - offset - 1)
    assert first.before_ms <= part["end"]["timestamp"] <= first.after_ms

    # A commit more than 1 s later gets its own entry, with its own time.
    time.sleep(max(0.0, (last_ms + 1_000 - now_ms()) / 1000))
    later = stack.commit(group, name, 0, N)
    part = stack.wait_for_burrow_lag(group, name, 0, committed_offset=N, current_lag=0)
    assert later.before_ms <= part["end"]["timestamp"] <= later.after_ms
    assert part["start"]["timestamp"] < later.before_ms


def test_burrow_stop_start_with_burrow_env_set(
    stack: RealStack,
    topic: tuple[str, list[int]],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_managed(stack, "needs the managed local stack")
    name, _ = topic
    group = unique_name("group")
    window = stack.commit(group, name, 0, C)
    stack.wait_for_burrow_lag(group, name, 0, committed_offset=C, current_lag=N - C)
    monkeypatch.setenv("BURROW_CLUSTER", "local")  # would make Burrow panic if it leaked in

    stack.stop_burrow()
    assert stack.burrow_get("/burrow/admin") == (0, None)
    stack.start_burrow()

    assert stack.burrow_env_free
    assert stack.burrow_get("/burrow/admin") == (200, "GOOD")
    # Burrow re-reads __consumer_offsets from the start: the group comes back, same time.
    part = stack.wait_for_burrow_lag(group, name, 0, committed_offset=C, current_lag=N - C)
    assert window.before_ms <= part["end"]["timestamp"] <= window.after_ms


def test_external_stack_refuses_managed_only_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FT_STACK_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("FT_STACK_BURROW_URL", "http://127.0.0.1:1/")
    external = RealStack.from_env()
    assert external is not None and not external.managed
    assert external.burrow_url == "http://127.0.0.1:1"
    assert external.bootstrap_servers == "127.0.0.1:1"
    for refused in (external.stop_broker, external.stop_burrow, lambda: external.cut_broker(1)):
        with pytest.raises(StackFeatureUnavailable):
            refused()


def test_workload_drives_three_distinct_groups(
    stack: RealStack, unique_name: Callable[[str], str]
) -> None:
    workload = Workload(
        stack, topic=unique_name("wl"), partitions=2, records_per_s=20, stuck_after=3,
        group_prefix=unique_name("wl") + "-",
    )  # fmt: skip
    lags: dict[str, dict[int, tuple[int, int]]] = {}  # kind -> partition -> (end.offset, lag)

    def groups_diverge() -> bool:
        for kind, group in workload.groups.items():
            status, body = stack.burrow_get(f"/v3/kafka/{stack.cluster}/consumer/{group}/lag")
            if status != 200:
                return False
            lags[kind] = {
                p["partition"]: (p["end"]["offset"], p["current_lag"])
                for p in body["status"]["partitions"]
                if p["end"] is not None
            }
        if any(len(lags[kind]) != 2 for kind in ("keeps-up", "slow")) or not lags["stuck"]:
            return False  # stuck may never have read (so never committed) one partition
        keeps_up, slow, stuck = lags["keeps-up"], lags["slow"], lags["stuck"]
        return (
            sum(offset for offset, _ in stuck.values()) == 3  # 3 records read, then nothing
            and all(slow[p][1] > keeps_up[p][1] + 5 for p in slow)
            and all(stuck[p][1] > slow[p][1] for p in stuck)
        )

    with workload:
        try:
            poll(groups_diverge, 90, "the workload's groups to diverge in Burrow", 0.5)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}; per kind, partition: (end.offset, lag): {lags}") from None
    assert set(workload.groups.values()) <= stack.group_ids()


def test_exporter_config_is_valid_hocon() -> None:
    from pyhocon import ConfigFactory

    text = exporter_config("http://127.0.0.1:1234", "127.0.0.1:9092", port=9000)
    conf = ConfigFactory.parse_string(text)
    assert conf.get_string("burrow.url") == "http://127.0.0.1:1234"
    assert conf.get_int("port") == 9000
    assert conf.get_int("frequency_sec") == 5
    (cluster,) = conf.get_list("clusters")
    assert cluster.get_string("name") == "local"
    assert cluster.get_config("kafka").get_string('"bootstrap.servers"') == "127.0.0.1:9092"
