"""Never wedge: every external call a cycle makes blocked forever, one at a time.

The calls are fakes that ignore every timeout (as librdkafka did when handed a negative one),
so the only thing between them and a frozen /metrics is the cycle's own hard deadline
(`cycleTimeout`): the cluster must be published down within the deadline plus the unwind
grace, nothing of its last cycle may stay served, no second cycle may pile up on the hung one,
liveness must fail once the cycle has been stuck for twice its deadline (and not before), and
everything must come back on its own once the call returns.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pytest

from devstack.exporter import looping
from devstack.scrape import Scrape, scrape_until
from freshness_tracker import metrics
from freshness_tracker.app import Exporter, unwind_grace_s
from freshness_tracker.config import load_settings
from freshness_tracker.domain.model import ClusterLags, ReadRequest, RecordRead
from tests.faults.harness import Record
from tests.support.fakes import FakeBurrow, FakeReader, group, lag

pytestmark = pytest.mark.timeout(120)

CLUSTER = "c"
CYCLE_TIMEOUT_S = 1.0
LABELS = {"cluster": CLUSTER, "consumer": "g", "topic": "t", "partition": 0}


class Gate:
    """Blocks the call it guards while closed, ignoring any timeout (a hung client library)."""

    def __init__(self) -> None:
        self.closed = False
        self._open = threading.Event()
        self.entered = threading.Event()

    def close(self) -> None:
        self._open.clear()
        self.entered.clear()
        self.closed = True

    def open(self) -> None:
        self.closed = False
        self._open.set()

    def __call__(self) -> None:
        if self.closed:
            self.entered.set()
            self._open.wait()


class HangingBurrow(FakeBurrow):
    def __init__(self, gates: dict[str, Gate], *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.gates = gates

    def clusters(self) -> list[str]:
        self.gates["burrow clusters"]()
        return super().clusters()

    def consumers(self, cluster: str) -> list[str]:
        self.gates["burrow consumers"]()
        return super().consumers(cluster)

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        self.gates["burrow lag"]()
        return super().cluster_lags(cluster, groups)


class HangingReader(FakeReader):
    def __init__(self, gate: Gate, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.gate = gate

    def read(self, requests: Sequence[ReadRequest]) -> list[RecordRead]:
        self.gate()
        return super().read(requests)


class HangingRetention:
    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def retention_ms(self, topics: Sequence[str]) -> dict[str, int | None]:
        self.gate()
        return dict.fromkeys(topics, 86_400_000)


CALLS = ["burrow clusters", "burrow consumers", "burrow lag", "kafka read", "kafka retention"]


@dataclass
class Rig:
    exporter: Exporter
    gates: dict[str, Gate]

    def scrape(self) -> Scrape:
        return Scrape.of(self.exporter.exposition)

    def wait(self, predicate: Callable[[Scrape], bool], timeout_s: float, what: str) -> Scrape:
        return scrape_until(self.scrape, predicate, timeout_s,
                            lambda _: f"{what}; health: {self.exporter.health()}", 0.02)


@pytest.fixture
def rig() -> Iterator[Rig]:
    settings = load_settings(text=f"""
        burrow.url = "http://fake:1"
        clusters = [{{ name = {CLUSTER}, kafka {{ "bootstrap.servers" = "k:1" }} }}]
        frequency_sec = 1s
        cycleTimeout = {CYCLE_TIMEOUT_S:g}s
        lookup.cacheSize = 0  # read Kafka every cycle, so the read can hang
    """)
    gates = {name: Gate() for name in CALLS}
    burrow = HangingBurrow(gates, {CLUSTER: [group(CLUSTER, "g", lag(
        CLUSTER, "g", "t", 0, committed=4, current_lag=2, commit_time=None))]})
    reader = HangingReader(gates["kafka read"], {("t", 0, 4): 1_000})
    exporter = Exporter(settings, burrow=burrow, reader_factory=lambda _k: reader,
                        retention_factory=lambda _k: HangingRetention(gates["kafka retention"]),
                        clock=lambda: 61_000)
    with looping(exporter):
        try:
            yield Rig(exporter, gates)
        finally:
            for gate in gates.values():
                gate.open()


@pytest.mark.parametrize("call", CALLS)
def test_a_call_that_never_returns_cannot_freeze_the_cluster(
        rig: Rig, call: str, record: Record) -> None:
    good = rig.wait(lambda s: s.get(metrics.FRESHNESS.name, **LABELS) == 60_000, 10,
                    "a first good cycle")
    assert good.up(CLUSTER) == 1
    gate = rig.gates[call]
    gate.close()
    assert gate.entered.wait(10), f"the cycle never reached {call}"
    hung_at = time.monotonic()

    down = rig.wait(lambda s: s.up(CLUSTER) == 0, 10, "the hung cycle to be published down")
    detect_s = time.monotonic() - hung_at
    budget_s = CYCLE_TIMEOUT_S + unwind_grace_s(CYCLE_TIMEOUT_S)
    assert detect_s < budget_s + 1.5, f"down only {detect_s:.1f} s after the call hung"
    assert down.consumer_series(CLUSTER) == 0, "the last cycle's values stayed served"
    error = rig.exporter.holder.current.clusters[0].health.error or ""
    assert "hard deadline" in error and "cycleTimeout" in error, error

    alive, body = rig.exporter.health()
    # slow is not stuck: liveness fails only once the cycle itself (which began before the call
    # hung, long before on a loaded machine) has run twice its deadline
    running_s = body["clusters"][CLUSTER]["cycle_running_seconds"]
    assert running_s is not None, body
    assert alive == (running_s <= 2 * CYCLE_TIMEOUT_S), body
    cycles_before = rig.exporter.holder.publications
    stuck_deadline = time.monotonic() + 10
    while alive and time.monotonic() < stuck_deadline:
        time.sleep(0.05)
        alive, body = rig.exporter.health()
    assert not alive and body["status"] == "stuck", body
    stuck_error = body["clusters"][CLUSTER]["error"]
    assert "stuck" in stuck_error, stuck_error
    more = time.monotonic() + 5
    while rig.exporter.holder.publications == cycles_before and time.monotonic() < more:
        time.sleep(0.02)
    assert rig.exporter.holder.publications > cycles_before, "the loop stopped publishing"
    assert rig.scrape().up(CLUSTER) == 0
    assert sum(t.name.startswith("cycle-run-") and t.is_alive()
               for t in threading.enumerate()) == 1, "a second cycle started on the hung one"

    gate.open()
    back = rig.wait(lambda s: s.up(CLUSTER) == 1
                    and s.get(metrics.FRESHNESS.name, **LABELS) == 60_000, 10,
                    "recovery once the call returned")
    assert back.consumer_series(CLUSTER) > 0
    assert rig.exporter.health()[0]
    record(
        "Guarantee", f"{call}: the call never returns",
        f"the {call} call blocks forever, ignoring every timeout (a hung client library); "
        f"`cycleTimeout` {CYCLE_TIMEOUT_S:g} s",
        f"`cluster_up` 0 and every per-consumer series removed {detect_s:.1f} s after the call "
        "hung (deadline + unwind grace); no second cycle starts on the hung one; `/healthz` "
        "503 `stuck` once it has run twice its deadline, 200 before",
        f"correct values with the first cycle after the call returned; /healthz error: "
        f"“{stuck_error}”",
        "next cycle")


class BlackHole:
    """A TCP listener that accepts connections and never says a byte (a hung broker)."""

    def __init__(self) -> None:
        import socket

        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self._server.getsockname()[1]}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                continue
            self._held.append(conn)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        for conn in self._held:
            conn.close()
        self._server.close()


def test_real_librdkafka_against_a_broker_that_never_answers_stays_within_the_deadline(
        record: Record) -> None:
    """The real consumer pool, reader and admin client, pointed at a broker that accepts TCP
    and never answers: every call returns by the cycle's deadline, however long the
    configured per-call timeouts are."""
    from concurrent.futures import ThreadPoolExecutor

    from freshness_tracker.deadline import Deadline, cycle_deadline
    from freshness_tracker.errors import ClusterUnavailable
    from freshness_tracker.kafka.consumers import ConsumerPool
    from freshness_tracker.kafka.lookup import KafkaRecordReader
    from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
    from freshness_tracker.kafka.topic_config import TopicRetention

    hole = BlackHole()
    kafka = ClusterKafkaSettings("hole", {"bootstrap.servers": hole.address})
    lookup = LookupSettings(timeout_s=60.0)
    executor = ThreadPoolExecutor(2)
    pool = ConsumerPool(kafka, lookup)
    reader = KafkaRecordReader(kafka, lookup, pool, executor)
    retention = TopicRetention({"bootstrap.servers": hole.address}, cluster="hole",
                               timeout_s=60.0)
    took: dict[str, float] = {}
    try:
        for name, call in (("read", lambda: reader.read([ReadRequest("hole", "t", 0, 5)])),
                           ("retention.ms", lambda: retention.retention_ms(["t"]))):
            started = time.monotonic()
            with cycle_deadline(Deadline.after(1.5)), contextlib.suppress(ClusterUnavailable):
                call()
            took[name] = time.monotonic() - started
    finally:
        getattr(retention, "close", lambda: None)()
        pool.close()
        executor.shutdown(wait=False, cancel_futures=True)
        hole.close()
    assert max(took.values()) < 1.5 + 2.5, took
    record(
        "Kafka", "a broker that accepts and never answers",
        "bootstrap.servers points at a TCP listener that never sends a byte; `lookup.timeout` "
        "60 s; cycle deadline 1.5 s",
        f"the real consumer pool's read returned after {took['read']:.1f} s and the admin "
        f"client's `retention.ms` request after {took['retention.ms']:.1f} s, both cut at the "
        "cycle's deadline, not the 60 s per-call timeout",
        "n/a (nothing to recover: the next cycle asks again)", "next cycle")


def test_a_sink_that_never_returns_cannot_stop_the_cycles(record: Record) -> None:
    """A history sink on a hung mount: measuring and publishing go on, the sink falls behind."""
    settings = load_settings(text=f"""
        burrow.url = "http://fake:1"
        clusters = [{{ name = {CLUSTER}, kafka {{ "bootstrap.servers" = "k:1" }} }}]
        frequency_sec = 1s
    """)
    gate = Gate()
    gate.close()
    written: list[int] = []

    def hung_sink(snapshot: object) -> None:
        gate()
        written.append(1)

    burrow = FakeBurrow({CLUSTER: [group(CLUSTER, "g", lag(
        CLUSTER, "g", "t", 0, committed=4, current_lag=2, commit_time=None))]})
    reader = FakeReader({("t", 0, 4): 1_000})
    exporter = Exporter(settings, burrow=burrow, reader_factory=lambda _k: reader,
                        clock=lambda: 61_000, sinks=[hung_sink])
    with looping(exporter):
        try:
            assert gate.entered.wait(10), "the sink was never called"
            deadline = time.monotonic() + 20
            while exporter.holder.publications < 7 and time.monotonic() < deadline:
                time.sleep(0.05)
            published = exporter.holder.publications
            assert published >= 7, "cycles stopped behind a hung sink"
            assert exporter.sinks[0].dropped >= 1, "nothing says the sink fell behind"
            assert exporter.health()[0]
        finally:
            gate.open()
    assert written, "the sink never resumed once unblocked"
    record(
        "Exporter", "a sink that never returns",
        "the history sink blocks forever (a hung mount)",
        f"cycles go on publishing ({published} cycles while it hung); the sink's queue fills "
        f"and {exporter.sinks[0].dropped} cycles are dropped for it with a warning each; "
        "/metrics stays current",
        "the sink writes again once it returns", "next cycle")


def test_sigterm_ends_the_process_even_when_shutdown_blocks(
        tmp_path: object, record: Record) -> None:
    """`run`'s signal handling with a shutdown step that never returns (a client's close()
    hanging): the process still exits within 5 s of SIGTERM."""
    import subprocess
    import sys

    script = (
        "import os, signal, threading, time\n"
        "from freshness_tracker import cli\n"
        "signals = cli._Signals()\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), os.kill(os.getpid(), "
        "signal.SIGTERM)), daemon=True).start()\n"
        "signals.stop.wait(10)\n"
        "print('stopping', flush=True)\n"
        "threading.Event().wait()  # a close() that never returns\n"
    )
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=30)
    took = time.monotonic() - started
    assert "stopping" in proc.stdout, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert took < 0.3 + 5.0 + 2.0, f"exited {took:.1f} s after start"  # + interpreter start
    assert "exiting now" in proc.stderr
    record(
        "Exporter", "shutdown blocked by a client",
        "SIGTERM while a shutdown step never returns (a client library's close() hanging)",
        f"the process exits with code 0 {took - 0.3:.1f} s after the signal (hard exit at "
        "4.5 s), logging that it gave up waiting",
        "n/a", "n/a")
