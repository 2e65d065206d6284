"""The exporter itself under stress: SIGTERM in the middle of a cycle (Burrow request or Kafka
reads in flight), scrapes while a cycle is stuck, and an hour of simulated cycles over 1,000
groups watching memory, threads and consumers.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devstack import RealStack
from devstack.exporter import REPO, ExporterProcess
from devstack.exporter_config import cluster_entry
from devstack.processes import free_port, poll
from tests.faults.harness import (
    CLUSTER,
    Record,
    Rig,
    fault_config,
    fault_rig,
)


@pytest.fixture(scope="module")
def rig(fault_stack: RealStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    try:
        with fault_rig(fault_stack, tmp_path_factory.mktemp("exporter-faults"), "ef") as rig:
            yield rig
    finally:
        fault_stack.rtt_ms = 0


def start_exporter(rig: Rig, name: str, **kw: Any) -> ExporterProcess:
    exporter = rig.start_exporter(name, **kw)
    rig.healthy(exporter, rig.seeded.lagging)
    return exporter


def assert_clean_exit(exporter: ExporterProcess, code: int | None, seconds: float) -> None:
    log = exporter.log()
    assert code == 0, f"exit code {code} after {seconds:.1f} s\n{exporter.log_tail()}"
    assert seconds < 5.0, f"SIGTERM took {seconds:.1f} s\n{exporter.log_tail()}"
    assert "Traceback" not in log and 'exc="' not in log, exporter.log_tail(60)
    assert "stopped" in log


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_sigterm_mid_cycle(rig: Rig, record: Record) -> None:
    # (1) a Burrow request in flight that would take burrow.timeout (10 s) x 3 attempts
    exporter = start_exporter(rig, "sigterm-burrow", burrow_timeout="10s", retries=2)
    rig.burrow.park_lag()
    try:
        code, burrow_s = exporter.stop(timeout_s=30)
        assert_clean_exit(exporter, code, burrow_s)
    finally:
        rig.burrow.clear()

    # (2) Kafka reads in flight: every broker frame delayed 3 s, lookup.timeout 10 s
    exporter = start_exporter(rig, "sigterm-kafka", lookup_timeout="10s",
                              extra="lookup.cacheSize = 0")
    rig.burrow.park_lag()
    try:
        rig.stack.rtt_ms = 3000
        rig.stack.reset_request_counts()
        rig.burrow.clear()  # the held cycle proceeds into slow Kafka reads
        poll(lambda: any(rig.stack.request_counts().values()), 15,
             "a Kafka request of the held cycle to reach the (delaying) broker proxy")
        code, kafka_s = exporter.stop(timeout_s=30)
        assert_clean_exit(exporter, code, kafka_s)
    finally:
        rig.stack.rtt_ms = 0
    record(
        "Exporter", "SIGTERM mid-cycle",
        "SIGTERM while (1) a `/lag` request is in flight (burrow.timeout 10 s, 2 retries) and "
        "(2) Kafka reads are in flight (3 s broker delay, lookup.timeout 10 s)",
        f"exit code 0 after {burrow_s:.1f} s and {kafka_s:.1f} s; no traceback; the log ends "
        "with `stopped`", "n/a", "")


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_scrape_during_a_cycle_is_served_from_the_last_snapshot(rig: Rig, record: Record) -> None:
    s = rig.seeded
    exporter = start_exporter(rig, "scrape-during", burrow_timeout="10s")
    try:
        before = exporter.scrape()
        rig.burrow.park_lag()
        held = time.monotonic()
        cycles = exporter.scrape().cycles(CLUSTER)
        value = before.freshness(CLUSTER, s.lagging, s.topic, 0)
        latencies = []
        while time.monotonic() - held < 3.0:
            scrape = exporter.scrape()
            latencies.append(scrape.seconds)
            assert scrape.cycles(CLUSTER) == cycles, "a cycle completed while one was held"
            assert scrape.up(CLUSTER) == 1
            assert scrape.freshness(CLUSTER, s.lagging, s.topic, 0) == \
                exporter.scrape().freshness(CLUSTER, s.lagging, s.topic, 0)
            assert scrape.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
            time.sleep(0.05)
        rig.burrow.clear()
        after = exporter.wait_cycles(CLUSTER, 1, 15)
        assert after.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
    finally:
        rig.burrow.clear()
        exporter.stop()
    worst = max(latencies)
    median = statistics.median(latencies)
    p90 = statistics.quantiles(latencies, n=10)[-1]
    # The guarantee is checked in the loop: every scrape was answered from the last snapshot
    # while the cycle stood (the park is only cleared after the loop, so a scrape that waited
    # for the cycle would have timed out). How fast it answered is recorded, not asserted.
    assert latencies, "no scrape was made while the cycle was held"
    assert value is not None
    record(
        "Exporter", "scrape during a cycle",
        "a cycle held inside Burrow for 3 s while /metrics is scraped every 50 ms",
        f"{len(latencies)} scrapes, median {median * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms, "
        f"worst {worst * 1000:.0f} ms; "
        f"every one served the previous cycle's snapshot unchanged (same cycle count and values, "
        f"`cluster_up` 1)",
        "the next cycle publishes as soon as Burrow answers", "")


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_an_hour_of_cycles_over_1000_groups_leaks_nothing(record: Record) -> None:
    proc = subprocess.run([sys.executable, "-m", "tests.faults.soak"], capture_output=True,
                          text=True, timeout=380, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-4000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    hour = r["cycles"] - r["warmup_cycles"]
    assert hour * r["sim_frequency_s"] >= 3600, r
    assert r["series"] == r["groups"] * r["partitions_per_group"], r
    # Both measured between two cycles with no scrape in flight. Python objects are counted
    # exactly: keeping even one allocation every other cycle fails the first bound. RSS also
    # catches native memory.
    kept = r["blocks_end"] - r["blocks_start"]
    assert kept < hour // 2, f"{kept} Python allocations kept over the simulated hour: {r}"
    # RSS is the coarse native check: on a loaded machine it moves by a few percent with the
    # Python blocks flat, i.e. allocator arenas, not memory in use; 10% still fails a steady
    # leak per cycle.
    assert r["growth"] < 0.10, f"RSS grew {r['growth']:.1%} over the simulated hour: {r}"
    assert r["consumers_created"] == 2 and r["consumers_open"] == 0, r
    assert r["pool"]["consumers_live"] == 0 and r["pool"]["consumers_replaced"] == 0, r
    assert not r["leftover_threads"], r
    assert r["threads_after"] <= r["threads_before"], r
    assert r["threads_max"] - r["threads_before"] <= 16, r
    assert r["scrapes"] >= 3 and r["scrapes_up"] == r["scrapes"], r
    mib = 2**20
    record(
        "Exporter", "1,000 groups for an hour of simulated cycles",
        f"{r['groups']} groups × {r['partitions_per_group']} partitions; the real Exporter "
        "(consumer pools, shared Kafka executor, lookup engine, cache, Collector, HTTP server) "
        "over a simulated Burrow and librdkafka, in a fresh process; simulated clock "
        f"+{r['sim_frequency_s']} s per cycle, every log grows and a tenth of the groups commit "
        "every cycle; /metrics scraped every 2 s",
        f"{hour} cycles (≈{hour * r['sim_frequency_s'] / 3600:.1f} simulated h) after a "
        f"{r['warmup_cycles']}-cycle warm-up, in {r['elapsed_s']:.0f} s: Python heap blocks "
        f"{r['blocks_start']} → {r['blocks_end']} ({kept:+d}); RSS "
        f"{r['rss_start'] / mib:.0f} → {r['rss_end'] / mib:.0f} MiB ({r['growth']:+.1%}); OS "
        f"threads {r['threads_before']} before, at most {r['threads_max']} during, "
        f"{r['threads_after']} after close; consumers created {r['consumers_created']}, "
        f"replaced 0, open after close 0; {r['scrapes']} scrapes all `cluster_up` 1",
        "n/a", "")


# --- SIGHUP: reload the config --------------------------------------------------------------


def _reload_config(rig: Rig, port: int, groups_allow: str, frequency: float,
                   extra: str = "") -> str:
    return fault_config(
        burrow_url=rig.burrow.url,
        clusters=[cluster_entry(CLUSTER, rig.stack.bootstrap_servers)],
        groups_allow=groups_allow, frequency=frequency, extra=extra,
    ).replace("@PORT@", str(port))


def _log_line(exporter: ExporterProcess, needle: str, timeout_s: float) -> str:
    def find() -> str | None:
        return next((ln for ln in exporter.log().splitlines() if needle in ln), None)

    line: str = poll(find, timeout_s, lambda: f"`{needle}` in the log\n{exporter.log_tail()}")
    return line


def _msg(line: str, width: int) -> str:
    """The message of a logfmt line, shortened."""
    return line.split("msg=", 1)[-1].strip('"')[:width]


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_sighup_reloads_a_valid_config_and_keeps_the_running_one_when_broken(
        rig: Rig, record: Record) -> None:
    s = rig.seeded
    exporter = start_exporter(rig, "sighup")
    assert exporter.proc is not None
    try:
        exporter.wait_for(lambda sc: sc.consumer_series(CLUSTER, s.other) > 0, 30,
                          "both groups measured")
        # (1) a valid change: one group only and frequency 2 s, on the same listener
        old_port = exporter.port
        exporter.config_path.write_text(
            _reload_config(rig, old_port, re.escape(s.lagging), frequency=2))
        hup = time.monotonic()
        exporter.signal(signal.SIGHUP)
        reloaded = exporter.wait_for(
            lambda sc: sc.consumer_series(CLUSTER, s.other) == 0
            and sc.freshness(CLUSTER, s.lagging, s.topic, 0) is not None, 30,
            "the reloaded group filter")
        applied_s = time.monotonic() - hup
        assert exporter.proc.poll() is None, exporter.log_tail()
        assert reloaded.up(CLUSTER) == 1
        ok_line = _log_line(exporter, "config reloaded", 5)
        assert "frequency_sec=2" in ok_line and "listener kept" in ok_line, ok_line

        # (1b) another port: the listener is restarted there, the old port closed
        new_port = free_port()
        exporter.config_path.write_text(
            _reload_config(rig, new_port, re.escape(s.lagging), frequency=2))
        exporter.signal(signal.SIGHUP)
        exporter.port = new_port
        poll(exporter._listening, 30, lambda: f"the new port\n{exporter.log_tail()}")
        assert exporter.wait_cycles(CLUSTER, 1, 30).consumer_series(CLUSTER, s.other) == 0
        assert "listener restarted" in _log_line(exporter, "(listener restarted)", 5)
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", old_port), timeout=2).close()

        # (2) a broken one: one error line naming the key, the running config stays
        exporter.config_path.write_text(
            _reload_config(rig, new_port, re.escape(s.lagging), frequency=2,
                           extra="workerThreadCount = -1"))
        exporter.signal(signal.SIGHUP)
        failed_line = _log_line(exporter, "config reload failed", 15)
        assert "workerThreadCount" in failed_line, failed_line
        after = exporter.wait_cycles(CLUSTER, 2, 30)
        assert exporter.proc.poll() is None, exporter.log_tail()
        assert after.up(CLUSTER) == 1 and after.consumer_series(CLUSTER, s.other) == 0
        assert after.freshness(CLUSTER, s.lagging, s.topic, 0) is not None
        assert exporter.log().count("config reload failed") == 1
    finally:
        code, seconds = exporter.stop()
    # (3) SIGTERM afterwards
    assert_clean_exit(exporter, code, seconds)
    record(
        "Exporter", "SIGHUP (config reload)",
        "SIGHUP after (1) changing the group filter and `frequency_sec`, then `port`; (2) making "
        "the file invalid (`workerThreadCount = -1`); then SIGTERM",
        f"(1) applied {applied_s:.1f} s after the signal without the process exiting: the "
        f"filtered-out group's series gone, one log line “{_msg(ok_line, 90)}”; a new port: the "
        "listener moves there, the old port is closed; (2) one error line naming the key "
        f"(“{_msg(failed_line, 90)}…”), cycles and scrapes go on with the "
        f"previous config; (3) exit code 0 after {seconds:.1f} s",
        "n/a", "")


def _catches(pid: int, sig: int) -> bool:
    """Whether `pid` has a handler for `sig` (SigCgt in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_sighup_during_startup_does_not_kill_the_process(tmp_path: Path, record: Record) -> None:
    config = fault_config(burrow_url="http://127.0.0.1:1",
                          clusters=[cluster_entry(CLUSTER, "127.0.0.1:1")])
    exporter = ExporterProcess(tmp_path, config, name="sighup-startup").start(wait=False)
    assert exporter.proc is not None
    try:
        poll(lambda: exporter.proc is not None and (
            exporter.proc.poll() is not None or _catches(exporter.proc.pid, signal.SIGHUP)),
            30, "the exporter to handle SIGHUP", interval_s=0.002)
        with pytest.raises(OSError):  # still starting: not listening yet
            socket.create_connection(("127.0.0.1", exporter.port), timeout=1).close()
        exporter.signal(signal.SIGHUP)
        poll(exporter._listening, 30, lambda: f"the exporter to listen\n{exporter.log_tail()}")
        line = _log_line(exporter, "config reloaded", 10)
        assert exporter.proc.poll() is None
        assert exporter.get("/healthz")[0] == 200
    finally:
        code, seconds = exporter.stop()
    assert code == 0 and seconds < 5.0, (code, seconds, exporter.log_tail())
    record(
        "Exporter", "SIGHUP during startup",
        "SIGHUP as soon as the process handles it, before the listener is up",
        f"startup goes on and the process serves; the reload is applied after it "
        f"(“{_msg(line, 60)}”); SIGTERM then exits 0",
        "n/a", "")
