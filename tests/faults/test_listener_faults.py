"""The exporter's listener under hostile and heavy clients, on the real process: an
idle TCP connection and a handshake that never finishes against the TLS listener, and 50
concurrent scrapers over TLS + basic auth and over plain HTTP.

The defects these guard against: a TLS handshake run in the accept thread (one silent
connection stopped every client) and a listen backlog of 5 (50 scrapers overflowed it: dropped
SYNs and the clients' retries).
"""

from __future__ import annotations

import base64
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from devstack import RealStack
from devstack.exporter import ExporterProcess
from devstack.exporter_config import cluster_entry
from devstack.scrape import UP
from tests.faults.harness import Certs, Record, fault_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

CLUSTER = "local"
USER, PASSWORD = "prometheus", "listener-fault-pw"
#: Generous: only a wedged listener exceeds it, never a loaded 2-core machine.
CLIENT_TIMEOUT_S = 5.0
SCRAPERS, LOAD_S = 50, 10.0


def listener_exporter(stack: RealStack, certs: Certs, workdir: Path, name: str,
                      tls: bool) -> ExporterProcess:
    """The exporter on the real stack; with `tls`, HTTPS and basic auth on the listener."""
    extra = ""
    if tls:
        extra = (f'web {{ tlsCertFile = "{certs.cert}", tlsKeyFile = "{certs.key}", '
                 f'basicAuthUsername = "{USER}", basicAuthPassword = "{PASSWORD}" }}\n')
    config = fault_config(burrow_url=stack.burrow_url,
                          clusters=[cluster_entry(CLUSTER, stack.bootstrap_servers)],
                          groups_allow="lst-.*", extra=extra)
    return ExporterProcess(workdir, config, name=name, scheme="https" if tls else "http",
                           auth=(USER, PASSWORD) if tls else None,
                           cafile=str(certs.ca) if tls else None).start()


def server_closed_within(sock: socket.socket, timeout_s: float) -> float | None:
    """Seconds until the exporter closes `sock` (EOF or reset), or None."""
    began = time.monotonic()
    sock.settimeout(0.2)
    while time.monotonic() - began < timeout_s:
        try:
            if not sock.recv(4096):
                return time.monotonic() - began
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - began
    return None


def test_an_idle_connection_blocks_no_tls_client_and_is_cut_at_the_handshake_deadline(
        fault_stack: RealStack, certs: Certs, tmp_path: Path, record: Record) -> None:
    exporter = listener_exporter(fault_stack, certs, tmp_path, "idle-tls", tls=True)
    idle = socket.create_connection(("127.0.0.1", exporter.port))
    dripping = socket.create_connection(("127.0.0.1", exporter.port))
    opened = time.monotonic()
    try:
        dripping.sendall(b"\x16\x03\x01\x02\x00\x01")  # a ClientHello that never completes
        latencies: list[float] = []
        began = time.monotonic()
        while time.monotonic() - began < 3.0:
            for path in ("/healthz", "/metrics"):
                t = time.monotonic()
                status, _ = exporter.get(path, timeout_s=CLIENT_TIMEOUT_S)
                latencies.append(time.monotonic() - t)
                assert status == 200, path
        worst = max(latencies)
        # blocked behind the idle connection, a request would wait for its cut at the
        # first-byte deadline (3 s from accept)
        assert worst < 3.0, f"a request took {worst:.2f} s while a connection sat idle"
        # the silent one is cut at the first-byte deadline (3 s from accept), the dripping
        # handshake at the handshake deadline (10 s from accept)
        cut_idle = server_closed_within(idle, 20.0)
        idle_at = time.monotonic() - opened  # by then it was closed
        cut_dripping = server_closed_within(dripping, 20.0)
        cut_at = time.monotonic() - opened
    finally:
        idle.close()
        dripping.close()
        code, _ = exporter.stop()
    assert cut_idle is not None and cut_dripping is not None, "a handshake was never cut"
    assert idle_at < 9.0, f"the silent connection was open {idle_at:.1f} s"
    assert 9.0 < cut_at < 20.0, cut_at
    assert code == 0
    record(
        "Security", "idle TCP connection to the TLS listener",
        "with TLS + basic auth on the listener, one connection that never speaks and one that "
        "sends half a ClientHello, both held open; /healthz and /metrics requested meanwhile",
        f"{len(latencies)} requests all answered, worst {worst * 1000:.0f} ms (the handshake "
        "runs on the connection's own thread, never in the accept loop); the silent one closed "
        "by the exporter at its first-byte deadline (3 s), the half handshake "
        f"≈{cut_at:.0f} s after it opened (handshake deadline 10 s)",
        "n/a", "")


def scrape_load(exporter: ExporterProcess, context: ssl.SSLContext | None,
                auth: bool) -> tuple[list[float], list[str]]:
    """`SCRAPERS` threads scraping /metrics back to back for `LOAD_S`: latencies, failures."""
    headers = {}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(
            f"{USER}:{PASSWORD}".encode()).decode()
    stop_at = time.monotonic() + LOAD_S
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def scrape() -> None:
        while time.monotonic() < stop_at:
            began = time.monotonic()
            try:
                req = urllib.request.Request(exporter.url + "/metrics", headers=headers)
                with urllib.request.urlopen(req, timeout=CLIENT_TIMEOUT_S,
                                            context=context) as resp:
                    ok = resp.status == 200 and UP.encode() in resp.read()
                failure = "" if ok else f"status {resp.status}"
            except Exception as exc:
                failure = repr(exc)[:120]
            with lock:
                if failure:
                    failures.append(failure)
                else:
                    latencies.append(time.monotonic() - began)

    threads = [threading.Thread(target=scrape) for _ in range(SCRAPERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(latencies), failures


@pytest.mark.parametrize("tls", [True, False], ids=["tls-basic-auth", "plain-http"])
def test_50_concurrent_scrapers_never_time_out(
        fault_stack: RealStack, certs: Certs, tmp_path: Path, record: Record, tls: bool) -> None:
    exporter = listener_exporter(fault_stack, certs, tmp_path, "load", tls=tls)
    try:
        exporter.wait_for(lambda sc: sc.cycles(CLUSTER) >= 1, 30, "a first cycle")
        context = ssl.create_default_context(cafile=str(certs.ca)) if tls else None
        latencies, failures = scrape_load(exporter, context, auth=tls)
        assert exporter.proc is not None and exporter.proc.poll() is None
    finally:
        code, _ = exporter.stop()
    timeouts = sum("timed out" in f for f in failures)
    assert not failures, f"{len(failures)} failed scrapes ({timeouts} timeouts): {failures[:3]}"
    assert len(latencies) >= 2 * SCRAPERS, len(latencies)
    assert code == 0
    p50, p99 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]
    what = "over TLS + basic auth" if tls else "over plain HTTP"
    record(
        "Security" if tls else "Exporter", f"{SCRAPERS} concurrent scrapers {what}",
        f"{SCRAPERS} clients scraping /metrics back to back for {LOAD_S:.0f} s "
        f"({CLIENT_TIMEOUT_S:.0f} s client timeout), a new connection each"
        + (", TLS handshake and basic auth on every one" if tls else ""),
        f"{len(latencies)} scrapes, 0 failed, 0 timeouts; p50 {p50 * 1000:.0f} ms, p99 "
        f"{p99 * 1000:.0f} ms, worst {latencies[-1] * 1000:.0f} ms (listen backlog 128+, "
        "not 5)", "n/a", "")
