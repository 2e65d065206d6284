"""librdkafka's log lines: the first of each kind at once, repeats counted, never a flood."""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import TopicPartition

from devstack.processes import free_port
from freshness_tracker.kafka.client_log import ClientLogRelay, line_kind
from freshness_tracker.kafka.consumers import ConsumerPool
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings

FMT = "%s [%s] %s"
REFUSED = ("[thrd:b1:9092/bootstrap]: b1:9092/bootstrap: Connect to ipv4#10.0.0.1:9092 failed: "
           "Connection refused (after {}ms in state CONNECT)")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def relay_and_records(caplog: pytest.LogCaptureFixture
                      ) -> tuple[ClientLogRelay, Clock, pytest.LogCaptureFixture]:
    caplog.set_level(logging.DEBUG, logger="freshness_tracker.kafka.librdkafka")
    clock = Clock()
    relay = ClientLogRelay("prod", window_s=60, clock=clock)
    return relay, clock, caplog


def test_the_first_line_goes_out_with_the_cluster_and_without_the_client_number(
        relay_and_records: tuple[ClientLogRelay, Clock, pytest.LogCaptureFixture]) -> None:
    relay, _, log = relay_and_records
    relay.log(logging.ERROR, FMT, "FAIL", "rdkafka#consumer-7", REFUSED.format(0))
    assert log.messages == [f"cluster prod: FAIL {REFUSED.format(0)}"]


def test_repeats_within_the_window_are_counted_then_reported_with_the_next_line(
        relay_and_records: tuple[ClientLogRelay, Clock, pytest.LogCaptureFixture]) -> None:
    relay, clock, log = relay_and_records
    for i in range(500):  # differing only in timing and in which consumer said it
        clock.now = i * 0.1
        relay.log(logging.ERROR, FMT, "FAIL", f"rdkafka#consumer-{i % 3}", REFUSED.format(i % 5))
    assert len(log.messages) == 1 and relay.suppressed == 499
    clock.now = 60.0
    relay.log(logging.ERROR, FMT, "FAIL", "rdkafka#consumer-1", REFUSED.format(2))
    assert len(log.messages) == 2
    assert log.messages[1].endswith("(after 2ms in state CONNECT) (and 499 more like it in 60 s)")
    clock.now = 130.0  # quiet for longer than the window: a fresh line, no stale count
    relay.log(logging.ERROR, FMT, "FAIL", "rdkafka#consumer-1", REFUSED.format(0))
    assert log.messages[2] == f"cluster prod: FAIL {REFUSED.format(0)}"


def test_a_different_broker_state_or_facility_is_never_hidden(
        relay_and_records: tuple[ClientLogRelay, Clock, pytest.LogCaptureFixture]) -> None:
    relay, _, log = relay_and_records
    relay.log(logging.ERROR, FMT, "FAIL", "c", REFUSED.format(0))
    relay.log(logging.ERROR, FMT, "FAIL", "c", REFUSED.format(0).replace("b1:9092", "b2:9092"))
    relay.log(logging.ERROR, FMT, "FAIL", "c", REFUSED.format(0).replace("CONNECT", "APIVERSION"))
    relay.log(logging.WARNING, FMT, "REQTMOUT", "c", REFUSED.format(0))
    assert len(log.messages) == 4 and relay.suppressed == 0


def test_line_kind_ignores_only_timings_and_librdkafkas_own_suppression_count() -> None:
    assert line_kind("FAIL", "x failed (after 0ms in state UP)") == \
        line_kind("FAIL", "x failed (after 1234ms in state UP) (3 identical error(s) suppressed)")
    assert line_kind("FAIL", "broker 1 down") != line_kind("FAIL", "broker 2 down")
    assert line_kind("FAIL", "x") != line_kind("ERROR", "x")


def test_a_level_the_logger_drops_costs_nothing(
        relay_and_records: tuple[ClientLogRelay, Clock, pytest.LogCaptureFixture]) -> None:
    relay, _, log = relay_and_records
    logging.getLogger("freshness_tracker.kafka.librdkafka").setLevel(logging.ERROR)
    try:
        relay.log(logging.DEBUG, FMT, "BROKER", "c", "hello")
        relay.log(logging.ERROR, FMT, "BROKER", "c", "hello")
    finally:
        logging.getLogger("freshness_tracker.kafka.librdkafka").setLevel(logging.NOTSET)
    assert log.messages == ["cluster prod: BROKER hello"]


def test_memory_is_bounded_by_forgetting_the_oldest_kinds(
        relay_and_records: tuple[ClientLogRelay, Clock, pytest.LogCaptureFixture]) -> None:
    relay, _, log = relay_and_records
    for i in range(5_000):
        relay.log(logging.ERROR, FMT, "FAIL", "c", f"topic-{i} broke")
    assert len(relay._kinds) <= 512 and len(log.messages) == 5_000


def test_other_call_shapes_are_relayed_not_dropped(
        relay_and_records: tuple[ClientLogRelay, Clock, pytest.LogCaptureFixture]) -> None:
    relay, _, log = relay_and_records
    relay.log(logging.ERROR, "plain %s", "text")
    relay.log(logging.ERROR, "broken %d", "format")
    assert log.messages == ["cluster prod: plain text", "cluster prod: broken %d format"]


def test_a_real_consumer_facing_a_dead_broker_logs_a_line_not_a_flood(
        caplog: pytest.LogCaptureFixture) -> None:
    """librdkafka itself, through the pool's own wiring: a refused broker for 3 s."""
    caplog.set_level(logging.INFO, logger="freshness_tracker.kafka.librdkafka")
    settings = ClusterKafkaSettings(name="dead",
                                    properties={"bootstrap.servers": f"127.0.0.1:{free_port()}"},
                                    num_consumers=1)
    pool = ConsumerPool(settings, LookupSettings())
    try:
        with pool.borrow(5) as consumer:
            consumer.assign([TopicPartition("t", 0, 0)])
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                consumer.consume(10, 0.2)
    finally:
        pool.close()
    relayed = [r for r in caplog.records if r.name == "freshness_tracker.kafka.librdkafka"]
    refused = [r for r in relayed if "Connection refused" in r.getMessage()]
    assert refused, [r.getMessage() for r in relayed]  # the problem is still said...
    assert len(refused) <= 2, [r.getMessage() for r in refused]  # ...once, not per attempt
    assert pool._client_log.suppressed >= 5
    assert all(r.getMessage().startswith("cluster dead: ") for r in relayed)
