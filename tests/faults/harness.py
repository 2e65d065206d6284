"""The fault suite's tools: the seeded scenario and the rig each fault module runs on, the
observation log that becomes docs/reliability.md, and test certificates. The exporter process,
scrapes and configs come from :mod:`tests.support`.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import re
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from devstack import RealStack
from devstack.exporter import ExporterProcess
from devstack.exporter_config import cluster_entry, exporter_config
from devstack.processes import free_port
from devstack.scrape import Scrape
from freshness_tracker.cycle import now_ms
from tests.support.fake_burrow import FaultyBurrow

CLUSTER = "local"  # the name the fault modules give the stack's cluster


# --- the seeded scenario and the rig -------------------------------------------------------


@dataclass
class Seeded:
    """A topic with known record times and groups with known commits, visible in Burrow.

    topic p0: 10 records at now-100 s, now-90 s, ... now-10 s; p1: 3 records.
    ``lagging`` committed p0@4 (freshness ≈ 60 s) and p1@3 (caught up);
    ``other`` committed p0@8 (freshness ≈ 20 s).
    Commits are real group commits (stamped by the broker), read by Burrow from
    ``__consumer_offsets``; freshness depends only on the record times chosen here.
    """

    topic: str
    lagging: str
    other: str
    timestamps: list[int]

    @property
    def groups(self) -> tuple[str, str]:
        return self.lagging, self.other

    def expected_freshness_ms(self, group: str) -> int:
        offset = 4 if group == self.lagging else 8
        return now_ms() - self.timestamps[offset]


def seed(stack: RealStack, prefix: str) -> Seeded:
    suffix = uuid.uuid4().hex[:8]
    topic, lagging, other = f"{prefix}-t-{suffix}", f"{prefix}-lag-{suffix}", \
        f"{prefix}-oth-{suffix}"
    stack.create_topic(topic, partitions=2, timeout_s=60)
    base = now_ms() - 100_000
    stamps = [base + 10_000 * i for i in range(10)]
    assert stack.produce(topic, 0, stamps) == list(range(10))
    assert stack.produce(topic, 1, stamps[:3]) == [0, 1, 2]
    stack.commit(lagging, topic, 0, 4)
    stack.commit(lagging, topic, 1, 3)
    stack.commit(other, topic, 0, 8)
    stack.wait_for_burrow_lag(lagging, topic, 0, 4, 6, timeout_s=60)
    stack.wait_for_burrow_lag(lagging, topic, 1, 3, 0, timeout_s=60)
    stack.wait_for_burrow_lag(other, topic, 0, 8, 2, timeout_s=60)
    return Seeded(topic, lagging, other, stamps)


def groups_regex(*prefixes: str) -> str:
    return "|".join(f"{re.escape(p)}-.*" for p in prefixes)


def fault_config(*, burrow_url: str, clusters: list[dict[str, Any]], frequency: float = 1,
                 burrow_timeout: str = "1s", retries: int = 1, lookup_timeout: str = "2s",
                 groups_allow: str = ".*", extra: str = "") -> str:
    """The fault suite's config: short frequency and timeouts, the port as a placeholder,
    every per-partition family (the suite checks each one's rules)."""
    return exporter_config(
        burrow_url=burrow_url, burrow_timeout=burrow_timeout, retries=retries,
        clusters=clusters, groups_allow=groups_allow, lookup_timeout=lookup_timeout,
        topic_config_ttl="1s", frequency=frequency, port="@PORT@",
        listen_address="127.0.0.1", worker_threads=4, every_family=True, extra=extra)


@dataclass
class Rig:
    """A fault module's setup: its seeded scenario, a FaultyBurrow in front of the stack's
    Burrow, a work directory, and (when the module shares one) a running exporter."""

    stack: RealStack
    prefix: str  # of its group names
    seeded: Seeded
    burrow: FaultyBurrow
    workdir: Path
    process: ExporterProcess | None = None

    @property
    def exporter(self) -> ExporterProcess:
        assert self.process is not None, "this rig runs no shared exporter"
        return self.process

    def healthy(self, exporter: ExporterProcess | None = None, *groups: str) -> Scrape:
        """Wait until ``exporter`` (the rig's by default) serves a cycle with the cluster up and
        ``groups`` (both seeded ones by default) measured: the baseline of a fault test."""
        s, want = self.seeded, groups or self.seeded.groups
        return (exporter or self.exporter).wait_for(
            lambda sc: sc.up(CLUSTER) == 1
            and all(sc.freshness(CLUSTER, g, s.topic, 0) is not None for g in want),
            30, f"a healthy cycle measuring {', '.join(want)}")

    def assert_exact(self, scrape: Scrape) -> None:
        """The served freshness of both seeded groups is the real age of the record at their
        committed offset (±4 s: a cycle of 1 s and the scrape's age)."""
        s = self.seeded
        for group in s.groups:
            value = scrape.freshness(CLUSTER, group, s.topic, 0)
            assert value is not None, group
            assert abs(value - s.expected_freshness_ms(group)) < 4_000, (group, value)

    def recovery(self, frozen: float | None, budget_s: float,
                 also: Callable[[Scrape], bool] | None = None, bounded: bool = True) -> str:
        """From a fault's end: the first cycle started afterwards has the cluster up,
        ``last_success`` past ``frozen`` and both groups' exact freshness (and whatever ``also``
        checks); ``bounded``: within two cycles and ``budget_s``. How long it took, for the
        matrix."""
        e, s = self.exporter, self.seeded
        began = time.monotonic()
        c0 = e.scrape().cycles(CLUSTER)

        def recovered(sc: Scrape) -> bool:
            return (sc.up(CLUSTER) == 1 and (sc.last_success(CLUSTER) or 0) > (frozen or 0)
                    and all(sc.freshness(CLUSTER, g, s.topic, 0) is not None for g in s.groups)
                    and (also is None or also(sc)))

        scrape = e.wait_for(recovered, budget_s + 5, "recovery after the fault ended")
        seconds = time.monotonic() - began
        cycles = scrape.cycles(CLUSTER) - c0
        if bounded:
            assert cycles <= 2, f"recovery took {cycles} cycles after the fault ended"
            assert seconds <= budget_s, f"recovery took {seconds:.1f} s"
        self.assert_exact(scrape)
        return describe_recovery(cycles, seconds)

    def start_exporter(self, name: str = "exporter", **config: Any) -> ExporterProcess:
        """An exporter process of this rig's cluster through its FaultyBurrow, measuring its
        seeded groups; ``config`` as :func:`fault_config` takes it."""
        text = fault_config(
            burrow_url=self.burrow.url,
            clusters=[cluster_entry(CLUSTER, self.stack.bootstrap_servers)],
            groups_allow=groups_regex(self.prefix), **config)
        return ExporterProcess(self.workdir, text, name=name).start()


@contextlib.contextmanager
def fault_rig(stack: RealStack, workdir: Path, prefix: str, *, exporter: bool = False,
              **config: Any) -> Iterator[Rig]:
    """A :class:`Rig` with groups named ``prefix-…``; with ``exporter``, one exporter process
    (``config`` as :func:`fault_config` takes it) shared by the module. Stopped afterwards."""
    rig = Rig(stack, prefix, seed(stack, prefix), FaultyBurrow(stack.burrow_url).start(),
              workdir)
    try:
        if exporter:
            rig.process = rig.start_exporter(**config)
        yield rig
    finally:
        if rig.process is not None:
            rig.process.stop()
        rig.burrow.stop()


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


#: The `record` fixture: ``record(area, fault, injection, during, after, recovery)`` logs the
#: running test's row of the matrix.
Record = Callable[..., None]


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
