"""One cluster cycle end to end with fakes: values, caching, health, nothing stale."""

from __future__ import annotations

from collections.abc import Sequence

from freshness_tracker.config.settings import ClusterSettings
from freshness_tracker.cycle import ClusterMeasurer
from freshness_tracker.domain.filters import NameFilter, Shard
from freshness_tracker.domain.model import PartitionStatus, ReadOutcome, ReadRequest, RecordRead
from freshness_tracker.kafka.cache import TimestampCache
from freshness_tracker.kafka.settings import ClusterKafkaSettings
from tests.support.fakes import FakeBurrow, FakeReader, group, lag
from tests.support.http_server import LocalHttpServer

NOW = 100_000


def cluster(name: str = "c", servers: str | None = "k:9092") -> ClusterSettings:
    props = {"bootstrap.servers": servers} if servers else {}
    return ClusterSettings(ClusterKafkaSettings(name, props))


def setup(reader: FakeReader | None = None, **kw: object) -> tuple[ClusterMeasurer, FakeBurrow,
                                                                    FakeReader]:
    burrow = FakeBurrow({"c": [
        group("c", "fast", lag(consumer="fast", partition=0, committed=10, current_lag=0,
                               commit_time=99_900)),
        group("c", "slow", lag(consumer="slow", partition=0, committed=4, current_lag=6,
                               commit_time=95_000),
              lag(consumer="slow", partition=1, committed=7, current_lag=2, commit_time=99_000)),
    ]})
    reader = reader or FakeReader({("t", 0, 3): 80_000, ("t", 0, 4): 90_000,
                                   ("t", 1, 6): 97_000, ("t", 1, 7): 98_000,
                                   ("t", 0, 9): 99_500})
    m = ClusterMeasurer(cluster(), burrow, lambda _k: reader, clock=lambda: NOW,
                        **kw)  # type: ignore[arg-type]
    return m, burrow, reader


def test_cycle_measures_every_partition() -> None:
    m, _, _ = setup(cache=TimestampCache(100))
    snap = m.measure()
    by = {(r.key.consumer, r.key.partition): r for r in snap.partitions}
    assert by[("fast", 0)].freshness_ms == 0 and by[("fast", 0)].status is PartitionStatus.CAUGHT_UP
    assert by[("slow", 0)].freshness_ms == 10_000
    assert by[("slow", 0)].commit_lag_ms == 15_000
    assert by[("slow", 1)].freshness_ms == 2_000
    assert by[("slow", 1)].commit_lag_ms == 2_000
    # caught up: its last committed record is read too (lookup.commitLagWhenCaughtUp, default)
    assert by[("fast", 0)].commit_lag_ms == 400
    assert by[("fast", 0)].data_current_as_of_ms == 99_500
    assert snap.health.up and snap.health.kafka_reads == 5
    groups = {g.consumer: g for g in snap.groups}
    assert groups["slow"].max_freshness_ms == 10_000 and groups["slow"].offset_lag == 8
    assert groups["fast"].max_freshness_ms == 0
    assert groups["slow"].data_current_as_of_ms == 80_000  # the oldest last committed record


def test_caught_up_partitions_read_nothing_when_commit_lag_when_caught_up_is_off() -> None:
    m, _, reader = setup(cache=TimestampCache(100), commit_lag_when_caught_up=False)
    snap = m.measure()
    assert ReadRequest("c", "t", 0, 9) not in reader.requests
    assert snap.health.kafka_reads == 4
    fast = next(r for r in snap.partitions if r.key.consumer == "fast")
    assert fast.commit_lag_ms is None and fast.data_current_as_of_ms is None


def test_second_cycle_without_movement_reads_nothing() -> None:
    m, _, reader = setup(cache=TimestampCache(100))
    first = m.measure()
    reader.requests.clear()
    second = m.measure()
    assert reader.requests == []
    assert second.health.kafka_reads == 0 and second.health.cache_hits == 5
    assert [r.freshness_ms for r in first.partitions] == [r.freshness_ms for r in second.partitions]


def test_a_caught_up_partition_whose_last_offset_is_a_marker_is_read_once() -> None:
    """A caught-up consumer of a transactional topic commits past the commit marker, so C − 1
    holds no record (END, below the log end): read once, then known, never re-read while the
    offset does not move; no commit lag, no data-current-as-of, never a failure."""
    marker = ReadRequest("c", "t", 0, 9)
    reader = FakeReader({("t", 0, 3): 80_000, ("t", 0, 4): 90_000, ("t", 1, 6): 97_000,
                         ("t", 1, 7): 98_000},
                        outcomes={marker: RecordRead(marker, ReadOutcome.END, log_end_offset=10)})
    m, _, _ = setup(reader, cache=TimestampCache(100))
    first = m.measure()
    assert marker in reader.requests and first.health.kafka_reads == 5
    reader.requests.clear()
    second = m.measure()
    assert reader.requests == [] and second.health.kafka_reads == 0
    assert second.health.cache_hits == 5 and second.health.up
    fast = next(r for r in second.partitions if r.key.consumer == "fast")
    assert fast.status is PartitionStatus.CAUGHT_UP
    assert (fast.commit_lag_ms, fast.data_current_as_of_ms) == (None, None)


def test_burrow_down_fails_cluster_with_no_values() -> None:
    m, burrow, _ = setup()
    assert m.measure().health.up
    burrow.down = True
    snap = m.measure()
    assert not snap.health.up
    assert snap.partitions == () and snap.groups == ()
    assert "cannot reach Burrow" in (snap.health.error or "")
    assert snap.health.last_success_ms == NOW  # from the earlier cycle, not advanced


def test_kafka_down_fails_cluster_and_drops_lagging_values() -> None:
    reader = FakeReader()
    reader.down = True
    m, _, _ = setup(reader)
    snap = m.measure()
    assert not snap.health.up
    assert snap.health.last_success_ms is None
    statuses = {r.key.consumer: r.status for r in snap.partitions}
    assert statuses["slow"] is PartitionStatus.LOOKUP_FAILED
    assert all(r.freshness_ms is None for r in snap.partitions if r.key.consumer == "slow")


def test_all_reads_failing_marks_cluster_down() -> None:
    reader = FakeReader()
    reader.fail_all = True
    m, _, _ = setup(reader)
    snap = m.measure()
    assert not snap.health.up and snap.health.kafka_read_failures == 5
    assert "all 5 Kafka reads failed" in (snap.health.error or "")


def test_partial_failure_keeps_cluster_up_and_drops_only_failed_value() -> None:
    bad = ReadRequest("c", "t", 1, 7)
    reader = FakeReader({("t", 0, 3): 80_000, ("t", 0, 4): 90_000, ("t", 1, 6): 97_000},
                        outcomes={bad: RecordRead(bad, ReadOutcome.FAILED, error="timeout")})
    m, _, _ = setup(reader)
    snap = m.measure()
    assert snap.health.up
    by = {(r.key.consumer, r.key.partition): r for r in snap.partitions}
    assert by[("slow", 1)].freshness_ms is None
    assert by[("slow", 0)].freshness_ms == 10_000


def test_a_cluster_served_from_the_cache_is_failed_when_no_broker_answers() -> None:
    """Every timestamp cached and the offsets unmoved: no read is needed, and Burrow keeps
    answering with its last offsets while the brokers are stopped. One metadata request per
    such cycle tells the outage; the cluster is then down, with no value from the cache."""
    reader = FakeReader({("t", 0, 3): 80_000, ("t", 0, 4): 90_000, ("t", 1, 6): 97_000,
                         ("t", 1, 7): 98_000, ("t", 0, 9): 99_500})
    m, _, _ = setup(reader, cache=TimestampCache(100))
    assert m.measure().health.up and reader.probes == []  # it read: no extra request
    reader.requests.clear()
    warm = m.measure()
    assert warm.health.up and reader.requests == [] and reader.probes == ["t"]  # one, one topic

    reader.down = True  # every broker stopped
    snap = m.measure()
    assert not snap.health.up
    assert "no broker reachable" in (snap.health.error or "")
    assert snap.health.last_success_ms == warm.health.last_success_ms  # frozen
    assert snap.health.cache_hits == 0  # nothing was answered from it
    by = {(r.key.consumer, r.key.partition): r for r in snap.partitions}
    for key in (("slow", 0), ("slow", 1)):  # the lagging ones: no freshness from memory
        assert by[key].status is PartitionStatus.LOOKUP_FAILED and by[key].freshness_ms is None
    assert by[("fast", 0)].commit_lag_ms is None  # its cached last record is not served either
    assert all(g.max_freshness_ms is None for g in snap.groups if g.consumer == "slow")

    reader.down = False  # back: measured from the cache again, without a read
    back = m.measure()
    assert back.health.up and reader.requests == []
    assert [r.freshness_ms for r in back.partitions] == [r.freshness_ms for r in warm.partitions]


def test_a_cycle_with_nothing_to_read_still_proves_a_broker_answers() -> None:
    """Only caught-up partitions and no commit lag asked for: no read at all, not even a
    cached one; the brokers' outage is still seen."""
    burrow = FakeBurrow({"c": [group("c", "fast", lag(consumer="fast", committed=10,
                                                      current_lag=0))]})
    reader = FakeReader()
    m = ClusterMeasurer(cluster(), burrow, lambda _k: reader, clock=lambda: NOW,
                        commit_lag_when_caught_up=False)
    assert m.measure().health.up and reader.requests == [] and reader.probes == ["t"]
    reader.down = True
    snap = m.measure()
    assert not snap.health.up and "no broker reachable" in (snap.health.error or "")


def test_a_reader_without_a_reachability_check_is_trusted_as_before() -> None:
    """The Spark job's reader has no check: its warm cycles stay as they were."""

    class PlainReader:
        def __init__(self) -> None:
            self.inner = FakeReader({("t", 0, 4): 90_000, ("t", 0, 3): 80_000})

        def read(self, requests: Sequence[ReadRequest]) -> list[RecordRead]:
            return self.inner.read(requests)

    burrow = FakeBurrow({"c": [group("c", "slow", lag(consumer="slow", committed=4,
                                                      current_lag=6))]})
    m = ClusterMeasurer(cluster(), burrow, lambda _k: PlainReader(), clock=lambda: NOW,
                        cache=TimestampCache(100))
    assert m.measure().health.up
    warm = m.measure()
    assert warm.health.up and warm.health.kafka_reads == 0 and warm.health.cache_hits == 2


def test_vanished_group_has_no_series_next_cycle() -> None:
    m, burrow, _ = setup()
    assert {g.consumer for g in m.measure().groups} == {"fast", "slow"}
    burrow.groups["c"] = [g for g in burrow.groups["c"] if g.consumer != "slow"]
    snap = m.measure()
    assert {g.consumer for g in snap.groups} == {"fast"}
    assert {r.key.consumer for r in snap.partitions} == {"fast"}


def test_cluster_not_in_burrow_is_failed() -> None:
    m = ClusterMeasurer(cluster("other"), FakeBurrow({"c": []}), lambda _k: FakeReader())
    snap = m.measure()
    assert not snap.health.up and "does not list cluster 'other'" in (snap.health.error or "")


def test_bootstrap_servers_taken_from_burrow() -> None:
    seen: list[ClusterKafkaSettings] = []
    burrow = FakeBurrow({"c": []}, servers={"c": ["b1:9092", "b2:9092"]})
    m = ClusterMeasurer(cluster(servers=None), burrow, lambda k: seen.append(k) or FakeReader())  # type: ignore[func-returns-value]
    assert m.measure().health.up
    assert seen[0].properties["bootstrap.servers"] == "b1:9092,b2:9092"


def test_filters_and_shard_skip_groups_before_asking_burrow() -> None:
    m, burrow, _ = setup(groups=NameFilter.compile(deny=["fast"]))
    snap = m.measure()
    assert {g.consumer for g in snap.groups} == {"slow"}
    assert burrow.lag_calls == 1
    m2, _, _ = setup(topics=NameFilter.compile(allow=["other"]))
    assert m2.measure().partitions == ()
    owned = [Shard(i, 3).owns("c", "slow") for i in range(3)]
    assert owned.count(True) == 1


# --- freshness as of Burrow's observation, or of the reads for a stuck partition ------------------


def _observed_setup(observed: dict[str, int | None], read_cost_ms: int) -> tuple[
        ClusterMeasurer, list[int]]:
    """`slow` lags by 6 records (record at its commit: 90 s); Burrow's answers are stamped
    `observed`; each Kafka read advances the fake clock by `read_cost_ms`."""
    from dataclasses import replace

    clock = [NOW]
    burrow = FakeBurrow({"c": [
        replace(group("c", "slow", lag(consumer="slow", partition=0, committed=4,
                                       current_lag=6, commit_time=95_000)),
                observed_ms=observed.get("slow")),
        replace(group("c", "fast", lag(consumer="fast", partition=0, committed=10,
                                       current_lag=0)), observed_ms=observed.get("fast")),
    ]})

    def slow_read(requests: object) -> None:
        clock[0] += read_cost_ms  # the lookup takes this long, on the fake clock

    reader = FakeReader({("t", 0, 3): 80_000, ("t", 0, 4): 90_000}, on_read=slow_read)
    return ClusterMeasurer(cluster(), burrow, lambda _k: reader, clock=lambda: clock[0]), clock


def test_a_slow_lookup_does_not_change_freshness() -> None:
    """Measured as of Burrow's answer: 100 s − 90 s = 10 s, whether the read took 0 or 30 s."""
    results = []
    for cost in (0, 30_000):
        m, clock = _observed_setup({"slow": NOW, "fast": NOW}, cost)
        snap = m.measure()
        assert clock[0] == NOW + cost  # the read really did take that long
        results.append({r.key.consumer: (r.freshness_ms, r.sample_time_ms)
                        for r in snap.partitions})
    assert results[0] == results[1] == {"slow": (10_000, NOW), "fast": (0, NOW)}


def test_each_group_is_measured_at_its_own_answer() -> None:
    m, _ = _observed_setup({"slow": NOW - 2_000, "fast": NOW - 5_000}, 7_000)
    by = {r.key.consumer: r for r in m.measure().partitions}
    assert (by["slow"].freshness_ms, by["slow"].sample_time_ms) == (8_000, NOW - 2_000)
    assert by["fast"].sample_time_ms == NOW - 5_000


def test_a_source_without_answer_times_is_measured_when_its_answers_were_in() -> None:
    m, clock = _observed_setup({}, 4_000)
    by = {r.key.consumer: r for r in m.measure().partitions}
    assert clock[0] == NOW + 4_000
    assert by["slow"].sample_time_ms == NOW  # before the reads, not after (NOW + 4 s)
    assert by["slow"].freshness_ms == NOW - 90_000


def _two_cycles(second_commit: int) -> dict[str, tuple[int | None, int | None]]:
    """Two cycles 10 s apart whose reads take 3 s each; `slow` waits at offset 4 in the first
    and at `second_commit` in the second. (freshness, sample time) per group, second cycle."""
    clock = [NOW]
    burrow = FakeBurrow({"c": [group("c", "fast", lag(consumer="fast", committed=10,
                                                       current_lag=0))]})

    def answer(committed: int) -> None:
        burrow.groups["c"] = [burrow.groups["c"][0], group(
            "c", "slow", lag(consumer="slow", committed=committed, current_lag=6))]

    def read_costs(requests: object) -> None:
        clock[0] += 3_000

    reader = FakeReader({("t", 0, 4): 90_000, ("t", 0, 5): 95_000}, on_read=read_costs)
    m = ClusterMeasurer(cluster(), burrow, lambda _k: reader, clock=lambda: clock[0])
    answer(4)
    first = {r.key.consumer: r for r in m.measure().partitions}
    assert (first["slow"].freshness_ms, first["slow"].sample_time_ms) == (10_000, NOW)
    clock[0] = NOW + 10_000
    answer(second_commit)
    return {r.key.consumer: (r.freshness_ms, r.sample_time_ms) for r in m.measure().partitions}


def test_a_partition_still_waiting_where_the_last_cycle_saw_it_is_aged_to_the_end_of_the_reads(
) -> None:
    """No commit for a whole cycle: the record keeps aging through the reads, so the value is
    the truth when the cycle publishes it (23 s), not 3 s behind (20 s, at Burrow's answer)."""
    by = _two_cycles(second_commit=4)
    assert by["slow"] == (NOW + 13_000 - 90_000, NOW + 13_000)
    assert by["fast"] == (0, NOW + 10_000)  # caught up: measured at Burrow's answer


def test_a_partition_that_committed_since_the_last_cycle_is_measured_at_burrows_answer(
) -> None:
    """It moved: it may commit again during the reads, so its age stops at Burrow's answer."""
    by = _two_cycles(second_commit=5)
    assert by["slow"] == (NOW + 10_000 - 95_000, NOW + 10_000)


def test_the_burrow_client_stamps_each_lag_answer_when_it_arrives() -> None:
    import json
    from http.server import BaseHTTPRequestHandler

    from freshness_tracker.burrow.client import BurrowClient
    from freshness_tracker.burrow.settings import BurrowSettings

    body = json.dumps({"error": False, "status": {"status": "OK", "totallag": 6, "partitions": [
        {"topic": "t", "partition": 0, "current_lag": 6, "status": "OK",
         "end": {"offset": 4, "timestamp": 95_000}}]}}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = LocalHttpServer(Handler)
    server.start()
    ticks = iter(range(1_000, 100_000, 1_000))
    client = BurrowClient(BurrowSettings(url=server.url), clock=lambda: next(ticks))
    try:
        lags = client.cluster_lags("c", ["a", "b"])
    finally:
        client.close()
        server.stop()
    stamps = sorted(g.observed_ms for g in lags.groups if g.observed_ms is not None)
    assert stamps == [1_000, 2_000]  # one clock reading per answer, after it arrived
    unstamped = BurrowClient(BurrowSettings(url="http://127.0.0.1:1"))
    unstamped.close()
