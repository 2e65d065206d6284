"""Security, one level down: Kafka SASL/SSL properties reach librdkafka untouched (from the
HOCON file and its environment substitutions to the consumer and admin constructors), secrets
are redacted wherever settings are printed, Burrow credentials never ride in a URL, TLS
verification is not overridable by the environment, and the listener's basic auth leaves
/healthz open for probes.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from prometheus_client import CollectorRegistry

from freshness_tracker.app import Exporter
from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.cli import main
from freshness_tracker.config import load_settings
from freshness_tracker.config.settings import redact
from freshness_tracker.errors import BurrowUnavailable, ConfigError
from freshness_tracker.http import AuthThrottle, make_app
from freshness_tracker.kafka import consumers as consumers_module
from freshness_tracker.kafka.consumers import FORCED_SETTINGS, ConsumerPool, build_consumer_config
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
from freshness_tracker.web_settings import WebSettings
from tests.faults.harness import make_certs
from tests.support.fake_kafka import FakeBroker, FakeConsumer, make_log
from tests.support.fakes import FakeBurrow, group, lag
from tests.support.http_burrow import RecordingBurrow, ok

SECURITY_PROPS = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": "tracker",
    "sasl.password": "pa$$ w0rd with spaces and ünïcode",
    "sasl.oauthbearer.config": "principal=tracker scope=read",
    "ssl.ca.location": "/etc/kafka/ca.pem",
    "ssl.certificate.location": "/etc/kafka/client.pem",
    "ssl.key.location": "/etc/kafka/client.key",
    "ssl.key.password": "k3y-pa55",
    "ssl.endpoint.identification.algorithm": "https",
    "ssl.cipher.suites": "ECDHE-RSA-AES256-GCM-SHA384",
}


def test_sasl_and_ssl_properties_pass_through_untouched() -> None:
    settings = ClusterKafkaSettings("c", {"bootstrap.servers": "b:9093", **SECURITY_PROPS})
    config, overridden = build_consumer_config(settings, LookupSettings())
    for key, value in SECURITY_PROPS.items():
        assert config[key] == value, key
    assert overridden == []
    for key, value in FORCED_SETTINGS.items():
        assert config[key] == value  # the safety settings still win


def test_the_consumer_constructor_receives_them_exactly() -> None:
    received: list[dict[str, Any]] = []

    def factory(config: dict[str, Any]) -> FakeConsumer:
        received.append(config)
        return FakeConsumer(FakeBroker(), config)

    settings = ClusterKafkaSettings("c", {"bootstrap.servers": "b:9093", **SECURITY_PROPS})
    pool = ConsumerPool(settings, LookupSettings(), consumer_factory=factory)
    with pool.borrow(timeout=1):
        pass
    pool.close()
    assert len(received) == 1
    for key, value in SECURITY_PROPS.items():
        assert received[0][key] == value, key


def test_from_hocon_and_the_environment_to_the_consumer_and_the_admin_client(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole path: `${?VAR}` in the file -> Settings -> Exporter -> ConsumerPool -> the
    librdkafka constructor, and the AdminClient used for retention.ms."""
    monkeypatch.setenv("KAFKA_PASSWORD", "from-the-env-0xC0FFEE")
    settings = load_settings(text="""
        burrow.url = "http://fake:1"
        clusters = [{ name = c, kafka {
            "bootstrap.servers" = "b:9093"
            "security.protocol" = SASL_SSL
            "sasl.mechanism" = PLAIN
            "sasl.username" = tracker
            "sasl.password" = ${?KAFKA_PASSWORD}
            "ssl.ca.location" = "/etc/kafka/ca.pem"
        } }]
    """)
    props = settings.clusters[0].kafka.properties
    assert props["sasl.password"] == "from-the-env-0xC0FFEE"
    assert "from-the-env" not in repr(settings)  # redacted wherever settings are printed

    broker = FakeBroker()
    broker.add_topic("t", [make_log(10)])
    consumer_configs: list[dict[str, Any]] = []
    admin_configs: list[dict[str, Any]] = []

    def consumer_factory(config: dict[str, Any]) -> FakeConsumer:
        consumer_configs.append(config)
        return FakeConsumer(broker, config)

    class FakeAdmin:
        def __init__(self, config: dict[str, Any]) -> None:
            admin_configs.append(config)

        def describe_configs(self, resources: Any, **kw: Any) -> dict[Any, Any]:
            return {}

    monkeypatch.setattr(consumers_module, "_default_factory", consumer_factory)
    import confluent_kafka.admin

    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", FakeAdmin)
    burrow = FakeBurrow({"c": [group("c", "g", lag("c", "g", "t", 0, committed=4,
                                                   current_lag=6, commit_time=None))]})
    exporter = Exporter(settings, burrow=burrow)
    try:
        snapshot = exporter.run_once()
    finally:
        exporter.close()
    assert snapshot.clusters[0].health.up, snapshot.clusters[0].health.error
    assert consumer_configs and admin_configs
    for config in (consumer_configs[0], admin_configs[0]):
        assert config["security.protocol"] == "SASL_SSL"
        assert config["sasl.mechanism"] == "PLAIN"
        assert config["sasl.username"] == "tracker"
        assert config["sasl.password"] == "from-the-env-0xC0FFEE"
        assert config["ssl.ca.location"] == "/etc/kafka/ca.pem"


def test_librdkafka_accepts_the_passed_through_sasl_ssl_config(tmp_path: Path) -> None:
    """A real librdkafka consumer is built from the pool's config (no broker needed): a typo'd
    or mangled property would make the constructor raise."""
    certs = make_certs(tmp_path)
    props = {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_SSL",
             "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "tracker",
             "sasl.password": "secret", "ssl.ca.location": str(certs.ca),
             "ssl.endpoint.identification.algorithm": "https"}
    config, _ = build_consumer_config(ClusterKafkaSettings("c", props), LookupSettings())
    consumer = Consumer(config)
    consumer.close()


def test_secrets_are_redacted_in_every_settings_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRESHNESS_TRACKER_BURROW_PASSWORD", "burrow-pw-123")
    monkeypatch.setenv("FRESHNESS_TRACKER_WEB_PASSWORD", "web-pw-456")
    settings = load_settings(text="""
        burrow { url = "http://b:1", username = u }
        web.basicAuthUsername = p
        clusters = [{ name = c, kafka { "sasl.password" = "kafka-pw-789",
                      "sasl.jaas.config" = "x password=jaas-pw", "ssl.key.password" = "kp-000" } }]
    """)
    assert settings.burrow.password == "burrow-pw-123"
    assert settings.web.basic_auth_password == "web-pw-456"
    text = repr(settings) + str(settings) + repr(settings.burrow) + repr(settings.web)
    for secret in ("burrow-pw-123", "web-pw-456", "kafka-pw-789", "jaas-pw", "kp-000"):
        assert secret not in text
    assert redact({"sasl.password": "x", "bootstrap.servers": "b"}) == {
        "sasl.password": "***", "bootstrap.servers": "b"}


def test_credentials_in_the_burrow_url_become_basic_auth_and_leave_the_url() -> None:
    with RecordingBurrow() as server:
        server.route("/v3/kafka", ok({"clusters": ["c"]}))
        client = BurrowClient(BurrowSettings(url=f"http://us%3Aer:p%40ss@127.0.0.1:{server.port}"))
        assert client.url == server.url
        assert client.clusters() == ["c"]
        token = base64.b64encode(b"us:er:p@ss").decode()
        assert server.calls[0].headers["Authorization"] == f"Basic {token}"
        assert server.calls[0].path == "/v3/kafka"
        assert "p%40ss" not in repr(server.calls[0]) and "p@ss" not in repr(server.calls[0])
        client.close()


def test_the_ca_file_is_not_overridden_by_the_environment(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """burrow.caFile is the CA, whatever REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE or SSL_CERT_FILE
    say (they name the system bundle here, which does not hold the test CA); an unrelated CA
    fails verification; tlsVerify = false accepts the certificate unverified."""
    certs = make_certs(tmp_path)
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.setenv(name, "/etc/ssl/certs/ca-certificates.crt")
    with RecordingBurrow(tls=(str(certs.cert), str(certs.key))) as server:
        server.route("/v3/kafka", ok({"clusters": []}))
        for settings, works in ((BurrowSettings(url=server.url, ca_file=str(certs.ca)), True),
                                (BurrowSettings(url=server.url, tls_verify=False), True),
                                (BurrowSettings(url=server.url, ca_file=str(certs.other_ca),
                                                retries=0), False),
                                (BurrowSettings(url=server.url, retries=0), False)):
            client = BurrowClient(settings)
            try:
                if works:
                    assert client.clusters() == []
                else:
                    with pytest.raises(BurrowUnavailable, match="CertVerification"):
                        client.clusters()
            finally:
                client.close()
        assert len(server.calls) == 2  # the refused handshakes sent no request


def _call(app: Any, path: str, auth: str | None = None) -> tuple[str, bytes]:
    environ = {"PATH_INFO": path, "REQUEST_METHOD": "GET", "SERVER_NAME": "x",
               "SERVER_PORT": "1", "wsgi.input": io.BytesIO(), "wsgi.url_scheme": "https",
               "QUERY_STRING": ""}
    if auth is not None:
        environ["HTTP_AUTHORIZATION"] = "Basic " + base64.b64encode(auth.encode()).decode()
    status: list[str] = []
    body = b"".join(app(environ, lambda s, h, *a: status.append(s)))
    return status[0], body


def test_listener_basic_auth_guards_everything_but_healthz() -> None:
    web = WebSettings(basic_auth_username="prom", basic_auth_password="s3cret")
    ticks = itertools.count(step=10.0)  # each check 10 s later: no failure holds the next back
    app = make_app(CollectorRegistry(), lambda: (True, {"status": "ok"}),
                   lambda: (True, {"status": "ready"}), web,
                   status_page=lambda query: b"<html>the status page</html>",
                   throttle=AuthThrottle(clock=lambda: next(ticks)))
    assert _call(app, "/healthz")[0].startswith("200")
    assert _call(app, "/", "prom:s3cret")[1] == b"<html>the status page</html>"
    assert b"status page" not in _call(app, "/")[1]
    for path in ("/metrics", "/readyz", "/"):
        assert _call(app, path)[0].startswith("401")
        assert _call(app, path, "prom:wrong")[0].startswith("401")
        assert _call(app, path, "other:s3cret")[0].startswith("401")
        assert _call(app, path, "prom:s3cret")[0].startswith("200")


# --- Burrow credentials in the URL ----------------------------------------------------------

#: Each password carries the marker; urlsplit ends the host at `#`, `/` or `?`, which used to
#: leave the whole URL, password included, in logs, `check`, `once` output and /healthz.
MARKER = "Zq9Xv"
URL_PASSWORDS = [f"Hash#{MARKER}", f"sl/ash/{MARKER}", f"qu?ery={MARKER}", f"at@sign@{MARKER}",
                 f"co:lon:{MARKER}", f"a#b/c?d@e:{MARKER}"]


def _url_config(tmp_path: Path, url: str) -> Path:
    conf = tmp_path / "c.conf"
    conf.write_text(f"burrow.url = {json.dumps(url)}\n"
                    "burrow { timeout = 1s, retries = 0 }\nlogging.level = DEBUG\n"
                    "clusters = [{ name = local, kafka { bootstrap.servers = "
                    '"127.0.0.1:1" } }]\n')
    return conf


@pytest.mark.parametrize("password", URL_PASSWORDS)
def test_a_password_in_the_burrow_url_is_never_printed(
        password: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        restore_logging: None) -> None:
    """Burrow is unreachable, so every output names its URL: logs at DEBUG, `once --format
    json`, `check` and the /healthz body. None may carry the password."""
    conf = _url_config(tmp_path, f"http://user:{password}@127.0.0.1:1")
    assert main(["once", "--format", "json", "--config", str(conf)]) == 1
    assert main(["check", "--config", str(conf)]) == 1
    settings = load_settings(conf)
    exporter = Exporter(settings)
    try:
        exporter.run_once()
        status, healthz = _call(make_app(exporter.exposition, exporter.health, exporter.ready,
                                         settings.web), "/healthz")
    finally:
        exporter.close()
    captured = capsys.readouterr()
    printed = captured.out + captured.err + healthz.decode()
    assert "http://127.0.0.1:1" in printed  # the URL is printed, without its credentials
    assert MARKER not in printed and "user:" not in printed
    assert status.startswith("200")
    assert MARKER not in repr(settings)
    assert settings.burrow.url == "http://127.0.0.1:1"
    assert (settings.burrow.username, settings.burrow.password) == ("user", password)


@pytest.mark.parametrize("password", URL_PASSWORDS)
def test_the_password_of_the_burrow_url_is_sent_as_basic_auth(password: str) -> None:
    with RecordingBurrow() as server:
        server.route("/v3/kafka", ok({"clusters": ["c"]}))
        url = f"http://user:{password}@127.0.0.1:{server.port}"
        token = "Basic " + base64.b64encode(f"user:{password}".encode()).decode()
        settings = load_settings(
            text=f"burrow.url = {json.dumps(url)}\nclusters = [{{ name = c }}]")
        for burrow in (settings.burrow, BurrowSettings(url=url)):  # a file, and built in code
            client = BurrowClient(burrow)
            assert client.url == server.url
            assert client.clusters() == ["c"]
            assert server.calls[-1].headers["Authorization"] == token
            assert server.calls[-1].path == "/v3/kafka"
            assert server.calls[-1].headers["Host"] == f"127.0.0.1:{server.port}"
            assert MARKER not in repr(server.calls[-1]).replace(
                base64.b64encode(f"user:{password}".encode()).decode(), "")
            client.close()


@pytest.mark.parametrize(("url", "problem"), [
    (f"http://user:pw{MARKER}@burrow:99999", "port"),
    (f"http://user:pw{MARKER}@burrow:80{MARKER}", "port"),
    (f"ftp://user:pw{MARKER}@burrow:8000", "scheme 'ftp'"),
    (f"user:pw{MARKER}@burrow:8000", "not an http(s) URL"),
    (f"http://user:pw{MARKER}@", "no host"),
    (f"http://user:pw{MARKER}@[::1:8000", "the host is not valid"),
    (f"http://user:pw{MARKER}@burrow:8000/x?y=1", "query"),
    (f"http://user:pw{MARKER}@bur row:8000", "whitespace"),
    (f"http://user:{MARKER}", "port"),  # what an unquoted `#` in HOCON leaves of the URL
])
def test_a_malformed_burrow_url_is_refused_without_echoing_its_password(
        url: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(text=f"burrow.url = {json.dumps(url)}\nclusters = [{{ name = c }}]")
    assert info.value.key == "burrow.url"
    assert problem in str(info.value)
    assert MARKER not in str(info.value)


def test_burrow_credentials_from_the_url_and_the_keys_combine_one_way() -> None:
    def burrow(extra: str) -> tuple[str, str, tuple[str, ...]]:
        s = load_settings(text=extra + "\nclusters = [{ name = c }]")
        return s.burrow.username, s.burrow.password, s.warnings

    # A user in the URL, the password from the environment (via burrow.password).
    assert burrow('burrow { url = "http://u@b:1", password = "p" }')[:2] == ("u", "p")
    # burrow.username wins over the URL, and says so.
    user, password, warnings = burrow('burrow { url = "http://u:x@b:1", username = k, '
                                      "password = q }")
    assert (user, password) == ("k", "q")
    assert any(w.startswith("burrow.url: its user and password are ignored") for w in warnings)
    # A password with nobody to send it for: auth would be silently off.
    with pytest.raises(ConfigError) as info:
        burrow('burrow.password = "p"')
    assert info.value.key == "burrow.password"


# --- the listener's basic auth --------------------------------------------------------------

@pytest.mark.parametrize(("web", "key"), [
    ('web.basicAuthPassword = "s3cret"', "web.basicAuthUsername"),  # served /metrics open
    ('web.basicAuthUsername = "prom"', "web.basicAuthPassword"),  # accepted an empty password
    ('web { basicAuthUsername = "pr:om", basicAuthPassword = "s3cret" }', "web.basicAuthUsername"),
])
def test_half_configured_listener_auth_is_refused(web: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(text=web + "\nclusters = [{ name = c }]")
    assert info.value.key == key
    assert "s3cret" not in str(info.value)


def test_half_configured_listener_auth_exits_2(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "c.conf"
    conf.write_text('web.basicAuthPassword = "s3cret"\nclusters = [{ name = c }]\n')
    assert main(["run", "--config", str(conf)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("config error: web.basicAuthUsername:"), err


@pytest.mark.parametrize("text", ['burrow.password = 1234', 'web.basicAuthPassword = 007',
                                  'web.basicAuthUsername = true'])
def test_unquoted_secrets_that_hocon_would_change_are_refused(text: str) -> None:
    """Unquoted, `007` reads as the number 7: the password would silently be another one."""
    with pytest.raises(ConfigError) as info:
        load_settings(text=text + "\nclusters = [{ name = c }]")
    assert "quotes" in str(info.value)
    assert text.split("= ")[1] not in str(info.value)
