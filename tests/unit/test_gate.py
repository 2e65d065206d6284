"""Clusters take turns to compute (`freshness_tracker.gate`): at most two measure, roll up or
render at once; a cluster waiting for Burrow holds no turn; a turn not given in time never
stalls a cycle."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

from freshness_tracker import cycle, metrics
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.config.settings import ClusterSettings
from freshness_tracker.cycle import ClusterMeasurer
from freshness_tracker.deadline import Deadline
from freshness_tracker.domain.model import ClusterLags, Snapshot
from freshness_tracker.gate import COMPUTE_SLOTS, MAX_TURN_WAIT_S, ComputeGate
from freshness_tracker.kafka.settings import ClusterKafkaSettings
from freshness_tracker.sinks import exposition
from tests.support.fakes import FakeBurrow, FakeReader, group, lag

CLUSTERS = ("a", "b", "c", "d", "slow")


class _Overlap:
    """How many threads are inside the watched steps at once, at most."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.inside = 0
        self.most = 0

    @contextmanager
    def inside_step(self, hold_s: float = 0.2) -> Iterator[None]:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        try:
            time.sleep(hold_s)  # long enough for every other cluster to arrive meanwhile
            yield
        finally:
            with self._lock:
                self.inside -= 1


def test_at_most_the_slots_hold_a_turn_at_once() -> None:
    gate = ComputeGate(2)
    overlap = _Overlap()
    got: list[bool] = []

    def compute() -> None:
        with gate.turn(10.0) as held, overlap.inside_step():
            got.append(held)

    threads = [threading.Thread(target=compute) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [True] * 6
    assert overlap.most == 2


def test_a_turn_not_given_in_time_computes_anyway() -> None:
    """The gate saves memory and CPU; it never stalls a cycle: past its wait the step runs."""
    gate = ComputeGate(1)
    taken, release = threading.Event(), threading.Event()

    def hog() -> None:
        with gate.turn(1.0):
            taken.set()
            release.wait(10)

    hogger = threading.Thread(target=hog)
    hogger.start()
    try:
        assert taken.wait(5)
        started = time.monotonic()
        with gate.turn(0.2) as held:
            waited = time.monotonic() - started
        assert held is False and 0.15 <= waited < 2.0
    finally:
        release.set()
        hogger.join()
    with gate.turn(0.0) as held:  # the slot came back
        assert held is True


class _SlowBurrow(FakeBurrow):
    """Cluster `slow` answers its lag call after `delay_s`; the others at once."""

    def __init__(self, delay_s: float, **kw: Any) -> None:
        super().__init__(**kw)
        self.delay_s = delay_s

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        if cluster == "slow":
            time.sleep(self.delay_s)
        return super().cluster_lags(cluster, groups)


@contextmanager
def _every_slot_held(gate: ComputeGate) -> Iterator[None]:
    """Every slot of `gate` taken by a holder that lets go only when the block ends."""
    with ExitStack() as stack:
        assert all(stack.enter_context(gate.turn(0.0)) for _ in range(gate.slots))
        yield


def _cycle_with_every_slot_held(exporter: Exporter) -> tuple[Snapshot, float, str]:
    """One cycle of every cluster while the gate is stuck: its snapshot, how long it took, and
    /metrics after it."""
    with _every_slot_held(exporter._gate):
        started = time.monotonic()
        snapshot = exporter.run_once()
        elapsed = time.monotonic() - started
    return snapshot, elapsed, exporter.exposition.answer().body.decode()


def _one_group_each() -> FakeBurrow:
    return FakeBurrow({c: [group(c, "g", lag(c, partition=0, committed=4, current_lag=1))]
                       for c in CLUSTERS})


def _exporter(burrow: FakeBurrow, cycle_timeout: str = "20s") -> Exporter:
    entries = ", ".join(f'{{ name = {c}, kafka {{ "bootstrap.servers" = "k:1" }} }}'
                        for c in CLUSTERS)
    settings = load_settings(text=f'burrow.url = "http://burrow:8000"\nclusters = [{entries}]\n'
                             f"cycleTimeout = {cycle_timeout}\n")
    reader = FakeReader({("t", 0, 3): 80_000, ("t", 0, 4): 90_000})
    return Exporter(settings, burrow=burrow, reader_factory=lambda _k: reader,
                    clock=lambda: 100_000)


def test_clusters_take_turns_to_compute_and_one_waiting_for_burrow_holds_none(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Five clusters measured at once: at most COMPUTE_SLOTS of them inside measuring and
    at most COMPUTE_SLOTS inside rendering, and the four fast ones are measured and
    rendered while the slow one still waits for Burrow."""
    burrow = _SlowBurrow(2.5, groups={c: [group(c, "g", lag(c, partition=0, committed=4,
                                                            current_lag=1))]
                                      for c in CLUSTERS})
    measuring, rendering = _Overlap(), _Overlap()
    done: dict[str, float] = {}
    measure, prepare = cycle.measure_partitions, exposition.CachedExposition.prepare

    def watched_measure(*args: Any, **kw: Any) -> Any:
        with measuring.inside_step():
            return measure(*args, **kw)

    def watched_prepare(self: exposition.CachedExposition, snapshot: Any) -> None:
        with rendering.inside_step():
            prepare(self, snapshot)
        done[snapshot.cluster] = time.monotonic()

    monkeypatch.setattr(cycle, "measure_partitions", watched_measure)
    monkeypatch.setattr(exposition.CachedExposition, "prepare", watched_prepare)
    exporter = _exporter(burrow)
    try:
        started = time.monotonic()
        snapshot = exporter.run_once()
    finally:
        exporter.close()
    assert all(c.health.up for c in snapshot.clusters) and len(snapshot.clusters) == 5
    assert measuring.most == COMPUTE_SLOTS and rendering.most == COMPUTE_SLOTS
    # the four fast ones were done before the slow one's Burrow answered: none waited for it
    fast = [done[c] - started for c in CLUSTERS if c != "slow"]
    assert max(fast) < done["slow"] - started and done["slow"] - started >= 2.5, \
        (fast, done["slow"] - started)


def test_a_cycle_whose_turn_never_comes_is_still_measured_and_published_in_time() -> None:
    """Every slot held by something that never lets go (a bug): each cycle waits half of what
    is left of its deadline for its turn, then measures ungated, and its render waits half
    the cycle timeout: every cluster is up and served, nothing waits for the holder."""
    burrow = _one_group_each()
    exporter = _exporter(burrow, cycle_timeout="2s")
    try:
        snapshot, elapsed, text = _cycle_with_every_slot_held(exporter)
    finally:
        exporter.close()
    assert [c.health.up for c in snapshot.clusters] == [True] * 5
    assert 1.5 <= elapsed < 6.0
    for c in CLUSTERS:
        assert f'{metrics.FRESHNESS.name}{{cluster="{c}",consumer="g"' in text


def test_a_failed_cycle_is_published_at_once_whatever_the_gate() -> None:
    """A failed cycle has nothing to render: it takes no turn, so with every slot held its
    failure is served at once, never the last success's values for up to a turn's wait."""
    burrow = _one_group_each()
    exporter = _exporter(burrow)
    try:
        exporter.run_once()
        burrow.down = True
        snapshot, elapsed, text = _cycle_with_every_slot_held(exporter)
    finally:
        exporter.close()
    assert not any(c.health.up for c in snapshot.clusters)
    assert elapsed < MAX_TURN_WAIT_S / 2  # a gated publication would wait all of it
    assert f'{metrics.CLUSTER_UP.name}{{cluster="a"}} 0.0' in text
    assert f"{metrics.FRESHNESS.name}{{" not in text


def test_a_cycle_that_overruns_after_waiting_for_its_turn_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Waiting for a turn takes at most half of what is left of the deadline (1 s of 2 s here,
    every slot held); if measuring then overruns it, the error names the wait, not Burrow or
    Kafka."""
    burrow = FakeBurrow({"a": [group("a", "g", lag("a", partition=0, committed=4,
                                                   current_lag=1))]})
    measure = cycle.measure_partitions

    def slow_measure(*args: Any, **kw: Any) -> Any:
        time.sleep(1.5)
        return measure(*args, **kw)

    monkeypatch.setattr(cycle, "measure_partitions", slow_measure)
    gate = ComputeGate(1)
    measurer = ClusterMeasurer(ClusterSettings(ClusterKafkaSettings("a", {
        "bootstrap.servers": "k:1"})), burrow, lambda _k: FakeReader(), gate=gate)
    with gate.turn(0.0):
        started = time.monotonic()
        snapshot = measurer.measure(Deadline.after(2.0))
        elapsed = time.monotonic() - started
    # at least the turn's wait and the slow measuring; an unbounded wait would be the gate's
    # longest
    assert not snapshot.health.up and 2.3 <= elapsed < MAX_TURN_WAIT_S / 2
    assert "s of it waiting for a turn to compute" in (snapshot.health.error or "")
