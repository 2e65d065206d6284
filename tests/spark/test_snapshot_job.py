"""The Spark snapshot job against the real stack (Apache Kafka 4.1 + Burrow 1.9.5, real group
commits): same Burrow snapshot + same broker + same clock => exactly the live exporter's
history rows."""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from devstack import RealStack
from devstack.stack import DEFAULT_RETENTION_MS
from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.cli import main
from freshness_tracker.config import load_settings
from freshness_tracker.config.settings import Settings
from freshness_tracker.domain.model import ClusterLags
from freshness_tracker.sinks.history import HistorySink, read_history
from freshness_tracker.spark.snapshot_job import run_snapshot

pytestmark = [pytest.mark.spark, pytest.mark.integration]

N = 12  # records per partition


class RecordedBurrow:
    """Asks the real Burrow once per question and replays the answer: both runs measure the
    very same Burrow snapshot (Burrow re-evaluates statuses as time passes)."""

    def __init__(self, client: BurrowClient) -> None:
        self._client = client
        self._answers: dict[tuple[str, tuple[Any, ...]], Any] = {}

    def _ask(self, name: str, *args: Any) -> Any:
        key = (name, args)
        if key not in self._answers:
            self._answers[key] = getattr(self._client, name)(*args)
        return self._answers[key]

    def clusters(self) -> list[str]:
        return list(self._ask("clusters"))

    def cluster_servers(self, cluster: str) -> list[str]:
        return list(self._ask("cluster_servers", cluster))

    def consumers(self, cluster: str) -> list[str]:
        return list(self._ask("consumers", cluster))

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        lags: ClusterLags = self._ask("cluster_lags", cluster, tuple(sorted(groups)))
        return lags


@dataclass
class Fleet:
    settings: Settings
    config: Path
    timestamps: dict[tuple[str, int], list[int]]  # (topic, partition) -> record timestamps
    # (group, topic, p) -> (offset, commit time: the broker's stamp, as Burrow reports it)
    commits: dict[tuple[str, str, int], tuple[int, int]]
    now_ms: int


@pytest.fixture(scope="module")
def fleet(stack: RealStack, tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    """Two topics, three groups: lagging, caught up and a second lagging group sharing reads."""
    suffix = os.urandom(4).hex()
    orders, audit = f"orders-{suffix}", f"audit-{suffix}"
    stack.create_topic(orders, partitions=3)
    stack.create_topic(audit, partitions=2)
    base = int(time.time() * 1000) - 3_600_000
    timestamps: dict[tuple[str, int], list[int]] = {}
    for topic, parts in ((orders, 3), (audit, 2)):
        for p in range(parts):
            ts = [base + 60_000 * i + 1_000 * p for i in range(N)]
            assert stack.produce(topic, p, ts) == list(range(N))
            timestamps[(topic, p)] = ts
    lagging, caught, second = f"lagging-{suffix}", f"caught-{suffix}", f"second-{suffix}"
    offsets = {
        (lagging, orders, 0): 2, (lagging, orders, 1): 5, (lagging, orders, 2): 9,
        (lagging, audit, 0): 0, (lagging, audit, 1): N,
        (caught, orders, 0): N, (caught, orders, 1): N, (caught, orders, 2): N,
        (second, orders, 0): 2, (second, audit, 1): 7,
    }  # fmt: skip
    windows = {key: stack.commit(*key, offset) for key, offset in offsets.items()}
    commits: dict[tuple[str, str, int], tuple[int, int]] = {}
    for (group, topic, p), offset in offsets.items():
        part = stack.wait_for_burrow_lag(group, topic, p, committed_offset=offset,
                                         current_lag=N - offset, timeout_s=60)
        stamp = int(part["end"]["timestamp"])
        window = windows[(group, topic, p)]
        assert window.before_ms <= stamp <= window.after_ms, (group, topic, p, window, part)
        commits[(group, topic, p)] = (offset, stamp)
    config = tmp_path_factory.mktemp("fleet") / "exporter.conf"
    config.write_text(
        f'burrow.url = "{stack.burrow_url}"\n'
        f'clusters = [{{ name = "{stack.cluster}", numConsumers = 2, '
        f'kafka {{ "bootstrap.servers" = "{stack.bootstrap_servers}" }} }}]\n'
        f'filters.groups.allow = ["{lagging}", "{caught}", "{second}"]\n'
        f'filters.topics.allow = ["{orders}", "{audit}"]\n'
        "lookup.commitLagWhenCaughtUp = true\nlookup.timeout = 15s\n")
    return Fleet(load_settings(config), config, timestamps, commits,
                 int(time.time() * 1000))


def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r["consumer"], r["topic"], r["partition"]))


def test_spark_job_rows_equal_the_live_exporter(spark: Any, fleet: Fleet, tmp_path: Path) -> None:
    from freshness_tracker.app import Exporter

    burrow = RecordedBurrow(BurrowClient(fleet.settings.burrow))
    frozen = fleet.now_ms + 90_000

    def clock() -> int:
        return frozen

    live_dir, spark_dir = str(tmp_path / "live"), str(tmp_path / "spark")
    exporter = Exporter(fleet.settings, burrow=burrow, clock=clock,
                        sinks=[HistorySink(live_dir)])
    try:
        live_snapshot = exporter.run_once()
    finally:
        exporter.close()
    result = run_snapshot(spark, fleet.settings, spark_dir, burrow=burrow, clock=clock)

    assert result.ok and live_snapshot.clusters[0].health.up
    live, ours = _sorted(read_history(live_dir)), _sorted(read_history(spark_dir))
    assert len(ours) == 13 and len(live) == 13
    assert ours == live  # every column: offsets, timestamps, freshness, commit lag, ids

    # ... and the numbers are the right ones, by hand.
    for row in ours:
        key = (row["consumer"], row["topic"], row["partition"])
        if key not in fleet.commits:  # Burrow lists the group's other partitions, uncommitted
            assert key[0].startswith("second-")
            assert (row["status"], row["committed_offset"], row["freshness_ms"]) == \
                ("no_commit", None, None)
            continue
        offset, commit_at = fleet.commits[key]
        ts = fleet.timestamps[(row["topic"], row["partition"])]
        assert row["committed_offset"] == offset and row["log_end_offset"] == N
        assert row["offset_lag"] == N - offset
        if offset < N:
            assert row["status"] == "ok"
            assert int(row["record_timestamp"].timestamp() * 1000) == ts[offset]
            assert row["freshness_ms"] == frozen - ts[offset]
            assert row["retention_headroom_ms"] == DEFAULT_RETENTION_MS - (frozen - ts[offset])
        else:
            assert row["status"] == "caught_up" and row["freshness_ms"] == 0
        expected_commit_lag = commit_at - ts[offset - 1] if offset > 0 else None
        assert row["commit_lag_ms"] == expected_commit_lag
        assert row["cycle_id"] == f"local@{frozen}" and row["data_loss"] is False

    # The reads ran in Spark's Python workers, grouped per leader, and were deduplicated
    # across groups: (orders,0) at 2 is shared by two groups.
    lookups = result.lookups["local"]
    assert os.getpid() not in lookups["worker_pids"]
    distinct_reads = {(t, p, o) for (_, t, p), (off, _) in fleet.commits.items()
                      for o in ({off - 1, off} if off < N else {off - 1}) if o >= 0}
    assert lookups["requests"] == len(distinct_reads)
    assert lookups["leaders"] == 1 and lookups["failed"] == 0

    # Re-running the same cycle (same clock) replaces its rows instead of adding to them.
    run_snapshot(spark, fleet.settings, spark_dir, burrow=burrow, clock=clock)
    assert read_history(spark_dir).num_rows == len(ours)


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """The CLI configures the root logger; put pytest's handlers back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("restore_logging")
def test_cli_snapshot_with_a_cycle_time_is_idempotent(
        spark: Any, fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = str(tmp_path / "history")
    args = ["spark", "snapshot", "--config", str(fleet.config), "--history", history,
            "--cycle-time", "2026-01-02T03:04:05Z", "--max-tasks", "2"]
    assert main(args) == 0
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "cluster=local up=true groups=3 partitions=13" in out
    table = read_history(history)
    assert table.num_rows == 13
    assert set(table.column("cycle_id").to_pylist()) == {"local@1767323045000"}
    assert set(table.column("date").to_pylist()) == {dt.date(2026, 1, 2)}
    # freshness is measured at the real clock, not at the logical cycle time
    assert min(r for r in table.column("freshness_ms").to_pylist() if r) > 30 * 60_000


def test_unreachable_kafka_marks_the_cluster_down_and_writes_nothing(
        spark: Any, fleet: Fleet, tmp_path: Path, unused_port: Callable[[], int]) -> None:
    text = fleet.config.read_text().replace(
        fleet.settings.clusters[0].kafka.properties["bootstrap.servers"],
        f"127.0.0.1:{unused_port()}").replace("lookup.timeout = 15s", "lookup.timeout = 2s")
    settings = load_settings(text=text)
    result = run_snapshot(spark, settings, str(tmp_path / "h"),
                          burrow=RecordedBurrow(BurrowClient(settings.burrow)))
    snap = result.snapshots[0]
    assert not result.ok and not snap.health.up
    assert "no broker reachable" in (snap.health.error or "")
    assert result.files["local"] is None and not (tmp_path / "h").exists()


@pytest.fixture
def unused_port() -> Callable[[], int]:
    import socket

    def pick() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    return pick
