"""The fault suite's tools: the exporter as a real process scraped over HTTP, parsed scrapes,
deadline polling, the observation log that becomes docs/reliability.md, and test certificates.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from devstack.processes import free_port
from freshness_tracker.sinks.prometheus import ALL_PARTITION_METRICS
from tests.stack_support import poll

REPO = Path(__file__).resolve().parents[2]

Labels = frozenset[tuple[str, str]]

UP = "freshness_tracker_cluster_up"
LAST_SUCCESS = "freshness_tracker_cluster_last_success_timestamp_seconds"
LAST_ATTEMPT = "freshness_tracker_cluster_last_attempt_timestamp_seconds"
CYCLES = "freshness_tracker_cycles_total"
FAILURES = "freshness_tracker_cycle_failures_total"
BURROW_ERRORS = "freshness_tracker_burrow_errors_total"
READ_FAILURES = "freshness_tracker_kafka_read_failures_total"
FRESHNESS = "kafka_consumer_freshness_ms"
GROUP_FRESHNESS = "kafka_consumer_group_max_freshness_ms"
PARTITIONS = "freshness_tracker_cluster_partitions"
DURATION = "freshness_tracker_cluster_cycle_duration_seconds"

#: Every per-consumer family: none of them may survive a failed cycle with an old value.
CONSUMER_FAMILIES = (
    FRESHNESS, "kafka_consumer_commit_lag_ms", "kafka_consumer_offset_lag",
    "kafka_consumer_committed_offset", "kafka_consumer_data_loss", "kafka_consumer_lost_records",
    "kafka_consumer_retention_headroom_ms", "kafka_consumer_partition_burrow_status",
    "kafka_consumer_topic_max_freshness_ms", "kafka_consumer_topic_offset_lag",
    GROUP_FRESHNESS, "kafka_consumer_group_offset_lag", "kafka_consumer_group_burrow_status",
    "kafka_consumer_group_unmeasured_partitions", "kafka_consumer_group_data_loss_partitions",
)  # fmt: skip


# --- scrapes -------------------------------------------------------------------------------


@dataclass
class Scrape:
    """One /metrics answer: samples by (name, labels), and how long the request took."""

    text: str
    seconds: float = 0.0
    samples: dict[tuple[str, Labels], float] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, seconds: float = 0.0) -> Scrape:
        scrape = cls(text, seconds)
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                scrape.samples[(s.name, frozenset(s.labels.items()))] = s.value
        return scrape

    def get(self, name: str, **labels: Any) -> float | None:
        return self.samples.get((name, frozenset((k, str(v)) for k, v in labels.items())))

    def series(self, name: str, **match: Any) -> dict[Labels, float]:
        want = {(k, str(v)) for k, v in match.items()}
        return {lab: v for (n, lab), v in self.samples.items() if n == name and want <= lab}

    def consumer_series(self, cluster: str, consumer: str | None = None) -> int:
        """How many per-consumer samples of ``cluster`` (and ``consumer``) are served."""
        match: dict[str, str] = {"cluster": cluster}
        if consumer is not None:
            match["consumer"] = consumer
        return sum(len(self.series(f, **match)) for f in CONSUMER_FAMILIES)

    def up(self, cluster: str) -> float | None:
        return self.get(UP, cluster=cluster)

    def cycles(self, cluster: str) -> int:
        return int(self.get(CYCLES, cluster=cluster) or 0)

    def last_success(self, cluster: str) -> float | None:
        return self.get(LAST_SUCCESS, cluster=cluster)

    def freshness(self, cluster: str, consumer: str, topic: str, partition: int) -> float | None:
        return self.get(FRESHNESS, cluster=cluster, consumer=consumer, topic=topic,
                        partition=partition)


# --- the exporter as a process -------------------------------------------------------------


class ExporterProcess:
    """``python3 -m freshness_tracker run --config FILE`` with its output in a log file."""

    def __init__(self, workdir: Path, config: str, *, name: str = "exporter",
                 env: Mapping[str, str] | None = None, port: int | None = None,
                 host: str = "127.0.0.1", scheme: str = "http",
                 auth: tuple[str, str] | None = None, cafile: str | None = None,
                 command: str = "run") -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.host = host
        self.scheme = scheme
        self.config_path = workdir / f"{name}.conf"
        self.config_path.write_text(config.replace("@PORT@", str(self.port)))
        self.log_path = workdir / f"{name}.log"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("FRESHNESS_TRACKER_", "BURROW_"))}
        self.env.update(env or {})
        self.env["PYTHONUNBUFFERED"] = "1"
        self.auth = auth
        self.command = command
        self._context: ssl.SSLContext | None = None
        if scheme == "https":
            self._context = ssl.create_default_context(cafile=cafile)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def start(self, wait: bool = True, timeout_s: float = 30.0) -> ExporterProcess:
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "freshness_tracker", self.command, "--config",
                 str(self.config_path)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                env=self.env, start_new_session=True)
        if wait:
            poll(self._listening, timeout_s, lambda: f"the exporter to listen\n{self.log_tail()}")
        return self

    def _listening(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"exporter exited with {self.proc.returncode}\n{self.log_tail()}")
        try:
            status, _ = self.get("/healthz", timeout_s=1.0)
        except OSError:
            return False
        return status in (200, 503)

    def get(self, path: str, *, auth: tuple[str, str] | bool | None = True,
            timeout_s: float = 5.0) -> tuple[int, str]:
        """(status, body); ``auth=True`` uses the configured credentials, None sends none."""
        request = urllib.request.Request(self.url + path)
        creds = self.auth if auth is True else (auth or None)
        if creds:
            import base64

            token = base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s,
                                        context=self._context) as resp:
                return int(resp.status), resp.read().decode()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read().decode()

    def scrape(self) -> Scrape:
        began = time.monotonic()
        status, body = self.get("/metrics")
        elapsed = time.monotonic() - began
        if status != 200:
            raise AssertionError(f"/metrics answered {status}: {body[:500]}")
        return Scrape.parse(body, elapsed)

    def wait_for(self, predicate: Callable[[Scrape], bool], timeout_s: float,
                 what: str) -> Scrape:
        """Scrape until ``predicate`` holds; the matching scrape, or TimeoutError with context."""
        last: list[Scrape | None] = [None]

        def check() -> Scrape | None:
            scrape = self.scrape()
            last[0] = scrape
            return scrape if predicate(scrape) else None

        def explain() -> str:
            text = last[0].text if last[0] else "(no scrape)"
            lines = [ln for ln in text.splitlines()
                     if ln.startswith(("freshness_tracker_cluster", "kafka_consumer_freshness",
                                       "freshness_tracker_cycles_total"))]
            return f"{what}\n--- last scrape ---\n" + "\n".join(lines[:40]) + \
                f"\n--- exporter log ---\n{self.log_tail()}"

        result: Scrape = poll(check, timeout_s, explain, interval_s=0.1)
        return result

    def wait_cycles(self, cluster: str, n: int, timeout_s: float) -> Scrape:
        """Wait until ``n`` more cycles of ``cluster`` have completed."""
        start = self.scrape().cycles(cluster)
        return self.wait_for(lambda s: s.cycles(cluster) >= start + n, timeout_s,
                             f"{n} more cycles of {cluster}")

    def signal(self, sig: int = signal.SIGTERM) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self, timeout_s: float = 10.0) -> tuple[int | None, float]:
        """SIGTERM, wait; (exit code, seconds it took). SIGKILL if it overstays (code None)."""
        if self.proc is None:
            return None, 0.0
        if self.proc.poll() is not None:
            return self.proc.returncode, 0.0
        began = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code: int | None = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            code = None
        return code, time.monotonic() - began

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def __enter__(self) -> ExporterProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def exporter_config(*, burrow_url: str, clusters: list[dict[str, Any]], frequency: float = 1,
                    burrow_timeout: str = "1s", retries: int = 1, lookup_timeout: str = "2s",
                    groups_allow: str = ".*", extra: str = "") -> str:
    """HOCON for a fault test: short frequency and timeouts, the port as a placeholder."""
    return (
        f"burrow {{ url = {json.dumps(burrow_url)}, timeout = {burrow_timeout}, "
        f"retries = {retries} }}\n"
        f"clusters = {json.dumps(clusters)}\n"
        f"filters.groups.allow = [{json.dumps(groups_allow)}]\n"
        f"lookup {{ timeout = {lookup_timeout}, topicConfigTtl = 1s }}\n"
        f"frequency_sec = {frequency}\n"
        "port = @PORT@\nlistenAddress = \"127.0.0.1\"\nworkerThreadCount = 4\n"
        # every per-partition family: the suite checks each one's rules
        f"partitionMetrics = {json.dumps(list(ALL_PARTITION_METRICS))}\n"
        f"{extra}\n"
    )


def cluster_entry(name: str, bootstrap: str | None, num_consumers: int = 1,
                  **props: str) -> dict[str, Any]:
    kafka: dict[str, str] = dict(props)
    if bootstrap:
        kafka["bootstrap.servers"] = bootstrap
    return {"name": name, "numConsumers": num_consumers, "kafka": kafka}


# --- the matrix ------------------------------------------------------------------------------


@dataclass
class Observation:
    """One row of the fault matrix, filled from what the test actually saw."""

    area: str
    fault: str
    injection: str
    during: str
    after: str
    recovery: str = ""
    test: str = ""
    passed: bool = True


class Matrix:
    """Collects observations for the session; written as JSON at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: list[Observation] = []
        self._lock = threading.Lock()

    def record(self, row: Observation) -> None:
        with self._lock:
            self.rows = [r for r in self.rows if (r.area, r.fault) != (row.area, row.fault)]
            self.rows.append(row)

    def mark_failed(self, test: str) -> None:
        with self._lock:
            for row in self.rows:
                if row.test == test:
                    row.passed = False

    def write(self, meta: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = {"meta": dict(meta), "rows": [asdict(r) for r in self.rows]}
        self.path.write_text(json.dumps(body, indent=2) + "\n")


def describe_recovery(cycles: int, seconds: float) -> str:
    return f"{cycles} cycle(s), {seconds:.1f} s after the fault ended"


# --- TLS material ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Certs:
    ca: Path
    cert: Path
    key: Path
    other_ca: Path  # a CA that did not sign anything we serve


def make_certs(directory: Path) -> Certs:
    """A throwaway CA, a server certificate for 127.0.0.1/localhost, and an unrelated CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def ca(cn: str) -> tuple[Any, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(name(cn))
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=2))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(
                    digital_signature=True, key_cert_sign=True, crl_sign=True,
                    content_commitment=False, key_encipherment=False, data_encipherment=False,
                    key_agreement=False, encipher_only=False, decipher_only=False),
                    critical=True)
                .sign(key, hashes.SHA256()))
        return key, cert

    ca_key, ca_cert = ca("freshness-tracker test CA")
    _, other = ca("some other CA")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(name("localhost")).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.IPAddress(ipaddress.ip_address("127.0.0.2"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    paths = Certs(directory / "ca.pem", directory / "server.pem", directory / "server.key",
                  directory / "other-ca.pem")
    paths.ca.write_bytes(ca_cert.public_bytes(pem))
    paths.other_ca.write_bytes(other.public_bytes(pem))
    paths.cert.write_bytes(cert.public_bytes(pem))
    paths.key.write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    return paths


class TlsTerminator:
    """TLS on a free port, plaintext to ``upstream``: a TLS listener in front of a broker."""

    def __init__(self, upstream: tuple[str, int], certs: Certs, port: int | None = None) -> None:
        self.upstream = upstream
        self.port = port or free_port()
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(str(certs.cert), str(certs.key))
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listener.settimeout(0.2)
        self._stop = threading.Event()
        self._sockets: list[socket.socket] = []
        self.handshakes = 0
        self._thread = threading.Thread(target=self._accept, daemon=True, name="tls-terminator")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> TlsTerminator:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._listener.close()
        for sock in list(self._sockets):
            _close_quietly(sock)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                raw, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            raw.settimeout(10)
            client = self._context.wrap_socket(raw, server_side=True)
            client.settimeout(None)
            self.handshakes += 1
            upstream = socket.create_connection(self.upstream, timeout=10)
            upstream.settimeout(None)
        except (OSError, ssl.SSLError):
            _close_quietly(raw)
            return
        self._sockets += [client, upstream]
        threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()
        _pump(client, upstream)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        _close_quietly(src)
        _close_quietly(dst)


def _close_quietly(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()
