"""End to end through a secured listener: Kafka's client listener is TLS (our own CA, a
certificate for 127.0.0.1 only, hostname verification on) or SASL_SSL with SCRAM-SHA-512 (the
user made through the admin API). Burrow 1.2.1 reads the TLS listener with its ``[tls]`` profile
(hostname verification on); it speaks no SCRAM (Sarama 1.20), so on SASL_SSL it reads the
internal plaintext listener. The exporter measures through the secured listener with nothing but
its ``clusters[].kafka`` properties. Each configuration is one stack for the module (parametrized
fixture, module scope), so it starts once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined,unused-ignore]

from devstack import RealStack
from devstack.stack import now_ms
from tests.realkafka.helpers import StackPool, one_cycle
from tests.support.seeding import Commit, assert_exact, commit_all, seed_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(scope="module", params=["tls", "sasl_ssl"])
def secure_stack(request: pytest.FixtureRequest, stack_pool: StackPool) -> RealStack:
    """Module scope: pytest groups the tests by configuration, so each stack starts once."""
    return stack_pool.get(1, security=request.param)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def client_errors(conf: dict[str, str], timeout_s: float = 3.0) -> list[str]:
    """What a librdkafka client with ``conf`` logs and reports while its metadata request
    fails (it must fail)."""
    capture = _Lines()
    logger = logging.getLogger(f"tests.realkafka.security.{id(capture)}")
    logger.propagate = False
    logger.addHandler(capture)
    admin = AdminClient({**conf, "logger": logger,
                         "error_cb": lambda err: capture.lines.append(str(err))})  # fmt: skip
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=timeout_s)
    admin.poll(0.1)  # serve the logs and errors queued meanwhile
    return capture.lines


def test_exporter_and_burrow_measure_through_the_secured_listener(
    secure_stack: RealStack, unique_name: Callable[[str], str]
) -> None:
    stack = secure_stack
    assert stack.burrow is not None and stack.certs is not None
    burrow_toml = (stack.burrow.config_dir / "burrow.toml").read_text()
    if stack.security == "tls":  # Burrow knows only the TLS listener, trusting our CA alone
        assert stack.burrow.servers == stack.bootstrap_servers.split(",")
        assert f'cafile = "{stack.certs.ca}"' in burrow_toml and "noverify = false" in burrow_toml
    else:  # Sarama 1.20 has no SCRAM: Burrow 1.2.1 reads the internal listener
        assert stack.kafka is not None
        assert stack.burrow.servers == stack.kafka.internal_bootstrap_servers.split(",")
        assert "[tls." not in burrow_toml
    kafka_props = stack.client_config
    assert kafka_props["ssl.endpoint.identification.algorithm"] == "https"

    t = now_ms()  # the topic is created once Burrow, through TLS, has its offsets
    topic = seed_topic(stack, unique_name("t"), {0: [t - 50_000 + 5_000 * i for i in range(6)]})
    commit = Commit(unique_name("sec"), topic, 0, 2)
    commit_all(stack, [commit])

    snap, scrape = one_cycle(stack, commit.group, kafka=kafka_props)
    assert_exact(snap, commit, scrape)  # retention.ms through describe_configs too
    assert snap.health.kafka_read_failures == 0


def test_the_secured_listener_refuses_what_it_should(secure_stack: RealStack) -> None:
    """Verification is really on: plaintext, another CA, a name the certificate does not carry
    (``localhost``), and on SASL_SSL a wrong password, each fail."""
    stack = secure_stack
    assert stack.certs is not None
    good = {"bootstrap.servers": stack.bootstrap_servers, **stack.client_config}
    port = stack.bootstrap_servers.split(",")[0].rsplit(":", 1)[1]

    wrong = {
        "other CA": good | {"ssl.ca.location": str(stack.certs.other_ca)},
        "name not in the certificate": good | {"bootstrap.servers": f"localhost:{port}"},
        "plaintext": {k: v for k, v in good.items()
                      if not k.startswith(("ssl.", "sasl.", "security."))},
    }  # fmt: skip
    if stack.security == "sasl_ssl":
        wrong["wrong password"] = good | {"sasl.password": "wrong"}
    with ThreadPoolExecutor(len(wrong)) as pool:  # each waits out its timeout: in parallel
        errors = dict(zip(wrong, pool.map(client_errors, wrong.values()), strict=True))
    assert any("certificate verify failed" in e for e in errors["other CA"]), errors
    assert any("certificate verify failed" in e for e in errors["name not in the certificate"])
    if stack.security == "sasl_ssl":
        assert any("authentication failed" in e.lower() for e in errors["wrong password"]), errors
