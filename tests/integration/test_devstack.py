"""The local stack behaves like the real thing: Burrow sees exact offsets, lags and commit times
through the proxy and the bridge, survives restarts, and the RTT proxy adds measurable delay."""

from __future__ import annotations

import socket
import statistics
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from freshness_tracker.cycle import now_ms
from freshness_tracker.devstack import (
    LocalStack,
    StackFeatureUnavailable,
    Workload,
    exporter_config,
)
from freshness_tracker.devstack.processes import port_open, wait_until
from freshness_tracker.devstack.proxy import API_LIST_OFFSETS, KafkaProxy
from tests.stack_support import require_managed

pytestmark = pytest.mark.integration

N = 7  # records produced per test partition
C = 3  # committed offset: the next record the group would read


def managed(stack: LocalStack) -> None:
    require_managed(stack, "needs the managed local stack")


@pytest.fixture
def topic(stack: LocalStack, unique_name: Callable[[str], str]) -> Iterator[tuple[str, list[int]]]:
    """A 2-partition topic with N records of known CreateTime in partition 0."""
    name = unique_name("topic")
    stack.create_topic(name, partitions=2)
    base = now_ms() - 600_000
    timestamps = [base + 1_000 * i for i in range(N)]
    assert stack.produce(name, 0, timestamps) == list(range(N))
    yield name, timestamps


def test_real_commit_reaches_burrow_with_exact_lag(
    stack: LocalStack, topic: tuple[str, list[int]], unique_name: Callable[[str], str]
) -> None:
    name, timestamps = topic
    group = unique_name("group")
    stack.commit(group, name, 0, C)

    part = stack.wait_for_burrow_lag(group, name, 0, committed_offset=C, current_lag=N - C)

    assert part["end"]["offset"] == C
    assert part["current_lag"] == N - C  # the LEO Burrow read through the ListOffsets glue
    assert group in stack.group_ids()  # a real commit lives in tansu too
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
    finally:
        consumer.close()


def test_chosen_commit_time_is_what_burrow_reports(
    stack: LocalStack, topic: tuple[str, list[int]], unique_name: Callable[[str], str]
) -> None:
    managed(stack)
    name, _ = topic
    group = unique_name("group")
    first, second = now_ms() - 30_000, now_ms() - 10_000

    stack.commit(group, name, 0, 1, commit_time_ms=first)
    stack.wait_for_burrow_lag(group, name, 0, committed_offset=1, current_lag=N - 1)
    stack.commit(group, name, 0, C, commit_time_ms=second)
    part = stack.wait_for_burrow_lag(group, name, 0, committed_offset=C, current_lag=N - C)

    assert part["start"]["timestamp"] == first
    assert part["end"]["timestamp"] == second
    assert group not in stack.group_ids()  # written straight into __consumer_offsets


def test_zookeeper_commit_reaches_burrow(
    stack: LocalStack, topic: tuple[str, list[int]], unique_name: Callable[[str], str]
) -> None:
    managed(stack)
    name, _ = topic
    group = unique_name("zkgroup")
    stack.commit_zk(group, name, 0, 2)
    stack.wait_for_burrow_lag(group, name, 0, committed_offset=2, current_lag=N - 2)


def test_burrow_stop_start_with_burrow_env_set(
    stack: LocalStack,
    topic: tuple[str, list[int]],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    managed(stack)
    name, _ = topic
    group = unique_name("group")
    stack.commit(group, name, 0, C, commit_time_ms=now_ms() - 5_000)
    stack.wait_for_burrow_lag(group, name, 0, committed_offset=C, current_lag=N - C)
    monkeypatch.setenv("BURROW_CLUSTER", "local")  # would make Burrow panic if it leaked in

    stack.stop_burrow()
    assert stack.burrow_get("/burrow/admin") == (0, None)
    stack.start_burrow()

    assert stack.burrow_env_free
    assert stack.burrow_get("/burrow/admin") == (200, "GOOD")
    # Burrow re-reads __consumer_offsets from the start, so the group comes back.
    stack.wait_for_burrow_lag(group, name, 0, committed_offset=C, current_lag=N - C)


def test_broker_stop_start(
    stack: LocalStack, topic: tuple[str, list[int]], unique_name: Callable[[str], str]
) -> None:
    managed(stack)
    name, _ = topic
    host, port = stack.bootstrap_servers.rsplit(":", 1)
    before, after = unique_name("group"), unique_name("group")
    stack.commit(before, name, 0, 1)
    stack.wait_for_burrow_lag(before, name, 0, committed_offset=1, current_lag=N - 1)

    stack.stop_broker()
    try:
        assert not port_open(host, int(port))
        admin = AdminClient({"bootstrap.servers": stack.bootstrap_servers})
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=2)
    finally:
        stack.start_broker()

    assert port_open(host, int(port))
    assert stack.produce(name, 0, [now_ms(), now_ms()]) == [N, N + 1]  # data survived
    wait_until(
        lambda: (
            (stack.burrow_get(f"/v3/kafka/{stack.cluster}/topic/{name}")[1] or {}).get(
                "offsets", [None]
            )[0]
            == N + 2
        ),
        60,
        "Burrow to see the new log end offset after the broker came back",
        interval_s=0.2,
    )
    # Real commits flow again, through tansu and the bridge, for old and new groups.
    stack.commit(before, name, 0, 2)
    stack.commit(after, name, 0, C)
    stack.wait_for_burrow_lag(before, name, 0, committed_offset=2, current_lag=N + 2 - 2)
    stack.wait_for_burrow_lag(after, name, 0, committed_offset=C, current_lag=N + 2 - C)


def api_versions_rtt_ms(address: str, samples: int = 5) -> float:
    """Median time of a raw ApiVersions v0 round trip through ``address``."""
    host, port = address.rsplit(":", 1)
    times = []
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        for corr in range(samples):
            body = struct.pack(">hhih", 18, 0, corr, 4) + b"test"
            started = time.perf_counter()
            sock.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", _recv(sock, 4))[0]
            assert struct.unpack(">i", _recv(sock, size)[:4])[0] == corr
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _recv(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        assert chunk, "connection closed"
        buf += chunk
    return buf


def test_rtt_proxy_adds_measurable_delay(stack: LocalStack) -> None:
    managed(stack)
    assert stack.proxy is not None
    stack.proxy.reset_counts()
    baseline = api_versions_rtt_ms(stack.bootstrap_servers)
    stack.rtt_ms = 50
    try:
        delayed = api_versions_rtt_ms(stack.bootstrap_servers)
    finally:
        stack.rtt_ms = 0
    assert delayed >= 50
    assert delayed - baseline >= 40
    assert stack.proxy.request_counts().get(18, 0) >= 10


def test_external_stack_refuses_managed_only_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FT_STACK_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("FT_STACK_BURROW_URL", "http://127.0.0.1:1/")
    external = LocalStack.from_env()
    assert external is not None and not external.managed
    assert external.burrow_url == "http://127.0.0.1:1"
    with pytest.raises(StackFeatureUnavailable):
        external.stop_broker()


def test_proxy_rewrites_only_list_offsets_v0() -> None:
    """Through a real proxy socket, against a scripted broker that only speaks ListOffsets v1."""
    seen: list[tuple[int, int]] = []
    server = socket.create_server(("127.0.0.1", 0))

    def broker() -> None:
        conn, _ = server.accept()
        with conn:
            while True:
                head = conn.recv(4)
                if len(head) < 4:
                    return
                frame = _recv(conn, struct.unpack(">i", head)[0])
                key, version, corr = struct.unpack_from(">hhi", frame)
                seen.append((key, version))
                if key == API_LIST_OFFSETS:  # v1 answer: topic "t", partition 0, offset 99
                    body = struct.pack(">ii", corr, 1) + struct.pack(">h", 1) + b"t"
                    body += struct.pack(">iihqq", 1, 0, 0, -1, 99)
                else:
                    body = struct.pack(">i", corr) + b"echo"
                conn.sendall(struct.pack(">i", len(body)) + body)

    threading.Thread(target=broker, daemon=True).start()
    with KafkaProxy(server.getsockname()) as proxy:
        host, port = proxy.address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            client = struct.pack(">h", 4) + b"test"
            v0 = struct.pack(">hhi", 2, 0, 5) + client + struct.pack(">ii", -1, 1)
            v0 += struct.pack(">h", 1) + b"t" + struct.pack(">iiqi", 1, 0, -1, 1)
            other = struct.pack(">hhi", 18, 0, 6) + client
            for frame in (v0, other):
                sock.sendall(struct.pack(">i", len(frame)) + frame)
            answers = [_recv(sock, struct.unpack(">i", _recv(sock, 4))[0]) for _ in range(2)]
        counts = proxy.request_counts()
    server.close()

    assert seen == [(API_LIST_OFFSETS, 1), (18, 0)]
    v0_answer = struct.pack(">ii", 5, 1) + struct.pack(">h", 1) + b"t"
    v0_answer += struct.pack(">iihiq", 1, 0, 0, 1, 99)
    assert answers == [v0_answer, struct.pack(">i", 6) + b"echo"]
    assert counts == {API_LIST_OFFSETS: 1, 18: 1}


def test_workload_drives_three_distinct_groups(
    stack: LocalStack, unique_name: Callable[[str], str]
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
            wait_until(groups_diverge, 90, "the workload's groups to diverge in Burrow", 0.5)
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
