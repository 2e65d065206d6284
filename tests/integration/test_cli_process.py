"""The real command line as a subprocess (`python -m freshness_tracker`) against the real stack:
`run` serves /metrics, /healthz, /readyz and / and stops on SIGTERM; `once` prints every format
and exits 1 when a cluster fails; `check` says what is right and wrong; config errors exit 2."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack import RealStack
from devstack.exporter import ExporterProcess, run_all
from devstack.exporter_config import stack_config
from devstack.processes import free_port, poll
from devstack.scrape import Scrape
from freshness_tracker import metrics
from freshness_tracker.cli import EXIT_DEADLINE_S
from freshness_tracker.cycle import now_ms
from freshness_tracker.sinks.render import format_ms
from tests.support.seeding import Seeded, seed_lagging
from tests.support.stack import require_managed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def seeded(stack: RealStack) -> Seeded:
    require_managed(stack, "cuts the broker off")
    tag = f"cli-{os.getpid()}-{now_ms() % 1_000_000}"
    return seed_lagging(stack, tag, now_ms())


def write_config(tmp_path: Path, seeded: Seeded, name: str = "ft.conf", **kw: object) -> Path:
    path = tmp_path / name
    path.write_text(stack_config(seeded.stack, seeded.group, **kw))  # type: ignore[arg-type]
    return path


def http_get(url: str, timeout_s: float = 5) -> tuple[int, str, str]:
    """(status, content type, body); status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read().decode()
    except OSError:
        return 0, "", ""


def cycles(base: str, cluster: str) -> float | None:
    scrape = Scrape.parse(http_get(f"{base}/metrics")[2])
    return scrape.get(metrics.CYCLES.total, cluster=cluster)


# --- run ---------------------------------------------------------------------------------


@pytest.fixture
def running(tmp_path: Path, seeded: Seeded) -> Iterator[tuple[ExporterProcess, int]]:
    """`run` with frequency_sec = 1, not waited for: (the process, its start time in ms)."""
    port = free_port()
    config = stack_config(seeded.stack, seeded.group, port=port, frequency_sec=1)
    exporter = ExporterProcess(tmp_path, config, port=port)
    started = now_ms()
    try:
        yield exporter.start(wait=False), started
    finally:
        exporter.stop()


def test_run_serves_metrics_health_and_stops_on_sigterm(
    running: tuple[ExporterProcess, int], seeded: Seeded
) -> None:
    exporter, started = running
    base, proc = exporter.url, exporter.proc
    assert proc is not None

    def ready() -> bool:
        assert proc.poll() is None, f"exited {proc.returncode}:\n{exporter.log()}"
        return http_get(f"{base}/readyz")[0] == 200

    poll(ready, 90, "/readyz to answer 200", interval_s=0.2)
    status, ctype, body = http_get(f"{base}/readyz")
    assert (status, json.loads(body)) == (200, {"status": "ready", "waiting_for": []})

    status, ctype, body = http_get(f"{base}/metrics")
    scraped = now_ms()
    assert status == 200 and ctype.startswith("text/plain")
    scrape = Scrape.parse(body)
    fresh = scrape.get(metrics.FRESHNESS.name, **seeded.labels())
    assert fresh is not None, body
    # from a cycle that ran between the process start and the scrape
    assert started - seeded.record_ts <= fresh <= scraped - seeded.record_ts
    assert scrape.get(metrics.COMMIT_LAG.name, **seeded.labels()) == seeded.commit_lag_ms
    assert scrape.get(metrics.OFFSET_LAG.name, **seeded.labels()) == 3
    assert scrape.get(metrics.CLUSTER_UP.name, cluster=seeded.stack.cluster) == 1.0
    assert scrape.series("process_resident_memory_bytes")

    status, ctype, body = http_get(f"{base}/healthz")
    assert status == 200 and ctype == "application/json"
    health = json.loads(body)
    assert health["status"] == "ok"
    assert health["clusters"][seeded.stack.cluster]["up"] is True

    status, ctype, body = http_get(f"{base}/")
    assert status == 200 and ctype.startswith("text/html")
    assert "freshness-tracker" in body and 'href="/metrics"' in body
    assert http_get(f"{base}/nope")[0] == 404

    # It keeps cycling (frequency_sec = 1): freshness of the unmoved partition grows.
    def later_cycle() -> float | None:
        sc = Scrape.parse(http_get(f"{base}/metrics")[2])
        cycles = sc.get(metrics.CYCLES.total, cluster=seeded.stack.cluster) or 0
        value = sc.get(metrics.FRESHNESS.name, **seeded.labels())
        return value if cycles >= 2 and value is not None and value > fresh else None

    poll(later_cycle, 30, "a second cycle with a larger freshness", interval_s=0.3)

    code, took = exporter.stop(timeout_s=5)
    log = exporter.log()
    assert code is not None, f"still running 5 s after SIGTERM:\n{log}"
    assert code == 0, log
    assert took < 5
    assert "Traceback" not in log, log
    assert "signal=SIGTERM" in log and "stopped" in log, log
    assert http_get(f"{base}/healthz", timeout_s=1)[0] == 0  # the listener is closed


# --- once --------------------------------------------------------------------------------


def test_once_prints_every_format(tmp_path: Path, seeded: Seeded) -> None:
    config = str(write_config(tmp_path, seeded))
    started = now_ms()
    prom, as_json, table = run_all([("once", "--config", config, "--format", f)
                                    for f in ("prometheus", "json", "table")])  # fmt: skip
    finished = now_ms()
    for result in (prom, as_json, table):
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr

    scrape = Scrape.parse(prom.stdout)
    fresh = scrape.get(metrics.FRESHNESS.name, **seeded.labels())
    assert fresh is not None
    assert started - seeded.record_ts <= fresh <= finished - seeded.record_ts
    assert scrape.get(metrics.COMMIT_LAG.name, **seeded.labels()) == seeded.commit_lag_ms
    assert scrape.get(metrics.CLUSTER_UP.name, cluster=seeded.stack.cluster) == 1.0
    assert scrape.get(metrics.KAFKA_READS.total, cluster=seeded.stack.cluster) == 2

    body = json.loads(as_json.stdout)
    (cluster,) = body["clusters"]
    assert cluster["cluster"] == seeded.stack.cluster and cluster["health"]["up"] is True
    (part,) = cluster["partitions"]
    assert (part["consumer"], part["topic"], part["partition"]) == (
        seeded.group, seeded.topic.name, 0)
    assert part["status"] == "ok" and part["committed_offset"] == 2 and part["offset_lag"] == 3
    assert part["record_timestamp_ms"] == seeded.record_ts
    assert part["commit_lag_ms"] == seeded.commit_lag_ms
    assert cluster["started_ms"] - seeded.record_ts <= part["freshness_ms"]
    assert part["freshness_ms"] <= cluster["finished_ms"] - seeded.record_ts
    assert [g["consumer"] for g in cluster["groups"]] == [seeded.group]

    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["CLUSTER", "CONSUMER", "TOPIC"]
    (row,) = [line for line in lines if seeded.group in line]
    cells = row.split()
    assert cells[:6] == [seeded.stack.cluster, seeded.group, seeded.topic.name, "0", "2", "3"]
    assert cells[-1] == "ok" and cells[-2] == format_ms(seeded.commit_lag_ms)  # Burrow's - ts(1)


def test_once_exits_1_when_burrow_is_unreachable(tmp_path: Path, seeded: Seeded) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    config = str(write_config(tmp_path, seeded, burrow_url=nowhere))
    prom, table = run_all([("once", "--config", config, "--format", f)
                           for f in ("prometheus", "table")])  # fmt: skip
    for result in (prom, table):
        assert result.returncode == 1, (result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
    scrape = Scrape.parse(prom.stdout)
    assert scrape.get(metrics.CLUSTER_UP.name, cluster=seeded.stack.cluster) == 0.0
    assert scrape.series(metrics.FRESHNESS.name) == {}
    assert f"{seeded.stack.cluster}" in table.stdout and "CLUSTER DOWN" in table.stdout
    assert "cannot reach Burrow" in table.stdout


# --- check -------------------------------------------------------------------------------


def test_check_passes_and_fails_for_an_unknown_cluster(tmp_path: Path, seeded: Seeded) -> None:
    good = str(write_config(tmp_path, seeded))
    bad = str(write_config(tmp_path, seeded, "unknown.conf", cluster="no-such-cluster"))
    ok, failed = run_all([("check", "--config", good), ("check", "--config", bad)])

    assert ok.returncode == 0, (ok.stdout, ok.stderr)
    lines = ok.stdout.splitlines()
    assert lines[-1] == "all checks passed"
    assert all(line.startswith("ok    ") for line in lines[:-1]), lines
    assert any(f"burrow: {seeded.stack.burrow_url} is healthy" in line for line in lines)
    assert any(line.startswith(f"ok    cluster {seeded.stack.cluster}: Kafka at ")
               for line in lines), lines  # fmt: skip

    assert failed.returncode == 1, (failed.stdout, failed.stderr)
    assert "FAIL  cluster no-such-cluster: Burrow does not list it" in failed.stdout
    assert "ok    burrow:" in failed.stdout  # what is right is said too
    assert failed.stdout.splitlines()[-1] == "1 check(s) failed"


# --- usage and configuration errors ------------------------------------------------------


def test_usage_and_config_errors_exit_2(tmp_path: Path, seeded: Seeded) -> None:
    negative = tmp_path / "negative.conf"
    negative.write_text(write_config(tmp_path, seeded).read_text().replace(
        '"numConsumers": 2', '"numConsumers": -1'))
    bad_freq = tmp_path / "bad-frequency.conf"
    bad_freq.write_text('burrow.url = "http://127.0.0.1:1"\nfrequency_sec = soon\n'
                      'clusters = [{ name = "x" }]\n')
    bare, neg_once, neg_run, freq = run_all([
        (),
        ("once", "--config", str(negative)),
        ("run", "--config", str(negative)),
        ("check", "--config", str(bad_freq)),
    ])

    assert bare.returncode == 2 and "usage:" in bare.stderr
    expected = ((neg_once, "clusters[0].numConsumers"), (neg_run, "clusters[0].numConsumers"),
                (freq, "frequency_sec"))
    for result, key in expected:
        assert result.returncode == 2, (result.args, result.stdout, result.stderr)
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("config error: ") and key in lines[0], lines


def test_sigterm_while_a_cycle_is_blocked_on_kafka(tmp_path: Path, seeded: Seeded) -> None:
    """The broker is cut off (its proxy closed) and reads wait up to lookup.timeout (20 s):
    SIGTERM must not wait."""
    stack = seeded.stack
    port = free_port()
    config = stack_config(stack, seeded.group, port=port, frequency_sec=1,
                          extra="lookup { cacheSize = 0, timeout = 20s }")
    exporter = ExporterProcess(tmp_path, config, port=port).start(wait=False)
    base = exporter.url
    try:
        poll(lambda: http_get(f"{base}/readyz")[0] == 200, 90, "/readyz", interval_s=0.2)
        stack.cut_broker()
        try:
            # A cycle every second until one blocks on the unreachable broker: then no cycle
            # ends for 2 periods (a cycle already running at the cut may still finish first).
            def blocked() -> bool:
                before = cycles(base, stack.cluster)
                time.sleep(2.0)
                return before is not None and cycles(base, stack.cluster) == before

            poll(blocked, 30, "a cycle blocked on the cut broker", interval_s=0)
            code, _ = exporter.stop(timeout_s=5)
            assert code is not None, f"still running 5 s after SIGTERM:\n{exporter.log()}"
        finally:
            stack.restore_broker()
    finally:
        exporter.stop()
    log = exporter.log()
    assert code == 0, log
    assert "Traceback" not in log, log
    assert "stopped" in log, log


def test_sigterm_between_cycles_exits_at_once_with_nothing_left_busy(tmp_path: Path) -> None:
    """Nothing in flight (Burrow, a generated address, refuses at once): SIGTERM ends `run`
    promptly and nothing is reported as still busy. The hard-exit timer the signal starts is
    the process's own last word, not work in flight: it used to be awaited until the 3.5 s
    exit deadline and then named as a busy thread."""
    port = free_port()
    config = (f'burrow.url = "http://127.0.0.1:{free_port()}"\nport = {port}\n'
              'listenAddress = "127.0.0.1"\nfrequency_sec = 1\n'
              'clusters = [{ name = "local", kafka { "bootstrap.servers" = "127.0.0.1:1" } }]\n')
    exporter = ExporterProcess(tmp_path, config, port=port).start()
    try:
        poll(lambda: "cycle=2" in exporter.log(), 60, "two cycles", interval_s=0.1)
    finally:
        code, took = exporter.stop(timeout_s=10)
    log = exporter.log()
    assert code == 0, log
    assert "signal=SIGTERM" in log and "stopped" in log, log
    assert "still busy" not in log and "still blocked" not in log, log
    assert took < EXIT_DEADLINE_S, (took, log)  # nothing left to wait out that deadline for
