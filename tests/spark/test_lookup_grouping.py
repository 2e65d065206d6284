"""How the driver deals lookups to Spark tasks: per partition, per leader, in batches."""

from __future__ import annotations

import itertools
from collections import Counter
from types import MappingProxyType
from typing import Any

import pytest

from freshness_tracker.domain.model import ReadRequest
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
from freshness_tracker.spark.reader import SparkRecordReader

KAFKA = ClusterKafkaSettings("c", MappingProxyType({"bootstrap.servers": "k:9092"}), 2)


def reader(batch_size: int, max_tasks: int, leaders: dict[tuple[str, int], int]
           ) -> SparkRecordReader:
    r = SparkRecordReader(None, KAFKA, LookupSettings(batch_size=batch_size),
                          max_tasks=max_tasks)
    r._leaders = lambda parts: {p: leaders.get(p, -1) for p in parts}  # type: ignore[method-assign]
    return r


@pytest.mark.parametrize("max_tasks", [1, 2, 3, 50])
def test_batches_share_a_leader_and_partitions_stay_whole(max_tasks: int) -> None:
    leaders = {("t", p): p % 3 for p in range(20)}  # three brokers
    requests = [ReadRequest("c", "t", p, o) for p in range(20) for o in (7, 8)]
    requests += [ReadRequest("c", "t", 3, 8), ReadRequest("c", "gone", 0, 1)]  # dup, no leader
    rows, n_leaders, n_batches = reader(3, max_tasks, leaders)._tasks(requests)

    assert n_leaders == 4  # brokers 0, 1, 2 and "no leader"
    assert n_batches == 3 + 3 + 2 + 1  # ceil(7/3) + ceil(7/3) + ceil(6/3) + 1
    assert len(rows) == min(max_tasks, n_batches)
    sent: Counter[tuple[str, int, int]] = Counter()
    owner: dict[tuple[str, int], int] = {}
    for task, topics, partitions, offsets in rows:
        for t, p, o in zip(topics, partitions, offsets, strict=True):
            sent[(t, p, o)] += 1
            assert owner.setdefault((t, p), task) == task  # C and C-1 in one task
    assert set(sent) == {(r.topic, r.partition, r.offset) for r in requests}
    assert max(sent.values()) == 1  # deduplicated


def test_each_batch_is_one_leader_when_tasks_are_plenty() -> None:
    leaders = {("t", p): p % 2 for p in range(8)}
    requests = [ReadRequest("c", "t", p, 5) for p in range(8)]
    rows, _, batches = reader(2, 100, leaders)._tasks(requests)
    assert batches == 4 and len(rows) == 4
    for _, _, partitions, _ in rows:
        assert len({leaders[("t", p)] for p in partitions}) == 1
        assert len(partitions) == 2


def test_no_requests_no_job() -> None:
    r: Any = reader(2, 2, {})
    assert r.read([]) == []


def test_a_warm_cycle_reads_unmoved_offsets_from_the_cache(tmp_path: Any) -> None:
    """`spark snapshot --every` keeps one Snapshotter: its second cycle, with no committed
    offset moved, asks Kafka nothing (the stuck group included), counts as cycle 2 and writes
    the same timestamps; an offset that moves is read, and only that one."""
    from freshness_tracker.config import load_settings
    from freshness_tracker.sinks.history import read_history
    from freshness_tracker.spark.snapshot_job import Snapshotter
    from tests.support.fakes import FakeBurrow, FakeReader, group, lag

    class NoRetention:
        def retention_ms(self, topics: Any) -> dict[str, int | None]:
            return {}

    settings = load_settings(text='burrow.url = "http://burrow:8000"\n'
                                  'clusters = [{ name = "c", kafka { "bootstrap.servers" = '
                                  '"k:9092" } }]\nlookup.cacheSize = 1000\n')
    stuck = group("c", "stuck", lag(consumer="stuck", partition=0, committed=3, current_lag=7),
                  lag(consumer="stuck", partition=1, committed=5, current_lag=5))
    moving = group("c", "moving", lag(consumer="moving", partition=0, committed=8,
                                      current_lag=2))
    burrow = FakeBurrow({"c": [stuck, moving]})
    ticks = itertools.count(100_000, 1_000)  # each cycle its own start, so its own file
    reader = FakeReader({("t", p, o): 1_000 * o + p for p in (0, 1) for o in range(12)})
    snapshotter = Snapshotter(None, settings, str(tmp_path / "h"), burrow=burrow,
                              clock=ticks.__next__, reader_factory=lambda _kafka: reader,
                              retention_factory=lambda _kafka: NoRetention())
    try:
        first = snapshotter.run().snapshots[0]
        asked = len(reader.requests)
        second = snapshotter.run().snapshots[0]
        assert asked > 0 and first.health.kafka_reads == asked
        assert len(reader.requests) == asked  # nothing read again
        assert (second.health.kafka_reads, second.health.cache_hits) == (0, asked)
        assert (first.cycle_id, second.cycle_id) == (1, 2)
        assert [r.record_timestamp_ms for r in second.partitions] == [
            r.record_timestamp_ms for r in first.partitions]

        burrow.groups["c"] = [stuck, group("c", "moving", lag(
            consumer="moving", partition=0, committed=9, current_lag=1))]
        third = snapshotter.run().snapshots[0]
        assert {(r.partition, r.offset) for r in reader.requests[asked:]} == {(0, 9)}
        assert third.health.kafka_reads == 1 and third.cycle_id == 3
    finally:
        snapshotter.close()
    assert read_history(str(tmp_path / "h")).num_rows == 9


@pytest.mark.usefixtures("restore_logging")  # a worker without handlers gets the formatter
def test_the_snapshot_and_worker_lines_keep_names_inside_their_values(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The cycle line `spark snapshot` prints and the line a Python worker writes to the
    executor's log carry a cluster name and an error: as logfmt values, a newline or an escape
    sequence in them cannot forge a second line nor act on a terminal."""
    from freshness_tracker.domain.model import ClusterHealth, ClusterSnapshot
    from freshness_tracker.logs import logfmt_value
    from freshness_tracker.spark import worker
    from freshness_tracker.spark.cli import cycle_line

    name = "east\ncluster=forged up=true \x1b[2J"
    health = ClusterHealth(name, False, 1, None, 0, error="Burrow said \x1b]0;x\x07\nok")
    line = cycle_line(ClusterSnapshot(name, 3, 1, 2, health), [7], "/h/a b.parquet")
    assert "\n" not in line and "\x1b" not in line and "\x07" not in line
    assert line.startswith(f"cluster={logfmt_value(name)} cycle=3 up=false ")
    assert line.endswith(' worker_pids=7 file="/h/a b.parquet" '
                         f"error={logfmt_value(health.error or '')}")

    class Stub:
        def __init__(self, *_args: Any) -> None:
            pass

    monkeypatch.setattr(worker, "ConsumerPool", Stub)
    monkeypatch.setattr(worker, "KafkaRecordReader", Stub)
    kafka = ClusterKafkaSettings(name, MappingProxyType({"bootstrap.servers": "k:1"}), 1)
    engine = worker._build(worker.engine_payload(kafka, LookupSettings()))
    engine.executor.shutdown()
    (written,) = capsys.readouterr().err.splitlines()
    assert written.endswith(f"lookup engine for cluster={logfmt_value(name)} consumers=1")
