"""Security against real servers: Burrow behind HTTPS with CA verification and basic auth,
credentials only from the environment or an included file and never logged (DEBUG logs of a
full run with failures), the listener on a chosen address with TLS and basic auth (/healthz
open for probes), and Kafka reads over a TLS listener with CA verification.

Kafka's TLS listener: the suite's real Kafka 3.9.1 advertises its client listener at a frame
proxy; for the TLS test a TLS terminator takes over the proxy's port (same advertised address,
now TLS, plaintext to the broker behind), while Burrow keeps reading the internal listener.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack import RealStack
from devstack.exporter import ExporterProcess
from devstack.exporter_config import cluster_entry, exporter_config
from devstack.scrape import BURROW_ERRORS, Scrape
from devstack.testing import unavailable
from freshness_tracker import metrics
from freshness_tracker.cycle import now_ms
from tests.faults.harness import (
    Certs,
    Record,
    TlsTerminator,
    fault_config,
    groups_regex,
    seed,
)
from tests.support.fake_burrow import ANY, Fault, FaultyBurrow
from tests.support.stack import require_managed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

CLUSTER = "local"
BURROW_USER, BURROW_SECRET = "tracker", "burrow-S3cr3t-9f1b"
WEB_USER, WEB_SECRET = "prometheus", "web-S3cr3t-77aa"
KAFKA_SECRET = "sasl-S3cr3t-c0de"
FILE_SECRET = "file-S3cr3t-5e5e"
SECRETS = (BURROW_SECRET, WEB_SECRET, KAFKA_SECRET, FILE_SECRET)


def require_loopback_alias() -> None:
    """127.0.0.2 is on Linux's loopback by default, not on every system's: skip locally where it
    cannot be bound, fail in CI (devstack.testing.unavailable)."""
    try:
        with socket.create_server(("127.0.0.2", 0)):
            return
    except OSError as exc:
        unavailable(f"127.0.0.2 cannot be bound here ({exc}): the listener-address test needs "
                    "a second loopback address")


def test_https_burrow_basic_auth_secure_listener_and_no_secret_in_logs(
        fault_stack: RealStack, certs: Certs, tmp_path: Path, record: Record) -> None:
    seeded = seed(fault_stack, "sec")
    burrow = FaultyBurrow(fault_stack.burrow_url, certfile=str(certs.cert),
                          keyfile=str(certs.key), basic_auth=(BURROW_USER, BURROW_SECRET)).start()
    host = "127.0.0.1"
    (tmp_path / "secrets.conf").write_text(
        f'clusters = [{{ name = {CLUSTER}, numConsumers = 1, kafka {{\n'
        f'  "bootstrap.servers" = "{fault_stack.bootstrap_servers}"\n'
        '  "sasl.username" = "tracker"\n'
        '  "sasl.password" = ${?KAFKA_SASL_PASSWORD}\n'
        f'  "ssl.key.password" = "{FILE_SECRET}" }} }}]\n')
    config = fault_config(
        burrow_url=burrow.url, clusters=[], groups_allow=groups_regex("sec"),
        extra=(f'include "{tmp_path / "secrets.conf"}"\n'
               f'burrow.caFile = "{certs.ca}"\n'
               f'listenAddress = "{host}"\n'
               f'web {{ tlsCertFile = "{certs.cert}", tlsKeyFile = "{certs.key}", '
               f'basicAuthUsername = "{WEB_USER}" }}\n'
               "logging.level = DEBUG\n"))
    config = config.replace("clusters = []\n", "")
    env = {"FRESHNESS_TRACKER_BURROW_USERNAME": BURROW_USER,
           "FRESHNESS_TRACKER_BURROW_PASSWORD": BURROW_SECRET,
           "FRESHNESS_TRACKER_WEB_PASSWORD": WEB_SECRET,
           "KAFKA_SASL_PASSWORD": KAFKA_SECRET}
    exporter = ExporterProcess(tmp_path, config, name="secure", env=env, host=host,
                               scheme="https", auth=(WEB_USER, WEB_SECRET), cafile=str(certs.ca))
    bodies: list[str] = []
    try:
        exporter.start()
        scrape = exporter.wait_for(lambda sc: sc.up(CLUSTER) == 1 and sc.freshness(
            CLUSTER, seeded.lagging, seeded.topic, 0) is not None, 30, "a healthy cycle")
        value = scrape.freshness(CLUSTER, seeded.lagging, seeded.topic, 0)
        assert value is not None
        assert abs(value - seeded.expected_freshness_ms(seeded.lagging)) < 4_000
        seen = burrow.requests()
        assert seen and all(s.authorized for s in seen), "a Burrow request lacked credentials"
        bodies.append(scrape.text)

        # the listener: TLS, basic auth on everything but /healthz, bound to `host` only
        assert exporter.get("/metrics", auth=None)[0] == 401
        assert exporter.get("/metrics", auth=(WEB_USER, "wrong"))[0] == 401
        assert exporter.get("/readyz", auth=None)[0] == 401
        health_status, health_body = exporter.get("/healthz", auth=None)
        assert health_status == 200
        bodies.append(health_body)
        with pytest.raises((ssl.SSLError, urllib.error.URLError)):
            urllib.request.urlopen(f"https://{host}:{exporter.port}/healthz", timeout=5,
                                   context=ssl.create_default_context(
                                       cafile=str(certs.other_ca)))
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            urllib.request.urlopen(f"http://{host}:{exporter.port}/healthz", timeout=5).read()

        # error paths log URLs and reasons: make Burrow fail for a while, then recover
        burrow.add(ANY, Fault.status(500))
        failed = exporter.wait_for(lambda sc: sc.up(CLUSTER) == 0, 20, "Burrow failing")
        bodies.append(failed.text)
        bodies.append(exporter.get("/healthz", auth=None)[1])
        burrow.clear()
        exporter.wait_for(lambda sc: sc.up(CLUSTER) == 1, 20, "recovery")
    finally:
        code, _ = exporter.stop()
        burrow.stop()
    log = exporter.log()
    assert code == 0
    assert "level=debug" in log, "the run was not logged at DEBUG"
    for secret in SECRETS:
        assert secret not in log, f"a secret reached the log: {secret[:4]}…"
        for body in bodies:
            assert secret not in body
    lines = len(log.splitlines())
    record(
        "Security", "Burrow over HTTPS + basic auth; secure listener; secrets never logged",
        "Burrow behind an HTTPS front (throwaway CA, `burrow.caFile`) requiring basic auth; "
        "Burrow credentials, the listener password and a SASL password from the environment, "
        "an SSL key password from an `include`d file; listener on "
        f"{host} with TLS and basic auth; DEBUG logging; Burrow failing with 500s midway",
        "exact freshness over HTTPS, every Burrow request authenticated; /metrics and /readyz "
        "401 without or with wrong credentials, /healthz 200 without; the listener's CA is "
        "verified, plaintext HTTP refused"
        f"; none of the 4 secrets in {lines} DEBUG log lines, in /metrics or in /healthz",
        "recovered from the 500s in one cycle", "")


def test_the_listener_answers_on_its_listen_address_only(tmp_path: Path,
                                                         record: Record) -> None:
    """`listenAddress` is the one address served: a scraper on another address of the same host
    (here 127.0.0.1 beside 127.0.0.2) finds nothing listening. Burrow is unreachable: the
    listener does not wait for a cycle."""
    require_loopback_alias()
    config = exporter_config(burrow_url="http://127.0.0.1:1", burrow_timeout="1s", retries=0,
                             clusters=[cluster_entry(CLUSTER, "127.0.0.1:1")], port="@PORT@",
                             listen_address="127.0.0.2")
    exporter = ExporterProcess(tmp_path, config, name="alias", host="127.0.0.2")
    try:
        exporter.start()
        status, _ = exporter.get("/healthz", auth=None)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", exporter.port), timeout=2).close()
    finally:
        code, _ = exporter.stop()
    assert status in (200, 503)
    assert code == 0
    record(
        "Security", "listener bound to its listenAddress only",
        "`listenAddress = \"127.0.0.2\"`; a connection to the same port on 127.0.0.1",
        "/healthz answers on 127.0.0.2; 127.0.0.1 refuses the connection", "n/a", "")


def test_wrong_ca_wrong_password_and_url_credentials_fail_clearly_and_quietly(
        fault_stack: RealStack, certs: Certs, tmp_path: Path, record: Record) -> None:
    burrow = FaultyBurrow(fault_stack.burrow_url, certfile=str(certs.cert),
                          keyfile=str(certs.key), basic_auth=(BURROW_USER, BURROW_SECRET)).start()
    port = burrow.port
    cases = {
        "wrong-ca": (burrow.url, f'burrow.caFile = "{certs.other_ca}"',
                     {"FRESHNESS_TRACKER_BURROW_USERNAME": BURROW_USER,
                      "FRESHNESS_TRACKER_BURROW_PASSWORD": BURROW_SECRET}),
        "wrong-password": (burrow.url, f'burrow.caFile = "{certs.ca}"',
                           {"FRESHNESS_TRACKER_BURROW_USERNAME": BURROW_USER,
                            "FRESHNESS_TRACKER_BURROW_PASSWORD": "nope-" + BURROW_SECRET}),
        "url-credentials": (f"https://{BURROW_USER}:{BURROW_SECRET}@127.0.0.1:{port}",
                            f'burrow.caFile = "{certs.ca}"', {}),
    }
    exporters: dict[str, ExporterProcess] = {}
    errors: dict[str, str] = {}
    try:
        for name, (url, extra, env) in cases.items():
            config = fault_config(
                burrow_url=url, clusters=[cluster_entry(CLUSTER, fault_stack.bootstrap_servers)],
                groups_allow="nothing-.*", extra=extra + "\nlogging.level = DEBUG")
            exporters[name] = ExporterProcess(tmp_path, config, name=name, env=env).start()
        down = {name: e.wait_for(lambda sc: sc.cycles(CLUSTER) >= 2, 30, f"{name} cycles")
                for name, e in exporters.items()}
        url_run = exporters["url-credentials"]
        assert down["url-credentials"].up(CLUSTER) == 1, "credentials in the URL were not used"
        burrow.add(ANY, Fault.status(500))  # now make the URL-credential run log failures
        url_run.wait_for(lambda sc: sc.up(CLUSTER) == 0, 20, "failures with URL credentials")
        for name in ("wrong-ca", "wrong-password"):
            assert down[name].up(CLUSTER) == 0
            assert (down[name].get(BURROW_ERRORS, cluster=CLUSTER) or 0) >= 1
            errors[name] = json.loads(exporters[name].get("/healthz")[1])["clusters"][
                CLUSTER]["error"]
        errors["url-credentials"] = json.loads(url_run.get("/healthz")[1])["clusters"][
            CLUSTER]["error"]
    finally:
        for e in exporters.values():
            e.stop()
        burrow.stop()
    assert "CertVerification" in errors["wrong-ca"] or "CERTIFICATE_VERIFY" in errors["wrong-ca"]
    assert "401" in errors["wrong-password"]
    for name, e in exporters.items():
        for secret in (BURROW_SECRET,):
            assert secret not in e.log(), f"{name}: the Burrow password reached the log"
            assert secret not in errors[name]
    record(
        "Security", "wrong CA, wrong password, credentials in burrow.url",
        "three exporters at DEBUG against the HTTPS+basic-auth Burrow front: an unrelated CA; a "
        "wrong password; `https://user:password@host` as burrow.url (then Burrow answers 500)",
        f"wrong CA: down, error “{errors['wrong-ca'][:70]}…”; wrong password: down, error names "
        "HTTP 401; URL credentials are used and the password appears in no log line or error "
        "(URLs in messages carry no userinfo)",
        "n/a", "")


# --- Kafka over TLS ------------------------------------------------------------------------------


@pytest.fixture
def tls_broker(fault_stack: RealStack, certs: Certs) -> Iterator[tuple[str, TlsTerminator]]:
    """The real broker's advertised client address turned into a TLS listener: its frame proxy
    is cut and a TLS terminator (plaintext to the broker's client listener) binds that port."""
    require_managed(fault_stack, "the TLS test swaps the broker's client proxy")
    assert fault_stack.kafka is not None
    (node_id,) = fault_stack.kafka.node_ids
    proxy = fault_stack.kafka.proxy(node_id)
    fault_stack.cut_broker(node_id)
    try:
        terminator = TlsTerminator(proxy.upstream, certs, port=proxy.port).start()
        try:
            yield terminator.address, terminator
        finally:
            terminator.stop()
    finally:
        fault_stack.restore_broker(node_id)


def test_kafka_reads_over_a_tls_listener_with_ca_verification(
        fault_stack: RealStack, tls_broker: tuple[str, TlsTerminator], certs: Certs,
        tmp_path: Path, record: Record) -> None:
    address, terminator = tls_broker
    ssl_props = {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca),
                 "ssl.endpoint.identification.algorithm": "https"}
    stack, suffix = fault_stack, uuid.uuid4().hex[:8]
    topic, group = f"tls-t-{suffix}", f"tls-g-{suffix}"
    stack.create_topic(topic, partitions=1)
    stamps = [now_ms() - 40_000 + 10_000 * i for i in range(4)]
    assert stack.produce(topic, 0, stamps) == [0, 1, 2, 3]
    window = stack.commit(group, topic, 0, 1)  # a real commit, read by the real Burrow
    stack.wait_for_burrow_lag(group, topic, 0, 1, 3, timeout_s=60)

    burrow = FaultyBurrow(stack.burrow_url).start()  # three exporter clusters, one real Burrow
    for name in ("tlsgood", "tlsbadca", "tlsplain"):
        burrow.alias(name, stack.cluster)
    config = fault_config(burrow_url=burrow.url, groups_allow=re.escape(group), clusters=[
        cluster_entry("tlsgood", address, **ssl_props),
        cluster_entry("tlsbadca", address, **{**ssl_props, "ssl.ca.location": str(certs.other_ca)}),
        cluster_entry("tlsplain", address),
    ], lookup_timeout="3s")
    exporter = ExporterProcess(tmp_path, config, name="kafka-tls")
    try:
        exporter.start()
        labels = {"cluster": "tlsgood", "consumer": group, "topic": topic, "partition": 0}
        scrape: Scrape = exporter.wait_for(
            lambda sc: sc.get(metrics.FRESHNESS.name, **labels) is not None
            and sc.cycles("tlsbadca") >= 1 and sc.cycles("tlsplain") >= 1, 40,
            "freshness read over TLS")
        value = scrape.get(metrics.FRESHNESS.name, **labels)
        assert value is not None and abs(value - (now_ms() - stamps[1])) < 4_000
        commit_lag = scrape.get(metrics.COMMIT_LAG.name, **labels)
        assert commit_lag is not None
        assert window.before_ms - stamps[0] <= commit_lag <= window.after_ms - stamps[0]
        assert scrape.up("tlsgood") == 1
        for bad in ("tlsbadca", "tlsplain"):
            assert scrape.up(bad) == 0
            assert scrape.get(metrics.FRESHNESS.name, cluster=bad, consumer=group,
                              topic=topic, partition=0) is None
        health = json.loads(exporter.get("/healthz")[1])["clusters"]
    finally:
        exporter.stop()
        burrow.stop()
    assert terminator.handshakes >= 1
    record(
        "Security", "Kafka over TLS (SSL properties passed through to librdkafka)",
        "the real broker's advertised client address served over TLS (a TLS terminator in "
        "front of Kafka 3.9.1's client listener; a real commit read by Burrow 1.2.1); three "
        "clusters on it: `security.protocol=SSL` + the right CA, the same with an unrelated CA, "
        "and plaintext",
        f"right CA: exact freshness and commit lag read over TLS ({terminator.handshakes} TLS "
        f"handshakes); unrelated CA: `cluster_up` 0, no freshness "
        f"(“{health['tlsbadca']['error'][:60]}…”); "
        "plaintext against TLS: `cluster_up` 0, no freshness",
        "n/a", "")
